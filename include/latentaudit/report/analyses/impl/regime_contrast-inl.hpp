// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/regime_contrast.hpp (header-only mode includes this
// file; compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_REGIME_CONTRAST_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_REGIME_CONTRAST_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../regime_contrast.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "../../../estimators/betting.hpp"
#include "../../../estimators/multiplicity.hpp"

namespace latentaudit::detail {

LATENTAUDIT_INLINE void fill_regime_contrast(regime_contrast& c, std::span<const double> item_diffs,
                                             double alpha, std::size_t horizon) {
  const auto v = bounded_mean_interval(item_diffs, -1.0, 1.0,
                                       {.alpha_lower = alpha, .alpha_upper = alpha, .horizon = horizon});
  const auto w = bounded_mean_interval(
      item_diffs, -1.0, 1.0, {.alpha_lower = alpha / 2.0, .alpha_upper = alpha / 2.0, .horizon = horizon});
  c.n_items = item_diffs.size();
  c.horizon = horizon;
  c.estimate = v.estimate;
  c.verdict_low = v.low;
  c.verdict_high = v.high;
  c.ci_low = w.low;
  c.ci_high = w.high;
  c.p_value = bounded_mean_p_value(item_diffs, -1.0, 1.0, 0.0, alpha, 0.9, horizon);
  c.items.assign(item_diffs.begin(), item_diffs.end());
  c.method = fmt::format(
      "mean over {} items of the item mean difference; {}% verdict interval and {}% interval: betting over "
      "items (Waudby-Smith & Ramdas 2024); p: betting over items of mean = 0",
      item_diffs.size(), fmt::format("{:g}", 100.0 * (1.0 - 2.0 * alpha)),
      fmt::format("{:g}", 100.0 * (1.0 - alpha)));
}

LATENTAUDIT_INLINE regime_contrast regime_contrast_of(const audit_data& d, std::size_t treated,
                                                      std::size_t control, audit_regime g,
                                                      std::string_view treated_role,
                                                      std::string_view control_role, double alpha) {
  regime_contrast c;
  c.treated = treated == audit_data::npos ? std::string(treated_role) : d.arm_label[treated];
  c.control = control == audit_data::npos ? std::string(control_role) : d.arm_label[control];
  c.regime = g == audit_regime::stale      ? "stale"
             : g == audit_regime::conflict ? "conflict"
             : g == audit_regime::need     ? "need"
             : g == audit_regime::no_need  ? "no_need"
                                           : "unknown";
  c.id = c.regime + ":" + c.treated + "-" + c.control;
  if (treated == audit_data::npos || control == audit_data::npos) {
    c.method = "not estimable: an arm is absent";
    return c;
  }
  const std::size_t t[] = {treated};
  const auto p = collect_pairs(d, t, control, [&d, g](std::size_t u) { return d.unit_regime[u] == g; });
  c.n_pairs = p.pairs();
  if (c.n_pairs == 0) {
    c.method = "not estimable: no unit of the regime holds both arms";
    return c;
  }
  fill_regime_contrast(c, item_differences(p), alpha, d.horizon_of(g));
  c.missing = missing_outcome_bounds(
      d, t, control, [&d, g](std::size_t u) { return d.unit_regime[u] == g; }, alpha, d.horizon_of(g));
  if (c.missing.any()) {
    c.verdict_low = std::min(c.verdict_low, c.missing.low.verdict_low);
    c.verdict_high = std::max(c.verdict_high, c.missing.high.verdict_high);
    c.p_value = std::max({c.p_value, c.missing.low.p_value, c.missing.high.p_value});
    c.method += fmt::format(
        "; {} unit(s) lack one of the arms: verdict interval and p over the worst-case bounds (missing {} "
        "wrong and {} right: {:+.1f} points; the reverse: {:+.1f} points)",
        c.missing.units, c.treated, c.control, 100.0 * c.missing.low.estimate,
        100.0 * c.missing.high.estimate);
  }
  return c;
}

LATENTAUDIT_INLINE bool sign_shown(const regime_contrast& c, bool negative) noexcept {
  auto ok = [negative](double x) { return negative ? x < 0.0 : x > 0.0; };
  if (!ok(c.estimate)) return false;
  return !c.missing.any() || (ok(c.missing.low.estimate) && ok(c.missing.high.estimate));
}

LATENTAUDIT_INLINE verdict worse_verdict(const regime_contrast& c, double alpha, double margin) noexcept {
  if (!c.estimable()) return verdict::inconclusive;
  if (c.p_holm < alpha && sign_shown(c, true)) return verdict::yes;
  if (c.verdict_low > -margin) return verdict::no;
  return verdict::inconclusive;
}

LATENTAUDIT_INLINE verdict beats_verdict(const regime_contrast& c, double alpha, double margin) noexcept {
  if (!c.estimable()) return verdict::inconclusive;
  if (c.p_holm < alpha && sign_shown(c, false)) return verdict::yes;
  if (c.verdict_high < margin) return verdict::no;
  return verdict::inconclusive;
}

LATENTAUDIT_INLINE json_value contrast_json(const regime_contrast& c) {
  json_value j;
  j.set("id", c.id);
  j.set("treated", c.treated);
  j.set("control", c.control);
  j.set("regime", c.regime);
  j.set("n_pairs", static_cast<double>(c.n_pairs));
  j.set("n_items", static_cast<double>(c.n_items));
  j.set("estimate", number_or_null(c.estimate));
  j.set("ci_low", number_or_null(c.ci_low));
  j.set("ci_high", number_or_null(c.ci_high));
  j.set("verdict_low", number_or_null(c.verdict_low));
  j.set("verdict_high", number_or_null(c.verdict_high));
  j.set("p_value", number_or_null(c.p_value));
  j.set("p_holm", number_or_null(c.p_holm));
  j.set("missing", missing_bounds_json(c.missing));
  j.set("method", c.method);
  return j;
}

LATENTAUDIT_INLINE json_value missing_bounds_json(const missing_bounds& b) {
  if (!b.any()) return json_value(nullptr);
  auto view = [](const contrast_view& v) {
    json_value o;
    o.set("estimate", number_or_null(v.estimate));
    o.set("verdict_low", number_or_null(v.verdict_low));
    o.set("verdict_high", number_or_null(v.verdict_high));
    o.set("p_value", number_or_null(v.p_value));
    return o;
  };
  json_value j;
  j.set("units", static_cast<double>(b.units));
  j.set("items", static_cast<double>(b.items));
  j.set("low", view(b.low));
  j.set("high", view(b.high));
  return j;
}

LATENTAUDIT_INLINE std::string contrast_points(double estimate, double low, double high) {
  if (!std::isfinite(estimate)) return "not estimable";
  return fmt::format("{:+.1f} points [{:+.1f}, {:+.1f}]", 100.0 * estimate, 100.0 * low, 100.0 * high);
}

LATENTAUDIT_INLINE void holm_over(std::span<regime_contrast* const> family) {
  std::vector<double> p;
  std::vector<regime_contrast*> in;
  for (auto* c : family) {
    c->p_holm = std::numeric_limits<double>::quiet_NaN();
    if (c->estimable() && std::isfinite(c->p_value)) {
      p.push_back(c->p_value);
      in.push_back(c);
    }
  }
  const auto adj = p_adjust(p, p_adjust_method::holm);
  for (std::size_t i = 0; i < adj.size(); ++i) in[i]->p_holm = adj[i];
}

/// @brief The inconclusive finding of an analysis that could not run.
LATENTAUDIT_INLINE finding not_estimable_finding(finding_key key, std::string why,
                                                 std::vector<arm_cell> reads) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {.id = key.id(),
          .answer = verdict::inconclusive,
          .estimate = nan,
          .ci_low = nan,
          .ci_high = nan,
          .method = "not estimable",
          .n = 0,
          .detail = std::move(why),
          .reads = std::move(reads),
          .key = std::move(key)};
}

LATENTAUDIT_INLINE std::vector<arm_cell> contrast_reads(const regime_contrast& c) {
  return {{c.regime, c.treated}, {c.regime, c.control}};
}

LATENTAUDIT_INLINE finding risk_finding(finding_key key, verdict v, const regime_contrast& c,
                                        std::string_view regime, std::string why, double margin,
                                        double alpha) {
  finding f{.id = key.id(),
            .answer = v,
            .estimate = c.estimate,
            .ci_low = c.verdict_low,
            .ci_high = c.verdict_high,
            .method = std::string(regime) + " regime, " + c.id + ": " + c.method +
                      "; Holm over the relay-failure family",
            .n = c.n_pairs,
            .detail = std::move(why),
            .noninferiority_p = noninferiority_p(c.items, c.missing, margin, alpha, c.horizon),
            .reads = contrast_reads(c),
            .key = std::move(key)};
  set_minimum_detectable(f, c.items);
  return f;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_REGIME_CONTRAST_INL_HPP
