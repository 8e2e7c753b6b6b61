# SPDX-License-Identifier: MIT
# Golden values for estimators/multiplicity.hpp from statsmodels.stats.multitest.multipletests
# (statsmodels 0.13.5) on the p-value vectors written by generate.R (cases without NA).
# Run from this directory with Debian's Python: /usr/bin/python3 generate.py  (writes multipletests.csv)
import csv
from collections import OrderedDict

import numpy as np
from statsmodels.stats.multitest import multipletests

cases = OrderedDict()
with open("p_values.csv") as f:
    for row in csv.DictReader(f):
        cases.setdefault(row["case"], []).append(float(row["p"]) if row["p"] != "NA" else float("nan"))

methods = ["bonferroni", "holm", "simes-hochberg", "fdr_bh", "fdr_by"]
alphas = [0.05, 0.1]
with open("multipletests.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["case", "method", "alpha", "index", "adjusted", "reject"])
    for name, p in cases.items():
        p = np.asarray(p)
        if np.isnan(p).any():
            continue  # multipletests has no missing-value convention
        for m in methods:
            for a in alphas:
                reject, adj, _, _ = multipletests(p, alpha=a, method=m)
                for i, (r, v) in enumerate(zip(reject, adj)):
                    w.writerow([name, m, repr(a), i, repr(float(v)), int(bool(r))])
