// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/answer_probability.hpp (header-only mode includes this
// file; compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_ANSWER_PROBABILITY_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_ANSWER_PROBABILITY_INL_HPP

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

// treated − control on p over the need regime's units: the observed pairs, and, where a unit of the
// regime lacks either record or its answer_logprob, the two worst-case imputations (low: a missing
// treated p is 0 and a missing control p is 1; high: the reverse), each as item means in ascending
// item order. Claim: mean > theta0.
LATENTAUDIT_INLINE probability_contrast probability_contrast_of(const audit_data& d,
                                                                std::span<const trial_record> records,
                                                                std::size_t t, std::size_t c, std::string id,
                                                                double theta0, double alpha) {
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
    const auto pt = answer_probability(records, d.record(u, t));
    const auto pc = answer_probability(records, d.record(u, c));
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

LATENTAUDIT_INLINE std::vector<finding> answer_probability_findings(const audit_data& d,
                                                                    std::span<const trial_record> records,
                                                                    const role_index& r, double alpha,
                                                                    double margin) {
  struct spec {
    const char* id;
    std::size_t treated, control;
    std::string_view treated_role;
    std::string_view control_role;
    double theta0;     // the claim: mean > theta0
    double no_below;   // "no": the verdict upper limit below this
    const char* what;  // the question, in words
  };
  const spec specs[] = {
      {"need.kv_raises_answer_probability", r.kv_full, r.no_comm, "kv_full", "no_comm", 0.0, margin,
       "the relay raises the probability B gives the reference answer (dependency, second endpoint)"},
      {"need.kv_answer_probability_noninferior_to_text", r.kv_full, r.text_full, "kv_full", "text_full",
       -margin, -margin,
       "the relay's answer probability is not lower than text's by the margin (value, second endpoint)"},
      {"need.pairing_raises_answer_probability", r.kv_full, r.pairing_placebo, "kv_full",
       arm_kind_name(pairing_placebo_kind()), 0.0, margin,
       "the right item's cache raises the answer probability over another item's (pairing, second endpoint)"},
  };
  std::vector<probability_contrast> cs;
  for (const auto& s : specs)
    cs.push_back(probability_contrast_of(d, records, s.treated, s.control, s.id, s.theta0, alpha));
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
          s.id, fmt::format("no {} arm in the records", c.treated.empty() ? s.treated_role : s.control_role),
          std::move(reads)));
      continue;
    }
    if (c.n_items == 0) {
      out.push_back(not_estimable_finding(
          s.id,
          fmt::format(
              "no need-regime unit holds answer_logprob for both {} and {} (the records do not measure "
              "it: null or absent)",
              c.treated, c.control),
          std::move(reads)));
      continue;
    }
    const verdict v = c.p_holm <= alpha             ? verdict::yes
                      : c.verdict_high < s.no_below ? verdict::no
                                                    : verdict::inconclusive;
    const std::string pts = contrast_points(c.estimate, c.verdict_low, c.verdict_high);
    std::string why = fmt::format(
        "{} − {} in P(reference answer) = {} ({}% verdict interval), one-sided p of mean <= {:g} = {:.3g}, "
        "Holm {:.3g}: ",
        c.treated, c.control, pts, lvl, s.theta0, c.p_value, c.p_holm);
    why += v == verdict::yes ? "shown"
           : v == verdict::no
               ? (s.theta0 < 0 ? "inferiority beyond the margin shown"
                               : fmt::format("a rise of {:.1f} points or more is excluded", 100.0 * margin))
               : "neither shown";
    if (c.imputed > 0)
      why += fmt::format(
          "; {} need-regime unit(s) lack a record or its answer_logprob: decided on the worst-case bounds (a "
          "missing {} probability 0 and {} 1, and the reverse)",
          c.imputed, c.treated, c.control);
    out.push_back({.id = s.id,
                   .answer = v,
                   .estimate = c.estimate,
                   .ci_low = c.verdict_low,
                   .ci_high = c.verdict_high,
                   .method = fmt::format("{}: mean over {} items of the item mean difference of "
                                         "exp(answer_logprob) (the probability of the "
                                         "reference answer's first token); {}% verdict interval: betting "
                                         "over items; yes: one-sided betting p "
                                         "of mean <= {:g}, Holm over the 3 answer-probability findings, <= "
                                         "{:g}; no: verdict upper limit < {:g}",
                                         s.what, c.n_items, lvl, s.theta0, alpha, s.no_below),
                   .n = c.n_pairs,
                   .detail = std::move(why),
                   .reads = std::move(reads)});
    detail::set_minimum_detectable(out.back(), c.items);
  }
  return out;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_ANSWER_PROBABILITY_INL_HPP
