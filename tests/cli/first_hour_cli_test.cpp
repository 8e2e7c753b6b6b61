// SPDX-License-Identifier: MIT
// The first hour with the CLI (issue 31): messages speak the CLI's words (--records, --resume),
// a mistyped option gets "did you mean", `audit --force` replaces a finished run in --out (only the
// audit's own files, never one a running audit holds), --seeds > 1 on single-query tasks warns,
// `tokenize --text ""` is accepted, and examples/data/qa_to_tasks.py's no_need / stale / conflict
// items are accepted by `audit --tasks`.
#include <latentaudit/core/json.hpp>
#include <latentaudit/trial/journal.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/cli_runner.hpp"
#include "support/common.hpp"

#ifdef LATENTAUDIT_CLI_PATH

using namespace latentaudit;
using latentaudit::test::expect_one_line_error;
using latentaudit::test::run_cli;
namespace fs = std::filesystem;

namespace {

fs::path fh_dir(const std::string& name) {
  const auto d = latentaudit::test::cli_work_dir() / name;
  fs::remove_all(d);
  return d;
}

// A two-item, one-seed audit of two arms on the organisms, trials only.
std::vector<std::string> fh_small_audit(const fs::path& out) {
  return {"audit",
          "--model",
          latentaudit::test::models + "organism-a",
          "--partner",
          "none",
          "--items",
          "2",
          "--seeds",
          "1",
          "--arms",
          "no_comm,kv_full",
          "--drift",
          "none",
          "--trials-only",
          "--quiet",
          "--out",
          out.string()};
}

std::size_t fh_lines_of(const fs::path& p) {
  const std::string s = latentaudit::test::slurp_file(p);
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("cli: a mistyped option gets 'did you mean'", "[cli][first_hour]") {
  expect_one_line_error(run_cli({"audit", "--itmes", "3"}),
                        "unknown option '--itmes' (did you mean --items?)");
  expect_one_line_error(run_cli({"report", "--record", "x.jsonl"}),
                        "unknown option '--record' (did you mean --records?)");
  // nothing within two edits: no hint
  const auto r = run_cli({"audit", "--frobnicate"});
  expect_one_line_error(r, "unknown option '--frobnicate'");
  CHECK(r.err.find("did you mean") == std::string::npos);
}

TEST_CASE("cli: report names --records when the records cannot be opened", "[cli][first_hour]") {
  const auto dir = fh_dir("fh_missing_records");
  const auto r = run_cli({"report", "--records", (dir / "records.jsonl").string()});
  expect_one_line_error(r, "report: cannot open --records '" + (dir / "records.jsonl").string() +
                               "': no such file or directory");
  CHECK(r.err.find("read_records") == std::string::npos);
  CHECK_FALSE(fs::exists(dir));  // refused before --out (the records' directory) is created
}

TEST_CASE("cli: a library error reaches the command line without the library's function names",
          "[cli][first_hour]") {
  // read_records and parse_json name themselves for C++ callers; the command line gets the file,
  // line and what is wrong (main.cpp cli_words)
  const auto dir = fh_dir("fh_bad_records");
  fs::create_directories(dir);
  const auto bad = dir / "records.jsonl";
  std::ofstream(bad) << "x\n";
  const auto r = run_cli({"report", "--records", bad.string()});
  expect_one_line_error(r, "latentaudit: error: " + bad.string() + ":1: unexpected 'x'");
  CHECK(r.err.find("read_records") == std::string::npos);
  CHECK(r.err.find("parse_json") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("cli: audit into a finished --out says --resume or --force, and --force replaces only its files",
          "[cli][first_hour]") {
  const auto out = fh_dir("fh_force");
  REQUIRE(run_cli(fh_small_audit(out)).code == 0);
  REQUIRE(fh_lines_of(out / "records.jsonl") == 4);
  std::ofstream(out / "notes.txt") << "mine\n";
  std::ofstream(out / "old.svg") << "<svg/>\n";
  // again without --resume or --force: the CLI's words, not the journal's
  const auto again = run_cli(fh_small_audit(out));
  expect_one_line_error(again,
                        "already holds records of an audit: pass --resume to continue it, --force "
                        "to replace it, or choose another --out");
  CHECK(again.err.find("record_journal") == std::string::npos);
  CHECK(fh_lines_of(out / "records.jsonl") == 4);
  // --force with --resume is refused
  auto both = fh_small_audit(out);
  both.emplace_back("--force");
  both.emplace_back("--resume");
  expect_one_line_error(run_cli(both), "--force and --resume exclude each other");
  // --force while another process holds --out: refused, nothing removed
  auto force = fh_small_audit(out);
  force.emplace_back("--force");
  {
    directory_lock held(out, "--out");
    expect_one_line_error(run_cli(force), "another audit holds");
    CHECK(fh_lines_of(out / "records.jsonl") == 4);
    CHECK(fs::exists(out / "old.svg"));
  }
  // --force, free: a fresh run of 1 item replaces the 2-item run; the user's notes stay
  auto one = force;
  std::replace(one.begin(), one.end(), std::string("2"), std::string("1"));
  const auto r = run_cli(one);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(fh_lines_of(out / "records.jsonl") == 2);
  CHECK(fs::exists(out / "notes.txt"));
  CHECK_FALSE(fs::exists(out / "old.svg"));
}

TEST_CASE("cli: --seeds > 1 on tasks of one query each warns in one line", "[cli][first_hour]") {
  const auto dir = fh_dir("fh_seeds");
  fs::create_directories(dir);
  const auto tasks = dir / "tasks.jsonl";
  {
    std::ofstream f(tasks);
    f << R"({"id": "t0", "document_tokens": [1, 5, 6], "query_tokens": [5], "answers": [[6]]})" << '\n'
      << R"({"id": "t1", "document_tokens": [1, 7, 8], "query_tokens": [7], "answers": [[8]]})" << '\n';
  }
  auto args = std::vector<std::string>{"audit",
                                       "--model",
                                       latentaudit::test::models + "organism-a",
                                       "--partner",
                                       "none",
                                       "--tasks",
                                       tasks.string(),
                                       "--arms",
                                       "no_comm,kv_full",
                                       "--drift",
                                       "none",
                                       "--trials-only",
                                       "--out",
                                       (dir / "out3").string(),
                                       "--seeds",
                                       "3"};
  const auto r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto at = r.err.find("latentaudit: warning: --seeds 3 with tasks of one query each");
  REQUIRE(at != std::string::npos);
  CHECK(r.err.find('\n', at) != std::string::npos);
  CHECK(std::count(r.err.begin() + static_cast<std::ptrdiff_t>(at),
                   r.err.begin() + static_cast<std::ptrdiff_t>(r.err.find('\n', at)), '\n') == 0);
  // one seed: no warning
  args[args.size() - 3] = (dir / "out1").string();
  args.back() = "1";
  const auto one = run_cli(args);
  REQUIRE(one.code == 0);
  CHECK(one.err.find("tasks of one query each") == std::string::npos);
}

TEST_CASE("cli: tokenize --text \"\" gives []", "[cli][first_hour]") {
  const auto vocab = (fs::path(LATENTAUDIT_SOURCE_DIR) / "models" / "organism-text.gguf").string();
  const auto r = run_cli({"tokenize", "--vocab", vocab, "--text", ""});
  if (r.err.find("built without llama.cpp") != std::string::npos) {
    CHECK(r.code == 2);
    return;
  }
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "[]\n");
  // still required
  expect_one_line_error(run_cli({"tokenize", "--vocab", vocab}), "missing required option --text");
}

TEST_CASE("cli: qa_to_tasks.py writes no_need, stale and conflict items that audit --tasks accepts",
          "[cli][first_hour]") {
  if (!fs::exists("/usr/bin/python3")) {
    WARN("no /usr/bin/python3: qa_to_tasks.py not run");
    return;
  }
  const auto dir = fh_dir("fh_qa");
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "qa.csv");
    f << "id,context,question,answers,old,contra,old_answer,domain\n"
      << "q1,water soft mouse light,mouse,light,,,,a\n"
      << "q2,fly dark ant west,ant,west,fly dark ant east,,east,b\n"
      << "q3,water soft fly dark,water,soft,,water hard fly dark,,a\n"
      << "q4,ant west mouse light,ant,west,,,,b\n"
      << "q5,fly dark water soft,fly,dark,,,,a\n";
  }
  const std::string script =
      (fs::path(LATENTAUDIT_SOURCE_DIR) / "examples" / "data" / "qa_to_tasks.py").string();
  const auto tasks = dir / "qa.jsonl";
  const std::string cmd = "/usr/bin/python3 '" + script + "' '" + (dir / "qa.csv").string() + "' '" +
                          tasks.string() +
                          "' --scoring contains --no-need-share 0.5 --stale-from old --stale-answer-from "
                          "old_answer --conflict-from contra";
  REQUIRE(std::system(cmd.c_str()) == 0);
  // the regimes, and the columns used for them are not covariates
  std::vector<json_value> lines;
  {
    std::ifstream f(tasks);
    for (std::string line; std::getline(f, line);) lines.push_back(parse_json(line));
  }
  REQUIRE(lines.size() == 6);
  auto regime = [&](std::size_t i) {
    const json_value* g = lines[i].find("regime");
    return g != nullptr ? g->as_string() : std::string("need");
  };
  CHECK(regime(1) == "need");
  CHECK(regime(2) == "stale");
  CHECK(lines[2].at("document").as_string() == "fly dark ant east");
  CHECK(lines[2].at("text_document").as_string() == "fly dark ant west");
  CHECK(lines[2].at("stale_answer").as_string() == "east");
  CHECK(regime(3) == "conflict");
  CHECK(lines[3].at("prompt").as_string() == "\nwater soft fly dark");  // after the separator
  CHECK(regime(4) == "no_need");  // the second of three need rows at share 0.5
  CHECK(lines[4].at("prompt").as_string() == "\nant west mouse light");
  CHECK(regime(5) == "need");
  CHECK(lines[2].at("covariates").find("old") == nullptr);
  // audit --tasks accepts it: on llama.cpp's text organism the trials run; in a CLI without
  // llama.cpp the file is read and checked, and only the missing tokenizer is refused
  const auto out = dir / "audit";
  const auto r = run_cli({"audit", "--engine", "llama.cpp", "--model",
                          (fs::path(LATENTAUDIT_SOURCE_DIR) / "models" / "organism-text.gguf").string(),
                          "--tasks", tasks.string(), "--seeds", "1", "--arms", "no_comm,kv_full,text_full",
                          "--drift", "none", "--trials-only", "--quiet", "--out", out.string()});
  INFO(r.err);
  if (r.err.find("built without llama.cpp") != std::string::npos) {
    CHECK(r.code == 2);
    return;
  }
  REQUIRE(r.code == 0);
  const std::string records = latentaudit::test::slurp_file(out / "records.jsonl");
  for (const char* g : {"\"need\"", "\"no_need\"", "\"stale\"", "\"conflict\""})
    CHECK(records.find(g) != std::string::npos);
}

#endif  // LATENTAUDIT_CLI_PATH

TEST_CASE("cli: a mistyped command gets 'did you mean', and -h is --help everywhere", "[cli][first_hour]") {
  expect_one_line_error(run_cli({"reprot"}), "unknown command 'reprot' (did you mean 'report'?)");
  expect_one_line_error(run_cli({"adit", "--items", "3"}), "unknown command 'adit' (did you mean 'audit'?)");
  const auto far = run_cli({"frobnicate"});
  expect_one_line_error(far, "unknown command 'frobnicate'");
  CHECK(far.err.find("did you mean") == std::string::npos);
  // -h is --help for every command: those that parse options and those that dispatch on a word
  const std::vector<std::vector<std::string>> help_words = {
      {"audit", "-h"}, {"report", "-h"}, {"plan", "-h"}, {"estimate", "-h"},
      {"power", "-h"}, {"kv", "-h"},     {"-h"}};
  for (const auto& words : help_words) {
    const auto h = run_cli(words);
    INFO(words.front() << ": " << h.err);
    CHECK(h.code == 0);
    CHECK(h.out.rfind("usage: ", 0) == 0);
    CHECK(h.err.empty());
  }
  CHECK(run_cli({"audit", "-h"}).out == run_cli({"audit", "--help"}).out);
}

TEST_CASE("cli: records from another stack: unknown fields and arms warn once with the closest name",
          "[cli][first_hour]") {
  const auto dir = fh_dir("fh_foreign_records");
  fs::create_directories(dir);
  const auto file = dir / "records.jsonl";
  {
    std::ofstream f(file);
    for (int item = 0; item < 6; ++item)
      for (const char* arm : {"no_comm", "text_full", "kv_ful", "kv_noise_0.5"})
        f << R"({"item":)" << item << R"(,"seed":0,"arm":")" << arm << R"(","correct":)" << (item % 2)
          << R"(,"regime":"need","bytse":10,"export_sec":0.1})" << '\n';
  }
  const auto r = run_cli({"report", "--records", file.string(), "--out", (dir / "out").string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto count = [&](const std::string& s) {
    std::size_t n = 0;
    for (auto at = r.err.find(s); at != std::string::npos; at = r.err.find(s, at + 1)) ++n;
    return n;
  };
  // one line per distinct field and label, naming the first file:line and the closest name
  CHECK(count("unknown record field 'bytse' (did you mean 'bytes'?)") == 1);
  CHECK(count("unknown record field 'export_sec' (did you mean 'export_s'?)") == 1);
  CHECK(r.err.find(file.string() + ":1: unknown record field 'bytse'") != std::string::npos);
  CHECK(count("arm 'kv_ful' has no arm_kind and its label names no arm (did you mean 'kv_full'?)") == 1);
  CHECK(count("kv_noise_0.5") == 0);  // a label that names an arm is its kind
  // --quiet silences them
  const auto q = run_cli({"report", "--records", file.string(), "--out", (dir / "out").string(), "--quiet"});
  CHECK(q.code == 0);
  CHECK(q.err.find("unknown record field") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("cli: a unit whose arms disagree on the regime is refused naming both file:lines",
          "[cli][first_hour]") {
  const auto dir = fh_dir("fh_regime_typo");
  fs::create_directories(dir);
  const auto file = dir / "records.jsonl";
  std::ofstream(file) << R"({"item":1,"seed":0,"arm":"no_comm","correct":0,"regime":"need"})" << '\n'
                      << R"({"item":1,"seed":0,"arm":"kv_full","correct":1,"regmie":"need"})" << '\n';
  const auto r = run_cli({"report", "--records", file.string(), "--out", (dir / "out").string()});
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("unknown record field 'regmie' (did you mean 'regime'?)") != std::string::npos);
  CHECK(r.err.find("latentaudit: error: " + file.string() +
                   ":2: the arms of (item 1, seed 0) disagree on the regime: arm 'kv_full' says '', arm "
                   "'no_comm' at " +
                   file.string() + ":1 says 'need' (this record's field 'regmie' is not 'regime')") !=
        std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 2);  // the warning and the error
  fs::remove_all(dir);
}

TEST_CASE(
    "cli: records with only the minimum fields: the decision's summary names the missing regime as the cause",
    "[cli][first_hour]") {
  const auto dir = fh_dir("fh_minimum_records");
  fs::create_directories(dir);
  const auto file = dir / "records.jsonl";
  {
    std::ofstream f(file);
    for (int item = 0; item < 8; ++item)
      for (const char* arm : {"no_comm", "text_full", "kv_full"})
        f << R"({"item":)" << item << R"(,"seed":0,"arm":")" << arm << R"(","correct":)"
          << (std::string(arm) == "no_comm" ? 0 : 1) << "}\n";
  }
  const auto r = run_cli({"report", "--records", file.string(), "--out", (dir / "out").string(), "--quiet"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto report = parse_json(latentaudit::test::slurp_file(dir / "out" / "report.json"));
  const std::string summary = report.at("decision").at("summary").as_string();
  const auto cause = summary.find("The decision needs 'regime'");
  const auto control = summary.find("positive control failed");
  CHECK(cause != std::string::npos);
  CHECK(cause < control);  // the cause comes before the positive control it explains
  CHECK(summary.find("because of the missing field, not because of the task") != std::string::npos);
  fs::remove_all(dir);
}
