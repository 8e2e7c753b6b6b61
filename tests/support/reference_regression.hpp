// SPDX-License-Identifier: MIT
// Test support: naive reference implementations (oracles) of least squares, the sandwich
// covariances and 2SLS, written as literally as the textbook formulas with explicit n × n
// matrices (hat matrix, diagonal Ω, cluster block matrix). Only for small n in property tests.
#ifndef LATENTAUDIT_TESTS_SUPPORT_REFERENCE_REGRESSION_HPP
#define LATENTAUDIT_TESTS_SUPPORT_REFERENCE_REGRESSION_HPP

#include <Eigen/Dense>
#include <string>
#include <vector>

namespace latentaudit::test {

/// Coefficients and covariance from the naive formulas.
struct reference_fit {
  Eigen::VectorXd beta;
  Eigen::MatrixXd v;
};

/// Naive OLS/WLS: β = (X'WX)⁻¹X'Wy by explicit inverse; covariance by the textbook sandwich
/// with explicit n × n matrices. type: "classical", "hc0".."hc3", "cr0", "cr1_g", "cr1".
/// `cluster` holds one integer id per row (used by the cr types only); k_extra adds to k.
inline reference_fit reference_ols(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                   const std::string& type, const std::vector<int>& cluster = {},
                                   const Eigen::VectorXd& weights = {}, int k_extra = 0) {
  const auto n = x.rows();
  const double nd = static_cast<double>(n);
  const double k = static_cast<double>(x.cols() + k_extra);
  Eigen::MatrixXd w = Eigen::MatrixXd::Identity(n, n);
  if (weights.size() == n) w = weights.asDiagonal();
  const Eigen::MatrixXd xtwx = x.transpose() * w * x;
  const Eigen::MatrixXd b = xtwx.inverse();
  reference_fit f;
  f.beta = b * x.transpose() * w * y;
  const Eigen::VectorXd e = y - x * f.beta;
  // Hat matrix of the weighted problem: W^{1/2} X (X'WX)^{-1} X' W^{1/2}.
  const Eigen::MatrixXd ws = w.array().sqrt().matrix();
  const Eigen::MatrixXd h = ws * x * b * x.transpose() * ws;
  const Eigen::VectorXd es = ws * e;  // weighted residuals
  if (type == "classical") {
    f.v = (es.squaredNorm() / (nd - k)) * b;
    return f;
  }
  const Eigen::MatrixXd xs = ws * x;
  if (type.rfind("hc", 0) == 0) {
    Eigen::MatrixXd omega = Eigen::MatrixXd::Zero(n, n);
    for (Eigen::Index i = 0; i < n; ++i) {
      double o = es(i) * es(i);
      if (type == "hc2") o /= 1.0 - h(i, i);
      if (type == "hc3") o /= (1.0 - h(i, i)) * (1.0 - h(i, i));
      omega(i, i) = o;
    }
    f.v = b * xs.transpose() * omega * xs * b;
    if (type == "hc1") f.v *= nd / (nd - k);
    return f;
  }
  // Cluster: meat = X' (e e' ∘ C) X with C_ij = 1 when i and j share a cluster.
  Eigen::MatrixXd c = Eigen::MatrixXd::Zero(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j)
      c(i, j) = cluster[static_cast<std::size_t>(i)] == cluster[static_cast<std::size_t>(j)] ? 1.0 : 0.0;
  }
  std::vector<int> seen;
  for (int g : cluster) {
    bool found = false;
    for (int s : seen) found = found || s == g;
    if (!found) seen.push_back(g);
  }
  const double g = static_cast<double>(seen.size());
  const Eigen::MatrixXd meat = xs.transpose() * ((es * es.transpose()).cwiseProduct(c)) * xs;
  f.v = b * meat * b;
  if (type != "cr0") f.v *= g / (g - 1.0);
  if (type == "cr1") f.v *= (nd - 1.0) / (nd - k);
  return f;
}

/// Naive 2SLS: X̂ = Z(Z'Z)⁻¹Z'X, β = (X̂'X)⁻¹X̂'y, residuals with X; classical covariance
/// σ²(X̂'X̂)⁻¹ (σ² = e'e/(n−k)) or HC0/HC1 sandwich with X̂.
inline reference_fit reference_2sls(const Eigen::MatrixXd& x, const Eigen::MatrixXd& z,
                                    const Eigen::VectorXd& y, const std::string& type) {
  const double n = static_cast<double>(x.rows()), k = static_cast<double>(x.cols());
  const Eigen::MatrixXd pz = z * (z.transpose() * z).inverse() * z.transpose();
  const Eigen::MatrixXd xh = pz * x;
  reference_fit f;
  const Eigen::MatrixXd b = (xh.transpose() * xh).inverse();
  f.beta = (xh.transpose() * x).inverse() * xh.transpose() * y;
  const Eigen::VectorXd e = y - x * f.beta;
  if (type == "classical") {
    f.v = e.squaredNorm() / (n - k) * b;
    return f;
  }
  const Eigen::MatrixXd omega = e.array().square().matrix().asDiagonal();
  f.v = b * xh.transpose() * omega * xh * b;
  if (type == "hc1") f.v *= n / (n - k);
  return f;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_REFERENCE_REGRESSION_HPP
