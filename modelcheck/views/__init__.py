"""The views of traces and states: the terminal tables (terminal.py), the
HTML page (html.py), ITF (itf.py), trace files read back through the spec
(tracefile.py) and the reachable state graph (graph.py). Each takes a Spec
and never imports specs/."""
