// SPDX-License-Identifier: MIT
// `latentaudit map fit` (issue 29): a cross-model cache map fitted on calibration documents —
// organism-b → organism-a and a drifted sibling → organism-a — written as a map file that
// read_kv_map accepts, with its calibration hash and held-out R² in the summary; bad options exit
// 2 with one line.
#include <catch2/catch.hpp>
#include <latentaudit/engine/kv_map_file.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
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
  // --ridge auto: chosen among six on a validation split of the fitted documents, each candidate reported
  const auto au =
      la::test::ok_json({"map", "fit", "--from", la::test::models + "organism-b", "--to", a, "--out",
                         (dir / "auto.safetensors").string(), "--calibration", "60", "--ridge", "auto"});
  const auto& cand = au.at("ridge_candidates").as_array();
  REQUIRE(cand.size() == 6u);
  double best = -1e9;
  for (const auto& x : cand) best = std::max(best, x.at("validation_mean_r2").as_number());
  bool chosen = false;
  for (const auto& x : cand)
    chosen |= x.at("ridge").as_number() == au.at("ridge").as_number() &&
              x.at("validation_mean_r2").as_number() == best;
  CHECK(chosen);
  CHECK(la::read_kv_map(dir / "auto.safetensors").map.ridge == au.at("ridge").as_number());
  CHECK(j.at("heldout_attention_cosine").as_number() > 0.5);
  la::test::expect_one_line_error(
      la::test::run_cli({"map", "fit", "--from", la::test::models + "organism-b", "--to", a, "--out",
                         (dir / "x.safetensors").string(), "--ridge", "automatic"}),
      "--ridge");
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

TEST_CASE("audit --map: kv_mapped arms through a stranger's and a sibling's map, refusals naming the file",
          "[cli][kv_map]") {
  const auto dir = la::test::cli_work_dir() / "audit_map";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string a = la::test::models + "organism-a", b = la::test::models + "organism-b";
  const std::string drift = la::test::models + "organism-a-drift";
  const std::string b2a = (dir / "b2a.safetensors").string(), d2a = (dir / "d2a.safetensors").string();
  const auto jb =
      la::test::ok_json({"map", "fit", "--from", b, "--to", a, "--out", b2a, "--calibration", "80"});
  (void)la::test::ok_json({"map", "fit", "--from", a, "--from-overlay", drift + "/steps-300.safetensors",
                           "--to", a, "--out", d2a, "--calibration", "80"});
  const std::vector<std::string> base = {
      "audit",   "--model", a,         "--partner",        b,  "--drift", drift,
      "--seeds", "1",       "--quiet", "--timing-repeats", "0"};
  auto audit = [&](std::vector<std::string> extra) {
    std::vector<std::string> w = base;
    if (std::find(extra.begin(), extra.end(), "--items") == extra.end()) w.insert(w.end(), {"--items", "40"});
    w.insert(w.end(), extra.begin(), extra.end());
    return w;
  };
  const std::string arms = "no_comm,text_full,kv_full,cross_model,kv_drift_300,kv_mapped,kv_mapped_drift_300";
  const auto out = dir / "run";
  const auto j = la::test::ok_json(audit({"--arms", arms, "--map", b2a + "," + d2a, "--out", out.string()}));
  const auto& findings = j.at("findings");
  for (const char* id : {"mapped.beats_unmapped", "mapped.noninferior_to_same_model", "mapped.retention",
                         "mapped.drift_300.beats_unmapped", "mapped.drift_300.retention"})
    CHECK(findings.find(id) != nullptr);
  // the stranger's and the sibling's maps both beat relaying their caches unmapped (0 % on the organisms)
  CHECK(findings.at("mapped.beats_unmapped").as_string() == "yes");
  CHECK(findings.at("mapped.drift_300.beats_unmapped").as_string() == "yes");
  // the maps' ids: in design.json (the identity: a resume with another map is refused) and the records
  const auto design = la::parse_json(la::test::slurp_file(out / "design.json"));
  const auto& maps = design.at("options").at("maps");
  CHECK(maps.at("kv_mapped").at("id").as_string() == jb.at("id").as_string());
  CHECK(maps.at("kv_mapped_drift_300").at("id").as_string().size() == 16u);
  const std::string records = la::test::slurp_file(out / "records.jsonl");
  CHECK(records.find("\"map\":\"" + jb.at("id").as_string() + "\"") != std::string::npos);
  // a resume with the maps swapped for other ones is refused (another design)
  const std::string other = (dir / "b2a-2.safetensors").string();
  (void)la::test::ok_json(
      {"map", "fit", "--from", b, "--to", a, "--out", other, "--calibration", "80", "--seed", "3"});
  const auto resumed = la::test::run_cli(
      audit({"--arms", arms, "--map", other + "," + d2a, "--out", out.string(), "--resume"}));
  CHECK(resumed.code == 2);
  // without --arms the matched maps add their arms to the default ones
  const auto k =
      la::test::ok_json(audit({"--items", "12", "--map", b2a, "--out", (dir / "default").string()}));
  CHECK(k.at("findings").find("mapped.beats_unmapped") != nullptr);
  CHECK(k.at("findings").find("mapped.drift_300.beats_unmapped") == nullptr);
  // refusals: exit 2, one line naming the option and the file
  // a map calibrated on the audit's own items: map fit --seed S draws from stream S ^ 0x4D4150, so
  // an audit whose seed is that stream's reads the calibration documents as its items
  const std::string own = (dir / "own.safetensors").string();
  (void)la::test::ok_json(
      {"map", "fit", "--from", b, "--to", a, "--out", own, "--calibration", "40", "--seed", "0"});
  la::test::expect_one_line_error(
      la::test::run_cli(audit({"--arms", arms, "--map", own, "--seed", std::to_string(0x4D4150), "--out",
                               (dir / "own").string()})),
      "was calibrated on");
  // ... but not when --arms names no kv_mapped arm: the map plays no part, and is not checked
  (void)la::test::ok_json(audit({"--arms", "no_comm,text_full,kv_full", "--map", own, "--seed",
                                 std::to_string(0x4D4150), "--out", (dir / "own-unused").string()}));
  // a map onto another model
  const std::string a2b = (dir / "a2b.safetensors").string();
  (void)la::test::ok_json({"map", "fit", "--from", a, "--to", b, "--out", a2b, "--calibration", "40"});
  la::test::expect_one_line_error(
      la::test::run_cli(audit({"--arms", arms, "--map", a2b, "--out", (dir / "x1").string()})),
      "not to this audit's model");
  // a corrupt file
  {
    std::ofstream bad(dir / "bad.safetensors", std::ios::binary);
    bad << "\x08\x00\x00\x00\x00\x00\x00\x00{}      ";
  }
  la::test::expect_one_line_error(
      la::test::run_cli(audit(
          {"--arms", arms, "--map", (dir / "bad.safetensors").string(), "--out", (dir / "x2").string()})),
      "bad.safetensors");
  // calibration from a task file (--tasks): an audit of the same tasks is refused, one of other
  // tasks runs
  const std::string cal = (dir / "calibration.jsonl").string(), held = (dir / "audit.jsonl").string();
  (void)la::test::ok_json({"organism", "tasks", "--model", a, "--out", cal, "--items", "50", "--seed", "11"});
  (void)la::test::ok_json(
      {"organism", "tasks", "--model", a, "--out", held, "--items", "40", "--seed", "12"});
  const std::string tm = (dir / "tasks-map.safetensors").string();
  const auto jt = la::test::ok_json({"map", "fit", "--from", b, "--to", a, "--out", tm, "--tasks", cal});
  CHECK(jt.at("calibration_documents").as_number() == 50.0);
  const std::vector<std::string> on_tasks = {"audit",   "--model", a,         "--partner", b,
                                             "--seeds", "1",       "--quiet", "--map",     tm};
  auto with = [&](std::vector<std::string> w, std::vector<std::string> extra) {
    w.insert(w.end(), extra.begin(), extra.end());
    return w;
  };
  la::test::expect_one_line_error(la::test::run_cli(with(on_tasks, {"--arms", arms, "--tasks", cal, "--drift",
                                                                    drift, "--out", (dir / "t1").string()})),
                                  "was calibrated on 50 of this audit's item documents");
  const auto ok = la::test::ok_json(
      with(on_tasks, {"--tasks", held, "--drift", "none", "--arms",
                      "no_comm,text_full,kv_full,cross_model,kv_mapped", "--out", (dir / "t2").string()}));
  CHECK(ok.at("findings").find("mapped.retention") != nullptr);
  la::test::expect_one_line_error(la::test::run_cli({"map", "fit", "--from", b, "--to", a, "--out", tm,
                                                     "--tasks", cal, "--calibration", "51"}),
                                  "--calibration 51 exceeds the 50 tasks");
  la::test::expect_one_line_error(la::test::run_cli({"map", "fit", "--from", b, "--to", a, "--out", tm,
                                                     "--tasks", cal, "--task", a + "/task.json"}),
                                  "not both");
  // a kv_mapped arm without a map, two maps of one sender
  la::test::expect_one_line_error(la::test::run_cli(audit({"--arms", "no_comm,kv_mapped", "--map", "none",
                                                           "--out", (dir / "x3").string()})),
                                  "needs a cache map");
  la::test::expect_one_line_error(
      la::test::run_cli(audit({"--arms", arms, "--map", b2a + "," + other, "--out", (dir / "x4").string()})),
      "second map from sender");
  la::test::expect_one_line_error(
      la::test::run_cli(audit(
          {"--arms", arms, "--map", (dir / "missing.safetensors").string(), "--out", (dir / "x5").string()})),
      "missing.safetensors");
  std::filesystem::remove_all(dir);
}

TEST_CASE("audit --map across cache shapes: organism-c (3 x 4 x 8) and organism-a (2 x 2 x 16)",
          "[cli][kv_map]") {
  const auto dir = la::test::cli_work_dir() / "audit_map_shapes";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string a = la::test::models + "organism-a", c = la::test::models + "organism-c";
  // the shipped maps (models/maps) are the default: the one from organism-c to organism-a matches
  const auto j =
      la::test::ok_json({"audit", "--model", a, "--partner", c, "--drift", "none", "--items", "60", "--seeds",
                         "1", "--arms", "no_comm,text_full,kv_full,cross_model,kv_mapped", "--timing-repeats",
                         "0", "--quiet", "--out", (dir / "c2a").string()});
  // a forced import cannot place a cache of another shape: cross_model is left out, with the reason
  CHECK(j.at("arms_unavailable").at("cross_model").as_string().find("another shape") != std::string::npos);
  CHECK(j.at("findings").at("mapped.beats_unmapped").as_string() == "inconclusive");  // no unmapped arm
  const auto report = la::parse_json(la::test::slurp_file(dir / "c2a" / "report.json"));
  const auto& m = report.at("mapped").at("arms").as_array().at(0);
  CHECK(m.at("map").as_string() == "ecbd8eda3391eb69");
  // the mapped cache carries part of the document: it beats no communication
  CHECK(m.at("mapped_benefit").at("verdict_low").as_number() > 0.1);
  // the drift manifest's senders (organism-a's shape) cannot relay into organism-c either
  const auto k = la::test::ok_json({"audit", "--model", c, "--partner", a, "--items", "12", "--seeds", "1",
                                    "--timing-repeats", "0", "--quiet", "--out", (dir / "a2c").string()});
  CHECK(k.at("arms_unavailable").at("kv_drift_300").as_string().find("another shape") != std::string::npos);
  CHECK(k.at("findings").find("mapped.retention") != nullptr);
  std::filesystem::remove_all(dir);
}
