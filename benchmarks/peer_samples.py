#!/usr/bin/env python3
"""Produce the peer-tool test samples of ``tests/data/peers/`` by running the tools themselves.

Against the local llama-server + SmolLM2 (``scripts/setup-llama-server.sh``),
the same closed-loop load three ways: AIPerf (``aiperf profile``), GuideLLM
(``guidellm run``), each from its own virtual environment (``--peers-venv``,
never the project's), and tokcaliper's own ``bench``. Load: concurrency
``--concurrency``, ``--requests`` requests, ``--tokens`` output tokens per request with
``ignore_eos`` (AIPerf ``--extra-inputs ignore_eos:true``), server token counts
(AIPerf ``--use-server-token-count``), no warm-up. Each tool runs ``--repeat``
times; the last repetition's files are copied into ``--out`` as the samples,
tokcaliper's own runs as ``tokcaliper_runs.json`` (``show --json --requests``).
The tools take turns within each repetition (interleaved, so drift of the shared
machine falls on every tool alike). Then every repetition is imported
(``tokcaliper import``) into one database next to tokcaliper's own runs and
``compare --session`` is printed per peer tool: the figures of the closing note of issue 20.
tokcaliper's prompts are ``--input-tokens`` long as the server counts them, to match AIPerf's.

Offline: the tools' tokenizers are the local word-level tokenizer that
``benchmarks/client_accuracy.py`` builds (``_prepare_peers``), the hub cache a
temporary folder. The CI tests only read the samples; this script is not part
of the test command (CI has no peers venv).

    python benchmarks/peer_samples.py --peers-venv /work/peers-venv
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
TOK = [sys.executable, "-m", "tokcaliper"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(c: int) -> tuple[subprocess.Popen, str]:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup-llama-server.sh")], check=True,
                         capture_output=True, text=True).stdout
    paths = dict(line.split("=", 1) for line in out.split() if "=" in line)
    port = free_port()
    proc = subprocess.Popen([paths["LLAMA_SERVER"], "-m", paths["SMOLLM2_GGUF"], "--port", str(port),
                             "--host", "127.0.0.1", "-c", str(1024 * c), "-np", str(c), "-t", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("llama-server did not become healthy")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peers-venv", default="/work/peers-venv")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "peers"))
    ap.add_argument("--tools", default="aiperf,guidellm")
    ap.add_argument("--input-tokens", type=int, default=130,
                    help="tokcaliper's prompt length, as the server counts it (AIPerf's 32 synthetic tokens of the "
                         "local word-level tokenizer come to about 130 server tokens)")
    args = ap.parse_args()
    import client_accuracy as ca

    work = Path(tempfile.mkdtemp(prefix="peer-samples-"))
    ca._prepare_peers(argparse.Namespace(peers_venv=args.peers_venv), work)
    env = ca._peer_env(args, work)
    venv = Path(args.peers_venv) / "bin"
    out = Path(args.out)
    db = work / "all.db"
    c, n, k = args.concurrency, args.requests, args.tokens
    proc, url = start_server(c)
    try:
        done: dict[str, list[Path]] = {}
        sessions: list[str] = []
        for rep in range(args.repeat):  # interleaved: each repetition runs every tool once, in turn
            for tool in [*args.tools.split(","), "tokcaliper"]:
                run_dir = work / f"{tool}-{rep}"
                run_dir.mkdir()
                if tool == "tokcaliper":
                    cmd = TOK + ["bench", "--url", url, "--model", "smollm2", "--concurrency", str(c),
                                 "--requests", str(n), "--max-tokens", str(k), "--input-tokens", str(args.input_tokens),
                                 "--warmup", "0", "--repeat", "1", "--arm", "tokcaliper", "--cooldown", "0",
                                 "--telemetry-interval", "0", "--idle-seconds", "0", "--db", str(db), "--json"]
                elif tool == "aiperf":
                    cmd = [str(venv / "aiperf"), "profile", "--model", "smollm2", "--url", url,
                           "--endpoint-type", "chat", "--streaming", "--concurrency", str(c),
                           "--request-count", str(n), "--synthetic-input-tokens-mean", "32",
                           "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(k),
                           "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
                           "--use-server-token-count", "--tokenizer", ca.HUB_TOKENIZER, "--ui-type", "none",
                           "--artifact-dir", str(run_dir)]
                else:
                    cmd = [str(venv / "guidellm"), "run", "--backend",
                           f"kind=openai_http,target={url},model=smollm2",
                           "--profile", f"kind=concurrent,streams={c}",
                           "--constraint", f"kind=max_requests,count={n}",
                           "--tokenizer", f"kind=huggingface_auto,model={work / 'tokenizer'}",
                           "--data", f"kind=synthetic_text,prompt_tokens=32,output_tokens={k}",
                           "--output", f"kind=json,path={run_dir / 'benchmarks.json'}",
                           "--disable-console-interactive"]
                r = subprocess.run(cmd, env=None if tool == "tokcaliper" else env, capture_output=True, text=True,
                                   cwd=run_dir, timeout=600)
                if r.returncode != 0:
                    print(f"{tool} failed ({r.returncode}): {r.stderr[-2000:]}", file=sys.stderr)
                    continue
                if tool == "tokcaliper":
                    sessions.append(json.loads(r.stdout)["session"])
                else:
                    done.setdefault(tool, []).append(run_dir)
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
    own = json.loads(subprocess.run(TOK + ["runs", "--db", str(db), "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    session = ",".join(sessions)
    runs = [json.loads(subprocess.run(TOK + ["show", str(x["id"]), "--requests", "--json", "--db", str(db)],
                                      capture_output=True, text=True, check=True).stdout) for x in own]
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokcaliper_runs.json").write_text(json.dumps(runs, indent=1) + "\n")
    for tool, dirs in done.items():
        last = dirs[-1]
        dest = out / tool
        dest.mkdir(exist_ok=True)
        for f in ("profile_export_aiperf.json", "profile_export_aiperf.csv", "profile_export.jsonl",
                  "benchmarks.json"):
            hits = sorted(last.rglob(f))
            if hits:
                shutil.copy(hits[0], dest / f)
    print(f"samples in {out}; work folder {work}", file=sys.stderr)
    for tool, dirs in done.items():
        for d in dirs:
            files = [str(p) for p in sorted(d.rglob("profile_export_aiperf.json")) or sorted(d.rglob("benchmarks.json"))]
            subprocess.run(TOK + ["import", *files, "--arm", tool, "--session", sessions[0], "--db", str(db)],
                           check=True)
        print(f"\n=== compare --session {session} --arms tokcaliper,{tool} ===")
        for metric in ("aggregate_output_tok_s", "ttft_mean_ms", "ttft_p50_ms"):
            r = subprocess.run(TOK + ["compare", "--session", session, "--arms", f"tokcaliper,{tool}",
                                      "--metric", metric, "--allow-mixed-tools", "--db", str(db)],
                               capture_output=True, text=True)
            print(r.stdout + r.stderr)
    print(f"work folder: {work} (database {db})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
