#!/usr/bin/env bash
# Installs what Phoenix needs to build and test, and only what is missing.
# Idempotent: a machine that has everything runs no package manager at all.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libgit2-dev libboost-program-options-dev libboost-filesystem-dev libboost-dev
  nlohmann-json3-dev libsqlite3-dev libssl-dev libstb-dev
  libgtest-dev libgmock-dev sqlite3
  clang libclang-rt-14-dev ccache chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
