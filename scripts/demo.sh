#!/usr/bin/env bash
# README command (1): install what is missing, build what the demo runs, and
# show Phoenix at work on a small repository made on the fly in a temporary
# directory. The test suite is not built here (scripts/test.sh builds it).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/deps.sh"
# What scripts/demo-story.sh runs: phoenix and phoenix-loop, the thin hook
# that sits beside them, and the scripted agent.
"$here/scripts/build.sh" phoenix phoenix-loop phoenix-hook scripted_agent
build="${PHOENIX_BUILD_DIR:-$here/build}"
export PATH="$build:$PATH"
# The demo's agent: a small scripted program of ours that edits files the way
# an agent CLI would (no model, no network).
export PHOENIX_DEMO_AGENT="$build/test-tools/scripted_agent"
exec bash "$here/scripts/demo-story.sh"
