// SPDX-License-Identifier: MIT
// latentaudit: sensitivity to unmeasured confounding — E-values (VanderWeele & Ding 2017) for risk
// ratios, odds ratios and standardised mean differences, and Rosenbaum bounds for matched pairs
// with the Wilcoxon signed-rank statistic (normal approximation as rbounds::psens, or exact), with
// the critical Γ at which significance is lost.
// Formulas and references: docs/estimators/sensitivity.md.
#ifndef LATENTAUDIT_ESTIMATORS_SENSITIVITY_HPP
#define LATENTAUDIT_ESTIMATORS_SENSITIVITY_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"

namespace latentaudit {

/// @brief An E-value: the minimum strength of association (risk-ratio scale) that an unmeasured
/// confounder would need with both treatment and outcome to explain away the estimate (or to move
/// it to `true_value`), and the same for the confidence limit closest to the null.
struct evalue_result {
  double point = std::numeric_limits<double>::quiet_NaN();  ///< E-value of the point estimate (≥ 1)
  double ci = std::numeric_limits<double>::quiet_NaN();  ///< E-value of the CI limit closest to the null (1
                                                         ///< if the CI covers it; NaN without a CI)
  double rr = std::numeric_limits<double>::quiet_NaN();  ///< the estimate on the risk-ratio scale
  double rr_low = std::numeric_limits<double>::quiet_NaN();   ///< lower CI limit on the risk-ratio scale
  double rr_high = std::numeric_limits<double>::quiet_NaN();  ///< upper CI limit on the risk-ratio scale
  double rr_true = 1.0;  ///< the null (true) value on the risk-ratio scale
};

/// @brief Options of the E-value functions.
struct evalue_options {
  /// The value to shift the estimate to, on the scale of the estimate (1 for ratios; for
  /// evalue_smd 0). Default: the null (NaN means "1 for ratios, 0 for the SMD").
  double true_value = std::numeric_limits<double>::quiet_NaN();
};

/// @brief E-value of a risk ratio (VanderWeele & Ding 2017): with RR* = RR/RR₀ if RR > RR₀ and
/// RR₀/RR otherwise, E = RR* + √(RR*(RR* − 1)). The CI E-value uses the limit closest to RR₀
/// (lower for RR > RR₀, upper for RR < RR₀) and is 1 when the interval contains RR₀.
/// @param rr the risk ratio (> 0, finite)
/// @param ci_low lower confidence limit (> 0, ≤ rr), or NaN for none
/// @param ci_high upper confidence limit (≥ rr), or NaN for none
/// @param options the true value (default 1)
/// @returns point and CI E-values
/// @throws invalid_argument on non-positive or non-finite values, or limits not bracketing rr
[[nodiscard]] evalue_result evalue_risk_ratio(double rr,
                                              double ci_low = std::numeric_limits<double>::quiet_NaN(),
                                              double ci_high = std::numeric_limits<double>::quiet_NaN(),
                                              const evalue_options& options = {});

/// @brief E-value of an odds ratio: converted to the risk-ratio scale first — RR ≈ OR when the
/// outcome is rare (< 15 % in every stratum), RR ≈ √OR when it is common (VanderWeele 2017) —
/// then as evalue_risk_ratio (the true value is converted the same way).
/// @param odds_ratio the odds ratio (> 0)
/// @param ci_low lower limit or NaN
/// @param ci_high upper limit or NaN
/// @param rare_outcome true: RR ≈ OR; false: RR ≈ √OR
/// @param options the true value (default 1)
/// @returns point and CI E-values, with the risk-ratio-scale values used
/// @throws invalid_argument as evalue_risk_ratio
[[nodiscard]] evalue_result evalue_odds_ratio(double odds_ratio, double ci_low, double ci_high,
                                              bool rare_outcome, const evalue_options& options = {});

/// @brief E-value of a standardised mean difference d with standard error se (VanderWeele & Ding
/// 2017, as EValue::evalues.MD): RR ≈ exp(0.91 d), CI exp(0.91 d ∓ 1.78 se), true value
/// exp(0.91 d₀); then as evalue_risk_ratio.
/// @param d the standardised mean difference (finite)
/// @param se its standard error (> 0)
/// @param options the true value d₀ (default 0)
/// @returns point and CI E-values
/// @throws invalid_argument on non-finite d or non-positive se
[[nodiscard]] evalue_result evalue_smd(double d, double se, const evalue_options& options = {});

/// @brief Options of the Rosenbaum bounds.
struct rosenbaum_options {
  /// false: large-sample normal approximation (as rbounds::psens); true: the exact distribution
  /// of the signed-rank statistic under the bounding Bernoulli model (n ≤ exact_max_pairs).
  bool exact = false;
  std::size_t exact_max_pairs = 500;  ///< largest number of non-zero pairs for the exact method
};

/// @brief Rosenbaum bounds on the one-sided p-value of Wilcoxon's signed-rank test (H₁: treated >
/// control) when treatment odds within a pair may differ by a factor Γ.
struct rosenbaum_bound {
  double gamma = 1;              ///< Γ ≥ 1
  double statistic = 0;          ///< T⁺ = Σ rank(|dᵢ|)·[dᵢ > 0] over non-zero differences
  double expectation_upper = 0;  ///< E⁺ = p⁺ Σ qᵢ, p⁺ = Γ/(1+Γ)
  double expectation_lower = 0;  ///< E⁻ = p⁻ Σ qᵢ, p⁻ = 1/(1+Γ)
  double variance = 0;           ///< V = p⁺p⁻ Σ qᵢ² (same for both bounds)
  double p_upper = 0;            ///< upper bound on the p-value (the one that matters)
  double p_lower = 0;            ///< lower bound on the p-value
  std::size_t n_pairs = 0;       ///< non-zero differences used
  std::size_t n_zero = 0;        ///< zero differences dropped
  bool exact = false;            ///< p-values from the exact distribution
};

/// @brief Rosenbaum bounds for matched pairs with the signed-rank statistic.
///
/// dᵢ = treatedᵢ − controlᵢ; zero differences are dropped; qᵢ = average rank of |dᵢ| (ties share
/// the mean rank). Normal approximation (rbounds::psens): z± = (T⁺ − E±)/√V, p = P(Z > z) without
/// continuity correction, upper bound with E⁺ and lower bound with E⁻. At Γ = 1 this is R's
/// `wilcox.test(treated, control, paired = TRUE, alternative = "greater", exact = FALSE,
/// correct = FALSE)` (the average-rank variance equals R's tie-corrected variance). Exact: P(T ≥
/// T⁺) with T = Σ qᵢ Bᵢ, Bᵢ ~ Bernoulli(p±) independent.
/// @param treated treated outcome per pair (finite)
/// @param control control outcome per pair, same size
/// @param gamma Γ ≥ 1 (finite)
/// @param options exact or normal
/// @returns the bounds and their ingredients
/// @throws shape_mismatch if sizes differ; invalid_argument on NaN, Γ < 1, fewer than 1 non-zero
///         difference, or too many pairs for the exact method
[[nodiscard]] rosenbaum_bound rosenbaum_signed_rank(std::span<const double> treated,
                                                    std::span<const double> control, double gamma,
                                                    const rosenbaum_options& options = {});

/// @brief The sensitivity value: the Γ at which the upper-bound p-value reaches α.
struct rosenbaum_critical_result {
  double gamma = 1;                 ///< Γ* with p_upper(Γ*) = α; 1 when not significant at Γ = 1
  double alpha = 0.05;              ///< the significance level
  bool significant_at_one = false;  ///< p_upper(1) < α (otherwise gamma = 1 and there is nothing to lose)
  double p_at_one = 0;              ///< the p-value at Γ = 1
  int iterations = 0;               ///< root-finder iterations
};

/// @brief Finds Γ* where the upper-bound p-value of rosenbaum_signed_rank equals α, by TOMS 748
/// (Boost.Math) on log Γ; p_upper is increasing in Γ.
/// @param treated treated outcome per pair
/// @param control control outcome per pair
/// @param alpha one-sided level in (0, 0.5)
/// @param options exact or normal
/// @returns Γ* (relative accuracy ~1e-14) and whether the test is significant at Γ = 1
/// @throws as rosenbaum_signed_rank; invalid_argument for α outside (0, 0.5); numerical_error if no
///         bracket is found below Γ = 1e12
[[nodiscard]] rosenbaum_critical_result rosenbaum_critical_gamma(std::span<const double> treated,
                                                                 std::span<const double> control,
                                                                 double alpha = 0.05,
                                                                 const rosenbaum_options& options = {});

// ---- implementation ----

namespace detail {

/// @brief E = r + √(r(r − 1)) with r = x/x₀ or x₀/x, whichever is ≥ 1.
[[nodiscard]] double evalue_threshold(double x, double x0) noexcept;

[[nodiscard]] evalue_result evalue_rr_scale(std::string_view fn, double rr, double lo, double hi, double rr0);

/// @brief Drops zero differences and returns (average ranks of |d|, sign indicator).
void signed_ranks(std::span<const double> a, std::span<const double> b, std::vector<double>& q,
                  std::vector<char>& pos, std::size_t& n_zero);

/// @brief Exact P(Σ qᵢBᵢ ≥ t) with Bᵢ ~ Bernoulli(p), ranks doubled to integers (average ranks are
/// multiples of ½); dynamic programming over the attainable sums.
[[nodiscard]] double exact_signed_rank_upper(const std::vector<double>& q, double t, double p);

/// @brief Ranks prepared once for repeated evaluation at several Γ.
struct signed_rank_data {
  std::vector<double> q;
  std::vector<char> pos;
  double t = 0, sum_q = 0, sum_q2 = 0;
  std::size_t n_zero = 0;
};

[[nodiscard]] signed_rank_data prepare_signed_rank(std::string_view fn, std::span<const double> a,
                                                   std::span<const double> b, const rosenbaum_options& o);

/// @brief Both bounds at Γ (the lower one only when `with_lower`, to spare the exact DP).
[[nodiscard]] rosenbaum_bound evaluate_bound(const signed_rank_data& s, double gamma, bool exact,
                                             bool with_lower = true);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/sensitivity-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_SENSITIVITY_HPP
