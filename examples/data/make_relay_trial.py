#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Simulates examples/data/relay_trial.csv, the bundled example trial (fixed seed, deterministic).

A paired design: 200 items, each answered twice by the receiving agent — once with the sender's
message relayed as text (kv_relay = 0) and once with the sender's KV cache relayed (kv_relay = 1).
Columns: item, kv_relay, correct (0/1), latency_ms (receiver time to first token), bytes (relay
payload size). The simulated truth: KV relay is about as accurate as text (+0.01 in the chance of
a correct answer) but faster (no re-prefill of the relayed text), and its payload is far larger
(K and V for every layer and token instead of UTF-8 text).

Run with Debian's interpreter:  /usr/bin/python3 examples/data/make_relay_trial.py
"""
import os
import random

SEED = 2026
ITEMS = 200
EFFECT = 0.01          # true difference in the chance of a correct answer (KV minus text)
SHARED = 0.9           # chance that both arms share the item's "luck" (makes the pairs correlated)
KV_BYTES_PER_TOKEN = 16 * 2 * 8 * 64 * 2  # layers x (K,V) x kv heads x head dim x fp16 bytes


def main():
    rng = random.Random(SEED)
    rows = []
    for item in range(1, ITEMS + 1):
        p = rng.betavariate(6.0, 3.0)          # item's chance of being answered correctly via text
        tokens = rng.randint(150, 1200)        # length of the relayed message, in tokens
        chars = int(tokens * rng.uniform(3.6, 4.4))
        base = rng.uniform(80.0, 140.0)        # receiver overhead for this item, ms
        u_text = rng.random()
        u_kv = u_text if rng.random() < SHARED else rng.random()
        arms = {
            0: dict(correct=int(u_text < p),
                    latency=base + 0.62 * tokens + rng.gauss(0.0, 25.0),
                    size=chars),
            1: dict(correct=int(u_kv < min(1.0, p + EFFECT)),
                    latency=base + 0.21 * tokens + rng.gauss(0.0, 25.0),
                    size=tokens * KV_BYTES_PER_TOKEN),
        }
        for z in (0, 1):
            a = arms[z]
            rows.append((item, z, a["correct"], round(max(a["latency"], 5.0), 1), a["size"]))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay_trial.csv")
    with open(out, "w", newline="") as f:
        f.write("item,kv_relay,correct,latency_ms,bytes\n")
        for r in rows:
            f.write("%d,%d,%d,%.1f,%d\n" % r)
    acc = [sum(r[2] for r in rows if r[1] == z) / ITEMS for z in (0, 1)]
    print("wrote %s: %d rows; accuracy text %.3f, kv %.3f (difference %+.3f)"
          % (out, len(rows), acc[0], acc[1], acc[1] - acc[0]))


if __name__ == "__main__":
    main()
