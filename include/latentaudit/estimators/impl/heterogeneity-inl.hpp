// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/heterogeneity.hpp (header-only mode includes this file; compiled
// mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_HETEROGENEITY_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_HETEROGENEITY_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../heterogeneity.hpp"

#include <algorithm>
#include <cmath>

#include "../../core/detail/check.hpp"
#include "../difference_in_means.hpp"
#include "../multiplicity.hpp"
#include "../regression.hpp"

namespace latentaudit {

// ---- implementation ----

namespace detail {

[[nodiscard]] LATENTAUDIT_INLINE double quantile7_sorted(const std::vector<double>& s, double p) {
  const double index = 1.0 + static_cast<double>(s.size() - 1) * p;
  const double lo = std::floor(index);
  const double h = index - lo;
  const auto l = static_cast<std::size_t>(lo) - 1;
  const std::size_t u = std::min(static_cast<std::size_t>(std::ceil(index)) - 1, s.size() - 1);
  if (!(h > 0.0) || s[u] == s[l]) return s[l];
  return (1.0 - h) * s[l] + h * s[u];
}

[[nodiscard]] LATENTAUDIT_INLINE group_codes bin_codes(std::string_view fn, std::span<const double> x,
                                                       std::size_t k, std::vector<double>& edges) {
  check_finite(fn, "moderator", x);
  if (k < 2) throw_invalid(fn, "bins", "must be at least 2, got " + std::to_string(k));
  if (k > x.size()) {
    throw_invalid(
        fn, "bins",
        "must not exceed the number of units (" + std::to_string(x.size()) + "), got " + std::to_string(k));
  }
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  edges.resize(k + 1);
  for (std::size_t j = 0; j <= k; ++j) {
    edges[j] = quantile7_sorted(s, static_cast<double>(j) / static_cast<double>(k));
  }
  edges[k] = s.back();  // exact at p = 1
  for (std::size_t j = 1; j <= k; ++j) {
    if (!(edges[j] > edges[j - 1])) {
      throw_invalid(fn, "moderator",
                    "has tied quantile breaks (" + number_text(edges[j]) + " twice) for " +
                        std::to_string(k) + " bins; use fewer bins or a categorical grouping");
    }
  }
  group_codes c;
  for (std::size_t j = 1; j <= k; ++j) {
    std::string lab(1, 'Q');  // (not "Q" + …: GCC 12 -Wrestrict false positive)
    lab.append(std::to_string(j));
    c.label.push_back(std::move(lab));
  }
  c.code.reserve(x.size());
  for (double v : x) {
    // Bin j (0-based) is (edges[j], edges[j+1]]; the first also includes edges[0].
    const auto it = std::lower_bound(edges.begin() + 1, edges.end(), v);
    c.code.push_back(static_cast<std::size_t>(it - (edges.begin() + 1)));
  }
  return c;
}

LATENTAUDIT_INLINE interaction_test_result hc_wald_last(std::string_view fn, const Eigen::MatrixXd& x,
                                                        const Eigen::VectorXd& y, Eigen::Index q,
                                                        interaction_covariance type, on_degenerate policy) {
  const Eigen::Index p = x.cols();
  interaction_test_result r;
  static constexpr const char* names[] = {"HC0", "HC1", "HC2", "HC3"};
  static constexpr covariance_type kinds[] = {covariance_type::hc0, covariance_type::hc1,
                                              covariance_type::hc2, covariance_type::hc3};
  r.covariance = names[static_cast<int>(type)];
  r.df = static_cast<double>(q);
  r.df_residual = static_cast<double>(x.rows() - p);
  design_matrix dm{x, {}};
  for (Eigen::Index j = 0; j < p; ++j) dm.names.push_back(std::string(1, 'b').append(std::to_string(j)));
  ols_result fit;
  try {
    fit = ols(dm, std::span<const double>(y.data(), static_cast<std::size_t>(y.size())),
              {.covariance = kinds[static_cast<int>(type)],
               .distribution = reference_distribution::t_residual,
               .if_degenerate = policy});
  } catch (const numerical_error& e) {
    throw_numerical(fn, std::string("interaction regression: ") + e.what());
  }
  Eigen::MatrixXd rm = Eigen::MatrixXd::Zero(q, p);
  rm.rightCols(q).setIdentity();
  wald_test_result w;
  try {
    w = wald_test(fit, rm);
  } catch (const invalid_argument& e) {  // singular sandwich block
    if (policy == on_degenerate::throw_error) {
      throw_numerical(
          fn, std::string("the sandwich covariance of the interaction terms is singular: ") + e.what());
    }
    w.status = estimate_status::degenerate;
  }
  if (w.status != estimate_status::ok) {
    r.status = estimate_status::degenerate;
    return r;
  }
  r.chi_square = w.chi2;
  r.p_chi_square = w.chi2_p;
  r.f = w.f;
  r.p_f = w.f_p;
  return r;
}

LATENTAUDIT_INLINE void adjust_groups(std::vector<subgroup_effect>& g) {
  std::vector<double> p;
  p.reserve(g.size());
  for (const auto& s : g) p.push_back(s.effect.p_value);
  const auto holm = p_adjust(p, p_adjust_method::holm, {.allow_missing = true});
  const auto bh = p_adjust(p, p_adjust_method::benjamini_hochberg, {.allow_missing = true});
  for (std::size_t k = 0; k < g.size(); ++k) {
    g[k].p_holm = holm[k];
    g[k].p_bh = bh[k];
  }
}

[[nodiscard]] LATENTAUDIT_INLINE heterogeneity_result unpaired_core(std::string_view fn,
                                                                    std::span<const double> y,
                                                                    std::span<const double> t,
                                                                    const group_codes& gc,
                                                                    const heterogeneity_options& o) {
  const std::size_t k = gc.label.size();
  if (k < 2) throw_invalid(fn, "groups", "must contain at least 2 distinct groups, got " + std::to_string(k));
  std::vector<std::vector<double>> yt(k), yc(k);
  for (std::size_t i = 0; i < y.size(); ++i) (t[i] == 1.0 ? yt : yc)[gc.code[i]].push_back(y[i]);
  // Per group: the library's Welch test, so every number equals welch_t_test on that group.
  heterogeneity_result r;
  for (std::size_t g = 0; g < k; ++g) {
    if (yt[g].size() < 2 || yc[g].size() < 2) {
      throw_invalid(fn, "groups",
                    "group '" + gc.label[g] + "' has " + std::to_string(yt[g].size()) + " treated and " +
                        std::to_string(yc[g].size()) + " control units, expected at least 2 of each");
    }
    subgroup_effect s;
    s.label = gc.label[g];
    s.effect = welch_t_test(yt[g], yc[g], {.level = o.level, .if_degenerate = o.if_degenerate});
    r.groups.push_back(std::move(s));
  }
  adjust_groups(r.groups);
  // Interaction regression: [1, T, G₂..G_K, T·G₂..T·G_K]. The model is saturated in the 2K
  // cells, so its coefficients reproduce the cell means and the T·Gₖ coefficients are the
  // differences between group k's effect and the reference group's effect.
  const auto n = static_cast<Eigen::Index>(y.size()), kk = static_cast<Eigen::Index>(k);
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(n, 2 * kk);
  Eigen::VectorXd yy(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const auto g = static_cast<Eigen::Index>(gc.code[u]);
    x(i, 0) = 1.0;
    x(i, 1) = t[u];
    if (g > 0) {
      x(i, 1 + g) = 1.0;
      x(i, kk + g) = t[u];
    }
    yy[i] = y[u];
  }
  r.interaction = hc_wald_last(fn, x, yy, kk - 1, o.covariance, o.if_degenerate);
  return r;
}

[[nodiscard]] LATENTAUDIT_INLINE heterogeneity_result paired_core(std::string_view fn,
                                                                  std::span<const double> tr,
                                                                  std::span<const double> ct,
                                                                  const group_codes& gc,
                                                                  const heterogeneity_options& o) {
  const std::size_t k = gc.label.size();
  if (k < 2) throw_invalid(fn, "groups", "must contain at least 2 distinct groups, got " + std::to_string(k));
  std::vector<std::vector<double>> a(k), b(k);
  for (std::size_t i = 0; i < tr.size(); ++i) {
    a[gc.code[i]].push_back(tr[i]);
    b[gc.code[i]].push_back(ct[i]);
  }
  heterogeneity_result r;
  for (std::size_t g = 0; g < k; ++g) {
    if (a[g].size() < 2) {
      throw_invalid(
          fn, "groups",
          "group '" + gc.label[g] + "' has " + std::to_string(a[g].size()) + " pair, expected at least 2");
    }
    subgroup_effect s;
    s.label = gc.label[g];
    s.effect = paired_t_test(a[g], b[g], {.level = o.level, .if_degenerate = o.if_degenerate});
    r.groups.push_back(std::move(s));
  }
  adjust_groups(r.groups);
  // Paired interaction regression: d on [1, G₂..G_K]; the Gₖ coefficients are the differences
  // between group k's mean paired difference and the reference group's.
  const auto n = static_cast<Eigen::Index>(tr.size()), kk = static_cast<Eigen::Index>(k);
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(n, kk);
  Eigen::VectorXd d(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    x(i, 0) = 1.0;
    const auto g = static_cast<Eigen::Index>(gc.code[u]);
    if (g > 0) x(i, g) = 1.0;
    d[i] = tr[u] - ct[u];
  }
  r.interaction = hc_wald_last(fn, x, d, kk - 1, o.covariance, o.if_degenerate);
  return r;
}

LATENTAUDIT_INLINE void check_unpaired(std::string_view fn, std::span<const double> y,
                                       std::span<const double> t, std::size_t ng, std::string_view gname,
                                       const heterogeneity_options& o) {
  check_open_unit(fn, "level", o.level);
  check_same_size(fn, "y", y.size(), "treatment", t.size());
  check_same_size(fn, "y", y.size(), gname, ng);
  check_finite(fn, "y", y);
  check_binary(fn, "treatment", t);
}

LATENTAUDIT_INLINE void check_paired(std::string_view fn, std::span<const double> a,
                                     std::span<const double> b, std::size_t ng, std::string_view gname,
                                     const heterogeneity_options& o) {
  check_open_unit(fn, "level", o.level);
  check_same_size(fn, "treated", a.size(), "control", b.size());
  check_same_size(fn, "treated", a.size(), gname, ng);
  check_finite(fn, "treated", a);
  check_finite(fn, "control", b);
}

}  // namespace detail

LATENTAUDIT_INLINE double quantile_type7(std::span<const double> x, double p) {
  constexpr std::string_view fn = "quantile_type7";
  detail::check_min_size(fn, "x", x.size(), 1);
  detail::check_finite(fn, "x", x);
  detail::check_closed_unit(fn, "p", p);
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  return p == 1.0 ? s.back() : detail::quantile7_sorted(s, p);
}

LATENTAUDIT_INLINE heterogeneity_result subgroup_effects(std::span<const double> y,
                                                         std::span<const double> treatment,
                                                         std::span<const std::string> groups,
                                                         const heterogeneity_options& options) {
  constexpr std::string_view fn = "subgroup_effects";
  detail::check_unpaired(fn, y, treatment, groups.size(), "groups", options);
  return detail::unpaired_core(fn, y, treatment, detail::encode_groups(groups), options);
}

LATENTAUDIT_INLINE heterogeneity_result subgroup_effects(std::span<const double> y,
                                                         std::span<const double> treatment,
                                                         std::span<const std::int64_t> groups,
                                                         const heterogeneity_options& options) {
  constexpr std::string_view fn = "subgroup_effects";
  detail::check_unpaired(fn, y, treatment, groups.size(), "groups", options);
  return detail::unpaired_core(fn, y, treatment, detail::encode_groups(groups), options);
}

LATENTAUDIT_INLINE heterogeneity_result subgroup_effects(std::span<const double> y,
                                                         std::span<const double> treatment,
                                                         std::span<const int> groups,
                                                         const heterogeneity_options& options) {
  const std::vector<std::int64_t> g(groups.begin(), groups.end());
  return subgroup_effects(y, treatment, std::span<const std::int64_t>(g), options);
}

LATENTAUDIT_INLINE heterogeneity_result subgroup_effects_binned(std::span<const double> y,
                                                                std::span<const double> treatment,
                                                                std::span<const double> moderator,
                                                                std::size_t bins,
                                                                const heterogeneity_options& options) {
  constexpr std::string_view fn = "subgroup_effects_binned";
  detail::check_unpaired(fn, y, treatment, moderator.size(), "moderator", options);
  std::vector<double> edges;
  const auto gc = detail::bin_codes(fn, moderator, bins, edges);
  auto r = detail::unpaired_core(fn, y, treatment, gc, options);
  for (std::size_t j = 0; j < r.groups.size(); ++j) {
    r.groups[j].lower_edge = edges[j];
    r.groups[j].upper_edge = edges[j + 1];
  }
  r.bin_edges = std::move(edges);
  return r;
}

LATENTAUDIT_INLINE heterogeneity_result paired_subgroup_effects(std::span<const double> treated,
                                                                std::span<const double> control,
                                                                std::span<const std::string> groups,
                                                                const heterogeneity_options& options) {
  constexpr std::string_view fn = "paired_subgroup_effects";
  detail::check_paired(fn, treated, control, groups.size(), "groups", options);
  return detail::paired_core(fn, treated, control, detail::encode_groups(groups), options);
}

LATENTAUDIT_INLINE heterogeneity_result paired_subgroup_effects(std::span<const double> treated,
                                                                std::span<const double> control,
                                                                std::span<const std::int64_t> groups,
                                                                const heterogeneity_options& options) {
  constexpr std::string_view fn = "paired_subgroup_effects";
  detail::check_paired(fn, treated, control, groups.size(), "groups", options);
  return detail::paired_core(fn, treated, control, detail::encode_groups(groups), options);
}

LATENTAUDIT_INLINE heterogeneity_result paired_subgroup_effects(std::span<const double> treated,
                                                                std::span<const double> control,
                                                                std::span<const int> groups,
                                                                const heterogeneity_options& options) {
  const std::vector<std::int64_t> g(groups.begin(), groups.end());
  return paired_subgroup_effects(treated, control, std::span<const std::int64_t>(g), options);
}

LATENTAUDIT_INLINE heterogeneity_result paired_subgroup_effects_binned(std::span<const double> treated,
                                                                       std::span<const double> control,
                                                                       std::span<const double> moderator,
                                                                       std::size_t bins,
                                                                       const heterogeneity_options& options) {
  constexpr std::string_view fn = "paired_subgroup_effects_binned";
  detail::check_paired(fn, treated, control, moderator.size(), "moderator", options);
  std::vector<double> edges;
  const auto gc = detail::bin_codes(fn, moderator, bins, edges);
  auto r = detail::paired_core(fn, treated, control, gc, options);
  for (std::size_t j = 0; j < r.groups.size(); ++j) {
    r.groups[j].lower_edge = edges[j];
    r.groups[j].upper_edge = edges[j + 1];
  }
  r.bin_edges = std::move(edges);
  return r;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_HETEROGENEITY_INL_HPP
