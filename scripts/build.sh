#!/usr/bin/env bash
# Configures and builds Phoenix (and its tests) into build/ (or $PHOENIX_BUILD_DIR).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
type="${PHOENIX_BUILD_TYPE:-RelWithDebInfo}"
jobs="${PHOENIX_JOBS:-$(nproc)}"
launcher=""
command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE="$type" $launcher ${PHOENIX_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$jobs" -- --no-print-directory >/dev/null
echo "build: $build ($type)"
