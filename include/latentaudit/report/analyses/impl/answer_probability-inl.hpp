// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/answer_probability.hpp (header-only mode includes this
// file; compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_ANSWER_PROBABILITY_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_ANSWER_PROBABILITY_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../answer_probability.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "../../../estimators/betting.hpp"
#include "../../../estimators/multiplicity.hpp"

namespace latentaudit::detail {

// The answer probability of record i, when it was measured.
LATENTAUDIT_INLINE std::optional<double> answer_probability(std::span<const trial_record> records,
                                                            std::size_t i) {
  if (i == audit_data::npos || !records[i].answer_logprob) return std::nullopt;
  return std::clamp(std::exp(*records[i].answer_logprob), 0.0, 1.0);
}

LATENTAUDIT_INLINE std::optional<double> likelihood_value(likelihood_field field,
                                                          std::span<const trial_record> records,
                                                          std::size_t i) {
  if (field == likelihood_field::answer_logprob) return answer_probability(records, i);
  if (i == audit_data::npos) return std::nullopt;
  if (field == likelihood_field::correct) return records[i].correct ? 1.0 : 0.0;
  if (!records[i].continuation_prob) return std::nullopt;
  return std::clamp(*records[i].continuation_prob, 0.0, 1.0);
}

LATENTAUDIT_INLINE bool records_measure(likelihood_field field, std::span<const trial_record> records) {
  return std::any_of(records.begin(), records.end(), [&](const trial_record& r) {
    return field == likelihood_field::answer_logprob      ? r.answer_logprob.has_value()
           : field == likelihood_field::continuation_prob ? r.continuation_prob.has_value()
                                                          : true;
  });
}

// treated − control on p over the need regime's units: the observed pairs, and, where a unit of the
// regime lacks either record or its value, the two worst-case imputations (low: a missing
// treated p is 0 and a missing control p is 1; high: the reverse), each as item means in ascending
// item order. Claim: mean > theta0.
LATENTAUDIT_INLINE probability_contrast probability_contrast_of(const audit_data& d,
                                                                std::span<const trial_record> records,
                                                                std::size_t t, std::size_t c, std::string id,
                                                                double theta0, double alpha,
                                                                likelihood_field field) {
  probability_contrast out;
  out.id = std::move(id);
  out.treated = t == audit_data::npos ? "" : d.arm_label[t];
  out.control = c == audit_data::npos ? "" : d.arm_label[c];
  if (t == audit_data::npos || c == audit_data::npos) return out;
  std::vector<double> obs, lo, hi;
  double so = 0, sl = 0, sh = 0, no = 0, nv = 0;
  std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
  auto flush = [&] {
    if (no > 0) obs.push_back(so / no);
    if (nv > 0) {
      lo.push_back(sl / nv);
      hi.push_back(sh / nv);
    }
    so = sl = sh = no = nv = 0;
  };
  for (std::size_t u = 0; u < d.units(); ++u) {
    if (d.unit_regime[u] != audit_regime::need) continue;
    if (!d.scheduled(u, t) || !d.scheduled(u, c)) continue;  // never run: not a missing record
    if (d.unit_cluster[u] != last) {
      flush();
      last = d.unit_cluster[u];
    }
    const auto pt = likelihood_value(field, records, d.record(u, t));
    const auto pc = likelihood_value(field, records, d.record(u, c));
    if (pt && pc) {
      so += *pt - *pc;
      no += 1;
      ++out.n_pairs;
    } else {
      ++out.imputed;
    }
    sl += pt.value_or(0.0) - pc.value_or(1.0);
    sh += pt.value_or(1.0) - pc.value_or(0.0);
    nv += 1;
  }
  flush();
  out.n_items = obs.size();
  if (obs.empty()) return out;
  const betting_options bo{
      .alpha_lower = alpha, .alpha_upper = alpha, .horizon = d.horizon_of(audit_regime::need)};
  const auto v = bounded_mean_interval(obs, -1.0, 1.0, bo);
  out.estimate = v.estimate;
  out.verdict_low = v.low;
  out.verdict_high = v.high;
  out.p_value = bounded_mean_p_value_above(obs, -1.0, 1.0, theta0, alpha, bo.truncation, bo.horizon);
  if (out.imputed > 0) {
    out.verdict_low = std::min(out.verdict_low, bounded_mean_interval(lo, -1.0, 1.0, bo).low);
    out.verdict_high = std::max(out.verdict_high, bounded_mean_interval(hi, -1.0, 1.0, bo).high);
    out.p_value = std::max(
        out.p_value, bounded_mean_p_value_above(lo, -1.0, 1.0, theta0, alpha, bo.truncation, bo.horizon));
  }
  out.items = std::move(obs);
  return out;
}

// "answer probability" -> "answer-probability" (the family's name in the method text).
inline std::string hyphenated(std::string_view noun) {
  std::string s(noun);
  std::replace(s.begin(), s.end(), ' ', '-');
  return s;
}

LATENTAUDIT_INLINE std::vector<finding> likelihood_findings(const likelihood_endpoint& e, const audit_data& d,
                                                            std::span<const trial_record> records,
                                                            const role_index& r, double alpha,
                                                            double margin) {
  struct spec {
    finding_kind kind;
    std::size_t treated, control;
    std::string_view treated_role;
    std::string_view control_role;
    double theta0;     // the claim: mean > theta0
    double no_below;   // "no": the verdict upper limit below this
    std::string what;  // the question, in words
  };
  const spec specs[] = {
      {e.raises, r.of(arm_kind::kv_full), r.of(arm_kind::no_comm), "kv_full", "no_comm", 0.0, margin,
       fmt::format("the relay raises {} (dependency, {})", e.what, e.ordinal)},
      {e.noninferior, r.of(arm_kind::kv_full), r.of(arm_kind::text_full), "kv_full", "text_full", -margin,
       -margin,
       fmt::format("the relay's {} is not lower than text's by the margin (value, {})", e.noun, e.ordinal)},
      {e.pairing, r.of(arm_kind::kv_full), r.of(pairing_placebo_kind()), "kv_full",
       arm_kind_name(pairing_placebo_kind()), 0.0, margin,
       fmt::format("the right item's cache raises the {} over another item's (pairing, {})", e.noun,
                   e.ordinal)},
  };
  std::vector<probability_contrast> cs;
  for (const auto& s : specs)
    cs.push_back(probability_contrast_of(d, records, s.treated, s.control, finding_id(s.kind), s.theta0,
                                         alpha, e.field));
  // Holm over the endpoint's family (the contrasts with items)
  std::vector<double> p;
  std::vector<std::size_t> in;
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (cs[i].n_items > 0) {
      p.push_back(cs[i].p_value);
      in.push_back(i);
    }
  const auto adj = p_adjust(p, p_adjust_method::holm);
  for (std::size_t k = 0; k < adj.size(); ++k) cs[in[k]].p_holm = adj[k];
  const std::string lvl = fmt::format("{:g}", 100.0 * (1.0 - 2.0 * alpha));
  std::vector<finding> out;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const auto& s = specs[i];
    const auto& c = cs[i];
    std::vector<arm_cell> reads{{"need", c.treated.empty() ? std::string(s.treated_role) : c.treated},
                                {"need", c.control.empty() ? std::string(s.control_role) : c.control}};
    if (c.treated.empty() || c.control.empty()) {
      out.push_back(not_estimable_finding(
          {s.kind},
          fmt::format("no {} arm in the records", c.treated.empty() ? s.treated_role : s.control_role),
          std::move(reads)));
      continue;
    }
    if (c.n_items == 0) {
      out.push_back(not_estimable_finding(
          {s.kind},
          fmt::format("no need-regime unit holds {} for both {} and {} (the records do not measure "
                      "it: null or absent)",
                      e.field_name, c.treated, c.control),
          std::move(reads)));
      continue;
    }
    const verdict v = c.p_holm <= alpha             ? verdict::yes
                      : c.verdict_high < s.no_below ? verdict::no
                                                    : verdict::inconclusive;
    const std::string pts = contrast_points(c.estimate, c.verdict_low, c.verdict_high);
    std::string why = fmt::format(
        "{} − {} in {} = {} ({}% verdict interval), one-sided p of mean <= {:g} = {:.3g}, "
        "Holm {:.3g}: ",
        c.treated, c.control, e.symbol, pts, lvl, s.theta0, c.p_value, c.p_holm);
    why += v == verdict::yes ? "shown"
           : v == verdict::no
               ? (s.theta0 < 0 ? "inferiority beyond the margin shown"
                               : fmt::format("a rise of {:.1f} points or more is excluded", 100.0 * margin))
               : "neither shown";
    if (c.imputed > 0)
      why += fmt::format(
          "; {} need-regime unit(s) lack a record or its {}: decided on the worst-case bounds (a "
          "missing {} probability 0 and {} 1, and the reverse)",
          c.imputed, e.field_name, c.treated, c.control);
    out.push_back({.id = finding_id(s.kind),
                   .answer = v,
                   .estimate = c.estimate,
                   .ci_low = c.verdict_low,
                   .ci_high = c.verdict_high,
                   .method = fmt::format("{}: mean over {} items of the item mean difference of "
                                         "{}; {}% verdict interval: betting "
                                         "over items; yes: one-sided betting p "
                                         "of mean <= {:g}, Holm over the 3 {} findings, <= "
                                         "{:g}; no: verdict upper limit < {:g}",
                                         s.what, c.n_items, e.measure, lvl, s.theta0, hyphenated(e.noun),
                                         alpha, s.no_below),
                   .n = c.n_pairs,
                   .detail = std::move(why),
                   .reads = std::move(reads),
                   .key = {s.kind}});
    detail::set_minimum_detectable(out.back(), c.items);
  }
  return out;
}

LATENTAUDIT_INLINE std::vector<finding> answer_probability_findings(const audit_data& d,
                                                                    std::span<const trial_record> records,
                                                                    const role_index& r, double alpha,
                                                                    double margin) {
  return likelihood_findings(answer_probability_endpoint, d, records, r, alpha, margin);
}

LATENTAUDIT_INLINE std::vector<finding> continuation_probability_findings(
    const audit_data& d, std::span<const trial_record> records, const role_index& r, double alpha,
    double margin) {
  if (!records_measure(likelihood_field::continuation_prob, records)) return {};
  return likelihood_findings(continuation_probability_endpoint, d, records, r, alpha, margin);
}

// The finding of kind `k` (no parameters) among `fs`, or null.
inline const finding* likelihood_finding_of(std::span<const finding> fs, finding_kind k) {
  const std::string id = finding_id(k);
  for (const auto& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

// The α-spending steps of need.kv_carries_information: the one-sided betting p (worst-case views
// for missing records) of kv_full − no_comm > 0 on each endpoint, at its own level.
struct carries_step {
  std::string endpoint;      // "accuracy" or the endpoint's noun
  std::string finding;       // the endpoint's own finding id
  double level = 0.0;        // the step's α
  double p = 1.0;            // its one-sided p (1 when not estimable)
  bool shown = false;        // p <= level (accuracy: and its finding "yes")
  bool finding_yes = false;  // the endpoint's own finding says "yes" (at its own level)
};

LATENTAUDIT_INLINE std::vector<carries_step> carries_steps(const audit_data& d,
                                                           std::span<const trial_record> records,
                                                           const role_index& r,
                                                           std::span<const finding> findings,
                                                           const finding& acc, double alpha) {
  std::vector<const likelihood_endpoint*> measured;
  for (const auto* e : likelihood_endpoints)
    if (records_measure(e->field, records)) measured.push_back(e);
  const double a_lik = measured.empty() ? 0.0 : alpha / 2.0 / static_cast<double>(measured.size());
  std::vector<carries_step> steps;
  auto step = [&](std::string name, std::string id, likelihood_field field, double level, bool own_yes) {
    const auto c = probability_contrast_of(d, records, r.of(arm_kind::kv_full), r.of(arm_kind::no_comm), id,
                                           0.0, level, field);
    carries_step s{std::move(name), std::move(id), level, 1.0, false, own_yes};
    if (c.n_items > 0 && std::isfinite(c.p_value)) s.p = c.p_value;
    s.shown = s.p <= level && (field != likelihood_field::correct || own_yes);
    steps.push_back(std::move(s));
  };
  const std::string acc_id = finding_id(finding_kind::need_kv_beats_no_comm);
  step("accuracy", acc_id, likelihood_field::correct, measured.empty() ? alpha : alpha / 2.0,
       acc.answer == verdict::yes);
  for (const auto* e : measured) {
    const finding* f = likelihood_finding_of(findings, e->raises);
    step(std::string(e->noun), finding_id(e->raises), e->field, a_lik,
         f != nullptr && f->answer == verdict::yes);
  }
  return steps;
}

LATENTAUDIT_INLINE finding carries_information_finding(const audit_data& d,
                                                       std::span<const trial_record> records,
                                                       const role_index& r, std::span<const finding> findings,
                                                       double alpha) {
  const finding_key key{finding_kind::need_kv_carries_information};
  const std::string acc_id = finding_id(finding_kind::need_kv_beats_no_comm);
  const finding* acc = likelihood_finding_of(findings, finding_kind::need_kv_beats_no_comm);
  const std::size_t kv = r.of(arm_kind::kv_full), nc = r.of(arm_kind::no_comm);
  if (acc == nullptr || acc->n == 0 || kv == audit_data::npos || nc == audit_data::npos)
    return not_estimable_finding(key, acc == nullptr ? acc_id + " is absent" : acc->detail,
                                 {{"need", kv == audit_data::npos ? "kv_full" : d.arm_label[kv]},
                                  {"need", nc == audit_data::npos ? "no_comm" : d.arm_label[nc]}});
  const auto steps = carries_steps(d, records, r, findings, *acc, alpha);
  finding f = *acc;
  f.id = key.id();
  f.key = key;
  f.noninferiority_p = std::numeric_limits<double>::quiet_NaN();
  const bool any_shown =
      std::any_of(steps.begin(), steps.end(), [](const carries_step& s) { return s.shown; });
  const bool lik_yes =
      std::any_of(steps.begin() + 1, steps.end(), [](const carries_step& s) { return s.finding_yes; });
  const bool alone = steps.size() == 1;
  f.answer = alone                                    ? acc->answer
             : any_shown                              ? verdict::yes
             : acc->answer == verdict::no && !lik_yes ? verdict::no
                                                      : verdict::inconclusive;
  std::string split, parts;
  for (const auto& s : steps) {
    split += fmt::format("{}{} at {:g}", split.empty() ? "" : ", ", s.endpoint, s.level);
    parts += fmt::format("{}{} ({}): one-sided p = {:.3g} at level {:g}, {}", parts.empty() ? "" : "; ",
                         s.endpoint, s.finding, s.p, s.level, s.shown ? "shown" : "not shown");
  }
  f.method = fmt::format(
      "the relay carries A's information: kv_full − no_comm > 0 on accuracy or on a likelihood endpoint the "
      "records measure, each in its own alpha-spending step (Bonferroni over the steps: {}); each step a "
      "one-sided betting p over items, worst-case bounds for missing records{}; yes: a step shows its rise "
      "(the accuracy step also needs {} yes); no: {} no and no likelihood finding shows a rise; the "
      "estimate and its {}% verdict interval are {}'s (accuracy)",
      split,
      alone ? " (no likelihood endpoint measured: " + acc_id + "'s verdict at full alpha)" : std::string(),
      acc_id, acc_id, fmt::format("{:g}", 100.0 * (1.0 - 2.0 * alpha)), acc_id);
  std::string why = parts + ": ";
  if (f.answer == verdict::yes) {
    why += "the relay carries A's information";
  } else if (f.answer == verdict::no) {
    why += alone ? "a benefit of the margin or more in accuracy is excluded (no likelihood endpoint measured)"
                 : "a benefit of the margin or more in accuracy is excluded and no likelihood endpoint shows "
                   "a rise";
  } else if (acc->answer == verdict::no && lik_yes) {
    why +=
        "accuracy's benefit of the margin or more is excluded, but a likelihood finding shows a rise at its "
        "own level that its step here does not reach: not shown either way (the relay may carry "
        "information accuracy does not show)";
  } else {
    why += "neither shown";
  }
  f.detail = std::move(why);
  return f;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_ANSWER_PROBABILITY_INL_HPP
