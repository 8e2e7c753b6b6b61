# SPDX-License-Identifier: MIT
# Issue 51 item 7: every argument bounded and typed as in the C++. Complex arrays are a TypeError
# naming the argument; NaN and inf are refused naming the argument and the position; positions are
# checked against position_t's range before any conversion (never wrapped); sigma, threads and the
# KV bands are bounded; a large broadcast view is refused before it is copied; tokens_sinks_window
# refuses an n beyond the positions at once.
import time

import numpy as np
import pytest

import latentaudit as la

kv = la.kv


def cache(layers=2, tokens=4, heads=1, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 1, (layers, tokens, heads, dim)).astype(np.float32),
            rng.normal(0, 1, (layers, tokens, heads, dim)).astype(np.float32))


def test_complex_arrays_are_a_type_error_naming_the_argument():
    with pytest.raises(TypeError, match="welch_t_test: treated must hold real numbers.*complex"):
        la.welch_t_test(np.array([1 + 2j, 2, 3]), [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="control must hold real numbers"):
        la.paired_t_test([1.0, 2.0, 3.0], [1j, 2.0, 3.0])


def test_nan_and_inf_are_refused_naming_the_argument_and_position():
    with pytest.raises(la.InvalidArgument, match=r"welch_t_test: treated must be finite, got nan at position 1"):
        la.welch_t_test([1.0, float("nan"), 2.0], [1.0, 2.0])
    with pytest.raises(la.InvalidArgument, match=r"control must be finite, got inf at position 2"):
        la.bootstrap_paired_mean([1.0, 2.0, 3.0], [1.0, 2.0, float("inf")])
    with pytest.raises(la.InvalidArgument, match=r"y must be finite, got nan at position \(1, 0\)"):
        la.ols(np.array([[1.0], [np.nan], [2.0]]), np.ones((3, 1)))
    with pytest.raises(la.InvalidArgument, match="level must be finite"):
        la.welch_t_test([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], level=float("nan"))


def test_sigma_and_threads_are_bounded():
    with pytest.raises(la.InvalidArgument, match=r"run_sequential: sigma must lie in \[-1e154, 1e154\]"):
        la.run_sequential([1.0, 2.0, 0.5], sigma=1e308)
    with pytest.raises(la.InvalidArgument, match=r"threads must lie in \[0, 1024\]"):
        la.bootstrap_paired_mean([1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 2.0], threads=10**6)
    k, v = cache()
    with pytest.raises(la.InvalidArgument, match=r"add_noise: sigma must be finite and lie in \[0, 1e6\]"):
        kv.add_noise(k, v, 1e308)
    with pytest.raises(la.InvalidArgument, match="add_noise: sigma must be finite"):
        kv.add_noise(k, v, float("nan"))
    with pytest.raises(la.InvalidArgument, match=r"add_noise: threads must lie in \[0, 1024\]"):
        kv.add_noise(k, v, 0.1, threads=10**6)
    with pytest.raises(la.InvalidArgument, match=r"quantize_roundtrip: threads must lie in \[0, 1024\]"):
        kv.quantize_roundtrip(k, v, threads=2000)
    k2, _, rec = kv.add_noise(k, v, 0.1, threads=1024)  # the bound itself is accepted
    assert rec["elements"] > 0 and not np.array_equal(k2, k)


def test_a_reversed_or_empty_band_is_refused():
    k, v = cache()
    with pytest.raises(la.InvalidArgument, match=r"add_noise: layer_band must be \(first, last\) with 0 <= first < last"):
        kv.add_noise(k, v, 0.1, layer_band=(1, 0))
    with pytest.raises(la.InvalidArgument, match="token_band must be"):
        kv.add_noise(k, v, 0.1, token_band=(2, 2))
    with pytest.raises(la.InvalidArgument, match="layer_band must be"):
        kv.add_noise(k, v, 0.1, layer_band=(-1, None))
    k2, _, _ = kv.add_noise(k, v, 0.5, layer_band=(1, None))
    assert np.array_equal(k2[0], k[0]) and not np.array_equal(k2[1], k[1])


def test_positions_beyond_int32_are_refused_not_wrapped():
    k, v = cache()
    with pytest.raises(la.InvalidArgument, match=r"set_positions: new_positions\[3\] must lie in \[0, 2\^31 - 1\], got 2147483648"):
        kv.set_positions(k, v, new_positions=np.array([0, 1, 2, 2**31]))
    with pytest.raises(la.InvalidArgument, match=r"new_positions\[0\] must lie in \[0, 2\^31 - 1\], got -1"):
        kv.set_positions(k, v, new_positions=[-1, 1, 2, 3])
    with pytest.raises(la.InvalidArgument, match=r"positions\[1\] must lie in"):
        kv.zeroed_placebo(k, v, positions=np.array([0, 2**40, 2, 3], dtype=np.uint64))
    with pytest.raises(TypeError, match="new_positions must hold integers, got dtype float64"):
        kv.set_positions(k, v, new_positions=np.array([0.0, 1.5, 2.0, 3.0]))
    _, _, p = kv.set_positions(k, v, new_positions=np.array([5, 6, 7, 2**31 - 1], dtype=np.int64))
    assert list(p) == [5, 6, 7, 2**31 - 1]


def test_tokens_sinks_window_refuses_a_huge_n_at_once():
    t0 = time.monotonic()
    with pytest.raises(la.InvalidArgument, match=r"tokens_sinks_window: n must lie in \[0, 2\^31 - 1\]"):
        kv.tokens_sinks_window(2**62, 1, 1)
    assert kv.tokens_sinks_window(10, 2, 3) == [0, 1, 7, 8, 9]
    assert kv.tokens_sinks_window(5, 4, 4) == [0, 1, 2, 3, 4]
    assert kv.tokens_sinks_window(2**31 - 1, 1, 1) == [0, 2**31 - 2]  # the tokens kept, not every token visited
    assert time.monotonic() - t0 < 5.0


def test_a_large_broadcast_view_is_refused_before_any_copy():
    big = np.broadcast_to(1.0, 2**28)  # 2 GiB as float64 if materialised
    with pytest.raises(la.InvalidArgument, match="treated is a broadcast view .* of 268435456 elements"):
        la.welch_t_test(big, [1.0, 2.0, 3.0])
    small = np.broadcast_to(np.array([1.0, 2.0]), (50, 2))[:, 0]  # strided and broadcast, small: used
    assert la.welch_t_test(np.concatenate([small, [2.0]]), [1.0, 2.0, 3.0]).n_treated == 51
    strided = np.arange(20.0)[::2]  # a plain strided view: converted as it is
    assert la.welch_t_test(strided, [1.0, 2.0, 3.0]).n_treated == 10


def test_strided_and_broadcast_kv_inputs_are_read_in_place():
    # K and V go into the block in one copy: a strided or broadcast input through numpy.copyto into
    # the block's layers (no intermediate contiguous copy), with the same result as a contiguous one
    k, v = cache(layers=3, tokens=5, heads=2, dim=8)
    k_strided = np.ascontiguousarray(k.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    assert not k_strided.flags.c_contiguous
    assert kv.encode_relay(k_strided, v) == kv.encode_relay(k, v)
    b = np.broadcast_to(np.float32(1.5), k.shape)
    d = kv.decode_relay(kv.encode_relay(b, b))
    assert d["k"].shape == k.shape and bool((d["k"] == 1.5).all()) and bool((d["v"] == 1.5).all())
