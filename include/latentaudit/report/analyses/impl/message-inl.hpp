// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/message.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_MESSAGE_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_MESSAGE_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../../detail/markdown_text.hpp"
#include "../message.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE message_analysis audit_messages(const audit_data& d, std::span<const trial_record> records,
                                                   std::size_t no_comm, double alpha,
                                                   std::vector<std::string>& warnings) {
  message_analysis m;
  // The arms, by arm_kind: text messages with their budgets, the first kv_message and
  // kv_message_only labels in sorted order.
  std::vector<std::pair<std::int64_t, std::size_t>> text;  // (k, arm)
  std::vector<std::size_t> kv, kv_only;
  for (std::size_t a = 0; a < d.arms(); ++a) {
    if (d.is(a, arm_kind::kv_message)) kv.push_back(a);
    if (d.is(a, arm_kind::kv_message_only)) kv_only.push_back(a);
    if (!d.is(a, arm_kind::text_message)) continue;
    std::int64_t k = -1;
    for (std::size_t u = 0; u < d.units() && k < 0; ++u)
      if (const std::size_t i = d.record(u, a); i != audit_data::npos && records[i].budget)
        k = static_cast<std::int64_t>(*records[i].budget);
    if (k < 0 && d.label_arms[a]) k = d.label_arms[a]->budget;  // the label's: text_message_<k>
    if (k < 0) {
      warnings.push_back("messages analysis: text_message arm '" + d.arm_label[a] +
                         "' has no budget (record field or label number); left out");
      continue;
    }
    text.emplace_back(k, a);
  }
  auto first_sorted = [&](std::vector<std::size_t>& v, const char* kind) -> std::size_t {
    if (v.empty()) return audit_data::npos;
    std::sort(v.begin(), v.end(),
              [&](std::size_t x, std::size_t y) { return d.arm_label[x] < d.arm_label[y]; });
    if (v.size() > 1) {
      std::string all;
      for (auto a : v) all.append(all.empty() ? "" : ", ").append(d.arm_label[a]);
      warnings.push_back(fmt::format("messages analysis: several {} arms ({}); '{}' is compared", kind, all,
                                     d.arm_label[v.front()]));
    }
    return v.front();
  };
  const std::size_t kvm = first_sorted(kv, "kv_message");
  const std::size_t kvo = first_sorted(kv_only, "kv_message_only");
  m.kv_message = kvm == audit_data::npos ? std::string() : d.arm_label[kvm];
  m.kv_message_only = kvo == audit_data::npos ? std::string() : d.arm_label[kvo];
  std::sort(text.begin(), text.end());
  for (const auto& [k, a] : text) {
    for (auto g : {audit_regime::need, audit_regime::no_need, audit_regime::stale, audit_regime::conflict}) {
      double len = 0, n = 0;
      for (std::size_t u = 0; u < d.units(); ++u) {
        if (d.unit_regime[u] != g) continue;
        const std::size_t i = d.record(u, a);
        if (i == audit_data::npos) continue;
        len += records[i].message_length ? static_cast<double>(*records[i].message_length) : 0.0;
        n += 1;
      }
      if (n == 0) continue;  // the regime is absent
      message_contrast c;
      c.k = k;
      c.mean_message_length = len / n;
      c.kv_vs_text = regime_contrast_of(d, kvm, a, g, "kv_message", d.arm_label[a], alpha);
      c.regime = c.kv_vs_text.regime;
      c.text_vs_no_comm = regime_contrast_of(d, a, no_comm, g, d.arm_label[a], "no_comm", alpha);
      c.kv_only_vs_text = regime_contrast_of(d, kvo, a, g, "kv_message_only", d.arm_label[a], alpha);
      m.contrasts.push_back(std::move(c));
    }
  }
  std::vector<regime_contrast*> family;
  for (auto& c : m.contrasts) family.push_back(&c.kv_vs_text);
  holm_over(family);
  return m;
}

LATENTAUDIT_INLINE json_value messages_json(const message_analysis& m) {
  if (m.contrasts.empty() && m.kv_message.empty() && m.kv_message_only.empty()) return json_value();
  auto contrast = [](const regime_contrast& c) { return contrast_json(c); };
  json_value j;
  j.set("kv_message", m.kv_message);
  j.set("kv_message_only", m.kv_message_only);
  json_value a = json_value::array_type{};
  for (const auto& c : m.contrasts) {
    json_value o;
    o.set("k", static_cast<double>(c.k));
    o.set("regime", c.regime);
    o.set("mean_message_length", c.mean_message_length);
    o.set("kv_vs_text", contrast(c.kv_vs_text));
    o.set("text_vs_no_comm", contrast(c.text_vs_no_comm));
    o.set("kv_only_vs_text", contrast(c.kv_only_vs_text));
    a.push_back(std::move(o));
  }
  j.set("contrasts", std::move(a));
  return j;
}

}  // namespace detail

LATENTAUDIT_INLINE std::vector<finding> message_findings(const message_analysis& m, double alpha,
                                                         double margin) {
  std::vector<finding> out;
  const finding_key base{finding_kind::message_kv_vs_text_message};  // no budget: the family's bare id
  if (m.contrasts.empty() && m.kv_message.empty() && m.kv_message_only.empty()) return out;  // no message arm
  if (m.contrasts.empty())
    return {detail::not_estimable_finding(base, "no text_message_<k> arm in the records")};
  if (m.kv_message.empty()) return {detail::not_estimable_finding(base, "no kv_message arm in the records")};
  const std::string lvl = fmt::format("{:g}", 100.0 * (1.0 - 2.0 * alpha));
  for (const auto& mc : m.contrasts) {
    const auto& c = mc.kv_vs_text;
    const finding_key id{finding_kind::message_kv_vs_text_message,
                         {.budget = static_cast<std::size_t>(mc.k), .regime = mc.regime}};
    if (!c.estimable()) {
      out.push_back(detail::not_estimable_finding(
          id,
          fmt::format("the contrast {} has no pairs ({} or {} absent in the {} regime)", c.id, c.treated,
                      c.control, mc.regime),
          detail::contrast_reads(c)));
      continue;
    }
    const verdict v = detail::beats_verdict(c, alpha, margin);
    const std::string pts = detail::contrast_points(c.estimate, c.verdict_low, c.verdict_high);
    std::string why;
    if (v == verdict::yes)
      why = fmt::format(
          "in the {} regime relaying A's cache beats relaying its message of at most {} tokens (mean length "
          "{:.1f}): {} (Holm p = {:.3g}; {}% verdict interval)",
          mc.regime, mc.k, mc.mean_message_length, pts, c.p_holm, lvl);
    else if (v == verdict::no)
      why = fmt::format(
          "in the {} regime a gain of {:.1f} points or more from relaying A's cache instead of its message "
          "of "
          "at most {} tokens is excluded: {} ({}% verdict interval)",
          mc.regime, 100.0 * margin, mc.k, pts, lvl);
    else
      why = fmt::format(
          "in the {} regime neither a gain from relaying A's cache over its {}-token message nor its absence "
          "(within {:.1f} points) is shown: {} (Holm p = {:.3g})",
          mc.regime, mc.k, 100.0 * margin, pts, c.p_holm);
    out.push_back(
        {.id = id.id(),
         .answer = v,
         .estimate = c.estimate,
         .ci_low = c.verdict_low,
         .ci_high = c.verdict_high,
         .method = mc.regime + " regime, " + c.id + ": " + c.method + "; Holm over the message family",
         .n = c.n_pairs,
         .detail = why,
         .reads = detail::contrast_reads(c),
         .key = id});
    detail::set_minimum_detectable(out.back(), c.items);
  }
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_MESSAGE_INL_HPP
