# SPDX-License-Identifier: MIT
# Second, independent reference for estimators/weighting.hpp: statsmodels 0.13 GLM(Binomial) for
# the propensity score, then IPW / AIPW and the stacked M-estimation sandwich written directly in
# numpy (per-unit estimating functions, Jacobian by analytic derivatives of the *mean* moments).
# Run with Debian's /usr/bin/python3 after generate.R (reads data.csv): writes python_results.csv.
import csv

import numpy as np
import statsmodels.api as sm

rows = list(csv.DictReader(open("data.csv")))
y = np.array([float(r["y"]) for r in rows])
t = np.array([float(r["t"]) for r in rows])
X = np.column_stack([np.ones(len(rows))] + [np.array([float(r[c]) for r in rows]) for c in ("x1", "x2", "x3")])
n, p = X.shape

fit = sm.GLM(t, X, family=sm.families.Binomial()).fit(tol=1e-14, maxiter=100)
beta = fit.params
eraw = 1.0 / (1.0 + np.exp(-X @ beta))


def ipw(estimand, norm, trim, eps=0.05):
    out = (eraw < eps) | (eraw > 1 - eps)
    e = eraw.copy()
    dedeta = eraw * (1 - eraw)
    keep = np.ones(n, bool)
    if trim == "clip":
        e = np.clip(eraw, eps, 1 - eps)
        dedeta = np.where(out, 0.0, dedeta)
    if trim == "drop":
        keep = ~out
        dedeta = np.where(out, 0.0, dedeta)
    k = keep.astype(float)
    if estimand == "ate":
        w1, w0 = 1 / e, 1 / (1 - e)
        dw1, dw0 = -dedeta / e**2, dedeta / (1 - e) ** 2  # d w / d eta
    else:
        w1, w0 = np.ones(n), e / (1 - e)
        dw1, dw0 = np.zeros(n), dedeta / (1 - e) ** 2
    w = np.where(t == 1, w1, w0) * k
    if norm == "hajek":
        mu1 = np.sum(k * t * w1 * y) / np.sum(k * t * w1)
        mu0 = np.sum(k * (1 - t) * w0 * y) / np.sum(k * (1 - t) * w0)
        m = np.column_stack([k * t * w1 * (y - mu1), k * (1 - t) * w0 * (y - mu0)])
        dg = np.diag([-np.sum(k * t * w1), -np.sum(k * (1 - t) * w0)])
        db = np.vstack([X.T @ (k * t * dw1 * (y - mu1)), X.T @ (k * (1 - t) * dw0 * (y - mu0))])
        c = np.array([1.0, -1.0])
    else:
        den = np.sum(k) if estimand == "ate" else np.sum(k * t)
        mu1 = np.sum(k * t * w1 * y) / den
        mu0 = np.sum(k * (1 - t) * w0 * y) / den
        tau = mu1 - mu0
        scale = np.ones(n) if estimand == "ate" else t
        m = (k * (t * w1 * y - (1 - t) * w0 * y - tau * scale))[:, None]
        dg = np.array([[-np.sum(k * scale)]])
        db = (X.T @ (k * (t * dw1 * y - (1 - t) * dw0 * y)))[None, :]
        c = np.array([1.0])
    g = m.shape[1]
    s = X * (t - eraw)[:, None]
    P = np.hstack([m, s])
    B = P.T @ P
    A = np.zeros((g + p, g + p))
    A[:g, :g] = dg
    A[:g, g:] = db
    A[g:, g:] = -(X * (eraw * (1 - eraw))[:, None]).T @ X
    Ai = np.linalg.inv(A)
    cc = np.concatenate([c, np.zeros(p)])
    se_stacked = np.sqrt(cc @ Ai @ B @ Ai.T @ cc)
    Agi = np.linalg.inv(dg)
    se_known = np.sqrt(c @ Agi @ B[:g, :g] @ Agi.T @ c)
    return mu1 - mu0, se_stacked, se_known, mu1, mu0, int(out.sum()) if trim != "none" else 0


def aipw(estimand, trim, eps=0.05):
    out = (eraw < eps) | (eraw > 1 - eps)
    e = np.clip(eraw, eps, 1 - eps) if trim == "clip" else eraw.copy()
    keep = ~out if trim == "drop" else np.ones(n, bool)
    Xk, yk, tk, ek = X[keep], y[keep], t[keep], e[keep]
    b0 = np.linalg.lstsq(Xk[tk == 0], yk[tk == 0], rcond=None)[0]
    m0 = Xk @ b0
    if estimand == "ate":
        b1 = np.linalg.lstsq(Xk[tk == 1], yk[tk == 1], rcond=None)[0]
        m1 = Xk @ b1
        a1 = m1 + tk * (yk - m1) / ek
        a0 = m0 + (1 - tk) * (yk - m0) / (1 - ek)
        psi = a1 - a0
        tau, mu1, mu0 = psi.mean(), a1.mean(), a0.mean()
    else:
        n1 = tk.sum()
        o = ek / (1 - ek)
        tau = np.sum((tk - (1 - tk) * o) * (yk - m0)) / n1
        mu1 = yk[tk == 1].mean()
        mu0 = mu1 - tau
        psi = (len(yk) / n1) * (tk * (yk - m0 - tau) - (1 - tk) * o * (yk - m0))
    se = np.std(psi, ddof=1) / np.sqrt(len(psi))
    return tau, se, mu1, mu0, int(out.sum()) if trim != "none" else 0


with open("python_results.csv", "w", newline="") as f:
    wr = csv.writer(f)
    wr.writerow(["case", "estimate", "se_stacked", "se_known", "mu1", "mu0", "n_trimmed"])
    wr.writerow(["glm_coef"] + [repr(float(b)) for b in beta] + ["", ""])
    for est in ("ate", "att"):
        for tr in ("none", "clip", "drop"):
            for nm in ("ht", "hajek"):
                tau, ses, sek, mu1, mu0, nt = ipw(est, nm, tr)
                wr.writerow([f"ipw_{est}_{nm}_{tr}", repr(float(tau)), repr(float(ses)), repr(float(sek)),
                             repr(float(mu1)), repr(float(mu0)), nt])
            tau, se, mu1, mu0, nt = aipw(est, tr)
            wr.writerow([f"aipw_{est}_{tr}", repr(float(tau)), "NA", repr(float(se)), repr(float(mu1)),
                         repr(float(mu0)), nt])
