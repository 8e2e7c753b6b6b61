// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/instrumental.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_INSTRUMENTAL_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_INSTRUMENTAL_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../instrumental.hpp"

#include <Eigen/QR>
#include <boost/math/distributions/fisher_f.hpp>
#include <cmath>
#include <limits>
#include <utility>

#include "../../core/detail/check.hpp"
#include "../detail/distributions.hpp"

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE design_matrix bind_columns(const design_matrix& a, const design_matrix& b, std::size_t n) {
  design_matrix out;
  out.x.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(a.cols() + b.cols()));
  if (a.cols() > 0) out.x.leftCols(static_cast<Eigen::Index>(a.cols())) = a.x;
  if (b.cols() > 0) out.x.rightCols(static_cast<Eigen::Index>(b.cols())) = b.x;
  out.names = a.names;
  out.names.insert(out.names.end(), b.names.begin(), b.names.end());
  return out;
}

LATENTAUDIT_INLINE void check_iv_block(std::string_view fn, std::string_view name, const design_matrix& m,
                                       std::size_t n) {
  if (m.cols() == 0) return;
  check_same_size(fn, name, m.rows(), "y", n);
  check_same_size(fn, std::string(name) + ".names", m.names.size(), std::string(name) + " columns", m.cols());
  if (!m.x.allFinite()) throw_invalid(fn, name, "must hold finite values");
}

LATENTAUDIT_INLINE void check_unique_names(std::string_view fn, std::string_view arg,
                                           const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (names[i] == names[j]) throw_invalid(fn, arg, "repeat the column name '" + names[i] + "'");
    }
  }
}

LATENTAUDIT_INLINE iv_result tsls_impl(std::span<const double> y, const design_matrix& exo,
                                       const design_matrix& endo, const design_matrix& inst,
                                       const group_index* clusters, const iv_options& o) {
  constexpr std::string_view fn = "two_stage_least_squares";
  check_open_unit(fn, "options.level", o.level);
  const std::size_t n = y.size();
  check_finite(fn, "y", y);
  if (endo.cols() == 0) throw_invalid(fn, "endogenous", "has no columns, expected at least 1");
  if (inst.cols() < endo.cols()) {
    throw_invalid(fn, "instruments",
                  "has " + std::to_string(inst.cols()) + " column(s), expected at least as many as the " +
                      std::to_string(endo.cols()) + " endogenous regressor(s)");
  }
  check_iv_block(fn, "exogenous", exo, n);
  check_iv_block(fn, "endogenous", endo, n);
  check_iv_block(fn, "instruments", inst, n);
  if (clusters) check_same_size(fn, "clusters", clusters->size(), "y", n);
  const covariance_type cov = resolve_covariance(fn, o.covariance, o.distribution, clusters);
  const design_matrix x = bind_columns(exo, endo, n);
  const design_matrix z = bind_columns(exo, inst, n);
  check_unique_names(fn, "exogenous and endogenous", x.names);
  check_unique_names(fn, "exogenous and instruments", z.names);
  if (n <= z.cols()) {
    throw_invalid(fn, "y",
                  "has " + std::to_string(n) + " observations, expected more than the " +
                      std::to_string(z.cols()) + " instruments");
  }
  const auto nn = static_cast<Eigen::Index>(n);
  const Eigen::Map<const Eigen::VectorXd> ym(y.data(), nn);

  // Stage 1: X̂ = Z Π, Π = (Z'Z)⁻¹Z'X by pivoted QR of Z (collinear instruments are named).
  const Eigen::Index k = static_cast<Eigen::Index>(x.cols());
  Eigen::MatrixXd xh(nn, k);
  {
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qz(z.x);
    const Eigen::Index kz = z.x.cols();
    const Eigen::MatrixXd rz = qz.matrixR().topLeftCorner(kz, kz).template triangularView<Eigen::Upper>();
    const std::string bad = collinear_columns(rz * qz.colsPermutation().transpose(), z.names);
    if (!bad.empty())
      throw_invalid(fn, "instruments", "with the exogenous regressors are rank deficient: " + bad);
    xh = z.x * qz.solve(x.x);
    // Exogenous columns are their own projections: keep them exact.
    if (exo.cols() > 0) xh.leftCols(static_cast<Eigen::Index>(exo.cols())) = exo.x;
  }
  // Stage 2: y on X̂. A rank-deficient X̂ means some endogenous regressor has no first stage.
  const Eigen::VectorXd yv = ym;
  const ls_solution sol =
      solve_least_squares(fn, "instruments", xh, yv, x.names,
                          "give no first stage (the projected regressors are rank deficient): ");
  iv_result res;
  ols_result& r = res.fit;
  r.names = x.names;
  r.coefficients = sol.beta;
  r.n = n;
  r.k = x.cols();
  r.clusters = clusters ? clusters->groups() : 0;
  r.df_residual = static_cast<double>(n) - static_cast<double>(k);
  r.covariance_kind = cov;
  r.distribution = o.distribution;
  r.level = o.level;
  r.inference_df = inference_df(o.distribution, r.df_residual, clusters);
  r.residuals = ym - x.x * sol.beta;
  r.rss = r.residuals.squaredNorm();
  r.sigma = std::sqrt(r.rss / r.df_residual);
  const double tss = has_constant_column(x.x) ? (ym.array() - ym.mean()).square().sum() : ym.squaredNorm();
  r.r_squared = 1.0 - r.rss / tss;
  r.adj_r_squared =
      1.0 - (r.rss / tss) *
                (has_constant_column(x.x) ? static_cast<double>(n) - 1.0 : static_cast<double>(n)) /
                r.df_residual;
  r.terms.resize(x.cols());
  for (std::size_t j = 0; j < x.cols(); ++j) {
    r.terms[j].method = "2sls_" + std::string(covariance_name(cov));
    r.terms[j].estimand = x.names[j];
    r.terms[j].estimate = sol.beta(static_cast<Eigen::Index>(j));
  }
  bool ok = true;
  if (!(r.rss > 0.0) || std::sqrt(r.rss) <= 64.0 * std::numeric_limits<double>::epsilon() * ym.norm()) {
    r.covariance = Eigen::MatrixXd::Zero(k, k);
    degenerate_fit(r, o.if_degenerate, fn,
                   "the fit is exact (residual sum of squares 0); standard errors are undefined");
    ok = false;
  }
  Eigen::VectorXd h;
  if (ok && (cov == covariance_type::hc2 || cov == covariance_type::hc3)) {
    // AER::hatvalues.ivreg: hᵢ = xᵢ'(X̂'X̂)⁻¹x̂ᵢ, row by row.
    h = ((x.x * sol.bread).array() * xh.array()).rowwise().sum();
    Eigen::Index imax = 0;
    if (h.maxCoeff(&imax) >= 1.0 - 1e-10) {
      r.covariance = Eigen::MatrixXd::Zero(k, k);
      degenerate_fit(r, o.if_degenerate, fn,
                     "observation " + std::to_string(imax) + " has leverage 1; " +
                         std::string(covariance_name(cov)) + " is undefined");
      ok = false;
    }
  }
  if (ok) {
    sandwich_input in{.scores_x = &xh,
                      .e = &r.residuals,
                      .bread = &sol.bread,
                      .h = &h,
                      .clusters = clusters,
                      .n = static_cast<double>(n),
                      .k = static_cast<double>(k)};
    r.covariance = sandwich_covariance(cov, in);
    for (Eigen::Index j = 0; j < k; ++j) {
      r.terms[static_cast<std::size_t>(j)].std_error = std::sqrt(r.covariance(j, j));
      fill_term(r.terms[static_cast<std::size_t>(j)], r.inference_df, o.level);
    }
  }

  // First stages: each endogenous regressor on Z; F for the excluded instruments.
  const double q = static_cast<double>(inst.cols());
  const double kz = static_cast<double>(z.cols());
  for (std::size_t e = 0; e < endo.cols(); ++e) {
    first_stage_result fs;
    fs.endogenous = endo.names[e];
    const Eigen::VectorXd de = endo.x.col(static_cast<Eigen::Index>(e));
    const std::span<const double> ds(de.data(), n);
    ols_options fo{.covariance = cov,
                   .distribution = o.distribution,
                   .level = o.level,
                   .if_degenerate = on_degenerate::flag};
    fs.fit = clusters ? ols(z, ds, *clusters, fo) : ols(z, ds, fo);
    const double rss_u = fs.fit.rss;
    double rss_r = de.squaredNorm();
    if (exo.cols() > 0) {
      const ls_solution sr = solve_least_squares(fn, "exogenous", exo.x, de, exo.names);
      rss_r = (de - exo.x * sr.beta).squaredNorm();
    }
    fs.partial_r_squared = (rss_r - rss_u) / rss_r;
    fs.f_classical = ((rss_r - rss_u) / q) / (rss_u / (static_cast<double>(n) - kz));
    fs.f_classical_p =
        fs.f_classical <= 0.0
            ? 1.0
            : boost::math::cdf(boost::math::complement(
                  boost::math::fisher_f_distribution<double, math_policy>(q, static_cast<double>(n) - kz),
                  fs.f_classical));
    const wald_test_result w = wald_test(fs.fit, inst.names);
    fs.f = w.f;
    fs.f_df1 = w.df1;
    fs.f_df2 = w.df2;
    fs.f_p = w.f_p;
    res.first_stages.push_back(std::move(fs));
  }
  return res;
}

}  // namespace detail

LATENTAUDIT_INLINE wald_estimator_result wald_estimator(std::span<const double> y, std::span<const double> d,
                                                        std::span<const double> z,
                                                        const wald_estimator_options& options) {
  constexpr std::string_view fn = "wald_estimator";
  detail::check_open_unit(fn, "options.level", options.level);
  detail::check_same_size(fn, "d", d.size(), "y", y.size());
  detail::check_same_size(fn, "z", z.size(), "y", y.size());
  detail::check_finite(fn, "y", y);
  detail::check_finite(fn, "d", d);
  detail::check_binary(fn, "z", z);
  // Arm sums, then centred (co)variances by a second pass.
  double sy[2] = {0, 0}, sd[2] = {0, 0};
  std::size_t na[2] = {0, 0};
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto a = static_cast<std::size_t>(z[i]);
    sy[a] += y[i];
    sd[a] += d[i];
    ++na[a];
  }
  detail::check_min_size(fn, "y (arm z = 1)", na[1], 2);
  detail::check_min_size(fn, "y (arm z = 0)", na[0], 2);
  double my[2], md[2], vyy[2] = {0, 0}, vdd[2] = {0, 0}, vyd[2] = {0, 0};
  for (int a = 0; a < 2; ++a) {
    my[a] = sy[a] / static_cast<double>(na[a]);
    md[a] = sd[a] / static_cast<double>(na[a]);
  }
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto a = static_cast<std::size_t>(z[i]);
    const double ey = y[i] - my[a], ed = d[i] - md[a];
    vyy[a] += ey * ey;
    vdd[a] += ed * ed;
    vyd[a] += ey * ed;
  }
  double vy = 0, vd = 0, c = 0;
  for (int a = 0; a < 2; ++a) {
    const double den = static_cast<double>(na[a]) - (options.sample_variance ? 1.0 : 0.0);
    const double nav = static_cast<double>(na[a]);
    vy += vyy[a] / den / nav;
    vd += vdd[a] / den / nav;
    c += vyd[a] / den / nav;
  }
  wald_estimator_result r;
  auto init = [&](effect_estimate& e, const char* estimand) {
    e.method = "wald_iv";
    e.estimand = estimand;
    e.level = options.level;
    e.n_treated = na[1];
    e.n_control = na[0];
  };
  init(r.late, "late");
  init(r.itt_y, "itt_outcome");
  init(r.itt_d, "itt_treatment");
  const double inf = std::numeric_limits<double>::infinity();
  r.itt_y.estimate = my[1] - my[0];
  r.itt_y.std_error = std::sqrt(vy);
  detail::fill_term(r.itt_y, inf, options.level);
  r.itt_d.estimate = md[1] - md[0];
  r.itt_d.std_error = std::sqrt(vd);
  detail::fill_term(r.itt_d, inf, options.level);
  const double dscale = std::fmax(std::fabs(md[0]), std::fabs(md[1]));
  if (!(std::fabs(r.itt_d.estimate) >
        64.0 * std::numeric_limits<double>::epsilon() * std::fmax(dscale, 1e-300))) {
    if (options.if_degenerate == on_degenerate::throw_error) {
      detail::throw_numerical(fn,
                              "the instrument has no first stage (mean of d is the same in both arms of z); "
                              "the LATE is undefined");
    }
    r.late.status = estimate_status::degenerate;
    return r;
  }
  const double b = r.itt_y.estimate / r.itt_d.estimate;
  r.late.estimate = b;
  const double var = (vy - 2.0 * b * c + b * b * vd) / (r.itt_d.estimate * r.itt_d.estimate);
  r.late.std_error = std::sqrt(std::fmax(var, 0.0));
  if (!(r.late.std_error > 0.0)) {
    if (options.if_degenerate == on_degenerate::throw_error) {
      detail::throw_numerical(fn, "the delta-method standard error is 0; the test is undefined");
    }
    r.late.status = estimate_status::degenerate;
    r.late.std_error = effect_estimate::nan;
    return r;
  }
  detail::fill_term(r.late, inf, options.level);
  return r;
}

LATENTAUDIT_INLINE iv_result two_stage_least_squares(std::span<const double> y,
                                                     const design_matrix& exogenous,
                                                     const design_matrix& endogenous,
                                                     const design_matrix& instruments,
                                                     const iv_options& options) {
  return detail::tsls_impl(y, exogenous, endogenous, instruments, nullptr, options);
}

LATENTAUDIT_INLINE iv_result two_stage_least_squares(std::span<const double> y,
                                                     const design_matrix& exogenous,
                                                     const design_matrix& endogenous,
                                                     const design_matrix& instruments,
                                                     const group_index& clusters, const iv_options& options) {
  return detail::tsls_impl(y, exogenous, endogenous, instruments, &clusters, options);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_INSTRUMENTAL_INL_HPP
