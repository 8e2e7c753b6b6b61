// SPDX-License-Identifier: MIT
// `latentaudit diff BEFORE AFTER` (issue 54 item 5): two audits' report.json compared — the decision,
// the checklist, the policy lines, findings whose verdict flipped or whose estimate moved beyond the
// other's interval; exit 1 when relay_allowed went from true to false (naming the checks that stopped
// passing), 0 otherwise, 2 for malformed input.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"
#include "support/common.hpp"

namespace la = latentaudit;
namespace fs = std::filesystem;

namespace diff_cli_test {

using latentaudit::test::write_text;

/// report.json of `doc` with the decision's relay_allowed set, every checklist item passed but
/// `failed_check` (none when empty).
la::json_value edited(const la::json_value& doc, bool relay_allowed, const std::string& failed_check) {
  la::json_value out = doc;
  la::json_value d = doc.at("decision");
  d.set("relay_allowed", relay_allowed);
  la::json_value checks = la::json_value::array();
  for (const auto& c : d.at("checklist").as_array()) {
    la::json_value x = c;
    x.set("passed", std::string(c.at("check").as_string() == failed_check ? "no" : "yes"));
    checks.push_back(std::move(x));
  }
  d.set("checklist", std::move(checks));
  out.set("decision", std::move(d));
  return out;
}

}  // namespace diff_cli_test

TEST_CASE("diff: a report against itself, a regression naming the failed check, and malformed input",
          "[cli][diff]") {
  const auto base = la::test::cli_work_dir() / "diff";
  fs::remove_all(base);
  fs::create_directories(base);
  const auto out = base / "audit";
  const auto r = la::test::run_cli({"audit",       "--model", la::test::models + "organism-a",
                                    "--items",     "30",      "--seeds",
                                    "1",           "--arms",  "no_comm,kv_full,text_full,deranged",
                                    "--partner",   "none",    "--drift",
                                    "none",        "--map",   "none",
                                    "--bootstrap", "200",     "--out",
                                    out.string(),  "--quiet"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto report = out / "report.json";

  SECTION("a report against itself (file and directory): no change, exit 0") {
    const auto same = la::test::run_cli({"diff", report.string(), out.string()});
    INFO(same.err);
    CHECK(same.code == 0);
    CHECK(same.out.find("decision: unchanged") != std::string::npos);
    CHECK(same.out.find("flipped") == std::string::npos);
    const auto j = la::test::ok_json({"diff", report.string(), report.string(), "--json"});
    CHECK(j.at("findings").at("flipped").as_array().empty());
    CHECK(j.at("findings").at("moved_beyond_interval").as_array().empty());
    CHECK(j.at("checks").as_array().empty());
    CHECK_FALSE(j.at("relay_allowed_regressed").as_bool());
  }
  SECTION("relay allowed before, the value check failed after: exit 1 naming it") {
    const auto doc = la::parse_json(la::test::slurp_file(report));
    const auto before = base / "before.json", after = base / "after.json";
    diff_cli_test::write_text(before, la::write_json(diff_cli_test::edited(doc, true, "")));
    diff_cli_test::write_text(after, la::write_json(diff_cli_test::edited(doc, false, "value")));
    const auto d = la::test::run_cli({"diff", before.string(), after.string()});
    CHECK(d.code == 1);
    CHECK(d.out.find("relay_allowed true -> false") != std::string::npos);
    CHECK(d.out.find("value: ") != std::string::npos);
    CHECK(d.err.find("relay_allowed went from true to false") != std::string::npos);
    CHECK(d.err.find("value") != std::string::npos);
    // the other way round is an improvement: exit 0
    CHECK(la::test::run_cli({"diff", after.string(), before.string()}).code == 0);
  }
  SECTION("malformed input: exit 2, one line naming the file and the field") {
    const auto bad = base / "bad.json";
    diff_cli_test::write_text(bad, "{\"decision\": {\"relay_allowed\": \"yes\"}}");
    la::test::expect_one_line_error(la::test::run_cli({"diff", report.string(), bad.string()}),
                                    "bad.json: field 'decision.relay_allowed' must be true or false");
    diff_cli_test::write_text(bad, "not json");
    la::test::expect_one_line_error(la::test::run_cli({"diff", bad.string(), report.string()}),
                                    "bad.json: not a JSON document");
    la::test::expect_one_line_error(la::test::run_cli({"diff", report.string()}), "expected two report.json");
    la::test::expect_one_line_error(
        la::test::run_cli({"diff", report.string(), (base / "none.json").string()}), "none.json");
  }
}
