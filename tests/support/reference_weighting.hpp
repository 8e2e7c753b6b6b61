// SPDX-License-Identifier: MIT
// Test support: naive reference implementations (oracles) for estimators/weighting.hpp.
//  - logistic regression by plain Newton–Raphson on the normal equations (no QR, no step halving,
//    fixed number of iterations);
//  - the stacked M-estimation sandwich with the Jacobian taken by central finite differences of
//    the summed estimating functions (no analytic derivatives), for untrimmed IPW.
#ifndef LATENTAUDIT_TESTS_SUPPORT_REFERENCE_WEIGHTING_HPP
#define LATENTAUDIT_TESTS_SUPPORT_REFERENCE_WEIGHTING_HPP

#include <Eigen/Dense>
#include <cmath>
#include <vector>

namespace latentaudit::test {

/// Newton–Raphson for logistic regression on [1, X], `iterations` plain steps from β = 0.
inline Eigen::VectorXd naive_logistic(const Eigen::MatrixXd& x, const std::vector<double>& t,
                                      int iterations = 40) {
  const Eigen::Index n = x.rows(), p = x.cols() + 1;
  Eigen::MatrixXd d(n, p);
  d.col(0).setOnes();
  d.rightCols(x.cols()) = x;
  Eigen::VectorXd b = Eigen::VectorXd::Zero(p);
  for (int it = 0; it < iterations; ++it) {
    Eigen::VectorXd g = Eigen::VectorXd::Zero(p);
    Eigen::MatrixXd h = Eigen::MatrixXd::Zero(p, p);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double e = 1.0 / (1.0 + std::exp(-d.row(i).dot(b)));
      g += d.row(i).transpose() * (t[static_cast<std::size_t>(i)] - e);
      h += e * (1 - e) * d.row(i).transpose() * d.row(i);
    }
    b += h.ldlt().solve(g);
  }
  return b;
}

/// Summed estimating functions of untrimmed IPW at θ = (γ, β); γ = (μ₁, μ₀) (Hájek) or τ (HT).
inline Eigen::VectorXd ipw_moments(const Eigen::VectorXd& th, const Eigen::MatrixXd& d,
                                   const std::vector<double>& y, const std::vector<double>& t, bool att,
                                   bool hajek) {
  const Eigen::Index g = hajek ? 2 : 1, p = d.cols();
  Eigen::VectorXd s = Eigen::VectorXd::Zero(g + p);
  for (Eigen::Index i = 0; i < d.rows(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    const double e = 1.0 / (1.0 + std::exp(-d.row(i).dot(th.tail(p))));
    const double w1 = att ? 1.0 : 1.0 / e, w0 = att ? e / (1 - e) : 1.0 / (1 - e);
    if (hajek) {
      s[0] += t[u] * w1 * (y[u] - th[0]);
      s[1] += (1 - t[u]) * w0 * (y[u] - th[1]);
    } else {
      s[0] += t[u] * w1 * y[u] - (1 - t[u]) * w0 * y[u] - th[0] * (att ? t[u] : 1.0);
    }
    s.tail(p) += d.row(i).transpose() * (t[u] - e);
  }
  return s;
}

/// Stacked sandwich SE of the effect with a finite-difference Jacobian (step h relative).
inline double naive_stacked_se(const Eigen::VectorXd& theta, const Eigen::MatrixXd& x,
                               const std::vector<double>& y, const std::vector<double>& t, bool att,
                               bool hajek) {
  const Eigen::Index n = x.rows(), p = x.cols() + 1, g = hajek ? 2 : 1, k = g + p;
  Eigen::MatrixXd d(n, p);
  d.col(0).setOnes();
  d.rightCols(x.cols()) = x;
  Eigen::MatrixXd a(k, k);
  for (Eigen::Index j = 0; j < k; ++j) {
    const double h = 1e-5 * std::fmax(1.0, std::fabs(theta[j]));
    Eigen::VectorXd tp = theta, tm = theta;
    tp[j] += h;
    tm[j] -= h;
    a.col(j) = (ipw_moments(tp, d, y, t, att, hajek) - ipw_moments(tm, d, y, t, att, hajek)) / (2 * h);
  }
  Eigen::MatrixXd b = Eigen::MatrixXd::Zero(k, k);
  for (Eigen::Index i = 0; i < n; ++i) {
    // Per-unit moments: evaluate the sum over a one-row design.
    std::vector<double> yi{y[static_cast<std::size_t>(i)]}, ti{t[static_cast<std::size_t>(i)]};
    const Eigen::VectorXd psi = ipw_moments(theta, d.row(i), yi, ti, att, hajek);
    b += psi * psi.transpose();
  }
  const Eigen::MatrixXd ai = a.inverse();
  const Eigen::MatrixXd c = ai * b * ai.transpose();
  return hajek ? std::sqrt(c(0, 0) + c(1, 1) - 2 * c(0, 1)) : std::sqrt(c(0, 0));
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_REFERENCE_WEIGHTING_HPP
