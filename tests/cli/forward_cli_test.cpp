// SPDX-License-Identifier: MIT
// Tests for `latentaudit forward`: logits CSV against the PyTorch golden values, the JSON argmax,
// and bad model directories / token ids / lengths exiting with code 2 and one line.
#include <latentaudit/core/json.hpp>

#include "support/catch.hpp"
#include "support/cli_runner.hpp"
#include "support/golden.hpp"

using namespace latentaudit;
using test::run_cli;

TEST_CASE("forward writes the logits of every position, matching PyTorch", "[cli][forward]") {
  const auto model = test::golden_path("reference_cpu/tiny_f32");
  const auto csv = (test::cli_work_dir() / "logits.csv").string();
  const auto r = run_cli({"forward", "--model", model, "--tokens", "63,62,61", "--all", "--logits-out", csv});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = parse_json(r.out);
  CHECK(j.at("positions").as_array().size() == 3);
  // golden rows of sequence 1 ("63,62,61")
  std::ifstream g(model + "/logits.csv"), got(csv);
  std::vector<std::vector<double>> want;
  for (std::string line; std::getline(g, line);) {
    const auto c = test::split_csv_line(line);
    if (c[0] != "1") continue;
    std::vector<double> row;
    for (std::size_t i = 2; i < c.size(); ++i) row.push_back(test::parse_number(c[i]));
    want.push_back(row);
  }
  REQUIRE(want.size() == 3);
  std::size_t p = 0;
  for (std::string line; std::getline(got, line); ++p) {
    const auto c = test::split_csv_line(line);
    REQUIRE(c.size() == 64);
    std::size_t argmax = 0;
    for (std::size_t v = 0; v < 64; ++v) {
      CHECK(std::fabs(test::parse_number(c[v]) - want[p][v]) < 1e-4);
      if (want[p][v] > want[p][argmax]) argmax = v;
    }
    CHECK(j.at("positions").as_array()[p].at("argmax").as_number() == static_cast<double>(argmax));
  }
  CHECK(p == 3);
}

TEST_CASE("forward rejects bad models, tokens and lengths with one line", "[cli][forward]") {
  const auto model = test::golden_path("reference_cpu/tiny_f32");
  struct bad_case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<bad_case> cases{
      {{"forward", "--model", "/nonexistent", "--tokens", "1"}, "config.json"},
      {{"forward", "--model", model, "--tokens", "1,64"}, "outside [0, 64)"},
      {{"forward", "--model", model, "--tokens", "1,,2"}, "--tokens"},
      {{"forward", "--model", model, "--tokens", "-1"}, "--tokens"},
      {{"forward", "--model", model}, "--tokens"},
      {{"forward", "--tokens", "1"}, "--model"},
      {{"forward", "--model", test::golden_path("reference_cpu"), "--tokens", "1"}, "config.json"},
  };
  for (const auto& c : cases) test::expect_one_line_error(run_cli(c.args), c.needle);
  std::string long_seq = "1";
  for (int i = 0; i < 600; ++i) long_seq += ",1";
  test::expect_one_line_error(run_cli({"forward", "--model", model, "--tokens", long_seq}),
                              "outside [0, 512)");
  CHECK(run_cli({"forward", "--help"}).code == 0);
}
