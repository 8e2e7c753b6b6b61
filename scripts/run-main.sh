#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: builds the latentaudit CLI and runs the audit on the built-in model organisms —
# agent A reads a document, its KV cache (or text) is relayed to agent B under every arm — then
# prints the JSON summary; the report (report.md, report.json, SVG plots) and the journaled
# records land in audit-out/ (the previous run's is kept as audit-out.prev/). Extra arguments go
# to `latentaudit audit` (e.g. --items 100).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --without-late  # the late packages (PyTorch) only serve tests
# Configure build/release exactly as scripts/test.sh does (scripts/configure-release.sh: one
# configuration, so CI tests what this job builds), then build the CLI with the build tool's progress
# lines visible: the first build compiles the library and the CLI, 6-9 minutes on 2 cores
# (README.md); later runs rebuild only what changed, seconds.
if [ -f build/release/tools/cli/latentaudit ]; then
  echo "# building the latentaudit CLI in build/release (only what changed since the last build: seconds, unless the library's headers changed)" >&2
else
  echo "# building the latentaudit CLI in build/release: first build, about 6-9 minutes on 2 cores" \
    "(configure, then the compiled library and the CLI; progress below)" >&2
fi
bash scripts/configure-release.sh
cmake --build build/release -j "$(nproc)" --target latentaudit_cli >&2
cli=build/release/tools/cli/latentaudit
out=audit-out
# The previous report is kept, once: audit-out.prev (replaced by the next run's previous one).
if [ -e "$out" ]; then
  rm -rf "$out.prev"
  mv "$out" "$out.prev"
  echo "# the previous $out/ is now $out.prev/ (the run before it is removed)" >&2
fi
echo "# latentaudit $("$cli" --version): audit of KV relay vs text on models/organism-a (partner organism-b)" >&2
"$cli" audit --model models/organism-a --partner models/organism-b --out "$out" --pretty "$@"
echo "# report: open $out/report.html in a browser (the same findings: $out/report.md, $out/report.json; plots: $out/*.svg; records: $out/records.jsonl)" >&2
