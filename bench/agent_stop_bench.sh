#!/usr/bin/env bash
# The stop hook of an agent session (docs/agents.md "Phoenix inside an agent
# session"): what one stop costs the agent's CLI on a small CMake project (a
# C library and its CTest tests) whose check builds and tests. The JSON a
# CLI sends is fed to `phoenix hook run stop --agent claude`, four ways,
# interleaved so drift hits all alike:
#   - cached:       a clean tree measured green before (by `phoenix sense`)
#   - dirty cached: an uncommitted change the hook measured at an earlier
#                   stop (the agent stops again without a change)
#   - uncached:     the same tree with PHOENIX_NO_CACHE=1 (builds and tests)
#   - true:         a stop hook that runs `true` (the floor of any hook)
# Prints the median of N stops each and the ratios. Nothing here asserts a
# time.
#   bench/agent_stop_bench.sh      N=9 by default; PHOENIX_BUILD_DIR picks the build
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
phoenix="$build/phoenix"
N="${N:-9}"
if [ ! -x "$phoenix" ]; then "$here/scripts/build.sh" phoenix >/dev/null; fi
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-agent-stop-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT

now_us() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }

setup() {
  local r=$1
  git init -q -b main "$r"
  git -C "$r" config user.name bench
  git -C "$r" config user.email bench@localhost
  git -C "$r" config commit.gpgsign false
  mkdir -p "$r/src" "$r/tests"
  printf '.phoenix/\nbuild/\nincidents/\n' >"$r/.gitignore"
  cat >"$r/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.10)
project(tiny C)
enable_testing()
add_library(tiny src/tiny.c)
target_include_directories(tiny PUBLIC src)
add_executable(tiny_test tests/tiny_test.c)
target_link_libraries(tiny_test tiny)
add_test(NAME tiny COMMAND tiny_test)
EOF
  printf 'int tiny_add(int a, int b);\n' >"$r/src/tiny.h"
  printf '#include "tiny.h"\nint tiny_add(int a, int b) { return a + b; }\n' >"$r/src/tiny.c"
  printf '#include "tiny.h"\nint main(void) { return tiny_add(2, 2) == 4 ? 0 : 1; }\n' >"$r/tests/tiny_test.c"
  cat >"$r/phoenix.json" <<'EOF'
{ "checks": [{ "id": "unit", "kind": "command_exit",
  "target": ["sh", "-c", "cmake --build build && ctest --test-dir build --output-on-failure"] }] }
EOF
  git -C "$r" add -A && git -C "$r" commit -q -m initial
  (cd "$r" && cmake -S . -B build >/dev/null && "$phoenix" sense unit >/dev/null)
}

clean="$work/clean" dirty="$work/dirty"
setup "$clean"
setup "$dirty"
# The agent's uncommitted change, measured once at a first stop.
printf '#include "tiny.h"\nint tiny_add(int a, int b) { return b + a; }\n' >"$dirty/src/tiny.c"
input() { printf '{"session_id":"bench","cwd":"%s","stop_hook_active":false}' "$1"; }
input "$dirty" | "$phoenix" hook run stop --agent claude >/dev/null

# One stop; prints microseconds. A stop that does not let the agent stop
# green is an error here.
stop_us() {
  local repo=$1; shift
  local t0 t1
  t0=$(now_us)
  input "$repo" | env "$@" "$phoenix" hook run stop --agent claude >"$work/out" 2>"$work/err" ||
    { cat "$work/out" "$work/err" >&2; exit 1; }
  t1=$(now_us)
  grep -q '"phoenix: green' "$work/out" || { cat "$work/out" >&2; exit 1; }
  echo $((t1 - t0))
}
true_us() {
  local t0 t1
  t0=$(now_us)
  input "$clean" | sh -c 'cat >/dev/null; true'
  t1=$(now_us)
  echo $((t1 - t0))
}

declare -a cached dirty_cached uncached floor
for _ in $(seq 1 "$N"); do
  cached+=("$(stop_us "$clean" PHOENIX_BENCH=1)")
  dirty_cached+=("$(stop_us "$dirty" PHOENIX_BENCH=1)")
  uncached+=("$(stop_us "$clean" PHOENIX_NO_CACHE=1)")
  floor+=("$(true_us)")
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mc=$(median "${cached[@]}")
md=$(median "${dirty_cached[@]}")
mu=$(median "${uncached[@]}")
mt=$(median "${floor[@]}")
echo "agent_stop_bench: one green stop of an agent session (small CMake project), median of $N"
printf '  hook running true       %8.1f ms\n' "$(echo "$mt / 1000" | bc -l)"
printf '  phoenix, cached         %8.1f ms\n' "$(echo "$mc / 1000" | bc -l)"
printf '  phoenix, dirty cached   %8.1f ms\n' "$(echo "$md / 1000" | bc -l)"
printf '  phoenix, uncached       %8.1f ms\n' "$(echo "$mu / 1000" | bc -l)"
printf '  uncached / cached       %8.2fx\n' "$(echo "$mu / $mc" | bc -l)"
printf '  dirty cached / cached   %8.2fx\n' "$(echo "$md / $mc" | bc -l)"
