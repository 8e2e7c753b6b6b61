// SPDX-License-Identifier: MIT
// Tests for estimators/paired_binary.hpp: McNemar (exact, chi-square with and without correction),
// Newcombe's paired (1998c, method 10) and unpaired (1998b, methods 10/11) intervals, Wilson limits
// and the pooled two-proportion z test — against R and statsmodels goldens (tests/golden/paired_binary),
// published values, naive oracles (tests/support/reference_binary.hpp), exact enumeration and
// Monte-Carlo coverage, degenerate data and bad input.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/paired_binary.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/golden.hpp"
#include "support/reference_binary.hpp"

using latentaudit::binary_counts;
using latentaudit::effect_estimate;
using latentaudit::estimate_status;
using latentaudit::mcnemar_options;
using latentaudit::mcnemar_test;
using latentaudit::on_degenerate;
using latentaudit::paired_binary_table;
using latentaudit::two_proportion_options;
using latentaudit::two_proportion_test;
using latentaudit::wilson_interval;
using latentaudit::wilson_options;
using latentaudit::test::close;
using latentaudit::test::read_golden_table;

namespace {

constexpr double rtol_r = 1e-10;       // against R
constexpr double rtol_sm = 1e-8;       // against statsmodels / scipy
constexpr double rtol_oracle = 1e-12;  // against the long-double oracles
const std::string dir = "paired_binary/";

std::size_t count(const latentaudit::test::golden_table& t, const char* name, std::size_t row) {
  return static_cast<std::size_t>(t.num(name, row));
}

paired_binary_table table_of(const latentaudit::test::golden_table& t, std::size_t row) {
  return {.both = count(t, "a", row),
          .treated_only = count(t, "b", row),
          .control_only = count(t, "c", row),
          .neither = count(t, "d", row)};
}

/// Raw 0/1 vectors of a golden data set: paired (treated, control) or unpaired (arm, y).
struct raw_data {
  std::vector<double> treated, control;
};
std::map<std::string, raw_data> read_paired_data() {
  const auto t = read_golden_table(dir + "paired_data.csv");
  std::map<std::string, raw_data> m;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    auto& d = m[t.str("dataset", i)];
    d.treated.push_back(t.num("treated", i));
    d.control.push_back(t.num("control", i));
  }
  return m;
}
std::map<std::string, raw_data> read_unpaired_data() {
  const auto t = read_golden_table(dir + "unpaired_data.csv");
  std::map<std::string, raw_data> m;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    auto& d = m[t.str("dataset", i)];
    (t.str("arm", i) == "treated" ? d.treated : d.control).push_back(t.num("y", i));
  }
  return m;
}

/// Absolute-or-relative closeness for quantities that can be 0 (interval limits near 0).
bool near(double a, double b, double rtol, double atol) { return close(a, b, rtol, atol); }

}  // namespace

// ------------------------------------------------------------------------------------------ goldens

TEST_CASE("mcnemar_test matches R mcnemar.test, binom.test and Newcombe's interval on R's Wilson limits",
          "[estimators][paired_binary][golden]") {
  const auto t = read_golden_table(dir + "paired_r.csv");
  const auto data = read_paired_data();
  REQUIRE(t.rows() == 115);
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const auto tab = table_of(t, i);
    const double level = t.num("level", i);
    INFO("case " << t.str("case", i) << ", level " << level);
    const auto r = mcnemar_test(tab, {.level = level, .if_degenerate = on_degenerate::flag});
    LATENTAUDIT_CHECK_CLOSE(r.exact_p_value, t.num("exact_p", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(r.chi2_statistic, t.num("chi2", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(r.chi2_p_value, t.num("chi2_p", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(r.chi2_cc_statistic, t.num("chi2_cc", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(r.chi2_cc_p_value, t.num("chi2_cc_p", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(r.phi, t.num("phi", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(r.effect.estimate, t.num("estimate", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(r.effect.std_error, t.num("std_error", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(r.effect.ci_low, t.num("ci_low", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(r.effect.ci_high, t.num("ci_high", i), rtol_r);
    CHECK(r.effect.p_value == r.exact_p_value);
    CHECK(r.effect.statistic == static_cast<double>(tab.treated_only));
    CHECK(r.effect.level == level);
    CHECK(r.effect.n_pairs == tab.both + tab.treated_only + tab.control_only + tab.neither);
    CHECK(r.discordant == tab.treated_only + tab.control_only);
    CHECK(r.status == (r.discordant == 0 ? estimate_status::degenerate : estimate_status::ok));
    CHECK(r.effect.status == estimate_status::ok);
    // The marginal Wilson limits (R's prop.test(correct = FALSE)$conf.int).
    const std::size_t n = r.effect.n_pairs;
    const auto w1 = wilson_interval({tab.both + tab.treated_only, n}, {.level = level});
    const auto w2 = wilson_interval({tab.both + tab.control_only, n}, {.level = level});
    LATENTAUDIT_CHECK_CLOSE(w1.low, t.num("wilson_t_low", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(w1.high, t.num("wilson_t_high", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(w2.low, t.num("wilson_c_low", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(w2.high, t.num("wilson_c_high", i), rtol_r);
    // Data sets: the span overload tabulates the raw vectors into the same table and result.
    const auto& name = t.str("case", i);
    if (name.rfind("data:", 0) == 0) {
      const auto& d = data.at(name.substr(5));
      const auto s =
          mcnemar_test(d.treated, d.control, {.level = level, .if_degenerate = on_degenerate::flag});
      CHECK(s.table.both == tab.both);
      CHECK(s.table.treated_only == tab.treated_only);
      CHECK(s.table.control_only == tab.control_only);
      CHECK(s.table.neither == tab.neither);
      CHECK(s.effect.ci_low == r.effect.ci_low);
      CHECK(s.effect.ci_high == r.effect.ci_high);
      CHECK(s.exact_p_value == r.exact_p_value);
    }
  }
}

TEST_CASE("mcnemar_test matches statsmodels mcnemar and proportion_confint(method='wilson')",
          "[estimators][paired_binary][golden]") {
  const auto t = read_golden_table(dir + "paired_statsmodels.csv");
  REQUIRE(t.rows() == 115);
  int b_equals_c = 0;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const auto tab = table_of(t, i);
    const double level = t.num("level", i);
    INFO("case " << t.str("case", i) << ", level " << level);
    const auto r = mcnemar_test(tab, {.level = level, .if_degenerate = on_degenerate::flag});
    LATENTAUDIT_CHECK_CLOSE(r.exact_p_value, t.num("exact_p", i), rtol_sm);
    LATENTAUDIT_CHECK_CLOSE(r.chi2_statistic, t.num("chi2", i), rtol_sm);
    LATENTAUDIT_CHECK_CLOSE(r.chi2_p_value, t.num("chi2_p", i), rtol_sm);
    if (tab.treated_only == tab.control_only && tab.treated_only > 0) {
      // Documented divergence: statsmodels keeps (|b − c| − 1)² = 1 when b = c; R (and we) use 0.
      ++b_equals_c;
      CHECK(r.chi2_cc_statistic == 0.0);
      CHECK(r.chi2_cc_p_value == 1.0);
      LATENTAUDIT_CHECK_CLOSE(t.num("chi2_cc", i), 1.0 / static_cast<double>(r.discordant), rtol_sm);
    } else {
      LATENTAUDIT_CHECK_CLOSE(r.chi2_cc_statistic, t.num("chi2_cc", i), rtol_sm);
      LATENTAUDIT_CHECK_CLOSE(r.chi2_cc_p_value, t.num("chi2_cc_p", i), rtol_sm);
    }
    LATENTAUDIT_CHECK_CLOSE(r.phi, t.num("phi", i), rtol_sm);
    LATENTAUDIT_CHECK_CLOSE(r.effect.ci_low, t.num("ci_low", i), rtol_sm);
    LATENTAUDIT_CHECK_CLOSE(r.effect.ci_high, t.num("ci_high", i), rtol_sm);
    const std::size_t n = r.effect.n_pairs;
    const auto w1 = wilson_interval({tab.both + tab.treated_only, n}, {.level = level});
    const auto w2 = wilson_interval({tab.both + tab.control_only, n}, {.level = level});
    LATENTAUDIT_CHECK_CLOSE(w1.low, t.num("wilson_t_low", i), rtol_sm);
    LATENTAUDIT_CHECK_CLOSE(w1.high, t.num("wilson_t_high", i), rtol_sm);
    LATENTAUDIT_CHECK_CLOSE(w2.low, t.num("wilson_c_low", i), rtol_sm);
    LATENTAUDIT_CHECK_CLOSE(w2.high, t.num("wilson_c_high", i), rtol_sm);
  }
  CHECK(b_equals_c == 10);  // the b_eq_c and n2_split cases at five levels
}

TEST_CASE("two_proportion_test matches R prop.test and Newcombe's interval on R's Wilson limits",
          "[estimators][paired_binary][golden]") {
  const auto t = read_golden_table(dir + "unpaired_r.csv");
  const auto data = read_unpaired_data();
  REQUIRE(t.rows() == 190);
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const binary_counts x1{count(t, "x1", i), count(t, "n1", i)}, x0{count(t, "x0", i), count(t, "n0", i)};
    const double level = t.num("level", i);
    const bool cc = t.num("correct", i) == 1.0;
    INFO("case " << t.str("case", i) << ", level " << level << ", correct " << cc);
    const two_proportion_options o{
        .level = level, .continuity_correction = cc, .if_degenerate = on_degenerate::flag};
    const auto e = two_proportion_test(x1, x0, o);
    LATENTAUDIT_CHECK_CLOSE(e.estimate, t.num("estimate", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(e.std_error, t.num("std_error", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(e.ci_low, t.num("ci_low", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(e.ci_high, t.num("ci_high", i), rtol_r);
    // prop.test's statistic is the chi-square z²; its p-value is ours. When Yates' term swallows
    // the whole difference R leaves rounding residue (~1e-30) where our statistic is exactly 0.
    const double chi2 = t.num("chi2", i);
    if (chi2 < 1e-20) {
      CHECK(e.statistic == 0.0);
    } else {
      LATENTAUDIT_CHECK_CLOSE(e.statistic * e.statistic, chi2, rtol_r);
    }
    LATENTAUDIT_CHECK_CLOSE(e.p_value, t.num("p_value", i), rtol_r);
    CHECK(e.status == (std::isnan(chi2) ? estimate_status::degenerate : estimate_status::ok));
    CHECK(e.method == (cc ? "two_proportion_newcombe_cc" : "two_proportion_newcombe"));
    CHECK(e.estimand == "risk_difference");
    CHECK(e.n_treated == x1.trials);
    CHECK(e.n_control == x0.trials);
    // Wilson limits (method 3) and continuity-corrected Wilson limits (method 4) vs prop.test.
    const auto w1 = wilson_interval(x1, {.level = level, .continuity_correction = cc});
    const auto w0 = wilson_interval(x0, {.level = level, .continuity_correction = cc});
    LATENTAUDIT_CHECK_CLOSE(w1.low, t.num("wilson_t_low", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(w1.high, t.num("wilson_t_high", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(w0.low, t.num("wilson_c_low", i), rtol_r);
    LATENTAUDIT_CHECK_CLOSE(w0.high, t.num("wilson_c_high", i), rtol_r);
    const auto& name = t.str("case", i);
    if (name.rfind("data:", 0) == 0) {
      const auto& d = data.at(name.substr(5));
      const auto s = two_proportion_test(d.treated, d.control, o);
      CHECK(s.estimate == e.estimate);
      CHECK(s.ci_low == e.ci_low);
      CHECK(s.ci_high == e.ci_high);
      CHECK(s.p_value == e.p_value);
      CHECK(s.n_treated == d.treated.size());
    }
  }
}

TEST_CASE(
    "two_proportion_test matches statsmodels confint_proportions_2indep(method='newcomb') and "
    "proportions_ztest",
    "[estimators][paired_binary][golden]") {
  const auto t = read_golden_table(dir + "unpaired_statsmodels.csv");
  REQUIRE(t.rows() == 190);
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const binary_counts x1{count(t, "x1", i), count(t, "n1", i)}, x0{count(t, "x0", i), count(t, "n0", i)};
    const double level = t.num("level", i);
    const bool cc = t.num("correct", i) == 1.0;
    INFO("case " << t.str("case", i) << ", level " << level << ", correct " << cc);
    const auto e = two_proportion_test(
        x1, x0, {.level = level, .continuity_correction = cc, .if_degenerate = on_degenerate::flag});
    LATENTAUDIT_CHECK_CLOSE(e.ci_low, t.num("ci_low", i), rtol_sm);
    LATENTAUDIT_CHECK_CLOSE(e.ci_high, t.num("ci_high", i), rtol_sm);
    CHECK(near(e.statistic, t.num("z", i), rtol_sm, 1e-15));
    LATENTAUDIT_CHECK_CLOSE(e.p_value, t.num("p_value", i), rtol_sm);
  }
}

TEST_CASE("Newcombe intervals reproduce the published worked examples (4 decimals)",
          "[estimators][paired_binary][published]") {
  // Newcombe (1998c) worked examples, method 10, as published in the paper and quoted by the propint R
  // package's tests; Cavo et al. (2012) from Fagerland, Lydersen & Laake (2017), ch. 8.
  struct example {
    paired_binary_table t;
    double low, high;
  };
  const example examples[] = {
      {{36, 12, 2, 0}, 0.0569, 0.3404}, {{18, 12, 2, 18}, 0.0562, 0.3290},   {{53, 0, 0, 1}, -0.0729, 0.0729},
      {{0, 30, 0, 0}, 0.8395, 1.0000},  {{59, 6, 16, 80}, -0.1186, -0.0046},
  };
  for (const auto& ex : examples) {
    const auto r = mcnemar_test(ex.t, {.if_degenerate = on_degenerate::flag});
    INFO("table " << ex.t.both << "," << ex.t.treated_only << "," << ex.t.control_only << ","
                  << ex.t.neither);
    CHECK(std::fabs(r.effect.ci_low - ex.low) <= 5e-5);
    CHECK(std::fabs(r.effect.ci_high - ex.high) <= 5e-5);
  }
  // Without Newcombe's n/2 correction of φ the second example would give 0.0618 to 0.3239.
  CHECK(mcnemar_test(paired_binary_table{18, 12, 2, 18}).phi == Approx(275.0 / 600.0).epsilon(1e-15));
}

// ------------------------------------------------------------------------------------------ oracles

TEST_CASE("exact McNemar p-value equals R's binom.test rule summed term by term",
          "[estimators][paired_binary][oracle]") {
  for (std::size_t m = 1; m <= 80; ++m) {
    for (std::size_t b = 0; b <= m; ++b) {
      INFO("b = " << b << ", c = " << m - b);
      const auto r = mcnemar_test(paired_binary_table{.both = 3, .treated_only = b, .control_only = m - b});
      LATENTAUDIT_CHECK_CLOSE(r.exact_p_value, latentaudit::test::reference_binomial_p(b, m), rtol_oracle);
    }
  }
  for (std::size_t b : {0u, 1u, 100u, 230u, 249u, 250u, 251u, 400u}) {  // m = 500 and 501
    for (std::size_t m : {500u, 501u}) {
      if (b > m) continue;
      INFO("b = " << b << ", m = " << m);
      const auto r = mcnemar_test(paired_binary_table{.treated_only = b, .control_only = m - b});
      LATENTAUDIT_CHECK_CLOSE(r.exact_p_value, latentaudit::test::reference_binomial_p(b, m), 1e-11);
    }
  }
}

TEST_CASE("paired results equal the naive oracles on every table with n <= 12",
          "[estimators][paired_binary][oracle]") {
  for (double level : {0.95, 0.8, 0.995}) {
    const long double z = latentaudit::detail::two_sided_z(level);
    for (std::size_t n = 1; n <= 12; ++n) {
      for (std::size_t a = 0; a <= n; ++a) {
        for (std::size_t b = 0; a + b <= n; ++b) {
          for (std::size_t c = 0; a + b + c <= n; ++c) {
            const latentaudit::test::reference_table rt{a, b, c, n - a - b - c};
            INFO("table " << a << "," << b << "," << c << "," << rt.d << " level " << level);
            const auto r = mcnemar_test(paired_binary_table{a, b, c, rt.d},
                                        {.level = level, .if_degenerate = on_degenerate::flag});
            const auto [lo, hi] = latentaudit::test::reference_newcombe_paired(rt, z);
            CHECK(near(r.effect.ci_low, lo, rtol_oracle, 1e-15));
            CHECK(near(r.effect.ci_high, hi, rtol_oracle, 1e-15));
            CHECK(r.effect.ci_low <= r.effect.estimate);
            CHECK(r.effect.estimate <= r.effect.ci_high);
            CHECK(r.effect.ci_low >= -1.0);
            CHECK(r.effect.ci_high <= 1.0);
            if (b + c > 0) {
              const double bc = static_cast<double>(b) - static_cast<double>(c);
              LATENTAUDIT_CHECK_CLOSE(r.chi2_statistic, bc * bc / static_cast<double>(b + c), rtol_oracle);
            }
            // Swapping the arms mirrors everything.
            const auto s = mcnemar_test(paired_binary_table{a, c, b, rt.d},
                                        {.level = level, .if_degenerate = on_degenerate::flag});
            CHECK(near(s.effect.ci_low, -r.effect.ci_high, 1e-13, 1e-15));
            CHECK(near(s.effect.ci_high, -r.effect.ci_low, 1e-13, 1e-15));
            CHECK(s.exact_p_value == r.exact_p_value);
          }
        }
      }
    }
  }
}

TEST_CASE("unpaired results equal the naive oracles on every pair of samples with n <= 9",
          "[estimators][paired_binary][oracle]") {
  for (double level : {0.95, 0.9}) {
    const long double z = latentaudit::detail::two_sided_z(level);
    for (std::size_t n1 = 1; n1 <= 9; ++n1) {
      for (std::size_t n0 = 1; n0 <= 9; ++n0) {
        for (std::size_t x1 = 0; x1 <= n1; ++x1) {
          for (std::size_t x0 = 0; x0 <= n0; ++x0) {
            INFO(x1 << "/" << n1 << " vs " << x0 << "/" << n0 << " level " << level);
            const auto e = two_proportion_test(binary_counts{x1, n1}, binary_counts{x0, n0},
                                               {.level = level, .if_degenerate = on_degenerate::flag});
            const auto [lo, hi] = latentaudit::test::reference_newcombe_unpaired(x1, n1, x0, n0, z);
            CHECK(near(e.ci_low, lo, rtol_oracle, 1e-15));
            CHECK(near(e.ci_high, hi, rtol_oracle, 1e-15));
            if (x1 + x0 > 0 && x1 + x0 < n1 + n0) {
              CHECK(near(e.statistic * e.statistic, latentaudit::test::reference_pearson_chi2(x1, n1, x0, n0),
                         rtol_oracle, 1e-15));
              // The corrected statistic is never larger and keeps the sign.
              const auto c = two_proportion_test(binary_counts{x1, n1}, binary_counts{x0, n0},
                                                 {.level = level, .continuity_correction = true});
              CHECK(std::fabs(c.statistic) <= std::fabs(e.statistic));
              CHECK(c.statistic * e.statistic >= 0.0);
              CHECK(c.ci_low <= e.ci_low + 1e-15);
              CHECK(c.ci_high >= e.ci_high - 1e-15);
            } else {
              CHECK(e.status == estimate_status::degenerate);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("Wilson limits solve the score equation and widen with the level",
          "[estimators][paired_binary][oracle]") {
  for (std::size_t n : {1u, 2u, 7u, 50u, 1000u}) {
    for (std::size_t x = 0; x <= n; x += (n > 50 ? 37 : 1)) {
      INFO(x << "/" << n);
      const auto w = wilson_interval({x, n});
      const auto [lo, hi] = latentaudit::test::reference_wilson(x, n, latentaudit::detail::two_sided_z(0.95));
      CHECK(near(w.low, static_cast<double>(lo), rtol_oracle, 1e-16));
      CHECK(near(w.high, static_cast<double>(hi), rtol_oracle, 1e-16));
      const auto wide = wilson_interval({x, n}, {.level = 0.99});
      const auto cc = wilson_interval({x, n}, {.continuity_correction = true});
      CHECK(wide.low <= w.low);
      CHECK(wide.high >= w.high);
      CHECK(cc.low <= w.low);
      CHECK(cc.high >= w.high);
      CHECK(w.low >= 0.0);
      CHECK(w.high <= 1.0);
    }
  }
  CHECK(wilson_interval({0, 10}).low == 0.0);
  CHECK(wilson_interval({10, 10}).high == 1.0);
  CHECK(wilson_interval({0, 10}, {.level = 0.3, .continuity_correction = true}).low == 0.0);  // z² < 2
}

// ------------------------------------------------------------------------------ exact and Monte-Carlo

TEST_CASE("the exact McNemar test never rejects more often than alpha under the null (enumeration)",
          "[estimators][paired_binary][statistical]") {
  // Conditional on m discordant pairs, b ~ Binomial(m, 1/2) under H0; size = Σ pmf over rejections.
  for (double alpha : {0.01, 0.05, 0.1}) {
    double largest = 0;
    for (std::size_t m = 1; m <= 200; ++m) {
      long double size = 0;
      for (std::size_t b = 0; b <= m; ++b) {
        const auto r = mcnemar_test(paired_binary_table{.treated_only = b, .control_only = m - b});
        if (r.exact_p_value <= alpha) size += std::exp(latentaudit::test::log_binomial_pmf(b, m, 0.5L));
      }
      INFO("alpha " << alpha << ", m " << m);
      CHECK(static_cast<double>(size) <= alpha * (1 + 1e-12));
      largest = std::fmax(largest, static_cast<double>(size));
    }
    CHECK(largest > 0.75 * alpha);  // and it is not trivially conservative
  }
}

namespace {

/// Exact coverage of the paired Newcombe interval: Σ over every table of n pairs of its multinomial
/// probability times [interval covers pb − pc].
double exact_paired_coverage(std::size_t n, const long double (&p)[4], double level) {
  const double truth = static_cast<double>(p[1] - p[2]);
  long double cover = 0;
  for (std::size_t a = 0; a <= n; ++a) {
    for (std::size_t b = 0; a + b <= n; ++b) {
      for (std::size_t c = 0; a + b + c <= n; ++c) {
        const latentaudit::test::reference_table t{a, b, c, n - a - b - c};
        const auto r = mcnemar_test(paired_binary_table{a, b, c, t.d},
                                    {.level = level, .if_degenerate = on_degenerate::flag});
        if (r.effect.ci_low <= truth && truth <= r.effect.ci_high)
          cover += latentaudit::test::multinomial_pmf(t, p);
      }
    }
  }
  return static_cast<double>(cover);
}

/// Half-width of the two-sided 99.9% binomial band of a Monte-Carlo proportion around q.
double band999(double q, int reps) { return 3.2905 * std::sqrt(q * (1 - q) / reps) + 1.0 / reps; }

}  // namespace

TEST_CASE(
    "paired Newcombe interval: exact coverage near nominal, Monte-Carlo coverage within 99.9% band (seed "
    "20261129)",
    "[estimators][paired_binary][statistical]") {
  constexpr std::uint64_t seed = 20261129;
  constexpr int reps = 3000;
  constexpr std::size_t n = 40;
  const long double settings[3][4] = {
      {0.40L, 0.15L, 0.05L, 0.40L}, {0.10L, 0.05L, 0.05L, 0.80L}, {0.60L, 0.25L, 0.02L, 0.13L}};
  for (int s = 0; s < 3; ++s) {
    const auto& p = settings[s];
    const double exact = exact_paired_coverage(n, p, 0.95);
    INFO("setting " << s << " seed " << seed << " exact coverage " << exact);
    CHECK(exact >= 0.93);
    CHECK(exact <= 0.985);
    int covered = 0;
    const double truth = static_cast<double>(p[1] - p[2]);
    const double cut[3] = {static_cast<double>(p[0]), static_cast<double>(p[0] + p[1]),
                           static_cast<double>(p[0] + p[1] + p[2])};
    for (int rep = 0; rep < reps; ++rep) {
      auto g = latentaudit::make_stream({.seed = seed,
                                         .item = static_cast<std::uint64_t>(s),
                                         .replicate = static_cast<std::uint32_t>(rep)});
      std::vector<double> y1(n), y0(n);
      for (std::size_t i = 0; i < n; ++i) {
        const double u = latentaudit::uniform01(g);
        y1[i] = u < cut[1] ? 1.0 : 0.0;                                   // cells a, b
        y0[i] = (u < cut[0] || (u >= cut[1] && u < cut[2])) ? 1.0 : 0.0;  // cells a, c
      }
      const auto r = mcnemar_test(y1, y0, {.if_degenerate = on_degenerate::flag});
      covered += (r.effect.ci_low <= truth && truth <= r.effect.ci_high) ? 1 : 0;
    }
    const double mc = static_cast<double>(covered) / reps;
    INFO("Monte-Carlo coverage " << mc << " over " << reps << " replications");
    CHECK(std::fabs(mc - exact) <= band999(exact, reps));
  }
}

TEST_CASE("unpaired Newcombe intervals: exact coverage near nominal, Monte-Carlo within 99.9% band (seed 77)",
          "[estimators][paired_binary][statistical]") {
  constexpr std::uint64_t seed = 77;
  constexpr int reps = 3000;
  constexpr std::size_t n1 = 30, n0 = 25;
  const double settings[3][2] = {{0.5, 0.3}, {0.1, 0.05}, {0.85, 0.6}};
  for (bool cc : {false, true}) {
    for (int s = 0; s < 3; ++s) {
      const double p1 = settings[s][0], p0 = settings[s][1], truth = p1 - p0;
      const two_proportion_options o{.continuity_correction = cc, .if_degenerate = on_degenerate::flag};
      long double exact = 0;
      for (std::size_t x1 = 0; x1 <= n1; ++x1) {
        for (std::size_t x0 = 0; x0 <= n0; ++x0) {
          const auto e = two_proportion_test(binary_counts{x1, n1}, binary_counts{x0, n0}, o);
          if (e.ci_low <= truth && truth <= e.ci_high) {
            exact += std::exp(latentaudit::test::log_binomial_pmf(x1, n1, p1) +
                              latentaudit::test::log_binomial_pmf(x0, n0, p0));
          }
        }
      }
      INFO("setting " << s << " continuity correction " << cc << " seed " << seed << " exact coverage "
                      << static_cast<double>(exact));
      CHECK(exact >= (cc ? 0.95L : 0.93L));  // method 11 is conservative
      CHECK(exact <= (cc ? 0.995L : 0.985L));
      int covered = 0;
      for (int rep = 0; rep < reps; ++rep) {
        auto g = latentaudit::make_stream({.seed = seed,
                                           .item = static_cast<std::uint64_t>(s),
                                           .arm = cc ? 1u : 0u,
                                           .replicate = static_cast<std::uint32_t>(rep)});
        std::vector<double> y1(n1), y0(n0);
        for (auto& v : y1) v = latentaudit::uniform01(g) < p1 ? 1.0 : 0.0;
        for (auto& v : y0) v = latentaudit::uniform01(g) < p0 ? 1.0 : 0.0;
        const auto e = two_proportion_test(y1, y0, o);
        covered += (e.ci_low <= truth && truth <= e.ci_high) ? 1 : 0;
      }
      const double mc = static_cast<double>(covered) / reps;
      INFO("Monte-Carlo coverage " << mc << " over " << reps << " replications");
      CHECK(std::fabs(mc - static_cast<double>(exact)) <= band999(static_cast<double>(exact), reps));
    }
  }
}

// ------------------------------------------------------------------------------------------ degenerate

TEST_CASE("no discordant pairs: throw by default, or flag the chi-square parts",
          "[estimators][paired_binary][degenerate]") {
  const paired_binary_table t{.both = 20, .neither = 30};
  CHECK_THROWS_AS(mcnemar_test(t), latentaudit::numerical_error);
  CHECK_THROWS_WITH(mcnemar_test(t),
                    Catch::Contains("mcnemar_test") && Catch::Contains("no discordant pairs"));
  const std::vector<double> same{1, 0, 1, 1, 0};
  CHECK_THROWS_AS(mcnemar_test(same, same), latentaudit::numerical_error);
  const auto r = mcnemar_test(t, {.if_degenerate = on_degenerate::flag});
  CHECK(r.status == estimate_status::degenerate);
  CHECK(r.exact_p_value == 1.0);
  CHECK(std::isnan(r.chi2_statistic));
  CHECK(std::isnan(r.chi2_p_value));
  CHECK(std::isnan(r.chi2_cc_statistic));
  CHECK(std::isnan(r.chi2_cc_p_value));
  CHECK(r.effect.status == estimate_status::ok);
  CHECK(r.effect.estimate == 0.0);
  CHECK(r.effect.std_error == 0.0);
  CHECK(r.effect.p_value == 1.0);
  CHECK(r.effect.ci_low < 0.0);
  CHECK(r.effect.ci_high > 0.0);
  // A single discordant pair is not degenerate.
  CHECK(mcnemar_test(paired_binary_table{.treated_only = 1}).status == estimate_status::ok);
}

TEST_CASE("all outcomes equal: the z test throws by default, or is flagged with the interval kept",
          "[estimators][paired_binary][degenerate]") {
  CHECK_THROWS_AS(two_proportion_test(binary_counts{0, 10}, binary_counts{0, 20}),
                  latentaudit::numerical_error);
  CHECK_THROWS_WITH(two_proportion_test(binary_counts{5, 5}, binary_counts{8, 8}),
                    Catch::Contains("two_proportion_test") && Catch::Contains("all outcomes are equal"));
  const auto e =
      two_proportion_test(binary_counts{0, 10}, binary_counts{0, 20}, {.if_degenerate = on_degenerate::flag});
  CHECK(e.status == estimate_status::degenerate);
  CHECK(std::isnan(e.statistic));
  CHECK(std::isnan(e.p_value));
  CHECK(e.estimate == 0.0);
  CHECK(e.std_error == 0.0);
  CHECK(e.ci_low == Approx(-0.1611251580528193).epsilon(1e-12));  // Newcombe (1998b) example (e)
  CHECK(e.ci_high == Approx(0.27753279986288915).epsilon(1e-12));
  // Opposite certainties are not degenerate: z is defined, the Wald SE is 0.
  const auto f = two_proportion_test(binary_counts{10, 10}, binary_counts{0, 10});
  CHECK(f.status == estimate_status::ok);
  CHECK(f.std_error == 0.0);
  CHECK(f.statistic == Approx(std::sqrt(20.0)).epsilon(1e-14));
}

// ------------------------------------------------------------------------------------------ bad input

TEST_CASE("bad input throws invalid_argument or shape_mismatch naming function and argument",
          "[estimators][paired_binary][errors]") {
  const std::vector<double> ok{1, 0, 1, 0}, two_value{1, 0, 2, 0}, with_nan{1, 0, std::nan(""), 0},
      short_v{1, 0, 1};
  const std::vector<double> empty;
  using Catch::Contains;
  CHECK_THROWS_AS(mcnemar_test(two_value, ok), latentaudit::invalid_argument);
  CHECK_THROWS_WITH(mcnemar_test(two_value, ok),
                    Contains("mcnemar_test: argument 'treated'") && Contains("0/1") && Contains("index 2"));
  CHECK_THROWS_WITH(mcnemar_test(ok, with_nan),
                    Contains("mcnemar_test: argument 'control'") && Contains("nan"));
  CHECK_THROWS_AS(mcnemar_test(ok, short_v), latentaudit::shape_mismatch);
  CHECK_THROWS_WITH(mcnemar_test(ok, short_v), Contains("mcnemar_test: arguments 'treated' and 'control'"));
  CHECK_THROWS_WITH(mcnemar_test(empty, empty),
                    Contains("mcnemar_test: argument 'treated'") && Contains("0 observations"));
  for (double level : {0.0, 1.0, -0.5, 1.5, std::nan("")}) {
    CHECK_THROWS_WITH(mcnemar_test(ok, ok, {.level = level}), Contains("mcnemar_test: argument 'level'"));
    CHECK_THROWS_WITH(mcnemar_test(paired_binary_table{1, 2, 3, 4}, {.level = level}),
                      Contains("mcnemar_test: argument 'level'"));
    CHECK_THROWS_WITH(two_proportion_test(ok, ok, {.level = level}),
                      Contains("two_proportion_test: argument 'level'"));
    CHECK_THROWS_WITH(two_proportion_test(binary_counts{1, 2}, binary_counts{1, 3}, {.level = level}),
                      Contains("two_proportion_test: argument 'level'"));
    CHECK_THROWS_AS(wilson_interval({1, 2}, {.level = level}), latentaudit::invalid_argument);
  }
  CHECK_THROWS_WITH(mcnemar_test(paired_binary_table{}),
                    Contains("mcnemar_test: argument 'table'") && Contains("0 pairs"));
  const std::size_t huge = (std::size_t{1} << 53) + 1;
  CHECK_THROWS_WITH(mcnemar_test(paired_binary_table{.neither = huge}),
                    Contains("argument 'table.neither'") && Contains("2^53"));
  CHECK_THROWS_WITH(
      mcnemar_test(paired_binary_table{.both = std::size_t{1} << 52, .neither = std::size_t{1} << 53}),
      Contains("argument 'table'") && Contains("at most 2^53"));

  CHECK_THROWS_WITH(two_proportion_test(two_value, ok),
                    Contains("two_proportion_test: argument 'treated'") && Contains("0/1"));
  CHECK_THROWS_WITH(two_proportion_test(ok, with_nan),
                    Contains("two_proportion_test: argument 'control'") && Contains("nan"));
  CHECK_THROWS_WITH(two_proportion_test(empty, ok),
                    Contains("two_proportion_test: argument 'treated'") && Contains("0 observations"));
  CHECK_THROWS_WITH(two_proportion_test(ok, empty),
                    Contains("two_proportion_test: argument 'control'") && Contains("0 observations"));
  CHECK_NOTHROW((void)two_proportion_test(ok, short_v));  // unpaired arms may differ in size
  CHECK_THROWS_WITH(two_proportion_test(binary_counts{3, 2}, binary_counts{1, 2}),
                    Contains("two_proportion_test: argument 'treated'") && Contains("successes <= trials"));
  CHECK_THROWS_WITH(two_proportion_test(binary_counts{1, 2}, binary_counts{0, 0}),
                    Contains("two_proportion_test: argument 'control'") && Contains("0 trials"));
  CHECK_THROWS_WITH(wilson_interval({0, 0}),
                    Contains("wilson_interval: argument 'x'") && Contains("0 trials"));
  CHECK_THROWS_WITH(wilson_interval({1, huge}),
                    Contains("wilson_interval: argument 'x'") && Contains("2^53"));
}

TEST_CASE("paired_binary API: designated initialisers and result fields",
          "[estimators][paired_binary][api]") {
  const std::vector<double> treated{1, 1, 0, 1, 1, 0, 1, 1}, control{0, 1, 0, 0, 1, 1, 0, 0};
  const auto r = mcnemar_test(treated, control, {.level = 0.9});
  CHECK(r.table.both == 2);
  CHECK(r.table.treated_only == 4);
  CHECK(r.table.control_only == 1);
  CHECK(r.table.neither == 1);
  CHECK(r.effect.estimate == Approx(3.0 / 8.0).epsilon(1e-15));
  CHECK(r.effect.method == "mcnemar_exact_newcombe");
  CHECK(r.effect.estimand == "risk_difference");
  CHECK(std::isnan(r.effect.df));
  CHECK(r.exact_p_value == Approx(0.375).epsilon(1e-14));  // 2 · P(X ≤ 1 | m = 5) = 2 · 6/32
  const auto e = two_proportion_test(treated, control, {.level = 0.9, .continuity_correction = true});
  CHECK(e.estimate == Approx(0.75 - 0.375).epsilon(1e-15));
  CHECK(e.n_treated == 8);
  CHECK(e.n_control == 8);
  CHECK(std::isnan(e.df));
}
