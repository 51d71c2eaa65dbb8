"""Every example experiment file in the repository validates (they are documentation users copy)."""

from pathlib import Path

import pytest

from tokcaliper.experiment.spec import load_experiment

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "experiments").glob("*.toml"))


def test_there_are_examples():
    assert {p.stem for p in EXAMPLES} >= {"threads", "aa", "power_cap", "slots_until_decided"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_validates(path: Path):
    spec = load_experiment(path)
    assert len(spec.arms) >= 2 and len(spec.run_order()) == len(spec.arms) * spec.runs_per_arm
