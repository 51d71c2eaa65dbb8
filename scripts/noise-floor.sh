#!/usr/bin/env bash
# The main job on the embedded default: set up, start the local llama-server
# with SmolLM2, run 5 identical repetitions and print the noise-floor report.
# Extra arguments go to `tokcaliper bench` (e.g. --repeat 10 --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec .venv/bin/tokcaliper bench --repeat 5 --concurrency 4 --requests 32 --max-tokens 128 "$@"
