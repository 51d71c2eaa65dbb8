"""Plain pydantic types shared by every package (no I/O here)."""

from tokcaliper.model.verdict import Status, Verdict

__all__ = ["Status", "Verdict"]
