// SPDX-License-Identifier: MIT
// Tests for estimators/equivalence.hpp: TOST equivalence and non-inferiority against R's t.test
// one-sided tests (rtol 1e-10) and statsmodels' ttost_ind / ttost_paired / ttest_ind (rtol 1e-8),
// tests/golden/equivalence/; verdicts on clear cases; identities and the naive oracle of
// tests/support/reference_moments.hpp; degenerate and bad inputs; Monte-Carlo size at the margin.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/equivalence.hpp>

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

/// "welch" / "student" / "paired" as a design.
t_test_design design_of(const std::string& s) {
  if (s == "welch") return t_test_design::welch;
  if (s == "student") return t_test_design::student;
  REQUIRE(s == "paired");
  return t_test_design::paired;
}

/// n normal draws with the given mean and sd from stream (seed, item, arm, replicate).
std::vector<double> normals(std::uint64_t seed, std::uint64_t item, std::uint32_t arm, std::size_t n,
                            double mean, double sd, std::uint32_t replicate = 0) {
  auto g = make_stream({.seed = seed, .item = item, .arm = arm, .replicate = replicate});
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

TEST_CASE("TOST reproduces R's one-sided t.test pair at rtol 1e-10", "[estimators][equivalence][golden]") {
  const auto data = read_golden_arms("equivalence/data.csv");
  const auto r = read_golden_table("equivalence/r_tost.csv");
  REQUIRE(r.rows() == 96);
  int equivalent = 0;
  for (std::size_t i = 0; i < r.rows(); ++i) {
    const auto& a = data.at(r.str("dataset", i));
    const double alpha = r.num("alpha", i);
    INFO("row " << i << ": " << r.str("dataset", i) << " " << r.str("design", i) << " (" << r.num("low", i)
                << ", " << r.num("high", i) << ") alpha " << alpha);
    const auto res =
        equivalence_test(a.treated, a.control, {.low = r.num("low", i), .high = r.num("high", i)},
                         {.design = design_of(r.str("design", i)), .alpha = alpha});
    REQUIRE(res.effect.status == estimate_status::ok);
    LATENTAUDIT_CHECK_CLOSE(res.effect.estimate, r.num("estimate", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.effect.std_error, r.num("std_error", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.effect.df, r.num("df", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.statistic_lower, r.num("t_lower", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.p_lower, r.num("p_lower", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.statistic_upper, r.num("t_upper", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.p_upper, r.num("p_upper", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.p_value, r.num("p_value", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.effect.ci_low, r.num("ci_low", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.effect.ci_high, r.num("ci_high", i), 1e-10);
    CHECK(res.effect.level == Approx(1 - 2 * alpha).epsilon(1e-15));
    CHECK(res.equivalent == (r.num("equivalent", i) == 1.0));
    CHECK(res.margin_low == r.num("low", i));
    CHECK(res.margin_high == r.num("high", i));
    CHECK(res.alpha == alpha);
    equivalent += res.equivalent;
  }
  CHECK(equivalent == 40);  // both verdicts occur in the grid
}

TEST_CASE("TOST reproduces statsmodels ttost_ind (unequal, pooled) and ttost_paired at rtol 1e-8",
          "[estimators][equivalence][golden]") {
  const auto data = read_golden_arms("equivalence/data.csv");
  const auto p = read_golden_table("equivalence/python_tost.csv");
  REQUIRE(p.rows() == 96);
  for (std::size_t i = 0; i < p.rows(); ++i) {
    const auto& a = data.at(p.str("dataset", i));
    INFO("row " << i << ": " << p.str("dataset", i) << " " << p.str("design", i) << " (" << p.num("low", i)
                << ", " << p.num("high", i) << ") alpha " << p.num("alpha", i));
    const auto res =
        equivalence_test(a.treated, a.control, {.low = p.num("low", i), .high = p.num("high", i)},
                         {.design = design_of(p.str("design", i)), .alpha = p.num("alpha", i)});
    LATENTAUDIT_CHECK_CLOSE(res.effect.df, p.num("df", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(res.statistic_lower, p.num("t_lower", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(res.p_lower, p.num("p_lower", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(res.statistic_upper, p.num("t_upper", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(res.p_upper, p.num("p_upper", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(res.p_value, p.num("p_value", i), 1e-8);
    const double half = (res.effect.ci_high - res.effect.ci_low) / 2;
    CHECK_ENDPOINT_CLOSE(res.effect.ci_low, p.num("ci_low", i), half, 1e-8);
    CHECK_ENDPOINT_CLOSE(res.effect.ci_high, p.num("ci_high", i), half, 1e-8);
    CHECK(res.equivalent == (p.num("equivalent", i) == 1.0));
  }
}

TEST_CASE("non-inferiority reproduces R (rtol 1e-10) and statsmodels (rtol 1e-8) in both directions",
          "[estimators][equivalence][golden]") {
  const auto data = read_golden_arms("equivalence/data.csv");
  const auto r = read_golden_table("equivalence/r_non_inferiority.csv");
  const auto p = read_golden_table("equivalence/python_non_inferiority.csv");
  REQUIRE(r.rows() == 162);
  REQUIRE(p.rows() == r.rows());
  int non_inferior = 0, lower_better = 0;
  for (std::size_t i = 0; i < r.rows(); ++i) {
    REQUIRE(p.str("dataset", i) == r.str("dataset", i));
    REQUIRE(p.str("better", i) == r.str("better", i));
    const auto& a = data.at(r.str("dataset", i));
    const bool higher = r.str("better", i) == "higher";
    INFO("row " << i << ": " << r.str("dataset", i) << " " << r.str("design", i) << " margin "
                << r.num("margin", i) << " " << r.str("better", i) << " alpha " << r.num("alpha", i));
    const auto res =
        non_inferiority_test(a.treated, a.control, r.num("margin", i),
                             {.design = design_of(r.str("design", i)),
                              .alpha = r.num("alpha", i),
                              .better = higher ? better_direction::higher : better_direction::lower});
    REQUIRE(res.effect.status == estimate_status::ok);
    LATENTAUDIT_CHECK_CLOSE(res.effect.estimate, r.num("estimate", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.effect.std_error, r.num("std_error", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.effect.df, r.num("df", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.statistic, r.num("statistic", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.p_value, r.num("p_value", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.effect.ci_low, r.num("ci_low", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(res.effect.ci_high, r.num("ci_high", i), 1e-10);
    CHECK(res.non_inferior == (r.num("non_inferior", i) == 1.0));
    CHECK(res.bound == (higher ? -1.0 : 1.0) * r.num("margin", i));
    // statsmodels
    LATENTAUDIT_CHECK_CLOSE(res.effect.df, p.num("df", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(res.statistic, p.num("statistic", i), 1e-8);
    LATENTAUDIT_CHECK_CLOSE(res.p_value, p.num("p_value", i), 1e-8);
    const double half = (res.effect.ci_high - res.effect.ci_low) / 2;
    CHECK_ENDPOINT_CLOSE(res.effect.ci_low, p.num("ci_low", i), half, 1e-8);
    CHECK_ENDPOINT_CLOSE(res.effect.ci_high, p.num("ci_high", i), half, 1e-8);
    CHECK(res.non_inferior == (p.num("non_inferior", i) == 1.0));
    non_inferior += res.non_inferior;
    lower_better += !higher;
  }
  CHECK(non_inferior == 81);
  CHECK(lower_better == 81);
}

TEST_CASE("TOST verdicts on clear cases (seed 11)", "[estimators][equivalence][verdict]") {
  // same distribution, n = 400 per arm, margin ±0.5 (SE ≈ 0.07): equivalent in every design
  const auto a = normals(11, 0, 1, 400, 0.0, 1.0), b = normals(11, 0, 0, 400, 0.0, 1.0);
  for (auto d : {t_test_design::welch, t_test_design::student, t_test_design::paired}) {
    INFO(design_name(d));
    const auto r = equivalence_test(a, b, equivalence_bounds::symmetric(0.5), {.design = d});
    CHECK(r.equivalent);
    CHECK(r.p_value < 1e-4);
    CHECK(r.effect.ci_low > -0.5);
    CHECK(r.effect.ci_high < 0.5);
    CHECK(r.effect.level == Approx(0.9));
    // a difference of 2 is far outside the margin: not equivalent, p_upper ≈ 1 - tiny, p_lower ≈ 0
    std::vector<double> shifted(a);
    for (auto& v : shifted) v += 2.0;
    const auto s = equivalence_test(shifted, b, equivalence_bounds::symmetric(0.5), {.design = d});
    CHECK_FALSE(s.equivalent);
    CHECK(s.p_value > 0.999);
    CHECK(s.p_lower < 1e-6);
    CHECK(s.p_value == s.p_upper);
    // an asymmetric region around the shift (1.5, 2.6) makes it equivalent again
    CHECK(equivalence_test(shifted, b, {.low = 1.5, .high = 2.6}, {.design = d}).equivalent);
    // a tiny sample with a wide spread cannot show equivalence even with the same means
    const auto few_a = normals(11, 1, 1, 3, 0.0, 5.0), few_b = normals(11, 1, 0, 3, 0.0, 5.0);
    CHECK_FALSE(equivalence_test(few_a, few_b, equivalence_bounds::symmetric(0.5), {.design = d}).equivalent);
  }
  // symmetric() builds (−m, m)
  const auto s = equivalence_bounds::symmetric(2.8);
  CHECK(s.low == -2.8);
  CHECK(s.high == 2.8);
}

TEST_CASE("TOST and non-inferiority agree with the oracle and with each other (seed 12)",
          "[estimators][equivalence][property]") {
  int agree_ci = 0, total = 0;
  for (std::uint32_t rep = 0; rep < 60; ++rep) {
    const std::size_t n1 = 4 + rep % 13, n0 = rep % 3 == 0 ? n1 : 6 + rep % 7;
    const auto a = normals(12, 0, 1, n1, 0.1 * (rep % 5), 0.5 + 0.1 * (rep % 4), rep);
    const auto b = normals(12, 0, 0, n0, 0.0, 1.0, rep);
    const double low = -0.2 - 0.1 * (rep % 6), high = 0.3 + 0.15 * (rep % 5), alpha = rep % 2 ? 0.05 : 0.1;
    for (auto d : {t_test_design::welch, t_test_design::student, t_test_design::paired}) {
      if (d == t_test_design::paired && n1 != n0) continue;
      INFO("rep " << rep << " " << design_name(d));
      const auto r = equivalence_test(a, b, {.low = low, .high = high}, {.design = d, .alpha = alpha});
      const auto o = d == t_test_design::welch     ? test::ref_welch(a, b, 1 - 2 * alpha)
                     : d == t_test_design::student ? test::ref_student(a, b, 1 - 2 * alpha)
                                                   : test::ref_paired(a, b, 1 - 2 * alpha);
      const auto ot = test::ref_tost(o, low, high);
      LATENTAUDIT_CHECK_CLOSE(r.p_lower, ot.p_lower, 1e-11);
      LATENTAUDIT_CHECK_CLOSE(r.p_upper, ot.p_upper, 1e-11);
      LATENTAUDIT_CHECK_CLOSE(r.effect.ci_low, o.ci_low, 1e-11);
      LATENTAUDIT_CHECK_CLOSE(r.effect.ci_high, o.ci_high, 1e-11);
      CHECK(r.p_value == std::fmax(r.p_lower, r.p_upper));
      // the verdict is the (1 − 2α) interval inside the region
      const bool inside = r.effect.ci_low > low && r.effect.ci_high < high;
      CHECK(r.equivalent == inside);
      agree_ci += r.equivalent == inside;
      ++total;
      // non-inferiority (higher better) with margin m is the lower half of the TOST with low = −m
      const auto ni = non_inferiority_test(a, b, -low, {.design = d, .alpha = alpha});
      CHECK(ni.p_value == r.p_lower);
      CHECK(ni.statistic == r.statistic_lower);
      CHECK(ni.non_inferior == (r.effect.ci_low > low));
      // lower better with margin m is the upper half with high = +m
      const auto nl =
          non_inferiority_test(a, b, high, {.design = d, .alpha = alpha, .better = better_direction::lower});
      CHECK(nl.p_value == r.p_upper);
      CHECK(nl.non_inferior == (r.effect.ci_high < high));
      // swapping the arms and mirroring the region swaps the two one-sided tests
      const auto m = equivalence_test(b, a, {.low = -high, .high = -low}, {.design = d, .alpha = alpha});
      LATENTAUDIT_CHECK_CLOSE(m.p_lower, r.p_upper, 1e-14);
      LATENTAUDIT_CHECK_CLOSE(m.p_upper, r.p_lower, 1e-14);
      CHECK(m.equivalent == r.equivalent);
      // higher-better for (a, b) is lower-better for (b, a)
      const auto sw =
          non_inferiority_test(b, a, -low, {.design = d, .alpha = alpha, .better = better_direction::lower});
      LATENTAUDIT_CHECK_CLOSE(sw.p_value, ni.p_value, 1e-14);
    }
  }
  CHECK(agree_ci == total);
}

TEST_CASE("constant data: numerical_error naming the function by default, flagged on request",
          "[estimators][equivalence][degenerate]") {
  const std::vector<double> a(5, 1.0), b(5, 1.25);
  CHECK_THROWS_AS(equivalence_test(a, b, equivalence_bounds::symmetric(1)), numerical_error);
  CHECK_THROWS_WITH(equivalence_test(a, b, equivalence_bounds::symmetric(1)),
                    Contains("equivalence_test: ") && Contains("essentially constant"));
  CHECK_THROWS_WITH(non_inferiority_test(a, b, 1.0, {.design = t_test_design::paired}),
                    Contains("non_inferiority_test: ") && Contains("essentially constant"));
  const std::vector<double> huge{1e200, -1e200, 3e200};
  CHECK_THROWS_WITH(
      equivalence_test(huge, huge, equivalence_bounds::symmetric(1), {.design = t_test_design::student}),
      Contains("equivalence_test: ") && Contains("overflow"));

  for (auto d : {t_test_design::welch, t_test_design::student, t_test_design::paired}) {
    INFO(design_name(d));
    const auto r = equivalence_test(a, b, equivalence_bounds::symmetric(1),
                                    {.design = d, .if_degenerate = on_degenerate::flag});
    CHECK(r.effect.status == estimate_status::degenerate);
    CHECK(r.effect.estimate == -0.25);
    CHECK(std::isnan(r.p_lower));
    CHECK(std::isnan(r.p_upper));
    CHECK(std::isnan(r.p_value));
    CHECK(std::isnan(r.statistic_lower));
    CHECK_FALSE(r.equivalent);
    CHECK(r.margin_low == -1.0);
    const auto n = non_inferiority_test(a, b, 0.5, {.design = d, .if_degenerate = on_degenerate::flag});
    CHECK(n.effect.status == estimate_status::degenerate);
    CHECK(std::isnan(n.p_value));
    CHECK(std::isnan(n.statistic));
    CHECK_FALSE(n.non_inferior);
    CHECK(n.bound == -0.5);
  }
  const auto f = non_inferiority_test(huge, huge, 1.0, {.if_degenerate = on_degenerate::flag});
  CHECK(f.effect.status == estimate_status::failed);
  CHECK_FALSE(f.non_inferior);
}

TEST_CASE("equivalence: bad inputs throw invalid_argument / shape_mismatch naming function and argument",
          "[estimators][equivalence][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> a{1.0, 2.0, 4.0}, b{0.5, 1.5, 1.0}, one{1.0}, with_nan{1.0, nan};
  const auto m = equivalence_bounds::symmetric(1.0);
  for (double alpha : {0.0, 0.5, 0.7, -0.1, nan, 1e-20}) {
    INFO("alpha " << alpha);
    CHECK_THROWS_AS(equivalence_test(a, b, m, {.alpha = alpha}), invalid_argument);
    CHECK_THROWS_WITH(equivalence_test(a, b, m, {.alpha = alpha}),
                      Contains("equivalence_test: argument 'alpha' must lie in (0, 0.5)"));
    CHECK_THROWS_WITH(non_inferiority_test(a, b, 1.0, {.alpha = alpha}),
                      Contains("non_inferiority_test: argument 'alpha' must lie in (0, 0.5)"));
  }
  CHECK_THROWS_WITH(equivalence_test(a, b, {.low = 1.0, .high = 1.0}),
                    "equivalence_test: argument 'bounds' must satisfy low < high, got low 1 and high 1");
  CHECK_THROWS_WITH(equivalence_test(a, b, {.low = 2.0, .high = -1.0}),
                    Contains("argument 'bounds' must satisfy low < high"));
  CHECK_THROWS_AS(equivalence_test(a, b, equivalence_bounds::symmetric(0.0)), invalid_argument);
  CHECK_THROWS_AS(equivalence_test(a, b, equivalence_bounds::symmetric(-0.5)), invalid_argument);
  CHECK_THROWS_WITH(equivalence_test(a, b, {.low = -inf, .high = 1.0}),
                    "equivalence_test: argument 'bounds.low' must be finite, got -inf");
  CHECK_THROWS_WITH(equivalence_test(a, b, {.low = -1.0, .high = nan}),
                    "equivalence_test: argument 'bounds.high' must be finite, got nan");
  CHECK_THROWS_WITH(equivalence_test(a, b, equivalence_bounds{}), Contains("'bounds.low' must be finite"));
  for (double margin : {0.0, -1.0, inf, nan}) {
    INFO("margin " << margin);
    CHECK_THROWS_WITH(non_inferiority_test(a, b, margin),
                      Contains("non_inferiority_test: argument 'margin' must be positive"));
  }
  CHECK_THROWS_WITH(equivalence_test(one, b, m),
                    "equivalence_test: argument 'treated' has 1 observation, expected at least 2");
  CHECK_THROWS_WITH(non_inferiority_test(a, one, 1.0),
                    "non_inferiority_test: argument 'control' has 1 observation, expected at least 2");
  CHECK_THROWS_WITH(equivalence_test(a, with_nan, m),
                    "equivalence_test: argument 'control' must hold finite values, got nan at index 1");
  CHECK_THROWS_WITH(non_inferiority_test(with_nan, a, 1.0, {.design = t_test_design::student}),
                    Contains("non_inferiority_test: argument 'treated' must hold finite values"));
  // unequal sizes are fine unpaired, a shape_mismatch paired
  CHECK_NOTHROW(equivalence_test(a, std::vector<double>{0.0, 1.0, 2.0, 3.0}, m));
  CHECK_THROWS_AS(equivalence_test(a, std::vector<double>{0.0, 1.0}, m, {.design = t_test_design::paired}),
                  shape_mismatch);
  CHECK_THROWS_WITH(
      non_inferiority_test(a, std::vector<double>{0.0, 1.0}, 1.0, {.design = t_test_design::paired}),
      "non_inferiority_test: arguments 'treated' and 'control' must have the same size, got 3 and 2");
  // out-of-range enumerators
  CHECK_THROWS_WITH(equivalence_test(a, b, m, {.design = static_cast<t_test_design>(7)}),
                    "equivalence_test: argument 'design' must be welch, student or paired");
  CHECK_THROWS_WITH(non_inferiority_test(a, b, 1.0, {.better = static_cast<better_direction>(5)}),
                    "non_inferiority_test: argument 'better' must be higher or lower");
  CHECK(design_name(t_test_design::student) == "student");
  static_assert(design_name(t_test_design::paired) == "paired");  // the example of design_name's doc
}

TEST_CASE("TOST rejects at rate alpha at the margin boundary (seed 2026, 4000 replicates per design)",
          "[estimators][equivalence][montecarlo]") {
  // True difference exactly on a bound, the other bound far away (SE ≈ 0.1–0.25 against a region
  // of width 2): the TOST size is then α = 0.05 up to the far test's (negligible) failures.
  // 99.9% binomial band for 4000 replicates: ±3.29·√(.05·.95/4000) = ±0.0113. A TOST that used the
  // (1 − α) interval (size α/2 = 0.025) or one-sided tests at 2α (size 0.10) falls outside.
  constexpr int reps = 4000;
  constexpr double alpha = 0.05, band = 3.2905 * 0.0034460;  // sqrt(.05 * .95 / 4000)
  struct scenario {
    t_test_design design;
    std::size_t n1, n0;
    double sd1, sd0, delta;
  };
  const scenario scenarios[] = {
      {t_test_design::welch, 20, 40, 1.2, 0.4, 1.0},    // unequal n and variances, δ on the upper bound
      {t_test_design::student, 30, 30, 0.8, 0.8, 1.0},  // equal variances, pooled
      {t_test_design::paired, 25, 25, 0.7, 0.7, -1.0},  // δ on the lower bound, correlated pairs
  };
  std::uint64_t item = 0;
  for (const auto& s : scenarios) {
    int rejected = 0, rejected_2alpha = 0, ni_rejected = 0;
    for (int r = 0; r < reps; ++r) {
      const auto rep = static_cast<std::uint32_t>(r);
      std::vector<double> a = normals(2026, item, 1, s.n1, s.delta, s.sd1, rep);
      std::vector<double> b = normals(2026, item, 0, s.n0, 0.0, s.sd0, rep);
      if (s.design == t_test_design::paired) {  // shared pair effect u: differences have sd 0.7·√2
        const auto u = normals(2026, item, 2, s.n1, 0.0, 2.0, rep);
        for (std::size_t i = 0; i < s.n1; ++i) a[i] += u[i], b[i] += u[i];
      }
      const auto res =
          equivalence_test(a, b, equivalence_bounds::symmetric(1.0), {.design = s.design, .alpha = alpha});
      rejected += res.equivalent;
      rejected_2alpha += res.p_value < 2 * alpha;
      // non-inferiority exactly at its null boundary: δ = −m (higher better) or +m (lower better)
      const auto ni =
          non_inferiority_test(a, b, 1.0,
                               {.design = s.design,
                                .alpha = alpha,
                                .better = s.delta < 0 ? better_direction::higher : better_direction::lower});
      ni_rejected += ni.non_inferior;
    }
    ++item;
    const double rate = rejected / double(reps), rate2 = rejected_2alpha / double(reps);
    const double ni_rate = ni_rejected / double(reps);
    INFO("seed 2026 " << design_name(s.design) << ": TOST size " << rate << ", non-inferiority size "
                      << ni_rate << ", size at 2 alpha " << rate2 << ", band ±" << band);
    CHECK(rate <= alpha + band);  // the guarantee: size ≤ α (+ Monte-Carlo error)
    CHECK(rate >= alpha - band);  // and not a vacuous test that never declares equivalence
    CHECK(std::fabs(ni_rate - alpha) <= band);
    CHECK(rate2 > alpha + band);  // sensitivity: one-sided tests at 2α would be caught
  }
}
