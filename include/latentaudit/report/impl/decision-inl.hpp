// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/decision.hpp (header-only mode includes this file; compiled mode compiles it once in src/)
#ifndef LATENTAUDIT_REPORT_IMPL_DECISION_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_DECISION_INL_HPP

#include "../decision.hpp"

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE const finding* find_finding(std::span<const finding> fs, std::string_view id) {
  for (const auto& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

LATENTAUDIT_INLINE std::string finding_text(const finding* f) {
  if (f == nullptr) return "not computed";
  if (!std::isfinite(f->estimate)) return fmt::format("{} (n = {})", verdict_name(f->answer), f->n);
  return fmt::format("{}: {:.3g} [{:.3g}, {:.3g}], n = {}", verdict_name(f->answer), f->estimate, f->ci_low,
                     f->ci_high, f->n);
}

LATENTAUDIT_INLINE std::vector<double> unit_differences(std::span<const trial_record> rs,
                                                        std::string_view treated, std::string_view control) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<std::optional<double>, std::optional<double>>>
      units;
  for (const auto& r : rs) {
    if (r.regime != "need") continue;
    if (r.arm == treated) units[{r.item, r.seed}].first = r.correct ? 1.0 : 0.0;
    if (r.arm == control) units[{r.item, r.seed}].second = r.correct ? 1.0 : 0.0;
  }
  std::vector<double> d;
  for (const auto& [k, v] : units)
    if (v.first && v.second) d.push_back(*v.first - *v.second);
  return d;
}

}  // namespace detail

[[nodiscard]] LATENTAUDIT_INLINE audit_decision decide(std::span<const finding> findings,
                                                       std::span<const trial_record> records,
                                                       const decision_options& o) {
  audit_decision d;
  d.link = o.link;
  if (d.link.empty()) {
    for (const auto& r : records)
      if (!r.link.empty()) {
        d.link = r.link;
        break;
      }
    if (d.link.empty() || d.link.rfind("custom:", 0) == 0) d.link = "pcie4";
  }
  const auto* dep = detail::find_finding(findings, "need.kv_beats_no_comm");
  const auto* cross = detail::find_finding(findings, "need.cross_model_beats_no_comm");
  const auto* value = detail::find_finding(findings, "need.kv_equivalent_to_text");
  const auto* cost = detail::find_finding(findings, "cost.relay_pays_on_" + d.link);
  auto v_of = [](const finding* f) { return f == nullptr ? verdict::inconclusive : f->answer; };

  d.checklist.push_back(
      {"dependency", v_of(dep),
       "B needs A's information (need regime, kv_full vs no_comm): " + detail::finding_text(dep)});
  std::set<std::string> mismatched;
  std::size_t kv_records = 0;
  for (const auto& r : records) {
    if (r.arm_kind == "cross_model" || r.sender_fingerprint.empty() || r.receiver_fingerprint.empty())
      continue;
    ++kv_records;
    if (r.sender_fingerprint != r.receiver_fingerprint) mismatched.insert(r.arm);
  }
  checklist_item homo{"homogeneity", verdict::yes, ""};
  if (!mismatched.empty()) {
    homo.passed = verdict::no;
    homo.reason =
        fmt::format("{} arm(s) relayed caches between different model fingerprints", mismatched.size());
  } else if (kv_records == 0) {
    homo.passed = verdict::inconclusive;
    homo.reason = "no record carries sender and receiver fingerprints";
  } else {
    homo.reason = fmt::format("all {} same-model relays carry matching fingerprints", kv_records);
  }
  if (cross != nullptr && cross->answer == verdict::no)
    homo.reason += "; a foreign model's cache does not help (need.cross_model_beats_no_comm: " +
                   detail::finding_text(cross) + "), so relay only between identical models";
  else if (cross != nullptr && cross->answer == verdict::yes)
    homo.reason += "; note: a foreign model's cache helped (need.cross_model_beats_no_comm: " +
                   detail::finding_text(cross) + ")";
  d.checklist.push_back(homo);
  d.checklist.push_back(
      {"value", v_of(value),
       "relay is as accurate as text within the margin (TOST): " + detail::finding_text(value)});
  d.checklist.push_back(
      {"cost", v_of(cost), "relay saves receiver latency on " + d.link + ": " + detail::finding_text(cost)});

  for (const auto& [t, c] :
       {std::pair<const char*, const char*>{"kv_full", "no_comm"}, {"kv_full", "text_full"}}) {
    const auto diffs = detail::unit_differences(records, t, c);
    if (diffs.empty()) continue;
    monitor_replay m;
    m.contrast = std::string(t) + " - " + c;
    m.result = run_sequential(diffs, o.monitor);
    m.stop_at = m.result.first_rejection;
    d.monitors.push_back(m);
  }
  checklist_item mon{"monitor", verdict::inconclusive,
                     "no need-regime units with kv_full and no_comm to replay"};
  if (!d.monitors.empty()) {
    const auto& m = d.monitors.front();
    if (m.stop_at) {
      mon.passed = verdict::yes;
      mon.reason = fmt::format(
          "an online mSPRT (alpha {}, tau {}) on {} would have switched relay on after {} of {} need-regime "
          "requests",
          o.monitor.alpha, o.monitor.tau, m.contrast, *m.stop_at, m.result.n);
    } else {
      mon.passed = verdict::no;
      mon.reason = fmt::format("an online mSPRT on {} did not reject theta = 0 within {} requests",
                               m.contrast, m.result.n);
    }
  }
  d.checklist.push_back(mon);

  const verdict vd = v_of(dep), vh = homo.passed, vv = v_of(value), vc = v_of(cost);
  if (vd == verdict::no) {
    d.verdict = "no communication needed";
    d.summary = "B answers as well without A's information, so neither relay nor text pays.";
  } else if (vd == verdict::yes && vh == verdict::yes && vv == verdict::yes && vc == verdict::yes) {
    d.verdict = "relay";
    d.summary =
        "Relay carries A's information (dependency), between identical models (homogeneity), as accurately "
        "as text (value), "
        "and saves receiver latency on " +
        d.link + " (cost).";
  } else if (vd == verdict::yes && (vv == verdict::no || vc == verdict::no)) {
    d.verdict = "send text";
    d.summary = vv == verdict::no ? "Relay is less accurate than text beyond the margin."
                                  : "Relay is as accurate as text but does not pay on " + d.link + ".";
  } else {
    d.verdict = "inconclusive";
    d.summary =
        "At least one check is inconclusive: collect more items or seeds (see the power of each finding).";
  }
  return d;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_DECISION_INL_HPP
