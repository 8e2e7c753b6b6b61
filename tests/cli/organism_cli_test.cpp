// SPDX-License-Identifier: MIT
// Tests for `latentaudit organism eval`: the JSON fields on organism-a (accuracy >= 0.97 at
// N = 16 on 300 items, seed 1; no communication inside the Bin(300, 1/32) band [0, 27/300] at
// tail probability 1e-6 on each side; Wilson intervals equal the library's), and bad model
// directories and options exiting with code 2 and one line.
#include <latentaudit/core/json.hpp>
#include <latentaudit/estimators/paired_binary.hpp>
#include <latentaudit/trial/record.hpp>

#include <boost/math/distributions/binomial.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/cli_runner.hpp"

using namespace latentaudit;
using test::run_cli;

namespace {

/// models/<name> in the source tree (appended: GCC 12's false -Warray-bounds on operator+).
std::string model_dir(const char* name) {
  std::string p(LATENTAUDIT_SOURCE_DIR);
  p.append("/models/").append(name);
  return p;
}

}  // namespace

TEST_CASE("organism eval reports accuracy with and without the document", "[cli][organism]") {
  const auto model = model_dir("organism-a");
  const auto j = test::ok_json(
      {"organism", "eval", "--model", model, "--pairs", "16", "--items", "300", "--threads", "2"});
  CHECK(j.at("model").as_string() == model);
  CHECK(j.at("pairs").as_number() == 16);
  CHECK(j.at("items").as_number() == 300);
  CHECK(j.at("seed").as_string() == "1");
  CHECK(j.at("level").as_number() == 0.95);
  CHECK(j.at("chance").as_number() == 1.0 / 32);
  CHECK(j.at("seconds").as_number() >= 0);
  const double correct = j.at("correct").as_number(), none = j.at("no_comm_correct").as_number();
  WARN("organism-a, N = 16, 300 items, seed 1: " << correct << " correct reading the document, " << none
                                                 << " without");
  CHECK(j.at("accuracy").as_number() == correct / 300);
  CHECK(j.at("accuracy").as_number() >= 0.97);
  // no communication: within Bin(300, 1/32) at tail probability 1e-6 on each side
  const boost::math::binomial_distribution<double> chance(300, 1.0 / 32);
  CHECK(none >= std::floor(boost::math::quantile(chance, 1e-6)));
  CHECK(none <= std::ceil(boost::math::quantile(boost::math::complement(chance, 1e-6))));
  CHECK(j.at("no_comm_accuracy").as_number() == none / 300);
  // the intervals are the library's Wilson intervals
  const auto w = wilson_interval({.successes = static_cast<std::size_t>(correct), .trials = 300});
  const auto w0 = wilson_interval({.successes = static_cast<std::size_t>(none), .trials = 300});
  CHECK(j.at("ci_low").as_number() == w.low);
  CHECK(j.at("ci_high").as_number() == w.high);
  CHECK(j.at("no_comm_ci_low").as_number() == w0.low);
  CHECK(j.at("no_comm_ci_high").as_number() == w0.high);
  // defaults: max_pairs (16) pairs; the thread count does not change the result
  const auto d = test::ok_json({"organism", "eval", "--model", model, "--items", "300"});
  CHECK(d.at("pairs").as_number() == 16);
  CHECK(d.at("correct").as_number() == correct);
  CHECK(d.at("no_comm_correct").as_number() == none);
  // another seed draws other items
  const auto s = test::ok_json({"organism", "eval", "--model", model, "--pairs", "2", "--items", "50",
                                "--seed", "18446744073709551615"});
  CHECK(s.at("seed").as_string() == "18446744073709551615");
  CHECK(s.at("accuracy").as_number() >= 0.97);
}

TEST_CASE("organism eval rejects bad models and options with one line", "[cli][organism]") {
  const auto model = model_dir("organism-a");
  struct bad_case {
    std::vector<std::string> args;
    std::string needle;
  };
  const auto no_weights = test::cli_work_dir() / "task_only";  // task.json but no config.json or weights
  std::filesystem::create_directories(no_weights);
  std::filesystem::copy_file(model + "/task.json", no_weights / "task.json",
                             std::filesystem::copy_options::overwrite_existing);
  const std::vector<bad_case> cases{
      {{"organism", "eval", "--model", "/nonexistent"}, "task.json"},
      {{"organism", "eval", "--model", no_weights.string()}, "config.json"},
      {{"organism", "eval", "--model", model_dir("")}, "task.json"},
      {{"organism", "eval", "--model", model, "--pairs", "0"}, "--pairs"},
      {{"organism", "eval", "--model", model, "--pairs", "17"}, "[1, 16]"},
      {{"organism", "eval", "--model", model, "--pairs", "x"}, "--pairs"},
      {{"organism", "eval", "--model", model, "--items", "0"}, "--items"},
      {{"organism", "eval", "--model", model, "--seed", "-1"}, "--seed"},
      {{"organism", "eval", "--model", model, "--threads", "many"}, "--threads"},
      {{"organism", "eval", "--model", model, "--bogus"}, "unknown option '--bogus'"},
      {{"organism", "eval"}, "--model"},
      {{"organism"}, "missing command"},
      {{"organism", "train"}, "unknown command 'train'"},
  };
  for (const auto& c : cases) test::expect_one_line_error(run_cli(c.args), c.needle);
}

namespace {

// The records of an audit's journal, one canonical line each without the timings and the task
// identity, sorted (the execution order is the design's, but a comparison should not rely on it).
std::vector<std::string> record_lines(const std::filesystem::path& p) {
  std::vector<std::string> out;
  std::istringstream in(test::slurp_file(p));
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && line.back() == '\0') line.pop_back();
    if (line.empty()) continue;
    auto r = record_from_json(parse_json(line));
    r.latency = {};
    r.latency_repeats_s.clear();
    out.push_back(record_to_line(r));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("organism tasks: the written task file audits to the built-in audit's records", "[cli]") {
  const auto dir = test::cli_work_dir() / "organism_tasks";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string model = model_dir("organism-a"), tasks = (dir / "o.jsonl").string();
  const auto w =
      test::ok_json({"organism", "tasks", "--model", model, "--out", tasks, "--items", "10", "--seed", "4"});
  CHECK(w.find("tasks")->as_number() == 10);
  const std::vector<std::string> common{"audit",
                                        "--model",
                                        model,
                                        "--seeds",
                                        "2",
                                        "--seed",
                                        "4",
                                        "--arms",
                                        "no_comm,text_full,text_budget_2,kv_full,deranged",
                                        "--partner",
                                        "none",
                                        "--drift",
                                        "none",
                                        "--timing-repeats",
                                        "0",
                                        "--trials-only",
                                        "--quiet"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const auto built_in = test::ok_json(with({"--items", "10", "--out", (dir / "a").string()}));
  const auto from_file = test::ok_json(with({"--tasks", tasks, "--out", (dir / "b").string()}));
  CHECK(built_in.find("trials_run")->as_number() == 100);
  CHECK(from_file.find("trials_run")->as_number() == 100);
  const auto a = record_lines(dir / "a" / "records.jsonl"), b = record_lines(dir / "b" / "records.jsonl");
  REQUIRE(a.size() == 100);
  CHECK(a == b);
  // design.json names the task source.
  const auto design = parse_json(test::slurp_file(dir / "b" / "design.json"));
  REQUIRE(design.find("task_source") != nullptr);
  CHECK(design.find("task_source")->as_string() == "file");
}

TEST_CASE("audit --tasks: bad task files exit 2 with file:line:field before any trial", "[cli]") {
  const auto dir = test::cli_work_dir() / "bad_tasks";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string model = model_dir("organism-a");
  auto write = [&](const std::string& name, const std::string& text) {
    const auto p = (dir / name).string();
    // A second, valid task after the one under test: a design with the deranged arm needs 2 items.
    std::ofstream(p)
        << text << "\n"
        << R"({"id": "ok2", "document_tokens": [0, 6, 41], "query_tokens": [1, 6], "answers": [[41]]})"
        << "\n";
    return p;
  };
  const std::string ok =
      R"({"id": "a", "document_tokens": [0, 5, 40], "query_tokens": [1, 5], "answers": [[40]]})";
  struct bad_case {
    std::string file, needle;
  };
  const std::vector<bad_case> cases{
      {write("noanswer.jsonl",
             ok + "\n" + R"({"id": "b", "document_tokens": [0, 5, 40], "query_tokens": [1, 5]})"),
       "noanswer.jsonl:2:answers: missing"},
      {write("text.jsonl", R"({"id": "a", "document": "Paris", "query": "where?", "answers": ["x"]})"),
       "text.jsonl:1:document: is text, but the engine has no tokenizer"},
      {write("vocab.jsonl",
             R"({"id": "a", "document_tokens": [0, 5, 4000], "query_tokens": [1, 5], "answers": [[40]]})"),
       "vocab.jsonl:1:document_tokens: holds token 4000, outside the engine's vocabulary"},
      {write("long.jsonl",
             [] {  // appended: GCC 12's false -Wstringop-overflow on "literal" + string at -O3
               std::string s = "{\"id\": \"a\", \"document_tokens\": [0";
               for (int i = 0; i < 5000; ++i) s.append(", 5");
               return s.append("], \"query_tokens\": [1, 5], \"answers\": [[40]]}");
             }()),
       "long.jsonl:1:document_tokens: the document (5001 tokens)"},
      {write("json.jsonl", ok + "\n{\"id\": \"b\",\n"), "json.jsonl:2:(json): "},
  };
  for (const auto& c : cases) {
    const auto out = (dir / "out").string();
    std::filesystem::remove_all(out);
    const auto r = run_cli({"audit", "--model", model, "--tasks", c.file, "--partner", "none", "--drift",
                            "none", "--out", out, "--quiet"});
    test::expect_one_line_error(r, c.needle);
    CHECK_FALSE(std::filesystem::exists(std::filesystem::path(out) / "records.jsonl"));  // before any trial
  }
  test::expect_one_line_error(
      run_cli({"audit", "--model", model, "--tasks", cases[0].file, "--stale-fraction", "0.2"}),
      "--stale-fraction");
  test::expect_one_line_error(run_cli({"audit", "--model", model, "--scoring", "fuzzy"}), "--scoring");
  test::expect_one_line_error(run_cli({"organism", "tasks", "--model", model}), "--out");
}

TEST_CASE("audit --tasks: a token-id task file with covariates audits on the reference engine", "[cli]") {
  const auto dir = test::cli_work_dir() / "token_tasks";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string model = model_dir("organism-a");
  // 24 hand-made recall documents in organism-a's tokens (task.json: bos 0, sep 1, keys 4.., values
  // 36..), each with a label and a number, and an unread field.
  std::ostringstream f;
  f << R"({"latentaudit_tasks": 1, "scoring": "token_exact", "bos": 0})"
    << "\n";
  for (int i = 0; i < 24; ++i) {
    const int k = 4 + i % 16, v = 36 + (i * 7) % 32, k2 = 4 + (i + 5) % 16, v2 = 36 + (i * 3) % 32;
    f << "{\"id\": \"t" << i << "\", \"document_tokens\": [0, " << k << ", " << v << ", " << k2 << ", " << v2
      << "], \"query_tokens\": [1, " << k << "], \"answers\": [[" << v
      << "]], \"covariates\": {\"domain\": \"" << (i % 2 == 0 ? "even" : "odd") << "\", \"size\": " << i
      << "}, \"source\": \"hand\"}\n";
  }
  const auto tasks = (dir / "t.jsonl").string();
  std::ofstream(tasks) << f.str();
  const auto out = dir / "out";
  const auto j = test::ok_json({"audit",
                                "--model",
                                model,
                                "--tasks",
                                tasks,
                                "--seeds",
                                "1",
                                "--arms",
                                "no_comm,text_full,text_budget_1,kv_full",
                                "--partner",
                                "none",
                                "--drift",
                                "none",
                                "--timing-repeats",
                                "0",
                                "--bootstrap",
                                "200",
                                "--out",
                                out.string(),
                                "--quiet"});
  CHECK(j.find("trials_run")->as_number() == 24 * 3);  // text_budget_1 left out: no budget units
  CHECK(j.find("arms_unavailable")->find("text_budget_1") != nullptr);
  const auto recs = test::slurp_file(out / "records.jsonl");
  CHECK(recs.find("\"covariate_labels\":{\"domain\":\"even\"}") != std::string::npos);
  CHECK(recs.find("\"task_fields\":{\"source\":\"hand\"}") != std::string::npos);
  CHECK(recs.find("\"task_id\":\"t23\"") != std::string::npos);
  // Every covariate reaches the CATE table: the label by value, the numbers by tertile.
  const auto report = parse_json(test::slurp_file(out / "report.json"));
  std::set<std::string> vars;
  for (const auto& c : report.find("cate")->as_array()) vars.insert(c.find("variable")->as_string());
  CHECK(vars.count("domain") == 1);
  CHECK(vars.count("size") == 1);
  CHECK(vars.count("regime") == 1);
}
