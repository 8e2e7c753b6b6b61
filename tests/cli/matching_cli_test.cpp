// SPDX-License-Identifier: MIT
// Tests of `latentaudit estimate matching` (tools/cli/estimate_matching.cpp): the JSON equals the
// library's nearest_neighbor_matching bit for bit on the golden "small" data set, options map onto
// matching_options, and bad input exits 2 with one line on stderr naming the problem.
#include <latentaudit/core/json.hpp>
#include <latentaudit/estimators/matching.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/golden.hpp"

#ifdef LATENTAUDIT_CLI_PATH
#include "support/cli_runner.hpp"
#include "support/common.hpp"

using latentaudit::json_value;
using latentaudit::test::expect_one_line_error;
using latentaudit::test::run_cli;

namespace {

using latentaudit::test::num;

std::string data_path() { return latentaudit::test::golden_path("matching/data_small.csv"); }

struct small_data {
  std::vector<double> y, tr, x;
};

small_data load_small() {
  const auto t = latentaudit::test::read_golden_table("matching/data_small.csv");
  small_data d{t.col("y"), t.col("tr"), {}};
  const auto x1 = t.col("x1"), x2 = t.col("x2"), x3 = t.col("x3");
  for (std::size_t i = 0; i < x1.size(); ++i) d.x.insert(d.x.end(), {x1[i], x2[i], x3[i]});
  return d;
}

}  // namespace

TEST_CASE("estimate matching prints the library's result bit for bit", "[cli][matching]") {
  const auto d = load_small();
  struct variant {
    std::vector<std::string> args;
    latentaudit::matching_options options;
  };
  const std::vector<variant> variants = {
      {{}, {}},
      {{"--estimand", "ate", "--neighbors", "3", "--bias-adjust", "--var-calc", "2"},
       {.estimand = latentaudit::matching_estimand::ate, .neighbors = 3, .bias_adjust = true, .var_calc = 2}},
      {{"--estimand", "atc", "--distance", "mahalanobis", "--no-ties", "--level", "0.9", "--sample-variance"},
       {.estimand = latentaudit::matching_estimand::atc,
        .distance = latentaudit::matching_distance::mahalanobis,
        .ties = false,
        .sample_variance = true,
        .level = 0.9}},
      {{"--caliper", "0.5", "--exact", "x2", "--threads", "2"}, {.caliper = {0.5}, .exact = {1}}},
  };
  for (const auto& v : variants) {
    std::vector<std::string> args = {"estimate", "matching",    "--data", data_path(),    "--outcome",
                                     "y",        "--treatment", "tr",     "--covariates", "x1,x2,x3"};
    args.insert(args.end(), v.args.begin(), v.args.end());
    std::string shown;
    for (const auto& a : v.args) shown.append(a).append(" ");
    INFO("options: " << shown);
    const auto r = run_cli(args);
    INFO("stderr: " << r.err);
    REQUIRE(r.code == 0);
    const json_value j = latentaudit::parse_json(r.out);
    auto o = v.options;
    o.covariate_names = {"x1", "x2", "x3"};
    const auto lib = latentaudit::nearest_neighbor_matching(d.y, d.tr, d.x, 3, o);
    CHECK(j.at("method").as_string() == "matching");
    CHECK(j.at("estimand").as_string() == lib.effect.estimand);
    CHECK(num(j, "estimate") == lib.effect.estimate);
    CHECK(num(j, "std_error") == lib.effect.std_error);
    CHECK(num(j, "ci_low") == lib.effect.ci_low);
    CHECK(num(j, "ci_high") == lib.effect.ci_high);
    CHECK(num(j, "p_value") == lib.effect.p_value);
    CHECK(num(j, "level") == lib.effect.level);
    CHECK(num(j, "estimate_unadjusted") == lib.estimate_unadjusted);
    CHECK(num(j, "n_matched") == static_cast<double>(lib.n_matched));
    CHECK(num(j, "n_dropped") == static_cast<double>(lib.n_dropped));
    CHECK(num(j, "n_pairs") == static_cast<double>(lib.n_rows));
    REQUIRE(j.at("balance").as_array().size() == 3);
    CHECK(j.at("balance").as_array()[1].at("covariate").as_string() == "x2");
    CHECK(num(j.at("balance").as_array()[2], "smd_after") == lib.balance[2].smd_after);
  }
}

TEST_CASE("estimate matching: bad input exits 2 with one line naming the problem", "[cli][matching]") {
  const std::vector<std::string> base = {"estimate",  "matching", "--data",      data_path(),
                                         "--outcome", "y",        "--treatment", "tr"};
  struct bad {
    std::vector<std::string> extra;
    std::string needle;
  };
  const std::vector<bad> cases = {
      {{}, "--covariates"},
      {{"--covariates", "x1,,x2"}, "comma-separated"},
      {{"--covariates", "x1,nope"}, "nope"},
      {{"--covariates", "x1", "--estimand", "att2"}, "--estimand"},
      {{"--covariates", "x1", "--neighbors", "0"}, "--neighbors"},
      {{"--covariates", "x1", "--neighbors", "500"}, "options.neighbors"},
      {{"--covariates", "x1", "--distance", "euclid"}, "--distance"},
      {{"--covariates", "x1", "--ties", "--no-ties"}, "exclude each other"},
      {{"--covariates", "x1", "--caliper", "-1"}, "--caliper"},
      {{"--covariates", "x1", "--caliper", "1e-9"}, "drops every focal unit"},
      {{"--covariates", "x1", "--exact", "x3"}, "not among --covariates"},
      {{"--covariates", "x1", "--var-calc", "1000"}, "options.var_calc"},
  };
  for (const auto& c : cases) {
    auto args = base;
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    expect_one_line_error(run_cli(args), c.needle);
  }
  const auto h = run_cli({"estimate", "matching", "--help"});
  CHECK(h.code == 0);
  for (const char* opt : {"--covariates", "--estimand", "--neighbors", "--distance", "--ties", "--no-ties",
                          "--caliper", "--exact", "--bias-adjust", "--var-calc"}) {
    CHECK(h.out.find(opt) != std::string::npos);
  }
}

#endif  // LATENTAUDIT_CLI_PATH
