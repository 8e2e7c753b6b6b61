#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: builds the latentaudit CLI and runs the audit on the built-in model organisms —
# agent A reads a document, its KV cache (or text) is relayed to agent B under every arm — then
# prints the JSON summary; the report (report.md, report.json, SVG plots) and the journaled
# records land in audit-out/. Extra arguments go to `latentaudit audit` (e.g. --items 100).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# the compiler of scripts/test.sh (clang++ when installed, else CXX or c++), so both share build/release
cxx=${CXX:-}
if [ -z "$cxx" ]; then
  if command -v clang++ >/dev/null; then cxx=clang++; else cxx=c++; fi
fi
CXX=$cxx cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DLATENTAUDIT_WERROR=ON >/dev/null
cmake --build build/release -j "$(nproc)" --target latentaudit_cli >/dev/null
cli=build/release/tools/cli/latentaudit
out=audit-out
rm -rf "$out"
echo "# latentaudit $("$cli" --version): audit of KV relay vs text on models/organism-a (partner organism-b)" >&2
"$cli" audit --model models/organism-a --partner models/organism-b --out "$out" --pretty "$@"
echo "# report: $out/report.md, findings: $out/report.json, plots: $out/*.svg, records: $out/records.jsonl" >&2
