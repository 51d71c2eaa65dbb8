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
    from rich.table import Table

    from tokcaliper.model.metrics import METRICS
    from tokcaliper.report.output import emit

    payload = [
        {"name": m.name, "label": m.label, "unit": m.unit, "better": m.better,
         "headline": m.headline, "computed": m.computed, "description": m.description,
         "noise_abs": m.noise_abs, "needs": m.needs}
        for m in METRICS.values()
    ]

    def render(console) -> None:  # type: ignore[no-untyped-def]
        t = Table(title=f"{len(payload)} per-run metrics", title_justify="left")
        for col in ("name", "unit", "better", "noise floor", "computed as"):
            t.add_column(col, overflow="fold")
        for m in payload:
            scale = ("" if m["noise_abs"] is None else
                     f"; compared on b − a, noise floor ±{m['noise_abs']:g} {m['unit']} (its resolution)")
            needs = "" if m["needs"] is None else f"; only in runs with {m['needs']}"
            t.add_row(m["name"], m["unit"], m["better"], "default" if m["headline"] else "bench --metric",
                      m["computed"] + scale + needs)
        console.print(t)

    emit(payload, json_out, render)
