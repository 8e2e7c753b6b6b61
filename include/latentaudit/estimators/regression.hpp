// SPDX-License-Identifier: MIT
// latentaudit: ordinary and weighted least squares with classical, heteroskedasticity-robust
// (HC0–HC3) and cluster-robust (CR0/CR1) covariance, an explicit reference distribution
// (normal, t(n−k), t(G−1)), and Wald tests of linear hypotheses R β = r.
// Formulas, peer correspondence and references: docs/estimators/regression.md.
#ifndef LATENTAUDIT_ESTIMATORS_REGRESSION_HPP
#define LATENTAUDIT_ESTIMATORS_REGRESSION_HPP

#include <Eigen/Dense>
#include <algorithm>
#include <boost/math/distributions/fisher_f.hpp>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "detail/distributions.hpp"
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
    case covariance_type::automatic: return "automatic";
    case covariance_type::classical: return "classical";
    case covariance_type::hc0: return "hc0";
    case covariance_type::hc1: return "hc1";
    case covariance_type::hc2: return "hc2";
    case covariance_type::hc3: return "hc3";
    case covariance_type::cr0: return "cr0";
    case covariance_type::cr1_g: return "cr1_g";
    case covariance_type::cr1: return "cr1";
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
[[nodiscard]] inline group_index make_group_index(std::span<const std::string> labels);

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
  covariance_type covariance = covariance_type::automatic;  ///< which covariance matrix
  reference_distribution distribution = reference_distribution::t_residual;  ///< for p-values and CIs
  double level = 0.95;  ///< confidence level of the coefficient intervals, in (0, 1)
  std::span<const double> weights = {};  ///< optional positive WLS weights (size n); empty = OLS
  /// Parameters estimated before the call and absent from X (fixed effects removed by a
  /// within transformation). They count in k: df = n − k − absorbed, and in (n−1)/(n−k).
  std::size_t absorbed_parameters = 0;
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< exact fit / leverage 1: throw or flag
};

/// @brief A fitted linear regression.
struct ols_result {
  std::vector<std::string> names;  ///< column names
  Eigen::VectorXd coefficients;    ///< β̂ (k)
  Eigen::MatrixXd covariance;      ///< the chosen covariance of β̂ (k × k)
  std::vector<effect_estimate> terms;  ///< one row per coefficient: estimate, SE, t/z, df, p, CI
  Eigen::VectorXd residuals;       ///< y − Xβ̂ (unweighted)
  std::size_t n = 0;               ///< observations
  std::size_t k = 0;               ///< parameters (columns + absorbed_parameters)
  std::size_t clusters = 0;        ///< G (0 without clusters)
  double df_residual = effect_estimate::nan;  ///< n − k
  double inference_df = effect_estimate::nan;  ///< df of the reference t (infinity for normal)
  double sigma = effect_estimate::nan;          ///< √(Σwᵢeᵢ²/(n−k))
  double rss = effect_estimate::nan;            ///< Σ wᵢ eᵢ²
  double r_squared = effect_estimate::nan;      ///< 1 − RSS/TSS (centred TSS iff X holds a constant column)
  double adj_r_squared = effect_estimate::nan;  ///< R's adjusted R²
  double level = effect_estimate::nan;          ///< confidence level of the term intervals
  covariance_type covariance_kind = covariance_type::classical;  ///< the covariance actually used
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
[[nodiscard]] ols_result ols(const design_matrix& x, std::span<const double> y, const ols_options& options = {});

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
  double chi2 = effect_estimate::nan;      ///< W = (Rβ̂ − r)'(R V R')⁻¹(Rβ̂ − r)
  double chi2_p = effect_estimate::nan;    ///< P(χ²_q > W)
  double f = effect_estimate::nan;         ///< W / q
  double df1 = effect_estimate::nan;       ///< q
  double df2 = effect_estimate::nan;       ///< the fit's inference df (infinity for the normal reference)
  double f_p = effect_estimate::nan;       ///< P(F_{q, df2} > W/q); equals chi2_p when df2 = ∞
  double p_value = effect_estimate::nan;   ///< chi2_p for a normal reference, f_p otherwise
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
// Implementation
// ============================================================================================

namespace detail {

/// @brief Relative tolerance of the collinearity rule (R's lm, `qr(tol = 1e-7)`).
inline constexpr double collinearity_tolerance = 1e-7;

/// @brief Throws invalid_argument if more observations than a 32-bit group id can hold.
inline void check_group_count(std::string_view fn, std::size_t n) {
  if (n >= std::numeric_limits<std::uint32_t>::max()) {
    throw_invalid(fn, "labels", "has " + std::to_string(n) + " observations, expected fewer than 2^32 - 1");
  }
}

/// @brief Names the columns of `x` that are linear combinations of earlier ones, or returns an
/// empty string. Works on A = R Pᵀ = Qᵀ X (k × k, same column geometry as X) by modified
/// Gram–Schmidt with re-orthogonalisation, column by column in the original order.
inline std::string collinear_columns(const Eigen::MatrixXd& a, const std::vector<std::string>& names) {
  const Eigen::Index k = a.cols();
  Eigen::MatrixXd basis(a.rows(), k);
  std::vector<Eigen::Index> kept;
  std::string msg;
  for (Eigen::Index j = 0; j < k; ++j) {
    Eigen::VectorXd v = a.col(j);
    const double norm0 = v.norm();
    bool dependent = norm0 == 0.0;
    if (!dependent) {
      for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t m = 0; m < kept.size(); ++m) v -= basis.col(static_cast<Eigen::Index>(m)).dot(v) * basis.col(static_cast<Eigen::Index>(m));
      }
      dependent = v.norm() <= collinearity_tolerance * norm0;
    }
    if (!dependent) {
      basis.col(static_cast<Eigen::Index>(kept.size())) = v / v.norm();
      kept.push_back(j);
      continue;
    }
    if (!msg.empty()) msg += "; ";
    msg += "column '" + names[static_cast<std::size_t>(j)] + "'";
    if (norm0 == 0.0) {
      msg += " is all zeros";
      continue;
    }
    // Which earlier columns it depends on: least squares on the kept columns.
    Eigen::MatrixXd ak(a.rows(), static_cast<Eigen::Index>(kept.size()));
    for (std::size_t m = 0; m < kept.size(); ++m) ak.col(static_cast<Eigen::Index>(m)) = a.col(kept[m]);
    const Eigen::VectorXd c = ak.colPivHouseholderQr().solve(a.col(j));
    std::string deps;
    for (std::size_t m = 0; m < kept.size(); ++m) {
      if (std::fabs(c(static_cast<Eigen::Index>(m))) * ak.col(static_cast<Eigen::Index>(m)).norm() > 1e-6 * norm0) {
        if (!deps.empty()) deps += ", ";
        deps += "'" + names[static_cast<std::size_t>(kept[m])] + "'";
      }
    }
    msg += " is a linear combination of earlier columns (" + deps + ")";
  }
  return msg;
}

/// @brief Least squares by column-pivoted Householder QR, with the collinearity check.
struct ls_solution {
  Eigen::VectorXd beta;   ///< coefficients in the original column order
  Eigen::MatrixXd bread;  ///< (X'X)⁻¹ in the original column order
  Eigen::MatrixXd rinv;   ///< R⁻¹ of the pivoted factor (for leverages)
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd>::PermutationType perm;  ///< column permutation P
};

/// @brief Solves min ‖y − Xβ‖ and returns β, (X'X)⁻¹ and the factor pieces.
/// @throws invalid_argument naming the collinear columns if X is rank deficient
inline ls_solution solve_least_squares(std::string_view fn, std::string_view arg, const Eigen::MatrixXd& x,
                                       const Eigen::VectorXd& y, const std::vector<std::string>& names,
                                       std::string_view what = "is rank deficient: ") {
  const Eigen::Index k = x.cols();
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(x);
  const Eigen::MatrixXd r = qr.matrixR().topLeftCorner(k, k).template triangularView<Eigen::Upper>();
  const Eigen::MatrixXd a = r * qr.colsPermutation().transpose();
  const std::string bad = collinear_columns(a, names);
  if (!bad.empty()) throw_invalid(fn, arg, std::string(what) + bad);
  ls_solution s;
  s.perm = qr.colsPermutation();
  s.rinv = r.template triangularView<Eigen::Upper>().solve(Eigen::MatrixXd::Identity(k, k));
  const Eigen::MatrixXd bp = s.rinv * s.rinv.transpose();
  s.bread = s.perm * bp * s.perm.transpose();
  s.beta = qr.solve(y);
  return s;
}

/// @brief Leverages hᵢ = ‖(X P R⁻¹)ᵢ‖² = xᵢ'(X'X)⁻¹xᵢ, row by row (no n × n matrix).
inline Eigen::VectorXd leverages(const Eigen::MatrixXd& x, const ls_solution& s) {
  Eigen::MatrixXd z = (x * s.perm) * s.rinv.template triangularView<Eigen::Upper>();
  return z.rowwise().squaredNorm();
}

/// @brief Σ ωᵢ sᵢsᵢ' for the rows sᵢ of `scores_x` times weights ω (k × k).
inline Eigen::MatrixXd weighted_cross(const Eigen::MatrixXd& xs, const Eigen::VectorXd& omega) {
  Eigen::MatrixXd m = xs.transpose() * (xs.array().colwise() * omega.array()).matrix();
  return 0.5 * (m + m.transpose());
}

/// @brief Cluster score sums s_g = Σ_{i∈g} xᵢeᵢ (G × k), one pass over each column.
inline Eigen::MatrixXd cluster_scores(const Eigen::MatrixXd& xs, const Eigen::VectorXd& e, const group_index& cl) {
  const std::size_t g = cl.groups();
  Eigen::MatrixXd s = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(g), xs.cols());
  const std::uint32_t* gi = cl.group.data();
  const double* ep = e.data();
  for (Eigen::Index j = 0; j < xs.cols(); ++j) {
    const double* xc = xs.col(j).data();
    double* sc = s.col(j).data();
    const auto n = xs.rows();
    for (Eigen::Index i = 0; i < n; ++i) sc[gi[i]] += xc[i] * ep[i];
  }
  return s;
}

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
inline Eigen::MatrixXd sandwich_covariance(covariance_type type, const sandwich_input& in) {
  const Eigen::MatrixXd& b = *in.bread;
  const double n = in.n, k = in.k;
  switch (type) {
    case covariance_type::classical: {
      const double s2 = in.e->squaredNorm() / (n - k);
      return s2 * b;
    }
    case covariance_type::hc0:
    case covariance_type::hc1:
    case covariance_type::hc2:
    case covariance_type::hc3: {
      Eigen::VectorXd omega = in.e->array().square();
      if (type == covariance_type::hc2) omega.array() /= (1.0 - in.h->array());
      if (type == covariance_type::hc3) omega.array() /= (1.0 - in.h->array()).square();
      Eigen::MatrixXd v = b * weighted_cross(*in.scores_x, omega) * b;
      if (type == covariance_type::hc1) v *= n / (n - k);
      return 0.5 * (v + v.transpose());
    }
    case covariance_type::cr0:
    case covariance_type::cr1_g:
    case covariance_type::cr1:
    case covariance_type::automatic: {
      const Eigen::MatrixXd s = cluster_scores(*in.scores_x, *in.e, *in.clusters);
      const double g = static_cast<double>(in.clusters->groups());
      double factor = 1.0;
      if (type != covariance_type::cr0) factor *= g / (g - 1.0);
      if (type == covariance_type::cr1 || type == covariance_type::automatic) factor *= (n - 1.0) / (n - k);
      Eigen::MatrixXd v = factor * (b * (s.transpose() * s) * b);
      return 0.5 * (v + v.transpose());
    }
  }
  return {};
}

/// @brief Resolves `automatic` and checks the covariance / distribution / clusters combination.
inline covariance_type resolve_covariance(std::string_view fn, covariance_type c, reference_distribution d,
                                          const group_index* clusters) {
  if (c == covariance_type::automatic) c = clusters ? covariance_type::cr1 : covariance_type::classical;
  if (is_cluster_covariance(c) && !clusters) {
    throw_invalid(fn, "options.covariance",
                  "is " + std::string(covariance_name(c)) + ", which needs cluster ids (use the overload with clusters)");
  }
  if (!is_cluster_covariance(c) && clusters) {
    throw_invalid(fn, "options.covariance",
                  "is " + std::string(covariance_name(c)) + " but clusters were given; expected cr0, cr1_g or cr1");
  }
  if (d == reference_distribution::t_cluster && !clusters) {
    throw_invalid(fn, "options.distribution", "is t_cluster, which needs cluster ids");
  }
  if (clusters && clusters->groups() < 2) {
    throw_invalid(fn, "clusters",
                  "has " + std::to_string(clusters->groups()) + " cluster, expected at least 2 for a cluster-robust covariance");
  }
  return c;
}

/// @brief Degrees of freedom of the reference distribution (∞ for the normal).
inline double inference_df(reference_distribution d, double df_residual, const group_index* clusters) {
  switch (d) {
    case reference_distribution::normal: return std::numeric_limits<double>::infinity();
    case reference_distribution::t_residual: return df_residual;
    case reference_distribution::t_cluster: return static_cast<double>(clusters->groups()) - 1.0;
  }
  return df_residual;
}

/// @brief Fills one coefficient row: statistic, p-value and CI from estimate, SE and df.
inline void fill_term(effect_estimate& e, double df, double level) {
  e.level = level;
  e.df = std::isinf(df) ? effect_estimate::nan : df;
  if (!(e.std_error > 0.0) || !std::isfinite(e.std_error)) {
    e.status = estimate_status::degenerate;
    e.std_error = e.statistic = e.p_value = e.ci_low = e.ci_high = effect_estimate::nan;
    return;
  }
  e.statistic = e.estimate / e.std_error;
  e.p_value = t_two_sided_p(e.statistic, df);
  const double q = t_quantile_upper((1.0 - level) / 2.0, df);
  e.ci_low = e.estimate - q * e.std_error;
  e.ci_high = e.estimate + q * e.std_error;
}

/// @brief Whether some column of x is constant and non-zero (the model has an intercept).
inline bool has_constant_column(const Eigen::MatrixXd& x) {
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    const double c0 = x(0, j);
    if (c0 != 0.0 && (x.col(j).array() == c0).all()) return true;
  }
  return false;
}

/// @brief Marks a fit degenerate (flag policy) or throws (default policy).
inline void degenerate_fit(ols_result& r, on_degenerate policy, std::string_view fn, const std::string& why) {
  if (policy == on_degenerate::throw_error) throw_numerical(fn, why);
  r.status = estimate_status::degenerate;
  r.covariance.setConstant(effect_estimate::nan);
  for (auto& t : r.terms) {
    t.status = estimate_status::degenerate;
    t.std_error = t.statistic = t.p_value = t.ci_low = t.ci_high = effect_estimate::nan;
  }
}

/// @brief Checks the common arguments of ols().
inline void check_ols_inputs(std::string_view fn, const design_matrix& x, std::span<const double> y,
                             const ols_options& o) {
  check_open_unit(fn, "options.level", o.level);
  if (x.names.size() != x.cols()) {
    check_same_size(fn, "x.names", x.names.size(), "x.x columns", x.cols());
  }
  check_same_size(fn, "x", x.rows(), "y", y.size());
  if (x.cols() == 0) throw_invalid(fn, "x", "has no columns, expected at least 1");
  if (x.rows() <= x.cols() + o.absorbed_parameters) {
    throw_invalid(fn, "x",
                  "has " + std::to_string(x.rows()) + " rows and " + std::to_string(x.cols() + o.absorbed_parameters) +
                      " parameters, expected more rows than parameters");
  }
  if (!x.x.allFinite()) {
    for (Eigen::Index j = 0; j < x.x.cols(); ++j) {
      for (Eigen::Index i = 0; i < x.x.rows(); ++i) {
        if (!std::isfinite(x.x(i, j))) {
          throw_invalid(fn, "x",
                        "must hold finite values, got " + number_text(x.x(i, j)) + " in column '" +
                            x.names[static_cast<std::size_t>(j)] + "' at row " + std::to_string(i));
        }
      }
    }
  }
  check_finite(fn, "y", y);
  if (!o.weights.empty()) {
    check_same_size(fn, "options.weights", o.weights.size(), "y", y.size());
    for (std::size_t i = 0; i < o.weights.size(); ++i) {
      if (!(o.weights[i] > 0.0) || !std::isfinite(o.weights[i])) {
        throw_invalid(fn, "options.weights",
                      "must hold positive finite values, got " + number_text(o.weights[i]) + " at index " +
                          std::to_string(i));
      }
    }
  }
}

/// @brief The shared body of both ols() overloads.
/// `fn` and `x_name` name the caller and its design in messages (estimators built on ols()).
inline ols_result ols_impl(const design_matrix& dm, std::span<const double> y, const group_index* clusters,
                           const ols_options& o, std::string_view fn = "ols", std::string_view x_name = "x") {
  check_ols_inputs(fn, dm, y, o);
  if (clusters) check_same_size(fn, "clusters", clusters->size(), "y", y.size());
  const covariance_type cov = resolve_covariance(fn, o.covariance, o.distribution, clusters);
  const auto n = static_cast<Eigen::Index>(y.size());
  const Eigen::Map<const Eigen::VectorXd> ymap(y.data(), n);

  // Weighted rows: √wᵢ xᵢ and √wᵢ yᵢ (no copy for OLS).
  const bool weighted = !o.weights.empty();
  Eigen::MatrixXd xw;
  Eigen::VectorXd yw, sw;
  if (weighted) {
    sw = Eigen::Map<const Eigen::VectorXd>(o.weights.data(), n).array().sqrt();
    xw = dm.x.array().colwise() * sw.array();
    yw = ymap.array() * sw.array();
  } else {
    yw = ymap;
  }
  const Eigen::MatrixXd& xs = weighted ? xw : dm.x;
  const ls_solution sol = solve_least_squares(fn, x_name, xs, yw, dm.names);

  ols_result r;
  r.names = dm.names;
  r.coefficients = sol.beta;
  r.n = y.size();
  r.k = dm.cols() + o.absorbed_parameters;
  r.clusters = clusters ? clusters->groups() : 0;
  r.df_residual = static_cast<double>(r.n) - static_cast<double>(r.k);
  r.covariance_kind = cov;
  r.distribution = o.distribution;
  r.level = o.level;
  r.inference_df = inference_df(o.distribution, r.df_residual, clusters);
  r.residuals = ymap - dm.x * sol.beta;
  const Eigen::VectorXd ew = weighted ? Eigen::VectorXd(r.residuals.array() * sw.array()) : r.residuals;
  r.rss = ew.squaredNorm();
  r.sigma = std::sqrt(r.rss / r.df_residual);

  // R²: centred (weighted mean) when X contains a constant column, uncentred otherwise (R's rule).
  double tss = 0;
  if (has_constant_column(dm.x)) {
    const double wsum = weighted ? Eigen::Map<const Eigen::VectorXd>(o.weights.data(), n).sum() : static_cast<double>(n);
    const double ybar = (weighted ? (sw.array() * yw.array()).sum() : ymap.sum()) / wsum;
    tss = weighted ? ((ymap.array() - ybar).square() * sw.array().square()).sum() : (ymap.array() - ybar).square().sum();
    r.adj_r_squared = 1.0 - (r.rss / tss) * (static_cast<double>(r.n) - 1.0) / r.df_residual;
  } else {
    tss = yw.squaredNorm();
    r.adj_r_squared = 1.0 - (r.rss / tss) * static_cast<double>(r.n) / r.df_residual;
  }
  r.r_squared = 1.0 - r.rss / tss;

  r.terms.resize(dm.cols());
  for (std::size_t j = 0; j < dm.cols(); ++j) {
    r.terms[j].method = "ols_" + std::string(covariance_name(cov));
    r.terms[j].estimand = dm.names[j];
    r.terms[j].estimate = sol.beta(static_cast<Eigen::Index>(j));
  }

  // Exact fit: every residual is zero up to rounding → standard errors undefined.
  const double yscale = yw.norm();
  if (!(r.rss > 0.0) || std::sqrt(r.rss) <= 64.0 * std::numeric_limits<double>::epsilon() * yscale) {
    r.covariance = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(dm.cols()), static_cast<Eigen::Index>(dm.cols()));
    degenerate_fit(r, o.if_degenerate, fn, "the fit is exact (residual sum of squares 0); standard errors are undefined");
    return r;
  }
  Eigen::VectorXd h;
  if (cov == covariance_type::hc2 || cov == covariance_type::hc3) {
    h = leverages(xs, sol);
    Eigen::Index imax = 0;
    if (h.maxCoeff(&imax) >= 1.0 - 1e-10) {
      r.covariance = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(dm.cols()), static_cast<Eigen::Index>(dm.cols()));
      degenerate_fit(r, o.if_degenerate, fn,
                     "observation " + std::to_string(imax) + " has leverage 1; " + std::string(covariance_name(cov)) +
                         " is undefined");
      return r;
    }
  }
  sandwich_input in{.scores_x = &xs, .e = &ew, .bread = &sol.bread, .h = &h, .clusters = clusters,
                    .n = static_cast<double>(r.n), .k = static_cast<double>(r.k)};
  r.covariance = sandwich_covariance(cov, in);
  for (std::size_t j = 0; j < dm.cols(); ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    r.terms[j].std_error = std::sqrt(r.covariance(jj, jj));
    fill_term(r.terms[j], r.inference_df, o.level);
  }
  return r;
}

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
    std::vector<std::uint32_t> table(static_cast<std::size_t>(range) + 1, std::numeric_limits<std::uint32_t>::max());
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

inline group_index make_group_index(std::span<const std::string> labels) {
  detail::check_group_count("make_group_index", labels.size());
  group_index gi;
  gi.group.resize(labels.size());
  std::unordered_map<std::string_view, std::uint32_t> map;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    auto [it, inserted] = map.try_emplace(std::string_view(labels[i]), static_cast<std::uint32_t>(gi.labels.size()));
    if (inserted) gi.labels.push_back(labels[i]);
    gi.group[i] = it->second;
  }
  return gi;
}

inline std::size_t design_matrix::index(std::string_view name) const {
  for (std::size_t j = 0; j < names.size(); ++j) {
    if (names[j] == name) return j;
  }
  detail::throw_invalid("design_matrix::index", "name", "'" + std::string(name) + "' is not a column");
}

inline std::size_t ols_result::index(std::string_view name) const {
  for (std::size_t j = 0; j < names.size(); ++j) {
    if (names[j] == name) return j;
  }
  detail::throw_invalid("ols_result::index", "name", "'" + std::string(name) + "' is not a coefficient");
}

inline design_builder::design_builder(std::size_t n) : n_(n) {
  if (n == 0) detail::throw_invalid("design_builder", "n", "must be at least 1, got 0");
}

inline void design_builder::check_name(const std::string& name) const {
  if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
    detail::throw_invalid("design_builder", "name", "'" + name + "' is already a column");
  }
}

inline design_builder& design_builder::intercept(std::string name) {
  check_name(name);
  names_.push_back(std::move(name));
  columns_.emplace_back(n_, 1.0);
  return *this;
}

inline design_builder& design_builder::add(std::string name, std::span<const double> column) {
  detail::check_same_size("design_builder::add", "column", column.size(), "n", n_);
  detail::check_finite("design_builder::add", name, column);
  check_name(name);
  names_.push_back(std::move(name));
  columns_.emplace_back(column.begin(), column.end());
  return *this;
}

inline design_builder& design_builder::add_dummies(const std::string& prefix, const group_index& groups,
                                                   bool drop_first) {
  detail::check_same_size("design_builder::add_dummies", "groups", groups.size(), "n", n_);
  const std::size_t first = drop_first ? 1 : 0;
  for (std::size_t g = first; g < groups.groups(); ++g) check_name(prefix + groups.labels[g]);
  const std::size_t base = columns_.size();
  for (std::size_t g = first; g < groups.groups(); ++g) {
    names_.push_back(prefix + groups.labels[g]);
    columns_.emplace_back(n_, 0.0);
  }
  for (std::size_t i = 0; i < n_; ++i) {
    const std::size_t g = groups.group[i];
    if (g >= first) columns_[base + g - first][i] = 1.0;
  }
  return *this;
}

inline design_matrix design_builder::build() const {
  if (columns_.empty()) detail::throw_invalid("design_builder::build", "columns", "is empty, expected at least 1 column");
  design_matrix d;
  d.names = names_;
  d.x.resize(static_cast<Eigen::Index>(n_), static_cast<Eigen::Index>(columns_.size()));
  for (std::size_t j = 0; j < columns_.size(); ++j) {
    d.x.col(static_cast<Eigen::Index>(j)) = Eigen::Map<const Eigen::VectorXd>(columns_[j].data(), static_cast<Eigen::Index>(n_));
  }
  return d;
}

inline ols_result ols(const design_matrix& x, std::span<const double> y, const ols_options& options) {
  return detail::ols_impl(x, y, nullptr, options);
}

inline ols_result ols(const design_matrix& x, std::span<const double> y, const group_index& clusters,
                      const ols_options& options) {
  return detail::ols_impl(x, y, &clusters, options);
}

inline wald_test_result wald_test(const ols_result& fit, const Eigen::MatrixXd& r_matrix,
                                  const Eigen::VectorXd& r_vector) {
  constexpr std::string_view fn = "wald_test";
  const auto k = fit.coefficients.size();
  detail::check_same_size(fn, "r_matrix columns", static_cast<std::size_t>(r_matrix.cols()), "coefficients",
                          static_cast<std::size_t>(k));
  if (r_matrix.rows() == 0) detail::throw_invalid(fn, "r_matrix", "has no rows, expected at least 1 restriction");
  if (!r_matrix.allFinite()) detail::throw_invalid(fn, "r_matrix", "must hold finite values");
  Eigen::VectorXd rv = r_vector.size() == 0 ? Eigen::VectorXd::Zero(r_matrix.rows()) : r_vector;
  detail::check_same_size(fn, "r_vector", static_cast<std::size_t>(rv.size()), "r_matrix rows",
                          static_cast<std::size_t>(r_matrix.rows()));
  if (!rv.allFinite()) detail::throw_invalid(fn, "r_vector", "must hold finite values");
  wald_test_result w;
  const double q = static_cast<double>(r_matrix.rows());
  w.df1 = q;
  w.df2 = fit.inference_df;
  if (fit.status != estimate_status::ok || !fit.covariance.allFinite()) {
    w.status = estimate_status::degenerate;
    return w;
  }
  const Eigen::VectorXd d = r_matrix * fit.coefficients - rv;
  const Eigen::MatrixXd m = r_matrix * fit.covariance * r_matrix.transpose();
  Eigen::FullPivLU<Eigen::MatrixXd> lu(m);
  lu.setThreshold(1e-12);
  if (lu.rank() < m.rows()) {
    detail::throw_invalid(fn, "r_matrix",
                          "gives a singular R V R' (rank " + std::to_string(lu.rank()) + " of " +
                              std::to_string(m.rows()) + "); the restrictions must be linearly independent");
  }
  w.chi2 = d.dot(lu.solve(d));
  w.f = w.chi2 / q;
  w.chi2_p = detail::chi2_upper(w.chi2, q);
  if (std::isinf(w.df2)) {
    w.f_p = w.chi2_p;
  } else {
    w.f_p = w.f <= 0.0 ? 1.0
                       : boost::math::cdf(boost::math::complement(
                             boost::math::fisher_f_distribution<double, detail::math_policy>(q, w.df2), w.f));
  }
  w.p_value = fit.distribution == reference_distribution::normal ? w.chi2_p : w.f_p;
  return w;
}

inline wald_test_result wald_test(const ols_result& fit, std::span<const std::string> names) {
  if (names.empty()) detail::throw_invalid("wald_test", "names", "is empty, expected at least 1 coefficient");
  Eigen::MatrixXd rm = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(names.size()), fit.coefficients.size());
  for (std::size_t q = 0; q < names.size(); ++q) {
    std::size_t j = 0;
    for (; j < fit.names.size() && fit.names[j] != names[q]; ++j) {
    }
    if (j == fit.names.size()) detail::throw_invalid("wald_test", "names", "'" + names[q] + "' is not a coefficient");
    for (std::size_t p = 0; p < q; ++p) {
      if (names[p] == names[q]) detail::throw_invalid("wald_test", "names", "repeats '" + names[q] + "'");
    }
    rm(static_cast<Eigen::Index>(q), static_cast<Eigen::Index>(j)) = 1.0;
  }
  return wald_test(fit, rm);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_REGRESSION_HPP
