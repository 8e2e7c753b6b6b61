// SPDX-License-Identifier: MIT
// latentaudit: ordinary and weighted least squares with classical, heteroskedasticity-robust
// (HC0–HC3) and cluster-robust (CR0/CR1) covariance, an explicit reference distribution
// (normal, t(n−k), t(G−1)), and Wald tests of linear hypotheses R β = r.
// Formulas, peer correspondence and references: docs/estimators/regression.md.
#ifndef LATENTAUDIT_ESTIMATORS_REGRESSION_HPP
#define LATENTAUDIT_ESTIMATORS_REGRESSION_HPP

#include <Eigen/Core>
#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

// ============================================================================================
// Declarations
// ============================================================================================

/// @brief Which covariance matrix of the coefficients is reported.
///
/// With bread B = (X'WX)⁻¹, residuals eᵢ, leverages hᵢ = xᵢ'Bxᵢ (weighted rows √wᵢ xᵢ) and k the
/// number of estimated parameters (columns plus absorbed fixed effects):
enum class covariance_type {
  automatic,  ///< classical without clusters, cr1 with clusters
  classical,  ///< σ̂² B, σ̂² = Σeᵢ²/(n−k) (R `vcov(lm)`, statsmodels `nonrobust`)
  hc0,        ///< B (Σ eᵢ² xᵢxᵢ') B (White 1980)
  hc1,        ///< n/(n−k) · HC0 (Stata `robust`)
  hc2,        ///< B (Σ eᵢ²/(1−hᵢ) xᵢxᵢ') B
  hc3,        ///< B (Σ eᵢ²/(1−hᵢ)² xᵢxᵢ') B (R `vcovHC` default)
  cr0,        ///< B (Σ_g s_g s_g') B, s_g = Σ_{i∈g} xᵢeᵢ — no small-sample factor
  cr1_g,      ///< G/(G−1) · CR0 (sandwich `vcovCL(type = "HC0")`, whose `cadjust = TRUE` is the default)
  cr1,        ///< G/(G−1)·(n−1)/(n−k) · CR0 (Stata, statsmodels `cluster`, `vcovCL(type = "HC1")`)
};

/// @brief The distribution used for p-values and confidence intervals of the coefficients.
///
/// R's `lmtest::coeftest` uses t(n−k) with any covariance; statsmodels uses the normal unless
/// `use_t = True` (then t(G−1) for cluster covariances); Stata and fixest use t(G−1) with clusters.
enum class reference_distribution {
  normal,      ///< standard normal (statsmodels default)
  t_residual,  ///< Student t with the residual df n − k (R lm / coeftest)
  t_cluster,   ///< Student t with G − 1 df (Stata, fixest, statsmodels `use_t=True` with clusters)
};

/// @brief Text name of a covariance type ("classical", "hc0", ..., "cr1").
[[nodiscard]] constexpr std::string_view covariance_name(covariance_type c) noexcept {
  switch (c) {
    case covariance_type::automatic:
      return "automatic";
    case covariance_type::classical:
      return "classical";
    case covariance_type::hc0:
      return "hc0";
    case covariance_type::hc1:
      return "hc1";
    case covariance_type::hc2:
      return "hc2";
    case covariance_type::hc3:
      return "hc3";
    case covariance_type::cr0:
      return "cr0";
    case covariance_type::cr1_g:
      return "cr1_g";
    case covariance_type::cr1:
      return "cr1";
  }
  return "unknown";
}

/// @brief Whether a covariance type needs cluster ids (cr0, cr1_g, cr1).
[[nodiscard]] constexpr bool is_cluster_covariance(covariance_type c) noexcept {
  return c == covariance_type::cr0 || c == covariance_type::cr1_g || c == covariance_type::cr1;
}

/// @brief Observations mapped to groups (clusters, units, periods): group[i] ∈ [0, groups()),
/// numbered in order of first appearance; labels[g] is the original label as text.
struct group_index {
  std::vector<std::uint32_t> group;  ///< group number of each observation
  std::vector<std::string> labels;   ///< label of each group (decimal text for integer labels)

  /// @brief Number of distinct groups G.
  [[nodiscard]] std::size_t groups() const noexcept { return labels.size(); }
  /// @brief Number of observations.
  [[nodiscard]] std::size_t size() const noexcept { return group.size(); }
};

/// @brief Maps integer labels (cluster ids, unit ids) to groups in order of first appearance.
/// @param labels one label per observation (any integer type)
/// @returns the group index
/// @throws invalid_argument if there are more than 2³² − 1 observations
template <std::integral Int>
[[nodiscard]] group_index make_group_index(std::span<const Int> labels);

/// @brief Maps text labels to groups in order of first appearance.
/// @param labels one label per observation
/// @returns the group index
/// @throws invalid_argument if there are more than 2³² − 1 observations
[[nodiscard]] group_index make_group_index(std::span<const std::string> labels);

/// @brief A design matrix with named columns (n × k).
struct design_matrix {
  Eigen::MatrixXd x;               ///< the regressors, one row per observation
  std::vector<std::string> names;  ///< one name per column

  /// @brief Number of observations n.
  [[nodiscard]] std::size_t rows() const noexcept { return static_cast<std::size_t>(x.rows()); }
  /// @brief Number of columns k.
  [[nodiscard]] std::size_t cols() const noexcept { return static_cast<std::size_t>(x.cols()); }
  /// @brief Index of the column called `name`.
  /// @throws invalid_argument if there is no such column
  [[nodiscard]] std::size_t index(std::string_view name) const;
};

/// @brief Builds a design_matrix column by column:
/// `design_builder(n).intercept().add("x", x).add_dummies("unit", units).build()`.
class design_builder {
 public:
  /// @brief A builder for n observations.
  /// @param n number of rows (≥ 1)
  /// @throws invalid_argument if n = 0
  explicit design_builder(std::size_t n);
  /// @brief Adds a column of ones.
  /// @param name its name (default "(Intercept)", as R)
  /// @throws invalid_argument on a duplicate name
  design_builder& intercept(std::string name = "(Intercept)");
  /// @brief Adds one regressor.
  /// @param name its name (unique)
  /// @param column n finite values
  /// @throws shape_mismatch if the size is not n; invalid_argument on non-finite values or a
  ///         duplicate name
  design_builder& add(std::string name, std::span<const double> column);
  /// @brief Adds 0/1 indicator columns of the groups, named prefix + label (R's `factor()` coding).
  /// @param prefix name prefix, e.g. "factor(unit)"
  /// @param groups group of each observation (size n)
  /// @param drop_first leave out the first group (the reference level) — needed beside an intercept
  /// @throws shape_mismatch if the size is not n; invalid_argument on a duplicate name
  design_builder& add_dummies(const std::string& prefix, const group_index& groups, bool drop_first = true);
  /// @brief The design matrix.
  /// @throws invalid_argument if no column was added
  [[nodiscard]] design_matrix build() const;

 private:
  void check_name(const std::string& name) const;
  std::size_t n_;
  std::vector<std::string> names_;
  std::vector<std::vector<double>> columns_;
};

/// @brief Options of ols().
struct ols_options {
  covariance_type covariance = covariance_type::automatic;                   ///< which covariance matrix
  reference_distribution distribution = reference_distribution::t_residual;  ///< for p-values and CIs
  double level = 0.95;                   ///< confidence level of the coefficient intervals, in (0, 1)
  std::span<const double> weights = {};  ///< optional positive WLS weights (size n); empty = OLS
  /// Parameters estimated before the call and absent from X (fixed effects removed by a
  /// within transformation). They count in k: df = n − k − absorbed, and in (n−1)/(n−k).
  std::size_t absorbed_parameters = 0;
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< exact fit / leverage 1: throw or flag
};

/// @brief A fitted linear regression.
struct ols_result {
  std::vector<std::string> names;               ///< column names
  Eigen::VectorXd coefficients;                 ///< β̂ (k)
  Eigen::MatrixXd covariance;                   ///< the chosen covariance of β̂ (k × k)
  std::vector<effect_estimate> terms;           ///< one row per coefficient: estimate, SE, t/z, df, p, CI
  Eigen::VectorXd residuals;                    ///< y − Xβ̂ (unweighted)
  std::size_t n = 0;                            ///< observations
  std::size_t k = 0;                            ///< parameters (columns + absorbed_parameters)
  std::size_t clusters = 0;                     ///< G (0 without clusters)
  double df_residual = effect_estimate::nan;    ///< n − k
  double inference_df = effect_estimate::nan;   ///< df of the reference t (infinity for normal)
  double sigma = effect_estimate::nan;          ///< √(Σwᵢeᵢ²/(n−k))
  double rss = effect_estimate::nan;            ///< Σ wᵢ eᵢ²
  double r_squared = effect_estimate::nan;      ///< 1 − RSS/TSS (centred TSS iff X holds a constant column)
  double adj_r_squared = effect_estimate::nan;  ///< R's adjusted R²
  double level = effect_estimate::nan;          ///< confidence level of the term intervals
  covariance_type covariance_kind = covariance_type::classical;              ///< the covariance actually used
  reference_distribution distribution = reference_distribution::t_residual;  ///< reference used
  estimate_status status = estimate_status::ok;  ///< degenerate: SEs undefined (flagged)

  /// @brief Index of the coefficient `name`.
  /// @throws invalid_argument if there is none
  [[nodiscard]] std::size_t index(std::string_view name) const;
  /// @brief The row of coefficient `name`.
  /// @throws invalid_argument if there is none
  [[nodiscard]] const effect_estimate& term(std::string_view name) const { return terms[index(name)]; }
};

/// @brief Least squares of y on X (weighted if options.weights is set) with the chosen
/// covariance and reference distribution.
///
/// Solved by Householder QR with column pivoting. Columns that are (numerically) linear
/// combinations of earlier columns — R's rule: the residual norm of a column after projection on
/// the earlier independent columns is below 1e-7 of its norm — are an error naming them.
/// @param x design matrix (n × k, finite, n > k + absorbed_parameters)
/// @param y outcomes (size n, finite)
/// @param options covariance (non-cluster types only), distribution, level, weights
/// @returns the fit; terms[j].method = "ols_<covariance>", estimand = column name
/// @throws shape_mismatch on size mismatches; invalid_argument on non-finite data, a rank-deficient
///         design (naming the columns), a cluster covariance or t_cluster without clusters, a bad
///         level or weights; numerical_error if the fit is exact or a leverage is 1 (HC2/HC3)
///         unless options flag it
[[nodiscard]] ols_result ols(const design_matrix& x, std::span<const double> y,
                             const ols_options& options = {});

/// @brief Least squares with cluster ids: as ols() but the covariance may be cr0/cr1_g/cr1
/// (automatic = cr1) and the reference distribution t_cluster (G − 1 df).
/// @param x design matrix (n × k)
/// @param y outcomes (size n)
/// @param clusters cluster of each observation (size n, G ≥ 2 for cluster covariances)
/// @param options see ols_options
/// @returns the fit with clusters = G
/// @throws as ols(); invalid_argument if G < 2 with a cluster covariance
[[nodiscard]] ols_result ols(const design_matrix& x, std::span<const double> y, const group_index& clusters,
                             const ols_options& options = {});

/// @brief A Wald test of q linear restrictions R β = r.
struct wald_test_result {
  double chi2 = effect_estimate::nan;     ///< W = (Rβ̂ − r)'(R V R')⁻¹(Rβ̂ − r)
  double chi2_p = effect_estimate::nan;   ///< P(χ²_q > W)
  double f = effect_estimate::nan;        ///< W / q
  double df1 = effect_estimate::nan;      ///< q
  double df2 = effect_estimate::nan;      ///< the fit's inference df (infinity for the normal reference)
  double f_p = effect_estimate::nan;      ///< P(F_{q, df2} > W/q); equals chi2_p when df2 = ∞
  double p_value = effect_estimate::nan;  ///< chi2_p for a normal reference, f_p otherwise
  estimate_status status = estimate_status::ok;  ///< degenerate when the fit's covariance is undefined
};

/// @brief Wald test of R β = r with the fit's covariance (chi-square and F versions).
/// @param fit a fitted regression
/// @param r_matrix q × k restriction matrix (rows linearly independent)
/// @param r_vector right-hand side (size q); empty means 0
/// @returns the test
/// @throws shape_mismatch on dimension mismatches; invalid_argument if R V R' is singular or
///         contains non-finite values
[[nodiscard]] wald_test_result wald_test(const ols_result& fit, const Eigen::MatrixXd& r_matrix,
                                         const Eigen::VectorXd& r_vector = Eigen::VectorXd());

/// @brief Wald test that the named coefficients are all 0.
/// @param fit a fitted regression
/// @param names coefficient names (at least one, no repeats)
/// @returns the test
/// @throws invalid_argument on an unknown or repeated name; as the matrix overload
[[nodiscard]] wald_test_result wald_test(const ols_result& fit, std::span<const std::string> names);

// ============================================================================================
// Internal helpers (defined in impl/regression-inl.hpp)
// ============================================================================================

namespace detail {

/// @brief Relative tolerance of the collinearity rule (R's lm, `qr(tol = 1e-7)`).
inline constexpr double collinearity_tolerance = 1e-7;

/// @brief Throws invalid_argument if more observations than a 32-bit group id can hold.
void check_group_count(std::string_view fn, std::size_t n);

/// @brief Names the columns of `x` that are linear combinations of earlier ones, or returns an
/// empty string. Works on A = R Pᵀ = Qᵀ X (k × k, same column geometry as X) by modified
/// Gram–Schmidt with re-orthogonalisation, column by column in the original order.
std::string collinear_columns(const Eigen::MatrixXd& a, const std::vector<std::string>& names);

/// @brief Least squares by column-pivoted Householder QR, with the collinearity check.
struct ls_solution {
  Eigen::VectorXd beta;   ///< coefficients in the original column order
  Eigen::MatrixXd bread;  ///< (X'X)⁻¹ in the original column order
  Eigen::MatrixXd rinv;   ///< R⁻¹ of the pivoted factor (for leverages)
  /// Column permutation P: Eigen::ColPivHouseholderQR<Eigen::MatrixXd>::PermutationType, spelled
  /// out so that this header needs only <Eigen/Core> (static_assert in impl/regression-inl.hpp).
  Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic> perm;
};

/// @brief Solves min ‖y − Xβ‖ and returns β, (X'X)⁻¹ and the factor pieces.
/// @throws invalid_argument naming the collinear columns if X is rank deficient
ls_solution solve_least_squares(std::string_view fn, std::string_view arg, const Eigen::MatrixXd& x,
                                const Eigen::VectorXd& y, const std::vector<std::string>& names,
                                std::string_view what = "is rank deficient: ");

/// @brief Leverages hᵢ = ‖(X P R⁻¹)ᵢ‖² = xᵢ'(X'X)⁻¹xᵢ, row by row (no n × n matrix).
Eigen::VectorXd leverages(const Eigen::MatrixXd& x, const ls_solution& s);

/// @brief Σ ωᵢ sᵢsᵢ' for the rows sᵢ of `scores_x` times weights ω (k × k).
Eigen::MatrixXd weighted_cross(const Eigen::MatrixXd& xs, const Eigen::VectorXd& omega);

/// @brief Cluster score sums s_g = Σ_{i∈g} xᵢeᵢ (G × k), one pass over each column.
Eigen::MatrixXd cluster_scores(const Eigen::MatrixXd& xs, const Eigen::VectorXd& e, const group_index& cl);

/// @brief Inputs of the sandwich, shared by OLS and 2SLS.
struct sandwich_input {
  const Eigen::MatrixXd* scores_x = nullptr;  ///< rows whose outer products form the meat (X, √W X or X̂)
  const Eigen::VectorXd* e = nullptr;         ///< matching residuals (√W e for WLS)
  const Eigen::MatrixXd* bread = nullptr;     ///< the bread
  const Eigen::VectorXd* h = nullptr;         ///< leverages (HC2/HC3 only)
  const group_index* clusters = nullptr;      ///< clusters (cluster types only)
  double n = 0;                               ///< observations
  double k = 0;                               ///< parameters counted in n − k
};

/// @brief The covariance matrix of the chosen type (k × k). Leverages must be < 1 for HC2/HC3.
Eigen::MatrixXd sandwich_covariance(covariance_type type, const sandwich_input& in);

/// @brief Resolves `automatic` and checks the covariance / distribution / clusters combination.
covariance_type resolve_covariance(std::string_view fn, covariance_type c, reference_distribution d,
                                   const group_index* clusters);

/// @brief Degrees of freedom of the reference distribution (∞ for the normal).
double inference_df(reference_distribution d, double df_residual, const group_index* clusters);

/// @brief Fills one coefficient row: statistic, p-value and CI from estimate, SE and df.
void fill_term(effect_estimate& e, double df, double level);

/// @brief Whether some column of x is constant and non-zero (the model has an intercept).
bool has_constant_column(const Eigen::MatrixXd& x);

/// @brief Marks a fit degenerate (flag policy) or throws (default policy).
void degenerate_fit(ols_result& r, on_degenerate policy, std::string_view fn, const std::string& why);

/// @brief Checks the common arguments of ols().
void check_ols_inputs(std::string_view fn, const design_matrix& x, std::span<const double> y,
                      const ols_options& o);

/// @brief The shared body of both ols() overloads.
/// `fn` and `x_name` name the caller and its design in messages (estimators built on ols()).
ols_result ols_impl(const design_matrix& dm, std::span<const double> y, const group_index* clusters,
                    const ols_options& o, std::string_view fn = "ols", std::string_view x_name = "x");

}  // namespace detail

template <std::integral Int>
group_index make_group_index(std::span<const Int> labels) {
  detail::check_group_count("make_group_index", labels.size());
  group_index gi;
  gi.group.resize(labels.size());
  if (labels.empty()) return gi;
  const auto [mn, mx] = std::minmax_element(labels.begin(), labels.end());
  // Dense table when the label range is small (the usual 0..G−1 or 1..G ids), hash map otherwise.
  const long double range = static_cast<long double>(*mx) - static_cast<long double>(*mn);
  if (range <= 4.0L * static_cast<long double>(labels.size()) + 1024.0L) {
    std::vector<std::uint32_t> table(static_cast<std::size_t>(range) + 1,
                                     std::numeric_limits<std::uint32_t>::max());
    for (std::size_t i = 0; i < labels.size(); ++i) {
      auto& slot = table[static_cast<std::size_t>(labels[i] - *mn)];
      if (slot == std::numeric_limits<std::uint32_t>::max()) {
        slot = static_cast<std::uint32_t>(gi.labels.size());
        gi.labels.push_back(std::to_string(labels[i]));
      }
      gi.group[i] = slot;
    }
    return gi;
  }
  std::unordered_map<Int, std::uint32_t> map;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    auto [it, inserted] = map.try_emplace(labels[i], static_cast<std::uint32_t>(gi.labels.size()));
    if (inserted) gi.labels.push_back(std::to_string(labels[i]));
    gi.group[i] = it->second;
  }
  return gi;
}

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/regression-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_REGRESSION_HPP
