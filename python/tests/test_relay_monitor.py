# SPDX-License-Identifier: MIT
# la.RelayMonitor (issue 54 item 2): the C++ relay_monitor bound, not re-implemented. Its capitals
# equal the documented bettor (prod(1 - lambda x), lambda = clip(-m/(v + m^2), 0, max_bet) over the
# last `window` observations) computed here independently; on a seeded stream without change
# (2000 pairs) relay stays on; on a seeded stream where relay turns worse after pair 500 it turns
# off after 500, naming the stream; bad arguments are refused naming them; the Prometheus text is
# relay_metrics'; the docstrings are numpydoc and their examples run. Streams as in docs/serving.md
# "The monitor's Monte Carlo" (numpy Generator, seeds 5421, 5422).
import doctest
import inspect
import math

import numpy as np
import pytest

import latentaudit as la

SECTIONS = ("Parameters\n----------", "Returns\n-------", "Raises\n------", "Examples\n--------")


def reference_log_capitals(xs, window=20, max_bet=0.5):
    """log K_t after each x, from the formula in serve/relay_monitor.hpp (the test's own code)."""
    out, log_k, recent = [], 0.0, []
    for x in xs:
        bet = 0.0
        if recent:
            m = sum(recent) / len(recent)
            if m < 0:
                v = sum((r - m) ** 2 for r in recent) / len(recent)
                bet = min(max(-m / (v + m * m), 0.0), max_bet)
        log_k += math.log1p(-bet * x)
        recent = (recent + [x])[-window:]
        out.append(log_k)
    return out


def stream(seed, n, change_at=None, stale_share=0.5):
    """Sampled pairs against text: relay exactly as good as text (the boundary of H0) until
    change_at, then each request stale with probability stale_share (relay correct w.p. 0.15)."""
    g = np.random.default_rng(seed)
    d = g.uniform(0.55, 0.95, n)
    relay_p = d.copy()
    if change_at is not None:
        stale = (np.arange(n) >= change_at) & (g.random(n) < stale_share)
        relay_p[stale] = 0.15
    relay_correct = g.random(n) < relay_p
    text_correct = g.random(n) < d
    relay_like = relay_p * g.uniform(0.8, 1.0, n)
    text_like = d * g.uniform(0.8, 1.0, n)
    return relay_correct, text_correct, relay_like, text_like


def monitor_of(seed, n, change_at=None):
    m = la.RelayMonitor(alpha=0.05, vs_no_comm=False, on_likelihood=True)  # k = 2, as the C++ MC
    rc, tc, rl, tl = stream(seed, n, change_at)
    for i in range(n):
        m.observe(bool(rc[i]), bool(tc[i]), relay_likelihood=float(rl[i]), fallback_likelihood=float(tl[i]),
                  request_id=10_000 + i)
    return m


def test_capitals_equal_the_documented_bettor():
    g = np.random.default_rng(5420)
    xs = [float(x) for x in np.concatenate([g.choice([-1.0, 0.0, 1.0], 150, p=[0.45, 0.3, 0.25]),
                                            g.uniform(-1, 0.6, 150)])]
    for window, max_bet in ((20, 0.5), (2, 0.25), (7, 0.1)):
        m = la.RelayMonitor(window=window, max_bet=max_bet, vs_no_comm=False)
        want = reference_log_capitals(xs, window, max_bet)
        for t, x in enumerate(xs):
            m.observe_difference(x)
            assert m.state()[("text", "correct")]["log_capital"] == pytest.approx(want[t], rel=1e-12, abs=1e-12)
        assert m.pairs == len(xs)
    # the C++ test's hand-computed capitals: bet 0, then 0.5 after x = -1
    m = la.RelayMonitor(vs_no_comm=False)
    m.observe_difference(-1.0)
    assert m.state()[("text", "correct")] == {"log_capital": 0.0, "next_bet": 0.5, "observations": 1}
    m.observe_difference(-1.0)
    m.observe_difference(1.0)
    assert m.state()[("text", "correct")]["log_capital"] == pytest.approx(math.log(1.5 * 0.5))


def test_streams_and_threshold():
    assert la.RelayMonitor().streams == 2
    m = la.RelayMonitor(alpha=0.1, on_likelihood=True)
    assert m.streams == 4 and m.log_threshold == pytest.approx(math.log(4 / 0.1))
    assert sorted(m.state()) == [("no_comm", "correct"), ("no_comm", "likelihood"), ("text", "correct"),
                                 ("text", "likelihood")]
    # a pair without both likelihoods steps only its fallback's correctness stream
    m.observe(True, False, fallback="no_comm", relay_likelihood=0.5)
    s = m.state()
    assert s[("no_comm", "correct")]["observations"] == 1 and s[("no_comm", "likelihood")]["observations"] == 0
    assert s[("text", "correct")]["observations"] == 0 and m.pairs == 1
    assert "Ville" in m.guarantee() and "probability <= 0.1" in m.guarantee()


def test_no_change_stream_stays_on():
    m = monitor_of(5421, 2000)
    assert m.on and m.off() is None and m.pairs == 2000
    assert all(v["log_capital"] < m.log_threshold for v in m.state().values())
    text = m.prometheus_text()
    assert "latentaudit_relay_monitor_on 1\n" in text
    assert "latentaudit_relay_monitor_pairs_total 2000\n" in text
    assert "latentaudit_relay_monitor_off_at_pairs 0\n" in text
    assert "latentaudit_relay_monitor_off{" not in text
    assert text.endswith("\n") and m.PROMETHEUS_CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


def test_change_point_turns_relay_off_after_it_naming_the_stream():
    m = monitor_of(5422, 1500, change_at=500)
    assert not m.on
    ev = m.off()
    assert 500 < ev["pairs"] < 700
    assert ev["request_id"] == 10_000 + ev["pairs"] - 1
    assert ev["fallback"] == "text" and ev["endpoint"] in ("correct", "likelihood")
    assert ev["log_capital"] >= ev["log_threshold"] == pytest.approx(math.log(2 / 0.05))
    assert ("relay turned off after %d sampled pairs (request %d): relay is worse than text on %s"
            % (ev["pairs"], ev["request_id"], ev["endpoint"])) in ev["reason"]
    assert m.pairs == 1500 and m.off() == ev  # sticky: the first crossing stays
    text = m.prometheus_text()
    assert "latentaudit_relay_monitor_on 0\n" in text
    assert "latentaudit_relay_monitor_off_at_pairs %d\n" % ev["pairs"] in text
    assert 'latentaudit_relay_monitor_off{fallback="text",endpoint="%s"} 1\n' % ev["endpoint"] in text
    for (f, e), v in m.state().items():
        assert 'latentaudit_relay_monitor_log_capital{fallback="%s",endpoint="%s"} ' % (f, e) in text
        assert v["observations"] == 1500


@pytest.mark.parametrize("kwargs, name", [
    ({"alpha": 0.0}, "alpha"), ({"alpha": 1.0}, "alpha"), ({"alpha": float("nan")}, "alpha"),
    ({"window": 1}, "window"), ({"window": -3}, "window"), ({"window": 2 ** 70}, "window"),
    ({"max_bet": 0.0}, "max_bet"), ({"max_bet": 0.51}, "max_bet"),
    ({"vs_text": False, "vs_no_comm": False}, "vs_text"), ({"on_correct": False}, "on_correct"),
])
def test_bad_options_are_refused_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name) as e:
        la.RelayMonitor(**kwargs)
    assert isinstance(e.value, la.InvalidArgument)


@pytest.mark.parametrize("kwargs, name", [
    ({"alpha": "0.05"}, "alpha"), ({"alpha": True}, "alpha"), ({"window": 20.0}, "window"),
    ({"window": True}, "window"), ({"max_bet": None}, "max_bet"), ({"vs_text": 1}, "vs_text"),
    ({"on_likelihood": "yes"}, "on_likelihood"),
])
def test_options_of_the_wrong_type_are_refused_naming_them(kwargs, name):
    with pytest.raises(TypeError, match="'%s'" % name):
        la.RelayMonitor(**kwargs)


def test_bad_observations_are_refused_naming_them():
    m = la.RelayMonitor(vs_no_comm=False, on_likelihood=True)
    for kwargs, name in (({"relay_likelihood": 1.5, "fallback_likelihood": 0.5}, "relay_likelihood"),
                         ({"relay_likelihood": 0.5, "fallback_likelihood": -0.1}, "fallback_likelihood"),
                         ({"relay_likelihood": float("inf")}, "relay_likelihood"),
                         ({"fallback": "recompute"}, "fallback"), ({"request_id": -1}, "request_id"),
                         ({"request_id": 2 ** 64}, "request_id")):
        with pytest.raises(la.InvalidArgument, match=name):
            m.observe(True, True, **kwargs)
    for args, kwargs, name in (((1, True), {}, "relay_correct"), ((True, None), {}, "fallback_correct"),
                               ((True, True), {"relay_likelihood": "0.5"}, "relay_likelihood"),
                               ((True, True), {"request_id": 1.0}, "request_id"),
                               ((True, True), {"fallback": 0}, "fallback")):
        with pytest.raises(TypeError, match="'%s'" % name):
            m.observe(*args, **kwargs)
    with pytest.raises(la.InvalidArgument, match="x"):
        m.observe_difference(1.5)
    with pytest.raises(la.InvalidArgument, match="no_comm, correct"):  # a stream not configured
        m.observe_difference(0.0, fallback="no_comm")
    with pytest.raises(la.InvalidArgument, match="endpoint"):
        m.observe_difference(0.0, endpoint="bleu")
    assert m.pairs == 0 and m.on  # nothing refused was counted
    m.observe(np.bool_(True), np.bool_(False), request_id=np.uint64(2 ** 64 - 1))
    assert m.pairs == 1


def test_docstrings_are_numpydoc_and_their_examples_run():
    cls = la.RelayMonitor
    doc = inspect.cleandoc(cls.__doc__)
    for s in ("Parameters\n----------", "Attributes\n----------", "Raises\n------", "Examples\n--------"):
        assert s in doc
    for p in inspect.signature(cls).parameters:
        assert "\n%s : " % p in doc, p
    for name in ("observe", "observe_difference", "off", "state", "guarantee", "prometheus_text"):
        fn = getattr(cls, name)
        fdoc = inspect.cleandoc(fn.__doc__)
        params = list(inspect.signature(fn).parameters)[1:]
        for s in SECTIONS if params else ("Returns\n-------", "Examples\n--------"):
            assert s in fdoc, (name, s)
        for p in params:
            assert "\n%s : " % p in fdoc, (name, p)
    for name in ("on", "pairs", "streams", "log_threshold"):
        assert getattr(cls, name).__doc__
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    ran = 0
    for test in finder.find(cls, "RelayMonitor", globs={"la": la}):
        runner.run(test)
        ran += len(test.examples)
    assert ran >= 15 and runner.failures == 0
