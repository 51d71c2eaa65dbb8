"""CLI: ``tokcaliper experiment run|resume|show|list`` — interleaved A/B experiments (M4, M8)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app

experiment_app = typer.Typer(
    help="Interleaved experiments from a TOML file: run, resume, show, list (METHODS.md M4).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(experiment_app, name="experiment")

_MISMATCH_HELP = "What a read-back mismatch does: stop (default; resume later) or continue (runs marked invalid)."


def _check_on_mismatch(value: str) -> None:
    from tokcaliper.errors import InputError

    if value not in ("stop", "continue"):
        raise InputError(f"--on-mismatch must be stop or continue, got {value!r}")


def execute_with_progress(exp_id: str, spec, source_dir: Path | None, store, on_mismatch: str, json_out: bool):  # type: ignore[no-untyped-def]
    """Run the pending positions with a live progress line; return the result."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tokcaliper.experiment.execute import ExperimentEvents, execute_experiment
    from tokcaliper.numbers import num, seconds
    from tokcaliper.report.output import stderr
    from tokcaliper.doctor import machine_check
    from tokcaliper.report.doctor_view import render_check_warnings
    from tokcaliper.telemetry import TelemetrySampler, collect_host_info

    store.claim_experiment(exp_id)  # refuse a second runner before any progress line (held on by execute)
    total = len(spec.run_order())
    already = len([r for r in store.session_runs(exp_id) if not r.warmup_run])
    if already >= total and not spec.until_decided:
        stderr.print(f"experiment {exp_id} is finished: all {total} measured runs are stored, nothing "
                     "to run; its report follows", markup=False)
    interval = spec.load.telemetry_interval_s
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), TextColumn("{task.fields[eta]}"), console=stderr,
                        transient=True, disable=json_out and not stderr.is_terminal)
    started = time.monotonic()
    state = {"done": already, "measured_here": 0}
    task = progress.add_task(f"experiment {exp_id}", total=total, completed=already, eta="")

    def on_run(run) -> None:  # type: ignore[no-untyped-def]
        m = run.metrics
        label = "warm-up run" if run.warmup_run else f"run {run.position + 1}/{total}"
        flag = "" if run.valid else f" INVALID ({run.invalid_reason})"
        progress.console.print(
            f"{label} arm {run.arm} stored as #{run.id}: {num(m.aggregate_output_tok_s, 4)} tok/s, "
            f"{m.completed} ok / {m.failed} failed{flag}", markup=False)
        if not run.warmup_run:
            state["done"] += 1
            state["measured_here"] += 1
            per_run = (time.monotonic() - started) / state["measured_here"]
            left = per_run * (total - state["done"])
            progress.update(task, completed=state["done"], eta=f"~{seconds(left)} left")

    def on_outcome(o) -> None:  # type: ignore[no-untyped-def]
        progress.console.print(f"[bold red]{o.kind}[/bold red] ", end="")
        progress.console.print(o.reason, markup=False)

    events = ExperimentEvents(
        on_status=lambda text: progress.update(task, description=text),
        on_run=on_run, on_outcome=on_outcome,
    )
    telemetry = (lambda: TelemetrySampler(interval_s=interval)) if interval > 0 else None

    def idle() -> dict[str, float]:
        if spec.load.idle_seconds > 0 and interval > 0:
            return TelemetrySampler(interval_s=interval).measure_idle(spec.load.idle_seconds)
        return {}

    # The quick machine check (issue 21), before any arm's server starts: stored with every run.
    check = machine_check(quick=True, unique_prompts=spec.load.unique_prompts)
    render_check_warnings(check)

    def host():  # type: ignore[no-untyped-def]
        # Called once the experiment is claimed: the bandwidth probe (issue 25) takes a second
        # or more, which a second `resume` must not spend before learning it is not the holder.
        info = collect_host_info(bandwidth=True)
        info.machine_check = check
        return info
    with progress:
        result = execute_experiment(
            exp_id, spec, store, base_dir=source_dir, on_mismatch=on_mismatch,  # type: ignore[arg-type]
            events=events, telemetry=telemetry, idle_power=idle, host=host,
        )
    if result.already_decided and result.decision is not None:
        stderr.print(f"experiment {exp_id} is already decided, nothing to measure: "
                     f"{result.decision.reason}", markup=False)
    return result


def fail_if_nothing_valid(exp_id: str, store) -> None:  # type: ignore[no-untyped-def]
    """Raise :class:`ServerError` (exit 3) with
    :func:`~tokcaliper.experiment.show.no_valid_measured_run`'s reason, if any."""
    from tokcaliper.errors import ServerError
    from tokcaliper.experiment.show import no_valid_measured_run

    reason = no_valid_measured_run(exp_id, store)
    if reason is not None:
        raise ServerError(reason)


_VERBOSE_HELP = "Also print each metric's arithmetic, the per-pair verdicts and the sources."


def _show(exp_id: str, store, json_out: bool, verbose: bool = False) -> None:  # type: ignore[no-untyped-def]
    from tokcaliper.audit.run_roofline import arm_rooflines
    from tokcaliper.experiment.show import experiment_show
    from tokcaliper.report.experiment_view import render_experiment_show
    from tokcaliper.report.output import emit

    result = experiment_show(store, exp_id, arm_rooflines)  # each arm against its roofline (issue 25)
    emit(result, json_out, lambda console: render_experiment_show(console, result, verbose))


@experiment_app.command("run")
def run_cmd(
    file: Annotated[Path, typer.Argument(help="Experiment file (TOML).")],
    on_mismatch: Annotated[str, typer.Option(help=_MISMATCH_HELP)] = "stop",
    until_decided: Annotated[bool, typer.Option(
        "--until-decided", help="Add pairs only until the sequential rule decides (runs_per_arm is the "
                                "cap); keeps the stated error rates (docs/calibration.md).")] = False,
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help=_VERBOSE_HELP)] = False,
) -> None:
    """Run an experiment file's arms in its declared order, store every run, then analyse."""
    from tokcaliper.experiment.execute import create_experiment
    from tokcaliper.experiment.spec import read_experiment, with_until_decided
    from tokcaliper.report.output import stderr
    from tokcaliper.servers.managed import check_reachable
    from tokcaliper.store import Store

    _check_on_mismatch(on_mismatch)
    spec, source = read_experiment(file)  # read once: the text stored is the text validated
    if until_decided:
        spec = with_until_decided(spec, str(file))
    from tokcaliper.load.pool import ensure_fd_room

    ensure_fd_room(spec.max_streams, "[load] concurrency")  # before the experiment is created
    if spec.url is not None:
        check_reachable(spec.url)  # before the experiment exists: no empty "stopped" row
    with Store(db) as store:
        exp_id = create_experiment(spec, source, store, base_dir=file.resolve().parent)
        stderr.print(f"experiment {exp_id}: {len(spec.run_order())} measured runs "
                     f"({spec.runs_per_arm} per arm, order {spec.order}"
                     + ("" if spec.seed is None else f", seed {spec.seed}")
                     + f"); stored in {db}", markup=False)
        execute_with_progress(exp_id, spec, file.resolve().parent, store, on_mismatch, json_out)
        _show(exp_id, store, json_out, verbose)
        fail_if_nothing_valid(exp_id, store)


@experiment_app.command("resume")
def resume_cmd(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id (or a unique prefix).")],
    on_mismatch: Annotated[str, typer.Option(help=_MISMATCH_HELP)] = "stop",
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help=_VERBOSE_HELP)] = False,
) -> None:
    """Continue an interrupted or stopped experiment without repeating finished runs."""
    from tokcaliper.experiment.spec import ExperimentSpec
    from tokcaliper.store import Store

    _check_on_mismatch(on_mismatch)
    with Store(db, create=False) as store:
        store.check_writable()  # before any run is measured
        row = store.get_experiment(experiment_id)
        spec = ExperimentSpec.model_validate(row.spec)
        from tokcaliper.load.pool import ensure_fd_room

        ensure_fd_room(spec.max_streams, "[load] concurrency")
        execute_with_progress(row.id, spec, None, store, on_mismatch, json_out)
        _show(row.id, store, json_out, verbose)
        fail_if_nothing_valid(row.id, store)


@experiment_app.command("show")
def show_cmd(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id (or a unique prefix).")],
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help=_VERBOSE_HELP)] = False,
) -> None:
    """The plan, what ran (runs and outcomes), and the comparison of the arms."""
    from tokcaliper.cli.runs import warn_damaged
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        _show(store.get_experiment(experiment_id).id, store, json_out, verbose)
        warn_damaged(store)


@experiment_app.command("list")
def list_cmd(
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Stored experiments with their status and run counts."""
    from tokcaliper.cli.runs import warn_damaged
    from tokcaliper.experiment.show import experiment_list
    from tokcaliper.report.experiment_view import render_experiment_list
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        result = experiment_list(store)
        warn_damaged(store)
    emit(result, json_out, lambda console: render_experiment_list(console, result))
