# SPDX-License-Identifier: MIT
"""latentaudit: causal audits of KV-cache relay between LLM agents, from Python.

The estimators, the record parser, the audit report and the KV policies are the C++ library's own
(the extension module ``_latentaudit`` is built from the same headers); this package adds the
Python conveniences around them: records as dicts or a pandas DataFrame, a validating
``RecordWriter``, and ``report()`` returning report.json as a dict. docs/python.md has the guide.

Errors: bad input raises ``latentaudit.InvalidArgument`` / ``ShapeMismatch`` / ``CorruptData`` /
``NumericalError`` (all ``ValueError`` subclasses and ``latentaudit.Error``) with the C++ message;
arguments of the wrong type raise ``TypeError``.
"""

import json as _json
import os as _os

from . import _latentaudit
from ._latentaudit import (  # noqa: F401  (the public API)
    AuthenticationFailed,
    CorruptData,
    EngineError,
    Error,
    IncompatibleModel,
    InvalidArgument,
    NumericalError,
    ShapeMismatch,
    __version__,
    kv,
)
from . import _api
from . import _docs
from ._relay_policy import RelayPolicy  # noqa: F401  (the serving policy's evaluator)
from ._relay_monitor import RelayMonitor  # noqa: F401  (the always-valid relay switch)

# The estimators: the extension's functions behind one checking layer (_api.wrap: arguments named in
# TypeErrors, pandas aligned by index, paired tests' degenerate data flagged by default), with the
# numpydoc docstrings of _docs.py.
_ESTIMATORS = ['aipw', 'betting_items_for_margin', 'bootstrap_mean_difference', 'bootstrap_paired_mean', 'bounded_mean_interval', 'bounded_mean_p_value', 'clustered_paired_difference', 'did_2x2_regression', 'did_twfe', 'equivalence_test', 'evalue_odds_ratio', 'evalue_risk_ratio', 'evalue_smd', 'event_study', 'ipw', 'mcnemar_power', 'multiple_test', 'mcnemar_sample_size', 'mcnemar_test', 'mcnemar_test_table', 'nearest_neighbor_matching', 'non_inferiority_test', 'ols', 'p_adjust', 'paired_subgroup_effects', 'rosenbaum_critical_gamma', 'rosenbaum_signed_rank', 'run_betting_sequential', 'run_sequential', 'paired_t_test', 'student_t_test', 'subgroup_effects', 't_test_mde', 't_test_power', 't_test_sample_size', 'two_proportion_test', 'two_stage_least_squares', 'wald_estimator', 'welch_t_test', 'wilson_interval']
for _name in _ESTIMATORS:
    globals()[_name] = _api.wrap(_name, _docs.function_doc(_name, getattr(_latentaudit, _name)))
del _name

# The result classes: reprs that lead with the estimate and its interval; numpydoc docstrings.
_api.install_reprs()
_docs.install_class_docs()
# latentaudit.kv: numpydoc docstrings on thin wrappers of the extension's functions (_kv_docs.py).
from . import _kv_docs  # noqa: E402
_kv_docs.install(kv)


__all__ = [
    "Error", "InvalidArgument", "ShapeMismatch", "CorruptData", "AuthenticationFailed", "NumericalError",
    "IncompatibleModel", "EngineError",
    "welch_t_test", "student_t_test", "paired_t_test", "mcnemar_test", "mcnemar_test_table",
    "two_proportion_test", "wilson_interval", "equivalence_test", "non_inferiority_test",
    "bootstrap_paired_mean", "bootstrap_mean_difference", "bounded_mean_interval", "bounded_mean_p_value",
    "clustered_paired_difference", "betting_items_for_margin", "nearest_neighbor_matching", "did_twfe",
    "did_2x2_regression", "ipw", "aipw", "wald_estimator", "two_stage_least_squares", "ols", "p_adjust",
    "t_test_power", "t_test_sample_size", "mcnemar_power", "mcnemar_sample_size", "event_study",
    "subgroup_effects", "paired_subgroup_effects", "multiple_test", "t_test_mde", "evalue_risk_ratio",
    "evalue_odds_ratio", "evalue_smd", "rosenbaum_signed_rank", "rosenbaum_critical_gamma",
    "run_sequential", "run_betting_sequential",
    "read_records", "RecordWriter", "report", "kv", "RelayPolicy", "RelayMonitor",
]


def read_records(path, as_frame=False):
    """Read trial records as ``latentaudit report --records PATH`` reads them.

    Every record is parsed and checked by the C++ reader (docs/records.md) and returned in its
    canonical form, every field present with its default filled in. The Python objects are built
    in C++ straight from the records (no JSON text round trip in Python); with ``as_frame`` the
    columns are built directly, one list per field.

    Parameters
    ----------
    path : str or os.PathLike
        A records.jsonl file, or an audit directory (its records.jsonl and records.<rank>.jsonl,
        ordered as executed when its design.json says how).
    as_frame : bool, default False
        Return a pandas DataFrame (one row per record) instead of a list of dicts.

    Returns
    -------
    list of dict or pandas.DataFrame
        The records, in the reader's order.

    Raises
    ------
    CorruptData
        A malformed record (a ValueError); the message names the file, line and field.
    ImportError
        ``as_frame=True`` without pandas.

    Examples
    --------
    >>> import latentaudit as la
    >>> with la.RecordWriter(tmp / "records.jsonl") as w:
    ...     _ = w.write({"item": 0, "seed": 0, "arm": "text_full", "correct": True})
    >>> recs = la.read_records(tmp / "records.jsonl")
    >>> recs[0]["arm"], recs[0]["correct"]
    ('text_full', True)
    """
    path = _os.fspath(path)
    if isinstance(path, bytes):
        path = _os.fsdecode(path)
    if not as_frame:
        return _latentaudit._read_records(path, False)
    try:
        import pandas
    except ImportError as e:  # pandas is optional (Debian's python3-pandas)
        raise ImportError("read_records(as_frame=True) needs pandas (Debian: python3-pandas)") from e
    return pandas.DataFrame(_latentaudit._read_records(path, True))


_FIELDS = frozenset(_latentaudit._record_field_names())


def _plain_value(v, where, field, nan):
    """A record value as plain JSON-able Python: numpy scalars and arrays converted, NaN refused
    (``nan="refuse"``) or read as absent (``nan="null"``: a DataFrame's missing cell)."""
    import numpy
    if v is None:
        return None
    if isinstance(v, (numpy.bool_, bool)):
        return bool(v)
    if isinstance(v, (numpy.integer, int)):
        return int(v)
    if isinstance(v, (numpy.floating, float)):
        v = float(v)
        if v != v or v in (float("inf"), float("-inf")):
            if nan == "null" and v != v:
                return None
            raise CorruptData("%s: field '%s' is %r; a record holds finite numbers (write None, JSON null, for "
                              "a metric that is absent)" % (where, field, v))
        return v
    if isinstance(v, numpy.ndarray):
        v = v.tolist()
    if isinstance(v, dict):
        return {str(k): _plain_value(x, where, "%s.%s" % (field, k), nan) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain_value(x, where, "%s[%d]" % (field, i), nan) for i, x in enumerate(v)]
    try:
        import pandas
        if v is pandas.NA or v is pandas.NaT:
            return None
    except ImportError:
        pass
    return v


def _plain_record(record, where, nan="refuse"):
    """`record` (a dict, or a row as a pandas Series) checked for unknown fields and made plain."""
    if hasattr(record, "to_dict") and not isinstance(record, dict):
        record = record.to_dict()
    if not isinstance(record, dict):
        raise TypeError("%s: a record must be a dict, got %s" % (where, type(record).__name__))
    out = {}
    for k, v in record.items():
        if k not in _FIELDS:
            # A misspelt field is refused; another field of the caller's own is kept out of the
            # record (the C++ reader reads it as nothing) with a warning.
            close = _latentaudit._closest_record_field(str(k))
            if close:
                raise CorruptData("%s: unknown field '%s' (did you mean '%s'?)" % (where, k, close))
            import warnings
            warnings.warn("%s: field '%s' is not a record field (docs/records.md); it is not written" % (where, k),
                          stacklevel=3)
        out[k] = _plain_value(v, where, k, nan)
    return out


def _records_of(records):
    """Records given to report(): a pandas DataFrame (one row each; NaN cells absent) or dicts."""
    if hasattr(records, "to_dict") and hasattr(records, "columns"):
        rows = records.to_dict("records")
        return [_plain_record(r, "records row %d" % i, nan="null") for i, r in enumerate(rows)]
    return [_plain_record(r, "records[%d]" % i) for i, r in enumerate(records)]


class RecordWriter:
    """Write trial records to a records.jsonl file, one JSON line each, validating every record.

    Each record (a dict with at least item, seed, arm, correct; docs/records.md) is checked before
    anything is written: a field name outside the record's fields (the C++ record_field_names, the
    properties of docs/record.schema.json) is refused with the closest known name (``regmie`` ->
    "did you mean 'regime'?"), numpy scalars (``np.int64``, ``np.float64``, ``np.bool_``) and arrays
    are taken as their Python values, NaN or infinity is refused naming the field (a field far from
    every known name is not written, with a warning), and the C++
    record parser (``record_from_json``) checks types. The record is written in the canonical form
    the C++ journal writes (``record_to_line``), so ``read_records`` and ``report`` read it back
    unchanged. As the journal: a (item, seed, arm) key is written once; each line is flushed when
    ``write`` returns (and fsync'ed when ``durable``); a file that already holds records is refused
    unless ``append=True``, which keeps them. The parent directory is created if missing.

    Parameters
    ----------
    path : str or os.PathLike
        The records file.
    append : bool, default False
        Keep the records the file already holds (their keys count as written).
    durable : bool, default False
        fsync the file after every record.

    Attributes
    ----------
    path : str
        The records file.
    written : int
        Records written by this writer.

    Raises
    ------
    InvalidArgument
        The file already holds records and ``append`` is False.

    Examples
    --------
    >>> import numpy as np
    >>> import latentaudit as la
    >>> with la.RecordWriter(tmp / "w.jsonl") as w:
    ...     rec = w.write({"item": np.int64(0), "seed": 0, "arm": "kv_full", "correct": np.bool_(True),
    ...                    "regime": "need"})
    >>> rec["item"], rec["correct"]
    (0, True)
    """

    def __init__(self, path, append=False, durable=False):
        self.path = _os.fspath(path)
        self.durable = durable
        self._keys = set()
        self._attempts = 0
        parent = _os.path.dirname(self.path)
        if parent:  # created if missing, as the journal's directory
            _os.makedirs(parent, exist_ok=True)
        exists = _os.path.exists(self.path) and _os.path.getsize(self.path) > 0
        if exists and not append:
            raise InvalidArgument(
                "RecordWriter: path '%s' already holds records: pass append=True, or choose a new file" % self.path)
        if exists:
            for r in _latentaudit._read_records(self.path, False):
                self._keys.add((r["item"], r["seed"], r["arm"]))
            with open(self.path, "rb") as f:  # a file not ending in a newline gets one first
                f.seek(-1, _os.SEEK_END)
                needs_newline = f.read(1) != b"\n"
        else:
            needs_newline = False
        self._file = open(self.path, "a", encoding="utf-8")
        if needs_newline:
            self._file.write("\n")
        self.written = 0

    def write(self, record):
        """Validate `record` and append it; return the canonical dict written.

        Parameters
        ----------
        record : dict
            One trial record (docs/records.md).

        Returns
        -------
        dict
            The record as written: every field, defaults filled in.

        Raises
        ------
        CorruptData
            An unknown field (with "did you mean"), a missing field, a value of the wrong type, NaN
            or infinity; the message names the record's number (1 for the first ``write`` call)
            and the field.
        InvalidArgument
            The record's (item, seed, arm) was already written, or the writer is closed.
        TypeError
            ``record`` is not a dict.
        """
        if self._file is None:
            raise InvalidArgument("RecordWriter.write: the writer is closed")
        self._attempts += 1
        where = "RecordWriter.write: record %d" % self._attempts
        text = _json.dumps(_plain_record(record, where), allow_nan=False)
        line, item, seed, arm = _latentaudit._canonical_record(text, where)
        key = (item, seed, arm)
        if key in self._keys:
            raise InvalidArgument("%s: key (item %d, seed %d, arm %s) is already written" % ((where,) + key))
        self._file.write(line + "\n")
        self._file.flush()
        if self.durable:
            _os.fsync(self._file.fileno())
        self._keys.add(key)
        self.written += 1
        return _json.loads(line)

    def close(self):
        """Closes the file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def report(records, out=None, margin=0.05, alpha=0.05, bootstrap=2000, seed=1, latency_slo_ms=None,
           prefill_tokens_per_s=None, link=None, threads=0):
    """The audit report of trial records: report.json's object as a dict.

    The same library call as ``latentaudit report`` (run_audit_report), with the CLI's options.

    Parameters
    ----------
    records : str, os.PathLike, iterable of dict, or pandas.DataFrame
        A path (records.jsonl or an audit directory, read as ``latentaudit report --records``
        reads it), record dicts, or a DataFrame of records (one row each, as
        ``read_records(as_frame=True)`` returns; a NaN cell is an absent value).
    out : str or os.PathLike, optional
        A directory: report.md, report.json and the SVG plots are written there as
        ``latentaudit report --out`` writes them. None: nothing is written.
    margin : float, default 0.05
        Equivalence and non-inferiority margin (--margin), in (0, 1).
    alpha : float, default 0.05
        Significance level (--alpha), in (0, 0.5).
    bootstrap : int, default 2000
        Bootstrap replicates (--bootstrap), in [100, 1e6].
    seed : int, default 1
        Seed of the bootstrap (--seed).
    latency_slo_ms : float, optional
        Latency objective in milliseconds.
    prefill_tokens_per_s : float, optional
        Receiver prefill throughput for the cost model.
    link : {None, 'measured'}
        'measured': the records' transfer times as measured.
    threads : int, default 0
        Worker threads (0: every core); the result does not depend on it.

    Returns
    -------
    dict
        report.json's object (decision, findings, tables).

    Raises
    ------
    InvalidArgument
        An option outside its range, or no records.
    CorruptData
        A malformed record; an unknown field is named with the closest known one.

    Examples
    --------
    >>> import latentaudit as la
    >>> rows = [{"item": i, "seed": 0, "arm": arm, "regime": "need", "correct": arm != "no_comm"}
    ...         for i in range(20) for arm in ("no_comm", "text_full", "kv_full")]
    >>> rep = la.report(rows, bootstrap=200)
    >>> 'decision' in rep and 'findings' in rep
    True
    """
    if not (0 < margin < 1):
        raise InvalidArgument("report: margin must lie in (0, 1), got %r" % (margin,))
    if not (0 < alpha < 0.5):
        raise InvalidArgument("report: alpha must lie in (0, 0.5), got %r" % (alpha,))
    if not (100 <= bootstrap <= 1000000):
        raise InvalidArgument("report: bootstrap must lie in [100, 1000000], got %r" % (bootstrap,))
    if latency_slo_ms is not None and not latency_slo_ms > 0:
        raise InvalidArgument("report: latency_slo_ms must be > 0")
    if prefill_tokens_per_s is not None and not prefill_tokens_per_s > 0:
        raise InvalidArgument("report: prefill_tokens_per_s must be > 0")
    if link not in (None, "measured"):
        raise InvalidArgument("report: link must be 'measured', got %r" % (link,))
    if isinstance(records, (str, bytes, _os.PathLike)):
        path, lines = _os.fspath(records), None
        if isinstance(path, bytes):
            path = _os.fsdecode(path)
    else:
        path, lines = None, [_json.dumps(r, allow_nan=False) for r in _records_of(records)]
    if out is not None:
        out = _os.fspath(out)
        _os.makedirs(out, exist_ok=True)
    text = _latentaudit._report(lines, path, out, float(margin), float(alpha), int(bootstrap), int(seed),
                                None if latency_slo_ms is None else latency_slo_ms * 1e-3, prefill_tokens_per_s,
                                link == "measured", int(threads))
    return _json.loads(text)
