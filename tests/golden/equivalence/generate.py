# SPDX-License-Identifier: MIT
# Golden values for estimators/equivalence.hpp from statsmodels 0.13.5 (Debian 12), on the data and
# grid of generate.R (run that first; this reads data.csv, r_tost.csv and r_non_inferiority.csv).
#   /usr/bin/python3 generate.py
# Conventions (statsmodels.stats.weightstats):
#   ttost_ind(x1, x2, low, upp, usevar) tests  low < mean(x1) - mean(x2) < upp  and returns
#     (pvalue, (t1, p1, df1), (t2, p2, df2)); (t1, p1) is the test against `low` with
#     alternative 'larger', (t2, p2) the test against `upp` with alternative 'smaller'.
#     usevar='unequal' is Welch, usevar='pooled' (its default) is Student.
#   ttost_paired(x1, x2, low, upp) the same for the mean of x1 - x2, df = n - 1.
#   Non-inferiority: CompareMeans.from_data(x1, x2).ttest_ind(alternative='larger', value=-m, usevar)
#     (higher is better) or alternative='smaller', value=+m (lower is better); paired:
#     DescrStatsW(x1 - x2).ttest_mean(value, alternative).
#   The (1 - 2 alpha) interval: CompareMeans.tconfint_diff(alpha=2 alpha, usevar) and
#     DescrStatsW(x1 - x2).tconfint_mean(alpha=2 alpha); both use scipy's t.ppf.
import csv
import collections

import numpy as np
import statsmodels
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind, ttost_paired

data = collections.OrderedDict()
with open("data.csv") as f:
    for row in csv.DictReader(f):
        d = data.setdefault(row["dataset"], {"treated": [], "control": []})
        d[row["arm"]].append(float(row["y"]))


def arrays(name):
    return np.array(data[name]["treated"]), np.array(data[name]["control"])


def interval(t, c, design, alpha):
    if design == "paired":
        return DescrStatsW(t - c).tconfint_mean(alpha=2 * alpha)
    usevar = "unequal" if design == "welch" else "pooled"
    return CompareMeans.from_data(t, c).tconfint_diff(alpha=2 * alpha, usevar=usevar)


tost = []
with open("r_tost.csv") as f:
    for row in csv.DictReader(f):
        t, c = arrays(row["dataset"])
        low, high, alpha = float(row["low"]), float(row["high"]), float(row["alpha"])
        design = row["design"]
        if design == "paired":
            p, (t1, p1, df1), (t2, p2, df2) = ttost_paired(t, c, low, high)
        else:
            usevar = "unequal" if design == "welch" else "pooled"
            p, (t1, p1, df1), (t2, p2, df2) = ttost_ind(t, c, low, high, usevar=usevar)
        lo, hi = interval(t, c, design, alpha)
        tost.append([row["dataset"], design, repr(low), repr(high), repr(alpha), repr(float(df1)),
                     repr(float(t1)), repr(float(p1)), repr(float(t2)), repr(float(p2)),
                     repr(float(p)), repr(float(lo)), repr(float(hi)), int(p < alpha)])

ni = []
with open("r_non_inferiority.csv") as f:
    for row in csv.DictReader(f):
        t, c = arrays(row["dataset"])
        m, alpha, better = float(row["margin"]), float(row["alpha"]), row["better"]
        design = row["design"]
        value, alternative = (-m, "larger") if better == "higher" else (m, "smaller")
        if design == "paired":
            stat, p, df = DescrStatsW(t - c).ttest_mean(value, alternative=alternative)
        else:
            usevar = "unequal" if design == "welch" else "pooled"
            stat, p, df = CompareMeans.from_data(t, c).ttest_ind(alternative=alternative,
                                                               usevar=usevar, value=value)
        lo, hi = interval(t, c, design, alpha)
        ni.append([row["dataset"], design, repr(m), better, repr(alpha), repr(float(df)),
                   repr(float(stat)), repr(float(p)), repr(float(lo)), repr(float(hi)),
                   int(p < alpha)])

with open("python_tost.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["dataset", "design", "low", "high", "alpha", "df", "t_lower", "p_lower", "t_upper",
                "p_upper", "p_value", "ci_low", "ci_high", "equivalent"])
    w.writerows(tost)
with open("python_non_inferiority.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["dataset", "design", "margin", "better", "alpha", "df", "statistic", "p_value",
                "ci_low", "ci_high", "non_inferior"])
    w.writerows(ni)
print("statsmodels", statsmodels.__version__, "tost rows", len(tost), "non-inferiority rows", len(ni))
