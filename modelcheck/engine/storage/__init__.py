"""What the searches keep, in memory and on disk: the compiled engines'
candidates (batch.py) and visited set (visited.py, sorted runs on disk),
arrays moved to disk (spill.py), checkpoints (checkpoint.py, whose
manifest manifest.py validates) and the reference engine's states as JSON
(state_json.py). Nothing here searches."""
