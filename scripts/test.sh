#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds everything and runs the whole test suite twice: a -Werror release build (tests, CLI,
# examples, benchmark smoke runs, header self-sufficiency, layering, consumer projects), then the
# tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)

echo "== release build (-Werror) =="
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DLATENTAUDIT_WERROR=ON \
      -DLATENTAUDIT_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build/release -j "$jobs"
ctest --test-dir build/release --output-on-failure -j "$jobs"

echo "== AddressSanitizer + UBSan build =="
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" \
      -DLATENTAUDIT_WERROR=ON -DLATENTAUDIT_SANITIZE=ON -DLATENTAUDIT_TEST_PACKAGING=OFF \
      -DLATENTAUDIT_BUILD_EXAMPLES=ON -DLATENTAUDIT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs" -LE slow
