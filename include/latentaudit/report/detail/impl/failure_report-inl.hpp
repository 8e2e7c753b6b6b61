// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/detail/failure_report.hpp (header-only mode includes this
// file; compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_DETAIL_IMPL_FAILURE_REPORT_INL_HPP
#define LATENTAUDIT_REPORT_DETAIL_IMPL_FAILURE_REPORT_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../failure_report.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "../../finding.hpp"

namespace latentaudit::detail {

LATENTAUDIT_INLINE json_value answers_json(const stale_answer_counts& a) {
  json_value j;
  j.set("arm", a.arm);
  j.set("classified", static_cast<double>(a.classified));
  j.set("unclassified", static_cast<double>(a.unclassified));
  j.set("correct", static_cast<double>(a.correct));
  j.set("stale", static_cast<double>(a.stale));
  j.set("other_wrong", static_cast<double>(a.other_wrong));
  return j;
}

LATENTAUDIT_INLINE json_value relay_failures_json(const audit_core& c) {
  json_value j;
  json_value st;
  st.set("units", static_cast<double>(c.stale.units));
  st.set("kv_vs_text", contrast_json(c.stale.kv_vs_text));
  st.set("kv_vs_no_comm", contrast_json(c.stale.kv_vs_no_comm));
  st.set("text_vs_no_comm", contrast_json(c.stale.text_vs_no_comm));
  st.set("stale_excess", contrast_json(c.stale.stale_excess));
  st.set("kv_answers", answers_json(c.stale.kv_answers));
  st.set("text_answers", answers_json(c.stale.text_answers));
  j.set("stale", std::move(st));
  json_value co;
  co.set("units", static_cast<double>(c.conflict.units));
  co.set("kv_vs_no_comm", contrast_json(c.conflict.kv_vs_no_comm));
  co.set("text_vs_no_comm", contrast_json(c.conflict.text_vs_no_comm));
  co.set("kv_vs_text", contrast_json(c.conflict.kv_vs_text));
  const auto& a = c.conflict.attention;
  json_value at;
  at.set("available", a.available);
  at.set("note", a.note);
  at.set("conflict_items", static_cast<double>(a.conflict_items));
  at.set("need_items", static_cast<double>(a.need_items));
  at.set("conflict_mean", number_or_null(a.conflict_mean));
  at.set("conflict_low", number_or_null(a.conflict_low));
  at.set("conflict_high", number_or_null(a.conflict_high));
  at.set("need_mean", number_or_null(a.need_mean));
  at.set("need_low", number_or_null(a.need_low));
  at.set("need_high", number_or_null(a.need_high));
  at.set("difference", number_or_null(a.difference));
  at.set("difference_low", number_or_null(a.difference_low));
  at.set("difference_high", number_or_null(a.difference_high));
  co.set("attention", std::move(at));
  j.set("conflict", std::move(co));
  json_value dr;
  const auto& t = c.drift.tolerance;
  auto opt = [](const std::optional<double>& x) { return x ? json_value(*x) : json_value(nullptr); };
  dr.set("curve", dose_curve_json(t.curve, "steps"));
  dr.set("tolerance_steps", opt(t.tolerance_sigma));
  dr.set("ci_low", opt(t.ci_low));
  dr.set("ci_high", opt(t.ci_high));
  dr.set("unbounded_fraction", number_or_null(t.unbounded_fraction));
  dr.set("steps_noninferior", opt(t.sigma_noninferior));
  dr.set("method", t.method);
  json_value ben = json_value::array_type{};
  for (const auto& b : c.drift.benefit) {
    json_value o = contrast_json(b.benefit);
    o.set("steps", b.steps);
    ben.push_back(std::move(o));
  }
  dr.set("benefit_vs_no_comm", std::move(ben));
  dr.set("text_benefit", contrast_json(c.drift.text_benefit));
  j.set("drift", std::move(dr));
  return j;
}

LATENTAUDIT_INLINE json_value relay_switch_json(const switch_replay& s) {
  json_value j;
  j.set("available", s.available);
  j.set("note", s.note);
  j.set("relay", s.relay);
  j.set("text", s.text);
  j.set("no_comm", s.no_comm);
  j.set("items", static_cast<double>(s.items));
  j.set("change_point", static_cast<double>(s.change_point));
  j.set("stale_items", static_cast<double>(s.stale_items));
  j.set("conflict_items", static_cast<double>(s.conflict_items));
  j.set("off_at", s.off_at ? json_value(static_cast<double>(*s.off_at)) : json_value(nullptr));
  j.set("off_reason", s.off_reason);
  j.set("log_threshold", number_or_null(s.threshold));
  json_value lt = json_value::array_type{}, ln = json_value::array_type{};
  for (double v : s.log_capital_text) lt.push_back(number_or_null(v));
  for (double v : s.log_capital_none) ln.push_back(number_or_null(v));
  j.set("log_capital_vs_text", std::move(lt));
  j.set("log_capital_vs_no_comm", std::move(ln));
  j.set("guarantee", s.guarantee);
  return j;
}

LATENTAUDIT_INLINE json_value dose_curve_json(std::span<const dose_point> curve, std::string_view x_key) {
  json_value a = json_value::array_type{};
  for (const auto& p : curve) {
    json_value o;
    o.set("arm", p.arm);
    o.set(x_key, p.sigma);
    o.set("n", static_cast<double>(p.n));
    o.set("items", static_cast<double>(p.items));
    o.set("accuracy", number_or_null(p.accuracy));
    o.set("ci_low", number_or_null(p.ci_low));
    o.set("ci_high", number_or_null(p.ci_high));
    o.set("diff_vs_kv_full", number_or_null(p.diff_vs_kv_full));
    o.set("diff_ci_low", number_or_null(p.diff_ci_low));
    o.set("diff_ci_high", number_or_null(p.diff_ci_high));
    o.set("fitted_diff", number_or_null(p.fitted_diff));
    o.set("noninferior", p.noninferior);
    a.push_back(std::move(o));
  }
  return a;
}

LATENTAUDIT_INLINE void relay_failure_forest_rows(const audit_core& c, std::vector<forest_row>& rows) {
  for (const auto* k : {&c.stale.kv_vs_text, &c.stale.kv_vs_no_comm, &c.stale.text_vs_no_comm,
                        &c.conflict.kv_vs_no_comm, &c.conflict.text_vs_no_comm, &c.conflict.kv_vs_text})
    if (k->estimable() && std::isfinite(k->ci_low) && std::isfinite(k->ci_high))
      rows.push_back({k->regime + ": " + k->treated + " − " + k->control, k->estimate, k->ci_low, k->ci_high,
                      k->regime});
  for (const auto& b : c.drift.benefit)
    if (b.steps > 0 && b.benefit.estimable())
      rows.push_back({fmt::format("drift {:g} steps: {} − {}", b.steps, b.benefit.treated, b.benefit.control),
                      b.benefit.estimate, b.benefit.ci_low, b.benefit.ci_high, "drift"});
}

LATENTAUDIT_INLINE std::optional<double> text_relay_accuracy(const audit_core& c) {
  const std::string& text = c.roles.of(arm_kind::text_full);
  std::optional<double> acc;
  if (text.empty()) return acc;
  for (const auto& a : c.arms)
    if (a.arm == text && a.regime == "need" && std::isfinite(a.accuracy)) acc = a.accuracy;
  return acc;
}

LATENTAUDIT_INLINE std::optional<band_figure> drift_response_figure(const audit_core& c) {
  const auto& t = c.drift.tolerance;
  if (t.curve.size() < 2) return std::nullopt;
  // Drift levels usually span decades (a few steps to "fully drifted"): then a log axis of
  // steps + 1, so that kv_full (0 steps) stays on it.
  double lo_pos = 0.0, hi = 0.0;
  for (const auto& p : t.curve) {
    if (p.sigma > 0.0 && (lo_pos == 0.0 || p.sigma < lo_pos)) lo_pos = p.sigma;
    hi = std::max(hi, p.sigma);
  }
  const bool log_x = lo_pos > 0.0 && hi / lo_pos >= 20.0;
  const double shift = log_x ? 1.0 : 0.0;
  band_series s{"accuracy (item-clustered CI)", {}};
  for (const auto& p : t.curve)
    if (std::isfinite(p.accuracy) && std::isfinite(p.ci_low) && std::isfinite(p.ci_high))
      s.points.push_back({p.sigma + shift, p.accuracy, p.ci_low, p.ci_high});
  band_figure f{
      .series = {std::move(s)},
      .options = {.title = "Accuracy vs sender drift (need regime); dashed: text relay; marker: tolerance",
                  .x_label = log_x ? "fine-tuning steps of the sender + 1 (log scale)"
                                   : "fine-tuning steps of the sender",
                  .y_label = "accuracy",
                  .log_x = log_x},
      .hline = text_relay_accuracy(c),
      .vline = std::nullopt,
      .vband = std::nullopt};
  if (t.tolerance_sigma && t.ci_low && t.ci_high) f.vband = std::pair{*t.ci_low + shift, *t.ci_high + shift};
  if (t.tolerance_sigma) f.vline = *t.tolerance_sigma + shift;
  return f;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_IMPL_FAILURE_REPORT_INL_HPP
