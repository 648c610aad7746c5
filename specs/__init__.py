"""Protocols checked by modelcheck. The engine never imports this package."""
