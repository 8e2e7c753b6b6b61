// SPDX-License-Identifier: MIT
// `latentaudit plan` (tools/cli/cmd_plan.cpp): one row per decision check with the library's own
// numbers (estimators/betting_power.hpp), and bad options refused with one line naming them.
#include <catch2/catch.hpp>
#include <latentaudit/estimators/betting_power.hpp>
#include <latentaudit/estimators/betting_ratio.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"

namespace la = latentaudit;
using la::test::ok_json;
using la::test::run_cli;

namespace {
// plan's JSON rounds powers and differences to 4 decimals (the simulation resolves no more)
double r4(double x) { return std::round(x * 1e4) / 1e4; }
}  // namespace

TEST_CASE("cli: plan gives each decision check's power, items and detectable difference", "[cli]") {
  const auto j = ok_json({"plan", "--json", "--items", "30", "--seeds", "2", "--no-comm", "0.3", "--text",
                          "0.6", "--replicates", "200", "--max-items", "400"});
  const auto& rows = j.at("checks").as_array();
  std::vector<std::string> checks;
  for (const auto& r : rows) checks.push_back(r.at("check").as_string());
  CHECK(checks ==
        std::vector<std::string>{"positive_control", "dependency", "value", "cross_model", "no_need_harm"});
  CHECK(j.at("design").at("seed").as_string() == "2028");
  // the dependency row is the library's simulation, bit for bit
  const la::clustered_binary_model m{.control = 0.3, .treated = 0.6, .item_sd = 0.6, .seeds = 2};
  const la::betting_power_options o{.alpha = 0.05, .threshold = 0.0, .replicates = 200, .seed = 2028};
  const auto& dep = rows[1];
  CHECK(dep.at("finding").as_string() == "need.kv_beats_no_comm");
  CHECK(dep.at("power").as_number() == r4(la::clustered_betting_power(30, m, o).power));
  CHECK(dep.at("items_for_power").as_number() ==
        static_cast<double>(*la::clustered_betting_items(0.8, m, o, 400)));
  CHECK(dep.at("detectable_difference").as_number() == r4(*la::clustered_betting_detectable(30, 0.8, m, o)));
  // the value check (kv = text): non-inferiority needs more than 30 items and names the floor
  const auto& value = rows[2];
  CHECK(value.at("claim").as_string() == "verdict lower limit > -0.05");
  CHECK(value.at("items_floor").as_number() == 68.0);
  CHECK(value.at("power").as_number() < 0.8);
  // the no-need absence is planned at alpha / 3 (the first Holm step of the risk family)
  CHECK(rows[4].at("alpha").as_number() == Approx(0.05 / 3.0));
}

TEST_CASE("cli: plan --mapped adds the map's non-inferiority and the retention gate (issue 29)", "[cli]") {
  const auto j = ok_json({"plan", "--json", "--items", "40", "--seeds", "2", "--no-comm", "0.05", "--text",
                          "0.95", "--mapped", "0.95", "--replicates", "100", "--retention-replicates", "50",
                          "--max-items", "150"});
  const auto& rows = j.at("checks").as_array();
  REQUIRE(rows.size() == 7u);
  // the map joins the risk family: Holm's first step is alpha / 4 for the no-need absence and the map
  CHECK(rows[4].at("alpha").as_number() == Approx(0.05 / 4.0));
  CHECK(rows[5].at("check").as_string() == "map");
  CHECK(rows[5].at("finding").as_string() == "mapped.noninferior_to_same_model");
  CHECK(rows[5].at("alpha").as_number() == Approx(0.05 / 4.0));
  // the retention gate: the library's simulation of the ratio's test inversion, bit for bit
  const auto& g = rows[6];
  CHECK(g.at("finding").as_string() == "mapped.retention");
  CHECK(g.at("assumed_retention").as_number() == Approx(1.0));
  const la::clustered_ratio_model rm{
      .base = 0.05, .reference = 0.95, .treated = 0.95, .item_sd = 0.6, .seeds = 2};
  const la::betting_power_options ro{.alpha = 0.05, .replicates = 50, .seed = 2028};
  CHECK(g.at("power").as_number() == r4(la::clustered_ratio_gate_power(40, rm, 0.9, ro).power));
  const auto need = la::clustered_ratio_gate_items(0.8, rm, 0.9, ro, 150);
  REQUIRE(need.has_value());
  CHECK(g.at("items_for_power").as_number() == static_cast<double>(*need));
  // a map that keeps 0.6 of the benefit never passes a 0.9 gate
  const auto low =
      ok_json({"plan", "--json", "--items", "40", "--no-comm", "0.05", "--text", "0.95", "--mapped", "0.59",
               "--replicates", "100", "--retention-replicates", "50", "--max-items", "32"});
  CHECK(low.at("checks").as_array().at(6).at("items_for_power").is_null());
  la::test::expect_one_line_error(run_cli({"plan", "--mapped", "2"}), "--mapped");
  la::test::expect_one_line_error(run_cli({"plan", "--mapped", "0.5", "--retention-replicates", "3"}),
                                  "--retention-replicates");
}

TEST_CASE("cli: plan refuses bad options with one line naming them", "[cli]") {
  la::test::expect_one_line_error(run_cli({"plan", "--text", "1.5"}), "--text");
  la::test::expect_one_line_error(run_cli({"plan", "--items", "0"}), "--items");
  la::test::expect_one_line_error(run_cli({"plan", "--margin", "0"}), "--margin");
  la::test::expect_one_line_error(run_cli({"plan", "--power", "1"}), "--power");
  la::test::expect_one_line_error(run_cli({"plan", "--replicates", "5"}), "--replicates");
  la::test::expect_one_line_error(run_cli({"plan", "--no-need-change", "0.5"}), "--no-need-change");
  la::test::expect_one_line_error(run_cli({"plan", "--itmes", "3"}), "--itmes");
}

TEST_CASE("cli: plan says each check in words before the JSON, rounded, and --json gives the JSON only",
          "[cli]") {
  const std::vector<std::string> words = {"plan", "--items", "200", "--replicates", "100", "--max-items",
                                          "400",  "--seeds", "2"};
  const auto r = run_cli(words);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto brace = r.out.find("\n{");
  REQUIRE(brace != std::string::npos);
  const std::string text = r.out.substr(0, brace + 1);
  const auto j = la::parse_json(r.out.substr(brace + 1));
  // the table's header, then one sentence per check, in the JSON's order, with its numbers
  CHECK(text.rfind("plan: 200 need items (200 no-need), 2 seeds each", 0) == 0);
  CHECK(text.find("check") != std::string::npos);
  for (const auto& row : j.at("checks").as_array()) {
    const std::string check = row.at("check").as_string();
    char power[16];
    std::snprintf(power, sizeof power, "%.2f", row.at("power").as_number());
    const std::string sentence = check + ": 200 items give power " + power + "; ";
    INFO(sentence);
    CHECK(text.find(sentence) != std::string::npos);
    if (!row.at("items_for_power").is_null()) {
      const auto need = static_cast<std::size_t>(row.at("items_for_power").as_number());
      CHECK(text.find(sentence + std::to_string(need) +
                      (need <= 200 ? " are enough for 0.8" : " are needed for 0.8")) != std::string::npos);
    } else {
      CHECK(text.find(sentence + "no design up to 400 items (--max-items) reaches 0.8") != std::string::npos);
    }
    // every number is rounded: 4 decimals at most
    for (const char* k : {"power", "power_se", "detectable_difference", "assumed_difference"})
      if (const auto* v = row.find(k); v != nullptr && v->is_number())
        CHECK(std::fabs(v->as_number() * 1e4 - std::round(v->as_number() * 1e4)) < 1e-6);
  }
  CHECK(r.out.find("99999") == std::string::npos);
  CHECK(r.out.find("00000") == std::string::npos);
  // --json: the same JSON alone
  auto with_json = words;
  with_json.push_back("--json");
  const auto jr = run_cli(with_json);
  REQUIRE(jr.code == 0);
  CHECK(jr.out == r.out.substr(brace + 1));
  // the threads change nothing
  with_json.insert(with_json.end(), {"--threads", "1"});
  CHECK(run_cli(with_json).out == jr.out);
}
