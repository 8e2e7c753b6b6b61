// SPDX-License-Identifier: MIT
// latentaudit: the configuration of a Llama model as the reference engine runs it
// (engine/reference_cpu.hpp): read from an HF `config.json` (llama_config::from_json) or from the
// llama.* keys of a GGUF file (engine/gguf_import.hpp, llama_config_from_gguf).
#ifndef LATENTAUDIT_ENGINE_LLAMA_CONFIG_HPP
#define LATENTAUDIT_ENGINE_LLAMA_CONFIG_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/json.hpp"

namespace latentaudit {

/// @brief The fields of an HF Llama `config.json` the reference engine uses (a GGUF file's llama.*
/// keys fill the same fields: engine/gguf_import.hpp).
struct llama_config {
  std::string architecture = "LlamaForCausalLM";  ///< first entry of "architectures"
  std::int32_t vocab_size = 0;                    ///< "vocab_size"
  std::int32_t hidden_size = 0;                   ///< "hidden_size"
  std::int32_t intermediate_size = 0;             ///< "intermediate_size"
  std::int32_t n_layers = 0;                      ///< "num_hidden_layers"
  std::int32_t n_heads = 0;                       ///< "num_attention_heads"
  std::int32_t n_kv_heads = 0;                    ///< "num_key_value_heads" (default n_heads)
  std::int32_t head_dim = 0;                      ///< "head_dim" (default hidden_size / n_heads)
  float rms_norm_eps = 1e-6f;                     ///< "rms_norm_eps"
  float rope_theta = 10000.0f;                    ///< "rope_theta"
  std::int64_t max_context = 2048;                ///< "max_position_embeddings"
  bool tie_word_embeddings = false;               ///< "tie_word_embeddings"

  /// @brief Reads and validates a config.json object.
  /// @throws corrupt_data naming the field (missing, wrong type, out of range, unsupported
  ///         rope_scaling, hidden_act other than silu).
  static llama_config from_json(const json_value& j, const std::string& where = "config.json");
};

inline llama_config llama_config::from_json(const json_value& j, const std::string& where) {
  auto fail = [&](const std::string& what) -> void {
    LATENTAUDIT_THROW(corrupt_data("llama_config: " + where + ": " + what));
  };
  if (!j.is_object()) fail("not a JSON object");
  llama_config c;
  auto integer = [&](const char* key, std::int64_t lo, std::int64_t hi, bool required,
                     std::int64_t fallback) -> std::int64_t {
    const json_value* v = j.find(key);
    if (v == nullptr || v->is_null()) {
      if (required) fail(std::string("missing \"") + key + "\"");
      return fallback;
    }
    if (!v->is_number() || v->as_number() != std::floor(v->as_number()) ||
        v->as_number() < static_cast<double>(lo) || v->as_number() > static_cast<double>(hi))
      fail(std::string("\"") + key + "\" must be an integer in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]");
    return static_cast<std::int64_t>(v->as_number());
  };
  auto number = [&](const char* key, double fallback) -> double {
    const json_value* v = j.find(key);
    if (v == nullptr || v->is_null()) return fallback;
    if (!v->is_number() || !(v->as_number() > 0))
      fail(std::string("\"") + key + "\" must be a positive number");
    return v->as_number();
  };
  if (const json_value* a = j.find("architectures"); a != nullptr && !a->is_null()) {
    // Absent: a bare Llama config. Present: exactly the one architecture this engine runs.
    if (!a->is_array() || a->as_array().size() != 1 || !a->as_array()[0].is_string() ||
        a->as_array()[0].as_string() != "LlamaForCausalLM")
      fail("\"architectures\" must be [\"LlamaForCausalLM\"] (the reference engine runs Llama only), got " +
           write_json(*a));
    c.architecture = a->as_array()[0].as_string();
  }
  c.vocab_size = static_cast<std::int32_t>(integer("vocab_size", 1, 1 << 24, true, 0));
  c.hidden_size = static_cast<std::int32_t>(integer("hidden_size", 1, 1 << 16, true, 0));
  c.intermediate_size = static_cast<std::int32_t>(integer("intermediate_size", 1, 1 << 18, true, 0));
  c.n_layers = static_cast<std::int32_t>(integer("num_hidden_layers", 1, 1024, true, 0));
  c.n_heads = static_cast<std::int32_t>(integer("num_attention_heads", 1, 1024, true, 0));
  c.n_kv_heads = static_cast<std::int32_t>(integer("num_key_value_heads", 1, 1024, false, c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0) fail("num_key_value_heads must divide num_attention_heads");
  c.head_dim = static_cast<std::int32_t>(integer("head_dim", 2, 4096, false, c.hidden_size / c.n_heads));
  if (c.head_dim % 2 != 0) fail("head_dim must be even for RoPE");
  if (j.find("head_dim") == nullptr && c.hidden_size % c.n_heads != 0)
    fail("hidden_size must be a multiple of num_attention_heads");
  c.rms_norm_eps = static_cast<float>(number("rms_norm_eps", 1e-6));
  c.rope_theta = static_cast<float>(number("rope_theta", 10000.0));
  c.max_context = integer("max_position_embeddings", 1, std::int64_t{1} << 31, false, 2048);
  if (const json_value* t = j.find("tie_word_embeddings"); t != nullptr && !t->is_null()) {
    if (!t->is_bool()) fail("\"tie_word_embeddings\" must be a boolean");
    c.tie_word_embeddings = t->as_bool();
  }
  if (const json_value* r = j.find("rope_scaling"); r != nullptr && !r->is_null())
    fail("rope_scaling is not supported by the reference engine");
  if (const json_value* h = j.find("hidden_act");
      h != nullptr && !(h->is_string() && h->as_string() == "silu"))
    fail("hidden_act must be \"silu\"");
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (const json_value* b = j.find(key); b != nullptr && b->is_bool() && b->as_bool())
      fail(std::string(key) + " is not supported");
  return c;
}

namespace detail {
/// @brief The rows of a Q or K projection ([n_heads · head_dim] rows of `cols` values, row-major)
/// moved between HF's half-split rotary layout and llama.cpp's adjacent pairs: within each head, row
/// j·head_dim/2 + i of the half-split layout is row 2i + j of the adjacent one. `to_adjacent`: HF →
/// llama.cpp (permute_rope_rows, gguf_export.hpp), else llama.cpp → HF (unpermute_rope_rows,
/// gguf_import.hpp). `fn` names the caller in errors.
/// @throws invalid_argument if the sizes disagree or head_dim is odd.
[[nodiscard]] inline std::vector<float> move_rope_rows(std::string_view fn, std::span<const float> w,
                                                       std::int64_t n_heads, std::int64_t head_dim,
                                                       std::int64_t cols, bool to_adjacent) {
  if (n_heads <= 0 || head_dim <= 0 || head_dim % 2 != 0 || cols <= 0)
    throw_invalid(fn, "shape", "needs positive n_heads and cols and a positive even head_dim");
  check_same_size(fn, "w", w.size(), "n_heads * head_dim * cols",
                  static_cast<std::size_t>(n_heads * head_dim * cols));
  std::vector<float> out(w.size());
  const auto c = static_cast<std::size_t>(cols);
  const std::int64_t half = head_dim / 2;
  for (std::int64_t h = 0; h < n_heads; ++h)
    for (std::int64_t i = 0; i < half; ++i)
      for (std::int64_t j = 0; j < 2; ++j) {
        const auto split = static_cast<std::size_t>(h * head_dim + j * half + i);
        const auto adjacent = static_cast<std::size_t>(h * head_dim + 2 * i + j);
        const std::size_t from = to_adjacent ? split : adjacent, to = to_adjacent ? adjacent : split;
        std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(from * c), c,
                    out.begin() + static_cast<std::ptrdiff_t>(to * c));
      }
  return out;
}
}  // namespace detail

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_LLAMA_CONFIG_HPP
