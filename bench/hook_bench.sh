#!/usr/bin/env bash
# The pre-push hook's overhead: a green `git push` of one new commit to a
# local bare repository, three ways, interleaved so drift hits all alike:
#   - no hook (the baseline)
#   - Phoenix's hook (`phoenix hook install`) with one check: `true`
#   - lefthook 2.2.1 (npm) with one pre-push job: `true`
# Prints the median of N pushes each, the overhead over the baseline, and
# Phoenix's overhead as a ratio of lefthook's; then each installed hook run
# alone as git runs it (no push around it), beside a shell script that only
# runs `true`, the floor of any hook; Phoenix aims to keep its ratio to
# lefthook under 0.10, and within 1.1x a shell hook that runs `git status`
# and the check as a process. Last, a red push on a real small CMake
# project (a C file, a CTest test, a red commit pushed to a local bare
# remote): the check's runs per red push, counted by a `ctest` wrapper on
# PATH, must be 1 (with flaky_reruns 0: a new failing test's re-runs,
# docs/checks.md, are runs of their own). lefthook comes from npm once, into
# $build/bench-cache/lefthook. Nothing here asserts a time.
#   bench/hook_bench.sh           N=15 by default; PHOENIX_BUILD_DIR picks the build
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
phoenix="$build/phoenix"
N="${N:-15}"
if [ ! -x "$phoenix" ]; then "$here/scripts/build.sh" >/dev/null; fi
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-hook-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# EPOCHREALTIME (bash 5) reads the clock without starting a process.
now_us() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }

# An empty repository $1 with a bare remote $1.git as origin.
new_repo() {
  git init -q --bare "$1.git"
  git init -q -b main "$1"
  git -C "$1" config user.name bench
  git -C "$1" config user.email bench@localhost
  git -C "$1" config commit.gpgsign false
  git -C "$1" remote add origin "$1.git"
}

# A repository with one commit already on its bare remote.
setup() {
  local name=$1
  new_repo "$work/$name"
  printf '.phoenix/\nnode_modules/\npackage.json\npackage-lock.json\n' >"$work/$name/.gitignore"
  echo 0 >"$work/$name/counter.txt"
  git -C "$work/$name" add -A && git -C "$work/$name" commit -q -m initial
  git -C "$work/$name" push -q --no-verify origin main
}

variants=(none phoenix)
setup none

setup phoenix
cat >"$work/phoenix/phoenix.json" <<'EOF'
{ "checks": [{ "id": "trivial", "kind": "command_exit", "target": ["true"] }] }
EOF
git -C "$work/phoenix" add -A && git -C "$work/phoenix" commit -q -m "phoenix.json"
git -C "$work/phoenix" push -q --no-verify origin main
(cd "$work/phoenix" && "$phoenix" hook install >/dev/null)

# lefthook as npm users have it: in the repository's node_modules (a link to
# the cached install).
setup lefthook
lh_cache="$build/bench-cache/lefthook"
if [ -x "$lh_cache/node_modules/.bin/lefthook" ] ||
   (mkdir -p "$lh_cache" && cd "$lh_cache" && npm i -E --silent --ignore-scripts --no-audit --no-fund --prefix . lefthook@2.2.1 >"$work/npm.log" 2>&1); then
  ln -s "$lh_cache/node_modules" "$work/lefthook/node_modules"
  cat >"$work/lefthook/lefthook.yml" <<'EOF'
pre-push:
  jobs:
    - name: trivial
      run: "true"
EOF
  git -C "$work/lefthook" add -A && git -C "$work/lefthook" commit -q -m "lefthook.yml"
  git -C "$work/lefthook" push -q --no-verify origin main
  (cd "$work/lefthook" && ./node_modules/.bin/lefthook install >/dev/null)
  variants+=(lefthook)
else
  echo "lefthook 2.2.1 could not be installed from npm (see below): measured without it"
  tail -5 "$work/npm.log" 2>/dev/null || echo "(npm is not installed)"
fi

# Each variant's pushes must succeed and run its hook; one push first
# (unmeasured) to warm caches and show the hooks work.
one_push() {
  local name=$1 i=$2
  echo "$i" >"$work/$name/counter.txt"
  git -C "$work/$name" commit -q -am "change $i"
  local t0 t1
  t0=$(now_us)
  if ! git -C "$work/$name" push -q origin main >"$work/$name.out" 2>&1; then
    echo "push failed for $name:" >&2
    cat "$work/$name.out" >&2
    exit 1
  fi
  t1=$(now_us)
  echo $((t1 - t0)) >>"$work/$name.times"
}
for v in "${variants[@]}"; do
  one_push "$v" warm
  : >"$work/$v.times"
done
grep -q "phoenix: ok" "$work/phoenix.out" || { echo "Phoenix's hook did not run:" >&2; cat "$work/phoenix.out" >&2; exit 1; }

for i in $(seq "$N"); do
  for v in "${variants[@]}"; do one_push "$v" "$i"; done
done

median_us() { sort -n "$1" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

echo "== pre-push hook: a green push of one commit to a local bare repository, N=$N each (median)"
base=$(median_us "$work/none.times")
awk -v b="$base" 'BEGIN { printf "no hook:          %7.1f ms\n", b / 1000 }'
phx=$(median_us "$work/phoenix.times")
awk -v b="$base" -v m="$phx" 'BEGIN { printf "phoenix hook:     %7.1f ms   overhead %+6.1f ms   ratio to no hook %.2fx\n", m / 1000, (m - b) / 1000, m / b }'
if [[ " ${variants[*]} " == *" lefthook "* ]]; then
  lh=$(median_us "$work/lefthook.times")
  awk -v b="$base" -v m="$lh" 'BEGIN { printf "lefthook 2.2.1:   %7.1f ms   overhead %+6.1f ms   ratio to no hook %.2fx\n", m / 1000, (m - b) / 1000, m / b }'
  awk -v b="$base" -v p="$phx" -v l="$lh" 'BEGIN {
    po = p - b; lo = l - b
    printf "phoenix overhead / lefthook overhead: %.2fx (%s)\n", (lo > 0 ? po / lo : 0), (po < lo ? "below lefthook" : "NOT below lefthook")
  }'
fi

# The hooks alone, run the way git runs them: from the work tree, git's
# stdin line in a file, the remote's name and URL as arguments, no shell
# around it. The variants alternate so that drift on the machine hits all
# alike. Beside them, the floor of any hook that runs `true`: a shell
# script with that one line. `true` is a builtin of sh, so the floors start
# no process for the check, where Phoenix (whose checks are argv lists, run
# without a shell) starts /usr/bin/true.
printf '#!/bin/sh\ntrue\n' >"$work/floor-hook"
# ... and of any hook that asks git whether the tree is clean first: the
# same `git status` Phoenix's green path runs, then the check as a process
# (true by its path, as Phoenix runs it: not sh's builtin).
true_bin=/bin/true
[ -x /usr/bin/true ] && true_bin=/usr/bin/true
printf '#!/bin/sh\ngit --no-optional-locks status --porcelain=v2 --branch -z --untracked-files=normal >/dev/null && %s\n' "$true_bin" >"$work/gitfloor-hook"
chmod +x "$work/floor-hook" "$work/gitfloor-hook"
# Phoenix runs its check here as the floors do: the measurement store,
# which answers a tree measured green before without running the check,
# is bench/measured_bench.sh's to measure.
export PHOENIX_NO_CACHE=1
alone=(phoenix)
[[ " ${variants[*]} " == *" lefthook "* ]] && alone+=(lefthook)
alone+=(floor gitfloor)
hook_of() { case $1 in floor|gitfloor) echo "$work/$1-hook" ;; *) echo "$work/$1/.git/hooks/pre-push" ;; esac; }
dir_of() { case $1 in floor|gitfloor) echo "$work/phoenix" ;; *) echo "$work/$1" ;; esac; }
for v in "${alone[@]}"; do
  d=$(dir_of "$v")
  sha=$(git -C "$d" rev-parse HEAD)
  echo "refs/heads/main $sha refs/heads/main $sha" >"$work/$v.line"
  : >"$work/$v.alone"
done
for i in $(seq "$((N * 4))"); do
  for v in "${alone[@]}"; do
    h=$(hook_of "$v")
    cd "$(dir_of "$v")"
    # EPOCHREALTIME read in place: $(now_us) would fork a subshell inside
    # the measured span.
    t0=${EPOCHREALTIME/[.,]/}
    "$h" origin "$work/$v.git" <"$work/$v.line" >"$work/$v.alone.out" 2>&1 || { cat "$work/$v.alone.out" >&2; exit 1; }
    t1=${EPOCHREALTIME/[.,]/}
    echo $((t1 - t0)) >>"$work/$v.alone"
  done
done
cd "$here"
grep -q "phoenix: ok" "$work/phoenix.alone.out" || { echo "Phoenix's hook did not run:" >&2; cat "$work/phoenix.alone.out" >&2; exit 1; }
# CPU (user+sys of every process a hook started), from this shell's
# children's times over a block of runs: unlike wall time, hardly moved by
# other load on the machine.
# `times` prints this shell's and its children's user and system time; it
# must run in this shell (not in a $(...) subshell) to see the hooks.
child_cpu_s() { awk 'NR == 2 { split($1, u, "m"); split($2, y, "m"); print u[1] * 60 + u[2] + y[1] * 60 + y[2] }' "$work/times"; }
cpu_us() {
  local v=$1 h d before after runs=$((N * 4))
  h=$(hook_of "$v"); d=$(dir_of "$v")
  cd "$d"
  times >"$work/times"; before=$(child_cpu_s)
  for i in $(seq "$runs"); do "$h" origin "$work/$v.git" <"$work/$v.line" >/dev/null 2>&1; done
  times >"$work/times"; after=$(child_cpu_s)
  cd "$here"
  awk -v a="$after" -v b="$before" -v n="$runs" 'BEGIN { printf "%d", (a - b) * 1000000 / n }'
}
# One row: the median wall time and the mean CPU of variant $1's runs,
# left in $wall and $cpu (cpu_us must run in this shell, hence the file).
alone_row() {
  wall=$(median_us "$work/$1.alone")
  cpu_us "$1" >"$work/cpu"
  cpu=$(cat "$work/cpu")
  awk -v label="$2" -v m="$wall" -v c="$cpu" -v note="$3" \
    'BEGIN { printf "%-21s%6.2f ms wall   %6.2f ms CPU%s\n", label, m / 1000, c / 1000, note }'
}
echo "== the green pre-push hook alone, as git runs it, N=$((N * 4)) each (median wall; CPU averaged)"
alone_row phoenix "phoenix hook:" " (user+sys, all its processes)"
p=$wall pc=$cpu
if [[ " ${alone[*]} " == *" lefthook "* ]]; then
  alone_row lefthook "lefthook 2.2.1:" ""
  l=$wall lc=$cpu
fi
alone_row floor "sh running true:" " (the floor of any hook)"
alone_row gitfloor "sh: git status, true:" " (a hook that asks git first, then runs the check)"
awk -v p="$p" -v g="$wall" 'BEGIN {
  printf "phoenix / (sh: git status, the check as a process): wall %.2fx (aim: within 1.1x: %s)\n", p / g, (p / g <= 1.1 ? "met" : "NOT met")
}'
if [[ " ${alone[*]} " == *" lefthook "* ]]; then
  awk -v p="$p" -v l="$l" -v pc="$pc" -v lc="$lc" 'BEGIN {
    printf "phoenix / lefthook: wall %.3f, CPU %.3f (goal: under 0.10; wall: %s)\n", p / l, (lc > 0 ? pc / lc : 0), (p / l < 0.10 ? "met" : "NOT met")
  }'
fi

# A red push on a real small CMake project: how many times the check runs.
# Its `ctest` is a wrapper on PATH that logs each run; phoenix-hook measures
# in place, hands its red result to the full hook, which reports it without
# measuring again: 1.
if command -v cmake >/dev/null && command -v ctest >/dev/null && command -v cc >/dev/null; then
  c="$work/cproj"
  new_repo "$c"
  mkdir -p "$c/src" "$work/bin"
  printf '%s\n' 'cmake_minimum_required(VERSION 3.16)' 'project(answer C)' 'enable_testing()' \
    'add_executable(answer src/answer.c)' 'add_test(NAME answer COMMAND answer)' >"$c/CMakeLists.txt"
  printf 'int main(void) { return 42 - 42; }\n' >"$c/src/answer.c"
  printf 'build/\n.phoenix/\n' >"$c/.gitignore"
  printf '%s\n' '{ "setup": [{ "run": ["cmake", "-S", ".", "-B", "build"], "inputs": ["CMakeLists.txt"] }],' \
    '  "checks": [{ "id": "unit", "kind": "command_exit", "editable": ["src/**"],' \
    '    "target": ["sh", "-c", "cmake --build build && ctest --test-dir build --output-on-failure"] }],' \
    '  "flaky_reruns": 0 }' \
    >"$c/phoenix.json"
  real_ctest=$(command -v ctest)
  printf '#!/bin/sh\necho "$(pwd)" >>"%s"\nexec "%s" "$@"\n' "$work/ctest-runs.log" "$real_ctest" >"$work/bin/ctest"
  chmod +x "$work/bin/ctest"
  (cd "$c" && cmake -S . -B build >/dev/null && git add -A && git commit -q -m answer &&
    git push -q --no-verify origin main && "$phoenix" hook install >/dev/null)
  PATH="$work/bin:$PATH" git -C "$c" push -q origin main >"$work/cproj.green.out" 2>&1 ||
    { echo "the green push of the CMake project failed:" >&2; cat "$work/cproj.green.out" >&2; exit 1; }
  : >"$work/ctest-runs.log"
  printf 'int main(void) { return 41 - 42; }\n' >"$c/src/answer.c"
  git -C "$c" commit -q -am "red: the answer is off by one"
  if PATH="$work/bin:$PATH" git -C "$c" push -q origin main >"$work/cproj.red.out" 2>&1; then
    echo "the red push of the CMake project went through:" >&2; cat "$work/cproj.red.out" >&2; exit 1
  fi
  grep -q "push blocked" "$work/cproj.red.out" || { cat "$work/cproj.red.out" >&2; exit 1; }
  echo "== a red push of a CMake + CTest project (a ctest wrapper on PATH counts the check's runs)"
  echo "checks per red push: $(wc -l <"$work/ctest-runs.log" | tr -d ' ')"
else
  echo "cmake, ctest or cc is not installed: the red push on a CMake project is not measured"
fi
