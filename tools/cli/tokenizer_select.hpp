// SPDX-License-Identifier: MIT
// The tokenizer of an audit's text tasks (docs/tasks.md "Text tasks"): `--tokenizer F.gguf` (a GGUF
// vocabulary loaded vocab-only: the reference engine borrows one, llama.cpp may take one in place of
// its model's) or an HF tokenizer.json (engine/tokenizer_json.hpp), else the reference engine's
// --model folder's tokenizer.json, or the SentencePiece vocabulary of its --model GGUF file
// (engine/spm_tokenizer.hpp, no llama.cpp needed), else a llama.cpp model's own tokenizer, else none
// (a text task file then exits 2). A CLI built without llama.cpp reads a GGUF --tokenizer's
// SentencePiece vocabulary with engine/spm_tokenizer.hpp too.
// As a text_codec (trial/task_file.hpp) over engine/llama_cpp_tokenizer.hpp; the library's trial
// layer may not include the llama.cpp headers (docs/design.md, layering), so the glue lives here.
// A CLI built without llama.cpp refuses a GGUF --tokenizer of another kind (exit 2); tokenizer.json
// needs no llama.cpp.
#ifndef LATENTAUDIT_CLI_TOKENIZER_SELECT_HPP
#define LATENTAUDIT_CLI_TOKENIZER_SELECT_HPP

#include <latentaudit/engine/gguf.hpp>
#include <latentaudit/engine/spm_tokenizer.hpp>
#include <latentaudit/engine/tokenizer_json.hpp>
#include <latentaudit/trial/task_file.hpp>

#include <filesystem>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "cli.hpp"
#include "engine_select.hpp"

#if LATENTAUDIT_CLI_LLAMA_CPP
#include <latentaudit/engine/llama_cpp_tokenizer.hpp>
#endif

namespace latentaudit::cli {

/// @brief The --tokenizer option's spec (shared help text).
inline option_spec tokenizer_option() {
  return {"--tokenizer", "FILE",
          "GGUF file whose tokenizer (llama.cpp, loaded vocab-only; e.g. a ggml-vocab-*.gguf), or an HF "
          "tokenizer.json (or its folder; engine/tokenizer_json.hpp, no llama.cpp needed), tokenizes the "
          "text fields of --tasks and detokenizes answers; default: the --engine llama.cpp model's own, "
          "the --model folder's tokenizer.json or the --model GGUF file's SentencePiece vocabulary on the "
          "reference engine, else none"};
}

/// @brief Whether `p` names an HF tokenizer: a tokenizer.json file (any *.json) or a folder holding one.
inline bool is_hf_tokenizer(const std::filesystem::path& p) {
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) return std::filesystem::is_regular_file(p / "tokenizer.json", ec);
  return p.extension() == ".json";
}

/// @brief A text_codec over one of the library's tokenizers (a tokenizer.json reader,
/// engine/tokenizer_json.hpp, or a GGUF SentencePiece vocabulary, engine/spm_tokenizer.hpp): encode
/// without special tokens; decode the ids up to the first EOS, dropping special tokens; `bos` is the
/// tokenizer's BOS when it adds one, else −1. The tokenizer must outlive the codec.
template <class Tokenizer>
requires std::same_as<Tokenizer, tokenizer_json> || std::same_as<Tokenizer, spm_tokenizer>
[[nodiscard]] text_codec make_text_codec(const Tokenizer& t) {
  text_codec c;
  c.encode = [&t](std::string_view s) { return t.encode(s); };
  c.decode = [&t](std::span<const token_id> ids) {
    std::size_t n = 0;
    while (n < ids.size() && ids[n] != t.eos()) ++n;
    return t.decode(ids.first(n));
  };
  c.bos = t.add_bos() ? t.bos() : -1;
  return c;
}

/// @brief The tokenizer.ggml.model of a GGUF file ("llama", "gpt2", "none", ...; "" without the
/// key), read with the bounded reader. @throws latentaudit::error if the file is malformed.
[[nodiscard]] inline std::string gguf_tokenizer_model(const std::filesystem::path& p) {
  const auto f = gguf_file::open(p);
  const gguf_value* m = f.find("tokenizer.ggml.model");
  return m != nullptr && !m->is_array() && m->type() == gguf_value_type::string ? m->as_string()
                                                                                : std::string();
}

#if LATENTAUDIT_CLI_LLAMA_CPP
/// @brief A text_codec over a llama.cpp tokenizer: encode without special tokens; decode the ids up
/// to the first end-of-generation token (EOS, EOT, ...: a generation ends there, as llama.cpp's
/// samplers stop), dropping other special tokens; `bos` is the vocabulary's BOS when it adds one to
/// a sequence (llama_vocab_get_add_bos), else −1. The tokenizer must outlive the codec.
[[nodiscard]] inline text_codec make_text_codec(const llama_cpp_tokenizer& t) {
  text_codec c;
  c.encode = [&t](std::string_view s) { return t.encode(s); };
  c.decode = [&t](std::span<const token_id> ids) {
    std::size_t n = 0;
    while (n < ids.size() && !t.is_end_of_generation(ids[n])) ++n;
    return t.decode(ids.first(n));
  };
  c.bos = llama_vocab_get_add_bos(llama_model_get_vocab(t.model())) ? t.bos() : -1;
  return c;
}
#endif

/// @brief The tokenizer a command's text tasks use: holds a --tokenizer vocabulary (or borrows a
/// llama.cpp engine's) and gives its text_codec. Keep it alive, and in place, while a codec from it
/// is in use.
class text_tokenizer {
 public:
  /// @brief Reads --tokenizer. @throws usage_error in a CLI built without llama.cpp;
  /// latentaudit::error (exit 2) if the file cannot be loaded or has no tokenizer.
  static text_tokenizer from_option(const arguments& args, std::string_view command) {
    text_tokenizer t;
    const auto path = args.get("--tokenizer");
    if (!path) {  // the reference engine's HF folder with a tokenizer.json
      const auto model = args.get("--model");
      if (model && std::filesystem::is_directory(*model) && is_hf_tokenizer(*model)) {
        t.path_ = *model;
        t.json_.emplace(tokenizer_json::load(*model));
      } else if (model && args.get("--engine").value_or("reference") == "reference" &&
                 std::filesystem::is_regular_file(*model) && gguf_tokenizer_model(*model) == "llama") {
        t.path_ = *model;  // the reference engine's GGUF model: its SentencePiece vocabulary
        t.spm_.emplace(spm_tokenizer::load(*model));
      }
      return t;
    }
    t.path_ = *path;
    if (is_hf_tokenizer(*path)) {
      t.json_.emplace(tokenizer_json::load(*path));
      return t;
    }
#if !LATENTAUDIT_CLI_LLAMA_CPP
    if (std::filesystem::is_regular_file(*path) && gguf_tokenizer_model(*path) == "llama") {
      t.spm_.emplace(spm_tokenizer::load(*path));  // no llama.cpp: the library's own reader
      return t;
    }
#endif
#if LATENTAUDIT_CLI_LLAMA_CPP
    check_gguf_for_llama(*path, command, "--tokenizer", true);  // before llama.cpp parses it
    t.tok_.emplace(llama_cpp_tokenizer::load(*path));
#else
    throw usage_error(
        std::string(command) +
        ": option --tokenizer: this latentaudit was built without llama.cpp, whose tokenizers it "
        "uses (run scripts/install-deps.sh, then configure with -DLATENTAUDIT_LLAMA_CPP=ON)");
#endif
    (void)command;
    return t;
  }

  /// @brief The codec for `engine`: the --tokenizer's (its vocabulary size must equal the engine's),
  /// else a llama.cpp engine's own tokenizer when its GGUF has one, else an empty codec.
  /// @throws usage_error when the --tokenizer vocabulary's size differs from the engine's.
  template <class Engine>
  [[nodiscard]] text_codec codec(const Engine& engine, std::string_view command) {
    if (json_) {
      if (json_->vocab_size() != engine.info().vocab_size)
        throw usage_error(std::string(command) + ": tokenizer '" + path_ + "' has " +
                          std::to_string(json_->vocab_size()) + " tokens, but the model's vocabulary has " +
                          std::to_string(engine.info().vocab_size));
      return make_text_codec(*json_);
    }
    if (spm_) {
      if (spm_->vocab_size() != engine.info().vocab_size)
        throw usage_error(std::string(command) + ": tokenizer '" + path_ + "' has " +
                          std::to_string(spm_->vocab_size()) + " tokens, but the model's vocabulary has " +
                          std::to_string(engine.info().vocab_size));
      return make_text_codec(*spm_);
    }
#if LATENTAUDIT_CLI_LLAMA_CPP
    if (tok_) {
      if (tok_->vocab_size() != engine.info().vocab_size)
        throw usage_error(std::string(command) + ": option --tokenizer: '" + path_ + "' has " +
                          std::to_string(tok_->vocab_size()) + " tokens, but the model's vocabulary has " +
                          std::to_string(engine.info().vocab_size));
      return make_text_codec(*tok_);
    }
    if constexpr (requires { engine.tokenizer(); }) {  // llama.cpp: its engine or a seat of a batch
      if (engine.info().caps.tokenizer) {
        own_.emplace(engine.tokenizer());
        return make_text_codec(*own_);
      }
    }
#endif
    (void)engine;
    (void)command;
    return {};
  }

 private:
  std::string path_;
  std::optional<tokenizer_json> json_;  // an HF tokenizer.json (no llama.cpp needed)
  std::optional<spm_tokenizer> spm_;    // a GGUF SentencePiece vocabulary (no llama.cpp needed)
#if LATENTAUDIT_CLI_LLAMA_CPP
  std::optional<llama_cpp_tokenizer> tok_;
  std::optional<llama_cpp_tokenizer> own_;
#endif
};

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_CLI_TOKENIZER_SELECT_HPP
