#!/usr/bin/env bash
# The test suite, from scratch: set up (venv, llama-server, SmolLM2), then
# pytest, including the tests that start the real llama-server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test
exec .venv/bin/python -m pytest -q "$@"
