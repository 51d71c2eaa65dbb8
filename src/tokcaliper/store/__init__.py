"""Embedded SQLite store of runs and their per-request records."""

from tokcaliper.store.sqlite import DamagedRun, RunRow, Store, ensure_writable, load_metric_values, write_recovery_file

__all__ = ["DamagedRun", "RunRow", "Store", "ensure_writable", "load_metric_values", "write_recovery_file"]
