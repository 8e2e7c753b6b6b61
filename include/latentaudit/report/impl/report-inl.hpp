// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/report.hpp (header-only mode includes this file; compiled mode compiles
// it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_IMPL_REPORT_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_REPORT_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "../../core/error.hpp"
#include "../detail/core_sections.hpp"
#include "../detail/decision_sections.hpp"
#include "../detail/failure_report.hpp"
#include "../detail/report_sections.hpp"
#include "../html.hpp"

namespace latentaudit {

[[nodiscard]] LATENTAUDIT_INLINE audit_report build_audit_report(std::span<const trial_record> records,
                                                                 const audit_options& o) {
  audit_report r;
  r.options = o;
  // The arm roles are resolved once (by label, then arm_kind) and every analysis gets the same labels.
  std::vector<std::string> role_warnings;
  const auto roles = detail::resolve_arm_roles(records, role_warnings);
  auto label = [](const std::string& resolved, const char* role) {
    return resolved.empty() ? std::string(role) : resolved;
  };
  const std::string kv = label(roles.of(arm_kind::kv_full), "kv_full"),
                    nc = label(roles.of(arm_kind::no_comm), "no_comm"),
                    tx = label(roles.of(arm_kind::text_full), "text_full");
  // the report's one table: every arm's records grouped by (item, seed) once, here; every analysis
  // below reads its arms' columns (options' `units`)
  detail::unit_records units;
  r.core = detail::analyse_records_with_roles(records, o, roles, role_warnings, &units);
  observational_options oo;
  oo.units = &units;
  oo.relay_arm = kv;
  oo.control_arm = nc;
  oo.level = 1.0 - o.alpha;
  oo.bootstrap_replicates = o.bootstrap_replicates;
  if (o.demonstrations) {
    r.observational = observational_analysis(records, oo);
  } else {
    r.observational.log.missing = r.observational.rollout.missing =
        "skipped: audit_options.demonstrations is false";
  }
  cost_options co;
  co.units = &units;
  co.relay_arm = kv;
  co.text_arm = tx;
  co.margin = o.equivalence_margin;
  // an audit looked at `looks` times (--until-decided): the latency bootstrap, which is no
  // confidence sequence, at α/looks (a union bound over the looks); the betting limits as sequences
  co.level = 1.0 - o.alpha / static_cast<double>(o.looks);
  co.bootstrap_replicates = o.bootstrap_replicates;
  co.alpha = o.alpha;
  co.horizon = detail::horizon_of(o, "need");  // the cost's accuracy and SLO limits: need items
  co.latency_slo_s = o.latency_slo_s;
  co.prefill_tokens_per_s = o.prefill_tokens_per_s;
  // relays over a real link: the fitted link, and with --link measured the cost verdicts' link
  r.link_fit = fit_link(records, link_fit_options{.level = 1.0 - o.alpha});
  r.link_rows = link_by_arm(records, r.link_fit);
  if (o.link_measured) {
    if (!r.link_fit.ok() || !(r.link_fit.seconds_per_byte.ci_high > 0))
      detail::throw_invalid(
          "build_audit_report", "options.link_measured",
          "needs a fitted link, but " +
              (r.link_fit.ok() ? std::string("the slope's interval is at or below 0") : r.link_fit.missing));
    co.links = link_presets();
    co.links.push_back(r.link_fit.as_link("measured"));
    co.primary_link = "measured";
  }
  r.cost = cost_benefit_analysis(records, co);
  relay_gate_options go;
  go.units = &units;
  go.relay_arm = kv;
  go.control_arm = nc;
  go.text_arm = tx;
  for (std::size_t i = 1; i < r.core.drift.benefit.size(); ++i)  // drifted senders: more requests
    go.extra_relay_arms.push_back(r.core.drift.benefit[i].arm);
  go.margin = o.equivalence_margin;
  go.alpha = o.alpha;
  go.horizon = o.horizon;
  go.level = 1.0 - o.alpha;
  go.bootstrap_replicates = o.bootstrap_replicates;
  if (o.relay_gate)
    r.gate = fit_relay_gate(records, go);
  else
    r.gate.missing = "skipped: audit_options.relay_gate is false";
  // The positive-control gate of the core findings covers the cost findings too.
  const finding* control = nullptr;
  for (const auto& f : r.core.findings)
    if (f.key.kind == finding_kind::need_text_beats_no_comm) control = &f;
  apply_positive_control(r.cost.findings, control);
  r.findings = r.core.findings;
  for (auto* fs : {&r.cost.findings, &r.gate.findings})
    r.findings.insert(r.findings.end(), fs->begin(), fs->end());
  // The observational coverage checks are true by construction: demonstrations, never gating findings.
  r.demonstrations = r.observational.findings;
  decision_options dopt;
  dopt.units = &units;
  dopt.relay_arm = kv;
  dopt.control_arm = nc;
  dopt.text_arm = tx;
  if (o.link_measured) dopt.link = "measured";
  dopt.margin = o.equivalence_margin;
  dopt.alpha = o.alpha;
  dopt.horizon = detail::horizon_of(o, "need");
  r.decision = decide(r.findings, records, dopt);
  // The decision's reason names what the records lack (the first sentence of its summary).
  // Without 'regime' nothing can pass and the field is the cause: it leads the summary; other
  // missing fields follow the summary's own first sentence.
  if (!r.core.missing_fields.empty() && !r.decision.relay_allowed) {
    std::string list;
    for (const auto& f : r.core.missing_fields) list.append(list.empty() ? "'" : ", '").append(f).append("'");
    const std::string why = fmt::format(
        "The records lack the field(s) {} that the decision's checks read (docs/records.md, \"What each "
        "analysis needs\"); the checks that read them cannot pass.",
        list);
    const bool no_regime = std::find(r.core.missing_fields.begin(), r.core.missing_fields.end(), "regime") !=
                           r.core.missing_fields.end();
    // Without 'regime' the positive control that follows fails for the field, not the task: said first.
    const std::string regime_why =
        " The decision needs 'regime' (need, no_need, stale or conflict) on every record and no record "
        "has it: no need-regime finding can be estimated, so the positive control and every check after "
        "it are inconclusive because of the missing field, not because of the task.";
    r.decision.summary =
        no_regime ? why + regime_why + " " + r.decision.summary : r.decision.summary + " " + why;
  }
  return r;
}

namespace detail {

LATENTAUDIT_INLINE std::string pct(double x) {
  return std::isfinite(x) ? fmt::format("{:.1f}", 100.0 * x) : "–";
}

LATENTAUDIT_INLINE std::string num(double x) { return std::isfinite(x) ? fmt::format("{:.4g}", x) : "–"; }

LATENTAUDIT_INLINE json_value jnum(double x) { return number_or_null(x); }

LATENTAUDIT_INLINE json_value strings_json(std::span<const std::string> v) {
  json_value a = json_value::array_type{};
  for (const auto& s : v) a.push_back(s);
  return a;
}

LATENTAUDIT_INLINE json_value jopt(const std::optional<double>& x) {
  return x && std::isfinite(*x) ? json_value(*x) : json_value(nullptr);
}

LATENTAUDIT_INLINE std::string md_escape(std::string s) {
  // every text from records, tasks or options goes through the one escaping (markdown_text.hpp)
  return markdown_text(s);
}

LATENTAUDIT_INLINE json_value estimate_json(const effect_estimate& e) {
  json_value j;
  j.set("method", e.method);
  j.set("estimate", jnum(e.estimate));
  j.set("ci_low", jnum(e.ci_low));
  j.set("ci_high", jnum(e.ci_high));
  j.set("std_error", jnum(e.std_error));
  return j;
}

LATENTAUDIT_INLINE std::string estimate_md(const effect_estimate& e) {
  return fmt::format("{} [{}, {}]", num(e.estimate), num(e.ci_low), num(e.ci_high));
}

}  // namespace detail

namespace detail {

// report.json's "decision" object.
LATENTAUDIT_INLINE json_value decision_json(const audit_report& r) {
  json_value dec;
  dec.set("verdict", decision_verdict_name(r.decision.verdict));
  dec.set("relay_allowed", r.decision.relay_allowed);
  dec.set("unverified", detail::strings_json(r.decision.unverified));
  dec.set("link", r.decision.link);
  dec.set("summary", r.decision.summary);
  {
    json_value pol = json_value::array_type{};
    for (const auto& p : r.decision.policy) pol.push_back(p);
    dec.set("policy", std::move(pol));
    // the policy as data (docs/policy.schema.json): each rule with its line, and their replay
    json_value rules = json_value::array_type{};
    for (std::size_t i = 0; i < r.decision.rules.size(); ++i)
      rules.push_back(policy_rule_json(r.decision.rules[i], i));
    dec.set("rules", std::move(rules));
    const policy_replay& pr = r.decision.replay;
    json_value rep;
    rep.set("requests", pr.requests);
    rep.set("resolved", pr.resolved);
    rep.set("relayed", pr.relayed);
    rep.set("correct", pr.correct);
    rep.set("accuracy", detail::number_or_null(pr.accuracy));
    rep.set("relay_share", detail::number_or_null(pr.relay_share));
    json_value by_rule = json_value::array_type{};
    for (const std::size_t n : pr.by_rule) by_rule.push_back(n);
    rep.set("by_rule", std::move(by_rule));
    rep.set("note", pr.note.empty() ? json_value() : json_value(pr.note));
    dec.set("policy_replay", std::move(rep));
    dec.set("relay_switch", detail::relay_switch_json(r.decision.relay_switch));
  }
  json_value cl = json_value::array_type{};
  for (const auto& c : r.decision.checklist) {
    json_value o;
    o.set("check", c.name);
    o.set("passed", verdict_name(c.passed));
    o.set("reason", c.reason);
    cl.push_back(std::move(o));
  }
  dec.set("checklist", std::move(cl));
  json_value mons = json_value::array_type{};
  for (const auto& m : r.decision.monitors) {
    json_value o;
    o.set("contrast", m.contrast);
    o.set("unit", m.unit);
    o.set("method", "betting_items");
    o.set("n", static_cast<double>(m.result.n));
    o.set("pairs", static_cast<double>(m.pairs));
    o.set("p_value", jnum(m.result.p_value));
    o.set("mean", jnum(m.result.mean));
    o.set("cs_low", m.result.ready ? jnum(m.result.ci_low) : json_value(nullptr));
    o.set("cs_high", m.result.ready ? jnum(m.result.ci_high) : json_value(nullptr));
    o.set("stop_at", m.stop_at ? json_value(static_cast<double>(*m.stop_at)) : json_value(nullptr));
    mons.push_back(std::move(o));
  }
  dec.set("monitors", std::move(mons));
  return dec;
}

// report.json's "observational" object.
LATENTAUDIT_INLINE json_value observational_json(const audit_report& r) {
  json_value obs;
  const auto& L = r.observational.log;
  json_value log;
  log.set("units", static_cast<double>(L.units));
  log.set("treated", static_cast<double>(L.treated));
  log.set("control", static_cast<double>(L.control));
  log.set("randomized", detail::estimate_json(L.randomized));
  log.set("naive", detail::estimate_json(L.naive));
  log.set("matching", detail::estimate_json(L.matching));
  log.set("ipw", detail::estimate_json(L.ipw));
  log.set("aipw", detail::estimate_json(L.aipw));
  log.set("missing", L.missing);
  obs.set("production_log", std::move(log));
  const auto& R = r.observational.rollout;
  json_value ro;
  ro.set("text_arm", R.text_arm);
  ro.set("units", static_cast<double>(R.units));
  ro.set("periods", static_cast<double>(R.periods));
  json_value drift = json_value::array_type{};
  for (double a : R.period_text_accuracy) drift.push_back(jnum(a));
  ro.set("period_text_accuracy", std::move(drift));
  ro.set("truth", detail::estimate_json(R.truth));
  ro.set("before_after", detail::estimate_json(R.before_after));
  ro.set("did", detail::estimate_json(R.did));
  ro.set("missing", R.missing);
  obs.set("rollout", std::move(ro));
  return obs;
}

// report.json's "gate" object.
LATENTAUDIT_INLINE json_value gate_json(const audit_report& r) {
  json_value gate;
  gate.set("missing", r.gate.missing);
  json_value feats = json_value::array_type{};
  for (const auto& f : r.gate.model.features) feats.push_back(f);
  gate.set("features", std::move(feats));
  auto gate_logistic = [](const relay_gate_logistic& m) {
    json_value o;
    json_value f = json_value::array_type{};
    for (const auto& name : m.features) f.push_back(name);
    o.set("features", std::move(f));
    json_value c = json_value::array_type{};
    for (double x : m.coefficients) c.push_back(jnum(x));
    o.set("coefficients", std::move(c));
    o.set("constant", jopt(m.constant));
    o.set("penalized", m.penalized);
    return o;
  };
  gate.set("rule", std::string("relay when P(helps | x) - P(hurts | x) > cost"));
  gate.set("helps", gate_logistic(r.gate.model.helps));
  gate.set("hurts", gate_logistic(r.gate.model.hurts));
  gate.set("cost", jnum(r.gate.model.cost));
  gate.set("penalized", r.gate.model.penalized);
  gate.set("relay_arm", r.gate.relay_arm);
  gate.set("fallback", r.gate.fallback);
  gate.set("requests", static_cast<double>(r.gate.requests));
  auto counts_json = [](const std::vector<gate_population_count>& counts, const char* key) {
    json_value a = json_value::array_type{};
    for (const auto& c : counts) {
      json_value o;
      o.set(key, c.name);
      o.set("requests", static_cast<double>(c.requests));
      a.push_back(std::move(o));
    }
    return a;
  };
  gate.set("requests_by_regime", counts_json(r.gate.requests_by_regime, "regime"));
  gate.set("extra_relay_requests", counts_json(r.gate.extra_relay_requests, "arm"));
  gate.set("population", r.gate.population);
  json_value dropped = json_value::array_type{};
  for (const auto& f : r.gate.dropped_features) dropped.push_back(f);
  gate.set("dropped_features", std::move(dropped));
  json_value excluded = json_value::array_type{};
  for (const auto& f : r.gate.excluded_features) excluded.push_back(f);
  gate.set("excluded_features", std::move(excluded));
  gate.set("folds", static_cast<double>(r.gate.folds));
  gate.set("held_out_items", static_cast<double>(r.gate.held_out_items));
  gate.set("held_out_units", static_cast<double>(r.gate.held_out_units));
  json_value pols = json_value::array_type{};
  for (const auto& p : r.gate.policies) {
    json_value o;
    o.set("policy", p.name);
    o.set("available", p.available);
    o.set("accuracy", detail::estimate_json(p.accuracy));
    o.set("bytes", detail::estimate_json(p.bytes));
    o.set("relay_rate", jnum(p.relay_rate));
    pols.push_back(std::move(o));
  }
  gate.set("policies", std::move(pols));
  gate.set("accuracy_vs_always_relay", detail::estimate_json(r.gate.accuracy_vs_always_relay));
  gate.set("skip_share", detail::estimate_json(r.gate.skip_share));
  gate.set("bytes_saved", detail::estimate_json(r.gate.bytes_saved));
  return gate;
}

// report.json "options": the levels and, for an audit stopped when decided, its horizon.
LATENTAUDIT_INLINE json_value options_json(const audit_options& o) {
  json_value opts;
  opts.set("alpha", o.alpha);
  opts.set("equivalence_margin", o.equivalence_margin);
  opts.set("noninferiority_margin", o.noninferiority_margin);
  opts.set("bootstrap_replicates", static_cast<double>(o.bootstrap_replicates));
  opts.set("seed", static_cast<double>(o.seed));
  if (o.horizon != 0) {  // --until-decided: the intervals are confidence sequences over these items
    opts.set("horizon_items", static_cast<double>(o.horizon));
    opts.set("looks", static_cast<double>(o.looks));
    json_value rh = json_value::object();  // the items each regime's intervals are tuned for
    for (const auto& [name, h] : o.regime_horizon) rh.set(name, static_cast<double>(h));
    opts.set("regime_horizon_items", std::move(rh));
    if (!o.schedule.empty()) opts.set("schedule", o.schedule.to_json());  // the arms stopped one by one
  }
  return opts;
}

}  // namespace detail

[[nodiscard]] LATENTAUDIT_INLINE json_value report_json(const audit_report& r) {
  using detail::jnum;
  using detail::jopt;
  json_value j;
  j.set("schema", "latentaudit.report/1");
  j.set("options", detail::options_json(r.options));
  j.set("records", static_cast<double>(r.core.n_records));
  j.set("items", static_cast<double>(r.core.n_items));
  j.set("seeds", static_cast<double>(r.core.n_seeds));
  json_value fs = json_value::array_type{};
  for (const auto& f : r.findings) fs.push_back(finding_to_json(f));
  j.set("findings", std::move(fs));
  // Teaching demonstrations (true by construction): same fields, never gated on.
  json_value demos = json_value::array_type{};
  for (const auto& f : r.demonstrations) demos.push_back(finding_to_json(f));
  j.set("demonstrations", std::move(demos));
  j.set("decision", detail::decision_json(r));
  {  // completeness: per arm and regime, what the records hold; the fields the decision lacks
    json_value comp;
    json_value rows = json_value::array_type{};
    for (const auto& c : r.core.completeness) {
      json_value o;
      o.set("arm", c.arm);
      o.set("regime", c.regime);
      o.set("units", static_cast<double>(c.units));
      o.set("records", static_cast<double>(c.records));
      o.set("missing", static_cast<double>(c.missing));
      o.set("relay_errors", static_cast<double>(c.relay_errors));
      if (!r.options.schedule.empty()) o.set("not_scheduled", static_cast<double>(c.not_scheduled));
      rows.push_back(std::move(o));
    }
    comp.set("arms", std::move(rows));
    comp.set("missing_fields", detail::strings_json(r.core.missing_fields));
    comp.set("warnings", detail::strings_json(r.core.input_warnings));
    // the design is the denominator: the units it lists that no record holds (null: no design given)
    comp.set("design_units_absent", r.core.design_given
                                        ? json_value(static_cast<double>(r.core.design_units_absent))
                                        : json_value());
    comp.set("headline", detail::strings_json(r.core.headline));
    j.set("completeness", std::move(comp));
  }
  json_value arms = json_value::array_type{};
  for (const auto& a : r.core.arms) {
    json_value o;
    o.set("arm", a.arm);
    o.set("arm_kind", a.arm_kind);
    o.set("regime", a.regime);
    o.set("n", static_cast<double>(a.n));
    o.set("n_items", static_cast<double>(a.n_items));
    o.set("accuracy", jnum(a.accuracy));
    o.set("ci_low", jnum(a.ci_low));
    o.set("ci_high", jnum(a.ci_high));
    o.set("mean_bytes", jnum(a.mean_bytes));
    o.set("mean_receiver_s", jnum(a.mean_receiver_s));
    o.set("mean_attention_mass", jopt(a.mean_attention_mass));
    o.set("mean_hidden_cosine", jopt(a.mean_hidden_cosine));
    o.set("mean_next_token_kl", jopt(a.mean_next_token_kl));
    arms.push_back(std::move(o));
  }
  j.set("arms", std::move(arms));
  auto effects_json = [&](const std::vector<paired_effect>& es) {
    json_value a = json_value::array_type{};
    for (const auto& e : es) {
      json_value o;
      o.set("id", e.id);
      o.set("treated", e.treated);
      o.set("control", e.control);
      o.set("regime", e.regime);
      o.set("n_pairs", static_cast<double>(e.n_pairs));
      o.set("n_clusters", static_cast<double>(e.n_clusters));
      o.set("estimate", jnum(e.estimate));
      o.set("ci_low", jnum(e.ci_low));
      o.set("ci_high", jnum(e.ci_high));
      o.set("verdict_low", jnum(e.verdict_low));
      o.set("verdict_high", jnum(e.verdict_high));
      o.set("p_value", jnum(e.p_value));
      o.set("p_holm", jnum(e.p_holm));
      o.set("in_holm_family", e.in_holm_family);
      o.set("in_decision_sequence", e.in_decision_sequence);
      o.set("missing", detail::missing_bounds_json(e.missing));
      o.set("method", e.method);
      a.push_back(std::move(o));
    }
    return a;
  };
  j.set("effects", effects_json(r.core.effects));
  j.set("decomposition", effects_json(r.core.decomposition));
  json_value cate = json_value::array_type{};
  for (const auto& c : r.core.cate) {
    json_value o;
    o.set("contrast", c.arm_pair);
    o.set("variable", c.variable);
    o.set("level", c.level);
    o.set("regime", c.regime);
    o.set("n", static_cast<double>(c.n));
    o.set("estimate", jnum(c.estimate));
    o.set("ci_low", jnum(c.ci_low));
    o.set("ci_high", jnum(c.ci_high));
    o.set("p_value", jnum(c.p_value));
    o.set("p_adjusted", jnum(c.p_adjusted));
    cate.push_back(std::move(o));
  }
  j.set("cate", std::move(cate));
  json_value noise;
  noise.set("curve", detail::dose_curve_json(r.core.noise.curve, "sigma"));
  noise.set("tolerance_sigma", jopt(r.core.noise.tolerance_sigma));
  noise.set("ci_low", jopt(r.core.noise.ci_low));
  noise.set("ci_high", jopt(r.core.noise.ci_high));
  noise.set("unbounded_fraction", jnum(r.core.noise.unbounded_fraction));
  noise.set("ci_from_betting_band", r.core.noise.ci_from_betting_band);
  noise.set("sigma_noninferior", jopt(r.core.noise.sigma_noninferior));
  noise.set("method", r.core.noise.method);
  j.set("noise", std::move(noise));
  j.set("relay_failures", detail::relay_failures_json(r.core));
  if (auto msg = detail::messages_json(r.core.messages); !msg.is_null()) j.set("messages", std::move(msg));
  if (auto mp = detail::mapped_json(r.core.mapped); !mp.is_null()) j.set("mapped", std::move(mp));
  json_value fr = json_value::array_type{};
  for (const auto& p : r.core.frontier) {
    json_value o;
    o.set("arm", p.arm);
    o.set("mean_bytes", jnum(p.mean_bytes));
    o.set("accuracy", jnum(p.accuracy));
    o.set("ci_low", jnum(p.ci_low));
    o.set("ci_high", jnum(p.ci_high));
    o.set("pareto", p.pareto);
    fr.push_back(std::move(o));
  }
  j.set("frontier", std::move(fr));
  j.set("observational", detail::observational_json(r));
  json_value cost = json_value::array_type{};
  for (const auto& l : r.cost.links) {
    json_value o;
    o.set("link", l.link.name);
    o.set("bandwidth_bytes_s", l.link.bandwidth_bytes_s);
    o.set("alpha_s", l.link.alpha_s);
    o.set("units", static_cast<double>(l.units));
    o.set("saved_s", detail::estimate_json(l.saved_s));
    o.set("extra_bytes", detail::estimate_json(l.extra_bytes));
    o.set("accuracy_difference", detail::estimate_json(l.accuracy_difference));
    o.set("latency_slo_s", jopt(l.latency_slo_s));
    o.set("slo_met_relay", jopt(l.slo_met_relay));
    o.set("slo_met_text", jopt(l.slo_met_text));
    if (l.slo_difference) o.set("slo_difference", detail::estimate_json(*l.slo_difference));
    o.set("reported", l.reported);
    o.set("break_even_region", break_even_region_name(l.region));
    o.set("break_even_bandwidth_bytes_s", jopt(l.break_even_bandwidth_bytes_s));
    o.set("break_even_extra_alpha_s", jopt(l.break_even_extra_alpha_s));
    o.set("pays", verdict_name(l.pays));
    cost.push_back(std::move(o));
  }
  j.set("cost", std::move(cost));
  {
    const auto& S = r.cost.sensitivity;
    json_value cs;
    cs.set("units", static_cast<double>(S.units));
    cs.set("items", static_cast<double>(S.items));
    cs.set("saved_without_transfer_s", detail::estimate_json(S.saved_without_transfer_s));
    cs.set("extra_bytes", detail::estimate_json(S.extra_bytes));
    cs.set("accuracy_difference", detail::estimate_json(S.accuracy_difference));
    cs.set("break_even_region", break_even_region_name(S.region));
    cs.set("break_even_bandwidth_bytes_s", jopt(S.break_even_bandwidth_bytes_s));
    cs.set("break_even_bandwidth_low", jopt(S.break_even_bandwidth_low));
    cs.set("break_even_bandwidth_high", jopt(S.break_even_bandwidth_high));
    cs.set("break_even_alpha_s", jopt(S.break_even_alpha_s));
    cs.set("break_even_alpha_low", jopt(S.break_even_alpha_low));
    cs.set("break_even_alpha_high", jopt(S.break_even_alpha_high));
    cs.set("pays", verdict_name(S.pays));
    cs.set("statement", S.statement);
    cs.set("timing_note", S.timing_note);
    cs.set("repeated_records", static_cast<double>(S.repeated_records));
    cs.set("run_to_run_cv_relay", jopt(S.run_to_run_cv_relay));
    cs.set("run_to_run_cv_text", jopt(S.run_to_run_cv_text));
    cs.set("primary_link", r.cost.primary_link);
    j.set("cost_sensitivity", std::move(cs));
    json_value proj = json_value::array_type{};
    for (const auto& p : r.cost.projection) {
      json_value o;
      o.set("model", p.model.name);
      o.set("kv_bytes_per_token", p.kv_bytes_per_token);
      o.set("prefill_tokens_per_s", p.prefill_tokens_per_s);
      o.set("break_even_bandwidth_bytes_s", p.break_even_bandwidth_bytes_s);
      json_value docs = json_value::object();
      for (const auto& [name, tokens] : p.break_even_doc_tokens) docs.set(name, jopt(tokens));
      o.set("break_even_doc_tokens", std::move(docs));
      proj.push_back(std::move(o));
    }
    j.set("cost_projection", std::move(proj));
  }
  if (r.link_fit.relays > 0 || r.link_fit.failed_relays > 0) {
    json_value lf = json_value::object();
    lf.set("relays", static_cast<double>(r.link_fit.relays));
    lf.set("distinct_sizes", static_cast<double>(r.link_fit.distinct_sizes));
    lf.set("failed_relays", static_cast<double>(r.link_fit.failed_relays));
    lf.set("missing", r.link_fit.missing);
    if (r.link_fit.ok()) {
      lf.set("alpha_s", detail::estimate_json(r.link_fit.alpha_s));
      lf.set("seconds_per_byte", detail::estimate_json(r.link_fit.seconds_per_byte));
      lf.set("bandwidth_bytes_s", jopt(std::isfinite(r.link_fit.bandwidth_bytes_s)
                                           ? std::optional<double>(r.link_fit.bandwidth_bytes_s)
                                           : std::nullopt));
      lf.set("bandwidth_low", jopt(r.link_fit.bandwidth_low));
      lf.set("bandwidth_high", jopt(r.link_fit.bandwidth_high));
    }
    json_value rows = json_value::array_type{};
    for (const auto& a : r.link_rows) {
      json_value o = json_value::object();
      o.set("arm", a.arm);
      o.set("relays", static_cast<double>(a.relays));
      o.set("failed", static_cast<double>(a.failed));
      o.set("mean_bytes", a.mean_bytes);
      o.set("mean_modeled_s", a.mean_modeled_s);
      o.set("mean_measured_s", a.mean_measured_s);
      o.set("median_measured_s", a.median_measured_s);
      o.set("mean_fitted_s",
            jopt(std::isfinite(a.mean_fitted_s) ? std::optional<double>(a.mean_fitted_s) : std::nullopt));
      rows.push_back(std::move(o));
    }
    lf.set("arms", std::move(rows));
    lf.set("used_by_cost", r.options.link_measured);
    j.set("link_fit", std::move(lf));
  }
  j.set("gate", detail::gate_json(r));
  json_value warns = json_value::array_type{};
  for (const auto& w : r.core.warnings) warns.push_back(w);
  j.set("warnings", std::move(warns));
  return j;
}

[[nodiscard]] LATENTAUDIT_INLINE std::vector<std::pair<std::string, std::string>> report_svgs(
    const audit_report& r) {
  std::vector<std::pair<std::string, std::string>> out;
  // the sections that carry figures, in the files' order
  const report_section sections[] = {
      detail::effects_section(r), detail::noise_section(r), detail::frontier_section(r),
      detail::relay_failures_section(r.core, r.options.equivalence_margin), detail::cost_section(r)};
  for (const auto& s : sections)
    for (const auto& b : s.blocks)
      if (const auto* f = std::get_if<report_figure>(&b))
        if (auto svg = svg_of(f->plot)) out.emplace_back(f->file, std::move(*svg));
  return out;
}

[[nodiscard]] LATENTAUDIT_INLINE std::string report_markdown(const audit_report& r) {
  using detail::num;
  using detail::pct;
  std::string m;
  auto line = [&](const std::string& s) { m.append(s).push_back('\n'); };
  m += markdown_of(detail::title_section(r));  // the title, the meta paragraph, an early stop
  // sections built once as the report's model (report_model.hpp), written as Markdown
  m += markdown_of(detail::decision_section(r));
  m += markdown_of(detail::findings_section(r));
  m += markdown_of(detail::accuracy_section(r));
  m += markdown_of(detail::effects_section(r));
  if (const auto s = detail::cate_section(r)) m += markdown_of(*s);
  m += markdown_of(detail::noise_section(r));
  m += markdown_of(detail::relay_failures_section(r.core, r.options.equivalence_margin));
  if (const auto s = detail::messages_section(r.core.messages, r.options.equivalence_margin))
    m += markdown_of(*s);
  if (const auto s = detail::mapped_section(r.core.mapped, r.options.equivalence_margin))
    m += markdown_of(*s);
  m += markdown_of(detail::frontier_section(r));
  m += markdown_of(detail::cost_section(r));
  if (const auto s = detail::link_fit_section(r)) m += markdown_of(*s);
  m += markdown_of(detail::gate_section(r));
  m += markdown_of(detail::demonstrations_section(r));
  if (const auto s = detail::warnings_section(r)) m += markdown_of(*s);
  line("Formulas, tests and references: docs/audit-report.md and docs/estimators/.");
  return m;
}

LATENTAUDIT_INLINE audit_report run_audit_report(std::span<const trial_record> records,
                                                 const audit_options& o, const std::filesystem::path& dir) {
  auto r = build_audit_report(records, o);
  // Written as a set: every file goes to a fresh temporary directory inside `dir` first, and only
  // when all of them are complete are they renamed into place; a failure (a full disk) removes
  // the temporary directory and leaves the previous report, or none, behind.
  std::vector<std::pair<std::string, std::string>> files;
  std::string md = report_markdown(r);
  if (const auto s = detail::unavailable_section(r, records)) md += markdown_of(*s);
  html_options ho;
  ho.tasks = o.tasks.get();
  ho.tasks_note = o.tasks_note;
  files.emplace_back("report.md", std::move(md));
  auto svgs = report_svgs(r);
  files.emplace_back("report.html", report_html(r, records, svgs, ho));
  std::string js;
  append_json(js, report_json(r), {.indent = 1});
  js.push_back('\n');
  files.emplace_back("report.json", std::move(js));
  for (auto& [name, svg] : svgs) files.emplace_back(name, std::move(svg));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    LATENTAUDIT_THROW(corrupt_data("run_audit_report: cannot create the report directory '" + dir.string() +
                                   "'" + (ec ? ": " + ec.message() : std::string())));
  std::filesystem::path tmp;
  for (int attempt = 0; attempt < 100 && tmp.empty(); ++attempt) {
    const auto t = dir / (".report.tmp." + std::to_string(attempt));
    if (std::filesystem::create_directory(t, ec) && !ec) tmp = t;
  }
  if (tmp.empty())
    LATENTAUDIT_THROW(corrupt_data("run_audit_report: cannot create a temporary directory in '" +
                                   dir.string() + "'" + (ec ? ": " + ec.message() : std::string())));
  try {
    for (const auto& [name, text] : files) {
      std::ofstream f(tmp / name, std::ios::binary | std::ios::trunc);
      f << text;
      f.flush();
      if (!f)
        LATENTAUDIT_THROW(
            corrupt_data("run_audit_report: cannot write '" + (dir / name).string() + "' (out of space?)"));
    }
    for (const auto& [name, text] : files) {
      std::filesystem::rename(tmp / name, dir / name, ec);
      if (ec)
        LATENTAUDIT_THROW(
            corrupt_data("run_audit_report: cannot write '" + (dir / name).string() + "': " + ec.message()));
    }
  } catch (...) {
    std::filesystem::remove_all(tmp, ec);
    throw;
  }
  std::filesystem::remove_all(tmp, ec);
  return r;
}

[[nodiscard]] LATENTAUDIT_INLINE json_value findings_summary(const audit_report& r) {
  json_value j = json_value::object_type{};
  for (const auto& f : r.findings) j.set(f.id, verdict_name(f.answer));
  return j;
}

[[nodiscard]] LATENTAUDIT_INLINE json_value decision_summary(const audit_report& r) {
  json_value j;
  j.set("verdict", decision_verdict_name(r.decision.verdict));
  j.set("relay_allowed", r.decision.relay_allowed);
  j.set("unverified", detail::strings_json(r.decision.unverified));
  j.set("link", r.decision.link);
  json_value c = json_value::object_type{};
  for (const auto& i : r.decision.checklist) c.set(i.name, verdict_name(i.passed));
  j.set("checklist", std::move(c));
  json_value pol = json_value::array_type{};  // the serving policy, one rule a line
  for (const auto& p : r.decision.policy) pol.push_back(p);
  j.set("policy", std::move(pol));
  return j;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_REPORT_INL_HPP
