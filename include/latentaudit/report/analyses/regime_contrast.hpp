// SPDX-License-Identifier: MIT
// latentaudit: one paired contrast treated − control within one regime, decided on betting
// intervals over items — the building block of the relay-failure analyses (stale.hpp,
// conflict.hpp, drift.hpp) — and the "worse" verdict rule they share. Each item is one observation
// (its mean paired difference over seeds), so the seeds of an item are never independent; the
// intervals are valid at every number of items and never of zero width (estimators/betting.hpp).
// Rules and references: docs/audit-report.md "When relay does not pay". Not part of the public API.
#ifndef LATENTAUDIT_REPORT_ANALYSES_REGIME_CONTRAST_HPP
#define LATENTAUDIT_REPORT_ANALYSES_REGIME_CONTRAST_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../config.hpp"
#include "../detail/audit_data.hpp"
#include "../finding.hpp"

namespace latentaudit {

/// @brief One paired contrast treated − control within one regime (or one per-unit score with
/// its own meaning, e.g. stale minus other wrong answers), over items.
struct regime_contrast {
  std::string id;           ///< "<regime>:<treated>-<control>", e.g. "stale:kv_full-text_full"
  std::string treated;      ///< treated arm label (or what the score counts)
  std::string control;      ///< control arm label (or what the score subtracts)
  std::string regime;       ///< "stale", "conflict", "need", ...
  std::size_t n_pairs = 0;  ///< (item, seed) units holding both arms (0: not estimable)
  std::size_t n_items = 0;  ///< distinct items among them
  /// mean over items of the item mean difference (equal to the mean over pairs with equal seeds
  /// per item); NaN when not estimable
  double estimate = std::numeric_limits<double>::quiet_NaN();
  /// descriptive 1 − α interval: betting over items, α/2 per side
  double ci_low = std::numeric_limits<double>::quiet_NaN();
  double ci_high = std::numeric_limits<double>::quiet_NaN();  ///< its upper limit
  /// verdict interval: betting over items, α per side (1 − 2α, 90 % at α = 0.05)
  double verdict_low = std::numeric_limits<double>::quiet_NaN();
  double verdict_high = std::numeric_limits<double>::quiet_NaN();  ///< its upper limit
  double p_value = std::numeric_limits<double>::quiet_NaN();       ///< betting p over items, mean = 0
  /// Holm-adjusted over the relay-failure family (NaN outside it or when not estimable)
  double p_holm = std::numeric_limits<double>::quiet_NaN();
  std::string method;  ///< how it was computed
  /// the item mean differences behind the estimate (ascending item): what noninferiority_p() and
  /// the decision's risk family read
  std::vector<double> items;
  /// worst-case bounds when units of the regime lack one of the arms (missing.units = 0: complete).
  /// With missing units the verdict interval above is the union of the observed one and the bounds'
  /// outer limits (lower limit with every missing treated outcome wrong and control right, upper
  /// limit with the reverse), p_value the largest of the three views' p-values, and a sign shown
  /// (estimate < 0 or > 0 in a rule) must hold under both bounds (sign_shown()).
  detail::missing_bounds missing;
  /// the items its bets were tuned for (audit_data::horizon; 0 = n_items: the fixed-sample interval)
  std::size_t horizon = 0;
  /// @brief Whether any pair was found.
  [[nodiscard]] bool estimable() const noexcept { return n_pairs > 0; }
};

namespace detail {

/// @brief The contrast from item mean differences (each in [−1, 1], one per item, items in
/// ascending id order: the order must not depend on the outcomes).
/// @param c receives estimate, intervals and p (its id, labels, n_pairs are the caller's)
/// @param item_diffs the item mean differences (non-empty)
/// @param alpha α of the audit, in (0, 0.5)
/// @param horizon the items the bets are tuned for (audit_data::horizon; 0 = item_diffs' size)
void fill_regime_contrast(regime_contrast& c, std::span<const double> item_diffs, double alpha,
                          std::size_t horizon);

/// @brief treated − control on the units of regime `g` holding both arms (collect_pairs); an
/// absent arm (npos) or no pair gives a contrast with n_pairs = 0 and NaN numbers.
/// @param d the unit × arm table
/// @param treated,control arm indices (npos: absent)
/// @param g the regime
/// @param treated_role,control_role labels used when the arm is absent
/// @param alpha α of the audit
[[nodiscard]] regime_contrast regime_contrast_of(const audit_data& d, std::size_t treated,
                                                 std::size_t control, audit_regime g,
                                                 std::string_view treated_role, std::string_view control_role,
                                                 double alpha);

/// @brief Whether the contrast's estimate has the sign asked for (negative: < 0, else > 0) on the
/// observed pairs and, with missing units, under both worst-case bounds.
[[nodiscard]] bool sign_shown(const regime_contrast& c, bool negative) noexcept;

/// @brief The "worse" verdict of a relay-failure contrast (treated worse than control):
/// yes if the Holm-adjusted p < α and the estimate < 0 (a loss shown; under both worst-case bounds
/// when units lack an arm); no if the verdict lower
/// limit > −margin (a loss of the margin or more excluded); inconclusive otherwise or when not
/// estimable.
[[nodiscard]] verdict worse_verdict(const regime_contrast& c, double alpha, double margin) noexcept;

/// @brief The "beats" verdict of a contrast in a Holm family (treated better than control): yes if
/// the Holm-adjusted p < α and the estimate > 0 (under both worst-case bounds when units lack an
/// arm); no if the verdict upper limit < margin (a gain of the margin or more excluded);
/// inconclusive otherwise or when not estimable. The message and mapped families' rule.
[[nodiscard]] verdict beats_verdict(const regime_contrast& c, double alpha, double margin) noexcept;

/// @brief The contrast as a report.json object (id, arms, regime, counts, estimate, intervals,
/// p values, method; null where a number is not estimable).
[[nodiscard]] json_value contrast_json(const regime_contrast& c);

/// @brief Worst-case bounds as a report.json value: null when no unit was imputed, else {units,
/// items, low: {estimate, verdict_low, verdict_high, p_value}, high: {...}}.
[[nodiscard]] json_value missing_bounds_json(const missing_bounds& b);

/// @brief "est [lo, hi]" in accuracy points with one decimal ("not estimable" for NaN).
[[nodiscard]] std::string contrast_points(double estimate, double low, double high);

/// @brief Holm over the estimable contrasts of `family` (p_holm set; NaN for the others).
void holm_over(std::span<regime_contrast* const> family);

/// @brief The inconclusive finding, n = 0 and NaN numbers, of an analysis that could not run.
/// @param key the finding's kind and parameters (its id: key.id())
/// @param why what was missing (the detail)
/// @param reads the cells it would read (finding::reads)
[[nodiscard]] finding not_estimable_finding(finding_key key, std::string why,
                                            std::vector<arm_cell> reads = {});

/// @brief The cells contrast `c` reads: its treated and control arms in its regime.
[[nodiscard]] std::vector<arm_cell> contrast_reads(const regime_contrast& c);

/// @brief A relay-failure risk finding on contrast `c` of `regime` (stale.kv_worse_than_text,
/// conflict.kv_worse_than_no_comm): its verdict interval, pairs, method "<regime> regime, <id>:
/// <method>; Holm over the relay-failure family", the risk family's noninferiority_p at `margin`
/// and the minimum detectable effect.
[[nodiscard]] finding risk_finding(finding_key key, verdict v, const regime_contrast& c,
                                   std::string_view regime, std::string why, double margin, double alpha);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/regime_contrast-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_REGIME_CONTRAST_HPP
