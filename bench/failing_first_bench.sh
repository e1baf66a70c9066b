#!/usr/bin/env bash
# Failing tests first (docs/checks.md "Failing tests first"): `phoenix run
# --fixer bisect` beside `git bisect run` with the whole check, on a pytest
# project the script writes (a few hundred tests taking a few seconds, like
# boltons' ~470 in 3.5 s), 32 and 200 commits with one regression; the same
# on a CMake/CTest project and an npm/vitest one (vitest from the registry or
# the npm cache); and a bad harness proposal rejected on the
# failing test alone, its time beside one run of the whole check. Every
# ratio is of figures measured in the same run; medians of $RUNS (default 3).
# Nothing here asserts a time.
#
#   bench/failing_first_bench.sh                 everything
#   bench/failing_first_bench.sh pytest ctest    some parts (pytest, ctest, vitest, reject)
# TESTS (default 400) and TEST_MS (default 8) size the pytest suite.
# BISECT_PARALLEL (default 1: one probe at a time, like `git bisect run`)
# is phoenix.json's bisect.parallel (Phoenix's own default is the cores).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
phoenix="${PHOENIX_BIN:-$build/phoenix}"
[ -x "$phoenix" ] || "$here/scripts/build.sh" phoenix >/dev/null
runs="${RUNS:-3}"
tests="${TESTS:-400}"
test_ms="${TEST_MS:-8}"
parts="${*:-pytest ctest vitest reject}"
bisect_parallel="${BISECT_PARALLEL:-1}"
py=""
for c in python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null && "$c" -c 'import pytest' 2>/dev/null; then py=$(command -v "$c"); break; fi
done
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-failing-first-XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
export PHOENIX_TREES_DIR="$work/trees" PHOENIX_NO_CACHE=1 NO_COLOR=1

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# A git repository at $1 with user and no signing.
new_repo() {
  mkdir -p "$1" && cd "$1"
  git init -q -b main . && git config user.name bench && git config user.email bench@localhost
  git config commit.gpgsign false
}

# $1 commits on top, the $2-th of which runs `$3` (a shell command) first.
commits() {
  for i in $(seq 1 "$1"); do
    # the regression's commit changes nothing else, so its revert applies on HEAD
    if [ "$i" = "$2" ]; then sh -c "$3"; else echo "note $i" >"notes-$i.txt"; fi
    git add -A && git commit -q -m "change $i"
  done
}

# Times `phoenix run --fixer bisect` and `git bisect run CHECK` from HEAD
# (red) to known-good $1, $runs times each, interleaved; prints the medians.
# $2: the check as one shell command for git; $3: a label.
side_by_side() {
  local good=$1 check=$2 label=$3 bad
  bad=$(git rev-parse HEAD)
  : >"$work/p" && : >"$work/g" && : >"$work/sel"
  for _ in $(seq "$runs"); do
    git reset -q --hard "$bad"
    git update-ref refs/phoenix/known-good/main "$good"  # a heal moved it to its fix commit
    t0=$(now_ms)
    "$phoenix" run --fixer bisect --explain >"$work/run.log" 2>&1 || true
    t1=$(now_ms)
    grep -q HEALED "$work/run.log" || { echo "phoenix did not heal:"; tail -20 "$work/run.log"; }
    echo $((t1 - t0)) >>"$work/p"
    grep -o '"selected_runs":[0-9]*' .phoenix/trace.jsonl | tail -1 | cut -d: -f2 >>"$work/sel"
    grep -o '"check_runs":[0-9]*' .phoenix/trace.jsonl | tail -1 | cut -d: -f2 >"$work/runs"
    git reset -q --hard "$bad"
    t0=$(now_ms)
    git bisect start "$bad" "$good" >/dev/null
    git bisect run sh -c "$check" >"$work/git.log" 2>&1 || true
    git bisect reset -q >/dev/null 2>&1 || git bisect reset >/dev/null 2>&1
    t1=$(now_ms)
    grep -q "is the first bad commit" "$work/git.log" || { echo "git bisect run found nothing:"; tail "$work/git.log"; }
    echo $((t1 - t0)) >>"$work/g"
  done
  local p g
  p=$(median <"$work/p")
  g=$(median <"$work/g")
  echo "$label: phoenix run --fixer bisect $p ms ($(cat "$work/runs") check runs in bisect, $(tail -1 "$work/sel") of the failing tests alone; detection and the revert's verification whole) | git bisect run $g ms | $(ratio "$p" "$g")x"
}

# The pytest project: $tests tests in 8 files, each about $test_ms ms of
# work; calc.mul is what the regression breaks.
pytest_project() {
  new_repo "$1"
  printf '.phoenix/\n__pycache__/\n.pytest_cache/\nincidents/\n' >.gitignore
  printf 'def mul(a, b):\n    return a * b\n\ndef work(n):\n    s = 0\n    for i in range(n):\n        s += i * i\n    return s\n' >calc.py
  mkdir -p tests
  local per=$((tests / 8)) loops=$((test_ms * 12000))
  for f in $(seq 1 8); do
    {
      printf 'import os, sys\nsys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\nimport calc\n'
      for t in $(seq 1 "$per"); do printf 'def test_%s_%s():\n    assert calc.work(%s) > 0\n' "$f" "$t" "$loops"; done
    } >"tests/test_part$f.py"
  done
  printf 'import calc\ndef test_mul():\n    assert calc.mul(3, 4) == 12\n' >tests/test_mul.py
  sed -i '1i import os, sys\nsys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))' tests/test_mul.py
  cat >phoenix.json <<EOF
{ "checks": [ { "id": "unit", "kind": "command_exit", "target": ["$py", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                "editable": ["*.py"], "timeout_s": 600 } ],
  "fixers": ["bisect"], "bisect": { "parallel": $bisect_parallel }, "flaky_reruns": 0 }
EOF
  git add -A && git commit -q -m project
}

bench_pytest() {
  [ -n "$py" ] || { echo "pytest: skipped (no python3 with pytest)"; return; }
  for n in 32 200; do
    pytest_project "$work/py$n"
    "$phoenix" run >/dev/null 2>&1  # blesses known-good
    local good
    good=$(git rev-parse HEAD)
    commits "$n" $((n * 2 / 3)) "sed -i 's/return a \\* b/return a * b + (a == 3)/' calc.py"
    t0=$(now_ms)
    "$py" -m pytest -q -p no:cacheprovider tests >/dev/null 2>&1 || true
    t1=$(now_ms)
    echo "pytest project: $((tests + 1)) tests, the whole suite $((t1 - t0)) ms, $n commits, the regression at $((n * 2 / 3))"
    side_by_side "$good" "$py -m pytest -q -p no:cacheprovider tests >/dev/null 2>&1" "pytest, $n commits"
    cd "$work"
  done
}

bench_ctest() {
  for tool in cmake ctest cc; do
    command -v "$tool" >/dev/null || { echo "ctest: skipped ($tool is not installed)"; return; }
  done
  new_repo "$work/cm"
  printf 'build/\n.phoenix/\nincidents/\n' >.gitignore
  {
    echo 'cmake_minimum_required(VERSION 3.16)'
    echo 'project(calc C)'
    echo 'add_library(calc calc.c)'
    echo 'add_executable(calc_test calc_test.c)'
    echo 'target_link_libraries(calc_test calc)'
    echo 'enable_testing()'
    echo 'add_test(NAME calc.mul COMMAND calc_test mul)'
    echo 'foreach(i RANGE 1 120)'
    echo '  add_test(NAME calc.work_${i} COMMAND calc_test work ${i})'
    echo 'endforeach()'
  } >CMakeLists.txt
  printf 'int mul(int a, int b) { return a * b; }\nlong work(long n) { long s = 0; for (long i = 0; i < n; ++i) s += i %% 7; return s; }\n' >calc.c
  cat >calc_test.c <<'EOF'
#include <stdlib.h>
#include <string.h>
int mul(int a, int b);
long work(long n);
int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "mul") == 0) return mul(3, 4) == 12 ? 0 : 1;
  return work(8000000L) > 0 ? 0 : 1;
}
EOF
  local sel='cmake --build build >/dev/null && exec ctest --test-dir build --output-on-failure "$@"'
  cat >phoenix.json <<EOF
{ "setup": [ { "run": ["cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Release"], "inputs": ["CMakeLists.txt"] } ],
  "checks": [ { "id": "unit", "kind": "command_exit",
                "target": ["sh", "-c", "cmake --build build >/dev/null && ctest --test-dir build --output-on-failure -j1"],
                "select": { "runner": "ctest", "command": ["sh", "-c", $(printf '%s' "$sel" | "${py:-python3}" -c 'import json,sys; print(json.dumps(sys.stdin.read()))'), "sh"] },
                "editable": ["*.c"], "timeout_s": 600 } ],
  "fixers": ["bisect"], "bisect": { "parallel": $bisect_parallel }, "flaky_reruns": 0 }
EOF
  git add -A && git commit -q -m project
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  "$phoenix" run >/dev/null 2>&1
  local good
  good=$(git rev-parse HEAD)
  commits 32 21 "sed -i 's/return a \\* b;/return a * b + (a == 3);/' calc.c"
  t0=$(now_ms)
  sh -c "cmake --build build >/dev/null && ctest --test-dir build -j1 >/dev/null 2>&1" || true
  t1=$(now_ms)
  echo "CTest project: 121 tests, the whole check (build + ctest) $((t1 - t0)) ms, 32 commits, the regression at 21"
  side_by_side "$good" "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build >/dev/null && ctest --test-dir build -j1 >/dev/null" "CTest, 32 commits"
  cd "$work"
}

# vitest (from the npm registry or its cache): 8 files of $((tests / 8))
# tests, each about $test_ms ms of work.
bench_vitest() {
  command -v npx >/dev/null || { echo "vitest: skipped (npm is not installed)"; return; }
  mkdir -p "$work/vmods" && cd "$work/vmods"
  printf '{"name":"v","private":true,"type":"module"}\n' >package.json
  npm install --prefer-offline --no-audit --no-fund vitest@4.1.12 >"$work/npm.log" 2>&1 ||
    { echo "vitest: skipped (it could not be installed here: $(tail -1 "$work/npm.log"))"; return; }
  new_repo "$work/vt"
  printf '.phoenix/\nincidents/\nnode_modules\n' >.gitignore
  printf '{"name":"calc","private":true,"type":"module"}\n' >package.json
  printf 'export const mul = (a, b) => a * b;\nexport const work = (n) => { let s = 0; for (let i = 0; i < n; i++) s += i %% 7; return s; };\n' >calc.js
  local per=$((tests / 8)) loops=$((test_ms * 60000))
  for f in $(seq 1 8); do
    {
      printf "import { describe, it, expect } from 'vitest';\nimport { work } from './calc.js';\ndescribe('part %s', () => {\n" "$f"
      for t in $(seq 1 "$per"); do printf "  it('t%s', () => { expect(work(%s)).toBeGreaterThan(0); });\n" "$t" "$loops"; done
      printf '});\n'
    } >"part$f.test.js"
  done
  printf "import { it, expect } from 'vitest';\nimport { mul } from './calc.js';\nit('mul', () => { expect(mul(3, 4)).toBe(12); });\n" >mul.test.js
  ln -s "$work/vmods/node_modules" node_modules
  cat >phoenix.json <<JSON
{ "setup": [ { "run": ["ln", "-sfn", "$work/vmods/node_modules", "node_modules"], "inputs": ["package.json"] } ],
  "checks": [ { "id": "unit", "kind": "command_exit", "target": ["npx", "vitest", "run"], "editable": ["*.js"], "timeout_s": 600 } ],
  "fixers": ["bisect"], "bisect": { "parallel": $bisect_parallel }, "flaky_reruns": 0 }
JSON
  git add -A && git commit -q -m project
  "$phoenix" run >/dev/null 2>&1
  local good
  good=$(git rev-parse HEAD)
  commits 32 21 "sed -i 's/a \\* b;/a * b + (a === 3 ? 1 : 0);/' calc.js"
  t0=$(now_ms)
  npx vitest run >/dev/null 2>&1 || true
  t1=$(now_ms)
  echo "vitest project: $((per * 8 + 1)) tests, the whole suite $((t1 - t0)) ms, 32 commits, the regression at 21"
  side_by_side "$good" "ln -sfn $work/vmods/node_modules node_modules && npx vitest run >/dev/null 2>&1" "vitest, 32 commits"
  cd "$work"
}

# A harness that never fixes anything: its proposal applied, the failing
# test alone run, rejected. Its time (APPLYING to REJECTED in the trace)
# beside the whole check's time in the same run (its detection).
bench_reject() {
  [ -n "$py" ] || { echo "reject: skipped (no python3 with pytest)"; return; }
  pytest_project "$work/rj"
  "$phoenix" run >/dev/null 2>&1
  sed -i 's/return a \* b/return a * b + (a == 3)/' calc.py
  git add -A && git commit -q -m "the regression"
  "${py}" - <<'EOF'
import json
c = json.load(open("phoenix.json"))
c["fixers"] = ["harness"]
c["harness"] = {"command": ["sh", "-c", "echo '# looked at it' >> calc.py"], "timeout_s": 60}
c["budgets"] = {"unit": 1}
json.dump(c, open("phoenix.json", "w"))
EOF
  git add -A && git commit -q -m "a harness that fixes nothing"
  : >"$work/rej" && : >"$work/whole"
  for _ in $(seq "$runs"); do
    git reset -q --hard HEAD
    rm -rf .phoenix/ESCALATED incidents
    "$phoenix" run --explain >"$work/run.log" 2>&1 || true
    "$py" - "$work" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(".phoenix/trace.jsonl") if l.strip()]
def d(e): return e.get("data", e)
states = [d(e) for e in ev if e.get("event") == "state"]
run = max(i for i, s in enumerate(states) if s.get("state") == "DETECTED") if any(s.get("state") == "DETECTED" for s in states) else 0
states = states[run:]
applying = [s["elapsed_ms"] for s in states if s.get("state") == "APPLYING"][-1]
rejected = [s["elapsed_ms"] for s in states if s.get("state") == "REJECTED" and s.get("run") == "selected"][-1]
open(sys.argv[1] + "/rej", "a").write(f"{rejected - applying}\n")
EOF
    t0=$(now_ms)
    "$py" -m pytest -q -p no:cacheprovider tests >/dev/null 2>&1 || true
    t1=$(now_ms)
    echo $((t1 - t0)) >>"$work/whole"
  done
  local r w
  r=$(median <"$work/rej")
  w=$(median <"$work/whole")
  echo "a bad harness proposal rejected on the failing test alone (applied, run, undone): $r ms | one run of the whole check $w ms | $(ratio "$r" "$w")x"
  cd "$work"
}

echo "== failing tests first: bisect and a heal's verification ask the failing tests, $(nproc) cores, medians of $runs, bisect.parallel $bisect_parallel"
for part in $parts; do "bench_$part"; done
