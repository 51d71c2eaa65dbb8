"""The watched processes' CPU use is a covariate (a starved server is the usual slow run on a shared host)."""

from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.model.telemetry import DeviceSummary, TelemetrySummary
from tokcaliper.stats.covariates import covariate_label, rank_covariates, run_covariates


def _run(i: int, tok: int, server_cores: float) -> Run:
    recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.1, e2e_s=1.0, output_tokens=tok,
                          token_count_source="usage")]
    tel = TelemetrySummary(interval_s=0.1, devices=[
        DeviceSummary(device="server", kind="process", cpu_share_mean=server_cores),
        DeviceSummary(device="client", kind="process", cpu_share_mean=0.03),
    ])
    return Run(session="s", position=i, started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:00:01Z",
               command_line="t", tool_version="0", config=LoadConfig(base_url="http://127.0.0.1:1"),
               metrics=summarize(recs), telemetry=tel)


def test_server_cpu_cores_is_ranked_first_when_it_explains_the_metric():
    cores = [1.1, 1.4, 1.95, 1.85, 1.93, 1.94, 1.95, 1.10]
    toks = [14, 35, 68, 59, 62, 65, 60, 13]
    runs = [_run(i, t, c) for i, (t, c) in enumerate(zip(toks, cores))]
    cov = run_covariates(runs)
    assert cov["server_cpu_cores"] == cores
    assert covariate_label("server_cpu_cores") == ("server CPU (cores used)", "during")
    values = [float(r.metrics.aggregate_output_tok_s) for r in runs]
    ranked, _skipped = rank_covariates(values, cov)
    assert ranked[0].name == "server_cpu_cores" and ranked[0].rho > 0.8
