// SPDX-License-Identifier: MIT
// `latentaudit map fit --engine llama.cpp` (issue 29): the same calibration documents, caches and
// map as on the reference engine, within the two engines' rounding.
#include <catch2/catch.hpp>
#include <latentaudit/engine/kv_map_file.hpp>

#include <algorithm>
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

TEST_CASE("audit --map on llama.cpp: the partner's cache through a GGUF-fitted map", "[llama_cpp][kv_map]") {
  const auto dir = la::test::cli_work_dir() / "audit_map_llama";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string a = la::test::models + "organism-a";
  const std::string ga = la::test::organism_gguf("organism-a").string(),
                    gb = la::test::organism_gguf("organism-b").string();
  const std::string map = (dir / "b2a.safetensors").string();
  const auto fit = la::test::ok_json({"map", "fit", "--engine", "llama.cpp", "--from", gb, "--to", ga,
                                      "--task", a + "/task.json", "--out", map, "--calibration", "80"});
  // a task file of organism items (the llama.cpp audit reads tasks, not an organism directory)
  const std::string tasks = (dir / "tasks.jsonl").string();
  (void)la::test::ok_json({"organism", "tasks", "--model", a, "--out", tasks, "--items", "30"});
  const auto j = la::test::ok_json({"audit",
                                    "--engine",
                                    "llama.cpp",
                                    "--model",
                                    ga,
                                    "--partner",
                                    gb,
                                    "--tasks",
                                    tasks,
                                    "--arms",
                                    "no_comm,text_full,kv_full,cross_model,kv_mapped",
                                    "--map",
                                    map,
                                    "--seeds",
                                    "1",
                                    "--timing-repeats",
                                    "0",
                                    "--quiet",
                                    "--out",
                                    (dir / "run").string()});
  CHECK(j.at("findings").find("mapped.beats_unmapped") != nullptr);
  const std::string records = la::test::slurp_file(dir / "run" / "records.jsonl");
  CHECK(records.find("\"map\":\"" + fit.at("id").as_string() + "\"") != std::string::npos);
  CHECK(records.find("relay_error") == std::string::npos);  // imported with B's fingerprint checked
  // a map onto another receiver (organism-b) is refused naming the file
  const std::string a2b = (dir / "a2b.safetensors").string();
  (void)la::test::ok_json({"map", "fit", "--engine", "llama.cpp", "--from", ga, "--to", gb, "--task",
                           a + "/task.json", "--out", a2b, "--calibration", "40"});
  // (after llama.cpp's own load messages: the map is matched to the engines once they are loaded)
  const auto r = la::test::run_cli({"audit", "--engine", "llama.cpp", "--model", ga, "--partner", gb,
                                    "--tasks", tasks, "--arms", "no_comm,kv_mapped", "--map", a2b, "--seeds",
                                    "1", "--quiet", "--out", (dir / "x").string()});
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  const auto at = r.err.find("latentaudit: error: ");
  REQUIRE(at != std::string::npos);
  const std::string line = r.err.substr(at);
  CHECK(line.find("not to this audit's model") != std::string::npos);
  CHECK(line.find("a2b.safetensors") != std::string::npos);
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  std::filesystem::remove_all(dir);
}
