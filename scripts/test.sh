#!/usr/bin/env bash
# README command (2): install what is missing, build, run every test.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/deps.sh"
"$here/scripts/build.sh"
build="${PHOENIX_BUILD_DIR:-$here/build}"
cd "$build"
ctest --output-on-failure -j "${PHOENIX_JOBS:-$(nproc)}" --timeout 600
