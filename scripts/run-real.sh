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
# --drift adds the drift and map arms on TinyStories-656K (docs/real-models.md, "Drift and maps"):
# drifted siblings fine-tuned from its weights for DRIFT_LEVELS steps on story text
# (tools/tasks/story_tasks.py stories under their own seed, none of them an audit document) by
# tools/real/finetune_drift.py (Debian's /usr/bin/python3 with python3-torch; CPU, float32, fixed
# seed, 1 thread), a cache map per level from the sibling to the model (`latentaudit map fit` on 200
# calibration stories apart from the audit's), then the audit of the 656K on the story tasks with
# the arms no_comm, text_full, kv_full, deranged, kv_drift_<k> and kv_mapped_drift_<k>, into
# OUT/tinystories656k-drift/, with OUT/drift.json (the fine-tuning's manifest and measurements) and
# OUT/map-<k>.json (each map's summary). The overlays and maps are generated weights: they are
# written to a scratch folder removed on exit, or kept in DRIFT_OUT when it is set (never commit
# them). --drift-only runs only this part (the story tasks are generated as usual).
#
# usage: scripts/run-real.sh [--drift | --drift-only] [OUT]  (default OUT real-out; replaced)
# environment:
#   LATENTAUDIT_MODELS  the models folder (default ../shared/models from the project's root)
#   TASKS=1000 SEED=1   story tasks generated, and the generator's and the audit's seed
#   JOBS=2              audit workers (--jobs)
#   BOOTSTRAP=2000      bootstrap replicates of the report
#   CLI=...             a built latentaudit (default build/release/tools/cli/latentaudit, built if absent)
#   DRIFT_LEVELS=30,100,300  fine-tuning steps of the drifted siblings (--drift)
#   DRIFT_OUT=DIR       keep the siblings' overlays, drift.json and the maps in DIR (--drift)
# Extra arguments after OUT go to every `latentaudit audit` run.
set -euo pipefail
cd "$(dirname "$0")/.."
drift=0
main=1
case "${1:-}" in
--drift)
  drift=1
  shift
  ;;
--drift-only)
  drift=1
  main=0
  shift
  ;;
esac
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

if [ "$drift" = 1 ]; then
  # Drifted siblings of the 656K, a map per level, and the audit of their arms (above).
  levels=${DRIFT_LEVELS:-30,100,300}
  dd=${DRIFT_OUT:-$scratch/drift-656k}
  mkdir -p "$dd"
  t0=$(date +%s.%N)
  /usr/bin/python3 tools/real/finetune_drift.py --base "$m656" --out "$dd" --levels "$levels" \
    --seed "$seed" --exclude "$out/tasks.jsonl" --threads 1 >"$out/finetune.log"
  cp "$dd/drift.json" "$out/drift.json"
  t1=$(date +%s.%N)
  # Calibration stories for the maps: need tasks of another generator seed, none of whose documents
  # is an audit document (the audit refuses a map calibrated on its items).
  python3 tools/tasks/story_tasks.py "$scratch/calibration-all.jsonl" --tasks 260 --seed $((seed + 7000)) \
    --no-need-share 0 --stale-share 0 --conflict-share 0 --id-prefix calibration-
  python3 - "$out/tasks.jsonl" "$scratch/calibration-all.jsonl" "$scratch/calibration.jsonl" <<'EOF'
import json, sys
audit = set()
for line in open(sys.argv[1]):
    t = json.loads(line)
    audit.update(t[k] for k in ("document", "text_document") if k in t)
lines = [l for l in open(sys.argv[2]) if "latentaudit_tasks" in l or json.loads(l)["document"] not in audit]
open(sys.argv[3], "w").writelines(lines[:201])  # the header and 200 tasks
EOF
  maps=()
  darms="no_comm,text_full,kv_full,deranged"
  for k in ${levels//,/ }; do
    "$cli" map fit --from "$m656" --from-overlay "$dd/steps-$k.safetensors" --to "$m656" \
      --tasks "$scratch/calibration.jsonl" --tokenizer "$m656" --calibration 200 --seed "$seed" \
      --out "$dd/map-$k.safetensors" >"$out/map-$k.json"
    maps+=("$dd/map-$k.safetensors")
    darms+=",kv_drift_$k,kv_mapped_drift_$k"
  done
  t2=$(date +%s.%N)
  python3 - "$t0" "$t1" "$t2" "$levels" >>"$out/timing.txt" <<'EOF'
import sys
t0, t1, t2 = map(float, sys.argv[1:4])
print("drift siblings (steps %s): fine-tuning and its measurements %.1f s, %d maps %.1f s"
      % (sys.argv[4], t1 - t0, len(sys.argv[4].split(",")), t2 - t1))
EOF
  tail -1 "$out/timing.txt" >&2
  map_list=$(
    IFS=,
    echo "${maps[*]}"
  )
  saved=("${common[@]}")
  common=(--tasks "$out/tasks.jsonl" --seeds 1 --seed "$seed" --jobs "$jobs" --bootstrap "$bootstrap"
    --partner none --drift "$dd" --map "$map_list" --timing-repeats 0 --quiet)
  run tinystories656k-drift --model "$m656" --arms "$darms"
  common=("${saved[@]}")
fi
[ "$main" = 1 ] || exit 0

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
