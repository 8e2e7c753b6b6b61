#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures build/release, the one release build both README commands use: scripts/run-main.sh
# builds the CLI in it, scripts/test.sh everything. One configuration, so the main job runs on
# exactly what the suite tests (CI runs both; docs/building.md "The CI run"). Ninja for a new build
# directory; clang++ unless CXX names another (an existing directory keeps the compiler and
# generator it was made with); unity batches; ccache as the launcher when installed. Its output goes
# to build/release/configure.log, shown when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/release
gen=()
if [ ! -f "$dir/CMakeCache.txt" ] && command -v ninja >/dev/null; then gen=(-G Ninja); fi
cxx=${CXX:-}
if [ -z "$cxx" ]; then
  if command -v clang++ >/dev/null; then cxx=clang++; else cxx=c++; fi
fi
launcher=()
if command -v ccache >/dev/null && [ "${CCACHE_DISABLE:-0}" != 1 ]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
mkdir -p "$dir"
if ! CXX=$cxx cmake "${gen[@]}" -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DLATENTAUDIT_WERROR=ON \
  -DLATENTAUDIT_BUILD_BENCHMARKS=ON -DLATENTAUDIT_UNITY_BUILD=ON -DLATENTAUDIT_PYTHON=ON \
  "${launcher[@]}" >"$dir/configure.log" 2>&1; then
  cat "$dir/configure.log" >&2
  echo "configuring $dir failed (scripts/configure-release.sh; the log is above)" >&2
  exit 1
fi
