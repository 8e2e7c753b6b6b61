// SPDX-License-Identifier: MIT
// The design identity through the CLI: `audit --resume` with another model, partner, no-need
// fraction, arm set or seed is refused before a trial runs (the records file is untouched),
// naming the differing field; a missing design.json is named as missing; a record outside the
// design is refused; `report` warns when the records disagree with the design.json beside them;
// report.md escapes labels; a report is written as a set.
#include <latentaudit/trial/journal.hpp>

#include <algorithm>
#include <fstream>

#include "support/cli_runner.hpp"
#include "support/common.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;

// The audit's words: a small design on the organisms; `extra` options are added, and a --model
// or --partner among them replaces the default one.
std::vector<std::string> audit_args(const std::filesystem::path& out, std::vector<std::string> extra = {}) {
  auto given = [&](const char* o) { return std::find(extra.begin(), extra.end(), o) != extra.end(); };
  std::vector<std::string> a = {"audit",      "--items",       "4",      "--seeds", "1", "--out",
                                out.string(), "--trials-only", "--quiet"};
  if (!given("--model")) a.insert(a.end(), {"--model", models + "organism-a"});
  if (!given("--partner")) a.insert(a.end(), {"--partner", models + "organism-b"});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST_CASE("audit --resume refuses another design before running, naming the field", "[cli]") {
  const auto dir = test::cli_work_dir() / "design_identity";
  std::filesystem::remove_all(dir);
  const auto first = test::ok_json(audit_args(dir));
  CHECK(first.at("design_hash").as_string().size() == 64);
  const auto records = dir / "records.jsonl";
  const std::string before = test::slurp_file(records);
  REQUIRE(!before.empty());
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--resume", "--model", models + "organism-b"}, "field 'model_fingerprint'"},
      {{"--resume", "--partner", models + "organism-a"}, "field 'partner_fingerprint'"},
      {{"--resume", "--no-need-fraction", "0.5"}, "field 'task_options.no_need_fraction'"},
      {{"--resume", "--stale-fraction", "0.2"}, "field 'task_options.stale_fraction'"},
      {{"--resume", "--partner", "none"}, "field 'partner_fingerprint'"},
      {{"--resume", "--seed", "7"}, "field 'seed'"},
      {{"--resume", "--link", "nvlink4"}, "field 'link'"},
      {{"--resume", "--timing-repeats", "0"}, "field 'timing_repeats'"},
  };
  for (const auto& [extra, words] : cases) {
    const auto r = test::run_cli(audit_args(dir, extra));
    test::expect_one_line_error(r, words);
    CHECK(r.err.find("differs from the design") != std::string::npos);
    CHECK(test::slurp_file(records) == before);  // nothing run, appended or cut
  }
  // The same design resumes with nothing to do, and reports the same hash.
  const auto again = test::ok_json(audit_args(dir, {"--resume"}));
  CHECK(again.at("trials_run").as_number() == 0);
  CHECK(again.at("design_hash").as_string() == first.at("design_hash").as_string());
  // A record outside the design (item 9999) already in the journal is refused on resume.
  {
    std::string line = before.substr(0, before.find('\n'));
    const auto at = line.find("\"item\":");
    REQUIRE(at != std::string::npos);
    const auto end = line.find(',', at);
    line = line.substr(0, at) + "\"item\":9999" + line.substr(end);
    std::ofstream(records, std::ios::app | std::ios::binary) << line << "\n";
  }
  test::expect_one_line_error(test::run_cli(audit_args(dir, {"--resume"})), "outside the design");
  std::filesystem::resize_file(records, before.size());
  // A missing design.json is named as such.
  std::filesystem::remove(dir / "design.json");
  test::expect_one_line_error(test::run_cli(audit_args(dir, {"--resume"})), "no design.json");
  std::filesystem::remove_all(dir);
  // The largest seed is the largest design.json holds exactly (a relay peer reads it back); 2^53
  // would share its hash with 2^53 + 1 and is refused before a trial.
  const auto top =
      test::ok_json(audit_args(dir, {"--seed", "9007199254740991", "--arms", "no_comm,kv_full"}));
  CHECK(test::slurp_file(dir / "design.json").find("\"seed\": 9007199254740991") != std::string::npos);
  CHECK(top.at("trials_run").as_number() == 8);
  std::filesystem::remove_all(dir);
  test::expect_one_line_error(test::run_cli(audit_args(dir, {"--seed", "9007199254740992"})),
                              "option --seed must lie in [0, 9007199254740991]");
  CHECK(!std::filesystem::exists(dir / "records.jsonl"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("audit --resume refuses a drifted sender that changed under the same arm label", "[cli]") {
  const auto dir = test::cli_work_dir() / "design_drift";
  const auto drift = test::cli_work_dir() / "drift_swapped";
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(drift);
  std::filesystem::create_directories(drift);
  for (const char* f : {"steps-5.safetensors", "steps-10.safetensors"})
    std::filesystem::copy_file(models + "organism-a-drift/" + f, drift / f);
  auto manifest = [&](const char* overlay5) {
    std::ofstream(drift / "drift.json", std::ios::binary | std::ios::trunc)
        << "{\"base\": \"" << models << "organism-a\", \"levels\": [{\"steps\": 5, \"overlay\": \""
        << overlay5 << "\"}]}";
  };
  manifest("steps-5.safetensors");
  const std::vector<std::string> extra = {"--partner", "none",        "--arms", "no_comm,kv_full,kv_drift_5",
                                          "--drift",   drift.string()};
  const auto first = test::ok_json(audit_args(dir, extra));
  const auto records = dir / "records.jsonl";
  const std::string before = test::slurp_file(records);
  REQUIRE(!before.empty());
  manifest("steps-10.safetensors");  // the label kv_drift_5 now names another sender
  auto resume = extra;
  resume.push_back("--resume");
  const auto r = test::run_cli(audit_args(dir, resume));
  test::expect_one_line_error(r, "drift_senders");
  CHECK(test::slurp_file(records) == before);
  manifest("steps-5.safetensors");
  CHECK(test::ok_json(audit_args(dir, resume)).at("design_hash").as_string() ==
        first.at("design_hash").as_string());
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(drift);
}

TEST_CASE("report warns when the records disagree with the design.json beside them", "[cli]") {
  const auto dir = test::cli_work_dir() / "design_warn";
  std::filesystem::remove_all(dir);
  (void)test::ok_json(audit_args(dir, {"--arms", "no_comm,text_full,kv_full"}));
  const auto report = [&] {
    return test::run_cli({"report", "--records", (dir / "records.jsonl").string(), "--bootstrap", "100",
                          "--out", (dir / "rep").string()});
  };
  {  // agreeing: no warning
    const auto r = report();
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(parse_json(r.out).at("design_warnings").as_array().empty());
  }
  // Another model and fewer items in the design beside them.
  std::string design = test::slurp_file(dir / "design.json");
  const auto at = design.find("\"model_fingerprint\": \"");
  REQUIRE(at != std::string::npos);
  design.insert(at + 22, "other-");
  const auto items = design.find("\"items\": 4");
  REQUIRE(items != std::string::npos);
  design.replace(items, 10, "\"items\": 2");
  std::ofstream(dir / "design.json", std::ios::binary | std::ios::trunc) << design;
  const auto r = report();
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("latentaudit: warning:") != std::string::npos);
  CHECK(r.err.find("another model") != std::string::npos);
  CHECK(r.err.find("outside the design") != std::string::npos);
  CHECK(parse_json(r.out).at("design_warnings").as_array().size() == 2);
  // The report is written as a set: no temporary files remain.
  for (const auto& e : std::filesystem::directory_iterator(dir / "rep")) {
    INFO(e.path());
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("report.md escapes labels, control characters in labels are refused", "[cli]") {
  const auto dir = test::cli_work_dir() / "escape";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string text;
  for (int item = 0; item < 12; ++item)
    for (const char* arm : {"no_comm", "kv|<script>`x`", "text_full"})
      text += "{\"item\":" + std::to_string(item) + ",\"seed\":0,\"regime\":\"need\",\"arm\":\"" + arm +
              "\",\"correct\":" + std::to_string((item + static_cast<int>(arm[0])) % 2) + "}\n";
  std::ofstream(dir / "records.jsonl", std::ios::binary) << text;
  const auto r = test::run_cli(
      {"report", "--records", (dir / "records.jsonl").string(), "--bootstrap", "100", "--quiet"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string md = test::slurp_file(dir / "report.md");
  CHECK(md.find("<script>") == std::string::npos);
  CHECK(md.find("kv\\|&lt;script>\\`x\\`") != std::string::npos);  // '<' as &lt;: no tag can open
  // A newline or NUL in a label is refused when the records are read.
  std::ofstream(dir / "bad.jsonl", std::ios::binary)
      << "{\"item\":0,\"seed\":0,\"arm\":\"a\\nb\",\"correct\":1}\n";
  test::expect_one_line_error(test::run_cli({"report", "--records", (dir / "bad.jsonl").string()}),
                              "control characters");
  std::ofstream(dir / "nul.jsonl", std::ios::binary)
      << "{\"item\":0,\"seed\":0,\"arm\":\"a\\u0000b\",\"correct\":1}\n";
  test::expect_one_line_error(test::run_cli({"report", "--records", (dir / "nul.jsonl").string()}),
                              "control characters");
  std::filesystem::remove_all(dir);
}
