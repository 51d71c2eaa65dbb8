"""Embedded SQLite store of runs and their per-request records."""

from tokcaliper.store.sqlite import RunRow, Store, load_metric_values

__all__ = ["RunRow", "Store", "load_metric_values"]
