// SPDX-License-Identifier: MIT
// latentaudit: difference in differences — the 2 × 2 design from cell means or by regression,
// two-way fixed effects (TWFE) with cluster-robust SE by unit, and event studies with leads and
// lags and a joint Wald pre-trend test. Staggered adoption and other design problems are
// reported in a `warnings` vector. Formulas and peers: docs/estimators/difference_in_differences.md.
#ifndef LATENTAUDIT_ESTIMATORS_DIFFERENCE_IN_DIFFERENCES_HPP
#define LATENTAUDIT_ESTIMATORS_DIFFERENCE_IN_DIFFERENCES_HPP

#include <Eigen/Core>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "effect_estimate.hpp"
#include "regression.hpp"

namespace latentaudit {

// ============================================================================================
// Declarations
// ============================================================================================

/// @brief A design problem found in a panel (the estimate is still returned).
enum class did_warning_code {
  staggered_adoption,    ///< treated units start in different periods: TWFE is biased if effects vary
                         ///< (Goodman-Bacon 2021)
  treatment_reversal,    ///< some unit leaves treatment after starting (treatment not absorbing)
  no_never_treated,      ///< every unit is treated at some time: only timing differences identify effects
  always_treated,        ///< some units are treated in their first observed period (no pre-period)
  dropped_observations,  ///< event study: observations outside the event window were dropped
};

/// @brief One warning: a code and a sentence explaining it with the numbers found.
struct did_warning {
  did_warning_code code;  ///< what was found
  std::string message;    ///< human-readable explanation
};

/// @brief Summary of one cell of the 2 × 2 design.
struct did_cell {
  double mean = effect_estimate::nan;      ///< cell mean
  double variance = effect_estimate::nan;  ///< unbiased cell variance
  std::size_t n = 0;                       ///< observations
};

/// @brief Options of did_2x2_means().
struct did_means_options {
  double level = 0.95;            ///< confidence level, in (0, 1)
  bool normal_reference = false;  ///< false: t with Satterthwaite df; true: standard normal
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< zero variance in every cell: throw or flag
};

/// @brief Result of did_2x2_means().
struct did_means_result {
  effect_estimate effect;  ///< method "did_2x2_cells", estimand "did"
  /// cells in the order (control, pre), (control, post), (treated, pre), (treated, post)
  std::array<did_cell, 4> cells{};
};

/// @brief How fixed effects that are nested in the clusters count in k for df = n − k and the
/// (n−1)/(n−k) factor of HC1/CR1.
enum class fixed_effect_count {
  counted,  ///< every unit dummy counts (R `lm(y ~ ... + factor(unit))` + `vcovCL`)
  nested,   ///< unit effects, nested in the unit clusters, are not counted (fixest's `fixef.K = "nested"`
            ///< rule)
};

/// @brief Options of did_2x2_regression() and did_twfe().
struct did_options {
  covariance_type covariance = covariance_type::cr1;  ///< cluster types cluster by unit
  reference_distribution distribution =
      reference_distribution::t_cluster;                      ///< t(G−1) by default (Stata/fixest)
  double level = 0.95;                                        ///< confidence level, in (0, 1)
  fixed_effect_count fe_count = fixed_effect_count::counted;  ///< TWFE: count unit effects in k or not
  on_degenerate if_degenerate = on_degenerate::throw_error;   ///< exact fit: throw or flag
};

/// @brief Result of did_2x2_regression() and did_twfe().
struct did_result {
  effect_estimate effect;             ///< the DiD coefficient (estimand "did" or "att_twfe")
  ols_result fit;                     ///< the underlying regression (within-transformed for TWFE)
  std::vector<did_warning> warnings;  ///< design problems found
};

/// @brief Options of event_study().
struct event_study_options {
  std::optional<long long> first =
      {};  ///< earliest relative time with a coefficient (≤ −2); default: earliest observed
  std::optional<long long> last =
      {};                      ///< latest relative time with a coefficient (≥ 0); default: latest observed
  bool bin_endpoints = false;  ///< true: earlier/later relative times join the end bins; false: dropped
  covariance_type covariance = covariance_type::cr1;                        ///< as did_options
  reference_distribution distribution = reference_distribution::t_cluster;  ///< as did_options
  double level = 0.95;                                                      ///< confidence level
  fixed_effect_count fe_count = fixed_effect_count::counted;                ///< as did_options
  on_degenerate if_degenerate = on_degenerate::throw_error;                 ///< exact fit: throw or flag
};

/// @brief Result of event_study().
struct event_study_result {
  std::vector<long long> relative_times;      ///< relative time of each coefficient (−1 omitted), ascending
  std::vector<effect_estimate> coefficients;  ///< one per relative time, estimand "rel_<k>"
  wald_test_result pre_trend;  ///< H0: every lead (relative time ≤ −2) is 0; degenerate when there is none
  ols_result fit;              ///< the underlying within-unit regression
  std::vector<did_warning> warnings;  ///< design problems found
};

/// @brief 2 × 2 difference in differences from the four cell means:
/// (ȳ₁₁ − ȳ₁₀) − (ȳ₀₁ − ȳ₀₀) with SE = √(Σ_c s_c²/n_c) (independent cells; equals HC2 of the
/// saturated regression) and Satterthwaite df (Σ v_c)²/Σ v_c²/(n_c − 1), v_c = s_c²/n_c.
///
/// @code
/// const auto m = did_2x2_means(y, treated, post);  // m.effect: the DiD with its interval
/// @endcode
/// @param y outcomes (finite)
/// @param treated 0/1 group indicator, same size
/// @param post 0/1 period indicator, same size
/// @param options level, reference, degenerate policy
/// @returns the effect and the cells
/// @throws shape_mismatch on size mismatches; invalid_argument on non-binary indicators,
///         non-finite y or a cell with fewer than 2 observations; numerical_error if SE = 0
///         (unless flagged)
[[nodiscard]] did_means_result did_2x2_means(std::span<const double> y, std::span<const double> treated,
                                             std::span<const double> post,
                                             const did_means_options& options = {});

/// @brief 2 × 2 difference in differences by the regression y ~ 1 + treated + post + treated:post,
/// with the chosen covariance (cluster types cluster by unit). The coefficient of "treated:post".
/// @param y outcomes
/// @param treated 0/1 group indicator
/// @param post 0/1 period indicator
/// @param units unit of each observation (the clusters)
/// @param options covariance, distribution, level
/// @returns the effect (estimand "did") and the fit
/// @throws as ols() and did_2x2_means()
[[nodiscard]] did_result did_2x2_regression(std::span<const double> y, std::span<const double> treated,
                                            std::span<const double> post, const group_index& units,
                                            const did_options& options = {});

/// @brief Two-way fixed-effects DiD: y_it = α_i + γ_t + β d_it + ε_it, β by the within-unit
/// transformation of y, d and T − 1 period dummies (exact for balanced and unbalanced panels),
/// covariance clustered by unit (or classical/HC0/HC1). k counts the unit effects or not
/// (options.fe_count). Staggered timing and other design problems are listed in warnings.
/// @param y outcomes
/// @param treatment 0/1 treatment indicator d_it
/// @param units unit of each observation
/// @param time integer period of each observation
/// @param options covariance (not hc2/hc3), distribution, level, fe_count
/// @returns the effect (estimand "att_twfe"), the within fit, warnings
/// @throws shape_mismatch, invalid_argument (fewer than 2 units or periods, no within-unit
///         variation of treatment, hc2/hc3, collinearity), numerical_error as ols()
[[nodiscard]] did_result did_twfe(std::span<const double> y, std::span<const double> treatment,
                                  const group_index& units, std::span<const long long> time,
                                  const did_options& options = {});

/// @brief Event study: TWFE with dummies for relative times k = t − start_i (start_i the first
/// treated period of unit i; never-treated units have none), reference k = −1 omitted, and a
/// Wald test that every lead (k ≤ −2) is 0 with the chosen covariance.
/// @param y outcomes
/// @param treatment 0/1 treatment indicator d_it (absorbing; starts are first treated periods)
/// @param units unit of each observation
/// @param time integer period of each observation
/// @param options window, binning, covariance, distribution, level, fe_count
/// @returns the coefficients, the pre-trend test, the fit and warnings
/// @throws as did_twfe(); invalid_argument if first > −2 or last < 0, or no unit is treated
[[nodiscard]] event_study_result event_study(std::span<const double> y, std::span<const double> treatment,
                                             const group_index& units, std::span<const long long> time,
                                             const event_study_options& options = {});

// ============================================================================================
// Internal helpers (defined in impl/difference_in_differences-inl.hpp)
// ============================================================================================

namespace detail {

/// @brief Unit treatment timing and period coding of a panel.
struct panel_layout {
  std::vector<long long> periods;     ///< sorted distinct time values
  std::vector<std::uint32_t> period;  ///< period index of each observation
  std::vector<long long> start;       ///< first treated time of each unit (LLONG_MAX: never treated)
  std::vector<did_warning> warnings;  ///< design problems
};

/// @brief Joins integers as "a, b, c" (at most `limit` items, then "...").
std::string join_values(const std::vector<long long>& v, std::size_t limit = 8);

/// @brief Checks a panel's arguments and finds periods, treatment starts and design problems.
panel_layout describe_panel(std::string_view fn, std::span<const double> y, std::span<const double> d,
                            const group_index& units, std::span<const long long> time);

/// @brief Subtracts group means from every column of m and from v (the within transformation).
void demean_within(Eigen::MatrixXd& m, Eigen::VectorXd& v, const std::vector<std::uint32_t>& group,
                   std::size_t groups);

/// @brief Checks that TWFE can use the covariance type (leverages of the dummy model are not
/// available from the within transformation).
void check_within_covariance(std::string_view fn, covariance_type c);

/// @brief Fits the within-unit regression of y on the columns of x (with names) and clusters by unit.
ols_result fit_within(std::string_view fn, Eigen::MatrixXd x, std::vector<std::string> names,
                      Eigen::VectorXd y, const std::vector<std::uint32_t>& unit, const group_index& clusters,
                      covariance_type cov, reference_distribution dist, double level, fixed_effect_count fe,
                      on_degenerate policy);

/// @brief Builds the T − 1 period dummies (first period omitted) into columns [c0, c0 + T − 1).
void period_dummies(Eigen::MatrixXd& x, Eigen::Index c0, const panel_layout& p,
                    const std::vector<std::size_t>& rows, std::vector<std::string>& names);

/// @brief Restricts a group index to selected observations (renumbering groups that remain).
group_index subset_groups(const group_index& g, const std::vector<std::size_t>& rows);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/difference_in_differences-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_DIFFERENCE_IN_DIFFERENCES_HPP
