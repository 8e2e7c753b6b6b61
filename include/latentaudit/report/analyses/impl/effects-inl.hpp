// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/effects.hpp (header-only mode includes this file; compiled
// mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_EFFECTS_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_EFFECTS_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../effects.hpp"
// The full audit types (effects.hpp only names them); header-only mode: this also brings in the
// audit's definitions, which call the functions below (declared above).
#include "../../audit.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "../../../core/detail/check.hpp"
#include "../../../estimators/betting.hpp"
#include "../../../estimators/multiplicity.hpp"

namespace latentaudit::detail {

[[nodiscard]] LATENTAUDIT_INLINE role_index role_index_of(const audit_data& d, const arm_roles& roles) {
  role_index r;
  for (const arm_kind k : all_arm_kinds) {
    const std::string& l = roles.of(k);
    if (!l.empty()) r.arm[static_cast<std::size_t>(k)] = d.find_label(l);
  }
  return r;
}

LATENTAUDIT_INLINE std::string effect_verdict_text(const audit_options& o) {
  return fmt::format(
      "{}% verdict interval: betting over items (one-sided {} per side; Waudby-Smith & Ramdas "
      "2024); p: betting over items of mean item difference = 0",
      detail::percent(1.0 - 2.0 * o.alpha), number_text(o.alpha));
}

LATENTAUDIT_INLINE void audit_paired_effects(const audit_data& d, const role_index& r, const audit_options& o,
                                             audit_core& out) {
  auto& warn = out.warnings;
  const double level = 1.0 - o.alpha;
  const std::size_t B = o.bootstrap_replicates;
  const std::size_t no_comm = r.of(arm_kind::no_comm), text_full = r.of(arm_kind::text_full),
                    kv_full = r.of(arm_kind::kv_full), pairing = r.of(pairing_placebo_kind());
  const std::string_view pairing_name = arm_kind_name(pairing_placebo_kind());
  auto role_label = [&](std::size_t a, std::string_view fallback) {
    return a == audit_data::npos ? std::string(fallback) : d.arm_label[a];
  };
  auto in_regime = [&](audit_regime g) { return [&d, g](std::size_t u) { return d.unit_regime[u] == g; }; };

  // ---- paired effects (the Holm family) ----
  // Every paired difference: the descriptive 1 − α cluster bootstrap interval (betting at α/2 per
  // side when the bootstrap is a point mass or has < 2 items), the 1 − 2α betting verdict
  // interval over items and the betting p-value over items. Returns the method's interval part.
  // The estimate is the mean over items of the item mean differences: the quantity the betting
  // verdict interval covers (one estimand per finding; with equal seeds per item it is the mean
  // over pairs). Units lacking one of the arms are bounded (detail::missing_outcome_bounds): the
  // p-value is then the largest of the observed pairs' and the two worst-case imputations'.
  auto fill_effect = [&](paired_effect& e, const detail::paired_units& p, const missing_bounds& mb) {
    e.n_pairs = p.pairs();
    e.n_clusters = p.clusters();
    const auto items = detail::item_differences(p);
    const std::size_t horizon = d.horizon_of(detail::regime_code(e.regime));
    const auto vi = detail::view_of_items(items, o.alpha, horizon);
    e.estimate = vi.estimate;
    e.verdict_low = vi.verdict_low;
    e.verdict_high = vi.verdict_high;
    e.p_value = vi.p_value;
    e.missing = mb;
    e.item_diffs = items;
    e.item_pairs = p.cluster_count;
    {  // whose mean: items, and requests (items weighted by their pairs) when the counts differ
      double num = 0, den = 0;
      for (std::size_t g = 0; g < items.size(); ++g) num += p.cluster_sum[g], den += p.cluster_count[g];
      e.request_estimate = den > 0 ? num / den : audit_nan;
      auto unequal = [](std::span<const double> c) {
        return !c.empty() && std::any_of(c.begin(), c.end(), [&](double x) { return x != c.front(); });
      };
      e.unequal_seeds = unequal(e.item_pairs) || (mb.any() && unequal(mb.low_counts));
      if (e.unequal_seeds && !items.empty()) {
        e.request_noninferiority_p =
            detail::request_noninferiority_p(items, e.item_pairs, o.equivalence_margin, o.alpha, horizon);
        if (mb.any() && !mb.low_items.empty())
          e.request_noninferiority_p =
              std::max(e.request_noninferiority_p,
                       detail::request_noninferiority_p(mb.low_items, mb.low_counts, o.equivalence_margin,
                                                        o.alpha, horizon));
      }
    }
    if (mb.any()) e.p_value = std::max({e.p_value, mb.low.p_value, mb.high.p_value});
    const auto ci = detail::cluster_bootstrap_interval(p, level, B, o.seed, o.threads);
    if (ci.point_mass || !std::isfinite(ci.low) || !std::isfinite(ci.high)) {
      const auto di = bounded_mean_interval(
          items, -1.0, 1.0, {.alpha_lower = o.alpha / 2.0, .alpha_upper = o.alpha / 2.0, .horizon = horizon});
      e.ci_low = di.low;
      e.ci_high = di.high;
      return fmt::format(
          "{}% CI: betting over {} items (the cluster bootstrap {}; Waudby-Smith & Ramdas 2024)",
          detail::percent(level), p.clusters(),
          ci.point_mass ? "is a point mass: every replicate equals the estimate" : "needs 2 items");
    }
    e.ci_low = ci.low;
    e.ci_high = ci.high;
    return fmt::format("{}% CI: cluster bootstrap over items (percentile, B = {}, seed {})",
                       detail::percent(level), B, o.seed);
  };
  const std::string verdict_text = effect_verdict_text(o);
  struct contrast_spec {
    std::size_t treated, control;
    std::string_view treated_role;
    std::string_view control_role;
    bool holm;   // a claim of its own (in the Holm family), or decomposition material
    bool chain;  // need regime: a step of the decision's fixed sequence (full α, not in the Holm family)
  };
  // text_full − no_comm (the positive control) and kv_full − no_comm (dependency) in the need
  // regime are the first two steps of the decision's fixed sequence: each is tested at full α once
  // the steps before it are shown (docs/audit-report.md "Testing along the decision"), so they stay
  // out of the Holm family, which then holds the contrasts the decision does not read as a step.
  // Each placebo and foreign role − no_comm (contrasted_with_no_comm: deranged, zeroed, random,
  // cross_model, in arm_kind order) is a claim of its own. Each placebo role − kv_full is implied by
  // the placebo − no_comm and kv_full − no_comm contrasts (their difference); it describes how much
  // of the relay effect a placebo keeps and stays out of the Holm family.
  std::vector<contrast_spec> specs = {
      {kv_full, no_comm, "kv_full", "no_comm", true, true},
      {kv_full, text_full, "kv_full", "text_full", true, false},
      {text_full, no_comm, "text_full", "no_comm", true, true},
  };
  for (const arm_kind k : all_arm_kinds)
    if (contrasted_with_no_comm(k))
      specs.push_back({r.of(k), no_comm, arm_kind_name(k), "no_comm", true, false});
  for (const arm_kind k : all_arm_kinds)
    if (contrasted_with_no_comm(k) && plan_of(k).family == arm_family::placebo)
      specs.push_back({r.of(k), kv_full, arm_kind_name(k), "kv_full", false, false});
  std::vector<std::string> effect_ci_text;  // parallel to out.effects
  std::vector<bool> effect_exact;           // parallel to out.effects: p by exact McNemar
  std::vector<std::string> skipped;
  for (auto rg : {audit_regime::need, audit_regime::no_need}) {
    const std::string rname = detail::regime_name(rg);
    for (const auto& sp : specs) {
      const std::string tl = role_label(sp.treated, sp.treated_role),
                        cl = role_label(sp.control, sp.control_role);
      const std::string id = rname + ":" + tl + "-" + cl;
      if (sp.treated == audit_data::npos || sp.control == audit_data::npos) {
        skipped.push_back(id);
        continue;
      }
      const std::size_t t[] = {sp.treated};
      auto p = detail::collect_pairs(d, t, sp.control, in_regime(rg));
      if (p.pairs() == 0) {
        skipped.push_back(id);
        continue;
      }
      paired_effect e{.id = id, .treated = tl, .control = cl, .regime = rname};
      e.in_decision_sequence = sp.chain && rg == audit_regime::need;
      e.in_holm_family = sp.holm && !e.in_decision_sequence;
      effect_ci_text.push_back(fill_effect(
          e, p, detail::missing_outcome_bounds(d, t, sp.control, in_regime(rg), o.alpha, d.horizon_of(rg))));
      // Need-regime contrasts whose p is a superiority test (the Holm family and the sequence steps):
      // exact conditional McNemar where each item holds one pair (docs/estimators/findings.md); the
      // two-sided p, the largest over the worst-case imputations, enters Holm.
      bool exact = false;
      if (rg == audit_regime::need && (sp.holm || sp.chain)) {
        const auto ex = detail::exact_superiority_of(
            d, t, sp.control, in_regime(rg), o.alpha,
            {.estimate = e.estimate, .verdict_low = e.verdict_low, .verdict_high = e.verdict_high},
            e.missing);
        if (ex.applies) {
          e.p_value = ex.p_two();
          exact = true;
        }
      }
      effect_exact.push_back(exact);
      out.effects.push_back(std::move(e));
    }
  }
  if (!skipped.empty()) {
    std::string list;
    for (const auto& s : skipped) list.append(list.empty() ? "" : ", ").append(s);
    warn.push_back(
        fmt::format("paired effects not estimable (an arm absent, or no unit holds both arms): {}", list));
  }
  {
    std::vector<double> p;
    std::vector<std::size_t> in;
    for (std::size_t i = 0; i < out.effects.size(); ++i) {
      if (!out.effects[i].in_holm_family) continue;
      p.push_back(out.effects[i].p_value);
      in.push_back(i);
    }
    const auto adj = p_adjust(p, p_adjust_method::holm);
    for (auto& e : out.effects) e.p_holm = audit_nan;
    for (std::size_t k = 0; k < adj.size(); ++k) out.effects[in[k]].p_holm = adj[k];
    for (std::size_t i = 0; i < out.effects.size(); ++i) {
      auto& e = out.effects[i];
      e.method = fmt::format(
          "mean over items of the item mean paired difference; {}; {}{}; {}", effect_ci_text[i], verdict_text,
          effect_exact[i] ? std::string(" — one pair per item here, so p is exact conditional McNemar's "
                                        "two-sided p instead (the largest over the worst-case imputations)")
                          : std::string(),
          e.in_decision_sequence
              ? std::string(
                    "a step of the decision's fixed sequence (full alpha once the steps before it are "
                    "shown), not in the Holm family")
          : e.in_holm_family
              ? fmt::format("Holm over the {} contrasts of the family", in.size())
              : std::string("not in the Holm family (decomposition material: the difference of the placebo − "
                            "no_comm and kv_full − no_comm contrasts)"));
    }
  }

  // ---- decomposition (need) ----
  {
    std::vector<std::size_t> present;
    std::string present_names;
    // presence is a named estimand (docs/audit-report.md "Decomposition (need regime)"): the mean over the
    // zeroed and random arms, the placebos that keep only the cache's presence; other placebos do not join it
    for (auto a : {r.of(arm_kind::zeroed), r.of(arm_kind::random)}) {
      if (a == audit_data::npos) continue;
      const std::size_t t[] = {a};
      if (no_comm != audit_data::npos &&
          detail::collect_pairs(d, t, no_comm, in_regime(audit_regime::need)).pairs() > 0) {
        present.push_back(a);
        present_names.append(present_names.empty() ? "" : ",").append(d.arm_label[a]);
      }
    }
    struct part {
      const char* name;
      std::vector<std::size_t> treated;
      std::size_t control;
      std::string treated_label;
    };
    std::vector<part> parts;
    if (!present.empty()) {
      parts.push_back(
          {"presence", present, no_comm, present.size() == 1 ? present_names : "{" + present_names + "}"});
    } else {
      warn.push_back(
          "decomposition: presence not estimable (no zeroed or random arm paired with no_comm in need)");
    }
    if (kv_full != audit_data::npos && pairing != audit_data::npos) {
      parts.push_back({"pairing", {kv_full}, pairing, d.arm_label[kv_full]});
    } else {
      warn.push_back(
          fmt::format("decomposition: pairing not estimable (kv_full or {} absent)", pairing_name));
    }
    if (kv_full != audit_data::npos && text_full != audit_data::npos) {
      parts.push_back({"content", {kv_full}, text_full, d.arm_label[kv_full]});
    } else {
      warn.push_back("decomposition: content not estimable (kv_full or text_full absent)");
    }
    for (const auto& pt : parts) {
      auto p = detail::collect_pairs(d, pt.treated, pt.control, in_regime(audit_regime::need));
      if (p.pairs() == 0) {
        warn.push_back(fmt::format("decomposition: {} has no need-regime pairs", pt.name));
        continue;
      }
      paired_effect e{.id = std::string("need:") + pt.name,
                      .treated = pt.treated_label,
                      .control = d.arm_label[pt.control],
                      .regime = "need"};
      const std::string ci_part =
          fill_effect(e, p,
                      detail::missing_outcome_bounds(d, pt.treated, pt.control, in_regime(audit_regime::need),
                                                     o.alpha, d.horizon_of(audit_regime::need)));
      e.method = fmt::format("{}; {}; {}; Holm over the decomposition",
                             p.single_arm
                                 ? "mean over items of the item mean paired difference"
                                 : "mean over items of the item mean of (mean of the placebo arms − no_comm)",
                             ci_part, verdict_text);
      out.decomposition.push_back(std::move(e));
    }
    std::vector<double> p;
    for (const auto& e : out.decomposition) p.push_back(e.p_value);
    const auto adj = p_adjust(p, p_adjust_method::holm);
    for (std::size_t i = 0; i < adj.size(); ++i) out.decomposition[i].p_holm = adj[i];
  }
}

// A verdict rule on one view of a paired effect (estimate, verdict limits) with the effect's Holm
// p; p_exact: the view's one-sided exact McNemar p where the exact test decides (NaN elsewhere).
struct effect_rule_view {
  double estimate, low, high, p_holm;
  double p_exact = audit_nan;
};

// The views a finding's rule must agree on: the observed pairs, and with missing records both
// worst-case imputations (detail::missing_bounds).
LATENTAUDIT_INLINE std::vector<effect_rule_view> effect_views(const paired_effect& e) {
  std::vector<effect_rule_view> vs{{e.estimate, e.verdict_low, e.verdict_high, e.p_holm}};
  if (e.missing.any()) {
    const auto& lo = e.missing.low;
    const auto& hi = e.missing.high;
    vs.push_back({lo.estimate, lo.verdict_low, lo.verdict_high, e.p_holm});
    vs.push_back({hi.estimate, hi.verdict_low, hi.verdict_high, e.p_holm});
  }
  return vs;
}

// The exact McNemar views of a need-regime "beats" contrast (detail::exact_superiority_of over the
// effect's two arms; `applies` false when an arm is not in the table).
LATENTAUDIT_INLINE exact_superiority beats_exact(const audit_data& d, const paired_effect& e, double alpha) {
  const std::size_t ta = d.find_label(e.treated), ca = d.find_label(e.control);
  if (ta == audit_data::npos || ca == audit_data::npos) return {};
  const std::size_t tarm[] = {ta};
  return exact_superiority_of(
      d, tarm, ca, [&d](std::size_t u) { return d.unit_regime[u] == audit_regime::need; }, alpha,
      {.estimate = e.estimate, .verdict_low = e.verdict_low, .verdict_high = e.verdict_high}, e.missing);
}

// The rule and interval parts of a "beats" finding's method: which test decides its "yes"
// (`exact`: exact conditional McNemar at one pair per item; else the betting view), its "no" and
// where its interval's limits come from.
LATENTAUDIT_INLINE std::string beats_rule_text(bool sequence, bool exact, const audit_options& o,
                                               std::string_view verdict_text) {
  const std::string a = number_text(o.alpha);
  const std::string yes =
      sequence
          ? (exact ? fmt::format("yes: one-sided exact conditional McNemar p <= {} (one pair per item; a "
                                 "step of the decision's fixed sequence, tested at full alpha once the "
                                 "steps before it are shown)",
                                 a)
                   : fmt::format("yes: verdict lower limit > 0 (one-sided {}: a step of the decision's "
                                 "fixed sequence, tested at full alpha once the steps before it are shown)",
                                 a))
      : exact ? fmt::format(
                    "yes: Holm p < {} and estimate > 0, p exact conditional McNemar's two-sided (one pair "
                    "per item)",
                    a)
              : fmt::format("yes: Holm p < {} and estimate > 0", a);
  const std::string interval =
      exact ? fmt::format(
                  "interval: lower limit inverts one-sided exact McNemar at {} (max(0, betting lower limit) "
                  "where it rejects, else min(betting lower limit, 2 pi_L - 1), pi_L the Clopper-Pearson "
                  "lower limit of the discordant share), upper limit {}",
                  a, verdict_text)
            : fmt::format("interval: {}", verdict_text);
  return fmt::format("{}; no: verdict upper limit < margin {}; {}", yes, number_text(o.equivalence_margin),
                     interval);
}

// Whose mean a check decides (issue 52): with unequal seeds per item the mean over items and the
// mean over requests (items weighted by their pairs) can differ beyond the margin, so a claim that
// relay loses less than the margin must hold for both (the stricter): the value finding's "yes"
// (`value`) and the no-need finding's absence "no" need the request-weighted p at most α too, and
// the risk family reads the larger p. The headline says so once (`noted`).
LATENTAUDIT_INLINE void apply_request_weighted(finding& f, const paired_effect& e, bool value,
                                               const audit_options& o, std::vector<std::string>& headline,
                                               bool& noted) {
  if (!e.unequal_seeds) return;
  const double mm = o.equivalence_margin;
  auto pct = [](double x) { return fmt::format("{:.1f}", 100.0 * x); };
  const double pr = e.request_noninferiority_p;
  const bool shown = pr <= o.alpha;
  f.detail += fmt::format(
      "; seeds per item are unequal: mean over requests (items weighted by their seeds) {} points, "
      "one-sided "
      "p of a loss of {} points or more over requests {:.3g}{}",
      pct(e.request_estimate), pct(mm), pr, shown ? "" : " (not shown within the margin over requests)");
  f.method +=
      "; with unequal seeds per item decided on the mean over items and the mean over requests (the "
      "stricter)";
  if (!value && std::isfinite(f.noninferiority_p)) f.noninferiority_p = std::max(f.noninferiority_p, pr);
  const verdict absent_claim = value ? verdict::yes : verdict::no;
  if (f.answer == absent_claim && !shown) f.answer = verdict::inconclusive;
  if (!noted) {
    headline.push_back(
        "Seeds per item are unequal: the value and no-need harm checks decide both the mean over items and "
        "the mean over requests (items weighted by their seeds), the stricter.");
    noted = true;
  }
}

LATENTAUDIT_INLINE void audit_effect_findings(const audit_data& d, const role_index& r,
                                              const audit_options& o, audit_core& out) {
  const double level_tost = 1.0 - 2.0 * o.alpha;
  const std::string verdict_text = effect_verdict_text(o);
  const std::size_t no_comm = r.of(arm_kind::no_comm), text_full = r.of(arm_kind::text_full),
                    kv_full = r.of(arm_kind::kv_full);
  auto role_label = [&](std::size_t a, std::string_view fallback) {
    return a == audit_data::npos ? std::string(fallback) : d.arm_label[a];
  };
  auto effect_index = [&](std::string_view id) -> std::size_t {
    for (std::size_t i = 0; i < out.effects.size(); ++i)
      if (out.effects[i].id == id) return i;
    return audit_data::npos;
  };
  // ---- findings ----
  // Every effect finding decides on the 1 − 2α betting verdict interval [L, U] (reported as its
  // ci_low / ci_high) and the Holm-adjusted betting p-value; docs/audit-report.md "Findings".
  auto absent = [&](finding_key key, std::string why, std::vector<arm_cell> reads) {
    out.findings.push_back({.id = key.id(),
                            .answer = verdict::inconclusive,
                            .estimate = audit_nan,
                            .ci_low = audit_nan,
                            .ci_high = audit_nan,
                            .method = "not estimable",
                            .n = 0,
                            .detail = std::move(why),
                            .reads = std::move(reads),
                            .key = std::move(key)});
  };
  auto pct = [](double x) { return fmt::format("{:.1f}", 100.0 * x); };
  const double mm = o.equivalence_margin;
  const std::string vlevel = detail::percent(level_tost);
  auto vci = [&](const paired_effect& e) {
    return fmt::format("{}% verdict interval {} to {}", vlevel, pct(e.verdict_low), pct(e.verdict_high));
  };
  // Looks the contrast up; absent: an inconclusive finding with n = 0 and nullptr.
  auto lookup = [&](const finding_key& id, const std::string& regime, const std::string& treated,
                    const std::string& control) -> const paired_effect* {
    const std::string eid = regime + ":" + treated + "-" + control;
    const std::size_t i = effect_index(eid);
    if (i != audit_data::npos) return &out.effects[i];
    absent(id,
           fmt::format("the contrast {} has no pairs (an arm is absent from the records or the regime)", eid),
           {{regime, treated}, {regime, control}});
    return nullptr;
  };
  using rule_view = effect_rule_view;
  // Under missing records the rule must give the same verdict on the observed pairs and on both
  // worst-case imputations, else the finding is inconclusive; the finding's interval is then the
  // union of the observed verdict interval and the bounds' outer limits.
  auto decide_views = [&](std::span<const rule_view> vs, const auto& rule) {
    const verdict v = rule(vs[0]);
    for (const auto& x : vs.subspan(1))
      if (rule(x) != v) return verdict::inconclusive;
    return v;
  };
  auto decide_with_bounds = [&](const paired_effect& e, const auto& rule) {
    const auto vs = effect_views(e);
    return decide_views(vs, rule);
  };
  // `views`: the views the verdict was decided on, when their limits are not the effect's betting
  // verdict limits (the exact test's lower limits)
  auto push = [&](finding_key id, verdict v, const paired_effect& e, std::string method, std::string why,
                  verdict complete, std::span<const rule_view> views = {}) {
    double lo = views.empty() ? e.verdict_low : views[0].low, hi = e.verdict_high;
    if (e.missing.any()) {
      lo = std::min(lo, views.size() > 1 ? views[1].low : e.missing.low.verdict_low);
      hi = std::max(hi, e.missing.high.verdict_high);
      why += fmt::format(
          "; {} unit(s) lack a record of {} or {} (missing or failed relays not recorded): worst-case bounds "
          "{} to {} points (missing {} wrong and {} right: {} points; the reverse: {} points){}",
          e.missing.units, e.treated, e.control, pct(lo), pct(hi), e.treated, e.control,
          pct(e.missing.low.estimate), pct(e.missing.high.estimate),
          v == complete ? std::string(", the verdict holds under both")
                        : fmt::format(", and the verdict the observed pairs give ({}) can flip under them: "
                                      "inconclusive",
                                      verdict_name(complete)));
      method +=
          "; missing records: decided on the worst-case bounds (the verdict must hold with every missing "
          "treated outcome wrong and control right, and with the reverse)";
    }
    out.findings.push_back({.id = id.id(),
                            .answer = v,
                            .estimate = e.estimate,
                            .ci_low = lo,
                            .ci_high = hi,
                            .method = std::move(method),
                            .n = e.n_pairs,
                            .detail = std::move(why),
                            .reads = {{e.regime, e.treated}, {e.regime, e.control}},
                            .key = std::move(id)});
    detail::set_minimum_detectable(out.findings.back(), e.item_diffs);
  };
  // "beats": yes = shown greater than 0; no = U < m (a benefit of m or more excluded). A step of the
  // decision's fixed sequence (`sequence`: the positive control, dependency) is shown by its verdict
  // lower limit L > 0 (one-sided α: full α, the sequence gate of apply_positive_control and decide()
  // keeps the familywise error); any other "beats" finding by Holm p < α with a positive estimate.
  auto beats_finding = [&](finding_key id, const std::string& treated, const std::string& control,
                           bool sequence) {
    const auto* e = lookup(id, "need", treated, control);
    if (e == nullptr) return;
    // One pair per item (one seed per item, one treated arm): exact conditional McNemar decides
    // "yes" (the sequence steps: its one-sided p at α; the Holm members: its two-sided p, already in
    // e->p_holm), and the lower limit is the one that inverts it (detail::exact_lower_limit), so the
    // interval and the verdict agree; the upper limit, and "no", stay the betting ones.
    std::vector<rule_view> views = effect_views(*e);
    const auto ex = beats_exact(d, *e, o.alpha);
    const bool exact = ex.applies && ex.missing == e->missing.any();
    if (exact) {
      const detail::exact_view* ev[] = {&ex.observed, &ex.low, &ex.high};
      for (std::size_t k = 0; k < views.size(); ++k) {
        views[k].low = ev[k]->lower;
        views[k].p_exact = ev[k]->p_above;
      }
    }
    auto shown = [&](const rule_view& x) {
      if (!sequence) return x.p_holm < o.alpha && x.estimate > 0;
      return exact ? x.p_exact <= o.alpha : x.low > 0.0;
    };
    auto rule = [&](const rule_view& x) {
      return shown(x) ? verdict::yes : x.high < mm ? verdict::no : verdict::inconclusive;
    };
    const verdict complete = rule(views[0]);
    const verdict v = decide_views(views, rule);
    const std::string p_text =
        sequence ? (exact ? fmt::format("a step of the decision's fixed sequence (full alpha, one-sided "
                                        "exact McNemar p = {:.3g}, {} vs {} discordant pairs)",
                                        ex.observed.p_above, ex.observed.up, ex.observed.down)
                          : std::string("a step of the decision's fixed sequence (full alpha, one-sided)"))
                 : fmt::format("Holm p = {:.3g}", e->p_holm);
    const std::string vtext =
        fmt::format("{}% verdict interval {} to {}", vlevel, pct(views[0].low), pct(e->verdict_high));
    std::string why;
    if (complete == verdict::yes) {
      why = fmt::format("{} beats {} by {} points ({}), {}", e->treated, e->control, pct(e->estimate), vtext,
                        p_text);
    } else if (complete == verdict::no) {
      why = fmt::format(
          "absence shown: a benefit of {} points or more is excluded (difference {} points, {} below {}), {}",
          pct(mm), pct(e->estimate), vtext, pct(mm), p_text);
    } else {
      const bool negative = sequence ? e->verdict_high < 0.0 : e->p_holm < o.alpha;
      why = fmt::format("difference {} points, {}{}; a benefit of {} points or more is not excluded ({})",
                        pct(e->estimate), p_text,
                        negative ? " (significant, negative)" : " (not significant)", pct(mm), vtext);
    }
    push(std::move(id), v, *e,
         fmt::format("{}; {}", beats_rule_text(sequence, exact, o, verdict_text), e->method), std::move(why),
         complete, views);
  };
  bool request_note = false;
  auto request_weighted = [&](finding& f, const paired_effect& e, bool value) {
    apply_request_weighted(f, e, value, o, out.headline, request_note);
  };
  const std::string kvl = role_label(kv_full, "kv_full"), ncl = role_label(no_comm, "no_comm"),
                    txl = role_label(text_full, "text_full");
  beats_finding({finding_kind::need_text_beats_no_comm}, txl, ncl, true);
  beats_finding({finding_kind::need_kv_beats_no_comm}, kvl, ncl, true);
  {
    const finding_key id{finding_kind::need_kv_noninferior_to_text};
    if (const auto* e = lookup(id, "need", kvl, txl)) {
      auto rule = [&](const rule_view& x) {
        return x.low > -mm ? verdict::yes : x.high < -mm ? verdict::no : verdict::inconclusive;
      };
      const verdict complete = rule({e->estimate, e->verdict_low, e->verdict_high, e->p_holm});
      const verdict v = decide_with_bounds(*e, rule);
      push(id, v, *e,
           fmt::format("non-inferiority by the one-sided {} bound: yes if verdict lower limit > -{}, no if "
                       "verdict upper limit < -{}; interval: {}",
                       number_text(o.alpha), number_text(mm), number_text(mm), verdict_text),
           fmt::format("{} − {} = {} points ({}), margin {} points: {}", kvl, txl, pct(e->estimate), vci(*e),
                       pct(mm),
                       complete == verdict::yes
                           ? (e->verdict_low > 0 ? "non-inferior, and superiority shown (lower limit > 0)"
                                                 : "non-inferior (lower limit above −margin)")
                       : complete == verdict::no ? "inferiority shown (upper limit below −margin)"
                                                 : "neither non-inferiority nor inferiority shown"),
           complete);
      request_weighted(out.findings.back(), *e, true);
    }
  }
  {
    const finding_key id{finding_kind::need_kv_equivalent_to_text};
    if (const auto* e = lookup(id, "need", kvl, txl)) {
      auto rule = [&](const rule_view& x) {
        return x.low > -mm && x.high < mm     ? verdict::yes
               : x.low >= mm || x.high <= -mm ? verdict::no
                                              : verdict::inconclusive;
      };
      const verdict complete = rule({e->estimate, e->verdict_low, e->verdict_high, e->p_holm});
      const verdict v = decide_with_bounds(*e, rule);
      push(id, v, *e,
           fmt::format(
               "TOST by interval inclusion: yes if the verdict interval lies inside ±{}, no if it lies "
               "entirely outside; interval: {}",
               number_text(mm), verdict_text),
           fmt::format("{} − {} = {} points ({}), margin ±{} points: {}", kvl, txl, pct(e->estimate), vci(*e),
                       pct(mm),
                       complete == verdict::yes ? "equivalent"
                       : complete == verdict::no
                           ? "not equivalent (interval outside the margin)"
                           : "neither equivalence nor a difference beyond the margin shown"),
           complete);
    }
  }
  // Each catalog row need.<arm>_beats_no_comm (the placebos' and cross_model's), in the catalog's
  // order: its subject's role against no_comm, inconclusive with n = 0 when no arm plays it. A new
  // placebo's finding is its catalog row.
  for (const auto& row : finding_catalog())
    if (row.pattern == need_beats_no_comm_pattern)
      beats_finding({row.kind}, role_label(r.of(row.subject), arm_kind_name(row.subject)), ncl, false);
  {
    const finding_key id{finding_kind::no_need_kv_changes_accuracy};
    if (const auto* e = lookup(id, "no_need", kvl, ncl)) {
      // yes: a change shown, with its sign, under every view; no: the interval inside ±margin
      auto rule = [&](const rule_view& x) {
        return x.p_holm < o.alpha           ? verdict::yes
               : x.low > -mm && x.high < mm ? verdict::no
                                            : verdict::inconclusive;
      };
      const verdict complete = rule({e->estimate, e->verdict_low, e->verdict_high, e->p_holm});
      verdict v = decide_with_bounds(*e, rule);
      if (v == verdict::yes && e->missing.any() &&
          ((e->missing.low.estimate < 0) != (e->missing.high.estimate < 0) ||
           (e->missing.low.estimate < 0) != (e->estimate < 0)))
        v = verdict::inconclusive;  // the sign of the change can flip under the missing records
      std::string why;
      if (e->p_holm < o.alpha) {
        why = fmt::format("relaying changes accuracy where B needs nothing: {} points ({}), Holm p = {:.3g}",
                          pct(e->estimate), vci(*e), e->p_holm);
      } else {
        const bool eq = e->verdict_low > -mm && e->verdict_high < mm;
        why = fmt::format(
            "difference {} points, not significant (Holm p = {:.3g}); {} {} the margin ±{} points",
            pct(e->estimate), e->p_holm, vci(*e), eq ? "inside" : "not inside", pct(mm));
      }
      push(id, v, *e,
           fmt::format("yes: Holm p < {} (either sign); no: verdict interval inside ±{}; interval: {}; {}",
                       number_text(o.alpha), number_text(mm), verdict_text, e->method),
           std::move(why), complete);
      // the decision's risk family reads the one-sided p of "relay costs the margin or more here"
      out.findings.back().noninferiority_p = detail::noninferiority_p(
          e->item_diffs, e->missing, mm, o.alpha, d.horizon_of(detail::regime_code(e->regime)));
      request_weighted(out.findings.back(), *e, false);
    }
  }
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_EFFECTS_INL_HPP
