# SPDX-License-Identifier: MIT
# Golden values for include/latentaudit/estimators/instrumental.hpp from statsmodels 0.13.5
# (statsmodels.sandbox.regression.gmm.IV2SLS, classical covariance with sigma^2 = e'e/(n-k)).
# Run from this directory with Debian's Python after generate.R: /usr/bin/python3 generate.py
import csv

import numpy as np
from statsmodels.sandbox.regression.gmm import IV2SLS

rows = list(csv.DictReader(open("data.csv")))
col = lambda c: np.array([float(r[c]) for r in rows])
y, x, d, z, z2, d2 = col("y"), col("x"), col("d"), col("z"), col("z2"), col("d2")
one = np.ones_like(y)
out = [("fit", "term", "estimate", "se")]
for name, X, Z, names in (("just", np.column_stack([one, x, d]), np.column_stack([one, x, z]), ["(Intercept)", "x", "d"]),
                          ("over", np.column_stack([one, x, d2]), np.column_stack([one, x, z, z2]), ["(Intercept)", "x", "d2"])):
    res = IV2SLS(y, X, Z).fit()
    for j, t in enumerate(names):
        out.append((name + "_classical", t, repr(res.params[j]), repr(res.bse[j])))
with open("py_terms.csv", "w", newline="") as f:
    csv.writer(f).writerows(out)
