// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/regression.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_REGRESSION_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_REGRESSION_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../regression.hpp"

#include <Eigen/LU>
#include <Eigen/QR>
#include <boost/math/distributions/fisher_f.hpp>
#include <cmath>
#include <type_traits>
#include <utility>

#include "../../core/detail/check.hpp"
#include "../detail/distributions.hpp"

namespace latentaudit {

namespace detail {

static_assert(
    std::is_same_v<Eigen::ColPivHouseholderQR<Eigen::MatrixXd>::PermutationType, decltype(ls_solution::perm)>,
    "ls_solution::perm must be the permutation type of ColPivHouseholderQR<MatrixXd>");

LATENTAUDIT_INLINE void check_group_count(std::string_view fn, std::size_t n) {
  if (n >= std::numeric_limits<std::uint32_t>::max()) {
    throw_invalid(fn, "labels", "has " + std::to_string(n) + " observations, expected fewer than 2^32 - 1");
  }
}

LATENTAUDIT_INLINE std::string collinear_columns(const Eigen::MatrixXd& a,
                                                 const std::vector<std::string>& names) {
  const Eigen::Index k = a.cols();
  Eigen::MatrixXd basis(a.rows(), k);
  std::vector<Eigen::Index> kept;
  std::string msg;
  for (Eigen::Index j = 0; j < k; ++j) {
    Eigen::VectorXd v = a.col(j);
    const double norm0 = v.norm();
    bool dependent = norm0 == 0.0;
    if (!dependent) {
      for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t m = 0; m < kept.size(); ++m)
          v -= basis.col(static_cast<Eigen::Index>(m)).dot(v) * basis.col(static_cast<Eigen::Index>(m));
      }
      dependent = v.norm() <= collinearity_tolerance * norm0;
    }
    if (!dependent) {
      basis.col(static_cast<Eigen::Index>(kept.size())) = v / v.norm();
      kept.push_back(j);
      continue;
    }
    if (!msg.empty()) msg += "; ";
    msg += "column '" + names[static_cast<std::size_t>(j)] + "'";
    if (norm0 == 0.0) {
      msg += " is all zeros";
      continue;
    }
    // Which earlier columns it depends on: least squares on the kept columns.
    Eigen::MatrixXd ak(a.rows(), static_cast<Eigen::Index>(kept.size()));
    for (std::size_t m = 0; m < kept.size(); ++m) ak.col(static_cast<Eigen::Index>(m)) = a.col(kept[m]);
    const Eigen::VectorXd c = ak.colPivHouseholderQr().solve(a.col(j));
    std::string deps;
    for (std::size_t m = 0; m < kept.size(); ++m) {
      if (std::fabs(c(static_cast<Eigen::Index>(m))) * ak.col(static_cast<Eigen::Index>(m)).norm() >
          1e-6 * norm0) {
        if (!deps.empty()) deps += ", ";
        deps += "'" + names[static_cast<std::size_t>(kept[m])] + "'";
      }
    }
    msg += " is a linear combination of earlier columns (" + deps + ")";
  }
  return msg;
}

LATENTAUDIT_INLINE ls_solution solve_least_squares(std::string_view fn, std::string_view arg,
                                                   const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                                   const std::vector<std::string>& names,
                                                   std::string_view what) {
  const Eigen::Index k = x.cols();
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(x);
  const Eigen::MatrixXd r = qr.matrixR().topLeftCorner(k, k).template triangularView<Eigen::Upper>();
  const Eigen::MatrixXd a = r * qr.colsPermutation().transpose();
  const std::string bad = collinear_columns(a, names);
  if (!bad.empty()) throw_invalid(fn, arg, std::string(what) + bad);
  ls_solution s;
  s.perm = qr.colsPermutation();
  s.rinv = r.template triangularView<Eigen::Upper>().solve(Eigen::MatrixXd::Identity(k, k));
  const Eigen::MatrixXd bp = s.rinv * s.rinv.transpose();
  s.bread = s.perm * bp * s.perm.transpose();
  s.beta = qr.solve(y);
  return s;
}

LATENTAUDIT_INLINE Eigen::VectorXd leverages(const Eigen::MatrixXd& x, const ls_solution& s) {
  Eigen::MatrixXd z = (x * s.perm) * s.rinv.template triangularView<Eigen::Upper>();
  return z.rowwise().squaredNorm();
}

LATENTAUDIT_INLINE Eigen::MatrixXd weighted_cross(const Eigen::MatrixXd& xs, const Eigen::VectorXd& omega) {
  Eigen::MatrixXd m = xs.transpose() * (xs.array().colwise() * omega.array()).matrix();
  return 0.5 * (m + m.transpose());
}

LATENTAUDIT_INLINE Eigen::MatrixXd cluster_scores(const Eigen::MatrixXd& xs, const Eigen::VectorXd& e,
                                                  const group_index& cl) {
  const std::size_t g = cl.groups();
  Eigen::MatrixXd s = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(g), xs.cols());
  const std::uint32_t* gi = cl.group.data();
  const double* ep = e.data();
  for (Eigen::Index j = 0; j < xs.cols(); ++j) {
    const double* xc = xs.col(j).data();
    double* sc = s.col(j).data();
    const auto n = xs.rows();
    for (Eigen::Index i = 0; i < n; ++i) sc[gi[i]] += xc[i] * ep[i];
  }
  return s;
}

LATENTAUDIT_INLINE Eigen::MatrixXd sandwich_covariance(covariance_type type, const sandwich_input& in) {
  const Eigen::MatrixXd& b = *in.bread;
  const double n = in.n, k = in.k;
  switch (type) {
    case covariance_type::classical: {
      const double s2 = in.e->squaredNorm() / (n - k);
      return s2 * b;
    }
    case covariance_type::hc0:
    case covariance_type::hc1:
    case covariance_type::hc2:
    case covariance_type::hc3: {
      Eigen::VectorXd omega = in.e->array().square();
      if (type == covariance_type::hc2) omega.array() /= (1.0 - in.h->array());
      if (type == covariance_type::hc3) omega.array() /= (1.0 - in.h->array()).square();
      Eigen::MatrixXd v = b * weighted_cross(*in.scores_x, omega) * b;
      if (type == covariance_type::hc1) v *= n / (n - k);
      return 0.5 * (v + v.transpose());
    }
    case covariance_type::cr0:
    case covariance_type::cr1_g:
    case covariance_type::cr1:
    case covariance_type::automatic: {
      const Eigen::MatrixXd s = cluster_scores(*in.scores_x, *in.e, *in.clusters);
      const double g = static_cast<double>(in.clusters->groups());
      double factor = 1.0;
      if (type != covariance_type::cr0) factor *= g / (g - 1.0);
      if (type == covariance_type::cr1 || type == covariance_type::automatic) factor *= (n - 1.0) / (n - k);
      Eigen::MatrixXd v = factor * (b * (s.transpose() * s) * b);
      return 0.5 * (v + v.transpose());
    }
  }
  return {};
}

LATENTAUDIT_INLINE covariance_type resolve_covariance(std::string_view fn, covariance_type c,
                                                      reference_distribution d, const group_index* clusters) {
  if (c == covariance_type::automatic) c = clusters ? covariance_type::cr1 : covariance_type::classical;
  if (is_cluster_covariance(c) && !clusters) {
    throw_invalid(fn, "options.covariance",
                  "is " + std::string(covariance_name(c)) +
                      ", which needs cluster ids (use the overload with clusters)");
  }
  if (!is_cluster_covariance(c) && clusters) {
    throw_invalid(
        fn, "options.covariance",
        "is " + std::string(covariance_name(c)) + " but clusters were given; expected cr0, cr1_g or cr1");
  }
  if (d == reference_distribution::t_cluster && !clusters) {
    throw_invalid(fn, "options.distribution", "is t_cluster, which needs cluster ids");
  }
  if (clusters && clusters->groups() < 2) {
    throw_invalid(fn, "clusters",
                  "has " + std::to_string(clusters->groups()) +
                      " cluster, expected at least 2 for a cluster-robust covariance");
  }
  return c;
}

LATENTAUDIT_INLINE double inference_df(reference_distribution d, double df_residual,
                                       const group_index* clusters) {
  switch (d) {
    case reference_distribution::normal:
      return std::numeric_limits<double>::infinity();
    case reference_distribution::t_residual:
      return df_residual;
    case reference_distribution::t_cluster:
      return static_cast<double>(clusters->groups()) - 1.0;
  }
  return df_residual;
}

LATENTAUDIT_INLINE void fill_term(effect_estimate& e, double df, double level) {
  e.level = level;
  e.df = std::isinf(df) ? effect_estimate::nan : df;
  if (!(e.std_error > 0.0) || !std::isfinite(e.std_error)) {
    e.status = estimate_status::degenerate;
    e.std_error = e.statistic = e.p_value = e.ci_low = e.ci_high = effect_estimate::nan;
    return;
  }
  e.statistic = e.estimate / e.std_error;
  e.p_value = t_two_sided_p(e.statistic, df);
  const double q = t_quantile_upper((1.0 - level) / 2.0, df);
  e.ci_low = e.estimate - q * e.std_error;
  e.ci_high = e.estimate + q * e.std_error;
}

LATENTAUDIT_INLINE bool has_constant_column(const Eigen::MatrixXd& x) {
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    const double c0 = x(0, j);
    if (c0 != 0.0 && (x.col(j).array() == c0).all()) return true;
  }
  return false;
}

LATENTAUDIT_INLINE void degenerate_fit(ols_result& r, on_degenerate policy, std::string_view fn,
                                       const std::string& why) {
  if (policy == on_degenerate::throw_error) throw_numerical(fn, why);
  r.status = estimate_status::degenerate;
  r.covariance.setConstant(effect_estimate::nan);
  for (auto& t : r.terms) {
    t.status = estimate_status::degenerate;
    t.std_error = t.statistic = t.p_value = t.ci_low = t.ci_high = effect_estimate::nan;
  }
}

LATENTAUDIT_INLINE void check_ols_inputs(std::string_view fn, const design_matrix& x,
                                         std::span<const double> y, const ols_options& o) {
  check_open_unit(fn, "options.level", o.level);
  if (x.names.size() != x.cols()) {
    check_same_size(fn, "x.names", x.names.size(), "x.x columns", x.cols());
  }
  check_same_size(fn, "x", x.rows(), "y", y.size());
  if (x.cols() == 0) throw_invalid(fn, "x", "has no columns, expected at least 1");
  if (x.rows() <= x.cols() + o.absorbed_parameters) {
    throw_invalid(fn, "x",
                  "has " + std::to_string(x.rows()) + " rows and " +
                      std::to_string(x.cols() + o.absorbed_parameters) +
                      " parameters, expected more rows than parameters");
  }
  if (!x.x.allFinite()) {
    for (Eigen::Index j = 0; j < x.x.cols(); ++j) {
      for (Eigen::Index i = 0; i < x.x.rows(); ++i) {
        if (!std::isfinite(x.x(i, j))) {
          throw_invalid(fn, "x",
                        "must hold finite values, got " + number_text(x.x(i, j)) + " in column '" +
                            x.names[static_cast<std::size_t>(j)] + "' at row " + std::to_string(i));
        }
      }
    }
  }
  check_finite(fn, "y", y);
  if (!o.weights.empty()) {
    check_same_size(fn, "options.weights", o.weights.size(), "y", y.size());
    for (std::size_t i = 0; i < o.weights.size(); ++i) {
      if (!(o.weights[i] > 0.0) || !std::isfinite(o.weights[i])) {
        throw_invalid(fn, "options.weights",
                      "must hold positive finite values, got " + number_text(o.weights[i]) + " at index " +
                          std::to_string(i));
      }
    }
  }
}

LATENTAUDIT_INLINE ols_result ols_impl(const design_matrix& dm, std::span<const double> y,
                                       const group_index* clusters, const ols_options& o, std::string_view fn,
                                       std::string_view x_name) {
  check_ols_inputs(fn, dm, y, o);
  if (clusters) check_same_size(fn, "clusters", clusters->size(), "y", y.size());
  const covariance_type cov = resolve_covariance(fn, o.covariance, o.distribution, clusters);
  const auto n = static_cast<Eigen::Index>(y.size());
  const Eigen::Map<const Eigen::VectorXd> ymap(y.data(), n);

  // Weighted rows: √wᵢ xᵢ and √wᵢ yᵢ (no copy for OLS).
  const bool weighted = !o.weights.empty();
  Eigen::MatrixXd xw;
  Eigen::VectorXd yw, sw;
  if (weighted) {
    sw = Eigen::Map<const Eigen::VectorXd>(o.weights.data(), n).array().sqrt();
    xw = dm.x.array().colwise() * sw.array();
    yw = ymap.array() * sw.array();
  } else {
    yw = ymap;
  }
  const Eigen::MatrixXd& xs = weighted ? xw : dm.x;
  const ls_solution sol = solve_least_squares(fn, x_name, xs, yw, dm.names);

  ols_result r;
  r.names = dm.names;
  r.coefficients = sol.beta;
  r.n = y.size();
  r.k = dm.cols() + o.absorbed_parameters;
  r.clusters = clusters ? clusters->groups() : 0;
  r.df_residual = static_cast<double>(r.n) - static_cast<double>(r.k);
  r.covariance_kind = cov;
  r.distribution = o.distribution;
  r.level = o.level;
  r.inference_df = inference_df(o.distribution, r.df_residual, clusters);
  r.residuals = ymap - dm.x * sol.beta;
  const Eigen::VectorXd ew = weighted ? Eigen::VectorXd(r.residuals.array() * sw.array()) : r.residuals;
  r.rss = ew.squaredNorm();
  r.sigma = std::sqrt(r.rss / r.df_residual);

  // R²: centred (weighted mean) when X contains a constant column, uncentred otherwise (R's rule).
  double tss = 0;
  if (has_constant_column(dm.x)) {
    const double wsum =
        weighted ? Eigen::Map<const Eigen::VectorXd>(o.weights.data(), n).sum() : static_cast<double>(n);
    const double ybar = (weighted ? (sw.array() * yw.array()).sum() : ymap.sum()) / wsum;
    tss = weighted ? ((ymap.array() - ybar).square() * sw.array().square()).sum()
                   : (ymap.array() - ybar).square().sum();
    r.adj_r_squared = 1.0 - (r.rss / tss) * (static_cast<double>(r.n) - 1.0) / r.df_residual;
  } else {
    tss = yw.squaredNorm();
    r.adj_r_squared = 1.0 - (r.rss / tss) * static_cast<double>(r.n) / r.df_residual;
  }
  r.r_squared = 1.0 - r.rss / tss;

  r.terms.resize(dm.cols());
  for (std::size_t j = 0; j < dm.cols(); ++j) {
    r.terms[j].method = "ols_" + std::string(covariance_name(cov));
    r.terms[j].estimand = dm.names[j];
    r.terms[j].estimate = sol.beta(static_cast<Eigen::Index>(j));
  }

  // Exact fit: every residual is zero up to rounding → standard errors undefined.
  const double yscale = yw.norm();
  if (!(r.rss > 0.0) || std::sqrt(r.rss) <= 64.0 * std::numeric_limits<double>::epsilon() * yscale) {
    r.covariance =
        Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(dm.cols()), static_cast<Eigen::Index>(dm.cols()));
    degenerate_fit(r, o.if_degenerate, fn,
                   "the fit is exact (residual sum of squares 0); standard errors are undefined");
    return r;
  }
  Eigen::VectorXd h;
  if (cov == covariance_type::hc2 || cov == covariance_type::hc3) {
    h = leverages(xs, sol);
    Eigen::Index imax = 0;
    if (h.maxCoeff(&imax) >= 1.0 - 1e-10) {
      r.covariance =
          Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(dm.cols()), static_cast<Eigen::Index>(dm.cols()));
      degenerate_fit(r, o.if_degenerate, fn,
                     "observation " + std::to_string(imax) + " has leverage 1; " +
                         std::string(covariance_name(cov)) + " is undefined");
      return r;
    }
  }
  sandwich_input in{.scores_x = &xs,
                    .e = &ew,
                    .bread = &sol.bread,
                    .h = &h,
                    .clusters = clusters,
                    .n = static_cast<double>(r.n),
                    .k = static_cast<double>(r.k)};
  r.covariance = sandwich_covariance(cov, in);
  for (std::size_t j = 0; j < dm.cols(); ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    r.terms[j].std_error = std::sqrt(r.covariance(jj, jj));
    fill_term(r.terms[j], r.inference_df, o.level);
  }
  return r;
}

}  // namespace detail

LATENTAUDIT_INLINE group_index make_group_index(std::span<const std::string> labels) {
  detail::check_group_count("make_group_index", labels.size());
  group_index gi;
  gi.group.resize(labels.size());
  std::unordered_map<std::string_view, std::uint32_t> map;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    auto [it, inserted] =
        map.try_emplace(std::string_view(labels[i]), static_cast<std::uint32_t>(gi.labels.size()));
    if (inserted) gi.labels.push_back(labels[i]);
    gi.group[i] = it->second;
  }
  return gi;
}

LATENTAUDIT_INLINE std::size_t design_matrix::index(std::string_view name) const {
  for (std::size_t j = 0; j < names.size(); ++j) {
    if (names[j] == name) return j;
  }
  detail::throw_invalid("design_matrix::index", "name", "'" + std::string(name) + "' is not a column");
}

LATENTAUDIT_INLINE std::size_t ols_result::index(std::string_view name) const {
  for (std::size_t j = 0; j < names.size(); ++j) {
    if (names[j] == name) return j;
  }
  detail::throw_invalid("ols_result::index", "name", "'" + std::string(name) + "' is not a coefficient");
}

LATENTAUDIT_INLINE design_builder::design_builder(std::size_t n) : n_(n) {
  if (n == 0) detail::throw_invalid("design_builder", "n", "must be at least 1, got 0");
}

LATENTAUDIT_INLINE void design_builder::check_name(const std::string& name) const {
  if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
    detail::throw_invalid("design_builder", "name", "'" + name + "' is already a column");
  }
}

LATENTAUDIT_INLINE design_builder& design_builder::intercept(std::string name) {
  check_name(name);
  names_.push_back(std::move(name));
  columns_.emplace_back(n_, 1.0);
  return *this;
}

LATENTAUDIT_INLINE design_builder& design_builder::add(std::string name, std::span<const double> column) {
  detail::check_same_size("design_builder::add", "column", column.size(), "n", n_);
  detail::check_finite("design_builder::add", name, column);
  check_name(name);
  names_.push_back(std::move(name));
  columns_.emplace_back(column.begin(), column.end());
  return *this;
}

LATENTAUDIT_INLINE design_builder& design_builder::add_dummies(const std::string& prefix,
                                                               const group_index& groups, bool drop_first) {
  detail::check_same_size("design_builder::add_dummies", "groups", groups.size(), "n", n_);
  const std::size_t first = drop_first ? 1 : 0;
  for (std::size_t g = first; g < groups.groups(); ++g) check_name(prefix + groups.labels[g]);
  const std::size_t base = columns_.size();
  for (std::size_t g = first; g < groups.groups(); ++g) {
    names_.push_back(prefix + groups.labels[g]);
    columns_.emplace_back(n_, 0.0);
  }
  for (std::size_t i = 0; i < n_; ++i) {
    const std::size_t g = groups.group[i];
    if (g >= first) columns_[base + g - first][i] = 1.0;
  }
  return *this;
}

LATENTAUDIT_INLINE design_matrix design_builder::build() const {
  if (columns_.empty())
    detail::throw_invalid("design_builder::build", "columns", "is empty, expected at least 1 column");
  design_matrix d;
  d.names = names_;
  d.x.resize(static_cast<Eigen::Index>(n_), static_cast<Eigen::Index>(columns_.size()));
  for (std::size_t j = 0; j < columns_.size(); ++j) {
    d.x.col(static_cast<Eigen::Index>(j)) =
        Eigen::Map<const Eigen::VectorXd>(columns_[j].data(), static_cast<Eigen::Index>(n_));
  }
  return d;
}

LATENTAUDIT_INLINE ols_result ols(const design_matrix& x, std::span<const double> y,
                                  const ols_options& options) {
  return detail::ols_impl(x, y, nullptr, options);
}

LATENTAUDIT_INLINE ols_result ols(const design_matrix& x, std::span<const double> y,
                                  const group_index& clusters, const ols_options& options) {
  return detail::ols_impl(x, y, &clusters, options);
}

LATENTAUDIT_INLINE wald_test_result wald_test(const ols_result& fit, const Eigen::MatrixXd& r_matrix,
                                              const Eigen::VectorXd& r_vector) {
  constexpr std::string_view fn = "wald_test";
  const auto k = fit.coefficients.size();
  detail::check_same_size(fn, "r_matrix columns", static_cast<std::size_t>(r_matrix.cols()), "coefficients",
                          static_cast<std::size_t>(k));
  if (r_matrix.rows() == 0)
    detail::throw_invalid(fn, "r_matrix", "has no rows, expected at least 1 restriction");
  if (!r_matrix.allFinite()) detail::throw_invalid(fn, "r_matrix", "must hold finite values");
  Eigen::VectorXd rv = r_vector.size() == 0 ? Eigen::VectorXd::Zero(r_matrix.rows()) : r_vector;
  detail::check_same_size(fn, "r_vector", static_cast<std::size_t>(rv.size()), "r_matrix rows",
                          static_cast<std::size_t>(r_matrix.rows()));
  if (!rv.allFinite()) detail::throw_invalid(fn, "r_vector", "must hold finite values");
  wald_test_result w;
  const double q = static_cast<double>(r_matrix.rows());
  w.df1 = q;
  w.df2 = fit.inference_df;
  if (fit.status != estimate_status::ok || !fit.covariance.allFinite()) {
    w.status = estimate_status::degenerate;
    return w;
  }
  const Eigen::VectorXd d = r_matrix * fit.coefficients - rv;
  const Eigen::MatrixXd m = r_matrix * fit.covariance * r_matrix.transpose();
  Eigen::FullPivLU<Eigen::MatrixXd> lu(m);
  lu.setThreshold(1e-12);
  if (lu.rank() < m.rows()) {
    detail::throw_invalid(fn, "r_matrix",
                          "gives a singular R V R' (rank " + std::to_string(lu.rank()) + " of " +
                              std::to_string(m.rows()) + "); the restrictions must be linearly independent");
  }
  w.chi2 = d.dot(lu.solve(d));
  w.f = w.chi2 / q;
  w.chi2_p = detail::chi2_upper(w.chi2, q);
  if (std::isinf(w.df2)) {
    w.f_p = w.chi2_p;
  } else {
    w.f_p = w.f <= 0.0 ? 1.0
                       : boost::math::cdf(boost::math::complement(
                             boost::math::fisher_f_distribution<double, detail::math_policy>(q, w.df2), w.f));
  }
  w.p_value = fit.distribution == reference_distribution::normal ? w.chi2_p : w.f_p;
  return w;
}

LATENTAUDIT_INLINE wald_test_result wald_test(const ols_result& fit, std::span<const std::string> names) {
  if (names.empty()) detail::throw_invalid("wald_test", "names", "is empty, expected at least 1 coefficient");
  Eigen::MatrixXd rm =
      Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(names.size()), fit.coefficients.size());
  for (std::size_t q = 0; q < names.size(); ++q) {
    std::size_t j = 0;
    for (; j < fit.names.size() && fit.names[j] != names[q]; ++j) {
    }
    if (j == fit.names.size())
      detail::throw_invalid("wald_test", "names", "'" + names[q] + "' is not a coefficient");
    for (std::size_t p = 0; p < q; ++p) {
      if (names[p] == names[q]) detail::throw_invalid("wald_test", "names", "repeats '" + names[q] + "'");
    }
    rm(static_cast<Eigen::Index>(q), static_cast<Eigen::Index>(j)) = 1.0;
  }
  return wald_test(fit, rm);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_REGRESSION_INL_HPP
