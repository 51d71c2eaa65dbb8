"""What each peer tool's figure means next to tokcaliper's metric of the same name (issue 20 item 3).

Per tool and metric family: ``"equals"`` (same definition as the metric
registry's, :mod:`tokcaliper.model.metrics`, up to the client's own timing)
or ``"resembles"`` (a related figure with a different definition, stored under
the nearest metric), and one sentence saying what the tool's number is. The
table in ``docs/import.md`` is this table (a test keeps them equal).
``compare`` across tools reads it to name the definitions that differ.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFINITIONS", "Definition", "definition", "differences", "family"]


@dataclass(frozen=True)
class Definition:
    """One tool's figure under one metric family: ``relation`` ``"equals"``/``"resembles"``, ``meaning``."""

    relation: str
    meaning: str


E, R = "equals", "resembles"

#: tool → metric family → definition. Families: ttft, itl, tpot, e2e, aggregate_output_tok_s,
#: request_throughput_rps, per_stream_decode_tok_s.
DEFINITIONS: dict[str, dict[str, Definition]] = {
    "vllm": {
        "ttft": Definition(E, "send → first content chunk; warm-up requests are not excluded"),
        "itl": Definition(E, "gap between content chunks, over all gaps"),
        "tpot": Definition(E, "(E2E − TTFT) ÷ (output tokens − 1) per request"),
        "e2e": Definition(E, "send → end of stream (e2el)"),
        "aggregate_output_tok_s": Definition(E, "output tokens ÷ benchmark duration"),
        "request_throughput_rps": Definition(E, "completed ÷ benchmark duration"),
    },
    "aiperf": {
        "ttft": Definition(E, "request sent → first token response; warm-up phase excluded"),
        "itl": Definition(R, "inter_chunk_latency: gap between response chunks (a chunk may hold several tokens)"),
        "tpot": Definition(E, "inter_token_latency = (latency − TTFT) ÷ (OSL − 1) per request"),
        "e2e": Definition(E, "request_latency: sent → last response"),
        "aggregate_output_tok_s": Definition(R, "output tokens ÷ first request sent → last response; token "
                                                "count from its tokenizer unless --use-server-token-count"),
        "request_throughput_rps": Definition(E, "completed ÷ benchmark duration"),
        "per_stream_decode_tok_s": Definition(R, "output_token_throughput_per_user = 1 ÷ inter_token_latency "
                                                 "per request"),
    },
    "guidellm": {
        "ttft": Definition(E, "time_to_first_token_ms: request start → first token iteration"),
        "tpot": Definition(E, "inter_token_latency_ms = (latency − TTFT) ÷ (output tokens − 1); its own "
                              "time_per_output_token_ms (latency ÷ tokens) is not stored"),
        "e2e": Definition(E, "request_latency (seconds)"),
        "aggregate_output_tok_s": Definition(R, "stored as total output tokens ÷ benchmark duration; GuideLLM's "
                                                "headline is a mean over per-second values (in the notes)"),
        "request_throughput_rps": Definition(E, "successful ÷ benchmark duration"),
        "per_stream_decode_tok_s": Definition(E, "(output tokens − 1) ÷ (latency − TTFT) from its request records"),
    },
    "genai-perf": {
        "ttft": Definition(E, "p99 only (analyze); profile CSV as AIPerf"),
        "tpot": Definition(E, "inter token latency = (latency − TTFT) ÷ (OSL − 1)"),
        "e2e": Definition(E, "request latency"),
        "aggregate_output_tok_s": Definition(R, "output tokens (its tokenizer) ÷ profile duration"),
        "request_throughput_rps": Definition(E, "requests ÷ profile duration"),
    },
    "llama-bench": {
        "aggregate_output_tok_s": Definition(R, "avg_ts of a tg test: n_gen ÷ time of one repetition, one "
                                                "stream, no HTTP, no prompt processing"),
        "per_stream_decode_tok_s": Definition(R, "avg_ts of a tg test (the first token included)"),
    },
    "inference-perf": {
        "ttft": Definition(E, "time_to_first_token (seconds)"),
        "itl": Definition(E, "inter_token_latency: gap between tokens (seconds)"),
        "tpot": Definition(E, "time_per_output_token: (latency − TTFT) ÷ (output − 1) (seconds)"),
        "e2e": Definition(E, "request_latency (seconds)"),
        "aggregate_output_tok_s": Definition(E, "output_tokens_per_sec over the stage"),
        "request_throughput_rps": Definition(E, "requests_per_sec over the stage"),
    },
    "sglang": {
        "ttft": Definition(E, "send → first token (median_ttft_ms)"),
        "itl": Definition(E, "gap between tokens (median_itl_ms)"),
        "tpot": Definition(E, "(E2E − TTFT) ÷ (output − 1) (newer schema only)"),
        "e2e": Definition(E, "mean/median_e2e_latency_ms"),
        "aggregate_output_tok_s": Definition(E, "output_throughput: output tokens ÷ duration"),
        "request_throughput_rps": Definition(E, "completed ÷ duration"),
    },
    "llmperf": {
        "ttft": Definition(E, "ttft_s (seconds)"),
        "tpot": Definition(R, "inter_token_latency_s: E2E ÷ output tokens per request (TTFT included)"),
        "e2e": Definition(E, "end_to_end_latency_s"),
        "aggregate_output_tok_s": Definition(E, "mean_output_throughput_token_per_s: output tokens ÷ run time"),
        "request_throughput_rps": Definition(E, "completed_requests_per_min ÷ 60"),
        "per_stream_decode_tok_s": Definition(R, "request_output_throughput_token_per_s: output tokens ÷ E2E "
                                                 "(TTFT included)"),
    },
}


def family(metric: str) -> str:
    """The family of a registry metric name (``ttft_p50_ms`` → ``ttft``; rates are their own)."""
    if metric.startswith("per_stream_decode_tok_s"):
        return "per_stream_decode_tok_s"
    for f in ("ttft_from_schedule", "ttft", "itl", "tpot", "e2e"):
        if metric.startswith(f + "_"):
            return f
    return metric


def definition(tool: str, metric: str) -> Definition | None:
    """The tool's definition of ``metric`` (None: the tool's files do not give that metric)."""
    return DEFINITIONS.get(tool, {}).get(family(metric))


def differences(tools: list[str], metric: str) -> list[str]:
    """One sentence per tool whose figure for ``metric`` is not tokcaliper's, for a mixed comparison."""
    out = []
    for t in tools:
        if t == "tokcaliper":
            continue
        d = definition(t, metric)
        if d is None:
            out.append(f"{t}: its files give no {family(metric)} figure")
        else:
            out.append(f"{t} {d.relation} tokcaliper's {family(metric)}: {d.meaning}")
    return out
