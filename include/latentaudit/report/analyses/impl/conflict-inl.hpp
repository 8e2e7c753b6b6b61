// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/conflict.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_CONFLICT_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_CONFLICT_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../conflict.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "../../../estimators/betting.hpp"

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE attention_contrast attention_between(std::span<const double> conflict_items,
                                                        std::span<const double> need_items, double alpha,
                                                        std::size_t horizon) {
  attention_contrast a;
  a.conflict_items = conflict_items.size();
  a.need_items = need_items.size();
  if (conflict_items.empty() || need_items.empty()) {
    a.note = "unavailable on this engine: no kv_full record of the " +
             std::string(conflict_items.empty() ? "conflict" : "need") + " regime carries attention_mass";
    return a;
  }
  const betting_options bo{.alpha_lower = alpha / 4.0, .alpha_upper = alpha / 4.0, .horizon = horizon};
  const auto c = bounded_mean_interval(conflict_items, 0.0, 1.0, bo);
  const auto n = bounded_mean_interval(need_items, 0.0, 1.0, bo);
  a.available = true;
  a.conflict_mean = c.estimate;
  a.conflict_low = c.low;
  a.conflict_high = c.high;
  a.need_mean = n.estimate;
  a.need_low = n.low;
  a.need_high = n.high;
  a.difference = c.estimate - n.estimate;
  a.difference_low = c.low - n.high;
  a.difference_high = c.high - n.low;
  return a;
}

LATENTAUDIT_INLINE conflict_analysis audit_conflict(const audit_data& d,
                                                    std::span<const trial_record> records,
                                                    std::size_t kv_full, std::size_t text_full,
                                                    std::size_t no_comm, double alpha,
                                                    std::vector<std::string>& warnings) {
  conflict_analysis c;
  for (auto g : d.unit_regime) c.units += g == audit_regime::conflict ? 1 : 0;
  c.kv_vs_no_comm =
      regime_contrast_of(d, kv_full, no_comm, audit_regime::conflict, "kv_full", "no_comm", alpha);
  c.text_vs_no_comm =
      regime_contrast_of(d, text_full, no_comm, audit_regime::conflict, "text_full", "no_comm", alpha);
  c.kv_vs_text =
      regime_contrast_of(d, kv_full, text_full, audit_regime::conflict, "kv_full", "text_full", alpha);
  if (kv_full == audit_data::npos) {
    c.attention.note = "unavailable: kv_full is absent from the records";
    return c;
  }
  // Item means of attention_mass per regime (units sorted by item: runs of one cluster).
  std::vector<double> conflict_items, need_items;
  bool out_of_range = false;
  for (auto [g, sink] :
       {std::pair{audit_regime::conflict, &conflict_items}, std::pair{audit_regime::need, &need_items}}) {
    std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
    double sum = 0.0, count = 0.0;
    for (std::size_t u = 0; u < d.units(); ++u) {
      if (d.unit_regime[u] != g) continue;
      const std::size_t i = d.record(u, kv_full);
      if (i == audit_data::npos || !records[i].attention_mass) continue;
      const double m = *records[i].attention_mass;
      if (!(m >= 0.0 && m <= 1.0)) {
        out_of_range = true;
        continue;
      }
      if (d.unit_cluster[u] != last) {
        if (count > 0.0) sink->push_back(sum / count);
        sum = count = 0.0;
        last = d.unit_cluster[u];
      }
      sum += m;
      count += 1.0;
    }
    if (count > 0.0) sink->push_back(sum / count);
  }
  c.attention =
      attention_between(conflict_items, need_items, alpha,
                        std::max(d.horizon_of(audit_regime::conflict), d.horizon_of(audit_regime::need)));
  if (!c.attention.available) {  // the engine's own reason, when the records carry one
    for (std::size_t u = 0; u < d.units(); ++u) {
      const std::size_t i = d.record(u, kv_full);
      if (i == audit_data::npos) continue;
      const auto& un = records[i].unavailable;
      const auto it =
          std::find_if(un.begin(), un.end(), [](const auto& m) { return m.metric == "attention_mass"; });
      if (it != un.end()) {
        c.attention.note += " (" + it->reason + ")";
        break;
      }
    }
  }
  if (out_of_range) {
    warnings.push_back("conflict mechanism: attention_mass values outside [0, 1] were left out");
  }
  return c;
}

}  // namespace detail

LATENTAUDIT_INLINE finding conflict_worse_finding(const conflict_analysis& c, double alpha, double margin) {
  const finding_key id{finding_kind::conflict_kv_worse_than_no_comm};
  const auto& k = c.kv_vs_no_comm;
  if (c.units == 0)
    return detail::not_estimable_finding(
        id, "no unit of regime 'conflict' in the records (the regime is missing)", detail::contrast_reads(k));
  if (!k.estimable())
    return detail::not_estimable_finding(
        id,
        fmt::format("the contrast {} has no pairs in the conflict regime ({} or {} absent)", k.id, k.treated,
                    k.control),
        detail::contrast_reads(k));
  const verdict v = detail::worse_verdict(k, alpha, margin);
  const std::string pts = detail::contrast_points(k.estimate, k.verdict_low, k.verdict_high);
  std::string why;
  if (v == verdict::yes)
    why = fmt::format(
        "relaying a cache that contradicts B's own prompt loses to no communication: {} (Holm p = {:.3g})",
        pts, k.p_holm);
  else if (v == verdict::no)
    why = fmt::format("a loss of {:.1f} points or more against no communication is excluded: {}",
                      100.0 * margin, pts);
  else
    why = fmt::format("neither a loss nor its absence (within {:.1f} points) is shown: {} (Holm p = {:.3g})",
                      100.0 * margin, pts, k.p_holm);
  const auto& a = c.attention;
  if (a.available)
    why += fmt::format(
        "; mechanism: B's attention mass on the relayed tokens is {:.3f} [{:.3f}, {:.3f}] in conflict ({} "
        "items) "
        "vs {:.3f} [{:.3f}, {:.3f}] in need ({} items), difference {:+.3f} [{:+.3f}, {:+.3f}] ({:g}% joint)",
        a.conflict_mean, a.conflict_low, a.conflict_high, a.conflict_items, a.need_mean, a.need_low,
        a.need_high, a.need_items, a.difference, a.difference_low, a.difference_high, 100.0 * (1.0 - alpha));
  else
    why += "; mechanism (attention mass on the relay): " + a.note;
  return detail::risk_finding(id, v, k, "conflict", std::move(why), margin, alpha);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_CONFLICT_INL_HPP
