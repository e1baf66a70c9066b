#!/usr/bin/env bash
# Verdicts per test (docs/checks.md "Only the failures a change brings
# count"): what judging a red costs. A pytest project of 120 small tests,
# one of them a real regression; `phoenix run --dry-run --fixer noop` on it
# (detection, the verdict, no heal) with flaky_reruns 0, 1 and 2, and the
# same on the green tree, interleaved so drift hits all alike; against one
# run of the failing test alone (`pytest <its node id>`), the floor of any
# re-run. Prints medians of N runs and the ratios:
#   one re-run      (run with 1 re-run - run with 0) / the failing test alone   (aim: 1.3x)
#   default (2)     (run with 2 re-runs - run with 0) / the failing test alone
#   green           run with 2 re-runs / run with 0, on the green tree          (aim: 1.0x: nothing re-runs)
# Nothing here asserts a time.
#   bench/verdict_bench.sh      N=7 by default; PHOENIX_BUILD_DIR picks the build
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
phoenix="$build/phoenix"
N="${N:-7}"
if [ ! -x "$phoenix" ]; then "$here/scripts/build.sh" phoenix >/dev/null; fi
py=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import pytest' 2>/dev/null; then py=$(command -v "$p"); break; fi
done
[ -n "$py" ] || { echo "verdict_bench: no python3 with pytest" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-verdict-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT

now_us() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }

make_repo() {  # $1: name, $2: "red" or "green"
  local r="$work/$1"
  git init -q -b main "$r"
  git -C "$r" config user.name bench
  git -C "$r" config user.email bench@localhost
  git -C "$r" config commit.gpgsign false
  mkdir -p "$r/tests"
  printf '.phoenix/\n__pycache__/\n' >"$r/.gitignore"
  printf 'def mul(a, b):\n    return a %s b\n' "$([ "$2" = red ] && echo + || echo '*')" >"$r/calc.py"
  {
    echo 'import os, sys'
    echo 'sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))'
    echo 'import calc'
    echo 'def test_mul():'
    echo '    assert calc.mul(3, 4) == 12'
    for i in $(seq 1 119); do printf 'def test_n%d():\n    assert sum(range(%d)) >= 0\n' "$i" "$i"; done
  } >"$r/tests/test_calc.py"
  cat >"$r/phoenix.json" <<EOF
{ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["$py", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"] }],
  "fixers": ["noop"] }
EOF
  git -C "$r" add -A && git -C "$r" commit -q -m initial
}
make_repo red red
make_repo green green

# One `phoenix run` (dry run, noop: detection and verdict only); microseconds.
run_us() {  # $1: repo, $2: flaky_reruns
  local t0 t1
  t0=$(now_us)
  (cd "$work/$1" && PHOENIX_FLAKY_RERUNS=$2 PHOENIX_NO_CACHE=1 "$phoenix" run --dry-run --fixer noop --no-journal \
    >/dev/null 2>&1) || true
  t1=$(now_us)
  echo $((t1 - t0))
}
alone_us() {
  local t0 t1
  t0=$(now_us)
  (cd "$work/red" && "$py" -m pytest -q -p no:cacheprovider tests/test_calc.py::test_mul >/dev/null 2>&1) || true
  t1=$(now_us)
  echo $((t1 - t0))
}

declare -a r0 r1 r2 g0 g2 alone
for _ in $(seq 1 "$N"); do
  r0+=("$(run_us red 0)")
  r1+=("$(run_us red 1)")
  r2+=("$(run_us red 2)")
  alone+=("$(alone_us)")
  g0+=("$(run_us green 0)")
  g2+=("$(run_us green 2)")
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m0=$(median "${r0[@]}"); m1=$(median "${r1[@]}"); m2=$(median "${r2[@]}")
ma=$(median "${alone[@]}"); mg0=$(median "${g0[@]}"); mg2=$(median "${g2[@]}")
ms() { echo "$1 / 1000" | bc -l; }
echo "verdict_bench: a red pytest check (120 tests, 1 regression), phoenix run --dry-run, median of $N"
printf '  the failing test alone          %8.1f ms\n' "$(ms "$ma")"
printf '  red, flaky_reruns 0             %8.1f ms\n' "$(ms "$m0")"
printf '  red, flaky_reruns 1             %8.1f ms\n' "$(ms "$m1")"
printf '  red, flaky_reruns 2 (default)   %8.1f ms\n' "$(ms "$m2")"
printf '  green, flaky_reruns 0           %8.1f ms\n' "$(ms "$mg0")"
printf '  green, flaky_reruns 2           %8.1f ms\n' "$(ms "$mg2")"
printf '  one re-run / the test alone     %8.2fx   (aim: 1.3x)\n' "$(echo "($m1 - $m0) / $ma" | bc -l)"
printf '  two re-runs / the test alone    %8.2fx   (a real regression pays every re-run)\n' \
  "$(echo "($m2 - $m0) / $ma" | bc -l)"
printf '  green with re-runs / without    %8.2fx   (aim: 1.0x)\n' "$(echo "$mg2 / $mg0" | bc -l)"
