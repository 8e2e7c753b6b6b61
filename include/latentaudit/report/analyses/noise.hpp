// SPDX-License-Identifier: MIT
// latentaudit: the noise dose-response of the relayed cache and its tolerance σ (need regime,
// every noise arm paired with kv_full). The tolerance is an estimate, not a test outcome: the
// paired accuracy difference (noise arm − kv_full, item means) per σ level is fitted by isotonic
// regression (non-increasing in σ, pool-adjacent-violators weighted by items), and the tolerance
// σ is where the fitted curve, drawn through (0, 0) and linear between levels, first reaches
// −margin ("beyond the tested range" when it never does). Its interval inverts a skewness-corrected
// t test over items of "the interpolated curve equals −margin" (a conservative betting band when the
// item differences do not vary or there are fewer than 2 items). Separately, and conservatively, the largest
// σ shown non-inferior to kv_full by fixed-sequence betting tests. Formulas, validation and references:
// docs/audit-report.md "Noise dose-response and tolerance".
#ifndef LATENTAUDIT_REPORT_ANALYSES_NOISE_HPP
#define LATENTAUDIT_REPORT_ANALYSES_NOISE_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../trial/record.hpp"
#include "../detail/audit_data.hpp"
#include "../finding.hpp"

namespace latentaudit {

/// @brief Options of the noise tolerance analysis (analyse_records passes its own).
struct noise_options {
  double alpha = 0.05;  ///< 1 − α tolerance interval; α per side of the non-inferiority bounds; in (0, 0.5)
  double margin = 0.05;  ///< the tolerance is where the fitted difference reaches −margin; > 0
  std::size_t bootstrap_replicates = 2000;  ///< B of the cluster bootstrap; (B + 1)·α/2 ≥ 1
  std::uint64_t seed = 1;                   ///< replicate r draws from the stream {seed, 0, 0, r}
  unsigned threads = 1;  ///< bootstrap worker threads (0 = all cores); results do not depend on it
  /// name of the dose in the texts ("sigma"; the drift analysis reuses the machinery with "drift steps")
  std::string dose = "sigma";
  /// the record field of the dose, named when a level is negative ("noise_sigma"; "drift_steps")
  std::string dose_field = "noise_sigma";
  /// the items every betting interval is tuned for (audit_options::horizon; 0 = each sample's size)
  std::size_t horizon = 0;
};

/// @brief One point of the noise dose-response (need regime, paired with kv_full).
struct dose_point {
  std::string arm;        ///< arm label ("kv_full" for sigma 0)
  double sigma = 0.0;     ///< noise level (0 = kv_full)
  std::size_t n = 0;      ///< (item, seed) units holding this arm and kv_full
  std::size_t items = 0;  ///< distinct items among them (the weight of the fit)
  double accuracy = 0.0;  ///< accuracy of the arm on those units
  /// 1 − α interval clustered by item: betting over the item mean accuracies on [0, 1], α/2 per
  /// side, widened to hold `accuracy` (as arm_summary; Wilson for a reference without item means)
  double ci_low = 0.0;
  double ci_high = 0.0;          ///< upper limit
  double diff_vs_kv_full = 0.0;  ///< mean over items of the item-mean difference arm − kv_full
  /// betting interval over items (clustered_paired_difference), α per side (1 − 2α); the lower
  /// limit is the one-sided 1 − α non-inferiority bound
  double diff_ci_low = 0.0;
  double diff_ci_high = 0.0;  ///< upper limit
  double fitted_diff = 0.0;   ///< the isotonic (non-increasing) fit of diff_vs_kv_full at this sigma
  bool noninferior = false;   ///< diff_ci_low > −margin (shown non-inferior at this level alone)
};

/// @brief The noise tolerance: the dose-response, the estimated tolerance σ with its interval, and
/// the conservative largest σ shown non-inferior.
struct noise_tolerance {
  std::vector<dose_point> curve;  ///< ascending sigma, kv_full first (sigma 0)
  /// σ where the fitted difference curve first reaches −margin; absent when it never does within
  /// the tested range (0 to the largest σ) or nothing was estimable
  std::optional<double> tolerance_sigma;
  std::optional<double> ci_low;       ///< lower limit (absent: beyond the tested range, or unavailable)
  std::optional<double> ci_high;      ///< upper limit (absent: beyond the tested range, or unavailable)
  double unbounded_fraction = 0.0;    ///< share of bootstrap replicates whose fit never reaches −margin
  bool ci_from_betting_band = false;  ///< the interval is the betting band (the bootstrap was degenerate)
  /// largest σ shown non-inferior to kv_full by fixed-sequence testing (every level up to it has a
  /// betting lower limit > −margin); absent when the smallest noise level is not shown non-inferior
  std::optional<double> sigma_noninferior;
  std::string method;  ///< how it was computed
};

/// @brief Outcomes of one noise level paired with the reference (kv_full), one entry per pair.
struct noise_level_pairs {
  std::string arm;                  ///< arm label
  double sigma = 0.0;               ///< noise level, ≥ 0
  std::vector<std::uint64_t> item;  ///< per pair: item id (the cluster)
  std::vector<double> noise;        ///< per pair: outcome of the noise arm, in [0, 1]
  std::vector<double> reference;    ///< per pair: outcome of kv_full, in [0, 1]
};

/// @brief The reference arm (kv_full) on its own: units and correct answers (the sigma-0 row).
struct noise_reference {
  std::string arm = "kv_full";     ///< label
  std::size_t n = 0;               ///< units
  std::size_t correct = 0;         ///< correct answers among them
  std::vector<double> item_means;  ///< mean accuracy of each item (empty: a Wilson interval instead)
};

/// @brief Weighted isotonic regression, non-increasing: the pool-adjacent-violators fit of y with
/// weights w (minimises Σ w_k (f_k − y_k)² subject to f_1 ≥ f_2 ≥ ...).
/// @param y values in order of the covariate (finite)
/// @param w weights (positive, finite), same length
/// @returns the fitted values
/// @throws shape_mismatch if the lengths differ; invalid_argument for a non-finite value or a
///         weight ≤ 0
[[nodiscard]] std::vector<double> isotonic_nonincreasing(std::span<const double> y,
                                                         std::span<const double> w);

/// @brief The first crossing of `threshold` by the piecewise-linear curve through (0, 0) and
/// (sigma_k, f_k): the smallest σ where it reaches threshold (< 0), interpolated linearly within
/// the segment where it first does.
/// @param sigma ascending levels (≥ 0)
/// @param f curve values, same length
/// @param threshold the level to reach, < 0
/// @returns the crossing, or empty when the curve stays above threshold up to the last level
/// @throws shape_mismatch if the lengths differ; invalid_argument for threshold ≥ 0
[[nodiscard]] std::optional<double> first_crossing(std::span<const double> sigma, std::span<const double> f,
                                                   double threshold);

/// @brief The dose-response and the tolerance σ from paired outcomes per noise level.
///
/// Per level: item means of noise − reference (clustered_paired_difference with α per side),
/// accuracy with the betting interval over its item means; the isotonic fit of the level means weighted by
/// items; the tolerance σ = first_crossing of the fit at −margin; its 1 − α interval
/// by test inversion: the hull of the σ where "the curve through (0, 0) and the level means, linear between
/// levels, equals −margin" is not rejected by a two-sided skewness-corrected t test over items (Johnson
/// 1978, item-level variance and skewness of the interpolated difference), the upper limit absent (beyond)
/// unless the largest level is shown below −margin, widened to hold the estimate. A cluster bootstrap (B
/// replicates from streams {seed, 0, 0, r}) gives unbounded_fraction. When the bootstrap is a point mass,
/// the inversion has zero width, or there are fewer than 2 items, the interval is the crossings of the
/// per-level betting limits at α/(2K) per side instead.
/// @param levels the noise levels (any order; sorted by sigma here)
/// @param reference kv_full's own units (the sigma-0 row)
/// @param o level, margin, bootstrap size, seed, threads
/// @returns the tolerance; an empty curve when `levels` is empty
/// @throws invalid_argument for bad options, a negative or non-finite sigma (naming the arm and
///         the field noise_sigma), a level without pairs or an outcome outside [0, 1];
///         shape_mismatch for pairs of unequal lengths
[[nodiscard]] noise_tolerance estimate_noise_tolerance(std::span<const noise_level_pairs> levels,
                                                       const noise_reference& reference,
                                                       const noise_options& o = {});

/// @brief The finding noise.tolerance_sigma: "yes" (tolerance located) when the tolerance σ and
/// both interval limits lie within the tested range; "no" does not apply (a location is found or
/// not); "inconclusive" otherwise, with the reason. n = the reference's units; a curve without
/// noise levels gives the inconclusive n = 0 finding.
/// @param nt the analysis
/// @param o its options (margin and level, for the text)
[[nodiscard]] finding noise_tolerance_finding(const noise_tolerance& nt, const noise_options& o = {});

namespace detail {

/// @brief The finding of a tolerance analysis (noise.tolerance_sigma, drift.tolerance_steps):
/// "yes" when the tolerance and both interval limits lie within the tested range, else
/// "inconclusive" with the reason ("no" does not apply to a location); n = the reference's units;
/// a curve without levels gives the inconclusive n = 0 finding with detail `missing`.
/// @param nt the analysis
/// @param o its options (margin, level and the dose name for the text)
/// @param key the finding's kind (its id: key.id())
/// @param missing the detail when there is no level
[[nodiscard]] finding tolerance_finding(const noise_tolerance& nt, const noise_options& o, finding_key key,
                                        std::string missing);

/// @brief An arm of a dose-response and its dose (noise σ, drift steps).
struct dose_arm {
  std::size_t arm = 0;  ///< index in the audit_data
  double dose = 0.0;    ///< its dose
};

/// @brief The dose-response's input shared by the noise and drift analyses: for each dose arm in
/// order, its need-regime units paired with `reference` (an arm with none is left out with the
/// warning "<what> arm '<label>' has no need-regime unit with kv_full; left out of the
/// dose-response").
/// @param d the unit × arm table
/// @param arms the dose arms, in the order of the curve
/// @param reference the arm of dose 0 (kv_full)
/// @param what "noise" or "drift", for the warning
/// @param warnings receives the warnings
[[nodiscard]] std::vector<noise_level_pairs> dose_level_pairs(const audit_data& d,
                                                              std::span<const dose_arm> arms,
                                                              std::size_t reference, std::string_view what,
                                                              std::vector<std::string>& warnings);

/// @brief The reference arm's need-regime units and item means (the dose-response's dose 0).
[[nodiscard]] noise_reference dose_reference(const audit_data& d, std::size_t reference);

/// @brief Noise level of an arm: its records' noise_sigma (the first one; a warning when they
/// differ), else the σ of the arm its label names (parse_arm: kv_noise_<σ>).
/// @throws invalid_argument naming the arm and the field noise_sigma for a negative sigma
std::optional<double> noise_arm_sigma(const audit_data& d, std::span<const trial_record> records,
                                      std::size_t a, std::vector<std::string>& warnings);

/// @brief The noise section of analyse_records: finds the noise arms (label kv_noise_<σ>, or kind
/// kv_policy with noise_sigma), pairs each with `kv_full` on need-regime units and runs
/// estimate_noise_tolerance. Skipped analyses leave an empty curve and a warning.
/// @throws invalid_argument for a negative noise_sigma in any record, naming the arm and the field
[[nodiscard]] noise_tolerance audit_noise(const audit_data& d, std::span<const trial_record> records,
                                          std::size_t kv_full, const noise_options& o,
                                          std::vector<std::string>& warnings);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/noise-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_NOISE_HPP
