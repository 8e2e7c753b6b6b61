// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/audit.hpp (header-only mode includes this file; compiled mode compiles
// it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_IMPL_AUDIT_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_AUDIT_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../audit.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "../../core/detail/check.hpp"
#include "../../estimators/heterogeneity.hpp"
#include "../analyses/answer_probability.hpp"
#include "../analyses/effects.hpp"

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
  if (o.looks < 1 || (o.horizon == 0 && o.looks != 1))
    throw_invalid(fn, "options.looks",
                  "must be 1 without a horizon and at least 1 with one, got " + number_text(o.looks));
  if ((static_cast<double>(o.bootstrap_replicates) + 1.0) * o.alpha / (2.0 * static_cast<double>(o.looks)) <
      1.0)
    throw_invalid(
        fn, "options.looks",
        "needs (B + 1)·alpha/(2·looks) >= 1 (the cost bootstrap's limits at alpha/(2·looks)), got " +
            number_text(o.looks) + " looks with B = " + number_text(o.bootstrap_replicates));
  if ((o.design_items == 0) != (o.design_seeds == 0))
    throw_invalid(fn, "options.design_items",
                  "and options.design_seeds are given together (the design's units) or both 0, got " +
                      number_text(o.design_items) + " and " + number_text(o.design_seeds));
  if (!o.schedule.empty() && o.horizon == 0)
    throw_invalid(
        fn, "options.schedule",
        "applies to an audit looked at while it grows: it needs options.horizon (the design's items)");
}

LATENTAUDIT_INLINE std::string item_list(std::span<const std::uint64_t> items) {
  std::string s;
  for (std::size_t k = 0; k < items.size() && k < 10; ++k)
    s += fmt::format("{}{}", k == 0 ? "" : ", ", items[k]);
  if (items.size() > 10) s += fmt::format(" and {} more", items.size() - 10);
  return s;
}

LATENTAUDIT_INLINE void design_completeness(const audit_data& d, const audit_options& o, audit_core& out) {
  out.design_given = o.horizon == 0 && o.design_items > 0 && o.design_seeds > 0;
  out.design_units_absent = d.design_units_absent;
  if (out.design_given) {
    if (d.design_units_absent == 0) return;
    std::vector<std::uint64_t> items;  // the items of the absent units
    for (std::size_t u = 0; u < d.units(); ++u) {
      bool none = true;
      for (std::size_t a = 0; a < d.arms() && none; ++a) none = d.record(u, a) == audit_data::npos;
      if (none && (items.empty() || items.back() != d.unit_item[u])) items.push_back(d.unit_item[u]);
    }
    out.input_warnings.push_back(fmt::format(
        "{} (item, seed) unit(s) of the design ({} items x {} seeds) hold no record in any arm (items {}{}): "
        "each is missing in every arm, and every finding that reads them is decided on worst-case bounds{}",
        d.design_units_absent, o.design_items, o.design_seeds, item_list(items),
        d.design_items_absent > 0 ? fmt::format("; {} item(s) hold no record at all", d.design_items_absent)
                                  : std::string(),
        d.design_items_regime_assumed > 0
            ? fmt::format(" ({} of them of no known regime, counted as need items)",
                          d.design_items_regime_assumed)
            : std::string()));
    out.headline.push_back(fmt::format(
        "{} unit(s) of the design hold no record in any arm: they count as missing in every arm, and the "
        "decision rests on their worst-case bounds.",
        d.design_units_absent));
    return;
  }
  // No design: a unit missing in every arm cannot be seen. What the records show of it: unequal
  // seeds per item, and items with fewer records than their regime's mode.
  std::map<std::uint64_t, std::size_t> seeds_of, records_of;
  std::map<std::uint64_t, audit_regime> regime_of;
  for (std::size_t u = 0; u < d.units(); ++u) {
    ++seeds_of[d.unit_item[u]];
    regime_of.try_emplace(d.unit_item[u], d.unit_regime[u]);
    for (std::size_t a = 0; a < d.arms(); ++a)
      records_of[d.unit_item[u]] += d.record(u, a) != audit_data::npos;
  }
  std::size_t most = 0;
  for (const auto& [i, k] : seeds_of) most = std::max(most, k);
  std::vector<std::uint64_t> fewer_seeds;
  for (const auto& [i, k] : seeds_of)
    if (k < most) fewer_seeds.push_back(i);
  if (!fewer_seeds.empty())
    out.input_warnings.push_back(
        fmt::format("seeds per item are unequal: {} item(s) hold fewer (item, seed) units than the most any "
                    "item holds ({}): "
                    "items {}; without a design the units they lack cannot be counted as missing",
                    fewer_seeds.size(), most, item_list(fewer_seeds)));
  std::map<audit_regime, std::map<std::size_t, std::size_t>> per_regime;  // regime -> records -> items
  for (const auto& [i, k] : records_of) ++per_regime[regime_of[i]][k];
  for (const auto& [g, counts] : per_regime) {
    std::size_t mode = 0, best = 0;
    for (const auto& [k, n] : counts)
      if (n > best) best = n, mode = k;
    std::vector<std::uint64_t> below;
    for (const auto& [i, k] : records_of)
      if (regime_of[i] == g && k < mode) below.push_back(i);
    if (!below.empty())
      out.input_warnings.push_back(fmt::format(
          "{} {} item(s) hold fewer records than the regime's mode ({} records an item): items {}",
          below.size(), regime_name(g), mode, item_list(below)));
  }
  out.headline.push_back(
      "No design lists the units: a unit missing in every arm (a stack that lost it with its failed relay) "
      "cannot be seen, so the decision counts only the units some record holds (give the design: "
      "design.json beside the records, or audit_options::design_items and design_seeds).");
}

LATENTAUDIT_INLINE void audit_completeness(const audit_data& d, std::span<const trial_record> records,
                                           const audit_options& o, audit_core& out) {
  // the arms: the design's and any other seen in the records (a record outside the design is the
  // CLI's design warning), sorted by label so that the table does not depend on the records' order
  std::vector<std::string> arms = o.design_arms;
  arms.insert(arms.end(), d.arm_label.begin(), d.arm_label.end());
  std::sort(arms.begin(), arms.end());
  arms.erase(std::unique(arms.begin(), arms.end()), arms.end());
  constexpr audit_regime regimes[] = {audit_regime::need, audit_regime::no_need, audit_regime::stale,
                                      audit_regime::conflict, audit_regime::unknown};
  std::size_t regime_units[5] = {};
  for (auto g : d.unit_regime) ++regime_units[static_cast<std::size_t>(g)];
  for (const auto& arm : arms) {
    const std::size_t a = d.find_label(arm);
    std::size_t total_missing = 0, total_errors = 0;
    std::string where;
    for (auto g : regimes) {
      const std::size_t units = regime_units[static_cast<std::size_t>(g)];
      if (units == 0) continue;
      arm_completeness c{.arm = arm, .regime = regime_name(g), .units = units};
      if (!o.schedule.empty())
        for (std::size_t u = 0; u < d.units(); ++u)
          if (d.unit_regime[u] == g && !o.schedule.runs(d.unit_item[u], arm_cell{c.regime, arm})) {
            --c.units;
            ++c.not_scheduled;
          }
      if (a != audit_data::npos)
        for (std::size_t u = 0; u < d.units(); ++u) {
          if (d.unit_regime[u] != g) continue;
          const std::size_t i = d.record(u, a);
          if (i == audit_data::npos) continue;
          ++c.records;
          c.relay_errors += records[i].relay_error ? 1 : 0;
        }
      c.missing = c.units - c.records;
      total_missing += c.missing;
      total_errors += c.relay_errors;
      if (c.missing > 0 || c.relay_errors > 0)
        where += fmt::format("{}{} {}/{} missing, {} failed", where.empty() ? "" : "; ", c.regime, c.missing,
                             c.units, c.relay_errors);
      out.completeness.push_back(std::move(c));
    }
    if (total_missing > 0)
      out.input_warnings.push_back(fmt::format(
          "arm '{}': {} (item, seed) unit(s) without its record ({}); findings that read it are decided on "
          "worst-case bounds",
          arm, total_missing, where));
    else if (total_errors > 0)
      out.input_warnings.push_back(
          fmt::format("arm '{}': {} failed relay(s) (relay_error; counted as the arm's outcome: {})", arm,
                      total_errors, where));
  }
  design_completeness(d, o, out);
  // The fields the decision's checks read (docs/records.md "What each analysis needs").
  std::size_t no_regime = 0, relays = 0, no_fp = 0, no_rfp = 0, timed = 0, relay_bytes = 0;
  std::vector<char> relay(records.size(), 1);  // per record, from its arm's kind (classified once)
  for (std::size_t u = 0; u < d.units(); ++u)
    for (std::size_t a = 0; a < d.arms(); ++a)
      if (const std::size_t i = d.record(u, a); i != audit_data::npos) relay[i] = !d.is(a, arm_kind::no_comm);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    no_regime += r.regime.empty() ? 1 : 0;
    no_rfp += r.receiver_fingerprint.empty() ? 1 : 0;
    timed += r.latency.receiver_s() > 0.0 ? 1 : 0;
    if (!relay[i]) continue;
    ++relays;
    no_fp += r.sender_fingerprint.empty() ? 1 : 0;
    relay_bytes += r.bytes > 0 ? 1 : 0;
  }
  const std::size_t n = records.size();
  // regime: any record without it is reported; the others only when no record holds them (a stack
  // that never recorded the field: the check that reads it cannot pass)
  auto missing_field = [&](const char* field, std::size_t lacking, std::size_t of, const char* needs) {
    if (lacking == 0 || of == 0 || (lacking < of && std::string_view(field) != "regime")) return;
    if (lacking == of) out.missing_fields.emplace_back(field);
    out.input_warnings.push_back(fmt::format("records lack '{}' ({} of {}{}): {}", field, lacking, of,
                                             of == n ? "" : " relay records", needs));
  };
  missing_field("regime", no_regime, n,
                "every need/no_need/stale/conflict analysis reads it, so their findings and the decision are "
                "inconclusive without it (a record without it enters only the 'all' summaries)");
  missing_field("receiver_fingerprint", no_rfp, n, "the decision's homogeneity check reads it");
  missing_field("sender_fingerprint", no_fp, relays, "the decision's homogeneity check reads it");
  missing_field(
      "timings", n - timed, n,
      "the cost check reads the stage timings (export_s through b_decode_s; all zero or absent here)");
  missing_field("bytes", relays - relay_bytes, relays, "the cost check reads the relay's bytes on the wire");
}

[[nodiscard]] LATENTAUDIT_INLINE std::string percent(double level) {
  return fmt::format("{:g}", 100.0 * level);
}

[[nodiscard]] LATENTAUDIT_INLINE betting_interval item_accuracy_interval(std::span<const double> item_means,
                                                                         double accuracy, double level,
                                                                         std::size_t horizon) {
  const double a = (1.0 - level) / 2.0;
  auto b =
      bounded_mean_interval(item_means, 0.0, 1.0, {.alpha_lower = a, .alpha_upper = a, .horizon = horizon});
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
  std::vector<std::string> role_warnings;
  const auto roles = detail::resolve_arm_roles(records, role_warnings);
  return detail::analyse_records_with_roles(records, o, roles, role_warnings);
}

namespace detail {

// The CATE section of analyse_records: kv_full − no_comm by regime, and (need) by every covariate
// (numbers by tertile, labels by value), with Holm over every subgroup, into out.cate.
LATENTAUDIT_INLINE void audit_cate(const audit_data& d, std::span<const trial_record> records,
                                   std::size_t kv_full, std::size_t no_comm, const audit_options& o,
                                   audit_core& out) {
  auto& warn = out.warnings;
  const double level = 1.0 - o.alpha;
  const std::size_t B = o.bootstrap_replicates;
  auto in_regime = [&](audit_regime r) { return [&d, r](std::size_t u) { return d.unit_regime[u] == r; }; };
  // ---- CATE: kv_full − no_comm by regime, and (need) by every covariate: numbers by tertile,
  // labels by value; Holm over every subgroup ----
  if (kv_full != audit_data::npos && no_comm != audit_data::npos) {
    const std::size_t t[] = {kv_full};
    auto add = [&](std::string variable, std::string lvl, std::string regime, const detail::paired_units& p) {
      cate_effect c{.arm_pair = d.arm_label[kv_full] + "-" + d.arm_label[no_comm],
                    .variable = std::move(variable),
                    .level = std::move(lvl),
                    .regime = std::move(regime),
                    .n = p.pairs()};
      {  // the mean over items of the item means, the quantity the cluster bootstrap resamples
        const auto items = detail::item_differences(p);
        double sum = 0;
        for (double x : items) sum += x;
        c.estimate = sum / static_cast<double>(items.size());
      }
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
    // Every covariate of the need-regime pairs (read from the kv_full record, else no_comm's):
    // numbers by tertile, labels by value; doc_tokens first, then in order of first appearance.
    std::vector<std::size_t> paired;
    for (std::size_t u = 0; u < d.units(); ++u)
      if (d.unit_regime[u] == audit_regime::need && d.outcome(u, kv_full) >= 0 && d.outcome(u, no_comm) >= 0)
        paired.push_back(u);
    auto rec_of = [&](std::size_t u, std::size_t a) -> const trial_record& {
      return records[d.rec[u * d.arms() + a]];
    };
    std::vector<std::string> num_names{"doc_tokens"}, label_names;
    for (auto u : paired)
      for (auto a : {kv_full, no_comm}) {
        for (const auto& c : rec_of(u, a).covariates)
          if (std::find(num_names.begin(), num_names.end(), c.name) == num_names.end())
            num_names.push_back(c.name);
        for (const auto& c : rec_of(u, a).covariate_labels)
          if (std::find(label_names.begin(), label_names.end(), c.name) == label_names.end())
            label_names.push_back(c.name);
      }
    for (const auto& name : num_names) {
      std::vector<double> unit_v(d.units(), audit_nan);
      std::size_t lacking = 0;
      for (auto u : paired) {
        for (auto a : {kv_full, no_comm})
          if (const auto v = rec_of(u, a).covariate_value(name)) {
            unit_v[u] = *v;
            break;
          }
        lacking += std::isnan(unit_v[u]) ? 1 : 0;
      }
      if (paired.empty()) break;
      if (lacking == paired.size()) {
        if (name == "doc_tokens")
          warn.push_back("CATE by doc_tokens skipped: no need-regime pair carries the doc_tokens covariate");
        continue;
      }
      if (lacking > 0)
        warn.push_back(fmt::format("CATE by {}: {} of {} need-regime pairs lack {} and are left out", name,
                                   lacking, paired.size(), name));
      // Breaks over the items' values when the covariate is an item's (constant within each item,
      // as doc_tokens), else over the pairs' values (a query-level covariate).
      bool item_level = true;
      {
        std::vector<double> first(d.units(), audit_nan);
        for (auto u : paired) {
          const double v = unit_v[u];
          if (std::isnan(v)) continue;
          double& f = first[d.unit_cluster[u]];
          if (std::isnan(f))
            f = v;
          else if (f != v)
            item_level = false;
        }
      }
      std::vector<double> vals;
      {
        std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
        for (auto u : paired) {
          if (std::isnan(unit_v[u]) || (item_level && d.unit_cluster[u] == last)) continue;
          last = d.unit_cluster[u];
          vals.push_back(unit_v[u]);
        }
      }
      if (std::all_of(vals.begin(), vals.end(), [&](double x) { return x == vals.front(); }))
        continue;  // constant: no subgroups to compare
      if (vals.size() < 6) {
        warn.push_back(fmt::format("CATE by {} skipped: {} {} carry {}, 6 needed for tertiles", name,
                                   vals.size(), item_level ? "items" : "pairs", name));
        continue;
      }
      std::vector<double> edges;  // type-7 tertile breaks; tied breaks merge their bins
      for (int q = 0; q <= 3; ++q) {
        const double e = quantile_type7(vals, q / 3.0);
        if (edges.empty() || e > edges.back()) edges.push_back(e);
      }
      if (edges.size() < 3) {
        warn.push_back(
            fmt::format("CATE by {} skipped: tied tertile breaks (too few distinct values)", name));
        continue;
      }
      for (std::size_t q = 0; q + 1 < edges.size(); ++q) {
        const double lo = edges[q], hi = edges[q + 1];
        auto keep = [&, q, lo, hi](std::size_t u) {
          const double v = unit_v[u];
          return d.unit_regime[u] == audit_regime::need && !std::isnan(v) && (q == 0 ? v >= lo : v > lo) &&
                 v <= hi;
        };
        auto p = detail::collect_pairs(d, t, no_comm, keep);
        if (p.pairs() == 0) continue;
        add(name, fmt::format("Q{} {}{:g}, {:g}]", q + 1, q == 0 ? "[" : "(", lo, hi), "need", p);
      }
    }
    constexpr std::size_t max_label_levels = 20;
    for (const auto& name : label_names) {
      std::vector<std::string> unit_l(d.units());
      std::vector<char> has(d.units(), 0);
      std::vector<std::string> levels;
      std::size_t lacking = 0;
      for (auto u : paired) {
        for (auto a : {kv_full, no_comm}) {
          for (const auto& c : rec_of(u, a).covariate_labels)
            if (c.name == name) {
              unit_l[u] = c.value;
              has[u] = 1;
              break;
            }
          if (has[u]) break;
        }
        if (!has[u]) {
          ++lacking;
          continue;
        }
        if (std::find(levels.begin(), levels.end(), unit_l[u]) == levels.end()) levels.push_back(unit_l[u]);
      }
      if (lacking > 0)
        warn.push_back(fmt::format("CATE by {}: {} of {} need-regime pairs lack {} and are left out", name,
                                   lacking, paired.size(), name));
      if (levels.size() < 2) continue;  // one label: no subgroups to compare
      if (levels.size() > max_label_levels) {
        warn.push_back(fmt::format("CATE by {} skipped: {} labels, at most {} are reported", name,
                                   levels.size(), max_label_levels));
        continue;
      }
      for (const auto& level : levels) {
        auto keep = [&](std::size_t u) {
          return d.unit_regime[u] == audit_regime::need && has[u] && unit_l[u] == level;
        };
        auto p = detail::collect_pairs(d, t, no_comm, keep);
        if (p.pairs() > 0) add(name, level, "need", p);
      }
    }
    std::vector<double> p;
    for (const auto& c : out.cate) p.push_back(c.p_value);
    const auto adj = p_adjust(p, p_adjust_method::holm);
    for (std::size_t i = 0; i < adj.size(); ++i) out.cate[i].p_adjusted = adj[i];
  } else {
    warn.push_back("CATE skipped: kv_full or no_comm absent");
  }
}

}  // namespace detail

// Each arm's latency by stage summed over the need regime's records (and those without a regime), arms
// in label order (audit_core::stage_latency).
LATENTAUDIT_INLINE std::vector<arm_stage_latency> detail::stage_latency_by_arm(
    std::span<const trial_record> records) {
  std::map<std::string, arm_stage_latency> by_arm;  // label order
  for (const auto& rec : records) {
    if (rec.regime != "need" && !rec.regime.empty()) continue;
    auto& a = by_arm[rec.arm];
    a.arm = rec.arm;
    const auto& L = rec.latency;
    const std::array<double, 9> v = {L.a_prefill_s, L.export_s, L.policy_s,    L.encode_s,  L.transfer_s,
                                     L.decode_s,    L.import_s, L.b_prefill_s, L.b_decode_s};
    for (std::size_t i = 0; i < v.size(); ++i) a.total_s[i] += v[i];
    a.records += 1;
  }
  std::vector<arm_stage_latency> out;
  for (auto& [arm, a] : by_arm) out.push_back(std::move(a));
  return out;
}

LATENTAUDIT_INLINE audit_core detail::analyse_records_with_roles(std::span<const trial_record> records,
                                                                 const audit_options& o,
                                                                 const arm_roles& roles,
                                                                 std::span<const std::string> role_warnings,
                                                                 unit_records* table) {
  constexpr std::string_view fn = "analyse_records";
  detail::check_audit_options(fn, o);
  const detail::audit_data d = [&] {
    const detail::design_grid grid{.items = o.horizon == 0 ? o.design_items : 0,
                                   .seeds = o.horizon == 0 ? o.design_seeds : 0,
                                   .item_regime = o.design_item_regime};
    auto t = detail::build_audit_data(fn, records, o.schedule, grid);
    if (o.horizon != 0 && o.horizon < t.items.size())
      detail::throw_invalid(fn, "options.horizon",
                            "must be 0 or at least the records' " + std::to_string(t.items.size()) +
                                " items, got " + std::to_string(o.horizon));
    t.horizon = o.horizon;
    for (const auto& [name, h] : o.regime_horizon) {
      const auto g = detail::regime_code(name);
      if (g == audit_regime::unknown)
        detail::throw_invalid(fn, "options.regime_horizon", "names an unknown regime '" + name + "'");
      std::set<std::uint64_t> items;  // the records' items of the regime
      for (std::size_t u = 0; u < t.units(); ++u)
        if (t.unit_regime[u] == g) items.insert(t.unit_item[u]);
      if (o.horizon == 0 || h == 0 || h < items.size() || h > o.horizon)
        detail::throw_invalid(fn, "options.regime_horizon",
                              "'" + name + "' must lie between the records' " + std::to_string(items.size()) +
                                  " items of the regime and options.horizon " + std::to_string(o.horizon) +
                                  ", got " + std::to_string(h));
      t.regime_horizon[static_cast<std::size_t>(g)] = h;
    }
    return t;
  }();
  using detail::audit_data;
  using detail::audit_nan;
  using detail::audit_regime;
  audit_core out;
  out.n_records = records.size();
  out.n_items = d.items.size();
  out.n_seeds = d.seeds.size();
  auto& warn = out.warnings;
  const double level = 1.0 - o.alpha;
  const std::size_t B = o.bootstrap_replicates;

  // ---- arms of no known kind: they play no role and are on no dose-response or frontier ----
  for (std::size_t a = 0; a < d.arms(); ++a) {
    if (d.kinds[a]) continue;
    std::string why;
    for (std::size_t u = 0; u < d.units() && why.empty(); ++u)
      if (const std::size_t i = d.record(u, a); i != audit_data::npos) {
        const trial_record& x = records[i];
        if (!x.arm_kind.empty()) {
          why = fmt::format("its arm_kind '{}' is none latentaudit knows", x.arm_kind);
        } else {
          try {
            (void)parse_arm(x.arm);
          } catch (const invalid_argument& e) {
            why = fmt::format("it has no arm_kind and its label is no arm name ({})", e.what());
          }
        }
      }
    warn.push_back(fmt::format("arm '{}': {}; it plays no role and is on no dose-response or frontier",
                               d.arm_label[a], why));
  }

  // ---- coverage warnings ----
  {
    std::size_t unknown = 0;
    for (auto r : d.unit_regime) unknown += r == audit_regime::unknown ? 1 : 0;
    if (unknown > 0) {
      warn.push_back(
          fmt::format("{} of {} (item, seed) units have no 'need', 'no_need', 'stale' or 'conflict' regime; "
                      "they enter only the "
                      "'all' arm summaries",
                      unknown, d.units()));
    }
    for (std::size_t a = 0; a < d.arms(); ++a) {
      std::size_t missing = 0;
      for (std::size_t u = 0; u < d.units(); ++u) missing += d.outcome(u, a) == -1 ? 1 : 0;
      if (missing > 0) {
        warn.push_back(
            fmt::format("arm '{}' is missing on {} of {} (item, seed) units; every paired finding with it is "
                        "decided on the worst-case bounds of the missing outcomes",
                        d.arm_label[a], missing, d.units()));
      }
    }
  }
  detail::audit_completeness(d, records, o, out);

  // ---- per-arm summaries ----
  // Accuracy intervals are clustered by item (the seeds of an item share its document): betting
  // over the item mean accuracies (detail::item_accuracy_interval), never Wilson on the records.
  std::vector<double> item_sum(d.items.size()), item_count(d.items.size()), item_means;
  auto clustered_accuracy = [&](std::size_t x, std::size_t n, std::size_t horizon) {
    item_means.clear();
    for (std::size_t g = 0; g < item_sum.size(); ++g)
      if (item_count[g] > 0) item_means.push_back(item_sum[g] / item_count[g]);
    return detail::item_accuracy_interval(item_means, static_cast<double>(x) / static_cast<double>(n), level,
                                          horizon);
  };
  const std::pair<const char*, int> regimes[] = {
      {"need", 0}, {"no_need", 1}, {"stale", 3}, {"conflict", 4}, {"all", -1}};
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
      const auto w =
          clustered_accuracy(x, n, rcode < 0 ? d.horizon : d.horizon_of(static_cast<audit_regime>(rcode)));
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
  // Resolved once, by label then arm_kind, for every analysis (detail::resolve_arm_roles).
  warn.insert(warn.end(), role_warnings.begin(), role_warnings.end());
  const detail::role_index roles_at = detail::role_index_of(d, roles);
  const std::size_t no_comm = roles_at.of(arm_kind::no_comm), text_full = roles_at.of(arm_kind::text_full),
                    kv_full = roles_at.of(arm_kind::kv_full);

  // ---- paired effects (the Holm family) and decomposition (need): report/analyses/effects.hpp ----
  detail::audit_paired_effects(d, roles_at, o, out);

  // ---- CATE (detail::audit_cate) ----
  detail::audit_cate(d, records, kv_full, no_comm, o, out);

  // ---- noise dose-response and tolerance (need): report/analyses/noise.hpp ----
  const noise_options noise_opt{.alpha = o.alpha,
                                .margin = o.noninferiority_margin,
                                .bootstrap_replicates = B,
                                .seed = o.seed,
                                .threads = o.threads,
                                .horizon = d.horizon_of(audit_regime::need)};
  out.noise = detail::audit_noise(d, records, kv_full, noise_opt, warn);

  // ---- when relay does not pay: stale caches, conflicting caches, drifted senders ----
  // (report/analyses/stale.hpp, conflict.hpp, drift.hpp; Holm over the relay-failure family)
  out.stale = detail::audit_stale(d, records, kv_full, text_full, no_comm, o.alpha, warn);
  out.conflict = detail::audit_conflict(d, records, kv_full, text_full, no_comm, o.alpha, warn);
  {
    regime_contrast* family[] = {&out.stale.kv_vs_text, &out.stale.stale_excess, &out.conflict.kv_vs_no_comm};
    detail::holm_over(family);
  }
  noise_options drift_opt = noise_opt;
  drift_opt.dose = "drift steps";
  drift_opt.dose_field = "drift_steps";
  out.drift = detail::audit_drift(d, records, kv_full, no_comm, text_full, drift_opt, warn);
  // ---- messages: A's cache vs A's message, per k and regime (report/analyses/message.hpp) ----
  out.messages = detail::audit_messages(d, records, no_comm, o.alpha, warn);
  // ---- cache maps: a foreign sender's cache mapped into B's shape (report/analyses/mapped.hpp) ----
  out.mapped = detail::audit_mapped(d, records, kv_full, no_comm, o.alpha, warn);

  // ---- frontier (need) ----
  {
    // A's own cache, whole or transformed, and text (foreign senders and placebos are no
    // compression choice: not on it)
    auto is_kv = [&](std::size_t a) { return d.family(a) == arm_family::kv; };
    auto is_text = [&](std::size_t a) { return d.family(a) == arm_family::text; };
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
      // clustered by item, as the per-arm summaries
      const auto w = clustered_accuracy(x, n, d.horizon_of(audit_regime::need));
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

  // ---- findings: the effect findings (report/analyses/effects.hpp), then the noise tolerance ----
  detail::audit_effect_findings(d, roles_at, o, out);
  out.findings.push_back(noise_tolerance_finding(out.noise, noise_opt));
  out.findings.push_back(stale_worse_finding(out.stale, o.alpha, o.equivalence_margin));
  out.findings.push_back(stale_answer_finding(out.stale, o.alpha, o.equivalence_margin));
  out.findings.push_back(conflict_worse_finding(out.conflict, o.alpha, o.equivalence_margin));
  out.findings.push_back(drift_tolerance_finding(out.drift, drift_opt));
  for (auto& f : message_findings(out.messages, o.alpha, o.equivalence_margin))
    out.findings.push_back(std::move(f));
  for (auto& f : mapped_findings(out.mapped, o.alpha, o.equivalence_margin))
    out.findings.push_back(std::move(f));
  // the likelihood endpoints (report/analyses/answer_probability.hpp): the probability of the
  // reference answer, and of the task's continuation where the records carry it
  for (auto& f : detail::answer_probability_findings(d, records, roles_at, o.alpha, o.equivalence_margin))
    out.findings.push_back(std::move(f));
  for (auto& f :
       detail::continuation_probability_findings(d, records, roles_at, o.alpha, o.equivalence_margin))
    out.findings.push_back(std::move(f));
  // the decision's dependency check: accuracy, then the likelihood endpoints, each in its own
  // alpha-spending step
  out.findings.push_back(detail::carries_information_finding(d, records, roles_at, out.findings, o.alpha));
  const auto control = std::find_if(out.findings.begin(), out.findings.end(), [](const finding& f) {
    return f.key.kind == finding_kind::need_text_beats_no_comm;
  });
  apply_positive_control(out.findings, control == out.findings.end() ? nullptr : &*control);
  if (table != nullptr) *table = static_cast<const unit_records&>(d);
  out.roles = roles;
  out.stage_latency = detail::stage_latency_by_arm(records);
  return out;
}

LATENTAUDIT_INLINE void apply_positive_control(std::span<finding> findings, const finding* control) {
  if (control != nullptr && control->answer == verdict::yes) return;
  const std::string why =
      fmt::format("{} ({} is {})", positive_control_reason, finding_id(finding_kind::need_text_beats_no_comm),
                  control == nullptr ? "absent" : verdict_name(control->answer));
  for (auto& f : findings) {
    // the catalog says which findings the control gates (finding_kind_info::gated; never itself)
    if (&f == control || !finding_info(f.key.kind).gated) continue;
    if (f.detail.rfind(positive_control_reason, 0) == 0) continue;
    f.detail = fmt::format("{}; without the gate this finding would read {}: {}", why, verdict_name(f.answer),
                           f.detail);
    f.answer = verdict::inconclusive;
  }
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_AUDIT_INL_HPP
