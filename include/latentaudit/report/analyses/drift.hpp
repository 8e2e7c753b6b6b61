// SPDX-License-Identifier: MIT
// latentaudit: the fine-tuning drift analysis. Drift arms (label kv_drift_<k>, arm_kind "drifted",
// field drift_steps = k) relay, whole, the cache of a sender that is organism-a fine-tuned k steps
// on a changed task: same architecture and cache shape, another fingerprint. Need regime: the
// dose-response of the relay over k — accuracy, the difference to same-model relay (kv_full, k = 0)
// and the relay benefit over no_comm, each with its interval — and drift.tolerance_steps, the k
// where non-inferiority to kv_full fails: the noise tolerance's machinery (analyses/noise.hpp:
// isotonic fit of the level differences, first crossing of −margin, interval by test inversion over
// items with the cluster bootstrap's unbounded share) with k as the dose. Rules:
// docs/audit-report.md "When relay does not pay". Not part of the public API.
#ifndef LATENTAUDIT_REPORT_ANALYSES_DRIFT_HPP
#define LATENTAUDIT_REPORT_ANALYSES_DRIFT_HPP

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../trial/record.hpp"
#include "../detail/audit_data.hpp"
#include "../finding.hpp"
#include "noise.hpp"
#include "regime_contrast.hpp"

namespace latentaudit {

/// @brief The relay benefit over no_comm at one drift level (need regime).
struct drift_benefit {
  std::string arm;          ///< arm label (kv_full at 0 steps)
  double steps = 0.0;       ///< drift_steps (0 = same model)
  regime_contrast benefit;  ///< arm − no_comm on need units (betting over items)
};

/// @brief The drift analysis.
struct drift_analysis {
  /// the dose-response against kv_full and the tolerance in steps (noise_tolerance with the drift
  /// steps as the dose: curve[0] is kv_full at 0 steps, then one point per drift arm)
  noise_tolerance tolerance;
  std::vector<drift_benefit> benefit;                ///< ascending steps, kv_full (0 steps) first
  regime_contrast text_benefit;                      ///< text_full − no_comm on need units (reference line)
  std::vector<std::string> mismatched_fingerprints;  ///< drift arms whose sender ≠ receiver fingerprint
};

/// @brief drift.tolerance_steps: estimate = the drift steps k where the isotonic fit of the need-regime
/// accuracy difference drift arm − kv_full first reaches −margin; "yes" when it and both interval
/// limits lie in the tested range; "no" (absence shown within the tested range) when it is not located
/// and fixed-sequence testing shows every tested step non-inferior (the largest tested step is the
/// tolerance's conservative sigma_noninferior); inconclusive otherwise (beyond the range without every
/// step shown, an open limit, or no drift arm: n = 0 with the reason).
/// @param a the analysis
/// @param o the options it ran with (margin, α, dose name)
[[nodiscard]] finding drift_tolerance_finding(const drift_analysis& a, const noise_options& o);

namespace detail {

/// @brief The drift steps of arm `a`: its records' drift_steps (the first one; a warning when they
/// differ), else the number after "kv_drift_" in the label.
/// @throws invalid_argument naming the arm and the field for negative steps
[[nodiscard]] std::optional<double> drift_arm_steps(const audit_data& d,
                                                    std::span<const trial_record> records, std::size_t a,
                                                    std::vector<std::string>& warnings);

/// @brief Whether arm `a` is a drift arm: arm_kind "drifted", or label "kv_drift_<k>".
[[nodiscard]] bool is_drift_arm(const audit_data& d, std::size_t a) noexcept;

/// @brief The drift section of analyse_records: pairs each drift arm with kv_full on need units
/// and runs estimate_noise_tolerance with the steps as the dose (o.dose = "drift steps"), and the
/// benefit of every level over no_comm. Without drift arms or kv_full: an empty curve and a warning.
[[nodiscard]] drift_analysis audit_drift(const audit_data& d, std::span<const trial_record> records,
                                         std::size_t kv_full, std::size_t no_comm, std::size_t text_full,
                                         const noise_options& o, std::vector<std::string>& warnings);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/drift-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_DRIFT_HPP
