"""Stored-run fixtures of the bench / experiment / capacity result tests (synthetic runs)."""

from __future__ import annotations

from tokcaliper.experiment.load_sweep import load_sweep_experiment
from tokcaliper.experiment.spec import ExperimentSpec, LoadSpec, parse_experiment
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.store import Store

__all__ = ["T0", "_run", "_sweep_store", "_two_arm_store", "two_arm_spec"]

T0 = "2026-01-01T00:00:00.000Z"


def _run(arm: str, rep: int, tok_s: float, *, session: str = "s1", position: int | None = None,
         restart: int | None = None, valid: bool = True, e2e: list[float] | None = None,
         slo_s: dict[str, float] | None = None, concurrency: int = 2) -> Run:
    """A stored run whose aggregate output rate is ``tok_s`` (2 requests × 100 tokens), or
    whose requests end at ``e2e`` (with ``slo_s``: their SLO attainment)."""
    wall = 200.0 / tok_s
    ends = e2e or [wall, wall]
    recs = [RequestRecord(index=i, start_s=0.0, ttft_s=0.05, e2e_s=t, output_tokens=100,
                          token_count_source="usage", itl_s=[(t - 0.05) / 99] * 99) for i, t in enumerate(ends)]
    return Run(session=session, arm=arm, repetition=rep, position=position, restart=restart,
               started_at=f"2026-01-01T00:{rep:02d}:00.000Z", finished_at=f"2026-01-01T00:{rep:02d}:10.000Z",
               command_line="t", tool_version="0.1.0",
               config=LoadConfig(base_url="http://127.0.0.1:1", concurrency=concurrency, model="m"),
               metrics=summarize(recs, slo_s=slo_s), requests=recs, valid=valid,
               invalid_reason=None if valid else "12% of requests failed (bound 10%)",
               server_command="llama-server -m x", server_version="b1")


def _sweep_store(db, runs_by_level: dict[int, list[float]]) -> ExperimentSpec:  # type: ignore[no-untyped-def]
    """Experiment ``sw1`` in ``db``: a concurrency sweep, 2 runs per level of the given rates, alternating."""
    load = LoadSpec.from_options(requests=2, concurrency=1)
    spec = load_sweep_experiment(load, "concurrency", list(runs_by_level), runs_per_level=2,
                                 url="http://127.0.0.1:1", server_cmd=None, order="alternate")
    with Store(db) as s:
        s.create_experiment("sw1", spec.name, spec.model_dump(mode="json"), "", T0)
        pos = 0
        for rep in range(2):
            for arm, (c, vals) in zip(spec.arms, runs_by_level.items()):
                s.save_run(_run(arm.name, rep, vals[rep], session="sw1", position=pos, concurrency=c))
                pos += 1
    return spec


def two_arm_spec(runs_per_arm: int) -> str:
    """The experiment file of arms A and B (servers ``a``, ``b``), alternating, 2 requests a run."""
    return (f'runs_per_arm = {runs_per_arm}\norder = "alternate"\n[[arms]]\nname = "A"\nserver_cmd = "a"\n'
            '[[arms]]\nname = "B"\nserver_cmd = "b"\n[load]\nrequests = 2\n')


def _two_arm_store(s: Store) -> ExperimentSpec:
    """Experiment ``e1`` in the open store ``s``: arms A (100, 104 tok/s) and B (150, 154), alternating."""
    text = two_arm_spec(2)
    spec = parse_experiment(text, "t.toml")
    s.create_experiment("e1", "t", spec.model_dump(mode="json"), text, T0)
    for k, (a, b) in enumerate([(100.0, 150.0), (104.0, 154.0)]):
        s.save_run(_run("A", k, a, session="e1", position=2 * k))
        s.save_run(_run("B", k, b, session="e1", position=2 * k + 1))
    return spec
