// SPDX-License-Identifier: MIT
// `latentaudit audit --until-decided` (issue 28): the items run in batches with a look at the
// decision after each; the rule and the regimes' item counts go to design.json, the summary says
// where it stopped, report.json carries the horizon, `report --records` of the directory rebuilds
// the same report, a resume stops where the run did, a cut run resumed gives the same records, and
// misused options or a malformed rule in design.json exit 2 with one line. Whether the stop keeps
// the decision's error rates is the Monte Carlo of tests/report/decision_test.cpp.
#include <catch2/catch.hpp>
#include <latentaudit/core/json.hpp>
#include <latentaudit/trial/arm_schedule.hpp>
#include <latentaudit/trial/journal.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"
#include "support/common.hpp"

namespace la = latentaudit;
namespace fs = std::filesystem;
using la::test::ok_json;
using la::test::run_cli;

namespace {

std::vector<std::string> stopped_audit(const fs::path& out) {
  return {"audit",
          "--model",
          la::test::models + "organism-a",
          "--partner",
          "none",
          "--drift",
          "none",
          "--items",
          "40",
          "--seeds",
          "1",
          "--arms",
          "no_comm,text_full,kv_full",
          "--until-decided",
          "--batch-items",
          "20",
          "--jobs",
          "2",
          "--out",
          out.string(),
          "--quiet"};
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

la::json_value read_json(const fs::path& p) { return la::parse_json(read_text(p)); }

}  // namespace

TEST_CASE(
    "audit --until-decided: batches and looks, the rule in design.json, a resume stops where the run did",
    "[cli][until_decided]") {
  const auto base = la::test::cli_work_dir() / "until_decided";
  fs::remove_all(base);
  const auto out = base / "a";
  const auto j = ok_json(stopped_audit(out));
  // 40 items in batches of 20: two looks; three arms cannot settle a relay verdict (the risk arms
  // are absent), so the rule runs every batch and says so; the arms whose findings the first look
  // decided stop on the second batch's items of their regime (schedule.json says which)
  const auto* u = j.find("until_decided");
  REQUIRE(u != nullptr);
  CHECK(u->find("looks_planned")->as_number() == 2.0);
  CHECK(u->find("looks_taken")->as_number() == 2.0);
  CHECK(u->find("items_run")->as_number() == 40.0);
  const double scheduled = u->find("trials_scheduled")->as_number();
  CHECK(u->find("trials_in_records")->as_number() == scheduled);
  CHECK(scheduled + u->find("trials_left_out")->as_number() == 120.0);
  CHECK(scheduled < 120.0);
  CHECK(j.find("trials_skipped")->as_number() == 0.0);  // nothing resumed
  const auto sched = la::read_arm_schedule(out / "schedule.json", 40, {"no_comm", "text_full", "kv_full"});
  CHECK(sched.batch_items == 20);
  CHECK(sched.batches == 2);
  CHECK_FALSE(sched.partial.empty());
  for (const auto& r : la::read_records(out / "records.jsonl"))
    CHECK(sched.runs(r.item, la::arm_cell{r.regime, r.arm}));
  CHECK_FALSE(u->find("settled")->as_bool());
  CHECK(u->find("decision_at_stop")->as_string() == j.find("decision")->find("verdict")->as_string());
  // design.json: the rule and the regimes' items (they add to the design's 40)
  const auto dj = read_json(out / "design.json");
  const auto* rule = dj.find("options")->find("until_decided");
  REQUIRE(rule != nullptr);
  CHECK(rule->find("batch_items")->as_number() == 20.0);
  CHECK(rule->find("looks")->as_number() == 2.0);
  double regime_items = 0;
  for (const auto& [name, v] : rule->find("regime_items")->as_object()) regime_items += v.as_number();
  CHECK(regime_items == 40.0);
  // report.json: the intervals are confidence sequences over the design's items
  const auto rj = read_json(out / "report.json");
  CHECK(rj.find("options")->find("horizon_items")->as_number() == 40.0);
  CHECK(rj.find("options")->find("looks")->as_number() == 2.0);
  // report.md and report.html say that the audit stopped and which arms it stopped
  for (const char* page : {"report.md", "report.html"}) {
    INFO(page);
    const auto text = read_text(out / page);
    CHECK(text.find("Stopped when decided") != std::string::npos);
    CHECK(text.find("Arms stopped one by one") != std::string::npos);
  }
  // report --records of the directory reads the rule and rebuilds the same findings
  const auto rep =
      ok_json({"report", "--records", out.string(), "--out", (base / "rep").string(), "--quiet"});
  CHECK(read_json(base / "rep" / "report.json").find("findings")->as_array().size() ==
        rj.find("findings")->as_array().size());
  for (const auto& [id, v] : j.find("findings")->as_object()) {
    if (id.rfind("cost.", 0) == 0) continue;  // measured latencies: the same records, the same verdicts
    CHECK(rep.find("findings")->find(id)->as_string() == v.as_string());
  }
  // a resume of the finished run runs nothing and stops at the same look
  auto again = stopped_audit(out);
  again.emplace_back("--resume");
  const auto ra = ok_json(again);
  CHECK(ra.find("trials_run")->as_number() == 0.0);
  CHECK(ra.find("until_decided")->find("looks_taken")->as_number() == 2.0);
  // a run cut after its first batch, resumed, gives the same records
  const auto cut = base / "cut";
  fs::create_directories(cut);
  fs::copy_file(out / "design.json", cut / "design.json");
  {
    std::ofstream f(cut / "records.jsonl");
    for (const auto& r : la::read_records(out / "records.jsonl"))
      if (r.item < 20) f << la::record_to_line(r) << "\n";
  }
  auto resume = stopped_audit(cut);
  resume.emplace_back("--resume");
  const auto rc = ok_json(resume);
  CHECK(rc.find("trials_skipped")->as_number() == 60.0);  // the first batch's, resumed
  CHECK(read_text(cut / "schedule.json") == read_text(out / "schedule.json"));
  CHECK(la::test::timeless_record_lines(cut / "records.jsonl") ==
        la::test::timeless_record_lines(out / "records.jsonl"));
  // a resume without the rule is another design: refused
  auto plain = stopped_audit(cut);
  std::erase(plain, std::string("--until-decided"));
  std::erase(plain, std::string("--batch-items"));
  std::erase(plain, std::string("20"));
  plain.emplace_back("--resume");
  const auto rp = run_cli(plain);
  CHECK(rp.code == 2);
  CHECK(rp.err.find("until_decided") != std::string::npos);
  fs::remove_all(base);
}

TEST_CASE("audit --until-decided: misused options and a malformed rule exit 2 with one line",
          "[cli][until_decided]") {
  const auto base = la::test::cli_work_dir() / "until_decided_bad";
  fs::remove_all(base);
  auto words = stopped_audit(base / "x");
  std::erase(words, std::string("--until-decided"));
  la::test::expect_one_line_error(run_cli(words), "option --batch-items applies to --until-decided");
  words = stopped_audit(base / "x");
  words.insert(words.end(), {"--max-items", "30"});
  la::test::expect_one_line_error(run_cli(words), "options --items and --max-items set the same budget");
  words = stopped_audit(base / "x");
  words.insert(words.end(), {"--relay-transport", "tcp"});
  la::test::expect_one_line_error(run_cli(words), "option --until-decided runs in one process");
  words = stopped_audit(base / "x");
  words[std::find(words.begin(), words.end(), "--batch-items") - words.begin() + 1] = "0";
  la::test::expect_one_line_error(run_cli(words), "--batch-items");
  // --max-items is the budget: the same run as --items
  words = stopped_audit(base / "m");
  const auto at = std::find(words.begin(), words.end(), "--items") - words.begin();
  words[static_cast<std::size_t>(at)] = "--max-items";
  const auto m = ok_json(words);
  CHECK(m.find("until_decided")->find("items_planned")->as_number() == 40.0);
  // design.json with a malformed rule: report --records refuses it naming the field
  std::string text = read_text(base / "m" / "design.json");
  const auto pos = text.find("\"looks\"");
  REQUIRE(pos != std::string::npos);
  text.replace(pos, 7, "\"lookz\"");
  {
    std::ofstream f(base / "m" / "design.json", std::ios::trunc);
    f << text;
  }
  la::test::expect_one_line_error(
      run_cli({"report", "--records", (base / "m").string(), "--out", (base / "r").string(), "--quiet"}),
      "options.until_decided.looks");
  // a rule whose regime counts are below the records' items: refused naming the field
  text.replace(text.find("\"lookz\""), 7, "\"looks\"");
  const auto need = text.find("\"need\":");
  REQUIRE(need != std::string::npos);
  text.replace(need, text.find_first_of(",}", need) - need, "\"need\":1");
  {
    std::ofstream f(base / "m" / "design.json", std::ios::trunc);
    f << text;
  }
  la::test::expect_one_line_error(
      run_cli({"report", "--records", (base / "m").string(), "--out", (base / "r").string(), "--quiet"}),
      "options.until_decided.regime_items.need");
  // schedule.json: a malformed one, and a record of a trial it left out, exit 2 naming the file
  const auto s = base / "s";
  ok_json(stopped_audit(s));
  const auto rep = [&] {
    return run_cli({"report", "--records", s.string(), "--out", (base / "rs").string(), "--quiet"});
  };
  const std::string schedule = read_text(s / "schedule.json");
  {
    std::ofstream f(s / "schedule.json", std::ios::trunc);
    f << "{\"batch_items\":20,\"batches\":9,\"partial\":[]}";
  }
  la::test::expect_one_line_error(rep(), "schedule.json: field 'batches' must be an integer in [0, 2]");
  {
    std::ofstream f(s / "schedule.json", std::ios::trunc);
    f << "{\"batch_items\":20,\"batches\":2,\"partial\":[{\"regime\":\"need\",\"arm\":\"kv_fool\",\"ran\":[]}"
         "]}";
  }
  la::test::expect_one_line_error(rep(), "field 'partial[0].arm' must name an arm of the design");
  {  // every cell ran only the first batch: the second batch's records were never scheduled
    std::ofstream f(s / "schedule.json", std::ios::trunc);
    f << "{\"batch_items\":20,\"batches\":2,\"partial\":[";
    const char* regimes[] = {"need", "no_need", "stale", "conflict"};
    const char* arms[] = {"no_comm", "text_full", "kv_full"};
    bool first = true;
    for (const char* g : regimes)
      for (const char* a : arms) {
        f << (first ? "" : ",") << "{\"regime\":\"" << g << "\",\"arm\":\"" << a << "\",\"ran\":[[0,1]]}";
        first = false;
      }
    f << "]}";
  }
  la::test::expect_one_line_error(rep(), "is a trial the schedule left out");
  {
    std::ofstream f(s / "schedule.json", std::ios::trunc);
    f << schedule;
  }
  ok_json({"report", "--records", s.string(), "--out", (base / "rs").string(), "--quiet"});
  fs::remove_all(base);
}

TEST_CASE("audit --until-decided on a task file: the tasks run in a permutation drawn from the seed",
          "[cli][until_decided]") {
  // a file's order may carry meaning; a stop after the first batches must have seen a random
  // sample of it: the permuted tasks go to --out/tasks.until-decided.jsonl, which the design names
  const auto base = la::test::cli_work_dir() / "until_decided_tasks";
  fs::remove_all(base);
  fs::create_directories(base);
  const auto file = base / "tasks.jsonl";
  ok_json({"organism", "tasks", "--out", file.string(), "--items", "40"});
  auto words = stopped_audit(base / "o");  // its 40 items are the file's 40 tasks
  words.insert(words.end(), {"--tasks", file.string()});
  ok_json(words);
  const auto shuffled = base / "o" / "tasks.until-decided.jsonl";
  REQUIRE(fs::exists(shuffled));
  const auto dj = read_json(base / "o" / "design.json");
  CHECK(dj.find("task_options")->find("path")->as_string() == fs::absolute(shuffled).string());
  // item i runs the permuted file's line i: the same 40 tasks, not in the file's order
  std::vector<std::string> ids;
  for (const auto& r : la::read_records(base / "o" / "records.jsonl"))
    if (r.arm == "kv_full")
      ids.resize(std::max<std::size_t>(ids.size(), r.item + 1)), ids[r.item] = r.task_id;
  REQUIRE(ids.size() == 40u);
  std::vector<std::string> in_order;
  for (int i = 0; i < 40; ++i) in_order.push_back("organism-" + std::to_string(i));
  CHECK(ids != in_order);
  auto sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  auto expect = in_order;
  std::sort(expect.begin(), expect.end());
  CHECK(sorted == expect);
  // a resume rewrites the same file and runs nothing; report --records finds the tasks
  words.emplace_back("--resume");
  CHECK(ok_json(words).find("trials_run")->as_number() == 0.0);
  ok_json({"report", "--records", (base / "o").string(), "--out", (base / "r").string(), "--quiet"});
  CHECK(read_text(base / "r" / "report.html")
            .find("accepted answers come from the task file " + fs::absolute(shuffled).string()) !=
        std::string::npos);
  fs::remove_all(base);
}

TEST_CASE("audit --until-decided --resume: a schedule.json that contradicts the journal exits 2 naming both",
          "[cli][until_decided]") {
  const auto out = la::test::cli_work_dir() / "until_decided_contradiction";
  fs::remove_all(out);
  REQUIRE(run_cli(stopped_audit(out)).code == 0);
  const auto records_before = read_text(out / "records.jsonl");
  // well-formed, but it says kv_full never ran on the need items, which the journal holds
  auto s = read_json(out / "schedule.json");
  la::json_value cell = la::json_value::object();
  cell.set("regime", "need");
  cell.set("arm", "kv_full");
  cell.set("ran", la::json_value::array());
  la::json_value partial = la::json_value::array();
  partial.push_back(std::move(cell));
  s.set("partial", std::move(partial));
  std::ofstream(out / "schedule.json", std::ios::trunc) << la::write_json(s) << "\n";
  auto again = stopped_audit(out);
  again.emplace_back("--resume");
  const auto r = run_cli(again);
  la::test::expect_one_line_error(r, "schedule.json' contradicts");
  CHECK(r.err.find("records.jsonl") != std::string::npos);
  CHECK(read_text(out / "records.jsonl") == records_before);
}
