#!/usr/bin/env bash
# Configures and builds Phoenix (and its tests) into build/ (or $PHOENIX_BUILD_DIR).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
type="${PHOENIX_BUILD_TYPE:-RelWithDebInfo}"
jobs="${PHOENIX_JOBS:-$(nproc)}"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE="$type" ${PHOENIX_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$jobs" -- --no-print-directory >/dev/null
echo "build: $build ($type)"
