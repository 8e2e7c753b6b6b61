// SPDX-License-Identifier: MIT
// The decision a pipeline gates on, through the CLI (issue 25): a task file without failure regimes
// gets "relay (unverified)" naming the untested risks; records lacking a field the decision needs
// are named on stderr, in the stdout summary and in the decision's reason.
#include <catch2/catch.hpp>
#include <latentaudit/estimators/betting.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"

namespace la = latentaudit;
using la::test::ok_json;
using la::test::run_cli;

namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto d =
      std::filesystem::temp_directory_path() / ("latentaudit_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

std::vector<std::string> strings(const la::json_value& a) {
  std::vector<std::string> out;
  for (const auto& x : a.as_array()) out.push_back(x.as_string());
  return out;
}

}  // namespace

TEST_CASE("audit --tasks without stale, conflict or drift items: 'relay (unverified)' naming them",
          "[cli][decision]") {
  const auto dir = fresh_dir("unverified");
  const std::string model = std::string(LATENTAUDIT_SOURCE_DIR) + "/models/organism-a",
                    tasks = (dir / "t.jsonl").string();
  (void)ok_json({"organism", "tasks", "--model", model, "--out", tasks, "--items", "200", "--seed", "4",
                 "--stale-fraction", "0", "--conflict-fraction", "0"});
  const auto j = ok_json({"audit",
                          "--model",
                          model,
                          "--tasks",
                          tasks,
                          "--seeds",
                          "1",
                          "--arms",
                          "no_comm,text_full,kv_full",
                          "--partner",
                          "none",
                          "--drift",
                          "none",
                          "--timing-repeats",
                          "0",
                          "--bootstrap",
                          "200",
                          "--out",
                          (dir / "o").string(),
                          "--quiet"});
  const auto& d = *j.find("decision");
  INFO(la::write_json(d));
  CHECK(d.find("verdict")->as_string() == "relay (unverified)");
  CHECK_FALSE(d.find("relay_allowed")->as_bool());
  const auto un = strings(*d.find("unverified"));
  for (const char* c : {"freshness", "conflict", "drift"})
    CHECK(std::find(un.begin(), un.end(), c) != un.end());
  // report.json and report.md say the same
  const auto rj = la::parse_json(la::test::slurp_file(dir / "o" / "report.json"));
  CHECK(rj.find("decision")->find("verdict")->as_string() == "relay (unverified)");
  CHECK_FALSE(rj.find("decision")->find("relay_allowed")->as_bool());
  const auto md = la::test::slurp_file(dir / "o" / "report.md");
  CHECK(md.find("**Not a relay verdict:**") != std::string::npos);
  // report.html's drill-down shows the queries and accepted answers of the task file (token tasks:
  // their ids), from `audit` and from `report --records DIR` (the file design.json names)
  for (const auto& html : {la::test::slurp_file(dir / "o" / "report.html"),
                           (ok_json({"report", "--records", (dir / "o").string(), "--out",
                                     (dir / "r").string(), "--bootstrap", "200", "--quiet"}),
                            la::test::slurp_file(dir / "r" / "report.html"))}) {
    CHECK(html.find("<th>query text</th><th>accepted answers</th>") != std::string::npos);
    CHECK(html.find("<td>tokens ") != std::string::npos);
    CHECK(html.find("come from the task file") != std::string::npos);
  }
  // the task file changed since the audit: not shown, and the page says why
  const auto lines = la::test::slurp_file(tasks);
  {
    std::ofstream f(tasks, std::ios::trunc);
    f << lines.substr(0, lines.rfind('\n', lines.size() - 2) + 1);  // the last task line removed
  }
  (void)ok_json({"report", "--records", (dir / "o").string(), "--out", (dir / "r").string(), "--bootstrap",
                 "200", "--quiet"});
  const auto changed = la::test::slurp_file(dir / "r" / "report.html");
  CHECK(changed.find("<th>query text</th>") == std::string::npos);
  CHECK(changed.find("has changed since the audit (SHA-256 differs)") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("report on records with only item, seed, arm, correct: the missing fields on stderr and stdout",
          "[cli][decision]") {
  const auto dir = fresh_dir("fields");
  {
    std::ofstream f(dir / "records.jsonl");
    for (int i = 0; i < 40; ++i)
      for (const char* arm : {"no_comm", "text_full", "kv_full"})
        f << "{\"item\":" << i << ",\"seed\":0,\"arm\":\"" << arm
          << "\",\"correct\":" << (std::string(arm) == "no_comm" ? "false" : "true") << "}\n";
  }
  const auto r =
      run_cli({"report", "--records", (dir / "records.jsonl").string(), "--out", (dir / "o").string()});
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("latentaudit: warning: records lack 'regime' (120 of 120)") != std::string::npos);
  CHECK(r.err.find("latentaudit: warning: records lack 'timings'") != std::string::npos);
  const auto j = la::parse_json(r.out);
  const auto w = strings(*j.find("input_warnings"));
  CHECK(std::any_of(w.begin(), w.end(),
                    [](const std::string& s) { return s.rfind("records lack 'regime'", 0) == 0; }));
  CHECK(j.find("decision")->find("verdict")->as_string() == "inconclusive");
  CHECK_FALSE(j.find("decision")->find("relay_allowed")->as_bool());
  const auto rj = la::parse_json(la::test::slurp_file(dir / "o" / "report.json"));
  CHECK(
      rj.find("decision")->find("summary")->as_string().rfind("The records lack the field(s) 'regime'", 0) ==
      0);
  const auto& mf = *rj.find("completeness")->find("missing_fields");
  CHECK(strings(mf).front() == "regime");
  // --quiet: nothing on stderr, the summary still carries them
  const auto q = run_cli(
      {"report", "--records", (dir / "records.jsonl").string(), "--out", (dir / "q").string(), "--quiet"});
  CHECK(q.code == 0);
  CHECK(q.err.empty());
  CHECK_FALSE(la::parse_json(q.out).find("input_warnings")->as_array().empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("audit warns before any trial when the need regime is too small to show the margin",
          "[cli][decision]") {
  const auto dir = fresh_dir("reach");
  const std::string model = std::string(LATENTAUDIT_SOURCE_DIR) + "/models/organism-a";
  auto audit = [&](const std::string& items, const std::string& margin, const std::string& out) {
    return run_cli({"audit", "--model", model, "--items", items, "--seeds", "1", "--arms",
                    "no_comm,text_full,kv_full", "--partner", "none", "--drift", "none", "--timing-repeats",
                    "0", "--margin", margin, "--out", (dir / out).string()});
  };
  // 40 items: 18 in the need regime (the default fractions), fewer than the 68 the betting interval
  // needs at margin 0.05 even when every item agrees
  const auto small = audit("40", "0.05", "small");
  INFO("stderr: " << small.err);
  CHECK(small.code == 0);
  CHECK(small.err.find("warning: the design has 18 need-regime items; at --margin 0.05 and --alpha 0.05") !=
        std::string::npos);
  CHECK(small.err.find("need at least 68") != std::string::npos);
  // the warning precedes every trial's progress line
  CHECK(small.err.find("warning: the design has") < small.err.find("trials"));
  // a wide enough margin reaches: 18 items show ±0.2 (betting_items_for_margin(0.2) ≤ 18)
  REQUIRE(la::betting_items_for_margin(0.2) <= 18);
  const auto wide = audit("40", "0.2", "wide");
  CHECK(wide.code == 0);
  CHECK(wide.err.find("need-regime items") == std::string::npos);
  std::filesystem::remove_all(dir);
}
