// SPDX-License-Identifier: MIT
// latentaudit: bootstrap confidence intervals from replicate values, under two conventions:
// R boot 1.3-28 (boot.ci: norm.inter order statistics, z0 = Φ⁻¹(#{t* < t0}/R), a over all units)
// and scipy 1.10 (stats.bootstrap: np.percentile linear, mid-rank z0, per-sample acceleration).
// Formulas and the peer calls they reproduce: docs/estimators/bootstrap.md.
#ifndef LATENTAUDIT_ESTIMATORS_DETAIL_BOOTSTRAP_INTERVALS_HPP
#define LATENTAUDIT_ESTIMATORS_DETAIL_BOOTSTRAP_INTERVALS_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <cstddef>
#include <limits>
#include <span>
#include <string>

#include "../../config.hpp"

namespace latentaudit {

/// @brief Confidence-interval construction from the bootstrap distribution.
enum class bootstrap_ci_method {
  percentile,   ///< quantiles of t* at α/2, 1 − α/2
  basic,        ///< 2t₀ − (quantiles of t* at 1 − α/2, α/2)  ("reverse percentile")
  normal,       ///< t₀ − bias ∓ z·sd(t*), bias = mean(t*) − t₀
  bca,          ///< bias-corrected and accelerated (Efron 1987)
  studentized,  ///< bootstrap-t: t₀ − √v₀ · quantiles of (t* − t₀)/√v*
};

/// @brief Which peer's conventions the interval follows where peers differ.
enum class bootstrap_convention {
  boot,  ///< R boot::boot.ci: norm.inter order statistic (R+1)α, z0 from #{t* < t0}/R, a = ΣL³/(6(ΣL²)^1.5)
  scipy,  ///< scipy.stats.bootstrap: np.percentile linear (index (B−1)p), mid-rank z0, per-sample a
};

namespace detail {

inline constexpr double bootstrap_nan = std::numeric_limits<double>::quiet_NaN();

/// @brief Name of a method as used in effect_estimate::method ("bootstrap_bca", ...).
[[nodiscard]] const char* bootstrap_method_name(bootstrap_ci_method m) noexcept;

/// @brief R boot's norm.inter for one α on an ascending sample of size R: k = ⌊(R+1)α⌋; the k-th
/// order statistic when (R+1)α is an integer, else interpolation between t₍ₖ₎ and t₍ₖ₊₁₎ on the
/// normal scale; t₍₁₎ for k = 0 and t₍R₎ for k ≥ R (boot warns: extreme order statistics).
[[nodiscard]] double boot_norm_inter(std::span<const double> sorted, double alpha);

/// @brief numpy 1.24 `np.percentile(a, 100 p)` with the default linear method, as scipy calls it:
/// q = (100 p)/100, h = (B − 1) q, lerp between a₍⌊h⌋₎ and a₍⌊h⌋+1₎ (numpy's two-sided _lerp).
[[nodiscard]] double scipy_percentile(std::span<const double> sorted, double p);

/// @brief The quantile rule of a convention at probability p.
[[nodiscard]] double bootstrap_quantile(std::span<const double> sorted, double p, bootstrap_convention c);

/// @brief BCa acceleration from influence values.
/// boot: a = ΣL³ / (6 (ΣL²)^{3/2}) over all units (strata ignored).
/// scipy: a = (1/6) Σⱼ(ΣᵢLᵢⱼ³/nⱼ³) / (Σⱼ ΣᵢLᵢⱼ²/nⱼ²)^{3/2}, strata j of sizes nⱼ (stratum after stratum).
/// Sums are accumulated in long double (as R's sum()).
[[nodiscard]] double bca_acceleration(std::span<const double> influence, std::span<const std::size_t> strata,
                                      bootstrap_convention c);

/// @brief Mean and unbiased standard deviation (two passes, long double sums as R's mean/var).
struct replicate_moments {
  double mean = bootstrap_nan;  ///< mean of the replicates
  double sd = bootstrap_nan;    ///< standard deviation, n − 1 denominator
};

[[nodiscard]] replicate_moments replicate_moments_of(std::span<const double> t) noexcept;

/// @brief Everything the interval step needs: t₀, t*, optional influence values and their strata,
/// and the studentized variances.
struct bootstrap_interval_input {
  double t0 = bootstrap_nan;            ///< statistic on the original data
  std::span<const double> t;            ///< replicates, finite
  std::span<const double> influence;    ///< BCa influence values (empty: a = 0 is NOT assumed)
  std::span<const std::size_t> strata;  ///< sizes of the influence strata (empty = one stratum)
  double v0 = bootstrap_nan;            ///< studentized: variance estimate at t₀
  std::span<const double> v;            ///< studentized: variance estimates of the replicates
};

/// @brief Outcome of the interval step.
struct bootstrap_interval_output {
  double low = bootstrap_nan;           ///< lower limit
  double high = bootstrap_nan;          ///< upper limit
  double std_error = bootstrap_nan;     ///< sd(t*), ddof = 1
  double z0 = bootstrap_nan;            ///< BCa bias correction
  double acceleration = bootstrap_nan;  ///< BCa acceleration
  double alpha_low = bootstrap_nan;     ///< probability level of the lower quantile used
  double alpha_high = bootstrap_nan;    ///< probability level of the upper quantile used
  std::size_t used = 0;                 ///< replicates used (studentized: finite z*)
  bool degenerate = false;              ///< the interval is undefined for these replicates
  std::string reason;                   ///< why, when degenerate
};

/// @brief Whether all replicates are equal up to rounding: max − min ≤ 8 ε max|t*|.
[[nodiscard]] bool replicates_all_equal(std::span<const double> t) noexcept;

/// @brief Computes the interval of `method` under `conv` at confidence `level`.
/// @pre t.size() >= 2, all finite; influence non-empty for bca; v0, v given for studentized.
[[nodiscard]] bootstrap_interval_output compute_interval(const bootstrap_interval_input& in,
                                                         bootstrap_ci_method method, double level,
                                                         bootstrap_convention conv);

}  // namespace detail
}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/bootstrap_intervals-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_DETAIL_BOOTSTRAP_INTERVALS_HPP
