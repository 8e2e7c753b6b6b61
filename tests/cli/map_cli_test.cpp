// SPDX-License-Identifier: MIT
// `latentaudit map fit` (issue 29): a cross-model cache map fitted on calibration documents —
// organism-b → organism-a and a drifted sibling → organism-a — written as a map file that
// read_kv_map accepts, with its calibration hash and held-out R² in the summary; bad options exit
// 2 with one line.
#include <catch2/catch.hpp>
#include <latentaudit/backend/kv_map_file.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"
#include "support/common.hpp"

namespace la = latentaudit;

TEST_CASE("map fit: a stranger and a drifted sibling mapped onto organism-a", "[cli][kv_map]") {
  const auto dir = la::test::cli_work_dir() / "map_fit";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string a = la::test::models + "organism-a";
  const auto j = la::test::ok_json({"map", "fit", "--from", la::test::models + "organism-b", "--to", a,
                                    "--out", (dir / "b2a.safetensors").string(), "--calibration", "60"});
  CHECK(j.at("calibration_documents").as_number() == 60.0);
  CHECK(j.at("heldout_documents").as_number() == 12.0);
  CHECK(j.at("calibration_sha256").as_string().size() == 64u);
  const auto f = la::read_kv_map(dir / "b2a.safetensors");
  CHECK(f.calibration_sha256 == j.at("calibration_sha256").as_string());
  CHECK(f.map.layers.size() == 2u);
  CHECK(f.map.source.weights_hash != f.map.target.weights_hash);
  // the first layer of the stranger maps well (held out), as measured on 200 documents
  CHECK(j.at("layers").as_array()[0].at("heldout_mean_r2_key").as_number() > 0.9);
  // the same seed gives the same documents; another seed others
  const auto again =
      la::test::ok_json({"map", "fit", "--from", la::test::models + "organism-b", "--to", a, "--out",
                         (dir / "again.safetensors").string(), "--calibration", "60"});
  CHECK(again.at("calibration_sha256").as_string() == j.at("calibration_sha256").as_string());
  const auto other =
      la::test::ok_json({"map", "fit", "--from", la::test::models + "organism-b", "--to", a, "--out",
                         (dir / "other.safetensors").string(), "--calibration", "60", "--seed", "2"});
  CHECK(other.at("calibration_sha256").as_string() != j.at("calibration_sha256").as_string());
  // a drifted sibling: organism-a's weights after 300 steps of fine-tuning
  const auto d =
      la::test::ok_json({"map", "fit", "--from", a, "--from-overlay",
                         la::test::models + "organism-a-drift/steps-300.safetensors", "--to", a, "--out",
                         (dir / "d2a.safetensors").string(), "--calibration", "60", "--top-layers", "1"});
  CHECK(la::read_kv_map(dir / "d2a.safetensors").map.layers[0].source_layers.size() == 1u);
  CHECK(d.at("layers").as_array()[0].at("heldout_mean_r2_key").as_number() > 0.9);
  // bad options: one line, exit 2
  auto words = [&](std::vector<std::string> extra) {
    std::vector<std::string> w = {"map",  "fit", "--from", la::test::models + "organism-b",
                                  "--to", a,     "--out",  (dir / "x.safetensors").string()};
    w.insert(w.end(), extra.begin(), extra.end());
    return w;
  };
  la::test::expect_one_line_error(la::test::run_cli(words({"--ridge", "0"})), "--ridge");
  la::test::expect_one_line_error(la::test::run_cli(words({"--top-layers", "3"})), "--top-layers");
  la::test::expect_one_line_error(la::test::run_cli(words({"--calibration", "1"})), "--calibration");
  la::test::expect_one_line_error(la::test::run_cli({"map", "fitt"}), "subcommand 'fit'");
  la::test::expect_one_line_error(la::test::run_cli({"map", "fit", "--from", (dir / "nope").string(), "--to",
                                                     a, "--out", (dir / "x.safetensors").string()}),
                                  "nope");
  std::filesystem::remove_all(dir);
}
