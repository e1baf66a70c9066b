#!/usr/bin/env bash
# Renders docs/morning.png, the README's picture of the morning page: the
# suite's demo test (tests/e2e/demo_test.cc) runs the narrated demo, which
# ends by writing the report of its own night, and draws that page with
# headless chromium; PHOENIX_MORNING_PNG keeps the picture it draws.
# Usage: scripts/morning-png.sh [BUILD_DIR]   (default build/, built by scripts/build.sh)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$here/build}" && pwd)"
tests="$build/tests/phoenix_tests"
[ -x "$tests" ] || { echo "morning-png: $tests is not built (scripts/build.sh builds it)" >&2; exit 1; }
PHOENIX_MORNING_PNG="$here/docs/morning.png" "$tests" --gtest_filter='Demo.*' --gtest_brief=1
[ -s "$here/docs/morning.png" ] || { echo "morning-png: the demo test drew no picture (is chromium installed?)" >&2; exit 1; }
echo "morning-png: wrote docs/morning.png"
