// SPDX-License-Identifier: MIT
// Tests for estimators/multiplicity.hpp: adjusted p-values against R's p.adjust and statsmodels'
// multipletests (golden files in tests/golden/multiplicity/), against naive textbook oracles on
// random families, and the bad-input contract.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/multiplicity.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/golden.hpp"
#include "support/reference_multiplicity.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;

namespace {

/// The p-value vectors of tests/golden/multiplicity/p_values.csv, by case name.
std::map<std::string, std::vector<double>> golden_cases() {
  const auto t = test::read_golden_table("multiplicity/p_values.csv");
  std::map<std::string, std::vector<double>> cases;
  for (std::size_t r = 0; r < t.rows(); ++r) cases[t.str("case", r)].push_back(t.num("p", r));
  return cases;
}

}  // namespace

TEST_CASE("p_adjust reproduces R's p.adjust (rtol 1e-12)", "[estimators][multiplicity]") {
  const auto cases = golden_cases();
  const auto t = test::read_golden_table("multiplicity/p_adjust.csv");
  REQUIRE(t.rows() > 800);
  // Group rows by (case, family size, method), recompute, compare element-wise.
  std::map<std::string, std::vector<double>> computed;
  std::size_t compared = 0;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    const auto& name = t.str("case", r);
    const auto n = static_cast<std::size_t>(t.num("family_size", r));
    const auto& method = t.str("method", r);
    const std::string key = name + "/" + std::to_string(n) + "/" + method;
    auto it = computed.find(key);
    if (it == computed.end()) {
      it = computed
               .emplace(key, p_adjust(cases.at(name), parse_p_adjust_method(method),
                                      {.family_size = n, .allow_missing = true}))
               .first;
    }
    const auto i = static_cast<std::size_t>(t.num("index", r));
    INFO(key << " index " << i);
    REQUIRE(it->second.size() == cases.at(name).size());
    LATENTAUDIT_CHECK_CLOSE(it->second[i], t.num("adjusted", r), 1e-12);
    ++compared;
  }
  CHECK(compared == t.rows());
  CHECK(computed.size() == 12 * 6);
}

TEST_CASE("multiple_test reproduces statsmodels multipletests: adjusted p and decisions (rtol 1e-12)",
          "[estimators][multiplicity]") {
  const auto cases = golden_cases();
  const auto t = test::read_golden_table("multiplicity/multipletests.csv");
  REQUIRE(t.rows() > 900);
  std::map<std::string, multiple_test_result> computed;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    const auto& name = t.str("case", r);
    const auto& method = t.str("method", r);
    const double alpha = t.num("alpha", r);
    const std::string key = name + "/" + method + "/" + t.str("alpha", r);
    auto it = computed.find(key);
    if (it == computed.end()) {
      it = computed
               .emplace(key, multiple_test(cases.at(name),
                                           {.method = parse_p_adjust_method(method), .alpha = alpha}))
               .first;
    }
    const auto i = static_cast<std::size_t>(t.num("index", r));
    INFO(key << " index " << i);
    LATENTAUDIT_CHECK_CLOSE(it->second.adjusted_p_values[i], t.num("adjusted", r), 1e-12);
    CHECK(it->second.rejected[i] == (t.num("reject", r) == 1.0));
  }
}

TEST_CASE("p_adjust equals the textbook definitions on random families (seed 11)",
          "[estimators][multiplicity]") {
  for (std::uint32_t rep = 0; rep < 200; ++rep) {
    auto g = make_stream({.seed = 11, .replicate = rep});
    const std::size_t m = 1 + uniform_index(g, 40);
    std::vector<double> p(m);
    for (auto& v : p) {
      const double u = uniform01(g);
      v = u * u * u;  // skewed towards 0: many rejections
      if (uniform_index(g, 10) == 0) v = p[uniform_index(g, static_cast<std::uint32_t>(m))];  // ties
    }
    for (const std::string method : {"bonferroni", "holm", "hochberg", "BH", "BY"}) {
      INFO("replicate " << rep << " m " << m << " method " << method);
      const auto got = p_adjust(p, parse_p_adjust_method(method));
      const auto want = m == 1 ? p : test::naive_adjust(p, method);
      for (std::size_t i = 0; i < m; ++i) LATENTAUDIT_CHECK_CLOSE(got[i], want[i], 1e-13);
      for (double alpha : {0.01, 0.05, 0.2}) {
        const auto res = multiple_test(p, {.method = parse_p_adjust_method(method), .alpha = alpha});
        CHECK(res.rejected == test::naive_reject(p, method, alpha));
      }
    }
  }
}

TEST_CASE("adjusted p-values are ordered as the methods' strength implies", "[estimators][multiplicity]") {
  auto g = make_stream({.seed = 12});
  std::vector<double> p(30);
  for (auto& v : p) v = uniform01(g) * 0.2;
  const auto bon = p_adjust(p, p_adjust_method::bonferroni), holm = p_adjust(p, p_adjust_method::holm);
  const auto hoch = p_adjust(p, p_adjust_method::hochberg),
             bh = p_adjust(p, p_adjust_method::benjamini_hochberg);
  const auto by = p_adjust(p, p_adjust_method::benjamini_yekutieli);
  for (std::size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i] <= bh[i]);
    CHECK(bh[i] <= hoch[i]);
    CHECK(hoch[i] <= holm[i]);
    CHECK(holm[i] <= bon[i]);
    CHECK(bh[i] <= by[i]);
    for (std::size_t j = 0; j < p.size(); ++j) {
      if (p[i] <= p[j]) CHECK(holm[i] <= holm[j]);  // monotone in p
      if (p[i] <= p[j]) CHECK(bh[i] <= bh[j]);
    }
  }
}

TEST_CASE("p_adjust edge cases: empty, single, ties, p = 0 and 1, family size",
          "[estimators][multiplicity]") {
  CHECK(p_adjust(std::vector<double>{}, p_adjust_method::holm).empty());
  const auto empty = multiple_test(std::span<const double>{});
  CHECK(empty.adjusted_p_values.empty());
  CHECK(empty.n_rejected == 0);
  CHECK(empty.family_size == 0);
  // n = 1: returned unchanged, for every method (R: `if (n <= 1) return(p0)`).
  for (auto m : {p_adjust_method::bonferroni, p_adjust_method::holm, p_adjust_method::benjamini_yekutieli})
    CHECK(p_adjust(std::vector<double>{0.3}, m) == std::vector<double>{0.3});
  // ...but an explicit family of 4 multiplies.
  CHECK(p_adjust(std::vector<double>{0.03}, p_adjust_method::holm, {.family_size = 4}) ==
        std::vector<double>{0.12});
  // Ties get equal adjusted values; capped at 1.
  const std::vector<double> tied{0.01, 0.01, 0.5, 0.0, 1.0};
  const auto h = p_adjust(tied, p_adjust_method::holm);
  CHECK(h[0] == h[1]);
  CHECK(h[0] == 0.04);
  CHECK(h[3] == 0.0);
  CHECK(h[4] == 1.0);
  // With a missing value the family shrinks to the observed p-values (R's NA rule).
  const std::vector<double> with_nan{0.01, NAN, 0.02};
  const auto a = p_adjust(with_nan, p_adjust_method::bonferroni, {.allow_missing = true});
  CHECK(a[0] == 0.02);
  CHECK(std::isnan(a[1]));
  CHECK(a[2] == 0.04);
  CHECK(p_adjust_method_name(p_adjust_method::benjamini_hochberg) == "BH");
  CHECK(parse_p_adjust_method("fdr") == p_adjust_method::benjamini_hochberg);
  CHECK(parse_p_adjust_method("simes-hochberg") == p_adjust_method::hochberg);
}

TEST_CASE("multiple_test over effect estimates", "[estimators][multiplicity]") {
  std::vector<effect_estimate> fam(4);
  const std::vector<double> p{0.001, 0.04, 0.2, 0.012};
  for (std::size_t i = 0; i < fam.size(); ++i) {
    fam[i].method = "paired_t";
    fam[i].p_value = p[i];
  }
  const auto r = multiple_test(fam, {.method = p_adjust_method::holm, .alpha = 0.05});
  const auto s = multiple_test(p, {.method = p_adjust_method::holm, .alpha = 0.05});
  CHECK(r.adjusted_p_values == s.adjusted_p_values);
  CHECK(r.rejected == std::vector<bool>{true, false, false, true});  // 0.004, 0.08, 0.2, 0.036
  CHECK(r.n_rejected == 2);
  CHECK(r.family_size == 4);

  fam[2].status = estimate_status::degenerate;
  fam[2].p_value = effect_estimate::nan;
  CHECK_THROWS_AS(multiple_test(fam), numerical_error);
  CHECK_THROWS_WITH(multiple_test(fam),
                    Contains("multiple_test") && Contains("index 2") && Contains("degenerate"));
  const auto f = multiple_test(fam, {.if_degenerate = on_degenerate::flag});
  CHECK(f.n_missing == 1);
  CHECK(f.family_size == 3);
  CHECK(std::isnan(f.adjusted_p_values[2]));
  CHECK_FALSE(f.rejected[2]);
  LATENTAUDIT_CHECK_CLOSE(f.adjusted_p_values[0], 0.003, 1e-15);

  fam[2].status = estimate_status::ok;  // ok but without a p-value
  CHECK_THROWS_AS(multiple_test(fam), invalid_argument);
  CHECK_THROWS_WITH(multiple_test(fam), Contains("'estimates'") && Contains("index 2"));
}

TEST_CASE("multiplicity bad input throws with function and argument named", "[estimators][multiplicity]") {
  const std::vector<double> nan_p{0.1, NAN};
  CHECK_THROWS_AS(p_adjust(nan_p, p_adjust_method::holm), invalid_argument);
  CHECK_THROWS_WITH(p_adjust(nan_p, p_adjust_method::holm),
                    Contains("p_adjust: argument 'p'") && Contains("index 1"));
  CHECK_THROWS_WITH(p_adjust(std::vector<double>{0.1, 1.5}, p_adjust_method::bonferroni),
                    "p_adjust: argument 'p' must hold p-values in [0, 1], got 1.5 at index 1");
  CHECK_THROWS_AS(p_adjust(std::vector<double>{-0.1}, p_adjust_method::holm), invalid_argument);
  CHECK_THROWS_AS(p_adjust(std::vector<double>{INFINITY}, p_adjust_method::holm), invalid_argument);
  CHECK_THROWS_WITH(p_adjust(std::vector<double>{0.1, 0.2, 0.3}, p_adjust_method::holm, {.family_size = 2}),
                    Contains("p_adjust: argument 'family_size'"));
  CHECK_THROWS_WITH(multiple_test(std::vector<double>{0.1}, {.alpha = 0.0}),
                    "multiple_test: argument 'alpha' must lie in (0, 1), got 0");
  CHECK_THROWS_AS(multiple_test(std::vector<double>{0.1}, {.alpha = 1.0}), invalid_argument);
  CHECK_THROWS_WITH(multiple_test(nan_p), Contains("multiple_test: argument 'p_values'"));
  CHECK_THROWS_WITH(multiple_test(std::vector<double>{0.1, 2.0}, {.if_degenerate = on_degenerate::flag}),
                    Contains("'p_values'") && Contains("got 2"));
  CHECK_THROWS_WITH(multiple_test(std::vector<double>{0.1, 0.2}, {.family_size = 1}),
                    Contains("'family_size'"));
  CHECK_THROWS_WITH(parse_p_adjust_method("Holm"), Contains("parse_p_adjust_method: argument 'name'"));
  const auto flagged = multiple_test(nan_p, {.if_degenerate = on_degenerate::flag});
  CHECK(flagged.n_missing == 1);
  CHECK(flagged.adjusted_p_values[0] == 0.1);  // family of one observed p-value
}
