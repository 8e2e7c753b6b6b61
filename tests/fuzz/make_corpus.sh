#!/usr/bin/env bash
# Regenerates the seed corpora of the fuzzers that are not hand-written (run from the repo root):
# the relay decoder (with the CLI), the GGUF reader, safetensors / cache maps, task files,
# tokenizer.json and schedule.json.
#   bash tests/fuzz/make_corpus.sh build/release/tools/cli/latentaudit
set -euo pipefail
cli=${1:?path to the latentaudit binary}
dir=tests/fuzz/corpus/wire_decode
mkdir -p "$dir"
"$cli" kv make-example --out "$dir/kv_bf16_4" --tokens 4 >/dev/null
"$cli" kv make-example --out "$dir/kv_f32_2" --tokens 2 --dtype f32 --seed 1 >/dev/null
printf 'key' > /tmp/latentaudit_fuzz_key
"$cli" kv make-example --out "$dir/kv_f16_3_hmac" --tokens 3 --dtype f16 --key-file /tmp/latentaudit_fuzz_key >/dev/null
rm -f /tmp/latentaudit_fuzz_key
"$cli" kv make-example --out "$dir/kv_bf16_6_int4" --tokens 6 --quantize int4 >/dev/null
"$cli" kv make-example --out "$dir/kv_f32_3_fp8" --tokens 3 --dtype f32 --quantize fp8_e4m3 >/dev/null
# GGUF reader seeds (a miniature Llama export, every value type with alignment 64, metadata only)
mkdir -p tests/fuzz/corpus/gguf_read
seeds=$(mktemp)
g++ -std=c++20 -I include -I /usr/include/eigen3 tests/fuzz/make_gguf_seeds.cpp -o "$seeds"
"$seeds" tests/fuzz/corpus/gguf_read
rm -f "$seeds"
# Relay handshake seeds (tests/fuzz/relay_hello_fuzz.cpp): a client hello and a server reply per
# flag (unkeyed 0, keyed 1), each an 8-byte length prefix and its message, the proofs zero; a
# length prefix of 2^64-1.
mkdir -p tests/fuzz/corpus/relay_hello
/usr/bin/python3 - <<'PY'
import struct
d = 'tests/fuzz/corpus/relay_hello'
def frame(b): return struct.pack('<Q', len(b)) + b
for flag in (0, 1):
    hello = b'LARELAY1' + bytes([flag]) + bytes(range(32)) + b'd' * 64
    open(f'{d}/client_hello_flag{flag}', 'wb').write(frame(hello) + frame(bytes(32)))
    reply = b'LARELAY1' + bytes([flag]) + bytes(range(32, 64)) + bytes(32)
    open(f'{d}/server_reply_flag{flag}', 'wb').write(frame(reply) + frame(b'K'))
open(f'{d}/huge_length', 'wb').write(struct.pack('<Q', 2**64 - 1) + b'LARELAY1')
PY
# Safetensors and cache-map seeds (tests/fuzz/safetensors_fuzz.cpp): the library's writers
mkdir -p tests/fuzz/corpus/safetensors
seeds=$(mktemp)
g++ -std=c++20 -I include -I /usr/include/eigen3 tests/fuzz/make_file_seeds.cpp -o "$seeds"
"$seeds" tests/fuzz/corpus/safetensors
rm -f "$seeds"
# Task-file seeds (tests/fuzz/task_file_fuzz.cpp): the first lines of the example task files (a
# header, token-id and text tasks, several queries, covariates, a continuation)
mkdir -p tests/fuzz/corpus/task_file
head -n 3 examples/data/recall-text.jsonl > tests/fuzz/corpus/task_file/recall_text.jsonl
head -n 3 examples/python/organism-a-tasks.jsonl > tests/fuzz/corpus/task_file/organism_tokens.jsonl
head -n 3 tests/golden/real_models/story_tasks.jsonl > tests/fuzz/corpus/task_file/story_continuation.jsonl
# tokenizer.json seeds (tests/fuzz/tokenizer_json_fuzz.cpp): two miniature Llama-style BPE
# tokenizers, Llama-2's normalizer sequence with byte fallback and a Metaspace pre-tokenizer with
# "a b" merges, added and special tokens
mkdir -p tests/fuzz/corpus/tokenizer_json
/usr/bin/python3 - <<'PY'
import json
d = 'tests/fuzz/corpus/tokenizer_json'
vocab = {'<unk>': 0, '<s>': 1, '</s>': 2, '\u2581': 3, 'a': 4, 'b': 5, 'M': 6, 'x': 7,
         '\u2581a': 8, 'ab': 9, '\u2581ab': 10, 'Ma': 11, 'Max': 12, '<0x41>': 13, '<0xC3>': 14}
added = [{'id': 0, 'content': '<unk>', 'special': True, 'normalized': False, 'lstrip': False,
          'rstrip': False, 'single_word': False},
         {'id': 1, 'content': '<s>', 'special': True, 'normalized': False, 'lstrip': False,
          'rstrip': False, 'single_word': False},
         {'id': 2, 'content': '</s>', 'special': True, 'normalized': False, 'lstrip': False,
          'rstrip': False, 'single_word': False}]
llama2 = {'version': '1.0', 'added_tokens': added,
          'normalizer': {'type': 'Sequence', 'normalizers': [
              {'type': 'Prepend', 'prepend': '\u2581'},
              {'type': 'Replace', 'pattern': {'String': ' '}, 'content': '\u2581'}]},
          'pre_tokenizer': None,
          'post_processor': {'type': 'TemplateProcessing',
                             'single': [{'SpecialToken': {'id': '<s>', 'type_id': 0}},
                                        {'Sequence': {'id': 'A', 'type_id': 0}}],
                             'pair': [], 'special_tokens': {'<s>': {'id': '<s>', 'ids': [1], 'tokens': ['<s>']}}},
          'decoder': None,
          'model': {'type': 'BPE', 'dropout': None, 'unk_token': '<unk>', 'fuse_unk': True,
                    'byte_fallback': True, 'vocab': vocab,
                    'merges': ['\u2581 a', 'a b', '\u2581 ab', 'M a', 'Ma x']}}
open(f'{d}/llama2_style.json', 'w').write(json.dumps(llama2, ensure_ascii=False))
meta = dict(llama2)
meta['normalizer'] = None
meta['pre_tokenizer'] = {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'first',
                         'split': False}
meta['model'] = dict(llama2['model'], byte_fallback=False,
                     merges=[['\u2581', 'a'], ['a', 'b'], ['\u2581', 'ab']])
open(f'{d}/metaspace_pairs.json', 'w').write(json.dumps(meta, ensure_ascii=False))
PY
# schedule.json seeds (tests/fuzz/schedule_fuzz.cpp): an empty schedule and one that left cells out
mkdir -p tests/fuzz/corpus/schedule
printf '{"batch_items":0,"batches":0,"partial":[]}\n' > tests/fuzz/corpus/schedule/empty.json
printf '{"batch_items":2,"batches":3,"partial":[{"regime":"need","arm":"kv_full","ran":[[0,1],[2,3]]},{"regime":"no_need","arm":"text_full","ran":[]}]}\n' \
  > tests/fuzz/corpus/schedule/partial.json
# Table seeds (tests/fuzz/data_table_fuzz.cpp): the example trial table's first rows, quoting, JSONL
mkdir -p tests/fuzz/corpus/data_table
head -n 12 examples/data/relay_trial.csv > tests/fuzz/corpus/data_table/relay_trial.csv
printf 'a,"b ""q""",c\n1,2.5e3,"x,y"\n-0,nan,\n' > tests/fuzz/corpus/data_table/quoted.csv
printf '{"item": 1, "kv_relay": 0, "correct": true, "latency_ms": 313.7}\n{"item": 1, "kv_relay": 1, "correct": false, "latency_ms": 188.1}\n' \
  > tests/fuzz/corpus/data_table/rows.jsonl
# Relay-policy seeds (tests/fuzz/relay_policy_fuzz.cpp): the decision object (six rules: freshness,
# overlap, two maps, fingerprints, relay) of an audit whose verdict is "relay with conditions"
# (tests/cli/policy_cli_test.cpp's design), with the CLI given as the first argument
mkdir -p tests/fuzz/corpus/relay_policy
seed_audit=$(mktemp -d)
"$cli" audit --model models/organism-a --partner models/organism-b --items 200 --seeds 1 --margin 0.1 \
  --bootstrap 200 --arms no_comm,text_full,kv_full,cross_model,kv_drift_300,kv_mapped,kv_mapped_drift_300 \
  --no-need-fraction 0.25 --stale-fraction 0.15 --conflict-fraction 0.15 --out "$seed_audit/a" --quiet >/dev/null
/usr/bin/python3 - "$seed_audit/a/report.json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
json.dump({"decision": rep["decision"]}, open('tests/fuzz/corpus/relay_policy/relay_with_conditions.json', 'w'))
PY
rm -rf "$seed_audit"
