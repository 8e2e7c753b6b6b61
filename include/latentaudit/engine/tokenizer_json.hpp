// SPDX-License-Identifier: MIT
// latentaudit: a reader of Hugging Face `tokenizer.json` files of the Llama / SentencePiece-BPE
// kind, so the reference engine tokenizes text without llama.cpp (docs/engines.md "tokenizer.json").
//
// What it implements, as the `tokenizers` library computes it:
//  - model "BPE": vocab, merges (as "a b" strings or ["a", "b"] pairs; rank = index), unk_token,
//    fuse_unk, byte_fallback (a character outside the vocabulary becomes its UTF-8 bytes' "<0xNN>"
//    tokens when all of them exist, else <unk>, consecutive ones fused with fuse_unk),
//    ignore_merges; merges applied lowest rank first, leftmost first among equal ranks;
//  - normalizer: null, Prepend, Replace (string pattern), or a Sequence of them (Llama-2 style
//    "prepend ▁, replace ' ' with ▁");
//  - pre_tokenizer: null or Metaspace (replacement, prepend_scheme always/first/never, split);
//  - added_tokens: matched in the raw text (normalized: false) or in the normalized text
//    (normalized: true), leftmost-longest. encode(text) extracts only the non-special ones (as
//    llama.cpp's tokenize without parse_special does); encode(text, true) extracts the special ones
//    too and adds BOS when the post_processor's template (or tokenizer_config.json's add_bos_token)
//    does;
//  - decode: ▁ to space, "<0xNN>" to bytes, one leading space stripped when a ▁ is prepended.
// What it refuses, naming the field: other model types (Unigram, WordPiece, WordLevel), byte-level
// BPE (ByteLevel pre-tokenizer or decoder: GPT-2, Llama-3, Qwen), other normalizers (NFKC, ...),
// dropout, continuing_subword_prefix, end_of_word_suffix, added tokens with lstrip, rstrip or
// single_word. The file is untrusted: it is read whole only below max_file_bytes, parsed with a
// depth limit, and every count, id and string length is checked (corrupt_data naming the file and
// the field).
#ifndef LATENTAUDIT_ENGINE_TOKENIZER_JSON_HPP
#define LATENTAUDIT_ENGINE_TOKENIZER_JSON_HPP

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <queue>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/file_check.hpp"
#include "../core/json.hpp"
#include "../core/types.hpp"

namespace latentaudit {

/// @brief Bounds of tokenizer_json::load on its untrusted input.
struct tokenizer_json_limits {
  std::uint64_t max_file_bytes = std::uint64_t{64} << 20;  ///< tokenizer.json's size
  std::size_t max_tokens = std::size_t{1} << 21;           ///< vocabulary entries plus added tokens
  std::size_t max_merges = std::size_t{1} << 22;           ///< merges
  std::size_t max_token_bytes = 1024;                      ///< one token's text
  std::size_t max_text_bytes = std::size_t{64} << 20;      ///< one encode() input
};

/// @brief The kind of a vocabulary entry (llama.cpp's token types in a GGUF export).
enum class token_kind : std::int32_t {
  normal = 1,        ///< an ordinary piece
  unknown = 2,       ///< the unk token
  control = 3,       ///< a special added token (BOS, EOS, ...)
  user_defined = 4,  ///< a non-special added token
  byte = 6,          ///< a byte-fallback piece "<0xNN>"
};

/// @brief A Llama-style BPE tokenizer read from a Hugging Face tokenizer.json (see the file comment).
class tokenizer_json {
 public:
  /// @brief Reads `path`: a tokenizer.json file, or a folder holding tokenizer.json (and, if
  /// present, tokenizer_config.json, whose bos_token / eos_token / add_bos_token are read).
  /// @throws invalid_argument if the file cannot be read; corrupt_data naming the file and the field
  ///         on malformed or unsupported content or a limit exceeded.
  static tokenizer_json load(const std::filesystem::path& path, const tokenizer_json_limits& limits = {});

  /// @brief Parses tokenizer.json text; `where` names it in messages. `config`: tokenizer_config.json's
  /// parsed object, or null.
  /// @throws corrupt_data as load().
  static tokenizer_json parse(std::string_view text, const std::string& where,
                              const json_value* config = nullptr, const tokenizer_json_limits& limits = {});

  /// @brief Token ids of `text`. special = false: no BOS, special-token text tokenized as plain text
  /// (non-special added tokens are still matched); special = true: special tokens matched in the
  /// text and BOS added when the tokenizer adds one.
  /// @throws invalid_argument if text exceeds max_text_bytes.
  [[nodiscard]] std::vector<token_id> encode(std::string_view text, bool special = false) const;

  /// @brief Text of `ids`: pieces joined, ▁ as space, "<0xNN>" as bytes, the prepended space
  /// stripped; special tokens dropped unless `special`.
  /// @throws invalid_argument on an id outside the vocabulary.
  [[nodiscard]] std::string decode(std::span<const token_id> ids, bool special = false) const;

  /// @brief Number of ids (vocabulary and added tokens).
  [[nodiscard]] std::int32_t vocab_size() const noexcept { return static_cast<std::int32_t>(pieces_.size()); }
  /// @brief The text of every id, in id order.
  [[nodiscard]] const std::vector<std::string>& pieces() const noexcept { return pieces_; }
  /// @brief The kind of every id, in id order.
  [[nodiscard]] const std::vector<token_kind>& kinds() const noexcept { return kinds_; }
  /// @brief Merges in rank order, as (left id, right id).
  [[nodiscard]] const std::vector<std::pair<token_id, token_id>>& merges() const noexcept {
    return merge_list_;
  }
  /// @brief BOS id, or −1.
  [[nodiscard]] token_id bos() const noexcept { return bos_; }
  /// @brief EOS id, or −1.
  [[nodiscard]] token_id eos() const noexcept { return eos_; }
  /// @brief unk id, or −1.
  [[nodiscard]] token_id unk() const noexcept { return unk_; }
  /// @brief Whether encode(text, true) starts with BOS.
  [[nodiscard]] bool add_bos() const noexcept { return add_bos_; }
  /// @brief Whether a ▁ is prepended to the text (Prepend normalizer or Metaspace prepend_scheme).
  [[nodiscard]] bool prepends_space() const noexcept { return prepend_ != prepend_scheme::never; }
  /// @brief Whether id is a special added token (BOS, EOS, unk, ...).
  [[nodiscard]] bool is_special(token_id id) const {
    return id >= 0 && id < vocab_size() && kinds_[static_cast<std::size_t>(id)] == token_kind::control;
  }

 private:
  enum class prepend_scheme { never, always, first };
  struct added {
    std::string content;
    token_id id = 0;
    bool special = false, normalized = false;
  };

  /// The parts of parse(): model (vocab, merges, unk, byte fallback), normalizer and pre-tokenizer,
  /// added tokens, BOS/EOS; each throws corrupt_data naming `where` and the field.
  void read_model(const json_value& model, const std::string& where, const tokenizer_json_limits& limits);
  void read_normalization(const json_value& root, const std::string& where);
  void read_added(const json_value& root, const std::string& where, const tokenizer_json_limits& limits);
  void read_specials(const json_value& root, const json_value* config, const std::string& where);

  /// HF's Prepend / Replace / Metaspace on one text segment (`first`: the text's first segment).
  [[nodiscard]] std::string normalize(std::string_view s, bool first) const;
  /// BPE of one word (a normalized segment, or a Metaspace split of one), appended to out.
  void bpe_word(std::string_view w, std::vector<token_id>& out) const;
  /// BPE of one normalized segment: Metaspace split into words when configured.
  void bpe_segment(std::string_view s, std::vector<token_id>& out) const;
  /// Splits s on the added tokens in `set` (leftmost-longest); pieces as (text, id or −1).
  [[nodiscard]] std::vector<std::pair<std::string, token_id>> split_added(
      std::string_view s, const std::vector<const added*>& set) const;

  std::vector<std::string> pieces_;
  std::vector<token_kind> kinds_;
  std::unordered_map<std::string, token_id> vocab_;
  std::unordered_map<std::uint64_t, std::pair<std::int32_t, token_id>> merges_;  // (a, b) -> (rank, new id)
  std::vector<std::pair<token_id, token_id>> merge_list_;
  std::vector<added> added_;
  std::vector<std::pair<std::string, std::string>> replace_;  // normalizer Replace pairs, in order
  prepend_scheme prepend_ = prepend_scheme::never;
  std::string prepend_text_;
  bool metaspace_split_ = false;
  std::string metaspace_;  // the Metaspace replacement ("" without a Metaspace pre-tokenizer)
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false, add_bos_ = false;
  token_id unk_ = -1, bos_ = -1, eos_ = -1;
  std::array<token_id, 256> byte_ids_{};  // "<0xNN>" ids, −1 when absent
  std::size_t max_text_bytes_ = 0;
};

namespace detail {

/// @brief Length of the UTF-8 sequence starting with byte c (1 for a stray or invalid byte, as
/// `tokenizers` splits a Rust string into chars; input that is not UTF-8 is split byte by byte).
[[nodiscard]] inline std::size_t utf8_length(unsigned char c) noexcept {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;
}

/// @brief "<0xNN>" when s is a byte-fallback piece: its byte value, else −1.
[[nodiscard]] inline int byte_piece_value(std::string_view s) noexcept {
  if (s.size() != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>') return -1;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  const int hi = hex(s[3]), lo = hex(s[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/// @brief Every occurrence of `from` in s replaced by `to` (from non-empty).
[[nodiscard]] inline std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (true) {
    const std::size_t j = s.find(from, i);
    if (j == std::string_view::npos) break;
    out.append(s.substr(i, j - i)).append(to);
    i = j + from.size();
  }
  out.append(s.substr(i));
  return out;
}

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/tokenizer_json-inl.hpp"
#endif

#endif  // LATENTAUDIT_ENGINE_TOKENIZER_JSON_HPP
