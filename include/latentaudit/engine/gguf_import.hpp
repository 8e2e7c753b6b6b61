// SPDX-License-Identifier: MIT
// latentaudit: a Llama GGUF file read as the reference engine's weights (docs/gguf.md "Importing a
// GGUF file into the reference engine"): reference_cpu_engine::load(F.gguf) runs it.
//
// The hyper-parameters come from the llama.* keys (llama_config_from_gguf): block_count,
// embedding_length, feed_forward_length, attention.head_count(_kv), attention.key_length /
// value_length (head size; default embedding_length / head_count), rope.dimension_count (must be
// the head size: no partial rotary), rope.freq_base (default 10000),
// attention.layer_norm_rms_epsilon, context_length; the vocabulary size is token_embd's row count
// (and must equal llama.vocab_size and the tokenizer's token count where the file has them). Rope
// scaling, another architecture than "llama" and quantized tensors are refused, naming the file and
// the key or tensor; f32, f16 and bf16 tensors are read.
//
// The tensors are given HF LlamaForCausalLM names (the inverse of gguf_export.hpp's table:
// token_embd → model.embed_tokens, blk.N.attn_q → model.layers.N.self_attn.q_proj, ..., output_norm
// → model.norm, output → lm_head; no `output` tensor means tied embeddings) and HF's layout:
// llama.cpp runs architecture llama with NORM RoPE (adjacent pairs 2i, 2i+1), so the rows of
// attn_q and attn_k hold each head's pairs side by side — whether the file came from
// convert_hf_to_gguf.py (which permutes HF's half-split rows, LlamaModel.permute) or from llama2.c
// (whose rotary embedding already pairs adjacent features). unpermute_rope_rows moves row 2i + j of
// a head back to row j·head_dim/2 + i, so the reference engine's HF (NEOX) rotation computes
// llama.cpp's. An f32 export of an HF checkpoint therefore imports with the checkpoint's own weights
// and fingerprint (tests/engine/gguf_import_test.cpp).
//
// The file is untrusted: gguf.hpp's bounded reader validates it before anything is allocated for
// it, every key is range-checked here, and a tensor's shape is checked before its data is read.
#ifndef LATENTAUDIT_ENGINE_GGUF_IMPORT_HPP
#define LATENTAUDIT_ENGINE_GGUF_IMPORT_HPP

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "gguf.hpp"
#include "llama_config.hpp"

namespace latentaudit {

/// @brief The HF LlamaForCausalLM name of a llama.cpp tensor name ("blk.3.attn_q.weight" →
/// "model.layers.3.self_attn.q_proj.weight"), or nullopt for a name outside the Llama table.
[[nodiscard]] inline std::optional<std::string> hf_name_of_gguf_tensor(std::string_view name) {
  if (name == "token_embd.weight") return "model.embed_tokens.weight";
  if (name == "output_norm.weight") return "model.norm.weight";
  if (name == "output.weight") return "lm_head.weight";
  if (!name.starts_with("blk.")) return std::nullopt;
  const std::string_view rest = name.substr(4);
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 4) return std::nullopt;
  int layer = -1;
  const auto r = std::from_chars(rest.data(), rest.data() + dot, layer);
  if (r.ec != std::errc() || r.ptr != rest.data() + dot || layer < 0 ||
      (dot > 1 && rest[0] == '0'))  // "blk.01." is not llama.cpp's spelling
    return std::nullopt;
  static constexpr std::pair<std::string_view, std::string_view> table[] = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  const std::string_view part = rest.substr(dot + 1);
  for (const auto& [g, hf] : table)
    if (part == g) return "model.layers." + std::to_string(layer) + "." + std::string(hf);
  return std::nullopt;
}

/// @brief The inverse of permute_rope_rows (gguf_export.hpp): rows of a Q or K projection
/// ([n_heads · head_dim][cols], row-major) from llama.cpp's adjacent rotary pairs back to HF's
/// half-split layout — within each head, row 2i + j moves to row j·head_dim/2 + i.
/// @throws invalid_argument if the sizes disagree or head_dim is odd.
[[nodiscard]] inline std::vector<float> unpermute_rope_rows(std::span<const float> w, std::int64_t n_heads,
                                                            std::int64_t head_dim, std::int64_t cols) {
  return detail::move_rope_rows("unpermute_rope_rows", w, n_heads, head_dim, cols, false);
}

/// @brief The reference engine's configuration of a Llama GGUF file (see the file comment).
/// @throws corrupt_data naming the file and the key: another architecture, a missing or
///         out-of-range key, rope scaling, a partial rotary dimension, no token_embd tensor, or
///         vocabulary sizes that disagree.
[[nodiscard]] inline llama_config llama_config_from_gguf(const gguf_file& f) {
  auto fail = [&](const std::string& what) -> void {
    LATENTAUDIT_THROW(corrupt_data("gguf import: '" + f.name() + "': " + what));
  };
  const gguf_value* arch = f.find("general.architecture");
  if (arch == nullptr || arch->is_array() || arch->type() != gguf_value_type::string)
    fail("missing string key 'general.architecture'");
  if (arch->as_string() != "llama")
    fail("general.architecture is '" + arch->as_string() +
         "'; the reference engine runs Llama only (architecture 'llama')");
  auto integer = [&](const std::string& key, std::uint64_t lo, std::uint64_t hi,
                     std::optional<std::uint64_t> fallback) -> std::uint64_t {
    const gguf_value* v = f.find(key);
    if (v == nullptr) {
      if (!fallback) fail("missing key '" + key + "'");
      return *fallback;
    }
    std::uint64_t x = 0;
    try {
      if (v->is_array()) fail("key '" + key + "' is an array (per-layer values are not supported)");
      x = v->as_uint();
    } catch (const invalid_argument& e) {
      fail("key '" + key + "': " + e.what());
    }
    if (x < lo || x > hi)
      fail("key '" + key + "' is " + std::to_string(x) + ", outside [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]");
    return x;
  };
  auto real = [&](const std::string& key, std::optional<double> fallback) -> double {
    const gguf_value* v = f.find(key);
    if (v == nullptr) {
      if (!fallback) fail("missing key '" + key + "'");
      return *fallback;
    }
    double x = 0;
    try {
      if (v->is_array()) fail("key '" + key + "' is an array");
      x = v->as_float();
    } catch (const invalid_argument& e) {
      fail("key '" + key + "': " + e.what());
    }
    if (!(x > 0) || !std::isfinite(x) || x > 1e12) fail("key '" + key + "' must be a positive finite number");
    return x;
  };
  llama_config c;
  if (const gguf_value* a = f.find("latentaudit.source.architecture");
      a != nullptr && !a->is_array() && a->type() == gguf_value_type::string) {
    if (a->as_string() != "LlamaForCausalLM")
      fail("latentaudit.source.architecture is '" + a->as_string() + "', expected 'LlamaForCausalLM'");
    c.architecture = a->as_string();
  }
  c.n_layers = static_cast<std::int32_t>(integer("llama.block_count", 1, 1024, std::nullopt));
  c.hidden_size = static_cast<std::int32_t>(integer("llama.embedding_length", 1, 1 << 16, std::nullopt));
  c.intermediate_size =
      static_cast<std::int32_t>(integer("llama.feed_forward_length", 1, 1 << 18, std::nullopt));
  c.n_heads = static_cast<std::int32_t>(integer("llama.attention.head_count", 1, 1024, std::nullopt));
  c.n_kv_heads = static_cast<std::int32_t>(
      integer("llama.attention.head_count_kv", 1, 1024, static_cast<std::uint64_t>(c.n_heads)));
  if (c.n_heads % c.n_kv_heads != 0)
    fail("llama.attention.head_count_kv (" + std::to_string(c.n_kv_heads) +
         ") must divide llama.attention.head_count (" + std::to_string(c.n_heads) + ")");
  if (f.find("llama.attention.key_length") == nullptr && c.hidden_size % c.n_heads != 0)
    fail("llama.embedding_length must be a multiple of llama.attention.head_count");
  c.head_dim = static_cast<std::int32_t>(
      integer("llama.attention.key_length", 2, 4096, static_cast<std::uint64_t>(c.hidden_size / c.n_heads)));
  if (c.head_dim % 2 != 0) fail("the head size must be even for RoPE, got " + std::to_string(c.head_dim));
  if (integer("llama.attention.value_length", 1, 4096, static_cast<std::uint64_t>(c.head_dim)) !=
      static_cast<std::uint64_t>(c.head_dim))
    fail("llama.attention.value_length must equal the key length " + std::to_string(c.head_dim));
  if (const auto rd = integer("llama.rope.dimension_count", 1, 4096, static_cast<std::uint64_t>(c.head_dim));
      rd != static_cast<std::uint64_t>(c.head_dim))
    fail("llama.rope.dimension_count is " + std::to_string(rd) + " but the head size is " +
         std::to_string(c.head_dim) + " (partial rotary embeddings are not supported)");
  c.rope_theta = static_cast<float>(real("llama.rope.freq_base", 10000.0));
  c.rms_norm_eps = static_cast<float>(real("llama.attention.layer_norm_rms_epsilon", std::nullopt));
  c.max_context =
      static_cast<std::int64_t>(integer("llama.context_length", 1, std::uint64_t{1} << 31, std::nullopt));
  if (const gguf_value* s = f.find("llama.rope.scaling.type");
      s != nullptr && !(s->type() == gguf_value_type::string && !s->is_array() && s->as_string() == "none"))
    fail("llama.rope.scaling.type is set; rope scaling is not supported by the reference engine");
  if (const gguf_value* s = f.find("llama.rope.scaling.factor"); s != nullptr) {
    double x = 0;
    try {
      x = s->is_array() ? 0.0 : s->as_float();
    } catch (const invalid_argument&) {
    }
    if (x != 0.0 && x != 1.0)
      fail("llama.rope.scaling.factor is set; rope scaling is not supported by the reference engine");
  }
  const gguf_tensor_info* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) fail("missing tensor 'token_embd.weight'");
  if (embd->ne.size() != 2 || embd->ne[1] < 1 || embd->ne[1] > (std::int64_t{1} << 24))
    fail("tensor 'token_embd.weight' must be 2-D with 1 to 2^24 rows");
  c.vocab_size = static_cast<std::int32_t>(embd->ne[1]);
  if (f.find("llama.vocab_size") != nullptr &&
      integer("llama.vocab_size", 1, 1 << 24, std::nullopt) != static_cast<std::uint64_t>(c.vocab_size))
    fail("llama.vocab_size differs from token_embd.weight's " + std::to_string(c.vocab_size) + " rows");
  if (const gguf_value* t = f.find("tokenizer.ggml.tokens");
      t != nullptr && t->size() != static_cast<std::size_t>(c.vocab_size))
    fail("tokenizer.ggml.tokens holds " + std::to_string(t->size()) + " tokens but token_embd.weight has " +
         std::to_string(c.vocab_size) + " rows");
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  return c;
}

/// @brief A Llama GGUF file opened as the reference engine's weights: the configuration, and the
/// tensors under HF names in HF's layout (see the file comment).
class gguf_llama_import {
 public:
  /// @brief Opens `path` with the bounded reader, reads the configuration and checks every
  /// tensor's type (f32, f16 or bf16; quantized tensors are refused).
  /// @throws invalid_argument if the file cannot be opened; corrupt_data naming the file and the
  ///         key or tensor otherwise.
  static gguf_llama_import open(const std::filesystem::path& path, const gguf_limits& limits = {}) {
    return gguf_llama_import(gguf_file::open(path, limits));
  }

  /// @brief Imports an opened file (gguf_file::parse of a buffer, which must outlive this object).
  /// @throws corrupt_data as open().
  explicit gguf_llama_import(gguf_file f) : file_(std::move(f)), config_(llama_config_from_gguf(file_)) {
    for (const auto& t : file_.tensors()) {
      if (!t.float_type()) {
        const auto layout = ggml_type_layout_of(t.ggml_type);
        LATENTAUDIT_THROW(corrupt_data("gguf import: '" + file_.name() + "': tensor '" + t.name +
                                       "' has ggml type " + std::string(layout ? layout->name : "?") +
                                       "; the reference engine reads f32, f16 and bf16 tensors only "
                                       "(quantized weights are not supported)"));
      }
      auto hf = hf_name_of_gguf_tensor(t.name);
      std::string name = hf ? std::move(*hf) : t.name;  // an unknown name stays as it is
      for (const auto& [h, g] : names_)
        if (h == name)
          LATENTAUDIT_THROW(corrupt_data("gguf import: '" + file_.name() + "': tensors '" + g + "' and '" +
                                         t.name + "' are both '" + name + "'"));
      names_.emplace_back(std::move(name), t.name);
    }
  }

  /// @brief The configuration (llama_config_from_gguf).
  [[nodiscard]] const llama_config& config() const noexcept { return config_; }
  /// @brief The GGUF file.
  [[nodiscard]] const gguf_file& file() const noexcept { return file_; }
  /// @brief Every tensor of the file by its HF name (an unknown llama.cpp name unchanged), in file order.
  [[nodiscard]] std::vector<std::string> hf_names() const {
    std::vector<std::string> out;
    out.reserve(names_.size());
    for (const auto& n : names_) out.push_back(n.first);
    return out;
  }
  /// @brief Whether the file holds the tensor of HF name `hf`.
  [[nodiscard]] bool has(std::string_view hf) const noexcept { return gguf_name(hf) != nullptr; }

  /// @brief Reads the tensor of HF name `hf` as f32 in HF's layout (row-major `shape`; Q and K rows
  /// un-permuted to HF's half-split rotary layout).
  /// @throws corrupt_data naming the file and the tensor if it is missing or its shape differs.
  [[nodiscard]] std::vector<float> read_f32(std::string_view hf, std::span<const std::int64_t> shape) const {
    const std::string* g = gguf_name(hf);
    if (g == nullptr)
      LATENTAUDIT_THROW(corrupt_data("gguf import: '" + file_.name() + "': missing tensor '" +
                                     std::string(hf) + "' (llama.cpp name '" + gguf_of_missing(hf) + "')"));
    const gguf_tensor_info* t = file_.find_tensor(*g);
    if (t->shape() != std::vector<std::int64_t>(shape.begin(), shape.end()))
      LATENTAUDIT_THROW(corrupt_data("gguf import: '" + file_.name() + "': tensor '" + *g + "' has shape " +
                                     shape_text(t->shape()) + ", expected " +
                                     shape_text({shape.begin(), shape.end()})));
    auto v = file_.read_f32(*g);
    const bool q = hf.ends_with("self_attn.q_proj.weight"), k = hf.ends_with("self_attn.k_proj.weight");
    if ((q || k) && shape.size() == 2)
      v = unpermute_rope_rows(v, q ? config_.n_heads : config_.n_kv_heads, config_.head_dim, shape[1]);
    return v;
  }

 private:
  [[nodiscard]] const std::string* gguf_name(std::string_view hf) const noexcept {
    for (const auto& [h, g] : names_)
      if (h == hf) return &g;
    return nullptr;
  }
  // the llama.cpp name an HF name would have (for the message of a missing tensor)
  [[nodiscard]] static std::string gguf_of_missing(std::string_view hf) {
    if (hf == "model.embed_tokens.weight") return "token_embd.weight";
    if (hf == "model.norm.weight") return "output_norm.weight";
    if (hf == "lm_head.weight") return "output.weight";
    if (hf.starts_with("model.layers.")) {
      const auto rest = hf.substr(13);
      const auto dot = rest.find('.');
      if (dot != std::string_view::npos) {
        const std::string g = "blk." + std::string(rest.substr(0, dot)) + ".";
        for (const char* part : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                                 "ffn_gate", "ffn_up", "ffn_down"}) {
          const auto name = g + part + ".weight";
          if (hf_name_of_gguf_tensor(name) == std::string(hf)) return name;
        }
      }
    }
    return "?";
  }
  [[nodiscard]] static std::string shape_text(const std::vector<std::int64_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  }

  gguf_file file_;
  llama_config config_;
  std::vector<std::pair<std::string, std::string>> names_;  // (HF name, llama.cpp name)
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_GGUF_IMPORT_HPP
