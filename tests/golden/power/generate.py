# SPDX-License-Identifier: MIT
# Golden values for estimators/power.hpp from statsmodels.stats.power (statsmodels 0.13.5,
# scipy 1.10.1): TTestPower (one-sample / paired) and TTestIndPower (two-sample, with ratio =
# nobs2/nobs1). statsmodels' "two-sided" adds both rejection tails (R's strict = TRUE); "larger" is
# the one-sided test. Effect sizes are standardised (delta/sd). solve_power uses scipy's brentq
# with its own default tolerances, so solved values are compared at a looser tolerance.
# Run from this directory with Debian's Python: /usr/bin/python3 generate.py  (writes statsmodels.csv)
import csv

from statsmodels.stats.power import TTestIndPower, TTestPower

cases = [  # design, effect_size, nobs1, alpha, power, ratio, alternative
    ("paired", 0.5, 20.0, 0.05, 0.8, 1.0, "two-sided"),
    ("paired", 0.3, 75.0, 0.01, 0.9, 1.0, "larger"),
    ("paired", 1.2, 6.0, 0.05, 0.95, 1.0, "two-sided"),
    ("two_sample", 0.5, 30.0, 0.05, 0.8, 1.0, "two-sided"),
    ("two_sample", 0.4, 50.0, 0.05, 0.8, 2.0, "two-sided"),
    ("two_sample", 0.25, 120.0, 0.1, 0.9, 0.5, "larger"),
    ("two_sample", 0.8, 12.5, 0.01, 0.8, 1.5, "two-sided"),
    ("two_sample", 0.6, 25.0, 0.05, 0.7, 1.0, "larger"),
]
with open("statsmodels.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["design", "effect_size", "nobs1", "alpha", "target_power", "ratio", "alternative",
                "power", "nobs1_solved", "effect_solved"])
    for design, es, n, alpha, pw, ratio, alt in cases:
        if design == "paired":
            a = TTestPower()
            power = a.power(effect_size=es, nobs=n, alpha=alpha, alternative=alt)
            n_sol = a.solve_power(effect_size=es, nobs=None, alpha=alpha, power=pw, alternative=alt)
            e_sol = a.solve_power(effect_size=None, nobs=n, alpha=alpha, power=pw, alternative=alt)
        else:
            a = TTestIndPower()
            power = a.power(effect_size=es, nobs1=n, alpha=alpha, ratio=ratio, alternative=alt)
            n_sol = a.solve_power(effect_size=es, nobs1=None, alpha=alpha, power=pw, ratio=ratio, alternative=alt)
            e_sol = a.solve_power(effect_size=None, nobs1=n, alpha=alpha, power=pw, ratio=ratio, alternative=alt)
        w.writerow([design, repr(es), repr(n), repr(alpha), repr(pw), repr(ratio), alt,
                    repr(float(power)), repr(float(n_sol)), repr(float(e_sol))])
