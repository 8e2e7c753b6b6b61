// SPDX-License-Identifier: MIT
// Tests for estimators/instrumental.hpp: 2SLS golden values (hand-computed in R and checked there
// against AER::ivreg + sandwich; statsmodels IV2SLS classical), first-stage F and partial R²,
// the Wald estimator with its delta-method SE, analytic identities, the oracle, bad input.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/instrumental.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/golden.hpp"
#include "support/reference_regression.hpp"

namespace la = latentaudit;
using Catch::Matchers::Contains;

namespace {

struct iv_data {
  std::vector<double> y, x, d, z, z2, d2;
  std::vector<long long> cl;
};

iv_data load() {
  const auto t = la::test::read_golden_table("iv/data.csv");
  iv_data v{t.col("y"), t.col("x"), t.col("d"), t.col("z"), t.col("z2"), t.col("d2"), {}};
  for (double c : t.col("cl")) v.cl.push_back(static_cast<long long>(c));
  return v;
}

struct iv_model {
  la::design_matrix exo, endo, inst;
};

iv_model model(const iv_data& v, bool over) {
  const std::size_t n = v.y.size();
  iv_model m{la::design_builder(n).intercept().add("x", v.x).build(), {}, {}};
  if (over) {
    m.endo = la::design_builder(n).add("d2", v.d2).build();
    m.inst = la::design_builder(n).add("z", v.z).add("z2", v.z2).build();
  } else {
    m.endo = la::design_builder(n).add("d", v.d).build();
    m.inst = la::design_builder(n).add("z", v.z).build();
  }
  return m;
}

}  // namespace

TEST_CASE("2SLS reproduces R (by hand, = AER::ivreg + sandwich) and statsmodels IV2SLS",
          "[estimators][instrumental][golden]") {
  const auto v = load();
  const auto g = la::make_group_index(std::span<const long long>(v.cl));
  const auto t = la::test::read_golden_table("iv/r_terms.csv");
  const auto py = la::test::read_golden_table("iv/py_terms.csv");
  const auto fst = la::test::read_golden_table("iv/r_first_stage.csv");
  using C = la::covariance_type;
  using D = la::reference_distribution;
  struct variant {
    std::string suffix;
    C cov;
    D dist;
  };
  const std::vector<variant> vs{{"classical_t", C::classical, D::t_residual},
                                {"hc0_t", C::hc0, D::t_residual},
                                {"hc1_t", C::hc1, D::t_residual},
                                {"hc2_t", C::hc2, D::t_residual},
                                {"hc3_t", C::hc3, D::t_residual},
                                {"cr1_tcluster", C::cr1, D::t_cluster},
                                {"cr1_normal", C::cr1, D::normal}};
  for (int over = 0; over < 2; ++over) {
    const std::string mname = over ? "over" : "just";
    const auto m = model(v, over == 1);
    for (const auto& var : vs) {
      const la::iv_options o{.covariance = var.cov, .distribution = var.dist};
      const auto r = la::is_cluster_covariance(var.cov)
                         ? la::two_stage_least_squares(v.y, m.exo, m.endo, m.inst, g, o)
                         : la::two_stage_least_squares(v.y, m.exo, m.endo, m.inst, o);
      const std::string name = mname + "_" + var.suffix;
      std::size_t found = 0;
      for (std::size_t i = 0; i < t.rows(); ++i) {
        if (t.str("fit", i) != name) continue;
        ++found;
        const auto& e = r.fit.term(t.str("term", i));
        INFO(name << " " << t.str("term", i));
        LATENTAUDIT_CHECK_CLOSE(e.estimate, t.num("estimate", i), 1e-11);
        LATENTAUDIT_CHECK_CLOSE(e.std_error, t.num("se", i), 1e-10);
        LATENTAUDIT_CHECK_CLOSE(e.statistic, t.num("statistic", i), 1e-10);
        LATENTAUDIT_CHECK_CLOSE(e.p_value, t.num("p", i), 1e-10);
        LATENTAUDIT_CHECK_CLOSE(e.ci_low, t.num("ci_low", i), 1e-10);
        LATENTAUDIT_CHECK_CLOSE(e.ci_high, t.num("ci_high", i), 1e-10);
      }
      CHECK(found == 3);
      if (var.cov == C::classical) {
        for (std::size_t i = 0; i < py.rows(); ++i) {
          if (py.str("fit", i) != mname + "_classical") continue;
          LATENTAUDIT_CHECK_CLOSE(r.fit.term(py.str("term", i)).estimate, py.num("estimate", i), 1e-11);
          LATENTAUDIT_CHECK_CLOSE(r.fit.term(py.str("term", i)).std_error, py.num("se", i), 1e-10);
        }
      }
      // First stage.
      REQUIRE(r.first_stages.size() == 1);
      const auto& fs = r.first_stages[0];
      const std::size_t row = static_cast<std::size_t>(over);
      LATENTAUDIT_CHECK_CLOSE(fs.f_classical, fst.num("F_classical", row), 1e-10);
      LATENTAUDIT_CHECK_CLOSE(fs.f_classical_p, fst.num("p_classical", row), 1e-10);
      LATENTAUDIT_CHECK_CLOSE(fs.partial_r_squared, fst.num("partial_r2", row), 1e-10);
      CHECK(fs.f_df1 == fst.num("q", row));
      if (var.cov == C::classical) LATENTAUDIT_CHECK_CLOSE(fs.f, fs.f_classical, 1e-10);
      if (var.cov == C::hc1) {
        LATENTAUDIT_CHECK_CLOSE(fs.f, fst.num("F_hc1", row), 1e-10);
        LATENTAUDIT_CHECK_CLOSE(fs.f_p, fst.num("p_hc1", row), 1e-10);
      }
      if (var.cov == C::cr1 && var.dist == D::t_cluster) {
        LATENTAUDIT_CHECK_CLOSE(fs.f, fst.num("F_cr1", row), 1e-10);
        LATENTAUDIT_CHECK_CLOSE(fs.f_p, fst.num("p_cr1_tcluster", row), 1e-10);
      }
      CHECK(fs.endogenous == (over ? "d2" : "d"));
      LATENTAUDIT_CHECK_CLOSE(r.fit.sigma, fst.num("sigma", row), 1e-12);
    }
  }
}

TEST_CASE("the Wald estimator reproduces R's delta method and equals 2SLS",
          "[estimators][instrumental][golden]") {
  const auto v = load();
  const auto t = la::test::read_golden_table("iv/r_wald.csv");
  for (std::size_t row = 0; row < 2; ++row) {
    const bool sample = t.str("fit", row) == "sample";
    const auto w = la::wald_estimator(v.y, v.d, v.z, {.sample_variance = sample});
    INFO(t.str("fit", row));
    LATENTAUDIT_CHECK_CLOSE(w.late.estimate, t.num("late", row), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(w.late.std_error, t.num("se", row), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(w.late.p_value, t.num("p", row), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(w.late.ci_low, t.num("ci_low", row), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(w.late.ci_high, t.num("ci_high", row), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(w.itt_y.estimate, t.num("itt_y", row), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(w.itt_y.std_error, t.num("se_itt_y", row), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(w.itt_d.estimate, t.num("itt_d", row), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(w.itt_d.std_error, t.num("se_itt_d", row), 1e-12);
    CHECK(std::isnan(w.late.df));
    CHECK(w.late.n_treated + w.late.n_control == v.y.size());
  }
  // Identity: Wald = just-identified 2SLS with X = (1, d), Z = (1, z); population-variance SE = HC0.
  const std::size_t n = v.y.size();
  const auto r = la::two_stage_least_squares(
      v.y, la::design_builder(n).intercept().build(), la::design_builder(n).add("d", v.d).build(),
      la::design_builder(n).add("z", v.z).build(),
      {.covariance = la::covariance_type::hc0, .distribution = la::reference_distribution::normal});
  const auto w0 = la::wald_estimator(v.y, v.d, v.z, {.sample_variance = false});
  LATENTAUDIT_CHECK_CLOSE(r.fit.term("d").estimate, w0.late.estimate, 1e-12);
  LATENTAUDIT_CHECK_CLOSE(r.fit.term("d").std_error, w0.late.std_error, 1e-11);
  LATENTAUDIT_CHECK_CLOSE(r.fit.term("d").p_value, w0.late.p_value, 1e-9);
}

TEST_CASE("2SLS agrees with the naive oracle on random designs (seed 9917)",
          "[estimators][instrumental][oracle]") {
  auto g = la::make_stream({.seed = 9917});
  for (int rep = 0; rep < 20; ++rep) {
    const int n = 30 + static_cast<int>(la::uniform_index(g, 40));
    Eigen::MatrixXd xm(n, 3), zm(n, 4);
    Eigen::VectorXd y(n);
    for (int i = 0; i < n; ++i) {
      const double z1 = la::standard_normal(g), z2 = la::uniform01(g), u = la::standard_normal(g),
                   x = la::standard_normal(g);
      const double d = 0.8 * z1 - z2 + u + 0.3 * x;
      xm.row(i) << 1.0, x, d;
      zm.row(i) << 1.0, x, z1, z2;
      y(i) = 1 + x + 2 * d + u + la::standard_normal(g);
    }
    const std::span<const double> ys(y.data(), static_cast<std::size_t>(n));
    const la::design_matrix exo{xm.leftCols(2), {"1", "x"}}, endo{xm.rightCols(1), {"d"}},
        inst{zm.rightCols(2), {"z1", "z2"}};
    for (const std::string type : {"classical", "hc0", "hc1"}) {
      const auto cov = type == "classical"
                           ? la::covariance_type::classical
                           : (type == "hc0" ? la::covariance_type::hc0 : la::covariance_type::hc1);
      const auto r = la::two_stage_least_squares(ys, exo, endo, inst, {.covariance = cov});
      const auto ref = la::test::reference_2sls(xm, zm, y, type);
      INFO("rep " << rep << " " << type);
      for (int j = 0; j < 3; ++j) {
        LATENTAUDIT_CHECK_CLOSE(r.fit.coefficients(j), ref.beta(j), 1e-9);
        for (int l = 0; l < 3; ++l) LATENTAUDIT_CHECK_CLOSE(r.fit.covariance(j, l), ref.v(j, l), 1e-8);
      }
    }
  }
}

TEST_CASE("instruments without a first stage are a clear error", "[estimators][instrumental]") {
  const std::vector<double> x{0.3, -1.2, 0.8, 1.5, -0.4, 0.9, -0.7, 0.1, 1.1, -1.6};
  const std::vector<double> d{0, 1, 1, 0, 1, 0, 1, 1, 0, 0};
  const std::vector<double> y{1.2, 2.5, 3.1, 0.9, 2.2, 1.0, 3.3, 2.8, 1.4, 0.7};
  const std::size_t n = x.size();
  const auto exo = la::design_builder(n).intercept().add("x", x).build();
  const auto endo = la::design_builder(n).add("d", d).build();
  // An instrument equal to x: collinear with the exogenous regressors.
  CHECK_THROWS_WITH(la::two_stage_least_squares(y, exo, endo, la::design_builder(n).add("z", x).build()),
                    Contains("two_stage_least_squares: argument 'instruments' with the exogenous regressors "
                             "are rank deficient") &&
                        Contains("column 'z' is a linear combination of earlier columns ('x')"));
  // An instrument exactly orthogonal to d given the exogenous regressors: zero first stage.
  // Build z as the part of a vector orthogonal to (1, x, d), so the projection of d on (1, x, z)
  // equals its projection on (1, x) and the projected d is collinear with (1, x).
  Eigen::MatrixXd a(static_cast<Eigen::Index>(n), 3);
  for (std::size_t i = 0; i < n; ++i) a.row(static_cast<Eigen::Index>(i)) << 1.0, x[i], d[i];
  Eigen::VectorXd w(static_cast<Eigen::Index>(n));
  for (std::size_t i = 0; i < n; ++i)
    w(static_cast<Eigen::Index>(i)) = std::sin(3.0 * static_cast<double>(i));
  const Eigen::VectorXd zo = w - a * a.colPivHouseholderQr().solve(w);
  const std::vector<double> z(zo.data(), zo.data() + n);
  CHECK_THROWS_WITH(
      la::two_stage_least_squares(y, exo, endo, la::design_builder(n).add("z", z).build()),
      Contains("'instruments' give no first stage") && Contains("column 'd' is a linear combination"));
  // Wald estimator: the same share treated in both arms.
  const std::vector<double> zb{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, db{0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  const std::vector<double> db2{1, 1, 0, 0, 0, 1, 1, 0, 0, 0};
  CHECK_THROWS_AS(la::wald_estimator(y, db2, zb), la::numerical_error);
  CHECK_THROWS_WITH(la::wald_estimator(y, db2, zb),
                    Contains("wald_estimator: the instrument has no first stage"));
  const auto flagged = la::wald_estimator(y, db2, zb, {.if_degenerate = la::on_degenerate::flag});
  CHECK(flagged.late.status == la::estimate_status::degenerate);
  CHECK(std::isnan(flagged.late.estimate));
  CHECK_NOTHROW(la::wald_estimator(y, db, zb));
}

TEST_CASE("IV estimators validate their arguments", "[estimators][instrumental]") {
  const std::vector<double> x{0.3, -1.2, 0.8, 1.5, -0.4, 0.9}, d{0, 1, 1, 0, 1, 0}, z{0, 1, 1, 0, 1, 1},
      y{1, 2, 3, 1, 2, 1};
  const std::size_t n = x.size();
  const auto exo = la::design_builder(n).intercept().add("x", x).build();
  const auto endo = la::design_builder(n).add("d", d).build();
  const auto inst = la::design_builder(n).add("z", z).build();
  CHECK_THROWS_WITH(la::two_stage_least_squares(y, exo, endo, la::design_matrix{}),
                    Contains("'instruments' has 0 column(s), expected at least as many as the 1 endogenous"));
  CHECK_THROWS_WITH(la::two_stage_least_squares(y, exo, endo, la::design_builder(n).add("x", z).build()),
                    Contains("repeat the column name 'x'"));
  const std::vector<double> short_y{1, 2};
  CHECK_THROWS_AS(la::two_stage_least_squares(short_y, exo, endo, inst), la::shape_mismatch);
  CHECK_THROWS_WITH(la::two_stage_least_squares(y, exo, endo, inst, {.covariance = la::covariance_type::cr1}),
                    Contains("'options.covariance'"));
  const std::vector<double> zb{0, 1, 2, 0, 1, 1};
  CHECK_THROWS_WITH(la::wald_estimator(y, d, zb),
                    "wald_estimator: argument 'z' must hold 0/1 outcomes, got 2 at index 2");
  const std::vector<double> z1{0, 1, 1, 1, 1, 1};
  CHECK_THROWS_WITH(la::wald_estimator(y, d, z1), Contains("'y (arm z = 0)' has 1 observation"));
  CHECK_THROWS_WITH(la::wald_estimator(y, d, z, {.level = 0}), Contains("'options.level'"));
}
