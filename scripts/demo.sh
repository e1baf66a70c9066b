#!/usr/bin/env bash
# README command (1): install what is missing, build, and show Phoenix at
# work on a small repository made on the fly in a temporary directory.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/deps.sh"
"$here/scripts/build.sh"
build="${PHOENIX_BUILD_DIR:-$here/build}"
export PATH="$build:$PATH"
exec bash "$here/scripts/demo-story.sh"
