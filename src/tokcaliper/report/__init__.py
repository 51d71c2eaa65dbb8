"""Rendering: text tables and JSON of the same result objects."""
