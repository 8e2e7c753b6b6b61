#!/usr/bin/env bash
# Regenerates the seed corpora of the relay decoder fuzzer (with the CLI) and of the GGUF reader
# fuzzer (run from the repo root):
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
