// SPDX-License-Identifier: MIT
// latentaudit: the audit's internal view of a set of trial records — the (item, seed) units, the
// arms, the outcome table — and the paired-contrast, cluster-bootstrap and non-inferiority helpers
// that report/audit.hpp builds its tables from. Not part of the public API.
#ifndef LATENTAUDIT_REPORT_DETAIL_AUDIT_DATA_HPP
#define LATENTAUDIT_REPORT_DETAIL_AUDIT_DATA_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "../../core/detail/check.hpp"
#include "../../core/error.hpp"
#include "../../estimators/bootstrap.hpp"
#include "../../estimators/detail/distributions.hpp"
#include "../../estimators/paired_binary.hpp"
#include "../../trial/record.hpp"

namespace latentaudit::detail {

/// @brief Regime codes of a unit.
enum class audit_regime : std::uint8_t { need = 0, no_need = 1, unknown = 2 };

/// @brief The records as a unit × arm table. A unit is one (item, seed); its cluster is the item.
struct audit_data {
  std::vector<std::string> arm_label;       ///< arm labels, first-seen order
  std::vector<std::string> arm_kind;        ///< arm_kind of each arm (one per arm)
  std::vector<std::uint64_t> items;         ///< distinct items, ascending
  std::vector<std::uint64_t> seeds;         ///< distinct seeds, ascending
  std::vector<std::uint64_t> unit_item;     ///< per unit
  std::vector<std::uint64_t> unit_seed;     ///< per unit
  std::vector<std::uint32_t> unit_cluster;  ///< per unit: index of its item in `items`
  std::vector<audit_regime> unit_regime;    ///< per unit
  std::vector<std::int8_t> y;               ///< [unit · arms + arm]: −1 absent, else correct (0/1)
  std::vector<std::size_t> rec;             ///< [unit · arms + arm]: record index, or npos
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);  ///< "no record"

  /// @brief Number of arms.
  [[nodiscard]] std::size_t arms() const noexcept { return arm_label.size(); }
  /// @brief Number of units.
  [[nodiscard]] std::size_t units() const noexcept { return unit_item.size(); }
  /// @brief Outcome of arm `a` on unit `u` (−1 when absent).
  [[nodiscard]] int outcome(std::size_t u, std::size_t a) const noexcept { return y[u * arms() + a]; }
  /// @brief Index of the arm labelled `label`, or npos.
  [[nodiscard]] std::size_t find_label(std::string_view label) const noexcept {
    for (std::size_t a = 0; a < arms(); ++a)
      if (arm_label[a] == label) return a;
    return npos;
  }
};

/// @brief The regime code of a regime string.
[[nodiscard]] inline audit_regime regime_code(std::string_view r) noexcept {
  return r == "need" ? audit_regime::need : r == "no_need" ? audit_regime::no_need : audit_regime::unknown;
}

/// @brief Builds the unit × arm table, validating the records.
/// @throws invalid_argument for no records; corrupt_data for a duplicate (item, seed, arm), an arm
///         with two arm_kinds, arms of one unit with different regimes, or a non-finite field
[[nodiscard]] inline audit_data build_audit_data(std::string_view fn, std::span<const trial_record> records) {
  if (records.empty()) throw_invalid(fn, "records", "must hold at least one record, got none");
  audit_data d;
  std::unordered_map<std::string, std::uint32_t> arm_index;
  std::vector<std::uint32_t> arm_of(records.size());
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
    auto [it, inserted] = arm_index.try_emplace(r.arm, static_cast<std::uint32_t>(d.arm_label.size()));
    if (inserted) {
      d.arm_label.push_back(r.arm);
      d.arm_kind.push_back(kind);
    } else if (d.arm_kind[it->second] != kind) {
      LATENTAUDIT_THROW(corrupt_data(fmt::format("{}: arm '{}' has two arm_kinds, '{}' and '{}' (record {})",
                                                 fn, r.arm, d.arm_kind[it->second], kind, i)));
    }
    arm_of[i] = it->second;
  }
  // Units: records sorted by (item, seed, arm).
  std::vector<std::size_t> order(records.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = records[a];
    const auto& z = records[b];
    if (x.item != z.item) return x.item < z.item;
    if (x.seed != z.seed) return x.seed < z.seed;
    if (arm_of[a] != arm_of[b]) return arm_of[a] < arm_of[b];
    return a < b;
  });
  const std::size_t na = d.arms();
  std::size_t first = 0;  // first record (in `order`) of the current unit
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto& r = records[order[k]];
    const bool new_unit =
        k == 0 || r.item != records[order[k - 1]].item || r.seed != records[order[k - 1]].seed;
    if (new_unit) {
      first = k;
      d.unit_item.push_back(r.item);
      d.unit_seed.push_back(r.seed);
      d.unit_regime.push_back(regime_code(r.regime));
      d.y.resize(d.y.size() + na, std::int8_t{-1});
      d.rec.resize(d.rec.size() + na, audit_data::npos);
    } else {
      if (arm_of[order[k]] == arm_of[order[k - 1]]) {
        LATENTAUDIT_THROW(corrupt_data(fmt::format(
            "{}: duplicate record for (item {}, seed {}, arm '{}'): records {} and {}", fn, r.item, r.seed,
            r.arm, std::min(order[k - 1], order[k]), std::max(order[k - 1], order[k]))));
      }
      const auto& f = records[order[first]];
      if (r.regime != f.regime) {
        LATENTAUDIT_THROW(
            corrupt_data(fmt::format("{}: the arms of (item {}, seed {}) disagree on the regime: arm '{}' "
                                     "says '{}', arm '{}' says '{}'",
                                     fn, r.item, r.seed, f.arm, f.regime, r.arm, r.regime)));
      }
    }
    const std::size_t u = d.unit_item.size() - 1;
    d.y[u * na + arm_of[order[k]]] = r.correct ? 1 : 0;
    d.rec[u * na + arm_of[order[k]]] = order[k];
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

/// @brief The pairs of one contrast: treated (the mean of one or more arms) minus control, on the
/// units where every arm involved is present and the unit filter holds.
struct paired_units {
  std::vector<double> diff;               ///< per pair: mean(treated arms) − control
  std::vector<std::uint32_t> cluster;     ///< per pair: dense item index
  std::vector<double> cluster_sum;        ///< per used item (ascending item): Σ diff
  std::vector<double> cluster_count;      ///< per used item: number of pairs
  std::vector<std::uint32_t> cluster_id;  ///< per used item: dense item index
  paired_binary_table table;              ///< single treated arm: the 2×2 table
  std::size_t positive = 0;               ///< pairs with diff > 0
  std::size_t negative = 0;               ///< pairs with diff < 0
  bool single_arm = true;                 ///< one treated arm (McNemar applies)
  [[nodiscard]] std::size_t pairs() const noexcept { return diff.size(); }
  [[nodiscard]] std::size_t clusters() const noexcept { return cluster_sum.size(); }
  [[nodiscard]] double mean() const noexcept {
    double s = 0;
    for (double v : diff) s += v;
    return diff.empty() ? std::numeric_limits<double>::quiet_NaN() : s / static_cast<double>(diff.size());
  }
};

/// @brief Collects the pairs of mean(treated arms) − control over units with keep(u).
template <class Keep>
[[nodiscard]] paired_units collect_pairs(const audit_data& d, std::span<const std::size_t> treated,
                                         std::size_t control, const Keep& keep) {
  paired_units p;
  p.single_arm = treated.size() == 1;
  std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
  for (std::size_t u = 0; u < d.units(); ++u) {
    if (!keep(u)) continue;
    const int c = d.outcome(u, control);
    if (c < 0) continue;
    double t = 0;
    bool all = true;
    for (auto a : treated) {
      const int v = d.outcome(u, a);
      if (v < 0) {
        all = false;
        break;
      }
      t += v;
    }
    if (!all) continue;
    t /= static_cast<double>(treated.size());
    const double diff = t - c;
    p.diff.push_back(diff);
    p.cluster.push_back(d.unit_cluster[u]);
    if (d.unit_cluster[u] != last) {  // units are sorted by item
      last = d.unit_cluster[u];
      p.cluster_id.push_back(last);
      p.cluster_sum.push_back(0.0);
      p.cluster_count.push_back(0.0);
    }
    p.cluster_sum.back() += diff;
    p.cluster_count.back() += 1.0;
    p.positive += diff > 0 ? 1 : 0;
    p.negative += diff < 0 ? 1 : 0;
    if (p.single_arm) {
      const bool ty = t == 1.0, cy = c == 1;
      (ty && cy ? p.table.both
       : ty     ? p.table.treated_only
       : cy     ? p.table.control_only
                : p.table.neither) += 1;
    }
  }
  return p;
}

/// @brief Two-sided p-value of "no effect" for the pairs: McNemar's exact test (one treated arm;
/// mcnemar_test, exact binomial on the discordant pairs), or the exact sign test on the non-zero
/// differences (several treated arms averaged), which equals McNemar's for one arm. 1 without
/// discordant pairs; NaN without pairs.
[[nodiscard]] inline double pairs_p_value(const paired_units& p) {
  if (p.pairs() == 0) return std::numeric_limits<double>::quiet_NaN();
  if (p.single_arm) return mcnemar_test(p.table, {.if_degenerate = on_degenerate::flag}).exact_p_value;
  return binomial_half_two_sided_p(p.positive, p.positive + p.negative);
}

/// @brief A percentile interval from the cluster bootstrap.
struct cluster_interval {
  double low = std::numeric_limits<double>::quiet_NaN();   ///< lower limit
  double high = std::numeric_limits<double>::quiet_NaN();  ///< upper limit
  bool point_mass = false;  ///< every replicate equalled the estimate (interval [t0, t0])
};

/// @brief Cluster (item) bootstrap percentile interval of the mean paired difference.
///
/// The resampling units are the items: replicate r draws G items with replacement from stream
/// {seed, 0, 0, r} (bootstrap(), one sample of G per-item sums) and evaluates Σ sums / Σ counts
/// over the drawn items — the mean paired difference of the pairs of the drawn items, which is
/// what bootstrap_clustered() computes from the pairs and their item labels (same draws, same
/// interval; the audit test checks it). Percentile limits under R boot's convention. When every
/// replicate equals the estimate (constant differences) the interval is the point [t0, t0].
/// Needs G ≥ 2 items (else NaN limits).
[[nodiscard]] inline cluster_interval cluster_bootstrap_interval(const paired_units& p, double level,
                                                                 std::size_t replicates, std::uint64_t seed,
                                                                 unsigned threads) {
  cluster_interval out;
  if (p.clusters() < 2) return out;
  const auto& sums = p.cluster_sum;
  const auto& counts = p.cluster_count;
  auto stat = [&](const resample_view& v) {
    double s = 0, c = 0;
    for (auto i : v.indices()) {
      s += sums[i];
      c += counts[i];
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

/// @brief A paired t interval on item-level differences, at two-sided level 1 − 2α.
struct item_t_interval {
  double estimate = std::numeric_limits<double>::quiet_NaN();  ///< mean of the item differences
  double low = std::numeric_limits<double>::quiet_NaN();       ///< estimate − t₁₋α,G−1 · SE
  double high = std::numeric_limits<double>::quiet_NaN();      ///< estimate + t₁₋α,G−1 · SE
  bool defined = false;                                        ///< at least 2 items
};

/// @brief Mean ± t·sd/√G of the values x[i] for i in `which` (duplicates count, as in a bootstrap
/// replicate); sd with n − 1; with sd = 0 the interval is the point. `tq(n)` gives t₁₋α,n−1.
template <class Tq>
[[nodiscard]] item_t_interval item_interval(std::span<const double> x, std::span<const std::uint32_t> which,
                                            const Tq& tq) {
  item_t_interval r;
  const std::size_t n = which.size();
  if (n < 2) return r;
  double s = 0;
  for (auto i : which) s += x[i];
  const double m = s / static_cast<double>(n);
  double ss = 0;
  for (auto i : which) ss += (x[i] - m) * (x[i] - m);
  const double se = std::sqrt(ss / static_cast<double>(n - 1)) / std::sqrt(static_cast<double>(n));
  const double h = se == 0.0 ? 0.0 : tq(n) * se;
  r.estimate = m;
  r.low = m - h;
  r.high = m + h;
  r.defined = true;
  return r;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_AUDIT_DATA_HPP
