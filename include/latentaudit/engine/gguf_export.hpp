// SPDX-License-Identifier: MIT
// latentaudit: conversion of an HF Llama checkpoint (config.json + model.safetensors, the layout
// the reference engine loads) into a GGUF file that llama.cpp runs as architecture "llama" — the
// library side of `latentaudit gguf export` (docs/gguf.md).
//
// What it writes, following llama.cpp's own convert_hf_to_gguf.py (LlamaModel) of release v0.5.0:
//  - general.architecture "llama", general.type "model", general.name, general.file_type (0 all
//    f32, 1 mostly f16, 32 mostly bf16), general.quantization_version 2;
//  - llama.vocab_size, context_length, embedding_length, feed_forward_length, block_count,
//    attention.head_count, attention.head_count_kv, attention.key_length, attention.value_length
//    (head_dim, written always, so a head_dim other than hidden/heads is kept),
//    rope.dimension_count (head_dim), rope.freq_base, attention.layer_norm_rms_epsilon;
//  - tokenizer.ggml.model "none": token ids only, no tokenizer (llama.cpp requires the key, and
//    with "none" sizes its vocabulary from llama.vocab_size); or, with options.vocab, every
//    tokenizer.* key of another GGUF file (a real tokenizer of the same vocabulary size); or, when
//    the checkpoint's folder holds a tokenizer.json, its vocabulary as a "llama" (SentencePiece)
//    tokenizer (tokenizer_gguf_keys);
//  - latentaudit.source.architecture (the HF architecture) and latentaudit.source.weights_hash
//    (u64): the reference engine's fingerprint hash of the source weights (engine_info::
//    fingerprint.weights_hash of reference_cpu_engine::load on the same directory), so an engine
//    running the file can state the same model fingerprint;
//  - tensors token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate,
//    ffn_up, ffn_down}, output_norm and output (absent when the embeddings are tied: llama.cpp then
//    uses token_embd). 2-D weights are stored in the requested dtype, 1-D norms in f32 (as the
//    converter does).
//  - The rows of attn_q and attn_k permuted within each head from HF's half-split rotary pairs
//    (i, i + d/2) to the adjacent pairs (2i, 2i + 1) that llama.cpp's "llama" architecture rotates
//    (NORM RoPE): new row 2i + j = old row j·d/2 + i. Q·K products are unchanged; an unpermuted
//    file runs with the wrong rotation (logits off by up to 13 on organism-a). llama.cpp's cached K
//    rows are therefore in the permuted order.
#ifndef LATENTAUDIT_ENGINE_GGUF_EXPORT_HPP
#define LATENTAUDIT_ENGINE_GGUF_EXPORT_HPP

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/file_check.hpp"
#include "../core/hash.hpp"
#include "../core/json.hpp"
#include "gguf.hpp"
#include "reference_cpu.hpp"
#include "safetensors.hpp"
#include "tokenizer_json.hpp"

namespace latentaudit {

/// @brief Options of export_llama_gguf.
struct gguf_export_options {
  dtype type = dtype::f32;  ///< storage of the 2-D weights: f32, f16 or bf16 (1-D norms stay f32)
  std::string name;         ///< general.name; empty: the model directory's name
  /// A GGUF file whose tokenizer to copy (every `tokenizer.*` key, e.g. one of llama.cpp's
  /// ggml-vocab-*.gguf): the model then carries a real tokenizer instead of tokenizer.ggml.model
  /// "none". Its token count must equal the checkpoint's vocab_size. Empty: no tokenizer.
  std::filesystem::path vocab;
  /// Without `vocab`: when the checkpoint's folder holds a tokenizer.json (engine/tokenizer_json.hpp
  /// reads it), write it as a SentencePiece ("llama") vocabulary: tokens, scores (−rank of the merge
  /// that makes each token, so llama.cpp's highest-score-first merging follows the merge ranks),
  /// token types, BOS/EOS/unk ids, add_bos_token and add_space_prefix. false: no tokenizer.
  bool hf_tokenizer = true;
};

/// @brief The GGUF `tokenizer.*` keys of a tokenizer.json vocabulary, for llama.cpp's SentencePiece
/// ("llama") tokenizer: the same pieces (▁ for spaces), scores −(merge rank) so that its
/// highest-score-first bigram merging follows the BPE merge order (pieces no merge makes score 0),
/// token types (normal, unknown, control for special added tokens, user-defined, byte), BOS, EOS and
/// unk ids, add_bos_token, add_eos_token false, add_space_prefix. How far llama.cpp then tokenizes
/// as the reader does is measured (docs/real-models.md), not assumed.
[[nodiscard]] inline std::vector<std::pair<std::string, gguf_value>> tokenizer_gguf_keys(
    const tokenizer_json& t) {
  std::vector<float> scores(t.pieces().size(), 0.0f);
  std::vector<bool> made(t.pieces().size(), false);
  // the token a merge makes: the first (lowest-rank) merge giving a token sets its score
  std::unordered_map<std::string, token_id> ids;
  for (std::size_t i = 0; i < t.pieces().size(); ++i) ids.emplace(t.pieces()[i], static_cast<token_id>(i));
  for (std::size_t r = 0; r < t.merges().size(); ++r) {
    const auto [a, b] = t.merges()[r];
    const auto it =
        ids.find(t.pieces()[static_cast<std::size_t>(a)] + t.pieces()[static_cast<std::size_t>(b)]);
    if (it == ids.end() || made[static_cast<std::size_t>(it->second)]) continue;
    made[static_cast<std::size_t>(it->second)] = true;
    scores[static_cast<std::size_t>(it->second)] = -static_cast<float>(r);
  }
  std::vector<std::int32_t> types;
  for (const auto k : t.kinds()) types.push_back(static_cast<std::int32_t>(k));
  std::vector<std::pair<std::string, gguf_value>> keys;
  keys.emplace_back("tokenizer.ggml.model", gguf_value::of("llama"));
  keys.emplace_back("tokenizer.ggml.tokens", gguf_value::array(t.pieces()));
  keys.emplace_back("tokenizer.ggml.scores", gguf_value::array(std::span<const float>(scores)));
  keys.emplace_back("tokenizer.ggml.token_type", gguf_value::array(std::span<const std::int32_t>(types)));
  if (t.bos() >= 0)
    keys.emplace_back("tokenizer.ggml.bos_token_id", gguf_value::of(static_cast<std::uint32_t>(t.bos())));
  if (t.eos() >= 0)
    keys.emplace_back("tokenizer.ggml.eos_token_id", gguf_value::of(static_cast<std::uint32_t>(t.eos())));
  if (t.unk() >= 0)
    keys.emplace_back("tokenizer.ggml.unknown_token_id", gguf_value::of(static_cast<std::uint32_t>(t.unk())));
  keys.emplace_back("tokenizer.ggml.add_bos_token", gguf_value::of(t.add_bos()));
  keys.emplace_back("tokenizer.ggml.add_eos_token", gguf_value::of(false));
  keys.emplace_back("tokenizer.ggml.add_space_prefix", gguf_value::of(t.prepends_space()));
  return keys;
}

/// @brief What export_llama_gguf wrote.
struct gguf_export_summary {
  llama_config config;             ///< the source's configuration
  std::size_t tensors = 0;         ///< tensors written
  std::uint64_t file_bytes = 0;    ///< size of the GGUF file
  std::uint64_t weights_hash = 0;  ///< the reference engine's fingerprint hash of the source weights
  std::string tokenizer;  ///< where the vocabulary came from: "tokenizer.json", the --vocab file, or ""
};

/// @brief Permutes the rows of a Q or K projection ([n_heads × head_dim] rows of `cols` values,
/// row-major) from HF's half-split rotary layout to llama.cpp's adjacent pairs: within each head,
/// row j·head_dim/2 + i moves to row 2i + j (convert_hf_to_gguf.py's LlamaModel.permute).
/// @throws invalid_argument if the sizes disagree or head_dim is odd.
[[nodiscard]] inline std::vector<float> permute_rope_rows(std::span<const float> w, std::int64_t n_heads,
                                                          std::int64_t head_dim, std::int64_t cols) {
  return detail::move_rope_rows("permute_rope_rows", w, n_heads, head_dim, cols, true);
}

/// @brief Converts the HF Llama checkpoint in `model_dir` (config.json + model.safetensors, as
/// reference_cpu_engine::load reads them; GQA, tied or untied embeddings) into the GGUF file `out`
/// (written whole or not at all). See the file comment for what is written.
/// @throws corrupt_data on a bad config (another architecture, rope_scaling, biases, ...), a
///         missing, unexpected or non-finite tensor; shape_mismatch on a mis-shaped tensor;
///         invalid_argument on unreadable inputs, an unwritable `out` or a dtype other than f32,
///         f16 or bf16.
[[nodiscard]] inline gguf_export_summary export_llama_gguf(const std::filesystem::path& model_dir,
                                                           const std::filesystem::path& out,
                                                           const gguf_export_options& o = {}) {
  constexpr std::string_view fn = "export_llama_gguf";
  if (!is_floating(o.type)) detail::throw_invalid(fn, "type", "must be f32, f16 or bf16");
  const auto cfg_path = model_dir / "config.json";
  if (require_regular_file(cfg_path, "gguf export: config") > (1u << 20))
    LATENTAUDIT_THROW(corrupt_data("llama_config: " + cfg_path.string() + " is larger than 1 MiB"));
  std::ifstream cfg_in(cfg_path);
  std::stringstream ss;
  ss << cfg_in.rdbuf();
  json_value cfg_json;
  try {
    cfg_json = parse_json(ss.str(), {.max_depth = 16, .max_bytes = 1 << 20});
  } catch (const error& e) {
    LATENTAUDIT_THROW(corrupt_data("llama_config: " + cfg_path.string() + ": " + e.what()));
  }
  gguf_export_summary summary;
  const llama_config c = llama_config::from_json(cfg_json, cfg_path.string());
  // The tokenizer to copy, checked before any weight is read.
  std::vector<std::pair<std::string, gguf_value>> tokenizer_keys;
  if (!o.vocab.empty()) {
    (void)require_regular_file(o.vocab, "gguf export: vocab");
    const auto vf = gguf_file::open(o.vocab);
    for (const auto& [key, v] : vf.metadata())
      if (key.rfind("tokenizer.", 0) == 0) tokenizer_keys.emplace_back(key, v);
    const gguf_value* toks = vf.find("tokenizer.ggml.tokens");
    const gguf_value* model = vf.find("tokenizer.ggml.model");
    if (toks == nullptr || !toks->is_array() || model == nullptr ||
        model->type() != gguf_value_type::string || model->as_string() == "none")
      LATENTAUDIT_THROW(corrupt_data("gguf export: vocab '" + o.vocab.string() +
                                     "' has no tokenizer (tokenizer.ggml.model and tokenizer.ggml.tokens)"));
    if (static_cast<std::int64_t>(toks->size()) != c.vocab_size)
      LATENTAUDIT_THROW(
          corrupt_data("gguf export: vocab '" + o.vocab.string() + "' has " + std::to_string(toks->size()) +
                       " tokens, but config.json's vocab_size is " + std::to_string(c.vocab_size)));
  }
  if (o.vocab.empty() && o.hf_tokenizer && std::filesystem::is_regular_file(model_dir / "tokenizer.json")) {
    const auto t = tokenizer_json::load(model_dir);
    if (t.vocab_size() != c.vocab_size)
      LATENTAUDIT_THROW(corrupt_data("gguf export: '" + (model_dir / "tokenizer.json").string() + "' has " +
                                     std::to_string(t.vocab_size()) +
                                     " tokens, but config.json's vocab_size is " +
                                     std::to_string(c.vocab_size)));
    tokenizer_keys = tokenizer_gguf_keys(t);
    summary.tokenizer = "tokenizer.json";
  } else if (!o.vocab.empty()) {
    summary.tokenizer = o.vocab.string();
  }
  summary.config = c;
  const auto st_path = model_dir / "model.safetensors";
  (void)require_regular_file(st_path, "gguf export: weights");
  const auto st = safetensors_file::open(st_path);

  const std::int64_t d = c.hidden_size, V = c.vocab_size, I = c.intermediate_size, hd = c.head_dim;
  const std::int64_t q_out = std::int64_t{c.n_heads} * hd, kv_out = std::int64_t{c.n_kv_heads} * hd;
  struct source_tensor {
    std::string hf, gguf;
    std::vector<std::int64_t> shape;
    int permute_heads = 0;  // > 0: Q/K rows permuted with this many heads
  };
  std::vector<source_tensor> plan;
  // Tied embeddings stored only as lm_head.weight (TinyStories-656K): that matrix is token_embd, as
  // the reference engine reads it (hashed as model.embed_tokens.weight, as the engine hashes it).
  const bool head_only = c.tie_word_embeddings && st.find("model.embed_tokens.weight") == nullptr &&
                         st.find("lm_head.weight") != nullptr;
  plan.push_back({head_only ? "lm_head.weight" : "model.embed_tokens.weight", "token_embd.weight", {V, d}});
  for (std::int32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".", b = "blk." + std::to_string(l) + ".";
    plan.push_back({p + "input_layernorm.weight", b + "attn_norm.weight", {d}});
    plan.push_back({p + "self_attn.q_proj.weight", b + "attn_q.weight", {q_out, d}, c.n_heads});
    plan.push_back({p + "self_attn.k_proj.weight", b + "attn_k.weight", {kv_out, d}, c.n_kv_heads});
    plan.push_back({p + "self_attn.v_proj.weight", b + "attn_v.weight", {kv_out, d}});
    plan.push_back({p + "self_attn.o_proj.weight", b + "attn_output.weight", {d, q_out}});
    plan.push_back({p + "post_attention_layernorm.weight", b + "ffn_norm.weight", {d}});
    plan.push_back({p + "mlp.gate_proj.weight", b + "ffn_gate.weight", {I, d}});
    plan.push_back({p + "mlp.up_proj.weight", b + "ffn_up.weight", {I, d}});
    plan.push_back({p + "mlp.down_proj.weight", b + "ffn_down.weight", {d, I}});
  }
  plan.push_back({"model.norm.weight", "output_norm.weight", {d}});
  if (!c.tie_word_embeddings) plan.push_back({"lm_head.weight", "output.weight", {V, d}});

  // Every tensor of the checkpoint must be used (a dropped bias or extra weight would be a different
  // model), but a tied copy of the embeddings, which must then equal them.
  for (const auto& t : st.tensors()) {
    bool known = false;
    for (const auto& s : plan) known = known || s.hf == t.name;
    if (known) continue;
    if (c.tie_word_embeddings && t.name == "lm_head.weight") {  // a tied copy beside embed_tokens
      const std::int64_t shape[] = {V, d};
      if (st.read_f32("lm_head.weight", shape) != st.read_f32("model.embed_tokens.weight", shape))
        LATENTAUDIT_THROW(
            corrupt_data("gguf export: '" + st_path.string() +
                         "' holds an lm_head.weight that differs from model.embed_tokens.weight, "
                         "but config.json ties them (tie_word_embeddings: true)"));
      continue;
    }
    LATENTAUDIT_THROW(corrupt_data("gguf export: unexpected tensor '" + t.name + "' in '" + st_path.string() +
                                   "' (a Llama checkpoint without biases is expected)"));
  }
  auto read = [&](const source_tensor& s) {
    auto v = st.read_f32(s.hf, s.shape);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        LATENTAUDIT_THROW(corrupt_data("gguf export: tensor '" + s.hf + "' in '" + st_path.string() +
                                       "' holds a non-finite value at index " + std::to_string(i)));
    return v;
  };
  // First pass: the reference engine's weights hash (names and f32 values in its load order,
  // which is the plan's order), so the metadata can carry it.
  {
    sha256 hash;
    for (const auto& s : plan) {
      const auto v = read(s);
      const std::string h = s.gguf == "token_embd.weight" ? "model.embed_tokens.weight" : s.hf;
      hash.update(std::as_bytes(std::span(h.data(), h.size())));
      hash.update(std::as_bytes(std::span(v)));
    }
    const auto digest = hash.finish();
    for (int i = 0; i < 8; ++i)
      summary.weights_hash |= static_cast<std::uint64_t>(digest[static_cast<std::size_t>(i)]) << (8 * i);
  }

  gguf_writer w;
  const std::string arch = "llama";
  auto u32 = [](std::int64_t x) { return gguf_value::of(static_cast<std::uint32_t>(x)); };
  w.set("general.architecture", gguf_value::of(arch));
  w.set("general.type", gguf_value::of("model"));
  w.set("general.name", gguf_value::of(o.name.empty() ? model_dir.filename().string() : o.name));
  w.set("general.file_type", u32(o.type == dtype::f32 ? 0 : o.type == dtype::f16 ? 1 : 32));
  w.set("general.quantization_version", u32(2));
  w.set(arch + ".vocab_size", u32(V));
  w.set(arch + ".context_length", u32(c.max_context));
  w.set(arch + ".embedding_length", u32(d));
  w.set(arch + ".feed_forward_length", u32(I));
  w.set(arch + ".block_count", u32(c.n_layers));
  w.set(arch + ".attention.head_count", u32(c.n_heads));
  w.set(arch + ".attention.head_count_kv", u32(c.n_kv_heads));
  w.set(arch + ".attention.key_length", u32(hd));
  w.set(arch + ".attention.value_length", u32(hd));
  w.set(arch + ".rope.dimension_count", u32(hd));
  w.set(arch + ".rope.freq_base", gguf_value::of(c.rope_theta));
  w.set(arch + ".attention.layer_norm_rms_epsilon", gguf_value::of(c.rms_norm_eps));
  if (tokenizer_keys.empty())
    w.set("tokenizer.ggml.model", gguf_value::of("none"));
  else
    for (const auto& [key, v] : tokenizer_keys) w.set(key, v);
  w.set("latentaudit.source.architecture", gguf_value::of(c.architecture));
  w.set("latentaudit.source.weights_hash", gguf_value::of(summary.weights_hash));
  for (const auto& s : plan) {
    const dtype t = s.shape.size() == 1 ? dtype::f32 : o.type;
    w.add_tensor(s.gguf, t, s.shape, [&read, &s, hd]() {
      auto v = read(s);
      if (s.permute_heads > 0) v = permute_rope_rows(v, s.permute_heads, hd, s.shape[1]);
      return v;
    });
  }
  w.write(out);
  summary.tensors = plan.size();
  summary.file_bytes = std::filesystem::file_size(out);
  return summary;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_GGUF_EXPORT_HPP
