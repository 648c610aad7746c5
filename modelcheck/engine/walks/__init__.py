"""Random walks instead of a search: simulate.py (on processes) and
simulate_spark.py (as Spark tasks) run the walks of walk.py, and shrink.py
shortens the counterexample a walk found."""
