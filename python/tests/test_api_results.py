# SPDX-License-Identifier: MIT
# Result objects as a numpy/pandas user reads them: reprs that lead with the estimate and its
# interval, degenerate data an audit produces answered (flagged, with the reason) by default for
# the paired tests, and paired counts equal to the CLI's (n_treated = n_control = pairs).
import math

import numpy as np
import pytest

import latentaudit as la


def test_mcnemar_repr_leads_with_the_difference_and_interval():
    r = la.mcnemar_test([1, 1, 0, 1, 1, 0, 1, 1], [1, 0, 0, 1, 0, 0, 1, 1])
    s = repr(r)
    assert s.startswith("McNemarResult(difference=+0.25 [")
    assert "(95% CI), exact p=0.5, discordant=2" in s
    assert s.index("difference") < s.index("exact p") < s.index("discordant") < s.index("status")


def test_effect_and_other_reprs():
    e = la.welch_t_test([0.9, 0.8, 1.0, 0.7], [0.5, 0.6, 0.4, 0.7])
    assert repr(e).startswith("EffectEstimate(estimate=+0.3 [")
    assert "method='welch'" in repr(e) and "n_treated=4, n_control=4" in repr(e)
    assert repr(la.wilson_interval(3, 10)).startswith("ProportionInterval(estimate=+0.3 [+0.1078, +0.6032]")
    eq = la.equivalence_test([0.1, 0.2, 0.15, 0.12], [0.11, 0.19, 0.16, 0.1], margin=0.5)
    assert repr(eq).startswith("EquivalenceResult(equivalent=True, difference=")
    b = la.bootstrap_paired_mean([1.0, 2.0, 3.0, 2.5], [0.5, 1.5, 2.0, 2.0], replicates=500, seed=1)
    assert repr(b).startswith("BootstrapResult(difference=")


def test_all_concordant_pairs_are_answered_not_raised():
    # the shipped audit's case: 630 kv/text pairs, every one concordant
    kv = np.r_[np.ones(500), np.zeros(130)]
    r = la.mcnemar_test(kv, kv.copy())
    assert r.status == "degenerate" and "no discordant pairs" in r.status_reason
    assert r.exact_p_value == 1.0 and r.effect.estimate == 0.0
    assert math.isnan(r.chi2_statistic) and math.isnan(r.chi2_p_value)
    assert r.discordant == 0 and r.effect.n_pairs == 630
    assert "status=degenerate (no discordant pairs" in repr(r)
    with pytest.raises(la.NumericalError, match="no discordant pairs"):
        la.mcnemar_test(kv, kv.copy(), if_degenerate="raise")
    with pytest.raises(la.NumericalError):
        la.mcnemar_test(kv, kv.copy(), if_degenerate="throw_error")  # the former spelling
    t = la.mcnemar_test_table(500, 0, 0, 130)
    assert t.status == "degenerate" and t.exact_p_value == 1.0
    assert la.mcnemar_test(kv, kv.copy()).to_dict()["status_reason"] == r.status_reason


def test_other_paired_tests_flag_degenerate_data_by_default():
    kv = np.r_[np.ones(50), np.zeros(10)]
    p = la.paired_t_test(kv, kv.copy())
    assert p.status == "degenerate" and p.estimate == 0.0 and math.isnan(p.p_value)
    assert "paired differences are essentially constant" in p.status_reason
    with pytest.raises(la.NumericalError):
        la.paired_t_test(kv, kv.copy(), if_degenerate="raise")
    eq = la.equivalence_test(kv, kv.copy(), margin=0.1, design="paired")
    assert eq.effect.status == "degenerate" and not eq.equivalent
    with pytest.raises(la.NumericalError):
        la.equivalence_test(kv, kv.copy(), margin=0.1, design="paired", if_degenerate="raise")
    ni = la.non_inferiority_test(kv, kv.copy(), 0.1, design="paired")
    assert ni.effect.status == "degenerate"
    # two independent samples keep raising by default (not data an audit's pairs produce)
    with pytest.raises(la.NumericalError):
        la.welch_t_test([1.0, 1.0], [2.0, 2.0])
    assert la.welch_t_test([1.0, 1.0], [2.0, 2.0], if_degenerate="flag").status_reason.startswith("the data")
    assert la.welch_t_test([1.0, 2.0], [2.0, 3.0]).status_reason == ""


def test_paired_counts_equal_the_clis(cli, tmp_path):
    rng = np.random.default_rng(4)
    t, c = (rng.random(200) < 0.8).astype(float), (rng.random(200) < 0.7).astype(float)
    data = tmp_path / "d.csv"
    data.write_text("t,c\n" + "".join("%g,%g\n" % (a, b) for a, b in zip(t, c)))
    for method, res in (("mcnemar", la.mcnemar_test(t, c).effect), ("paired", la.paired_t_test(t, c))):
        j = cli("estimate", method, "--data", data, "--outcome-treated", "t", "--outcome-control", "c")
        assert (j["n_treated"], j["n_control"], j["n_pairs"]) == (res.n_treated, res.n_control, res.n_pairs)
        assert res.n_treated == res.n_control == 200
    w = la.welch_t_test(t, c[:150])
    assert (w.n_treated, w.n_control, w.n_pairs) == (200, 150, 0)
