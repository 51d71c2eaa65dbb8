#!/usr/bin/env bash
# Shared set-up for the README's two commands: a virtual environment with
# tokcaliper installed (plus test extras with --test), and the local
# llama-server + SmolLM2 built/fetched into the cache outside the repo.
# Idempotent: a second call only checks what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"

"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "bootstrap: Python 3.11+ required ($PY is $("$PY" -V 2>&1))" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv" >&2
  "$PY" -m venv .venv
fi
echo "bootstrap: installing tokcaliper$extras into .venv" >&2
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".$extras"
PYTHON="$PWD/.venv/bin/python" scripts/setup-llama-server.sh >/dev/null

# The report tests open the HTML report in a real browser: Debian's chromium.
if [ -n "$extras" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing chromium (Debian) for the report's browser test" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends chromium >/dev/null; }
  else
    echo "bootstrap: warning: chromium is not installed and cannot be (not root or no apt-get):" \
         "the browser tests will skip (sudo apt-get install chromium)" >&2
  fi
fi
