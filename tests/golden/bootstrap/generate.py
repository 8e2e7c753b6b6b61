# SPDX-License-Identifier: MIT
# Golden values for latentaudit's bootstrap intervals from scipy.stats.bootstrap (scipy 1.10.1,
# numpy 1.24). Run from this directory with Debian's interpreter: /usr/bin/python3 generate.py
# Writes, per design (two_arm: independent samples; paired: paired=True; one_sample: the
# standard deviation, a nonlinear statistic):
#   scipy_<design>_data.csv        the simulated data
#   scipy_<design>_replicates.csv  res.bootstrap_distribution (identical for every method: each
#                                  call gets a fresh np.random.default_rng(seed))
#   scipy_<design>_influence.csv   U_ij = (n_j - 1)(mean_i theta_(i)j - theta_(i)j), the jackknife
#                                  values scipy's _bca_interval uses, with the sample j of each
#   scipy_<design>_ci.csv          intervals for percentile, basic, BCa at two levels
#   scipy_<design>_values.csv      theta_hat, standard_error, a_hat (from scipy's _bca_interval)
import numpy as np
import scipy
from scipy import stats
from scipy.stats import _resampling

assert scipy.__version__ == "1.10.1", scipy.__version__
B = 1999
SEED = 424242


def write(path, header, rows):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(x if isinstance(x, str) else repr(float(x)) for x in r) + "\n")


def jackknife_u(data, statistic, paired):
    """scipy 1.10 _bca_interval's U_ij, recomputed by leaving out one observation at a time."""
    if paired:
        n = len(data[0])
        th = np.array([statistic(*[np.delete(s, i) for s in data]) for i in range(n)])
        return [(n - 1) * (th.mean() - th)], [n]
    us, sizes = [], []
    for j, sample in enumerate(data):
        n = len(sample)
        th = []
        for i in range(n):
            d = list(data)
            d[j] = np.delete(sample, i)
            th.append(statistic(*d))
        th = np.array(th)
        us.append((n - 1) * (th.mean() - th))
        sizes.append(n)
    return us, sizes


def run(name, data, statistic, paired, columns):
    n_rows = max(len(s) for s in data)
    rows = []
    for i in range(n_rows):
        rows.append([repr(float(s[i])) if i < len(s) else "NA" for s in data])
    write(f"scipy_{name}_data.csv", columns, rows)
    theta_hat = statistic(*data)
    ci_rows, dist = [], None
    for level in (0.95, 0.8):
        for method in ("percentile", "basic", "BCa"):
            res = stats.bootstrap(data, statistic, n_resamples=B, paired=paired, vectorized=False,
                                  confidence_level=level, method=method,
                                  random_state=np.random.default_rng(SEED))
            d = np.asarray(res.bootstrap_distribution)
            if dist is None:
                dist, se = d, res.standard_error
            assert np.array_equal(dist, d)
            ci_rows.append([repr(level), method, res.confidence_interval.low, res.confidence_interval.high])
    write(f"scipy_{name}_replicates.csv", ["t"], [[x] for x in dist])
    write(f"scipy_{name}_ci.csv", ["level", "method", "low", "high"], ci_rows)
    us, sizes = jackknife_u(data, statistic, paired)
    write(f"scipy_{name}_influence.csv", ["U", "stratum"],
          [[u, repr(j)] for j, uj in enumerate(us) for u in uj])
    # scipy's own acceleration, from its private BCa helper on the same inputs.
    if paired:
        n = len(data[0])
        idx_stat = lambda i, axis=-1: np.apply_along_axis(
            lambda k: statistic(*[s[k.astype(int)] for s in data]), axis, i)
        _, _, a_hat = _resampling._bca_interval((np.arange(n),), idx_stat, -1, 0.025, dist[None, :], None)
    else:
        vec = _resampling._vectorize_statistic(statistic)
        _, _, a_hat = _resampling._bca_interval(tuple(data), vec, -1, 0.025, dist[None, :], None)
    write(f"scipy_{name}_values.csv", ["name", "value"],
          [["theta_hat", theta_hat], ["standard_error", se], ["acceleration", float(np.squeeze(a_hat))],
           ["B", B]])


rng = np.random.default_rng(20261129)
t = rng.exponential(2.0, 31) + 0.5
c = np.exp(rng.normal(0.0, 0.8, 47))
run("two_arm", [t, c], lambda a, b: np.mean(a) - np.mean(b), False, ["treated", "control"])

ctl = rng.gamma(2.0, 1.0, 40)
trt = ctl + rng.exponential(0.5, 40) - 0.3
run("paired", [trt, ctl], lambda a, b: np.mean(a - b), True, ["treated", "control"])

x = rng.lognormal(0.0, 0.7, 30)
run("one_sample", [x], lambda a: np.std(a, ddof=1), False, ["x"])
print("scipy golden files written")
