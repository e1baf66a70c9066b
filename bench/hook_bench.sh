#!/usr/bin/env bash
# The pre-push hook's overhead: a green `git push` of one new commit to a
# local bare repository, three ways, interleaved so drift hits all alike:
#   - no hook (the baseline)
#   - Phoenix's hook (`phoenix hook install`) with one check: `true`
#   - lefthook 2.2.1 (npm) with one pre-push job: `true`
# Prints the median of N pushes each, the overhead over the baseline, and
# Phoenix's overhead as a ratio of lefthook's. Then N pushes each made after
# a teammate's push to the same branch: how many phoenix-hook handed to the
# full hook (0 expected). Then each installed hook run alone as git runs it
# (no push around it), with a new commit before every run, two ways: a tree
# never measured (the check runs) and a tree Phoenix measured green before
# (the measurement store answers); beside each, in the same repository at
# the same commit, a shell script that runs `git status` and the check as a
# process, and (first way) one that runs only sh's builtin `true`, the floor
# of any hook. It prints both ratios to the `git status` script (aim: within
# 1.1x, both ways) and to lefthook (aim: under 0.10), and how many runs
# phoenix-hook handed over. Last, a red push on a real small CMake project
# (a C file, a CTest test, a red commit pushed to a local bare remote): the
# check's runs per red push, counted by a `ctest` wrapper on PATH, must be
# 1 (with flaky_reruns 0: a new failing test's re-runs, docs/checks.md, are
# runs of their own). lefthook comes from npm once, into
# $build/bench-cache/lefthook.
# Nothing here asserts a time.
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
# The check runs `true` by its path, as the shell hooks below do (Phoenix
# runs checks as argv lists, without a shell: sh's builtin is not theirs).
true_bin=/bin/true
[ -x /usr/bin/true ] && true_bin=/usr/bin/true
cat >"$work/phoenix/phoenix.json" <<EOF
{ "checks": [{ "id": "trivial", "kind": "command_exit", "target": ["$true_bin"] }] }
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

# Pushes after a teammate's: a clone of the same remote pushes to main
# between two pushes of Phoenix's repository, which pulls (rebasing) before
# each. The remote end is then a fetched commit no measurement of this
# repository covers; phoenix-hook reads the remote-tracking ref's reflog,
# sees no push from here put it there, and decides the push itself (it used
# to hand every such push to the full hook, which ran git status again).
git clone -q -b main "$work/phoenix.git" "$work/mate"
git -C "$work/mate" config user.name mate
git -C "$work/mate" config user.email mate@localhost
runs_log="$work/phoenix/.phoenix/hook-runs.jsonl"
full_before=$(grep -c '"by":"phoenix"' "$runs_log" || true)
for i in $(seq "$N"); do
  git -C "$work/mate" pull -q --rebase origin main
  echo "$i" >"$work/mate/mate.txt"
  git -C "$work/mate" add mate.txt && git -C "$work/mate" commit -q -m "teammate $i"
  git -C "$work/mate" push -q origin main
  git -C "$work/phoenix" pull -q --rebase origin main
  one_push phoenix "after teammate $i"
done
full_after=$(grep -c '"by":"phoenix"' "$runs_log" || true)
echo "== $N pushes, each after a teammate's push (pulled first): handed to the full hook: $((full_after - full_before))"

# The hooks alone, run the way git runs them: from the work tree, git's
# stdin line in a file, the remote's name and URL as arguments, no shell
# around it, and a new commit before every run (made outside the timed
# span), as every push brings. Two ways:
#   new:   each commit's tree was never measured: Phoenix runs its check;
#   known: each commit has one of two trees Phoenix measured green before
#          (counter.txt flips between two values): the measurement store
#          answers, and the check does not run.
# Beside Phoenix, in its repository at the same commit: a shell script that
# runs the `git status` Phoenix's green path runs and then the check as a
# process (the same `true` by the same path: not sh's builtin), the floor of
# a hook that asks git; in the first way also a shell script that
# runs sh's builtin `true`, the floor of any hook, and lefthook (in its own
# repository, a new commit before each run too). The variants take turns
# going first after a commit, so that drift and a commit's cold caches hit
# all alike.
printf '#!/bin/sh\ntrue\n' >"$work/floor-hook"
printf '#!/bin/sh\ngit --no-optional-locks status --porcelain=v2 --branch -z --untracked-files=normal >/dev/null && %s\n' "$true_bin" >"$work/gitfloor-hook"
chmod +x "$work/floor-hook" "$work/gitfloor-hook"
unset PHOENIX_NO_CACHE

# The child processes' CPU (user+sys of every process this shell started
# and waited for), in ms, left in $cpu: `times` and `read` are builtins, so
# reading it starts no process.
to_ms() { local v=${1%s}; local m=${v%%m*} s=${v#*m}; ms=$((m * 60000 + 10#${s/./})); }
cpu_now() {
  local _a _b u s
  times >"$work/times"
  { read -r _a _b; read -r u s; } <"$work/times"
  to_ms "$u"; cpu=$ms
  to_ms "$s"; cpu=$((cpu + ms))
}

# A new commit in $1 with counter.txt holding $2; the stdin line of its
# push (the remote end: the commit before it) goes to $work/$3.line.
new_commit() {
  local prev
  prev=$(git -C "$1" rev-parse HEAD)
  echo "$2" >"$1/counter.txt"
  git -C "$1" commit -q -am "bench $2"
  echo "refs/heads/main $(git -C "$1" rev-parse HEAD) refs/heads/main $prev" >"$work/$3.line"
}

# One run of variant $1 (way $2), timed: wall and CPU.
run_hook() {
  local v=$1 way=$2 h d t0 t1 c0
  case $v in
    floor | gitfloor) h="$work/$v-hook" d="$work/phoenix" ;;
    *) h="$work/$v/.git/hooks/pre-push" d="$work/$v" ;;
  esac
  cd "$d"
  cpu_now; c0=$cpu
  t0=${EPOCHREALTIME/[.,]/}
  "$h" origin "$work/$v.git" <"$work/${v/*floor/phoenix}.line" >"$work/$v.alone.out" 2>&1 || { cat "$work/$v.alone.out" >&2; exit 1; }
  t1=${EPOCHREALTIME/[.,]/}
  cpu_now
  cd "$here"
  echo $((t1 - t0)) >>"$work/$way.$v.wall"
  echo $((cpu - c0)) >>"$work/$way.$v.cpu"
}

# Rounds of way $1 over the variants that follow: a new commit, then each
# variant once, starting with a different one each round. The first round
# is not timed (caches warm, the hooks shown to work).
rounds() {
  local way=$1 i k n v content; shift
  local vs=("$@")
  n=${#vs[@]}
  for i in $(seq 0 "$((N * 4))"); do
    content="$way $i"
    [ "$way" = known ] && content="known $((i % 2))"
    new_commit "$work/phoenix" "$content" phoenix
    [[ " ${vs[*]} " == *" lefthook "* ]] && new_commit "$work/lefthook" "$content" lefthook
    for k in $(seq 0 "$((n - 1))"); do
      v=${vs[$(((i + k) % n))]}
      run_hook "$v" "$way"
    done
    if [ "$i" = 0 ]; then
      for v in "${vs[@]}"; do : >"$work/$way.$v.wall"; : >"$work/$way.$v.cpu"; done
      runs_before=$(wc -l <"$work/phoenix/.phoenix/hook-runs.jsonl")
    fi
  done
}

# Who decided each timed run of Phoenix's hook: phoenix-hook itself, or the
# full hook it handed over to (hook-runs.jsonl's "by").
handed_over() {
  tail -n +"$((runs_before + 1))" "$work/phoenix/.phoenix/hook-runs.jsonl" | grep -c '"by":"phoenix"' || true
}

mean() { awk '{ s += $1 } END { printf "%d", NR ? s * 1000 / NR : 0 }' "$1"; }  # ms -> us
row() {
  wall=$(median_us "$work/$1.$2.wall")
  cpu=$(mean "$work/$1.$2.cpu")
  awk -v label="$3" -v m="$wall" -v c="$cpu" -v note="$4" \
    'BEGIN { printf "%-23s%6.2f ms wall   %6.2f ms CPU%s\n", label, m / 1000, c / 1000, note }'
}

# The measurement store answers the known way: both trees measured first.
new_commit "$work/phoenix" "known 0" phoenix
run_hook phoenix warm
new_commit "$work/phoenix" "known 1" phoenix
run_hook phoenix warm

new_way=(phoenix)
[[ " ${variants[*]} " == *" lefthook "* ]] && new_way+=(lefthook)
new_way+=(floor gitfloor)
rounds new "${new_way[@]}"
new_handed=$(handed_over)
grep -q "phoenix: ok   trivial  exit=0  ([0-9]* ms)" "$work/phoenix.alone.out" ||
  { echo "Phoenix's hook did not run its check:" >&2; cat "$work/phoenix.alone.out" >&2; exit 1; }
rounds known phoenix gitfloor
known_handed=$(handed_over)
grep -q "phoenix: ok   trivial  exit=0  (cached: " "$work/phoenix.alone.out" ||
  { echo "Phoenix's hook was not answered by the measurement store:" >&2; cat "$work/phoenix.alone.out" >&2; exit 1; }

echo "== the green pre-push hook alone, as git runs it, a new commit before each run, N=$((N * 4)) each (median wall; CPU averaged)"
echo "-- a tree never measured (the check runs)"
row new phoenix "phoenix hook:" " (user+sys, all its processes; $new_handed handed over)"
p=$wall pc=$cpu
if [[ " ${new_way[*]} " == *" lefthook "* ]]; then
  row new lefthook "lefthook 2.2.1:" ""
  l=$wall lc=$cpu
fi
row new floor "sh running true:" " (the floor of any hook)"
row new gitfloor "sh: git status, true:" " (a hook that asks git first, then runs the check)"
g=$wall gc=$cpu
echo "-- a tree Phoenix measured green before (the measurement store answers)"
row known phoenix "phoenix hook:" " ($known_handed handed over)"
kp=$wall kpc=$cpu
row known gitfloor "sh: git status, true:" ""
kg=$wall kgc=$cpu
awk -v p="$p" -v g="$g" -v pc="$pc" -v gc="$gc" -v kp="$kp" -v kg="$kg" -v kpc="$kpc" -v kgc="$kgc" 'BEGIN {
  printf "phoenix / (sh: git status, the check as a process), a new tree:      wall %.2fx, CPU %.2fx (aim: within 1.1x: %s)\n", p / g, pc / gc, (p / g <= 1.1 ? "met" : "NOT met")
  printf "phoenix / (sh: git status, the check as a process), a measured tree: wall %.2fx, CPU %.2fx (aim: within 1.1x: %s)\n", kp / kg, kpc / kgc, (kp / kg <= 1.1 ? "met" : "NOT met")
}'
if [[ " ${new_way[*]} " == *" lefthook "* ]]; then
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
