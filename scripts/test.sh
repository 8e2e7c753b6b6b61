#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds everything and runs the whole test suite in two stages (docs/building.md): the release
# stage with clang++ when it is installed (CXX names another), the sanitizer stage with g++
# (SANITIZER_CXX names another), so both compilers build the library, the tests and the CLI:
#  1. release, -Werror: the formatting check, the compiled library, tests, CLI, examples, benchmark
#     smoke runs, header self-sufficiency, layering, the header-only consumer projects, the fuzzer;
#     every test but the long Monte Carlo validations (label "slow_<module>": each has a short twin
#     in the suite over the same code path); `--long` runs those too (docs/building.md).
#  2. AddressSanitizer + UndefinedBehaviorSanitizer (built while stage 1's tests run): the compiled
#     library, every test program and the CLI (no examples, benchmarks or packaging checks: they add no memory or UB coverage; no
#     llama.cpp engine: its prebuilt library is not instrumented, and the blob and GGUF parsing the
#     adapter relies on is tested here through kv_tests and engine_tests; the CLI's "built without
#     llama.cpp" path is tested here instead; no MPI either: Open MPI's libraries are not
#     instrumented and hold allocations past MPI_Finalize that LeakSanitizer reports, and the CLI's
#     "built without MPI" refusal under a launcher is tested here instead), all tests but the
#     "slow" label (long runs whose code paths shorter tests cover too).
# ccache is used when present (its cache lives outside the clone); the budget holds without it.
set -euo pipefail
cd "$(dirname "$0")/.."
long=0
for arg in "$@"; do
  case "$arg" in
    --long) long=1 ;;
    -h|--help)
      echo "usage: bash scripts/test.sh [--long]"
      echo "  builds everything with -Werror, runs the suite (release), then again under ASan+UBSan;"
      echo "  --long also runs the long Monte Carlo validations (ctest label slow_<module>) in the release stage"
      exit 0 ;;
    *) echo "scripts/test.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
bash scripts/install-deps.sh --without-late
jobs=$(nproc)
start=$SECONDS
# The late packages (PyTorch, only the Python relay example's test needs it) install while the
# release build compiles; the release tests wait for them. Its log is shown if it fails.
mkdir -p build
late_log=build/install-late.log
bash scripts/install-deps.sh --late-only >"$late_log" 2>&1 &
late_install=$!

# Ninja for a new build directory (less overhead per target than Makefiles, and it keeps both
# cores busy across targets); an existing build directory keeps the generator it was made with.
generator() {
  if [ ! -f "$1/CMakeCache.txt" ] && command -v ninja >/dev/null; then echo Ninja; fi
}
# The compilers: the release stage (scripts/configure-release.sh, shared with scripts/run-main.sh)
# uses clang++ unless CXX names another: its front end compiles this template-heavy code ~35 % faster
# than GCC 12 (docs/building.md), which keeps the cold run inside its budget. The sanitizer stage uses
# g++ (SANITIZER_CXX names another): so CI builds the library, every test program and the CLI with
# both compilers, each with its warnings as errors, at no extra build. An existing build directory
# keeps the compiler it was configured with.
asan_cxx=${SANITIZER_CXX:-}
if [ -z "$asan_cxx" ]; then
  if command -v g++ >/dev/null; then asan_cxx=g++; else asan_cxx=${CXX:-c++}; fi
fi
launcher=()
if command -v ccache >/dev/null && [ "${CCACHE_DISABLE:-0}" != 1 ]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

echo "== formatting (clang-format, .clang-format) =="
bash scripts/check-format.sh

echo "== release build (-Werror) =="
bash scripts/configure-release.sh  # the configuration scripts/run-main.sh builds too
cmake --build build/release -j "$jobs"
echo "release build: $((SECONDS - start)) s"

# The sanitizer build runs in the background while the release tests run: the tests leave the
# cores idle part of the time (processes they start, waits on the relay's sockets, one long case
# at the end) and the build fills it. Its output is shown when it ends; it stops if this script does.
# -g1: line tables only. Sanitizer reports keep file:line and inlined frames; full -g cost ~40 %
# more compile time and 3.4x larger objects. The test programs' own code at -O0, as in every build
# (LATENTAUDIT_TEST_OPT_FLAGS, tests/CMakeLists.txt; the library they test at -O1 here, -O3 in
# release): their optimizer passes over Catch2's expansions were 55 % of this build's test
# compile time, and the sanitizers check the same code (docs/building.md). The CLI in unity batches
# here (LATENTAUDIT_CLI_UNITY): the release stage has compiled each of its files on its own.
# Programs linked -no-pie: the stage starts its programs more than a thousand times (each of the 640
# test cases is a process; the CLI tests call the CLI from some 540 places, some in loops), and a
# position-independent ASan program spends ~30 % of each start applying ~600 000 relocations
# (report_tests: 174 -> 121 ms of CPU per start; docs/building.md).
gen=$(generator build/asan)
CXX=$asan_cxx cmake ${gen:+-G "$gen"} -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
      -DLATENTAUDIT_WERROR=ON -DLATENTAUDIT_SANITIZE=ON -DLATENTAUDIT_TEST_PACKAGING=OFF \
      -DLATENTAUDIT_FUZZ=OFF -DLATENTAUDIT_BUILD_EXAMPLES=OFF -DLATENTAUDIT_BUILD_BENCHMARKS=OFF \
      -DLATENTAUDIT_LLAMA_CPP=OFF -DLATENTAUDIT_MPI=OFF -DLATENTAUDIT_PYTHON=OFF -DLATENTAUDIT_UNITY_BUILD=ON \
      -DLATENTAUDIT_CLI_UNITY=ON -DCMAKE_EXE_LINKER_FLAGS=-no-pie \
      "${launcher[@]}" >/dev/null
asan_log=build/asan/build.log
setsid -w cmake --build build/asan -j "$jobs" >"$asan_log" 2>&1 &  # its own process group
asan_build=$!
trap 'kill -- "-$asan_build" 2>/dev/null || true' EXIT

if ! wait "$late_install"; then
  cat "$late_log" >&2
  echo "installing the late packages failed (scripts/install-deps.sh --late-only)" >&2
  exit 1
fi
release_filter=(-LE slow)
if [ "$long" = 1 ]; then release_filter=(); fi
ctest --test-dir build/release --output-on-failure -j "$jobs" "${release_filter[@]}"
echo "release stage: $((SECONDS - start)) s"

echo "== AddressSanitizer + UBSan build =="
asan_rc=0
wait "$asan_build" || asan_rc=$?
trap - EXIT
cat "$asan_log"
if [ "$asan_rc" -ne 0 ]; then
  echo "sanitizer build failed (exit $asan_rc)" >&2
  exit "$asan_rc"
fi
echo "sanitizer build: $((SECONDS - start)) s"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs" -LE slow
echo "both stages: $((SECONDS - start)) s"
