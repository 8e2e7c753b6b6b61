// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/stale.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_STALE_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_STALE_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../stale.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace latentaudit {

namespace detail {

/// @brief How arm `a` answered on the stale units; `score` (if non-null) receives per item of the
/// classified records the mean of 1[stale] − 1[other wrong] (ascending item).
LATENTAUDIT_INLINE stale_answer_counts stale_counts(const audit_data& d,
                                                    std::span<const trial_record> records, std::size_t a,
                                                    std::vector<double>* score) {
  stale_answer_counts c;
  if (a == audit_data::npos) return c;
  c.arm = d.arm_label[a];
  std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
  double sum = 0.0, count = 0.0;
  auto flush = [&] {
    if (score != nullptr && count > 0.0) score->push_back(sum / count);
    sum = count = 0.0;
  };
  for (std::size_t u = 0; u < d.units(); ++u) {
    if (d.unit_regime[u] != audit_regime::stale) continue;
    const std::size_t i = d.record(u, a);
    if (i == audit_data::npos) continue;
    const auto& r = records[i];
    if (!r.stale_answer.has_value()) {
      ++c.unclassified;
      continue;
    }
    if (d.unit_cluster[u] != last) {  // units are sorted by item
      flush();
      last = d.unit_cluster[u];
    }
    ++c.classified;
    const bool stale = *r.stale_answer;
    const bool other = !stale && !r.correct;
    c.correct += r.correct && !stale ? 1 : 0;
    c.stale += stale ? 1 : 0;
    c.other_wrong += other ? 1 : 0;
    sum += (stale ? 1.0 : 0.0) - (other ? 1.0 : 0.0);
    count += 1.0;
  }
  flush();
  return c;
}

LATENTAUDIT_INLINE stale_analysis audit_stale(const audit_data& d, std::span<const trial_record> records,
                                              std::size_t kv_full, std::size_t text_full, std::size_t no_comm,
                                              double alpha, std::vector<std::string>& warnings) {
  stale_analysis s;
  for (auto g : d.unit_regime) s.units += g == audit_regime::stale ? 1 : 0;
  s.kv_vs_text =
      regime_contrast_of(d, kv_full, text_full, audit_regime::stale, "kv_full", "text_full", alpha);
  s.kv_vs_no_comm = regime_contrast_of(d, kv_full, no_comm, audit_regime::stale, "kv_full", "no_comm", alpha);
  s.text_vs_no_comm =
      regime_contrast_of(d, text_full, no_comm, audit_regime::stale, "text_full", "no_comm", alpha);
  std::vector<double> score;
  s.kv_answers = stale_counts(d, records, kv_full, &score);
  s.text_answers = stale_counts(d, records, text_full, nullptr);
  auto& e = s.stale_excess;
  e.treated = "stale value";
  e.control = "other wrong values";
  e.regime = "stale";
  e.id = "stale:" + (kv_full == audit_data::npos ? std::string("kv_full") : d.arm_label[kv_full]) +
         " stale-other_wrong";
  e.n_pairs = s.kv_answers.classified;
  if (!score.empty()) {
    fill_regime_contrast(e, score, alpha, d.horizon_of(audit_regime::stale));
    e.method = "per kv_full record in the stale regime: 1[stale value] - 1[other wrong value]; " + e.method;
  } else {
    e.method = "not estimable: no kv_full record of the stale regime carries stale_answer";
  }
  // An absent regime is no warning: the findings say "not tested" (older records have no stale regime).
  if (s.units > 0 && s.kv_answers.unclassified > 0) {
    warnings.push_back(fmt::format(
        "stale analysis: {} of {} kv_full stale-regime records carry no stale_answer; left out of {}",
        s.kv_answers.unclassified, s.kv_answers.unclassified + s.kv_answers.classified,
        finding_id(finding_kind::stale_kv_gives_stale_answer)));
  }
  return s;
}

}  // namespace detail

LATENTAUDIT_INLINE finding stale_worse_finding(const stale_analysis& s, double alpha, double margin) {
  const finding_key id{finding_kind::stale_kv_worse_than_text};
  const auto& c = s.kv_vs_text;
  if (s.units == 0)
    return detail::not_estimable_finding(
        id, "no unit of regime 'stale' in the records (the regime is missing)", detail::contrast_reads(c));
  if (!c.estimable())
    return detail::not_estimable_finding(
        id,
        fmt::format("the contrast {} has no pairs in the stale regime ({} or {} absent)", c.id, c.treated,
                    c.control),
        detail::contrast_reads(c));
  const verdict v = detail::worse_verdict(c, alpha, margin);
  const std::string lvl = fmt::format("{:g}", 100.0 * (1.0 - 2.0 * alpha));
  std::string why;
  if (v == verdict::yes)
    why = fmt::format(
        "relaying A's cache of the old document version loses to sending the current text: {} "
        "(Holm p = {:.3g}; {}% verdict interval)",
        detail::contrast_points(c.estimate, c.verdict_low, c.verdict_high), c.p_holm, lvl);
  else if (v == verdict::no)
    why = fmt::format(
        "a loss of {:.1f} points or more against the current text is excluded: {} ({}% verdict interval)",
        100.0 * margin, detail::contrast_points(c.estimate, c.verdict_low, c.verdict_high), lvl);
  else
    why = fmt::format("neither a loss nor its absence (within {:.1f} points) is shown: {} (Holm p = {:.3g})",
                      100.0 * margin, detail::contrast_points(c.estimate, c.verdict_low, c.verdict_high),
                      c.p_holm);
  return detail::risk_finding(id, v, c, "stale", std::move(why), margin, alpha);
}

LATENTAUDIT_INLINE finding stale_answer_finding(const stale_analysis& s, double alpha, double margin) {
  const finding_key id{finding_kind::stale_kv_gives_stale_answer};
  const auto& c = s.stale_excess;
  const auto& k = s.kv_answers;
  std::vector<arm_cell> reads{{"stale", k.arm.empty() ? std::string("kv_full") : k.arm}};
  if (s.units == 0)
    return detail::not_estimable_finding(
        id, "no unit of regime 'stale' in the records (the regime is missing)", reads);
  if (k.arm.empty()) return detail::not_estimable_finding(id, "kv_full is absent from the records", reads);
  if (!c.estimable())
    return detail::not_estimable_finding(
        id,
        fmt::format("none of kv_full's {} stale-regime records carries stale_answer (the field is null)",
                    k.unclassified),
        reads);
  verdict v = verdict::inconclusive;
  if (c.p_holm < alpha && c.estimate > 0.0)
    v = verdict::yes;
  else if (c.verdict_high < margin)
    v = verdict::no;
  const double n = static_cast<double>(k.classified);
  const std::string shares = fmt::format(
      "of {} classified kv_full answers {:.1f} % gave the stale value, {:.1f} % another wrong value, {:.1f} "
      "% "
      "the current value{}",
      k.classified, 100.0 * static_cast<double>(k.stale) / n, 100.0 * static_cast<double>(k.other_wrong) / n,
      100.0 * static_cast<double>(k.correct) / n,
      s.text_answers.classified > 0
          ? fmt::format(" (text_full: {:.1f} % stale)", 100.0 * static_cast<double>(s.text_answers.stale) /
                                                            static_cast<double>(s.text_answers.classified))
          : std::string());
  const std::string sc = detail::contrast_points(c.estimate, c.verdict_low, c.verdict_high);
  std::string why;
  if (v == verdict::yes)
    why = fmt::format(
        "the relay answers with the stale value more often than with every other wrong value together "
        "(stale minus other wrong: {}, Holm p = {:.3g}); {}",
        sc, c.p_holm, shares);
  else if (v == verdict::no)
    why = fmt::format("stale answers exceed other wrong answers by less than {:.1f} points: {}; {}",
                      100.0 * margin, sc, shares);
  else
    why = fmt::format("not shown either way: stale minus other wrong {} (Holm p = {:.3g}); {}", sc, c.p_holm,
                      shares);
  finding f{.id = id.id(),
            .answer = v,
            .estimate = c.estimate,
            .ci_low = c.verdict_low,
            .ci_high = c.verdict_high,
            .method = c.method + "; Holm over the relay-failure family",
            .n = k.classified,
            .detail = why,
            .reads = std::move(reads),
            .key = id};
  detail::set_minimum_detectable(f, c.items);
  return f;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_STALE_INL_HPP
