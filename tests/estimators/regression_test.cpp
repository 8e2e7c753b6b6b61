// SPDX-License-Identifier: MIT
// Tests for estimators/regression.hpp: golden values from R lm + sandwich + lmtest and from
// statsmodels OLS/WLS (tests/golden/regression/), property tests against the naive oracle
// (tests/support/reference_regression.hpp), collinearity errors naming the columns, bad input.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/regression.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/golden.hpp"
#include "support/reference_regression.hpp"

namespace la = latentaudit;
using Catch::Matchers::Contains;

namespace {

struct regression_golden {
  std::vector<double> y, x1, x2, x3, w;
  std::vector<long long> cl;
};

regression_golden load_data() {
  const auto t = la::test::read_golden_table("regression/data.csv");
  regression_golden d{t.col("y"), t.col("x1"), t.col("x2"), t.col("x3"), t.col("w"), {}};
  for (double c : t.col("cl")) d.cl.push_back(static_cast<long long>(c));
  return d;
}

la::design_matrix design(const regression_golden& d) {
  return la::design_builder(d.y.size()).intercept().add("x1", d.x1).add("x2", d.x2).add("x3", d.x3).build();
}

/// Compares every term of `fit` with the rows of a golden table whose `fit` column equals `name`.
void compare_terms(const la::ols_result& fit, const la::test::golden_table& t, const std::string& name,
                   double rtol, double rtol_ci) {
  std::size_t found = 0;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    if (t.str("fit", i) != name) continue;
    ++found;
    const auto& term = fit.term(t.str("term", i));
    INFO(name << " " << t.str("term", i));
    LATENTAUDIT_CHECK_CLOSE(term.estimate, t.num("estimate", i), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(term.std_error, t.num("se", i), rtol);
    LATENTAUDIT_CHECK_CLOSE(term.statistic, t.num("statistic", i), rtol);
    LATENTAUDIT_CHECK_CLOSE(term.p_value, t.num("p", i), rtol_ci);
    LATENTAUDIT_CHECK_CLOSE(term.ci_low, t.num("ci_low", i), rtol_ci);
    LATENTAUDIT_CHECK_CLOSE(term.ci_high, t.num("ci_high", i), rtol_ci);
  }
  CHECK(found == 4);
}

struct variant {
  std::string suffix;
  la::covariance_type cov;
  la::reference_distribution dist;
};

la::ols_result fit_variant(const regression_golden& d, const la::design_matrix& x, const la::group_index& g,
                           const variant& v, bool weighted) {
  la::ols_options o{.covariance = v.cov, .distribution = v.dist};
  if (weighted) o.weights = d.w;
  return la::is_cluster_covariance(v.cov) ? la::ols(x, d.y, g, o) : la::ols(x, d.y, o);
}

}  // namespace

TEST_CASE("ols reproduces R lm + sandwich + lmtest::coeftest", "[estimators][regression][golden]") {
  const auto d = load_data();
  const auto x = design(d);
  const auto g = la::make_group_index(std::span<const long long>(d.cl));
  const auto t = la::test::read_golden_table("regression/r_terms.csv");
  using C = la::covariance_type;
  using D = la::reference_distribution;
  const std::vector<variant> vs{{"classical_t", C::classical, D::t_residual},
                                {"hc0_t", C::hc0, D::t_residual},
                                {"hc1_t", C::hc1, D::t_residual},
                                {"hc2_t", C::hc2, D::t_residual},
                                {"hc3_t", C::hc3, D::t_residual},
                                {"cr1_t", C::cr1, D::t_residual},
                                {"cr1_g_t", C::cr1_g, D::t_residual},
                                {"cr0_t", C::cr0, D::t_residual},
                                {"cr1_normal", C::cr1, D::normal},
                                {"cr1_tcluster", C::cr1, D::t_cluster},
                                {"hc3_normal", C::hc3, D::normal}};
  for (bool weighted : {false, true}) {
    for (const auto& v : vs) {
      const auto fit = fit_variant(d, x, g, v, weighted);
      compare_terms(fit, t, (weighted ? "wls_" : "ols_") + v.suffix, 1e-10, 1e-10);
    }
  }
  const auto fits = la::test::read_golden_table("regression/r_fits.csv");
  for (std::size_t i = 0; i < 2; ++i) {
    la::ols_options o;
    if (i == 1) o.weights = d.w;
    const auto fit = la::ols(x, d.y, o);
    LATENTAUDIT_CHECK_CLOSE(fit.sigma, fits.num("sigma", i), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(fit.r_squared, fits.num("r_squared", i), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(fit.adj_r_squared, fits.num("adj_r_squared", i), 1e-12);
    CHECK(fit.df_residual == fits.num("df_residual", i));
    CHECK(fit.covariance_kind == C::classical);
  }
}

TEST_CASE("ols reproduces statsmodels OLS/WLS fit(cov_type=...)", "[estimators][regression][golden]") {
  const auto d = load_data();
  const auto x = design(d);
  const auto g = la::make_group_index(std::span<const long long>(d.cl));
  const auto t = la::test::read_golden_table("regression/py_terms.csv");
  using C = la::covariance_type;
  using D = la::reference_distribution;
  const std::vector<variant> vs{{"classical_normal", C::classical, D::normal},
                                {"hc0_normal", C::hc0, D::normal},
                                {"hc1_normal", C::hc1, D::normal},
                                {"hc2_normal", C::hc2, D::normal},
                                {"hc3_normal", C::hc3, D::normal},
                                {"hc0_t", C::hc0, D::t_residual},
                                {"hc1_t", C::hc1, D::t_residual},
                                {"hc2_t", C::hc2, D::t_residual},
                                {"hc3_t", C::hc3, D::t_residual},
                                {"cr1_normal", C::cr1, D::normal},
                                {"cr1_tcluster", C::cr1, D::t_cluster},
                                {"cr0_normal", C::cr0, D::normal}};
  for (bool weighted : {false, true}) {
    for (const auto& v : vs) {
      const auto fit = fit_variant(d, x, g, v, weighted);
      // statsmodels' t quantiles go through scipy (about 2e-9 accurate): 1e-8 for p and CI.
      compare_terms(fit, t, (weighted ? "wls_" : "ols_") + v.suffix, 1e-10, 1e-8);
    }
  }
}

TEST_CASE("wald_test reproduces R's t(Rb - r) solve(R V R') (Rb - r)", "[estimators][regression][golden]") {
  const auto d = load_data();
  const auto x = design(d);
  const auto g = la::make_group_index(std::span<const long long>(d.cl));
  const auto t = la::test::read_golden_table("regression/r_wald.csv");
  std::map<std::string, la::wald_test_result> got;
  const std::vector<std::string> names{"x1", "x2"};
  got["x1_x2_hc1"] = la::wald_test(la::ols(x, d.y, {.covariance = la::covariance_type::hc1}), names);
  got["x1_x2_cr1"] = la::wald_test(la::ols(x, d.y, g), names);
  got["x1_x2_cr1_tcluster"] =
      la::wald_test(la::ols(x, d.y, g, {.distribution = la::reference_distribution::t_cluster}), names);
  Eigen::MatrixXd r2 = Eigen::MatrixXd::Zero(1, 4);
  r2(0, 1) = 1;
  r2(0, 3) = -1;
  got["x1_minus_x3_classical"] = la::wald_test(la::ols(x, d.y), r2, Eigen::VectorXd::Constant(1, 0.1));
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const auto& w = got.at(t.str("test", i));
    INFO(t.str("test", i));
    LATENTAUDIT_CHECK_CLOSE(w.chi2, t.num("chi2", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(w.chi2_p, t.num("chi2_p", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(w.f, t.num("f", i), 1e-10);
    CHECK(w.df1 == t.num("df1", i));
    CHECK(w.df2 == t.num("df2", i));
    LATENTAUDIT_CHECK_CLOSE(w.f_p, t.num("f_p", i), 1e-10);
    CHECK(w.p_value == w.f_p);
  }
  // Normal reference: the F version degenerates to the chi-square one.
  const auto wn =
      la::wald_test(la::ols(x, d.y, g, {.distribution = la::reference_distribution::normal}), names);
  CHECK(std::isinf(wn.df2));
  CHECK(wn.f_p == wn.chi2_p);
  CHECK(wn.p_value == wn.chi2_p);
  // A single restriction: W = t² of that coefficient.
  const auto fit = la::ols(x, d.y, {.covariance = la::covariance_type::hc3});
  const std::vector<std::string> one{"x3"};
  LATENTAUDIT_CHECK_CLOSE(la::wald_test(fit, one).chi2, std::pow(fit.term("x3").statistic, 2), 1e-12);
  LATENTAUDIT_CHECK_CLOSE(la::wald_test(fit, one).f_p, fit.term("x3").p_value, 1e-10);
}

TEST_CASE("ols agrees with the naive normal-equation oracle on random designs",
          "[estimators][regression][oracle]") {
  // seed 7301: 40 random designs, n in [12, 60], k in [2, 5], random clusters and weights.
  auto g = la::make_stream({.seed = 7301});
  for (int rep = 0; rep < 40; ++rep) {
    const int n = 12 + static_cast<int>(la::uniform_index(g, 49));
    const int k = 2 + static_cast<int>(la::uniform_index(g, 4));
    const int ncl = 2 + static_cast<int>(la::uniform_index(g, 6));
    Eigen::MatrixXd xm(n, k);
    Eigen::VectorXd y(n), w(n);
    std::vector<int> cl(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      xm(i, 0) = 1.0;
      for (int j = 1; j < k; ++j) xm(i, j) = la::standard_normal(g) * (j + 1) + j;
      y(i) = la::standard_normal(g) * (1 + std::fabs(xm(i, 1))) + xm(i, 1);
      w(i) = 0.2 + 2 * la::uniform01(g);
      cl[static_cast<std::size_t>(i)] =
          static_cast<int>(la::uniform_index(g, static_cast<std::uint32_t>(ncl)));
    }
    la::design_matrix dm{xm, {}};
    for (int j = 0; j < k; ++j) dm.names.push_back(std::string(1, 'c').append(std::to_string(j)));
    const auto groups = la::make_group_index(std::span<const int>(cl));
    if (groups.groups() < 2) continue;
    const bool weighted = rep % 2 == 1;
    const std::vector<std::pair<std::string, la::covariance_type>> types{
        {"classical", la::covariance_type::classical},
        {"hc0", la::covariance_type::hc0},
        {"hc1", la::covariance_type::hc1},
        {"hc2", la::covariance_type::hc2},
        {"hc3", la::covariance_type::hc3},
        {"cr0", la::covariance_type::cr0},
        {"cr1_g", la::covariance_type::cr1_g},
        {"cr1", la::covariance_type::cr1}};
    for (const auto& [name, type] : types) {
      la::ols_options o{.covariance = type};
      if (weighted) o.weights = std::span<const double>(w.data(), static_cast<std::size_t>(n));
      const std::span<const double> ys(y.data(), static_cast<std::size_t>(n));
      const auto fit = la::is_cluster_covariance(type) ? la::ols(dm, ys, groups, o) : la::ols(dm, ys, o);
      const auto ref = la::test::reference_ols(xm, y, name, cl, weighted ? w : Eigen::VectorXd());
      INFO("rep " << rep << " n " << n << " k " << k << " " << name << (weighted ? " weighted" : ""));
      for (int j = 0; j < k; ++j) {
        LATENTAUDIT_CHECK_CLOSE(fit.coefficients(j), ref.beta(j), 1e-9);
        for (int l = 0; l < k; ++l) LATENTAUDIT_CHECK_CLOSE(fit.covariance(j, l), ref.v(j, l), 1e-8);
      }
    }
  }
}

TEST_CASE("cluster labels may be integers or strings", "[estimators][regression]") {
  const auto d = load_data();
  const auto x = design(d);
  std::vector<std::string> labels;
  for (long long c : d.cl) {
    std::string label = "cluster-";
    label += std::to_string(c);
    labels.push_back(label);
  }
  std::vector<long long> sparse;
  for (long long c : d.cl) sparse.push_back(c * 1000000007LL - 5);  // hash-map path
  const auto a = la::ols(x, d.y, la::make_group_index(std::span<const long long>(d.cl)));
  const auto b = la::ols(x, d.y, la::make_group_index(std::span<const std::string>(labels)));
  const auto c = la::ols(x, d.y, la::make_group_index(std::span<const long long>(sparse)));
  CHECK(a.clusters == 30);
  CHECK(b.clusters == 30);
  CHECK(a.covariance_kind == la::covariance_type::cr1);
  for (int j = 0; j < 4; ++j) {
    CHECK(a.terms[static_cast<std::size_t>(j)].std_error == b.terms[static_cast<std::size_t>(j)].std_error);
    CHECK(a.terms[static_cast<std::size_t>(j)].std_error == c.terms[static_cast<std::size_t>(j)].std_error);
  }
  const auto gi = la::make_group_index(std::span<const std::string>(labels));
  CHECK(gi.labels[gi.group[0]] == labels[0]);
}

TEST_CASE("rank-deficient designs are an error naming the collinear columns", "[estimators][regression]") {
  const std::vector<double> a{1, 2, 3, 4, 5, 6, 7, 8}, b{2, 1, 0, 1, 3, 5, 4, 2}, y{1, 3, 2, 5, 4, 6, 8, 7};
  std::vector<double> c(a.size()), konst(a.size(), 3.0), zero(a.size(), 0.0);
  for (std::size_t i = 0; i < a.size(); ++i) c[i] = 2 * a[i] - b[i];
  SECTION("a linear combination of earlier columns") {
    const auto x = la::design_builder(8).intercept().add("a", a).add("b", b).add("c", c).build();
    CHECK_THROWS_AS(la::ols(x, y), la::invalid_argument);
    CHECK_THROWS_WITH(la::ols(x, y),
                      Contains("ols: argument 'x' is rank deficient") &&
                          Contains("column 'c' is a linear combination of earlier columns ('a', 'b')"));
  }
  SECTION("a constant covariate beside an intercept") {
    const auto x = la::design_builder(8).intercept().add("a", a).add("k", konst).build();
    CHECK_THROWS_WITH(la::ols(x, y),
                      Contains("column 'k' is a linear combination of earlier columns ('(Intercept)')"));
  }
  SECTION("an all-zero column") {
    const auto x = la::design_builder(8).intercept().add("z", zero).add("a", a).build();
    CHECK_THROWS_WITH(la::ols(x, y), Contains("column 'z' is all zeros"));
  }
  SECTION("nearly collinear columns within R's tolerance 1e-7") {
    std::vector<double> c2 = c;
    c2[3] += 1e-10;
    const auto x = la::design_builder(8).intercept().add("a", a).add("b", b).add("c", c2).build();
    CHECK_THROWS_WITH(la::ols(x, y), Contains("column 'c'"));
    std::vector<double> c3 = c;
    c3[3] += 1e-3;  // clearly independent
    const auto x3 = la::design_builder(8).intercept().add("a", a).add("b", b).add("c", c3).build();
    CHECK_NOTHROW(la::ols(x3, y));
  }
  SECTION("dummies of every level beside an intercept") {
    const std::vector<int> grp{0, 0, 1, 1, 2, 2, 0, 1};
    const auto gi = la::make_group_index(std::span<const int>(grp));
    const auto x = la::design_builder(8).intercept().add_dummies("g", gi, false).build();
    CHECK_THROWS_WITH(
        la::ols(x, y),
        Contains("column 'g2' is a linear combination of earlier columns ('(Intercept)', 'g0', 'g1')"));
  }
}

TEST_CASE("ols validates its arguments", "[estimators][regression]") {
  const std::vector<double> a{1, 2, 3, 4, 5, 6}, y{1, 3, 2, 5, 4, 6};
  const auto x = la::design_builder(6).intercept().add("a", a).build();
  const std::vector<int> one_cluster(6, 4), two{1, 1, 1, 2, 2, 2};
  const auto g1 = la::make_group_index(std::span<const int>(one_cluster));
  const auto g2 = la::make_group_index(std::span<const int>(two));
  CHECK_THROWS_WITH(
      la::ols(x, y, g1),
      "ols: argument 'clusters' has 1 cluster, expected at least 2 for a cluster-robust covariance");
  CHECK_THROWS_WITH(la::ols(x, y, {.covariance = la::covariance_type::cr1}),
                    Contains("'options.covariance'") && Contains("cluster ids"));
  CHECK_THROWS_WITH(la::ols(x, y, g2, {.covariance = la::covariance_type::hc1}),
                    Contains("'options.covariance'"));
  CHECK_THROWS_WITH(la::ols(x, y, {.distribution = la::reference_distribution::t_cluster}),
                    Contains("'options.distribution'"));
  CHECK_THROWS_WITH(la::ols(x, y, {.level = 1.0}), "ols: argument 'options.level' must lie in (0, 1), got 1");
  const std::vector<double> short_y{1, 2, 3};
  CHECK_THROWS_AS(la::ols(x, short_y), la::shape_mismatch);
  std::vector<double> bad = y;
  bad[2] = std::nan("");
  CHECK_THROWS_WITH(la::ols(x, bad), "ols: argument 'y' must hold finite values, got nan at index 2");
  const std::vector<double> w{1, 1, 0, 1, 1, 1};
  CHECK_THROWS_WITH(la::ols(x, y, {.weights = w}), Contains("'options.weights'") && Contains("at index 2"));
  la::design_matrix xb = x;
  xb.x(4, 1) = INFINITY;
  CHECK_THROWS_WITH(la::ols(xb, y),
                    "ols: argument 'x' must hold finite values, got inf in column 'a' at row 4");
  CHECK_THROWS_WITH(la::ols(x, y, {.absorbed_parameters = 4}),
                    Contains("expected more rows than parameters"));
  CHECK_THROWS_AS(la::design_builder(6).add("a", short_y), la::shape_mismatch);
  CHECK_THROWS_WITH(la::design_builder(6).add("a", a).add("a", a), Contains("'a' is already a column"));
  CHECK_THROWS_AS(la::design_builder(0), la::invalid_argument);
  CHECK_THROWS_AS(la::design_builder(3).build(), la::invalid_argument);
  const auto fit = la::ols(x, y);
  CHECK_THROWS_WITH(fit.term("nope"), Contains("'nope' is not a coefficient"));
  const std::vector<std::string> dup{"a", "a"}, unknown{"zz"};
  CHECK_THROWS_WITH(la::wald_test(fit, dup), Contains("repeats 'a'"));
  CHECK_THROWS_WITH(la::wald_test(fit, unknown), Contains("'zz' is not a coefficient"));
  Eigen::MatrixXd rr(2, 2);
  rr << 0, 1, 0, 2;
  CHECK_THROWS_WITH(la::wald_test(fit, rr), Contains("singular"));
  CHECK_THROWS_AS(la::wald_test(fit, Eigen::MatrixXd::Zero(1, 3)), la::shape_mismatch);
}

TEST_CASE("exact fits and leverage-1 points follow on_degenerate", "[estimators][regression]") {
  const std::vector<double> a{1, 2, 3, 4, 5, 6};
  std::vector<double> y(6);
  for (std::size_t i = 0; i < 6; ++i) y[i] = 2 + 3 * a[i];
  const auto x = la::design_builder(6).intercept().add("a", a).build();
  CHECK_THROWS_AS(la::ols(x, y), la::numerical_error);
  CHECK_THROWS_WITH(la::ols(x, y), Contains("ols: the fit is exact"));
  const auto f = la::ols(x, y, {.if_degenerate = la::on_degenerate::flag});
  CHECK(f.status == la::estimate_status::degenerate);
  LATENTAUDIT_CHECK_CLOSE(f.term("a").estimate, 3.0, 1e-12);
  CHECK(std::isnan(f.term("a").std_error));
  CHECK(f.term("a").status == la::estimate_status::degenerate);
  CHECK(la::wald_test(f, std::vector<std::string>{"a"}).status == la::estimate_status::degenerate);
  // A dummy that picks one observation: leverage 1, HC2/HC3 undefined, HC0 fine.
  const std::vector<double> single{0, 0, 0, 1, 0, 0}, y2{1, 3, 2, 5, 4, 7};
  const auto x2 = la::design_builder(6).intercept().add("a", a).add("s", single).build();
  CHECK_NOTHROW(la::ols(x2, y2, {.covariance = la::covariance_type::hc0}));
  CHECK_THROWS_WITH(la::ols(x2, y2, {.covariance = la::covariance_type::hc3}),
                    Contains("observation 3 has leverage 1"));
  const auto f2 =
      la::ols(x2, y2, {.covariance = la::covariance_type::hc2, .if_degenerate = la::on_degenerate::flag});
  CHECK(f2.status == la::estimate_status::degenerate);
}

TEST_CASE("absorbed parameters enter the residual df and the HC1/CR1 factors", "[estimators][regression]") {
  const auto d = load_data();
  const auto x = design(d);
  const auto g = la::make_group_index(std::span<const long long>(d.cl));
  const auto a = la::ols(x, d.y, g);
  const auto b = la::ols(x, d.y, g, {.absorbed_parameters = 10});
  const double n = 240;
  CHECK(b.df_residual == n - 14);
  CHECK(b.k == 14);
  LATENTAUDIT_CHECK_CLOSE(b.term("x1").std_error / a.term("x1").std_error, std::sqrt((n - 4) / (n - 14)),
                          1e-12);
}
