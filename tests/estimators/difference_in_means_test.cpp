// SPDX-License-Identifier: MIT
// Tests for estimators/difference_in_means.hpp: golden values from R's t.test (Welch, var.equal,
// paired) and from statsmodels / scipy (tests/golden/t_tests/), properties against the naive oracle
// of tests/support/reference_moments.hpp (shift invariance, arm swap, scale equivariance), degenerate
// and bad inputs, and a Monte-Carlo coverage check of the Welch interval.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/difference_in_means.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/golden.hpp"
#include "support/reference_moments.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;
using latentaudit::test::read_golden_table;

namespace {

using arms = latentaudit::test::golden_arms;
using latentaudit::test::read_golden_arms;

/// Runs the named test ("welch", "student", "paired") of the library.
effect_estimate run_test(const std::string& test, const arms& a, const t_test_options& o) {
  if (test == "welch") return welch_t_test(a.treated, a.control, o);
  if (test == "student") return student_t_test(a.treated, a.control, o);
  return paired_t_test(a.treated, a.control, o);
}

/// n normal draws with the given mean and sd from stream (seed, arm).
std::vector<double> normals(std::uint64_t seed, std::uint32_t arm, std::size_t n, double mean, double sd,
                            std::uint32_t replicate = 0) {
  auto g = make_stream({.seed = seed, .item = 0, .arm = arm, .replicate = replicate});
  std::vector<double> x(n);
  for (auto& v : x) v = mean + sd * standard_normal(g);
  return x;
}

}  // namespace

/// CHECK an interval endpoint against a peer whose t quantile has relative error `rtol`: the error
/// is rtol times the half-width, which exceeds rtol times the endpoint when the endpoint is near 0.
#define CHECK_ENDPOINT_CLOSE(a, b, half_width, rtol)                                                 \
  do {                                                                                               \
    const double ep_a_ = (a), ep_b_ = (b);                                                           \
    INFO(#a " = " << std::setprecision(17) << ep_a_ << ", " #b " = " << ep_b_ << ", rtol " << (rtol) \
                  << " of max(|endpoint|, half-width " << (half_width) << ")");                      \
    CHECK(::latentaudit::test::close(ep_a_, ep_b_, (rtol), (rtol) * (half_width)));                  \
  } while (false)

TEST_CASE("t tests reproduce R's t.test (Welch, var.equal = TRUE, paired = TRUE) at rtol 1e-10",
          "[estimators][difference_in_means][golden]") {
  const auto data = read_golden_arms("t_tests/data.csv");
  const auto r = read_golden_table("t_tests/r_results.csv");
  REQUIRE(r.rows() == 207);
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < r.rows(); ++i) {
    const std::string name = r.str("dataset", i), test = r.str("test", i);
    INFO("row " << i << ": " << name << " " << test << " level " << r.num("level", i) << " mu "
                << r.num("mu", i));
    const t_test_options o{.level = r.num("level", i), .null_value = r.num("mu", i)};
    const auto e = run_test(test, data.at(name), o);
    REQUIRE(e.status == estimate_status::ok);
    LATENTAUDIT_CHECK_CLOSE(e.estimate, r.num("estimate", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(e.std_error, r.num("std_error", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(e.df, r.num("df", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(e.statistic, r.num("statistic", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(e.p_value, r.num("p_value", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(e.ci_low, r.num("ci_low", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(e.ci_high, r.num("ci_high", i), 1e-10);
    CHECK(e.level == o.level);
    if (test == "paired") {
      CHECK(e.n_pairs == data.at(name).treated.size());
      CHECK(e.method == "paired_t");
    } else {
      CHECK(e.n_treated == data.at(name).treated.size());
      CHECK(e.n_control == data.at(name).control.size());
      CHECK(e.method == test);
    }
    ++seen[test];
  }
  // every design was exercised (paired only on the equal-size datasets)
  CHECK(seen["welch"] == 81);
  CHECK(seen["student"] == 81);
  CHECK(seen["paired"] == 45);
}

TEST_CASE("t tests reproduce statsmodels CompareMeans and scipy ttest_rel at rtol 1e-8",
          "[estimators][difference_in_means][golden]") {
  // welch: CompareMeans.ttest_ind(usevar='unequal') + tconfint_diff; student: usevar='pooled';
  // paired: scipy ttest_rel (+ confidence_interval) / DescrStatsW.ttest_mean. The CIs use scipy's
  // t.ppf (about 2e-9 accurate), hence 1e-8 relative to max(|endpoint|, half-width); numpy's means
  // are naive sums (offset data), hence the same tolerance for the other fields.
  const auto data = read_golden_arms("t_tests/data.csv");
  const auto p = read_golden_table("t_tests/python_results.csv");
  REQUIRE(p.rows() == 207);
  for (std::size_t i = 0; i < p.rows(); ++i) {
    const std::string name = p.str("dataset", i), test = p.str("test", i);
    INFO("row " << i << ": " << name << " " << test << " level " << p.num("level", i) << " mu "
                << p.num("mu", i));
    const auto e = run_test(test, data.at(name), {.level = p.num("level", i), .null_value = p.num("mu", i)});
    LATENTAUDIT_CHECK_CLOSE(e.estimate, p.num("estimate", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(e.std_error, p.num("std_error", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(e.df, p.num("df", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(e.statistic, p.num("statistic", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(e.p_value, p.num("p_value", i), 1e-8);
    const double half = (e.ci_high - e.ci_low) / 2;
    CHECK_ENDPOINT_CLOSE(e.ci_low, p.num("ci_low", i), half, 1e-8);
    CHECK_ENDPOINT_CLOSE(e.ci_high, p.num("ci_high", i), half, 1e-8);
  }
}

TEST_CASE("t tests agree with the naive long-double oracle (seed 101)",
          "[estimators][difference_in_means][property]") {
  struct shape {
    std::size_t n1, n0;
    double sd1, sd0, shift;
  };
  const std::vector<shape> shapes{{2, 2, 1, 1, 0.5},
                                  {3, 17, 2, 0.3, -1},
                                  {40, 40, 1, 1, 0.1},
                                  {250, 90, 0.5, 4, 2},
                                  {9, 9, 1e-3, 2e-3, 1e-3}};
  std::uint32_t rep = 0;
  for (const auto& s : shapes) {
    const auto a = normals(101, 1, s.n1, s.shift, s.sd1, rep), b = normals(101, 0, s.n0, 0.0, s.sd0, rep);
    ++rep;
    for (double level : {0.8, 0.95, 0.999}) {
      INFO("n1 " << s.n1 << " n0 " << s.n0 << " level " << level);
      const t_test_options o{.level = level, .null_value = 0.25 * s.shift};
      auto compare = [&](const effect_estimate& e, const test::ref_t_result& r) {
        LATENTAUDIT_CHECK_CLOSE(e.estimate, r.estimate, 1e-12);
        LATENTAUDIT_CHECK_CLOSE(e.std_error, r.std_error, 1e-12);
        LATENTAUDIT_CHECK_CLOSE(e.df, r.df, 1e-12);
        LATENTAUDIT_CHECK_CLOSE(e.statistic, r.statistic, 1e-11);
        LATENTAUDIT_CHECK_CLOSE(e.p_value, r.p_value, 1e-11);
        LATENTAUDIT_CHECK_CLOSE(e.ci_low, r.ci_low, 1e-11);
        LATENTAUDIT_CHECK_CLOSE(e.ci_high, r.ci_high, 1e-11);
      };
      compare(welch_t_test(a, b, o), test::ref_welch(a, b, level, o.null_value));
      compare(student_t_test(a, b, o), test::ref_student(a, b, level, o.null_value));
      if (s.n1 == s.n0) compare(paired_t_test(a, b, o), test::ref_paired(a, b, level, o.null_value));
    }
  }
}

TEST_CASE("adding a constant to both arms leaves estimate, SE, df and CI width unchanged (seed 202)",
          "[estimators][difference_in_means][property]") {
  const auto a = normals(202, 1, 23, 0.7, 1.0), b = normals(202, 0, 23, 0.0, 2.0);
  for (double c : {1e3, -1e3, 1e6, 1e9}) {
    // each shifted value is rounded to ulp(c)/2 ~ 1.1e-16 c, so the means move by that much
    // relative to the estimate (~0.7) and SE (~0.5): a tolerance of 2e-15 c / 0.5 is generous.
    const double rtol = std::fmax(4e-15 * std::fabs(c), 1e-13);
    INFO("shift " << c << ", rtol " << rtol);
    std::vector<double> as(a), bs(b);
    for (auto& v : as) v += c;
    for (auto& v : bs) v += c;
    using fn_t = effect_estimate (*)(std::span<const double>, std::span<const double>, const t_test_options&);
    for (fn_t f : {fn_t{welch_t_test}, fn_t{student_t_test}, fn_t{paired_t_test}}) {
      const auto e0 = f(a, b, {}), e1 = f(as, bs, {});
      INFO(e0.method);
      LATENTAUDIT_CHECK_CLOSE(e1.estimate, e0.estimate, rtol);
      LATENTAUDIT_CHECK_CLOSE(e1.std_error, e0.std_error, rtol);
      LATENTAUDIT_CHECK_CLOSE(e1.df, e0.df, 10 * rtol);
      LATENTAUDIT_CHECK_CLOSE(e1.ci_high - e1.ci_low, e0.ci_high - e0.ci_low, 10 * rtol);
      LATENTAUDIT_CHECK_CLOSE(e1.p_value, e0.p_value, 100 * rtol);
    }
  }
}

TEST_CASE("swapping the arms negates estimate, statistic and CI exactly (seed 303)",
          "[estimators][difference_in_means][property]") {
  const auto a = normals(303, 1, 14, 0.4, 1.0), b = normals(303, 0, 14, 0.0, 3.0);
  using fn_t = effect_estimate (*)(std::span<const double>, std::span<const double>, const t_test_options&);
  for (fn_t f : {fn_t{welch_t_test}, fn_t{student_t_test}, fn_t{paired_t_test}}) {
    const auto e = f(a, b, {.level = 0.9, .null_value = 0.3});
    const auto s = f(b, a, {.level = 0.9, .null_value = -0.3});
    INFO(e.method);
    CHECK(s.estimate == -e.estimate);
    CHECK(s.std_error == e.std_error);
    CHECK(s.df == e.df);
    CHECK(s.statistic == -e.statistic);
    CHECK(s.p_value == e.p_value);
    CHECK(s.ci_low == -e.ci_high);
    CHECK(s.ci_high == -e.ci_low);
  }
  // unequal arms for the two unpaired tests
  const auto c = normals(303, 2, 5, 1.0, 0.2);
  for (fn_t f : {fn_t{welch_t_test}, fn_t{student_t_test}}) {
    const auto e = f(a, c, {}), s = f(c, a, {});
    CHECK(s.estimate == -e.estimate);
    CHECK(s.std_error == e.std_error);
    CHECK(s.df == e.df);
    CHECK(s.ci_low == -e.ci_high);
  }
}

TEST_CASE("multiplying both arms by c scales estimate, SE and CI by c (seed 404)",
          "[estimators][difference_in_means][property]") {
  const auto a = normals(404, 1, 11, 0.5, 1.0), b = normals(404, 0, 19, 0.0, 0.4);
  const auto b11 = normals(404, 2, 11, 0.0, 0.4);
  using fn_t = effect_estimate (*)(std::span<const double>, std::span<const double>, const t_test_options&);
  // powers of two are exact; other factors within a few ulps; 1e±90 would overflow or underflow
  // the squares of the variances in a naive Welch df (the library uses variance shares).
  for (double c : {8.0, 0.125, -2.0, 3.7, -0.013, 1e90, 1e-90, 0x1p-300, 1e140}) {
    const bool exact = c == 8.0 || c == 0.125 || c == -2.0 || c == 0x1p-300;
    const double rtol = exact ? 0.0 : 1e-13;
    INFO("scale " << c);
    std::vector<double> as(a), bs(b), b11s(b11);
    for (auto& v : as) v *= c;
    for (auto& v : bs) v *= c;
    for (auto& v : b11s) v *= c;
    for (fn_t f : {fn_t{welch_t_test}, fn_t{student_t_test}, fn_t{paired_t_test}}) {
      const bool paired = f == fn_t{paired_t_test};
      const auto& b0 = paired ? b11 : b;
      const auto& b1 = paired ? b11s : bs;
      const auto e0 = f(a, b0, {}), e1 = f(as, b1, {});
      INFO(e0.method);
      REQUIRE(e1.status == estimate_status::ok);
      LATENTAUDIT_CHECK_CLOSE(e1.estimate, c * e0.estimate, rtol);
      LATENTAUDIT_CHECK_CLOSE(e1.std_error, std::fabs(c) * e0.std_error, rtol);
      LATENTAUDIT_CHECK_CLOSE(e1.df, e0.df, 10 * rtol);
      LATENTAUDIT_CHECK_CLOSE(e1.statistic, (c > 0 ? 1 : -1) * e0.statistic, 10 * rtol);
      LATENTAUDIT_CHECK_CLOSE(e1.p_value, e0.p_value, 100 * rtol);
      LATENTAUDIT_CHECK_CLOSE(c > 0 ? e1.ci_low : e1.ci_high, c * e0.ci_low, 10 * rtol);
    }
  }
}

TEST_CASE("constant data are degenerate: numerical_error by default, flagged on request",
          "[estimators][difference_in_means][degenerate]") {
  const std::vector<double> a(6, 3.25), b(4, 1.0), big_a(5, 1e6), big_b(5, 1e6 + 0.5);
  CHECK_THROWS_AS(welch_t_test(a, b), numerical_error);
  CHECK_THROWS_WITH(welch_t_test(a, b), Contains("welch_t_test: ") && Contains("essentially constant"));
  CHECK_THROWS_WITH(student_t_test(a, b), Contains("student_t_test: ") && Contains("essentially constant"));
  CHECK_THROWS_AS(welch_t_test(big_a, big_b), numerical_error);
  // constant within-pair differences (both arms vary, the differences do not)
  const std::vector<double> t{1.0, 2.5, -4.0, 7.0}, c{0.5, 2.0, -4.5, 6.5};
  CHECK_THROWS_WITH(paired_t_test(t, c), Contains("paired_t_test: ") && Contains("essentially constant"));
  // identical arms in a paired design: the differences are all zero
  CHECK_THROWS_AS(paired_t_test(t, t), numerical_error);

  const t_test_options flag{.if_degenerate = on_degenerate::flag};
  for (const auto& e : {welch_t_test(a, b, flag), student_t_test(a, b, flag)}) {
    CHECK(e.status == estimate_status::degenerate);
    CHECK(e.estimate == 2.25);  // the difference itself is well defined
    CHECK(std::isnan(e.std_error));
    CHECK(std::isnan(e.statistic));
    CHECK(std::isnan(e.p_value));
    CHECK(std::isnan(e.ci_low));
    CHECK(std::isnan(e.ci_high));
    CHECK(e.n_treated == 6);
  }
  const auto p = paired_t_test(t, c, flag);
  CHECK(p.status == estimate_status::degenerate);
  CHECK(p.estimate == 0.5);
  CHECK(std::isnan(p.p_value));
  CHECK(status_name(p.status) == "degenerate");

  // one constant arm is not degenerate: Welch's SE and df come from the other arm (df = n0 - 1)
  const std::vector<double> varying{0.0, 1.0, 3.0, 2.0};
  const auto w = welch_t_test(a, varying);
  CHECK(w.status == estimate_status::ok);
  CHECK(w.df == Approx(3.0).epsilon(1e-15));
}

TEST_CASE("data too large for the variance to be represented are a numerical failure",
          "[estimators][difference_in_means][degenerate]") {
  const std::vector<double> a{1e200, -2e200, 3e200}, b{0.0, 1.0, 2.0};
  CHECK_THROWS_AS(welch_t_test(a, b), numerical_error);
  CHECK_THROWS_WITH(welch_t_test(a, b), Contains("welch_t_test: ") && Contains("overflow"));
  CHECK_THROWS_AS(paired_t_test(a, b), numerical_error);
  const std::vector<double> huge{1.7e308, -1.7e308};
  CHECK_THROWS_AS(paired_t_test(huge, std::vector<double>{-1.7e308, 1.7e308}), numerical_error);
  const auto e = student_t_test(a, b, {.if_degenerate = on_degenerate::flag});
  CHECK(e.status == estimate_status::failed);
  CHECK(std::isnan(e.std_error));
  CHECK(std::isnan(e.p_value));
}

TEST_CASE(
    "difference in means: bad inputs throw invalid_argument / shape_mismatch naming function and argument",
    "[estimators][difference_in_means][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> ok{1.0, 2.0, 4.0}, ok2{0.5, 1.5, 1.0}, one{1.0}, empty{};
  const std::vector<double> with_nan{1.0, nan, 2.0}, with_inf{1.0, 2.0, -inf};
  CHECK_THROWS_WITH(welch_t_test(with_nan, ok),
                    "welch_t_test: argument 'treated' must hold finite values, got nan at index 1");
  CHECK_THROWS_WITH(student_t_test(ok, with_inf),
                    "student_t_test: argument 'control' must hold finite values, got -inf at index 2");
  CHECK_THROWS_WITH(paired_t_test(ok, with_nan),
                    "paired_t_test: argument 'control' must hold finite values, got nan at index 1");
  CHECK_THROWS_AS(paired_t_test(with_inf, ok), invalid_argument);
  CHECK_THROWS_WITH(welch_t_test(one, ok),
                    "welch_t_test: argument 'treated' has 1 observation, expected at least 2");
  CHECK_THROWS_WITH(student_t_test(ok, empty),
                    "student_t_test: argument 'control' has 0 observations, expected at least 2");
  CHECK_THROWS_WITH(paired_t_test(one, one),
                    "paired_t_test: argument 'treated' has 1 observation, expected at least 2");
  CHECK_THROWS_AS(paired_t_test(ok, std::vector<double>{1.0, 2.0}), shape_mismatch);
  CHECK_THROWS_WITH(paired_t_test(ok, std::vector<double>{1.0, 2.0}),
                    "paired_t_test: arguments 'treated' and 'control' must have the same size, got 3 and 2");
  for (double level : {0.0, 1.0, -0.5, 1.5, nan}) {
    INFO("level " << level);
    CHECK_THROWS_AS(welch_t_test(ok, ok2, {.level = level}), invalid_argument);
    CHECK_THROWS_WITH(student_t_test(ok, ok2, {.level = level}),
                      Contains("student_t_test: argument 'level' must lie in (0, 1)"));
    CHECK_THROWS_WITH(paired_t_test(ok, ok2, {.level = level}), Contains("paired_t_test: argument 'level'"));
  }
  CHECK_THROWS_WITH(welch_t_test(ok, ok2, {.null_value = inf}),
                    "welch_t_test: argument 'null_value' must be finite, got inf");
  CHECK_THROWS_WITH(paired_t_test(ok, ok2, {.null_value = nan}),
                    "paired_t_test: argument 'null_value' must be finite, got nan");
  // every error is a latentaudit::error
  CHECK_THROWS_AS(welch_t_test(empty, empty), latentaudit::error);
}

TEST_CASE("the 95% Welch interval covers at its nominal rate (seed 7, 2000 replicates)",
          "[estimators][difference_in_means][montecarlo]") {
  // n1 = 5 with sd 3 against n0 = 20 with sd 1: Welch df ≈ 4.2, far from n1 + n0 − 2 = 23.
  // Coverage of 2000 replicates: 99.9% binomial band around 0.95 is ±3.29·√(.95·.05/2000) = ±0.016.
  // The same draws with the pooled df (23) in Welch's SE cover ≈ 0.89, outside the band: the test
  // can tell a wrong df.
  constexpr int reps = 2000;
  constexpr double delta = 0.7, band = 3.2905 * 0.0048734;  // sqrt(.95 * .05 / 2000)
  int covered = 0, covered_wrong_df = 0, covered_pooled = 0;
  for (int r = 0; r < reps; ++r) {
    const auto a = normals(7, 1, 5, delta, 3.0, static_cast<std::uint32_t>(r));
    const auto b = normals(7, 0, 20, 0.0, 1.0, static_cast<std::uint32_t>(r));
    const auto e = welch_t_test(a, b);
    covered += (e.ci_low < delta && delta < e.ci_high);
    const double q = detail::t_quantile_upper(0.025, 23.0);
    covered_wrong_df += (e.estimate - q * e.std_error < delta && delta < e.estimate + q * e.std_error);
    const auto s = student_t_test(a, b);
    covered_pooled += (s.ci_low < delta && delta < s.ci_high);
  }
  const double cov = covered / double(reps), wrong = covered_wrong_df / double(reps);
  const double pooled = covered_pooled / double(reps);
  INFO("seed 7: Welch coverage " << cov << ", with df = 23 " << wrong << ", pooled t " << pooled << ", band ±"
                                 << band);
  CHECK(std::fabs(cov - 0.95) < band);
  CHECK(std::fabs(wrong - 0.95) > band);   // sensitivity: a wrong df is detected
  CHECK(std::fabs(pooled - 0.95) > band);  // and the pooled test is wrong here (the reason for Welch)
}
