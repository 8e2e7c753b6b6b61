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
    aipw,
    betting_items_for_margin,
    bootstrap_mean_difference,
    bootstrap_paired_mean,
    bounded_mean_interval,
    bounded_mean_p_value,
    clustered_paired_difference,
    did_2x2_regression,
    did_twfe,
    equivalence_test,
    evalue_odds_ratio,
    evalue_risk_ratio,
    evalue_smd,
    event_study,
    ipw,
    kv,
    mcnemar_power,
    multiple_test,
    mcnemar_sample_size,
    mcnemar_test,
    mcnemar_test_table,
    nearest_neighbor_matching,
    non_inferiority_test,
    ols,
    p_adjust,
    paired_subgroup_effects,
    rosenbaum_critical_gamma,
    rosenbaum_signed_rank,
    run_betting_sequential,
    run_sequential,
    paired_t_test,
    student_t_test,
    subgroup_effects,
    t_test_mde,
    t_test_power,
    t_test_sample_size,
    two_proportion_test,
    two_stage_least_squares,
    wald_estimator,
    welch_t_test,
    wilson_interval,
)

# Deprecated: the former name of EngineError (one word for one concept: engine).
BackendError = EngineError

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
    "read_records", "RecordWriter", "report", "kv",
]


def _frame(rows):
    try:
        import pandas
    except ImportError as e:  # pandas is optional (Debian's python3-pandas)
        raise ImportError("read_records(as_frame=True) needs pandas (Debian: python3-pandas)") from e
    return pandas.DataFrame.from_records(rows)


def read_records(path, as_frame=False):
    """Reads trial records as ``latentaudit report --records PATH`` does.

    ``path``: a records.jsonl file, or an audit directory (its records.jsonl and
    records.<rank>.jsonl, ordered as executed when its design.json says how). Every record is
    parsed and checked by the C++ reader (docs/records.md) and returned in its canonical form: a
    dict with every field of the record, defaults filled in. ``as_frame=True`` returns a pandas
    DataFrame (one row per record) instead of a list of dicts.

    Raises CorruptData (a ValueError) naming the file, line and field of a malformed record.
    """
    rows = [_json.loads(line) for line in _latentaudit._read_record_lines(_os.fspath(path))]
    return _frame(rows) if as_frame else rows


class RecordWriter:
    """Writes trial records to a records.jsonl file, one JSON line each, validating every record.

    Each record (a dict with at least item, seed, arm, correct; docs/records.md) is parsed by the
    C++ record parser (``record_from_json``) before anything is written, and written in the canonical
    form the C++ journal writes (``record_to_line``), so ``read_records`` and ``report`` read it
    back unchanged. As the journal: a (item, seed, arm) key is written once; each line is flushed
    when ``write`` returns (and fsync'ed when ``durable``); a file that already holds records is
    refused unless ``append=True``, which keeps them (their keys count as written). The parent
    directory is created if missing.

        with latentaudit.RecordWriter("out/records.jsonl") as w:
            w.write({"item": 0, "seed": 0, "arm": "text_full", "correct": True})
    """

    def __init__(self, path, append=False, durable=False):
        self.path = _os.fspath(path)
        self.durable = durable
        self._keys = set()
        parent = _os.path.dirname(self.path)
        if parent:  # created if missing, as the journal's directory
            _os.makedirs(parent, exist_ok=True)
        exists = _os.path.exists(self.path) and _os.path.getsize(self.path) > 0
        if exists and not append:
            raise InvalidArgument(
                "RecordWriter: path '%s' already holds records: pass append=True, or choose a new file" % self.path)
        if exists:
            for line in _latentaudit._read_record_lines(self.path):
                r = _json.loads(line)
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
        """Validates ``record`` (a dict) and appends it; returns the canonical dict written.

        Raises CorruptData (a ValueError) if a field is missing or has the wrong type (the
        message names the field), InvalidArgument if its key was already written or the writer is
        closed, TypeError if the record is not JSON-serializable.
        """
        if self._file is None:
            raise InvalidArgument("RecordWriter.write: the writer is closed")
        text = _json.dumps(record, allow_nan=False)
        line, item, seed, arm = _latentaudit._canonical_record(text, "record %d" % self.written)
        key = (item, seed, arm)
        if key in self._keys:
            raise InvalidArgument("RecordWriter.write: key (item %d, seed %d, arm %s) is already written" % key)
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

    ``records``: a path (records.jsonl or an audit directory, read as ``latentaudit report
    --records`` reads it) or an iterable of record dicts. With ``out`` (a directory), report.md,
    report.json and the SVG plots are written there exactly as ``latentaudit report --out`` writes
    them (the same library call, run_audit_report). The options are the CLI's: ``margin`` (--margin,
    in (0, 1)), ``alpha`` (--alpha, in (0, 0.5)), ``bootstrap`` (--bootstrap, in [100, 1e6]),
    ``seed`` (--seed), ``latency_slo_ms``, ``prefill_tokens_per_s``, ``link="measured"``. The
    result does not depend on ``threads`` (0: every core).
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
        path, lines = None, [_json.dumps(r, allow_nan=False) for r in records]
    if out is not None:
        out = _os.fspath(out)
        _os.makedirs(out, exist_ok=True)
    text = _latentaudit._report(lines, path, out, float(margin), float(alpha), int(bootstrap), int(seed),
                                None if latency_slo_ms is None else latency_slo_ms * 1e-3, prefill_tokens_per_s,
                                link == "measured", int(threads))
    return _json.loads(text)
