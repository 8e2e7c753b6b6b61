#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: builds the latentaudit CLI and runs it on the bundled example trial
# (examples/data/relay_trial.csv), printing the estimates as JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DLATENTAUDIT_WERROR=ON >/dev/null
cmake --build build/release -j "$(nproc)" --target latentaudit_cli >/dev/null
cli=build/release/tools/cli/latentaudit
data=examples/data/relay_trial.csv
echo "# latentaudit $("$cli" --version) on $data"
echo "# KV relay vs text relay: Welch, paired t, McNemar, TOST (margin 0.05), bootstrap BCa"
"$cli" estimate welch --data "$data" --outcome correct --treatment kv_relay
"$cli" estimate paired --data "$data" --outcome correct --treatment kv_relay --pair item
"$cli" estimate mcnemar --data "$data" --outcome correct --treatment kv_relay --pair item
"$cli" estimate tost --data "$data" --outcome correct --treatment kv_relay --pair item --margin 0.05
"$cli" estimate bootstrap --data "$data" --outcome correct --treatment kv_relay --pair item \
  --ci bca --replicates 9999 --seed 2026
echo "# latency: KV relay no slower than text by more than 10 ms (paired non-inferiority, lower is better)"
"$cli" estimate noninferiority --data "$data" --outcome latency_ms --treatment kv_relay --pair item \
  --margin 10 --better lower
echo "# planning: pairs needed for McNemar to detect p10 = 0.05 vs p01 = 0.03 with power 0.8"
"$cli" power mcnemar --p10 0.05 --p01 0.03 --power 0.8
