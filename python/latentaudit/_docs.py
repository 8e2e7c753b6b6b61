# SPDX-License-Identifier: MIT
"""The numpydoc docstrings of the public estimators and result classes.

A function's docstring is assembled from its entry in ``_FUNCTIONS`` (summary, returns, extra
raises, notes), its parameters (the extension's signature, each described by the function's own
``params`` or the shared ``_PARAMS``) and its example (``_EXAMPLES``, run by
python/tests/test_docstrings.py as a doctest).
"""

from . import _api

_PARAMS = {
    "treated": ("array_like of float", "Outcomes of the treated arm (e.g. kv_full), one per unit; for a paired "
                "test in the order of `control` (pandas Series are aligned by index)."),
    "control": ("array_like of float", "Outcomes of the control arm (e.g. text_full), one per unit."),
    "level": ("float", "Confidence level of the interval, in (0, 1)."),
    "alpha": ("float", "Significance level, in (0, 0.5)."),
    "null_value": ("float", "The difference under the null hypothesis."),
    "if_degenerate": ("{'flag', 'raise'}", "Degenerate data (no discordant pair, constant data, a zero standard "
                      "error): ``'flag'`` returns a result whose ``status`` is ``'degenerate'`` and whose "
                      "``status_reason`` says why (undefined statistics are NaN); ``'raise'`` raises "
                      "NumericalError. ``'throw_error'`` is the C++ name of ``'raise'``."),
    "design": ("{'welch', 'student', 'paired'}", "The t test the interval comes from."),
    "y": ("array_like of float", "The outcome, one per row."),
    "treatment": ("array_like of float", "The treatment indicator (0/1), one per row."),
    "units": ("array_like", "The unit of each row (integers or strings)."),
    "time": ("array_like of int", "The period of each row."),
    "clusters": ("array_like or None", "The cluster of each row (integers or strings) for cluster-robust "
                 "standard errors; None: none."),
    "covariance": ("str", "Covariance estimator: 'automatic', 'classical', 'hc0'-'hc3', 'cr0', 'cr1', 'cr1_g' "
                   "(heterogeneity tests: 'hc0'-'hc3')."),
    "distribution": ("{'normal', 't_residual', 't_cluster'}", "Reference distribution of the tests."),
    "fe_count": ("{'counted', 'nested'}", "Whether fixed effects nested in clusters count in the degrees of "
                 "freedom ('counted': Stata's reghdfe without nesting)."),
    "covariates": ("array_like (n x k), dict or DataFrame", "Covariates, one row per observation."),
    "replicates": ("int", "Bootstrap replicates (>= 1)."),
    "method": ("str", "The method (see the summary for the choices)."),
    "seed": ("int", "Seed of the counter-based random streams (same seed, same result for any `threads`)."),
    "threads": ("int", "Worker threads (the result does not depend on it)."),
    "sides": ("{'two_sided', 'one_sided'}", "Sides of the test."),
    "sd": ("float", "Standard deviation of the outcome (delta is in its units)."),
    "strict": ("bool", "Count both tails for a two-sided test (R's strict = TRUE)."),
    "allocation_ratio": ("float", "Control-to-treated size ratio (two-sample design)."),
    "n": ("float", "Observations (per arm for a two-sample design, pairs for McNemar)."),
    "power": ("float", "Target power, in (0, 1)."),
    "delta": ("float", "The true difference in means."),
    "max_n": ("int", "Largest n searched."),
    "true_value": ("float", "The effect to explain away (NaN: the null, 1 or 0)."),
    "exact": ("bool", "Exact distribution (small samples) instead of the normal approximation."),
    "exact_max_pairs": ("int", "Largest number of pairs computed exactly."),
    "groups": ("array_like", "Subgroup label of each row (integers or strings), or with `bins` a numeric "
               "moderator."),
    "bins": ("int", "0: `groups` are labels; k > 0: cut the numeric moderator into k quantile bins."),
    "x": ("array_like of float", "The observations, in arrival order."),
    "intercept": ("bool", "Add an intercept column."),
    "lo": ("float", "Lower bound of every observation."),
    "hi": ("float", "Upper bound of every observation."),
    "truncation": ("float", "Largest betting fraction, in (0, 1)."),
    "estimand": ("str", "The estimand ('att', 'atc', 'ate'; bootstrap: a label for the result)."),
    "propensity": ("array_like of float or None", "Known propensity scores; None: fitted by logistic "
                   "regression on `covariates`."),
    "normalization": ("{'hajek', 'horvitz_thompson'}", "Weights normalised per arm (Hajek) or not."),
    "variance": ("{'stacked', 'weights_known'}", "Variance with the propensity model's estimation (stacked) "
                 "or as if weights were known."),
    "trimming": ("{'none', 'clip', 'drop'}", "Extreme propensity scores: kept, clipped to [eps, 1 - eps] or "
                 "dropped."),
    "trim_epsilon": ("float", "The trimming threshold eps."),
    "family_size": ("int", "Hypotheses in the family (0: the number of p-values)."),
    "allow_missing": ("bool", "NaN p-values are missing (kept as NaN, not counted) instead of an error."),
    "p": ("array_like of float", "The p-values."),
    "p_values": ("array_like of float", "The p-values of the family."),
    "p10": ("float", "Probability that a pair is discordant in the treated's favour (b / n)."),
    "p01": ("float", "Probability that a pair is discordant in the control's favour (c / n)."),
    "gamma": ("float", "Sensitivity parameter: the odds of treatment within a pair may differ by this "
              "factor (>= 1)."),
    "weights": ("array_like of float or None", "Regression weights (WLS); None: OLS."),
    "alpha_lower": ("float", "Error allowed below the interval."),
    "alpha_upper": ("float", "Error allowed above the interval."),
    "horizon": ("int", "Planned largest number of observations (0: n); > n makes the result valid over "
                "repeated looks."),
    "margin": ("float", "The target half-width of the interval."),
    "sample_variance": ("bool", "Use the sample (n - 1) variance."),
}

_RETURN_DOCS = {
    "EffectEstimate": "EffectEstimate\n    The estimate with its standard error, interval, test and counts.",
    "McNemarResult": "McNemarResult\n    The paired table, exact and chi-square p-values and the paired risk difference.",
    "ProportionInterval": "ProportionInterval\n    The proportion with its Wilson interval.",
    "EquivalenceResult": "EquivalenceResult\n    The two one-sided tests and the decision `equivalent`.",
    "NonInferiorityResult": "NonInferiorityResult\n    The one-sided test and the decision `non_inferior`.",
    "BootstrapResult": "BootstrapResult\n    The bootstrap interval (in `effect`) with its diagnostics.",
    "BettingInterval": "BettingInterval\n    The estimate with its betting confidence interval.",
    "MatchingResult": "MatchingResult\n    The matched estimate, its standard errors, matches and covariate balance.",
    "DidResult": "DidResult\n    The effect, the regression fit and design warnings.",
    "EventStudyResult": "EventStudyResult\n    One coefficient per relative period and the pre-trend test.",
    "WeightingResult": "WeightingResult\n    The weighted estimate with its propensity model and weights.",
    "WaldEstimatorResult": "WaldEstimatorResult\n    The LATE and the two intention-to-treat effects.",
    "IvResult": "IvResult\n    The second-stage fit and one first stage per endogenous regressor.",
    "OlsResult": "OlsResult\n    The fit; ``term(name)`` gives one coefficient as an EffectEstimate.",
    "HeterogeneityResult": "HeterogeneityResult\n    One effect per subgroup (Holm and BH adjusted) and the interaction test.",
    "EValueResult": "EValueResult\n    E-values of the point estimate and of the interval's limit nearer the null.",
    "RosenbaumBound": "RosenbaumBound\n    Bounds on the one-sided p-value at `gamma`.",
    "RosenbaumCriticalResult": "RosenbaumCriticalResult\n    The sensitivity value gamma*.",
    "MultipleTestResult": "MultipleTestResult\n    Adjusted p-values and the rejected hypotheses.",
    "SequentialResult": "SequentialResult\n    The monitor's state after the last observation.",
    "BettingSequentialResult": "BettingSequentialResult\n    The confidence sequence after the last observation.",
    "SampleSizeResult": "SampleSizeResult\n    The sample size and the power it reaches.",
    "float": "float\n    The value.",
    "int": "int\n    The value.",
    "List[float]": "list of float\n    The adjusted p-values, in the input's order.",
}

# name: (summary, extended text, {param: description}, extra Raises lines)
_FUNCTIONS = {
    "welch_t_test": ("Welch's two-sample t test of mean(treated) - mean(control).",
                     "As R's ``t.test(treated, control)`` (unequal variances, Welch-Satterthwaite df).", {}, []),
    "student_t_test": ("Student's pooled two-sample t test.", "As R's ``t.test(var.equal = TRUE)``.", {}, []),
    "paired_t_test": ("Paired t test of mean(treated - control).",
                      "As R's ``t.test(paired = TRUE)``. Constant differences (e.g. all pairs concordant) "
                      "are flagged by default: the estimate is kept, the statistic and interval are NaN.",
                      {}, []),
    "mcnemar_test": ("McNemar's test on paired 0/1 outcomes, with the paired risk difference.",
                     "Exact binomial p-value (R ``binom.test(b, b + c)``), chi-square with and without "
                     "continuity correction (R ``mcnemar.test``) and the Newcombe (1998c, method 10) interval "
                     "of the difference (b - c) / n. With no discordant pair (every unit agrees, as an audit's "
                     "kv and text arms often do) the result is flagged by default: exact p = 1, difference 0, "
                     "the chi-square statistics NaN, ``status == 'degenerate'`` with ``status_reason``.",
                     {}, []),
    "mcnemar_test_table": ("McNemar's test from the four counts of the paired 2 x 2 table.",
                           "As ``mcnemar_test`` (same result) from counts instead of outcomes.",
                           {"both": ("int", "Pairs where both arms succeed (a)."),
                            "treated_only": ("int", "Pairs where only the treated arm succeeds (b)."),
                            "control_only": ("int", "Pairs where only the control arm succeeds (c)."),
                            "neither": ("int", "Pairs where neither succeeds (d).")}, []),
    "two_proportion_test": ("Unpaired difference of two proportions (Newcombe interval, z test).",
                            "As R's ``prop.test(correct = FALSE)`` (``continuity_correction=True``: "
                            "``correct = TRUE``).",
                            {"continuity_correction": ("bool", "Yates' correction and Newcombe's method 11.")}, []),
    "wilson_interval": ("Wilson score interval of a proportion.", "",
                        {"successes": ("int", "Successes (<= trials)."), "trials": ("int", "Trials (> 0)."),
                         "continuity_correction": ("bool", "The continuity-corrected Wilson interval.")}, []),
    "equivalence_test": ("TOST equivalence test: is mean(treated) - mean(control) within the margins?",
                         "Give `margin` (the interval (-margin, margin)) or both `low` and `high`. "
                         "``design='paired'`` pairs the rows (Series aligned by index) and flags degenerate "
                         "data by default.",
                         {"margin": ("float or None", "Symmetric equivalence margin (> 0)."),
                          "low": ("float or None", "Lower equivalence bound."),
                          "high": ("float or None", "Upper equivalence bound."),
                          "if_degenerate": ("{'flag', 'raise'} or None",
                                            "As for the other tests; None: 'flag' for design='paired', "
                                            "'raise' otherwise.")}, []),
    "non_inferiority_test": ("One-sided non-inferiority t test: is treated no worse than control by `margin`?",
                             "", {"margin": ("float", "Non-inferiority margin (> 0), in the outcome's units."),
                                  "better": ("{'higher', 'lower'}", "Which direction of the outcome is better."),
                                  "if_degenerate": ("{'flag', 'raise'} or None",
                                                    "As for equivalence_test.")}, []),
    "bootstrap_paired_mean": ("Paired bootstrap interval of mean(treated - control).",
                              "Counter-based random streams: the same seed gives the C++ library's interval bit "
                              "for bit, for any `threads`. method: 'percentile', 'basic', 'normal', 'bca', "
                              "'studentized'.",
                              {"convention": ("{'boot', 'scipy'}", "Quantile and BCa conventions of R's boot or "
                                              "SciPy."),
                               "keep_replicates": ("bool", "Return the replicates in the result.")}, []),
    "bootstrap_mean_difference": ("Two-sample bootstrap interval of mean(treated) - mean(control).",
                                  "As bootstrap_paired_mean, resampling each arm on its own.",
                                  {"convention": ("{'boot', 'scipy'}", "Quantile conventions of R's boot or SciPy."),
                                   "keep_replicates": ("bool", "Return the replicates in the result.")}, []),
    "bounded_mean_interval": ("Betting confidence interval for the mean of observations bounded in [lo, hi].",
                              "Waudby-Smith & Ramdas (2023); valid at any n without a normal approximation.",
                              {"alpha_lower": ("float", "Error allowed below the interval."),
                               "alpha_upper": ("float", "Error allowed above the interval."),
                               "horizon": ("int", "Planned largest number of observations (0: n); > n makes "
                                           "the interval a confidence sequence over the looks.")}, []),
    "bounded_mean_p_value": ("Betting p-value of H0: mean = m0 for observations bounded in [lo, hi].", "",
                             {"m0": ("float", "The mean under the null.")}, []),
    "clustered_paired_difference": ("Paired difference averaged within clusters (items), then across them.",
                                    "The betting estimator's input for several seeds per item.",
                                    {"cluster": ("array_like", "The cluster (item) of each pair.")}, []),
    "betting_items_for_margin": ("Items a betting interval needs to reach half-width `margin`.", "", {}, []),
    "nearest_neighbor_matching": ("Nearest-neighbour covariate matching with Abadie-Imbens standard errors.",
                                  "As R's ``Matching::Match``.",
                                  {"outcome": ("array_like of float", "The outcome."),
                                   "neighbors": ("int", "Matches per unit."),
                                   "distance": ("{'inverse_variance', 'mahalanobis', 'user_matrix'}",
                                                "The distance between covariate rows."),
                                   "weight_matrix": ("list of float", "The k x k matrix for 'user_matrix'."),
                                   "ties": ("bool", "Keep every tied match."),
                                   "distance_tolerance": ("float", "Distances this close are ties."),
                                   "caliper": ("list of float", "Caliper per covariate (in SDs); empty: none."),
                                   "exact": ("list of int", "Covariates matched exactly."),
                                   "bias_adjust": ("bool", "Regression bias adjustment."),
                                   "var_calc": ("int", "Matches for the conditional variance (0: homoskedastic)."),
                                   "sample_variance": ("bool", "The sample (not population) variance."),
                                   "dropped_variance": ("{'matched_only', 'match_compatible'}",
                                                        "Units dropped by a caliper in the variance."),
                                   "tolerance": ("float", "Numerical tolerance."),
                                   "keep_pairs": ("bool", "Return the matched index pairs."),
                                   "balance_denominator": ("{'focal_sd', 'pooled_sd'}", "SMD denominator."),
                                   "covariate_names": ("list of str", "Names for the balance table.")}, []),
    "did_twfe": ("Two-way fixed-effects difference-in-differences.", "", {}, []),
    "did_2x2_regression": ("The 2 x 2 difference-in-differences regression.", "",
                           {"treated": ("array_like of float", "Whether the row's unit is ever treated (0/1)."),
                            "post": ("array_like of float", "Whether the row is after the change (0/1).")}, []),
    "event_study": ("Event study: TWFE with relative-time dummies (reference period -1) and the pre-trend test.",
                    "", {"first": ("int or None", "First relative period kept (None: the data's)."),
                         "last": ("int or None", "Last relative period kept (None: the data's)."),
                         "bin_endpoints": ("bool", "Bin the periods beyond first/last into the endpoints.")}, []),
    "ipw": ("Inverse-probability-weighting estimate of the treatment effect.", "", {}, []),
    "aipw": ("Augmented IPW (doubly robust) estimate of the treatment effect.", "", {}, []),
    "wald_estimator": ("The Wald (LATE) estimator for a binary instrument.", "",
                       {"d": ("array_like of float", "Treatment received (0/1)."),
                        "z": ("array_like of float", "The instrument (0/1).")}, []),
    "two_stage_least_squares": ("Two-stage least squares.",
                                "Regressors are a dict {name: column}, a DataFrame or an n x k array.",
                                {"exogenous": ("dict, DataFrame, array or None", "Exogenous regressors (None: "
                                               "the intercept alone)."),
                                 "endogenous": ("dict, DataFrame or array", "Endogenous regressors."),
                                 "instruments": ("dict, DataFrame or array", "Excluded instruments.")}, []),
    "ols": ("Least squares with classical, HC0-HC3 or cluster-robust covariance.", "",
            {"x": ("dict, DataFrame or array", "Regressors: {name: column}, a DataFrame or an n x k array "
                   "(columns x1..xk).")}, []),
    "p_adjust": ("Adjusted p-values, as R's ``p.adjust``.",
                 "method: 'none', 'bonferroni', 'holm', 'hochberg', 'BH', 'BY'.", {}, []),
    "multiple_test": ("Adjusted p-values and rejections for a family of hypotheses.",
                      "method as for p_adjust.", {}, []),
    "t_test_power": ("Power of a t test (R's ``power.t.test``).", "",
                     {"design": ("{'two_sample', 'paired', 'one_sample'}", "The design.")}, []),
    "t_test_sample_size": ("Sample size a t test needs to detect `delta` with the given power.", "",
                           {"design": ("{'two_sample', 'paired', 'one_sample'}", "The design.")}, []),
    "t_test_mde": ("Minimum detectable effect of a t test with n observations at the given power.", "",
                   {"design": ("{'two_sample', 'paired', 'one_sample'}", "The design.")}, []),
    "mcnemar_power": ("Power of McNemar's test with n pairs.", "method: 'connor' (approximation) or 'exact'.",
                      {}, []),
    "mcnemar_sample_size": ("Pairs McNemar's test needs for the given power.", "method as for mcnemar_power.",
                            {}, []),
    "subgroup_effects": ("Welch effects within subgroups, Holm/BH adjusted, with the interaction test.", "",
                         {}, []),
    "paired_subgroup_effects": ("Paired t effects within subgroups, with the interaction test.",
                                "Degenerate subgroups are flagged by default.", {}, []),
    "evalue_risk_ratio": ("E-value of a risk ratio (VanderWeele & Ding 2017).", "",
                          {"rr": ("float", "The risk ratio."), "ci_low": ("float", "Its lower limit (NaN: none)."),
                           "ci_high": ("float", "Its upper limit (NaN: none).")}, []),
    "evalue_odds_ratio": ("E-value of an odds ratio.", "A rare outcome reads RR = OR, else RR = sqrt(OR).",
                          {"odds_ratio": ("float", "The odds ratio."), "ci_low": ("float", "Its lower limit."),
                           "ci_high": ("float", "Its upper limit."),
                           "rare_outcome": ("bool", "Whether the outcome is rare (< 15 %).")}, []),
    "evalue_smd": ("E-value of a standardised mean difference.", "",
                   {"d": ("float", "The standardised mean difference."), "se": ("float", "Its standard error.")},
                   []),
    "rosenbaum_signed_rank": ("Rosenbaum bounds on the one-sided signed-rank p-value at `gamma`.", "", {}, []),
    "rosenbaum_critical_gamma": ("The gamma at which the Rosenbaum upper-bound p-value reaches alpha.", "", {},
                                 []),
    "run_sequential": ("The mixture SPRT (always-valid test and confidence sequence) over x in order.", "",
                       {"tau": ("float", "Mixing standard deviation of the alternative."),
                        "sigma": ("float", "Known SD of x (0: estimated)."),
                        "burn_in": ("int", "Observations before the first look."),
                        "sigma_floor": ("float", "Smallest SD used.")}, []),
    "run_betting_sequential": ("The betting confidence sequence for a bounded mean over x in order.", "",
                               {"lower": ("float", "Lower bound of x."), "upper": ("float", "Upper bound of x."),
                                "theta0": ("float", "The mean under the null.")}, []),
}

_EXAMPLES = {
    'welch_t_test': ">>> res = la.welch_t_test([0.9, 0.8, 1.0, 0.7], [0.5, 0.6, 0.4, 0.7])\n>>> round(res.estimate, 3), res.status\n(0.3, 'ok')",
    'student_t_test': '>>> res = la.student_t_test([0.9, 0.8, 1.0, 0.7], [0.5, 0.6, 0.4, 0.7])\n>>> round(res.p_value, 4)\n0.0167',
    'paired_t_test': ">>> res = la.paired_t_test([0.9, 0.8, 1.0, 0.7], [0.5, 0.6, 0.4, 0.7])\n>>> round(res.estimate, 3), res.n_pairs, res.n_treated\n(0.3, 4, 4)\n>>> la.paired_t_test([1, 1, 0], [1, 1, 0]).status_reason\n'the paired differences are essentially constant (standard error 0): the t statistic, p-value and interval are undefined (NaN)'",
    'mcnemar_test': ">>> kv = [1, 1, 0, 1, 1, 0, 1, 1]\n>>> text = [1, 0, 0, 1, 0, 0, 1, 1]\n>>> res = la.mcnemar_test(kv, text)\n>>> res.discordant, res.exact_p_value\n(2, 0.5)\n>>> la.mcnemar_test([1, 0, 1], [1, 0, 1]).status\n'degenerate'",
    'mcnemar_test_table': '>>> res = la.mcnemar_test_table(40, 12, 3, 45)\n>>> round(res.exact_p_value, 4), res.effect.estimate\n(0.0352, 0.09)',
    'two_proportion_test': '>>> res = la.two_proportion_test([1, 1, 1, 0, 1], [0, 1, 0, 0, 1])\n>>> round(res.estimate, 2)\n0.4',
    'wilson_interval': '>>> ci = la.wilson_interval(42, 50)\n>>> round(ci.low, 3), round(ci.high, 3)\n(0.715, 0.917)',
    'equivalence_test': '>>> import numpy as np\n>>> rng = np.random.default_rng(0)\n>>> a, b = rng.normal(0, 1, 200), rng.normal(0.02, 1, 200)\n>>> la.equivalence_test(a, b, margin=0.5).equivalent\nTrue',
    'non_inferiority_test': '>>> import numpy as np\n>>> rng = np.random.default_rng(0)\n>>> kv, text = rng.normal(0.8, 0.1, 100), rng.normal(0.8, 0.1, 100)\n>>> la.non_inferiority_test(kv, text, 0.05).non_inferior\nTrue',
    'bootstrap_paired_mean': '>>> res = la.bootstrap_paired_mean([1, 1, 0, 1, 1, 1], [0, 1, 0, 0, 1, 0], replicates=2000, seed=1)\n>>> round(res.effect.estimate, 3), res.replicates_used\n(0.5, 2000)',
    'bootstrap_mean_difference': ">>> res = la.bootstrap_mean_difference([3.1, 2.9, 3.4, 3.0], [2.0, 2.2, 2.4, 1.9], replicates=999, method='percentile')\n>>> round(res.effect.estimate, 3)\n0.975",
    'bounded_mean_interval': '>>> ci = la.bounded_mean_interval([1, 0, 1, 1, 1, 0, 1, 1, 1, 1], 0, 1)\n>>> ci.low < 0.8 < ci.high\nTrue',
    'bounded_mean_p_value': '>>> p = la.bounded_mean_p_value([1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 0, 1, 0.5)\n>>> p < 0.05\nTrue',
    'clustered_paired_difference': '>>> res = la.clustered_paired_difference([0, 0, 1, 1, 2, 2], [1, 1, 0, 1, 1, 1], [0, 1, 0, 0, 1, 0])\n>>> round(res.estimate, 3)\n0.5',
    'betting_items_for_margin': '>>> n = la.betting_items_for_margin(0.1)\n>>> n > 0\nTrue',
    'nearest_neighbor_matching': '>>> import numpy as np\n>>> x = np.array([[0.1], [0.2], [0.3], [0.15], [0.25], [0.35]])\n>>> res = la.nearest_neighbor_matching([2.0, 2.2, 2.5, 1.0, 1.1, 1.4], [1, 1, 1, 0, 0, 0], x)\n>>> round(res.effect.estimate, 2)\n1.13',
    'did_twfe': ">>> y = [1.0, 1.1, 1.0, 2.1, 0.9, 1.05, 1.1, 1.2]\n>>> d = [0, 0, 0, 1, 0, 0, 0, 0]\n>>> units = [1, 1, 2, 2, 3, 3, 4, 4]\n>>> time = [0, 1, 0, 1, 0, 1, 0, 1]\n>>> res = la.did_twfe(y, d, units, time, covariance='hc1', distribution='t_residual')\n>>> round(res.effect.estimate, 2)\n0.98",
    'did_2x2_regression': '>>> y = [1.0, 1.1, 1.0, 2.1, 0.9, 1.0, 1.1, 1.2]\n>>> treated = [0, 0, 1, 1, 0, 0, 1, 1]\n>>> post = [0, 1, 0, 1, 0, 1, 0, 1]\n>>> units = [1, 1, 2, 2, 3, 3, 4, 4]\n>>> res = la.did_2x2_regression(y, treated, post, units)\n>>> round(res.effect.estimate, 2)\n0.5',
    'event_study': ">>> import numpy as np\n>>> units = np.repeat(np.arange(6), 4)\n>>> time = np.tile(np.arange(4), 6)\n>>> d = ((units < 3) & (time >= 2)).astype(float)\n>>> y = 1.0 + 0.5 * d + 0.01 * np.arange(24) % 0.07\n>>> res = la.event_study(y, d, units, time, covariance='hc1', distribution='t_residual')\n>>> res.relative_times\n[-2, 0, 1]",
    'ipw': '>>> import numpy as np\n>>> rng = np.random.default_rng(0)\n>>> x = rng.normal(size=200)\n>>> d = (rng.random(200) < 1 / (1 + np.exp(-x))).astype(float)\n>>> y = x + 0.5 * d + rng.normal(size=200)\n>>> res = la.ipw(y, d, x)\n>>> abs(res.effect.estimate - 0.5) < 0.5\nTrue',
    'aipw': '>>> import numpy as np\n>>> rng = np.random.default_rng(0)\n>>> x = rng.normal(size=200)\n>>> d = (rng.random(200) < 1 / (1 + np.exp(-x))).astype(float)\n>>> y = x + 0.5 * d + rng.normal(size=200)\n>>> res = la.aipw(y, d, x)\n>>> abs(res.effect.estimate - 0.5) < 0.5\nTrue',
    'wald_estimator': '>>> res = la.wald_estimator([3.0, 2.0, 3.5, 1.0, 1.5, 1.2], [1, 0, 1, 0, 1, 0], [1, 1, 1, 0, 0, 0])\n>>> round(res.late.estimate, 3)\n4.8',
    'two_stage_least_squares': ">>> import numpy as np\n>>> rng = np.random.default_rng(0)\n>>> z = rng.normal(size=300)\n>>> u = rng.normal(size=300)\n>>> d = z + u\n>>> y = 2.0 * d + u + rng.normal(size=300)\n>>> res = la.two_stage_least_squares(y, None, {'d': d}, {'z': z})\n>>> round(res.fit.term('d').estimate, 1)\n2.1",
    'ols': ">>> res = la.ols([1.0, 2.1, 2.9, 4.2, 5.0], {'x': [1, 2, 3, 4, 5]})\n>>> res.names, round(res.term('x').estimate, 2)\n(['(Intercept)', 'x'], 1.01)",
    'p_adjust': ">>> la.p_adjust([0.01, 0.04, 0.03], 'holm')\n[0.03, 0.06, 0.06]",
    'multiple_test': ">>> res = la.multiple_test([0.01, 0.04, 0.03], method='holm')\n>>> res.rejected\n[True, False, False]",
    't_test_power': '>>> round(la.t_test_power(50, 0.5), 3)\n0.697',
    't_test_sample_size': '>>> res = la.t_test_sample_size(0.5, 0.8)\n>>> res.n\n63.76576372485063',
    't_test_mde': '>>> round(la.t_test_mde(64, 0.8), 3)\n0.499',
    'mcnemar_power': '>>> round(la.mcnemar_power(200, 0.15, 0.05), 3)\n0.891',
    'mcnemar_sample_size': '>>> res = la.mcnemar_sample_size(0.15, 0.05, 0.8)\n>>> res.n\n154.59856956021113',
    'subgroup_effects': ">>> y = [1.0, 1.2, 0.4, 0.5, 2.0, 2.3, 0.9, 1.1]\n>>> d = [1, 1, 0, 0, 1, 1, 0, 0]\n>>> g = ['a', 'a', 'a', 'a', 'b', 'b', 'b', 'b']\n>>> res = la.subgroup_effects(y, d, g)\n>>> [s.label for s in res.groups]\n['a', 'b']",
    'paired_subgroup_effects': ">>> kv = [1.0, 0.9, 1.0, 0.8, 0.6, 0.7, 0.5, 0.6]\n>>> text = [0.8, 0.7, 0.9, 0.6, 0.6, 0.5, 0.6, 0.4]\n>>> res = la.paired_subgroup_effects(kv, text, ['need'] * 4 + ['no_need'] * 4)\n>>> [s.label for s in res.groups]\n['need', 'no_need']",
    'evalue_risk_ratio': '>>> res = la.evalue_risk_ratio(2.0, 1.5, 2.7)\n>>> round(res.point, 3), round(res.ci, 3)\n(3.414, 2.366)',
    'evalue_odds_ratio': '>>> res = la.evalue_odds_ratio(2.0, 1.5, 2.7, rare_outcome=True)\n>>> round(res.point, 3)\n3.414',
    'evalue_smd': '>>> res = la.evalue_smd(0.5, 0.1)\n>>> round(res.point, 3)\n2.529',
    'rosenbaum_signed_rank': '>>> res = la.rosenbaum_signed_rank([3.1, 2.9, 3.4, 3.0, 3.3], [2.0, 2.2, 2.4, 1.9, 2.5], 2.0)\n>>> res.n_pairs, round(res.p_upper, 3)\n(5, 0.075)',
    'rosenbaum_critical_gamma': '>>> res = la.rosenbaum_critical_gamma([3.1, 2.9, 3.4, 3.0, 3.3, 3.2], [2.0, 2.2, 2.4, 1.9, 2.5, 2.1])\n>>> res.significant_at_one\nTrue',
    'run_sequential': '>>> import numpy as np\n>>> x = np.random.default_rng(0).normal(0.5, 1, 400)\n>>> res = la.run_sequential(x)\n>>> res.rejected\nTrue',
    'run_betting_sequential': '>>> import numpy as np\n>>> x = np.random.default_rng(0).choice([-1.0, 1.0], 400, p=[0.3, 0.7])\n>>> res = la.run_betting_sequential(x)\n>>> res.rejected\nTrue',
}


def _returns(cfn):
    ret = cfn.__doc__.split("\n", 1)[0].rsplit("-> ", 1)[1].replace("latentaudit._latentaudit.", "")
    return _RETURN_DOCS.get(ret, "%s\n    The result." % ret)


def function_doc(name, cfn):
    """The numpydoc docstring of the estimator `name` (the extension's `cfn`)."""
    summary, extended, params, raises = _FUNCTIONS[name]
    out = [summary, ""]
    if extended:
        out += [extended, ""]
    out += ["Parameters", "----------"]
    for pname, ann, default, _kw in _api.parse_signature(cfn):
        typ, desc = params.get(pname) or _PARAMS.get(pname) or (ann, "(undocumented)")
        if pname == "if_degenerate":
            default = "'flag'" if name in _api._FLAG_BY_DEFAULT else ("None" if name in _api._DESIGN_PAIRED
                                                                      else "'raise'")
        elif default is not _api._REQUIRED:
            default = repr(default)
        out.append("%s : %s%s" % (pname, typ, "" if default is _api._REQUIRED else ", default %s" % default))
        out.append("    " + desc)
    out += ["", "Returns", "-------", _returns(cfn), "", "Raises", "------",
            "TypeError",
            "    An unknown keyword, a missing argument, a value of the wrong type, or a missing value "
            "(None, pd.NA) in an array; the message names the argument.",
            "InvalidArgument",
            "    A value outside its domain (a ValueError; the message names the argument).",
            "ShapeMismatch",
            "    Arrays of different lengths, or pandas objects whose indexes differ (a ValueError)."]
    if any(p[0] == "if_degenerate" for p in _api.parse_signature(cfn)):
        out += ["NumericalError", "    Degenerate data with ``if_degenerate='raise'``."]
    out += raises
    if name in _EXAMPLES:
        out += ["", "Examples", "--------", ">>> import latentaudit as la", _EXAMPLES[name]]
    return "\n".join(out) + "\n"


_FIELD_DOCS = {
    "method": "str: the method that produced the estimate.",
    "estimand": "str: what is estimated.",
    "estimate": "float: the point estimate.",
    "std_error": "float: its standard error (NaN when undefined).",
    "ci_low": "float: lower limit of the confidence interval.",
    "ci_high": "float: upper limit of the confidence interval.",
    "low": "float: lower limit of the interval.",
    "high": "float: upper limit of the interval.",
    "level": "float: confidence level of the interval.",
    "df": "float: degrees of freedom of the reference distribution (NaN: normal).",
    "statistic": "float: the test statistic (NaN when undefined).",
    "p_value": "float: two-sided p-value of the null (NaN when undefined).",
    "n_treated": "int: observations in the treated arm (a paired estimate: its pairs).",
    "n_control": "int: observations in the control arm (a paired estimate: its pairs).",
    "n_pairs": "int: pairs (0 for unpaired estimates).",
    "status": "str: 'ok', 'degenerate' (flagged degenerate data) or 'failed'.",
    "status_reason": "str: why the status is not 'ok', naming the undefined statistic ('' when ok).",
    "table": "PairedBinaryTable: the counts a, b, c, d.",
    "discordant": "int: discordant pairs b + c.",
    "exact_p_value": "float: two-sided exact binomial p-value (1 with no discordant pair).",
    "chi2_statistic": "float: (b - c)^2 / (b + c) (NaN with no discordant pair).",
    "chi2_p_value": "float: its p-value.",
    "chi2_cc_statistic": "float: the continuity-corrected statistic.",
    "chi2_cc_p_value": "float: its p-value.",
    "phi": "float: the correlation used by the Newcombe interval.",
    "effect": "EffectEstimate: the effect with its interval.",
    "both": "int: pairs where both arms succeed (a).",
    "treated_only": "int: pairs where only the treated arm succeeds (b).",
    "control_only": "int: pairs where only the control arm succeeds (c).",
    "neither": "int: pairs where neither succeeds (d).",
    "alpha": "float: the significance level.",
    "margin": "float: the margin.",
    "n": "int: observations.",
    "mean": "float: the running mean.",
    "rejected": "the rejection decision(s).",
    "replicates": "numpy.ndarray: the bootstrap replicates (empty unless kept).",
    "fit": "OlsResult: the underlying regression fit.",
    "warnings": "list of DidWarning: design problems found.",
    "label": "the subgroup's label.",
    "gamma": "float: the sensitivity parameter.",
}

_CLASS_EXAMPLES = {
    "EffectEstimate": ">>> res = la.paired_t_test([0.9, 0.8, 1.0, 0.7], [0.5, 0.6, 0.4, 0.7])\n"
                      ">>> res.to_dict()['n_pairs']\n4",
    "McNemarResult": ">>> res = la.mcnemar_test([1, 1, 0, 1], [0, 1, 0, 0])\n>>> res.discordant\n2",
}


def install_class_docs():
    """Numpydoc docstrings on every result class of the extension (summary, Attributes, Methods)."""
    from . import _latentaudit
    for n in dir(_latentaudit):
        cls = getattr(_latentaudit, n)
        if not (isinstance(cls, type) and hasattr(cls, "_fields") and hasattr(cls, "to_dict")):
            continue
        summary = (cls.__doc__ or n).strip().split("\n")[0]
        out = [summary, "", "A read-only result of the C++ library; ``repr`` leads with the estimate and its "
               "interval.", "", "Attributes", "----------"]
        for f in cls._fields:
            typ, _, desc = _FIELD_DOCS.get(f, "see the C++ aggregate's field of this name "
                                              "(include/latentaudit/estimators/).").partition(": ")
            if not desc:
                typ, desc = "object", typ
            out += ["%s : %s" % (f, typ), "    " + desc[:1].upper() + desc[1:]]
        out += ["", "Methods", "-------", "to_dict()", "    The fields as a dict (nested results as dicts)."]
        ex = _CLASS_EXAMPLES.get(n)
        out += ["", "Examples", "--------", ">>> import latentaudit as la"]
        if ex:
            out.append(ex)
        else:
            out += [">>> la._latentaudit.%s._fields  # the attributes, in order; to_dict() has the same keys" % n,
                    repr(cls._fields)]
        cls.__doc__ = "\n".join(out) + "\n"
