// SPDX-License-Identifier: MIT
// latentaudit: how the report writes the relay-failure analyses (stale, conflict, drift) and the
// relay switch replay — report.json objects, the forest-plot rows and drift_response.svg — kept apart
// from report-inl.hpp, which calls these (the section "When relay does not pay" is built by
// detail/report_sections.hpp; the decision's policy and relay switch in report.md and report.html by
// detail/decision_sections.hpp).
// Not part of the public API.
#ifndef LATENTAUDIT_REPORT_DETAIL_FAILURE_REPORT_HPP
#define LATENTAUDIT_REPORT_DETAIL_FAILURE_REPORT_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../config.hpp"
#include "../../core/json.hpp"
#include "../audit.hpp"
#include "../decision.hpp"
#include "../svg.hpp"

namespace latentaudit::detail {

/// @brief report.json "relay_failures": {stale, conflict, drift} with every contrast, the stale
/// answer counts, the attention mechanism (or its unavailability note) and the drift curve.
[[nodiscard]] json_value relay_failures_json(const audit_core& c);

/// @brief report.json's dose-response curve (noise.curve, relay_failures.drift.curve): one object a
/// level {arm, `x_key`, n, items, accuracy, ci_low, ci_high, diff_vs_kv_full, diff_ci_low,
/// diff_ci_high, fitted_diff, noninferior}, non-finite numbers null.
/// @param curve the levels
/// @param x_key the level's name ("sigma" for noise, "steps" for drift)
[[nodiscard]] json_value dose_curve_json(std::span<const dose_point> curve, std::string_view x_key);

/// @brief report.json decision.relay_switch: the replay with its guarantee.
[[nodiscard]] json_value relay_switch_json(const switch_replay& s);

/// @brief Forest rows of the stale and conflict contrasts (descriptive 1 − α intervals).
void relay_failure_forest_rows(const audit_core& c, std::vector<forest_row>& rows);

/// @brief drift_response.svg's data: need-regime accuracy against the drift steps with its band, the
/// text relay (the text_full role's need accuracy) as a dashed line and the tolerance with its
/// interval; none without two drift levels.
[[nodiscard]] std::optional<band_figure> drift_response_figure(const audit_core& c);

/// @brief The text_full role's need-regime accuracy (the figures' dashed text-relay line); none when
/// no arm plays the role or its accuracy is not finite.
[[nodiscard]] std::optional<double> text_relay_accuracy(const audit_core& c);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/failure_report-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DETAIL_FAILURE_REPORT_HPP
