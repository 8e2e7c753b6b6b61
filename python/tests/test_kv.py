# SPDX-License-Identifier: MIT
# The KV policies on arrays [layers][tokens][kv_heads][head_dim]: each checked against what the
# C++ arm guarantees (same streams for the same seed, error bounds, moments, RoPE phases, wire
# round trips and authentication) and, where the CLI is built, against `latentaudit kv inspect`.
import numpy as np
import pytest

import latentaudit as la

kv = la.kv


def cache(dtype=np.float32, layers=3, tokens=12, heads=2, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    k = rng.normal(0, 1.5, (layers, tokens, heads, dim)).astype(dtype)
    v = rng.normal(0.5, 0.7, (layers, tokens, heads, dim)).astype(dtype)
    return k, v


def test_noise_streams_are_the_seeds():
    k, v = cache()
    k1, v1, rec = kv.add_noise(k, v, 0.1, seed=7, item=3)
    k2, v2, _ = kv.add_noise(k, v, 0.1, seed=7, item=3, threads=4)
    assert np.array_equal(k1, k2) and np.array_equal(v1, v2)  # bit-identical for any thread count
    k3, _, _ = kv.add_noise(k, v, 0.1, seed=8, item=3)
    assert not np.array_equal(k1, k3)
    assert rec["elements"] == k.size + v.size
    assert rec["realized_snr_db"] == pytest.approx(20.0, abs=1.0)  # sigma 0.1 x RMS: 20 dB
    k0, v0, _ = kv.add_noise(k, v, 0.0, seed=7)
    assert np.array_equal(k0, k) and np.array_equal(v0, v)
    kk, vv, _ = kv.add_noise(k, v, 0.1, part="keys", seed=7)
    assert np.array_equal(vv, v) and not np.array_equal(kk, k)
    kb, _, rb = kv.add_noise(k, v, 0.1, seed=7, layer_band=(1, 2))
    assert np.array_equal(kb[0], k[0]) and np.array_equal(kb[2], k[2]) and not np.array_equal(kb[1], k[1])
    h = kv.add_noise(k.astype(np.float16), v.astype(np.float16), 0.1, seed=7)
    assert h[0].dtype == np.float16


def test_results_are_views_of_one_block_not_copies():
    # K and V of a result share the block the policy ran on (no copy out); the views stay valid
    # after every other reference is gone, and torch.from_numpy shares them as they are
    k, v = cache(dtype=np.float32, layers=4, tokens=10, heads=2, dim=8)
    k1, v1, _ = kv.add_noise(k, v, 0.1, seed=7)
    assert not k1.flags.owndata and not v1.flags.owndata
    assert k1.base is v1.base and np.may_share_memory(k1, v1)  # one block: each layer's K, then V
    assert not np.shares_memory(k1, k)  # the caller's arrays are never written
    assert k1.shape == k.shape and v1.shape == v.shape
    expect = k1.copy()
    del v1
    import gc

    gc.collect()
    assert np.array_equal(k1, expect)  # the block lives as long as one view does
    for f in (kv.quantize_roundtrip, kv.zeroed_placebo, kv.random_placebo):
        out = f(k, v)
        assert not out[0].flags.owndata and out[0].base is out[1].base
    sel = kv.apply_selection(k, v, select_layers=[0, 2])
    assert sel["k"].shape == (2, 10, 2, 8) and sel["k"].base is sel["v"].base
    try:
        import torch
    except ImportError:
        return
    t = torch.from_numpy(k1)
    assert t.data_ptr() == k1.__array_interface__["data"][0]
    assert torch.equal(t, torch.from_numpy(expect))


def test_quantize_round_trips():
    k, v = cache(tokens=64)
    k8, v8, r8 = kv.quantize_roundtrip(k, v, scheme="int8")
    assert r8["max_error_over_half_step"] <= 1.0 + 1e-6
    assert np.max(np.abs(k8 - k)) <= r8["max_abs_error"] + 1e-6
    assert r8["quantized_bytes"] < r8["original_bytes"] / 2
    k4, _, r4 = kv.quantize_roundtrip(k, v, scheme="int4", group_size=16)
    assert r4["rms_error"] > r8["rms_error"] and r4["quantized_bytes"] < r8["quantized_bytes"]
    kf, _, rf = kv.quantize_roundtrip(k, v, scheme="fp8_e4m3")
    assert rf["scheme"] == "fp8_e4m3" and 0 < rf["rms_error"] < 0.2
    a, b, _ = kv.quantize_roundtrip(k, v, scheme="int8", threads=3)
    assert np.array_equal(a, k8) and np.array_equal(b, v8)


def test_placebos():
    k, v = cache()
    zk, zv = kv.zeroed_placebo(k, v)
    assert not zk.any() and not zv.any() and zk.shape == k.shape
    rk, rv = kv.random_placebo(k, v, seed=1, item=2)
    assert np.array_equal(rk, kv.random_placebo(k, v, seed=1, item=2)[0])
    # moment-matched per (layer, part, head) over tokens and dims
    for real, fake in ((k, rk), (v, rv)):
        for layer in range(k.shape[0]):
            for h in range(k.shape[2]):
                assert fake[layer, :, h].mean() == pytest.approx(real[layer, :, h].mean(), abs=0.5)
                assert fake[layer, :, h].std() == pytest.approx(real[layer, :, h].std(), rel=0.4)
    d = kv.random_derangement(10, 4)
    assert sorted(d) == list(range(10)) and all(d[i] != i for i in range(10))
    with pytest.raises(ValueError):
        kv.random_derangement(1, 0)


def rope_neox(x, delta, theta=10000.0):
    """NumPy reference: rotate the last axis of x by delta (per token) in split-half pairs."""
    d = x.shape[-1]
    w = theta ** (-2.0 * np.arange(d // 2) / d)
    a = np.asarray(delta, dtype=np.float64)[None, :, None, None] * w
    x0, x1 = x[..., : d // 2].astype(np.float64), x[..., d // 2:].astype(np.float64)
    return np.concatenate([x0 * np.cos(a) - x1 * np.sin(a), x1 * np.cos(a) + x0 * np.sin(a)], axis=-1)


def test_rope_rerotation():
    k, v = cache()
    pos = np.arange(12, dtype=np.int32) + 5
    new = np.arange(12, dtype=np.int32) + 40
    k2, v2, p2 = kv.set_positions(k, v, positions=pos, new_positions=new)
    assert np.array_equal(p2, new) and np.array_equal(v2, v)
    assert np.allclose(k2, rope_neox(k, new - pos), atol=1e-5)
    k3, _, p3 = kv.set_positions(k2, v2, positions=p2, new_positions=pos)
    assert np.allclose(k3, k, atol=1e-5) and np.array_equal(p3, pos)
    k4, _, p4 = kv.apply_position_mode(k, v, positions=pos, mode="rebase_contiguous", first_position=0)
    assert np.array_equal(p4, np.arange(12)) and np.allclose(k4, rope_neox(k, -5 * np.ones(12)), atol=1e-5)
    with pytest.raises(la.ShapeMismatch):
        kv.set_positions(k, v, new_positions=np.arange(3))


def test_selection():
    k, v = cache(layers=4, tokens=10)
    pos = np.arange(10, dtype=np.int32) + 3
    keep = kv.tokens_sinks_window(10, 2, 3)
    assert keep == [0, 1, 7, 8, 9]
    s = kv.apply_selection(k, v, positions=pos, select_layers=[1, 3], tokens=keep)
    assert s["layers"] == [1, 3] and s["token_mask"] is None
    assert np.array_equal(s["k"], k[[1, 3]][:, keep]) and np.array_equal(s["v"], v[[1, 3]][:, keep])
    assert np.array_equal(s["positions"], pos[keep])  # positions travel with their tokens
    scores = np.arange(10, dtype=float)[::-1].copy()
    assert kv.tokens_heavy_hitters(scores, 2, 3) == [0, 1, 7, 8, 9]
    att = np.zeros((2, 10))
    att[:, 4] = 1.0
    assert 4 in kv.tokens_snapkv(att, 1, kernel=1) and 9 in kv.tokens_snapkv(att, 1, kernel=1)
    budgets = kv.pyramid_budgets(4, 4)
    assert sum(budgets) == 16 and budgets[0] >= budgets[-1]
    layers, toks = kv.pyramid_selection(np.tile(scores, (4, 1)), budgets, 2)
    r = kv.apply_selection(k, v, select_layers=layers, tokens=toks)
    assert r["token_mask"] is not None and r["token_mask"].shape == r["k"].shape[:2]
    for i, t in enumerate(toks):  # absent tokens are zero
        present = np.isin(np.arange(r["k"].shape[1]), [np.searchsorted(np.unique(np.concatenate(toks)), x) for x in t])
        assert not r["k"][i][~present].any()
    layers, toks = kv.kvcomm_selection(4, 10, [1, 2], 1)
    assert layers == [0, 1, 2, 3] and toks[0] == [0] and toks[1] == list(range(10))


def test_wire_round_trip_and_hmac():
    for dtype in (np.float32, np.float16):
        k, v = cache(dtype)
        pos = np.arange(12, dtype=np.int32)
        frame = kv.encode_relay(k, v, positions=pos)
        d = kv.decode_relay(frame)
        assert np.array_equal(d["k"], k) and np.array_equal(d["v"], v) and np.array_equal(d["positions"], pos)
        assert d["wire_bytes"] == len(frame) and not d["has_tag"]
    key = b"secret key"
    frame = kv.encode_relay(k, v, key=key)
    d = kv.decode_relay(frame, key=key, require_authentication=True)
    assert d["authenticated"]
    with pytest.raises(la.AuthenticationFailed):
        kv.decode_relay(frame, key=b"other", require_authentication=True)
    with pytest.raises(la.CorruptData):
        kv.decode_relay(kv.encode_relay(k, v), key=key, require_authentication=True)
    bad = bytearray(frame)
    bad[len(bad) // 2] ^= 1
    with pytest.raises(la.CorruptData):
        kv.decode_relay(bytes(bad), key=key)
    q = kv.decode_relay(kv.encode_relay(k, v, quantize="int8"))
    assert q["quantization"] == "int8"
    qk, qv, _ = kv.quantize_roundtrip(k.astype(np.float32), v.astype(np.float32), scheme="int8")
    assert q["k"].shape == k.shape
    bf = (k.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # bfloat16 bits
    d = kv.decode_relay(kv.encode_relay(bf, bf, bf16=True))
    assert d["dtype"] == "bf16" and np.array_equal(d["k"], bf)


def test_bad_input():
    k, v = cache()
    with pytest.raises(la.ShapeMismatch, match="4-dimensional"):
        kv.add_noise(k[0], v[0], 0.1)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        kv.add_noise(k.astype(np.float64), v.astype(np.float64), 0.1)
    with pytest.raises(ValueError, match="add_noise"):
        kv.add_noise(k, v, -1.0)
    with pytest.raises(ValueError, match="scale must be one of"):
        kv.add_noise(k, v, 0.1, scale="loud")


def test_cli_reads_python_frames(cli, tmp_path):
    k, v = cache(np.float16)
    key = b"0123456789abcdef"
    (tmp_path / "key").write_bytes(key)
    (tmp_path / "key").chmod(0o600)  # a relay key is the user's own, mode 0600 (the CLI refuses 0644)
    (tmp_path / "relay.bin").write_bytes(kv.encode_relay(k, v, key=key, quantize="int4", group_size=16))
    j = cli("kv", "inspect", tmp_path / "relay.bin", "--key-file", tmp_path / "key", "--require-auth")
    assert j["authenticated"] and j["quantization"] == "int4" and j["tokens"] == 12 and j["dtype"] == "f16"
    # and the module reads the CLI's frames
    cli("kv", "make-example", "--out", tmp_path / "ex.bin", "--dtype", "f32", "--tokens", 5)
    d = kv.decode_relay((tmp_path / "ex.bin").read_bytes())
    assert d["k"].shape[1] == 5 and d["dtype"] == "f32"


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_quantize_roundtrip_equals_the_cli_relay(cli, tmp_path, dtype):
    # `kv make-example` writes the same cache plain and quantized (group size 16): the module's
    # round trip of the plain one must equal what the C++ receiver decodes from the quantized one.
    cli("kv", "make-example", "--out", tmp_path / "plain.bin", "--dtype", dtype, "--seed", 5, "--tokens", 40)
    plain = kv.decode_relay((tmp_path / "plain.bin").read_bytes())
    for scheme in ("int8", "int4", "fp8_e4m3", "fp8_e5m2"):
        cli("kv", "make-example", "--out", tmp_path / "q.bin", "--dtype", dtype, "--seed", 5, "--tokens", 40,
            "--quantize", scheme)
        q = kv.decode_relay((tmp_path / "q.bin").read_bytes())
        k, v, _ = kv.quantize_roundtrip(plain["k"], plain["v"], scheme=scheme, group_size=16, bf16=dtype == "bf16")
        assert q["quantization"] == scheme
        assert np.array_equal(k.view(np.uint8), q["k"].view(np.uint8)), scheme
        assert np.array_equal(v.view(np.uint8), q["v"].view(np.uint8)), scheme
