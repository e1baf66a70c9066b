#!/usr/bin/env bash
# Configures and builds Phoenix into build/ (or $PHOENIX_BUILD_DIR).
#   scripts/build.sh                     everything: the programs, the tests, the benchmarks
#   scripts/build.sh TARGET...           only those targets and what they need, e.g.
#   scripts/build.sh phoenix phoenix-loop phoenix-hook scripted_agent   (what scripts/demo.sh runs)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
type="${PHOENIX_BUILD_TYPE:-RelWithDebInfo}"
jobs="${PHOENIX_JOBS:-$(nproc)}"
launcher=""
command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
targets=()
[ $# -gt 0 ] && targets=(--target "$@")
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE="$type" $launcher ${PHOENIX_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$jobs" "${targets[@]}" -- --no-print-directory >/dev/null
echo "build: $build ($type${targets:+: $*})"
