// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/decision.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_IMPL_DECISION_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_DECISION_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../decision.hpp"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "../../estimators/betting.hpp"
#include "../../estimators/multiplicity.hpp"
#include "../analyses/answer_probability.hpp"
#include "../detail/arm_roles.hpp"
#include "../detail/audit_data.hpp"
#include "../detail/record_units.hpp"

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE const finding* find_finding(std::span<const finding> fs, std::string_view id) {
  for (const auto& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

LATENTAUDIT_INLINE const finding* find_finding(std::span<const finding> fs, finding_kind k,
                                               const finding_params& p) {
  return find_finding(fs, finding_id(k, p));
}

LATENTAUDIT_INLINE std::string finding_text(const finding* f) {
  if (f == nullptr) return "not computed";
  if (!std::isfinite(f->estimate)) return fmt::format("{} (n = {})", verdict_name(f->answer), f->n);
  if (!std::isfinite(f->ci_low) || !std::isfinite(f->ci_high))
    return fmt::format("{}: {:.3g} (no interval), n = {}", verdict_name(f->answer), f->estimate, f->n);
  return fmt::format("{}: {:.3g} [{:.3g}, {:.3g}], n = {}", verdict_name(f->answer), f->estimate, f->ci_low,
                     f->ci_high, f->n);
}

LATENTAUDIT_INLINE std::string finding_ms_text(const finding* f) {
  if (f == nullptr || !std::isfinite(f->estimate) || !std::isfinite(f->ci_low) || !std::isfinite(f->ci_high))
    return finding_text(f);
  return fmt::format("{}: {:.3g} ms [{:.3g}, {:.3g}] saved a request, n = {}", verdict_name(f->answer),
                     1e3 * f->estimate, 1e3 * f->ci_low, 1e3 * f->ci_high, f->n);
}

LATENTAUDIT_INLINE need_item_diffs need_item_differences(std::span<const trial_record> rs,
                                                         std::string_view treated, std::string_view control,
                                                         const unit_records* units) {
  const std::string arms[] = {std::string(treated), std::string(control)};
  const auto t = units_of(units, "decide", rs, arms, duplicate_error::invalid_argument);
  // units are ordered by (item, seed): consecutive runs of one item form its cluster
  need_item_diffs out;
  std::optional<std::uint64_t> item;
  double sum = 0.0;
  std::size_t count = 0;
  for (std::size_t u = 0; u < t.units(); ++u) {
    const std::size_t a = t.record(u, 0), c = t.record(u, 1);
    if (a == unit_records::npos || c == unit_records::npos) continue;
    if (rs[a].regime != "need" || rs[c].regime != "need") continue;
    if (item && *item != t.unit_item[u]) {
      out.d.push_back(sum / static_cast<double>(count));
      sum = 0.0;
      count = 0;
    }
    item = t.unit_item[u];
    sum += (rs[a].correct ? 1.0 : 0.0) - (rs[c].correct ? 1.0 : 0.0);
    ++count;
    ++out.pairs;
  }
  if (count > 0) out.d.push_back(sum / static_cast<double>(count));
  return out;
}

}  // namespace detail

namespace detail {

// The decision's homogeneity check: every same-model relay's record carries equal sender and
// receiver fingerprints (drift arms are left to the drift check, the partner's cache is foreign on
// purpose).
LATENTAUDIT_INLINE checklist_item homogeneity_check(std::span<const trial_record> records) {
  std::set<std::string> mismatched, drifted;
  std::size_t kv_records = 0;
  std::map<std::pair<std::string_view, std::string_view>, std::optional<arm_kind>> kinds;  // per arm
  for (const auto& r : records) {
    auto [at, fresh] = kinds.try_emplace({r.arm, r.arm_kind});
    if (fresh) at->second = record_arm_kind(r.arm_kind, r.arm);
    const std::optional<arm_kind> kind = at->second;
    if (kind == arm_kind::drifted) {
      drifted.insert(r.arm);  // planted drift: judged by the drift check
      continue;
    }
    // the partner's cache is foreign on purpose (a placebo); a mapped cache is a foreign sender's,
    // judged by the map path (mapped.*.noninferior_to_same_model)
    if (kind == arm_kind::cross_model || kind == arm_kind::kv_mapped || r.sender_fingerprint.empty() ||
        r.receiver_fingerprint.empty())
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
  if (!drifted.empty())
    homo.reason += fmt::format(" ({} drift arm(s) left to the drift check)", drifted.size());
  return homo;
}

// The betting lower limit (level 1 - alpha/2 on each side) of `base`'s item-clustered accuracy on
// need-regime records: whether B answers on its own ("no communication" needs it above one half).
LATENTAUDIT_INLINE std::optional<double> alone_accuracy_low(std::span<const trial_record> records,
                                                            const std::string& base, double alpha,
                                                            std::size_t horizon, const unit_records* units) {
  const std::string arms[] = {base};
  const auto t = detail::units_of(units, "decide", records, arms, detail::duplicate_error::invalid_argument);
  std::vector<double> item_acc;
  std::optional<std::uint64_t> item;
  double sum = 0.0, count = 0.0;
  for (std::size_t u = 0; u < t.units(); ++u) {
    const std::size_t i = t.record(u, 0);
    if (i == detail::unit_records::npos || records[i].regime != "need") continue;
    if (item && *item != t.unit_item[u]) {
      item_acc.push_back(sum / count);
      sum = count = 0.0;
    }
    item = t.unit_item[u];
    sum += records[i].correct ? 1.0 : 0.0;
    count += 1.0;
  }
  if (count > 0.0) item_acc.push_back(sum / count);
  if (!item_acc.empty()) {
    const double a = alpha / 2.0;
    return bounded_mean_interval(item_acc, 0.0, 1.0, {.alpha_lower = a, .alpha_upper = a, .horizon = horizon})
        .low;
  }
  return std::nullopt;
}

// The homogeneity check with the cross_model placebo's answer (decide).
LATENTAUDIT_INLINE checklist_item homogeneity_with_placebo(std::span<const trial_record> records,
                                                           const finding* cross) {
  checklist_item homo = homogeneity_check(records);
  // The check requires need.cross_model_beats_no_comm not "yes", as the header says (the code used
  // to only note it): cross_model is one of the placebos. The relay is justified as "B reads the
  // cache of its own model"; if a foreign model's cache helps as well, either the cross_model arm is
  // not really foreign (mislabelled fingerprints) or B profits from something other than reading
  // a same-model cache, and matching fingerprints no longer establish what the relay relies on.
  if (cross != nullptr && cross->answer == verdict::yes) {
    homo.passed = verdict::no;
    homo.reason +=
        "; but a foreign model's cache helps (need.cross_model_beats_no_comm: " + finding_text(cross) +
        "): the placebo is not inert, so the benefit is not shown to need identical models";
  } else if (cross != nullptr && cross->answer == verdict::no) {
    homo.reason +=
        "; a foreign model's cache does not help (need.cross_model_beats_no_comm: " + finding_text(cross) +
        "), so relay only between identical models";
  } else if (cross != nullptr) {
    homo.reason += "; whether a foreign model's cache helps is open (need.cross_model_beats_no_comm: " +
                   finding_text(cross) + ")";
  }
  return homo;
}

// decide's five risk checks and its map checks; the absence claims of the first three and the
// non-inferiority claims of the maps are held in one Holm family.
struct risk_checklist {
  checklist_item no_need_harm, freshness, conflict, drift, cross_model;
  std::vector<checklist_item> maps;  // one per mapped.*.noninferior_to_same_model finding ("map_<arm>")
};

// A cache map's check: whether a foreign sender's cache may be relayed through it (its mapped
// cache shown non-inferior to same-model relay; held in the risk family below).
LATENTAUDIT_INLINE checklist_item map_check(const finding& f) {
  const std::string arm = f.reads.empty() ? f.id : f.reads.front().arm;
  checklist_item c{"map_" + arm, verdict::inconclusive,
                   "the cache map of arm " + arm + " keeps relay non-inferior to same-model relay (" + f.id +
                       "): " + finding_text(&f)};
  if (f.answer == verdict::yes) {
    c.passed = verdict::yes;
  } else if (f.answer == verdict::no) {
    c.passed = verdict::no;
    c.reason += " - the mapped cache is inferior: that sender sends text";
  } else {
    c.reason += f.n == 0 ? " (not tested)" : " - neither shown: that sender sends text";
  }
  c.findings = {f.id};
  return c;
}

LATENTAUDIT_INLINE risk_checklist risk_checks(const finding* harm, const finding* stale,
                                              const finding* conflict, const finding* drift,
                                              const finding* cross, std::span<const finding* const> maps,
                                              double alpha) {
  // yes: no harm where B needs nothing (no change shown, or a gain); no: harm shown (a significant
  // negative change); inconclusive: neither shown. Only "no" keeps the verdict from plain "relay".
  checklist_item nh{"no_need_harm", verdict::inconclusive,
                    "relaying where B needs nothing does not lower accuracy: " + finding_text(harm)};
  if (harm != nullptr && harm->answer == verdict::yes)
    nh.passed = harm->estimate < 0 ? verdict::no : verdict::yes;
  else if (harm != nullptr && harm->answer == verdict::no)
    nh.passed = verdict::yes;
  // The relay-failure checks: a shown failure ("yes" on the finding) is a condition on relaying.
  auto failure_check = [&](const char* name, finding_kind kind, const finding* f, const char* shown,
                           const char* excluded) {
    checklist_item c{name, verdict::inconclusive, finding_id(kind) + ": " + finding_text(f)};
    if (f != nullptr && f->answer == verdict::yes) {
      c.passed = verdict::no;
      c.reason += std::string(" - ") + shown;
    } else if (f != nullptr && f->answer == verdict::no) {
      c.passed = verdict::yes;
      c.reason += std::string(" - ") + excluded;
    } else if (f == nullptr || f->n == 0) {
      c.reason += " (not tested: no such records)";
    } else {
      c.reason += " - neither shown";
    }
    return c;
  };
  auto fresh = failure_check(
      "freshness", finding_kind::stale_kv_worse_than_text, stale,
      "a stale cache (older than the document) loses to the current text: relay only fresh caches",
      "a stale cache's loss against the current text is excluded within the margin");
  auto confl =
      failure_check("conflict", finding_kind::conflict_kv_worse_than_no_comm, conflict,
                    "a cache that contradicts B's own prompt loses to no communication: do not relay it",
                    "a conflicting cache's loss against no communication is excluded within the margin");
  checklist_item dr{"drift", verdict::inconclusive,
                    "relay tolerates a drifted sender (fine-tuned apart): " + finding_text(drift)};
  if (drift != nullptr && drift->answer == verdict::yes) {
    dr.passed = verdict::no;
    dr.reason = fmt::format(
        "relay from a drifted sender loses non-inferiority to same-model relay at about {:.3g} fine-tuning "
        "steps ({}): relay only between identical fingerprints",
        drift->estimate, finding_text(drift));
  } else if (drift != nullptr && drift->answer == verdict::no) {
    dr.passed = verdict::yes;
    dr.reason += " - relay from every tested drifted sender is shown non-inferior to same-model relay";
  } else if (drift == nullptr || drift->n == 0) {
    dr.reason += " (not tested: no drift arms)";
  } else {
    dr.reason += " - neither a tolerance nor non-inferiority at every tested step shown";
  }
  // cross_model: the relay's benefit is shown to need identical models when a foreign model's cache
  // is shown not to help; a foreign cache that helps fails homogeneity (above).
  checklist_item cm{"cross_model", verdict::inconclusive,
                    "a foreign model's cache does not help (" +
                        finding_id(finding_kind::need_cross_model_beats_no_comm) +
                        "): " + finding_text(cross)};
  if (cross != nullptr && cross->answer == verdict::no) {
    cm.passed = verdict::yes;
  } else if (cross != nullptr && cross->answer == verdict::yes) {
    cm.passed = verdict::no;
    cm.reason += " - a foreign cache helps: homogeneity fails";
  } else if (cross == nullptr || cross->n == 0) {
    cm.reason += " (not tested: no cross_model arm)";
  } else {
    cm.reason += " - neither shown";
  }
  for (checklist_item* c : {&nh, &fresh, &confl, &dr, &cm}) c->risk = true;
  // The risk family. A risk check that shows its risk absent lets relay traffic through without that
  // risk's condition, and a map check that shows a map non-inferior lets a foreign sender's mapped
  // cache through, so the absence claims of no_need_harm, freshness and conflict and the maps'
  // non-inferiority claims are one family: each stands only if Holm over their one-sided p-values of
  // "relay loses by the margin or more" (finding::noninferiority_p) rejects it at alpha, which bounds
  // the probability that any of these claims is false by alpha (docs/audit-report.md "Testing along
  // the decision"). drift and cross_model are not in it: every relay policy carries "relay only
  // between identical model fingerprints (or through a map shown here)", so no claim of theirs lets a
  // drifted or foreign sender's cache through.
  std::vector<checklist_item> mc;
  for (const finding* f : maps) mc.push_back(map_check(*f));
  {
    std::vector<checklist_item*> fam = {&nh, &fresh, &confl};
    std::vector<const finding*> src = {harm, stale, conflict};
    for (std::size_t i = 0; i < maps.size(); ++i) {
      fam.push_back(&mc[i]);
      src.push_back(maps[i]);
    }
    std::vector<double> p(fam.size());
    for (std::size_t i = 0; i < fam.size(); ++i)
      p[i] = src[i] != nullptr && std::isfinite(src[i]->noninferiority_p) ? src[i]->noninferiority_p : 1.0;
    const auto adj = p_adjust(p, p_adjust_method::holm);
    for (std::size_t i = 0; i < fam.size(); ++i) {
      if (fam[i]->passed != verdict::yes) continue;
      const bool is_map = i >= 3;
      if (adj[i] <= alpha) {
        fam[i]->reason += fmt::format(" ({} held in the risk family: Holm-adjusted p = {:.3g})",
                                      is_map ? "non-inferiority" : "absence", adj[i]);
      } else {
        fam[i]->passed = verdict::inconclusive;
        fam[i]->reason += fmt::format(
            " - but {} is not shown after Holm over the {} claims that would let traffic through "
            "(one-sided p = {:.3g}, adjusted {:.3g} > {})",
            is_map ? "non-inferiority" : "absence", fam.size(), p[i], adj[i], alpha);
      }
    }
  }
  return {std::move(nh), std::move(fresh), std::move(confl), std::move(dr), std::move(cm), std::move(mc)};
}

// One owner of the serving policy: a policy line and its rules (report.json decision.rules,
// docs/policy.schema.json) are written together, here, and each rule names its line. A rule's rank
// orders the rules for evaluation (finish_rules): 0 verdict-wide, 1 no-need, 2 freshness,
// 3 conflict, 4 cache maps, 5 fingerprints, 6 relay.
LATENTAUDIT_INLINE void add_policy_line(audit_decision& d, std::string text, std::vector<policy_rule> rules) {
  for (auto& r : rules) {
    r.line = d.policy.size();
    d.rules.push_back(std::move(r));
  }
  d.policy.push_back(std::move(text));
}

// A rule of rank `rank`: when every condition of `when` holds, `action`; it rests on checklist item
// `check` and finding `finding` (its interval is filled in by finish_rules).
LATENTAUDIT_INLINE policy_rule policy_rule_of(int rank, std::vector<policy_condition> when,
                                              relay_action action, std::string check, std::string finding,
                                              std::string map = {}) {
  policy_rule r;
  r.rank = rank;
  r.when = std::move(when);
  r.action = action;
  r.check = std::move(check);
  r.finding = std::move(finding);
  r.map = std::move(map);
  return r;
}

// The fingerprint rule's two halves: a sender of another fingerprint sends text (resting on the
// drift check when drift was shown, else on homogeneity and its cross_model placebo) ...
LATENTAUDIT_INLINE policy_rule fingerprint_rule(bool drift_shown) {
  return policy_rule_of(5, {{"sender_fingerprint", "!=", json_value(), "receiver_fingerprint"}},
                        relay_action::text, drift_shown ? "drift" : "homogeneity",
                        finding_id(drift_shown ? finding_kind::drift_tolerance_steps
                                               : finding_kind::need_cross_model_beats_no_comm));
}

// The receivers the audit measured: every non-empty receiver_fingerprint of its records (sorted). A
// relay rule lets traffic through only into one of them: the value, risk and cost checks say
// nothing about a receiver they never ran on.
LATENTAUDIT_INLINE std::vector<std::string> audited_receivers(std::span<const trial_record> records) {
  std::set<std::string_view> seen;
  for (const auto& r : records)
    if (!r.receiver_fingerprint.empty()) seen.insert(r.receiver_fingerprint);
  return {seen.begin(), seen.end()};
}

// The scope rule beside the fingerprint rule: a request into a receiver the audit did not measure
// (receiver_fingerprint none of `receivers`) sends text. `receivers` is never empty where a relay
// policy is written: a relay verdict needs the homogeneity check's "yes", which needs records carrying
// sender and receiver fingerprints (homogeneity_check; records without them leave it inconclusive).
LATENTAUDIT_INLINE std::vector<policy_rule> receiver_scope_rules(const std::vector<std::string>& receivers) {
  if (receivers.empty()) return {};
  std::vector<policy_condition> when;
  for (const auto& fp : receivers) when.push_back({"receiver_fingerprint", "!=", fp, {}});
  return {policy_rule_of(5, std::move(when), relay_action::text, "homogeneity", {})};
}

// The policy line's words for that scope.
LATENTAUDIT_INLINE std::string receiver_scope_text(const std::vector<std::string>& receivers) {
  if (receivers.empty()) return {};
  if (receivers.size() == 1)
    return "; only into the receiver the audit measured (receiver_fingerprint " + receivers.front() +
           "): any other receiver gets text";
  return "; only into the " + std::to_string(receivers.size()) +
         " receivers the audit measured: any other receiver gets text";
}

// ... and every request no rule before it stopped is relayed (value: relay not less accurate than text).
LATENTAUDIT_INLINE policy_rule relay_rule() {
  return policy_rule_of(6, {}, relay_action::relay, "value",
                        finding_id(finding_kind::need_kv_noninferior_to_text));
}

// The finding behind a risk check (the "do not gate" rule rests on the first unverified check):
// the first catalog row that names the check.
LATENTAUDIT_INLINE std::string risk_finding_id(std::string_view check) {
  for (const auto& row : finding_catalog())
    for (const auto c : row.checks)
      if (c == check) return finding_id(row.kind);
  return {};
}

// decide's last step on the policy: the rules in evaluation order (stable by rank), each with its
// line's text and its finding's interval and verdict; then replayed on the audit's own requests
// (replay_relay_policy: the policy's accuracy and relay share). Records without a feature a rule
// reads leave the replay empty with the reason.
LATENTAUDIT_INLINE void finish_rules(audit_decision& d, std::span<const finding> findings,
                                     std::span<const trial_record> records) {
  std::stable_sort(d.rules.begin(), d.rules.end(),
                   [](const policy_rule& a, const policy_rule& b) { return a.rank < b.rank; });
  for (auto& r : d.rules) {
    r.text = d.policy.at(r.line);
    if (const finding* f = find_finding(findings, r.finding)) {
      r.estimate = f->estimate;
      r.lo = f->ci_low;
      r.hi = f->ci_high;
      r.verdict = verdict_name(f->answer);
    }
  }
  try {
    d.replay = replay_relay_policy(relay_policy(d.rules, decision_verdict_name(d.verdict), d.relay_allowed),
                                   records);
  } catch (const invalid_argument& e) {
    d.replay = {};
    d.replay.note = std::string("not replayed: ") + e.what();
  }
}

// decide's replay of the online item-level monitors on relay - base and relay - text (into
// d.monitors) and its checklist item.
LATENTAUDIT_INLINE checklist_item monitor_check(audit_decision& d, std::span<const trial_record> records,
                                                const std::string& relay, const std::string& base,
                                                const std::string& text, const decision_options& o) {
  using arm_pair = std::pair<const std::string&, const std::string&>;
  for (const auto& [t, c] : {arm_pair{relay, base}, arm_pair{relay, text}}) {
    auto diffs = need_item_differences(records, t, c, o.units);
    if (diffs.d.empty()) continue;
    monitor_replay m;
    m.contrast = t + " - " + c;
    m.pairs = diffs.pairs;
    m.result = run_betting_sequential(diffs.d, o.monitor);
    m.stop_at = m.result.first_rejection;
    d.monitors.push_back(std::move(m));
  }
  checklist_item mon{"monitor", verdict::inconclusive,
                     "no need-regime items with " + relay + " and " + base + " to replay"};
  if (!d.monitors.empty()) {
    const auto& m = d.monitors.front();
    if (m.stop_at) {
      mon.passed = verdict::yes;
      mon.reason = fmt::format(
          "an online item-level betting monitor (alpha {}; one observation per item: its mean difference "
          "over seeds) on {} would have rejected theta = 0 after {} of {} need-regime items ({} pairs)",
          o.monitor.alpha, m.contrast, *m.stop_at, m.result.n, m.pairs);
    } else {
      mon.passed = verdict::no;
      mon.reason = fmt::format(
          "an online item-level betting monitor (alpha {}; one observation per item) on {} did not reject "
          "theta = 0 within {} need-regime items ({} pairs; always-valid p = {:.3g})",
          o.monitor.alpha, m.contrast, m.result.n, m.pairs, m.result.p_value);
    }
  }
  return mon;
}

// decide's verdict, policy and summary from its checks, read in the decision's order: positive
// control, dependency, homogeneity, value, cost, then the risks.
// `vd` is the dependency check's verdict; `likelihood_shown`: a likelihood finding shows the relay
// raising a probability (the verdict never says the relay carries none of A's information then).
LATENTAUDIT_INLINE void set_verdict(audit_decision& d, const finding* control, const finding* dep, verdict vd,
                                    bool likelihood_shown, const finding* drift, verdict vh, verdict vv,
                                    verdict vc, const risk_checklist& risks,
                                    std::span<const trial_record> records, const std::string& base,
                                    const decision_options& o) {
  auto v_of = [](const finding* f) { return f == nullptr ? verdict::inconclusive : f->answer; };
  const checklist_item& nh = risks.no_need_harm;
  const checklist_item& fresh = risks.freshness;
  const checklist_item& confl = risks.conflict;
  const checklist_item& dr = risks.drift;
  const verdict vc0 = v_of(control);
  const bool kv_absent_shown =
      !likelihood_shown && dep != nullptr && std::isfinite(dep->ci_high) && dep->ci_high < o.margin;
  // "no communication" also needs B to answer most need-regime requests on its own (no_comm's
  // item-clustered accuracy, betting lower limit at alpha/2, above one half): when nothing answers
  // (every record wrong) the task is broken and the verdict stays inconclusive.
  const std::optional<double> alone_low =
      vc0 == verdict::no && kv_absent_shown
          ? alone_accuracy_low(records, base, o.monitor.alpha, o.horizon, o.units)
          : std::nullopt;
  if (vc0 == verdict::no && kv_absent_shown && alone_low && *alone_low > 0.5) {
    d.verdict = decision_verdict::no_communication;
    add_policy_line(d, "answer without communication: neither text nor the relay carries information B uses",
                    {policy_rule_of(0, {}, relay_action::no_communication, "positive_control",
                                    finding_id(finding_kind::need_text_beats_no_comm))});
    d.summary = fmt::format(
        "Text relay, which carries A's whole document, is shown not to help B by {:.1f} points or more in "
        "the need regime ({}: {}), and neither does the KV relay ({}: {}), and B answers the need-regime "
        "requests on its own (no_comm accuracy lower limit {:.3f}): the requests do not need A's "
        "information.",
        100.0 * o.margin, finding_id(finding_kind::need_text_beats_no_comm), finding_text(control),
        finding_id(finding_kind::need_kv_beats_no_comm), finding_text(dep), *alone_low);
  } else if (vc0 != verdict::yes) {
    d.verdict = decision_verdict::inconclusive;
    d.summary =
        std::string(positive_control_reason) + " (" + finding_id(finding_kind::need_text_beats_no_comm) +
        ": " + finding_text(control) +
        "), so the need regime does not test whether B needs A's information: fix the task or collect "
        "more items before reading any other check.";
  } else if (vd == verdict::no) {
    // The positive control passed, so B does need A's information; the relay carries none of it.
    d.verdict = decision_verdict::text;
    add_policy_line(
        d, "send A's document as text",
        {policy_rule_of(0, {}, relay_action::text, "dependency",
                        dep != nullptr ? dep->id : finding_id(finding_kind::need_kv_beats_no_comm))});
    d.summary =
        "Text relay carries A's information (positive control) but the KV relay shows no benefit over no "
        "communication (a benefit of the margin or more is excluded";
    d.summary += dep != nullptr && dep->id == finding_id(finding_kind::need_kv_carries_information) &&
                         dep->method.find("no likelihood endpoint measured") == std::string::npos
                     ? " in accuracy, and no likelihood endpoint shows a rise)."
                     : ").";
  } else if (vd == verdict::yes && vh == verdict::yes && vv == verdict::yes && vc == verdict::yes) {
    std::vector<std::pair<std::string, policy_rule>> conditions;  // each line with its rule
    if (nh.passed == verdict::no)
      conditions.emplace_back(
          "relay only where B needs A's information (relaying where B needs nothing lowers accuracy: " +
              finding_id(finding_kind::no_need_kv_changes_accuracy) + ")",
          policy_rule_of(1, {{"needs_document", "==", false, {}}}, relay_action::no_communication,
                         "no_need_harm", finding_id(finding_kind::no_need_kv_changes_accuracy)));
    if (fresh.passed == verdict::no)
      conditions.emplace_back(
          "relay only fresh caches: fall back to text when the cache is older than the document version "
          "(cache_age_versions >= 1; " +
              finding_id(finding_kind::stale_kv_worse_than_text) + ")",
          policy_rule_of(2, {{"cache_age_versions", ">=", 1, {}}}, relay_action::text, "freshness",
                         finding_id(finding_kind::stale_kv_worse_than_text)));
    if (confl.passed == verdict::no)
      conditions.emplace_back(
          "do not relay when B's own prompt already binds the document's keys (prompt_overlap > 0): answer "
          "without the relay (" +
              finding_id(finding_kind::conflict_kv_worse_than_no_comm) + ")",
          policy_rule_of(3, {{"prompt_overlap", ">", 0, {}}}, relay_action::no_communication, "conflict",
                         finding_id(finding_kind::conflict_kv_worse_than_no_comm)));
    // Every relay policy restricts relay to identical fingerprints: the checks behind it ran between
    // identical models, and it is why drift and cross_model need no place in the risk family. With
    // drift shown present the rule carries its tolerance (and counts as a condition).
    const std::string fingerprints =
        dr.passed == verdict::no
            ? fmt::format(
                  "relay only between identical model fingerprints: a sender fine-tuned about {:.3g} steps "
                  "apart loses non-inferiority to same-model relay ({})",
                  drift->estimate, finding_id(finding_kind::drift_tolerance_steps))
            : std::string(
                  "relay only between identical model fingerprints (sender = receiver): the audit "
                  "shows the relay's value between identical models only");
    // a cache map shown non-inferior adds its own rule (add_map_policy): the line says so here, where
    // it is written, rather than being patched later by matching its words
    const bool map_shown = std::any_of(risks.maps.begin(), risks.maps.end(),
                                       [](const checklist_item& c) { return c.passed == verdict::yes; });
    const std::vector<std::string> receivers = audited_receivers(records);
    const std::string scoped =
        fingerprints +
        (map_shown ? "; a foreign sender's cache only through a cache map shown non-inferior (below)" : "") +
        receiver_scope_text(receivers);
    // the fingerprint line's rules: a receiver the audit did not measure, a sender of another
    // fingerprint, then (where relay passes) everything else is relayed
    const auto fingerprint_rules = [&](bool drift_shown, bool with_relay) {
      std::vector<policy_rule> rules = receiver_scope_rules(receivers);
      rules.push_back(fingerprint_rule(drift_shown));
      if (with_relay) rules.push_back(relay_rule());
      return rules;
    };
    const std::size_t n_shown =
        conditions.size() + (dr.passed == verdict::no ? 1 : 0);  // risks shown present
    std::string untested;
    for (const auto& c : d.unverified) untested.append(untested.empty() ? "" : ", ").append(c);
    const std::string base_text =
        "Relay carries A's information (dependency), between identical models (homogeneity), is not less "
        "accurate than text (value), and saves receiver latency on " +
        d.link + " (cost).";
    if (!d.unverified.empty()) {
      // A risk not shown either way never passes: the verdict says so and lets no traffic through.
      d.verdict = decision_verdict::relay_unverified;
      add_policy_line(d, scoped, fingerprint_rules(dr.passed == verdict::no, true));
      for (const auto& [line, rule] : conditions) add_policy_line(d, line, {rule});
      add_policy_line(
          d, "do not gate relay traffic on this audit until the unverified checks are tested: " + untested,
          {policy_rule_of(0, {}, relay_action::text, d.unverified.front(),
                          risk_finding_id(d.unverified.front()))});
      d.summary = fmt::format(
          "Relay is not shown safe: the risk check(s) {} were not tested or stayed inconclusive, so no "
          "verdict "
          "that lets relay traffic through is given. {}{}",
          untested, base_text,
          n_shown == 0 ? std::string()
                       : fmt::format(" {} risk(s) shown present became conditions (the policy).", n_shown));
    } else if (n_shown == 0) {
      d.verdict = decision_verdict::relay;
      d.relay_allowed = true;
      add_policy_line(d, "relay A's cache to B", {relay_rule()});
      add_policy_line(d, scoped, fingerprint_rules(false, false));
      d.summary = base_text + " Every risk check is shown absent.";
    } else {
      d.verdict = decision_verdict::relay_with_conditions;
      d.relay_allowed = true;
      add_policy_line(d, scoped, fingerprint_rules(dr.passed == verdict::no, true));
      for (const auto& [line, rule] : conditions) add_policy_line(d, line, {rule});
      d.summary =
          base_text + fmt::format(
                          " But relay does not pay everywhere: {} risk(s) shown present became conditions of "
                          "the policy{}.",
                          n_shown,
                          dr.passed == verdict::no
                              ? " (the fingerprint rule, with its drift tolerance, among them)"
                              : ", beside the fingerprint rule every relay policy has");
    }
  } else if (vd == verdict::yes && (vv == verdict::no || vc == verdict::no)) {
    d.verdict = decision_verdict::text;
    add_policy_line(d, "send A's document as text",
                    {policy_rule_of(0, {}, relay_action::text, vv == verdict::no ? "value" : "cost",
                                    vv == verdict::no ? finding_id(finding_kind::need_kv_noninferior_to_text)
                                                      : finding_id(finding_kind::cost_relay_pays_on_link,
                                                                   {.link = d.link}))});
    d.summary = vv == verdict::no
                    ? "Relay is less accurate than text beyond the margin (inferiority shown)."
                    : "Relay is not less accurate than text but does not pay on " + d.link + ".";
  } else {
    d.verdict = decision_verdict::inconclusive;
    d.summary =
        "At least one check is inconclusive: collect more items or seeds (see the power of each finding).";
  }
}

// The map path of a relay verdict: per cache map, a policy line — a foreign sender's cache goes
// through the map when its check passed (non-inferiority held in the risk family), else that
// sender sends text — naming the sender's fingerprint and the map id its records carry.
LATENTAUDIT_INLINE void add_map_policy(audit_decision& d, std::span<const checklist_item> maps,
                                       std::span<const trial_record> records) {
  if (maps.empty() || !is_relay_verdict(d.verdict)) return;
  for (const auto& c : maps) {
    const std::string arm = c.name.substr(4);
    std::string sender, map, receiver;
    for (const auto& r : records) {
      if (r.arm != arm) continue;
      if (sender.empty()) sender = r.sender_fingerprint;
      if (map.empty()) map = r.map;
      if (receiver.empty()) receiver = r.receiver_fingerprint;
      if (!sender.empty() && !map.empty() && !receiver.empty()) break;
    }
    // its rule: that sender's requests (to that receiver, the stack holding the map) through the map,
    // else text; a map without an id in the records cannot be named, so that sender sends text
    std::vector<policy_condition> when = {{"sender_fingerprint", "==", sender, {}}};
    const bool through_map = c.passed == verdict::yes && !map.empty();
    if (through_map && !receiver.empty()) when.push_back({"receiver_fingerprint", "==", receiver, {}});
    if (through_map) when.push_back({"maps", "contains", map, {}});
    policy_rule rule =
        policy_rule_of(4, std::move(when), through_map ? relay_action::relay_through_map : relay_action::text,
                       c.name, c.findings.front(), through_map ? map : std::string());
    const std::string who =
        sender.empty() ? "the sender of arm " + arm : "sender " + sender + " (arm " + arm + ")";
    const std::string through = map.empty() ? "the cache map of arm " + arm : "cache map " + map;
    if (c.passed == verdict::yes) {
      add_policy_line(d,
                      "relay the cache of " + who + " only through " + through +
                          ": its mapped cache is shown non-inferior to same-model relay (" +
                          c.findings.front() + ")",
                      {std::move(rule)});
    } else {
      add_policy_line(d,
                      "send text from " + who + ": " + through +
                          " is not shown non-inferior to same-model relay (" + c.findings.front() + " " +
                          verdict_name(c.passed) + ")",
                      {std::move(rule)});
    }
  }
}

}  // namespace detail

[[nodiscard]] LATENTAUDIT_INLINE audit_decision decide(std::span<const finding> findings,
                                                       std::span<const trial_record> records,
                                                       const decision_options& o) {
  detail::check_betting_sequential_options("decide", o.monitor);
  if (!(o.alpha > 0.0 && o.alpha < 0.5))
    LATENTAUDIT_THROW(invalid_argument("decide: alpha must lie in (0, 0.5)"));
  detail::check_relay_switch_options("decide", o.switch_options);
  audit_decision d;
  d.link = detail::cost_link_of(records, o.link);
  auto of = [&](finding_kind k, const finding_params& p = {}) {
    return detail::find_finding(findings, k, p);
  };
  const auto* control = of(finding_kind::need_text_beats_no_comm);
  // The dependency check: need.kv_carries_information (accuracy, then the likelihood endpoints, each
  // in its own alpha-spending step) where the audit wrote it, else accuracy alone.
  const auto* dep_accuracy = of(finding_kind::need_kv_beats_no_comm);
  const auto* carries = of(finding_kind::need_kv_carries_information);
  const auto* dep = carries != nullptr ? carries : dep_accuracy;
  bool likelihood_shown = false;  // a likelihood finding shows the relay raising a probability
  for (const auto* e : detail::likelihood_endpoints)
    if (const auto* f = of(e->raises)) likelihood_shown = likelihood_shown || f->answer == verdict::yes;
  const auto* cross = of(finding_kind::need_cross_model_beats_no_comm);
  const auto* value = of(finding_kind::need_kv_noninferior_to_text);
  const auto* cost = of(finding_kind::cost_relay_pays_on_link, {.link = d.link});
  const auto* harm = of(finding_kind::no_need_kv_changes_accuracy);
  const auto* stale = of(finding_kind::stale_kv_worse_than_text);
  const auto* conflict = of(finding_kind::conflict_kv_worse_than_no_comm);
  const auto* drift = of(finding_kind::drift_tolerance_steps);
  auto v_of = [](const finding* f) { return f == nullptr ? verdict::inconclusive : f->answer; };

  d.checklist.push_back({"positive_control", v_of(control),
                         "text relay beats no communication in the need regime (the task needs A): " +
                             detail::finding_text(control)});
  // Never "relay carries none of A's information" while a likelihood finding shows it.
  const verdict vd = v_of(dep) == verdict::no && likelihood_shown ? verdict::inconclusive : v_of(dep);
  d.checklist.push_back(
      {"dependency", vd,
       "the relay carries A's information (need regime, kv_full vs no_comm" +
           (carries != nullptr ? ", " + carries->id : std::string()) + "): " + detail::finding_text(dep) +
           (carries != nullptr ? " - " + carries->detail
            : vd != v_of(dep)
                ? std::string(" - but a likelihood finding shows the relay raising a probability: not shown "
                              "either way")
                : std::string())});
  checklist_item homo = detail::homogeneity_with_placebo(records, cross);
  d.checklist.push_back(homo);
  d.checklist.push_back({"value", v_of(value),
                         "relay is not less accurate than text beyond the margin (non-inferiority): " +
                             detail::finding_text(value)});
  d.checklist.push_back({"cost", v_of(cost),
                         "relay saves receiver latency on " + d.link + ": " + detail::finding_ms_text(cost)});
  std::vector<const finding*> maps;  // the cache maps' non-inferiority (report/analyses/mapped.hpp)
  for (const auto& f : findings)
    if (f.key.kind == finding_kind::mapped_noninferior_to_same_model) maps.push_back(&f);
  auto risks = detail::risk_checks(harm, stale, conflict, drift, cross, maps, o.alpha);
  const checklist_item& nh = risks.no_need_harm;
  const checklist_item& fresh = risks.freshness;
  const checklist_item& confl = risks.conflict;
  const checklist_item& dr = risks.drift;
  const checklist_item& cm = risks.cross_model;
  d.checklist.push_back(nh);
  d.checklist.push_back(fresh);
  d.checklist.push_back(confl);
  d.checklist.push_back(dr);
  d.checklist.push_back(cm);
  for (const auto& c : risks.maps) d.checklist.push_back(c);
  // The risk checks not shown either way: a verdict that lets relay traffic through needs none.
  for (const checklist_item* c : std::initializer_list<const checklist_item*>{&nh, &fresh, &confl, &dr, &cm})
    if (c->passed == verdict::inconclusive) d.unverified.push_back(c->name);

  // The monitor runs at the item level: one observation per item (its mean paired difference over
  // seeds), items in id order. Feeding the (item, seed) pairs one by one treated the seeds of an
  // item as independent and stopped under clustered nulls far more often than alpha
  // (docs/estimators/sequential.md, "Clustered data").
  // The arms answer by label, else by arm_kind (detail::resolve_arm: the resolver of every analysis;
  // an ambiguity is reported by the core audit's warnings).
  std::vector<std::string> arm_notes;
  const std::string relay = detail::resolve_arm_or_name(records, o.relay_arm, arm_notes);
  const std::string base = detail::resolve_arm_or_name(records, o.control_arm, arm_notes);
  const std::string text = detail::resolve_arm_or_name(records, o.text_arm, arm_notes);
  d.checklist.push_back(detail::monitor_check(d, records, relay, base, text, o));

  // The relay switch, replayed on the records with a change point (informational).
  d.relay_switch = replay_relay_switch(records, relay, text, base, o.switch_options, o.units);

  detail::set_verdict(d, control, dep, vd, likelihood_shown, drift, homo.passed, v_of(value), v_of(cost),
                      risks, records, base, o);
  detail::add_map_policy(d, risks.maps, records);
  // What each check reads (arm_cells_to_run): the kinds the catalog says it reads
  // (finding_kinds_read_by; the risk family's checks read each other's p-values through Holm), by
  // their ids: a kind read only where present by its findings', the others (the cost check's on the
  // decision's link) whether or not they were computed.
  for (auto& c : d.checklist) {
    if (c.name == "monitor") continue;
    c.kinds = finding_kinds_read_by(c.name);
    c.findings.clear();
    for (const finding_kind k : c.kinds) {
      if (!finding_info(k).read_when_present) {
        c.findings.push_back(finding_id(k, {.link = d.link}));
        continue;
      }
      for (const auto& f : findings)
        if (f.key.kind == k || (f.key.kind == finding_kind::unknown && f.id == finding_id(k)))
          c.findings.push_back(f.id);
    }
    if (c.name == "dependency") c.reads = {{"need", base}};  // "no communication": no_comm's accuracy
  }
  detail::finish_rules(d, findings, records);
  return d;
}

LATENTAUDIT_INLINE std::set<arm_cell> arm_cells_to_run(std::span<const finding> findings,
                                                       const audit_decision& d) {
  std::set<arm_cell> run;
  if (decision_settled(d)) return run;
  auto add = [&](const std::vector<arm_cell>& cells) { run.insert(cells.begin(), cells.end()); };
  for (const auto& f : findings)
    if (f.answer == verdict::inconclusive) add(f.reads);
  const bool open_path = d.verdict == decision_verdict::inconclusive;  // the path itself is still open
  for (const auto& c : d.checklist) {
    if (c.name == "monitor" || (!open_path && c.passed != verdict::inconclusive)) continue;
    add(c.reads);
    for (const auto& id : c.findings)
      if (const auto* f = detail::find_finding(findings, id)) add(f->reads);
  }
  return run;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_DECISION_INL_HPP
