// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/matching.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_MATCHING_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_MATCHING_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../matching.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <limits>
#include <utility>

#include "../../core/parallel.hpp"
#include "../detail/distributions.hpp"

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE std::string covariate_label(const matching_options& o, std::size_t j) {
  if (j < o.covariate_names.size()) return o.covariate_names[j];
  std::string s(1, 'x');
  s.append(std::to_string(j));  // (not "x" + ...: GCC 12 -Wrestrict false positive)
  return s;
}

LATENTAUDIT_INLINE Eigen::VectorXd match_bias_regression(const Eigen::MatrixXd& x, std::span<const double> y,
                                                         const std::vector<double>& w, double tol) {
  const Eigen::Index n = x.rows(), k = x.cols();
  Eigen::MatrixXd xw(n, k + 1);
  Eigen::VectorXd yw(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double s = std::sqrt(w[static_cast<std::size_t>(i)]);
    xw(i, 0) = s;
    xw.row(i).tail(k) = x.row(i) * s;
    yw(i) = y[static_cast<std::size_t>(i)] * s;
  }
  Eigen::MatrixXd a = xw.transpose() * xw;
  const Eigen::VectorXd b = xw.transpose() * yw;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(a, Eigen::EigenvaluesOnly);
  if (es.eigenvalues().minCoeff() <= tol) {
    double max_sd = 0;
    for (Eigen::Index j = 0; j <= k; ++j) {
      const double m = xw.col(j).mean();
      const double v = (xw.col(j).array() - m).square().sum() / static_cast<double>(n - 1);
      max_sd = std::max(max_sd, std::sqrt(v));
    }
    a.diagonal().array() += tol * max_sd;
  }
  Eigen::LDLT<Eigen::MatrixXd> ldlt(a);
  Eigen::VectorXd coef;
  if (ldlt.info() == Eigen::Success && ldlt.isPositive() && ldlt.rcond() > 1e-14) {
    coef = ldlt.solve(b);
  } else {
    coef = a.completeOrthogonalDecomposition().solve(b);  // Match falls back to MASS::ginv
  }
  return coef.tail(k);
}

LATENTAUDIT_INLINE double outcome_variance(double y0, const std::vector<kd_neighbor>& idx,
                                           std::span<const double> y) {
  double s = y0;
  for (const auto& nb : idx) s += y[nb.index];
  const double m = s / static_cast<double>(idx.size() + 1);
  double ss = (y0 - m) * (y0 - m);
  for (const auto& nb : idx) ss += (y[nb.index] - m) * (y[nb.index] - m);
  return ss / static_cast<double>(idx.size());
}

// nearest_neighbor_matching's argument checks; returns the treated units' count and fills
// `is_exact` (the covariates matched exactly).
LATENTAUDIT_INLINE std::size_t check_matching_arguments(std::string_view fn, std::span<const double> outcome,
                                                        std::span<const double> treatment,
                                                        std::span<const double> covariates, std::size_t k,
                                                        const matching_options& o,
                                                        std::vector<bool>& is_exact) {
  const std::size_t n = outcome.size();
  if (k == 0) throw_invalid(fn, "n_covariates", "must be at least 1, got 0");
  check_same_size(fn, "outcome", n, "treatment", treatment.size());
  check_same_size(fn, "covariates", covariates.size(), "outcome × n_covariates", n * k);
  check_min_size(fn, "outcome", n, 2);
  check_finite(fn, "outcome", outcome);
  check_binary(fn, "treatment", treatment);
  for (std::size_t i = 0; i < n * k; ++i) {
    if (!std::isfinite(covariates[i])) [[unlikely]] {
      throw_invalid(fn, "covariates",
                    "must hold finite values, got " + number_text(covariates[i]) + " at row " +
                        std::to_string(i / k) + ", covariate '" + covariate_label(o, i % k) + "'");
    }
  }
  if (!o.covariate_names.empty()) {
    check_same_size(fn, "options.covariate_names", o.covariate_names.size(), "n_covariates", k);
  }
  if (o.neighbors < 1) throw_invalid(fn, "options.neighbors", "must be at least 1, got 0");
  check_nonnegative(fn, "options.distance_tolerance", o.distance_tolerance);
  check_nonnegative(fn, "options.tolerance", o.tolerance);
  check_open_unit(fn, "options.level", o.level);
  if (!o.caliper.empty()) {
    if (o.caliper.size() != 1 && o.caliper.size() != k) {
      throw_invalid(fn, "options.caliper",
                    "must hold 1 or n_covariates = " + std::to_string(k) + " values, got " +
                        std::to_string(o.caliper.size()));
    }
    for (double c : o.caliper) check_positive(fn, "options.caliper", c);
  }
  is_exact.assign(k, false);
  for (std::size_t j : o.exact) {
    if (j >= k) {
      throw_invalid(fn, "options.exact",
                    "must hold covariate indices below " + std::to_string(k) + ", got " + std::to_string(j));
    }
    is_exact[j] = true;
  }
  if (o.distance == matching_distance::user_matrix) {
    check_same_size(fn, "options.weight_matrix", o.weight_matrix.size(), "n_covariates²", k * k);
    check_finite(fn, "options.weight_matrix", o.weight_matrix);
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = 0; b < a; ++b)
        if (o.weight_matrix[a * k + b] != o.weight_matrix[b * k + a])
          throw_invalid(fn, "options.weight_matrix", "must be symmetric");
  }
  std::size_t n_treated = 0;
  for (double t : treatment) n_treated += t == 1.0 ? 1 : 0;
  const std::size_t n_control = n - n_treated;
  if (n_treated == 0 || n_control == 0) {
    throw_invalid(fn, "treatment",
                  "must contain both treated (1) and control (0) units, got " + std::to_string(n_treated) +
                      " treated and " + std::to_string(n_control) + " control");
  }
  return n_treated;
}

// The covariates centred and divided by their sample SD (Match's RmatchLoop); `pop_sd` gets each
// covariate's population SD (for the calipers).
LATENTAUDIT_INLINE Eigen::MatrixXd scaled_covariates(std::string_view fn, std::span<const double> covariates,
                                                     std::size_t n, std::size_t k, const matching_options& o,
                                                     std::vector<double>& pop_sd) {
  const double nn = static_cast<double>(n);
  Eigen::MatrixXd xs(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k));
  pop_sd.assign(k, 0.0);
  for (std::size_t j = 0; j < k; ++j) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += covariates[i * k + j];
    const double mu = s / nn;
    double ss = 0, sd = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = covariates[i * k + j] - mu;
      ss += d * d;
      sd += d;
    }
    const double var_pop = std::fmax(0.0, (ss - sd * sd / nn) / nn);
    if (!(var_pop > 0)) {
      throw_invalid(
          fn, "covariates",
          "has a constant covariate '" + covariate_label(o, j) + "' (zero standard deviation); remove it");
    }
    pop_sd[j] = std::sqrt(var_pop);
    double sig = std::sqrt(var_pop * nn / (nn - 1.0));
    if (sig < o.tolerance) sig = o.tolerance;
    for (std::size_t i = 0; i < n; ++i) {
      xs(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = (covariates[i * k + j] - mu) / sig;
    }
  }
  return xs;
}

// The points z = R x (row-major, n x k) with W = R'R the distance's weight matrix, so that
// (x - y)'W(x - y) = |z_x - z_y|^2.
LATENTAUDIT_INLINE std::vector<double> distance_points(std::string_view fn, const Eigen::MatrixXd& xs,
                                                       std::size_t n, std::size_t k,
                                                       const matching_options& o) {
  const double nn = static_cast<double>(n);
  const Eigen::Index kk = static_cast<Eigen::Index>(k);
  Eigen::MatrixXd wm = Eigen::MatrixXd::Identity(kk, kk);
  if (o.distance == matching_distance::mahalanobis) {
    const Eigen::MatrixXd s = xs.transpose() * xs / nn;
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(s, Eigen::EigenvaluesOnly);
    // A singular covariance (a duplicated or collinear covariate) leaves the Mahalanobis distance
    // undefined; Match silently falls back to the identity, which is not what was asked for.
    if (!(es.eigenvalues().minCoeff() > 1e-7))
      throw_invalid(fn, "covariates",
                    "are collinear (their covariance is singular, smallest eigenvalue " +
                        number_text(es.eigenvalues().minCoeff()) +
                        "): the Mahalanobis distance is undefined; drop a redundant covariate");
    wm = s.inverse();
  } else if (o.distance == matching_distance::user_matrix) {
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = 0; b < k; ++b)
        wm(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) = o.weight_matrix[a * k + b];
  }
  {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(wm, Eigen::EigenvaluesOnly);
    if (es.eigenvalues().minCoeff() < o.tolerance) wm.diagonal().array() += o.tolerance;
  }
  Eigen::LLT<Eigen::MatrixXd> llt(wm);
  if (llt.info() != Eigen::Success) {
    throw_invalid(fn, "options.weight_matrix", "must be positive semi-definite");
  }
  const Eigen::MatrixXd rmat = llt.matrixL().transpose();  // W = R'R
  std::vector<double> z(n * k);
  for (std::size_t i = 0; i < n; ++i) {
    const Eigen::VectorXd zi = rmat * xs.row(static_cast<Eigen::Index>(i)).transpose();
    for (std::size_t j = 0; j < k; ++j) z[i * k + j] = zi(static_cast<Eigen::Index>(j));
  }
  return z;
}

// The k-d trees of both arms over the points z and the match search: the M nearest units of an arm
// (or all within the tie tolerance of the M-th), under the calipers and exact matches.
class unit_matcher {
 public:
  unit_matcher(std::span<const double> covariates, const std::vector<double>& z, std::size_t n, std::size_t k,
               std::span<const unsigned char> tr, const std::vector<bool>& is_exact,
               const std::vector<double>& pop_sd, const matching_options& o)
      : covariates_(covariates), z_(z), k_(k), restricted_(!o.caliper.empty() || !o.exact.empty()) {
    ecal_.assign(k, std::numeric_limits<double>::infinity());
    if (!o.caliper.empty())
      for (std::size_t j = 0; j < k; ++j) ecal_[j] = o.caliper[o.caliper.size() == 1 ? 0 : j] * pop_sd[j];
    for (std::size_t j = 0; j < k; ++j)
      if (is_exact[j]) ecal_[j] = o.distance_tolerance;
    std::vector<std::size_t> arm_ids[2];
    for (std::size_t i = 0; i < n; ++i) arm_ids[tr[i]].push_back(i);
    std::vector<double> arm_pts[2];
    for (int a = 0; a < 2; ++a) {
      arm_pts[a].reserve(arm_ids[a].size() * k);
      for (std::size_t i : arm_ids[a])
        arm_pts[a].insert(arm_pts[a].end(), z.begin() + static_cast<std::ptrdiff_t>(i * k),
                          z.begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
    }
    for (int a = 0; a < 2; ++a) trees_.emplace_back(arm_pts[a], arm_ids[a], k);
    constexpr double c_tol = 1e-10;  // Match's C comparison slack (TOL in matching.h)
    tie_slack_ = o.distance_tolerance + c_tol;
  }

  // Finds the matches of unit i among arm `arm` (all within the tie tolerance of the M-th, or the
  // M nearest in (distance, index) order), excluding i itself when asked. Empty: dropped.
  void find(std::size_t i, int arm, std::size_t m, bool keep_ties, bool exclude_self,
            std::vector<kd_neighbor>& knn, std::vector<kd_neighbor>& out) const {
    out.clear();
    auto accept = [&](std::size_t j) {
      return (!exclude_self || j != i) && (!restricted_ || eligible(i, j));
    };
    trees_[static_cast<std::size_t>(arm)].nearest(&z_[i * k_], m, accept, knn);
    if (knn.size() < m) return;  // fewer than M eligible units: Match drops the unit
    if (!keep_ties) {
      out = knn;
    } else {
      trees_[static_cast<std::size_t>(arm)].within(&z_[i * k_], knn.back().dist2 + tie_slack_, accept, out);
    }
    std::sort(out.begin(), out.end(),
              [](const kd_neighbor& a, const kd_neighbor& b) { return a.index < b.index; });
  }

 private:
  bool eligible(std::size_t i, std::size_t j) const {
    for (std::size_t c = 0; c < k_; ++c)
      if (std::fabs(covariates_[i * k_ + c] - covariates_[j * k_ + c]) > ecal_[c]) return false;
    return true;
  }
  std::span<const double> covariates_;
  const std::vector<double>& z_;
  std::size_t k_;
  bool restricted_;
  std::vector<double> ecal_;
  std::vector<kd_tree> trees_;
  double tie_slack_ = 0;
};

// The balance table: each covariate's means, variance ratio and standardized difference before
// and after matching (Match's MatchBalance conventions).
LATENTAUDIT_INLINE std::vector<covariate_balance> balance_table(
    std::span<const double> treatment, std::span<const double> covariates, std::size_t n, std::size_t k,
    std::size_t n_treated, std::size_t n_control, std::span<const std::size_t> it,
    std::span<const std::size_t> ic, std::span<const double> row_w, double sw, bool atc,
    const matching_options& o) {
  const std::size_t n_rows = row_w.size();
  std::vector<covariate_balance> balance(k);
  for (std::size_t j = 0; j < k; ++j) {
    covariate_balance& cb = balance[j];
    cb.name = covariate_label(o, j);
    double st = 0, sc = 0;
    for (std::size_t i = 0; i < n; ++i) (treatment[i] == 1.0 ? st : sc) += covariates[i * k + j];
    const double mt = st / static_cast<double>(n_treated), mc = sc / static_cast<double>(n_control);
    double vt = 0, vc = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = covariates[i * k + j];
      if (treatment[i] == 1.0)
        vt += (x - mt) * (x - mt);
      else
        vc += (x - mc) * (x - mc);
    }
    vt /= static_cast<double>(n_treated) - 1.0;
    vc /= static_cast<double>(n_control) - 1.0;
    cb.mean_treated_before = mt;
    cb.mean_control_before = mc;
    cb.variance_ratio_before = vt / vc;
    auto smd = [&](double diff, double var_t, double var_c) {
      const double v =
          o.balance_denominator == balance_scale::pooled_sd ? (var_t + var_c) / 2.0 : (atc ? var_c : var_t);
      if (v == 0.0 && diff == 0.0) return 0.0;
      return diff / std::sqrt(v);
    };
    cb.smd_before = smd(mt - mc, vt, vc);
    double amt = 0, amc = 0;
    for (std::size_t r = 0; r < n_rows; ++r) {
      amt += row_w[r] * covariates[it[r] * k + j];
      amc += row_w[r] * covariates[ic[r] * k + j];
    }
    amt /= sw;
    amc /= sw;
    double avt = 0, avc = 0;
    for (std::size_t r = 0; r < n_rows; ++r) {
      const double a = covariates[it[r] * k + j] - amt, b = covariates[ic[r] * k + j] - amc;
      avt += row_w[r] * a * a;
      avc += row_w[r] * b * b;
    }
    cb.mean_treated_after = amt;
    cb.mean_control_after = amc;
    cb.variance_ratio_after = avt / avc;  // Match: both with Σw denominators
    // SMD after matching: Match's sdiff uses the weighted variance with a (Σw − 1) denominator.
    cb.smd_after = smd(amt - amc, avt / (sw - 1.0), avc / (sw - 1.0));
  }
  return balance;
}

// The Abadie-Imbens variances of the matching estimate (Match's Var.sample and Var.pop, each
// divided by the square of the focal count).
struct ai_variances {
  double sample = 0, population = 0;
};

LATENTAUDIT_INLINE ai_variances abadie_imbens_variances(
    std::span<const double> sigs, std::span<const double> iot_t, std::span<const double> iot_c,
    std::span<const double> kcount, std::span<const double> kkcount, std::span<const unsigned char> matched,
    std::span<const double> scaus, double est, bool ate) {
  const std::size_t n = sigs.size();
  double sn = 0;
  for (double v : iot_t) sn += v;
  double var_sample = 0, var_pop = 0, dvar = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = iot_t[i] + iot_c[i] * kcount[i];
    var_sample += sigs[i] * a * a;
    if (ate)
      var_pop += sigs[i] * (kcount[i] * kcount[i] + 2.0 * kcount[i] - kkcount[i]);
    else
      var_pop += sigs[i] * iot_c[i] * (kcount[i] * kcount[i] - kkcount[i]);
    const double d = (matched[i] ? scaus[i] : 0.0) - est;
    dvar += iot_t[i] * d * d;
  }
  var_sample /= sn * sn;
  var_pop = (var_pop + dvar) / (sn * sn);
  return {var_sample, var_pop};
}

// The weighted mean of x (weights w summing to sw) and the weighted sum of squared deviations
// from it.
LATENTAUDIT_INLINE std::pair<double, double> weighted_mean_and_squares(std::span<const double> w,
                                                                       std::span<const double> x, double sw) {
  double m = 0;
  for (std::size_t r = 0; r < x.size(); ++r) m += w[r] * x[r];
  m /= sw;
  double ss = 0;
  for (std::size_t r = 0; r < x.size(); ++r) ss += w[r] * (x[r] - m) * (x[r] - m);
  return {m, ss};
}

}  // namespace detail

LATENTAUDIT_INLINE matching_result nearest_neighbor_matching(std::span<const double> outcome,
                                                             std::span<const double> treatment,
                                                             std::span<const double> covariates,
                                                             std::size_t n_covariates,
                                                             const matching_options& options) {
  constexpr std::string_view fn = "nearest_neighbor_matching";
  using detail::kd_neighbor;
  const matching_options& o = options;
  const std::size_t n = outcome.size(), k = n_covariates;
  std::vector<bool> is_exact;
  const std::size_t n_treated =
      detail::check_matching_arguments(fn, outcome, treatment, covariates, k, o, is_exact);
  const std::size_t n_control = n - n_treated;
  const bool ate = o.estimand == matching_estimand::ate;
  const bool atc = o.estimand == matching_estimand::atc;
  // Arm indicator after Match's ATC flip: 1 = focal arm for ATT/ATC.
  std::vector<unsigned char> tr(n);
  for (std::size_t i = 0; i < n; ++i) tr[i] = static_cast<unsigned char>((treatment[i] == 1.0) != atc);
  const std::size_t n1 = atc ? n_control : n_treated, n0 = n - n1;
  {
    const std::size_t pool = ate ? std::min(n1, n0) : n0;
    if (o.neighbors > pool) {
      detail::throw_invalid(fn, "options.neighbors",
                            "must not exceed the pool of units to match from (" + std::to_string(pool) +
                                "), got " + std::to_string(o.neighbors));
    }
    if (o.var_calc > 0 && o.var_calc + 1 > std::min(n1, n0)) {
      detail::throw_invalid(fn, "options.var_calc",
                            "must be below the size of the smaller arm (" + std::to_string(std::min(n1, n0)) +
                                "), got " + std::to_string(o.var_calc));
    }
  }

  std::vector<double> pop_sd;
  const Eigen::MatrixXd xs = detail::scaled_covariates(fn, covariates, n, k, o, pop_sd);
  const Eigen::Index kk = static_cast<Eigen::Index>(k);
  const std::vector<double> z = detail::distance_points(fn, xs, n, k, o);
  const detail::unit_matcher matcher(covariates, z, n, k, tr, is_exact, pop_sd, o);
  auto find = [&](std::size_t i, int arm, std::size_t m, bool keep_ties, bool exclude_self,
                  std::vector<kd_neighbor>& knn, std::vector<kd_neighbor>& out) {
    matcher.find(i, arm, m, keep_ties, exclude_self, knn, out);
  };

  // ---- match every focal unit (parallel over fixed chunks; results concatenated in order) ---
  std::vector<std::size_t> focal;
  for (std::size_t i = 0; i < n; ++i)
    if (ate || tr[i] == 1) focal.push_back(i);
  constexpr std::size_t chunk = 512;
  const std::size_t n_chunks = (focal.size() + chunk - 1) / chunk;
  std::vector<std::vector<std::size_t>> ch_focal(n_chunks), ch_match(n_chunks), ch_count(n_chunks);
  parallel_chunks(focal.size(), chunk, o.threads, [&](std::size_t b, std::size_t e) {
    const std::size_t c = b / chunk;
    std::vector<kd_neighbor> knn, out;
    for (std::size_t f = b; f < e; ++f) {
      const std::size_t i = focal[f];
      find(i, 1 - tr[i], o.neighbors, o.ties, false, knn, out);
      ch_count[c].push_back(out.size());
      for (const auto& nb : out) ch_match[c].push_back(nb.index);
    }
  });
  // rows: (focal unit, match, weight 1/#matches)
  std::vector<std::size_t> row_focal, row_match;
  std::vector<double> row_w;
  std::vector<double> kcount(n, 0.0), kkcount(n, 0.0), ycaus(n, 0.0);
  std::vector<unsigned char> matched(n, 0);
  std::size_t n_dropped = 0;
  for (std::size_t c = 0, f = 0; c < n_chunks; ++c) {
    std::size_t pos = 0;
    for (std::size_t cnt : ch_count[c]) {
      const std::size_t i = focal[f++];
      if (cnt == 0) {
        ++n_dropped;
        continue;
      }
      matched[i] = 1;
      const double w = 1.0 / static_cast<double>(cnt);
      double ysum = 0;
      for (std::size_t q = 0; q < cnt; ++q) {
        const std::size_t j = ch_match[c][pos + q];
        row_focal.push_back(i);
        row_match.push_back(j);
        row_w.push_back(w);
        kcount[j] += w;
        kkcount[j] += w * w;
        ysum += outcome[j] * w;
      }
      ycaus[i] = tr[i] == 1 ? outcome[i] - ysum : ysum - outcome[i];
      pos += cnt;
    }
  }
  const std::size_t n_rows = row_w.size();
  if (n_rows == 0) {
    detail::throw_invalid(fn, o.caliper.empty() ? "options.exact" : "options.caliper",
                          "drops every focal unit: no unit has " + std::to_string(o.neighbors) +
                              " eligible match(es); widen the caliper or relax exact matching");
  }
  const std::size_t n_matched = focal.size() - n_dropped;

  // ---- bias adjustment ----------------------------------------------------------------------
  Eigen::MatrixXd xo(static_cast<Eigen::Index>(n), kk);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < k; ++j)
      xo(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = covariates[i * k + j];
  Eigen::VectorXd alpha_c = Eigen::VectorXd::Zero(kk), alpha_t = Eigen::VectorXd::Zero(kk);
  if (o.bias_adjust) {
    if (n_matched < k) {
      detail::throw_invalid(fn, "options.bias_adjust",
                            "needs at least as many matched focal units as covariates (" + std::to_string(k) +
                                "), got " + std::to_string(n_matched));
    }
    std::vector<double> wc(n), wt(n);
    for (std::size_t i = 0; i < n; ++i) {
      wc[i] = tr[i] == 0 ? kcount[i] : 0.0;
      wt[i] = tr[i] == 1 ? kcount[i] : 0.0;
    }
    if (ate) alpha_t = detail::match_bias_regression(xo, outcome, wt, o.tolerance);
    alpha_c = detail::match_bias_regression(xo, outcome, wc, o.tolerance);
  }
  // Per-row effects τ (bias-adjusted) in the focal orientation, and the estimate.
  std::vector<double> tau(n_rows), tau_raw(n_rows);
  double sw = 0, swt = 0;
  for (std::size_t r = 0; r < n_rows; ++r) {
    const std::size_t i = row_focal[r], j = row_match[r];
    double adj = 0;
    if (o.bias_adjust) {
      const Eigen::VectorXd& a = tr[i] == 1 ? alpha_c : alpha_t;
      adj = (xo.row(static_cast<Eigen::Index>(i)) - xo.row(static_cast<Eigen::Index>(j))).dot(a);
    }
    tau_raw[r] = tr[i] == 1 ? outcome[i] - outcome[j] : outcome[j] - outcome[i];
    tau[r] = tr[i] == 1 ? outcome[i] - (outcome[j] + adj) : (outcome[j] + adj) - outcome[i];
    sw += row_w[r];
    swt += row_w[r] * tau[r];
  }
  const double est = swt / sw;  // in the flipped orientation for ATC
  std::vector<double> scaus = ycaus;
  if (o.bias_adjust) {
    // SCAUS = YCAUS − ZCAUS'α, ZCAUS = Z_i − Z̄_matches (focal treated) or Z̄_matches − Z_i.
    std::vector<Eigen::VectorXd> zbar(n);
    for (std::size_t r = 0; r < n_rows; ++r) {
      const std::size_t i = row_focal[r];
      if (zbar[i].size() == 0) zbar[i] = Eigen::VectorXd::Zero(kk);
      zbar[i] += row_w[r] * xo.row(static_cast<Eigen::Index>(row_match[r])).transpose();
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!matched[i]) continue;
      const Eigen::VectorXd zi = xo.row(static_cast<Eigen::Index>(i)).transpose();
      if (tr[i] == 1)
        scaus[i] -= (zi - zbar[i]).dot(alpha_c);
      else
        scaus[i] -= (zbar[i] - zi).dot(alpha_t);
    }
  }

  // ---- conditional variances σ²(Xᵢ) --------------------------------------------------------
  const bool compat = o.dropped_variance == dropped_unit_variance::match_compatible;
  std::vector<double> iot_t(n), iot_c(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool is_focal = ate || tr[i] == 1;
    iot_t[i] = is_focal && (compat || matched[i]) ? 1.0 : 0.0;
    iot_c[i] = ate ? 1.0 : (tr[i] == 0 ? 1.0 : 0.0);
  }
  std::vector<double> sigs(n, 0.0);
  if (o.var_calc == 0) {
    double ss = 0;
    for (std::size_t r = 0; r < n_rows; ++r) ss += row_w[r] * (tau[r] - est) * (tau[r] - est);
    std::fill(sigs.begin(), sigs.end(), 0.5 * ss / sw);
  } else {
    // σ̂²(Xᵢ) = sample variance of Yᵢ and the outcomes of its J nearest same-arm units (ties kept),
    // needed only where it carries weight in the variance formulas.
    std::vector<std::size_t> need;
    for (std::size_t i = 0; i < n; ++i)
      if (iot_t[i] != 0.0 || kcount[i] != 0.0) need.push_back(i);
    parallel_chunks(need.size(), chunk, o.threads, [&](std::size_t b, std::size_t e) {
      std::vector<kd_neighbor> knn, out;
      for (std::size_t f = b; f < e; ++f) {
        const std::size_t i = need[f];
        find(i, tr[i], o.var_calc, o.ties, true, knn, out);
        sigs[i] = out.empty() ? 0.0 : detail::outcome_variance(outcome[i], out, outcome);
      }
    });
  }
  const auto [var_sample, var_pop] =
      detail::abadie_imbens_variances(sigs, iot_t, iot_c, kcount, kkcount, matched, scaus, est, ate);
  const double var_cond = std::max(var_sample, var_pop) - var_sample;

  // the naive SE of the matched differences (Match's se.standard, unadjusted)
  const auto [mest, vst] = detail::weighted_mean_and_squares(row_w, tau_raw, sw);
  matching_result res;
  const double sign = atc ? -1.0 : 1.0;
  res.estimate_unadjusted = sign * mest;
  res.std_error_population = std::sqrt(var_pop);
  res.std_error_sample = std::sqrt(var_sample);
  res.std_error_conditional = std::sqrt(var_cond);
  res.std_error_standard = std::sqrt(vst) / sw;
  res.n_focal = focal.size();
  res.n_matched = n_matched;
  res.n_dropped = n_dropped;
  res.n_rows = n_rows;
  {
    std::vector<unsigned char> used(n, 0);
    for (std::size_t j : row_match) used[j] = 1;
    for (unsigned char u : used) res.n_matches_unique += u;
  }
  // matched rows in Match's orientation: treated/control columns
  std::vector<std::size_t> it(n_rows), ic(n_rows);
  for (std::size_t r = 0; r < n_rows; ++r) {
    const bool focal_treated = treatment[row_focal[r]] == 1.0;
    it[r] = focal_treated ? row_focal[r] : row_match[r];
    ic[r] = focal_treated ? row_match[r] : row_focal[r];
  }

  res.balance =
      detail::balance_table(treatment, covariates, n, k, n_treated, n_control, it, ic, row_w, sw, atc, o);

  if (o.keep_pairs) {
    res.index_treated = std::move(it);
    res.index_control = std::move(ic);
    res.weights = std::move(row_w);
  }

  // ---- the effect ---------------------------------------------------------------------------
  effect_estimate& e = res.effect;
  e.method = "matching";
  e.estimand = ate ? "ate" : (atc ? "atc" : "att");
  e.estimate = sign * est;
  e.std_error = o.sample_variance ? res.std_error_sample : res.std_error_population;
  e.level = o.level;
  e.n_treated = n_treated;
  e.n_control = n_control;
  e.n_pairs = n_rows;
  const double scale = std::fabs(est) + 1.0;
  if (!(e.std_error > 10.0 * std::numeric_limits<double>::epsilon() * scale) || !std::isfinite(e.std_error)) {
    if (o.if_degenerate == on_degenerate::throw_error) {
      detail::throw_numerical(fn,
                              "the Abadie-Imbens standard error is zero (all matched differences equal); "
                              "the z statistic is undefined");
    }
    e.status = estimate_status::degenerate;
    e.std_error = e.statistic = e.p_value = e.ci_low = e.ci_high = effect_estimate::nan;
    return res;
  }
  e.statistic = e.estimate / e.std_error;
  e.p_value = std::fmin(1.0, 2.0 * detail::normal_upper(std::fabs(e.statistic)));
  const double q = detail::normal_quantile_upper((1.0 - o.level) / 2.0);
  e.ci_low = e.estimate - q * e.std_error;
  e.ci_high = e.estimate + q * e.std_error;
  return res;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_MATCHING_INL_HPP
