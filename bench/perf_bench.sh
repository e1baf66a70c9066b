#!/usr/bin/env bash
# Phoenix's own cost on big repositories, each figure beside plain git in
# the same run: sandbox ready (overlay, copy), persistent worktrees, bisect
# over 64 commits, and a green pre-push of a clean HEAD (Phoenix's hook
# beside no hook). Repositories of N tracked files (folders of 250 files;
# 100,000 = 400 x 250) are generated with git fast-import and cached under
# the build folder ($build/bench-repos), so only the first run pays for them.
#   bench/perf_bench.sh              1,000 and 10,000 files
#   bench/perf_bench.sh --with-100k  also 100,000 (the first run generates
#                                    it: a few minutes; the copying sandbox
#                                    and `git worktree add` take ~1 min each)
#   SIZES="1000 5000" bench/perf_bench.sh   any sizes
# Nothing here asserts a time.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
phoenix="$build/phoenix"
perf="$build/phoenix_bench_perf"
[ -x "$phoenix" ] && [ -x "$perf" ] || "$here/scripts/build.sh" >/dev/null
cache="$build/bench-repos"
mkdir -p "$cache"
sizes="${SIZES:-1000 10000}"
[ "${1:-}" = "--with-100k" ] && sizes="$sizes 100000"
N="${N:-9}"

# EPOCHREALTIME (bash 5) reads the clock without starting a process.
now_us() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }

# repo-N: one commit of N files (+ phoenix.json, .gitignore, bisect/state.txt),
# then 64 commits changing bisect/state.txt; "BAD" appears at commit 41.
generate() {
  local n=$1 dir="$cache/repo-$1"
  [ -f "$dir/.git/phoenix-bench-ready" ] && return 0
  rm -rf "$dir" "$dir.git"
  echo "generating $dir ($n files)..." >&2
  git init -q -b main "$dir"
  awk -v n="$n" -v per=250 'BEGIN {
    t = 1700000000
    print "commit refs/heads/main"; print "author Bench <bench@localhost> " t " +0000"
    print "committer Bench <bench@localhost> " t " +0000"; print "data 5"; print "files"
    for (i = 0; i < n; i++) {
      c = "file " i "\n"
      printf "M 100644 inline d%d/f%d.txt\ndata %d\n%s\n", int(i / per), i, length(c), c
    }
    cfg = "{ \"checks\": [{ \"id\": \"trivial\", \"kind\": \"command_exit\", \"target\": [\"true\"] }] }\n"
    printf "M 100644 inline phoenix.json\ndata %d\n%s\n", length(cfg), cfg
    ign = ".phoenix/\n"
    printf "M 100644 inline .gitignore\ndata %d\n%s\n", length(ign), ign
    s = "step 0\n"
    printf "M 100644 inline bisect/state.txt\ndata %d\n%s\n", length(s), s
    print ""
    for (k = 1; k <= 64; k++) {
      print "commit refs/heads/main"; print "author Bench <bench@localhost> " (t + k) " +0000"
      print "committer Bench <bench@localhost> " (t + k) " +0000"
      m = "step " k; print "data " length(m); print m
      s = "step " k "\n" (k >= 41 ? "BAD\n" : "")
      printf "M 100644 inline bisect/state.txt\ndata %d\n%s\n", length(s), s
      print ""
    }
  }' | git -C "$dir" fast-import --quiet
  git -C "$dir" reset -q --hard main
  git -C "$dir" config user.name bench
  git -C "$dir" config user.email bench@localhost
  git -C "$dir" config commit.gpgsign false
  git clone -q --bare "$dir" "$dir.git"
  git -C "$dir" remote add origin "$dir.git"
  touch "$dir/.git/phoenix-bench-ready"
}

median_us() { sort -n "$1" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# A green push of HEAD (clean tree) to a new branch of the bare remote: no
# objects travel, so what is left is git's own work and the hook's.
hook_bench() {
  local n=$1 dir="$cache/repo-$1" tmp
  tmp="$(mktemp -d)"
  (cd "$dir" && "$phoenix" hook install >/dev/null)
  git -C "$dir" push -q origin "HEAD:refs/heads/warm-$$" >/dev/null 2>&1 || true
  git -C "$dir" push -q --no-verify origin "HEAD:refs/heads/warm2-$$" >/dev/null 2>&1 || true
  for i in $(seq "$N"); do
    local t0 t1 t2
    t0=$(now_us)
    git -C "$dir" push -q --no-verify origin "HEAD:refs/heads/b-$$-$i-a" >/dev/null 2>&1
    t1=$(now_us)
    git -C "$dir" push -q origin "HEAD:refs/heads/b-$$-$i-b" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
    t2=$(now_us)
    echo $((t1 - t0)) >>"$tmp/none"
    echo $((t2 - t1)) >>"$tmp/phx"
  done
  grep -q "phoenix: ok" "$tmp/out" || { echo "Phoenix's hook did not run:" >&2; cat "$tmp/out" >&2; exit 1; }
  local b p
  b=$(median_us "$tmp/none"); p=$(median_us "$tmp/phx")
  awk -v b="$b" -v p="$p" 'BEGIN { printf "%-34s %9.1f ms   %-28s %9.1f ms   ratio %.2fx   overhead %+.1f ms\n", "pre-push of clean HEAD, phoenix:", p/1000, "no hook:", b/1000, p/b, (p-b)/1000 }'
  # The remote keeps only main.
  git -C "$dir.git" for-each-ref --format='%(refname)' refs/heads/ | grep -v '^refs/heads/main$' |
    while read -r ref; do git -C "$dir.git" update-ref -d "$ref"; done
  (cd "$dir" && "$phoenix" hook uninstall >/dev/null)
  rm -rf "$tmp"
}

for n in $sizes; do
  t0=$(now_us); generate "$n"; t1=$(now_us)
  echo "== $n tracked files ($cache/repo-$n$( [ $((t1 - t0)) -gt 1000000 ] && echo ", generated in $(( (t1 - t0) / 1000000 )) s"))"
  dir="$cache/repo-$n"
  good=$(git -C "$dir" rev-list --max-parents=0 main)  # the root: no early-closing pipe under pipefail
  "$perf" "$dir" "$good" main ${PERF_FLAGS:-}
  hook_bench "$n"
done
