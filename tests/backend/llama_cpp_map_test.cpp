// SPDX-License-Identifier: MIT
// `latentaudit map fit --engine llama.cpp` (issue 29): the same calibration documents, caches and
// map as on the reference engine, within the two engines' rounding.
#include <catch2/catch.hpp>
#include <latentaudit/backend/kv_map_file.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include "support/cli_runner.hpp"
#include "support/common.hpp"
#include "support/llama_cpp_engine.hpp"

namespace la = latentaudit;

TEST_CASE("map fit on llama.cpp: the reference engine's map within rounding", "[llama_cpp][kv_map]") {
  const auto dir = la::test::cli_work_dir() / "map_llama";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string a = la::test::models + "organism-a";
  const auto ref = la::test::ok_json({"map", "fit", "--from", la::test::models + "organism-b", "--to", a,
                                      "--out", (dir / "ref.safetensors").string(), "--calibration", "40"});
  const auto gg = la::test::ok_json(
      {"map", "fit", "--engine", "llama.cpp", "--from", la::test::organism_gguf("organism-b").string(),
       "--to", la::test::organism_gguf("organism-a").string(), "--task", a + "/task.json", "--out",
       (dir / "gguf.safetensors").string(), "--calibration", "40"});
  CHECK(gg.at("engine").as_string() == "llama.cpp");
  CHECK(gg.at("calibration_sha256").as_string() == ref.at("calibration_sha256").as_string());
  const auto r = la::read_kv_map(dir / "ref.safetensors").map;
  const auto g = la::read_kv_map(dir / "gguf.safetensors").map;
  REQUIRE(g.layers.size() == r.layers.size());
  for (std::size_t l = 0; l < r.layers.size(); ++l) {
    CHECK(g.layers[l].source_layers == r.layers[l].source_layers);
    for (std::size_t h = 0; h < r.layers[l].r2_key.size(); ++h) {
      CHECK(std::fabs(g.layers[l].r2_key[h] - r.layers[l].r2_key[h]) < 1e-3);
      CHECK(std::fabs(g.layers[l].r2_value[h] - r.layers[l].r2_value[h]) < 1e-3);
    }
  }
  // --task is needed with llama.cpp (a GGUF has no task.json beside it); --from-overlay is the
  // reference engine's
  la::test::expect_one_line_error(la::test::run_cli({"map", "fit", "--engine", "llama.cpp", "--from",
                                                     la::test::organism_gguf("organism-b").string(), "--to",
                                                     la::test::organism_gguf("organism-a").string(), "--out",
                                                     (dir / "x.safetensors").string()}),
                                  "needs --task FILE");
  std::filesystem::remove_all(dir);
}
