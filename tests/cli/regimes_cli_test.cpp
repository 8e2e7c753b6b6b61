// SPDX-License-Identifier: MIT
// `latentaudit audit` with the relay-failure regimes and the drift arms: the regime shares and the
// --drift manifest are validated (exit 2, one line naming the option or the manifest's field), and
// a small run writes stale and conflict records and drift arms whose records carry drift_steps and
// the drifted model's fingerprint.
#include <latentaudit/trial/journal.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "support/cli_runner.hpp"
#include "support/common.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;

std::vector<std::string> regimes_audit_args(const std::filesystem::path& out,
                                            std::vector<std::string> extra) {
  std::vector<std::string> a = {"audit",
                                "--items",
                                "12",
                                "--seeds",
                                "1",
                                "--out",
                                out.string(),
                                "--trials-only",
                                "--quiet",
                                "--timing-repeats",
                                "0",
                                "--model",
                                models + "organism-a"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST_CASE("audit: regime shares and drift manifests are validated", "[cli]") {
  const auto dir = test::cli_work_dir() / "regimes_bad";
  std::filesystem::remove_all(dir);
  test::expect_one_line_error(test::run_cli(regimes_audit_args(dir, {"--stale-fraction", "2"})),
                              "--stale-fraction");
  test::expect_one_line_error(test::run_cli(regimes_audit_args(dir, {"--conflict-fraction", "-0.1"})),
                              "--conflict-fraction");
  test::expect_one_line_error(
      test::run_cli(regimes_audit_args(
          dir, {"--no-need-fraction", "0.5", "--stale-fraction", "0.4", "--conflict-fraction", "0.2"})),
      "sum to at most 1");
  test::expect_one_line_error(test::run_cli(regimes_audit_args(dir, {"--drift", (dir / "nowhere").string()})),
                              "--drift manifest");
  test::expect_one_line_error(
      test::run_cli(regimes_audit_args(dir, {"--arms", "no_comm,kv_drift_7", "--partner", "none"})),
      "drift level 7");
  std::filesystem::create_directories(dir / "m");
  std::ofstream(dir / "m" / "drift.json")
      << R"({"base": "../organism-a", "levels": [{"steps": 5, "overlay": "../x"}]})";
  test::expect_one_line_error(test::run_cli(regimes_audit_args(dir, {"--drift", (dir / "m").string()})),
                              "levels[].overlay");
  std::ofstream(dir / "m" / "drift.json") << R"({"levels": []})";
  test::expect_one_line_error(test::run_cli(regimes_audit_args(dir, {"--drift", (dir / "m").string()})),
                              "'base'");
}

TEST_CASE("audit: stale and conflict items and drift arms reach the records", "[cli]") {
  const auto dir = test::cli_work_dir() / "regimes_run";
  std::filesystem::remove_all(dir);
  const auto j = test::ok_json(regimes_audit_args(
      dir, {"--arms", "no_comm,text_full,kv_full,kv_drift_5,kv_drift_300", "--partner", "none",
            "--no-need-fraction", "0.2", "--stale-fraction", "0.3", "--conflict-fraction", "0.3"}));
  CHECK(j.at("trials_total").as_number() == 12 * 5);
  const auto records = read_records(dir / "records.jsonl");
  REQUIRE(records.size() == 60);
  std::map<std::string, int> regimes;
  for (const auto& r : records) {
    ++regimes[r.regime];
    CHECK(r.stale_answer.has_value() == (r.regime == "stale"));
    CHECK(r.covariate_value("cache_age_versions").has_value());
    CHECK(r.covariate_value("prompt_overlap").has_value());
    if (r.arm_kind == "drifted") {
      CHECK((r.drift_steps == std::optional<double>(5) || r.drift_steps == std::optional<double>(300)));
      CHECK(r.sender_fingerprint != r.receiver_fingerprint);
    }
    if (r.regime == "stale" && r.arm == "kv_full") CHECK(*r.stale_answer);  // the planted stale answer
  }
  CHECK(regimes["stale"] > 0);
  CHECK(regimes["conflict"] > 0);
  // --drift none drops the drift arms of the default set.
  const auto dir2 = test::cli_work_dir() / "regimes_nodrift";
  std::filesystem::remove_all(dir2);
  const auto k = test::ok_json({"audit", "--items", "2", "--seeds", "1", "--out", dir2.string(),
                                "--trials-only", "--quiet", "--timing-repeats", "0", "--model",
                                models + "organism-a", "--drift", "none", "--partner", "none"});
  for (const auto& r : read_records(dir2 / "records.jsonl")) CHECK(r.arm_kind != "drifted");
  CHECK(k.at("trials_run").as_number() > 0);
}
