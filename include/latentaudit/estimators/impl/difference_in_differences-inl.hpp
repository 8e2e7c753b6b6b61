// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/difference_in_differences.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_DIFFERENCE_IN_DIFFERENCES_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_DIFFERENCE_IN_DIFFERENCES_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../difference_in_differences.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "../../core/detail/check.hpp"

namespace latentaudit {

// ============================================================================================
// Implementation
// ============================================================================================

namespace detail {

LATENTAUDIT_INLINE std::string join_values(const std::vector<long long>& v, std::size_t limit) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < limit; ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  if (v.size() > limit) s += ", ...";
  return s;
}

LATENTAUDIT_INLINE panel_layout describe_panel(std::string_view fn, std::span<const double> y,
                                               std::span<const double> d, const group_index& units,
                                               std::span<const long long> time) {
  check_same_size(fn, "treatment", d.size(), "y", y.size());
  check_same_size(fn, "units", units.size(), "y", y.size());
  check_same_size(fn, "time", time.size(), "y", y.size());
  check_finite(fn, "y", y);
  check_binary(fn, "treatment", d);
  if (units.groups() < 2)
    throw_invalid(fn, "units", "has " + std::to_string(units.groups()) + " unit, expected at least 2");
  panel_layout p;
  p.periods.assign(time.begin(), time.end());
  std::sort(p.periods.begin(), p.periods.end());
  p.periods.erase(std::unique(p.periods.begin(), p.periods.end()), p.periods.end());
  if (p.periods.size() < 2)
    throw_invalid(fn, "time", "has " + std::to_string(p.periods.size()) + " period, expected at least 2");
  p.period.resize(time.size());
  for (std::size_t i = 0; i < time.size(); ++i) {
    p.period[i] = static_cast<std::uint32_t>(std::lower_bound(p.periods.begin(), p.periods.end(), time[i]) -
                                             p.periods.begin());
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
    p.warnings.push_back(
        {did_warning_code::staggered_adoption,
         "treatment starts in " + std::to_string(starts.size()) + " different periods (" +
             join_values(starts) +
             "): the two-way fixed-effects coefficient averages cohort effects with weights that can be "
             "negative when effects change over time (Goodman-Bacon 2021); consider group-time ATTs "
             "(Callaway and Sant'Anna 2021)"});
  }
  if (reversals > 0) {
    p.warnings.push_back({did_warning_code::treatment_reversal,
                          std::to_string(reversals) +
                              " unit(s) leave treatment after it starts; the estimators assume "
                              "absorbing treatment and time events from the first treated period"});
  }
  if (never == 0) {
    p.warnings.push_back(
        {did_warning_code::no_never_treated,
         "every unit is treated at some time: there is no never-treated comparison group, so effects "
         "are identified only from differences in treatment timing"});
  }
  if (always > 0) {
    p.warnings.push_back({did_warning_code::always_treated,
                          std::to_string(always) +
                              " unit(s) are treated in their first observed period and carry no "
                              "pre-treatment information"});
  }
  return p;
}

LATENTAUDIT_INLINE void demean_within(Eigen::MatrixXd& m, Eigen::VectorXd& v,
                                      const std::vector<std::uint32_t>& group, std::size_t groups) {
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

LATENTAUDIT_INLINE void check_within_covariance(std::string_view fn, covariance_type c) {
  if (c == covariance_type::hc2 || c == covariance_type::hc3) {
    throw_invalid(fn, "options.covariance",
                  "is " + std::string(covariance_name(c)) +
                      "; the within transformation supports classical, hc0, hc1, cr0, cr1_g and cr1");
  }
}

LATENTAUDIT_INLINE ols_result fit_within(std::string_view fn, Eigen::MatrixXd x,
                                         std::vector<std::string> names, Eigen::VectorXd y,
                                         const std::vector<std::uint32_t>& unit, const group_index& clusters,
                                         covariance_type cov, reference_distribution dist, double level,
                                         fixed_effect_count fe, on_degenerate policy) {
  demean_within(x, y, unit, clusters.groups());
  latentaudit::design_matrix dm{std::move(x), std::move(names)};
  ols_options o{.covariance = cov,
                .distribution = dist,
                .level = level,
                .absorbed_parameters = fe == fixed_effect_count::counted ? clusters.groups() : 0,
                .if_degenerate = policy};
  const std::span<const double> ys(y.data(), static_cast<std::size_t>(y.size()));
  return ols_impl(dm, ys, is_cluster_covariance(cov) ? &clusters : nullptr, o, fn,
                  "treatment (after removing unit means)");
}

LATENTAUDIT_INLINE void period_dummies(Eigen::MatrixXd& x, Eigen::Index c0, const panel_layout& p,
                                       const std::vector<std::size_t>& rows,
                                       std::vector<std::string>& names) {
  for (std::size_t t = 1; t < p.periods.size(); ++t) names.push_back("time_" + std::to_string(p.periods[t]));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto t = p.period[rows[r]];
    if (t > 0) x(static_cast<Eigen::Index>(r), c0 + static_cast<Eigen::Index>(t) - 1) = 1.0;
  }
}

LATENTAUDIT_INLINE group_index subset_groups(const group_index& g, const std::vector<std::size_t>& rows) {
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

LATENTAUDIT_INLINE did_means_result did_2x2_means(std::span<const double> y, std::span<const double> treated,
                                                  std::span<const double> post,
                                                  const did_means_options& options) {
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
  static constexpr std::array<const char*, 4> cell_names{"(control, pre)", "(control, post)",
                                                         "(treated, pre)", "(treated, post)"};
  for (std::size_t c = 0; c < 4; ++c) {
    if (n[c] < 2) {
      detail::throw_invalid(fn, "y",
                            std::string("has ") + std::to_string(n[c]) + " observation(s) in cell " +
                                cell_names[c] + ", expected at least 2 per cell");
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

LATENTAUDIT_INLINE did_result did_2x2_regression(std::span<const double> y, std::span<const double> treated,
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
  const auto x = design_builder(y.size())
                     .intercept()
                     .add("treated", treated)
                     .add("post", post)
                     .add("treated:post", inter)
                     .build();
  ols_options o{.covariance = options.covariance,
                .distribution = options.distribution,
                .level = options.level,
                .if_degenerate = options.if_degenerate};
  did_result r;
  r.fit = is_cluster_covariance(options.covariance) ? ols(x, y, units, o) : ols(x, y, o);
  r.effect = r.fit.term("treated:post");
  r.effect.method = "did_2x2_ols_" + std::string(covariance_name(r.fit.covariance_kind));
  r.effect.estimand = "did";
  for (std::size_t i = 0; i < y.size(); ++i)
    (treated[i] == 1.0 ? r.effect.n_treated : r.effect.n_control) += 1;
  return r;
}

LATENTAUDIT_INLINE did_result did_twfe(std::span<const double> y, std::span<const double> treatment,
                                       const group_index& units, std::span<const long long> time,
                                       const did_options& options) {
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
  r.fit = detail::fit_within(fn, std::move(x), std::move(names),
                             Eigen::Map<const Eigen::VectorXd>(y.data(), static_cast<Eigen::Index>(n)),
                             units.group, units, options.covariance, options.distribution, options.level,
                             options.fe_count, options.if_degenerate);
  r.effect = r.fit.terms[0];
  r.effect.method = "did_twfe_" + std::string(covariance_name(r.fit.covariance_kind));
  r.effect.estimand = "att_twfe";
  for (std::size_t i = 0; i < n; ++i) (treatment[i] == 1.0 ? r.effect.n_treated : r.effect.n_control) += 1;
  r.warnings = std::move(p.warnings);
  return r;
}

LATENTAUDIT_INLINE event_study_result event_study(std::span<const double> y,
                                                  std::span<const double> treatment, const group_index& units,
                                                  std::span<const long long> time,
                                                  const event_study_options& options) {
  constexpr std::string_view fn = "event_study";
  detail::check_open_unit(fn, "options.level", options.level);
  detail::check_within_covariance(fn, options.covariance);
  if (options.first && *options.first > -2) {
    detail::throw_invalid(
        fn, "options.first",
        "must be at most -2 (the reference period is -1), got " + std::to_string(*options.first));
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
  if (lo == LLONG_MAX)
    detail::throw_invalid(fn, "treatment", "is 0 everywhere, expected at least one treated unit");
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
                          std::to_string(dropped) +
                              " observation(s) of treated units lie outside the event window [" +
                              std::to_string(first) + ", " + std::to_string(last) + "] and were dropped"});
  }
  event_study_result r;
  // Coefficients for the relative times present in the (binned or trimmed) sample, except −1.
  for (long long k : rel) {
    if (k != LLONG_MAX && k != -1) r.relative_times.push_back(k);
  }
  std::sort(r.relative_times.begin(), r.relative_times.end());
  r.relative_times.erase(std::unique(r.relative_times.begin(), r.relative_times.end()),
                         r.relative_times.end());
  const std::size_t m = rows.size(), nk = r.relative_times.size(), t = p.periods.size();
  Eigen::MatrixXd x =
      Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(nk + t - 1));
  std::vector<std::string> names;
  for (long long k : r.relative_times) names.push_back("rel_" + std::to_string(k));
  Eigen::VectorXd ys(static_cast<Eigen::Index>(m));
  for (std::size_t q = 0; q < m; ++q) {
    ys(static_cast<Eigen::Index>(q)) = y[rows[q]];
    if (rel[q] == LLONG_MAX || rel[q] == -1) continue;
    const auto col =
        std::lower_bound(r.relative_times.begin(), r.relative_times.end(), rel[q]) - r.relative_times.begin();
    x(static_cast<Eigen::Index>(q), col) = 1.0;
  }
  detail::period_dummies(x, static_cast<Eigen::Index>(nk), p, rows, names);
  const group_index sub = detail::subset_groups(units, rows);
  r.fit = detail::fit_within(fn, std::move(x), std::move(names), std::move(ys), sub.group, sub,
                             options.covariance, options.distribution, options.level, options.fe_count,
                             options.if_degenerate);
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

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_DIFFERENCE_IN_DIFFERENCES_INL_HPP
