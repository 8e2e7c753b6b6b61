// SPDX-License-Identifier: MIT
// latentaudit: instrumental variables — the Wald estimator for a binary instrument (LATE =
// ITT_y / ITT_d with a delta-method SE) and two-stage least squares with classical, HC0–HC3 or
// cluster-robust (CR0/CR1) covariance, first-stage F statistics and partial R².
// Formulas and peers: docs/estimators/instrumental.md.
#ifndef LATENTAUDIT_ESTIMATORS_INSTRUMENTAL_HPP
#define LATENTAUDIT_ESTIMATORS_INSTRUMENTAL_HPP

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "effect_estimate.hpp"
#include "regression.hpp"

namespace latentaudit {

// ============================================================================================
// Declarations
// ============================================================================================

/// @brief Options of wald_estimator().
struct wald_estimator_options {
  double level = 0.95;  ///< confidence level, in (0, 1)
  bool sample_variance =
      true;  ///< true: arm (co)variances with n_a − 1; false: with n_a (then SE = 2SLS HC0)
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< no first stage or SE 0: throw or flag
};

/// @brief Result of wald_estimator(): the LATE and its two intention-to-treat components.
struct wald_estimator_result {
  effect_estimate late;   ///< ITT_y / ITT_d, method "wald_iv", estimand "late" (normal reference)
  effect_estimate itt_y;  ///< ȳ(z=1) − ȳ(z=0), estimand "itt_outcome"
  effect_estimate itt_d;  ///< d̄(z=1) − d̄(z=0), estimand "itt_treatment" (the first stage)
};

/// @brief Options of two_stage_least_squares().
struct iv_options {
  covariance_type covariance = covariance_type::automatic;  ///< classical without clusters, cr1 with
  reference_distribution distribution = reference_distribution::t_residual;  ///< for p-values and CIs
  double level = 0.95;                                                       ///< confidence level, in (0, 1)
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< exact fit / leverage 1: throw or flag
};

/// @brief First stage of one endogenous regressor: its regression on all instruments.
struct first_stage_result {
  std::string endogenous;  ///< the endogenous regressor's name
  ols_result fit;          ///< regression of it on [exogenous, instruments] with the chosen covariance
  double f = effect_estimate::nan;                  ///< Wald F of the excluded instruments, chosen covariance
  double f_df1 = effect_estimate::nan;              ///< q = number of excluded instruments
  double f_df2 = effect_estimate::nan;              ///< the reference df (n − k_z, G − 1, or ∞)
  double f_p = effect_estimate::nan;                ///< P(F > f)
  double f_classical = effect_estimate::nan;        ///< ((RSS_r − RSS_u)/q) / (RSS_u/(n − k_z))
  double f_classical_p = effect_estimate::nan;      ///< P(F(q, n − k_z) > f_classical)
  double partial_r_squared = effect_estimate::nan;  ///< (RSS_r − RSS_u)/RSS_r
};

/// @brief Result of two_stage_least_squares().
struct iv_result {
  ols_result fit;  ///< structural coefficients, covariance and terms (method "2sls_<covariance>")
  std::vector<first_stage_result> first_stages;  ///< one per endogenous regressor
};

/// @brief The Wald estimator for a binary instrument z: LATE = ITT_y / ITT_d with
/// ITT_y = ȳ(z=1) − ȳ(z=0), ITT_d = d̄(z=1) − d̄(z=0), and the delta-method SE
/// √((V_y − 2 β C + β² V_d)/ITT_d²), V_y = Σ_a s²_{y,a}/n_a, V_d likewise, C = Σ_a s_{yd,a}/n_a.
/// Normal reference.
/// @param y outcomes (finite)
/// @param d treatment received (finite; usually 0/1)
/// @param z 0/1 instrument (treatment assigned), at least 2 observations per arm
/// @param options level, variance denominator, degenerate policy
/// @returns the LATE and both ITTs
/// @throws shape_mismatch, invalid_argument on bad input; numerical_error if ITT_d is 0 (the
///         instrument has no first stage) or the SE is 0, unless flagged
[[nodiscard]] wald_estimator_result wald_estimator(std::span<const double> y, std::span<const double> d,
                                                   std::span<const double> z,
                                                   const wald_estimator_options& options = {});

/// @brief Two-stage least squares of y on X = [exogenous, endogenous] with instruments
/// Z = [exogenous, instruments]: X̂ = Z(Z'Z)⁻¹Z'X, β̂ = (X̂'X̂)⁻¹X̂'y, e = y − Xβ̂, covariance
/// sandwich with bread (X̂'X̂)⁻¹ and scores x̂ᵢeᵢ (classical: σ̂²(X̂'X̂)⁻¹, σ̂² = e'e/(n − k)).
/// HC2/HC3 leverages are AER's hᵢ = xᵢ'(X̂'X̂)⁻¹x̂ᵢ.
/// @param y outcomes (size n)
/// @param exogenous included exogenous regressors, usually with an intercept (may have no columns)
/// @param endogenous endogenous regressors (≥ 1 column)
/// @param instruments excluded instruments (at least as many columns as endogenous)
/// @param options covariance (non-cluster types), distribution, level
/// @returns the structural fit and a first stage per endogenous regressor
/// @throws shape_mismatch on size mismatches; invalid_argument on non-finite data, duplicate names,
///         too few instruments, collinear instruments (named) or instruments with no first stage
///         (the projected regressors are rank deficient; named); numerical_error as ols()
[[nodiscard]] iv_result two_stage_least_squares(std::span<const double> y, const design_matrix& exogenous,
                                                const design_matrix& endogenous,
                                                const design_matrix& instruments,
                                                const iv_options& options = {});

/// @brief Two-stage least squares with cluster ids (covariance cr0/cr1_g/cr1; automatic = cr1).
/// @param y outcomes
/// @param exogenous included exogenous regressors
/// @param endogenous endogenous regressors
/// @param instruments excluded instruments
/// @param clusters cluster of each observation (G ≥ 2)
/// @param options see iv_options
/// @returns as the overload without clusters
/// @throws as the overload without clusters
[[nodiscard]] iv_result two_stage_least_squares(std::span<const double> y, const design_matrix& exogenous,
                                                const design_matrix& endogenous,
                                                const design_matrix& instruments, const group_index& clusters,
                                                const iv_options& options = {});

// ============================================================================================
// Internal helpers (defined in impl/instrumental-inl.hpp)
// ============================================================================================

namespace detail {

/// @brief Column-binds two design matrices (either may have no columns).
design_matrix bind_columns(const design_matrix& a, const design_matrix& b, std::size_t n);

/// @brief Checks one block of an IV design: rows, names, finiteness.
void check_iv_block(std::string_view fn, std::string_view name, const design_matrix& m, std::size_t n);

/// @brief Throws if a name occurs twice in `names`.
void check_unique_names(std::string_view fn, std::string_view arg, const std::vector<std::string>& names);

/// @brief The body of both two_stage_least_squares() overloads.
iv_result tsls_impl(std::span<const double> y, const design_matrix& exo, const design_matrix& endo,
                    const design_matrix& inst, const group_index* clusters, const iv_options& o);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/instrumental-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_INSTRUMENTAL_HPP
