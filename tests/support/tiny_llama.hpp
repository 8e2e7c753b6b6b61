// SPDX-License-Identifier: MIT
// Test support: a tiny random Llama checkpoint (HF config.json + model.safetensors) written to a
// scratch directory, for engine tests without a trained model.
#ifndef LATENTAUDIT_TESTS_SUPPORT_TINY_LLAMA_HPP
#define LATENTAUDIT_TESTS_SUPPORT_TINY_LLAMA_HPP

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <latentaudit/core/rng.hpp>
#include <latentaudit/engine/safetensors.hpp>
#include <string>

namespace latentaudit::test {

/// Shape of the tiny model.
struct tiny_llama_shape {
  int vocab = 40, hidden = 32, intermediate = 48, layers = 3, heads = 4, kv_heads = 2;
  int max_context = 256;
  bool tied = false;
  dtype storage = dtype::f32;
  std::uint64_t seed = 1;
};

/// Writes a random checkpoint under the temp dir and returns its directory.
inline std::filesystem::path write_tiny_llama(const std::string& name, const tiny_llama_shape& s = {}) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("latentaudit_tiny_" + std::to_string(::getpid())) / name;
  fs::create_directories(dir);
  const int hd = s.hidden / s.heads;
  std::ofstream(dir / "config.json") << "{\"architectures\":[\"LlamaForCausalLM\"],\"vocab_size\":" << s.vocab
                                     << ",\"hidden_size\":" << s.hidden
                                     << ",\"intermediate_size\":" << s.intermediate
                                     << ",\"num_hidden_layers\":" << s.layers
                                     << ",\"num_attention_heads\":" << s.heads
                                     << ",\"num_key_value_heads\":" << s.kv_heads
                                     << ",\"rms_norm_eps\":1e-5,\"rope_theta\":10000.0"
                                     << ",\"max_position_embeddings\":" << s.max_context
                                     << ",\"hidden_act\":\"silu\""
                                     << ",\"tie_word_embeddings\":" << (s.tied ? "true" : "false")
                                     << ",\"rope_scaling\":null}";
  auto g = make_stream({.seed = s.seed});
  auto rnd = [&](std::string n, std::vector<std::int64_t> shape, double scale, double offset = 0.0) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    std::vector<float> v(static_cast<std::size_t>(count));
    for (auto& x : v) x = static_cast<float>(offset + scale * standard_normal(g));
    return tensor_to_write{std::move(n), s.storage, std::move(shape), std::move(v)};
  };
  std::vector<tensor_to_write> t;
  t.push_back(rnd("model.embed_tokens.weight", {s.vocab, s.hidden}, 1.0));
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const double w = 1.0 / std::sqrt(static_cast<double>(s.hidden));
    t.push_back(rnd(p + "input_layernorm.weight", {s.hidden}, 0.1, 1.0));
    t.push_back(rnd(p + "self_attn.q_proj.weight", {s.heads * hd, s.hidden}, w));
    t.push_back(rnd(p + "self_attn.k_proj.weight", {s.kv_heads * hd, s.hidden}, w));
    t.push_back(rnd(p + "self_attn.v_proj.weight", {s.kv_heads * hd, s.hidden}, w));
    t.push_back(rnd(p + "self_attn.o_proj.weight", {s.hidden, s.heads * hd}, w));
    t.push_back(rnd(p + "post_attention_layernorm.weight", {s.hidden}, 0.1, 1.0));
    t.push_back(rnd(p + "mlp.gate_proj.weight", {s.intermediate, s.hidden}, w));
    t.push_back(rnd(p + "mlp.up_proj.weight", {s.intermediate, s.hidden}, w));
    t.push_back(rnd(p + "mlp.down_proj.weight", {s.hidden, s.intermediate},
                    1.0 / std::sqrt(static_cast<double>(s.intermediate))));
  }
  t.push_back(rnd("model.norm.weight", {s.hidden}, 0.1, 1.0));
  if (!s.tied)
    t.push_back(rnd("lm_head.weight", {s.vocab, s.hidden}, 1.0 / std::sqrt(static_cast<double>(s.hidden))));
  write_safetensors(dir / "model.safetensors", t, {{"format", "pt"}});
  return dir;
}

}  // namespace latentaudit::test

#endif
