#!/usr/bin/env bash
# Bisect on a real CMake project (tests/fixtures/real-projects/cmake): Phoenix
# with one worktree and with k worktrees at once, beside `git bisect run`, all
# with the same check command (configure, build, ctest; the build folder is
# ignored, so it stays warm in each worktree as it would for a user). The
# history: the fixture, then 32 commits, the 21st of which breaks calc_add.
# Each worktree's build folder is warmed once before the timed runs, as a
# persistent worktree's would be. Prints each figure beside git's and the core
# count; medians of $RUNS (default 3). Nothing here asserts a time.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
bench="$build/phoenix_bench"
[ -x "$bench" ] || "$here/scripts/build.sh" >/dev/null
for tool in cmake ctest cc; do
  command -v "$tool" >/dev/null || { echo "real-project bisect: skipped ($tool is not installed)"; exit 0; }
done
runs="${RUNS:-3}"
cores=$(nproc)
k=$(( cores < 2 ? 2 : (cores > 4 ? 4 : cores) ))
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-real-bisect-XXXXXX")"
trap 'rm -rf "$work"' EXIT
repo="$work/repo"
mkdir -p "$repo" && cp -r "$here/tests/fixtures/real-projects/cmake/." "$repo/"
cd "$repo"
git init -q -b main . && git config user.name bench && git config user.email bench@localhost
git config commit.gpgsign false
printf 'build/\n' >.gitignore
git add -A && git commit -q -m fixture
good=$(git rev-parse HEAD)
for i in $(seq 1 32); do
  echo "note $i" >>NOTES.txt
  [ "$i" = 21 ] && sed -i 's/return a + b;/return a - b;/' src/calc.c
  git add -A && git commit -q -m "change $i"
done
bad=$(git rev-parse HEAD)
check='cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build >/dev/null && ctest --test-dir build >/dev/null'
trees=()
for i in $(seq 1 "$k"); do
  git worktree add -q --detach "$work/wt$i" "$good"
  (cd "$work/wt$i" && sh -c "$check") >/dev/null 2>&1 || true  # warm build folder
  trees+=("$work/wt$i")
done

echo "== bisect on a real CMake project (configure + build + ctest per step), 32 commits, $cores cores"
ms() { sed -n 's/.*: \([0-9]*\) ms.*/\1/p'; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
: >"$work/serial" && : >"$work/parallel" && : >"$work/git"
for _ in $(seq "$runs"); do
  "$bench" bisect "$good" "$bad" "$check" "${trees[0]}" | tee -a "$work/serial.log" | ms >>"$work/serial"
  "$bench" bisect "$good" "$bad" "$check" "${trees[@]}" | tee -a "$work/parallel.log" | ms >>"$work/parallel"
  cd "${trees[0]}"
  t0=$(date +%s%N)
  git bisect start "$bad" "$good" >/dev/null
  git bisect run sh -c "$check" >"$work/git.log" 2>&1 || true
  git bisect reset -q >/dev/null 2>&1 || git bisect reset >/dev/null 2>&1
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 )) >>"$work/git"
  grep -q "is the first bad commit" "$work/git.log" || { echo "git bisect run found nothing:"; cat "$work/git.log"; }
  cd "$repo"
done
s=$(median <"$work/serial"); p=$(median <"$work/parallel"); g=$(median <"$work/git")
tail -1 "$work/serial.log"
tail -1 "$work/parallel.log"
awk -v s="$s" -v p="$p" -v g="$g" -v k="$k" -v c="$cores" 'BEGIN {
  printf "phoenix, 1 worktree:  %7d ms   git bisect run: %7d ms   ratio %.2fx\n", s, g, s / g
  printf "phoenix, %d worktrees: %7d ms   git bisect run: %7d ms   ratio %.2fx   (%d cores)\n", k, p, g, p / g, c
}'
