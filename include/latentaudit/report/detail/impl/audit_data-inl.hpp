// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/detail/audit_data.hpp (header-only mode includes this file; compiled
// mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_DETAIL_IMPL_AUDIT_DATA_INL_HPP
#define LATENTAUDIT_REPORT_DETAIL_IMPL_AUDIT_DATA_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../audit_data.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <boost/math/distributions/binomial.hpp>

#include "../../../core/detail/check.hpp"
#include "../../../estimators/bootstrap.hpp"

namespace latentaudit::detail {

[[nodiscard]] LATENTAUDIT_INLINE audit_regime regime_code(std::string_view r) noexcept {
  return r == "need"       ? audit_regime::need
         : r == "no_need"  ? audit_regime::no_need
         : r == "stale"    ? audit_regime::stale
         : r == "conflict" ? audit_regime::conflict
                           : audit_regime::unknown;
}

[[nodiscard]] LATENTAUDIT_INLINE unit_records group_records(std::string_view fn,
                                                            std::span<const trial_record> records,
                                                            std::span<const std::string> arms,
                                                            duplicate_error on_duplicate) {
  unit_records t;
  t.arm_label.assign(arms.begin(), arms.end());
  t.record_count = records.size();
  std::unordered_map<std::string_view, std::uint32_t> column;
  for (std::size_t a = 0; a < arms.size(); ++a) column.try_emplace(arms[a], static_cast<std::uint32_t>(a));
  std::vector<std::uint32_t> col(records.size());
  std::vector<std::size_t> order;  // the records of `arms`, sorted by (item, seed, arm column, index)
  order.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto it = column.find(records[i].arm);
    if (it == column.end()) continue;
    col[i] = it->second;
    order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = records[a];
    const auto& z = records[b];
    if (x.item != z.item) return x.item < z.item;
    if (x.seed != z.seed) return x.seed < z.seed;
    if (col[a] != col[b]) return col[a] < col[b];
    return a < b;
  });
  const std::size_t na = t.arms();
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto& r = records[order[k]];
    const bool new_unit =
        k == 0 || r.item != records[order[k - 1]].item || r.seed != records[order[k - 1]].seed;
    if (new_unit) {
      t.unit_item.push_back(r.item);
      t.unit_seed.push_back(r.seed);
      t.rec.resize(t.rec.size() + na, unit_records::npos);
    } else if (col[order[k]] == col[order[k - 1]]) {
      if (on_duplicate == duplicate_error::invalid_argument) {
        throw_invalid(fn, "records",
                      "must hold one record per (item, seed, arm), got two for item " +
                          std::to_string(r.item) + ", seed " + std::to_string(r.seed) + ", arm '" + r.arm +
                          "'");
      }
      LATENTAUDIT_THROW(corrupt_data(
          fmt::format("{}: duplicate record for (item {}, seed {}, arm '{}'): records {} and {}", fn, r.item,
                      r.seed, r.arm, std::min(order[k - 1], order[k]), std::max(order[k - 1], order[k]))));
    }
    t.rec[(t.unit_item.size() - 1) * na + col[order[k]]] = order[k];
  }
  return t;
}

[[nodiscard]] LATENTAUDIT_INLINE unit_records select_units(const unit_records& table,
                                                           std::span<const std::string> arms) {
  unit_records t;
  t.arm_label.assign(arms.begin(), arms.end());
  t.record_count = table.record_count;
  std::vector<std::size_t> from(arms.size(), unit_records::npos);  // the table's column of each arm
  for (std::size_t a = 0; a < arms.size(); ++a) {
    if (std::find(arms.begin(), arms.begin() + static_cast<std::ptrdiff_t>(a), arms[a]) !=
        arms.begin() + static_cast<std::ptrdiff_t>(a))
      continue;  // listed before: its records are in the first column
    from[a] = table.find_label(arms[a]);
  }
  const std::size_t na = t.arms();
  for (std::size_t u = 0; u < table.units(); ++u) {
    bool any = false;
    for (std::size_t a = 0; a < na && !any; ++a)
      any = from[a] != unit_records::npos && table.record(u, from[a]) != unit_records::npos;
    if (!any) continue;
    t.unit_item.push_back(table.unit_item[u]);
    t.unit_seed.push_back(table.unit_seed[u]);
    for (std::size_t a = 0; a < na; ++a)
      t.rec.push_back(from[a] == unit_records::npos ? unit_records::npos : table.record(u, from[a]));
  }
  return t;
}

[[nodiscard]] LATENTAUDIT_INLINE unit_records units_of(const unit_records* table, std::string_view fn,
                                                       std::span<const trial_record> records,
                                                       std::span<const std::string> arms,
                                                       duplicate_error on_duplicate) {
  if (table != nullptr && table->record_count != records.size()) {
    // an internal misuse, never data: a table read over records it was not built from would index
    // past them (the >450-item report's SIGSEGV, issue 51)
    throw_invalid(fn, "units",
                  fmt::format("the report's table was built over {} records, not these {}",
                              table->record_count, records.size()));
  }
  return table != nullptr ? select_units(*table, arms) : group_records(fn, records, arms, on_duplicate);
}

[[nodiscard]] LATENTAUDIT_INLINE const char* regime_name(audit_regime r) noexcept {
  return r == audit_regime::need       ? "need"
         : r == audit_regime::no_need  ? "no_need"
         : r == audit_regime::stale    ? "stale"
         : r == audit_regime::conflict ? "conflict"
                                       : "unknown";
}

[[nodiscard]] LATENTAUDIT_INLINE audit_data build_audit_data(std::string_view fn,
                                                             std::span<const trial_record> records,
                                                             const arm_schedule& schedule,
                                                             const design_grid& design) {
  if (records.empty()) throw_invalid(fn, "records", "must hold at least one record, got none");
  audit_data d;
  std::vector<std::string> labels;  // first-seen order
  std::unordered_map<std::string, std::uint32_t> arm_index;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    if (r.arm.empty()) {
      LATENTAUDIT_THROW(corrupt_data(
          fmt::format("{}: record {} (item {}, seed {}) has an empty arm label", fn, i, r.item, r.seed)));
    }
    auto finite = [&](std::string_view field, double x) {
      if (!std::isfinite(x)) {
        LATENTAUDIT_THROW(
            corrupt_data(fmt::format("{}: record {} (item {}, seed {}, arm '{}'): field '{}' is not finite",
                                     fn, i, r.item, r.seed, r.arm, field)));
      }
    };
    finite("latency", r.latency.total_s());
    if (r.attention_mass) finite("attention_mass", *r.attention_mass);
    if (r.hidden_cosine) finite("hidden_cosine", *r.hidden_cosine);
    if (r.next_token_kl) finite("next_token_kl", *r.next_token_kl);
    if (r.noise_sigma) finite("noise_sigma", *r.noise_sigma);
    for (const auto& c : r.covariates) finite(c.name, c.value);
    const std::string& kind = r.arm_kind.empty() ? r.arm : r.arm_kind;
    auto [it, inserted] = arm_index.try_emplace(r.arm, static_cast<std::uint32_t>(labels.size()));
    if (inserted) {
      labels.push_back(r.arm);
      d.arm_kind.push_back(kind);
      d.kinds.push_back(record_arm_kind(r.arm_kind, r.arm));
      std::optional<trial_arm> parsed;
      try {
        parsed = parse_arm(r.arm);
      } catch (const invalid_argument&) {  // a label of another stack: no dose in it
      }
      d.label_arms.push_back(std::move(parsed));
    } else if (d.arm_kind[it->second] != kind) {
      LATENTAUDIT_THROW(corrupt_data(fmt::format("{}: arm '{}' has two arm_kinds, '{}' and '{}' (record {})",
                                                 fn, r.arm, d.arm_kind[it->second], kind, i)));
    }
  }
  static_cast<unit_records&>(d) = group_records(fn, records, labels, duplicate_error::corrupt_data);
  const std::size_t na = d.arms();
  d.y.assign(d.rec.size(), std::int8_t{-1});
  d.unit_regime.resize(d.units());
  for (std::size_t u = 0; u < d.units(); ++u) {
    const trial_record* f = nullptr;  // the unit's record of its first arm
    for (std::size_t a = 0; a < na; ++a) {
      const std::size_t i = d.record(u, a);
      if (i == audit_data::npos) continue;
      const auto& r = records[i];
      if (f == nullptr) {
        f = &r;
        d.unit_regime[u] = regime_code(r.regime);
      } else if (r.regime != f->regime) {
        LATENTAUDIT_THROW(
            corrupt_data(fmt::format("{}: the arms of (item {}, seed {}) disagree on the regime: arm '{}' "
                                     "says '{}', arm '{}' says '{}'",
                                     fn, r.item, r.seed, f->arm, f->regime, r.arm, r.regime)));
      }
      d.y[u * na + a] = r.correct ? 1 : 0;
    }
  }
  if (design.given()) add_design_units(fn, d, design, records.size());
  if (!schedule.empty()) {
    for (std::size_t u = 0; u < d.units(); ++u) {
      const std::string regime(regime_name(d.unit_regime[u]));
      for (std::size_t a = 0; a < na; ++a) {
        if (schedule.runs(d.unit_item[u], arm_cell{regime, d.arm_label[a]})) continue;
        if (const std::size_t i = d.record(u, a); i != audit_data::npos)
          LATENTAUDIT_THROW(corrupt_data(fmt::format(
              "{}: record {} (item {}, seed {}, arm '{}') is a trial the schedule left out (schedule.json: "
              "arm '{}' stopped on the {} regime's items of batch {})",
              fn, i, d.unit_item[u], d.unit_seed[u], d.arm_label[a], d.arm_label[a], regime,
              d.unit_item[u] / schedule.batch_items)));
        d.y[u * na + a] = audit_data::not_run;
      }
    }
  }
  d.items = d.unit_item;
  d.items.erase(std::unique(d.items.begin(), d.items.end()), d.items.end());  // units are item-sorted
  d.unit_cluster.resize(d.units());
  for (std::size_t u = 0; u < d.units(); ++u) {
    d.unit_cluster[u] = static_cast<std::uint32_t>(
        std::lower_bound(d.items.begin(), d.items.end(), d.unit_item[u]) - d.items.begin());
  }
  d.seeds = d.unit_seed;
  std::sort(d.seeds.begin(), d.seeds.end());
  d.seeds.erase(std::unique(d.seeds.begin(), d.seeds.end()), d.seeds.end());
  return d;
}

LATENTAUDIT_INLINE void add_design_units(std::string_view fn, audit_data& d, const design_grid& design,
                                         std::size_t records) {
  const long double listed = static_cast<long double>(design.items) * static_cast<long double>(design.seeds);
  if (listed > 4.0L * static_cast<long double>(records) + 1024.0L)
    throw_invalid(
        fn, "options.design_items",
        fmt::format("the design lists {} x {} units, more than 4 x the {} records + 1024: the records "
                    "are not of this design",
                    design.items, design.seeds, records));
  const std::size_t na = d.arms();
  std::unordered_map<std::uint64_t, audit_regime> item_regime;  // each recorded item's regime
  for (std::size_t u = 0; u < d.units(); ++u) item_regime.try_emplace(d.unit_item[u], d.unit_regime[u]);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> absent;
  std::size_t u = 0;  // units are sorted by (item, seed): one merge pass
  for (std::uint64_t i = 0; i < design.items; ++i) {
    const bool recorded = item_regime.count(i) != 0;
    if (!recorded) {
      ++d.design_items_absent;
      if (i >= design.item_regime.size() || regime_code(design.item_regime[i]) == audit_regime::unknown)
        ++d.design_items_regime_assumed;
    }
    for (std::uint64_t s = 0; s < design.seeds; ++s) {
      while (u < d.units() && (d.unit_item[u] < i || (d.unit_item[u] == i && d.unit_seed[u] < s))) ++u;
      if (u < d.units() && d.unit_item[u] == i && d.unit_seed[u] == s) continue;
      absent.emplace_back(i, s);
    }
  }
  if (absent.empty()) return;
  d.design_units_absent = absent.size();
  auto regime_of = [&](std::uint64_t i) {
    if (const auto it = item_regime.find(i); it != item_regime.end()) return it->second;
    const auto g = i < design.item_regime.size() ? regime_code(design.item_regime[i]) : audit_regime::unknown;
    return g == audit_regime::unknown ? audit_regime::need : g;
  };
  const std::size_t n = d.units() + absent.size();
  std::vector<std::uint64_t> item, seed;
  std::vector<std::size_t> rec;
  std::vector<std::int8_t> y;
  std::vector<audit_regime> regime;
  item.reserve(n);
  seed.reserve(n);
  rec.reserve(n * na);
  y.reserve(n * na);
  regime.reserve(n);
  std::size_t k = 0;
  for (std::size_t v = 0; v < d.units() || k < absent.size();) {
    const bool take_absent =
        k < absent.size() && (v >= d.units() || absent[k] < std::pair{d.unit_item[v], d.unit_seed[v]});
    if (take_absent) {
      item.push_back(absent[k].first);
      seed.push_back(absent[k].second);
      rec.insert(rec.end(), na, unit_records::npos);
      y.insert(y.end(), na, std::int8_t{-1});
      regime.push_back(regime_of(absent[k].first));
      ++k;
    } else {
      item.push_back(d.unit_item[v]);
      seed.push_back(d.unit_seed[v]);
      rec.insert(rec.end(), d.rec.begin() + static_cast<std::ptrdiff_t>(v * na),
                 d.rec.begin() + static_cast<std::ptrdiff_t>((v + 1) * na));
      y.insert(y.end(), d.y.begin() + static_cast<std::ptrdiff_t>(v * na),
               d.y.begin() + static_cast<std::ptrdiff_t>((v + 1) * na));
      regime.push_back(d.unit_regime[v]);
      ++v;
    }
  }
  d.unit_item = std::move(item);
  d.unit_seed = std::move(seed);
  d.rec = std::move(rec);
  d.y = std::move(y);
  d.unit_regime = std::move(regime);
}

[[nodiscard]] LATENTAUDIT_INLINE contrast_view view_of_items(std::span<const double> items, double alpha,
                                                             std::size_t horizon) {
  const auto v = bounded_mean_interval(items, -1.0, 1.0,
                                       {.alpha_lower = alpha, .alpha_upper = alpha, .horizon = horizon});
  return {.estimate = v.estimate,
          .verdict_low = v.low,
          .verdict_high = v.high,
          .p_value = bounded_mean_p_value(items, -1.0, 1.0, 0.0, alpha, 0.9, horizon)};
}

[[nodiscard]] LATENTAUDIT_INLINE double noninferiority_p(std::span<const double> items,
                                                         const missing_bounds& mb, double margin,
                                                         double alpha, std::size_t horizon) {
  if (items.empty()) return std::numeric_limits<double>::quiet_NaN();
  double p = bounded_mean_p_value_above(items, -1.0, 1.0, -margin, alpha, 0.9, horizon);
  if (mb.any() && !mb.low_items.empty())
    p = std::max(p, bounded_mean_p_value_above(mb.low_items, -1.0, 1.0, -margin, alpha, 0.9, horizon));
  return p;
}

[[nodiscard]] LATENTAUDIT_INLINE double request_noninferiority_p(std::span<const double> item_means,
                                                                 std::span<const double> counts,
                                                                 double margin, double alpha,
                                                                 std::size_t horizon) {
  if (item_means.empty() || counts.size() != item_means.size())
    return std::numeric_limits<double>::quiet_NaN();
  const double n_max = *std::max_element(counts.begin(), counts.end());
  std::vector<double> x(item_means.size());
  for (std::size_t g = 0; g < x.size(); ++g) x[g] = counts[g] * (item_means[g] + margin) / n_max;
  return bounded_mean_p_value_above(x, std::min(0.0, margin - 1.0), 1.0 + margin, 0.0, alpha, 0.9, horizon);
}

[[nodiscard]] LATENTAUDIT_INLINE double pairs_p_value(const paired_units& p) {
  if (p.pairs() == 0) return std::numeric_limits<double>::quiet_NaN();
  if (p.single_arm) return mcnemar_test(p.table, {.if_degenerate = on_degenerate::flag}).exact_p_value;
  return binomial_half_two_sided_p(p.positive, p.positive + p.negative);
}

[[nodiscard]] LATENTAUDIT_INLINE double exact_lower_limit(std::size_t b, std::size_t c, double alpha,
                                                          double betting_low) {
  const std::size_t n = b + c;
  double p_above = 1.0, pi_low = 0.0;
  if (b > 0) {
    const boost::math::binomial_distribution<double, math_policy> half(static_cast<double>(n), 0.5);
    p_above = boost::math::cdf(boost::math::complement(half, static_cast<double>(b - 1)));
    pi_low = boost::math::binomial_distribution<double, math_policy>::find_lower_bound_on_p(
        static_cast<double>(n), static_cast<double>(b), alpha);
  }
  if (p_above <= alpha) return std::isfinite(betting_low) ? std::max(0.0, betting_low) : 0.0;
  const double conditional = std::min(2.0 * pi_low - 1.0, 0.0);
  return std::isfinite(betting_low) ? std::min(betting_low, conditional) : conditional;
}

[[nodiscard]] LATENTAUDIT_INLINE exact_view exact_view_of(std::size_t b, std::size_t c, double alpha,
                                                          double betting_low) {
  exact_view v{.up = b, .down = c};
  v.p_above = 1.0;
  if (b > 0) {
    const boost::math::binomial_distribution<double, math_policy> half(static_cast<double>(b + c), 0.5);
    v.p_above = boost::math::cdf(boost::math::complement(half, static_cast<double>(b - 1)));
  }
  v.p_two = binomial_half_two_sided_p(b, b + c);
  v.lower = exact_lower_limit(b, c, alpha, betting_low);
  return v;
}

[[nodiscard]] LATENTAUDIT_INLINE std::vector<double> item_differences(const paired_units& p) {
  std::vector<double> out(p.clusters());
  for (std::size_t g = 0; g < out.size(); ++g) out[g] = p.cluster_sum[g] / p.cluster_count[g];
  return out;
}

[[nodiscard]] LATENTAUDIT_INLINE cluster_interval cluster_bootstrap_interval(
    const paired_units& p, double level, std::size_t replicates, std::uint64_t seed, unsigned threads) {
  cluster_interval out;
  if (p.clusters() < 2) return out;
  const auto& sums = p.cluster_sum;
  const auto& counts = p.cluster_count;
  // The mean of the drawn items' mean differences: the estimand of the findings (the mean over
  // items of the item means), which is the mean over pairs when every item holds as many pairs.
  auto stat = [&](const resample_view& v) {
    double s = 0, c = 0;
    for (auto i : v.indices()) {
      s += sums[i] / counts[i];
      c += 1.0;
    }
    return s / c;
  };
  const auto r = bootstrap(std::span<const double>(sums), stat,
                           {.replicates = replicates,
                            .level = level,
                            .method = bootstrap_ci_method::percentile,
                            .convention = bootstrap_convention::boot,
                            .seed = seed,
                            .threads = threads,
                            .if_degenerate = on_degenerate::flag});
  if (r.effect.status == estimate_status::degenerate && std::isfinite(r.effect.estimate)) {
    out.low = out.high = r.effect.estimate;
    out.point_mass = true;
  } else {
    out.low = r.effect.ci_low;
    out.high = r.effect.ci_high;
  }
  return out;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_IMPL_AUDIT_DATA_INL_HPP
