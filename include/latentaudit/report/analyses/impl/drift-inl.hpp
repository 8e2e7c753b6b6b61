// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/drift.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_DRIFT_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_DRIFT_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../drift.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "../../../core/detail/check.hpp"
#include "../../../core/error.hpp"

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE bool is_drift_arm(const audit_data& d, std::size_t a) noexcept {
  return d.is(a, arm_kind::drifted);
}

LATENTAUDIT_INLINE std::optional<double> drift_arm_steps(const audit_data& d,
                                                         std::span<const trial_record> records, std::size_t a,
                                                         std::vector<std::string>& warnings) {
  std::optional<double> s;
  bool mixed = false;
  for (std::size_t u = 0; u < d.units(); ++u) {
    const std::size_t i = d.record(u, a);
    if (i == audit_data::npos || !records[i].drift_steps) continue;
    const double v = static_cast<double>(*records[i].drift_steps);
    if (!(v >= 0.0) || !std::isfinite(v))
      LATENTAUDIT_THROW(invalid_argument(
          fmt::format("analyse_records: arm '{}', field drift_steps: drift steps must be non-negative and "
                      "finite, got {} (record {})",
                      d.arm_label[a], number_text(v), i)));
    if (!s)
      s = v;
    else if (*s != v)
      mixed = true;
  }
  if (mixed)
    warnings.push_back(fmt::format("arm '{}' records more than one drift_steps; the first ({}) is used",
                                   d.arm_label[a], number_text(*s)));
  if (s) return s;
  if (const auto& la = d.label_arms[a]; la && la->drift_steps)  // the steps its label names
    return static_cast<double>(*la->drift_steps);
  return std::nullopt;
}

LATENTAUDIT_INLINE drift_analysis audit_drift(const audit_data& d, std::span<const trial_record> records,
                                              std::size_t kv_full, std::size_t no_comm, std::size_t text_full,
                                              const noise_options& o, std::vector<std::string>& warnings) {
  drift_analysis out;
  out.tolerance.method = "not estimable: no drift arm, or no need-regime unit with kv_full";
  std::vector<dose_arm> arms;
  for (std::size_t a = 0; a < d.arms(); ++a) {
    if (a == kv_full || !is_drift_arm(d, a)) continue;
    const auto k = drift_arm_steps(d, records, a, warnings);
    if (!k) {
      warnings.push_back(fmt::format(
          "drift arm '{}' has no readable drift_steps; left out of the dose-response", d.arm_label[a]));
      continue;
    }
    arms.push_back({a, *k});
    for (std::size_t u = 0; u < d.units(); ++u) {
      const std::size_t i = d.record(u, a);
      if (i == audit_data::npos) continue;
      const auto& r = records[i];
      if (!r.sender_fingerprint.empty() && r.sender_fingerprint != r.receiver_fingerprint) {
        out.mismatched_fingerprints.push_back(d.arm_label[a]);
        break;
      }
    }
  }
  std::stable_sort(arms.begin(), arms.end(),
                   [](const dose_arm& x, const dose_arm& y) { return x.dose < y.dose; });
  const auto need = audit_regime::need;
  out.text_benefit = regime_contrast_of(d, text_full, no_comm, need, "text_full", "no_comm", o.alpha);
  if (arms.empty()) return out;  // not tested: the finding says so (no warning: optional arms)
  if (kv_full == audit_data::npos) {
    warnings.push_back("drift analysis skipped: kv_full (the same-model reference) is absent");
    return out;
  }
  out.benefit.push_back({d.arm_label[kv_full], 0.0,
                         regime_contrast_of(d, kv_full, no_comm, need, "kv_full", "no_comm", o.alpha)});
  for (const auto& l : arms)
    out.benefit.push_back(
        {d.arm_label[l.arm], l.dose, regime_contrast_of(d, l.arm, no_comm, need, "", "no_comm", o.alpha)});
  // the noise analysis's dose-response, with drift steps for σ (report/analyses/noise.hpp)
  const std::vector<noise_level_pairs> levels = dose_level_pairs(d, arms, kv_full, "drift", warnings);
  const noise_reference ref = dose_reference(d, kv_full);
  if (levels.empty() || ref.n == 0) {
    warnings.push_back("drift analysis skipped: no need-regime unit pairs a drift arm with kv_full");
    return out;
  }
  out.tolerance = estimate_noise_tolerance(levels, ref, o);
  return out;
}

}  // namespace detail

LATENTAUDIT_INLINE finding drift_tolerance_finding(const drift_analysis& a, const noise_options& o) {
  auto f = detail::tolerance_finding(
      a.tolerance, o, {finding_kind::drift_tolerance_steps},
      "no drift arm (arm_kind 'drifted', or a label kv_drift_<k>) paired with kv_full in the need regime");
  // "no" (absence shown within the tested range): not located, and fixed-sequence testing shows
  // every tested drift step non-inferior to same-model relay (noise_tolerance::sigma_noninferior is
  // the largest step tested).
  const auto& nt = a.tolerance;
  if (f.n > 0 && f.answer == verdict::inconclusive && !nt.tolerance_sigma && nt.sigma_noninferior &&
      nt.curve.size() >= 2 && *nt.sigma_noninferior == nt.curve.back().sigma) {
    f.answer = verdict::no;
    f.detail = fmt::format(
        "absence shown within the tested range: relay from every tested drifted sender (up to {:g} steps) is "
        "shown non-inferior to same-model relay by fixed-sequence testing (one-sided {:g} each); {}",
        nt.curve.back().sigma, o.alpha, f.detail);
  }
  if (f.n > 0 && !a.benefit.empty()) {
    std::string curve;
    for (const auto& b : a.benefit)
      curve += fmt::format(
          "{}{:g}: {}", curve.empty() ? "" : "; ", b.steps,
          detail::contrast_points(b.benefit.estimate, b.benefit.verdict_low, b.benefit.verdict_high));
    f.detail += "; relay benefit over no_comm by drift steps: " + curve;
  }
  return f;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_DRIFT_INL_HPP
