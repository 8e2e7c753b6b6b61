// SPDX-License-Identifier: MIT
// Hostile and careless inputs of issue 26's "other surfaces", each refused with exit 2 and one line
// naming the file, field, key or option: regex patterns that crash std::regex, task fields that
// outgrow a record line, planted lock-file symlinks, outputs that are devices, write errors on
// stdout and file-size limits, --config integers and overridden values, the arm and link parsers,
// GGUF files llama.cpp would abort on (checked where the CLI has llama.cpp), an oversized design.json.
#include <latentaudit/engine/gguf.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/cli_runner.hpp"
#include "support/common.hpp"

#ifdef LATENTAUDIT_CLI_PATH

using namespace latentaudit;
using latentaudit::test::expect_one_line_error;
using latentaudit::test::ok_json;
using latentaudit::test::run_cli;
namespace fs = std::filesystem;

namespace {
using latentaudit::test::model_path;
fs::path hostile_work(const std::string& name) {
  return latentaudit::test::cli_work_dir() / ("hostile_" + name);
}
using latentaudit::test::write_text;
std::string task_line(const std::string& id, const std::string& answer) {
  json_value j = json_value::object();
  j.set("id", id);
  j.set("document_tokens", json_value(json_value::array_type{json_value(1), json_value(2)}));
  j.set("query_tokens", json_value(json_value::array_type{json_value(3)}));
  j.set("answers", json_value(json_value::array_type{json_value(answer)}));
  return write_json(j) + "\n";
}
// The shell's exit status of `latentaudit ARGS` with stdout redirected by `redirect` (e.g.
// ">/dev/full"), stderr into `err`.
int run_shell(const std::string& args, const std::string& redirect, const fs::path& err,
              const std::string& prefix = "") {
  const std::string cmd = prefix + "'" + std::string(LATENTAUDIT_CLI_PATH) + "' " + args + " " + redirect +
                          " 2>'" + err.string() + "'";
  const int rc = std::system(("bash -c \"" + cmd + "\"").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
// The exit status of `latentaudit ARGS` whose stdout is a pipe without a reader.
int closed_pipe_exit(const std::vector<std::string>& args) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[1]);
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 2);
    std::vector<std::string> words{LATENTAUDIT_CLI_PATH};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
}  // namespace

TEST_CASE("cli: a 120 KB nested regex answer is refused by length, not a crash", "[cli][hostile]") {
  const std::string deep = std::string(60000, '(') + "a" + std::string(60000, ')');
  const auto f = hostile_work("deep.jsonl");
  write_text(f, task_line("0", deep) + task_line("1", deep));
  expect_one_line_error(
      run_cli({"audit", "--tasks", f.string(), "--scoring", "regex", "--out",
               hostile_work("deep_out").string(), "--seeds", "1", "--quiet"}),
      "deep.jsonl:1:answers[0]: is a pattern of 120001 bytes, longer than the limit of 4096");
}

TEST_CASE("cli: a task whose id or extra field outgrows a record line is refused at load", "[cli][hostile]") {
  const auto f = hostile_work("bigid.jsonl");
  write_text(f, task_line(std::string(1500000, 'x'), "a"));
  expect_one_line_error(
      run_cli({"audit", "--tasks", f.string(), "--out", hostile_work("bigid_out").string(), "--quiet"}),
      "bigid.jsonl:1:id: brings the task's id, covariates and other fields to more than 262144");
  CHECK_FALSE(fs::exists(hostile_work("bigid_out") / "records.jsonl"));
}

TEST_CASE("cli: a planted lock-file symlink is refused, its target untouched", "[cli][hostile]") {
  const auto dir = hostile_work("lockdir");
  fs::create_directories(dir);
  const auto target = hostile_work("precious.txt");
  write_text(target, "precious\n");
  fs::remove(dir / ".latentaudit.lock");
  fs::create_symlink(target, dir / ".latentaudit.lock");
  expect_one_line_error(run_cli({"audit", "--out", dir.string(), "--items", "2", "--seeds", "1", "--arms",
                                 "no_comm", "--quiet"}),
                        "is a symbolic link (refused");
  CHECK(latentaudit::test::slurp_file(target) == "precious\n");
}

TEST_CASE("cli: outputs that are not regular files are refused, stdout errors exit 2", "[cli][hostile]") {
  expect_one_line_error(run_cli({"kv", "make-example", "--out", "/dev/null"}),
                        "--out '/dev/null' is a character device, not a regular file");
  expect_one_line_error(
      run_cli({"gguf", "export", "--model", (model_path / "organism-a").string(), "--out", "/dev/null"}),
      "--out '/dev/null' is a character device");
  expect_one_line_error(
      run_cli({"organism", "tasks", "--out", hostile_work("").parent_path().string(), "--items", "2"}),
      "is a directory, not a regular file");
  const auto err = hostile_work("stderr.txt");
  CHECK(run_shell("--version", ">/dev/full", err) == 2);
  CHECK(latentaudit::test::slurp_file(err).find("cannot write to stdout: No space left on device") !=
        std::string::npos);
  CHECK(run_shell("organism tasks --out '" + hostile_work("t.jsonl").string() + "' --items 2", ">&-", err) ==
        2);
  CHECK(latentaudit::test::slurp_file(err).find("cannot write to stdout") != std::string::npos);
  // a closed pipe (its read end closed before the CLI starts): EPIPE, a message, exit 2 (not
  // SIGPIPE, not 0)
  CHECK(closed_pipe_exit({"organism", "tasks", "--items", "3", "--out", hostile_work("t2.jsonl").string()}) ==
        2);
  // a file-size limit: EFBIG (SIGXFSZ ignored), a message and no partial file
  const auto big = hostile_work("big.jsonl");
  fs::remove(big);
  CHECK(run_shell("organism tasks --items 3000 --out '" + big.string() + "'", ">/dev/null", err,
                  "ulimit -f 16; ") == 2);
  CHECK(latentaudit::test::slurp_file(err).find("File too large") != std::string::npos);
  CHECK_FALSE(fs::exists(big));
  for (const auto& e : fs::directory_iterator(big.parent_path()))
    CHECK(e.path().filename().string().rfind("hostile_big.jsonl.tmp", 0) != 0);
}

TEST_CASE("cli: --config integers are integers, overridden values are still checked", "[cli][hostile]") {
  const auto cfg = hostile_work("config.json");
  write_text(cfg,
             "{\"seed\": 20000000, \"items\": 2, \"seeds\": 1, \"bootstrap\": 100, \"arms\": \"no_comm\"}");
  const auto j =
      ok_json({"audit", "--config", cfg.string(), "--out", hostile_work("cfg_out").string(), "--quiet"});
  CHECK(j.at("trials_run").as_number() == 2);
  CHECK(parse_json(latentaudit::test::slurp_file(hostile_work("cfg_out") / "design.json"))
            .at("seed")
            .as_number() == 20000000);
  write_text(cfg, "{\"bootstrap\": 1000000, \"items\": 100000, \"seed\": 20000000, \"seeds\": 0}");
  expect_one_line_error(
      run_cli({"audit", "--config", cfg.string(), "--seeds", "1", "--items", "2", "--out",
               hostile_work("cfg_out2").string(), "--quiet"}),
      "audit: --config file '" + cfg.string() +
          "' (overridden on the command line): option --seeds must lie in [1, 100000], got 0");
  // text options too: a --config value the command line overrides is still parsed, and refused
  for (const auto& [key, bad, good, want] : std::vector<std::array<std::string, 4>>{
           {"arms", "no_comm,bogus", "no_comm", "option --arms: argument 'name' must be no_comm"},
           {"link", "custom:x", "pcie4", "option --link: argument 'name' a custom link must read custom:"},
           {"scoring", "fuzzy", "exact", "option --scoring must be"},
           {"shard-schedule", "random", "block", "option --shard-schedule must be"}}) {
    write_text(cfg, "{\"" + key + "\": \"" + bad + "\", \"items\": 2, \"seeds\": 1}");
    expect_one_line_error(
        run_cli({"audit", "--config", cfg.string(), "--" + key, good, "--out",
                 hostile_work("cfg_text_out").string(), "--quiet"}),
        "audit: --config file '" + cfg.string() + "' (overridden on the command line): " + want);
  }
  expect_one_line_error(
      run_cli({"audit", "--arms", "no_comm,bogus", "--out", hostile_work("arms_out").string()}),
      "audit: option --arms: argument 'name' must be no_comm");
  expect_one_line_error(run_cli({"audit", "--link", "custom:x", "--out", hostile_work("link_out").string()}),
                        "audit: option --link: argument 'name' a custom link must read custom:");
}

TEST_CASE("cli: a design.json declaring 90k arms is refused before it sizes the report", "[cli][hostile]") {
  const auto dir = hostile_work("design_dir");
  fs::remove_all(dir);
  (void)ok_json({"audit", "--out", dir.string(), "--items", "2", "--seeds", "1", "--arms",
                 "no_comm,text_full", "--bootstrap", "100", "--quiet"});
  const auto d = dir / "design.json";
  auto j = parse_json(latentaudit::test::slurp_file(d));
  json_value arms = json_value::array_type{};
  for (int i = 0; i < 90000; ++i) arms.push_back("a" + std::to_string(i));
  j.set("arms", std::move(arms));
  write_text(d, write_json(j));
  expect_one_line_error(
      run_cli({"report", "--records", dir.string(), "--out", hostile_work("design_rep").string()}),
      "design.json: field 'arms' declares 90000 arms, more than 4096");
}

namespace {
// The organism's GGUF rewritten: metadata `set` replaces or adds keys (nullopt removes one), the
// alignment, and `trailing` zero bytes appended.
fs::path mutated_gguf(const std::string& name, const std::map<std::string, std::optional<gguf_value>>& set,
                      std::uint32_t alignment = 32, std::size_t trailing = 0) {
  static const fs::path base = [] {
    const auto p = hostile_work("organism.gguf");
    (void)ok_json({"gguf", "export", "--model", (model_path / "organism-a").string(), "--out", p.string()});
    return p;
  }();
  const auto src = gguf_file::open(base);
  gguf_writer w(alignment);
  for (const auto& [k, v] : src.metadata()) {
    if (k == "general.alignment") continue;
    const auto it = set.find(k);
    if (it == set.end())
      w.set(k, v);
    else if (it->second)
      w.set(k, *it->second);
  }
  for (const auto& [k, v] : set)
    if (v && src.find(k) == nullptr) w.set(k, *v);
  for (const auto& t : src.tensors()) w.add_tensor(t.name, dtype::f32, t.shape(), src.read_f32(t.name));
  const auto out = hostile_work(name + ".gguf");
  w.write(out);
  if (trailing > 0) {
    std::ofstream o(out, std::ios::binary | std::ios::app);
    const std::string zeros(trailing, '\0');
    o << zeros;
  }
  return out;
}
std::vector<std::string> tokens_of(std::size_t n, const std::string& bad = {}) {
  std::vector<std::string> t;
  for (std::size_t i = 0; i < n; ++i) t.push_back("t" + std::to_string(i));
  if (!bad.empty()) t[3] = bad;
  return t;
}
}  // namespace

TEST_CASE("cli: GGUF files llama.cpp would abort on are refused, naming the key", "[cli][hostile][gguf]") {
  const bool llama = run_cli({"forward", "--engine", "llama.cpp", "--model", "x.gguf", "--tokens", "1"})
                         .err.find("built without llama.cpp") == std::string::npos;
  auto forward = [&](const fs::path& f, const std::string& want) {
    expect_one_line_error(
        run_cli({"forward", "--engine", "llama.cpp", "--model", f.string(), "--tokens", "1"}),
        llama ? want : std::string("built without llama.cpp"));
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> scores(68, 0.0f);
  forward(mutated_gguf("align1", {}, 1), "key general.alignment is 1");
  forward(mutated_gguf("blocks0", {{"llama.block_count", gguf_value::of(std::uint32_t{0})}}),
          "key llama.block_count is 0");
  forward(mutated_gguf("blocks1000", {{"llama.block_count", gguf_value::of(std::uint32_t{1000})}}),
          "key llama.block_count is 1000");
  forward(mutated_gguf("eps_nan", {{"llama.attention.layer_norm_rms_epsilon", gguf_value::of(nan)}}),
          "key llama.attention.layer_norm_rms_epsilon is nan");
  forward(mutated_gguf("eps_neg", {{"llama.attention.layer_norm_rms_epsilon", gguf_value::of(-1.0f)}}),
          "key llama.attention.layer_norm_rms_epsilon is -1");
  forward(mutated_gguf("experts", {{"llama.expert_count", gguf_value::of(std::uint32_t{8})}}),
          "key llama.expert_count declares experts");
  forward(mutated_gguf("bert", {{"tokenizer.ggml.model", gguf_value::of("bert")},
                                {"tokenizer.ggml.tokens", gguf_value::array(tokens_of(68))}}),
          "key tokenizer.ggml.model is 'bert', but tokenizer.ggml.tokens lacks its [UNK] token");
  forward(mutated_gguf("unknown_tok", {{"tokenizer.ggml.model", gguf_value::of("wordsalad")},
                                       {"tokenizer.ggml.tokens", gguf_value::array(tokens_of(68))}}),
          "key tokenizer.ggml.model is 'wordsalad', not a tokenizer latentaudit supports");
  forward(mutated_gguf("scores", {{"tokenizer.ggml.model", gguf_value::of("gpt2")},
                                  {"tokenizer.ggml.tokens", gguf_value::array(tokens_of(68))},
                                  {"tokenizer.ggml.scores",
                                   gguf_value::array(std::span<const float>(scores.data(), 67))}}),
          "key tokenizer.ggml.scores holds 67 values for 68 tokens");
  forward(mutated_gguf("utf8", {{"tokenizer.ggml.model", gguf_value::of("gpt2")},
                                {"tokenizer.ggml.tokens", gguf_value::array(tokens_of(68, "\xff\xfe"))}}),
          "key tokenizer.ggml.tokens: token 3 is not valid UTF-8");
  forward(mutated_gguf("trailing", {}, 32, 1 << 20), "1048576 bytes after its last tensor");
  // a NaN weight (element 5 of the second tensor): refused before llama.cpp computes with it
  {
    const auto nan_weight = mutated_gguf("nan_weight", {});
    std::string tensor;
    std::uint64_t at = 0;
    {
      const auto g = gguf_file::open(nan_weight);
      tensor = g.tensors().at(1).name;
      at = g.data_offset() + g.tensors().at(1).offset + 5 * 4;
    }
    std::fstream io(nan_weight, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(static_cast<std::streamoff>(at));
    io.write(reinterpret_cast<const char*>(&nan), 4);
    io.close();
    forward(nan_weight, "tensor " + tensor + " holds a NaN or infinite weight (element 5)");
  }
  // tensor extents beyond the file: the bounded reader's message
  const auto cut = mutated_gguf("cut", {});
  fs::resize_file(cut, fs::file_size(cut) - 4096);
  forward(cut, "is not a valid GGUF file");
  // a vocabulary for --tokenizer: its tokenizer keys only
  const auto vocab = hostile_work("bert_vocab.gguf");
  {
    gguf_writer w;
    w.set("general.architecture", gguf_value::of("bert"));
    w.set("tokenizer.ggml.model", gguf_value::of("bert"));
    w.set("tokenizer.ggml.tokens", gguf_value::array(tokens_of(40)));
    w.write(vocab);
  }
  if (llama)
    expect_one_line_error(
        run_cli({"audit", "--tokenizer", vocab.string(), "--out", hostile_work("tok_out").string()}),
        "option --tokenizer '" + vocab.string() + "': key tokenizer.ggml.model is 'bert', but");
  // and for `tokenize --vocab`, which loads the same way
  if (llama) {
    expect_one_line_error(
        run_cli({"tokenize", "--vocab", vocab.string(), "--text", "a"}),
        "tokenize: option --vocab '" + vocab.string() + "': key tokenizer.ggml.model is 'bert', but");
    const auto scores_file = mutated_gguf(
        "tok_scores",
        {{"tokenizer.ggml.model", gguf_value::of("gpt2")},
         {"tokenizer.ggml.tokens", gguf_value::array(tokens_of(68))},
         {"tokenizer.ggml.scores", gguf_value::array(std::span<const float>(scores.data(), 67))}});
    expect_one_line_error(run_cli({"tokenize", "--vocab", scores_file.string(), "--text", "a"}),
                          "key tokenizer.ggml.scores holds 67 values for 68 tokens");
  }
}

#endif  // LATENTAUDIT_CLI_PATH
