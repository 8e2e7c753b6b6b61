// SPDX-License-Identifier: MIT
// The CLI's check of a GGUF file before llama.cpp sees it (`audit`/`forward`/`organism eval
// --engine llama.cpp --model`, `--partner`, `--tokenizer`): the project's bounded reader
// (engine/gguf.hpp: header, metadata, tensor extents inside the file) and then what llama.cpp
// aborts on or misreads instead of failing cleanly. Every refusal is a usage_error (exit 2) naming
// the option, the file and the GGUF key or tensor.
#ifndef LATENTAUDIT_CLI_GGUF_CHECK_HPP
#define LATENTAUDIT_CLI_GGUF_CHECK_HPP

#include <latentaudit/engine/gguf.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {

namespace detail_gguf {
// Whether `s` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
inline bool valid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}
}  // namespace detail_gguf

/// @brief The tokenizer models latentaudit hands to llama.cpp (llama: SentencePiece, gpt2: byte-level BPE;
/// (bert: WordPiece, t5: Unigram, gemma4: the models of llama.cpp's own vocabularies).
inline constexpr std::string_view gguf_tokenizer_models[] = {"llama", "gpt2", "bert", "t5", "gemma4"};
/// @brief The most transformer blocks a model may declare.
inline constexpr std::uint64_t gguf_max_block_count = 1024;

namespace detail_gguf {

// Throws usage_error "<where>: <what>" (where: "<command>: option <option> '<path>'").
struct refusal {
  std::string where;
  [[noreturn]] void operator()(const std::string& what) const { throw usage_error(where + ": " + what); }
};

inline std::string key_text(std::string_view k) { return "key " + std::string(k); }

// The tokenizer keys (check_gguf_for_llama).
inline void check_tokenizer(const gguf_file& f, bool vocab_only, const refusal& refuse) {
  if (const gguf_value* m = f.find("tokenizer.ggml.model"); m != nullptr) {
    if (m->is_array() || m->type() != gguf_value_type::string)
      refuse(key_text("tokenizer.ggml.model") + " must be a string");
    const std::string& model = m->as_string();
    // 'none': a model without a tokenizer (gguf export without --vocab); a vocabulary needs one
    if (model == "none" && vocab_only)
      refuse(key_text("tokenizer.ggml.model") + " is 'none': the file holds no tokenizer");
    if (model != "none") {
      if (std::find(std::begin(gguf_tokenizer_models), std::end(gguf_tokenizer_models), model) ==
          std::end(gguf_tokenizer_models))
        refuse(key_text("tokenizer.ggml.model") + " is '" + model +
               "', not a tokenizer latentaudit supports (llama, gpt2, bert, t5, gemma4)");
      const gguf_value* tokens = f.find("tokenizer.ggml.tokens");
      if (tokens == nullptr || !tokens->is_array() || tokens->type() != gguf_value_type::string ||
          tokens->size() == 0)
        refuse(key_text("tokenizer.ggml.tokens") + " must be a non-empty array of strings");
      const auto& strs = tokens->strings();
      // WordPiece maps every unknown word to [UNK] and brackets a sequence with [CLS] ... [SEP]:
      // without them llama.cpp tokenizes to id -1
      if (model == "bert")
        for (const char* special : {"[UNK]", "[CLS]", "[SEP]"})
          if (std::find(strs.begin(), strs.end(), special) == strs.end())
            refuse(key_text("tokenizer.ggml.model") + " is 'bert', but tokenizer.ggml.tokens lacks its " +
                   special + " token");
      for (std::size_t i = 0; i < strs.size(); ++i)
        if (!valid_utf8(strs[i]))
          refuse(key_text("tokenizer.ggml.tokens") + ": token " + std::to_string(i) + " is not valid UTF-8");
      for (const char* k : {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"})
        if (const gguf_value* v = f.find(k); v != nullptr && (!v->is_array() || v->size() != tokens->size()))
          refuse(key_text(k) + " holds " + std::to_string(v->size()) + " values for " +
                 std::to_string(tokens->size()) + " tokens (tokenizer.ggml.tokens)");
      if (const gguf_value* mg = f.find("tokenizer.ggml.merges"); mg != nullptr) {
        if (!mg->is_array() || mg->type() != gguf_value_type::string)
          refuse(key_text("tokenizer.ggml.merges") + " must be an array of strings");
        for (std::size_t i = 0; i < mg->strings().size(); ++i)
          if (!valid_utf8(mg->strings()[i]))
            refuse(key_text("tokenizer.ggml.merges") + ": merge " + std::to_string(i) +
                   " is not valid UTF-8");
      }
    }
  } else if (vocab_only) {
    refuse(key_text("tokenizer.ggml.model") + " is missing: the file holds no tokenizer");
  }
}

// A model's keys and layout: architecture, block count against the blk.N tensors, experts, the
// norm epsilon, tensors within the file and no trailing bytes (check_gguf_for_llama).
inline void check_model_layout(const gguf_file& f, std::uintmax_t file_size, const refusal& refuse) {
  const gguf_value* arch_v = f.find("general.architecture");
  if (arch_v == nullptr || arch_v->is_array() || arch_v->type() != gguf_value_type::string)
    refuse(key_text("general.architecture") + " is missing or not a string");
  const std::string arch = arch_v->as_string();
  const std::string bc_key = arch + ".block_count";
  const gguf_value* bc = f.find(bc_key);
  std::uint64_t blocks = 0;
  try {
    if (bc == nullptr || bc->is_array()) refuse(key_text(bc_key) + " is missing");
    blocks = bc->as_uint();
  } catch (const error&) {
    refuse(key_text(bc_key) + " must be a non-negative integer");
  }
  if (blocks == 0 || blocks > gguf_max_block_count)
    refuse(key_text(bc_key) + " is " + std::to_string(blocks) + ", outside [1, " +
           std::to_string(gguf_max_block_count) + "]");
  std::set<std::uint64_t> seen;
  bool experts = false;
  std::uint64_t data_end = 0;
  for (const auto& t : f.tensors()) {
    if (t.name.rfind("blk.", 0) == 0) {
      const auto dot = t.name.find('.', 4);
      const std::string n = t.name.substr(4, dot == std::string::npos ? std::string::npos : dot - 4);
      if (!n.empty() && n.size() < 6 &&
          std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }))
        seen.insert(std::stoull(n));
    }
    experts |= t.name.find("_exps") != std::string::npos;
    data_end = std::max(data_end, t.offset + t.bytes);
  }
  if (seen.size() != blocks || (!seen.empty() && *seen.rbegin() + 1 != blocks))
    refuse(key_text(bc_key) + " is " + std::to_string(blocks) + ", but the file holds tensors of " +
           std::to_string(seen.size()) + " blocks (blk.N)");
  for (const char* suffix : {".expert_count", ".expert_used_count"})
    if (const gguf_value* e = f.find(arch + suffix); e != nullptr && !experts) {
      std::uint64_t n = 1;
      try {
        n = e->is_array() ? 1 : e->as_uint();
      } catch (const error&) {
      }
      if (n != 0)
        refuse(key_text(arch + suffix) + " declares experts, but the file holds no expert tensors (*_exps)");
    }
  for (const char* suffix : {".attention.layer_norm_rms_epsilon", ".attention.layer_norm_epsilon"})
    if (const gguf_value* e = f.find(arch + suffix); e != nullptr) {
      double x = 0;
      try {
        if (e->is_array()) refuse(key_text(arch + suffix) + " must be a number");
        x = e->as_float();
      } catch (const error&) {
        refuse(key_text(arch + suffix) + " must be an f32 number");
      }
      if (!(std::isfinite(x) && x > 0 && x < 1))
        refuse(key_text(arch + suffix) + " is " + latentaudit::number_text(x) +
               ", not a finite number in (0, 1)");
    }
  if (f.tensors().empty()) refuse("holds no tensors (a vocabulary, not a model)");
  const std::uint64_t end = f.data_offset() + data_end;
  if (file_size > end + f.alignment())
    refuse("holds " + std::to_string(file_size - end) +
           " bytes after its last tensor (a truncated or padded copy?)");
}

// No NaN or infinite f32, f16 or bf16 weight (check_gguf_for_llama).
inline void check_finite_weights(const std::filesystem::path& path, const gguf_file& f,
                                 const refusal& refuse) {
  // Weights that are NaN or infinite: llama.cpp would compute with them (its logits then NaN).
  // The f32, f16 and bf16 tensors are read through once, 1 MiB at a time (in a quantized model
  // these are the norms and a few small tensors); quantized blocks are llama.cpp's to check.
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(std::size_t{1} << 20);
  for (const auto& t : f.tensors()) {
    const auto type = t.float_type();
    if (!type) continue;
    const std::size_t width = *type == dtype::f32 ? 4 : 2;
    in.seekg(static_cast<std::streamoff>(f.data_offset() + t.offset));
    for (std::uint64_t done = 0; done < t.bytes;) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), t.bytes - done));
      if (!in.read(buf.data(), static_cast<std::streamsize>(n)))
        refuse("cannot be read at tensor " + t.name + " (a file changed while it was checked?)");
      for (std::size_t i = 0; i + width <= n; i += width) {
        bool bad = false;
        if (width == 4) {
          std::uint32_t u = 0;
          std::memcpy(&u, buf.data() + i, 4);
          bad = (u & 0x7F800000u) == 0x7F800000u;
        } else {
          std::uint16_t h = 0;
          std::memcpy(&h, buf.data() + i, 2);
          bad = *type == dtype::f16 ? (h & 0x7C00u) == 0x7C00u : (h & 0x7F80u) == 0x7F80u;
        }
        if (bad)
          refuse("tensor " + t.name + " holds a NaN or infinite weight (element " +
                 std::to_string((done + i) / width) + ")");
      }
      done += n;
    }
  }
}

}  // namespace detail_gguf

/// @brief Checks `path` (option `option` of `command`) before llama.cpp loads it: a model
/// (`vocab_only` false: architecture, block count matching its blk.N tensors, no expert count
/// without expert tensors, a finite positive RMS-norm epsilon, tensors within the file and no
/// trailing bytes past them) or a vocabulary (`vocab_only`: the tokenizer keys only). In both,
/// general.alignment a power of two ≥ 8, a supported tokenizer model, token strings of valid UTF-8
/// and scores and token types as many as the tokens; in a model, no NaN or infinite f32, f16 or
/// bf16 weight.
/// @throws usage_error "<command>: option <option> '<path>': <problem naming the key>".
inline void check_gguf_for_llama(const std::filesystem::path& path, std::string_view command,
                                 std::string_view option, bool vocab_only) {
  const detail_gguf::refusal refuse{std::string(command) + ": option " + std::string(option) + " '" +
                                    path.string() + "'"};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    refuse(std::string("must name a GGUF file") + (vocab_only ? "" : " for --engine llama.cpp"));
  const auto file_size = std::filesystem::file_size(path, ec);
  if (ec) refuse("cannot be read: " + ec.message());
  std::optional<gguf_file> opened;
  try {
    opened.emplace(gguf_file::open(path));
  } catch (const error& e) {
    refuse(std::string("is not a valid GGUF file: ") + e.what());
  }
  const gguf_file& f = *opened;
  using detail_gguf::key_text;
  if (const gguf_value* a = f.find("general.alignment"); a != nullptr && f.alignment() < 8)
    refuse(key_text("general.alignment") + " is " + std::to_string(f.alignment()) +
           ", not a power of two of at least 8 (llama.cpp's tensor alignment)");
  detail_gguf::check_tokenizer(f, vocab_only, refuse);
  if (vocab_only) return;
  detail_gguf::check_model_layout(f, file_size, refuse);
  detail_gguf::check_finite_weights(path, f, refuse);
}

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_CLI_GGUF_CHECK_HPP
