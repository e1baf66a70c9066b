#!/usr/bin/env bash
# Installs what Phoenix needs to build and test, and only what is missing.
# Idempotent: a machine that has everything runs no package manager at all.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libgit2-dev libboost-program-options-dev libboost-filesystem-dev libboost-dev
  nlohmann-json3-dev libsqlite3-dev libssl-dev libstb-dev zlib1g-dev libcmark-gfm-dev libcmark-gfm-extensions-dev
  libgtest-dev libgmock-dev sqlite3
  clang libclang-rt-14-dev ccache chromium tidy
  python3-yaml python3-pytest
)

# Hook managers that tests/e2e/ecosystem_test.cc runs for real: lefthook
# 2.2.1 and husky 9, and prettier 3.6.2 (tests/e2e/init_test.cc checks that
# phoenix init's phoenix.json is formatted as prettier formats it), from npm,
# into one fixed folder (the tests never reach a
# network; without the folder they skip and say why). Idempotent: nothing
# runs when the pinned versions are there. PHOENIX_TEST_TOOLS=0 skips it.
TEST_TOOLS_DIR="${PHOENIX_TEST_TOOLS_DIR:-/opt/phoenix-test-tools}"
install_test_tools() {
  [ "${PHOENIX_TEST_TOOLS:-1}" = 0 ] && return 0
  if grep -qs '"version": "2.2.1"' "$TEST_TOOLS_DIR/node_modules/lefthook/package.json" &&
     grep -qs '"version": "9\.' "$TEST_TOOLS_DIR/node_modules/husky/package.json" &&
     grep -qs '"version": "3.6.2"' "$TEST_TOOLS_DIR/node_modules/prettier/package.json"; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "deps: npm not found: the lefthook, husky and prettier tests will skip"
    return 0
  fi
  echo "deps: installing lefthook 2.2.1, husky 9 and prettier 3.6.2 into $TEST_TOOLS_DIR"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" mkdir -p "$TEST_TOOLS_DIR"
  # --ignore-scripts, and from inside the folder: lefthook's postinstall would
  # otherwise run `lefthook install` in the repository npm was started from.
  (cd "$TEST_TOOLS_DIR" && "${sudo[@]}" npm install --prefix "$TEST_TOOLS_DIR" --ignore-scripts --no-audit --no-fund \
      --loglevel=error lefthook@2.2.1 husky@9 prettier@3.6.2 >/dev/null) ||
    echo "deps: npm install failed: the lefthook, husky and prettier tests will skip"
}

# An npm cache folder holding prettier 3.6.2, for tests/e2e/real_projects_test.cc:
# its npm fixture installs its lockfile with `npm ci` from this cache alone
# (npm_config_offline=true, no network at test time). Idempotent: npm runs
# only when the tarball is not in the cache's index yet.
NPM_CACHE_DIR="$TEST_TOOLS_DIR/npm-cache"
fill_npm_cache() {
  [ "${PHOENIX_TEST_TOOLS:-1}" = 0 ] && return 0
  grep -rqs "prettier/-/prettier-3.6.2.tgz" "$NPM_CACHE_DIR/_cacache/index-v5" && return 0
  command -v npm >/dev/null 2>&1 || return 0
  echo "deps: caching prettier 3.6.2 in $NPM_CACHE_DIR"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" mkdir -p "$NPM_CACHE_DIR"
  "${sudo[@]}" npm cache add prettier@3.6.2 --cache "$NPM_CACHE_DIR" --loglevel=error >/dev/null &&
    "${sudo[@]}" chmod -R a+rwX "$NPM_CACHE_DIR" ||
    echo "deps: npm cache add failed: the npm real-project tests will skip"
}

# The agent CLIs whose presets tests/e2e/agents_test.cc runs for real
# against a fake model server on 127.0.0.1, pinned (docs/agents.md), into
# $TEST_TOOLS_DIR/agents. --ignore-scripts keeps every package's install
# script out, then `npm rebuild` runs the two that only link the native
# binary their platform package (an optional dependency, already
# downloaded) ships: claude's and opencode's. Without the folder those
# tests skip and say why.
AGENT_CLIS=(@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 opencode-ai@1.18.33 @google/gemini-cli@0.61.0)
AGENTS_DIR="$TEST_TOOLS_DIR/agents"
install_agent_clis() {
  [ "${PHOENIX_TEST_TOOLS:-1}" = 0 ] && return 0
  local want have=1
  for want in "${AGENT_CLIS[@]}"; do
    local name="${want%@*}" version="${want##*@}"
    grep -qs "\"version\": \"$version\"" "$AGENTS_DIR/node_modules/$name/package.json" || have=0
  done
  [ "$have" = 1 ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    echo "deps: npm not found: the agent CLI tests will skip"
    return 0
  fi
  echo "deps: installing ${AGENT_CLIS[*]} into $AGENTS_DIR"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" mkdir -p "$AGENTS_DIR"
  (cd "$AGENTS_DIR" &&
    "${sudo[@]}" npm install --prefix "$AGENTS_DIR" --ignore-scripts --no-audit --no-fund --loglevel=error \
      "${AGENT_CLIS[@]}" >/dev/null &&
    "${sudo[@]}" npm rebuild --prefix "$AGENTS_DIR" --loglevel=error @anthropic-ai/claude-code opencode-ai >/dev/null) ||
    echo "deps: npm install of the agent CLIs failed: their tests will skip"
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} packages present"
  install_test_tools
  install_agent_clis
  fill_npm_cache
  exit 0
fi

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_test_tools
install_agent_clis
fill_npm_cache
echo "deps: done"
