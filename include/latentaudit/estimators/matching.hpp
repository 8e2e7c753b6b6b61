// SPDX-License-Identifier: MIT
// latentaudit: nearest-neighbour matching with replacement on covariates (ATT, ATC, ATE) with
// Abadie–Imbens standard errors and optional regression bias adjustment, reproducing R's
// Matching::Match (Matching 4.10-8). Formulas, conventions and the Match correspondence:
// docs/estimators/matching.md.
#ifndef LATENTAUDIT_ESTIMATORS_MATCHING_HPP
#define LATENTAUDIT_ESTIMATORS_MATCHING_HPP

#include <Eigen/Core>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "detail/kd_tree.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief The population whose average effect is estimated.
enum class matching_estimand {
  att,  ///< average effect on the treated: each treated unit is matched to controls
  atc,  ///< average effect on the controls: each control unit is matched to treated units
  ate,  ///< average effect: every unit is matched to units of the other arm
};

/// @brief The distance between covariate vectors (always on covariates centred and divided by
/// their sample SD, as Match does).
enum class matching_distance {
  inverse_variance,  ///< Euclidean on SD-scaled covariates (Match's Weight = 1, the default)
  mahalanobis,       ///< (x−y)'S⁻¹(x−y), S = X'X/N of the scaled covariates (Match's Weight = 2)
  user_matrix,       ///< (x−y)'W(x−y) with W = options.weight_matrix on scaled covariates (Weight.matrix)
};

/// @brief Which focal units enter the Abadie–Imbens variance when a caliper or exact matching
/// drops some of them.
enum class dropped_unit_variance {
  matched_only,      ///< only matched focal units (SN = their number); the default
  match_compatible,  ///< as Match 4.10-8: all focal units count in SN, dropped ones with τ̂ᵢ = 0
};

/// @brief Denominator of the standardized mean differences in the balance table.
enum class balance_scale {
  focal_sd,   ///< SD of the focal arm (treated for ATT and ATE, control for ATC), as Match's MatchBalance
  pooled_sd,  ///< √((s²_treated + s²_control)/2)
};

/// @brief Options of nearest_neighbor_matching. Defaults are Match's defaults.
struct matching_options {
  matching_estimand estimand = matching_estimand::att;  ///< Match's `estimand`
  std::size_t neighbors = 1;                            ///< M, matches per focal unit (Match's `M`)
  matching_distance distance = matching_distance::inverse_variance;  ///< Match's `Weight`
  std::vector<double> weight_matrix = {};  ///< k×k row-major symmetric matrix for distance = user_matrix
  bool ties = true;                  ///< keep every match within distance_tolerance of the M-th (weights 1/#)
  double distance_tolerance = 1e-5;  ///< tie tolerance on the squared distance (Match's `distance.tolerance`)
  std::vector<double> caliper =
      {};  ///< empty: none; 1 value: all covariates; k values: per covariate (SD units)
  std::vector<std::size_t> exact = {};  ///< covariate indices (0-based) that must match exactly
  bool bias_adjust = false;             ///< regression bias adjustment (Match's `BiasAdjust`)
  std::size_t var_calc = 0;  ///< 0: homoskedastic AI variance; J > 0: σ²(Xᵢ) from J same-arm neighbours
  bool sample_variance = false;  ///< Match's `sample = TRUE`: the sample-average (conditional) variance
  dropped_unit_variance dropped_variance = dropped_unit_variance::matched_only;  ///< see the enum
  double tolerance = 1.4901161193847656e-08;  ///< Match's `tolerance` (√ε): ridge and eigenvalue thresholds
  double level = 0.95;                        ///< confidence level of the normal-reference interval
  bool keep_pairs = true;  ///< return the matched rows (index_treated, index_control, weights)
  balance_scale balance_denominator = balance_scale::focal_sd;  ///< SMD denominator
  std::vector<std::string> covariate_names =
      {};                ///< optional names (size k) for messages and the balance table
  unsigned threads = 1;  ///< threads for the neighbour queries (0 = all cores); results do not depend on it
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< zero standard error: throw or flag
};

/// @brief Balance of one covariate before and after matching.
struct covariate_balance {
  std::string name;                  ///< covariate name
  double mean_treated_before = 0;    ///< mean among all treated
  double mean_control_before = 0;    ///< mean among all controls
  double smd_before = 0;             ///< (mean_t − mean_c)/denominator (Match's sdiff is 100 × this)
  double variance_ratio_before = 0;  ///< s²_treated / s²_control (n − 1 denominators)
  double mean_treated_after = 0;     ///< weighted mean over the treated side of the matched rows
  double mean_control_after = 0;     ///< weighted mean over the control side of the matched rows
  double smd_after = 0;              ///< standardized difference after matching
  double variance_ratio_after = 0;   ///< weighted variance ratio after matching
};

/// @brief Result of nearest_neighbor_matching.
struct [[nodiscard]] matching_result {
  effect_estimate effect;           ///< method "matching", estimand "att"/"atc"/"ate", AI SE, normal CI and p
  double estimate_unadjusted = 0;   ///< the estimate without bias adjustment (Match's est.noadj)
  double std_error_population = 0;  ///< AI SE of the population average effect (Match's default se)
  double std_error_sample = 0;      ///< AI SE of the sample average effect (Match's se with sample = TRUE)
  double std_error_conditional = 0;  ///< √(max(var_sample, var_pop) − var_sample) (Match's se.cond)
  double std_error_standard = 0;     ///< naive SE of the matched differences (Match's se.standard)
  std::size_t n_focal = 0;           ///< units to be matched (treated for ATT, controls for ATC, all for ATE)
  std::size_t n_matched = 0;         ///< focal units with matches (Match's wnobs)
  std::size_t n_dropped = 0;         ///< focal units dropped by the caliper / exact matching (ndrops.matches)
  std::size_t n_rows = 0;            ///< matched rows (one per focal unit and match, ties included)
  std::size_t n_matches_unique = 0;  ///< distinct units used as matches (e.g. distinct controls for ATT)
  std::vector<std::size_t> index_treated;  ///< matched rows: treated unit (0-based), Match's row order
  std::vector<std::size_t> index_control;  ///< matched rows: control unit (0-based)
  std::vector<double> weights;             ///< matched rows: weight 1/(#matches of the focal unit)
  std::vector<covariate_balance> balance;  ///< per covariate, before and after matching
};

namespace detail {

/// @brief Text of a covariate for messages: its name if given, else "x<j>" (0-based column).
std::string covariate_label(const matching_options& o, std::size_t j);

/// @brief Weighted least squares of y on (1, X) with weights w (all rows), with Match's ridge:
/// A = X̃'X̃ + I·tol·[λ_min(X̃'X̃) ≤ tol]·max_j sd(X̃_j), X̃ = diag(√w)[1 X]. Returns the slopes.
Eigen::VectorXd match_bias_regression(const Eigen::MatrixXd& x, std::span<const double> y,
                                      const std::vector<double>& w, double tol);

/// @brief Sample variance (n − 1) of {y0} ∪ {y[j] : j in idx}.
double outcome_variance(double y0, const std::vector<kd_neighbor>& idx, std::span<const double> y);

}  // namespace detail

/// @brief Nearest-neighbour matching with replacement (R's `Matching::Match`).
///
/// Each focal unit is matched to its M nearest units of the other arm in the scaled distance; with
/// `ties` every unit whose squared distance is within distance_tolerance (+1e-10) of the M-th is
/// kept and the matches share weight 1. τ̂ᵢ = Yᵢ(1) − Ŷᵢ(0) (bias-adjusted if asked), the estimate
/// is their mean over the matched focal units, and its Abadie–Imbens (2006) standard error uses
/// K(j) = Σ weights with which j serves as a match. A caliper (in SD units of each covariate) and
/// exact matching drop focal units without eligible matches.
/// @param outcome outcomes Y (n, finite)
/// @param treatment treatment indicators (n, each 0 or 1, both arms present)
/// @param covariates row-major n × n_covariates matrix (finite, no constant column)
/// @param n_covariates number of covariates k ≥ 1
/// @param options estimand, M, distance, ties, caliper, exact, bias adjustment, variance, threads
/// @returns matching_result; effect.method "matching", effect.estimand "att"/"atc"/"ate", normal reference
/// @throws shape_mismatch if sizes disagree; invalid_argument on non-finite or non-binary data, a
///         single arm, a constant covariate, bad options, M or var_calc larger than the pool, or a
///         caliper / exact rule that drops every focal unit; numerical_error if the standard error
///         is zero (unless options flag it)
[[nodiscard]] matching_result nearest_neighbor_matching(std::span<const double> outcome,
                                                        std::span<const double> treatment,
                                                        std::span<const double> covariates,
                                                        std::size_t n_covariates,
                                                        const matching_options& options = {});

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/matching-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_MATCHING_HPP
