"""A sweep over concurrency or rate as an interleaved experiment (issue 18 item 1).

``bench --concurrency 1,4,16``, ``bench --rate 1,2,4``, ``capacity --rates …``
and an experiment file's ``[sweep]`` all become one :class:`ExperimentSpec`
whose arms are *load arms*: one per level, against one server, differing only
in that level. The experiment runner then gives the sweep what it gives any
experiment: an interleaved order (random blocks with a stored seed by default,
so a drift of the machine does not masquerade as a trend across levels), resume
after Ctrl-C without repeating a stored run, failed starts as outcomes, and the
comparison of every level against the first. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from tokcaliper.errors import InputError
from tokcaliper.experiment.spec import (CLI_FLAGS, ExperimentSpec, KeyedValueError, LoadSpec,
                                        _message, sweep_arms)
from tokcaliper.validation import problems

__all__ = ["AXIS_FLAGS", "load_sweep_experiment", "parse_levels"]

#: Sweep axis → the option whose comma list sets it.
AXIS_FLAGS = {"concurrency": "--concurrency", "rate_rps": "--rate"}

def default_server_cmd() -> str:
    """The local default server (:data:`tokcaliper.servers.local.DEFAULT_SERVER_TEMPLATE`) as an
    experiment's top-level ``server_cmd``, with the ``{llama_server}``/``{smollm2}`` placeholders
    the runner fills in."""
    from tokcaliper.servers.local import DEFAULT_SERVER_TEMPLATE

    return DEFAULT_SERVER_TEMPLATE.replace("{server}", "{llama_server}").replace("{model}", "{smollm2}")


def parse_levels(values: Sequence[str] | None, flag: str, whole: bool) -> list[Any]:
    """The levels of an option given as ``1,4,16`` and/or repeated (``--rate 1 --rate 2``).

    Args:
        values: the option's texts (None: not given). flag: its name, for messages.
        whole: integers (concurrency) rather than numbers (rates).

    Returns:
        The levels in the order given (empty when not given); bounds are checked by
        :class:`LoadSpec`.

    Raises:
        InputError: an empty item, a non-number, or a level given twice.
    """
    out: list[Any] = []
    for text in values or []:
        for item in text.split(","):
            item = item.strip()
            try:
                out.append(int(item) if whole else float(item))
            except ValueError:
                kind = "whole numbers" if whole else "numbers"
                raise InputError(f"{flag} takes {kind} separated by commas (e.g. "
                                 f"{'1,4,16' if whole else '1,2,4'}), got {text!r}") from None
    if len(set(out)) != len(out):
        raise InputError(f"{flag}: each level once, got {', '.join(map(str, out))}")
    return out


def load_sweep_experiment(load: LoadSpec, axis: str, levels: Sequence[Any], *, runs_per_level: int,
                          url: str | None, server_cmd: str | None, order: str = "random-blocks",
                          seed: int | None = None, warmup_runs: int = 0, prefix: str = "",
                          name: str | None = None) -> ExperimentSpec:
    """The experiment of a sweep: one load arm per level of ``axis``, against one server.

    Args:
        load: the load every level shares (the level overrides ``axis``).
        axis: ``"concurrency"`` or ``"rate_rps"``. levels: at least 2, distinct.
        runs_per_level: measured runs per level (≥ 2: the experiment's ``runs_per_arm``).
        url / server_cmd: the live server, or the command tokcaliper starts (with
            ``{port}``; None with no url: the local default, :func:`default_server_cmd`).
        order, seed, warmup_runs: as in an experiment file. prefix: arm names ``PREFIX@c=4``.

    Raises:
        InputError: one line naming the option (``--rate``, ``--repeat``, ``--order``, …).
    """
    flag = AXIS_FLAGS[axis]
    try:
        arms = sweep_arms(axis, list(levels), prefix)
        for a in arms:  # each level's load, in the words of the options
            load.with_overrides(a["load"])
    except KeyedValueError as e:
        raise InputError(_level_message(e, flag)) from None
    data: dict[str, Any] = {
        "name": name or f"sweep over {axis} = {', '.join(f'{v:g}' for v in levels)}",
        "arms": arms, "load": load, "runs_per_arm": runs_per_level, "warmup_runs": warmup_runs,
        "order": order, "seed": seed,
    }
    if url is not None:
        data["url"] = url
    else:
        data["server_cmd"] = server_cmd or default_server_cmd()
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as e:
        loc, msg = _message(problems(e)[0])
        key = str(loc[0]) if loc else ""
        option = _SWEEP_OPTIONS.get(key, key)
        raise InputError(f"{option} {msg}") from None


def _level_message(e: KeyedValueError, flag: str) -> str:
    """A level's problem in the words of the options: ``--rate must be > 0, got 0``."""
    text = str(e)
    if text.startswith("--"):  # already names its options (open_loop_problem)
        return text
    field = e.key.split(".")[-1]
    if field in CLI_FLAGS and field not in AXIS_FLAGS:  # another option clashes with this level
        return f"{flag} level: {CLI_FLAGS[field]} {text}"
    return f"{flag} {text}"


#: ExperimentSpec key → the option that sets it.
_SWEEP_OPTIONS = {"runs_per_arm": "--repeat", "order": "--order", "seed": "--seed",
                  "server_cmd": "--server-cmd", "url": "--url", "warmup_runs": "--warmup-runs"}
