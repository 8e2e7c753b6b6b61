// SPDX-License-Identifier: MIT
// Tests for estimators/difference_in_differences.hpp: golden values from R lm + sandwich +
// lmtest (tests/golden/did/), analytic identities, warnings, bad input, and a Monte-Carlo
// coverage check of the TWFE CR1 interval with t(G − 1).
#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/difference_in_differences.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/golden.hpp"

namespace la = latentaudit;
using Catch::Matchers::Contains;

namespace {

struct panel {
  std::vector<double> y, d;
  std::vector<long long> unit, time;
};

panel load_panel() {
  const auto t = la::test::read_golden_table("did/panel.csv");
  panel p{t.col("y"), t.col("d"), {}, {}};
  for (double u : t.col("unit")) p.unit.push_back(static_cast<long long>(u));
  for (double u : t.col("time")) p.time.push_back(static_cast<long long>(u));
  return p;
}

/// Row `name` of a golden table with a `fit` column, as a map column -> value.
std::map<std::string, double> golden_row(const la::test::golden_table& t, const std::string& name) {
  for (std::size_t i = 0; i < t.rows(); ++i) {
    if (t.str("fit", i) != name) continue;
    std::map<std::string, double> m;
    for (const auto& c : t.names) {
      if (c != "fit") m[c] = t.num(c, i);
    }
    return m;
  }
  FAIL("no golden row " << name);
  return {};
}

void compare(const la::effect_estimate& e, const std::map<std::string, double>& g, double rtol = 1e-10) {
  LATENTAUDIT_CHECK_CLOSE(e.estimate, g.at("estimate"), 1e-12);
  LATENTAUDIT_CHECK_CLOSE(e.std_error, g.at("se"), rtol);
  LATENTAUDIT_CHECK_CLOSE(e.statistic, g.at("statistic"), rtol);
  if (std::isinf(g.at("df"))) {
    CHECK(std::isnan(e.df));
  } else {
    LATENTAUDIT_CHECK_CLOSE(e.df, g.at("df"), 1e-12);
  }
  LATENTAUDIT_CHECK_CLOSE(e.p_value, g.at("p"), rtol);
  LATENTAUDIT_CHECK_CLOSE(e.ci_low, g.at("ci_low"), rtol);
  LATENTAUDIT_CHECK_CLOSE(e.ci_high, g.at("ci_high"), rtol);
}

bool has_warning(const std::vector<la::did_warning>& w, la::did_warning_code c) {
  for (const auto& x : w) {
    if (x.code == c) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("2x2 DiD from cell means and by regression reproduces R",
          "[estimators][difference_in_differences][golden]") {
  const auto t = la::test::read_golden_table("did/panel2.csv");
  const auto y = t.col("y"), tr = t.col("treated"), post = t.col("post");
  std::vector<long long> unit;
  for (double u : t.col("unit")) unit.push_back(static_cast<long long>(u));
  const auto units = la::make_group_index(std::span<const long long>(unit));
  const auto g = la::test::read_golden_table("did/r_2x2.csv");

  const auto m = la::did_2x2_means(y, tr, post);
  INFO("cell means, Satterthwaite df (SE = HC2 of lm(y ~ treated*post))");
  compare(m.effect, golden_row(g, "means_satterthwaite"));
  compare(la::did_2x2_means(y, tr, post, {.normal_reference = true}).effect, golden_row(g, "means_normal"));
  CHECK(m.cells[0].n + m.cells[1].n + m.cells[2].n + m.cells[3].n == y.size());
  CHECK(m.effect.n_treated == 50);

  using D = la::reference_distribution;
  compare(la::did_2x2_regression(y, tr, post, units, {.distribution = D::t_residual}).effect,
          golden_row(g, "reg_cr1_t"));
  compare(la::did_2x2_regression(y, tr, post, units).effect, golden_row(g, "reg_cr1_tcluster"));
  compare(la::did_2x2_regression(y, tr, post, units, {.distribution = D::normal}).effect,
          golden_row(g, "reg_cr1_normal"));

  // Identities: the regression coefficient is the cell-mean DiD, and TWFE on this balanced
  // two-period panel with one adoption date gives the same estimate.
  const auto r = la::did_2x2_regression(y, tr, post, units);
  LATENTAUDIT_CHECK_CLOSE(r.effect.estimate, m.effect.estimate, 1e-12);
  std::vector<double> d(y.size());
  std::vector<long long> time(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    d[i] = tr[i] * post[i];
    time[i] = static_cast<long long>(post[i]);
  }
  const auto tw = la::did_twfe(y, d, units, time);
  LATENTAUDIT_CHECK_CLOSE(tw.effect.estimate, m.effect.estimate, 1e-12);
  CHECK(tw.warnings.empty());
}

TEST_CASE("TWFE on a staggered unbalanced panel reproduces R lm + factor dummies + vcovCL",
          "[estimators][difference_in_differences][golden]") {
  const auto p = load_panel();
  const auto units = la::make_group_index(std::span<const long long>(p.unit));
  const auto g = la::test::read_golden_table("did/r_twfe.csv");
  using C = la::covariance_type;
  using D = la::reference_distribution;
  using F = la::fixed_effect_count;
  const auto a = la::did_twfe(p.y, p.d, units, p.time, {.distribution = D::t_residual});
  compare(a.effect, golden_row(g, "twfe_cr1_counted_t"));
  CHECK(a.fit.k == 40 + 8);  // R's lm: intercept + 39 unit + 7 period dummies + d
  compare(la::did_twfe(p.y, p.d, units, p.time).effect, golden_row(g, "twfe_cr1_counted_tcluster"));
  compare(la::did_twfe(p.y, p.d, units, p.time, {.fe_count = F::nested}).effect,
          golden_row(g, "twfe_cr1_nested_tcluster"));
  compare(la::did_twfe(p.y, p.d, units, p.time, {.covariance = C::hc1, .distribution = D::t_residual}).effect,
          golden_row(g, "twfe_hc1_counted_t"));
  compare(la::did_twfe(p.y, p.d, units, p.time, {.covariance = C::classical, .distribution = D::t_residual})
              .effect,
          golden_row(g, "twfe_classical_counted_t"));
  compare(la::did_twfe(p.y, p.d, units, p.time, {.covariance = C::cr0, .distribution = D::normal}).effect,
          golden_row(g, "twfe_cr0_counted_normal"));
  REQUIRE(has_warning(a.warnings, la::did_warning_code::staggered_adoption));
  CHECK_THAT(a.warnings[0].message,
             Contains("2 different periods (2004, 2006)") && Contains("Goodman-Bacon"));
  CHECK(!has_warning(a.warnings, la::did_warning_code::no_never_treated));
  CHECK(a.effect.estimand == "att_twfe");
  CHECK(a.effect.method == "did_twfe_cr1");
}

TEST_CASE("event study coefficients and the Wald pre-trend test reproduce R",
          "[estimators][difference_in_differences][golden]") {
  const auto p = load_panel();
  const auto units = la::make_group_index(std::span<const long long>(p.unit));
  const auto ev = la::test::read_golden_table("did/r_event.csv");
  const auto pt = la::test::read_golden_table("did/r_pretrend.csv");
  using D = la::reference_distribution;
  struct spec {
    std::string name;
    la::event_study_options o;
  };
  const std::vector<spec> specs{{"binned_m4_3", {.first = -4, .last = 3, .bin_endpoints = true}},
                                {"full", {}},
                                {"trimmed_m3_2", {.first = -3, .last = 2}}};
  for (const auto& s : specs) {
    INFO(s.name);
    auto o = s.o;
    o.distribution = D::t_residual;
    const auto r = la::event_study(p.y, p.d, units, p.time, o);
    std::size_t rows = 0;
    for (std::size_t i = 0; i < ev.rows(); ++i) {
      if (ev.str("fit", i) != s.name) continue;
      const auto k = static_cast<long long>(ev.num("rel", i));
      std::size_t j = 0;
      while (j < r.relative_times.size() && r.relative_times[j] != k) ++j;
      REQUIRE(j < r.relative_times.size());
      ++rows;
      INFO("relative time " << k);
      LATENTAUDIT_CHECK_CLOSE(r.coefficients[j].estimate, ev.num("estimate", i), 1e-10);
      LATENTAUDIT_CHECK_CLOSE(r.coefficients[j].std_error, ev.num("se", i), 1e-10);
      LATENTAUDIT_CHECK_CLOSE(r.coefficients[j].p_value, ev.num("p", i), 1e-10);
      LATENTAUDIT_CHECK_CLOSE(r.coefficients[j].ci_low, ev.num("ci_low", i), 1e-10);
    }
    CHECK(rows == r.relative_times.size());
    const auto g = golden_row(pt, s.name);
    CHECK(static_cast<double>(r.fit.n) == g.at("n"));
    LATENTAUDIT_CHECK_CLOSE(r.pre_trend.chi2, g.at("chi2"), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(r.pre_trend.chi2_p, g.at("chi2_p"), 1e-10);
    CHECK(r.pre_trend.df1 == g.at("df1"));
    CHECK(r.pre_trend.df2 == g.at("df2_resid"));
    LATENTAUDIT_CHECK_CLOSE(r.pre_trend.f_p, g.at("f_p_resid"), 1e-10);
    // Same test with the t(G − 1) reference (the default): F(q, G − 1).
    const auto rc = la::event_study(p.y, p.d, units, p.time, s.o);
    CHECK(rc.pre_trend.df2 == g.at("df2_cluster"));
    LATENTAUDIT_CHECK_CLOSE(rc.pre_trend.f_p, g.at("f_p_cluster"), 1e-10);
    CHECK(rc.pre_trend.p_value == rc.pre_trend.f_p);
    CHECK(has_warning(r.warnings, la::did_warning_code::staggered_adoption));
    CHECK(has_warning(r.warnings, la::did_warning_code::dropped_observations) == (s.name == "trimmed_m3_2"));
  }
}

TEST_CASE("DiD warnings describe the design problems", "[estimators][difference_in_differences]") {
  // 4 units x 4 periods. Unit 0 never treated; unit 1 treated from t=2; unit 2 from t=2 but
  // leaves at t=3; unit 3 treated from its first period.
  const std::vector<long long> unit{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
  const std::vector<long long> time{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
  const std::vector<double> d{0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 1};
  const std::vector<double> y{1.0, 1.3, 2.1, 2.2, 0.5, 0.9, 2.8, 3.1, 1.7, 1.5, 3.2, 2.6, 2.2, 2.9, 3.5, 3.9};
  const auto units = la::make_group_index(std::span<const long long>(unit));
  const auto r = la::did_twfe(y, d, units, time);
  CHECK(has_warning(r.warnings, la::did_warning_code::treatment_reversal));
  CHECK(has_warning(r.warnings, la::did_warning_code::always_treated));
  CHECK(has_warning(r.warnings, la::did_warning_code::staggered_adoption));
  CHECK(!has_warning(r.warnings, la::did_warning_code::no_never_treated));
  std::vector<double> d2 = d;
  d2[3] = 1;  // unit 0 treated at t = 3: no never-treated unit remains
  CHECK(has_warning(la::did_twfe(y, d2, units, time).warnings, la::did_warning_code::no_never_treated));
}

TEST_CASE("DiD estimators validate their arguments", "[estimators][difference_in_differences]") {
  const std::vector<long long> unit{0, 0, 1, 1, 2, 2}, time{0, 1, 0, 1, 0, 1};
  const std::vector<double> d{0, 0, 0, 1, 0, 1}, y{1, 2, 1.5, 3.5, 0.7, 2.9};
  const auto units = la::make_group_index(std::span<const long long>(unit));
  CHECK_THROWS_WITH(la::did_twfe(y, d, units, time, {.covariance = la::covariance_type::hc2}),
                    Contains("did_twfe: argument 'options.covariance' is hc2"));
  const std::vector<double> nb{0, 0, 0, 2, 0, 1};
  CHECK_THROWS_WITH(la::did_twfe(y, nb, units, time),
                    "did_twfe: argument 'treatment' must hold 0/1 outcomes, got 2 at index 3");
  const std::vector<long long> one_period(6, 5);
  CHECK_THROWS_WITH(la::did_twfe(y, d, units, one_period),
                    Contains("'time' has 1 period, expected at least 2"));
  const std::vector<long long> same(6, 1);
  CHECK_THROWS_WITH(la::did_twfe(y, d, la::make_group_index(std::span<const long long>(same)), time),
                    Contains("'units' has 1 unit"));
  const std::vector<double> never(6, 0.0);
  CHECK_THROWS_WITH(la::did_twfe(y, never, units, time),
                    Contains("did_twfe: argument 'treatment (after removing unit means)' is rank deficient"));
  CHECK_THROWS_WITH(la::event_study(y, never, units, time),
                    Contains("event_study: argument 'treatment' is 0 everywhere"));
  CHECK_THROWS_WITH(la::event_study(y, d, units, time, {.first = -1}),
                    Contains("'options.first' must be at most -2"));
  CHECK_THROWS_WITH(la::event_study(y, d, units, time, {.last = -1}),
                    Contains("'options.last' must be at least 0"));
  const std::vector<double> short_y{1, 2};
  CHECK_THROWS_AS(la::did_twfe(short_y, d, units, time), la::shape_mismatch);
  CHECK_THROWS_WITH(la::did_2x2_means(y, d, std::vector<double>{0, 1, 0, 1, 0, 1}),
                    Contains("did_2x2_means: argument 'y' has 1 observation(s) in cell (control, post)"));
  const std::vector<double> tr{0, 0, 0, 0, 1, 1, 1, 1}, po{0, 0, 1, 1, 0, 0, 1, 1}, flat(8, 2.0);
  CHECK_THROWS_AS(la::did_2x2_means(flat, tr, po), la::numerical_error);
  CHECK(la::did_2x2_means(flat, tr, po, {.if_degenerate = la::on_degenerate::flag}).effect.status ==
        la::estimate_status::degenerate);
  // Event study without leads: the pre-trend test is flagged, not NaN silently.
  const auto es = la::event_study(y, d, units, time);
  CHECK(es.relative_times == std::vector<long long>{0});
  CHECK(es.pre_trend.status == la::estimate_status::degenerate);
  CHECK(es.pre_trend.df1 == 0);
}

TEST_CASE("Monte Carlo: TWFE CR1 intervals with t(G-1) cover near the nominal level (seed 20261129)",
          "[estimators][difference_in_differences][montecarlo]") {
  // 300 panels, 30 units x 6 periods, half the units treated from period 3, effect 1; errors:
  // unit effect + AR(1) (rho 0.6) + heteroskedastic noise — serially correlated within unit, so
  // only unit-clustered SEs are valid. Nominal 95 %: count must lie in the 99.9 % binomial band
  // of Binomial(300, 0.95), [273, 297]. A classical SE is also recorded and must under-cover.
  constexpr int reps = 300, u = 30, tt = 6;
  int covered = 0, covered_classical = 0;
  std::vector<double> y(u * tt), d(u * tt);
  std::vector<long long> unit(u * tt), time(u * tt);
  for (int i = 0; i < u; ++i) {
    for (int t = 0; t < tt; ++t) {
      unit[static_cast<std::size_t>(i * tt + t)] = i;
      time[static_cast<std::size_t>(i * tt + t)] = t;
    }
  }
  const auto units = la::make_group_index(std::span<const long long>(unit));
  for (int rep = 0; rep < reps; ++rep) {
    auto g = la::make_stream({.seed = 20261129, .replicate = static_cast<std::uint32_t>(rep)});
    for (int i = 0; i < u; ++i) {
      const double a = la::standard_normal(g);
      double ar = la::standard_normal(g);
      for (int t = 0; t < tt; ++t) {
        ar = 0.6 * ar + 0.8 * la::standard_normal(g);
        const auto k = static_cast<std::size_t>(i * tt + t);
        d[k] = (i < u / 2 && t >= 3) ? 1.0 : 0.0;
        y[k] = a + 0.2 * t + 1.0 * d[k] + ar * (1.0 + 0.5 * (i % 3));
      }
    }
    const auto r = la::did_twfe(y, d, units, time);
    covered += (r.effect.ci_low <= 1.0 && 1.0 <= r.effect.ci_high) ? 1 : 0;
    const auto c = la::did_twfe(y, d, units, time,
                                {.covariance = la::covariance_type::classical,
                                 .distribution = la::reference_distribution::t_residual});
    covered_classical += (c.effect.ci_low <= 1.0 && 1.0 <= c.effect.ci_high) ? 1 : 0;
  }
  INFO("CR1/t(G-1) covered " << covered << " of " << reps << "; classical covered " << covered_classical);
  CHECK(covered >= 273);
  CHECK(covered <= 297);
  CHECK(covered_classical < covered);
}
