#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs latentaudit's build and test dependencies from Debian 12 packages. Idempotent: installs
# only what is missing, and runs apt-get update only when something is. Both README commands call it.
set -euo pipefail
packages=(
  cmake make ninja-build g++ pkg-config
  libeigen3-dev libboost-math-dev libfmt-dev catch2 libbenchmark-dev
  clang libclang-rt-14-dev   # libFuzzer target for the relay decoder
  clang-format               # the formatting check (scripts/check-format.sh)
  ccache                     # optional compiler cache (scripts/test.sh uses it when present)
)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "install-deps: installing ${missing[*]}" >&2
  # apt's progress goes to stderr: the main job's stdout carries its JSON summary only.
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
