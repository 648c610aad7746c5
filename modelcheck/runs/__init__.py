"""The runs behind the commands: each module does one command's work
(matrix.py, gate.py, replay.py), above the views, which never import them."""
