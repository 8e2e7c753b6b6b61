// SPDX-License-Identifier: MIT
// The reference engine's GGUF import and SentencePiece reader against llama.cpp (docs/real-models.md,
// docs/gguf.md "Importing"): stories260K's logits on the two engines, and the token ids of its
// vocabulary (and of llama.cpp's own Llama SentencePiece vocabulary) through engine/spm_tokenizer.hpp
// and through llama.cpp's tokenizer, on a few hundred texts including bytes outside the vocabulary.
// [real_models] tests skip by name without the models folder (tests/support/real_models.hpp).
#include <latentaudit/core/json.hpp>
#include <latentaudit/engine/llama_cpp.hpp>
#include <latentaudit/engine/llama_cpp_tokenizer.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/engine/spm_tokenizer.hpp>

#include <unistd.h>

#include <sys/wait.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/catch.hpp"
#include "support/logit_agreement.hpp"
#include "support/real_models.hpp"
#include "support/tokenizer_texts.hpp"

using namespace latentaudit;

namespace {

/// Story texts for the logit comparison.
const std::vector<std::string>& spm_story_texts() {
  static const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily. She had a dog named Max.",
      "One day, Tom went to the park. He saw a big tree and a bird. The bird was sad.",
      "Sue and Ben played with a red ball. \"Throw it to me!\" said Ben. They laughed all day.",
      "Lily had a dog. The dog was named Max. At the park, Lily threw the ball to",
  };
  return texts;
}

/// The ids of `texts` through both tokenizers (with `special`): texts compared, agreeing, those
/// with a byte outside the pieces (a <0xNN> token in the reader's ids) and the first disagreement.
struct spm_agreement {
  std::size_t texts = 0, agree = 0, with_bytes = 0, bytes_agree = 0, decode_agree = 0;
  std::string first;
};

spm_agreement compare_spm(const spm_tokenizer& mine, const llama_cpp_tokenizer& theirs,
                          const std::vector<std::string>& texts, bool special) {
  spm_agreement a;
  for (const auto& t : texts) {
    const auto x = mine.encode(t, special);
    std::vector<token_id> y;
    std::string failed;
    try {
      y = theirs.encode(t, special);
    } catch (const std::exception& e) {
      failed = e.what();
    }
    const bool bytes = std::any_of(x.begin(), x.end(), [&](token_id id) {
      return mine.types()[static_cast<std::size_t>(id)] == spm_token_type::byte;
    });
    ++a.texts;
    a.with_bytes += bytes ? 1 : 0;
    if (failed.empty() && x == y) {
      ++a.agree;
      a.bytes_agree += bytes ? 1 : 0;
      if (mine.decode(x) == theirs.decode(y)) ++a.decode_agree;
    } else if (a.first.empty()) {
      a.first = "'" + t + "': reader";
      for (auto i : x) a.first += " " + std::to_string(i);
      a.first += " | llama.cpp";
      for (auto i : y) a.first += " " + std::to_string(i);
      if (!failed.empty()) a.first += " (" + failed + ")";
    }
  }
  return a;
}

/// The tokenizer texts plus texts around the dummy prefix and special-token text.
std::vector<std::string> spm_texts() {
  auto texts = test::tokenizer_texts();
  for (const char* t :
       {" Max", "  Max", "Max ", "her dog, Max", "\n", " \n ", "<s>", "</s> x", "<unk>", "a<s>b",
        "\xE2\x96\x81", "\xE2\x96\x81 x", "\xFF\xFE bad utf-8 \x80", "\xF0\x9F", "~^~"})
    texts.emplace_back(t);
  return texts;
}

}  // namespace

TEST_CASE("real models: stories260K on the reference engine (GGUF import) gives llama.cpp's logits",
          "[llama_cpp][real_models]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  auto ref = reference_cpu_engine::load(m.stories260k());
  auto llm = llama_cpp_engine::load(m.stories260k(), {.n_ctx = 512, .n_seq_max = 2});
  REQUIRE(llm.info().vocab_size == 512);
  const auto tok = spm_tokenizer::load(m.stories260k());
  test::logit_agreement g;
  for (const auto& text : spm_story_texts()) REQUIRE(g.add(ref, llm, tok.encode(text, true), 512));
  WARN("stories260K reference (GGUF import) vs llama.cpp: max |delta logit| "
       << g.worst << " over " << g.rows << " positions x 512, logit scale " << g.scale << ", argmax equal at "
       << g.argmax_same << " / " << g.rows);
  CHECK(g.worst <= 1e-3);
  CHECK(g.argmax_same == g.rows);
}

TEST_CASE("real models: stories260K's vocabulary through the SentencePiece reader and llama.cpp agree",
          "[llama_cpp][real_models][tokenizer]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  const auto mine = spm_tokenizer::load(m.stories260k());
  const auto theirs = llama_cpp_tokenizer::load(m.stories260k());
  REQUIRE(theirs.vocab_size() == mine.vocab_size());
  CHECK(theirs.bos() == mine.bos());
  CHECK(theirs.eos() == mine.eos());
  const auto texts = spm_texts();
  for (const bool special : {false, true}) {
    const auto a = compare_spm(mine, theirs, texts, special);
    WARN("stories260K vocabulary, reader vs llama.cpp (special "
         << special << "): " << a.agree << " / " << a.texts << " texts agree (" << a.bytes_agree << " / "
         << a.with_bytes << " with bytes outside the pieces), decode " << a.decode_agree
         << "; first disagreement: " << a.first);
    CHECK(a.texts >= 300);
    CHECK(a.agree == a.texts);
    CHECK(a.with_bytes >= 100);
    CHECK(a.decode_agree == a.agree);
  }
}

TEST_CASE("spm tokenizer: llama.cpp's Llama SentencePiece vocabulary gives llama.cpp's ids",
          "[llama_cpp][tokenizer]") {
  const auto gguf = std::filesystem::path(LATENTAUDIT_LLAMA_CPP_VOCAB_DIR) / "ggml-vocab-llama-spm.gguf";
  const auto mine = spm_tokenizer::load(gguf);
  const auto theirs = llama_cpp_tokenizer::load(gguf);
  REQUIRE(theirs.vocab_size() == mine.vocab_size());
  const auto texts = spm_texts();
  for (const bool special : {false, true}) {
    const auto a = compare_spm(mine, theirs, texts, special);
    WARN("llama-spm vocabulary (32000), reader vs llama.cpp (special "
         << special << "): " << a.agree << " / " << a.texts << " agree, decode " << a.decode_agree
         << "; first disagreement: " << a.first);
    CHECK(a.agree == a.texts);
    CHECK(a.decode_agree == a.agree);
  }
}

#ifdef LATENTAUDIT_CLI_PATH
// The CLI end to end on stories260K's GGUF: `tokenize --model F.gguf` and `forward --model F.gguf` on
// the reference engine, and the held-out story tasks audited on both engines: the reference engine
// (GGUF import, its SentencePiece reader as the default tokenizer) records what llama.cpp records.
TEST_CASE("real models: the CLI runs stories260K's GGUF on the reference engine as on llama.cpp",
          "[llama_cpp][real_models][cli]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("latentaudit_spm_cli_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cli = LATENTAUDIT_CLI_PATH, model = m.stories260k().string();
  auto run = [&](const std::string& args) {
    const std::string cmd =
        cli + " " + args + " > " + (dir / "out.txt").string() + " 2> " + (dir / "err.txt").string();
    return WEXITSTATUS(std::system(cmd.c_str()));
  };
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  REQUIRE(run("tokenize --model " + model + " --text ' Max'") == 0);
  CHECK(slurp(dir / "out.txt") == "[410,392,412,444]\n");
  REQUIRE(run("tokenize --model " + model + " --text 'Once upon a time' --special --decode") == 0);
  // as llama.cpp's `tokenize --vocab` prints it: with --special the BOS is rendered, the space kept
  CHECK(slurp(dir / "out.txt") == "{\"ids\":[1,403,407,261,378],\"text\":\"<s> Once upon a time\"}\n");
  REQUIRE(run("forward --model " + model + " --tokens 1,403,261,300") == 0);
  CHECK(slurp(dir / "out.txt").find("\"argmax\"") != std::string::npos);
  const std::string tasks = (fs::path(LATENTAUDIT_GOLDEN_DIR) / "real_models" / "story_tasks.jsonl").string();
  const std::string common =
      " --model " + model + " --tasks " + tasks +
      " --seeds 1 --arms no_comm,text_full,kv_full,deranged --timing-repeats 0 --quiet --out ";
  REQUIRE(run("audit --engine reference" + common + (dir / "ref").string()) == 0);
  REQUIRE(run("audit --engine llama.cpp" + common + (dir / "llama").string()) == 0);
  auto records = [&](const fs::path& p) {
    std::map<std::string, json_value> out;
    std::ifstream in(p);
    for (std::string line; std::getline(in, line);) {
      auto r = parse_json(line);
      const auto key = std::to_string(r.at("item").as_number()) + "/" + r.at("arm").as_string();
      out.emplace(key, std::move(r));
    }
    return out;
  };
  const auto ref = records(dir / "ref" / "records.jsonl"), llm = records(dir / "llama" / "records.jsonl");
  REQUIRE(ref.size() == 80);
  REQUIRE(llm.size() == ref.size());
  double worst_answer = 0, worst_continuation = 0;
  std::size_t same_text = 0, same_correct = 0;
  for (const auto& [key, r] : ref) {
    INFO(key);
    const auto& l = llm.at(key);
    worst_answer = std::max(
        worst_answer, std::fabs(r.at("answer_logprob").as_number() - l.at("answer_logprob").as_number()));
    worst_continuation = std::max(worst_continuation, std::fabs(r.at("continuation_prob").as_number() -
                                                                l.at("continuation_prob").as_number()));
    same_text += r.at("answer_text").as_string() == l.at("answer_text").as_string() ? 1 : 0;
    same_correct += r.at("correct").as_bool() == l.at("correct").as_bool() ? 1 : 0;
  }
  WARN(
      "stories260K story audit, reference (GGUF import) vs llama.cpp, 80 records: max |delta| answer_logprob "
      << worst_answer << ", continuation_prob " << worst_continuation << "; answer_text equal " << same_text
      << " / 80, correct equal " << same_correct << " / 80");
  CHECK(worst_answer <= 1e-3);
  CHECK(worst_continuation <= 1e-3);
  CHECK(same_text == 80);
  CHECK(same_correct == 80);
}
#endif
