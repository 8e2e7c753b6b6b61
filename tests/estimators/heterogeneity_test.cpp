// SPDX-License-Identifier: MIT
// Tests of estimators/heterogeneity.hpp against R (tests/golden/heterogeneity/generate.R):
// subgroup t.test (Welch / paired), p.adjust Holm / BH, lm interaction with
// sandwich::vcovHC(HC0–HC3) and lmtest::waldtest (Chisq / F); quantile bins (type 7); bad input.
#include <latentaudit/estimators/heterogeneity.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/common.hpp"
#include "support/golden.hpp"

using namespace latentaudit;
using latentaudit::test::read_golden_table;

namespace {

const interaction_covariance all_types[] = {interaction_covariance::hc0, interaction_covariance::hc1,
                                            interaction_covariance::hc2, interaction_covariance::hc3};

/// Compares a result with the golden rows of one analysis (groups in the same order).
void check_against_r(const heterogeneity_result& r, const std::string& analysis, interaction_covariance type,
                     bool bins) {
  const auto sub = read_golden_table("heterogeneity/subgroups.csv");
  std::size_t k = 0;
  for (std::size_t i = 0; i < sub.rows(); ++i) {
    if (sub.str("analysis", i) != analysis) continue;
    REQUIRE(k < r.groups.size());
    const auto& g = r.groups[k];
    INFO(analysis << " group " << sub.str("group", i));
    CHECK(g.label == (bins ? std::string(1, 'Q').append(sub.str("group", i)) : sub.str("group", i)));
    LATENTAUDIT_CHECK_CLOSE(g.effect.estimate, sub.num("estimate", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(g.effect.std_error, sub.num("se", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(g.effect.df, sub.num("df", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(g.effect.statistic, sub.num("statistic", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(g.effect.p_value, sub.num("p", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(g.effect.ci_low, sub.num("ci_low", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(g.effect.ci_high, sub.num("ci_high", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(g.p_holm, sub.num("p_holm", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(g.p_bh, sub.num("p_bh", i), 1e-10);
    if (bins) {
      LATENTAUDIT_CHECK_CLOSE(g.lower_edge, sub.num("lower_edge", i), 1e-15);
      LATENTAUDIT_CHECK_CLOSE(g.upper_edge, sub.num("upper_edge", i), 1e-15);
    }
    ++k;
  }
  CHECK(k == r.groups.size());
  const auto inter = read_golden_table("heterogeneity/interaction.csv");
  static const char* names[] = {"HC0", "HC1", "HC2", "HC3"};
  bool found = false;
  for (std::size_t i = 0; i < inter.rows(); ++i) {
    if (inter.str("analysis", i) != analysis || inter.str("type", i) != names[static_cast<int>(type)])
      continue;
    found = true;
    INFO(analysis << " " << names[static_cast<int>(type)]);
    CHECK(r.interaction.covariance == names[static_cast<int>(type)]);
    LATENTAUDIT_CHECK_CLOSE(r.interaction.chi_square, inter.num("chisq", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(r.interaction.df, inter.num("df", i), 0.0);
    LATENTAUDIT_CHECK_CLOSE(r.interaction.p_chi_square, inter.num("p_chisq", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(r.interaction.f, inter.num("f", i), 1e-10);
    LATENTAUDIT_CHECK_CLOSE(r.interaction.df_residual, inter.num("df_residual", i), 0.0);
    LATENTAUDIT_CHECK_CLOSE(r.interaction.p_f, inter.num("p_f", i), 1e-10);
  }
  CHECK(found);
}

struct unpaired_data {
  std::vector<double> y, t, m;
  std::vector<std::string> gs;
  std::vector<std::int64_t> gi;
};

unpaired_data load_unpaired() {
  const auto g = read_golden_table("heterogeneity/unpaired.csv");
  unpaired_data d{g.col("y"), g.col("t"), g.col("m"), g.text.at("gs"), {}};
  for (double v : g.col("gi")) d.gi.push_back(static_cast<std::int64_t>(v));
  return d;
}

using latentaudit::test::message_of;

}  // namespace

TEST_CASE("subgroup_effects reproduces R t.test + p.adjust + lm/vcovHC/waldtest",
          "[estimators][heterogeneity]") {
  const auto d = load_unpaired();
  for (auto type : all_types) {
    const heterogeneity_options o{.covariance = type};
    check_against_r(subgroup_effects(d.y, d.t, std::span<const std::string>(d.gs), o), "str", type, false);
    check_against_r(subgroup_effects(d.y, d.t, std::span<const std::int64_t>(d.gi), o), "int", type, false);
    const auto b = subgroup_effects_binned(d.y, d.t, d.m, 4, o);
    check_against_r(b, "bins4", type, true);
    REQUIRE(b.bin_edges.size() == 5);
  }
  // int labels give the same as int64 labels.
  std::vector<int> gi32(d.gi.begin(), d.gi.end());
  const auto a = subgroup_effects(d.y, d.t, std::span<const int>(gi32));
  check_against_r(a, "int", interaction_covariance::hc3, false);
  CHECK(a.groups[0].effect.method == "welch");
}

TEST_CASE("paired_subgroup_effects reproduces R paired t.test and lm(d ~ group) Wald tests",
          "[estimators][heterogeneity]") {
  const auto g = read_golden_table("heterogeneity/paired.csv");
  const auto y1 = g.col("y1"), y0 = g.col("y0"), m = g.col("m");
  const auto& gs = g.text.at("gs");
  for (auto type : all_types) {
    const heterogeneity_options o{.covariance = type};
    const auto r = paired_subgroup_effects(y1, y0, std::span<const std::string>(gs), o);
    CHECK(r.groups[0].effect.method == "paired_t");
    check_against_r(r, "paired_str", type, false);
    check_against_r(paired_subgroup_effects_binned(y1, y0, m, 3, o), "paired_bins3", type, true);
  }
}

TEST_CASE("quantile_type7 matches R's quantile on hand-checked values", "[estimators][heterogeneity]") {
  const std::vector<double> x{5, 1, 4, 2, 3};  // sorted 1..5: quantile(x, .3) = 2.2 in R
  CHECK(quantile_type7(x, 0.3) == Approx(2.2).epsilon(1e-15));
  CHECK(quantile_type7(x, 0.0) == 1.0);
  CHECK(quantile_type7(x, 1.0) == 5.0);
  CHECK(quantile_type7(x, 0.5) == 3.0);
  const std::vector<double> y{10, 20};
  CHECK(quantile_type7(y, 0.25) == Approx(12.5).epsilon(1e-15));
  CHECK_THROWS_AS(quantile_type7(x, 1.5), invalid_argument);
  CHECK_THROWS_AS(quantile_type7(std::vector<double>{}, 0.5), invalid_argument);
}

TEST_CASE("interaction test: homogeneous effects give a uniform-ish p, a strong interaction a tiny p",
          "[estimators][heterogeneity]") {
  // Deterministic data: effect 1 in group a, 1 in group b (no heterogeneity, identical residual
  // patterns) gives W = 0; effect 5 in group b gives a large W.
  std::vector<double> y, t;
  std::vector<std::string> g;
  const double noise[] = {0.3, -0.2, 0.5, -0.6, 0.1, -0.1};
  for (int grp = 0; grp < 2; ++grp)
    for (int arm = 0; arm < 2; ++arm)
      for (double e : noise) {
        y.push_back(arm * (grp == 0 ? 1.0 : 1.0) + e);
        t.push_back(arm);
        g.push_back(grp == 0 ? "a" : "b");
      }
  const auto r0 = subgroup_effects(y, t, std::span<const std::string>(g));
  CHECK(r0.interaction.chi_square == Approx(0.0).margin(1e-20));
  CHECK(r0.interaction.p_chi_square == Approx(1.0));
  for (std::size_t i = 0; i < y.size(); ++i)
    if (g[i] == "b" && t[i] == 1.0) y[i] += 4.0;
  const auto r1 = subgroup_effects(y, t, std::span<const std::string>(g));
  CHECK(r1.interaction.p_chi_square < 1e-10);
  CHECK(r1.interaction.p_f < 1e-6);
  CHECK(r1.groups[1].effect.estimate == Approx(5.0));
}

TEST_CASE("heterogeneity: bad input throws with function and argument named", "[estimators][heterogeneity]") {
  const auto d = load_unpaired();
  const std::span<const std::string> gs(d.gs);
  // One group only.
  std::vector<std::string> one(d.y.size(), "all");
  CHECK(message_of([&] {
          (void)subgroup_effects(d.y, d.t, std::span<const std::string>(one));
        }).find("subgroup_effects: argument 'groups' must contain at least 2 distinct groups") == 0);
  // A group with too few treated units (empty arm in a group).
  auto g2 = d.gs;
  g2[0] = "lonely";
  const auto m = message_of([&] { (void)subgroup_effects(d.y, d.t, std::span<const std::string>(g2)); });
  CHECK(m.find("group 'lonely' has") != std::string::npos);
  CHECK_THROWS_AS(subgroup_effects(d.y, d.t, std::span<const std::string>(g2)), invalid_argument);
  // NaN outcome, bad treatment, size mismatch.
  auto y2 = d.y;
  y2[3] = std::nan("");
  CHECK(message_of([&] { (void)subgroup_effects(y2, d.t, gs); }).find("subgroup_effects: argument 'y'") == 0);
  auto t2 = d.t;
  t2[1] = 2.0;
  CHECK(message_of([&] {
          (void)subgroup_effects(d.y, t2, gs);
        }).find("subgroup_effects: argument 'treatment'") == 0);
  CHECK_THROWS_AS(subgroup_effects(std::span<const double>(d.y).first(10), d.t, gs), shape_mismatch);
  CHECK_THROWS_AS(subgroup_effects(d.y, d.t, gs.first(10)), shape_mismatch);
  // Bins: K < 2, K > n, tied breaks, NaN moderator.
  CHECK(message_of([&] {
          (void)subgroup_effects_binned(d.y, d.t, d.m, 1);
        }).find("subgroup_effects_binned: argument 'bins'") == 0);
  std::vector<double> tied(d.y.size(), 1.0);
  tied[0] = 2.0;
  CHECK(message_of([&] { (void)subgroup_effects_binned(d.y, d.t, tied, 3); }).find("tied quantile breaks") !=
        std::string::npos);
  auto m2 = d.m;
  m2[5] = INFINITY;
  CHECK_THROWS_AS(subgroup_effects_binned(d.y, d.t, m2, 3), invalid_argument);
  // Level.
  CHECK(message_of([&] {
          (void)subgroup_effects(d.y, d.t, gs, {.level = 0.0});
        }).find("subgroup_effects: argument 'level'") == 0);
  // Paired: one pair in a group, mismatched sizes.
  const std::vector<double> a{1, 2, 3, 4, 5}, b{0, 1, 1, 2, 2};
  const std::vector<int> pg{1, 1, 1, 1, 2};
  CHECK(message_of([&] {
          (void)paired_subgroup_effects(a, b, std::span<const int>(pg));
        }).find("group '2' has 1 pair") != std::string::npos);
  CHECK_THROWS_AS(paired_subgroup_effects(a, std::span<const double>(b).first(4), std::span<const int>(pg)),
                  shape_mismatch);
  // Constant data in a group: per the degenerate policy.
  const std::vector<double> c1{1, 1, 1, 2, 3, 4}, c0{0, 0, 0, 1, 1, 1};
  const std::vector<int> cg{1, 1, 1, 2, 2, 2};
  CHECK_THROWS_AS(paired_subgroup_effects(c1, c0, std::span<const int>(cg)), numerical_error);
  const auto f =
      paired_subgroup_effects(c1, c0, std::span<const int>(cg), {.if_degenerate = on_degenerate::flag});
  CHECK(f.groups[0].effect.status == estimate_status::degenerate);
  CHECK(std::isnan(f.groups[0].p_holm));
  CHECK(f.groups[1].effect.status == estimate_status::ok);
  CHECK(f.interaction.status == estimate_status::ok);
  // Constant differences in every group: the interaction regression fits exactly.
  const std::vector<double> e1{2, 2, 3, 3}, e0{1, 1, 1, 1};
  const std::vector<int> eg{1, 1, 2, 2};
  const auto h =
      paired_subgroup_effects(e1, e0, std::span<const int>(eg), {.if_degenerate = on_degenerate::flag});
  CHECK(h.interaction.status == estimate_status::degenerate);
  CHECK(std::isnan(h.interaction.chi_square));
  CHECK(std::isnan(h.interaction.p_f));
}
