// SPDX-License-Identifier: MIT
// latentaudit: the report's one record-pairing layer — records grouped into (item, seed) units with
// each arm's record on each unit (group_records(), once per report: the other analyses read their
// arms' columns of that one table, select_units()) — and the audit's internal view built on it: the arms, the
// outcome table, and the paired-contrast, cluster-bootstrap and non-inferiority helpers that report/audit.hpp
// builds its tables from. Not part of the public API.
#ifndef LATENTAUDIT_REPORT_DETAIL_AUDIT_DATA_HPP
#define LATENTAUDIT_REPORT_DETAIL_AUDIT_DATA_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../config.hpp"
#include "../../core/error.hpp"
#include "../../estimators/betting.hpp"
#include "../../estimators/detail/distributions.hpp"
#include "../../estimators/paired_binary.hpp"
#include "../../trial/arm.hpp"
#include "../../trial/arm_schedule.hpp"
#include "../../trial/record.hpp"

namespace latentaudit::detail {

/// @brief Regime codes of a unit: need and no_need (relay helps, relay changes nothing), the
/// relay-failure regimes stale (A's cache is of an older document version) and conflict (A's
/// document contradicts B's own prompt), unknown for anything else.
enum class audit_regime : std::uint8_t { need = 0, no_need = 1, unknown = 2, stale = 3, conflict = 4 };

/// @brief The records grouped into (item, seed) units: the one pairing layer of report/. A unit is
/// one (item, seed); its arms are the columns; the cell of (unit, arm) holds the index of that arm's
/// record on that unit. Units are sorted by (item, seed), so the units of one item are consecutive.
struct unit_records {
  std::vector<std::string> arm_label;    ///< the arms grouped (the columns), in the order asked for
  std::vector<std::uint64_t> unit_item;  ///< per unit
  std::vector<std::uint64_t> unit_seed;  ///< per unit
  std::vector<std::size_t> rec;          ///< [unit · arms + arm]: record index, or npos
  /// how many records the indices refer to (the span group_records() read): a reader of the table
  /// checks that its records are that span (units_of()), so a table is never read over other records
  std::size_t record_count = 0;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);  ///< "no record"

  /// @brief Number of arms.
  [[nodiscard]] std::size_t arms() const noexcept { return arm_label.size(); }
  /// @brief Number of units.
  [[nodiscard]] std::size_t units() const noexcept { return unit_item.size(); }
  /// @brief Index of the record of arm `a` on unit `u`, or npos.
  [[nodiscard]] std::size_t record(std::size_t u, std::size_t a) const noexcept {
    return rec[u * arms() + a];
  }
  /// @brief Index of the arm labelled `label`, or npos.
  [[nodiscard]] std::size_t find_label(std::string_view label) const noexcept {
    for (std::size_t a = 0; a < arms(); ++a)
      if (arm_label[a] == label) return a;
    return npos;
  }
};

/// @brief How group_records() reports a second record for one (item, seed, arm).
enum class duplicate_error : std::uint8_t {
  corrupt_data,     ///< corrupt_data "<fn>: duplicate record for (item, seed, arm): records i and j"
  invalid_argument  ///< invalid_argument "<fn>: records: must hold one record per (item, seed, arm), ..."
};

/// @brief Groups the records of `arms` into (item, seed) units (unit_records); records of other
/// arms are ignored, and units without a record of any of `arms` do not appear. An arm listed twice
/// takes its records in its first column only.
/// @param fn the calling function, named in the error
/// @param records the trial records
/// @param arms the arm labels to group, in column order
/// @param on_duplicate the error thrown for a second record of one (item, seed, arm)
/// @returns the units, sorted by (item, seed)
/// @throws corrupt_data or invalid_argument (per `on_duplicate`) naming `fn` and the (item, seed, arm)
///         when one (item, seed, arm) has two records
[[nodiscard]] unit_records group_records(std::string_view fn, std::span<const trial_record> records,
                                         std::span<const std::string> arms, duplicate_error on_duplicate);

/// @brief The columns `arms` of `table` (group_records() of the same records over every arm: the
/// report's one table, built once): exactly what group_records(fn, records, arms, ...) returns — the
/// units holding a record of one of `arms`, in (item, seed) order; an arm listed twice has records
/// in its first column only; an arm the table lacks has an empty column — without grouping the
/// records again. (Duplicates were refused when the table was built.)
[[nodiscard]] unit_records select_units(const unit_records& table, std::span<const std::string> arms);

/// @brief select_units(*table, arms) when `table` is given (the report's analyses), else
/// group_records(fn, records, arms, on_duplicate) (an analysis called on its own).
[[nodiscard]] unit_records units_of(const unit_records* table, std::string_view fn,
                                    std::span<const trial_record> records, std::span<const std::string> arms,
                                    duplicate_error on_duplicate);

/// @brief The records as a unit × arm table (group_records() over every arm, first-seen order) with
/// the outcomes, regimes and item clusters. A unit is one (item, seed); its cluster is the item.
struct audit_data : unit_records {
  std::vector<std::string> arm_kind;  ///< arm_kind of each arm (one per arm), as the records write it
  /// Each arm's kind as the analyses classify it: record_arm_kind() of its arm_kind and label
  /// (trial/arm.hpp), nothing for a kind latentaudit does not know.
  std::vector<std::optional<latentaudit::arm_kind>> kinds;
  /// Each arm's label read by parse_arm() when it parses (nothing otherwise): the doses
  /// (noise_sigma, drift_steps, budget) of records that do not carry them.
  std::vector<std::optional<trial_arm>> label_arms;
  std::vector<std::uint64_t> items;         ///< distinct items, ascending
  std::vector<std::uint64_t> seeds;         ///< distinct seeds, ascending
  std::vector<std::uint32_t> unit_cluster;  ///< per unit: index of its item in `items`
  std::vector<audit_regime> unit_regime;    ///< per unit
  /// [unit · arms + arm]: correct (0/1); −1 missing (no record, though scheduled); not_run (−2)
  /// when the schedule left the arm out on the unit's item (`audit --until-decided`)
  std::vector<std::int8_t> y;
  static constexpr std::int8_t not_run = -2;  ///< y of a trial the schedule never ran
  /// the items every betting interval and p-value over items of several regimes is tuned for
  /// (audit_options::horizon): 0 = each sample's own size; N = the planned most items of an audit
  /// looked at while it grows
  std::size_t horizon = 0;
  /// per regime (audit_regime's order): the items of that regime in the design
  /// (audit_options::regime_horizon), 0 = `horizon`
  std::array<std::size_t, 5> regime_horizon{};
  /// units of the design (design_grid) that no record holds in any arm, added to the table with
  /// every arm missing (bounded as missing records are); 0 without a design
  std::size_t design_units_absent = 0;
  /// items of the design no record holds at all (each of its units among design_units_absent)
  std::size_t design_items_absent = 0;
  /// of those, the items whose regime neither a record nor design_grid::item_regime gives: counted
  /// as need items (the regime every check that lets relay through reads)
  std::size_t design_items_regime_assumed = 0;

  /// @brief The items a betting interval over items of regime `g` is tuned for (0: its own size).
  [[nodiscard]] std::size_t horizon_of(audit_regime g) const noexcept {
    const std::size_t h = regime_horizon[static_cast<std::size_t>(g)];
    return h != 0 ? h : horizon;
  }

  /// @brief Whether arm `a` is of kind `k`.
  [[nodiscard]] bool is(std::size_t a, latentaudit::arm_kind k) const noexcept { return kinds[a] == k; }
  /// @brief The family of arm `a` (arm_plan::family), nothing for an unknown kind.
  [[nodiscard]] std::optional<arm_family> family(std::size_t a) const noexcept {
    return kinds[a] ? std::optional<arm_family>(plan_of(*kinds[a]).family) : std::nullopt;
  }
  /// @brief Outcome of arm `a` on unit `u` (−1 when missing, −2 when never scheduled: both < 0).
  [[nodiscard]] int outcome(std::size_t u, std::size_t a) const noexcept { return y[u * arms() + a]; }
  /// @brief Whether arm `a` was scheduled on unit `u` (its record is either there or missing).
  [[nodiscard]] bool scheduled(std::size_t u, std::size_t a) const noexcept {
    return y[u * arms() + a] != not_run;
  }
};

/// @brief The regime code of a regime string.
[[nodiscard]] audit_regime regime_code(std::string_view r) noexcept;

/// @brief The regime string of a regime code ("need", "no_need", "stale", "conflict", "unknown").
[[nodiscard]] const char* regime_name(audit_regime r) noexcept;

/// @brief The units a design lists (design.json: items 0..items−1 × seeds 0..seeds−1, every arm on
/// every unit): "the design is the denominator" (docs/audit-report.md, "Missing records").
struct design_grid {
  std::uint64_t items = 0;  ///< the design's items (0: no design given)
  std::uint64_t seeds = 0;  ///< the design's seeds per item (0: no design given)
  /// each design item's regime (item i = entry i; e.g. the task file's), read for an item no record
  /// holds; empty or short: such an item is counted in the need regime
  std::span<const std::string> item_regime = {};
  /// @brief Whether a design is given.
  [[nodiscard]] bool given() const noexcept { return items > 0 && seeds > 0; }
};

/// @brief Builds the unit × arm table, validating the records; a cell `schedule` left out of a
/// unit's item is marked audit_data::not_run rather than missing. With a `design`, every (item,
/// seed) unit of the design that no record holds (a stack that lost the whole unit with its failed
/// relay) is a unit of the table with every arm missing (audit_data::design_units_absent): its
/// regime is its item's (from the item's other records, else design.item_regime, else need), and
/// every paired finding bounds it as it bounds a missing record (worst case).
/// @throws invalid_argument for no records, or a design of more than 4 × records + 1024 units (the
///         records are not of that design); corrupt_data for a duplicate (item, seed, arm), an arm
///         with two arm_kinds, arms of one unit with different regimes, a non-finite field, or a
///         record of a trial the schedule left out
[[nodiscard]] audit_data build_audit_data(std::string_view fn, std::span<const trial_record> records,
                                          const arm_schedule& schedule = {}, const design_grid& design = {});

/// @brief Adds to `d` (built from the records, before the schedule is applied) the units of
/// `design` no record holds, every arm missing, keeping the units sorted by (item, seed).
/// @throws invalid_argument as build_audit_data() for a design too large for the records
void add_design_units(std::string_view fn, audit_data& d, const design_grid& design, std::size_t records);

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

/// @brief One view of a paired contrast over items: the mean of the item mean differences (the
/// estimand of every paired finding), its 1 − 2α betting verdict interval and the betting p-value of
/// "mean item difference = 0" (estimators/betting.hpp). NaN where not estimable.
struct contrast_view {
  double estimate = std::numeric_limits<double>::quiet_NaN();      ///< mean of the item means
  double verdict_low = std::numeric_limits<double>::quiet_NaN();   ///< lower limit, α one-sided
  double verdict_high = std::numeric_limits<double>::quiet_NaN();  ///< upper limit, α one-sided
  double p_value = std::numeric_limits<double>::quiet_NaN();       ///< betting p of mean = 0
};

/// @brief The view of item mean differences `items` (each in [−1, 1]) at one-sided level α per limit,
/// the bets tuned for `horizon` items (betting_options::horizon; 0 = items' size).
/// @throws invalid_argument (from the betting interval) on a value outside [−1, 1] or no values
[[nodiscard]] contrast_view view_of_items(std::span<const double> items, double alpha, std::size_t horizon);

/// @brief Worst-case (Manski) bounds of a paired contrast under missing records: every unit of the
/// contrast's regime (a unit of the table: some arm holds a record on it) that lacks the treated or
/// the control record is imputed twice — `low`: a missing treated outcome is wrong and a missing
/// control outcome right (the least favourable to treated − control); `high`: the reverse — and
/// each imputed data set gives a view over items. Any outcome of the missing records lies between
/// them, so a verdict that holds under both holds whatever the missing records were.
struct missing_bounds {
  std::size_t units = 0;  ///< units imputed (0: every unit holds both arms; low/high then unset)
  std::size_t items = 0;  ///< items behind the bounds (with complete or imputed units)
  contrast_view low;      ///< missing treated wrong, missing control right
  contrast_view high;     ///< missing treated right, missing control wrong
  /// the item mean differences under `low` (ascending item; empty when no unit was imputed): the
  /// least favourable view for a lower limit, which noninferiority_p() reads
  std::vector<double> low_items;
  /// the units behind each entry of low_items (complete and imputed): the weights of the mean over
  /// requests under `low` (request_noninferiority_p)
  std::vector<double> low_counts;
  /// @brief Whether any unit was imputed.
  [[nodiscard]] bool any() const noexcept { return units > 0; }
};

/// @brief One-sided betting p-value over items of "treated loses by `margin` or more" (mean item
/// difference ≤ −margin; bounded_mean_p_value_above with the bets tuned for `alpha`), the null a
/// risk check rejects when it shows the risk absent. With missing units (`mb.any()`) the larger of
/// the observed items' p and the p under the `low` imputation (every missing treated outcome wrong,
/// every missing control outcome right), so it is valid whatever the missing records were. NaN
/// without items. p ≤ alpha exactly when the verdict lower limit at alpha lies above −margin (up
/// to the limit's search tolerance) in every view.
/// @param items the observed item mean differences (each in [−1, 1])
/// @param mb the contrast's worst-case bounds
/// @param margin the margin, in (0, 1)
/// @param alpha the level the bets are tuned for (the audit's α)
/// @param horizon the items the bets are tuned for (audit_data::horizon; 0 = the sample's size)
[[nodiscard]] double noninferiority_p(std::span<const double> items, const missing_bounds& mb, double margin,
                                      double alpha, std::size_t horizon);

/// @brief One-sided betting p-value of "the mean over requests loses by `margin` or more": the
/// estimand a deployment serves, items weighted by their requests (their (item, seed) units), θ_R =
/// E[n_g·D_g] / E[n_g]. H: θ_R ≤ −margin ⟺ E[X_g] ≤ 0 with X_g = n_g·(D_g + margin)/n_max, a bounded
/// observation per item (in [min(0, margin − 1), 1 + margin]), tested by bounded_mean_p_value_above
/// at 0 (bets tuned for `alpha`, items in ascending id order): valid at every number of items for
/// items drawn with their request counts, whatever the link between an item's count and its
/// difference. Equal counts give the item-mean test's p exactly. NaN without items.
/// @param item_means the item mean differences D_g (each in [−1, 1])
/// @param counts each item's units n_g (> 0; same length)
/// @param margin the margin, in (0, 1)
/// @param alpha the level the bets are tuned for
/// @param horizon the items the bets are tuned for (0 = the sample's size)
[[nodiscard]] double request_noninferiority_p(std::span<const double> item_means,
                                              std::span<const double> counts, double margin, double alpha,
                                              std::size_t horizon);

/// @brief missing_bounds of mean(treated arms) − control over the units with keep(u) (the units
/// collect_pairs() would consider, complete or not), at one-sided level α per limit, the bets tuned
/// for `horizon` items (audit_data::horizon_of the kept units' regime).
template <class Keep>
[[nodiscard]] missing_bounds missing_outcome_bounds(const audit_data& d, std::span<const std::size_t> treated,
                                                    std::size_t control, const Keep& keep, double alpha,
                                                    std::size_t horizon) {
  missing_bounds b;
  std::vector<double> lo, hi, counts;  // item means under the two imputations, units per item
  double slo = 0, shi = 0, n = 0;
  std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
  auto flush = [&] {
    if (n > 0) {
      lo.push_back(slo / n);
      hi.push_back(shi / n);
      counts.push_back(n);
    }
    slo = shi = n = 0;
  };
  for (std::size_t u = 0; u < d.units(); ++u) {
    if (!keep(u)) continue;
    if (d.unit_cluster[u] != last) {  // units are sorted by item
      flush();
      last = d.unit_cluster[u];
    }
    bool never_run = !d.scheduled(u, control);  // a trial never scheduled is no missing record
    for (auto a : treated) never_run |= !d.scheduled(u, a);
    if (never_run) continue;
    const int c = d.outcome(u, control);
    bool missing = c < 0;
    double tl = 0, th = 0;
    for (auto a : treated) {
      const int v = d.outcome(u, a);
      missing |= v < 0;
      tl += v < 0 ? 0.0 : v;
      th += v < 0 ? 1.0 : v;
    }
    tl /= static_cast<double>(treated.size());
    th /= static_cast<double>(treated.size());
    slo += tl - (c < 0 ? 1.0 : c);
    shi += th - (c < 0 ? 0.0 : c);
    n += 1;
    b.units += missing ? 1 : 0;
  }
  flush();
  b.items = lo.size();
  if (b.units > 0 && !lo.empty()) {
    b.low = view_of_items(lo, alpha, horizon);
    b.high = view_of_items(hi, alpha, horizon);
    b.low_items = std::move(lo);
    b.low_counts = std::move(counts);
  }
  return b;
}

/// @brief Two-sided p-value of "no effect" for the pairs: McNemar's exact test (one treated arm;
/// mcnemar_test, exact binomial on the discordant pairs), or the exact sign test on the non-zero
/// differences (several treated arms averaged), which equals McNemar's for one arm. 1 without
/// discordant pairs; NaN without pairs.
[[nodiscard]] double pairs_p_value(const paired_units& p);

/// @brief Exact conditional McNemar on one view of a contrast whose items each hold exactly one
/// (item, seed) pair (one treated arm): the test the superiority ("beats") findings decide on there
/// (docs/estimators/findings.md). With one pair per item the items' pairs (T, C) are i.i.d. whatever
/// the item heterogeneity, Δ = P(T = 1, C = 0) − P(T = 0, C = 1), and given the b + c discordant
/// pairs b ~ Binomial(b + c, π) with Δ = q·(2π − 1), q = P(discordant): "Δ ≤ 0" is "π ≤ 1/2", and
/// the test is exact at every number of items.
struct exact_view {
  std::size_t up = 0;    ///< b: discordant pairs with treated right and control wrong
  std::size_t down = 0;  ///< c: discordant pairs with control right and treated wrong
  /// one-sided exact p of "Δ ≤ 0": P(X ≥ b), X ~ Binomial(b + c, 1/2); 1 when b = 0
  double p_above = std::numeric_limits<double>::quiet_NaN();
  /// two-sided exact p of "Δ = 0" (mcnemar_test's exact_p_value); 1 without discordant pairs
  double p_two = std::numeric_limits<double>::quiet_NaN();
  /// the α lower confidence limit of Δ that inverts the one-sided test (exact_lower_limit())
  double lower = std::numeric_limits<double>::quiet_NaN();
};

/// @brief The lower confidence limit at one-sided level α that inverts exact McNemar, so that a
/// "yes" (p_above ≤ α) never sits beside a lower limit below 0 and an undecided test never beside
/// one above 0: max(0, betting_low) when p_above ≤ α; else min(betting_low, 2π_L − 1), π_L the
/// one-sided Clopper–Pearson lower limit of π at α (0 when b = 0). Valid at level α for every Δ:
/// for Δ ≥ 0 it exceeds Δ only where the betting limit does; for Δ < 0 only where π_L > π (since
/// Δ = q(2π − 1) ≥ 2π − 1 for q ≤ 1), an event of probability at most α that contains every
/// rejection. Monotone in b (up) and c (down), so the worst-case imputation bounds it.
/// @param b discordant pairs treated right, control wrong
/// @param c discordant pairs control right, treated wrong
/// @param alpha one-sided level, in (0, 0.5)
/// @param betting_low the betting verdict lower limit of the same view (α one-sided)
[[nodiscard]] double exact_lower_limit(std::size_t b, std::size_t c, double alpha, double betting_low);

/// @brief exact_view of b and c discordant pairs (p-values and exact_lower_limit()).
/// @param b discordant pairs treated right, control wrong
/// @param c discordant pairs control right, treated wrong
/// @param alpha one-sided level, in (0, 0.5)
/// @param betting_low the betting verdict lower limit of the same view
[[nodiscard]] exact_view exact_view_of(std::size_t b, std::size_t c, double alpha, double betting_low);

/// @brief Exact McNemar over the views of a paired contrast (the observed pairs and, with missing
/// units, both worst-case imputations of missing_outcome_bounds()): `applies` only when the
/// contrast has one treated arm and every item of the kept units holds exactly one scheduled unit
/// (one seed per item, counting units whose records are missing), so each view is one pair per
/// item. Several seeds per item (the pairs of an item are dependent: conditional McNemar on them is
/// not valid for Δ) or an average of treated arms (the sign test on the non-zero differences tests
/// P(D > 0) = P(D < 0), not a zero mean) leave `applies` false: the betting view decides there.
struct exact_superiority {
  bool applies = false;  ///< one treated arm, one unit per item: the exact test decides
  bool missing = false;  ///< some kept unit lacks the treated or the control record
  exact_view observed;   ///< the complete pairs
  exact_view low;        ///< missing treated wrong, missing control right (set when `missing`)
  exact_view high;       ///< missing treated right, missing control wrong (set when `missing`)
  /// @brief The largest one-sided p over the views (NaN unless `applies`).
  [[nodiscard]] double p_above() const noexcept {
    if (!applies) return std::numeric_limits<double>::quiet_NaN();
    return missing ? std::max({observed.p_above, low.p_above, high.p_above}) : observed.p_above;
  }
  /// @brief The largest two-sided p over the views (NaN unless `applies`).
  [[nodiscard]] double p_two() const noexcept {
    if (!applies) return std::numeric_limits<double>::quiet_NaN();
    return missing ? std::max({observed.p_two, low.p_two, high.p_two}) : observed.p_two;
  }
};

/// @brief exact_superiority of mean(treated arms) − control over the units with keep(u) (the units
/// missing_outcome_bounds() reads), at one-sided level α; `betting` and `mb` are the same
/// contrast's betting view and worst-case bounds, whose verdict lower limits exact_lower_limit()
/// reads.
template <class Keep>
[[nodiscard]] exact_superiority exact_superiority_of(const audit_data& d,
                                                     std::span<const std::size_t> treated,
                                                     std::size_t control, const Keep& keep, double alpha,
                                                     const contrast_view& betting, const missing_bounds& mb) {
  exact_superiority r;
  if (treated.size() != 1) return r;
  const std::size_t a = treated[0];
  std::size_t b = 0, c = 0, bl = 0, cl = 0, bh = 0, ch = 0, units = 0, missing = 0;
  std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
  for (std::size_t u = 0; u < d.units(); ++u) {
    if (!keep(u) || !d.scheduled(u, control) || !d.scheduled(u, a)) continue;
    if (d.unit_cluster[u] == last) return r;  // a second unit of one item: several seeds per item
    last = d.unit_cluster[u];                 // units are sorted by item
    ++units;
    const int t = d.outcome(u, a), k = d.outcome(u, control);
    if (t >= 0 && k >= 0) {
      b += t == 1 && k == 0 ? 1 : 0;
      c += t == 0 && k == 1 ? 1 : 0;
    } else {
      ++missing;
    }
    const int tl = t < 0 ? 0 : t, kl = k < 0 ? 1 : k, th = t < 0 ? 1 : t, kh = k < 0 ? 0 : k;
    bl += tl == 1 && kl == 0 ? 1 : 0;
    cl += tl == 0 && kl == 1 ? 1 : 0;
    bh += th == 1 && kh == 0 ? 1 : 0;
    ch += th == 0 && kh == 1 ? 1 : 0;
  }
  if (units == 0 || units == missing) return r;
  r.applies = true;
  r.missing = missing > 0;
  r.observed = exact_view_of(b, c, alpha, betting.verdict_low);
  if (r.missing) {
    r.low = exact_view_of(bl, cl, alpha, mb.any() ? mb.low.verdict_low : betting.verdict_low);
    r.high = exact_view_of(bh, ch, alpha, mb.any() ? mb.high.verdict_low : betting.verdict_low);
  }
  return r;
}

/// @brief Per-item mean paired differences of `p` (cluster_sum / cluster_count, ascending item),
/// each in [−1, 1]: the observations of the betting interval and p-value over items (equal to
/// item_mean_differences() on the pairs' item ids for one treated arm).
[[nodiscard]] std::vector<double> item_differences(const paired_units& p);

/// @brief A percentile interval from the cluster bootstrap.
struct cluster_interval {
  double low = std::numeric_limits<double>::quiet_NaN();   ///< lower limit
  double high = std::numeric_limits<double>::quiet_NaN();  ///< upper limit
  bool point_mass = false;  ///< every replicate equalled the estimate (interval [t0, t0])
};

/// @brief Cluster (item) bootstrap percentile interval of the mean over items of the item mean
/// paired differences (the estimand of the findings).
///
/// The resampling units are the items: replicate r draws G items with replacement from stream
/// {seed, 0, 0, r} (bootstrap(), one sample of G per-item sums) and evaluates the mean of the drawn
/// items' mean differences — with the same number of pairs per item the mean paired difference of
/// the pairs of the drawn items, which is what bootstrap_clustered() computes from the pairs and
/// their item labels (same draws, same interval; the audit test checks it). Percentile limits under
/// R boot's convention. When every replicate equals the estimate (constant differences) the
/// interval is the point [t0, t0]. Needs G ≥ 2 items (else NaN limits).
[[nodiscard]] cluster_interval cluster_bootstrap_interval(const paired_units& p, double level,
                                                          std::size_t replicates, std::uint64_t seed,
                                                          unsigned threads);

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

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/audit_data-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DETAIL_AUDIT_DATA_HPP
