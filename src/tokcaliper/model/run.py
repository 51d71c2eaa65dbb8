"""Types of one measured run: its configuration, per-request records, metrics.

Units are in the field names' docstrings: seconds for latencies (``*_s``),
tokens per second for rates (``*_tok_s``). Times called ``start_s`` are
offsets on a monotonic clock from the start of the run, never wall-clock.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from tokcaliper.model.served import ServedModel
from tokcaliper.model.telemetry import DeviceSummary, HostInfo, TelemetrySummary
from tokcaliper.model.timestamps import UtcTimestamp


#: Why a request failed, one class per kind of fault (``RequestRecord.error_class``):
#:
#: * ``http_status`` — the server answered a status other than 200;
#: * ``closed_before_response`` — it closed the connection before answering;
#: * ``closed_mid_stream`` — the connection closed or was reset mid-response;
#: * ``bad_http`` — the response was not valid HTTP/1.1;
#: * ``timeout_first_token`` / ``timeout_between_tokens`` / ``timeout_total`` —
#:   no first body byte, a gap between body bytes, or the whole request over
#:   its limit (``LoadConfig.first_token_timeout_s`` / ``token_timeout_s`` /
#:   ``request_timeout_s``);
#: * ``malformed_event`` — an SSE event was not JSON or not of the chunk
#:   object's shape (``choices`` not a list of objects, ``delta`` not an object…);
#: * ``bad_usage`` — ``usage`` counts that are not integers in range or
#:   contradict the stream (negative, ``true``, huge, 0 with text, > max_tokens);
#: * ``server_error_event`` — the stream carried an ``error`` object;
#: * ``no_done`` — the stream ended without ``data: [DONE]`` (cut short);
#: * ``empty_completion`` — it ended cleanly without any generated text.
ERROR_CLASSES = (
    "http_status", "closed_before_response", "closed_mid_stream", "bad_http",
    "timeout_first_token", "timeout_between_tokens", "timeout_total",
    "malformed_event", "bad_usage", "server_error_event", "no_done", "empty_completion",
)


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
        error_class: the kind of failure, one of :data:`ERROR_CLASSES` (None
            on success, and in runs stored before classes existed).
        server_timings: the per-response entries the registered server families
            keep (:func:`tokcaliper.model.families.response_fields`), flat, from the
            final chunk: llama.cpp's ``timings`` (``draft_n`` / ``draft_n_accepted``
            under speculative decoding, ``cache_n``), SGLang's ``meta_info``
            (``spec_verify_ct`` and the drafted/accepted counts); None if none.

    Timestamps of the request's life, seconds from the run's start on the same
    monotonic clock as ``start_s`` (None when not reached or not recorded, as
    in runs stored before they existed). ``start_s`` is when the request's
    first byte went to the socket; TTFT and E2E count from it.

    Attributes:
        scheduled_s: when the request was due — closed loop: its worker was
            free; open loop: its arrival time. ``start_s − scheduled_s`` is
            the client's dispatch delay (queueing, connect if no connection
            was ready).
        connected_s: when its connection was established (before
            ``scheduled_s`` for a connection opened ahead or reused).
        connect_s: how long that connection took to open, s.
        connection_reused: the connection had carried an earlier request.
        written_s: the socket had taken the whole request.
        headers_s / first_byte_s: response headers complete / first bytes.
        first_token_s / last_token_s: first / last content chunk arrived.
        retried: times the request was re-sent because a reused connection
            turned out closed by the server before any answer.
        requested_prompt_tokens / requested_output_tokens: the synthetic
            lengths asked for (``--input-tokens`` / ``--output-tokens``), tokens
            as the server's ``usage`` counts them (chat template included);
            None when not asked for. ``prompt_tokens`` / ``output_tokens`` are
            what the server counted.
        cached_tokens: prompt tokens the server served from its prefix cache
            (``usage.prompt_tokens_details.cached_tokens``, else llama.cpp's
            ``timings.cache_n``); None when the server said nothing.
        session / turn: the multi-turn session (0-based, per phase numbering
            that continues from warm-up into the measured phase) and the turn
            within it (1-based) of the request (``--turns``); None otherwise.
        prefix_group: the shared-prefix group (0-based) whose prefix the
            request starts with (``--shared-prefix``); None otherwise.
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
    error_class: str | None = None
    server_timings: dict[str, Any] | None = None
    scheduled_s: float | None = None
    connected_s: float | None = None
    connect_s: float | None = None
    connection_reused: bool | None = None
    written_s: float | None = None
    headers_s: float | None = None
    first_byte_s: float | None = None
    first_token_s: float | None = None
    last_token_s: float | None = None
    retried: int = 0
    requested_prompt_tokens: int | None = None
    requested_output_tokens: int | None = None
    cached_tokens: int | None = None
    session: int | None = None
    turn: int | None = None
    prefix_group: int | None = None

    @property
    def ok(self) -> bool:
        """True when the request finished without error."""
        return self.error is None

    @property
    def dispatch_delay_s(self) -> float | None:
        """Sent − scheduled, seconds (None without a schedule stamp)."""
        return None if self.scheduled_s is None else self.start_s - self.scheduled_s


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
        request_timeout_s: per-request timeout, sent → end of stream, s.
        first_token_timeout_s: sent → first body byte of the answer, s (a
            server that never sends headers or never starts the stream).
        token_timeout_s: longest gap between two body reads of one stream, s
            (a stream that stalls between tokens).
        prompt_salt: when set, each request's last user message starts with
            ``[salt.index]`` so that no request is served from a prompt cache
            filled by an earlier run (the runner sets it per repetition).
        rate_rps: open loop: mean request arrivals per second (None: closed
            loop). ``concurrency`` then caps the requests in flight; an
            arrival beyond the cap waits, and its wait is dispatch delay.
        arrival: open-loop process: ``"poisson"``, ``"gamma"`` or
            ``"constant"`` (:mod:`tokcaliper.load.arrivals`).
        burstiness: gamma shape k (CV of the gaps = 1/√k; 1 = Poisson).
        arrival_seed: seed of the arrival times (None: derived from
            ``prompt_salt``, so repetitions differ but replay identically).
        slo_s: service-level objectives the run is judged against, seconds,
            by kind (``ttft``, ``tpot``, ``itl``, ``e2e``;
            :mod:`tokcaliper.load.slo`); None: no SLO asked for. Stored so
            that a later read knows what was asked.
        steady_state: share of the run's peak of requests in flight that
            bounds its steady-state window (:mod:`tokcaliper.load.steady`);
            None: no steady-state figures.
        input_tokens / output_tokens: synthetic length distributions
            (:mod:`tokcaliper.load.lengths` spec, e.g. ``normal:200,40``); None:
            the prompts' own lengths / ``max_tokens``.
        length_seed: seed of the length draws (request i's lengths depend on
            it and i only, so every run and arm sends the same lengths).
        dataset / dataset_seed / min_input_tokens / max_input_tokens: a
            conversation dataset (:mod:`tokcaliper.load.datasets`), the seed of
            its order, and its length filters (tokens by the server's /tokenize).
        trace / trace_speedup: a Mooncake trace replayed at its times ÷ the
            speed-up (:mod:`tokcaliper.load.trace`); trace_block_tokens: tokens
            per hash block (the trace's 512 scaled to the context; set by the run
            when not given); trace_context_tokens: the server's context as read.
        shared_prefix: ``groups=G,tokens=P`` (:mod:`tokcaliper.load.sessions`):
            every request starts with one of G system prompts of P tokens each
            (None: no shared prefix).
        turns: messages per multi-turn session (1: independent requests);
            turn k carries turns 1…k−1's prompts and the answers received.
        think_time_s: pause between a session's answer and its next turn, s.
        workers: load processes (Ray actors) the measured phase is spread over
            (1: this process alone; :mod:`tokcaliper.load.distributed`).
        ray_address: the Ray cluster they run on (None: a local one started here).
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
    first_token_timeout_s: float = 120.0
    token_timeout_s: float = 30.0
    prompt_salt: str | None = None
    rate_rps: float | None = None
    arrival: Literal["poisson", "gamma", "constant"] = "poisson"
    burstiness: float = 1.0
    arrival_seed: int | None = None
    slo_s: dict[str, float] | None = None
    steady_state: float | None = None
    input_tokens: str | None = None
    output_tokens: str | None = None
    length_seed: int = 0
    dataset: str | None = None
    dataset_seed: int = 0
    min_input_tokens: int | None = None
    max_input_tokens: int | None = None
    trace: str | None = None
    trace_speedup: float = 1.0
    trace_block_tokens: int | None = None
    trace_context_tokens: int | None = None
    shared_prefix: str | None = None
    turns: int = 1
    think_time_s: float = 0.0
    workers: int = 1
    ray_address: str | None = None


class LengthAccuracy(BaseModel):
    """How far the server's counts (``usage``) were from the requested lengths, one direction.

    Attributes:
        n: measured requests with both a requested and a counted length.
        mean_abs_error / max_abs_error: |actual − requested|, tokens.
        share_exact: share of the n with actual == requested (0–1).
        mean_requested / sd_requested: the requested lengths' sample mean and
            sd (n − 1 divisor), tokens.
    """

    n: int = 0
    mean_abs_error: float | None = None
    max_abs_error: int | None = None
    share_exact: float | None = None
    mean_requested: float | None = None
    sd_requested: float | None = None


class LengthReport(BaseModel):
    """A run's synthetic lengths: how the prompts were sized and how exact they came out.

    Attributes:
        method: ``"tokenize"`` (counted by the server's own ``/tokenize``,
            template overhead measured by a probe request) or
            ``"calibrated"`` (no tokenize endpoint: tokens per word and the
            template overhead fitted from two probe requests' ``usage``;
            lengths approximate); None with ``--output-tokens`` only.
        template_tokens: tokens the server adds around the prompt's text
            (chat template, default system prompt), from the probe.
        input / output: :class:`LengthAccuracy` of the prompt / completion lengths.
        warnings: one sentence per length that missed its bound.
    """

    method: str | None = None
    template_tokens: float | None = None
    input: LengthAccuracy | None = None
    output: LengthAccuracy | None = None
    warnings: list[str] = Field(default_factory=list)


class PrefixCacheReport(BaseModel):
    """How much of a run's prompt the server served from its prefix cache
    (:mod:`tokcaliper.load.prefix_cache`).

    Attributes:
        source: ``"responses"`` (per-response ``cached_tokens`` summed over the
            measured, completed requests), ``"counters"`` (vLLM's
            ``prefix_cache_hits`` ÷ ``prefix_cache_queries`` over the run) or
            ``"gauge"`` (SGLang's ``cache_hit_rate`` after the run: the
            server's own running value, not scoped to the run).
        hit_share: cached ÷ prompt tokens (0–1); None when no prompt token was counted.
        cached_tokens / prompt_tokens: the two sums, tokens (None for a gauge).
        n: requests counted (responses), else 0.
        by_turn: with ``--turns``, hit share per turn (``"1"``, ``"2"``…; responses only).
        prefix_sized_by: how the shared prefixes were sized: ``"tokenize"``
            (exactly P tokens by the server's tokenizer) or ``"words"`` (no
            tokenizer: P filler words, approximate); None without ``--shared-prefix``.
        note: one sentence on what the figure is not (a gauge's scope).
    """

    source: str
    hit_share: float | None = None
    cached_tokens: float | None = None
    prompt_tokens: float | None = None
    n: int = 0
    by_turn: dict[str, float] = Field(default_factory=dict)
    prefix_sized_by: str | None = None
    note: str | None = None


class Percentiles(BaseModel):
    """p50 / p90 / p99 and mean of one latency, in seconds (None if no data)."""

    n: int
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


class ClientHealth(BaseModel):
    """The load client's own error during one run (the ruler's error bar).

    Attributes:
        loop_lag_s: lateness of a periodic probe on the client's event loop,
            s (:mod:`tokcaliper.load.monitor`); a timestamp may trail its
            event by this much.
        loop_lag_max_s: the largest probe lateness, s.
        probe_interval_s: probe period, s.
        cpu_s / wall_s: the loop thread's CPU time and the phase's wall time, s.
        cpu_share: ``cpu_s ÷ wall_s`` (1.0 = one core saturated).
        connections_opened / connections_prefilled: TCP connections opened
            in the phase, and of which before its clock started.
        requests_reused: requests sent on a connection that had carried one.
        connect_s: connect durations, s (kept apart from TTFT).
        server_keeps_alive: whether the server kept streamed connections
            (None: not yet known).
        reads_kernel_stamped / reads_loop_stamped: network reads whose
            arrival time is the kernel's receive stamp (immune to loop lag) /
            the loop's own time at the read (TLS, or no kernel stamp;
            :mod:`tokcaliper.load.stamped`).
        client_limited: the client, not the server, bounded this run
            (``limits`` says which bound was crossed, with its arithmetic).
        limits: one sentence per crossed bound.
        host_limits: bounds crossed that the client's own figures do not explain
            (requests left late while its loop lag and CPU share were within
            bounds): the host delayed the client; one sentence each.
        cap: an open loop's in-flight cap (``LoadConfig.concurrency``); None in a closed loop.
        cap_waits: open-loop arrivals that found ``cap`` streams in flight and waited for one
            to end (:func:`tokcaliper.load.driver` ``_open_loop``).
        cap_late: of those, the ones whose wait for a slot passed the dispatch bound
            (:data:`tokcaliper.load.monitor.DISPATCH_BOUND_S`).
        cap_limits: the late dispatch those waits explain (the cap, not the client or the
            host, delayed the requests); one sentence.
        workers: with several load processes, each one's own figures
            (:class:`WorkerHealth`); the figures above are then their union:
            the worst loop lag and CPU share of any worker (a timestamp may
            trail by the worst one's lag), CPU time and connections summed.
    """

    loop_lag_s: Percentiles = Field(default_factory=lambda: Percentiles(n=0))
    loop_lag_max_s: float | None = None
    probe_interval_s: float | None = None
    cpu_s: float | None = None
    wall_s: float | None = None
    cpu_share: float | None = None
    connections_opened: int = 0
    connections_prefilled: int = 0
    requests_reused: int = 0
    connect_s: Percentiles = Field(default_factory=lambda: Percentiles(n=0))
    server_keeps_alive: bool | None = None
    reads_kernel_stamped: int = 0
    reads_loop_stamped: int = 0
    client_limited: bool = False
    limits: list[str] = Field(default_factory=list)
    host_limits: list[str] = Field(default_factory=list)
    cap: int | None = None
    cap_waits: int = 0
    cap_late: int = 0
    cap_limits: list[str] = Field(default_factory=list)
    workers: list[WorkerHealth] = Field(default_factory=list)

    @property
    def arrival_clock(self) -> str | None:
        """Which clock stamped arrivals: ``"kernel"``, ``"loop"``, ``"mixed"`` (None: no reads)."""
        k, lp = self.reads_kernel_stamped, self.reads_loop_stamped
        if not k and not lp:
            return None
        return "kernel" if not lp else "loop" if not k else "mixed"


class ClockOffset(BaseModel):
    """A load worker's clock against the driver's, from round trips (NTP's method).

    Each round trip reads the driver's clock ``t0``, the worker's ``w``, the
    driver's ``t1``; the sample of least round trip ``t1 − t0`` gives
    ``offset_s = w − (t0 + t1)/2`` and the bound ``rtt_s / 2`` (the true offset
    lies within it whatever the asymmetry of the two legs).
    Driver time = worker time − ``offset_s``.

    Attributes:
        offset_s: worker clock − driver clock, s.
        bound_s: half the least round trip, s.
        rtt_s: the least round trip, s.
        samples: round trips taken.
    """

    offset_s: float
    bound_s: float
    rtt_s: float
    samples: int


class WorkerHost(BaseModel):
    """A load worker's own host during its share of a run (issue 23 item 3).

    On a remote node the driver's host telemetry says nothing about the worker's
    machine, so each worker samples its own host with the telemetry sampler
    (:class:`tokcaliper.telemetry.TelemetrySampler`: host CPU from ``/proc/stat``,
    its own process from ``/proc/self/stat``) from just before the common start
    to the end of its phase, and ships the summary back with its records.

    Attributes:
        hostname: ``socket.gethostname()`` of the worker's host.
        cpus: logical CPUs there (``os.cpu_count()``), to read the load average against.
        load_average_start / load_average_end: ``os.getloadavg()`` (1, 5, 15 min;
            runnable + uninterruptible tasks, exponentially averaged by the kernel)
            when its sampler started and when its phase ended.
        telemetry: its sampler's summary: device ``cpu`` (host utilisation and steal
            share, interval-weighted) and device ``client`` (this worker process's CPU
            share, mean and busiest 1 s window), and ``foreign_cpu_cores_*`` (cores
            used by other processes of that host: on a shared host the other workers
            and the driver count as other processes). None when it was not sampled.
        error: why ``telemetry`` is None (the sampler failed), else None.
    """

    hostname: str | None = None
    cpus: int | None = None
    load_average_start: tuple[float, float, float] | None = None
    load_average_end: tuple[float, float, float] | None = None
    telemetry: TelemetrySummary | None = None
    error: str | None = None

    def device(self, name: str) -> DeviceSummary | None:
        """The summary of device ``name`` (``"cpu"``, ``"client"``), None when not sampled."""
        if self.telemetry is None:
            return None
        return next((d for d in self.telemetry.devices if d.device == name), None)


class WorkerHealth(BaseModel):
    """One load worker of a multi-process run (:mod:`tokcaliper.load.distributed`).

    Attributes:
        worker: 0-based worker index.
        node / host / pid: where it ran (Ray node id, host name, process id).
        concurrency: its closed-loop streams, or its in-flight cap in an open loop.
        requests: measured requests it sent and shipped back (completed + failed).
        failed: of which failed.
        client: its own loop lag, CPU share and connections, judged against the bounds.
        offset_before / offset_after: its clock offset estimated before and after
            the run (None when it could not be taken: the worker had died).
        drift_s: ``offset_after − offset_before``, s (the clocks' drift over the run).
        start_late_s: how much later than the common start its phase clock
            started, s (building its requests and opening its connections took
            longer than the margin; 0 when on time).
        error: why it produced no records (it died), else None.
        host_telemetry: its own host during its phase (:class:`WorkerHost`); None
            when the run took no telemetry or the worker died.
    """

    worker: int
    node: str | None = None
    host: str | None = None
    pid: int | None = None
    concurrency: int = 0
    requests: int = 0
    failed: int = 0
    client: ClientHealth | None = None
    offset_before: ClockOffset | None = None
    offset_after: ClockOffset | None = None
    drift_s: float | None = None
    start_late_s: float | None = None
    error: str | None = None
    host_telemetry: WorkerHost | None = None


class ArrivalStats(BaseModel):
    """How an open-loop run's actual arrivals followed the requested process.

    Attributes:
        process: ``"poisson"``, ``"gamma"`` or ``"constant"``.
        requested_rate_rps: the requested mean rate, req/s.
        burstiness: the gamma shape (gamma only).
        n: arrivals (requests sent).
        achieved_rate_rps: (n − 1) ÷ (last send − first send).
        rate_ci95_rps: 95 % CI of the achieved rate under the requested
            process (:mod:`tokcaliper.load.arrivals`).
        interarrival_cv: CV of the actual gaps between sends (Poisson ≈ 1).
        scheduled_cv: CV of the scheduled gaps (what was asked for).
    """

    process: str
    requested_rate_rps: float
    burstiness: float | None = None
    n: int = 0
    achieved_rate_rps: float | None = None
    rate_ci95_rps: tuple[float, float] | None = None
    interarrival_cv: float | None = None
    scheduled_cv: float | None = None


class SloAttainment(BaseModel):
    """How many of a run's measured requests met every SLO (:mod:`tokcaliper.load.slo`).

    Attributes:
        slo_s: the SLOs, seconds, by kind (as in :attr:`LoadConfig.slo_s`).
        n: measured requests (completed + failed): the denominator.
        met: requests that completed and met every SLO.
        failed: failed requests (each counts as missing every SLO).
        missed: per SLO kind, completed requests that missed it (a request
            can miss several).
        attainment: ``met ÷ n`` (None when n = 0).
        ci95: Wilson 95 % interval of the attainment over the run's requests
            (:func:`tokcaliper.stats.proportion.wilson_interval`).
        goodput_rps: ``met ÷ wall_s``, req/s.
        goodput_tok_s: output tokens of the requests that met every SLO ÷ wall_s, tok/s.
    """

    slo_s: dict[str, float]
    n: int
    met: int
    failed: int
    missed: dict[str, int] = Field(default_factory=dict)
    attainment: float | None = None
    ci95: tuple[float, float] | None = None
    goodput_rps: float | None = None
    goodput_tok_s: float | None = None


class SteadyWindow(BaseModel):
    """A run's steady state: where requests in flight stay ≥ a share of the peak
    (:mod:`tokcaliper.load.steady`). Times are seconds on the run's clock (``start_s``).

    Attributes:
        share: the asked share of the peak (``--steady-state``).
        peak: most measured requests in flight at once.
        threshold: ``share × peak``; the window holds from the first instant the
            in-flight count reaches it to the last instant it is at or above it.
        start_s / end_s / length_s: the window; ramp-up before it and drain after it are excluded.
        at_threshold_share: share of the window's time with in-flight ≥ threshold
            (1.0 = it never dipped).
        requests: completed requests issued within the window (its TTFT sample).
        output_tokens: output tokens that arrived within the window (each text
            chunk carries ``output tokens ÷ chunks`` of its request's tokens).
        output_tok_s: ``output_tokens ÷ length_s`` (None for a zero-length window).
        ttft_s: TTFT of the completed requests issued within the window.
        itl_s: token gaps that ended within the window.
    """

    share: float
    peak: int
    threshold: float
    start_s: float
    end_s: float
    length_s: float
    at_threshold_share: float | None = None
    requests: int = 0
    output_tokens: float = 0.0
    output_tok_s: float | None = None
    ttft_s: Percentiles = Field(default_factory=lambda: Percentiles(n=0))
    itl_s: Percentiles = Field(default_factory=lambda: Percentiles(n=0))


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
        errors: failed measured requests per error message.
        error_classes: failed measured requests per error class
            (:data:`ERROR_CLASSES`).
        dispatch_s: dispatch delay (sent − scheduled) over the requests.
        ttft_from_schedule_s: scheduled → first token, over the requests;
            with open-loop arrivals it is the TTFT a user arriving on
            schedule saw (it shows coordinated omission: TTFT counted from
            the send alone hides the time a request waited to be sent).
        client: the load client's own lag, CPU and connections (None in
            runs stored before they were measured).
        arrivals: open-loop arrival statistics (None in a closed loop).
        stream_warnings: where the streams' ``usage`` and their text disagree
            (:func:`tokcaliper.load.summary.stream_warnings`): one sentence
            each, with its figures; empty when they agree.
        slo: attainment of the run's SLOs and its goodput (None without SLOs).
        steady: the run's steady-state window and its figures (None without
            ``steady_state``, or with no measured request).
        lengths: requested vs counted synthetic lengths (None without
            ``--input-tokens`` / ``--output-tokens``).
        prefix_cache: the share of prompt tokens served from the server's
            prefix cache (None when the server reported nothing).
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
    error_classes: dict[str, int] = Field(default_factory=dict)
    dispatch_s: Percentiles = Field(default_factory=lambda: Percentiles(n=0))
    ttft_from_schedule_s: Percentiles = Field(default_factory=lambda: Percentiles(n=0))
    client: ClientHealth | None = None
    arrivals: ArrivalStats | None = None
    stream_warnings: list[str] = Field(default_factory=list)
    slo: SloAttainment | None = None
    steady: SteadyWindow | None = None
    lengths: LengthReport | None = None
    prefix_cache: PrefixCacheReport | None = None


class DeviceStartState(BaseModel):
    """One device's state when a run's measured load began (a covariate for M2).

    Attributes:
        device: device id, e.g. ``"gpu0"`` or ``"cpu"``.
        clock_mhz: SM clock (GPU) or mean core frequency (CPU) of the first
            telemetry sample of the run, MHz.
        temperature_c: temperature of that sample, °C.
    """

    device: str
    clock_mhz: float | None = None
    temperature_c: float | None = None


class RunSource(BaseModel):
    """Where an imported run came from: another tool's result file (``tokcaliper import``).

    Attributes:
        tool: the tool that measured it (``"vllm"``, ``"aiperf"``, ``"guidellm"`` …).
        tool_version: its version, when the file states it.
        format: the importer that read it (``"vllm_bench"``, ``"aiperf"`` …;
            :mod:`tokcaliper.audit.importers`).
        file: the file as given to ``import``.
        benchmark: which run of a file holding several (GuideLLM rate, inference-perf
            stage, llama-bench row …); None for a one-run file.
        settings: the load settings the file states, as read (model, concurrency,
            rate, lengths, requests, and the distinguishing setting).
        fields: metric field → the source field and its unit conversion.
        notes: assumptions, values stored as missing (``Infinity``/``NaN``), skipped records.
    """

    tool: str
    tool_version: str | None = None
    format: str
    file: str
    benchmark: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    fields: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class Run(BaseModel):
    """One run as stored: what was run, where, and what was measured.

    Attributes:
        id: database id (None until stored).
        session: id shared by the runs of one ``bench --repeat`` invocation or
            one experiment.
        arm: label of the configuration under test.
        repetition: 0-based index of this run within its arm.
        position: 0-based position in the session's run order (all arms); the
            covariate for drift over run order (M2, M4).
        rest_s: rest actually taken between the end of the previous run of the
            session and the start of this one, s (None for the first run).
        started_at / finished_at: UTC, ISO 8601 with milliseconds
            (:mod:`tokcaliper.model.timestamps`).
        command_line: the exact tokcaliper command line.
        server_command: the command that started the server (None with --url).
        server_version: the server's version string, if known.
        tool_version: tokcaliper's version.
        host: where the run happened (:class:`~tokcaliper.model.telemetry.HostInfo`).
        telemetry: per-run telemetry summary, if sampled; it is also the one
            home of the idle power measured before the session's first run.
        counters_delta: server counters (e.g. Prometheus ``/metrics``) after − before.
        counters_error: why the server counters could not be read (None when
            they were read, or when the server has none).
        warmup_run: a whole run made after an arm switch to settle the system;
            stored, excluded from every analysis.
        valid: False when the run must not be analysed (``invalid_reason`` says
            why, e.g. the read-back after a switch did not show the setting).
        readback: what the experiment's read-back command printed before this
            run (None without a read-back).
        restart: 0-based index of the server start this run ran under, when the
            session restarted its managed server on purpose (``bench --restarts``);
            ``None`` otherwise.
        served: what the server said it serves (model file, quantization,
            parameters; :mod:`tokcaliper.servers.served`), read before the run;
            None in runs stored before it was read.
        config: the load configuration.
        metrics: the summary of the measured requests.
        requests: every request, warm-up ones included (flagged).
        source: the peer tool's file an imported run came from (None: measured by tokcaliper).
    """

    id: int | None = None
    session: str
    arm: str = "default"
    repetition: int = 0
    position: int | None = None
    rest_s: float | None = None
    started_at: UtcTimestamp
    finished_at: UtcTimestamp
    command_line: str
    server_command: str | None = None
    server_version: str | None = None
    tool_version: str
    host: HostInfo | None = None
    telemetry: TelemetrySummary | None = None
    counters_delta: dict[str, float] = Field(default_factory=dict)
    counters_error: str | None = None
    warmup_run: bool = False
    valid: bool = True
    invalid_reason: str | None = None
    readback: str | None = None
    restart: int | None = None
    served: ServedModel | None = None
    config: LoadConfig
    metrics: RunMetrics
    requests: list[RequestRecord] = Field(default_factory=list)
    source: RunSource | None = None

    @property
    def measured_by(self) -> str:
        """The tool whose definitions the metrics follow: ``"tokcaliper"`` or the source tool."""
        return "tokcaliper" if self.source is None else self.source.tool

    @computed_field  # type: ignore[prop-decorator]
    @property
    def start_state(self) -> list[DeviceStartState]:
        """Per device, clock and temperature at the start of the measured load.

        Derived from :attr:`telemetry` (its first sample per device), so it is
        never stored twice; empty without telemetry.
        """
        if self.telemetry is None:
            return []
        return [
            DeviceStartState(device=d.device, clock_mhz=d.clock_start_mhz,
                             temperature_c=d.temperature_start_c)
            for d in self.telemetry.devices
        ]


ClientHealth.model_rebuild()
