// SPDX-License-Identifier: MIT
// latentaudit: the SentencePiece vocabulary of a GGUF file (tokenizer.ggml.model "llama") as a
// tokenizer of its own, so the reference engine tokenizes text of a GGUF model (stories260K)
// without llama.cpp (docs/engines.md "SentencePiece vocabularies of GGUF files").
//
// What it computes is llama.cpp's tokenizer of such a vocabulary (llm_tokenizer_spm and
// llama_vocab::impl::tokenize / detokenize in src/llama-vocab.cpp), not SentencePiece's own:
//  - encode: the text is split at the vocabulary's user-defined tokens (and, with `special`, at its
//    control and unknown tokens too), longest token text first, every occurrence left to right;
//    each remaining fragment gets a leading space when add_space_prefix is on and the fragment
//    starts the text or follows a special token, its spaces become ▁ (U+2581), and it is split into
//    UTF-8 characters (the length read from the lead byte's high nibble, as llama.cpp does). Then,
//    repeatedly, the adjacent pair whose concatenation is a vocabulary entry with the highest score
//    is merged (equal scores: the leftmost pair). A symbol left outside the vocabulary becomes its
//    bytes' "<0xNN>" tokens (or the one-byte token itself); a vocabulary with neither for a byte
//    cannot tokenize that text (invalid_argument naming the byte, where llama.cpp throws
//    std::out_of_range). `special` adds BOS (add_bos_token) and EOS (add_eos_token).
//  - decode: normal pieces with ▁ as space, byte pieces as their byte, user-defined pieces as their
//    text, control and unknown tokens dropped (rendered with `special`); one leading space of the
//    first piece stripped when add_space_prefix is on, except after a leading BOS that is dropped.
// The GGUF file is untrusted: gguf.hpp's bounded reader reads it, and every count, id, type and
// string length is checked here (corrupt_data naming the file and the key).
#ifndef LATENTAUDIT_ENGINE_SPM_TOKENIZER_HPP
#define LATENTAUDIT_ENGINE_SPM_TOKENIZER_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/types.hpp"
#include "gguf.hpp"

namespace latentaudit {

/// @brief Bounds of spm_tokenizer on its untrusted input.
struct spm_tokenizer_limits {
  std::size_t max_tokens = std::size_t{1} << 21;       ///< vocabulary entries
  std::size_t max_token_bytes = 1024;                  ///< one token's text
  std::size_t max_text_bytes = std::size_t{64} << 20;  ///< one encode() input
};

/// @brief llama.cpp's token types (tokenizer.ggml.token_type).
enum class spm_token_type : std::int32_t {
  undefined = 0,     ///< no type: decodes to nothing
  normal = 1,        ///< an ordinary piece
  unknown = 2,       ///< the unk token
  control = 3,       ///< BOS, EOS, ...
  user_defined = 4,  ///< matched in the text before the merges
  unused = 5,        ///< decodes to nothing
  byte = 6,          ///< a byte-fallback piece "<0xNN>"
};

namespace detail {

/// @brief The byte of a "<0xNN>" piece (hex digits of either case, as llama.cpp's strtol reads
/// them), or −1 when the text is not one.
[[nodiscard]] inline int spm_byte_value(std::string_view s) noexcept {
  if (s.size() != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>') return -1;
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  };
  const int hi = hex(s[3]), lo = hex(s[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace detail

/// @brief The SentencePiece ("llama") vocabulary of a GGUF file, tokenizing as llama.cpp does (see
/// the file comment). Copyable; encode and decode are const and thread-safe.
class spm_tokenizer {
 public:
  /// @brief Reads the vocabulary of the GGUF file `gguf` (its metadata only; no tensor is read).
  /// @throws invalid_argument if the file cannot be opened; corrupt_data naming the file and the
  ///         key if it is malformed, has no tokenizer, or one of another kind than "llama".
  static spm_tokenizer load(const std::filesystem::path& gguf, const spm_tokenizer_limits& limits = {}) {
    return from_gguf(gguf_file::open(gguf), limits);
  }

  /// @brief Reads the vocabulary of an opened GGUF file.
  /// @throws corrupt_data as load().
  static spm_tokenizer from_gguf(const gguf_file& f, const spm_tokenizer_limits& limits = {}) {
    auto fail = [&](const std::string& what) -> void {
      LATENTAUDIT_THROW(corrupt_data("spm_tokenizer: '" + f.name() + "': " + what));
    };
    const gguf_value* model = f.find("tokenizer.ggml.model");
    if (model == nullptr || model->is_array() || model->type() != gguf_value_type::string)
      fail("no tokenizer (missing string key 'tokenizer.ggml.model')");
    if (model->as_string() != "llama")
      fail("tokenizer.ggml.model is '" + model->as_string() +
           "'; this reader takes SentencePiece vocabularies ('llama') only");
    const gguf_value* tokens = f.find("tokenizer.ggml.tokens");
    if (tokens == nullptr || !tokens->is_array() || tokens->type() != gguf_value_type::string)
      fail("missing string array 'tokenizer.ggml.tokens'");
    const std::size_t n = tokens->size();
    if (n == 0 || n > limits.max_tokens || n > static_cast<std::size_t>(INT32_MAX))
      fail("tokenizer.ggml.tokens holds " + std::to_string(n) + " tokens, outside [1, " +
           std::to_string(limits.max_tokens) + "]");
    spm_tokenizer t;
    t.max_text_bytes_ = limits.max_text_bytes;
    t.pieces_ = tokens->strings();
    for (std::size_t i = 0; i < n; ++i)
      if (t.pieces_[i].size() > limits.max_token_bytes)
        fail("token " + std::to_string(i) + " is " + std::to_string(t.pieces_[i].size()) +
             " bytes long, more than " + std::to_string(limits.max_token_bytes));
    t.scores_.assign(n, 0.0f);
    if (const gguf_value* s = f.find("tokenizer.ggml.scores")) {
      if (!s->is_array() || s->size() != n ||
          (s->type() != gguf_value_type::f32 && s->type() != gguf_value_type::f64))
        fail("tokenizer.ggml.scores must be an array of " + std::to_string(n) + " floats");
      for (std::size_t i = 0; i < n; ++i) {
        t.scores_[i] = static_cast<float>(s->as_float(i));
        if (!std::isfinite(t.scores_[i]))
          fail("tokenizer.ggml.scores[" + std::to_string(i) + "] is not finite");
      }
    }
    t.types_.assign(n, spm_token_type::normal);
    if (const gguf_value* ty = f.find("tokenizer.ggml.token_type")) {
      if (!ty->is_array() || ty->size() != n)
        fail("tokenizer.ggml.token_type must be an array of " + std::to_string(n) + " integers");
      for (std::size_t i = 0; i < n; ++i) {
        std::int64_t v = -1;
        try {
          v = ty->as_int(i);
        } catch (const invalid_argument&) {
          fail("tokenizer.ggml.token_type must hold integers");
        }
        if (v < 0 || v > 6)
          fail("tokenizer.ggml.token_type[" + std::to_string(i) + "] is " + std::to_string(v) +
               ", outside llama.cpp's types 0-6");
        t.types_[i] = static_cast<spm_token_type>(v);
        if (t.types_[i] == spm_token_type::byte && detail::spm_byte_value(t.pieces_[i]) < 0)
          fail("token " + std::to_string(i) + " has the byte type but is not a '<0xNN>' piece");
      }
    }
    // special ids: llama.cpp's SentencePiece defaults (BOS 1, EOS 2, unk 0), replaced by the file's
    // when in range (an out-of-range id such as 0xFFFFFFFF keeps the default, as llama.cpp does)
    auto special_id = [&](const char* key, token_id fallback) -> token_id {
      const gguf_value* v = f.find(key);
      token_id id = fallback;
      if (v != nullptr) {
        if (v->is_array()) fail(std::string("key '") + key + "' must be an integer");
        try {
          const std::int64_t x = v->as_int();
          if (x >= 0 && static_cast<std::uint64_t>(x) < n) id = static_cast<token_id>(x);
        } catch (const invalid_argument&) {
          fail(std::string("key '") + key + "' must be an integer");
        }
      }
      return id >= 0 && static_cast<std::size_t>(id) < n ? id : -1;
    };
    t.bos_ = special_id("tokenizer.ggml.bos_token_id", 1);
    t.eos_ = special_id("tokenizer.ggml.eos_token_id", 2);
    t.unk_ = special_id("tokenizer.ggml.unknown_token_id", 0);
    auto flag = [&](const char* key, bool fallback) {
      const gguf_value* v = f.find(key);
      if (v == nullptr) return fallback;
      if (v->is_array() || v->type() != gguf_value_type::boolean)
        fail(std::string("key '") + key + "' must be a boolean");
      return v->as_bool();
    };
    t.add_bos_ = flag("tokenizer.ggml.add_bos_token", true);
    t.add_eos_ = flag("tokenizer.ggml.add_eos_token", false);
    t.add_space_prefix_ = flag("tokenizer.ggml.add_space_prefix", true);
    if (t.add_bos_ && t.bos_ < 0) fail("add_bos_token is set but the vocabulary has no BOS token");
    if (t.add_eos_ && t.eos_ < 0) fail("add_eos_token is set but the vocabulary has no EOS token");
    t.index();
    return t;
  }

  /// @brief Token ids of `text`. special = false: no BOS/EOS, control and unknown token text
  /// tokenized as plain text; special = true: BOS/EOS added as the vocabulary says and every
  /// special token's text matched.
  /// @throws invalid_argument if text exceeds max_text_bytes, or a byte of it has no piece.
  [[nodiscard]] std::vector<token_id> encode(std::string_view text, bool special = false) const {
    constexpr std::string_view fn = "spm_tokenizer::encode";
    if (text.size() > max_text_bytes_)
      detail::throw_invalid(
          fn, "text",
          "is " + std::to_string(text.size()) + " bytes, more than " + std::to_string(max_text_bytes_));
    struct fragment {
      std::size_t offset, length;
      token_id token;  // −1: raw text
    };
    std::vector<fragment> frags;
    if (!text.empty()) frags.push_back({0, text.size(), -1});
    for (const token_id id : special_order_) {
      const auto ty = types_[static_cast<std::size_t>(id)];
      if (!special && (ty == spm_token_type::control || ty == spm_token_type::unknown)) continue;
      const std::string& s = pieces_[static_cast<std::size_t>(id)];
      std::vector<fragment> next;
      next.reserve(frags.size());
      for (const auto& fr : frags) {
        if (fr.token >= 0) {
          next.push_back(fr);
          continue;
        }
        std::size_t at = fr.offset;
        const std::size_t end = fr.offset + fr.length;
        while (true) {
          const std::size_t m = text.find(s, at);
          if (m == std::string_view::npos || m + s.size() > end) break;
          if (m > at) next.push_back({at, m - at, -1});
          next.push_back({m, s.size(), id});
          at = m + s.size();
        }
        if (at < end) next.push_back({at, end - at, -1});
      }
      frags = std::move(next);
    }
    std::vector<token_id> out;
    if (special && add_bos_) out.push_back(bos_);
    bool prev_special = true;  // a fragment that starts the text gets the dummy prefix
    for (const auto& fr : frags) {
      if (fr.token >= 0) {
        out.push_back(fr.token);
        prev_special = true;
        continue;
      }
      std::string s;
      if (add_space_prefix_ && prev_special) s = " ";
      s.append(text.substr(fr.offset, fr.length));
      merge(escape_spaces(s), out);
      prev_special = false;
    }
    if (special && add_eos_) out.push_back(eos_);
    return out;
  }

  /// @brief Text of `ids` (llama_detokenize: see the file comment); special tokens rendered with
  /// `special`, else dropped (and then a leading BOS and a trailing EOS are removed).
  /// @throws invalid_argument on an id outside the vocabulary.
  [[nodiscard]] std::string decode(std::span<const token_id> ids, bool special = false) const {
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= vocab_size())
        detail::throw_invalid("spm_tokenizer::decode", "ids",
                              "holds id " + std::to_string(ids[i]) + " at index " + std::to_string(i) +
                                  ", outside [0, " + std::to_string(vocab_size()) + ")");
    std::size_t b = 0, e = ids.size();
    bool remove_space = add_space_prefix_;
    if (!special && add_bos_ && e > 0 && ids[0] == bos_) {
      remove_space = false;
      b = 1;
    }
    if (!special && add_eos_ && e > b && ids[e - 1] == eos_) --e;
    std::string out;
    for (std::size_t i = b; i < e; ++i) {
      std::string p = piece_text(ids[i], special);
      if (remove_space && !p.empty() && p[0] == ' ') p.erase(0, 1);
      remove_space = false;
      out += p;
    }
    return out;
  }

  /// @brief Number of tokens.
  [[nodiscard]] std::int32_t vocab_size() const noexcept { return static_cast<std::int32_t>(pieces_.size()); }
  /// @brief The text of every id, in id order (spaces as ▁).
  [[nodiscard]] const std::vector<std::string>& pieces() const noexcept { return pieces_; }
  /// @brief The score of every id (higher merges first).
  [[nodiscard]] const std::vector<float>& scores() const noexcept { return scores_; }
  /// @brief The type of every id.
  [[nodiscard]] const std::vector<spm_token_type>& types() const noexcept { return types_; }
  /// @brief BOS id, or −1.
  [[nodiscard]] token_id bos() const noexcept { return bos_; }
  /// @brief EOS id, or −1.
  [[nodiscard]] token_id eos() const noexcept { return eos_; }
  /// @brief unk id, or −1.
  [[nodiscard]] token_id unk() const noexcept { return unk_; }
  /// @brief Whether encode(text, true) starts with BOS (tokenizer.ggml.add_bos_token, default true).
  [[nodiscard]] bool add_bos() const noexcept { return add_bos_; }
  /// @brief Whether encode(text, true) ends with EOS (tokenizer.ggml.add_eos_token, default false).
  [[nodiscard]] bool add_eos() const noexcept { return add_eos_; }
  /// @brief Whether a text gets the dummy-prefix space (tokenizer.ggml.add_space_prefix, default true).
  [[nodiscard]] bool add_space_prefix() const noexcept { return add_space_prefix_; }
  /// @brief Whether id is a control or unknown token (dropped by decode unless `special`).
  [[nodiscard]] bool is_special(token_id id) const noexcept {
    if (id < 0 || id >= vocab_size()) return false;
    const auto ty = types_[static_cast<std::size_t>(id)];
    return ty == spm_token_type::control || ty == spm_token_type::unknown;
  }

 private:
  /// The lookup tables: text → id (a later duplicate wins, as in llama.cpp), byte ids, and the
  /// special tokens in matching order (longest text first, then by id).
  void index() {
    for (std::size_t i = 0; i < pieces_.size(); ++i) text_to_id_[pieces_[i]] = static_cast<token_id>(i);
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      const auto ty = types_[i];
      if ((ty == spm_token_type::control || ty == spm_token_type::user_defined ||
           ty == spm_token_type::unknown) &&
          !pieces_[i].empty())
        special_order_.push_back(static_cast<token_id>(i));
    }
    std::stable_sort(special_order_.begin(), special_order_.end(), [&](token_id a, token_id b) {
      return pieces_[static_cast<std::size_t>(a)].size() > pieces_[static_cast<std::size_t>(b)].size();
    });
    static constexpr char hex[] = "0123456789ABCDEF";
    for (std::size_t c = 0; c < 256; ++c) {
      const std::string piece = {'<', '0', 'x', hex[c >> 4], hex[c & 15], '>'};
      auto it = text_to_id_.find(piece);
      if (it == text_to_id_.end()) it = text_to_id_.find(std::string(1, static_cast<char>(c)));
      byte_ids_[c] = it == text_to_id_.end() ? -1 : it->second;
    }
  }

  /// Spaces as ▁ (llama_escape_whitespace).
  [[nodiscard]] static std::string escape_spaces(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
      if (c == ' ')
        out += "\xE2\x96\x81";
      else
        out += c;
    }
    return out;
  }

  /// llama.cpp's unicode_len_utf8: the length from the lead byte's high nibble.
  [[nodiscard]] static std::size_t utf8_len(char c) noexcept {
    static constexpr std::array<std::size_t, 16> lookup = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[static_cast<unsigned char>(c) >> 4];
  }

  /// llm_tokenizer_spm_session::tokenize on one escaped fragment, appended to out.
  void merge(const std::string& text, std::vector<token_id>& out) const {
    struct symbol {
      int prev, next;
      std::size_t start, n;
    };
    std::vector<symbol> sym;
    for (std::size_t offs = 0; offs < text.size();) {
      const std::size_t n = std::min(utf8_len(text[offs]), text.size() - offs);
      const int index = static_cast<int>(sym.size());
      sym.push_back({index - 1, offs + n == text.size() ? -1 : index + 1, offs, n});
      offs += n;
    }
    struct bigram {
      int left, right;
      float score;
      std::size_t size;
    };
    auto lower = [](const bigram& l, const bigram& r) {
      return l.score < r.score || (l.score == r.score && l.left > r.left);
    };
    std::priority_queue<bigram, std::vector<bigram>, decltype(lower)> queue(lower);
    auto try_add = [&](int left, int right) {
      if (left == -1 || right == -1) return;
      const auto& l = sym[static_cast<std::size_t>(left)];
      const auto& r = sym[static_cast<std::size_t>(right)];
      const auto it = text_to_id_.find(text.substr(l.start, l.n + r.n));
      if (it == text_to_id_.end()) return;
      queue.push({left, right, scores_[static_cast<std::size_t>(it->second)], l.n + r.n});
    };
    for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
      const bigram b = queue.top();
      queue.pop();
      auto& l = sym[static_cast<std::size_t>(b.left)];
      auto& r = sym[static_cast<std::size_t>(b.right)];
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // one of them merged already
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[static_cast<std::size_t>(r.next)].prev = b.left;
      try_add(l.prev, b.left);
      try_add(b.left, l.next);
    }
    // every merged symbol is a vocabulary entry; a single character that is not becomes bytes
    for (int i = sym.empty() ? -1 : 0; i != -1; i = sym[static_cast<std::size_t>(i)].next) {
      const auto& s = sym[static_cast<std::size_t>(i)];
      const std::string_view piece(text.data() + s.start, s.n);
      if (const auto it = text_to_id_.find(std::string(piece)); it != text_to_id_.end()) {
        out.push_back(it->second);
        continue;
      }
      for (const char c : piece) {
        const token_id id = byte_ids_[static_cast<unsigned char>(c)];
        if (id < 0)
          detail::throw_invalid("spm_tokenizer::encode", "text",
                                "does not tokenize: byte 0x" + hex_byte(static_cast<unsigned char>(c)) +
                                    " is outside the vocabulary, which has no '<0x" +
                                    hex_byte(static_cast<unsigned char>(c)) + ">' piece for it");
        out.push_back(id);
      }
    }
  }

  /// The text one token decodes to (llama_token_to_piece, without the leading-space strip).
  [[nodiscard]] std::string piece_text(token_id id, bool special) const {
    const auto i = static_cast<std::size_t>(id);
    switch (types_[i]) {
      case spm_token_type::control:
      case spm_token_type::unknown:
        return special ? pieces_[i] : std::string();
      case spm_token_type::user_defined:
        return pieces_[i];
      case spm_token_type::normal: {
        std::string s;
        const std::string& p = pieces_[i];
        for (std::size_t k = 0; k < p.size(); ++k) {
          if (p.compare(k, 3, "\xE2\x96\x81") == 0) {
            s += ' ';
            k += 2;
          } else {
            s += p[k];
          }
        }
        return s;
      }
      case spm_token_type::byte:
        return std::string(1, static_cast<char>(detail::spm_byte_value(pieces_[i])));
      default:
        return {};
    }
  }

  [[nodiscard]] static std::string hex_byte(unsigned char c) {
    static constexpr char hex[] = "0123456789ABCDEF";
    return {hex[c >> 4], hex[c & 15]};
  }

  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<spm_token_type> types_;
  std::unordered_map<std::string, token_id> text_to_id_;
  std::vector<token_id> special_order_;
  std::array<token_id, 256> byte_ids_{};
  token_id bos_ = -1, eos_ = -1, unk_ = -1;
  bool add_bos_ = true, add_eos_ = false, add_space_prefix_ = true;
  std::size_t max_text_bytes_ = 0;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_SPM_TOKENIZER_HPP
