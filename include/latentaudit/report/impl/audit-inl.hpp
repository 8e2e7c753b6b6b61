// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/audit.hpp (header-only mode includes this file; compiled mode compiles
// it once in src/)
#ifndef LATENTAUDIT_REPORT_IMPL_AUDIT_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_AUDIT_INL_HPP

#include "../audit.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "../../core/detail/check.hpp"
#include "../../estimators/heterogeneity.hpp"

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE void check_audit_options(std::string_view fn, const audit_options& o) {
  check_tost_alpha(fn, o.alpha);
  check_positive(fn, "options.equivalence_margin", o.equivalence_margin);
  check_positive(fn, "options.noninferiority_margin", o.noninferiority_margin);
  if (o.bootstrap_replicates < 2 || o.bootstrap_replicates > std::numeric_limits<std::uint32_t>::max() ||
      (static_cast<double>(o.bootstrap_replicates) + 1.0) * o.alpha / 2.0 < 1.0) {
    throw_invalid(
        fn, "options.bootstrap_replicates",
        "must lie in [2, 4294967295] with (B + 1)·alpha/2 >= 1 (percentile limits at alpha/2), got " +
            number_text(o.bootstrap_replicates));
  }
}

LATENTAUDIT_INLINE std::size_t find_role(const audit_data& d, std::string_view name,
                                         std::vector<std::string>& warnings) {
  const std::size_t a = d.find_label(name);
  if (a != audit_data::npos) return a;
  std::size_t found = audit_data::npos, count = 0;
  for (std::size_t k = 0; k < d.arms(); ++k) {
    if (d.arm_kind[k] == name) {
      found = k;
      ++count;
    }
  }
  if (count > 1) {
    warnings.push_back(
        fmt::format("{} arms have arm_kind '{}' and none is labelled so; the '{}' role is left empty", count,
                    name, name));
    return audit_data::npos;
  }
  return found;
}

[[nodiscard]] LATENTAUDIT_INLINE const char* regime_name(audit_regime r) noexcept {
  return r == audit_regime::need ? "need" : r == audit_regime::no_need ? "no_need" : "unknown";
}

[[nodiscard]] LATENTAUDIT_INLINE std::string percent(double level) {
  return fmt::format("{:g}", 100.0 * level);
}

[[nodiscard]] LATENTAUDIT_INLINE betting_interval item_accuracy_interval(std::span<const double> item_means,
                                                                         double accuracy, double level) {
  const double a = (1.0 - level) / 2.0;
  auto b = bounded_mean_interval(item_means, 0.0, 1.0, {.alpha_lower = a, .alpha_upper = a});
  b.estimate = accuracy;
  b.low = std::min(b.low, accuracy);
  b.high = std::max(b.high, accuracy);
  return b;
}

[[nodiscard]] LATENTAUDIT_INLINE proportion_interval wilson_or_nan(std::size_t x, std::size_t n,
                                                                   double level) {
  if (n == 0) return {audit_nan, audit_nan, audit_nan, level};
  return wilson_interval({.successes = x, .trials = n}, {.level = level});
}

}  // namespace detail

LATENTAUDIT_INLINE audit_core analyse_records(std::span<const trial_record> records, const audit_options& o) {
  constexpr std::string_view fn = "analyse_records";
  detail::check_audit_options(fn, o);
  const detail::audit_data d = detail::build_audit_data(fn, records);
  using detail::audit_data;
  using detail::audit_nan;
  using detail::audit_regime;
  audit_core out;
  out.n_records = records.size();
  out.n_items = d.items.size();
  out.n_seeds = d.seeds.size();
  auto& warn = out.warnings;
  const double level = 1.0 - o.alpha;
  const double level_tost = 1.0 - 2.0 * o.alpha;
  const std::size_t B = o.bootstrap_replicates;

  // ---- coverage warnings ----
  {
    std::size_t unknown = 0;
    for (auto r : d.unit_regime) unknown += r == audit_regime::unknown ? 1 : 0;
    if (unknown > 0) {
      warn.push_back(
          fmt::format("{} of {} (item, seed) units have no 'need'/'no_need' regime; they enter only the "
                      "'all' arm summaries",
                      unknown, d.units()));
    }
    for (std::size_t a = 0; a < d.arms(); ++a) {
      std::size_t missing = 0;
      for (std::size_t u = 0; u < d.units(); ++u) missing += d.outcome(u, a) < 0 ? 1 : 0;
      if (missing > 0) {
        warn.push_back(
            fmt::format("arm '{}' is missing on {} of {} (item, seed) units; those units are dropped from "
                        "every comparison with it",
                        d.arm_label[a], missing, d.units()));
      }
    }
  }

  // ---- per-arm summaries ----
  // Accuracy intervals are clustered by item (the seeds of an item share its document): betting
  // over the item mean accuracies (detail::item_accuracy_interval), never Wilson on the records.
  std::vector<double> item_sum(d.items.size()), item_count(d.items.size()), item_means;
  auto clustered_accuracy = [&](std::size_t x, std::size_t n) {
    item_means.clear();
    for (std::size_t g = 0; g < item_sum.size(); ++g)
      if (item_count[g] > 0) item_means.push_back(item_sum[g] / item_count[g]);
    return detail::item_accuracy_interval(item_means, static_cast<double>(x) / static_cast<double>(n), level);
  };
  const std::pair<const char*, int> regimes[] = {{"need", 0}, {"no_need", 1}, {"all", -1}};
  for (std::size_t a = 0; a < d.arms(); ++a) {
    for (auto [rname, rcode] : regimes) {
      std::size_t n = 0, x = 0, nam = 0, nhc = 0, nkl = 0;
      double bytes = 0, recv = 0, am = 0, hc = 0, kl = 0;
      std::fill(item_sum.begin(), item_sum.end(), 0.0);
      std::fill(item_count.begin(), item_count.end(), 0.0);
      for (std::size_t u = 0; u < d.units(); ++u) {
        if (rcode >= 0 && static_cast<int>(d.unit_regime[u]) != rcode) continue;
        const std::size_t i = d.rec[u * d.arms() + a];
        if (i == audit_data::npos) continue;
        const auto& r = records[i];
        ++n;
        x += r.correct ? 1 : 0;
        item_sum[d.unit_cluster[u]] += r.correct ? 1.0 : 0.0;
        item_count[d.unit_cluster[u]] += 1.0;
        bytes += static_cast<double>(r.bytes);
        recv += r.latency.receiver_s();
        if (r.attention_mass) am += *r.attention_mass, ++nam;
        if (r.hidden_cosine) hc += *r.hidden_cosine, ++nhc;
        if (r.next_token_kl) kl += *r.next_token_kl, ++nkl;
      }
      if (n == 0) continue;
      const auto w = clustered_accuracy(x, n);
      arm_summary s{.arm = d.arm_label[a], .arm_kind = d.arm_kind[a], .regime = rname, .n = n};
      s.n_items = w.n;
      s.accuracy = w.estimate;
      s.ci_low = w.low;
      s.ci_high = w.high;
      s.mean_bytes = bytes / static_cast<double>(n);
      s.mean_receiver_s = recv / static_cast<double>(n);
      if (nam > 0) s.mean_attention_mass = am / static_cast<double>(nam);
      if (nhc > 0) s.mean_hidden_cosine = hc / static_cast<double>(nhc);
      if (nkl > 0) s.mean_next_token_kl = kl / static_cast<double>(nkl);
      out.arms.push_back(std::move(s));
    }
  }

  // ---- roles ----
  const std::size_t no_comm = detail::find_role(d, "no_comm", warn);
  const std::size_t text_full = detail::find_role(d, "text_full", warn);
  const std::size_t kv_full = detail::find_role(d, "kv_full", warn);
  const std::size_t deranged = detail::find_role(d, "deranged", warn);
  const std::size_t zeroed = detail::find_role(d, "zeroed", warn);
  const std::size_t random = detail::find_role(d, "random", warn);
  const std::size_t cross_model = detail::find_role(d, "cross_model", warn);
  auto role_label = [&](std::size_t a, std::string_view fallback) {
    return a == audit_data::npos ? std::string(fallback) : d.arm_label[a];
  };
  auto in_regime = [&](audit_regime r) { return [&d, r](std::size_t u) { return d.unit_regime[u] == r; }; };

  // ---- paired effects (the Holm family) ----
  // Every paired difference: the descriptive 1 − α cluster bootstrap interval (betting at α/2 per
  // side when the bootstrap is a point mass or has < 2 items), the 1 − 2α betting verdict
  // interval over items and the betting p-value over items. Returns the method's interval part.
  auto fill_effect = [&](paired_effect& e, const detail::paired_units& p) {
    e.n_pairs = p.pairs();
    e.n_clusters = p.clusters();
    e.estimate = p.mean();
    const auto items = detail::item_differences(p);
    const auto vi = bounded_mean_interval(items, -1.0, 1.0, {.alpha_lower = o.alpha, .alpha_upper = o.alpha});
    e.verdict_low = vi.low;
    e.verdict_high = vi.high;
    e.p_value = bounded_mean_p_value(items, -1.0, 1.0, 0.0, o.alpha);
    const auto ci = detail::cluster_bootstrap_interval(p, level, B, o.seed, o.threads);
    if (ci.point_mass || !std::isfinite(ci.low) || !std::isfinite(ci.high)) {
      const auto di = bounded_mean_interval(items, -1.0, 1.0,
                                            {.alpha_lower = o.alpha / 2.0, .alpha_upper = o.alpha / 2.0});
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
  const std::string verdict_text = fmt::format(
      "{}% verdict interval: betting over items (one-sided {} per side; Waudby-Smith & Ramdas "
      "2024); p: betting over items of mean item difference = 0",
      detail::percent(level_tost), detail::number_text(o.alpha));
  struct contrast_spec {
    std::size_t treated, control;
    const char* treated_role;
    const char* control_role;
    bool holm;  // a claim of its own (in the Holm family), or decomposition material
  };
  // {deranged,zeroed,random} − kv_full are implied by the placebo − no_comm and kv_full − no_comm
  // contrasts (their difference); they describe how much of the relay effect a placebo keeps and
  // stay out of the Holm family.
  const contrast_spec specs[] = {
      {kv_full, no_comm, "kv_full", "no_comm", true},
      {kv_full, text_full, "kv_full", "text_full", true},
      {text_full, no_comm, "text_full", "no_comm", true},
      {deranged, no_comm, "deranged", "no_comm", true},
      {zeroed, no_comm, "zeroed", "no_comm", true},
      {random, no_comm, "random", "no_comm", true},
      {cross_model, no_comm, "cross_model", "no_comm", true},
      {deranged, kv_full, "deranged", "kv_full", false},
      {zeroed, kv_full, "zeroed", "kv_full", false},
      {random, kv_full, "random", "kv_full", false},
  };
  std::vector<std::string> effect_ci_text;  // parallel to out.effects
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
      e.in_holm_family = sp.holm;
      effect_ci_text.push_back(fill_effect(e, p));
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
          "mean paired difference over (item, seed) pairs; {}; {}; {}", effect_ci_text[i], verdict_text,
          e.in_holm_family
              ? fmt::format("Holm over the {} contrasts of the family", in.size())
              : std::string("not in the Holm family (decomposition material: the difference of the placebo − "
                            "no_comm and kv_full − no_comm contrasts)"));
    }
  }
  auto effect_index = [&](std::string_view id) -> std::size_t {
    for (std::size_t i = 0; i < out.effects.size(); ++i)
      if (out.effects[i].id == id) return i;
    return audit_data::npos;
  };

  // ---- decomposition (need) ----
  {
    std::vector<std::size_t> present;
    std::string present_names;
    for (auto a : {zeroed, random}) {
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
    if (kv_full != audit_data::npos && deranged != audit_data::npos) {
      parts.push_back({"pairing", {kv_full}, deranged, d.arm_label[kv_full]});
    } else {
      warn.push_back("decomposition: pairing not estimable (kv_full or deranged absent)");
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
      const std::string ci_part = fill_effect(e, p);
      e.method = fmt::format(
          "{}; {}; {}; Holm over the decomposition",
          p.single_arm ? "mean paired difference" : "mean over units of (mean of the placebo arms − no_comm)",
          ci_part, verdict_text);
      out.decomposition.push_back(std::move(e));
    }
    std::vector<double> p;
    for (const auto& e : out.decomposition) p.push_back(e.p_value);
    const auto adj = p_adjust(p, p_adjust_method::holm);
    for (std::size_t i = 0; i < adj.size(); ++i) out.decomposition[i].p_holm = adj[i];
  }

  // ---- CATE: kv_full − no_comm by regime and by doc_tokens tertile (need) ----
  if (kv_full != audit_data::npos && no_comm != audit_data::npos) {
    const std::size_t t[] = {kv_full};
    auto add = [&](std::string variable, std::string lvl, std::string regime, const detail::paired_units& p) {
      cate_effect c{.arm_pair = d.arm_label[kv_full] + "-" + d.arm_label[no_comm],
                    .variable = std::move(variable),
                    .level = std::move(lvl),
                    .regime = std::move(regime),
                    .n = p.pairs()};
      c.estimate = p.mean();
      const auto ci = detail::cluster_bootstrap_interval(p, level, B, o.seed, o.threads);
      c.ci_low = ci.low;
      c.ci_high = ci.high;
      c.p_value = detail::pairs_p_value(p);
      out.cate.push_back(std::move(c));
    };
    for (auto rg : {audit_regime::need, audit_regime::no_need}) {
      auto p = detail::collect_pairs(d, t, no_comm, in_regime(rg));
      if (p.pairs() > 0) add("regime", detail::regime_name(rg), detail::regime_name(rg), p);
    }
    // Item-level doc_tokens (from the kv_full record, else no_comm) among need-regime pairs.
    std::vector<double> unit_doc(d.units(), audit_nan);
    std::size_t lacking = 0, paired_need = 0;
    for (std::size_t u = 0; u < d.units(); ++u) {
      if (d.unit_regime[u] != audit_regime::need || d.outcome(u, kv_full) < 0 || d.outcome(u, no_comm) < 0)
        continue;
      ++paired_need;
      for (auto a : {kv_full, no_comm}) {
        const auto v = records[d.rec[u * d.arms() + a]].covariate_value("doc_tokens");
        if (v) {
          unit_doc[u] = *v;
          break;
        }
      }
      lacking += std::isnan(unit_doc[u]) ? 1 : 0;
    }
    std::vector<double> item_doc;  // one value per item (its first unit)
    {
      std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
      for (std::size_t u = 0; u < d.units(); ++u) {
        if (std::isnan(unit_doc[u]) || d.unit_cluster[u] == last) continue;
        last = d.unit_cluster[u];
        item_doc.push_back(unit_doc[u]);
      }
    }
    if (paired_need > 0 && lacking == paired_need) {
      warn.push_back("CATE by doc_tokens skipped: no need-regime pair carries the doc_tokens covariate");
    } else if (paired_need > 0) {
      if (lacking > 0) {
        warn.push_back(
            fmt::format("CATE by doc_tokens: {} of {} need-regime pairs lack doc_tokens and are left out",
                        lacking, paired_need));
      }
      if (item_doc.size() < 6) {
        warn.push_back(fmt::format(
            "CATE by doc_tokens skipped: {} items carry doc_tokens, 6 needed for tertiles", item_doc.size()));
      } else {
        double edges[4];
        for (int j = 0; j <= 3; ++j) edges[j] = quantile_type7(item_doc, j / 3.0);
        if (!(edges[0] < edges[1] && edges[1] < edges[2] && edges[2] < edges[3])) {
          warn.push_back(
              "CATE by doc_tokens skipped: tied tertile breaks (too few distinct document lengths)");
        } else {
          for (int j = 0; j < 3; ++j) {
            const double lo = edges[j], hi = edges[j + 1];
            auto keep = [&, j, lo, hi](std::size_t u) {
              const double v = unit_doc[u];
              return d.unit_regime[u] == audit_regime::need && !std::isnan(v) &&
                     (j == 0 ? v >= lo : v > lo) && v <= hi;
            };
            auto p = detail::collect_pairs(d, t, no_comm, keep);
            if (p.pairs() == 0) continue;
            add("doc_tokens", fmt::format("Q{} {}{:g}, {:g}]", j + 1, j == 0 ? "[" : "(", lo, hi), "need", p);
          }
        }
      }
    }
    std::vector<double> p;
    for (const auto& c : out.cate) p.push_back(c.p_value);
    const auto adj = p_adjust(p, p_adjust_method::holm);
    for (std::size_t i = 0; i < adj.size(); ++i) out.cate[i].p_adjusted = adj[i];
  } else {
    warn.push_back("CATE skipped: kv_full or no_comm absent");
  }

  // ---- noise dose-response and tolerance (need): report/analyses/noise.hpp ----
  const noise_options noise_opt{.alpha = o.alpha,
                                .margin = o.noninferiority_margin,
                                .bootstrap_replicates = B,
                                .seed = o.seed,
                                .threads = o.threads};
  out.noise = detail::audit_noise(d, records, kv_full, noise_opt, warn);

  // ---- frontier (need) ----
  {
    auto is_kv = [&](std::size_t a) {
      return d.arm_kind[a] == "kv_full" || d.arm_kind[a] == "kv_policy" ||
             d.arm_label[a].rfind("kv_", 0) == 0;
    };
    auto is_text = [&](std::size_t a) {
      return d.arm_kind[a] == "text_full" || d.arm_kind[a] == "text_budget" ||
             d.arm_label[a] == "text_full" || d.arm_label[a].rfind("text_budget_", 0) == 0;
    };
    for (std::size_t a = 0; a < d.arms(); ++a) {
      if (!is_kv(a) && !is_text(a)) continue;
      std::size_t n = 0, x = 0;
      double bytes = 0;
      std::fill(item_sum.begin(), item_sum.end(), 0.0);
      std::fill(item_count.begin(), item_count.end(), 0.0);
      for (std::size_t u = 0; u < d.units(); ++u) {
        if (d.unit_regime[u] != audit_regime::need) continue;
        const std::size_t i = d.rec[u * d.arms() + a];
        if (i == audit_data::npos) continue;
        ++n;
        x += records[i].correct ? 1 : 0;
        bytes += static_cast<double>(records[i].bytes);
        item_sum[d.unit_cluster[u]] += records[i].correct ? 1.0 : 0.0;
        item_count[d.unit_cluster[u]] += 1.0;
      }
      if (n == 0) continue;
      const auto w = clustered_accuracy(x, n);  // clustered by item, as the per-arm summaries
      out.frontier.push_back({.arm = d.arm_label[a],
                              .mean_bytes = bytes / static_cast<double>(n),
                              .accuracy = w.estimate,
                              .ci_low = w.low,
                              .ci_high = w.high});
    }
    for (auto& p : out.frontier) {
      p.pareto = std::none_of(out.frontier.begin(), out.frontier.end(), [&](const frontier_point& q) {
        return q.accuracy >= p.accuracy && q.mean_bytes <= p.mean_bytes &&
               (q.accuracy > p.accuracy || q.mean_bytes < p.mean_bytes);
      });
    }
    std::stable_sort(
        out.frontier.begin(), out.frontier.end(),
        [](const frontier_point& x, const frontier_point& y) { return x.mean_bytes < y.mean_bytes; });
  }

  // ---- findings ----
  // Every effect finding decides on the 1 − 2α betting verdict interval [L, U] (reported as its
  // ci_low / ci_high) and the Holm-adjusted betting p-value; docs/audit-report.md "Findings".
  auto absent = [&](std::string id, std::string why) {
    out.findings.push_back({.id = std::move(id),
                            .answer = verdict::inconclusive,
                            .estimate = audit_nan,
                            .ci_low = audit_nan,
                            .ci_high = audit_nan,
                            .method = "not estimable",
                            .n = 0,
                            .detail = std::move(why)});
  };
  auto pct = [](double x) { return fmt::format("{:.1f}", 100.0 * x); };
  const double mm = o.equivalence_margin;
  const std::string vlevel = detail::percent(level_tost);
  auto vci = [&](const paired_effect& e) {
    return fmt::format("{}% verdict interval {} to {}", vlevel, pct(e.verdict_low), pct(e.verdict_high));
  };
  // Looks the contrast up; absent: an inconclusive finding with n = 0 and nullptr.
  auto lookup = [&](const std::string& id, std::string_view eid) -> const paired_effect* {
    const std::size_t i = effect_index(eid);
    if (i != audit_data::npos) return &out.effects[i];
    absent(id, fmt::format("the contrast {} has no pairs (an arm is absent from the records or the regime)",
                           eid));
    return nullptr;
  };
  auto push = [&](std::string id, verdict v, const paired_effect& e, std::string method, std::string why) {
    out.findings.push_back({.id = std::move(id),
                            .answer = v,
                            .estimate = e.estimate,
                            .ci_low = e.verdict_low,
                            .ci_high = e.verdict_high,
                            .method = std::move(method),
                            .n = e.n_pairs,
                            .detail = std::move(why)});
  };
  // "beats": yes = significant and estimate > 0; no = U < m (a benefit of m or more excluded).
  auto beats_finding = [&](std::string id, std::string_view eid) {
    const auto* e = lookup(id, eid);
    if (e == nullptr) return;
    verdict v = verdict::inconclusive;
    std::string why;
    if (e->p_holm < o.alpha && e->estimate > 0) {
      v = verdict::yes;
      why = fmt::format("{} beats {} by {} points ({}), Holm p = {:.3g}", e->treated, e->control,
                        pct(e->estimate), vci(*e), e->p_holm);
    } else if (e->verdict_high < mm) {
      v = verdict::no;
      why = fmt::format(
          "absence shown: a benefit of {} points or more is excluded (difference {} points, {} below {}), "
          "Holm p = {:.3g}",
          pct(mm), pct(e->estimate), vci(*e), pct(mm), e->p_holm);
    } else {
      why = fmt::format(
          "difference {} points, Holm p = {:.3g}{}; a benefit of {} points or more is not excluded ({})",
          pct(e->estimate), e->p_holm,
          e->p_holm < o.alpha ? " (significant, negative)" : " (not significant)", pct(mm), vci(*e));
    }
    push(std::move(id), v, *e,
         fmt::format(
             "yes: Holm p < {} and estimate > 0; no: verdict upper limit < margin {}; interval: {}; {}",
             detail::number_text(o.alpha), detail::number_text(mm), verdict_text, e->method),
         std::move(why));
  };
  const std::string kvl = role_label(kv_full, "kv_full"), ncl = role_label(no_comm, "no_comm"),
                    txl = role_label(text_full, "text_full");
  beats_finding("need.text_beats_no_comm", "need:" + txl + "-" + ncl);
  beats_finding("need.kv_beats_no_comm", "need:" + kvl + "-" + ncl);
  {
    const std::string id = "need.kv_noninferior_to_text";
    if (const auto* e = lookup(id, "need:" + kvl + "-" + txl)) {
      const verdict v = e->verdict_low > -mm    ? verdict::yes
                        : e->verdict_high < -mm ? verdict::no
                                                : verdict::inconclusive;
      push(id, v, *e,
           fmt::format("non-inferiority by the one-sided {} bound: yes if verdict lower limit > -{}, no if "
                       "verdict upper limit < -{}; interval: {}",
                       detail::number_text(o.alpha), detail::number_text(mm), detail::number_text(mm),
                       verdict_text),
           fmt::format("{} − {} = {} points ({}), margin {} points: {}", kvl, txl, pct(e->estimate), vci(*e),
                       pct(mm),
                       v == verdict::yes
                           ? (e->verdict_low > 0 ? "non-inferior, and superiority shown (lower limit > 0)"
                                                 : "non-inferior (lower limit above −margin)")
                       : v == verdict::no ? "inferiority shown (upper limit below −margin)"
                                          : "neither non-inferiority nor inferiority shown"));
    }
  }
  {
    const std::string id = "need.kv_equivalent_to_text";
    if (const auto* e = lookup(id, "need:" + kvl + "-" + txl)) {
      const verdict v = e->verdict_low > -mm && e->verdict_high < mm     ? verdict::yes
                        : e->verdict_low >= mm || e->verdict_high <= -mm ? verdict::no
                                                                         : verdict::inconclusive;
      push(id, v, *e,
           fmt::format(
               "TOST by interval inclusion: yes if the verdict interval lies inside ±{}, no if it lies "
               "entirely outside; interval: {}",
               detail::number_text(mm), verdict_text),
           fmt::format("{} − {} = {} points ({}), margin ±{} points: {}", kvl, txl, pct(e->estimate), vci(*e),
                       pct(mm),
                       v == verdict::yes  ? "equivalent"
                       : v == verdict::no ? "not equivalent (interval outside the margin)"
                                          : "neither equivalence nor a difference beyond the margin shown"));
    }
  }
  beats_finding("need.deranged_beats_no_comm", "need:" + role_label(deranged, "deranged") + "-" + ncl);
  beats_finding("need.zeroed_beats_no_comm", "need:" + role_label(zeroed, "zeroed") + "-" + ncl);
  beats_finding("need.cross_model_beats_no_comm",
                "need:" + role_label(cross_model, "cross_model") + "-" + ncl);
  {
    const std::string id = "no_need.kv_changes_accuracy";
    if (const auto* e = lookup(id, "no_need:" + kvl + "-" + ncl)) {
      verdict v = verdict::inconclusive;
      std::string why;
      if (e->p_holm < o.alpha) {
        v = verdict::yes;
        why = fmt::format("relaying changes accuracy where B needs nothing: {} points ({}), Holm p = {:.3g}",
                          pct(e->estimate), vci(*e), e->p_holm);
      } else {
        const bool eq = e->verdict_low > -mm && e->verdict_high < mm;
        v = eq ? verdict::no : verdict::inconclusive;
        why = fmt::format(
            "difference {} points, not significant (Holm p = {:.3g}); {} {} the margin ±{} points",
            pct(e->estimate), e->p_holm, vci(*e), eq ? "inside" : "not inside", pct(mm));
      }
      push(id, v, *e,
           fmt::format("yes: Holm p < {} (either sign); no: verdict interval inside ±{}; interval: {}; {}",
                       detail::number_text(o.alpha), detail::number_text(mm), verdict_text, e->method),
           std::move(why));
    }
  }
  out.findings.push_back(noise_tolerance_finding(out.noise, noise_opt));
  const auto control = std::find_if(out.findings.begin(), out.findings.end(),
                                    [](const finding& f) { return f.id == "need.text_beats_no_comm"; });
  apply_positive_control(out.findings, control == out.findings.end() ? nullptr : &*control);
  return out;
}

LATENTAUDIT_INLINE void apply_positive_control(std::span<finding> findings, const finding* control) {
  if (control != nullptr && control->answer == verdict::yes) return;
  const std::string why = fmt::format("{} (need.text_beats_no_comm is {})", positive_control_reason,
                                      control == nullptr ? "absent" : verdict_name(control->answer));
  for (auto& f : findings) {
    if (&f == control || f.id == "need.text_beats_no_comm") continue;
    const bool downstream =
        f.id.rfind("need.", 0) == 0 || f.id.rfind("no_need.", 0) == 0 || f.id.rfind("cost.", 0) == 0;
    if (!downstream || f.detail.rfind(positive_control_reason, 0) == 0) continue;
    f.detail = fmt::format("{}; without the gate this finding would read {}: {}", why, verdict_name(f.answer),
                           f.detail);
    f.answer = verdict::inconclusive;
  }
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_AUDIT_INL_HPP
