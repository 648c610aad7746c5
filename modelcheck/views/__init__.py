"""The views of traces and states: the terminal tables (terminal.py), the
HTML page (html.py), ITF (itf.py), trace files read back through the spec
(tracefile.py) and the reachable state graph (graph.py); what the runs
print when done (report.py, verdicts.py) and while running (progress.py).
Each takes a Spec and never imports specs/ or the runs."""
