// SPDX-License-Identifier: MIT
// Tests for `latentaudit estimate ipw|aipw|cate|rosenbaum`: the JSON equals the library's result
// bit for bit on the golden data sets, bad input exits 2 with one line naming the problem, and
// --help documents every option.
#include <latentaudit/core/json.hpp>
#include <latentaudit/estimators/heterogeneity.hpp>
#include <latentaudit/estimators/sensitivity.hpp>
#include <latentaudit/estimators/weighting.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/golden.hpp"

#ifdef LATENTAUDIT_CLI_PATH
#include "support/cli_runner.hpp"

using namespace latentaudit;
using latentaudit::test::golden_path;
using latentaudit::test::read_golden_table;
using test::expect_one_line_error;
using test::ok_json;
using test::run_cli;

namespace {

struct wdata {
  std::vector<double> y, t;
  Eigen::MatrixXd x;
};

wdata weighting_data() {
  const auto g = read_golden_table("weighting/data.csv");
  wdata d{g.col("y"), g.col("t"), Eigen::MatrixXd(static_cast<Eigen::Index>(g.rows()), 3)};
  const char* cols[] = {"x1", "x2", "x3"};
  for (int j = 0; j < 3; ++j) {
    const auto c = g.col(cols[j]);
    for (std::size_t i = 0; i < c.size(); ++i) d.x(static_cast<Eigen::Index>(i), j) = c[i];
  }
  return d;
}

}  // namespace

TEST_CASE("cli estimate ipw / aipw equal the library", "[cli][weighting]") {
  const auto d = weighting_data();
  const std::string data = golden_path("weighting/data.csv");
  const auto j = ok_json({"estimate", "ipw", "--data", data, "--outcome", "y", "--treatment", "t",
                          "--covariates", "x1,x2,x3", "--estimand", "att", "--normalization", "ht", "--trim",
                          "0.05", "--trim-mode", "drop"});
  const auto r = ipw(d.y, d.t, d.x,
                     {.estimand = weighting_estimand::att,
                      .normalization = ipw_normalization::horvitz_thompson,
                      .trimming = propensity_trimming::drop,
                      .trim_epsilon = 0.05});
  CHECK(j.at("method").as_string() == "ipw_horvitz_thompson");
  CHECK(j.at("estimand").as_string() == "att");
  CHECK(j.at("estimate").as_number() == r.effect.estimate);
  CHECK(j.at("std_error").as_number() == r.effect.std_error);
  CHECK(j.at("ci_low").as_number() == r.effect.ci_low);
  CHECK(j.at("p_value").as_number() == r.effect.p_value);
  CHECK(j.at("n_trimmed").as_number() == static_cast<double>(r.n_trimmed));
  CHECK(j.at("variance").as_string() == "stacked");
  CHECK(j.at("propensity_coefficients").at(std::size_t{1}).as_number() == r.propensity_model.coefficients[1]);
  CHECK(j.at("df").is_null());

  const auto k = ok_json({"estimate", "ipw", "--data", data, "--outcome", "y", "--treatment", "t",
                          "--covariates", "x1,x2,x3", "--variance", "known", "--level", "0.9"});
  const auto rk = ipw(d.y, d.t, d.x, {.variance = ipw_variance::weights_known, .level = 0.9});
  CHECK(k.at("std_error").as_number() == rk.effect.std_error);
  CHECK(k.at("ci_high").as_number() == rk.effect.ci_high);

  const auto a = ok_json({"estimate", "aipw", "--data", data, "--outcome", "y", "--treatment", "t",
                          "--covariates", "x1,x2,x3", "--trim", "0.05"});
  const auto ra = aipw(d.y, d.t, d.x, {.trimming = propensity_trimming::clip, .trim_epsilon = 0.05});
  CHECK(a.at("method").as_string() == "aipw");
  CHECK(a.at("estimate").as_number() == ra.effect.estimate);
  CHECK(a.at("std_error").as_number() == ra.effect.std_error);
  CHECK(a.at("mean_treated").as_number() == ra.mean_treated);
}

TEST_CASE("cli estimate cate equals the library (labels, integers, bins, pairs)", "[cli][weighting]") {
  const auto g = read_golden_table("heterogeneity/unpaired.csv");
  const auto y = g.col("y"), t = g.col("t"), m = g.col("m");
  const std::string data = golden_path("heterogeneity/unpaired.csv");
  const auto j = ok_json({"estimate", "cate", "--data", data, "--outcome", "y", "--treatment", "t", "--by",
                          "gs", "--covariance", "hc2"});
  const auto& gs = g.text.at("gs");
  const auto r =
      subgroup_effects(y, t, std::span<const std::string>(gs), {.covariance = interaction_covariance::hc2});
  CHECK(j.at("statistic").as_number() == r.interaction.chi_square);
  CHECK(j.at("p_value").as_number() == r.interaction.p_chi_square);
  CHECK(j.at("p_f").as_number() == r.interaction.p_f);
  REQUIRE(j.at("groups").size() == r.groups.size());
  for (std::size_t k = 0; k < r.groups.size(); ++k) {
    const auto& e = j.at("groups").at(k);
    CHECK(e.at("group").as_string() == r.groups[k].label);
    CHECK(e.at("estimate").as_number() == r.groups[k].effect.estimate);
    CHECK(e.at("ci_high").as_number() == r.groups[k].effect.ci_high);
    CHECK(e.at("p_holm").as_number() == r.groups[k].p_holm);
    CHECK(e.at("p_bh").as_number() == r.groups[k].p_bh);
  }
  // Integer labels are ordered numerically: 2, 7, 10, 33.
  const auto ji =
      ok_json({"estimate", "cate", "--data", data, "--outcome", "y", "--treatment", "t", "--by", "gi"});
  CHECK(ji.at("groups").at(std::size_t{0}).at("group").as_string() == "2");
  CHECK(ji.at("groups").at(std::size_t{2}).at("group").as_string() == "10");
  // Bins.
  const auto jb = ok_json(
      {"estimate", "cate", "--data", data, "--outcome", "y", "--treatment", "t", "--by", "m", "--bins", "4"});
  const auto rb = subgroup_effects_binned(y, t, m, 4);
  CHECK(jb.at("statistic").as_number() == rb.interaction.chi_square);
  CHECK(jb.at("groups").at(std::size_t{3}).at("upper_edge").as_number() == rb.groups[3].upper_edge);
  // Paired (wide layout).
  const auto p = read_golden_table("heterogeneity/paired.csv");
  const auto jp = ok_json({"estimate", "cate", "--data", golden_path("heterogeneity/paired.csv"),
                           "--outcome-treated", "y1", "--outcome-control", "y0", "--by", "gs"});
  const auto& pg = p.text.at("gs");
  const auto rp = paired_subgroup_effects(p.col("y1"), p.col("y0"), std::span<const std::string>(pg));
  CHECK(jp.at("design").as_string() == "paired");
  CHECK(jp.at("statistic").as_number() == rp.interaction.chi_square);
  CHECK(jp.at("groups").at(std::size_t{1}).at("estimate").as_number() == rp.groups[1].effect.estimate);
  CHECK(jp.at("n_pairs").as_number() == 120);
}

TEST_CASE("cli estimate rosenbaum equals the library", "[cli][weighting]") {
  const auto p = read_golden_table("sensitivity/pairs.csv");
  const auto tr = p.col("treated"), ct = p.col("control");
  const std::string data = golden_path("sensitivity/pairs.csv");
  const auto j = ok_json({"estimate", "rosenbaum", "--data", data, "--outcome-treated", "treated",
                          "--outcome-control", "control", "--gamma", "1.5", "--alpha", "0.01"});
  const auto b = rosenbaum_signed_rank(tr, ct, 1.5);
  const auto c = rosenbaum_critical_gamma(tr, ct, 0.01);
  CHECK(j.at("p_value").as_number() == b.p_upper);
  CHECK(j.at("p_lower").as_number() == b.p_lower);
  CHECK(j.at("statistic").as_number() == b.statistic);
  CHECK(j.at("critical_gamma").as_number() == c.gamma);
  CHECK(j.at("n_zero").as_number() == 2);
  CHECK(j.at("n_pairs").as_number() == 40);
  const auto s = read_golden_table("sensitivity/small_pairs.csv");
  const auto je =
      ok_json({"estimate", "rosenbaum", "--data", golden_path("sensitivity/small_pairs.csv"),
               "--outcome-treated", "treated", "--outcome-control", "control", "--gamma", "2", "--exact"});
  CHECK(je.at("method").as_string() == "rosenbaum_signed_rank_exact");
  CHECK(je.at("p_upper").as_number() ==
        rosenbaum_signed_rank(s.col("treated"), s.col("control"), 2.0, {.exact = true}).p_upper);
}

TEST_CASE("cli estimate ipw|aipw|cate|rosenbaum: bad input exits 2 with one line", "[cli][weighting]") {
  const std::string wd = golden_path("weighting/data.csv");
  const std::vector<std::string> base{"estimate", "ipw", "--data", wd, "--outcome", "y", "--treatment", "t"};
  auto with = [&](std::vector<std::string> extra, std::vector<std::string> b) {
    b.insert(b.end(), extra.begin(), extra.end());
    return b;
  };
  expect_one_line_error(run_cli(base), "--covariates");
  expect_one_line_error(run_cli(with({"--covariates", "x1,,x2"}, base)), "empty column name");
  expect_one_line_error(run_cli(with({"--covariates", "x1,nope"}, base)), "no column 'nope'");
  expect_one_line_error(run_cli(with({"--covariates", "x1", "--trim", "0.7"}, base)), "--trim");
  expect_one_line_error(run_cli(with({"--covariates", "x1", "--trim-mode", "drop"}, base)),
                        "--trim-mode needs --trim");
  expect_one_line_error(run_cli(with({"--covariates", "x1", "--estimand", "atc"}, base)), "--estimand");
  expect_one_line_error(run_cli(with({"--covariates", "x1", "--normalization", "x"}, base)),
                        "--normalization");
  expect_one_line_error(run_cli({"estimate", "aipw", "--data", wd, "--outcome", "y", "--treatment", "t",
                                 "--covariates", "x1", "--variance", "known"}),
                        "--variance");
  // Separation in the propensity model.
  expect_one_line_error(
      run_cli({"estimate", "ipw", "--data", golden_path("weighting/separation_complete.csv"), "--outcome",
               "x2", "--treatment", "t", "--covariates", "x1,x2"}),
      "separation");
  // cate / rosenbaum.
  const std::string hd = golden_path("heterogeneity/unpaired.csv");
  expect_one_line_error(run_cli({"estimate", "cate", "--data", hd, "--outcome", "y", "--treatment", "t"}),
                        "--by");
  expect_one_line_error(run_cli({"estimate", "cate", "--data", hd, "--outcome", "y", "--treatment", "t",
                                 "--by", "m", "--bins", "1"}),
                        "--bins");
  expect_one_line_error(run_cli({"estimate", "cate", "--data", hd, "--outcome", "y", "--treatment", "t",
                                 "--by", "gs", "--covariance", "hc4"}),
                        "--covariance");
  expect_one_line_error(
      run_cli({"estimate", "cate", "--data", hd, "--outcome", "y", "--treatment", "t", "--by", "y"}),
      "group");
  const std::string pd = golden_path("sensitivity/pairs.csv");
  expect_one_line_error(run_cli({"estimate", "rosenbaum", "--data", pd, "--outcome-treated", "treated",
                                 "--outcome-control", "control", "--gamma", "0.5"}),
                        "--gamma");
  expect_one_line_error(run_cli({"estimate", "rosenbaum", "--data", pd, "--outcome-treated", "treated",
                                 "--outcome-control", "control", "--alpha", "0.7"}),
                        "--alpha");
}

TEST_CASE("cli estimate ipw|aipw|cate|rosenbaum --help documents every option", "[cli][weighting]") {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"ipw",
       {"--data", "--outcome", "--treatment", "--covariates", "--estimand", "--normalization", "--variance",
        "--trim", "--trim-mode", "--level"}},
      {"aipw",
       {"--data", "--outcome", "--treatment", "--covariates", "--estimand", "--trim", "--trim-mode",
        "--level"}},
      {"cate",
       {"--data", "--outcome", "--treatment", "--outcome-treated", "--outcome-control", "--by", "--bins",
        "--covariance", "--level"}},
      {"rosenbaum",
       {"--data", "--outcome-treated", "--outcome-control", "--pair", "--gamma", "--alpha", "--exact"}},
  };
  for (const auto& [m, opts] : cases) {
    INFO(m);
    const auto r = run_cli({"estimate", m, "--help"});
    CHECK(r.code == 0);
    CHECK(r.out.rfind("usage: latentaudit estimate " + m, 0) == 0);
    for (const auto& o : opts) {
      INFO(o);
      CHECK(r.out.find("  " + o + " ") != std::string::npos);
    }
  }
}

#endif  // LATENTAUDIT_CLI_PATH (without the CLI the file holds no case: none passes unrun)
