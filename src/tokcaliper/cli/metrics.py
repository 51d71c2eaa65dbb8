"""CLI: ``tokcaliper metrics`` — the metric registry (names for ``--metric``)."""

from __future__ import annotations

from typing import Annotated

import typer

from tokcaliper.cli._app import JSON_HELP, app


@app.command("metrics")
def metrics_cmd(
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """List every per-run metric: name, unit, which direction is better, how it is computed."""
    from tokcaliper.model.metric_list import metric_list
    from tokcaliper.report.metrics_view import render_metric_list
    from tokcaliper.report.output import emit

    result = metric_list()
    emit(result, json_out, lambda console: render_metric_list(console, result))
