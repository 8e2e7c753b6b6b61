# SPDX-License-Identifier: MIT
"""numpydoc docstrings of ``latentaudit.kv`` (the extension's KV policies on arrays).

pybind11's functions keep their one-line docstrings; ``install(kv)`` puts in their place thin Python
functions with the same behaviour, the extension's signature (``inspect.signature`` works) and the
documentation below: Parameters (every argument), Returns, Raises and Examples (run by
python/tests/test_docstrings.py).
"""

import functools as _functools
import inspect as _inspect

from . import _api

_BLOCK = {
    "k": "ndarray [layers][tokens][kv_heads][head_dim]\n    Keys: float32, float16, or bfloat16 (a ``bfloat16`` dtype, or "
         "16-bit integers holding bfloat16 bits with ``bf16=True``).",
    "v": "ndarray [layers][tokens][kv_heads][head_dim_v]\n    Values, same dtype and first three dimensions as ``k``.",
    "positions": "array_like of int, optional\n    Position of each token, integers in [0, 2^31 - 1]; default 0..T-1.",
    "pairing": "{'neox', 'norm', 'none'}, default 'neox'\n    RoPE pairing of the keys (HF rotate_half, adjacent "
               "pairs, no RoPE).",
    "theta": "float, default 10000.0\n    RoPE base.",
    "rotary_dims": "int, default 0\n    Rotated dimensions of each head (0: all).",
    "layers": "sequence of int, optional\n    Model layer id of each entry of the first axis; default 0..L-1.",
    "n_layers": "int, default 0\n    Layers of the model (0: the last layer id + 1).",
    "bf16": "bool, default False\n    Read 16-bit integer arrays as bfloat16 bits.",
}

_RAISES_BLOCK = ("ShapeMismatch\n    ``k`` and ``v`` are not 4-dimensional or differ in shape, or a per-token "
                 "argument has the wrong length.\nInvalidArgument\n    A dtype, RoPE choice, position or "
                 "option out of its range.\nTypeError\n    An argument of the wrong type.")

_EX_CACHE = (">>> import numpy as np\n>>> rng = np.random.default_rng(0)\n"
             ">>> k = rng.normal(0, 1, (2, 6, 1, 8)).astype(np.float32)\n"
             ">>> v = rng.normal(0, 1, (2, 6, 1, 8)).astype(np.float32)\n")

_DOCS = {
    "add_noise": (
        "Gaussian noise relative to the RMS, the noise arms' ``add_noise`` with their counter-based streams: a "
        "seed and item give the C++ arm's noise bit for bit, for any ``threads``.",
        {"sigma": "float\n    Noise level: relative to the RMS for the rms scales, in [0, 1e6]; the SNR in dB in "
                  "[-1000, 1000] with ``scale='snr_db'``.",
         "scale": "str, default 'rms_layer'\n    How sigma is read (rms_layer, rms_head, rms_channel, absolute, snr_db).",
         "part": "{'both', 'keys', 'values'}, default 'both'\n    Which part gets noise.",
         "layer_band": "tuple (first, last), optional\n    Model layers [first, last) that get noise, 0 <= first < "
                       "last (last None: to the end); default every layer.",
         "token_band": "tuple (first, last), optional\n    Tokens [first, last) that get noise, as layer_band.",
         "seed": "int, default 0\n    Stream seed.",
         "item": "int, default 0\n    Item index of the stream.",
         "threads": "int, default 1\n    Worker threads in [0, 1024] (0: all cores); the noise does not depend on it."},
        "tuple (k, v, record)\n    The noisy arrays (views of one new block) and a dict: sigma_requested, "
        "sigma_applied_rms, signal_rms, realized_snr_db, elements.",
        _EX_CACHE + ">>> k2, v2, rec = la.kv.add_noise(k, v, 0.1, seed=7)\n>>> rec['elements']\n192\n"
        ">>> bool(np.array_equal(la.kv.add_noise(k, v, 0.1, seed=7)[0], k2))\nTrue"),
    "quantize_roundtrip": (
        "Quantize-dequantize round trip: exactly what a receiver decodes from a quantized relay.",
        {"scheme": "{'int8', 'int4', 'fp8_e4m3', 'fp8_e5m2'}, default 'int8'\n    Quantization scheme.",
         "group_size": "int, default 32\n    Elements per scale group.",
         "keys_per_channel": "bool, default True\n    Keys scaled per channel (values per token).",
         "threads": "int, default 1\n    Worker threads in [0, 1024] (0: all cores)."},
        "tuple (k, v, record)\n    The decoded arrays and a dict: scheme, group_size, original_bytes, "
        "quantized_bytes, groups, max_abs_error, max_error_over_half_step, rms_error.",
        _EX_CACHE + ">>> k2, v2, rec = la.kv.quantize_roundtrip(k, v)\n>>> rec['scheme'], rec['max_error_over_half_step'] <= 1.0\n('int8', True)"),
    "zeroed_placebo": (
        "The zeroed placebo: a block of the same shape holding zeros.",
        {},
        "tuple (k, v)\n    Arrays of zeros in the input's dtype.",
        _EX_CACHE + ">>> z, _ = la.kv.zeroed_placebo(k, v)\n>>> float(abs(z).max())\n0.0"),
    "random_placebo": (
        "The moment-matched random placebo (per layer, part and head), the C++ arm's stream.",
        {"seed": "int, default 0\n    Stream seed.", "item": "int, default 0\n    Item index of the stream."},
        "tuple (k, v)\n    Random arrays with the input's moments.",
        _EX_CACHE + ">>> r, _ = la.kv.random_placebo(k, v, seed=1)\n>>> r.shape\n(2, 6, 1, 8)"),
    "random_derangement": (
        "The pairing placebo's assignment: item i receives the cache of item result[i], never its own.",
        {"n": "int\n    Number of items (>= 2).", "seed": "int\n    Stream seed."},
        "list of int\n    A permutation of 0..n-1 without fixed points.",
        ">>> d = la.kv.random_derangement(5, 3)\n>>> sorted(d), any(i == j for i, j in enumerate(d))\n([0, 1, 2, 3, 4], False)"),
    "set_positions": (
        "RoPE re-rotation: moves token t to new_positions[t], re-rotating its keys.",
        {"new_positions": "array_like of int\n    One position per token, integers in [0, 2^31 - 1] (checked "
                          "before conversion, never wrapped)."},
        "tuple (k, v, positions)\n    The re-rotated keys, the values, the new positions.",
        _EX_CACHE + ">>> _, _, p = la.kv.set_positions(k, v, new_positions=np.arange(10, 16))\n>>> list(p)\n[10, 11, 12, 13, 14, 15]"),
    "apply_position_mode": (
        "Places a relayed block: preserve its positions, rebase them contiguously, or append after the "
        "receiver's next position.",
        {"mode": "{'preserve', 'rebase_contiguous', 'append_after'}\n    The placement.",
         "first_position": "int, default 0\n    First position of a rebased block.",
         "receiver_next": "int, default 0\n    The receiver's next position (append_after)."},
        "tuple (k, v, positions)\n    The placed block.",
        _EX_CACHE + ">>> _, _, p = la.kv.apply_position_mode(k, v, mode='append_after', receiver_next=4)\n>>> list(p)\n[4, 5, 6, 7, 8, 9]"),
    "apply_selection": (
        "Keeps the selected layers (model ids) and tokens: one token list for every layer, or one list per "
        "selected layer (then absent tokens are masked).",
        {"select_layers": "sequence of int, optional\n    Model layer ids to keep; default every layer.",
         "tokens": "sequence of int, or sequence of sequences, optional\n    Tokens to keep; default every token."},
        "dict\n    k, v, positions, layers, token_mask ([layers][tokens] 0/1, None when every layer keeps every token).",
        _EX_CACHE + ">>> out = la.kv.apply_selection(k, v, select_layers=[1], tokens=[0, 5])\n>>> out['k'].shape, out['layers']\n((1, 2, 1, 8), [1])"),
    "tokens_sinks_window": (
        "StreamingLLM: the first ``sinks`` and the last ``window`` of n tokens.",
        {"n": "int\n    Tokens, in [0, 2^31 - 1].", "sinks": "int\n    Leading tokens kept, in [0, 2^40].",
         "window": "int\n    Trailing tokens kept, in [0, 2^40]."},
        "list of int\n    The kept token indices, ascending, each once.",
        ">>> la.kv.tokens_sinks_window(10, 2, 3)\n[0, 1, 7, 8, 9]"),
    "tokens_heavy_hitters": (
        "H2O: the ``recent`` last tokens plus the ``heavy`` tokens with the largest accumulated attention.",
        {"scores": "array_like of float\n    Attention mass each token received (finite, >= 0).",
         "heavy": "int\n    Heavy hitters kept.", "recent": "int\n    Recent tokens kept."},
        "list of int\n    The kept token indices, ascending.",
        ">>> la.kv.tokens_heavy_hitters([5.0, 0.1, 3.0, 0.2, 0.0], 2, 1)\n[0, 2, 4]"),
    "tokens_snapkv": (
        "SnapKV voting over the observation window's attention (summed over heads).",
        {"attention": "ndarray [window][n]\n    Attention of the window's queries over the n tokens.",
         "budget": "int\n    Tokens kept besides the window.", "kernel": "int, default 7\n    Pooling width."},
        "list of int\n    The kept token indices, ascending.",
        ">>> import numpy as np\n>>> a = np.zeros((2, 8)); a[:, 1] = 1.0\n>>> 1 in la.kv.tokens_snapkv(a, 1, kernel=1)\nTrue"),
    "pyramid_budgets": (
        "PyramidKV per-layer token budgets, decreasing with depth, averaging ``average``.",
        {"n_layers": "int\n    Layers.", "average": "int\n    Mean budget.",
         "beta": "float, default 20.0\n    Slope parameter."},
        "list of int\n    One budget per layer.",
        ">>> b = la.kv.pyramid_budgets(4, 10)\n>>> len(b), b[0] >= b[-1]\n(4, True)"),
    "pyramid_selection": (
        "PyramidKV: per layer the budgets[l] best-scored tokens plus the last ``window``.",
        {"scores": "ndarray [layers][n]\n    Token scores per layer.", "budgets": "list of int\n    Budget per layer.",
         "window": "int\n    Trailing tokens every layer keeps."},
        "tuple (layers, tokens)\n    The layers and one token list per layer.",
        ">>> import numpy as np\n>>> layers, tokens = la.kv.pyramid_selection(np.ones((2, 6)), [1, 1], 2)\n>>> layers, [len(t) for t in tokens]\n([0, 1], [3, 3])"),
    "kvcomm_selection": (
        "KVComm: every layer, those not selected keeping only the first ``sinks`` tokens.",
        {"n_layers": "int\n    Layers.", "n_tokens": "int\n    Tokens.",
         "selected": "list of int\n    Layers that keep every token.", "sinks": "int\n    Tokens the others keep."},
        "tuple (layers, tokens)\n    The layers and one token list per layer.",
        ">>> layers, tokens = la.kv.kvcomm_selection(2, 4, [1], 1)\n>>> tokens\n[[0], [0, 1, 2, 3]]"),
    "encode_relay": (
        "A KV relay frame (docs/wire-format.md), HMAC-SHA256-tagged when ``key`` is given.",
        {"key": "bytes, optional\n    HMAC key.", "quantize": "str, optional\n    Quantization scheme of the frame.",
         "group_size": "int, default 32\n    Elements per scale group (quantized frames).",
         "keys_per_channel": "bool, default True\n    Keys scaled per channel (quantized frames)."},
        "bytes\n    The frame.",
        _EX_CACHE + ">>> frame = la.kv.encode_relay(k, v, key=b'secret')\n>>> la.kv.decode_relay(frame, key=b'secret')['authenticated']\nTrue"),
    "decode_relay": (
        "Decodes a KV relay frame, its CRC and (with ``key``) its HMAC verified.",
        {"frame": "bytes\n    The frame.", "key": "bytes, optional\n    HMAC key.",
         "require_authentication": "bool, default False\n    Refuse a frame without a valid tag."},
        "dict\n    k, v (bfloat16 as uint16 bits), positions, has_tag, authenticated, crc, wire_bytes, dtype, "
        "layers, pairing, theta, rotary_dims, quantization.",
        _EX_CACHE + ">>> d = la.kv.decode_relay(la.kv.encode_relay(k, v))\n>>> d['dtype'], bool(np.array_equal(d['k'], k))\n('f32', True)"),
}


def _section(title, body):
    return "%s\n%s\n%s\n" % (title, "-" * len(title), body)


def _doc(name, cfn):
    summary, params, returns, example = _DOCS[name]
    lines = []
    for pname, _, _, _ in _api.parse_signature(cfn):
        text = params.get(pname, _BLOCK.get(pname))
        if text is None:
            raise KeyError("kv.%s: parameter %s undocumented" % (name, pname))
        lines.append("%s : %s" % (pname, text))
    return "\n".join([summary, "", _section("Parameters", "\n".join(lines)), _section("Returns", returns),
                      _section("Raises", _RAISES_BLOCK), _section("Examples", example)])


def _forwarder(cfn):
    def function(*args, **kwargs):
        return cfn(*args, **kwargs)
    return function


def install(kv):
    """Replaces each documented function of ``kv`` by a thin wrapper carrying its numpydoc docstring."""
    for name in _DOCS:
        cfn = getattr(kv, name)
        params = _api.parse_signature(cfn)
        sig = _inspect.Signature([
            _inspect.Parameter(p, _inspect.Parameter.KEYWORD_ONLY if kw else _inspect.Parameter.POSITIONAL_OR_KEYWORD,
                               default=_inspect.Parameter.empty if d is _api._REQUIRED else d)
            for p, _, d, kw in params])

        function = _forwarder(cfn)
        _functools.update_wrapper(function, cfn, assigned=("__name__", "__qualname__"))
        function.__module__ = "latentaudit.kv"
        function.__signature__ = sig
        function.__doc__ = _doc(name, cfn)
        setattr(kv, name, function)
