#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The audit on the two real pretrained TinyStories models (docs/real-models.md, issue 50): story
# tasks from tools/tasks/story_tasks.py (planted facts, cloze queries, a continuation per task;
# need / no_need / stale / conflict), audited over every arm family the engines run on them —
# placebos (another story's cache, zeroed, random), noise dose-response, layer and token slicing,
# int8/int4/fp8 round trips, messages agent A writes — on
#   stories260K       through llama.cpp (its GGUF, SentencePiece vocabulary), and
#   TinyStories-656K  through the reference engine (HF safetensors + tokenizer.json),
# then the foreign sender (656K -> 260K, through llama.cpp after `gguf export`), which the audit
# refuses (different vocabularies): its reason is kept in OUT/foreign-sender.txt.
# Writes OUT/tasks.jsonl, OUT/stories260k/ and OUT/tinystories656k/ (report.html, report.md,
# report.json, plots, records.jsonl each), OUT/summary-*.json and OUT/timing.txt.
#
# usage: scripts/run-real.sh [OUT]         (default real-out; the previous one is replaced)
# environment:
#   LATENTAUDIT_MODELS  the models folder (default ../shared/models from the project's root)
#   TASKS=1000 SEED=1   story tasks generated, and the generator's and the audit's seed
#   JOBS=2              audit workers (--jobs)
#   BOOTSTRAP=2000      bootstrap replicates of the report
#   CLI=...             a built latentaudit (default build/release/tools/cli/latentaudit, built if absent)
# Extra arguments after OUT go to both `latentaudit audit` runs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-real-out}
[ $# -gt 0 ] && shift
models=${LATENTAUDIT_MODELS:-../shared/models}
tasks=${TASKS:-1000}
seed=${SEED:-1}
jobs=${JOBS:-2}
bootstrap=${BOOTSTRAP:-2000}
cli=${CLI:-build/release/tools/cli/latentaudit}
m260="$models/stories260K/stories260K.gguf"
m656="$models/tinystories-656k"
for f in "$m260" "$m656/model.safetensors" "$m656/tokenizer.json" "$m656/config.json"; do
  if [ ! -f "$f" ]; then
    echo "run-real.sh: no $f (set LATENTAUDIT_MODELS to the folder of ../shared/models/README.md)" >&2
    exit 2
  fi
done
if [ ! -x "$cli" ]; then
  echo "# building the latentaudit CLI in build/release" >&2
  bash scripts/configure-release.sh
  cmake --build build/release -j "$(nproc)" --target latentaudit_cli >&2
fi
rm -rf "$out"
mkdir -p "$out"
# Conversions of the models never enter the project's tree: a scratch folder, removed on exit.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/latentaudit-real.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

python3 tools/tasks/story_tasks.py "$out/tasks.jsonl" --tasks "$tasks" --seed "$seed"
echo "# $tasks story tasks (seed $seed): $out/tasks.jsonl" >&2

# Every arm family; one query per task, so one seed per item. Layer slices only on the reference
# engine (llama.cpp imports no part of the layers), kv_first_half keeping its positions likewise
# (llama.cpp refuses the position gap; the @rebase form runs on both).
arms="no_comm,text_full,kv_full,deranged,zeroed,random"
arms+=",kv_noise_0.25,kv_noise_0.5,kv_noise_0.75,kv_noise_1,kv_noise_1.5,kv_noise_2"
arms+=",kv_first_half@rebase,kv_last_half,kv_sinks_4_16,kv_int8,kv_int4,kv_fp8"
arms+=",text_message_8,text_message_16,kv_message_16,kv_message_only_16"
common=(--tasks "$out/tasks.jsonl" --seeds 1 --seed "$seed" --jobs "$jobs" --bootstrap "$bootstrap"
  --partner none --drift none --map none --timing-repeats 0 --quiet)

run() {  # name, then audit options
  local name=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  "$cli" audit "$@" "${common[@]}" --out "$out/$name" "${extra[@]}" >"$out/summary-$name.json"
  t1=$(date +%s.%N)
  python3 - "$out/summary-$name.json" "$name" "$t0" "$t1" "$jobs" >>"$out/timing.txt" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
wall = float(sys.argv[4]) - float(sys.argv[3])
t = s["timing"]
print("%s: %d trials in %.1f s of trials (%.1f trials/s at --jobs %s), %.1f s analysis, %.1f s in all"
      % (sys.argv[2], s["trials_run"], t["trials_wall_s"], s["trials_run"] / t["trials_wall_s"],
         sys.argv[5], t["analysis_s"], wall))
print("  decision: %s; checklist: %s" % (s["decision"]["verdict"], json.dumps(s["decision"]["checklist"])))
EOF
  tail -2 "$out/timing.txt" >&2
}
extra=("$@")

run stories260k --engine llama.cpp --model "$m260" --arms "$arms"
run tinystories656k --model "$m656" --arms "$arms,kv_first_half,kv_layers_0,kv_layers_1"

# The foreign sender: TinyStories-656K's cache to stories260K (the 656K exported to GGUF in the
# scratch folder). The vocabularies differ (2048 vs 512 tokens), so the audit refuses the partner;
# a cache map needs a shared vocabulary too (latentaudit map fit), so no map is fitted.
"$cli" gguf export --model "$m656" --out "$scratch/tinystories-656k.gguf" >/dev/null
set +e
"$cli" audit --engine llama.cpp --model "$m260" --partner "$scratch/tinystories-656k.gguf" \
  --tasks "$out/tasks.jsonl" --items 4 --seeds 1 --arms no_comm,kv_full,cross_model --drift none \
  --map none --quiet --out "$scratch/foreign" >/dev/null 2>"$out/foreign-sender.txt"
rc=$?
set -e
echo "foreign sender 656K -> 260K: exit $rc: $(cat "$out/foreign-sender.txt")" | tee -a "$out/timing.txt" >&2
echo "# reports: $out/stories260k/report.html and $out/tinystories656k/report.html (report.md, report.json beside them)" >&2
