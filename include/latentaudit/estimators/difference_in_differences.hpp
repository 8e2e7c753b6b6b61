// SPDX-License-Identifier: MIT
// latentaudit: difference in differences — the 2 × 2 design from cell means or by regression,
// two-way fixed effects (TWFE) with cluster-robust SE by unit, and event studies with leads and
// lags and a joint Wald pre-trend test. Staggered adoption and other design problems are
// reported in a `warnings` vector. Formulas and peers: docs/estimators/difference_in_differences.md.
#ifndef LATENTAUDIT_ESTIMATORS_DIFFERENCE_IN_DIFFERENCES_HPP
#define LATENTAUDIT_ESTIMATORS_DIFFERENCE_IN_DIFFERENCES_HPP

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../core/detail/check.hpp"
#include "detail/distributions.hpp"
#include "effect_estimate.hpp"
#include "regression.hpp"

namespace latentaudit {

// ============================================================================================
// Declarations
// ============================================================================================

/// @brief A design problem found in a panel (the estimate is still returned).
enum class did_warning_code {
  staggered_adoption,    ///< treated units start in different periods: TWFE is biased if effects vary (Goodman-Bacon 2021)
  treatment_reversal,    ///< some unit leaves treatment after starting (treatment not absorbing)
  no_never_treated,      ///< every unit is treated at some time: only timing differences identify effects
  always_treated,        ///< some units are treated in their first observed period (no pre-period)
  dropped_observations,  ///< event study: observations outside the event window were dropped
};

/// @brief One warning: a code and a sentence explaining it with the numbers found.
struct did_warning {
  did_warning_code code;  ///< what was found
  std::string message;    ///< human-readable explanation
};

/// @brief Summary of one cell of the 2 × 2 design.
struct did_cell {
  double mean = effect_estimate::nan;      ///< cell mean
  double variance = effect_estimate::nan;  ///< unbiased cell variance
  std::size_t n = 0;                       ///< observations
};

/// @brief Options of did_2x2_means().
struct did_means_options {
  double level = 0.95;             ///< confidence level, in (0, 1)
  bool normal_reference = false;   ///< false: t with Satterthwaite df; true: standard normal
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< zero variance in every cell: throw or flag
};

/// @brief Result of did_2x2_means().
struct did_means_result {
  effect_estimate effect;  ///< method "did_2x2_cells", estimand "did"
  /// cells in the order (control, pre), (control, post), (treated, pre), (treated, post)
  std::array<did_cell, 4> cells{};
};

/// @brief How fixed effects that are nested in the clusters count in k for df = n − k and the
/// (n−1)/(n−k) factor of HC1/CR1.
enum class fixed_effect_count {
  counted,  ///< every unit dummy counts (R `lm(y ~ ... + factor(unit))` + `vcovCL`)
  nested,   ///< unit effects, nested in the unit clusters, are not counted (fixest's `fixef.K = "nested"` rule)
};

/// @brief Options of did_2x2_regression() and did_twfe().
struct did_options {
  covariance_type covariance = covariance_type::cr1;  ///< cluster types cluster by unit
  reference_distribution distribution = reference_distribution::t_cluster;  ///< t(G−1) by default (Stata/fixest)
  double level = 0.95;                                   ///< confidence level, in (0, 1)
  fixed_effect_count fe_count = fixed_effect_count::counted;  ///< TWFE: count unit effects in k or not
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< exact fit: throw or flag
};

/// @brief Result of did_2x2_regression() and did_twfe().
struct did_result {
  effect_estimate effect;             ///< the DiD coefficient (estimand "did" or "att_twfe")
  ols_result fit;                     ///< the underlying regression (within-transformed for TWFE)
  std::vector<did_warning> warnings;  ///< design problems found
};

/// @brief Options of event_study().
struct event_study_options {
  std::optional<long long> first = {};  ///< earliest relative time with a coefficient (≤ −2); default: earliest observed
  std::optional<long long> last = {};   ///< latest relative time with a coefficient (≥ 0); default: latest observed
  bool bin_endpoints = false;  ///< true: earlier/later relative times join the end bins; false: dropped
  covariance_type covariance = covariance_type::cr1;  ///< as did_options
  reference_distribution distribution = reference_distribution::t_cluster;  ///< as did_options
  double level = 0.95;                                                      ///< confidence level
  fixed_effect_count fe_count = fixed_effect_count::counted;                ///< as did_options
  on_degenerate if_degenerate = on_degenerate::throw_error;                 ///< exact fit: throw or flag
};

/// @brief Result of event_study().
struct event_study_result {
  std::vector<long long> relative_times;     ///< relative time of each coefficient (−1 omitted), ascending
  std::vector<effect_estimate> coefficients;  ///< one per relative time, estimand "rel_<k>"
  wald_test_result pre_trend;  ///< H0: every lead (relative time ≤ −2) is 0; degenerate when there is none
  ols_result fit;              ///< the underlying within-unit regression
  std::vector<did_warning> warnings;  ///< design problems found
};

/// @brief 2 × 2 difference in differences from the four cell means:
/// (ȳ₁₁ − ȳ₁₀) − (ȳ₀₁ − ȳ₀₀) with SE = √(Σ_c s_c²/n_c) (independent cells; equals HC2 of the
/// saturated regression) and Satterthwaite df (Σ v_c)²/Σ v_c²/(n_c − 1), v_c = s_c²/n_c.
/// @param y outcomes (finite)
/// @param treated 0/1 group indicator, same size
/// @param post 0/1 period indicator, same size
/// @param options level, reference, degenerate policy
/// @returns the effect and the cells
/// @throws shape_mismatch on size mismatches; invalid_argument on non-binary indicators,
///         non-finite y or a cell with fewer than 2 observations; numerical_error if SE = 0
///         (unless flagged)
[[nodiscard]] did_means_result did_2x2_means(std::span<const double> y, std::span<const double> treated,
                                             std::span<const double> post, const did_means_options& options = {});

/// @brief 2 × 2 difference in differences by the regression y ~ 1 + treated + post + treated:post,
/// with the chosen covariance (cluster types cluster by unit). The coefficient of "treated:post".
/// @param y outcomes
/// @param treated 0/1 group indicator
/// @param post 0/1 period indicator
/// @param units unit of each observation (the clusters)
/// @param options covariance, distribution, level
/// @returns the effect (estimand "did") and the fit
/// @throws as ols() and did_2x2_means()
[[nodiscard]] did_result did_2x2_regression(std::span<const double> y, std::span<const double> treated,
                                            std::span<const double> post, const group_index& units,
                                            const did_options& options = {});

/// @brief Two-way fixed-effects DiD: y_it = α_i + γ_t + β d_it + ε_it, β by the within-unit
/// transformation of y, d and T − 1 period dummies (exact for balanced and unbalanced panels),
/// covariance clustered by unit (or classical/HC0/HC1). k counts the unit effects or not
/// (options.fe_count). Staggered timing and other design problems are listed in warnings.
/// @param y outcomes
/// @param treatment 0/1 treatment indicator d_it
/// @param units unit of each observation
/// @param time integer period of each observation
/// @param options covariance (not hc2/hc3), distribution, level, fe_count
/// @returns the effect (estimand "att_twfe"), the within fit, warnings
/// @throws shape_mismatch, invalid_argument (fewer than 2 units or periods, no within-unit
///         variation of treatment, hc2/hc3, collinearity), numerical_error as ols()
[[nodiscard]] did_result did_twfe(std::span<const double> y, std::span<const double> treatment,
                                  const group_index& units, std::span<const long long> time,
                                  const did_options& options = {});

/// @brief Event study: TWFE with dummies for relative times k = t − start_i (start_i the first
/// treated period of unit i; never-treated units have none), reference k = −1 omitted, and a
/// Wald test that every lead (k ≤ −2) is 0 with the chosen covariance.
/// @param y outcomes
/// @param treatment 0/1 treatment indicator d_it (absorbing; starts are first treated periods)
/// @param units unit of each observation
/// @param time integer period of each observation
/// @param options window, binning, covariance, distribution, level, fe_count
/// @returns the coefficients, the pre-trend test, the fit and warnings
/// @throws as did_twfe(); invalid_argument if first > −2 or last < 0, or no unit is treated
[[nodiscard]] event_study_result event_study(std::span<const double> y, std::span<const double> treatment,
                                             const group_index& units, std::span<const long long> time,
                                             const event_study_options& options = {});

// ============================================================================================
// Implementation
// ============================================================================================

namespace detail {

/// @brief Unit treatment timing and period coding of a panel.
struct panel_layout {
  std::vector<long long> periods;        ///< sorted distinct time values
  std::vector<std::uint32_t> period;     ///< period index of each observation
  std::vector<long long> start;          ///< first treated time of each unit (LLONG_MAX: never treated)
  std::vector<did_warning> warnings;     ///< design problems
};

/// @brief Joins integers as "a, b, c" (at most `limit` items, then "...").
inline std::string join_values(const std::vector<long long>& v, std::size_t limit = 8) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < limit; ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  if (v.size() > limit) s += ", ...";
  return s;
}

/// @brief Checks a panel's arguments and finds periods, treatment starts and design problems.
inline panel_layout describe_panel(std::string_view fn, std::span<const double> y, std::span<const double> d,
                                   const group_index& units, std::span<const long long> time) {
  check_same_size(fn, "treatment", d.size(), "y", y.size());
  check_same_size(fn, "units", units.size(), "y", y.size());
  check_same_size(fn, "time", time.size(), "y", y.size());
  check_finite(fn, "y", y);
  check_binary(fn, "treatment", d);
  if (units.groups() < 2) throw_invalid(fn, "units", "has " + std::to_string(units.groups()) + " unit, expected at least 2");
  panel_layout p;
  p.periods.assign(time.begin(), time.end());
  std::sort(p.periods.begin(), p.periods.end());
  p.periods.erase(std::unique(p.periods.begin(), p.periods.end()), p.periods.end());
  if (p.periods.size() < 2) throw_invalid(fn, "time", "has " + std::to_string(p.periods.size()) + " period, expected at least 2");
  p.period.resize(time.size());
  for (std::size_t i = 0; i < time.size(); ++i) {
    p.period[i] = static_cast<std::uint32_t>(std::lower_bound(p.periods.begin(), p.periods.end(), time[i]) - p.periods.begin());
  }
  const std::size_t u = units.groups();
  p.start.assign(u, LLONG_MAX);
  std::vector<long long> first_seen(u, LLONG_MAX);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto g = units.group[i];
    first_seen[g] = std::min(first_seen[g], time[i]);
    if (d[i] == 1.0) p.start[g] = std::min(p.start[g], time[i]);
  }
  std::size_t reversals = 0, always = 0, never = 0;
  std::vector<char> reversed(u, 0);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto g = units.group[i];
    if (d[i] == 0.0 && time[i] > p.start[g] && !reversed[g]) {
      reversed[g] = 1;
      ++reversals;
    }
  }
  std::vector<long long> starts;
  for (std::size_t g = 0; g < u; ++g) {
    if (p.start[g] == LLONG_MAX) {
      ++never;
      continue;
    }
    starts.push_back(p.start[g]);
    if (p.start[g] == first_seen[g]) ++always;
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  if (starts.size() > 1) {
    p.warnings.push_back({did_warning_code::staggered_adoption,
                          "treatment starts in " + std::to_string(starts.size()) + " different periods (" + join_values(starts) +
                              "): the two-way fixed-effects coefficient averages cohort effects with weights that can be "
                              "negative when effects change over time (Goodman-Bacon 2021); consider group-time ATTs "
                              "(Callaway and Sant'Anna 2021)"});
  }
  if (reversals > 0) {
    p.warnings.push_back({did_warning_code::treatment_reversal,
                          std::to_string(reversals) + " unit(s) leave treatment after it starts; the estimators assume "
                                                      "absorbing treatment and time events from the first treated period"});
  }
  if (never == 0) {
    p.warnings.push_back({did_warning_code::no_never_treated,
                          "every unit is treated at some time: there is no never-treated comparison group, so effects "
                          "are identified only from differences in treatment timing"});
  }
  if (always > 0) {
    p.warnings.push_back({did_warning_code::always_treated,
                          std::to_string(always) + " unit(s) are treated in their first observed period and carry no "
                                                   "pre-treatment information"});
  }
  return p;
}

/// @brief Subtracts group means from every column of m and from v (the within transformation).
inline void demean_within(Eigen::MatrixXd& m, Eigen::VectorXd& v, const std::vector<std::uint32_t>& group,
                          std::size_t groups) {
  std::vector<double> count(groups, 0.0);
  for (auto g : group) count[g] += 1.0;
  std::vector<double> sum(groups);
  auto demean = [&](double* col) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (std::size_t i = 0; i < group.size(); ++i) sum[group[i]] += col[i];
    for (std::size_t g = 0; g < groups; ++g) sum[g] /= count[g];
    for (std::size_t i = 0; i < group.size(); ++i) col[i] -= sum[group[i]];
  };
  for (Eigen::Index j = 0; j < m.cols(); ++j) demean(m.col(j).data());
  demean(v.data());
}

/// @brief Checks that TWFE can use the covariance type (leverages of the dummy model are not
/// available from the within transformation).
inline void check_within_covariance(std::string_view fn, covariance_type c) {
  if (c == covariance_type::hc2 || c == covariance_type::hc3) {
    throw_invalid(fn, "options.covariance",
                  "is " + std::string(covariance_name(c)) +
                      "; the within transformation supports classical, hc0, hc1, cr0, cr1_g and cr1");
  }
}

/// @brief Fits the within-unit regression of y on the columns of x (with names) and clusters by unit.
inline ols_result fit_within(std::string_view fn, Eigen::MatrixXd x, std::vector<std::string> names,
                             Eigen::VectorXd y, const std::vector<std::uint32_t>& unit, const group_index& clusters,
                             covariance_type cov, reference_distribution dist, double level, fixed_effect_count fe,
                             on_degenerate policy) {
  demean_within(x, y, unit, clusters.groups());
  latentaudit::design_matrix dm{std::move(x), std::move(names)};
  ols_options o{.covariance = cov, .distribution = dist, .level = level,
                .absorbed_parameters = fe == fixed_effect_count::counted ? clusters.groups() : 0,
                .if_degenerate = policy};
  const std::span<const double> ys(y.data(), static_cast<std::size_t>(y.size()));
  return ols_impl(dm, ys, is_cluster_covariance(cov) ? &clusters : nullptr, o, fn,
                  "treatment (after removing unit means)");
}

/// @brief Builds the T − 1 period dummies (first period omitted) into columns [c0, c0 + T − 1).
inline void period_dummies(Eigen::MatrixXd& x, Eigen::Index c0, const panel_layout& p,
                           const std::vector<std::size_t>& rows, std::vector<std::string>& names) {
  for (std::size_t t = 1; t < p.periods.size(); ++t) names.push_back("time_" + std::to_string(p.periods[t]));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto t = p.period[rows[r]];
    if (t > 0) x(static_cast<Eigen::Index>(r), c0 + static_cast<Eigen::Index>(t) - 1) = 1.0;
  }
}

/// @brief Restricts a group index to selected observations (renumbering groups that remain).
inline group_index subset_groups(const group_index& g, const std::vector<std::size_t>& rows) {
  group_index out;
  std::vector<std::uint32_t> map(g.groups(), std::numeric_limits<std::uint32_t>::max());
  out.group.reserve(rows.size());
  for (auto r : rows) {
    auto& m = map[g.group[r]];
    if (m == std::numeric_limits<std::uint32_t>::max()) {
      m = static_cast<std::uint32_t>(out.labels.size());
      out.labels.push_back(g.labels[g.group[r]]);
    }
    out.group.push_back(m);
  }
  return out;
}

}  // namespace detail

inline did_means_result did_2x2_means(std::span<const double> y, std::span<const double> treated,
                                      std::span<const double> post, const did_means_options& options) {
  constexpr std::string_view fn = "did_2x2_means";
  detail::check_open_unit(fn, "options.level", options.level);
  detail::check_same_size(fn, "treated", treated.size(), "y", y.size());
  detail::check_same_size(fn, "post", post.size(), "y", y.size());
  detail::check_finite(fn, "y", y);
  detail::check_binary(fn, "treated", treated);
  detail::check_binary(fn, "post", post);
  did_means_result r;
  // Two passes per cell: means, then centred sums of squares.
  std::array<double, 4> sum{}, ss{};
  std::array<std::size_t, 4> n{};
  auto cell = [&](std::size_t i) { return static_cast<std::size_t>(2 * treated[i] + post[i]); };
  for (std::size_t i = 0; i < y.size(); ++i) {
    sum[cell(i)] += y[i];
    ++n[cell(i)];
  }
  static constexpr std::array<const char*, 4> cell_names{"(control, pre)", "(control, post)", "(treated, pre)", "(treated, post)"};
  for (std::size_t c = 0; c < 4; ++c) {
    if (n[c] < 2) {
      detail::throw_invalid(fn, "y", std::string("has ") + std::to_string(n[c]) + " observation(s) in cell " + cell_names[c] +
                                         ", expected at least 2 per cell");
    }
    r.cells[c].n = n[c];
    r.cells[c].mean = sum[c] / static_cast<double>(n[c]);
  }
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double dlt = y[i] - r.cells[cell(i)].mean;
    ss[cell(i)] += dlt * dlt;
  }
  double v = 0, denom = 0, scale = 0;
  for (std::size_t c = 0; c < 4; ++c) {
    r.cells[c].variance = ss[c] / static_cast<double>(n[c] - 1);
    const double vc = r.cells[c].variance / static_cast<double>(n[c]);
    v += vc;
    denom += vc * vc / static_cast<double>(n[c] - 1);
    scale = std::fmax(scale, std::fabs(r.cells[c].mean));
  }
  effect_estimate& e = r.effect;
  e.method = "did_2x2_cells";
  e.estimand = "did";
  e.estimate = (r.cells[3].mean - r.cells[2].mean) - (r.cells[1].mean - r.cells[0].mean);
  e.std_error = std::sqrt(v);
  e.level = options.level;
  e.n_treated = n[2] + n[3];
  e.n_control = n[0] + n[1];
  const double df = options.normal_reference ? std::numeric_limits<double>::infinity() : v * v / denom;
  if (!(e.std_error > 10.0 * std::numeric_limits<double>::epsilon() * scale)) {
    if (options.if_degenerate == on_degenerate::throw_error) {
      detail::throw_numerical(fn, "every cell is constant (standard error 0); the test is undefined");
    }
    e.status = estimate_status::degenerate;
    e.std_error = effect_estimate::nan;
    return r;
  }
  detail::fill_term(e, df, options.level);
  return r;
}

inline did_result did_2x2_regression(std::span<const double> y, std::span<const double> treated,
                                     std::span<const double> post, const group_index& units,
                                     const did_options& options) {
  constexpr std::string_view fn = "did_2x2_regression";
  detail::check_same_size(fn, "treated", treated.size(), "y", y.size());
  detail::check_same_size(fn, "post", post.size(), "y", y.size());
  detail::check_same_size(fn, "units", units.size(), "y", y.size());
  detail::check_binary(fn, "treated", treated);
  detail::check_binary(fn, "post", post);
  std::vector<double> inter(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) inter[i] = treated[i] * post[i];
  const auto x = design_builder(y.size()).intercept().add("treated", treated).add("post", post).add("treated:post", inter).build();
  ols_options o{.covariance = options.covariance, .distribution = options.distribution, .level = options.level,
                .if_degenerate = options.if_degenerate};
  did_result r;
  r.fit = is_cluster_covariance(options.covariance) ? ols(x, y, units, o) : ols(x, y, o);
  r.effect = r.fit.term("treated:post");
  r.effect.method = "did_2x2_ols_" + std::string(covariance_name(r.fit.covariance_kind));
  r.effect.estimand = "did";
  for (std::size_t i = 0; i < y.size(); ++i) (treated[i] == 1.0 ? r.effect.n_treated : r.effect.n_control) += 1;
  return r;
}

inline did_result did_twfe(std::span<const double> y, std::span<const double> treatment, const group_index& units,
                           std::span<const long long> time, const did_options& options) {
  constexpr std::string_view fn = "did_twfe";
  detail::check_open_unit(fn, "options.level", options.level);
  detail::check_within_covariance(fn, options.covariance);
  auto p = detail::describe_panel(fn, y, treatment, units, time);
  const std::size_t n = y.size(), t = p.periods.size();
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(t));
  std::vector<std::string> names{"treatment"};
  std::vector<std::size_t> rows(n);
  for (std::size_t i = 0; i < n; ++i) {
    rows[i] = i;
    x(static_cast<Eigen::Index>(i), 0) = treatment[i];
  }
  detail::period_dummies(x, 1, p, rows, names);
  did_result r;
  r.fit = detail::fit_within(fn, std::move(x), std::move(names), Eigen::Map<const Eigen::VectorXd>(y.data(), static_cast<Eigen::Index>(n)),
                             units.group, units, options.covariance, options.distribution, options.level,
                             options.fe_count, options.if_degenerate);
  r.effect = r.fit.terms[0];
  r.effect.method = "did_twfe_" + std::string(covariance_name(r.fit.covariance_kind));
  r.effect.estimand = "att_twfe";
  for (std::size_t i = 0; i < n; ++i) (treatment[i] == 1.0 ? r.effect.n_treated : r.effect.n_control) += 1;
  r.warnings = std::move(p.warnings);
  return r;
}

inline event_study_result event_study(std::span<const double> y, std::span<const double> treatment,
                                      const group_index& units, std::span<const long long> time,
                                      const event_study_options& options) {
  constexpr std::string_view fn = "event_study";
  detail::check_open_unit(fn, "options.level", options.level);
  detail::check_within_covariance(fn, options.covariance);
  if (options.first && *options.first > -2) {
    detail::throw_invalid(fn, "options.first", "must be at most -2 (the reference period is -1), got " + std::to_string(*options.first));
  }
  if (options.last && *options.last < 0) {
    detail::throw_invalid(fn, "options.last", "must be at least 0, got " + std::to_string(*options.last));
  }
  auto p = detail::describe_panel(fn, y, treatment, units, time);
  const std::size_t n = y.size();
  // Relative times of treated units' observations.
  long long lo = LLONG_MAX, hi = LLONG_MIN;
  for (std::size_t i = 0; i < n; ++i) {
    const long long s = p.start[units.group[i]];
    if (s == LLONG_MAX) continue;
    lo = std::min(lo, time[i] - s);
    hi = std::max(hi, time[i] - s);
  }
  if (lo == LLONG_MAX) detail::throw_invalid(fn, "treatment", "is 0 everywhere, expected at least one treated unit");
  const long long first = options.first.value_or(lo);
  const long long last = options.last.value_or(hi);
  // Keep every never-treated observation; bin or drop treated ones outside [first, last].
  std::vector<std::size_t> rows;
  std::vector<long long> rel;
  rows.reserve(n);
  rel.reserve(n);
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long long s = p.start[units.group[i]];
    if (s == LLONG_MAX) {
      rows.push_back(i);
      rel.push_back(LLONG_MAX);
      continue;
    }
    long long k = time[i] - s;
    if (k < first || k > last) {
      if (!options.bin_endpoints) {
        ++dropped;
        continue;
      }
      k = std::clamp(k, first, last);
    }
    rows.push_back(i);
    rel.push_back(k);
  }
  if (dropped > 0) {
    p.warnings.push_back({did_warning_code::dropped_observations,
                          std::to_string(dropped) + " observation(s) of treated units lie outside the event window [" +
                              std::to_string(first) + ", " + std::to_string(last) + "] and were dropped"});
  }
  event_study_result r;
  // Coefficients for the relative times present in the (binned or trimmed) sample, except −1.
  for (long long k : rel) {
    if (k != LLONG_MAX && k != -1) r.relative_times.push_back(k);
  }
  std::sort(r.relative_times.begin(), r.relative_times.end());
  r.relative_times.erase(std::unique(r.relative_times.begin(), r.relative_times.end()), r.relative_times.end());
  const std::size_t m = rows.size(), nk = r.relative_times.size(), t = p.periods.size();
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(nk + t - 1));
  std::vector<std::string> names;
  for (long long k : r.relative_times) names.push_back("rel_" + std::to_string(k));
  Eigen::VectorXd ys(static_cast<Eigen::Index>(m));
  for (std::size_t q = 0; q < m; ++q) {
    ys(static_cast<Eigen::Index>(q)) = y[rows[q]];
    if (rel[q] == LLONG_MAX || rel[q] == -1) continue;
    const auto col = std::lower_bound(r.relative_times.begin(), r.relative_times.end(), rel[q]) - r.relative_times.begin();
    x(static_cast<Eigen::Index>(q), col) = 1.0;
  }
  detail::period_dummies(x, static_cast<Eigen::Index>(nk), p, rows, names);
  const group_index sub = detail::subset_groups(units, rows);
  r.fit = detail::fit_within(fn, std::move(x), std::move(names), std::move(ys), sub.group, sub, options.covariance,
                             options.distribution, options.level, options.fe_count, options.if_degenerate);
  std::vector<std::string> leads;
  for (std::size_t j = 0; j < nk; ++j) {
    effect_estimate e = r.fit.terms[j];
    e.method = "event_study_" + std::string(covariance_name(r.fit.covariance_kind));
    r.coefficients.push_back(std::move(e));
    if (r.relative_times[j] <= -2) leads.push_back(r.fit.names[j]);
  }
  if (leads.empty()) {
    r.pre_trend.status = estimate_status::degenerate;
    r.pre_trend.df1 = 0;
  } else {
    r.pre_trend = wald_test(r.fit, leads);
  }
  r.warnings = std::move(p.warnings);
  return r;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_DIFFERENCE_IN_DIFFERENCES_HPP
