#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cc, clang, ASan+UBSan) into
# build-fuzz/ and runs each for SECONDS (default 60), starting from the seed
# corpus in tests/fuzz/corpus/<target>/; prints the executions per target.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 3600 contract png
#
# New interesting inputs go to build-fuzz/corpus/<target>/ (never into the
# source tree); a crash stops with the reproducer's path and exit 1. Replay
# one with: build-fuzz/fuzz/fuzz_<target> <file>.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
secs="${1:-60}"
shift || true
case "$secs" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$secs'" >&2; exit 64 ;; esac
build="${PHOENIX_FUZZ_BUILD_DIR:-$here/build-fuzz}"
jobs="${PHOENIX_JOBS:-$(nproc)}"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing (scripts/deps.sh installs it)" >&2; exit 78; }
launcher=""
command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
# A build folder already configured for fuzzing (the sanitizer suite's, see
# scripts/test.sh --sanitize) is used as it is; any other is configured here.
if ! grep -qs '^PHOENIX_FUZZ:BOOL=ON$' "$build/CMakeCache.txt"; then
  cmake -S "$here" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHOENIX_FUZZ=ON \
    -DPHOENIX_BUILD_TESTS=OFF $launcher >/dev/null
fi
cmake --build "$build" --target phoenix_fuzzers -j "$jobs" -- --no-print-directory >/dev/null

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$here"/tests/fuzz/*_fuzz.cc; do n="$(basename "$f" _fuzz.cc)"; targets+=("$n"); done
fi
export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
figures="$build/fuzz-figures.txt"
: > "$figures"
status=0
printf '%-12s %8s %14s %10s\n' target seconds executions "exec/s"
for t in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz.sh: no target '$t' (tests/fuzz/${t}_fuzz.cc)" >&2; exit 64; }
  work="$build/corpus/$t"
  mkdir -p "$work" "$build/crashes/$t"
  log="$build/fuzz-$t.log"
  if ! "$bin" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -artifact_prefix="$build/crashes/$t/" "$work" "$here/tests/fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz.sh: $t FAILED; reproducer and log:" >&2
    ls "$build/crashes/$t/" >&2
    grep -m 20 -E "ERROR|SUMMARY|#[0-9]+ 0x" "$log" >&2 || tail -20 "$log" >&2
    status=1
  fi
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)"
  rate="$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)"
  printf '%-12s %8s %14s %10s\n' "$t" "$secs" "$execs" "$rate" | tee -a "$figures"
done
exit $status
