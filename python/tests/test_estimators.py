# SPDX-License-Identifier: MIT
# The estimators from Python: R's values (tests/golden) at the C++ tests' tolerances, the C++
# results through the CLI bit for bit, result objects, and errors.
import math
import os

import numpy as np
import pytest

import latentaudit as la
from conftest import golden_arms, golden_rows


def close(a, b, rtol, atol=0.0):
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)


T_TESTS = {"welch": la.welch_t_test, "student": la.student_t_test, "paired": la.paired_t_test}


def test_t_tests_equal_r_t_test_to_1e10():
    data = golden_arms("t_tests/data.csv")
    rows = golden_rows("t_tests/r_results.csv")
    assert len(rows) == 207
    for r in rows:
        arms = data[r["dataset"]]
        e = T_TESTS[r["test"]](np.array(arms["treated"]), arms["control"], level=float(r["level"]),
                               null_value=float(r["mu"]))
        assert e.status == "ok"
        half = (float(r["ci_high"]) - float(r["ci_low"])) / 2
        for f in ("estimate", "std_error", "df", "statistic", "p_value"):
            assert close(getattr(e, f), float(r[f]), 1e-10, 1e-300), (r, f)
        for f in ("ci_low", "ci_high"):  # an endpoint's error is rtol times the half-width
            assert close(getattr(e, f), float(r[f]), 1e-10, 1e-10 * half), (r, f)


def test_tost_equals_r():
    data = golden_arms("equivalence/data.csv")
    for r in golden_rows("equivalence/r_tost.csv"):
        arms = data[r["dataset"]]
        res = la.equivalence_test(arms["treated"], arms["control"], low=float(r["low"]), high=float(r["high"]),
                                  design=r["design"], alpha=float(r["alpha"]))
        half = (float(r["ci_high"]) - float(r["ci_low"])) / 2
        assert close(res.effect.estimate, float(r["estimate"]), 1e-10, 1e-300)
        assert close(res.effect.std_error, float(r["std_error"]), 1e-10)
        assert close(res.effect.ci_low, float(r["ci_low"]), 1e-10, 1e-10 * half)
        assert close(res.effect.ci_high, float(r["ci_high"]), 1e-10, 1e-10 * half)
        assert close(res.p_value, float(r["p_value"]), 1e-9, 1e-300)
        assert res.equivalent == (r["equivalent"] == "1")


def test_non_inferiority_equals_r():
    data = golden_arms("equivalence/data.csv")
    for r in golden_rows("equivalence/r_non_inferiority.csv"):
        arms = data[r["dataset"]]
        res = la.non_inferiority_test(arms["treated"], arms["control"], float(r["margin"]), design=r["design"],
                                      alpha=float(r["alpha"]), better=r["better"])
        assert close(res.statistic, float(r["statistic"]), 1e-10, 1e-12)
        assert close(res.p_value, float(r["p_value"]), 1e-9, 1e-300)
        assert res.non_inferior == (r["non_inferior"] == "1")


def test_mcnemar_equals_r():
    for r in golden_rows("paired_binary/paired_r.csv"):
        if r["case"].startswith("data:") or int(r["b"]) + int(r["c"]) == 0:
            continue
        res = la.mcnemar_test_table(int(r["a"]), int(r["b"]), int(r["c"]), int(r["d"]), level=float(r["level"]))
        assert close(res.exact_p_value, float(r["exact_p"]), 1e-10, 1e-300), r
        assert close(res.effect.estimate, float(r["estimate"]), 1e-12, 1e-15), r
        assert close(res.effect.ci_low, float(r["ci_low"]), 1e-9, 1e-12), r
        assert close(res.effect.ci_high, float(r["ci_high"]), 1e-9, 1e-12), r
    # arrays give the table
    res = la.mcnemar_test([1, 1, 0, 1, 0, 1], [0, 1, 0, 0, 1, 0])
    assert (res.table.both, res.table.treated_only, res.table.control_only, res.table.neither) == (1, 3, 1, 1)


def test_ols_equals_r_lm_with_sandwich_covariances():
    rows = golden_rows("regression/data.csv")
    cols = {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}
    x = {"x1": cols["x1"], "x2": cols["x2"], "x3": cols["x3"]}
    terms = {}
    for r in golden_rows("regression/r_terms.csv"):
        terms.setdefault(r["fit"], []).append(r)
    assert len(terms) == 22
    for fit, rs in terms.items():
        kind, rest = fit.split("_", 1)  # e.g. wls_cr1_g_t: wls, covariance cr1_g, reference t
        cov, dist = rest.rsplit("_", 1)
        dist = {"t": "t_residual", "normal": "normal", "tcluster": "t_cluster"}[dist]
        kw = dict(covariance=cov, distribution=dist)
        if cov.startswith("cr"):
            kw["clusters"] = cols["cl"].astype(int)
        if kind == "wls":
            kw["weights"] = cols["w"]
        res = la.ols(cols["y"], x, **kw)
        assert res.names == ["(Intercept)", "x1", "x2", "x3"]
        for r in rs:
            t = res.term(r["term"])
            assert close(t.estimate, float(r["estimate"]), 1e-10), (fit, r["term"])
            assert close(t.std_error, float(r["se"]), 1e-9), (fit, r["term"])
            assert close(t.p_value, float(r["p"]), 1e-7, 1e-300), (fit, r["term"])


def test_p_adjust_equals_r():
    p = {}
    for r in golden_rows("multiplicity/p_values.csv"):
        p.setdefault(r["case"], []).append(float(r["p"]) if r["p"] != "NA" else float("nan"))
    checked = 0
    for r in golden_rows("multiplicity/p_adjust.csv"):
        if r["adjusted"] == "NA" or any(math.isnan(v) for v in p[r["case"]]):
            continue
        adj = la.p_adjust(p[r["case"]], r["method"], family_size=int(r["family_size"]))
        assert close(adj[int(r["index"])], float(r["adjusted"]), 1e-12, 1e-300), r
        checked += 1
    assert checked > 50


def test_power_equals_r_power_t_test():
    design = {"one.sample": "one_sample", "paired": "paired", "two.sample": "two_sample"}
    sides = {"two.sided": "two_sided", "one.sided": "one_sided"}
    for r in golden_rows("power/t_power.csv"):
        kw = dict(design=design[r["type"]], sides=sides[r["alternative"]], strict=r["strict"] == "1",
                  alpha=float(r["alpha"]), sd=float(r["sd"]))
        assert close(la.t_test_power(float(r["n"]), float(r["delta"]), **kw), float(r["power"]), 1e-8, 1e-12)
        if r["n_solved"] in ("NA", ""):  # one-sided with delta < 0: no solution
            continue
        ss = la.t_test_sample_size(float(r["delta"]), float(r["target_power"]), **kw)
        assert close(ss.n, float(r["n_solved"]), 1e-8) and ss.n_required == int(r["n_required"])


def test_did_twfe_equals_r():
    rows = golden_rows("did/panel.csv")
    y = np.array([float(r["y"]) for r in rows])
    d = np.array([float(r["d"]) for r in rows])
    unit = np.array([int(r["unit"]) for r in rows])
    time = np.array([int(r["time"]) for r in rows])
    dist = {"t": "t_residual", "tcluster": "t_cluster", "normal": "normal"}
    for r in golden_rows("did/r_twfe.csv"):
        _, cov, count, ref = r["fit"].split("_")
        e = la.did_twfe(y, d, unit, time, covariance=cov, fe_count=count, distribution=dist[ref]).effect
        half = (float(r["ci_high"]) - float(r["ci_low"])) / 2
        assert close(e.estimate, float(r["estimate"]), 1e-10), r["fit"]
        assert close(e.std_error, float(r["se"]), 1e-9), r["fit"]
        assert close(e.ci_low, float(r["ci_low"]), 1e-9, 1e-9 * half), r["fit"]
    ev = la.event_study(y, d, unit, time)
    assert len(ev.relative_times) == len(ev.coefficients) and -1 not in ev.relative_times
    assert 0 <= ev.pre_trend.p_value <= 1


def test_subgroups_equal_r():
    rows = golden_rows("heterogeneity/unpaired.csv")
    y = np.array([float(r["y"]) for r in rows])
    t = np.array([float(r["t"]) for r in rows])
    for analysis, groups in (("str", [r["gs"] for r in rows]), ("int", np.array([int(r["gi"]) for r in rows]))):
        res = la.subgroup_effects(y, t, groups)
        want = [r for r in golden_rows("heterogeneity/subgroups.csv") if r["analysis"] == analysis]
        assert [g.label for g in res.groups] == [r["group"] for r in want]
        for g, r in zip(res.groups, want):
            assert close(g.effect.estimate, float(r["estimate"]), 1e-10)
            assert close(g.p_holm, float(r["p_holm"]), 1e-8, 1e-300)
    inter = [r for r in golden_rows("heterogeneity/interaction.csv") if r["analysis"] == "str" and r["type"] == "HC3"]
    assert close(la.subgroup_effects(y, t, [r["gs"] for r in rows]).interaction.chi_square, float(inter[0]["chisq"]),
                 1e-9)


def test_mcnemar_power_equals_r():
    for r in golden_rows("power/mcnemar.csv"):
        kw = dict(alpha=float(r["alpha"]), sides="two_sided" if r["sides"] == "2" else "one_sided")
        p10, p01 = float(r["p10"]), float(r["p01"])
        assert close(la.mcnemar_power(float(r["n"]), p10, p01, **kw), float(r["connor_power"]), 1e-8)
        ss = la.mcnemar_sample_size(p10, p01, float(r["target_power"]), **kw)
        assert close(ss.n, float(r["connor_n"]), 1e-8) and ss.n_required == int(r["connor_required"])


def test_results_have_fields_and_to_dict():
    e = la.welch_t_test([1.0, 2.0, 3.5, 4.0], [0.5, 1.0, 1.5, 3.0])
    d = e.to_dict()
    assert list(d) == list(type(e)._fields)
    for f in ("method", "estimand", "estimate", "std_error", "ci_low", "ci_high", "level", "df", "statistic",
              "p_value", "n_treated", "n_control", "n_pairs", "status"):
        assert d[f] == getattr(e, f)
    assert d["method"] == "welch" and d["n_treated"] == 4
    assert "welch" in repr(e)
    eq = la.equivalence_test([1.0, 2.0, 3.5, 4.0], [0.5, 1.0, 1.5, 3.0], margin=2.0)
    assert eq.to_dict()["effect"]["method"] == "welch"


def test_bootstrap_is_deterministic_and_keeps_replicates():
    rng = np.random.default_rng(3)
    t, c = rng.normal(0.3, 1, 60), rng.normal(0, 1, 60)
    a = la.bootstrap_paired_mean(t, c, replicates=999, seed=11, keep_replicates=True)
    b = la.bootstrap_paired_mean(t, c, replicates=999, seed=11, threads=2)
    assert a.effect.ci_low == b.effect.ci_low and a.effect.ci_high == b.effect.ci_high
    assert a.replicates.shape == (999,) and b.replicates.shape == (0,)
    assert a.effect.estimate == pytest.approx(np.mean(t - c), rel=1e-14)
    assert np.std(a.replicates, ddof=1) == pytest.approx(a.effect.std_error, rel=1e-12)
    m = la.bootstrap_mean_difference(t, c, replicates=499, seed=2, method="percentile")
    assert m.effect.ci_low < m.effect.estimate < m.effect.ci_high


def test_betting_intervals():
    x = np.random.default_rng(1).permutation(np.r_[np.ones(40), np.zeros(10)])  # order independent of values
    iv = la.bounded_mean_interval(x, 0.0, 1.0)
    assert iv.low < 0.8 < iv.high and iv.n == 50 and iv.estimate == pytest.approx(0.8, rel=1e-15)
    p = la.bounded_mean_p_value(x, 0.0, 1.0, 0.5, alpha=0.05)
    assert p < 0.05
    cluster = np.repeat(np.random.default_rng(2).permutation(30), 3)
    treated = np.ones(90)
    control = (cluster % 2).astype(float)
    e = la.clustered_paired_difference(cluster, treated, control)
    assert e.method == "betting_items" and e.ci_low < e.estimate < e.ci_high and e.df == 30 and e.n_pairs == 90
    assert la.betting_items_for_margin(0.05) == 68
    # horizon: tuned for the planned 100 observations, the interval on the first 50 is a confidence
    # sequence (wider than the fixed-sample one); at horizon = n it is the fixed-sample interval
    seq = la.bounded_mean_interval(x, 0.0, 1.0, horizon=100)
    assert seq.low <= iv.low and seq.high >= iv.high and seq.high - seq.low > iv.high - iv.low
    same = la.bounded_mean_interval(x, 0.0, 1.0, horizon=50)
    assert (same.low, same.high) == (iv.low, iv.high)
    assert la.bounded_mean_p_value(x, 0.0, 1.0, 0.5, alpha=0.05, horizon=100) >= p
    with pytest.raises(ValueError, match="horizon 49 is below the sample size 50"):
        la.bounded_mean_interval(x, 0.0, 1.0, horizon=49)


def test_matching_did_weighting_iv_run():
    rng = np.random.default_rng(5)
    n = 200
    x = rng.normal(size=(n, 2))
    t = (rng.random(n) < 1 / (1 + np.exp(-x[:, 0]))).astype(float)
    y = 1.0 * t + x @ [0.5, -0.2] + rng.normal(size=n)
    m = la.nearest_neighbor_matching(y, t, x, estimand="ate")
    assert m.effect.estimand == "ate" and len(m.balance) == 2 and m.to_dict()["balance"][0]["name"]
    w = la.aipw(y, t, x)
    assert abs(w.effect.estimate - 1.0) < 0.5 and w.propensity_model.coefficients.shape == (3,)
    assert la.ipw(y, t, x).effect.method
    units = np.repeat(np.arange(20), 4)
    time = np.tile(np.arange(4), 20)
    d = ((units < 10) & (time >= 2)).astype(float)
    yy = units * 0.1 + time * 0.2 + 0.7 * d + rng.normal(0, 0.1, 80)
    did = la.did_twfe(yy, d, units, time)
    assert abs(did.effect.estimate - 0.7) < 0.2 and did.fit.n == 80
    z = rng.integers(0, 2, n).astype(float)
    dd = np.clip(z + (rng.random(n) < 0.2), 0, 1)
    yv = 2 * dd + rng.normal(size=n)
    iv = la.two_stage_least_squares(yv, None, {"d": dd}, {"z": z})
    assert iv.fit.names == ["(Intercept)", "d"] and abs(iv.fit.term("d").estimate - 2) < 0.6
    assert iv.first_stages[0].endogenous == "d"


def test_bad_input_raises_value_error_with_the_cpp_message():
    with pytest.raises(ValueError, match=r"^welch_t_test: .*treated"):
        la.welch_t_test([1.0], [1.0, 2.0])
    with pytest.raises(la.ShapeMismatch, match="paired_t_test"):
        la.paired_t_test([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(la.InvalidArgument):
        la.welch_t_test([1.0, 2.0, 3.0], [1.0, 2.0], level=1.5)
    with pytest.raises(la.NumericalError, match="constant"):
        la.welch_t_test([1.0, 1.0], [2.0, 2.0])
    assert la.welch_t_test([1.0, 1.0], [2.0, 2.0], if_degenerate="flag").status == "degenerate"
    with pytest.raises(ValueError, match="if_degenerate must be one of"):
        la.welch_t_test([1.0, 2.0], [1.0, 2.0], if_degenerate="ignore")
    with pytest.raises(ValueError, match="1-dimensional"):
        la.welch_t_test(np.ones((2, 2)), [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        la.welch_t_test([1.0, float("nan"), 2.0], [1.0, 2.0])
    with pytest.raises(TypeError):
        la.welch_t_test(["a", "b"], [1.0, 2.0])
    with pytest.raises(TypeError):
        la.welch_t_test([1.0, 2.0])
    assert issubclass(la.ShapeMismatch, la.InvalidArgument) and issubclass(la.InvalidArgument, la.Error)


def _csv(tmp_path, t, c):
    p = tmp_path / "pairs.csv"
    p.write_text("t,c\n" + "".join("%r,%r\n" % (float(a), float(b)) for a, b in zip(t, c)))
    return p


def test_cli_estimates_equal_the_module_bit_for_bit(cli, tmp_path):
    rng = np.random.default_rng(9)
    t, c = rng.normal(0.2, 1, 40), rng.normal(0, 1, 40)
    data = _csv(tmp_path, t, c)
    j = cli("estimate", "bootstrap", "--data", data, "--outcome-treated", "t", "--outcome-control", "c",
            "--replicates", 999, "--seed", 7)
    b = la.bootstrap_paired_mean(t, c, replicates=999, seed=7)
    for f in ("estimate", "std_error", "ci_low", "ci_high"):
        assert j[f] == getattr(b.effect, f), f
    assert j["acceleration"] == b.acceleration
    j = cli("estimate", "paired", "--data", data, "--outcome-treated", "t", "--outcome-control", "c")
    e = la.paired_t_test(t, c)
    for f in ("estimate", "std_error", "ci_low", "ci_high", "p_value", "df", "statistic"):
        assert j[f] == getattr(e, f), f


def test_sensitivity_equals_r():
    def num(x):
        return float("nan") if x in ("NA", "") else float(x)

    for r in golden_rows("sensitivity/evalue.csv"):
        est, lo, hi, true = num(r["est"]), num(r["lo"]), num(r["hi"]), num(r["true"])
        if r["kind"] == "rr":
            e = la.evalue_risk_ratio(est, lo, hi, true_value=true)
        elif r["kind"] == "or":
            e = la.evalue_odds_ratio(est, lo, hi, rare_outcome=r["rare"] in ("1", "TRUE"), true_value=true)
        else:  # smd: est is d, lo its standard error
            e = la.evalue_smd(est, lo, true_value=true)
        assert close(e.point, float(r["point"]), 1e-10), r
        assert (math.isnan(e.ci) and r["ci"] == "NA") or close(e.ci, float(r["ci"]), 1e-10), r
    data = {}
    for name in ("pairs", "small_pairs"):
        rows = golden_rows("sensitivity/%s.csv" % name)
        data[name] = ([float(r["treated"]) for r in rows], [float(r["control"]) for r in rows])
    for r in golden_rows("sensitivity/rosenbaum.csv"):
        t, c = data[r["data"]]
        b = la.rosenbaum_signed_rank(t, c, float(r["gamma"]), exact=r["method"] in ("exact", "wilcox.test_exact"))
        assert b.statistic == float(r["T"]) and close(b.p_upper, float(r["p_up"]), 1e-9, 1e-15), r
    for r in golden_rows("sensitivity/critical.csv"):
        t, c = data[r["data"]]
        g = la.rosenbaum_critical_gamma(t, c, alpha=float(r["alpha"]), exact=r["method"] == "exact")
        assert close(g.gamma, float(r["gamma"]), 1e-6), r


def test_multiple_test_and_mde():
    p = [0.001, 0.02, 0.03, 0.5]
    res = la.multiple_test(p, method="holm", alpha=0.05)
    assert res.method == "holm" and res.adjusted_p_values == la.p_adjust(p, "holm")
    assert res.rejected == [True, False, False, False] and res.n_rejected == 1
    for r in golden_rows("power/t_power.csv"):
        if r["delta_solved"] in ("NA", ""):
            continue
        design = {"one.sample": "one_sample", "paired": "paired", "two.sample": "two_sample"}[r["type"]]
        mde = la.t_test_mde(float(r["n"]), float(r["target_power"]), design=design,
                            sides="two_sided" if r["alternative"] == "two.sided" else "one_sided",
                            strict=r["strict"] == "1", alpha=float(r["alpha"]), sd=float(r["sd"]))
        assert close(mde, float(r["delta_solved"]), 1e-8)


def test_sequential_monitors():
    rng = np.random.default_rng(4)
    x = rng.normal(0.5, 1.0, 200)
    r = la.run_sequential(x, sigma=1.0, tau=0.3)
    n, s2, t2, m = len(x), 1.0, 0.09, x.mean()  # the mixture likelihood ratio in closed form
    lr = math.sqrt(s2 / (s2 + n * t2)) * math.exp(n * n * t2 * m * m / (2 * s2 * (s2 + n * t2)))
    assert close(r.likelihood_ratio, lr, 1e-9) and r.rejected and isinstance(r.first_rejection, int)
    assert r.ci_low < m < r.ci_high and r.ready
    assert la.run_sequential(rng.normal(0, 1, 50), sigma=1.0).first_rejection is None
    b = la.run_betting_sequential(np.clip(x / 4, -1, 1))
    assert b.ci_low <= np.clip(x / 4, -1, 1).mean() <= b.ci_high and 0 <= b.p_value <= 1
    with pytest.raises(ValueError, match="run_sequential"):
        la.run_sequential([1.0, float("inf")])
