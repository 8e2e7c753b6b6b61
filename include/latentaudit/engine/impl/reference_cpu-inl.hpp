// SPDX-License-Identifier: MIT
// latentaudit: definitions of engine/reference_cpu.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ENGINE_IMPL_REFERENCE_CPU_INL_HPP
#define LATENTAUDIT_ENGINE_IMPL_REFERENCE_CPU_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../reference_cpu.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "../../core/detail/check.hpp"
#include "../../core/error.hpp"
#include "../../core/hash.hpp"
#include "../../core/parallel.hpp"
#include "../../kv/rope.hpp"
#include "../gguf_import.hpp"

namespace latentaudit {

namespace detail {

/// The tensors of a safetensors file as reference_weights.
inline reference_weights safetensors_weights(const safetensors_file& st) {
  reference_weights w;
  w.path = st.path().string();
  for (const auto& t : st.tensors()) w.names.push_back(t.name);
  w.has = [&st](const std::string& name) { return st.find(name) != nullptr; };
  w.read = [&st](const std::string& name, std::span<const std::int64_t> shape) {
    return st.read_f32(name, shape);
  };
  w.file = &st;
  return w;
}

/// The tensors of a GGUF import as reference_weights (HF names, Q/K rows un-permuted).
inline reference_weights gguf_weights(const gguf_llama_import& g) {
  reference_weights w;
  w.path = g.file().name();
  w.names = g.hf_names();
  w.has = [&g](const std::string& name) { return g.has(name); };
  w.read = [&g](const std::string& name, std::span<const std::int64_t> shape) {
    return g.read_f32(name, shape);
  };
  return w;
}

/// Whether `path` names a model directory (an HF checkpoint) rather than a GGUF file: anything but
/// a regular file (a missing path then fails as a directory without config.json, as before GGUF).
inline bool is_model_directory(const std::filesystem::path& path) {
  std::error_code ec;
  return !std::filesystem::is_regular_file(path, ec);
}

/// `dir/config.json`, read and validated.
inline llama_config read_hf_config(const std::filesystem::path& dir) {
  const auto cfg_path = dir / "config.json";
  if (require_regular_file(cfg_path, "reference_cpu_engine::load: config") > (1u << 20))
    LATENTAUDIT_THROW(corrupt_data("llama_config: " + cfg_path.string() + " is larger than 1 MiB"));
  std::ifstream in(cfg_path);
  if (!in)
    detail::throw_invalid("reference_cpu_engine::load", "dir",
                          "has no readable config.json: '" + cfg_path.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  json_value cfg_json;
  try {
    cfg_json = parse_json(ss.str(), {.max_depth = 16, .max_bytes = 1 << 20});
  } catch (const error& e) {
    LATENTAUDIT_THROW(corrupt_data("llama_config: " + cfg_path.string() + ": " + e.what()));
  }
  return llama_config::from_json(cfg_json, cfg_path.string());
}

/// A GGUF model file (a regular file: is_model_directory is false).
inline gguf_llama_import open_gguf_model(const std::filesystem::path& path) {
  return gguf_llama_import::open(path);
}

}  // namespace detail

LATENTAUDIT_INLINE reference_cpu_engine reference_cpu_engine::load(const std::filesystem::path& path,
                                                                   unsigned threads) {
  if (!detail::is_model_directory(path)) {  // a GGUF file (engine/gguf_import.hpp)
    const auto g = detail::open_gguf_model(path);
    return reference_cpu_engine(g.config(), detail::gguf_weights(g), threads);
  }
  const auto cfg = detail::read_hf_config(path);
  const auto st = safetensors_file::open(path / "model.safetensors");
  return reference_cpu_engine(cfg, st, threads);
}

LATENTAUDIT_INLINE reference_cpu_engine reference_cpu_engine::load_with_overlay(
    const std::filesystem::path& dir, const std::filesystem::path& overlay, unsigned threads) {
  const safetensors_limits limits{.max_tensors = 4096, .max_rank = 2};
  if (!detail::is_model_directory(dir)) {  // a GGUF file's tensors, by their HF names
    const auto g = detail::open_gguf_model(dir);
    const auto ov = safetensors_file::open(overlay, limits);
    return reference_cpu_engine(g.config(), detail::gguf_weights(g), threads, &ov);
  }
  // One engine built, not two: the constructor validates every base tensor as load() does, those
  // the overlay replaces included (read and checked, not kept).
  const auto cfg = detail::read_hf_config(dir);
  const auto st = safetensors_file::open(dir / "model.safetensors");
  const auto ov = safetensors_file::open(overlay, limits);
  return reference_cpu_engine(cfg, st, threads, &ov);
}

LATENTAUDIT_INLINE reference_cpu_engine::reference_cpu_engine(const llama_config& cfg,
                                                              const safetensors_file& st, unsigned threads,
                                                              const safetensors_file* overlay)
    : reference_cpu_engine(cfg, detail::safetensors_weights(st), threads, overlay) {}

LATENTAUDIT_INLINE reference_cpu_engine::reference_cpu_engine(const llama_config& cfg,
                                                              const detail::reference_weights& st,
                                                              unsigned threads,
                                                              const safetensors_file* overlay)
    : cfg_(cfg), threads_(threads) {
  const std::int64_t d = cfg.hidden_size, V = cfg.vocab_size, I = cfg.intermediate_size;
  const std::int64_t q_out = std::int64_t{cfg.n_heads} * cfg.head_dim,
                     kv_out = std::int64_t{cfg.n_kv_heads} * cfg.head_dim;
  std::vector<std::string> expected;
  sha256 hash;
  // A weight that is not finite, or so large that the forward pass overflows float, cannot be a
  // trained model's: refused at load (one pass over the values, as they are hashed anyway).
  auto check_values = [&](const std::string& name, std::span<const float> v, const std::string& file) {
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!(std::fabs(v[i]) <= 1e6f))
        LATENTAUDIT_THROW(corrupt_data("reference_cpu_engine: tensor '" + name + "' in '" + file +
                                       "' holds " + number_text(static_cast<double>(v[i])) + " at index " +
                                       std::to_string(i) +
                                       " (weights must be finite and at most 1e6 in magnitude)"));
  };
  // A tensor's values, checked (the file's tensor and shape before `storage` allocates the engine's
  // matrix or vector of the shape's size, then every value), from the overlay when it holds the
  // tensor (the base's own then read and checked as load() checks it, not kept), and hashed under
  // the name `hashed`. A safetensors file is read straight into the storage.
  auto read_checked = [&](const std::string& name, std::span<const std::int64_t> shape, auto&& storage,
                          const std::string& hashed) {
    expected.push_back(name);
    std::span<float> out;
    const auto from_file = [&](const safetensors_file& f, const std::string& file) {
      (void)f.tensor_f32(name, shape);  // before the storage is allocated
      out = storage();
      f.read_f32_into(name, shape, out);
      check_values(name, out, file);
    };
    if (overlay != nullptr && overlay->find(name) != nullptr) {
      check_values(name, st.read(name, shape), st.path);
      from_file(*overlay, overlay->path().string());
    } else if (st.file != nullptr) {
      from_file(*st.file, st.path);
    } else {
      const auto v = st.read(name, shape);
      out = storage();
      std::copy(v.begin(), v.end(), out.begin());
      check_values(name, out, st.path);
    }
    hash.update(std::as_bytes(std::span(hashed.data(), hashed.size())));
    hash.update(std::as_bytes(out));
  };
  // `hashed`: the name the fingerprint hashes (the stored name unless given); the matrix (row-major,
  // as stored) or vector allocated once the tensor's shape is known to be the config's
  auto mat = [&](const std::string& name, std::int64_t rows, std::int64_t cols,
                 const std::string& hashed = {}) {
    const std::int64_t shape[] = {rows, cols};
    matrix m;
    read_checked(
        name, shape,
        [&] {
          m.resize(rows, cols);
          return std::span<float>(m.data(), static_cast<std::size_t>(m.size()));
        },
        hashed.empty() ? name : hashed);
    return m;
  };
  auto vec = [&](const std::string& name, std::int64_t n) {
    const std::int64_t shape[] = {n};
    Eigen::VectorXf v;
    read_checked(
        name, shape,
        [&] {
          v.resize(n);
          return std::span<float>(v.data(), static_cast<std::size_t>(v.size()));
        },
        name);
    return v;
  };
  // Tied embeddings: HF checkpoints store the shared matrix as model.embed_tokens.weight, but some
  // (raincandy-u/TinyStories-656K) store only lm_head.weight; either name serves as the one matrix,
  // hashed as model.embed_tokens.weight so both layouts of one model have one fingerprint.
  const bool head_only =
      cfg.tie_word_embeddings && !st.has("model.embed_tokens.weight") && st.has("lm_head.weight");
  embed_ = mat(head_only ? "lm_head.weight" : "model.embed_tokens.weight", V, d, "model.embed_tokens.weight");
  for (std::int32_t l = 0; l < cfg.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    layer_weights w;
    w.in_norm = vec(p + "input_layernorm.weight", d);
    w.q = mat(p + "self_attn.q_proj.weight", q_out, d);
    w.k = mat(p + "self_attn.k_proj.weight", kv_out, d);
    w.v = mat(p + "self_attn.v_proj.weight", kv_out, d);
    w.o = mat(p + "self_attn.o_proj.weight", d, q_out);
    w.post_norm = vec(p + "post_attention_layernorm.weight", d);
    w.gate = mat(p + "mlp.gate_proj.weight", I, d);
    w.up = mat(p + "mlp.up_proj.weight", I, d);
    w.down = mat(p + "mlp.down_proj.weight", d, I);
    layers_.push_back(std::move(w));
  }
  norm_ = vec("model.norm.weight", d);
  if (!cfg.tie_word_embeddings) lm_head_ = mat("lm_head.weight", V, d);
  for (const auto& t_name : st.names) {
    if (std::find(expected.begin(), expected.end(), t_name) != expected.end()) continue;
    if (cfg.tie_word_embeddings && t_name == "lm_head.weight" && !head_only) {
      // Some exports keep the tied copy: accepted when it is that copy, refused when it differs
      // (a model that needs its own head would be run with the wrong one).
      const std::int64_t shape[] = {V, d};
      const auto head = st.read("lm_head.weight", shape);
      if (!std::equal(head.begin(), head.end(), embed_.data()))
        LATENTAUDIT_THROW(
            corrupt_data("reference_cpu_engine: '" + st.path +
                         "' holds an lm_head.weight that differs from model.embed_tokens.weight, "
                         "but config.json ties them (tie_word_embeddings: true)"));
      continue;
    }
    LATENTAUDIT_THROW(
        corrupt_data("reference_cpu_engine: unexpected tensor '" + t_name + "' in '" + st.path + "'"));
  }
  if (overlay != nullptr)  // an overlay replaces tensors of the model, it adds none
    for (const auto& t : overlay->tensors())
      if (std::find(expected.begin(), expected.end(), t.name) == expected.end())
        LATENTAUDIT_THROW(corrupt_data("reference_cpu_engine: overlay '" + overlay->path().string() +
                                       "' holds tensor '" + t.name + "', which the model does not have"));
  // the processor's vector units (detail/packed_gemm.hpp): every linear layer packed once, its
  // row-major copy released (the embeddings stay: their rows are the token vectors)
  if (detail::packed_gemm_available()) {
    packed_ = true;
    auto pack = [](matrix& m, detail::packed_weight& p) {
      p = detail::pack_weight(m.data(), m.rows(), m.cols(), m.cols());
      m = matrix();
    };
    for (auto& w : layers_) {
      pack(w.q, w.pq);
      pack(w.k, w.pk);
      pack(w.v, w.pv);
      pack(w.o, w.po);
      pack(w.gate, w.pgate);
      pack(w.up, w.pup);
      pack(w.down, w.pdown);
    }
    if (cfg.tie_word_embeddings) {
      head_packed_ = detail::pack_weight(embed_.data(), embed_.rows(), embed_.cols(), embed_.cols());
    } else {
      pack(lm_head_, head_packed_);
    }
  }
  const auto digest = hash.finish();
  std::uint64_t wh = 0;
  for (int i = 0; i < 8; ++i)
    wh |= static_cast<std::uint64_t>(digest[static_cast<std::size_t>(i)]) << (8 * i);
  info_.name = "reference_cpu";
  info_.fingerprint = {.architecture = cfg.architecture,
                       .n_layers = cfg.n_layers,
                       .n_heads = cfg.n_heads,
                       .n_kv_heads = cfg.n_kv_heads,
                       .head_dim_k = cfg.head_dim,
                       .head_dim_v = cfg.head_dim,
                       .rope = {.pairing = rope_pairing::neox, .theta = cfg.rope_theta, .rotary_dims = 0},
                       .weights_hash = wh};
  info_.vocab_size = cfg.vocab_size;
  info_.hidden_size = cfg.hidden_size;
  info_.max_context = cfg.max_context;
  info_.caps = {.attention_capture = true,
                .hidden_state = true,
                .partial_layer_import = true,
                .token_mask_import = true,
                .position_gaps = true,
                .kv_dtypes = {dtype::f32, dtype::f16, dtype::bf16}};
  freq_ = rope_frequencies(info_.fingerprint.rope, cfg.head_dim);
}

LATENTAUDIT_INLINE seq_id reference_cpu_engine::open_seq() {
  for (std::size_t i = 0; i < seqs_.size(); ++i)
    if (!seqs_[i].open) {
      seqs_[i] = sequence{};
      seqs_[i].open = true;
      seqs_[i].k.resize(layers_.size());
      seqs_[i].v.resize(layers_.size());
      seqs_[i].visible.resize(layers_.size());
      return static_cast<seq_id>(i);
    }
  sequence s;
  s.open = true;
  s.k.resize(layers_.size());
  s.v.resize(layers_.size());
  s.visible.resize(layers_.size());
  seqs_.push_back(std::move(s));
  return static_cast<seq_id>(seqs_.size() - 1);
}

LATENTAUDIT_INLINE forward_output reference_cpu_engine::prefill(seq_id s, std::span<const token_id> tokens,
                                                                position_t first, const forward_options& o) {
  return forward(s, tokens, first, o, {}, nullptr);
}

LATENTAUDIT_INLINE forward_output reference_cpu_engine::decode(seq_id s, token_id token, position_t p,
                                                               const forward_options& o) {
  const token_id t[1] = {token};
  return forward(s, t, p, o, {}, nullptr);
}

LATENTAUDIT_INLINE attention_capture
reference_cpu_engine::prefill_capture(seq_id s, std::span<const token_id> tokens, position_t first,
                                      std::span<const layer_index> layers, const forward_options& o) {
  for (auto l : layers) detail::check_in_range("prefill_capture", "layers", l, 0, cfg_.n_layers - 1);
  attention_capture cap;
  cap.layers.assign(layers.begin(), layers.end());
  cap.heads = cfg_.n_heads;
  cap.output = forward(s, tokens, first, o, cap.layers, &cap);
  return cap;
}

LATENTAUDIT_INLINE kv_block reference_cpu_engine::export_kv(seq_id s, index_range tokens,
                                                            index_range layer_range) const {
  constexpr std::string_view fn = "export_kv";
  const auto& q = seq(fn, s);
  const auto T = static_cast<std::int64_t>(q.positions.size());
  detail::check_in_range(fn, "tokens.first", tokens.first, 0, T);
  detail::check_in_range(fn, "tokens.last", tokens.last, tokens.first, T);
  detail::check_in_range(fn, "layers.first", layer_range.first, 0, cfg_.n_layers);
  detail::check_in_range(fn, "layers.last", layer_range.last, layer_range.first, cfg_.n_layers);
  std::vector<layer_index> ls;
  for (auto l = layer_range.first; l < layer_range.last; ++l) ls.push_back(static_cast<layer_index>(l));
  kv_block b(info_.fingerprint, ls, tokens.size(), dtype::f32);
  const std::size_t row = row_elems();
  std::vector<std::uint8_t> mask(ls.size() * static_cast<std::size_t>(tokens.size()), 1);
  bool ragged = false;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const auto l = static_cast<std::size_t>(ls[i]);
    auto k = b.k<float>(i), v = b.v<float>(i);
    for (std::int64_t t = 0; t < tokens.size(); ++t) {
      const auto src = static_cast<std::size_t>(tokens.first + t);
      std::copy_n(q.k[l].begin() + static_cast<std::ptrdiff_t>(src * row), row,
                  k.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(t) * row));
      std::copy_n(q.v[l].begin() + static_cast<std::ptrdiff_t>(src * row), row,
                  v.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(t) * row));
      if (!q.visible[l][src]) {
        mask[i * static_cast<std::size_t>(tokens.size()) + static_cast<std::size_t>(t)] = 0;
        ragged = true;
      }
    }
  }
  for (std::int64_t t = 0; t < tokens.size(); ++t)
    b.positions()[static_cast<std::size_t>(t)] = q.positions[static_cast<std::size_t>(tokens.first + t)];
  if (ragged) b.set_token_mask(std::move(mask));
  return b;
}

LATENTAUDIT_INLINE void reference_cpu_engine::import_kv(seq_id s, const kv_block& block,
                                                        const import_options& o) {
  constexpr std::string_view fn = "import_kv";
  auto& q = seq(fn, s);
  if (!o.force) check_fingerprint(fn, info_.fingerprint, block.fingerprint());
  detail::check_same_size(fn, "block.n_kv_heads", static_cast<std::size_t>(block.n_kv_heads()),
                          "model n_kv_heads", static_cast<std::size_t>(cfg_.n_kv_heads));
  detail::check_same_size(fn, "block.head_dim_k", static_cast<std::size_t>(block.head_dim_k()),
                          "model head_dim", static_cast<std::size_t>(cfg_.head_dim));
  detail::check_same_size(fn, "block.head_dim_v", static_cast<std::size_t>(block.head_dim_v()),
                          "model head_dim", static_cast<std::size_t>(cfg_.head_dim));
  if (!o.layer_mask.empty())
    detail::check_same_size(fn, "options.layer_mask", o.layer_mask.size(), "model layers",
                            static_cast<std::size_t>(cfg_.n_layers));
  for (auto l : block.layers()) detail::check_in_range(fn, "block.layers", l, 0, cfg_.n_layers - 1);
  kv_block b = block.type() == dtype::f32 ? block : block.converted(dtype::f32);
  if (o.force) {
    auto fp = b.fingerprint();
    fp.rope = info_.fingerprint.rope;
    b.set_fingerprint(fp);
  }
  check_positions(fn, b, {.context_length = cfg_.max_context, .prerope_reference = o.prerope_reference});
  const std::size_t row = row_elems();
  const auto T = static_cast<std::size_t>(b.n_tokens());
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const auto i = b.find_layer(static_cast<layer_index>(l));
    const bool use = i >= 0 && (o.layer_mask.empty() || o.layer_mask[l]);
    for (std::size_t t = 0; t < T; ++t) {
      if (use) {
        auto k = b.k<float>(static_cast<std::size_t>(i)), v = b.v<float>(static_cast<std::size_t>(i));
        q.k[l].insert(q.k[l].end(), k.begin() + static_cast<std::ptrdiff_t>(t * row),
                      k.begin() + static_cast<std::ptrdiff_t>((t + 1) * row));
        q.v[l].insert(q.v[l].end(), v.begin() + static_cast<std::ptrdiff_t>(t * row),
                      v.begin() + static_cast<std::ptrdiff_t>((t + 1) * row));
        q.visible[l].push_back(
            b.token_present(static_cast<std::size_t>(i), static_cast<std::int64_t>(t)) ? 1 : 0);
      } else {
        q.k[l].insert(q.k[l].end(), row, 0.0f);
        q.v[l].insert(q.v[l].end(), row, 0.0f);
        q.visible[l].push_back(0);
      }
    }
  }
  q.positions.insert(q.positions.end(), b.positions().begin(), b.positions().end());
}

LATENTAUDIT_INLINE void reference_cpu_engine::shift(seq_id s, position_t p0, position_t p1,
                                                    position_t delta) {
  constexpr std::string_view fn = "shift";
  auto& q = seq(fn, s);
  if (p0 > p1) detail::throw_invalid(fn, "p1", "must be >= p0");
  for (auto p : q.positions)
    if (p >= p0 && p < p1 && (std::int64_t{p} + delta < 0 || std::int64_t{p} + delta >= cfg_.max_context))
      detail::throw_invalid(fn, "delta", "moves position " + std::to_string(p) + " outside [0, max_context)");
  std::vector<float> head(static_cast<std::size_t>(cfg_.head_dim));
  const auto& rope = info_.fingerprint.rope;
  const std::size_t hd = static_cast<std::size_t>(cfg_.head_dim);
  for (std::size_t t = 0; t < q.positions.size(); ++t) {
    if (q.positions[t] < p0 || q.positions[t] >= p1) continue;
    for (std::size_t l = 0; l < layers_.size(); ++l)
      for (std::size_t h = 0; h < static_cast<std::size_t>(cfg_.n_kv_heads); ++h) {
        float* k = q.k[l].data() + t * row_elems() + h * hd;
        rotate_head(std::span<float>(k, hd), static_cast<double>(delta), rope, freq_);
      }
    q.positions[t] += delta;
  }
}

LATENTAUDIT_INLINE void reference_cpu_engine::erase(seq_id s, position_t p0, position_t p1) {
  constexpr std::string_view fn = "erase";
  auto& q = seq(fn, s);
  if (p0 > p1) detail::throw_invalid(fn, "p1", "must be >= p0");
  const std::size_t row = row_elems();
  std::size_t w = 0;
  for (std::size_t t = 0; t < q.positions.size(); ++t) {
    if (q.positions[t] >= p0 && q.positions[t] < p1) continue;
    if (w != t) {
      q.positions[w] = q.positions[t];
      for (std::size_t l = 0; l < layers_.size(); ++l) {
        std::copy_n(q.k[l].begin() + static_cast<std::ptrdiff_t>(t * row), row,
                    q.k[l].begin() + static_cast<std::ptrdiff_t>(w * row));
        std::copy_n(q.v[l].begin() + static_cast<std::ptrdiff_t>(t * row), row,
                    q.v[l].begin() + static_cast<std::ptrdiff_t>(w * row));
        q.visible[l][w] = q.visible[l][t];
      }
    }
    ++w;
  }
  q.positions.resize(w);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    q.k[l].resize(w * row);
    q.v[l].resize(w * row);
    q.visible[l].resize(w);
  }
}

LATENTAUDIT_INLINE reference_cpu_engine::sequence& reference_cpu_engine::seq(std::string_view fn, seq_id s) {
  if (s < 0 || static_cast<std::size_t>(s) >= seqs_.size() || !seqs_[static_cast<std::size_t>(s)].open)
    detail::throw_invalid(fn, "seq", "is not an open sequence: " + std::to_string(s));
  return seqs_[static_cast<std::size_t>(s)];
}

LATENTAUDIT_INLINE void reference_cpu_engine::rotate_head_cs(float* x, const double* c,
                                                             const double* s) const noexcept {
  const auto& rope = info_.fingerprint.rope;
  if (rope.pairing == rope_pairing::none) return;
  const std::size_t half = freq_.size();
  for (std::size_t i = 0; i < half; ++i) {
    const std::size_t i0 = rope.pairing == rope_pairing::neox ? i : 2 * i;
    const std::size_t i1 = rope.pairing == rope_pairing::neox ? i + half : 2 * i + 1;
    const double x0 = x[i0], x1 = x[i1];
    x[i0] = static_cast<float>(x0 * c[i] - x1 * s[i]);
    x[i1] = static_cast<float>(x1 * c[i] + x0 * s[i]);
  }
}

LATENTAUDIT_INLINE reference_cpu_engine::matrix reference_cpu_engine::rms_norm(
    const matrix& x, const Eigen::VectorXf& w) const {
  matrix y(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const float ms = x.row(r).squaredNorm() / static_cast<float>(x.cols());
    const float inv = 1.0f / std::sqrt(ms + cfg_.rms_norm_eps);
    y.row(r) = (x.row(r) * inv).cwiseProduct(w.transpose());
  }
  return y;
}

namespace detail {

// y (+)= x · wᵀ in blocks of 256 output features on up to `threads` threads (when the product
// reaches 2^20 multiply-adds); each block computed alike whatever the thread count: the packed
// kernel's panels where `pw` is non-empty, else Eigen's product.
template <bool Add, class Matrix>
void blocked_product(Matrix& y, const Matrix& x, const Matrix& w, const packed_weight& pw, unsigned threads) {
  constexpr Eigen::Index block = 256;
  const Eigen::Index out = pw.empty() ? w.rows() : static_cast<Eigen::Index>(pw.out);
  const auto blocks = static_cast<std::size_t>((out + block - 1) / block);
  const double work =
      static_cast<double>(x.rows()) * static_cast<double>(x.cols()) * static_cast<double>(out);
  parallel_chunks(blocks, 1, work >= 1048576.0 ? threads : 1u, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b) {
      const Eigen::Index c0 = static_cast<Eigen::Index>(b) * block, c = std::min(block, out - c0);
      if (!pw.empty()) {  // y receives the product (project_add adds it afterwards)
        packed_gemm(x.data(), x.cols(), pw, y.data(), y.cols(), x.rows(), c0 / 16, (c0 + c + 15) / 16);
      } else if constexpr (Add) {  // no noalias: Eigen's own y += x·wᵀ, bit for bit the unblocked one
        y.middleCols(c0, c) += x * w.middleRows(c0, c).transpose();
      } else {
        y.middleCols(c0, c).noalias() = x * w.middleRows(c0, c).transpose();
      }
    }
  });
}

}  // namespace detail

LATENTAUDIT_INLINE reference_cpu_engine::matrix reference_cpu_engine::project(
    const matrix& x, const matrix& w, const detail::packed_weight& pw) const {
  matrix y(x.rows(), pw.empty() ? w.rows() : static_cast<Eigen::Index>(pw.out));
  detail::blocked_product<false>(y, x, w, pw, threads_);
  return y;
}

LATENTAUDIT_INLINE void reference_cpu_engine::project_add(matrix& y, const matrix& x, const matrix& w,
                                                          const detail::packed_weight& pw) const {
  if (pw.empty()) {
    detail::blocked_product<true>(y, x, w, pw, threads_);
  } else {
    y += project(x, w, pw);
  }
}

LATENTAUDIT_INLINE forward_output reference_cpu_engine::forward(seq_id s, std::span<const token_id> tokens,
                                                                position_t first, const forward_options& o,
                                                                std::span<const layer_index> capture_layers,
                                                                attention_capture* cap) {
  constexpr std::string_view fn = "prefill";
  auto& q = seq(fn, s);
  if (tokens.empty()) detail::throw_invalid(fn, "tokens", "must not be empty");
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= cfg_.vocab_size)
      detail::throw_invalid(fn, "tokens",
                            "holds id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                                ", outside [0, " + std::to_string(cfg_.vocab_size) + ")");
  const auto n = static_cast<std::int64_t>(tokens.size());
  if (first < 0 || std::int64_t{first} + n > cfg_.max_context)
    detail::throw_invalid(fn, "first_position",
                          "puts positions outside [0, " + std::to_string(cfg_.max_context) +
                              "): " + std::to_string(first) + " + " + std::to_string(n) + " tokens");
  const std::size_t H = static_cast<std::size_t>(cfg_.n_heads),
                    Hkv = static_cast<std::size_t>(cfg_.n_kv_heads),
                    hd = static_cast<std::size_t>(cfg_.head_dim);
  const std::size_t group = H / Hkv, row = row_elems();
  const std::size_t old_T = q.positions.size(), T = old_T + static_cast<std::size_t>(n);
  matrix x(n, cfg_.hidden_size);
  for (std::int64_t i = 0; i < n; ++i) x.row(i) = embed_.row(tokens[static_cast<std::size_t>(i)]);
  for (std::int64_t i = 0; i < n; ++i) q.positions.push_back(first + static_cast<position_t>(i));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  if (cap != nullptr) {
    cap->queries = n;
    cap->keys = static_cast<std::int64_t>(T);
    cap->weights.assign(capture_layers.size() * H * static_cast<std::size_t>(n) * T, 0.0f);
  }
  // cos and sin of every new position's angles, once per forward (the same doubles rotate_head
  // computes per head and layer, so the rotation is bit-identical)
  const std::size_t half = freq_.size();
  std::vector<double> rope_cos(static_cast<std::size_t>(n) * half), rope_sin(rope_cos.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::size_t f = 0; f < half; ++f) {
      const double a = static_cast<double>(first + i) * freq_[f];
      rope_cos[static_cast<std::size_t>(i) * half + f] = std::cos(a);
      rope_sin[static_cast<std::size_t>(i) * half + f] = std::sin(a);
    }
  // attention threads only when the work outweighs starting them (results do not depend on it)
  const unsigned att_threads =
      static_cast<std::size_t>(n) * T * H * hd >= (std::size_t{1} << 18) ? threads_ : 1u;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const auto& w = layers_[l];
    const matrix h = rms_norm(x, w.in_norm);
    matrix qm = project(h, w.q, w.pq);
    const matrix km = project(h, w.k, w.pk), vm = project(h, w.v, w.pv);
    // RoPE on the new queries and keys, then append K and V to the cache
    q.k[l].resize(T * row);
    q.v[l].resize(T * row);
    q.visible[l].resize(T, 1);
    for (std::int64_t i = 0; i < n; ++i) {
      const bool rotate = first + i != 0;  // rotate_head leaves position 0 untouched
      const double* c = rope_cos.data() + static_cast<std::size_t>(i) * half;
      const double* sn = rope_sin.data() + static_cast<std::size_t>(i) * half;
      if (rotate)
        for (std::size_t hh = 0; hh < H; ++hh) rotate_head_cs(qm.row(i).data() + hh * hd, c, sn);
      float* krow = q.k[l].data() + (old_T + static_cast<std::size_t>(i)) * row;
      std::copy_n(km.row(i).data(), row, krow);
      if (rotate)
        for (std::size_t g = 0; g < Hkv; ++g) rotate_head_cs(krow + g * hd, c, sn);
      std::copy_n(vm.row(i).data(), row, q.v[l].data() + (old_T + static_cast<std::size_t>(i)) * row);
    }
    const auto cap_it = std::find(capture_layers.begin(), capture_layers.end(), static_cast<layer_index>(l));
    const std::ptrdiff_t cap_index = cap_it == capture_layers.end() ? -1 : cap_it - capture_layers.begin();
    matrix att(n, static_cast<Eigen::Index>(H * hd));
    parallel_chunks(H, 1, att_threads, [&](std::size_t h0, std::size_t h1) {
      std::vector<float> p(T);
      for (std::size_t hh = h0; hh < h1; ++hh) {
        const std::size_t g = hh / group;
        for (std::int64_t i = 0; i < n; ++i) {
          const float* qv = qm.row(i).data() + hh * hd;
          const std::size_t upto = old_T + static_cast<std::size_t>(i) + 1;  // causal in cache order
          float mx = -std::numeric_limits<float>::infinity();
          for (std::size_t j = 0; j < upto; ++j) {
            if (!q.visible[l][j]) {
              p[j] = -std::numeric_limits<float>::infinity();
              continue;
            }
            const float* kv = q.k[l].data() + j * row + g * hd;
            float dot = 0;
            for (std::size_t d = 0; d < hd; ++d) dot += qv[d] * kv[d];
            p[j] = dot * scale;
            mx = std::max(mx, p[j]);
          }
          double sum = 0;
          for (std::size_t j = 0; j < upto; ++j) {
            p[j] = q.visible[l][j] ? std::exp(p[j] - mx) : 0.0f;
            sum += p[j];
          }
          float* out = att.row(i).data() + hh * hd;
          std::fill_n(out, hd, 0.0f);
          for (std::size_t j = 0; j < upto; ++j) {
            const float pj = static_cast<float>(p[j] / sum);
            if (pj == 0.0f) continue;
            const float* vv = q.v[l].data() + j * row + g * hd;
            for (std::size_t d = 0; d < hd; ++d) out[d] += pj * vv[d];
            if (cap_index >= 0)
              cap->weights[((static_cast<std::size_t>(cap_index) * H + hh) * static_cast<std::size_t>(n) +
                            static_cast<std::size_t>(i)) *
                               T +
                           j] = pj;
          }
        }
      }
    });
    project_add(x, att, w.o, w.po);
    const matrix h2 = rms_norm(x, w.post_norm);
    matrix gate = project(h2, w.gate, w.pgate);
    const matrix up = project(h2, w.up, w.pup);
    gate = gate.unaryExpr([](float v) { return v / (1.0f + std::exp(-v)); }).cwiseProduct(up);
    project_add(x, gate, w.down, w.pdown);
  }
  const matrix xn = rms_norm(o.all_logits ? x : matrix(x.bottomRows(1)), norm_);
  const matrix& head = cfg_.tie_word_embeddings ? embed_ : lm_head_;
  const matrix logits = project(xn, head, head_packed_);
  forward_output out;
  out.rows = logits.rows();
  out.logits.assign(logits.data(), logits.data() + logits.size());
  if (o.want_hidden) {
    const auto last = xn.row(xn.rows() - 1);
    out.hidden.assign(last.data(), last.data() + last.size());
  }
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_IMPL_REFERENCE_CPU_INL_HPP
