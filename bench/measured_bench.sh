#!/usr/bin/env bash
# The measurement store (docs/measured.md) on a re-push: a small CMake
# project (a C library and its CTest tests) whose check builds and tests,
# measured green once by `phoenix run`; then the same tree pushed again and
# again (to a new remote branch each time, so the hook measures each push),
# three ways, interleaved so drift hits all alike:
#   - cached:   Phoenix's hook, answered from the store
#   - uncached: Phoenix's hook with PHOENIX_NO_CACHE=1 (builds and tests)
#   - true:     a plain pre-push hook that runs `true` (the floor of any hook)
# Prints the median of N pushes each and the ratios; the aim is cached
# within 1.2x of `true`. Nothing here asserts a time.
#   bench/measured_bench.sh      N=9 by default; PHOENIX_BUILD_DIR picks the build
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
phoenix="$build/phoenix"
N="${N:-9}"
if [ ! -x "$phoenix" ]; then "$here/scripts/build.sh" >/dev/null; fi
export PATH="$build:$PATH"
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-measured-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT

now_us() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }

# A repository with its bare remote and one commit on it.
setup() {
  local name=$1
  git init -q --bare "$work/$name.git"
  git init -q -b main "$work/$name"
  git -C "$work/$name" config user.name bench
  git -C "$work/$name" config user.email bench@localhost
  git -C "$work/$name" config commit.gpgsign false
  git -C "$work/$name" remote add origin "$work/$name.git"
  mkdir -p "$work/$name/src" "$work/$name/tests"
  printf '.phoenix/\nbuild/\n' >"$work/$name/.gitignore"
  cat >"$work/$name/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.10)
project(tiny C)
enable_testing()
add_library(tiny src/tiny.c)
target_include_directories(tiny PUBLIC src)
add_executable(tiny_test tests/tiny_test.c)
target_link_libraries(tiny_test tiny)
add_test(NAME tiny COMMAND tiny_test)
EOF
  printf 'int tiny_add(int a, int b);\n' >"$work/$name/src/tiny.h"
  printf '#include "tiny.h"\nint tiny_add(int a, int b) { return a + b; }\n' >"$work/$name/src/tiny.c"
  printf '#include "tiny.h"\nint main(void) { return tiny_add(2, 2) == 4 ? 0 : 1; }\n' >"$work/$name/tests/tiny_test.c"
  cat >"$work/$name/phoenix.json" <<'EOF'
{ "checks": [{ "id": "unit", "kind": "command_exit",
  "target": ["sh", "-c", "cmake --build build && ctest --test-dir build --output-on-failure"] }] }
EOF
  git -C "$work/$name" add -A && git -C "$work/$name" commit -q -m initial
  git -C "$work/$name" push -q --no-verify origin main
}

setup phoenix
(cd "$work/phoenix" && cmake -S . -B build >/dev/null && "$phoenix" hook install >/dev/null &&
  "$phoenix" run >/dev/null 2>&1)
setup plain
printf '#!/bin/sh\ntrue\n' >"$work/plain/.git/hooks/pre-push"
chmod +x "$work/plain/.git/hooks/pre-push"

# One push of HEAD to a new branch; prints microseconds.
push_us() {
  local repo=$1 i=$2; shift 2
  local t0 t1
  t0=$(now_us)
  env "$@" git -C "$work/$repo" push -q origin "HEAD:refs/heads/b$i" 2>"$work/push.err" ||
    { cat "$work/push.err" >&2; exit 1; }
  t1=$(now_us)
  echo $((t1 - t0))
}

declare -a cached uncached plain
for i in $(seq 1 "$N"); do
  cached+=("$(push_us phoenix "c$i" PHOENIX_BENCH=1)")
  uncached+=("$(push_us phoenix "u$i" PHOENIX_NO_CACHE=1)")
  plain+=("$(push_us plain "p$i" PHOENIX_BENCH=1)")
done
grep -q "cached: measured" "$work/push.err" 2>/dev/null || true

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mc=$(median "${cached[@]}")
mu=$(median "${uncached[@]}")
mp=$(median "${plain[@]}")
echo "measured_bench: green re-push of a tree phoenix run measured (small CMake project), median of $N"
printf '  hook running true      %8.1f ms\n' "$(echo "$mp / 1000" | bc -l)"
printf '  phoenix, cached        %8.1f ms\n' "$(echo "$mc / 1000" | bc -l)"
printf '  phoenix, uncached      %8.1f ms\n' "$(echo "$mu / 1000" | bc -l)"
printf '  cached / true          %8.2fx   (aim: within 1.2x)\n' "$(echo "$mc / $mp" | bc -l)"
printf '  uncached / cached      %8.2fx\n' "$(echo "$mu / $mc" | bc -l)"
