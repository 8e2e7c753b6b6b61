// SPDX-License-Identifier: MIT
// Tests for `latentaudit organism eval`: the JSON fields on organism-a (accuracy >= 0.97 at
// N = 16 on 300 items, seed 1; no communication inside the Bin(300, 1/32) band [0, 27/300] at
// tail probability 1e-6 on each side; Wilson intervals equal the library's), and bad model
// directories and options exiting with code 2 and one line.
#include <latentaudit/core/json.hpp>
#include <latentaudit/estimators/paired_binary.hpp>

#include <boost/math/distributions/binomial.hpp>

#include <cmath>
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
