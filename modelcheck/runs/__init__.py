"""The runs behind the commands, one module a command (check.py,
replay.py, matrix.py, gate.py, simulate.py, explore.py, trace.py,
graph.py, spark_env.py) and what they share (inputs.py, exits.py). cli.py
hands each its options and the protocol's spec loader; they print through
the views, which never import them."""
