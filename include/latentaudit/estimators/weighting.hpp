// SPDX-License-Identifier: MIT
// latentaudit: propensity-score weighting — logistic regression by IRLS with separation detection,
// inverse probability weighting (Horvitz–Thompson and Hájek, ATE and ATT) with an M-estimation
// sandwich that accounts for the estimated propensity score, and augmented IPW (doubly robust).
// Formulas and references: docs/estimators/weighting.md.
#ifndef LATENTAUDIT_ESTIMATORS_WEIGHTING_HPP
#define LATENTAUDIT_ESTIMATORS_WEIGHTING_HPP

#include <Eigen/Core>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief Options of the logistic regression fit (IRLS / Newton–Raphson).
struct logistic_options {
  int max_iterations = 100;  ///< IRLS iterations before giving up (R glm: `maxit = 25`)
  /// Convergence: |dev − dev_old| / (|dev| + 0.1) < tolerance (R glm's rule; R's default is 1e-8).
  double tolerance = 1e-12;
  /// A fitted probability within this distance of 0 or 1 signals (quasi-)separation.
  double separation_tolerance = 1e-10;
  bool add_intercept = true;  ///< prepend a column of ones to the covariates
};

/// @brief A fitted logistic regression P(y = 1 | x) = 1 / (1 + exp(−x'β)).
struct logistic_fit {
  Eigen::VectorXd coefficients;      ///< β; the intercept first when add_intercept
  Eigen::MatrixXd covariance;        ///< (X'WX)⁻¹ at β̂, W = diag(p(1−p)) (R's `vcov(glm)`)
  Eigen::VectorXd fitted;            ///< fitted probabilities p̂ᵢ
  Eigen::VectorXd linear_predictor;  ///< η̂ᵢ = xᵢ'β̂
  double deviance = 0;               ///< residual deviance −2 Σ log-likelihood terms
  double null_deviance = 0;          ///< deviance of the intercept-only model
  int iterations = 0;                ///< IRLS iterations used
};

/// @brief Which average effect the weights target.
enum class weighting_estimand {
  ate,  ///< average treatment effect over the whole sample
  att,  ///< average treatment effect on the treated
};

/// @brief How inverse probability weights are normalised.
enum class ipw_normalization {
  horvitz_thompson,  ///< weighted sums divided by n (ATE) or n₁ (ATT)
  hajek,             ///< weighted means: weights normalised to sum to one within each arm
};

/// @brief Which sandwich variance an IPW estimate uses.
enum class ipw_variance {
  /// M-estimation sandwich stacking the logistic score equations with the IPW moments
  /// (Lunceford & Davidian 2004): accounts for the estimation of the propensity score.
  stacked,
  /// The IPW moments alone with the propensities treated as known ("weights known"); for Hájek
  /// weights this equals HC0 of the weighted regression y ~ treatment (sandwich::vcovHC).
  weights_known,
};

/// @brief What to do with extreme propensity scores.
enum class propensity_trimming {
  none,  ///< use the propensities as fitted
  clip,  ///< winsorise them to [ε, 1 − ε]; clipped units keep their (now constant) propensity
  drop,  ///< exclude units with propensity outside [ε, 1 − ε] from the effect (not from the PS fit)
};

/// @brief Options of ipw() and aipw().
struct weighting_options {
  weighting_estimand estimand = weighting_estimand::ate;       ///< ATE or ATT
  ipw_normalization normalization = ipw_normalization::hajek;  ///< ipw() only
  ipw_variance variance = ipw_variance::stacked;               ///< ipw() only
  propensity_trimming trimming = propensity_trimming::none;    ///< extreme propensities
  double trim_epsilon = 0.01;           ///< ε of the trimming rule, in (0, 0.5); unused without trimming
  double level = 0.95;                  ///< confidence level of the normal-reference interval
  logistic_options propensity_model{};  ///< options of the propensity-score fit
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< zero standard error: throw or flag
};

/// @brief Result of ipw() / aipw(): the effect plus the diagnostics needed to trust it.
struct weighting_result {
  /// The effect (treated − control) with a normal-reference CI and two-sided p-value; method
  /// "ipw_hajek", "ipw_horvitz_thompson" or "aipw"; estimand "ate" or "att"; df = NaN.
  effect_estimate effect;
  double mean_treated = effect_estimate::nan;  ///< estimated E[Y(1)] (ATE) or E[Y(1) | T=1] (ATT)
  double mean_control = effect_estimate::nan;  ///< estimated E[Y(0)] (ATE) or E[Y(0) | T=1] (ATT)
  std::vector<double> propensity;  ///< propensities used per unit (after clipping; raw where dropped)
  std::vector<double> weights;     ///< unnormalised weight per unit (0 for dropped units)
  std::vector<bool> kept;          ///< false for units dropped by trimming
  std::size_t n_trimmed = 0;       ///< units clipped or dropped
  double ess_treated = 0;          ///< Kish effective sample size (Σw)²/Σw² of the treated weights
  double ess_control = 0;          ///< Kish effective sample size of the control weights
  logistic_fit propensity_model;   ///< the fitted model (empty when propensities were given)
};

/// @brief Logistic regression of a binary outcome by iteratively reweighted least squares
/// (Newton–Raphson with step halving when the deviance does not decrease), reproducing
/// R's `glm(y ~ x, family = binomial)`.
///
/// Starts from R's μ = (y + ½)/2; each step solves the weighted least-squares problem by a
/// Householder QR of √W X; stops when |dev − dev_old|/(|dev| + 0.1) < tolerance.
/// @param covariates n × p matrix, one row per unit (finite); an intercept is added unless
///        options.add_intercept is false
/// @param y 0/1 outcomes, size n, both classes present
/// @param options iteration limit, tolerance, separation threshold, intercept
/// @returns coefficients, covariance (X'WX)⁻¹, fitted values, deviance
/// @throws shape_mismatch if the sizes differ; invalid_argument on non-binary y, a single class,
///         non-finite covariates, collinear columns or bad options; numerical_error on perfect or
///         quasi-complete separation (fitted probabilities numerically 0 or 1, naming a separating
///         column when one column separates on its own) or on non-convergence
[[nodiscard]] logistic_fit logistic_regression(const Eigen::Ref<const Eigen::MatrixXd>& covariates,
                                               std::span<const double> y,
                                               const logistic_options& options = {});

/// @brief Inverse probability weighting estimate of the ATE or ATT with a logistic propensity
/// score on `covariates` (intercept added).
///
/// Hájek ATE: μ̂₁ = Σ TY/e / Σ T/e, μ̂₀ = Σ (1−T)Y/(1−e) / Σ (1−T)/(1−e). Horvitz–Thompson ATE:
/// τ̂ = (1/n) Σ [TY/e − (1−T)Y/(1−e)]. ATT: treated weight 1, control weight e/(1−e), HT divides
/// by n₁. SE from the stacked M-estimation sandwich A⁻¹BA⁻ᵀ/n (or the weights-known sandwich).
/// @param y outcomes, size n (finite)
/// @param treatment 0/1 treatment indicators, size n, both arms present
/// @param covariates n × p matrix of confounders (finite, full column rank with the intercept)
/// @param options estimand, normalisation, variance, trimming, level, PS options
/// @returns the effect and diagnostics (propensities, weights, ESS, trimmed count, PS model)
/// @throws shape_mismatch, invalid_argument on bad input; numerical_error on separation,
///         non-convergence, an arm emptied by trimming, or zero SE (unless flagged)
[[nodiscard]] weighting_result ipw(std::span<const double> y, std::span<const double> treatment,
                                   const Eigen::Ref<const Eigen::MatrixXd>& covariates,
                                   const weighting_options& options = {});

/// @brief IPW with known propensity scores (e.g. a randomised design with unequal probabilities).
/// The variance is always the weights-known sandwich (options.variance is ignored).
/// @param y outcomes, size n (finite)
/// @param treatment 0/1 treatment indicators, size n, both arms present
/// @param propensity P(T = 1 | x) per unit, each in (0, 1)
/// @param options estimand, normalisation, trimming, level
/// @returns as ipw(); propensity_model is empty
/// @throws shape_mismatch, invalid_argument (propensities outside (0, 1)), numerical_error
[[nodiscard]] weighting_result ipw_with_propensity(std::span<const double> y,
                                                   std::span<const double> treatment,
                                                   std::span<const double> propensity,
                                                   const weighting_options& options = {});

/// @brief Augmented IPW (doubly robust) estimate with a logistic propensity score and linear
/// outcome models fitted by OLS within each arm on the same covariates (plus intercept).
///
/// ATE: ψᵢ = m̂₁(xᵢ) − m̂₀(xᵢ) + Tᵢ(Yᵢ − m̂₁(xᵢ))/eᵢ − (1−Tᵢ)(Yᵢ − m̂₀(xᵢ))/(1−eᵢ), τ̂ = mean ψ.
/// ATT: τ̂ = Σ [Tᵢ − (1−Tᵢ) eᵢ/(1−eᵢ)](Yᵢ − m̂₀(xᵢ)) / n₁ (only the control model is used).
/// SE = sd(ψ)/√n (influence function; sample SD with n − 1).
/// @param y outcomes, size n (finite)
/// @param treatment 0/1 treatment indicators, size n
/// @param covariates n × p confounders; each arm needs more than p + 1 units and full rank
/// @param options estimand, trimming, level, PS options (normalisation and variance are ignored)
/// @returns the effect and diagnostics
/// @throws as ipw(); invalid_argument if an arm is too small or collinear for its outcome model
[[nodiscard]] weighting_result aipw(std::span<const double> y, std::span<const double> treatment,
                                    const Eigen::Ref<const Eigen::MatrixXd>& covariates,
                                    const weighting_options& options = {});

/// @brief AIPW with known propensity scores and OLS outcome models on `covariates`.
/// @param y outcomes, size n (finite)
/// @param treatment 0/1 treatment indicators, size n
/// @param covariates n × p covariates of the outcome models
/// @param propensity P(T = 1 | x) per unit, each in (0, 1)
/// @param options estimand, trimming, level
/// @returns as aipw(); propensity_model is empty
/// @throws as aipw()
[[nodiscard]] weighting_result aipw_with_propensity(std::span<const double> y,
                                                    std::span<const double> treatment,
                                                    const Eigen::Ref<const Eigen::MatrixXd>& covariates,
                                                    std::span<const double> propensity,
                                                    const weighting_options& options = {});

namespace detail {

/// @brief Stable log(1 + exp(x)).
[[nodiscard]] inline double softplus(double x) noexcept {
  return (x > 0 ? x : 0.0) + std::log1p(std::exp(-std::fabs(x)));
}

/// @brief Stable logistic function 1/(1 + exp(−x)).
[[nodiscard]] inline double expit(double x) noexcept {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

/// @brief Binomial deviance of 0/1 outcomes at linear predictor η: 2 Σ softplus(∓η).
[[nodiscard]] double logistic_deviance(const Eigen::VectorXd& eta, std::span<const double> y) noexcept;

/// @brief Looks for one design column that separates the classes on its own:
/// max(x | y=0) ≤ min(x | y=1) or the reverse. Returns the column index or −1.
[[nodiscard]] Eigen::Index separating_column(const Eigen::MatrixXd& x, std::span<const double> y,
                                             Eigen::Index first, std::string& how);

/// @brief Checks the treatment vector: sizes, 0/1 values, at least `min_each` units per arm.
void check_treatment(std::string_view fn, std::span<const double> y, std::span<const double> treatment,
                     std::size_t min_each);

/// @brief Checks the weighting options.
void check_weighting_options(std::string_view fn, const weighting_options& o);

/// @brief Checks a covariate matrix against n.
void check_covariates(std::string_view fn, const Eigen::Ref<const Eigen::MatrixXd>& x, std::size_t n);

/// @brief The propensity design [1, X] (or X when `intercept` is false).
[[nodiscard]] Eigen::MatrixXd with_intercept(const Eigen::Ref<const Eigen::MatrixXd>& x, bool intercept);

/// @brief Throws invalid_argument if the design is rank deficient (tolerance as R's lm: 1e-7).
void check_full_rank(std::string_view fn, std::string_view name, const Eigen::MatrixXd& d,
                     std::string_view where = "");

/// @brief Normal-reference statistic, p-value and CI; zero SE per the degenerate policy.
void finish_normal(effect_estimate& e, double scale, double level, on_degenerate policy, std::string_view fn);

/// @brief Propensities after trimming with the derivative factor ∂e/∂η (0 where clipped or dropped).
struct trimmed_propensity {
  std::vector<double> e;      ///< propensity used
  std::vector<double> de;     ///< ∂e/∂η for the stacked sandwich (e(1−e) or 0)
  std::vector<bool> kept;     ///< unit enters the effect moments
  std::size_t n_trimmed = 0;  ///< clipped or dropped count
};

[[nodiscard]] trimmed_propensity trim_propensity(std::span<const double> raw, const weighting_options& o);

/// @brief Kish effective sample size (Σw)²/Σw² over the units of one arm.
[[nodiscard]] double kish_ess(const std::vector<double>& w, std::span<const double> t, double arm);

/// @brief Counts kept units per arm and throws if trimming emptied one.
void check_arms_after_trim(std::string_view fn, std::span<const double> t, const std::vector<bool>& kept,
                           std::size_t min_each, std::size_t& n1, std::size_t& n0);

/// @brief Core IPW: point estimate and sandwich. `design` is the PS design (empty when the
/// propensities are known, which forces the weights-known variance).
[[nodiscard]] weighting_result ipw_core(std::string_view fn, std::span<const double> y,
                                        std::span<const double> t, std::span<const double> raw_e,
                                        const Eigen::MatrixXd* design, const weighting_options& o);

/// @brief OLS fit of y on [1, X] over the units with mask true; returns fitted values for all.
[[nodiscard]] Eigen::VectorXd ols_predict_arm(std::string_view fn, std::span<const double> y,
                                              const Eigen::MatrixXd& design, std::span<const double> t,
                                              const std::vector<bool>& kept, double arm);

/// @brief Core AIPW given raw propensities and the outcome-model design [1, X].
[[nodiscard]] weighting_result aipw_core(std::string_view fn, std::span<const double> y,
                                         std::span<const double> t, std::span<const double> raw_e,
                                         const Eigen::MatrixXd& design, const weighting_options& o);

/// @brief Checks user-given propensities: size n, each in (0, 1).
void check_propensity(std::string_view fn, std::span<const double> e, std::size_t n);

/// @brief Fits the propensity model for ipw()/aipw(), with the caller's name in messages.
[[nodiscard]] logistic_fit fit_propensity(std::string_view fn, std::span<const double> t,
                                          const Eigen::Ref<const Eigen::MatrixXd>& x,
                                          const weighting_options& o);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/weighting-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_WEIGHTING_HPP
