// SPDX-License-Identifier: MIT
// Tests of estimators/sensitivity.hpp: E-values vs hand formulas in R and the published example of
// VanderWeele & Ding (2017); Rosenbaum bounds vs an independent R implementation of rbounds::psens
// (normal) and full enumeration (exact), wilcox.test at Γ = 1, the critical Γ; bad input.
#include <latentaudit/estimators/sensitivity.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/common.hpp"
#include "support/golden.hpp"

using namespace latentaudit;
using latentaudit::test::read_golden_table;

namespace {

using latentaudit::test::message_of;

}  // namespace

TEST_CASE("E-values reproduce the R hand formulas (EValue conventions)", "[estimators][sensitivity]") {
  const auto g = read_golden_table("sensitivity/evalue.csv");
  REQUIRE(g.rows() == 12);
  for (std::size_t i = 0; i < g.rows(); ++i) {
    const std::string kind = g.str("kind", i);
    INFO("case " << g.str("case", i));
    const double est = g.num("est", i), lo = g.num("lo", i), hi = g.num("hi", i), tr = g.num("true", i);
    evalue_result r;
    if (kind == "rr") {
      r = evalue_risk_ratio(est, lo, hi, {.true_value = tr});
    } else if (kind == "or") {
      r = evalue_odds_ratio(est, lo, hi, g.num("rare", i) == 1.0, {.true_value = tr});
    } else {
      r = evalue_smd(est, lo, {.true_value = tr});  // lo holds the SE for SMD rows
    }
    LATENTAUDIT_CHECK_CLOSE(r.point, g.num("point", i), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(r.ci, g.num("ci", i), 1e-12);
  }
}

TEST_CASE("E-value: published example of VanderWeele & Ding (2017)", "[estimators][sensitivity]") {
  // Breastfeeding and infant respiratory death: RR 3.9 (95% CI 1.8 to 8.7); the paper reports an
  // E-value of 7.2 for the estimate (7.26 before rounding) and 3.0 for the lower limit.
  const auto r = evalue_risk_ratio(3.9, 1.8, 8.7);
  CHECK(r.point == Approx(7.26).margin(0.005));
  CHECK(r.ci == Approx(3.0).margin(1e-12));  // 1.8 + √(1.8·0.8) = 1.8 + 1.2 exactly
  // Symmetry: RR and 1/RR have the same E-value; an estimate at the null has E = 1.
  CHECK(evalue_risk_ratio(1.0 / 3.9).point == Approx(r.point).epsilon(1e-14));
  CHECK(evalue_risk_ratio(1.0, 0.8, 1.2).point == 1.0);
  CHECK(evalue_risk_ratio(1.0, 0.8, 1.2).ci == 1.0);
  CHECK(std::isnan(evalue_risk_ratio(2.0).ci));
}

TEST_CASE("Rosenbaum bounds reproduce the R reference (normal and exact)", "[estimators][sensitivity]") {
  const auto pairs = read_golden_table("sensitivity/pairs.csv");
  const auto small = read_golden_table("sensitivity/small_pairs.csv");
  const auto g = read_golden_table("sensitivity/rosenbaum.csv");
  std::size_t checked = 0;
  for (std::size_t i = 0; i < g.rows(); ++i) {
    const std::string data = g.str("data", i), method = g.str("method", i);
    const auto& src = data == "pairs" ? pairs : small;
    const auto tr = src.col("treated"), ct = src.col("control");
    const double gamma = g.num("gamma", i);
    INFO(data << " " << method << " gamma " << gamma);
    const bool exact = method == "exact" || method == "wilcox.test_exact";
    const auto b = rosenbaum_signed_rank(tr, ct, gamma, {.exact = exact});
    CHECK(b.exact == exact);
    if (method.rfind("wilcox.test", 0) == 0) {
      // Peer at Γ = 1: R's wilcox.test one-sided p-value (V statistic = T⁺).
      LATENTAUDIT_CHECK_CLOSE(b.statistic, g.num("T", i), 0.0);
      LATENTAUDIT_CHECK_CLOSE(b.p_upper, g.num("p_up", i), 1e-12);
      LATENTAUDIT_CHECK_CLOSE(b.p_lower, g.num("p_up", i), 1e-12);
      ++checked;
      continue;
    }
    LATENTAUDIT_CHECK_CLOSE(b.statistic, g.num("T", i), 1e-15);
    LATENTAUDIT_CHECK_CLOSE(b.p_upper, g.num("p_up", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(b.p_lower, g.num("p_lo", i), 1e-10);
    if (!exact) {
      LATENTAUDIT_CHECK_CLOSE(b.expectation_upper, g.num("E_up", i), 1e-14);
      LATENTAUDIT_CHECK_CLOSE(b.expectation_lower, g.num("E_lo", i), 1e-14);
      LATENTAUDIT_CHECK_CLOSE(b.variance, g.num("V", i), 1e-14);
    }
    ++checked;
  }
  CHECK(checked == g.rows());
  // Zero differences are dropped and counted.
  const auto b = rosenbaum_signed_rank(pairs.col("treated"), pairs.col("control"), 2.0);
  CHECK(b.n_zero == 2);
  CHECK(b.n_pairs == 38);
  // Bounds bracket the Γ = 1 p-value and move monotonically with Γ.
  const auto b1 = rosenbaum_signed_rank(pairs.col("treated"), pairs.col("control"), 1.0);
  CHECK(b.p_lower < b1.p_upper);
  CHECK(b.p_upper > b1.p_upper);
}

TEST_CASE("critical gamma reproduces R uniroot and solves p_upper = alpha", "[estimators][sensitivity]") {
  const auto pairs = read_golden_table("sensitivity/pairs.csv");
  const auto small = read_golden_table("sensitivity/small_pairs.csv");
  const auto g = read_golden_table("sensitivity/critical.csv");
  for (std::size_t i = 0; i < g.rows(); ++i) {
    const auto& src = g.str("data", i) == "pairs" ? pairs : small;
    const auto tr = src.col("treated"), ct = src.col("control");
    const bool exact = g.str("method", i) == "exact";
    const double alpha = g.num("alpha", i);
    INFO(g.str("data", i) << " " << g.str("method", i) << " alpha " << alpha);
    const auto c = rosenbaum_critical_gamma(tr, ct, alpha, {.exact = exact});
    CHECK(c.significant_at_one);
    LATENTAUDIT_CHECK_CLOSE(c.gamma, g.num("gamma", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(rosenbaum_signed_rank(tr, ct, c.gamma, {.exact = exact}).p_upper, alpha, 1e-12);
  }
  // Not significant at Γ = 1: Γ* = 1 and the flag is false.
  const std::vector<double> a{1, 2, 3, 4, 5, 6}, b{1.5, 1, 3.5, 3, 5.5, 6.5};
  const auto c = rosenbaum_critical_gamma(a, b);
  CHECK_FALSE(c.significant_at_one);
  CHECK(c.gamma == 1.0);
  CHECK(c.p_at_one > 0.05);
}

TEST_CASE("Rosenbaum exact: the DP handles half ranks (brute-force check)", "[estimators][sensitivity]") {
  // Ties give half-integer average ranks; the exact tail must still be a probability and agree
  // with brute-force enumeration (2^8 patterns) computed here.
  const std::vector<double> tr{3, 1, 4, 1.5, 5, 9, 2.5, 6}, ct{1, 2, 2, 1, 3, 4, 0, 5};
  // d = 2, −1, 2, 0.5, 2, 5, 2.5, 1 → ties at |d| = 1 (ranks 2.5) and 2 (ranks 5).
  const double gamma = 2.0, p = gamma / (1 + gamma);
  const auto b = rosenbaum_signed_rank(tr, ct, gamma, {.exact = true});
  // Brute force with the same average ranks.
  const std::vector<double> q{5, 2.5, 5, 1, 5, 8, 7, 2.5};
  double tail = 0;
  for (int mask = 0; mask < 256; ++mask) {
    double t = 0, pr = 1;
    for (int i = 0; i < 8; ++i) {
      const bool on = (mask >> i) & 1;
      t += on ? q[static_cast<std::size_t>(i)] : 0.0;
      pr *= on ? p : 1 - p;
    }
    if (t >= b.statistic - 1e-9) tail += pr;
  }
  CHECK(b.statistic == 33.5);  // Σ q = 36 minus the 2.5 of the negative difference
  LATENTAUDIT_CHECK_CLOSE(b.p_upper, tail, 1e-13);
}

TEST_CASE("Rosenbaum exact approaches the normal approximation for 300 pairs", "[estimators][sensitivity]") {
  // Deterministic differences d_i = (i mod 7) - 2.2 + i/1000 (distinct, mixed signs): with 300
  // pairs the exact and normal upper bounds agree to a few thousandths (no continuity correction).
  std::vector<double> a(300), b(300, 0.0);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<double>(i % 7) - 2.2 + static_cast<double>(i) / 1000.0;
  for (double g : {1.0, 1.3, 2.0}) {
    INFO("gamma " << g);
    const auto e = rosenbaum_signed_rank(a, b, g, {.exact = true});
    const auto n = rosenbaum_signed_rank(a, b, g);
    CHECK(std::fabs(e.p_upper - n.p_upper) < 5e-3);
    CHECK(std::fabs(e.p_lower - n.p_lower) < 5e-3);
  }
  const auto ce = rosenbaum_critical_gamma(a, b, 0.05, {.exact = true});
  const auto cn = rosenbaum_critical_gamma(a, b, 0.05);
  CHECK(ce.gamma == Approx(cn.gamma).epsilon(0.02));
}

TEST_CASE("sensitivity: bad input throws with function and argument named", "[estimators][sensitivity]") {
  const std::vector<double> a{1, 2, 3, 4}, b{0, 1, 1, 2};
  CHECK(message_of([&] {
          (void)rosenbaum_signed_rank(a, b, 0.5);
        }).find("rosenbaum_signed_rank: argument 'gamma'") == 0);
  CHECK_THROWS_AS(rosenbaum_signed_rank(a, b, std::nan("")), invalid_argument);
  CHECK_THROWS_AS(rosenbaum_signed_rank(a, b, INFINITY), invalid_argument);
  CHECK_THROWS_AS(rosenbaum_signed_rank(a, std::span<const double>(b).first(3), 2.0), shape_mismatch);
  std::vector<double> bn = b;
  bn[1] = std::nan("");
  CHECK(message_of([&] {
          (void)rosenbaum_signed_rank(a, bn, 2.0);
        }).find("rosenbaum_signed_rank: argument 'control'") == 0);
  CHECK(message_of([&] {
          (void)rosenbaum_signed_rank(a, a, 2.0);
        }).find("no pair with a non-zero difference") != std::string::npos);
  std::vector<double> big(600), zero(600, 0.0);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i + 1);
  CHECK_THROWS_AS(rosenbaum_signed_rank(big, zero, 2.0, {.exact = true}), invalid_argument);
  CHECK(message_of([&] {
          (void)rosenbaum_critical_gamma(a, b, 0.6);
        }).find("rosenbaum_critical_gamma: argument 'alpha'") == 0);
  // E-values.
  CHECK(message_of([&] { (void)evalue_risk_ratio(-1.0); }).find("evalue_risk_ratio: argument 'estimate'") ==
        0);
  CHECK(message_of([&] {
          (void)evalue_risk_ratio(2.0, 2.5, 3.0);
        }).find("evalue_risk_ratio: argument 'ci_low'") == 0);
  CHECK(message_of([&] {
          (void)evalue_risk_ratio(2.0, 1.5, 1.8);
        }).find("evalue_risk_ratio: argument 'ci_high'") == 0);
  CHECK_THROWS_AS(evalue_risk_ratio(2.0, 0.0, 3.0), invalid_argument);
  CHECK_THROWS_AS(evalue_risk_ratio(2.0, 1.0, 3.0, {.true_value = 0.0}), invalid_argument);
  CHECK(message_of([&] {
          (void)evalue_odds_ratio(0.0, 0.5, 1.0, true);
        }).find("evalue_odds_ratio: argument 'odds_ratio'") == 0);
  CHECK(message_of([&] { (void)evalue_smd(0.5, 0.0); }).find("evalue_smd: argument 'se'") == 0);
  CHECK_THROWS_AS(evalue_smd(std::nan(""), 0.1), invalid_argument);
}
