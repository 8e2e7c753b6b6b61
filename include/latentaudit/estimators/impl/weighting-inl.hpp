// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/weighting.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_WEIGHTING_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_WEIGHTING_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../weighting.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <limits>

#include "../detail/distributions.hpp"

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE double logistic_deviance(const Eigen::VectorXd& eta, std::span<const double> y) noexcept {
  double d = 0;
  for (Eigen::Index i = 0; i < eta.size(); ++i) {
    d += y[static_cast<std::size_t>(i)] == 1.0 ? softplus(-eta[i]) : softplus(eta[i]);
  }
  return 2.0 * d;
}

LATENTAUDIT_INLINE Eigen::Index separating_column(const Eigen::MatrixXd& x, std::span<const double> y,
                                                  Eigen::Index first, std::string& how) {
  const double inf = std::numeric_limits<double>::infinity();
  for (Eigen::Index j = first; j < x.cols(); ++j) {
    double min1 = inf, max1 = -inf, min0 = inf, max0 = -inf;
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      const double v = x(i, j);
      if (y[static_cast<std::size_t>(i)] == 1.0) {
        min1 = std::min(min1, v);
        max1 = std::max(max1, v);
      } else {
        min0 = std::min(min0, v);
        max0 = std::max(max0, v);
      }
    }
    if (max0 == min0 && max1 == min1 && max0 == max1) continue;  // constant column
    if (max0 <= min1) {
      how = "every unit with y = 1 has a value >= " + number_text(min1) +
            " and every unit with y = 0 a value <= " + number_text(max0);
      return j;
    }
    if (max1 <= min0) {
      how = "every unit with y = 1 has a value <= " + number_text(max1) +
            " and every unit with y = 0 a value >= " + number_text(min0);
      return j;
    }
  }
  return -1;
}

LATENTAUDIT_INLINE void check_treatment(std::string_view fn, std::span<const double> y,
                                        std::span<const double> treatment, std::size_t min_each) {
  check_same_size(fn, "y", y.size(), "treatment", treatment.size());
  check_finite(fn, "y", y);
  check_binary(fn, "treatment", treatment);
  std::size_t n1 = 0;
  for (double t : treatment) n1 += t == 1.0 ? 1 : 0;
  const std::size_t n0 = treatment.size() - n1;
  if (n1 < min_each || n0 < min_each) {
    throw_invalid(fn, "treatment",
                  "must contain at least " + std::to_string(min_each) + " treated and " +
                      std::to_string(min_each) + " control units, got " + std::to_string(n1) +
                      " treated and " + std::to_string(n0) + " control");
  }
}

LATENTAUDIT_INLINE void check_weighting_options(std::string_view fn, const weighting_options& o) {
  check_open_unit(fn, "level", o.level);
  if (o.trimming != propensity_trimming::none && !(o.trim_epsilon > 0.0 && o.trim_epsilon < 0.5)) {
    throw_invalid(fn, "trim_epsilon", "must lie in (0, 0.5), got " + number_text(o.trim_epsilon));
  }
}

LATENTAUDIT_INLINE void check_covariates(std::string_view fn, const Eigen::Ref<const Eigen::MatrixXd>& x,
                                         std::size_t n) {
  if (static_cast<std::size_t>(x.rows()) != n) {
    check_same_size(fn, "covariates (rows)", static_cast<std::size_t>(x.rows()), "y", n);
  }
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      if (!std::isfinite(x(i, j))) [[unlikely]] {
        throw_invalid(fn, "covariates",
                      "must hold finite values, got " + number_text(x(i, j)) + " at row " +
                          std::to_string(i) + ", column " + std::to_string(j));
      }
    }
  }
}

LATENTAUDIT_INLINE Eigen::MatrixXd with_intercept(const Eigen::Ref<const Eigen::MatrixXd>& x,
                                                  bool intercept) {
  if (!intercept) return x;
  Eigen::MatrixXd d(x.rows(), x.cols() + 1);
  d.col(0).setOnes();
  d.rightCols(x.cols()) = x;
  return d;
}

LATENTAUDIT_INLINE void check_full_rank(std::string_view fn, std::string_view name, const Eigen::MatrixXd& d,
                                        std::string_view where) {
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(d);
  qr.setThreshold(1e-7);
  if (qr.rank() < d.cols()) {
    throw_invalid(fn, name,
                  std::string("must have linearly independent columns") + std::string(where) + " (rank " +
                      std::to_string(qr.rank()) + " < " + std::to_string(d.cols()) +
                      " columns including the intercept)");
  }
}

LATENTAUDIT_INLINE void finish_normal(effect_estimate& e, double scale, double level, on_degenerate policy,
                                      std::string_view fn) {
  e.level = level;
  if (!(e.std_error > 10.0 * std::numeric_limits<double>::epsilon() * scale) || !std::isfinite(e.std_error)) {
    if (policy == on_degenerate::throw_error) {
      throw_numerical(
          fn, "the standard error is zero or undefined (constant outcomes within the weighted arms?)");
    }
    e.status = estimate_status::degenerate;
    e.std_error = e.statistic = e.p_value = e.ci_low = e.ci_high = effect_estimate::nan;
    return;
  }
  e.statistic = e.estimate / e.std_error;
  e.p_value = std::fmin(1.0, 2.0 * normal_upper(std::fabs(e.statistic)));
  const double q = normal_quantile_upper((1.0 - level) / 2.0);
  e.ci_low = e.estimate - q * e.std_error;
  e.ci_high = e.estimate + q * e.std_error;
}

LATENTAUDIT_INLINE trimmed_propensity trim_propensity(std::span<const double> raw,
                                                      const weighting_options& o) {
  trimmed_propensity t;
  const std::size_t n = raw.size();
  t.e.assign(raw.begin(), raw.end());
  t.de.resize(n);
  t.kept.assign(n, true);
  const double lo = o.trim_epsilon, hi = 1.0 - o.trim_epsilon;
  for (std::size_t i = 0; i < n; ++i) {
    t.de[i] = raw[i] * (1.0 - raw[i]);
    if (o.trimming == propensity_trimming::none) continue;
    if (raw[i] < lo || raw[i] > hi) {
      ++t.n_trimmed;
      t.de[i] = 0.0;
      if (o.trimming == propensity_trimming::clip) {
        t.e[i] = raw[i] < lo ? lo : hi;
      } else {
        t.kept[i] = false;
      }
    }
  }
  return t;
}

LATENTAUDIT_INLINE double kish_ess(const std::vector<double>& w, std::span<const double> t, double arm) {
  double s = 0, s2 = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (t[i] == arm) {
      s += w[i];
      s2 += w[i] * w[i];
    }
  }
  return s2 > 0 ? s * s / s2 : 0.0;
}

LATENTAUDIT_INLINE void check_arms_after_trim(std::string_view fn, std::span<const double> t,
                                              const std::vector<bool>& kept, std::size_t min_each,
                                              std::size_t& n1, std::size_t& n0) {
  n1 = n0 = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!kept[i]) continue;
    (t[i] == 1.0 ? n1 : n0) += 1;
  }
  if (n1 < min_each || n0 < min_each) {
    throw_numerical(fn, "after dropping units with extreme propensities " + std::to_string(n1) +
                            " treated and " + std::to_string(n0) + " control units remain, need at least " +
                            std::to_string(min_each) + " in each arm");
  }
}

LATENTAUDIT_INLINE weighting_result ipw_core(std::string_view fn, std::span<const double> y,
                                             std::span<const double> t, std::span<const double> raw_e,
                                             const Eigen::MatrixXd* design, const weighting_options& o) {
  // Layout of the computation:
  //   1. trim the propensities (clip / drop) and count the units left in each arm;
  //   2. point estimates from weighted sums;
  //   3. per-unit estimating functions Ψᵢ and their Jacobian, summed, for the sandwich.
  // Dropped units contribute no effect moment, but (in the stacked version) still contribute
  // their logistic score, because the propensity model was fitted on all units.
  const std::size_t n = y.size();
  const bool att = o.estimand == weighting_estimand::att;
  const bool hajek = o.normalization == ipw_normalization::hajek;
  auto tp = trim_propensity(raw_e, o);
  std::size_t n1 = 0, n0 = 0;
  // Two units per arm at least: one unit has no spread, and its "standard error" would be a
  // number computed from nothing.
  check_arms_after_trim(fn, t, tp.kept, 2, n1, n0);

  weighting_result r;
  r.n_trimmed = tp.n_trimmed;
  r.kept = tp.kept;
  r.weights.assign(n, 0.0);

  // Point estimates. Per unit: treated weight a = 1/e (ATE) or 1 (ATT); control weight
  // b = 1/(1−e) (ATE) or e/(1−e) (ATT).
  double s1w = 0, s1wy = 0, s0w = 0, s0wy = 0, ymax = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!tp.kept[i]) continue;
    const double e = tp.e[i];
    const double w = t[i] == 1.0 ? (att ? 1.0 : 1.0 / e) : (att ? e / (1.0 - e) : 1.0 / (1.0 - e));
    r.weights[i] = w;
    ymax = std::fmax(ymax, std::fabs(y[i]));
    if (t[i] == 1.0) {
      s1w += w;
      s1wy += w * y[i];
    } else {
      s0w += w;
      s0wy += w * y[i];
    }
  }
  // γ = (μ₁, μ₀) for Hájek, γ = τ for Horvitz–Thompson.
  const double denom_ht = att ? static_cast<double>(n1) : static_cast<double>(n1 + n0);
  double mu1 = 0, mu0 = 0, tau = 0;
  if (hajek) {
    mu1 = s1wy / s1w;
    mu0 = s0wy / s0w;
    tau = mu1 - mu0;
  } else {
    mu1 = s1wy / denom_ht;
    mu0 = s0wy / denom_ht;
    tau = mu1 - mu0;
  }

  // Stacked estimating equations Ψᵢ = (mᵢ(γ, β), sᵢ(β)), sᵢ = xᵢ(Tᵢ − eᵢ).
  const bool stacked = design != nullptr && o.variance == ipw_variance::stacked;
  const Eigen::Index g = hajek ? 2 : 1;
  const Eigen::Index p = stacked ? design->cols() : 0;
  const Eigen::Index k = g + p;
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(k, k);  // Σ ∂Ψᵢ/∂θ'
  Eigen::MatrixXd b = Eigen::MatrixXd::Zero(k, k);  // Σ ΨᵢΨᵢ'
  Eigen::VectorXd psi(k);
  Eigen::VectorXd dm_deta(g);
  for (std::size_t i = 0; i < n; ++i) {
    psi.setZero();
    dm_deta.setZero();
    const auto ii = static_cast<Eigen::Index>(i);
    if (tp.kept[i]) {
      const double e = tp.e[i], de = tp.de[i], ti = t[i], yi = y[i];
      if (!att) {
        if (hajek) {
          // m₁ = T(Y−μ₁)/e, m₀ = (1−T)(Y−μ₀)/(1−e)
          psi[0] = ti * (yi - mu1) / e;
          psi[1] = (1.0 - ti) * (yi - mu0) / (1.0 - e);
          a(0, 0) -= ti / e;
          a(1, 1) -= (1.0 - ti) / (1.0 - e);
          dm_deta[0] = -ti * (yi - mu1) * de / (e * e);
          dm_deta[1] = (1.0 - ti) * (yi - mu0) * de / ((1.0 - e) * (1.0 - e));
        } else {
          // m = TY/e − (1−T)Y/(1−e) − τ
          psi[0] = ti * yi / e - (1.0 - ti) * yi / (1.0 - e) - tau;
          a(0, 0) -= 1.0;
          dm_deta[0] = -ti * yi * de / (e * e) - (1.0 - ti) * yi * de / ((1.0 - e) * (1.0 - e));
        }
      } else {
        const double odds = e / (1.0 - e), dodds = de / ((1.0 - e) * (1.0 - e));
        if (hajek) {
          // m₁ = T(Y−μ₁), m₀ = (1−T) e/(1−e) (Y−μ₀)
          psi[0] = ti * (yi - mu1);
          psi[1] = (1.0 - ti) * odds * (yi - mu0);
          a(0, 0) -= ti;
          a(1, 1) -= (1.0 - ti) * odds;
          dm_deta[1] = (1.0 - ti) * (yi - mu0) * dodds;
        } else {
          // m = TY − (1−T) Y e/(1−e) − τT
          psi[0] = ti * yi - (1.0 - ti) * yi * odds - tau * ti;
          a(0, 0) -= ti;
          dm_deta[0] = -(1.0 - ti) * yi * dodds;
        }
      }
    }
    if (stacked) {
      const auto xi = design->row(ii).transpose();
      const double er = raw_e[i];
      psi.tail(p) = xi * (t[i] - er);
      a.block(0, g, g, p).noalias() += dm_deta * xi.transpose();
      a.block(g, g, p, p).noalias() -= (er * (1.0 - er)) * (xi * xi.transpose());
    }
    b.noalias() += psi * psi.transpose();
  }
  // Cov(θ̂) = A⁻¹ B A⁻ᵀ with the sums (the 1/n factors cancel). A is block upper triangular
  // (the logistic score does not depend on γ), so the γ rows of A⁻¹ carry the correction
  // −A_γγ⁻¹ A_γβ A_ββ⁻¹ for the estimated propensity score. k ≤ 2 + p is small: a dense
  // inverse is fine.
  const Eigen::MatrixXd ainv = a.inverse();
  const Eigen::MatrixXd cov = ainv * b * ainv.transpose();
  double var = 0;
  if (hajek) {
    var = cov(0, 0) + cov(1, 1) - 2.0 * cov(0, 1);
  } else {
    var = cov(0, 0);
  }

  r.mean_treated = mu1;
  r.mean_control = mu0;
  r.propensity = tp.e;
  r.ess_treated = kish_ess(r.weights, t, 1.0);
  r.ess_control = kish_ess(r.weights, t, 0.0);
  effect_estimate& eff = r.effect;
  eff.method = hajek ? "ipw_hajek" : "ipw_horvitz_thompson";
  eff.estimand = att ? "att" : "ate";
  eff.estimate = tau;
  eff.std_error = std::sqrt(std::fmax(var, 0.0));
  eff.n_treated = n1;
  eff.n_control = n0;
  finish_normal(eff, std::fmax(ymax, 1e-300), o.level, o.if_degenerate, fn);
  return r;
}

LATENTAUDIT_INLINE Eigen::VectorXd ols_predict_arm(std::string_view fn, std::span<const double> y,
                                                   const Eigen::MatrixXd& design, std::span<const double> t,
                                                   const std::vector<bool>& kept, double arm) {
  std::vector<Eigen::Index> rows;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (kept[i] && t[i] == arm) rows.push_back(static_cast<Eigen::Index>(i));
  }
  const auto m = static_cast<Eigen::Index>(rows.size());
  const std::string arm_name = arm == 1.0 ? "treated" : "control";
  if (m <= design.cols()) {
    throw_invalid(fn, "treatment",
                  "leaves " + std::to_string(m) + " " + arm_name +
                      " units for the outcome model, need more than " + std::to_string(design.cols()) +
                      " (covariates + intercept)");
  }
  Eigen::MatrixXd xa(m, design.cols());
  Eigen::VectorXd ya(m);
  for (Eigen::Index r = 0; r < m; ++r) {
    xa.row(r) = design.row(rows[static_cast<std::size_t>(r)]);
    ya[r] = y[static_cast<std::size_t>(rows[static_cast<std::size_t>(r)])];
  }
  check_full_rank(fn, "covariates", xa, " within the " + arm_name + " arm");
  const Eigen::VectorXd coef = xa.colPivHouseholderQr().solve(ya);
  return design * coef;
}

LATENTAUDIT_INLINE weighting_result aipw_core(std::string_view fn, std::span<const double> y,
                                              std::span<const double> t, std::span<const double> raw_e,
                                              const Eigen::MatrixXd& design, const weighting_options& o) {
  // Outcome models are fitted on the kept units only (trimming "drop" removes units from the
  // whole analysis); the ATT needs only the control model m̂₀.
  const std::size_t n = y.size();
  const bool att = o.estimand == weighting_estimand::att;
  auto tp = trim_propensity(raw_e, o);
  std::size_t n1 = 0, n0 = 0;
  check_arms_after_trim(fn, t, tp.kept, 1, n1, n0);
  const Eigen::VectorXd m0 = ols_predict_arm(fn, y, design, t, tp.kept, 0.0);
  Eigen::VectorXd m1;
  if (!att) m1 = ols_predict_arm(fn, y, design, t, tp.kept, 1.0);

  weighting_result r;
  r.n_trimmed = tp.n_trimmed;
  r.kept = tp.kept;
  r.weights.assign(n, 0.0);
  const double nk = static_cast<double>(n1 + n0);
  std::vector<double> psi;
  psi.reserve(n1 + n0);
  double ymax = 0, tau = 0, mu1 = 0, mu0 = 0;
  if (!att) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!tp.kept[i]) continue;
      const auto ii = static_cast<Eigen::Index>(i);
      const double e = tp.e[i], ti = t[i], yi = y[i];
      const double a1 = m1[ii] + ti * (yi - m1[ii]) / e;
      const double a0 = m0[ii] + (1.0 - ti) * (yi - m0[ii]) / (1.0 - e);
      r.weights[i] = ti == 1.0 ? 1.0 / e : 1.0 / (1.0 - e);
      mu1 += a1;
      mu0 += a0;
      psi.push_back(a1 - a0);
      ymax = std::fmax(ymax, std::fabs(yi));
    }
    mu1 /= nk;
    mu0 /= nk;
    tau = mu1 - mu0;
  } else {
    double num = 0, ybar1 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!tp.kept[i]) continue;
      const auto ii = static_cast<Eigen::Index>(i);
      const double e = tp.e[i], ti = t[i], yi = y[i];
      const double w = ti == 1.0 ? 1.0 : e / (1.0 - e);
      r.weights[i] = w;
      num += (ti == 1.0 ? 1.0 : -w) * (yi - m0[ii]);
      if (ti == 1.0) ybar1 += yi;
      ymax = std::fmax(ymax, std::fabs(yi));
    }
    tau = num / static_cast<double>(n1);
    mu1 = ybar1 / static_cast<double>(n1);
    mu0 = mu1 - tau;
    // ψᵢ = (n/n₁)[Tᵢ(Yᵢ − m̂₀ᵢ − τ̂) − (1−Tᵢ) oᵢ (Yᵢ − m̂₀ᵢ)], mean zero.
    const double scale = nk / static_cast<double>(n1);
    for (std::size_t i = 0; i < n; ++i) {
      if (!tp.kept[i]) continue;
      const auto ii = static_cast<Eigen::Index>(i);
      const double ti = t[i], res = y[i] - m0[ii];
      psi.push_back(scale * (ti == 1.0 ? res - tau : -r.weights[i] * res));
    }
  }
  // SE = sd(ψ)/√n with the n − 1 sample SD.
  double mean = 0;
  for (double v : psi) mean += v;
  mean /= nk;
  double ss = 0;
  for (double v : psi) ss += (v - mean) * (v - mean);
  const double sd = std::sqrt(ss / (nk - 1.0));

  r.mean_treated = mu1;
  r.mean_control = mu0;
  r.propensity = tp.e;
  r.ess_treated = kish_ess(r.weights, t, 1.0);
  r.ess_control = kish_ess(r.weights, t, 0.0);
  effect_estimate& eff = r.effect;
  eff.method = "aipw";
  eff.estimand = att ? "att" : "ate";
  eff.estimate = tau;
  eff.std_error = sd / std::sqrt(nk);
  eff.n_treated = n1;
  eff.n_control = n0;
  finish_normal(eff, std::fmax(ymax, 1e-300), o.level, o.if_degenerate, fn);
  return r;
}

LATENTAUDIT_INLINE void check_propensity(std::string_view fn, std::span<const double> e, std::size_t n) {
  check_same_size(fn, "y", n, "propensity", e.size());
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (!(e[i] > 0.0 && e[i] < 1.0)) [[unlikely]] {
      throw_invalid(
          fn, "propensity",
          "must hold probabilities in (0, 1), got " + number_text(e[i]) + " at index " + std::to_string(i));
    }
  }
}

LATENTAUDIT_INLINE logistic_fit fit_propensity(std::string_view fn, std::span<const double> t,
                                               const Eigen::Ref<const Eigen::MatrixXd>& x,
                                               const weighting_options& o) {
  try {
    return logistic_regression(x, t, o.propensity_model);
  } catch (const numerical_error& err) {
    throw_numerical(fn, std::string("propensity model: ") + err.what());
  } catch (const shape_mismatch& err) {
    LATENTAUDIT_THROW(shape_mismatch(std::string(fn) + ": propensity model: " + err.what()));
  } catch (const invalid_argument& err) {
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": propensity model: " + err.what()));
  }
}

}  // namespace detail

LATENTAUDIT_INLINE logistic_fit logistic_regression(const Eigen::Ref<const Eigen::MatrixXd>& covariates,
                                                    std::span<const double> y,
                                                    const logistic_options& options) {
  constexpr std::string_view fn = "logistic_regression";
  if (options.max_iterations < 1) {
    detail::throw_invalid(fn, "max_iterations",
                          "must be >= 1, got " + std::to_string(options.max_iterations));
  }
  detail::check_positive(fn, "tolerance", options.tolerance);
  detail::check_open_unit(fn, "separation_tolerance", options.separation_tolerance);
  detail::check_binary(fn, "y", y);
  detail::check_covariates(fn, covariates, y.size());
  std::size_t n1 = 0;
  for (double v : y) n1 += v == 1.0 ? 1 : 0;
  if (n1 == 0 || n1 == y.size()) {
    detail::throw_invalid(fn, "y",
                          "must contain both classes, got " + std::to_string(n1) + " ones among " +
                              std::to_string(y.size()) + " observations");
  }
  const Eigen::MatrixXd x = detail::with_intercept(covariates, options.add_intercept);
  const Eigen::Index n = x.rows(), p = x.cols();
  if (p == 0)
    detail::throw_invalid(fn, "covariates", "must have at least one column when add_intercept is false");
  if (n <= p) {
    detail::throw_invalid(fn, "covariates",
                          "has " + std::to_string(n) + " rows for " + std::to_string(p) +
                              " coefficients, expected more rows than coefficients");
  }
  detail::check_full_rank(fn, "covariates", x);

  // IRLS as R's glm.fit: the working weights and responses use R's clamped inverse link and
  // its derivative so that the iterates (not only the limit) match R's; the deviance itself is
  // computed exactly from η with softplus, which matters near separation.
  constexpr double eps = std::numeric_limits<double>::epsilon();
  auto clamp_mu = [](double eta) {  // R's binomial linkinv: η clamped to ±30
    const double tmp = eta < -30.0 ? eps : (eta > 30.0 ? 1.0 / eps : std::exp(eta));
    return tmp / (1.0 + tmp);
  };
  auto mu_eta = [](double eta) {  // R's binomial mu.eta
    const double opexp = 1.0 + std::exp(eta);
    return (eta > 30.0 || eta < -30.0) ? eps : std::exp(eta) / (opexp * opexp);
  };

  // R's start: μ = (y + ½)/2, η = logit μ.
  Eigen::VectorXd eta(n), mu(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    mu[i] = (y[static_cast<std::size_t>(i)] + 0.5) / 2.0;
    eta[i] = std::log(mu[i] / (1.0 - mu[i]));
  }
  double dev_old = detail::logistic_deviance(eta, y);
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(p), beta_prev;
  bool have_beta = false, converged = false;
  int iter = 0;
  Eigen::MatrixXd wx(n, p);
  Eigen::VectorXd wz(n);
  double dev = dev_old;
  for (iter = 1; iter <= options.max_iterations; ++iter) {
    for (Eigen::Index i = 0; i < n; ++i) {
      const double me = mu_eta(eta[i]);
      const double var = mu[i] * (1.0 - mu[i]);
      const double z = eta[i] + (y[static_cast<std::size_t>(i)] - mu[i]) / me;
      const double w = std::sqrt(me * me / var);
      wx.row(i) = w * x.row(i);
      wz[i] = w * z;
    }
    Eigen::VectorXd beta_new = wx.householderQr().solve(wz);
    Eigen::VectorXd eta_new = x * beta_new;
    dev = detail::logistic_deviance(eta_new, y);
    // Step halving (glm2-style) when the deviance is not finite or increases. The logistic
    // log-likelihood is concave, so a full Newton step rarely overshoots, but from R's start
    // values with extreme covariates it can.
    int halvings = 0;
    while (have_beta && (!std::isfinite(dev) || dev > dev_old * (1.0 + 1e-12) + 1e-300) && halvings < 30) {
      beta_new = 0.5 * (beta_new + beta);
      eta_new = x * beta_new;
      dev = detail::logistic_deviance(eta_new, y);
      ++halvings;
    }
    if (!std::isfinite(dev)) {
      detail::throw_numerical(
          fn, "the deviance is not finite after step halving (iteration " + std::to_string(iter) + ")");
    }
    beta_prev = beta;
    beta = beta_new;
    have_beta = true;
    eta = eta_new;
    for (Eigen::Index i = 0; i < n; ++i) mu[i] = clamp_mu(eta[i]);
    if (std::fabs(dev - dev_old) / (std::fabs(dev) + 0.1) < options.tolerance) {
      converged = true;
      break;
    }
    dev_old = dev;
  }

  // Separation: fitted probabilities numerically 0 or 1, or no convergence. Under complete
  // separation the deviance goes to 0 and every |η| grows without bound; under quasi-complete
  // separation only the separated units' |η| grows. Either way some fitted probabilities reach
  // the tolerance long before the iteration limit (|η| grows roughly linearly per iteration).
  std::size_t extreme = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double pr = detail::expit(eta[i]);
    if (std::fmin(pr, 1.0 - pr) < options.separation_tolerance) ++extreme;
  }
  if (extreme > 0 || !converged) {
    std::string how;
    const Eigen::Index col = detail::separating_column(x, y, options.add_intercept ? 1 : 0, how);
    std::string m;
    if (extreme > 0) {
      m = "fitted probabilities numerically 0 or 1 for " + std::to_string(extreme) + " units (within " +
          number_text(options.separation_tolerance) +
          "): perfect or quasi-complete separation, the maximum-likelihood coefficients diverge";
    } else {
      m = "IRLS did not converge in " + std::to_string(options.max_iterations) + " iterations";
    }
    if (col >= 0) {
      const Eigen::Index user_col = options.add_intercept ? col - 1 : col;
      m += "; covariate column " + std::to_string(user_col) + " separates the classes (" + how + ")";
    } else if (extreme > 0) {
      m += "; a linear combination of the covariates separates the classes";
    }
    detail::throw_numerical(fn, m);
  }

  logistic_fit f;
  f.coefficients = beta;
  f.linear_predictor = eta;
  f.fitted.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) f.fitted[i] = detail::expit(eta[i]);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double w = std::sqrt(f.fitted[i] * (1.0 - f.fitted[i]));
    wx.row(i) = w * x.row(i);
  }
  const Eigen::MatrixXd info = wx.transpose() * wx;
  f.covariance = info.ldlt().solve(Eigen::MatrixXd::Identity(p, p));
  f.deviance = dev;
  const double ybar = static_cast<double>(n1) / static_cast<double>(n);
  f.null_deviance = -2.0 * (static_cast<double>(n1) * std::log(ybar) +
                            static_cast<double>(static_cast<std::size_t>(n) - n1) * std::log1p(-ybar));
  f.iterations = iter;
  return f;
}

LATENTAUDIT_INLINE weighting_result ipw(std::span<const double> y, std::span<const double> treatment,
                                        const Eigen::Ref<const Eigen::MatrixXd>& covariates,
                                        const weighting_options& options) {
  constexpr std::string_view fn = "ipw";
  detail::check_weighting_options(fn, options);
  detail::check_treatment(fn, y, treatment, 1);
  detail::check_covariates(fn, covariates, y.size());
  logistic_fit ps = detail::fit_propensity(fn, treatment, covariates, options);
  const Eigen::MatrixXd design = detail::with_intercept(covariates, options.propensity_model.add_intercept);
  std::vector<double> e(ps.fitted.data(), ps.fitted.data() + ps.fitted.size());
  auto r = detail::ipw_core(fn, y, treatment, e, &design, options);
  r.propensity_model = std::move(ps);
  return r;
}

LATENTAUDIT_INLINE weighting_result ipw_with_propensity(std::span<const double> y,
                                                        std::span<const double> treatment,
                                                        std::span<const double> propensity,
                                                        const weighting_options& options) {
  constexpr std::string_view fn = "ipw_with_propensity";
  detail::check_weighting_options(fn, options);
  detail::check_treatment(fn, y, treatment, 1);
  detail::check_propensity(fn, propensity, y.size());
  return detail::ipw_core(fn, y, treatment, propensity, nullptr, options);
}

LATENTAUDIT_INLINE weighting_result aipw(std::span<const double> y, std::span<const double> treatment,
                                         const Eigen::Ref<const Eigen::MatrixXd>& covariates,
                                         const weighting_options& options) {
  constexpr std::string_view fn = "aipw";
  detail::check_weighting_options(fn, options);
  detail::check_treatment(fn, y, treatment, 1);
  detail::check_covariates(fn, covariates, y.size());
  logistic_fit ps = detail::fit_propensity(fn, treatment, covariates, options);
  const Eigen::MatrixXd design = detail::with_intercept(covariates, true);
  std::vector<double> e(ps.fitted.data(), ps.fitted.data() + ps.fitted.size());
  auto r = detail::aipw_core(fn, y, treatment, e, design, options);
  r.propensity_model = std::move(ps);
  return r;
}

LATENTAUDIT_INLINE weighting_result aipw_with_propensity(std::span<const double> y,
                                                         std::span<const double> treatment,
                                                         const Eigen::Ref<const Eigen::MatrixXd>& covariates,
                                                         std::span<const double> propensity,
                                                         const weighting_options& options) {
  constexpr std::string_view fn = "aipw_with_propensity";
  detail::check_weighting_options(fn, options);
  detail::check_treatment(fn, y, treatment, 1);
  detail::check_covariates(fn, covariates, y.size());
  detail::check_propensity(fn, propensity, y.size());
  const Eigen::MatrixXd design = detail::with_intercept(covariates, true);
  return detail::aipw_core(fn, y, treatment, propensity, design, options);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_WEIGHTING_INL_HPP
