"""Experiment orchestration: repetitions of one arm (interleaved arms to come)."""
