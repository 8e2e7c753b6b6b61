#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs latentaudit's build and test dependencies: Debian 12 packages, then the pinned llama.cpp
# release (headers, prebuilt CPU libraries, tokenizer vocabularies) into .deps/llama.cpp/ (ignored by
# git; docs/engines.md "llama.cpp"). Idempotent: installs only what is missing, and runs apt-get
# update only when something is. Both README commands call it. All progress goes to stderr.
# LATENTAUDIT_SKIP_LLAMA_CPP=1 skips the llama.cpp step (the build then configures without it).
# Options: --without-late leaves out the late packages (needed only by tests that run after the
# build: PyTorch for the Python relay example, ~330 MB), --late-only installs just them; no option
# installs everything. scripts/test.sh installs the late packages in the background while it builds
# (they are off the cold run's critical path); scripts/run-main.sh needs none of them.
set -euo pipefail
mode=${1:-all}
case "$mode" in
  all | --without-late | --late-only) ;;
  *)
    echo "install-deps: unknown option '$mode' (expected --without-late or --late-only)" >&2
    exit 2
    ;;
esac
late_packages=(
  python3-torch              # the PyTorch relay example and its test (examples/python, docs/python.md)
  python3-pandas             # read_records(as_frame=True) and its test (docs/python.md; optional to users)
  python3-venv               # the test that pip-installs the module into a venv (python/tests/test_pip_install.py)
)
packages=(
  cmake make ninja-build g++ pkg-config
  libeigen3-dev libboost-math-dev libfmt-dev catch2 libbenchmark-dev
  libre2-dev                 # regex scoring of task files (linear time, bounded memory)
  clang libclang-rt-14-dev   # libFuzzer target for the relay decoder
  clang-format               # the formatting check (scripts/check-format.sh)
  ccache                     # optional compiler cache (scripts/test.sh uses it when present)
  git                        # extracts llama.cpp's headers and vocabularies from its release bundle
  libopenmpi-dev openmpi-bin # sharded audits and the mpi relay transport (docs/distributed.md)
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest  # the Python module (docs/python.md)
)
case "$mode" in
  all) packages+=("${late_packages[@]}") ;;
  --late-only) packages=("${late_packages[@]}") ;;
esac
# npm fetches the pinned llama.cpp packages; node images ship it, else Debian's package.
if [ "$mode" != --late-only ] && [ "${LATENTAUDIT_SKIP_LLAMA_CPP:-0}" != 1 ] && ! command -v npm >/dev/null; then
  packages+=(npm)
fi
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

# ---- llama.cpp v0.5.0 (the engine of include/latentaudit/engine/llama_cpp.hpp) ---------------------
# node-llama-cpp@3.22.1 carries the llama.cpp release v0.5.0 as a git bundle (headers, sources,
# gguf-py, tokenizer vocabularies); @node-llama-cpp/linux-x64@3.22.1 carries its prebuilt CPU
# libraries. Prebuilt, not built from the bundle: a CPU-only source build is ~9 CPU-minutes, which the
# 20-minute CI budget does not have (docs/engines.md). The sha512 digests are npm's dist.integrity of
# each tarball (`npm view <pkg>@<ver> dist.integrity`, base64) written in hex, checked before unpacking.
llama_pkgs=(
  "node-llama-cpp@3.22.1 6e5b488a9b9699cd76dc7eed30880318a4ac4ab866865418795502e3c5d38d55bb5c624988927209d95333343f2e25a83e4183a5c2f816f883a60c3ba9f4e20f"
  "@node-llama-cpp/linux-x64@3.22.1 e6e0820cda9608d7da026f1a47f533c5ba381c1a4a80d17dd640873dea4a86032057638099ab6879f6ce94c8a1b2a0a21f639ddf913f7941d00856df44126e3a"
)
llama_tag=v0.5.0
llama_commit=de3ff815ea7d559ee917f063901b8986f038abc6  # the bundle's HEAD (tag v0.5.0)
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.deps/llama.cpp"
stamp="llama.cpp $llama_tag $llama_commit; ${llama_pkgs[*]}"
if [ "$mode" = --late-only ]; then
  :  # the late packages only
elif [ "${LATENTAUDIT_SKIP_LLAMA_CPP:-0}" = 1 ]; then
  echo "install-deps: llama.cpp skipped (LATENTAUDIT_SKIP_LLAMA_CPP=1)" >&2
elif [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
  echo "install-deps: no prebuilt llama.cpp for $(uname -s)-$(uname -m); skipped (docs/building.md)" >&2
elif [ -f "$dest/STAMP" ] && [ "$(cat "$dest/STAMP")" = "$stamp" ]; then
  :  # already installed
else
  echo "install-deps: fetching llama.cpp $llama_tag (node-llama-cpp 3.22.1) into $dest" >&2
  tmp=$(mktemp -d "$root/.deps-tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  for entry in "${llama_pkgs[@]}"; do
    spec=${entry% *}
    want=${entry#* }
    (cd "$tmp" && npm pack --silent --pack-destination "$tmp" "$spec" >/dev/null) >&2
    name=${spec%@*}
    name=${name#@}
    tgz="$tmp/${name//\//-}-${spec##*@}.tgz"
    got=$(sha512sum "$tgz" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
      echo "install-deps: $spec: sha512 $got does not match the pinned $want" >&2
      exit 1
    fi
    mkdir -p "$tmp/${name//\//-}"
    tar -xzf "$tgz" -C "$tmp/${name//\//-}"
  done
  out="$tmp/llama.cpp"
  mkdir -p "$out/lib" "$out/include" "$out/models"
  bins="$tmp/node-llama-cpp-linux-x64/package/bins/linux-x64"
  cp "$bins"/libllama.v0.5.0.so "$bins"/libggml.v0.5.0.so "$bins"/libggml-base.so "$bins"/libggml-cpu-*.so "$out/lib/"
  # headers and vocabularies from the release bundle, checked against the pinned commit
  git init -q "$tmp/src"
  git -C "$tmp/src" fetch -q "$tmp/node-llama-cpp/package/llama/gitRelease.bundle" HEAD >&2
  head=$(git -C "$tmp/src" rev-parse FETCH_HEAD)
  if [ "$head" != "$llama_commit" ]; then
    echo "install-deps: the llama.cpp bundle is at $head, expected $llama_commit" >&2
    exit 1
  fi
  git -C "$tmp/src" archive FETCH_HEAD include/llama.h include/llama-cpp.h ggml/include \
    models/ggml-vocab-\* LICENSE | tar -x -C "$tmp/src"
  cp "$tmp/src"/include/*.h "$tmp/src"/ggml/include/*.h "$out/include/"
  cp "$tmp/src"/models/ggml-vocab-* "$out/models/"
  cp "$tmp/src/LICENSE" "$out/LICENSE"
  echo "$stamp" >"$out/STAMP"
  rm -rf "$dest"
  mkdir -p "$root/.deps"
  mv "$out" "$dest"
  echo "install-deps: llama.cpp $llama_tag in $dest" >&2
fi
