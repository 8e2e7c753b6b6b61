// SPDX-License-Identifier: MIT
// Tests of include/latentaudit/estimators/matching.hpp: golden values from R's Matching::Match
// (tests/golden/matching/generate.R), the k-d tree against a brute-force matcher on random data with
// ties, thread-count invariance, and bad input.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/matching.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/golden.hpp"
#include "support/reference_matching.hpp"

using Catch::Matchers::Contains;
using latentaudit::matching_estimand;
using latentaudit::matching_options;
using latentaudit::nearest_neighbor_matching;

namespace {

struct golden_data {
  std::vector<double> y, tr, x;
  std::size_t k = 0;
};

golden_data load_data(const std::string& name) {
  const auto t = latentaudit::test::read_golden_table("matching/data_" + name + ".csv");
  golden_data d;
  d.y = t.col("y");
  d.tr = t.col("tr");
  for (const auto& c : t.names)
    if (c[0] == 'x') ++d.k;
  d.x.resize(d.y.size() * d.k);
  for (std::size_t j = 0; j < d.k; ++j) {
    const auto col = t.col(std::string(1, 'x').append(std::to_string(j + 1)));
    for (std::size_t i = 0; i < col.size(); ++i) d.x[i * d.k + j] = col[i];
  }
  return d;
}

matching_estimand parse_estimand(const std::string& s) {
  if (s == "ATT") return matching_estimand::att;
  if (s == "ATC") return matching_estimand::atc;
  return matching_estimand::ate;
}

// Options of one configs.csv row.
matching_options options_of(const latentaudit::test::golden_table& t, std::size_t r) {
  matching_options o;
  o.estimand = parse_estimand(t.str("estimand", r));
  o.neighbors = static_cast<std::size_t>(t.num("M", r));
  o.ties = t.num("ties", r) == 1.0;
  o.distance = t.num("weight", r) == 2.0 ? latentaudit::matching_distance::mahalanobis
                                         : latentaudit::matching_distance::inverse_variance;
  o.bias_adjust = t.num("bias", r) == 1.0;
  o.var_calc = static_cast<std::size_t>(t.num("varcalc", r));
  if (t.str("caliper", r) != "NA") o.caliper = {t.num("caliper", r)};
  if (t.str("exact", r) == "x2") o.exact = {1};
  o.if_degenerate = latentaudit::on_degenerate::flag;
  return o;
}

}  // namespace

TEST_CASE("matching reproduces Matching::Match estimates, AI SEs and counts (96 configurations)",
          "[estimators][matching]") {
  const auto t = latentaudit::test::read_golden_table("matching/configs.csv");
  REQUIRE(t.rows() == 96);
  const double rtol = 1e-10;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    const std::string id = t.str("id", r);
    INFO("config " << id << ": " << t.str("data", r) << " " << t.str("estimand", r) << " M=" << t.str("M", r)
                   << " ties=" << t.str("ties", r) << " weight=" << t.str("weight", r)
                   << " bias=" << t.str("bias", r) << " varcalc=" << t.str("varcalc", r)
                   << " caliper=" << t.str("caliper", r) << " exact=" << t.str("exact", r));
    const auto d = load_data(t.str("data", r));
    auto o = options_of(t, r);
    const auto res = nearest_neighbor_matching(d.y, d.tr, d.x, d.k, o);
    LATENTAUDIT_CHECK_CLOSE(res.effect.estimate, t.num("est", r), rtol);
    LATENTAUDIT_CHECK_CLOSE(res.estimate_unadjusted, t.num("est_noadj", r), rtol);
    LATENTAUDIT_CHECK_CLOSE(res.std_error_standard, t.num("se_standard", r), rtol);
    LATENTAUDIT_CHECK_CLOSE(static_cast<double>(res.n_matched), t.num("wnobs", r), 1e-12);  // R sums weights
    CHECK(static_cast<double>(res.n_rows) == t.num("nrows", r));
    CHECK(static_cast<double>(res.n_dropped) == t.num("ndrops_matches", r));
    // Match computes no SE when ties = FALSE; on this tie-free data the next row (ties = TRUE,
    // same options) has the same matches, hence the same SE.
    const std::size_t rs = t.num("ties", r) == 0.0 ? r + 1 : r;
    if (!std::isnan(t.num("se_matched", rs)) && t.num("se_matched", rs) < 1e-12) {
      // one matched focal unit left (config 77): the variance is zero up to rounding in R
      CHECK(res.std_error_population < 1e-12);
      CHECK(res.effect.status == latentaudit::estimate_status::degenerate);
    } else if (!std::isnan(t.num("se_matched", rs))) {
      LATENTAUDIT_CHECK_CLOSE(res.std_error_population, t.num("se_matched", rs), rtol);
      LATENTAUDIT_CHECK_CLOSE(res.std_error_sample, t.num("se_matched_sample", rs), rtol);
    } else if (res.n_dropped == 0) {
      LATENTAUDIT_CHECK_CLOSE(res.std_error_population, t.num("se", rs), rtol);
      LATENTAUDIT_CHECK_CLOSE(res.std_error_sample, t.num("se_sample", rs), rtol);
    }
    o.dropped_variance = latentaudit::dropped_unit_variance::match_compatible;
    const auto rc = nearest_neighbor_matching(d.y, d.tr, d.x, d.k, o);
    LATENTAUDIT_CHECK_CLOSE(rc.std_error_population, t.num("se", rs), rtol);
    LATENTAUDIT_CHECK_CLOSE(rc.std_error_sample, t.num("se_sample", rs), rtol);
    LATENTAUDIT_CHECK_CLOSE(rc.effect.estimate, t.num("est", r), rtol);
    o.sample_variance = true;
    const auto rsmp = nearest_neighbor_matching(d.y, d.tr, d.x, d.k, o);
    LATENTAUDIT_CHECK_CLOSE(rsmp.effect.std_error, t.num("se_sample", rs), rtol);
  }
}

TEST_CASE("matching reproduces Match's matched rows (index.treated, index.control, weights)",
          "[estimators][matching]") {
  const auto t = latentaudit::test::read_golden_table("matching/configs.csv");
  std::size_t checked = 0;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    if (t.num("pairs", r) != 1.0) continue;
    const std::string id = t.str("id", r);
    INFO("config " << id);
    const auto d = load_data(t.str("data", r));
    const auto res = nearest_neighbor_matching(d.y, d.tr, d.x, d.k, options_of(t, r));
    const auto p = latentaudit::test::read_golden_table("matching/pairs_" + id + ".csv");
    REQUIRE(res.index_treated.size() == p.rows());
    const auto it = p.col("index_treated"), ic = p.col("index_control"), w = p.col("weight");
    std::size_t bad = 0;
    for (std::size_t i = 0; i < p.rows(); ++i) {
      if (static_cast<double>(res.index_treated[i]) != it[i] ||
          static_cast<double>(res.index_control[i]) != ic[i] ||
          !latentaudit::test::close(res.weights[i], w[i], 1e-14)) {
        ++bad;
      }
    }
    CHECK(bad == 0);
    ++checked;
  }
  CHECK(checked == 10);
}

TEST_CASE("matching balance table reproduces Matching:::balanceUV (sdiff / 100, variance ratios)",
          "[estimators][matching]") {
  const auto b = latentaudit::test::read_golden_table("matching/balance.csv");
  const auto t = latentaudit::test::read_golden_table("matching/configs.csv");
  for (std::size_t r = 0; r < b.rows(); ++r) {
    const auto id = static_cast<std::size_t>(b.num("id", r));
    const auto j = static_cast<std::size_t>(b.num("covariate", r));
    INFO("config " << id << " covariate " << j);
    const auto d = load_data(t.str("data", id - 1));
    auto o = options_of(t, id - 1);
    o.bias_adjust = false;
    o.var_calc = 0;
    const auto res = nearest_neighbor_matching(d.y, d.tr, d.x, d.k, o);
    const auto& cb = res.balance.at(j);
    LATENTAUDIT_CHECK_CLOSE(cb.mean_treated_before, b.num("mean_t_before", r), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(cb.mean_control_before, b.num("mean_c_before", r), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(100.0 * cb.smd_before, b.num("sdiff_before", r), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(cb.variance_ratio_before, b.num("var_ratio_before", r), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(cb.mean_treated_after, b.num("mean_t_after", r), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(cb.mean_control_after, b.num("mean_c_after", r), 1e-12);
    LATENTAUDIT_CHECK_CLOSE(100.0 * cb.smd_after, b.num("sdiff_after", r), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(cb.variance_ratio_after, b.num("var_ratio_after", r), 1e-10);
    CHECK(cb.name == std::string(1, 'x').append(std::to_string(j)));
  }
}

TEST_CASE("k-d tree matching equals the brute-force matcher on random data with ties (seeds 1-40)",
          "[estimators][matching]") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    auto g = latentaudit::make_stream({.seed = seed, .item = 0, .arm = 0, .replicate = 0});
    const std::size_t n = 60 + 7 * seed, k = 1 + seed % 3;
    std::vector<double> y(n), tr(n), x(n * k);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < k; ++j) {
        // half the covariates discrete on few levels: many exact ties
        x[i * k + j] = (j % 2 == 0) ? static_cast<double>(latentaudit::uniform_index(g, 3))
                                    : latentaudit::standard_normal(g);
      }
      tr[i] = latentaudit::uniform01(g) < 0.4 ? 1.0 : 0.0;
      y[i] = x[i * k] + 2.0 * tr[i] + latentaudit::standard_normal(g);
    }
    tr[0] = 1.0;
    tr[1] = 0.0;
    tr[2] = 1.0;
    tr[3] = 0.0;
    for (int est = 0; est <= 1; ++est) {
      for (std::size_t m : {1u, 2u}) {
        const double cal = seed % 4 == 0 ? 0.3 : 0.0;
        INFO("seed " << seed << " n " << n << " k " << k << " estimand " << est << " M " << m << " caliper "
                     << cal);
        const auto ref = latentaudit::test::reference_match(y, tr, x, k, est, m, cal);
        if (ref.rows.empty()) continue;
        matching_options o{.estimand = est == 0 ? matching_estimand::att : matching_estimand::ate,
                           .neighbors = m};
        if (cal > 0) o.caliper = {cal};
        o.if_degenerate = latentaudit::on_degenerate::flag;
        const auto res = nearest_neighbor_matching(y, tr, x, k, o);
        REQUIRE(res.n_rows == ref.rows.size());
        CHECK(res.n_dropped == ref.dropped);
        std::size_t bad = 0;
        for (std::size_t r = 0; r < ref.rows.size(); ++r) {
          const auto& rr = ref.rows[r];
          const bool ft = tr[rr.focal] == 1.0;
          const std::size_t it = ft ? rr.focal : rr.match, ic = ft ? rr.match : rr.focal;
          if (res.index_treated[r] != it || res.index_control[r] != ic || res.weights[r] != rr.weight) ++bad;
        }
        CHECK(bad == 0);
        LATENTAUDIT_CHECK_CLOSE(res.effect.estimate, ref.estimate, 1e-12);
        LATENTAUDIT_CHECK_CLOSE(res.std_error_population, ref.se_homoskedastic, 1e-10);
      }
    }
  }
}

TEST_CASE("matching results do not depend on the thread count", "[estimators][matching]") {
  auto g = latentaudit::make_stream({.seed = 77, .item = 0, .arm = 0, .replicate = 0});
  const std::size_t n = 5000, k = 3;
  std::vector<double> y(n), tr(n), x(n * k);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < k; ++j)
      x[i * k + j] =
          j == 2 ? static_cast<double>(latentaudit::uniform_index(g, 4)) : latentaudit::standard_normal(g);
    tr[i] = latentaudit::uniform01(g) < 0.3 ? 1.0 : 0.0;
    y[i] = x[i * k] - x[i * k + 1] + tr[i] + latentaudit::standard_normal(g);
  }
  matching_options o{.estimand = matching_estimand::ate, .neighbors = 2, .bias_adjust = true, .var_calc = 2};
  o.threads = 1;
  const auto a = nearest_neighbor_matching(y, tr, x, k, o);
  for (unsigned th : {2u, 3u, 8u}) {
    o.threads = th;
    const auto b = nearest_neighbor_matching(y, tr, x, k, o);
    CHECK(a.effect.estimate == b.effect.estimate);
    CHECK(a.effect.std_error == b.effect.std_error);
    CHECK(a.index_treated == b.index_treated);
    CHECK(a.index_control == b.index_control);
    CHECK(a.weights == b.weights);
  }
  // the effect is recovered (true effect 1; n = 5000, AI SE ~0.04: |err| < 5 SE)
  CHECK(std::fabs(a.effect.estimate - 1.0) < 5.0 * a.effect.std_error);
  CHECK(a.effect.method == "matching");
  CHECK(a.effect.estimand == "ate");
  CHECK(a.effect.ci_low < a.effect.estimate);
  CHECK(a.effect.p_value < 1e-6);
}

TEST_CASE("matching: the Mahalanobis distance is invariant to an invertible linear map of the covariates",
          "[estimators][matching]") {
  const auto d = load_data("smooth");
  std::vector<double> x2(d.x.size());
  for (std::size_t i = 0; i < d.y.size(); ++i) {
    x2[i * 2] = 3.0 * d.x[i * 2] + d.x[i * 2 + 1] + 10.0;
    x2[i * 2 + 1] = -0.5 * d.x[i * 2] + 2.0 * d.x[i * 2 + 1];
  }
  const matching_options o{.distance = latentaudit::matching_distance::mahalanobis};
  const auto a = nearest_neighbor_matching(d.y, d.tr, d.x, 2, o);
  const auto b = nearest_neighbor_matching(d.y, d.tr, x2, 2, o);
  CHECK(a.index_control == b.index_control);
  LATENTAUDIT_CHECK_CLOSE(a.effect.estimate, b.effect.estimate, 1e-12);
  // A user matrix equal to the identity reproduces the inverse-variance distance.
  matching_options u{.distance = latentaudit::matching_distance::user_matrix, .weight_matrix = {1, 0, 0, 1}};
  const auto c = nearest_neighbor_matching(d.y, d.tr, d.x, 2, u);
  const auto e = nearest_neighbor_matching(d.y, d.tr, d.x, 2);
  CHECK(c.index_control == e.index_control);
}

TEST_CASE("matching rejects bad input with messages naming function and argument", "[estimators][matching]") {
  const std::vector<double> y{1, 2, 3, 4, 5, 6}, tr{1, 0, 1, 0, 0, 0};
  const std::vector<double> x{0.1, 1, 0.5, 2, 0.9, 1, 0.3, 2, 0.2, 1, 0.7, 2};
  const std::string fn = "nearest_neighbor_matching: argument ";
  CHECK_THROWS_AS(nearest_neighbor_matching(y, tr, x, 3), latentaudit::shape_mismatch);
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, x, 0), fn + "'n_covariates' must be at least 1, got 0");
  const std::vector<double> all_t(6, 1.0), all_c(6, 0.0);
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, all_t, x, 2),
                    Contains(fn + "'treatment'") && Contains("both"));
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, all_c, x, 2), Contains("0 treated and 6 control"));
  std::vector<double> xn = x;
  xn[5] = std::nan("");
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, xn, 2),
                    Contains(fn + "'covariates'") && Contains("row 2") && Contains("'x1'"));
  const std::vector<double> xc{0.1, 7, 0.5, 7, 0.9, 7, 0.3, 7, 0.2, 7, 0.7, 7};
  matching_options named{.covariate_names = {"age", "dose"}};
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, xc, 2, named), Contains("constant covariate 'dose'"));
  const std::vector<double> trb{1, 0, 2, 0, 0, 0};
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, trb, x, 2), Contains(fn + "'treatment' must hold 0/1"));
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, x, 2, {.neighbors = 0}),
                    fn + "'options.neighbors' must be at least 1, got 0");
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, x, 2, {.neighbors = 5}),
                    Contains(fn + "'options.neighbors' must not exceed the pool") && Contains("(4)"));
  CHECK_THROWS_WITH(
      nearest_neighbor_matching(y, tr, x, 2, {.estimand = matching_estimand::ate, .neighbors = 3}),
      Contains("(2)"));
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, x, 2, {.var_calc = 2}),
                    Contains(fn + "'options.var_calc'"));
  matching_options cal{.caliper = {1e-6}};
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, x, 2, cal),
                    Contains(fn + "'options.caliper' drops every focal unit"));
  matching_options cal3{.caliper = {0.1, 0.2, 0.3}};
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, x, 2, cal3),
                    Contains("must hold 1 or n_covariates = 2 values"));
  matching_options calneg{.caliper = {-1}};
  CHECK_THROWS_AS(nearest_neighbor_matching(y, tr, x, 2, calneg), latentaudit::invalid_argument);
  matching_options ex{.exact = {5}};
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, x, 2, ex), Contains(fn + "'options.exact'"));
  matching_options wm{.distance = latentaudit::matching_distance::user_matrix, .weight_matrix = {1, 2, 0, 1}};
  CHECK_THROWS_WITH(nearest_neighbor_matching(y, tr, x, 2, wm),
                    Contains("'options.weight_matrix' must be symmetric"));
  matching_options wm3{.distance = latentaudit::matching_distance::user_matrix, .weight_matrix = {1, 0, 0}};
  CHECK_THROWS_AS(nearest_neighbor_matching(y, tr, x, 2, wm3), latentaudit::shape_mismatch);
  CHECK_THROWS_AS(nearest_neighbor_matching(y, tr, x, 2, {.level = 1.0}), latentaudit::invalid_argument);
  std::vector<double> yn = y;
  yn[0] = INFINITY;
  CHECK_THROWS_WITH(nearest_neighbor_matching(yn, tr, x, 2), Contains(fn + "'outcome'"));
  // identical outcomes: zero standard error -> numerical_error, or flagged
  const std::vector<double> yc(6, 1.0);
  CHECK_THROWS_AS(nearest_neighbor_matching(yc, tr, x, 2), latentaudit::numerical_error);
  const auto f = nearest_neighbor_matching(yc, tr, x, 2, {.if_degenerate = latentaudit::on_degenerate::flag});
  CHECK(f.effect.status == latentaudit::estimate_status::degenerate);
  CHECK(f.effect.estimate == 0.0);
  CHECK(std::isnan(f.effect.std_error));
}

TEST_CASE("matching: ties = false breaks exact ties by the lowest index, exact covariates match exactly",
          "[estimators][matching]") {
  // treated unit 0 at x = 0; controls 1, 2, 3 all at x = 1: the tie is exact in floating point
  const std::vector<double> y{5, 1, 2, 3, 6, 1}, tr{1, 0, 0, 0, 1, 0};
  const std::vector<double> x{0, 1, 1, 1, 3, 2.5};
  matching_options o{.ties = false};
  const auto a = nearest_neighbor_matching(y, tr, x, 1, o);
  REQUIRE(a.index_treated.size() == 2);
  CHECK(a.index_control[0] == 1);  // lowest of {1, 2, 3}
  CHECK(a.weights[0] == 1.0);
  o.ties = true;
  const auto b = nearest_neighbor_matching(y, tr, x, 1, o);
  REQUIRE(b.index_treated.size() == 4);  // 3 tied controls for unit 0, one for unit 4
  CHECK(b.index_control == std::vector<std::size_t>{1, 2, 3, 5});
  LATENTAUDIT_CHECK_CLOSE(b.weights[0], 1.0 / 3.0, 1e-15);
  LATENTAUDIT_CHECK_CLOSE(b.effect.estimate, ((5.0 - 2.0) + (6.0 - 1.0)) / 2.0, 1e-15);
  CHECK(b.n_matches_unique == 4);
  // exact matching on the discrete covariate of the "small" golden data set
  const auto d = load_data("small");
  const matching_options e{.estimand = matching_estimand::ate, .neighbors = 2, .exact = {1}};
  const auto r = nearest_neighbor_matching(d.y, d.tr, d.x, d.k, e);
  REQUIRE(r.n_rows > 0);
  for (std::size_t i = 0; i < r.n_rows; ++i)
    CHECK(d.x[r.index_treated[i] * d.k + 1] == d.x[r.index_control[i] * d.k + 1]);
}

TEST_CASE("matching: AI standard errors have near-nominal coverage (Monte Carlo, seeds 1000-1299)",
          "[estimators][matching]") {
  // y = x1 + 0.5 x2² + 1·T + N(0,1), P(T=1) = logistic(0.5 x1); ATT = 1. Bias-adjusted ATT, M = 2.
  // 300 replicates: the 99.9% binomial band for 95% coverage is 0.95 ± 3.29·0.0126 = [0.908, 0.991]; the mean
  // SE must be within 20% of the Monte-Carlo SD of the estimates (a 2× wrong SE fails both checks).
  const int reps = 300;
  int covered = 0;
  double se_sum = 0, e_sum = 0, e_ss = 0;
  for (int r = 0; r < reps; ++r) {
    auto g = latentaudit::make_stream(
        {.seed = 1000u + static_cast<std::uint64_t>(r), .item = 0, .arm = 0, .replicate = 0});
    const std::size_t n = 300;
    std::vector<double> y(n), tr(n), x(n * 2);
    for (std::size_t i = 0; i < n; ++i) {
      x[i * 2] = latentaudit::standard_normal(g);
      x[i * 2 + 1] = latentaudit::standard_normal(g);
      tr[i] = latentaudit::uniform01(g) < 1.0 / (1.0 + std::exp(-0.5 * x[i * 2])) ? 1.0 : 0.0;
      y[i] = x[i * 2] + 0.5 * x[i * 2 + 1] * x[i * 2 + 1] + tr[i] + latentaudit::standard_normal(g);
    }
    const auto res = nearest_neighbor_matching(y, tr, x, 2, {.neighbors = 2, .bias_adjust = true});
    covered += (res.effect.ci_low <= 1.0 && 1.0 <= res.effect.ci_high) ? 1 : 0;
    se_sum += res.effect.std_error;
    e_sum += res.effect.estimate;
    e_ss += res.effect.estimate * res.effect.estimate;
  }
  const double cov = covered / static_cast<double>(reps);
  const double mean = e_sum / reps, sd = std::sqrt((e_ss - reps * mean * mean) / (reps - 1));
  INFO("coverage " << cov << ", mean SE " << se_sum / reps << ", MC SD " << sd << ", mean estimate " << mean);
  CHECK(cov >= 0.908);
  CHECK(cov <= 0.991);
  CHECK(se_sum / reps / sd > 0.8);
  CHECK(se_sum / reps / sd < 1.25);
}
