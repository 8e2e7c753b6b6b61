# SPDX-License-Identifier: MIT
# Golden values for include/latentaudit/estimators/regression.hpp from statsmodels 0.13.5.
# Run from this directory with Debian's Python: /usr/bin/python3 generate.py (after generate.R,
# which writes data.csv). Writes py_terms.csv (one row per fit x coefficient).
import csv

import numpy as np
import statsmodels.api as sm

rows = list(csv.DictReader(open("data.csv")))
y = np.array([float(r["y"]) for r in rows])
X = sm.add_constant(np.column_stack([[float(r[c]) for r in rows] for c in ("x1", "x2", "x3")]))
w = np.array([float(r["w"]) for r in rows])
cl = np.array([int(float(r["cl"])) for r in rows])
names = ["(Intercept)", "x1", "x2", "x3"]

out = [("fit", "term", "estimate", "se", "statistic", "p", "ci_low", "ci_high")]


def add(name, res):
    ci = res.conf_int(0.05)
    for j, t in enumerate(names):
        out.append((name, t, repr(res.params[j]), repr(res.bse[j]), repr(res.tvalues[j]), repr(res.pvalues[j]),
                    repr(ci[j, 0]), repr(ci[j, 1])))


for fit_name, model in (("ols", sm.OLS(y, X)), ("wls", sm.WLS(y, X, weights=w))):
    add(fit_name + "_classical_normal", model.fit(use_t=False))
    for ty in ("HC0", "HC1", "HC2", "HC3"):
        add(fit_name + "_" + ty.lower() + "_normal", model.fit(cov_type=ty))
        add(fit_name + "_" + ty.lower() + "_t", model.fit(cov_type=ty, use_t=True))
    add(fit_name + "_cr1_normal", model.fit(cov_type="cluster", cov_kwds={"groups": cl}))
    add(fit_name + "_cr1_tcluster", model.fit(cov_type="cluster", cov_kwds={"groups": cl}, use_t=True))
    add(fit_name + "_cr0_normal", model.fit(cov_type="cluster", cov_kwds={"groups": cl, "use_correction": False}))

with open("py_terms.csv", "w", newline="") as f:
    csv.writer(f).writerows(out)
