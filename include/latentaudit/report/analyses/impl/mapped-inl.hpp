// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/mapped.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_MAPPED_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_MAPPED_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../../detail/markdown_text.hpp"
#include "../mapped.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "../../../core/rng.hpp"

#include <fmt/format.h>

namespace latentaudit {

namespace detail {

namespace mapped_impl {

// The retention's item-level pairs: per need item whose units hold kv_mapped, kv_full and no_comm,
// a = mean(kv_mapped − no_comm), b = mean(kv_full − no_comm) over those units (items ascending).
LATENTAUDIT_INLINE void retention_items(const audit_data& d, std::size_t m, std::size_t f, std::size_t n,
                                        std::vector<double>& a, std::vector<double>& b,
                                        std::size_t& missing) {
  std::vector<double> sa(d.items.size(), 0.0), sb(d.items.size(), 0.0), c(d.items.size(), 0.0);
  for (std::size_t u = 0; u < d.units(); ++u) {
    if (d.unit_regime[u] != audit_regime::need) continue;
    if (!d.scheduled(u, m) || !d.scheduled(u, f) || !d.scheduled(u, n)) continue;
    const int ym = d.outcome(u, m), yf = d.outcome(u, f), yn = d.outcome(u, n);
    if (ym < 0 || yf < 0 || yn < 0) {
      ++missing;
      continue;
    }
    const std::size_t k = d.unit_cluster[u];
    sa[k] += ym - yn;
    sb[k] += yf - yn;
    c[k] += 1.0;
  }
  for (std::size_t k = 0; k < c.size(); ++k)
    if (c[k] > 0) {
      a.push_back(sa[k] / c[k]);
      b.push_back(sb[k] / c[k]);
    }
}

// The map id kv_mapped arm `a`'s records name (the record field "map"), "" when none does.
LATENTAUDIT_INLINE std::string map_id_of(const audit_data& d, std::span<const trial_record> records,
                                         std::size_t a, std::vector<std::string>& warnings) {
  std::string id;
  for (std::size_t u = 0; u < d.units(); ++u) {
    const std::size_t i = d.record(u, a);
    if (i == audit_data::npos || records[i].map.empty()) continue;
    if (id.empty()) {
      id = records[i].map;
    } else if (id != records[i].map) {
      warnings.push_back(
          fmt::format("arm '{}' records more than one cache map ({} and {}); the first is named",
                      d.arm_label[a], id, records[i].map));
      break;
    }
  }
  return id;
}

// The screen: per need item with a cosine (the mean of its kv_mapped records' map_cosine) and a
// kv_mapped − no_comm pair, the Pearson correlation of the two item means, with a percentile
// bootstrap over items (2000 resamples, stream (0x5C7EE, arm, 0, 0): the same interval every run).
LATENTAUDIT_INLINE mapped_screen screen_of(const audit_data& d, std::span<const trial_record> records,
                                           std::size_t m, std::size_t n, double alpha) {
  mapped_screen out;
  std::vector<double> cs(d.items.size(), 0.0), cc(d.items.size(), 0.0), bs(d.items.size(), 0.0),
      bc(d.items.size(), 0.0);
  for (std::size_t u = 0; u < d.units(); ++u) {
    if (d.unit_regime[u] != audit_regime::need) continue;
    const std::size_t i = d.record(u, m), k = d.unit_cluster[u];
    if (i != audit_data::npos && records[i].map_cosine) {
      cs[k] += *records[i].map_cosine;
      cc[k] += 1.0;
    }
    if (n != audit_data::npos && d.outcome(u, m) >= 0 && d.outcome(u, n) >= 0) {
      bs[k] += d.outcome(u, m) - d.outcome(u, n);
      bc[k] += 1.0;
    }
  }
  std::vector<double> x, y;
  for (std::size_t k = 0; k < cs.size(); ++k)
    if (cc[k] > 0 && bc[k] > 0) {
      x.push_back(cs[k] / cc[k]);
      y.push_back(bs[k] / bc[k]);
    }
  out.items = x.size();
  if (x.empty()) return out;
  double mx = 0.0;
  for (const double v : x) mx += v;
  out.mean_cosine = mx / static_cast<double>(x.size());
  auto pearson = [](const std::vector<double>& a, const std::vector<double>& b) {
    const double k = static_cast<double>(a.size());
    double ma = 0.0, mb = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      ma += a[i] / k;
      mb += b[i] / k;
    }
    double sab = 0.0, saa = 0.0, sbb = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      sab += (a[i] - ma) * (b[i] - mb);
      saa += (a[i] - ma) * (a[i] - ma);
      sbb += (b[i] - mb) * (b[i] - mb);
    }
    return saa > 0.0 && sbb > 0.0 ? sab / std::sqrt(saa * sbb) : std::numeric_limits<double>::quiet_NaN();
  };
  if (x.size() < 3) return out;
  out.r = pearson(x, y);
  if (!std::isfinite(out.r)) return out;
  constexpr std::size_t resamples = 2000;
  auto g = make_stream({.seed = 0x5C7EE, .item = m, .arm = 0, .replicate = 0});
  std::vector<double> rs, bx(x.size()), by(x.size());
  for (std::size_t b = 0; b < resamples; ++b) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::size_t j = uniform_index(g, static_cast<std::uint32_t>(x.size()));
      bx[i] = x[j];
      by[i] = y[j];
    }
    if (const double rb = pearson(bx, by); std::isfinite(rb)) rs.push_back(rb);
  }
  if (rs.size() < resamples / 2) return out;
  std::sort(rs.begin(), rs.end());
  auto q = [&](double p) {
    return rs[std::min(rs.size() - 1, static_cast<std::size_t>(p * static_cast<double>(rs.size())))];
  };
  out.ci_low = q(alpha);
  out.ci_high = q(1.0 - alpha);
  return out;
}

}  // namespace mapped_impl

LATENTAUDIT_INLINE mapped_analysis audit_mapped(const audit_data& d, std::span<const trial_record> records,
                                                std::size_t kv_full, std::size_t no_comm, double alpha,
                                                std::vector<std::string>& warnings) {
  mapped_analysis out;
  const auto need = audit_regime::need;
  for (std::size_t a = 0; a < d.arms(); ++a) {
    if (!d.is(a, arm_kind::kv_mapped)) continue;
    mapped_contrast c;
    c.arm = d.arm_label[a];
    const auto& la = d.label_arms[a];  // the sender and its unmapped arm come from the label
    c.sender = la && la->kind == arm_kind::kv_mapped ? la->sender : std::string();
    c.params.sender = c.sender.empty() || c.sender == partner_sender ? std::string() : c.sender;
    std::size_t unmapped = audit_data::npos;
    if (la)
      if (const auto u = unmapped_arm_label(*la)) {
        c.unmapped = *u;
        unmapped = d.find_label(*u);
      }
    c.map = mapped_impl::map_id_of(d, records, a, warnings);
    c.beats_unmapped =
        regime_contrast_of(d, a, unmapped, need, c.arm, c.unmapped.empty() ? "unmapped" : c.unmapped, alpha);
    c.vs_same_model = regime_contrast_of(d, a, kv_full, need, c.arm, "kv_full", alpha);
    c.mapped_benefit = regime_contrast_of(d, a, no_comm, need, c.arm, "no_comm", alpha);
    if (kv_full != audit_data::npos && no_comm != audit_data::npos) {
      std::vector<double> ia, ib;
      mapped_impl::retention_items(d, a, kv_full, no_comm, ia, ib, c.retention_missing);
      c.retention_items = ia.size();
      if (!ia.empty()) {
        const std::size_t h = d.horizon_of(need);
        // (an audit α of 0.25 or more is held at 0.249 per side here: a smaller α is conservative)
        c.retention = bounded_ratio_interval(
            ia, ib, -1.0, 1.0,
            {.alpha = std::min(alpha, 0.249), .horizon = h != 0 ? std::max(h, ia.size()) : 0});
      }
    }
    c.screen = mapped_impl::screen_of(d, records, a, no_comm, alpha);
    out.arms.push_back(std::move(c));
  }
  std::sort(out.arms.begin(), out.arms.end(),
            [](const mapped_contrast& x, const mapped_contrast& y) { return x.arm < y.arm; });
  std::vector<regime_contrast*> family;
  for (auto& c : out.arms) family.push_back(&c.beats_unmapped);
  holm_over(family);
  return out;
}

LATENTAUDIT_INLINE json_value mapped_json(const mapped_analysis& m) {
  if (m.arms.empty()) return json_value();
  auto num = [](double x) { return std::isfinite(x) ? json_value(x) : json_value(); };
  json_value arms = json_value::array();
  for (const auto& c : m.arms) {
    json_value o = json_value::object();
    o.set("arm", c.arm);
    o.set("sender", c.sender);
    o.set("unmapped", c.unmapped);
    o.set("map", c.map);
    o.set("beats_unmapped", contrast_json(c.beats_unmapped));
    o.set("vs_same_model", contrast_json(c.vs_same_model));
    o.set("mapped_benefit", contrast_json(c.mapped_benefit));
    json_value r = json_value::object();
    r.set("estimate", num(c.retention.estimate));
    r.set("low", c.retention.low == -std::numeric_limits<double>::infinity() ? json_value("-inf")
                                                                             : num(c.retention.low));
    r.set("high", c.retention.high == std::numeric_limits<double>::infinity() ? json_value("inf")
                                                                              : num(c.retention.high));
    r.set("items", static_cast<double>(c.retention_items));
    r.set("missing_units", static_cast<double>(c.retention_missing));
    o.set("retention", std::move(r));
    json_value sc = json_value::object();
    sc.set("items", static_cast<double>(c.screen.items));
    sc.set("mean_attention_cosine", num(c.screen.mean_cosine));
    sc.set("r", num(c.screen.r));
    sc.set("ci_low", num(c.screen.ci_low));
    sc.set("ci_high", num(c.screen.ci_high));
    sc.set(
        "method",
        "Pearson correlation over need items of the item's mean map_cosine (attention-output cosine of the "
        "mapped cache against B's own) and its mean kv_mapped - no_comm; percentile bootstrap over items "
        "(2000 resamples), 1 - 2 alpha");
    o.set("screen", std::move(sc));
    arms.push_back(std::move(o));
  }
  json_value j = json_value::object();
  j.set("retention_gate", m.gate);
  j.set("arms", std::move(arms));
  return j;
}

}  // namespace detail

LATENTAUDIT_INLINE std::vector<finding> mapped_findings(const mapped_analysis& m, double alpha,
                                                        double margin) {
  std::vector<finding> out;
  const std::string lvl = fmt::format("{:g}", 100.0 * (1.0 - 2.0 * alpha));
  for (const auto& mc : m.arms) {
    const std::string of_map = mc.map.empty() ? "" : " (map " + mc.map + ")";
    // beats_unmapped: the map helps over relaying the same sender's cache as it is
    {
      const auto& c = mc.beats_unmapped;
      const finding_key id{finding_kind::mapped_beats_unmapped, mc.params};
      if (!c.estimable()) {
        out.push_back(detail::not_estimable_finding(
            id,
            fmt::format("no need-regime pair of {} and its sender's unmapped arm ({})", mc.arm,
                        mc.unmapped.empty() ? "unknown for this label" : mc.unmapped + " absent"),
            detail::contrast_reads(c)));
      } else {
        const verdict v = detail::beats_verdict(c, alpha, margin);
        const std::string pts = detail::contrast_points(c.estimate, c.verdict_low, c.verdict_high);
        out.push_back(
            {.id = id.id(),
             .answer = v,
             .estimate = c.estimate,
             .ci_low = c.verdict_low,
             .ci_high = c.verdict_high,
             .method = "need regime, " + c.id + ": " + c.method + "; Holm over the mapped family",
             .n = c.n_pairs,
             .detail =
                 v == verdict::yes
                     ? fmt::format(
                           "the cache map{} helps over relaying {} unmapped: {} (Holm p = {:.3g}; {}% "
                           "verdict interval)",
                           of_map, mc.unmapped, pts, c.p_holm, lvl)
                 : v == verdict::no
                     ? fmt::format("a gain of {:.1f} points or more from the cache map{} over {} unmapped is "
                                   "excluded: {}",
                                   100.0 * margin, of_map, mc.unmapped, pts)
                     : fmt::format("neither a gain from the cache map{} over {} unmapped nor its absence is "
                                   "shown: {} (Holm p = {:.3g})",
                                   of_map, mc.unmapped, pts, c.p_holm),
             .reads = detail::contrast_reads(c),
             .key = id});
        detail::set_minimum_detectable(out.back(), c.items);
      }
    }
    // noninferior_to_same_model: what the decision's map path reads
    {
      const auto& c = mc.vs_same_model;
      const finding_key id{finding_kind::mapped_noninferior_to_same_model, mc.params};
      if (!c.estimable()) {
        out.push_back(detail::not_estimable_finding(
            id, fmt::format("no need-regime pair of {} and kv_full", mc.arm), detail::contrast_reads(c)));
      } else {
        const verdict v = c.verdict_low > -margin    ? verdict::yes
                          : c.verdict_high < -margin ? verdict::no
                                                     : verdict::inconclusive;
        const std::string pts = detail::contrast_points(c.estimate, c.verdict_low, c.verdict_high);
        out.push_back(
            {.id = id.id(),
             .answer = v,
             .estimate = c.estimate,
             .ci_low = c.verdict_low,
             .ci_high = c.verdict_high,
             .method = "need regime, " + c.id + ": " + c.method +
                       "; non-inferiority by the one-sided bound (the decision holds it in its risk family)",
             .n = c.n_pairs,
             .detail = fmt::format("{} − kv_full = {} points, margin {:.1f} points: {}", mc.arm, pts,
                                   100.0 * margin,
                                   v == verdict::yes  ? "the mapped cache is non-inferior to same-model relay"
                                   : v == verdict::no ? "the mapped cache is inferior to same-model relay"
                                                      : "neither non-inferiority nor inferiority shown"),
             .noninferiority_p = detail::noninferiority_p(c.items, c.missing, margin, alpha, c.horizon),
             .reads = detail::contrast_reads(c),
             .key = id});
        detail::set_minimum_detectable(out.back(), c.items);
      }
    }
    // retention: the share of same-model relay's benefit the map keeps
    {
      const auto& r = mc.retention;
      const finding_key id{finding_kind::mapped_retention, mc.params};
      std::vector<arm_cell> reads = {
          {"need", mc.arm}, {"need", mc.vs_same_model.control}, {"need", mc.mapped_benefit.control}};
      if (mc.retention_items == 0) {
        out.push_back(detail::not_estimable_finding(
            id, fmt::format("no need-regime unit holds {}, kv_full and no_comm", mc.arm), std::move(reads)));
        continue;
      }
      verdict v = verdict::inconclusive;
      std::string why;
      auto lim = [](double x) {
        return std::isfinite(x) ? fmt::format("{:.3f}", x) : std::string(x > 0 ? "+inf" : "-inf");
      };
      const std::string iv = r.exists ? fmt::format("[{}, {}]", lim(r.low), lim(r.high)) : "empty";
      if (mc.retention_missing > 0) {
        why = fmt::format(
            "{} need unit(s) lack a record of {}, kv_full or no_comm: the ratio's interval does not bound "
            "missing records, so retention is not decided (estimate {:.3f}, interval {} on the complete "
            "units)",
            mc.retention_missing, mc.arm, r.estimate, iv);
      } else if (!r.exists) {
        why = "the data contradict every ratio (kv_full − no_comm shown 0 while kv_mapped − no_comm is not)";
      } else if (r.low >= m.gate) {
        v = verdict::yes;
        why = fmt::format(
            "the map{} keeps at least {:.2f} of same-model relay's benefit: retention {:.3f}, {}% "
            "interval {}",
            of_map, m.gate, r.estimate, lvl, iv);
      } else if (r.high < m.gate) {
        v = verdict::no;
        why = fmt::format(
            "the map{} keeps less than {:.2f} of same-model relay's benefit: retention {:.3f}, {}% "
            "interval {}",
            of_map, m.gate, r.estimate, lvl, iv);
      } else {
        why = fmt::format(
            "retention {:.3f}, {}% interval {}: the gate {:.2f} is inside it{}", r.estimate, lvl, iv, m.gate,
            std::isfinite(r.low) ? "" : " (unbounded: same-model relay's benefit is not shown away from 0)");
      }
      out.push_back(
          {.id = id.id(),
           .answer = v,
           .estimate = r.estimate,
           .ci_low = r.low,
           .ci_high = r.high,
           .method = fmt::format("need regime, ({0} − no_comm) / (kv_full − no_comm) over {1} items: test "
                                 "inversion of the betting interval of (a − ρ b), α = {2} per side "
                                 "(bounded_ratio_interval); yes if the lower limit ≥ {3:.2f}, no if the "
                                 "upper limit < {3:.2f}",
                                 mc.arm, mc.retention_items, alpha, m.gate),
           .n = mc.retention_items,
           .detail = std::move(why),
           .reads = std::move(reads),
           .key = id});
    }
  }
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_MAPPED_INL_HPP
