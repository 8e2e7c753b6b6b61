// SPDX-License-Identifier: MIT
// latentaudit: treatment-effect heterogeneity by subgroup — per-group effects (Welch or paired t),
// Holm- and BH-adjusted p-values, and an interaction (heterogeneity) test: OLS of y on
// treatment × group (or of the paired differences on group) with an HC0–HC3 sandwich and a
// joint Wald test of the interaction terms (chi-square and F forms), fitted with
// estimators/regression.hpp.
// Formulas and references: docs/estimators/heterogeneity.md.
#ifndef LATENTAUDIT_ESTIMATORS_HETEROGENEITY_HPP
#define LATENTAUDIT_ESTIMATORS_HETEROGENEITY_HPP

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief Heteroskedasticity-consistent covariance of the interaction regression
/// (the `type` of R's `sandwich::vcovHC`).
enum class interaction_covariance {
  hc0,  ///< White: ωᵢ = eᵢ²
  hc1,  ///< ωᵢ = eᵢ² n/(n − p)
  hc2,  ///< ωᵢ = eᵢ²/(1 − hᵢ)
  hc3,  ///< ωᵢ = eᵢ²/(1 − hᵢ)², vcovHC's default
};

/// @brief Options of the subgroup analyses.
struct heterogeneity_options {
  double level = 0.95;  ///< confidence level of each group's interval
  interaction_covariance covariance = interaction_covariance::hc3;  ///< sandwich of the Wald test
  on_degenerate if_degenerate = on_degenerate::throw_error;         ///< constant data within a group
};

/// @brief One subgroup's effect.
struct subgroup_effect {
  std::string label;       ///< group label (integer labels as decimal text; bins "Q1", "Q2", …)
  effect_estimate effect;  ///< Welch ("welch") or paired ("paired_t") t test within the group
  double p_holm = effect_estimate::nan;      ///< Holm-adjusted p-value over the groups (R p.adjust "holm")
  double p_bh = effect_estimate::nan;        ///< Benjamini–Hochberg-adjusted p-value (R p.adjust "BH")
  double lower_edge = effect_estimate::nan;  ///< bins only: lower break (excluded except for Q1)
  double upper_edge = effect_estimate::nan;  ///< bins only: upper break (included)
};

/// @brief Joint Wald test that the effect is the same in every group.
struct interaction_test_result {
  std::string covariance;                        ///< "HC0" … "HC3"
  double chi_square = effect_estimate::nan;      ///< W = b'(R V R')⁻¹ b over the K − 1 interaction terms
  double df = effect_estimate::nan;              ///< K − 1
  double p_chi_square = effect_estimate::nan;    ///< P(χ²(K−1) > W) (lmtest::waldtest test = "Chisq")
  double f = effect_estimate::nan;               ///< W/(K − 1)
  double df_residual = effect_estimate::nan;     ///< n − p of the regression
  double p_f = effect_estimate::nan;             ///< P(F(K−1, n−p) > W/(K−1)) (waldtest test = "F")
  estimate_status status = estimate_status::ok;  ///< degenerate when R V R' is singular (flagged)
};

/// @brief Result of a subgroup analysis.
struct heterogeneity_result {
  std::vector<subgroup_effect> groups;  ///< in level order (sorted labels or bin order)
  interaction_test_result interaction;  ///< heterogeneity across the groups
  std::vector<double> bin_edges;        ///< bins only: the K + 1 quantile breaks
};

/// @brief Effects by a categorical subgroup (string labels) in an unpaired design.
///
/// Per group: Welch t test of y among treated vs control. Interaction: OLS of
/// y on [1, T, G₂…G_K, T·G₂…T·G_K] (groups in sorted order, the first is the reference) with an
/// HC sandwich; Wald test of the K − 1 coefficients of T·Gₖ.
/// @param y outcomes (finite)
/// @param treatment 0/1 indicators, same size
/// @param groups group label per unit, same size; at least 2 groups, each with ≥ 2 treated and
///        ≥ 2 control units
/// @param options level, covariance type, degenerate policy
/// @returns per-group effects with adjusted p-values, and the interaction test
/// @throws shape_mismatch on size mismatches; invalid_argument on non-binary treatment, NaN, fewer
///         than 2 groups or a group with too few units in an arm; numerical_error on constant data
[[nodiscard]] heterogeneity_result subgroup_effects(std::span<const double> y,
                                                    std::span<const double> treatment,
                                                    std::span<const std::string> groups,
                                                    const heterogeneity_options& options = {});

/// @brief As subgroup_effects() with integer labels (sorted numerically).
[[nodiscard]] heterogeneity_result subgroup_effects(std::span<const double> y,
                                                    std::span<const double> treatment,
                                                    std::span<const std::int64_t> groups,
                                                    const heterogeneity_options& options = {});

/// @brief As subgroup_effects() with `int` labels.
[[nodiscard]] heterogeneity_result subgroup_effects(std::span<const double> y,
                                                    std::span<const double> treatment,
                                                    std::span<const int> groups,
                                                    const heterogeneity_options& options = {});

/// @brief Effects by K quantile bins of a continuous moderator (unpaired design).
///
/// Breaks qₖ = Q(k/K), k = 0…K, with R's default quantile (type 7: linear interpolation between
/// order statistics, see quantile_type7()); bins [q₀, q₁], (q₁, q₂], …, (q_{K−1}, q_K] as R's
/// `cut(x, quantile(x, 0:K/K), include.lowest = TRUE)`; labels "Q1" … "QK".
/// @param y outcomes
/// @param treatment 0/1 indicators
/// @param moderator the continuous variable (finite), same size
/// @param bins K ≥ 2
/// @param options as subgroup_effects()
/// @returns as subgroup_effects(), plus the breaks
/// @throws as subgroup_effects(); invalid_argument if breaks coincide (too many ties for K bins)
[[nodiscard]] heterogeneity_result subgroup_effects_binned(std::span<const double> y,
                                                           std::span<const double> treatment,
                                                           std::span<const double> moderator,
                                                           std::size_t bins,
                                                           const heterogeneity_options& options = {});

/// @brief Effects by subgroup in a paired design: per group a paired t test on dᵢ = treatedᵢ −
/// controlᵢ; the interaction test regresses d on [1, G₂…G_K] and tests the K − 1 group terms.
/// @param treated treated outcome per pair
/// @param control control outcome per pair, same size
/// @param groups group label per pair; each group needs ≥ 2 pairs
/// @param options as subgroup_effects()
/// @returns as subgroup_effects()
/// @throws as subgroup_effects()
[[nodiscard]] heterogeneity_result paired_subgroup_effects(std::span<const double> treated,
                                                           std::span<const double> control,
                                                           std::span<const std::string> groups,
                                                           const heterogeneity_options& options = {});

/// @brief As paired_subgroup_effects() with integer labels.
[[nodiscard]] heterogeneity_result paired_subgroup_effects(std::span<const double> treated,
                                                           std::span<const double> control,
                                                           std::span<const std::int64_t> groups,
                                                           const heterogeneity_options& options = {});

/// @brief As paired_subgroup_effects() with `int` labels.
[[nodiscard]] heterogeneity_result paired_subgroup_effects(std::span<const double> treated,
                                                           std::span<const double> control,
                                                           std::span<const int> groups,
                                                           const heterogeneity_options& options = {});

/// @brief Paired subgroup effects by K quantile bins of a per-pair moderator.
/// @param treated treated outcome per pair
/// @param control control outcome per pair
/// @param moderator per-pair moderator
/// @param bins K ≥ 2
/// @param options as subgroup_effects()
/// @returns as paired_subgroup_effects(), plus the breaks
/// @throws as subgroup_effects_binned()
[[nodiscard]] heterogeneity_result paired_subgroup_effects_binned(std::span<const double> treated,
                                                                  std::span<const double> control,
                                                                  std::span<const double> moderator,
                                                                  std::size_t bins,
                                                                  const heterogeneity_options& options = {});

/// @brief R's type-7 sample quantile of `x` at probability p ∈ [0, 1].
/// @param x data (finite, non-empty)
/// @param p probability
/// @returns (1 − h)x₍lo₎ + h x₍lo+1₎ with index = 1 + (n − 1)p, lo = ⌊index⌋, h = index − lo
///          (1-based order statistics), exactly as R's `quantile(x, p)`
/// @throws invalid_argument on empty or non-finite x, or p outside [0, 1]
[[nodiscard]] double quantile_type7(std::span<const double> x, double p);

// ---- internal helpers (defined in impl/heterogeneity-inl.hpp) ----

namespace detail {

/// @brief Integer codes 0…K−1 of the groups and their labels in level order.
struct group_codes {
  std::vector<std::size_t> code;   ///< per unit
  std::vector<std::string> label;  ///< per level
};

template <class Key>
[[nodiscard]] group_codes encode_groups(std::span<const Key> g) {
  std::map<Key, std::size_t> levels;
  for (const auto& v : g) levels.emplace(v, 0);
  group_codes c;
  std::size_t k = 0;
  for (auto& [key, idx] : levels) {
    idx = k++;
    if constexpr (std::is_same_v<Key, std::string>) {
      c.label.push_back(key);
    } else {
      c.label.push_back(std::to_string(key));
    }
  }
  c.code.reserve(g.size());
  for (const auto& v : g) c.code.push_back(levels.at(v));
  return c;
}

/// @brief Type-7 quantile of already sorted data, computed as R's `quantile.default`:
/// index = 1 + (n − 1)p, lo = ⌊index⌋, h = index − lo, q = (1 − h)x₍lo₎ + h x₍lo+1₎.
[[nodiscard]] double quantile7_sorted(const std::vector<double>& s, double p);

/// @brief Bins by quantile breaks; fills `edges`.
[[nodiscard]] group_codes bin_codes(std::string_view fn, std::span<const double> x, std::size_t k,
                                    std::vector<double>& edges);

/// @brief OLS with an HC sandwich and a joint Wald test of the last `q` coefficients, via
/// estimators/regression.hpp (ols + wald_test, t(n − p) reference for the F form).
interaction_test_result hc_wald_last(std::string_view fn, const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                     Eigen::Index q, interaction_covariance type, on_degenerate policy);

/// @brief Fills Holm and BH adjusted p-values of the groups (NaN p-values stay NaN).
void adjust_groups(std::vector<subgroup_effect>& g);

/// @brief Unpaired core on encoded groups.
[[nodiscard]] heterogeneity_result unpaired_core(std::string_view fn, std::span<const double> y,
                                                 std::span<const double> t, const group_codes& gc,
                                                 const heterogeneity_options& o);

/// @brief Paired core on encoded groups.
[[nodiscard]] heterogeneity_result paired_core(std::string_view fn, std::span<const double> tr,
                                               std::span<const double> ct, const group_codes& gc,
                                               const heterogeneity_options& o);

void check_unpaired(std::string_view fn, std::span<const double> y, std::span<const double> t, std::size_t ng,
                    std::string_view gname, const heterogeneity_options& o);

void check_paired(std::string_view fn, std::span<const double> a, std::span<const double> b, std::size_t ng,
                  std::string_view gname, const heterogeneity_options& o);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/heterogeneity-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_HETEROGENEITY_HPP
