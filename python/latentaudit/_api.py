# SPDX-License-Identifier: MIT
"""The Python layer over the extension's estimators: argument checking, pandas alignment, defaults.

Every public estimator of ``latentaudit`` is the extension's function wrapped here once
(``wrap``): its signature is read from the pybind11 signature line, so the names, order and
defaults stay the C++ binding's; the wrapper

- refuses an unknown keyword, a missing argument or a value of the wrong type with a one-line
  ``TypeError`` naming the function and the argument (``level="0.9"``, ``replicates=-5``, ``None``
  or ``pd.NA`` inside an array) instead of pybind11's list of overloads;
- aligns pandas Series/DataFrames given for row-aligned arguments by their index (and refuses two
  whose labels differ, naming both);
- answers the degenerate data an audit produces (all-concordant pairs, constant differences) by
  default for the paired tests (``if_degenerate="flag"``; ``"raise"`` restores the exception).
"""

import ast as _ast
import difflib as _difflib
import inspect as _inspect
import math as _math
import numbers as _numbers

import numpy as _np

from . import _latentaudit

_REQUIRED = _inspect.Parameter.empty

# Functions whose two samples are independent (not row-aligned): their Series are not aligned.
_UNPAIRED = {"welch_t_test", "student_t_test", "two_proportion_test", "bootstrap_mean_difference"}
# Designs given by a `design` argument: paired only when design == "paired".
_DESIGN_PAIRED = {"equivalence_test", "non_inferiority_test"}
# Paired tests: degenerate data an audit produces (no discordant pair, constant differences) are
# answered with a flagged result by default.
_FLAG_BY_DEFAULT = {"mcnemar_test", "mcnemar_test_table", "paired_t_test", "bootstrap_paired_mean",
                    "paired_subgroup_effects"}
# Integer arguments that may be negative (all others are counts, sizes, seeds: >= 0).
_SIGNED_INTS = {"first", "last"}
# Scale arguments whose square the estimators form: bounded so that it stays finite.
_SIGMAS = {"sigma", "sigma_floor", "tau"}
_MAX_SIGMA = 1e154
# Worker threads: 0 (all cores) to this many.
_MAX_THREADS = 1024


def _split_top(text, sep=","):
    """Splits `text` at `sep` outside brackets and quotes."""
    out, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _default_of(text):
    if text == "nan":
        return float("nan")
    try:
        return _ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_signature(cfn):
    """[(name, annotation, default, keyword_only)] of a pybind11 function's first signature line."""
    line = cfn.__doc__.split("\n", 1)[0]
    inner = line[line.index("(") + 1:line.rindex(") ->")]
    params, kw_only = [], False
    for part in _split_top(inner):
        if part == "*":
            kw_only = True
            continue
        name, _, rest = part.partition(":")
        ann, eq, default = rest.partition("=")
        params.append((name.strip(), ann.strip(), _default_of(default.strip()) if eq else _REQUIRED, kw_only))
    return params


def _is_pandas(x):
    t = type(x)
    return t.__module__.startswith("pandas") and t.__name__ in ("Series", "DataFrame", "Index")


def _is_missing(v):
    if v is None:
        return True
    try:
        import pandas
        return v is pandas.NA or v is pandas.NaT
    except ImportError:
        return False


def _missing_error(fn, name, pos):
    return TypeError("%s: %s holds a missing value (None or pd.NA) at %s; the function takes numbers: drop or "
                     "fill the missing values first" % (fn, name, pos))


def _float_array(fn, name, value):
    """`value` as a float64 array, or a one-line TypeError naming `name`."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError("%s: %s must be an array of numbers, got %s" % (fn, name, _short(value)))
    if _is_pandas(value):
        na = value.isna()
        na = na.to_numpy() if hasattr(na, "to_numpy") else _np.asarray(na)
        if na.any() and value.dtype != _np.float64:
            first = _np.flatnonzero(na.ravel())[0]
            label = value.index[first] if hasattr(value, "index") and na.ndim == 1 else first
            raise _missing_error(fn, name, "label %r" % (label,))
        value = value.to_numpy(dtype=_np.float64, na_value=_np.nan) if value.dtype != object else value.to_numpy()
    if isinstance(value, _np.ndarray) and value.dtype.kind in "fiub":
        return _checked_array(fn, name, value)
    try:
        arr = _np.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError("%s: %s must be an array of numbers (%s)" % (fn, name, e)) from None
    if arr.dtype.kind == "c":
        raise TypeError("%s: %s must hold real numbers, got a complex array (dtype %s): pass its .real or abs()"
                        % (fn, name, arr.dtype))
    if arr.dtype.kind in "fiub":
        return _checked_array(fn, name, arr)
    flat = arr.ravel()
    for i, v in enumerate(flat):
        if _is_missing(v):
            raise _missing_error(fn, name, "position %d" % i)
        if not isinstance(v, (_numbers.Real, _np.bool_)):
            raise TypeError("%s: %s must hold numbers, got %s at position %d" % (fn, name, _short(v), i))
    return arr.astype(_np.float64)


# Broadcast views (a zero stride) are read in place by the checks; the extension needs each value once
# in memory, so one larger than this many elements is refused instead of materialised.
_MAX_BROADCAST = 1 << 24


def _checked_array(fn, name, arr):
    """`arr` (a real numeric ndarray) with its values checked: finite (NaN and inf refused, naming the
    argument and the first position), and a broadcast view no larger than _MAX_BROADCAST elements.
    Nothing is copied: min and max reduce the view where it lies."""
    if arr.size > _MAX_BROADCAST and any(st == 0 and n > 1 for st, n in zip(arr.strides, arr.shape)):
        raise _latentaudit.InvalidArgument(
            "%s: %s is a broadcast view (a zero stride) of %d elements, which the function would copy in full "
            "(%d bytes); pass at most %d broadcast elements, or the array itself"
            % (fn, name, arr.size, 8 * arr.size, _MAX_BROADCAST))
    if arr.dtype.kind == "f" and arr.size and not (_math.isfinite(arr.min()) and _math.isfinite(arr.max())):
        pos = _np.unravel_index(int(_np.argmax(~_np.isfinite(arr))), arr.shape)
        where = pos[0] if len(pos) == 1 else tuple(int(p) for p in pos)
        raise _latentaudit.InvalidArgument("%s: %s must be finite, got %r at position %s"
                                           % (fn, name, float(arr[pos]), where))
    return arr


def _float_array_missing(fn, name, value):
    """_float_array where NaN marks a missing value (allow_missing=True): only inf is refused."""
    arr = _np.asarray(value, dtype=_np.float64) if not isinstance(value, _np.ndarray) else value
    if arr.dtype.kind == "c":
        raise TypeError("%s: %s must hold real numbers, got a complex array (dtype %s)" % (fn, name, arr.dtype))
    if arr.dtype.kind == "f" and _np.isinf(arr).any():
        raise _latentaudit.InvalidArgument("%s: %s must be finite or NaN (missing), got inf" % (fn, name))
    return arr


def _short(v):
    r = repr(v)
    return "%s %s" % (type(v).__name__, r if len(r) <= 40 else r[:37] + "...")


def _check_scalar(fn, name, ann, value, nonfinite_default=False):
    """`value` checked against the pybind11 annotation `ann`; returns the value to pass. A float must be
    finite unless its default is not (NaN meaning "not given")."""
    optional = ann.startswith("Optional[")
    base = ann[9:-1] if optional else ann
    if value is None and optional:
        return None
    if base == "float":
        if isinstance(value, (bool, _np.bool_)) or not isinstance(value, _numbers.Real):
            raise TypeError("%s: %s must be a number, got %s" % (fn, name, _short(value)))
        value = float(value)
        if not _math.isfinite(value) and not nonfinite_default:
            raise _latentaudit.InvalidArgument("%s: %s must be finite, got %r" % (fn, name, value))
        if name in _SIGMAS and abs(value) > _MAX_SIGMA:
            raise _latentaudit.InvalidArgument("%s: %s must lie in [-1e154, 1e154] (its square finite), got %r"
                                               % (fn, name, value))
        return value
    if base == "int":
        if isinstance(value, (bool, _np.bool_)):
            raise TypeError("%s: %s must be an integer, got %s" % (fn, name, _short(value)))
        if isinstance(value, _numbers.Real) and not isinstance(value, _numbers.Integral):
            if not (_math.isfinite(value) and float(value).is_integer()):
                raise TypeError("%s: %s must be an integer, got %s" % (fn, name, _short(value)))
            value = int(value)
        if not isinstance(value, _numbers.Integral):
            raise TypeError("%s: %s must be an integer, got %s" % (fn, name, _short(value)))
        value = int(value)
        if value < 0 and name not in _SIGNED_INTS:
            raise TypeError("%s: %s must be a non-negative integer, got %d" % (fn, name, value))
        if name == "threads" and value > _MAX_THREADS:
            raise _latentaudit.InvalidArgument("%s: threads must lie in [0, %d] (0 = all cores), got %d"
                                               % (fn, _MAX_THREADS, value))
        return value
    if base == "bool":
        if not isinstance(value, (bool, _np.bool_)):
            raise TypeError("%s: %s must be True or False, got %s" % (fn, name, _short(value)))
        return bool(value)
    if base == "str":
        if not isinstance(value, str):
            raise TypeError("%s: %s must be a string, got %s" % (fn, name, _short(value)))
        return value
    return value


def _labels(fn, name, value):
    """Group labels (object arguments given as a sequence): a missing label is refused."""
    if value is None or isinstance(value, (str, bytes, dict)) or _is_pandas(value) and value.ndim != 1:
        return value
    if _is_pandas(value):
        na = value.isna().to_numpy()
        if na.any():
            raise _missing_error(fn, name, "label %r" % (value.index[_np.flatnonzero(na)[0]],))
        return value.to_numpy()
    if isinstance(value, (list, tuple)) or (isinstance(value, _np.ndarray) and value.dtype == object):
        for i, v in enumerate(value):
            if _is_missing(v):
                raise _missing_error(fn, name, "position %d" % i)
    return value


def _align(fn, values, names):
    """Aligns the pandas objects among `values` (a dict) by index; refuses differing labels."""
    pandas_args = [n for n in names if _is_pandas(values.get(n)) and hasattr(values[n], "index")]
    if len(pandas_args) < 2:
        return
    ref_name = pandas_args[0]
    ref = values[ref_name].index
    for n in pandas_args[1:]:
        idx = values[n].index
        if idx.equals(ref):
            continue
        if ref.is_unique and idx.is_unique and len(idx) == len(ref) and idx.isin(ref).all():
            values[n] = values[n].reindex(ref)  # the same labels in another order: aligned by label
            continue
        only_ref = ref.difference(idx) if ref.is_unique and idx.is_unique else ref
        only_n = idx.difference(ref) if ref.is_unique and idx.is_unique else idx
        raise _latentaudit.ShapeMismatch(
            "%s: %s and %s are pandas objects whose indexes differ (%d labels only in %s%s, %d only in %s%s); "
            "rows are paired by index label: align them first, e.g. %s, %s = %s.align(%s, join='inner')"
            % (fn, ref_name, n, len(only_ref), ref_name, _eg(only_ref), len(only_n), n, _eg(only_n),
               ref_name, n, ref_name, n))


def _eg(idx):
    return ", e.g. %r" % (idx[0],) if len(idx) else ""


def _degenerate(fn, value):
    if not isinstance(value, str):
        raise TypeError("%s: if_degenerate must be a string ('flag' or 'raise'), got %s" % (fn, _short(value)))
    if value not in ("flag", "raise", "throw_error"):
        raise _latentaudit.InvalidArgument("%s: if_degenerate must be one of flag, raise, throw_error, got '%s'"
                                           % (fn, value))
    return value


def wrap(name, doc=None):
    """The public function over the extension's function `name` (see the module's docstring)."""
    cfn = getattr(_latentaudit, name)
    params = parse_signature(cfn)
    sig_params = []
    for pname, ann, default, kw in params:
        if pname == "if_degenerate":
            default = "flag" if name in _FLAG_BY_DEFAULT else (None if name in _DESIGN_PAIRED else "raise")
        kind = _inspect.Parameter.KEYWORD_ONLY if kw else _inspect.Parameter.POSITIONAL_OR_KEYWORD
        sig_params.append(_inspect.Parameter(pname, kind, default=default))
    sig = _inspect.Signature(sig_params)
    anns = {p[0]: p[1] for p in params}
    order = [p[0] for p in params]
    array_like = [n for n in order if anns[n].startswith("numpy.ndarray") or anns[n] == "object"]
    nonfinite = {p[0] for p in params if isinstance(p[2], float) and not _math.isfinite(p[2])}

    def function(*args, **kwargs):
        for k in kwargs:
            if k not in anns:
                close = _difflib.get_close_matches(k, order, n=1)
                raise TypeError("%s() got an unexpected keyword argument '%s'%s; its arguments: %s"
                                % (name, k, " (did you mean '%s'?)" % close[0] if close else "", ", ".join(order)))
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError("%s(): %s; its signature: %s%s" % (name, e, name, sig)) from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        paired = name not in _UNPAIRED and (name not in _DESIGN_PAIRED or values.get("design") == "paired")
        if "if_degenerate" in values:
            if values["if_degenerate"] is None:
                values["if_degenerate"] = "flag" if values.get("design") == "paired" else "raise"
            values["if_degenerate"] = _degenerate(name, values["if_degenerate"])
            if values["if_degenerate"] == "raise":
                values["if_degenerate"] = "throw_error"
        if paired:
            _align(name, values, array_like)
        missing_ok = values.get("allow_missing") is True  # NaN marks a missing p-value there
        for n in order:
            ann, v = anns[n], values[n]
            if ann.startswith("numpy.ndarray") and (v is not None or ann.startswith("numpy.ndarray[numpy.float64]")):
                values[n] = _float_array(name, n, v) if not missing_ok else _float_array_missing(name, n, v)
            elif ann == "object":
                values[n] = _labels(name, n, v)
            else:
                values[n] = _check_scalar(name, n, ann, v, n in nonfinite)
        return cfn(**values)

    function.__name__ = function.__qualname__ = name
    function.__module__ = "latentaudit"
    function.__signature__ = sig
    function.__doc__ = doc or cfn.__doc__.split("\n", 1)[-1].strip()
    return function


# ---- reprs: the estimate and its interval first ---------------------------------------------------

def _num(x, sign=False):
    if isinstance(x, bool) or not isinstance(x, (float, int)):
        return repr(x)
    if isinstance(x, int):
        return "%d" % x
    if _math.isnan(x):
        return "nan"
    return ("%+.4g" if sign else "%.4g") % x


def _ci(est, lo, hi):
    return "%s [%s, %s]" % (_num(est, True), _num(lo, True), _num(hi, True))


def _status(obj, parts):
    f = obj._fields
    if "status" in f:
        if obj.status != "ok" and "status_reason" in f and obj.status_reason:
            parts.append("status=%s (%s)" % (obj.status, obj.status_reason))
        else:
            parts.append("status=%s" % obj.status)


def _scalars(obj, skip, parts):
    for n in obj._fields:
        if n in skip or n in ("status", "status_reason"):
            continue
        v = getattr(obj, n)
        if isinstance(v, (bool, int, float, str)):
            parts.append("%s=%s" % (n, _num(v) if not isinstance(v, str) else repr(v)))


def _effect_parts(e, label="estimate"):
    parts = ["%s=%s" % (label, _ci(e.estimate, e.ci_low, e.ci_high))]
    if e.level == e.level:
        parts[0] += " (%g%% CI)" % (100 * e.level)
    parts.append("p=%s" % _num(e.p_value))
    return parts


def result_repr(obj):
    """Repr of a result: the estimate and its interval first, then the test, counts and status."""
    name = type(obj).__name__
    f = obj._fields
    parts, skip = [], set()
    if name == "EffectEstimate":
        parts = _effect_parts(obj)
        parts.append("method=%r" % obj.method)
        if obj.n_pairs:
            parts.append("n_pairs=%d" % obj.n_pairs)
        else:
            parts.append("n_treated=%d, n_control=%d" % (obj.n_treated, obj.n_control))
        _status(obj, parts)
        return "%s(%s)" % (name, ", ".join(parts))
    if name == "McNemarResult":
        e, t = obj.effect, obj.table
        parts = ["difference=%s (%g%% CI)" % (_ci(e.estimate, e.ci_low, e.ci_high), 100 * e.level),
                 "exact p=%s" % _num(obj.exact_p_value), "discordant=%d" % obj.discordant,
                 "table=(both=%d, treated_only=%d, control_only=%d, neither=%d)"
                 % (t.both, t.treated_only, t.control_only, t.neither),
                 "chi2=%s" % _num(obj.chi2_statistic), "n_pairs=%d" % e.n_pairs]
        _status(obj, parts)
        return "%s(%s)" % (name, ", ".join(parts))
    if "effect" in f and type(obj.effect).__name__ == "EffectEstimate":
        parts = _effect_parts(obj.effect, "difference" if obj.effect.estimand != "late" else "estimate")
        skip = {"effect"}
        for flag in ("equivalent", "non_inferior"):
            if flag in f:
                parts.insert(0, "%s=%s" % (flag, getattr(obj, flag)))
                skip.add(flag)
    elif "estimate" in f and "low" in f and "high" in f:
        parts = ["estimate=%s" % _ci(obj.estimate, obj.low, obj.high)]
        skip = {"estimate", "low", "high"}
    elif "mean" in f and "ci_low" in f:
        parts = ["mean=%s" % _ci(obj.mean, obj.ci_low, obj.ci_high)]
        skip = {"mean", "ci_low", "ci_high"}
    _scalars(obj, skip, parts)
    _status(obj, parts)
    return "%s(%s)" % (name, ", ".join(parts))


def install_reprs():
    """Gives every result class of the extension `result_repr` as its repr."""
    for n in dir(_latentaudit):
        cls = getattr(_latentaudit, n)
        if isinstance(cls, type) and hasattr(cls, "_fields") and hasattr(cls, "to_dict"):
            cls.__repr__ = result_repr
