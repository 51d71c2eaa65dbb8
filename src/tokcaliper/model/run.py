"""Types of one measured run: its configuration, per-request records, metrics.

Units are in the field names' docstrings: seconds for latencies (``*_s``),
tokens per second for rates (``*_tok_s``). Times called ``start_s`` are
offsets on a monotonic clock from the start of the run, never wall-clock.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class RequestRecord(BaseModel):
    """One streamed chat completion, as the client saw it.

    Attributes:
        index: order in which the request was issued within the run (0-based).
        warmup: True for warm-up requests, which no metric includes.
        start_s: issue time, seconds from the run's start (monotonic clock).
        ttft_s: time to first token: issue → first content chunk, seconds.
        itl_s: inter-token latencies: gaps between consecutive content chunks,
            seconds (length = content chunks − 1).
        e2e_s: issue → end of stream, seconds.
        output_tokens: generated tokens (from ``usage`` if the server sent it,
            else the number of content chunks; see ``token_count_source``).
        prompt_tokens: prompt tokens from ``usage`` (None if not reported).
        token_count_source: ``"usage"`` or ``"chunks"``.
        content_chunks: SSE events that carried generated text.
        error: why the request failed (None on success).
        server_timings: llama.cpp's ``timings`` object of the final chunk, if any
            (holds ``draft_n`` / ``draft_n_accepted`` under speculative decoding).
    """

    index: int
    warmup: bool = False
    start_s: float
    ttft_s: float | None = None
    itl_s: list[float] = Field(default_factory=list)
    e2e_s: float | None = None
    output_tokens: int = 0
    prompt_tokens: int | None = None
    token_count_source: Literal["usage", "chunks"] = "chunks"
    content_chunks: int = 0
    error: str | None = None
    server_timings: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True when the request finished without error."""
        return self.error is None


class LoadConfig(BaseModel):
    """What one run sends: closed-loop concurrency, request count or duration.

    Attributes:
        base_url: server root, e.g. ``http://127.0.0.1:8080``.
        model: model name sent in the request body.
        concurrency: number of closed-loop workers (C); each sends its next
            request as soon as its previous one ends.
        requests: measured requests per run (N), or None with ``duration_s``.
        duration_s: stop issuing new requests after this many seconds.
        warmup: requests sent before the measured ones and excluded from metrics.
        max_tokens: fixed output budget per request.
        temperature: sampling temperature.
        ignore_eos: ask the server to generate exactly ``max_tokens``
            (llama.cpp/vLLM extension; keeps output lengths equal across runs).
        prompts_source: ``"builtin"`` or the path of the prompts file.
        request_timeout_s: per-request timeout.
        prompt_salt: when set, each request's last user message starts with
            ``[salt.index]`` so that no request is served from a prompt cache
            filled by an earlier run (the runner sets it per repetition).
    """

    base_url: str
    model: str = "default"
    concurrency: int = 1
    requests: int | None = 32
    duration_s: float | None = None
    warmup: int = 0
    max_tokens: int = 128
    temperature: float = 0.0
    ignore_eos: bool = True
    prompts_source: str = "builtin"
    request_timeout_s: float = 300.0
    prompt_salt: str | None = None


class Percentiles(BaseModel):
    """p50 / p90 / p99 and mean of one latency, in seconds (None if no data)."""

    n: int
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


class RunMetrics(BaseModel):
    """Per-run summary computed from the measured (non-warm-up) requests.

    Attributes:
        wall_s: first measured request issued → last one finished, seconds.
        completed / failed / excluded_warmup: request counts.
        output_tokens / prompt_tokens: totals over completed requests.
        token_count_source: ``"usage"``, ``"chunks"`` or ``"mixed"``.
        aggregate_output_tok_s: output tokens ÷ wall_s (all streams together).
        request_throughput_rps: completed requests ÷ wall_s.
        per_stream_decode_tok_s_mean / _median: per request,
            (output tokens − 1) ÷ (e2e − TTFT), i.e. decode rate after the
            first token.
        ttft_s / itl_s / e2e_s / tpot_s: latency distributions.
    """

    wall_s: float
    completed: int
    failed: int
    excluded_warmup: int
    output_tokens: int
    prompt_tokens: int | None
    token_count_source: str
    aggregate_output_tok_s: float | None
    request_throughput_rps: float | None
    per_stream_decode_tok_s_mean: float | None
    per_stream_decode_tok_s_median: float | None
    ttft_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    tpot_s: Percentiles
    errors: dict[str, int] = Field(default_factory=dict)


class Run(BaseModel):
    """One run as stored: what was run, where, and what was measured.

    Attributes:
        id: database id (None until stored).
        session: id shared by the runs of one ``bench --repeat`` invocation.
        arm: label of the configuration under test.
        repetition: 0-based index within the session.
        started_at / finished_at: UTC ISO timestamps.
        command_line: the exact tokcaliper command line.
        server_command: the command that started the server (None with --url).
        server_version: the server's version string, if known.
        tool_version: tokcaliper's version.
        host: host information (see :mod:`tokcaliper.telemetry.host`).
        telemetry: per-run telemetry summary, if sampled.
        counters_delta: server counters (e.g. Prometheus ``/metrics``) after − before.
        counters_error: why ``counters_delta`` is empty or unusable (None when it is sound).
        config: the load configuration.
        metrics: the summary of the measured requests.
        requests: every request, warm-up ones included (flagged).
    """

    id: int | None = None
    session: str
    arm: str = "default"
    repetition: int = 0
    started_at: str
    finished_at: str
    command_line: str
    server_command: str | None = None
    server_version: str | None = None
    tool_version: str
    host: dict[str, Any] = Field(default_factory=dict)
    telemetry: dict[str, Any] | None = None
    counters_delta: dict[str, float] = Field(default_factory=dict)
    counters_error: str | None = None
    config: LoadConfig
    metrics: RunMetrics
    requests: list[RequestRecord] = Field(default_factory=list)
