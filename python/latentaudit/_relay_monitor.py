# SPDX-License-Identifier: MIT
"""``latentaudit.RelayMonitor``: the always-valid relay switch (serve/relay_monitor.hpp), the C++
``relay_monitor`` bound in _latentaudit. This module checks the arguments' types (naming them);
the bounds, the bets, the thresholds, the event and the texts are the C++ monitor's own."""

import numbers as _numbers
import operator as _operator

from . import _latentaudit

_UINT64_MAX = 2 ** 64 - 1


def _real(fn, name, value):
    if isinstance(value, bool) or not isinstance(value, _numbers.Real):
        raise TypeError("%s: argument '%s' must be a real number, got %s" % (fn, name, type(value).__name__))
    return float(value)


def _integer(fn, name, value):
    if isinstance(value, bool):
        raise TypeError("%s: argument '%s' must be an int, got bool" % (fn, name))
    try:
        return _operator.index(value)
    except TypeError:
        raise TypeError("%s: argument '%s' must be an int, got %s" % (fn, name, type(value).__name__)) from None


def _flag(fn, name, value):
    # bool and numpy.bool_ (whose type name is bool_ or bool); not 0/1 or other truthy values
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
        return bool(value)
    raise TypeError("%s: argument '%s' must be a bool, got %s" % (fn, name, type(value).__name__))


def _choice(fn, name, value):
    if not isinstance(value, str):
        raise TypeError("%s: argument '%s' must be a str, got %s" % (fn, name, type(value).__name__))
    return value


def _request_id(fn, value, optional):
    if value is None and optional:
        return None
    rid = _integer(fn, "request_id", value)
    if not 0 <= rid <= _UINT64_MAX:
        raise _latentaudit.InvalidArgument("%s: request_id must lie in [0, 2**64 - 1], got %d" % (fn, rid))
    return rid


class RelayMonitor:
    """The always-valid relay switch: turns relay off once it has become worse than a fallback.

    The C++ library's ``relay_monitor`` (docs/serving.md "The monitor"). Each configured stream
    (fallback ``text`` or ``no_comm`` x endpoint ``correct`` or ``likelihood``, k streams in all)
    sees the differences x = relay - fallback in [-1, 1] of the sampled pairs and bets that relay
    is worse: capital prod(1 - lambda x) with predictable bets lambda in [0, max_bet] from the last
    ``window`` observations. Relay is on until one stream's capital reaches k/alpha; then it stays
    off and :meth:`off` says when and why. If at every observation relay is at least as good as
    each monitored fallback in conditional expectation, relay is ever turned off - at any time, over
    an unbounded stream - with probability at most alpha (Ville's inequality). Not thread-safe:
    hold one lock around :meth:`observe` when feeding it from several threads.

    Parameters
    ----------
    alpha : float, default 0.05
        The overall level: P(relay ever turned off | relay not worse) <= alpha; in (0, 1).
    window : int, default 20
        Observations behind each bet, >= 2.
    max_bet : float, default 0.5
        The largest bet, in (0, 0.5].
    vs_text : bool, default True
        Run the streams against text.
    vs_no_comm : bool, default True
        Run the streams against no communication.
    on_correct : bool, default True
        Run the correctness streams.
    on_likelihood : bool, default False
        Run the likelihood streams (pairs without both likelihoods skip them).

    Attributes
    ----------
    on : bool
        Whether relay is still on.
    pairs : int
        Pairs (or differences) observed.
    streams : int
        The number of configured streams k (1, 2 or 4).
    log_threshold : float
        log(k/alpha): where a stream's log capital turns relay off.
    alpha, window, max_bet, vs_text, vs_no_comm, on_correct, on_likelihood
        The options, as given.
    PROMETHEUS_CONTENT_TYPE : str
        The Content-Type of :meth:`prometheus_text` (the C++ ``prometheus_content_type``).

    Raises
    ------
    latentaudit.InvalidArgument
        alpha outside (0, 1) or not finite, window < 2, max_bet outside (0, 0.5], or no fallback
        or no endpoint enabled (the message names the argument).
    TypeError
        An argument of the wrong type (named).

    Examples
    --------
    >>> import latentaudit as la
    >>> m = la.RelayMonitor(alpha=0.05)
    >>> m.streams, m.on
    (2, True)
    >>> for i in range(200):  # relay keeps failing where text succeeds
    ...     _ = m.observe(False, True, request_id=1000 + i)
    >>> m.on
    False
    >>> ev = m.off()
    >>> ev["fallback"], ev["endpoint"], ev["pairs"], ev["request_id"]
    ('text', 'correct', 11, 1010)
    """

    PROMETHEUS_CONTENT_TYPE = _latentaudit._prometheus_content_type

    def __init__(self, alpha=0.05, window=20, max_bet=0.5, vs_text=True, vs_no_comm=True, on_correct=True,
                 on_likelihood=False):
        fn = "RelayMonitor"
        self.alpha = _real(fn, "alpha", alpha)
        self.window = _integer(fn, "window", window)
        self.max_bet = _real(fn, "max_bet", max_bet)
        self.vs_text = _flag(fn, "vs_text", vs_text)
        self.vs_no_comm = _flag(fn, "vs_no_comm", vs_no_comm)
        self.on_correct = _flag(fn, "on_correct", on_correct)
        self.on_likelihood = _flag(fn, "on_likelihood", on_likelihood)
        if not -2 ** 63 <= self.window < 2 ** 63:  # the binding's int64 (the C++ refuses window < 2)
            raise _latentaudit.InvalidArgument("RelayMonitor: window must lie in [2, 2**63 - 1], got %d"
                                               % self.window)
        self._m = _latentaudit._RelayMonitor(self.alpha, self.window,
                                             self.max_bet, self.vs_text, self.vs_no_comm, self.on_correct,
                                             self.on_likelihood)

    def observe(self, relay_correct, fallback_correct, fallback="text", relay_likelihood=None,
                fallback_likelihood=None, request_id=0):
        """Adds one sampled pair: the same request answered with relay and with one fallback.

        The pair steps its fallback's correctness stream (x = relay_correct - fallback_correct)
        and, when both likelihoods are given, its likelihood stream (x = relay_likelihood -
        fallback_likelihood), each where configured (``relay_monitor::observe``).

        Parameters
        ----------
        relay_correct : bool
            The relay answer was scored correct.
        fallback_correct : bool
            The fallback answer was scored correct.
        fallback : {'text', 'no_comm'}, default 'text'
            The fallback the request was also run on.
        relay_likelihood : float, optional
            Relay's bounded likelihood in [0, 1] (a continuation or answer probability), if measured.
        fallback_likelihood : float, optional
            The fallback's likelihood in [0, 1], if measured.
        request_id : int, default 0
            The stack's request id in [0, 2**64 - 1], named in the off event (0 as in the C++
            ``relay_pair`` when not given).

        Returns
        -------
        bool
            Whether relay is still on after this pair.

        Raises
        ------
        latentaudit.InvalidArgument
            A likelihood outside [0, 1] or not finite, an unknown fallback, or request_id out of
            range (the message names the argument).
        TypeError
            An argument of the wrong type (named).

        Examples
        --------
        >>> import latentaudit as la
        >>> m = la.RelayMonitor(on_likelihood=True)
        >>> m.observe(True, True, fallback="no_comm", relay_likelihood=0.9, fallback_likelihood=0.4,
        ...           request_id=7)
        True
        >>> m.pairs
        1
        """
        fn = "RelayMonitor.observe"
        rc = _flag(fn, "relay_correct", relay_correct)
        fc = _flag(fn, "fallback_correct", fallback_correct)
        fb = _choice(fn, "fallback", fallback)
        rl = None if relay_likelihood is None else _real(fn, "relay_likelihood", relay_likelihood)
        fl = None if fallback_likelihood is None else _real(fn, "fallback_likelihood", fallback_likelihood)
        rid = _request_id(fn, request_id, optional=False)
        self._m.observe(fb, rc, fc, rl, fl, rid)
        return self._m.on

    def observe_difference(self, x, fallback="text", endpoint="correct", request_id=None):
        """Adds one difference x = relay - fallback in [-1, 1] to one stream; counts one pair.

        For differences already aggregated (an item's mean over its seeds, as the report's replay
        feeds them): ``relay_monitor::observe_difference``.

        Parameters
        ----------
        x : float
            The difference, in [-1, 1].
        fallback : {'text', 'no_comm'}, default 'text'
            The stream's fallback.
        endpoint : {'correct', 'likelihood'}, default 'correct'
            The stream's endpoint.
        request_id : int, optional
            The request, named in the off event (None: the event has none).

        Returns
        -------
        bool
            Whether relay is still on after this difference.

        Raises
        ------
        latentaudit.InvalidArgument
            x outside [-1, 1] or not finite, a stream that is not configured, an unknown fallback
            or endpoint, or request_id out of range.
        TypeError
            An argument of the wrong type (named).

        Examples
        --------
        >>> import latentaudit as la
        >>> m = la.RelayMonitor(vs_no_comm=False)
        >>> m.observe_difference(-0.5)
        True
        >>> m.state()[("text", "correct")]["observations"]
        1
        """
        fn = "RelayMonitor.observe_difference"
        xv = _real(fn, "x", x)
        fb = _choice(fn, "fallback", fallback)
        ep = _choice(fn, "endpoint", endpoint)
        rid = _request_id(fn, request_id, optional=True)
        self._m.observe_difference(fb, ep, xv, rid)
        return self._m.on

    @property
    def on(self):
        """Whether relay is still on (False once a stream crossed its threshold)."""
        return self._m.on

    @property
    def pairs(self):
        """Pairs (or differences) observed."""
        return self._m.pairs

    @property
    def streams(self):
        """The number of configured streams k (1, 2 or 4)."""
        return self._m.streams

    @property
    def log_threshold(self):
        """log(k/alpha): where a stream's log capital turns relay off."""
        return self._m.log_threshold

    def off(self):
        """When and why the monitor turned relay off.

        Returns
        -------
        dict or None
            None while relay is on; else the first crossing: ``pairs`` (pairs observed when it
            turned off, 1-based), ``request_id`` (the pair's request, or None), ``fallback`` and
            ``endpoint`` (the stream that crossed), ``log_capital`` (its log capital then),
            ``log_threshold`` (log(k/alpha)) and ``reason`` (one sentence).

        Examples
        --------
        >>> import latentaudit as la
        >>> la.RelayMonitor().off() is None
        True
        """
        return self._m.off()

    def state(self):
        """Each configured stream's bettor.

        Returns
        -------
        dict
            Keyed by ``(fallback, endpoint)``; each value a dict with ``log_capital`` (log K_t, 0
            before any observation), ``next_bet`` (the bet the next observation meets, in [0,
            max_bet]) and ``observations`` (the stream's count). The capitals keep updating after
            relay turned off.

        Examples
        --------
        >>> import latentaudit as la
        >>> sorted(la.RelayMonitor(vs_no_comm=False, on_likelihood=True).state())
        [('text', 'correct'), ('text', 'likelihood')]
        """
        out = {}
        for s in self._m.state():
            out[(s.pop("fallback"), s.pop("endpoint"))] = s
        return out

    def guarantee(self):
        """The monitor's guarantee in words (``relay_monitor::guarantee``).

        Returns
        -------
        str
            One sentence: the level alpha, the k capitals, their bets and Ville's inequality.

        Examples
        --------
        >>> import latentaudit as la
        >>> "Ville" in la.RelayMonitor().guarantee()
        True
        """
        return self._m.guarantee()

    def prometheus_text(self):
        """The monitor's state in the Prometheus text exposition format 0.0.4.

        The C++ ``relay_metrics`` formatter fed by ``set_monitor`` (docs/serving.md "Metrics"):
        the ``latentaudit_relay_monitor_*`` families (on, pairs_total, log_capital by fallback and
        endpoint, log_threshold, off_at_pairs, off once off) after the relay_metrics counter
        families, which are empty here (no decisions, pairs or bytes counted). Serve it with
        Content-Type :attr:`PROMETHEUS_CONTENT_TYPE` (``text/plain; version=0.0.4; charset=utf-8``).

        Returns
        -------
        str
            The exposition text, ending in a newline.

        Examples
        --------
        >>> import latentaudit as la
        >>> "latentaudit_relay_monitor_on 1" in la.RelayMonitor().prometheus_text()
        True
        """
        return self._m.prometheus_text()

    def __repr__(self):
        return "RelayMonitor(alpha=%r, %d streams, %d pairs, %s)" % (
            self.alpha, self.streams, self.pairs, "on" if self.on else "off")
