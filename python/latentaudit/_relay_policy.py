# SPDX-License-Identifier: MIT
"""``latentaudit.RelayPolicy``: the audit's serving policy (report.json ``decision.rules``) evaluated
per request by the C++ library's one evaluator (serve/relay_policy.hpp), bound in _latentaudit."""

import json as _json
import os as _os

from . import _latentaudit


class RelayPolicy:
    """The audit's serving policy as rules, evaluated per request.

    The rules are report.json's ``decision.rules`` (docs/policy.schema.json): an ordered list of
    conditions over request features a serving stack knows before relaying, each with its action
    and the finding it rests on. :meth:`decide` gives the action of the first rule whose
    conditions all hold, and that rule. The evaluation is the C++ library's own
    (``relay_policy::decide``): requests cross to it as JSON and are parsed by the same strict
    parser as ``latentaudit policy --request``.

    Parameters
    ----------
    report : str or os.PathLike or dict
        report.json (a file, or an audit directory holding it), or the parsed report as a dict.

    Attributes
    ----------
    rules : list of dict
        The rules as report.json writes them (index, line, text, when, action, map, rests_on).
    verdict : str
        The decision's verdict the rules come from.
    relay_allowed : bool
        The decision's relay_allowed.

    Raises
    ------
    latentaudit.InvalidArgument
        A missing or malformed field, an unknown action, feature or operator (the message names
        the field, e.g. ``decision.rules[2].action``), or a file that cannot be read.
    latentaudit.CorruptData
        The file is not JSON or is over the 256 MiB limit.
    TypeError
        ``report`` is neither a path nor a dict.

    Examples
    --------
    >>> import latentaudit as la
    >>> report = {"decision": {"verdict": "relay", "relay_allowed": True, "rules": [
    ...     {"index": 0, "line": 1, "text": "relay only fresh caches", "action": "text", "map": None,
    ...      "when": [{"feature": "cache_age_versions", "op": ">=", "value": 1}],
    ...      "rests_on": {"check": "freshness", "finding": None, "estimate": None, "lo": None,
    ...                   "hi": None, "verdict": None}},
    ...     {"index": 1, "line": 0, "text": "relay A's cache to B", "action": "relay", "map": None,
    ...      "when": [], "rests_on": {"check": "value", "finding": None, "estimate": None,
    ...                               "lo": None, "hi": None, "verdict": None}}]}}
    >>> policy = la.RelayPolicy(report)
    >>> policy.decide({"cache_age_versions": 1})["action"]
    'text'
    >>> policy.decide({"cache_age_versions": 0})["rule"]
    1
    """

    def __init__(self, report):
        if isinstance(report, dict):
            self._p = _latentaudit._RelayPolicy.from_json_text(_json.dumps(report, allow_nan=False))
        elif isinstance(report, (str, _os.PathLike)):
            path = _os.fspath(report)
            if _os.path.isdir(path):
                path = _os.path.join(path, "report.json")
            self._p = _latentaudit._RelayPolicy.load(path)
        else:
            raise TypeError("RelayPolicy: argument 'report' must be a path or a dict, got %s"
                            % type(report).__name__)
        self.rules = _json.loads(self._p.rules_json())
        self.verdict = self._p.verdict
        self.relay_allowed = self._p.relay_allowed

    def decide(self, request):
        """The action for one request: the first rule whose conditions all hold.

        Parameters
        ----------
        request : dict
            The request's features: any of sender_fingerprint, receiver_fingerprint (str),
            cache_age_versions (int >= 0), prompt_overlap (float in [0, 1]), needs_document
            (bool), maps (list of map ids the stack holds), doc_tokens, own_tokens (numbers),
            link (str). A rule reached that reads an absent feature is an error.

        Returns
        -------
        dict
            ``action`` ("relay", "relay_through_map", "text" or "no_communication"), ``map`` (the
            map id, or None), ``rule`` (the index of the rule that fired, or None when none did:
            then the action is text), ``line`` (its line in decision.policy), ``text`` (that
            line), ``check`` and ``finding`` (what the rule rests on).

        Raises
        ------
        latentaudit.InvalidArgument
            An unknown feature, a value of the wrong kind or range, or a missing feature a rule
            reads (the message names ``request.<feature>``).
        TypeError
            ``request`` is not a dict.

        Examples
        --------
        >>> import latentaudit as la
        >>> la.RelayPolicy({"decision": {"rules": []}}).decide({})["action"]
        'text'
        """
        if not isinstance(request, dict):
            raise TypeError("RelayPolicy.decide: argument 'request' must be a dict, got %s"
                            % type(request).__name__)
        return _json.loads(self._p.decide_json(_json.dumps(request, allow_nan=False)))

    def __len__(self):
        return len(self.rules)

    def __repr__(self):
        return "RelayPolicy(%d rules, verdict %r, relay_allowed=%r)" % (
            len(self.rules), self.verdict, self.relay_allowed)
