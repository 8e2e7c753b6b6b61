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
