#!/usr/bin/env bash
# The long random exploration of the parsers (not part of the test command):
# every hypothesis property test (pytest -m property) under the `fuzz` profile
# of tests/conftest.py — random seeds, 10^4 generated inputs per test — then
# one line per parser: inputs that passed, failed and were rejected by the
# strategy, and the time. Extra arguments go to pytest (e.g. -x, or
# --hypothesis-seed=N to replay a run; the seed is printed at the start).
# The test command itself runs the same tests derandomised with 300 inputs.
set -uo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
[ -x "$py" ] || py=python3
seed=${FUZZ_SEED:-$RANDOM$RANDOM}
log=$(mktemp "${TMPDIR:-/tmp}/tokcaliper-fuzz.XXXXXX")
trap 'rm -f "$log"' EXIT
echo "fuzz: hypothesis profile 'fuzz', seed $seed (replay: FUZZ_SEED=$seed scripts/fuzz.sh)"
start=$(date +%s)
"$py" -m pytest -q -m property -p no:cacheprovider --hypothesis-profile=fuzz \
    --hypothesis-seed="$seed" --hypothesis-show-statistics "$@" >"$log" 2>&1
rc=$?
end=$(date +%s)
# The statistics block: "path::test:", then per phase "- N passing, M failing, and K invalid test cases".
"$py" - "$log" <<'PY'
import re, sys
rows, test = {}, None
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if m := re.match(r"^(\S+::(\w+)):$", line.rstrip()):
        test = m.group(2); rows.setdefault(test, [0, 0, 0, 0.0])
    elif test and (m := re.search(r"phase \(([\d.]+) seconds\)", line)):
        rows[test][3] += float(m.group(1))
    elif test and (m := re.search(r"(\d+) passing, (\d+) failing, and (\d+) invalid", line)):
        for i in range(3):
            rows[test][i] += int(m.group(i + 1))
print(f"{'parser (property test)':<46} {'passing':>8} {'failing':>8} {'invalid':>8} {'seconds':>8}")
for name, (ok, bad, inval, secs) in rows.items():
    print(f"{name:<46} {ok:>8} {bad:>8} {inval:>8} {secs:>8.0f}")
PY
grep -E "^(FAILED|ERROR)|[0-9]+ (passed|failed)" "$log" | tail -20
echo "fuzz: $((end - start)) s, pytest exit $rc (full log kept only on failure: see above)"
if [ "$rc" -ne 0 ]; then
  keep="${TMPDIR:-/tmp}/tokcaliper-fuzz-$seed.log"; cp "$log" "$keep"; echo "fuzz: log in $keep"
fi
exit "$rc"
