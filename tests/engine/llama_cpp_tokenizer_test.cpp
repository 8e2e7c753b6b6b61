// SPDX-License-Identifier: MIT
// The text path through llama.cpp's tokenizer (engine/llama_cpp_tokenizer.hpp): against the test
// vectors of the pinned release (models/ggml-vocab-*.gguf with .inp/.out, the files llama.cpp's own
// test-tokenizer-0 replays) every vocabulary gives exactly the expected ids; special tokens only
// when asked; clear errors for a file without a tokenizer and ids outside the vocabulary; the
// adapter exposes its model's tokenizer; `latentaudit tokenize` prints the ids as a JSON array; the
// text organism's audit on its task file (text through the tokenizer end to end) finds the need effect.
#include <latentaudit/core/json.hpp>
#include <latentaudit/engine/gguf_export.hpp>
#include <latentaudit/engine/llama_cpp.hpp>
#include <latentaudit/engine/llama_cpp_tokenizer.hpp>
#include <latentaudit/trial/journal.hpp>

#include <catch2/catch.hpp>

#include "support/cli_runner.hpp"
#include "support/llama_cpp_engine.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace latentaudit;
namespace fs = std::filesystem;

namespace {

const fs::path vocab_dir = LATENTAUDIT_LLAMA_CPP_VOCAB_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// test-tokenizer-0's reading: inputs separated by "\n__ggml_vocab_test__\n" (a separator at the end
// of the file closes the last input), one output line of space-separated ids per input.
std::vector<std::pair<std::string, std::vector<token_id>>> read_vectors(const fs::path& inp) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string s = slurp(inp);
  std::vector<std::string> texts;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t next = s.find(sep, pos);
    if (next == std::string::npos) next = s.size();
    texts.push_back(s.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::ifstream out(fs::path(inp).replace_extension(".out"));
  std::vector<std::pair<std::string, std::vector<token_id>>> v;
  std::string line;
  for (const auto& t : texts) {
    if (!std::getline(out, line)) break;
    std::stringstream ls(line);
    std::vector<token_id> ids;
    token_id id = 0;
    while (ls >> id) ids.push_back(id);
    v.emplace_back(t, std::move(ids));
  }
  REQUIRE(v.size() == texts.size());
  return v;
}

// organism-a as a GGUF without a tokenizer (tokenizer.ggml.model "none"), in the process's own
// scratch directory (a fixed path raced between test processes run in parallel).
fs::path tokenizer_gguf() { return test::organism_gguf("organism-a"); }

}  // namespace

// Every input of `inp` (x.gguf.inp) tokenizes to its expected ids; returns the inputs checked.
std::size_t check_vectors(const fs::path& inp) {
  const auto gguf = fs::path(inp).replace_extension("");  // x.gguf.inp -> x.gguf
  INFO(gguf.filename().string());
  const auto tok = llama_cpp_tokenizer::load(gguf);
  std::size_t cases = 0;
  for (const auto& [text, ids] : read_vectors(inp)) {
    INFO("text: '" << text << "'");
    CHECK(tok.encode(text) == ids);
    ++cases;
  }
  return cases;
}

// The four smallest vocabularies with vectors (loads of ~0.1-0.25 s each), one per tokenizer kind
// and pre-tokenizer family: SentencePiece (llama-spm, phi-3), BPE (deepseek-coder), WordPiece
// (bert-bge). Every vocabulary: the [slow] case below.
#if LATENTAUDIT_LLAMA_CPP_HAS_VOCABS
TEST_CASE("llama.cpp tokenizer: small vocabularies give their test vectors' ids",
          "[engine][llama_cpp][tokenizer]") {
  std::size_t cases = 0;
  for (const char* name : {"llama-spm", "phi-3", "deepseek-coder", "bert-bge"})
    cases += check_vectors(vocab_dir / ("ggml-vocab-" + std::string(name) + ".gguf.inp"));
  CHECK(cases == 4 * 46);
}
#endif

// Loading the 15 vocabularies takes ~15 s on the loaded 2-core VM (gemma-4, command-r: 262k and
// 256k tokens, ~3 s each): [slow].
#if LATENTAUDIT_LLAMA_CPP_HAS_VOCABS
TEST_CASE("llama.cpp tokenizer: every vocabulary of the release gives its test vectors' ids",
          "[engine][llama_cpp][tokenizer][slow]") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(vocab_dir))
    if (e.path().extension() == ".inp") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  CHECK(files.size() == 15);  // v0.5.0 ships vectors for 15 of its 19 vocabularies
  std::size_t cases = 0;
  for (const auto& inp : files) cases += check_vectors(inp);
  CHECK(cases == 14 * 46 + 50);  // qwen35's file has 50 inputs, the others 46
}
#endif

#if LATENTAUDIT_LLAMA_CPP_HAS_VOCABS
TEST_CASE("llama.cpp tokenizer: special tokens only when asked, decode inverts encode",
          "[engine][llama_cpp][tokenizer]") {
  const auto tok = llama_cpp_tokenizer::load(vocab_dir / "ggml-vocab-llama-spm.gguf");
  CHECK(tok.kind() == "spm");
  CHECK(tok.vocab_size() == 32000);
  CHECK(tok.bos() == 1);
  CHECK(tok.eos() == 2);
  CHECK(tok.is_end_of_generation(2));
  CHECK(tok.encode("Hello world") == std::vector<token_id>{15043, 3186});
  CHECK(tok.encode("Hello world", true) == std::vector<token_id>{1, 15043, 3186});
  // "<s>" is plain text without `special`, the BOS token with it
  const auto plain = tok.encode("<s>");
  CHECK(plain.size() > 1);
  CHECK(std::find(plain.begin(), plain.end(), 1) == plain.end());
  CHECK(tok.encode("<s>", true) == std::vector<token_id>{1, 1});
  CHECK(tok.encode("").empty());
  for (const std::string text : {"Hello world", "cat red, dog blue.", "Ä 🦙 x"}) {
    INFO(text);
    const auto ids = tok.encode(text);
    CHECK(tok.decode(ids) == text);
    auto with_bos = ids;
    with_bos.insert(with_bos.begin(), tok.bos());
    // BOS dropped unless `special` (llama.cpp then keeps the first piece's leading space)
    CHECK(tok.decode(with_bos).find("<s>") == std::string::npos);
    CHECK(tok.decode(with_bos).find(text) != std::string::npos);
    CHECK(tok.decode(with_bos, true).rfind("<s>", 0) == 0);
  }
  CHECK(tok.piece(15043) == " Hello");
  const token_id bad[] = {5, 32000};
  CHECK_THROWS_AS(tok.decode(bad), invalid_argument);
  CHECK_THROWS_AS(tok.piece(-1), invalid_argument);
  // moving keeps one owner
  auto moved = std::move(const_cast<llama_cpp_tokenizer&>(tok));
  CHECK(moved.encode("Hello world") == std::vector<token_id>{15043, 3186});
}
#endif

TEST_CASE("llama.cpp tokenizer: files without a tokenizer and missing files are refused",
          "[engine][llama_cpp][tokenizer]") {
  CHECK_THROWS_AS(llama_cpp_tokenizer::load("/nonexistent/vocab.gguf"), invalid_argument);
  try {
    (void)llama_cpp_tokenizer::load(tokenizer_gguf());
    FAIL("a GGUF without a tokenizer was accepted");
  } catch (const invalid_argument& e) {
    CHECK(std::string(e.what()).find("has no tokenizer") != std::string::npos);
  }
  auto b = llama_cpp_engine::load(tokenizer_gguf(), {.n_ctx = 64, .n_seq_max = 2});
  CHECK_FALSE(b.info().caps.tokenizer);
  CHECK_THROWS_AS(b.tokenizer(), invalid_argument);
}

#ifdef LATENTAUDIT_CLI_PATH
#if LATENTAUDIT_LLAMA_CPP_HAS_VOCABS
TEST_CASE("llama.cpp tokenizer: `latentaudit tokenize` prints the ids as a JSON array",
          "[engine][llama_cpp][tokenizer][cli]") {
  const auto dir = fs::temp_directory_path() / "latentaudit_llama_cpp_tokenize_cli";
  fs::create_directories(dir);
  const std::string cli = LATENTAUDIT_CLI_PATH;
  const std::string spm = (vocab_dir / "ggml-vocab-llama-spm.gguf").string();
  auto run = [&](const std::string& args) {
    const std::string cmd =
        cli + " tokenize " + args + " > " + (dir / "out.txt").string() + " 2> " + (dir / "err.txt").string();
    return WEXITSTATUS(std::system(cmd.c_str()));
  };
  REQUIRE(run("--vocab " + spm + " --text 'Hello world'") == 0);
  CHECK(slurp(dir / "out.txt") == "[15043,3186]\n");
  REQUIRE(run("--vocab " + spm + " --text 'Hello world' --special") == 0);
  CHECK(slurp(dir / "out.txt") == "[1,15043,3186]\n");
  REQUIRE(run("--vocab " + spm + " --text ' Hello world' --decode") == 0);
  CHECK(slurp(dir / "out.txt") == "{\"ids\":[29871,15043,3186],\"text\":\" Hello world\"}\n");
  // bad input: one line, exit 2
  CHECK(run("--vocab " + (dir / "missing.gguf").string() + " --text x") == 2);
  CHECK(slurp(dir / "err.txt").find("missing.gguf") != std::string::npos);
  CHECK(run("--vocab " + tokenizer_gguf().string() + " --text x") == 2);
  CHECK(slurp(dir / "err.txt").find("the file holds no tokenizer") != std::string::npos);
  CHECK(run("--vocab " + spm) == 2);
  CHECK(slurp(dir / "err.txt").find("--text") != std::string::npos);
}
#endif
#endif

#ifdef LATENTAUDIT_CLI_PATH
// The text path end to end: the text organism (models/organism-text.gguf, its own llama-spm
// tokenizer) audited on the first 60 tasks of examples/data/recall-text.jsonl on llama.cpp. The
// full file's findings (planted need effect, placebo nulls) are in models/organism-text/README.md;
// here, with 60 items and one seed, the large effects are already decided and the accuracies show
// the planted truth: B answers from the relayed document (text or cache) in the need regime, from
// its own prompt in the no_need regime, and not without either.
TEST_CASE("llama.cpp tokenizer: the text organism's audit on its task file finds the need effect",
          "[engine][llama_cpp][tokenizer][cli]") {
  const fs::path model = fs::path(LATENTAUDIT_SOURCE_DIR) / "models" / "organism-text.gguf";
  const fs::path tasks = fs::path(LATENTAUDIT_SOURCE_DIR) / "examples" / "data" / "recall-text.jsonl";
  const auto dir = fs::temp_directory_path() / "latentaudit_llama_cpp_text_audit";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {  // the header and the first 60 tasks
    std::ifstream in(tasks);
    std::ofstream out(dir / "tasks.jsonl");
    std::string line;
    for (int i = 0; i < 61 && std::getline(in, line); ++i) out << line << '\n';
  }
  const std::string cli = LATENTAUDIT_CLI_PATH;
  const std::string cmd = cli + " audit --engine llama.cpp --model " + model.string() + " --tasks " +
                          (dir / "tasks.jsonl").string() +
                          " --seeds 1 --arms no_comm,text_full,kv_full,zeroed --timing-repeats 0 "
                          "--quiet --out " +
                          (dir / "out").string() + " > " + (dir / "summary.json").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto j = parse_json(slurp(dir / "summary.json"));
  const auto& f = j.at("findings");
  CHECK(f.at("need.text_beats_no_comm").as_string() == "yes");
  CHECK(f.at("need.kv_beats_no_comm").as_string() == "yes");
  // accuracy per (regime, arm) from the records
  std::map<std::string, std::pair<int, int>> acc;  // "regime/arm" -> (correct, n)
  std::ifstream rec(dir / "out" / "records.jsonl");
  std::string line;
  std::size_t with_text = 0;
  while (std::getline(rec, line)) {
    const auto r = parse_json(line);
    auto& c = acc[r.at("regime").as_string() + "/" + r.at("arm").as_string()];
    c.first += r.at("correct").as_bool() ? 1 : 0;
    ++c.second;
    if (const auto* t = r.find("answer_text"); t != nullptr && !t->as_string().empty()) ++with_text;
  }
  auto rate = [&](const std::string& k) {
    const auto& c = acc[k];
    INFO(k << ": " << c.first << " / " << c.second);
    REQUIRE(c.second > 0);
    return static_cast<double>(c.first) / c.second;
  };
  CHECK(rate("need/text_full") >= 0.9);
  CHECK(rate("need/kv_full") >= 0.9);
  CHECK(rate("need/no_comm") <= 0.2);
  CHECK(rate("need/zeroed") <= 0.2);
  CHECK(rate("no_need/no_comm") >= 0.9);
  CHECK(rate("no_need/kv_full") >= 0.9);
  CHECK(with_text > 0);  // B's answers decoded through the tokenizer
  // --jobs 2 on llama.cpp: each worker loads the model into its own context; the records, in
  // their order, are the one-worker run's but for the timings
  const std::string cmd2 = cli + " audit --engine llama.cpp --model " + model.string() + " --tasks " +
                           (dir / "tasks.jsonl").string() +
                           " --seeds 1 --arms no_comm,text_full,kv_full,zeroed --timing-repeats 0 --jobs 2 "
                           "--quiet --out " +
                           (dir / "out2").string() + " > " + (dir / "summary2.json").string();
  REQUIRE(std::system(cmd2.c_str()) == 0);
  const auto timeless = [](const fs::path& f) { return test::timeless_record_lines(f); };
  const auto one = timeless(dir / "out" / "records.jsonl");
  CHECK(one.size() == 60u * 4u);
  CHECK(timeless(dir / "out2" / "records.jsonl") == one);
}
#endif
