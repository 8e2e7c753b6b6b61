#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One prepared device check for the reference CUDA engine (examples/cuda/README.md): builds the
# two CUDA example programs (Release), runs the conformance kit + cross-engine checks against the
# CPU engine on models/organism-a, then the timing table (organism relay vs recompute; synthetic
# Llama-3-8B-shaped bf16 cache: export, import, noise, int8 round trip, gather, each beside a
# device memcpy of the same bytes). Before them, the host check of the noise kernel's arithmetic
# (example_cuda_noise_host_check, no device needed): if it passes and the device noise check
# fails, the difference is in the device's execution, not in the stream's logic. No network.
# Budget: < 5 minutes (each step has a timeout).
#
# Usage: bash examples/cuda/device_check.sh [--prebuilt DIR]
#   --prebuilt DIR  skip the build and run DIR/example_cuda_noise_host_check,
#                   DIR/example_cuda_conformance and DIR/example_cuda_bench
#                   (e.g. a build/<name>/examples/cuda carried from a machine with the C++ deps)
# Environment: BUILD_DIR (default build/cuda-check), TOKENS (synthetic cache tokens, default 4096).
set -uo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
build=${BUILD_DIR:-build/cuda-check}
bin=""
if [[ "${1:-}" == "--prebuilt" ]]; then
  bin=${2:?--prebuilt needs a directory}
fi
status=0
step() { echo; echo "== $* ($(( $(date +%s) - t0 )) s) =="; }

step "device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "(nvidia-smi unavailable)"

if [[ -z "$bin" ]]; then
  step "configure + build (Release, CUDA example targets only)"
  mkdir -p "$(dirname "$build")"
  nvcc_path=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  if ! timeout 60 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc_path" \
       -DLATENTAUDIT_BUILD_TESTS=OFF -DLATENTAUDIT_BUILD_TOOLS=OFF -DLATENTAUDIT_BUILD_EXAMPLES=ON >"$build.configure.log" 2>&1; then
    tail -30 "$build.configure.log"
    echo "configure failed (missing Eigen3/Boost/fmt? build elsewhere and use --prebuilt)"; exit 2
  fi
  grep "latentaudit:" "$build.configure.log" || true
  if ! timeout 150 cmake --build "$build" --target example_cuda_noise_host_check example_cuda_conformance example_cuda_bench -j "$(nproc)" >"$build.build.log" 2>&1; then
    tail -40 "$build.build.log"; echo "build failed"; exit 2
  fi
  bin="$build/examples/cuda"
fi

step "noise kernel arithmetic on the host vs bulk_normal_batch / add_noise"
timeout 60 "$bin/example_cuda_noise_host_check" || status=1

step "conformance kit + cross-engine checks (organism-a)"
out=$(timeout 30 "$bin/example_cuda_conformance" models/organism-a 2>&1) || status=1
echo "$out"
if grep -q "no CUDA device" <<<"$out"; then echo "no CUDA device visible: this check needs one"; exit 3; fi

step "timings"
timeout 50 "$bin/example_cuda_bench" models/organism-a "${TOKENS:-4096}" || status=1

step "done: $([[ $status == 0 ]] && echo OK || echo FAILED)"
exit $status
