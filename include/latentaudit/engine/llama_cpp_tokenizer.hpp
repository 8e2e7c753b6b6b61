// SPDX-License-Identifier: MIT
// latentaudit: text <-> token ids through llama.cpp's tokenizer of a GGUF vocabulary.
//
// Needs llama.h: like engine/llama_cpp.hpp it is compiled only where llama.cpp is available (CMake
// target latentaudit::llama_cpp) and no other header of the library includes it but the adapter.
//
// llama_cpp_tokenizer::load(F.gguf) loads a GGUF file vocab-only (llama_model_params::vocab_only:
// the tokenizer.* metadata, no weights), so a full model file and one of llama.cpp's
// ggml-vocab-*.gguf vocabularies both serve. llama_cpp_engine::tokenizer() (engine/llama_cpp.hpp)
// gives a non-owning tokenizer of a loaded model's own vocabulary.
//
// encode(text) is llama_tokenize with add_special = false and parse_special = false unless asked:
// no BOS, EOS or other special token is added, and text like "<s>" is tokenized as plain text. With
// `special` the vocabulary's BOS/EOS rules apply and special-token text is parsed. These are the
// settings of llama.cpp's own tokenizer tests (test-tokenizer-0 with the ggml-vocab-*.gguf .inp/.out
// vectors), which tests/engine/llama_cpp_tokenizer_test.cpp replays. decode(ids) is
// llama_detokenize (special tokens dropped unless `special`).
#ifndef LATENTAUDIT_ENGINE_LLAMA_CPP_TOKENIZER_HPP
#define LATENTAUDIT_ENGINE_LLAMA_CPP_TOKENIZER_HPP

#include <cstdint>
#include <exception>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <llama.h>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/types.hpp"
#include "llama_cpp_runtime.hpp"

namespace latentaudit {

/// @brief Whether a llama.cpp model carries a real tokenizer (tokenizer.ggml.model other than
/// "none"; latentaudit's `gguf export` without `--vocab` writes "none": token ids only).
[[nodiscard]] inline bool llama_cpp_has_tokenizer(const llama_model* model) noexcept {
  return model != nullptr && llama_vocab_type(llama_model_get_vocab(model)) != LLAMA_VOCAB_TYPE_NONE;
}

/// @brief A tokenizer over a GGUF vocabulary through llama.cpp (see the file comment). Owns the
/// vocab-only model it loaded (load()), or borrows a model (the adapter's tokenizer()), which must
/// then outlive it. Movable, not copyable; encode and decode are const and thread-safe (llama.cpp's
/// tokenization API is).
class llama_cpp_tokenizer {
 public:
  /// @brief Loads the vocabulary of a GGUF file, vocab-only (no weights are read).
  /// @throws invalid_argument if the file does not exist or its vocabulary has no tokenizer
  ///         (tokenizer.ggml.model "none"); engine_error if llama.cpp cannot load it.
  static llama_cpp_tokenizer load(const std::filesystem::path& gguf) {
    constexpr std::string_view fn = "llama_cpp_tokenizer::load";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(gguf, ec))
      detail::throw_invalid(fn, "gguf", "'" + gguf.string() + "' is not a readable file");
    (void)llama_cpp_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    mp.n_gpu_layers = 0;
    detail::llama_cpp_reset_reason();
    llama_model* model = llama_model_load_from_file(gguf.string().c_str(), mp);
    if (model == nullptr)
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": llama.cpp cannot load the vocabulary of " +
                                     detail::llama_cpp_failure_text(gguf.string())));
    llama_cpp_tokenizer t(model, true);
    if (!llama_cpp_has_tokenizer(model))
      detail::throw_invalid(
          fn, "gguf",
          "'" + gguf.string() + "' has no tokenizer (tokenizer.ggml.model is 'none': token ids only)");
    return t;
  }

  /// @brief Borrows `model`'s vocabulary (not freed here; the model must outlive the tokenizer).
  /// @throws invalid_argument if model is null or has no tokenizer.
  explicit llama_cpp_tokenizer(const llama_model* model) : llama_cpp_tokenizer(model, false) {
    if (model_ == nullptr) detail::throw_invalid("llama_cpp_tokenizer", "model", "must not be null");
    if (!llama_cpp_has_tokenizer(model_))
      detail::throw_invalid("llama_cpp_tokenizer", "model",
                            "has no tokenizer (tokenizer.ggml.model is 'none': token ids only)");
  }

  llama_cpp_tokenizer(const llama_cpp_tokenizer&) = delete;
  llama_cpp_tokenizer& operator=(const llama_cpp_tokenizer&) = delete;
  /// @brief Moves the model (and its ownership).
  llama_cpp_tokenizer(llama_cpp_tokenizer&& o) noexcept
      : model_(std::exchange(o.model_, nullptr)), owned_(std::exchange(o.owned_, false)) {}
  /// @brief Moves the model (and its ownership), freeing an owned one held before.
  llama_cpp_tokenizer& operator=(llama_cpp_tokenizer&& o) noexcept {
    if (this != &o) {
      release();
      model_ = std::exchange(o.model_, nullptr);
      owned_ = std::exchange(o.owned_, false);
    }
    return *this;
  }
  /// @brief Frees an owned model.
  ~llama_cpp_tokenizer() { release(); }

  /// @brief Token ids of `text`. Without `special`: no BOS/EOS added and special-token text
  /// tokenized as plain text; with it: the vocabulary's BOS/EOS rules and special-token parsing.
  /// @throws invalid_argument if the text is longer than llama.cpp accepts (2^31 − 1 bytes) or does
  ///         not tokenize (llama.cpp's error, e.g. a SentencePiece vocabulary without the <0xNN>
  ///         pieces its byte fallback needs, is caught and named).
  [[nodiscard]] std::vector<token_id> encode(std::string_view text, bool special = false) const {
    constexpr std::string_view fn = "llama_cpp_tokenizer::encode";
    const auto len = checked_length(fn, text.size());
    if (len == 0 && !special) return {};
    std::vector<llama_token> out(text.size() + 8);
    int32_t n = 0;
    try {  // llama.cpp's SentencePiece byte fallback throws std::out_of_range when a character is
           // outside the vocabulary and the vocabulary has no <0xNN> piece for its bytes
      n = llama_tokenize(vocab(), text.data(), len, out.data(), static_cast<int32_t>(out.size()), special,
                         special);
      if (n < 0 && n != std::numeric_limits<int32_t>::min()) {
        out.resize(static_cast<std::size_t>(-static_cast<std::int64_t>(n)));
        n = llama_tokenize(vocab(), text.data(), len, out.data(), static_cast<int32_t>(out.size()), special,
                           special);
      }
    } catch (const std::exception& e) {
      detail::throw_invalid(fn, "text",
                            std::string("does not tokenize: llama.cpp failed (") + e.what() +
                                "; a character outside the vocabulary without byte-fallback pieces?)");
    }
    if (n < 0)
      detail::throw_invalid(fn, "text",
                            "does not tokenize (llama_tokenize returned " + std::to_string(n) + ")");
    out.resize(static_cast<std::size_t>(n));
    return {out.begin(), out.end()};
  }

  /// @brief The text of `ids` (llama_detokenize). Without `special` special tokens (BOS, EOS, ...)
  /// are dropped; with it they are rendered.
  /// @throws invalid_argument on an id outside [0, vocab_size()).
  [[nodiscard]] std::string decode(std::span<const token_id> ids, bool special = false) const {
    constexpr std::string_view fn = "llama_cpp_tokenizer::decode";
    check_ids(fn, ids);
    if (ids.empty()) return {};
    const auto n_ids = checked_length(fn, ids.size());
    std::string out(ids.size() * 8 + 16, '\0');
    int32_t n = llama_detokenize(vocab(), ids.data(), n_ids, out.data(), checked_length(fn, out.size()),
                                 !special, special);
    if (n < 0 && n != std::numeric_limits<int32_t>::min()) {
      out.assign(static_cast<std::size_t>(-static_cast<std::int64_t>(n)), '\0');
      n = llama_detokenize(vocab(), ids.data(), n_ids, out.data(), checked_length(fn, out.size()), !special,
                           special);
    }
    if (n < 0)
      detail::throw_invalid(fn, "ids",
                            "do not detokenize (llama_detokenize returned " + std::to_string(n) + ")");
    out.resize(static_cast<std::size_t>(n));
    return out;
  }

  /// @brief The text piece of one token (llama_token_to_piece; special tokens rendered when asked).
  /// @throws invalid_argument on an id outside [0, vocab_size()).
  [[nodiscard]] std::string piece(token_id id, bool special = false) const {
    constexpr std::string_view fn = "llama_cpp_tokenizer::piece";
    const token_id one[1] = {id};
    check_ids(fn, one);
    std::string out(64, '\0');
    int32_t n = llama_token_to_piece(vocab(), id, out.data(), static_cast<int32_t>(out.size()), 0, special);
    if (n < 0) {
      out.assign(static_cast<std::size_t>(-static_cast<std::int64_t>(n)), '\0');
      n = llama_token_to_piece(vocab(), id, out.data(), static_cast<int32_t>(out.size()), 0, special);
    }
    if (n < 0) detail::throw_invalid(fn, "id", "has no piece");
    out.resize(static_cast<std::size_t>(n));
    return out;
  }

  /// @brief Tokens in the vocabulary.
  [[nodiscard]] std::int32_t vocab_size() const { return llama_vocab_n_tokens(vocab()); }
  /// @brief The beginning-of-sequence token (−1 if none).
  [[nodiscard]] token_id bos() const { return llama_vocab_bos(vocab()); }
  /// @brief The end-of-sequence token (−1 if none).
  [[nodiscard]] token_id eos() const { return llama_vocab_eos(vocab()); }
  /// @brief Whether `id` ends a generation (EOS, EOT, ...).
  [[nodiscard]] bool is_end_of_generation(token_id id) const { return llama_vocab_is_eog(vocab(), id); }
  /// @brief The tokenizer's kind: "spm", "bpe", "wpm", "ugm", "rwkv", "plamo2" or "other".
  [[nodiscard]] std::string kind() const {
    switch (llama_vocab_type(vocab())) {
      case LLAMA_VOCAB_TYPE_SPM:
        return "spm";
      case LLAMA_VOCAB_TYPE_BPE:
        return "bpe";
      case LLAMA_VOCAB_TYPE_WPM:
        return "wpm";
      case LLAMA_VOCAB_TYPE_UGM:
        return "ugm";
      case LLAMA_VOCAB_TYPE_RWKV:
        return "rwkv";
      case LLAMA_VOCAB_TYPE_PLAMO2:
        return "plamo2";
      default:
        return "other";
    }
  }
  /// @brief The llama.cpp model whose vocabulary this is.
  [[nodiscard]] const llama_model* model() const noexcept { return model_; }

 private:
  llama_cpp_tokenizer(const llama_model* model, bool owned) noexcept : model_(model), owned_(owned) {}

  [[nodiscard]] const llama_vocab* vocab() const {
    if (model_ == nullptr)
      LATENTAUDIT_THROW(engine_error("llama_cpp_tokenizer: used after it was moved from"));
    return llama_model_get_vocab(model_);
  }

  static int32_t checked_length(std::string_view fn, std::size_t n) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int32_t>::max()))
      detail::throw_invalid(fn, "length", std::to_string(n) + " exceeds llama.cpp's limit of 2^31 - 1");
    return static_cast<int32_t>(n);
  }

  void check_ids(std::string_view fn, std::span<const token_id> ids) const {
    const std::int32_t v = vocab_size();
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= v)
        detail::throw_invalid(fn, "ids",
                              "holds id " + std::to_string(ids[i]) + " at index " + std::to_string(i) +
                                  " outside the vocabulary [0, " + std::to_string(v) + ")");
  }

  void release() noexcept {
    if (owned_ && model_ != nullptr) llama_model_free(const_cast<llama_model*>(model_));
    model_ = nullptr;
    owned_ = false;
  }

  const llama_model* model_ = nullptr;
  bool owned_ = false;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_LLAMA_CPP_TOKENIZER_HPP
