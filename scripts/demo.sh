#!/usr/bin/env bash
# README command (1): install what is missing, build, and show Phoenix at
# work on a small repository made on the fly in a temporary directory.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/deps.sh"
"$here/scripts/build.sh"
build="${PHOENIX_BUILD_DIR:-$here/build}"
export PATH="$build:$PATH"
# The demo's agent: a small scripted program of ours that edits files the way
# an agent CLI would (no model, no network).
export PHOENIX_DEMO_AGENT="$build/test-tools/scripted_agent"
exec bash "$here/scripts/demo-story.sh"
