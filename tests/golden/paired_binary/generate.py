# SPDX-License-Identifier: MIT
# Golden values for include/latentaudit/estimators/paired_binary.hpp from statsmodels 0.13 / scipy 1.10:
#   statsmodels.stats.contingency_tables.mcnemar(exact=True/False, correction=True/False)
#   statsmodels.stats.proportion.proportion_confint(method="wilson")
#   statsmodels.stats.proportion.confint_proportions_2indep(method="newcomb", compare="diff")
#   statsmodels.stats.proportion.proportions_ztest (pooled z, no continuity correction)
# plus Newcombe's paired interval (1998c, method 10) and the unpaired method 11, coded here by hand
# independently of generate.R. Inputs (the tables) are read from paired_r.csv / unpaired_r.csv,
# written by generate.R. Run with Debian's interpreter: /usr/bin/python3 generate.py
import csv
import math

import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import (confint_proportions_2indep, proportion_confint,
                                          proportions_ztest)


def r(x):
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else repr(float(x))


def wilson_cc(x, n, z):
    """Newcombe (1998a) method 4, with L = 0 at x = 0 and U = 1 at x = n."""
    p = x / n
    z2 = z * z
    lo = 0.0 if x == 0 else max(0.0, (2 * n * p + z2 - 1 - z * math.sqrt(z2 - 2 - 1 / n + 4 * p * (n * (1 - p) + 1))) / (2 * (n + z2)))
    hi = 1.0 if x == n else min(1.0, (2 * n * p + z2 + 1 + z * math.sqrt(z2 + 2 - 1 / n + 4 * p * (n * (1 - p) - 1))) / (2 * (n + z2)))
    return lo, hi


def read(name):
    with open(name) as f:
        return list(csv.DictReader(f))


paired = read("paired_r.csv")
with open("paired_statsmodels.csv", "w") as out:
    out.write("case,a,b,c,d,level,exact_p,chi2,chi2_p,chi2_cc,chi2_cc_p,phi,ci_low,ci_high,"
              "wilson_t_low,wilson_t_high,wilson_c_low,wilson_c_high\n")
    for row in paired:
        a, b, c, d = (int(float(row[k])) for k in "abcd")
        level = float(row["level"])
        n = a + b + c + d
        table = np.array([[a, b], [c, d]], dtype=float)  # rows treated 1/0, columns control 1/0
        if b + c > 0:
            ex = mcnemar(table, exact=True)
            a0 = mcnemar(table, exact=False, correction=False)
            a1 = mcnemar(table, exact=False, correction=True)
            exact_p, chi2, chi2_p, chi2_cc, chi2_cc_p = ex.pvalue, a0.statistic, a0.pvalue, a1.statistic, a1.pvalue
        else:
            exact_p, chi2, chi2_p, chi2_cc, chi2_cc_p = 1.0, math.nan, math.nan, math.nan, math.nan
        alpha = 1 - level
        l1, u1 = proportion_confint(a + b, n, alpha=alpha, method="wilson")
        l2, u2 = proportion_confint(a + c, n, alpha=alpha, method="wilson")
        # statsmodels leaves rounding residue at x = 0 / x = n; the limits are exactly 0 / 1 there.
        if a + b == 0: l1 = 0.0
        if a + b == n: u1 = 1.0
        if a + c == 0: l2 = 0.0
        if a + c == n: u2 = 1.0
        p1, p2 = (a + b) / n, (a + c) / n
        margins = [a + b, c + d, a + c, b + d]
        if min(margins) == 0:
            phi = 0.0
        else:
            cross = a * d - b * c
            num = max(cross - n / 2, 0) if cross > 0 else cross
            phi = num / math.sqrt(math.prod(margins))
        theta = (b - c) / n
        lo = theta - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
        hi = theta + math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
        out.write(",".join([row["case"], str(a), str(b), str(c), str(d), r(level), r(exact_p), r(chi2), r(chi2_p),
                            r(chi2_cc), r(chi2_cc_p), r(phi), r(lo), r(hi), r(l1), r(u1), r(l2), r(u2)]) + "\n")

unpaired = read("unpaired_r.csv")
with open("unpaired_statsmodels.csv", "w") as out:
    out.write("case,x1,n1,x0,n0,level,correct,z,p_value,ci_low,ci_high\n")
    for row in unpaired:
        x1, n1, x0, n0 = (int(float(row[k])) for k in ("x1", "n1", "x0", "n0"))
        level = float(row["level"])
        correct = int(row["correct"])
        alpha = 1 - level
        if correct == 0:
            lo, hi = confint_proportions_2indep(x1, n1, x0, n0, method="newcomb", compare="diff", alpha=alpha)
            if 0 < x1 + x0 < n1 + n0:
                zs, pv = proportions_ztest([x1, x0], [n1, n0])  # pooled variance by default
            else:
                zs, pv = math.nan, math.nan
        else:
            z = stats.norm.isf(alpha / 2)
            p1, p0 = x1 / n1, x0 / n0
            l1, u1 = wilson_cc(x1, n1, z)
            l0, u0 = wilson_cc(x0, n0, z)
            lo = p1 - p0 - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
            hi = p1 - p0 + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
            if 0 < x1 + x0 < n1 + n0:   # Yates-corrected pooled z, by hand
                pbar = (x1 + x0) / (n1 + n0)
                s = 1 / n1 + 1 / n0
                zs = math.copysign(max(0.0, abs(p1 - p0) - s / 2), p1 - p0) / math.sqrt(pbar * (1 - pbar) * s)
                pv = 2 * stats.norm.sf(abs(zs))
            else:
                zs, pv = math.nan, math.nan
        out.write(",".join([row["case"], str(x1), str(n1), str(x0), str(n0), r(level), str(correct), r(zs), r(pv),
                            r(lo), r(hi)]) + "\n")
print("wrote paired_statsmodels.csv, unpaired_statsmodels.csv")
