// SPDX-License-Identifier: MIT
// Outputs never replace inputs (issue 51, item 3): every command that writes a file refuses, with
// exit 2 and one line naming the output option and the input, an output path that is one of its
// inputs (the same file, a symbolic or hard link to it) or lies inside an input model folder —
// before any work, the input left byte for byte as it was.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/cli_runner.hpp"
#include "support/common.hpp"

#ifdef LATENTAUDIT_CLI_PATH

using latentaudit::test::expect_one_line_error;
using latentaudit::test::run_cli;
using latentaudit::test::slurp_file;
namespace fs = std::filesystem;

namespace {

// A private copy of organism-a (config.json, model.safetensors, task.json) under `name`.
fs::path organism_copy(const std::string& name) {
  const auto dir = latentaudit::test::cli_work_dir() / ("guard_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(latentaudit::test::model_path / "organism-a", dir / "m", fs::copy_options::recursive);
  return dir;
}

// Runs `args`, expects the one-line refusal naming `output` and `input`, and checks that `file`
// kept its bytes.
void expect_refused(const std::vector<std::string>& args, const fs::path& file, const std::string& output,
                    const std::string& input) {
  const auto before = slurp_file(file);
  const auto r = run_cli(args);
  expect_one_line_error(r, output);
  CHECK(r.err.find(input) != std::string::npos);
  CHECK(r.err.find("an output never replaces an input") != std::string::npos);
  CHECK(slurp_file(file) == before);
}

}  // namespace

TEST_CASE("cli: forward and gguf export never write into their model folder", "[cli][output_guard]") {
  const auto dir = organism_copy("model");
  const auto m = dir / "m";
  expect_refused(
      {"forward", "--model", m.string(), "--tokens", "1,2", "--logits-out", (m / "config.json").string()},
      m / "config.json", "--logits-out", "--model");
  expect_refused({"gguf", "export", "--model", m.string(), "--out", (m / "model.safetensors").string()},
                 m / "model.safetensors", "option --out", "--model");
  // a symbolic link and a hard link elsewhere to the model's file are that file
  fs::create_symlink(m / "config.json", dir / "link.csv");
  expect_refused(
      {"forward", "--model", m.string(), "--tokens", "1,2", "--logits-out", (dir / "link.csv").string()},
      m / "config.json", "--logits-out", "--model");
  fs::create_hard_link(m / "config.json", dir / "hard.csv");
  expect_refused(
      {"forward", "--model", m.string(), "--tokens", "1,2", "--logits-out", (dir / "hard.csv").string()},
      m / "config.json", "--logits-out", "the same file as its config.json");
  // an output beside the folder is written
  const auto r = run_cli(
      {"forward", "--model", m.string(), "--tokens", "1,2", "--logits-out", (dir / "logits.csv").string()});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(fs::file_size(dir / "logits.csv") > 0);
}

TEST_CASE("cli: organism tasks, kv make-example and map fit never replace their inputs",
          "[cli][output_guard]") {
  const auto dir = organism_copy("files");
  const auto m = dir / "m";
  expect_refused(
      {"organism", "tasks", "--task", (m / "task.json").string(), "--out", (m / "task.json").string()},
      m / "task.json", "option --out", "--task");
  expect_refused({"organism", "tasks", "--model", m.string(), "--out", (m / "task.json").string()},
                 m / "task.json", "option --out", "--model");
  const auto key = dir / "key";
  std::ofstream(key, std::ios::binary) << "0123456789abcdef0123456789abcdef";
  fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write);
  expect_refused({"kv", "make-example", "--out", key.string(), "--key-file", key.string()}, key,
                 "option --out", "--key-file");
  const auto tasks = dir / "tasks.jsonl";
  REQUIRE(
      run_cli({"organism", "tasks", "--model", m.string(), "--items", "4", "--out", tasks.string()}).code ==
      0);
  const auto b = latentaudit::test::model_path / "organism-b";
  expect_refused({"map", "fit", "--from", m.string(), "--to", b.string(), "--tasks", tasks.string(), "--out",
                  tasks.string()},
                 tasks, "option --out", "--tasks");
  expect_refused(
      {"map", "fit", "--from", m.string(), "--to", b.string(), "--out", (m / "model.safetensors").string()},
      m / "model.safetensors", "option --out", "--from");
}

TEST_CASE("cli: audit and report never write over their inputs", "[cli][output_guard]") {
  const auto dir = organism_copy("audit");
  const auto m = dir / "m";
  const std::vector<std::string> small = {
      "--items",          "2",    "--seeds", "1",    "--arms", "no_comm,kv_full",
      "--partner",        "none", "--drift", "none", "--map",  "none",
      "--timing-repeats", "0",    "--quiet"};
  auto args = std::vector<std::string>{"audit", "--model", m.string(), "--out", (m / "run").string()};
  args.insert(args.end(), small.begin(), small.end());
  expect_refused(args, m / "config.json", "option --out", "--model");
  CHECK_FALSE(fs::exists(m / "run"));  // refused before the directory is made
  // a task file named as one of the audit's outputs in --out
  const auto out = dir / "out";
  fs::create_directories(out);
  REQUIRE(run_cli({"organism", "tasks", "--model", m.string(), "--items", "4", "--out",
                   (out / "report.md").string()})
              .code == 0);
  args = {"audit", "--model", m.string(), "--tasks", (out / "report.md").string(), "--out", out.string()};
  args.insert(args.end(), small.begin(), small.begin() + 4);
  expect_refused(args, out / "report.md", "option --out", "--tasks");
  // report: a records file that the report would replace
  args = {"audit", "--model", m.string(), "--out", (dir / "run").string()};
  args.insert(args.end(), small.begin(), small.end());
  REQUIRE(run_cli(args).code == 0);
  fs::copy_file(dir / "run" / "records.jsonl", dir / "report.json");
  expect_refused({"report", "--records", (dir / "report.json").string(), "--out", dir.string()},
                 dir / "report.json", "option --out", "--records");
  // the ordinary report into the records' own directory still runs
  const auto r = run_cli({"report", "--records", (dir / "run").string()});
  INFO(r.err);
  CHECK(r.code == 0);
}

#endif  // LATENTAUDIT_CLI_PATH
