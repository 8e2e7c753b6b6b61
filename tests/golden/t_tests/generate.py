# SPDX-License-Identifier: MIT
# Golden values for estimators/difference_in_means.hpp from statsmodels 0.13.5 and scipy 1.10.1
# (Debian 12). Run from this directory AFTER generate.R (it reads data.csv):
#   /usr/bin/python3 generate.py
# Writes python_results.csv: one row per dataset x test x level x mu, the same grid as r_results.csv.
#   welch   : statsmodels CompareMeans.from_data(t, c).ttest_ind(usevar='unequal', value=mu),
#             std_meandiff_separatevar, tconfint_diff(alpha, usevar='unequal')
#   student : the same with usevar='pooled' (std_meandiff_pooledvar)
#   paired  : scipy.stats.ttest_rel(t, c) for t, p and df when mu = 0, statsmodels
#             DescrStatsW(t - c).ttest_mean(mu) otherwise (scipy 1.10's ttest_rel has no mu); the CI
#             from ttest_rel(t, c).confidence_interval(level); estimate, SE from DescrStatsW(t - c)
import csv
import collections

import numpy as np
import scipy
import scipy.stats as st
import statsmodels
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

data = collections.OrderedDict()
with open("data.csv") as f:
    for row in csv.DictReader(f):
        d = data.setdefault(row["dataset"], {"treated": [], "control": []})
        d[row["arm"]].append(float(row["y"]))

out = []
for name, d in data.items():
    t = np.array(d["treated"])
    c = np.array(d["control"])
    tests = ["welch", "student"] + (["paired"] if len(t) == len(c) else [])
    for test in tests:
        for level in (0.9, 0.95, 0.99):
            for mu in (0.0, 0.5, -1.25):
                if name == "tiny_scale":
                    mu = mu * 1e-7
                alpha = 1.0 - level
                if test in ("welch", "student"):
                    usevar = "unequal" if test == "welch" else "pooled"
                    cm = CompareMeans.from_data(t, c)
                    stat, p, df = cm.ttest_ind(usevar=usevar, value=mu)
                    lo, hi = cm.tconfint_diff(alpha=alpha, usevar=usevar)
                    est = cm.d1.mean - cm.d2.mean
                    se = cm.std_meandiff_separatevar if test == "welch" else cm.std_meandiff_pooledvar
                else:
                    dd = DescrStatsW(t - c)
                    if mu == 0.0:
                        r = st.ttest_rel(t, c)
                        stat, p, df = r.statistic, r.pvalue, r.df
                    else:
                        stat, p, df = dd.ttest_mean(mu)
                    ci = st.ttest_rel(t, c).confidence_interval(confidence_level=level)
                    lo, hi = ci.low, ci.high
                    est, se = dd.mean, dd.std_mean
                out.append([name, test, repr(level), repr(mu), repr(float(est)), repr(float(se)),
                            repr(float(df)), repr(float(stat)), repr(float(p)), repr(float(lo)),
                            repr(float(hi))])

with open("python_results.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["dataset", "test", "level", "mu", "estimate", "std_error", "df", "statistic",
                "p_value", "ci_low", "ci_high"])
    w.writerows(out)
print("scipy", scipy.__version__, "statsmodels", statsmodels.__version__, "rows", len(out))
