#!/usr/bin/env bash
# The pre-push hook's overhead: a green `git push` of one new commit to a
# local bare repository, three ways, interleaved so drift hits all alike:
#   - no hook (the baseline)
#   - Phoenix's hook (`phoenix hook install`) with one check: `true`
#   - lefthook 2.2.1 (npm) with one pre-push job: `true`
# Prints the median of N pushes each, the overhead over the baseline, and
# Phoenix's overhead as a ratio of lefthook's; then each installed hook run
# alone (git's stdin line given directly, no push around it), whose ratio
# Phoenix aims to keep under 0.10. lefthook comes from npm once, into
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

# A repository with one commit already on its bare remote.
setup() {
  local name=$1
  git init -q --bare "$work/$name.git"
  git init -q -b main "$work/$name"
  git -C "$work/$name" config user.name bench
  git -C "$work/$name" config user.email bench@localhost
  git -C "$work/$name" config commit.gpgsign false
  git -C "$work/$name" remote add origin "$work/$name.git"
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

median_us() { sort -n "$work/$1.times" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

echo "== pre-push hook: a green push of one commit to a local bare repository, N=$N each (median)"
base=$(median_us none)
awk -v b="$base" 'BEGIN { printf "no hook:          %7.1f ms\n", b / 1000 }'
phx=$(median_us phoenix)
awk -v b="$base" -v m="$phx" 'BEGIN { printf "phoenix hook:     %7.1f ms   overhead %+6.1f ms   ratio to no hook %.2fx\n", m / 1000, (m - b) / 1000, m / b }'
if [[ " ${variants[*]} " == *" lefthook "* ]]; then
  lh=$(median_us lefthook)
  awk -v b="$base" -v m="$lh" 'BEGIN { printf "lefthook 2.2.1:   %7.1f ms   overhead %+6.1f ms   ratio to no hook %.2fx\n", m / 1000, (m - b) / 1000, m / b }'
  awk -v b="$base" -v p="$phx" -v l="$lh" 'BEGIN {
    po = p - b; lo = l - b
    printf "phoenix overhead / lefthook overhead: %.2fx (%s)\n", (lo > 0 ? po / lo : 0), (po < lo ? "below lefthook" : "NOT below lefthook")
  }'
fi

# The hooks alone: what git runs, with the line git writes on its stdin.
hook_alone() {
  local name=$1 i sha
  sha=$(git -C "$work/$name" rev-parse HEAD)
  : >"$work/$name.alone"
  : >"$work/$name.cpu"
  for i in $(seq "$N"); do
    local t0 t1
    t0=$(now_us)
    # bash's `time` also counts the CPU of every process the hook started:
    # unlike wall time, hardly moved by other load on the machine.
    { TIMEFORMAT='%3U %3S'; time (cd "$work/$name" && echo "refs/heads/main $sha refs/heads/main $sha" |
      .git/hooks/pre-push origin "$work/$name.git" >"$work/$name.alone.out" 2>&1) ||
      { cat "$work/$name.alone.out" >&2; exit 1; }; } 2>>"$work/$name.cpu"
    t1=$(now_us)
    echo $((t1 - t0)) >>"$work/$name.alone"
  done
}
cpu_ms() { awk '{ print int(($1 + $2) * 1000) }' "$work/$1.cpu" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "== the green pre-push hook alone (git's stdin line given directly), N=$N each (median)"
hook_alone phoenix
p=$(sort -n "$work/phoenix.alone" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
pc=$(cpu_ms phoenix)
awk -v m="$p" -v c="$pc" 'BEGIN { printf "phoenix hook:     %7.1f ms wall   %4d ms CPU (user+sys, all its processes)\n", m / 1000, c }'
if [[ " ${variants[*]} " == *" lefthook "* ]]; then
  hook_alone lefthook
  l=$(sort -n "$work/lefthook.alone" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  lc=$(cpu_ms lefthook)
  awk -v p="$p" -v l="$l" -v pc="$pc" -v lc="$lc" 'BEGIN {
    printf "lefthook 2.2.1:   %7.1f ms wall   %4d ms CPU\n", l / 1000, lc
    printf "phoenix / lefthook: wall %.3f, CPU %.3f (goal: under 0.10; wall: %s)\n", p / l, (lc > 0 ? pc / lc : 0), (p / l < 0.10 ? "met" : "NOT met")
  }'
fi
