#!/usr/bin/env python3
"""How much error does each load client add? tokcaliper, a floor, and named peers, side by side.

Against ``tests/load/reference_server.py`` (first token ``--ttft-ms`` after
the request is parsed, then one every ``--itl-ms``, ``--tokens`` tokens; it
logs on the host's monotonic clock when it parsed each request and wrote each
token — the truth — and its own emission error), the script runs, at each
concurrency, interleaved and repeated (the order of tools rotates per
repetition):

* ``tokcaliper`` — ``tokcaliper.load.driver.run_phase``, closed loop;
* ``floor`` — ``tests/load/floor_client.py``, a 50-line raw-asyncio client
  with one kept connection per worker: what a client cannot go below here;
* peers, from their own virtual environment (``--peers-venv``, never the
  project's): AIPerf (``aiperf profile``), GuideLLM (``guidellm run``),
  llama-benchy, and the ``openai`` SDK as a hand-written benchmark would use
  it (``benchmarks/openai_sdk_client.py``). A peer that cannot be run offline
  here is reported with the reason, never replaced by a guess.

Per run: TTFT error = the tool's mean (p50) TTFT − the truth's mean (p50) over
the requests the server saw in that run; of it, the server's read queue =
mean(parsed − the kernel's receive time of the request's last segment at the
server), which lies inside the server and which no client can remove, and
the rest, the TTFT error outside the server; ITL error likewise on the mean gap;
throughput error = tool tok/s ÷ truth tok/s − 1, truth = tokens ÷ (last
token written − first request parsed); client CPU = CPU seconds of the
client's whole process tree between the first request's arrival at the
server and the last token's write (sampled every 20 ms with psutil),
per 1000 tokens streamed. Figures over repetitions: mean ± the half-width of
the 95 % CI of the mean (Student t, ``tokcaliper.stats.describe``), n runs.

Method notes: the server runs pinned to one CPU (``--server-cpu``) at raised
priority (nice −10 as root), every client pinned to another
(``--client-cpu``). Requests per run: ``--waves`` × concurrency, at least ``--min-requests``.

    python benchmarks/client_accuracy.py                          # C = 1,16,64,256, 3 reps
    python benchmarks/client_accuracy.py --concurrency 16 --repeat 2 --tools tokcaliper,floor
    python benchmarks/client_accuracy.py --json > out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "load"))
try:
    import tokcaliper  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT / "src"))

from reference_server import RefServer, Timing, emission_errors  # noqa: E402

PEERS = ("aiperf", "guidellm", "llama-benchy", "openai-sdk")
#: Peers whose figures come from a JSON line on stdout (like tokcaliper's and the floor's).
OWN_JSON = ("tokcaliper", "floor", "openai-sdk")
#: The local tokenizer's name in the local hub cache (AIPerf wants a hub name).
HUB_TOKENIZER = "local/tiny-wordlevel"
#: llama-benchy's book URL; its cache file is pre-seeded, so nothing is fetched.
BOOK_URL = "local://tokcaliper-book"


# ---------------------------------------------------------------------------
# In-process clients (run as a pinned child process of this script)
# ---------------------------------------------------------------------------

def _child(kind: str, port: int, concurrency: int, requests: int, tokens: int, tag: str) -> None:
    """Run one tool in this (child) process and print its own figures as JSON."""
    if kind == "tokcaliper":
        from tokcaliper.load.driver import run_phase
        from tokcaliper.load.prompts import builtin_prompts
        from tokcaliper.load.summary import summarize
        from tokcaliper.model.run import LoadConfig

        cfg = LoadConfig(base_url=f"http://127.0.0.1:{port}", concurrency=concurrency, requests=requests,
                         max_tokens=tokens, prompt_salt=tag, warmup=0)
        phase = run_phase(cfg, builtin_prompts())
        m = summarize(phase, client=phase.client)
        out = {"ttft": [r.ttft_s for r in phase if r.ok], "itl_mean": m.itl_s.mean,
               "tok_s": m.aggregate_output_tok_s, "failed": m.failed,
               "loop_lag_p99": m.client.loop_lag_s.p99 if m.client else None}
    else:
        from floor_client import floor_run

        recs = asyncio.run(floor_run("127.0.0.1", port, concurrency=concurrency, requests=requests,
                                     max_tokens=tokens, tag=tag))
        gaps = [b - a for r in recs for a, b in zip(r["stamps"], r["stamps"][1:])]
        n_tok = sum(len(r["stamps"]) for r in recs)
        span = max(r["end"] for r in recs) - min(r["sent"] for r in recs)
        out = {"ttft": [r["stamps"][0] - r["sent"] for r in recs], "itl_mean": statistics.mean(gaps),
               "tok_s": n_tok / span, "failed": 0}
    print(json.dumps(out))


# ---------------------------------------------------------------------------
# CPU sampling of a process tree
# ---------------------------------------------------------------------------

class CpuSampler:
    """Samples (perf_counter, CPU seconds of a process and its children) every 20 ms."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.proc = psutil.Process(pid)
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _cpu(self) -> float:
        import psutil

        total = 0.0
        try:
            procs = [self.proc, *self.proc.children(recursive=True)]
        except psutil.Error:
            return self.samples[-1][1] if self.samples else 0.0
        for p in procs:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), self._cpu()))
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._t.join()

    def between(self, t0: float, t1: float) -> float | None:
        """CPU seconds used between t0 and t1 (linear interpolation of the samples)."""
        if len(self.samples) < 2:
            return None
        ts, cs = np.array(self.samples).T
        return float(np.interp(t1, ts, cs) - np.interp(t0, ts, cs))


# ---------------------------------------------------------------------------
# Peers (each returns its own figures or raises PeerUnavailable with the reason)
# ---------------------------------------------------------------------------

class PeerUnavailable(Exception):
    """A peer cannot be run here; the message says exactly why."""


def _peer_env(args: argparse.Namespace, home: Path) -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(home / "hf"),
               HF_DATASETS_OFFLINE="1", NO_COLOR="1", PYTHONUNBUFFERED="1", HOME=str(home / "home"))
    env.pop("PYTHONPATH", None)
    return env


def _peer_cmd(tool: str, args: argparse.Namespace, work: Path, port: int, c: int, n: int) -> list[str]:
    venv = Path(args.peers_venv) / "bin"
    url = f"http://127.0.0.1:{port}"
    tok = str(work / "tokenizer")
    if tool == "aiperf":
        return [str(venv / "aiperf"), "profile", "--model", "ref", "--url", url, "--endpoint-type", "chat",
                "--streaming", "--concurrency", str(c), "--request-count", str(n),
                "--synthetic-input-tokens-mean", "32", "--synthetic-input-tokens-stddev", "0",
                "--output-tokens-mean", str(args.tokens), "--output-tokens-stddev", "0",
                "--tokenizer", HUB_TOKENIZER, "--ui-type", "none", "--artifact-dir", str(work / "aiperf")]
    if tool == "guidellm":
        return [str(venv / "guidellm"), "run", "--backend", f"kind=openai_http,target={url},model=ref",
                "--profile", f"kind=concurrent,streams={c}", "--constraint", f"kind=max_requests,count={n}",
                "--tokenizer", f"kind=huggingface_auto,model={tok}",
                "--data", f"kind=synthetic_text,prompt_tokens=32,output_tokens={args.tokens}",
                "--output", f"kind=json,path={work / 'guidellm.json'}", "--disable-console-interactive"]
    if tool == "llama-benchy":
        return [str(venv / "llama-benchy"), "--base-url", url + "/v1", "--model", "ref", "--tokenizer", tok,
                "--book-url", BOOK_URL, "--pp", "32", "--tg", str(args.tokens), "--runs", str(max(1, n // c)),
                "--concurrency", str(c), "--no-warmup", "--skip-coherence", "--latency-mode", "none",
                "--no-adapt-prompt", "--exact-tg", "--format", "json", "--save-result", str(work / "benchy.json")]
    raise ValueError(tool)


def _parse_peer(tool: str, work: Path) -> dict[str, Any]:
    """The peer's own mean/p50 TTFT, mean ITL (s) and output tok/s from its export."""
    if tool == "aiperf":
        files = sorted((work / "aiperf").rglob("profile_export_aiperf.json"))
        if not files:
            raise PeerUnavailable("aiperf wrote no profile_export_aiperf.json")
        d = json.loads(files[-1].read_text())
        rec = d.get("records", d)

        def get(name: str, stat: str) -> float | None:
            m = rec.get(name) or {}
            v = m.get(stat)
            return None if v is None else float(v) / (1000.0 if m.get("unit", "ms") == "ms" else 1.0)

        return {"ttft_mean": get("time_to_first_token", "avg"), "ttft_p50": get("time_to_first_token", "p50"),
                "itl_mean": get("inter_token_latency", "avg"),
                "tok_s": (rec.get("output_token_throughput") or {}).get("avg")}
    if tool == "guidellm":
        b = json.loads((work / "guidellm.json").read_text())["benchmarks"][0]
        m = b["metrics"]

        def succ(name: str, stat: str) -> float | None:
            v = (m.get(name) or {}).get("successful") or {}
            return None if v.get(stat) is None else float(v[stat]) / 1000.0

        count = m["output_token_count"]["successful"]
        # Its headline output tok/s is a mean over a time series; the aggregate
        # (all tokens ÷ its own benchmark duration) is the comparable figure.
        return {"ttft_mean": succ("time_to_first_token_ms", "mean"),
                "ttft_p50": succ("time_to_first_token_ms", "median"),
                "itl_mean": succ("inter_token_latency_ms", "mean"),
                "tok_s": count["mean"] * count["count"] / b["duration"]}
    if tool == "llama-benchy":
        b = json.loads((work / "benchy.json").read_text())["benchmarks"][-1]
        ttft = b["e2e_ttft"]
        vals = ttft.get("values") or []
        per_req = b["tg_req_throughput"].get("values") or [b["tg_req_throughput"]["mean"]]
        # It reports per-request decode tok/s, not ITL: its ITL is 1 ÷ that, per request.
        return {"ttft_mean": ttft["mean"] / 1000.0,
                "ttft_p50": statistics.median(vals) / 1000.0 if vals else None,
                "itl_mean": statistics.mean(1.0 / v for v in per_req if v > 0),
                "tok_s": b["tg_throughput"]["mean"]}
    raise ValueError(tool)


def _prepare_peers(args: argparse.Namespace, work: Path) -> dict[str, str]:
    """Install-time checks and offline assets; returns tool → reason for those that cannot run."""
    missing: dict[str, str] = {}
    venv = Path(args.peers_venv) / "bin"
    for tool in PEERS:
        if tool == "openai-sdk":
            ok = subprocess.run([str(venv / "python"), "-c", "import openai"], capture_output=True).returncode == 0
            if not ok:
                missing[tool] = f"openai not importable in {args.peers_venv} (pip install openai into it)"
        elif not (venv / tool).exists():
            missing[tool] = f"{venv / tool} not installed (pip install {tool} into {args.peers_venv})"
    tok = work / "tokenizer"
    if not tok.exists():
        code = (
            "import sys\nfrom tokenizers import Tokenizer, models, pre_tokenizers\n"
            "from transformers import PreTrainedTokenizerFast\n"
            "vocab={'[UNK]':0,'<s>':1,'</s>':2,'tok':3}\n"
            "vocab.update({w:i+4 for i,w in enumerate(('the of and to in is was he that it his her you as had with for '"
            "'she not at but be my on have him said me which by so this all from they no were if would or when what '"
            "'there been one could very an who them do we up any out may more can some into hello').split())})\n"
            "t=Tokenizer(models.WordLevel(vocab,unk_token='[UNK]'));t.pre_tokenizer=pre_tokenizers.Whitespace()\n"
            "f=PreTrainedTokenizerFast(tokenizer_object=t,unk_token='[UNK]',bos_token='<s>',eos_token='</s>')\n"
            "f.chat_template=\"{% for m in messages %}{{ m['content'] }} {% endfor %}\"\n"
            "f.save_pretrained(sys.argv[1])\n")
        py = venv / "python"
        if py.exists():
            subprocess.run([str(py), "-c", code, str(tok)], check=False, capture_output=True)
    if not tok.exists():
        for tool in PEERS:
            if tool != "openai-sdk":  # the SDK needs no tokenizer
                missing.setdefault(tool, "could not build the local tokenizer in the peers venv")
        return missing
    # AIPerf takes only a hub-style name: put the tokenizer into a local hub cache.
    snap = work / "hf" / "hub" / ("models--" + HUB_TOKENIZER.replace("/", "--")) / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True, exist_ok=True)
    for f in tok.iterdir():
        shutil.copy(f, snap / f.name)
    (snap.parents[1] / "refs").mkdir(exist_ok=True)
    (snap.parents[1] / "refs" / "main").write_text("0" * 40)
    # llama-benchy reads a book from ~/.cache/llama-benchy/<md5(url)>.txt before downloading it.
    import hashlib
    import random

    book = work / "home" / ".cache" / "llama-benchy" / (hashlib.md5(BOOK_URL.encode()).hexdigest() + ".txt")
    book.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    words = "the of and to in is was he that it his her you as had with for she not at but be my on".split()
    book.write_text(" ".join(rng.choice(words) for _ in range(20000)))
    return missing


# ---------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------

def truth_figures(entries: list[dict]) -> dict[str, float]:
    ttft = [e["written"][0] - e["parsed"] for e in entries if e["written"]]
    gaps = [b - a for e in entries for a, b in zip(e["written"], e["written"][1:])]
    n_tok = sum(len(e["written"]) for e in entries)
    span = max(e["written"][-1] for e in entries if e["written"]) - min(e["parsed"] for e in entries)
    return {"ttft_mean": statistics.mean(ttft), "ttft_p50": statistics.median(ttft),
            "itl_mean": statistics.mean(gaps), "tok_s": n_tok / span, "tokens": n_tok,
            "t0": min(e["parsed"] for e in entries), "t1": max(e["written"][-1] for e in entries if e["written"])}


def _read_queue_ms(entries: list[dict]) -> float | None:
    """Mean time the server's loop took to parse a request after it reached the host (kernel stamp), ms.

    This part of every tool's TTFT error lies inside the server: no client can remove it.
    """
    waits = [e["parsed"] - e["recv_kernel"] for e in entries if e.get("recv_kernel")]
    return statistics.mean(waits) * 1e3 if waits else None


def run_one(tool: str, srv: RefServer, args: argparse.Namespace, c: int, tag: str, work: Path,
            missing: dict[str, str]) -> dict[str, Any]:
    n = max(args.waves * c, args.min_requests)
    pin = ["taskset", "-c", str(args.client_cpu)] if args.client_cpu is not None and shutil.which("taskset") else []
    srv.truth()  # clear
    if tool in ("tokcaliper", "floor"):
        cmd = [*pin, sys.executable, str(Path(__file__).resolve()), "--_client", tool, "--_port", str(srv.port),
               "--_c", str(c), "--_n", str(n), "--tokens", str(args.tokens), "--_tag", tag]
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    elif tool == "openai-sdk":
        if tool in missing:
            return {"tool": tool, "c": c, "unavailable": missing[tool]}
        cmd = [*pin, str(Path(args.peers_venv) / "bin" / "python"), str(ROOT / "benchmarks" / "openai_sdk_client.py"),
               "--port", str(srv.port), "--concurrency", str(c), "--requests", str(n), "--tokens", str(args.tokens),
               "--tag", tag]
        env = _peer_env(args, work)
    else:
        if tool in missing:
            return {"tool": tool, "c": c, "unavailable": missing[tool]}
        run_dir = work / f"{tool}-{tag}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "tokenizer").symlink_to(work / "tokenizer")
        cmd = [*pin, *_peer_cmd(tool, args, run_dir, srv.port, c, n)]
        env = _peer_env(args, work)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=work)
    sampler = CpuSampler(proc.pid)
    try:
        stdout, stderr = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        sampler.stop()
        return {"tool": tool, "c": c, "unavailable": f"timed out after {args.timeout} s: {stderr[-300:]}"}
    sampler.stop()
    entries = srv.truth()
    if proc.returncode != 0 or not entries:
        tail = (stderr or stdout).strip().splitlines()[-3:]
        return {"tool": tool, "c": c, "unavailable": f"exit {proc.returncode}: {' | '.join(tail)[-400:]}"}
    truth = truth_figures(entries)
    try:
        if tool in OWN_JSON:
            own = json.loads(stdout.strip().splitlines()[-1])
            own["ttft_mean"], own["ttft_p50"] = statistics.mean(own["ttft"]), statistics.median(own["ttft"])
        else:
            own = _parse_peer(tool, work / f"{tool}-{tag}")
    except PeerUnavailable as e:
        return {"tool": tool, "c": c, "unavailable": str(e)}
    cpu = sampler.between(truth["t0"], truth["t1"])
    em = emission_errors(entries, srv.timing)
    out = {"tool": tool, "c": c, "requests_seen": len(entries),
           "ttft_err_mean_ms": None if own.get("ttft_mean") is None else (own["ttft_mean"] - truth["ttft_mean"]) * 1e3,
           "ttft_err_p50_ms": None if own.get("ttft_p50") is None else (own["ttft_p50"] - truth["ttft_p50"]) * 1e3,
           "itl_err_ms": None if own.get("itl_mean") is None else (own["itl_mean"] - truth["itl_mean"]) * 1e3,
           "tput_err_pct": None if not own.get("tok_s") else (own["tok_s"] / truth["tok_s"] - 1) * 100,
           "cpu_s_per_1k_tok": None if cpu is None else cpu / (truth["tokens"] / 1000),
           "server_read_queue_ms": (rq := _read_queue_ms(entries)),
           "ttft_err_client_ms": None if own.get("ttft_mean") is None or rq is None
           else (own["ttft_mean"] - truth["ttft_mean"]) * 1e3 - rq,
           "server_emission_p50_ms": float(np.median(em)) * 1e3,
           "server_emission_p99_ms": float(np.percentile(em, 99)) * 1e3}
    if "loop_lag_p99" in own:
        out["loop_lag_p99_ms"] = None if own["loop_lag_p99"] is None else own["loop_lag_p99"] * 1e3
    return out


# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------

FIGS = ("ttft_err_mean_ms", "ttft_err_p50_ms", "server_read_queue_ms", "ttft_err_client_ms", "itl_err_ms",
        "tput_err_pct", "cpu_s_per_1k_tok")


def summarise(runs: list[dict]) -> dict[str, Any]:
    from tokcaliper.stats.describe import describe

    table: dict[str, dict[str, Any]] = {}
    for r in runs:
        cell = table.setdefault(f"{r['c']}", {}).setdefault(r["tool"], {"runs": []})
        cell["runs"].append(r)
    for c, tools in table.items():
        for tool, cell in tools.items():
            ok = [r for r in cell["runs"] if "unavailable" not in r]
            if not ok:
                cell["unavailable"] = cell["runs"][0]["unavailable"]
                continue
            for f in (*FIGS, "server_emission_p50_ms", "server_emission_p99_ms"):
                vals = [r[f] for r in ok if r.get(f) is not None]
                if not vals:
                    continue
                d = describe(vals)
                half = None if d.ci95 is None else (d.ci95[1] - d.ci95[0]) / 2
                cell[f] = {"mean": d.mean, "ci95_half": half, "n": d.n}
        peers = {t: v for t, v in tools.items() if t in PEERS and "ttft_err_mean_ms" in v}
        for tool, cell in tools.items():
            if "ttft_err_mean_ms" not in cell:
                continue
            e = cell["ttft_err_mean_ms"]["mean"]
            if "floor" in tools and "ttft_err_mean_ms" in tools["floor"]:
                f = tools["floor"]["ttft_err_mean_ms"]["mean"]
                cell["ttft_err_vs_floor"] = e / f if f > 0 else None
            if peers:
                best_name = min(peers, key=lambda t: abs(peers[t]["ttft_err_mean_ms"]["mean"]))
                b = peers[best_name]["ttft_err_mean_ms"]["mean"]
                cell["best_peer"] = best_name
                cell["ttft_err_vs_best_peer"] = e / b if b else None
    return table


def _fmt(v: dict | None, digits: int = 2) -> str:
    if not v:
        return "—"
    s = f"{v['mean']:+.{digits}f}"
    if v.get("ci95_half") is not None:
        s += f" ± {v['ci95_half']:.{digits}f}"
    return s + f" (n={v['n']})"


def render(table: dict[str, Any]) -> str:
    lines = ["| C | tool | TTFT err mean (ms) | TTFT err p50 (ms) | of which server read queue (ms) | "
             "TTFT err outside the server (ms) | ITL err (ms) | throughput err (%) | "
             "CPU s / 1000 tok | × floor | × best peer |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in sorted(table, key=int):
        for tool, cell in table[c].items():
            if "unavailable" in cell:
                lines.append(f"| {c} | {tool} | not run: {cell['unavailable'][:160]} | | | | | | | | |")
                continue
            cpu = cell.get("cpu_s_per_1k_tok")
            ratio_f = cell.get("ttft_err_vs_floor")
            ratio_p = cell.get("ttft_err_vs_best_peer")
            vs_floor = "—" if ratio_f is None else f"{ratio_f:.2f}"
            vs_peer = "—" if ratio_p is None else f"{ratio_p:.2f} ({cell.get('best_peer')})"
            lines.append(
                f"| {c} | {tool} | {_fmt(cell.get('ttft_err_mean_ms'))} | {_fmt(cell.get('ttft_err_p50_ms'))} | "
                f"{_fmt(cell.get('server_read_queue_ms'))} | {_fmt(cell.get('ttft_err_client_ms'), 3)} | "
                f"{_fmt(cell.get('itl_err_ms'), 4)} | {_fmt(cell.get('tput_err_pct'), 3)} | "
                f"{_fmt(cpu, 3)} | {vs_floor} | {vs_peer} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", default="1,16,64,256")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--waves", type=int, default=3, help="requests per run = waves × concurrency …")
    ap.add_argument("--min-requests", type=int, default=24, help="… but at least this many")
    ap.add_argument("--tools", default="tokcaliper,floor,aiperf,guidellm,llama-benchy,openai-sdk")
    ap.add_argument("--peers-venv", default=os.environ.get("PEERS_VENV", "/work/peers-venv"))
    ap.add_argument("--ttft-ms", type=float, default=50.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--_client")
    ap.add_argument("--_port", type=int)
    ap.add_argument("--_c", type=int)
    ap.add_argument("--_n", type=int)
    ap.add_argument("--_tag")
    a = ap.parse_args()
    if a._client:
        _child(a._client, a._port, a._c, a._n, a.tokens, a._tag)
        return
    tools = a.tools.split(",")
    concs = [int(x) for x in a.concurrency.split(",")]
    ncpu = os.cpu_count() or 1
    if ncpu < 2:
        a.server_cpu = a.client_cpu = None
    work = Path(tempfile.mkdtemp(prefix="tokcaliper-accuracy-"))
    missing = _prepare_peers(a, work) if any(t in PEERS for t in tools) else {}
    timing = Timing(a.ttft_ms / 1000, a.itl_ms / 1000, a.tokens)
    runs: list[dict] = []
    with RefServer(timing, cpu=a.server_cpu, nice=-10, kernel_stamps=True) as srv:
        for rep in range(a.repeat):
            for c in concs:
                order = tools[rep % len(tools):] + tools[:rep % len(tools)]
                for tool in order:
                    r = run_one(tool, srv, a, c, f"{tool[:2]}{rep}c{c}", work, missing)
                    r["rep"] = rep
                    runs.append(r)
                    print(json.dumps(r), file=sys.stderr, flush=True)
    table = summarise(runs)
    if a.json:
        print(json.dumps({"timing": vars(timing), "runs": runs, "table": table}, indent=1, default=str))
    else:
        print(f"reference server: first token {a.ttft_ms:g} ms after parse, then one every {a.itl_ms:g} ms, "
              f"{a.tokens} tokens; {a.repeat} interleaved repetitions; figures mean ± 95% CI half-width (n)")
        print(render(table))
        em = [(c, t, v.get("server_emission_p50_ms"), v.get("server_emission_p99_ms"))
              for c, tv in table.items() for t, v in tv.items() if "server_emission_p50_ms" in v]
        for c, t, p50, p99 in em:
            print(f"server emission error during {t} at C={c}: p50 {_fmt(p50, 3)} ms, p99 {_fmt(p99, 3)} ms")


if __name__ == "__main__":
    main()
