// SPDX-License-Identifier: MIT
// latentaudit: one machine-readable finding of the audit — the unit a CI pipeline gates on
// (report.json "findings"; its kind and id from the catalog, finding_catalog.hpp; ids listed in
// docs/audit-report.md).
#ifndef LATENTAUDIT_REPORT_FINDING_HPP
#define LATENTAUDIT_REPORT_FINDING_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/json.hpp"
#include "../estimators/betting_power.hpp"
#include "../trial/arm_schedule.hpp"
#include "finding_catalog.hpp"

namespace latentaudit {

/// @brief The answer a finding gives.
enum class verdict { yes, no, inconclusive };

/// @brief "yes", "no" or "inconclusive".
[[nodiscard]] constexpr const char* verdict_name(verdict v) noexcept {
  return v == verdict::yes ? "yes" : v == verdict::no ? "no" : "inconclusive";
}

/// @brief One finding: its kind with its parameters (`key`) and the id they produce, its verdict, the
/// estimate with its interval, the method that produced it, the number of units it rests on, and a sentence.
struct finding {
  std::string id;                          ///< key.id() (make_finding), e.g. need.kv_beats_no_comm
  verdict answer = verdict::inconclusive;  ///< the verdict
  double estimate = 0.0;                   ///< point estimate (NaN only when not estimable; written as null)
  double ci_low = 0.0;                     ///< lower limit
  double ci_high = 0.0;                    ///< upper limit
  std::string method;  ///< e.g. "paired difference, cluster bootstrap (item) percentile, Holm"
  std::size_t n = 0;   ///< units (pairs, items, records) used
  std::string detail;  ///< one human sentence: why this verdict
  /// the risk findings the decision reads as a family (no_need.kv_changes_accuracy,
  /// stale.kv_worse_than_text, conflict.kv_worse_than_no_comm): the one-sided betting p-value over
  /// items of "relay loses by the margin or more" — the null the risk check rejects when it shows the
  /// risk absent — which decide() adjusts by Holm over the family (docs/audit-report.md "Testing
  /// along the decision"); NaN (null in report.json) for every other finding
  double noninferiority_p = std::numeric_limits<double>::quiet_NaN();
  /// the findings on a verdict interval over item means (need.*, no_need.*, stale.*, conflict.*,
  /// message.*, the answer probability's): how far beyond its threshold the true difference must
  /// lie for this finding's rule to show its claim with 80 % power at its size and the spread its
  /// items show — equally, the margin an absence claim reaches with 80 % power when the truth is 0
  /// (betting_detectable_difference, docs/audit-report.md "Minimum detectable effect"); NaN (null
  /// in report.json) for the other findings and below 2 items
  double minimum_detectable_effect = std::numeric_limits<double>::quiet_NaN();
  /// the (regime, arm) cells whose records the finding reads (its contrast's arms in its regime),
  /// whether or not they are in the records: `audit --until-decided` runs a cell on later items
  /// only while a finding that reads it is undecided (arm_cells_to_run, report/decision.hpp);
  /// empty where the finding does not say (the rule then keeps every cell running while it is
  /// undecided)
  std::vector<arm_cell> reads = {};
  /// its kind (the catalog row that owns its statements, gate and checks) and parameters; `id` is
  /// key.id(). finding_kind::unknown for a finding built by hand from an id alone (not in report.json)
  finding_key key = {};
};

/// @brief A finding of kind `key` (its id key.id()) with verdict `answer`; the analyses fill in the rest.
///
/// A custom analysis builds its findings with it, so that their ids, statements and gates are the
/// catalog's (report/finding_catalog.hpp):
/// @code
/// finding f = make_finding({finding_kind::cost_relay_pays_on_link, {.link = "pcie4"}}, verdict::yes);
/// // f.id == "cost.relay_pays_on_pcie4"
/// f.estimate = 0.012;
/// f.ci_low = 0.004;
/// f.ci_high = 0.020;
/// f.n = 200;
/// @endcode
[[nodiscard]] inline finding make_finding(finding_key key, verdict answer = verdict::inconclusive) {
  finding f;
  f.id = key.id();
  f.answer = answer;
  f.key = std::move(key);
  return f;
}

/// @brief The reason every finding the positive control gates (finding_kind_info::gated) gives
/// when the control (finding_kind::need_text_beats_no_comm) is not "yes", and the decision's summary
/// then starts with.
inline constexpr std::string_view positive_control_reason =
    "positive control failed: text relay does not beat no communication in the need regime";

namespace detail {
/// @brief Sets f.minimum_detectable_effect from f's verdict interval (its larger distance from the
/// estimate: missing records' worst-case bounds widen it) and the item values behind it.
inline void set_minimum_detectable(finding& f, std::span<const double> items) {
  const double h = std::max(f.estimate - f.ci_low, f.ci_high - f.estimate);
  if (items.size() < 2 || !(h >= 0.0) || !std::isfinite(h)) return;
  f.minimum_detectable_effect = betting_detectable_difference(items, h, 0.8);
}

/// @brief x as a JSON number, or null when x is not finite (report.json never holds NaN).
[[nodiscard]] inline json_value number_or_null(double x) {
  return std::isfinite(x) ? json_value(x) : json_value(nullptr);
}
}  // namespace detail

/// @brief {"id","verdict","estimate","ci_low","ci_high","method","n","detail","noninferiority_p",
/// "minimum_detectable_effect","reads"} ("reads": "regime:arm" strings);
/// non-finite numbers become null.
[[nodiscard]] inline json_value finding_to_json(const finding& f) {
  const auto num = detail::number_or_null;
  json_value j;
  j.set("id", f.id);
  j.set("verdict", verdict_name(f.answer));
  j.set("estimate", num(f.estimate));
  j.set("ci_low", num(f.ci_low));
  j.set("ci_high", num(f.ci_high));
  j.set("method", f.method);
  j.set("n", static_cast<double>(f.n));
  j.set("detail", f.detail);
  j.set("noninferiority_p", num(f.noninferiority_p));
  j.set("minimum_detectable_effect", num(f.minimum_detectable_effect));
  json_value reads = json_value::array();
  for (const auto& c : f.reads) reads.push_back(c.regime + ":" + c.arm);
  j.set("reads", std::move(reads));
  return j;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_FINDING_HPP
