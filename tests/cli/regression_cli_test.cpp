// SPDX-License-Identifier: MIT
// Tests for `latentaudit estimate ols|did|event-study|iv`: the JSON equals the library's result
// bit for bit on the golden data sets, bad input exits 2 with one line naming the problem, and
// --help documents every option.
#include <latentaudit/core/json.hpp>
#include <latentaudit/estimators/difference_in_differences.hpp>
#include <latentaudit/estimators/instrumental.hpp>
#include <latentaudit/estimators/regression.hpp>

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

/// Text labels of a numeric id column, as the CLI reads them (the CSV text of each cell).
std::vector<std::string> labels(const test::golden_table& t, const std::string& col) {
  return t.text.at(col);
}

std::vector<long long> integers(const std::vector<double>& v) {
  std::vector<long long> out;
  for (double x : v) out.push_back(static_cast<long long>(x));
  return out;
}

void check_effect(const json_value& j, const effect_estimate& e) {
  CHECK(j.at("method").as_string() == e.method);
  CHECK(j.at("estimate").as_number() == e.estimate);
  CHECK(j.at("std_error").as_number() == e.std_error);
  CHECK(j.at("ci_low").as_number() == e.ci_low);
  CHECK(j.at("ci_high").as_number() == e.ci_high);
  CHECK(j.at("p_value").as_number() == e.p_value);
}

}  // namespace

TEST_CASE("cli estimate ols equals the library", "[cli][regression]") {
  const auto g = read_golden_table("regression/data.csv");
  const std::string data = golden_path("regression/data.csv");
  const auto y = g.col("y");
  const auto x = design_builder(y.size())
                     .intercept()
                     .add("x1", g.col("x1"))
                     .add("x2", g.col("x2"))
                     .add("x3", g.col("x3"))
                     .build();
  const auto cl = labels(g, "cl");
  const auto groups = make_group_index(std::span<const std::string>(cl));
  const auto lib = ols(
      x, y, groups, {.covariance = covariance_type::cr1, .distribution = reference_distribution::t_cluster});
  const auto j = ok_json({"estimate", "ols", "--data", data, "--outcome", "y", "--covariates", "x1,x2,x3",
                          "--cluster", "cl", "--cov", "cr1", "--dist", "t-cluster"});
  check_effect(j, lib.terms[1]);
  CHECK(j.at("term").as_string() == "x1");
  CHECK(j.at("clusters").as_number() == 30);
  CHECK(j.at("covariance").as_string() == "cr1");
  CHECK(j.at("distribution").as_string() == "t-cluster");
  REQUIRE(j.at("terms").size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(j.at("terms").at(i).at("term").as_string() == lib.names[i]);
    check_effect(j.at("terms").at(i), lib.terms[i]);
  }
  const auto lib3 = ols(x, y, {.covariance = covariance_type::hc3});
  const auto j3 = ok_json(
      {"estimate", "ols", "--data", data, "--outcome", "y", "--covariates", "x1,x2,x3", "--cov", "hc3"});
  check_effect(j3, lib3.terms[1]);
  CHECK(j3.at("clusters").is_null());
  CHECK(j3.at("df").as_number() == 236);
}

TEST_CASE("cli estimate did and event-study equal the library", "[cli][regression]") {
  const auto g = read_golden_table("did/panel.csv");
  const std::string data = golden_path("did/panel.csv");
  const auto y = g.col("y"), d = g.col("d");
  const auto ul = labels(g, "unit");
  const auto units = make_group_index(std::span<const std::string>(ul));
  const auto time = integers(g.col("time"));
  const auto tw = did_twfe(y, d, units, time, {.fe_count = fixed_effect_count::nested});
  const auto j = ok_json({"estimate", "did", "--data", data, "--outcome", "y", "--treatment", "d", "--unit",
                          "unit", "--time", "time", "--fe-k", "nested"});
  check_effect(j, tw.effect);
  CHECK(j.at("design").as_string() == "twfe");
  REQUIRE(j.at("warnings").size() == 1);
  CHECK(j.at("warnings").at(std::size_t{0}).at("code").as_string() == "staggered_adoption");

  const auto es = event_study(y, d, units, time, {.first = -4, .last = 3, .bin_endpoints = true});
  const auto je = ok_json({"estimate", "event-study", "--data", data, "--outcome", "y", "--treatment", "d",
                           "--unit", "unit", "--time", "time", "--first", "-4", "--last", "3", "--bin"});
  REQUIRE(je.at("coefficients").size() == es.coefficients.size());
  for (std::size_t i = 0; i < es.coefficients.size(); ++i) {
    check_effect(je.at("coefficients").at(i), es.coefficients[i]);
    CHECK(je.at("coefficients").at(i).at("relative_time").as_number() ==
          static_cast<double>(es.relative_times[i]));
  }
  CHECK(je.at("pre_trend").at("chi2").as_number() == es.pre_trend.chi2);
  CHECK(je.at("pre_trend").at("p_value").as_number() == es.pre_trend.p_value);

  const auto g2 = read_golden_table("did/panel2.csv");
  const auto u2 = labels(g2, "unit");
  const auto r2 = did_2x2_regression(g2.col("y"), g2.col("treated"), g2.col("post"),
                                     make_group_index(std::span<const std::string>(u2)),
                                     {.distribution = reference_distribution::t_residual});
  const auto j2 = ok_json({"estimate", "did", "--data", golden_path("did/panel2.csv"), "--outcome", "y",
                           "--treatment", "treated", "--post", "post", "--unit", "unit", "--dist", "t"});
  check_effect(j2, r2.effect);
  CHECK(j2.at("design").as_string() == "2x2");
}

TEST_CASE("cli estimate iv equals the library", "[cli][regression]") {
  const auto g = read_golden_table("iv/data.csv");
  const std::string data = golden_path("iv/data.csv");
  const std::size_t n = g.rows();
  const auto exo = design_builder(n).intercept().add("x", g.col("x")).build();
  const auto endo = design_builder(n).add("d2", g.col("d2")).build();
  const auto inst = design_builder(n).add("z", g.col("z")).add("z2", g.col("z2")).build();
  const auto lib = two_stage_least_squares(g.col("y"), exo, endo, inst, {.covariance = covariance_type::hc1});
  const auto j = ok_json({"estimate", "iv", "--data", data, "--outcome", "y", "--treatment", "d2",
                          "--instrument", "z,z2", "--covariates", "x", "--cov", "hc1"});
  check_effect(j, lib.fit.term("d2"));
  CHECK(j.at("first_stage").at("f").as_number() == lib.first_stages[0].f);
  CHECK(j.at("first_stage").at("partial_r_squared").as_number() == lib.first_stages[0].partial_r_squared);
}

TEST_CASE("cli estimate ols|did|event-study|iv: bad input exits 2 with one line", "[cli][regression]") {
  const std::string rd = golden_path("regression/data.csv"), pd = golden_path("did/panel.csv"),
                    id = golden_path("iv/data.csv");
  const std::vector<std::string> ols_base{"estimate",  "ols", "--data",       rd,
                                          "--outcome", "y",   "--covariates", "x1,x2"};
  auto with = [](std::vector<std::string> extra, std::vector<std::string> base) {
    base.insert(base.end(), extra.begin(), extra.end());
    return base;
  };
  expect_one_line_error(run_cli(with({"--cov", "hc9"}, ols_base)), "--cov");
  expect_one_line_error(run_cli(with({"--dist", "student"}, ols_base)), "--dist");
  expect_one_line_error(run_cli(with({"--cov", "cr1"}, ols_base)), "cluster ids");
  expect_one_line_error(run_cli(with({"--dist", "t-cluster"}, ols_base)), "t_cluster");
  expect_one_line_error(
      run_cli({"estimate", "ols", "--data", rd, "--outcome", "y", "--covariates", "x1,,x2"}),
      "empty column name");
  expect_one_line_error(run_cli({"estimate", "ols", "--data", rd, "--outcome", "y", "--covariates", "x1,x1"}),
                        "already a column");
  expect_one_line_error(
      run_cli({"estimate", "did", "--data", pd, "--outcome", "y", "--treatment", "d", "--unit", "unit"}),
      "--time");
  expect_one_line_error(run_cli({"estimate", "did", "--data", pd, "--outcome", "y", "--treatment", "y",
                                 "--unit", "unit", "--time", "time"}),
                        "'y'");
  expect_one_line_error(run_cli({"estimate", "event-study", "--data", pd, "--outcome", "y", "--treatment",
                                 "d", "--unit", "unit", "--time", "time", "--first", "0"}),
                        "options.first");
  expect_one_line_error(run_cli({"estimate", "iv", "--data", id, "--outcome", "y", "--treatment", "d",
                                 "--instrument", "x", "--covariates", "x"}),
                        "repeat the column name 'x'");
  expect_one_line_error(run_cli({"estimate", "iv", "--data", id, "--outcome", "y", "--treatment", "d"}),
                        "--instrument");
}

TEST_CASE("cli estimate ols|did|event-study|iv --help documents every option", "[cli][regression]") {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"ols", {"--data", "--outcome", "--covariates", "--cov", "--dist", "--cluster", "--level"}},
      {"did",
       {"--data", "--outcome", "--treatment", "--unit", "--time", "--post", "--cov", "--dist", "--fe-k",
        "--level"}},
      {"event-study",
       {"--data", "--outcome", "--treatment", "--unit", "--time", "--first", "--last", "--bin", "--cov",
        "--dist", "--fe-k", "--level"}},
      {"iv",
       {"--data", "--outcome", "--treatment", "--instrument", "--covariates", "--cov", "--dist", "--cluster",
        "--level"}},
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
