// SPDX-License-Identifier: MIT
// Test support for the llama.cpp tests (built only where the engine is, tests/engine/llama_cpp_*):
// the organisms exported to GGUF once per process, a model and context opened with llama.h directly
// (settings named: flash attention, K/V cache type, sequences), decoding a token list and reading
// every position's logits, and random organism documents.
#ifndef LATENTAUDIT_TESTS_SUPPORT_LLAMA_CPP_ENGINE_HPP
#define LATENTAUDIT_TESTS_SUPPORT_LLAMA_CPP_ENGINE_HPP

#include <unistd.h>

#include <llama-cpp.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <latentaudit/core/rng.hpp>
#include <latentaudit/engine/gguf_export.hpp>
#include <latentaudit/engine/llama_cpp_runtime.hpp>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace latentaudit::test {

/// The GGUF of models/<name> exported with `type` weights into a scratch directory (removed at
/// exit; other test files may go there too), once per process.
inline std::filesystem::path organism_gguf(const std::string& name, dtype type = dtype::f32) {
  static std::mutex m;
  static std::map<std::string, std::filesystem::path> done;
  std::lock_guard lock(m);
  const std::string key = name + "/" + std::string(dtype_name(type));
  if (auto it = done.find(key); it != done.end()) return it->second;
  // one scratch directory per process, removed at exit
  static const struct scratch {
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("latentaudit_llama_" + std::to_string(::getpid()));
    scratch() { std::filesystem::create_directories(dir); }
    ~scratch() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } s;
  const auto& dir = s.dir;
  const auto out = dir / (name + "-" + std::string(dtype_name(type)) + ".gguf");
  (void)export_llama_gguf(std::filesystem::path(LATENTAUDIT_SOURCE_DIR) / "models" / name, out,
                          {.type = type});
  done[key] = out;
  return out;
}

/// Loads a GGUF on the CPU (llama_cpp_init first).
inline llama_model_ptr load_llama_model(const std::filesystem::path& gguf) {
  (void)llama_cpp_init();
  auto p = llama_model_default_params();
  p.n_gpu_layers = 0;
  llama_model_ptr model(llama_model_load_from_file(gguf.c_str(), p));
  if (!model) throw std::runtime_error("llama.cpp could not load " + gguf.string());
  return model;
}

/// Context settings. The defaults are the exact ones: flash attention off, f32 K/V cache.
struct llama_context_settings {
  bool flash_attn = false;
  ggml_type kv_type = GGML_TYPE_F32;
  std::uint32_t n_ctx = 128;
  std::uint32_t n_seq = 2;
  int threads = 1;
};

/// A context over `model` with `s`.
inline llama_context_ptr make_llama_context(llama_model* model, const llama_context_settings& s = {}) {
  auto p = llama_context_default_params();
  p.n_ctx = s.n_ctx;
  p.n_batch = s.n_ctx;
  p.n_ubatch = s.n_ctx;
  p.n_seq_max = s.n_seq;
  p.n_threads = s.threads;
  p.n_threads_batch = s.threads;
  p.flash_attn_type = s.flash_attn ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  p.type_k = s.kv_type;
  p.type_v = s.kv_type;
  p.no_perf = true;
  llama_context_ptr ctx(llama_init_from_model(model, p));
  if (!ctx) throw std::runtime_error("llama.cpp could not create a context");
  return ctx;
}

/// Decodes `tokens` at positions first, first+1, ... in sequence `seq` and returns every
/// position's logits (rows × vocab, row-major).
inline std::vector<float> llama_decode_all(llama_context* ctx, llama_seq_id seq,
                                           const std::vector<std::int32_t>& tokens, llama_pos first) {
  const auto n = static_cast<std::int32_t>(tokens.size());
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (std::int32_t i = 0; i < n; ++i) {
    batch.token[i] = tokens[static_cast<std::size_t>(i)];
    batch.pos[i] = first + i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = seq;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
  const int rc = llama_decode(ctx, batch);
  llama_batch_free(batch);
  if (rc != 0) throw std::runtime_error("llama_decode returned " + std::to_string(rc));
  const auto vocab =
      static_cast<std::size_t>(llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx))));
  std::vector<float> out(static_cast<std::size_t>(n) * vocab);
  for (std::int32_t i = 0; i < n; ++i) {
    const float* l = llama_get_logits_ith(ctx, i);
    std::copy(l, l + vocab, out.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(i) * vocab));
  }
  return out;
}

/// An organism document `BOS k1 v1 ... kN vN SEP q1 a1 ... qM aM` (models/organism-a/README.md:
/// BOS 0, SEP 1, keys 4..35, values 36..67), N pairs and M queries, from stream `seed`.
inline std::vector<std::int32_t> organism_document(std::uint64_t seed, int pairs = 12, int queries = 4) {
  auto g = make_stream({.seed = seed});
  std::vector<std::int32_t> keys(32);
  for (int i = 0; i < 32; ++i) keys[static_cast<std::size_t>(i)] = 4 + i;
  for (int i = 31; i > 0; --i)
    std::swap(keys[static_cast<std::size_t>(i)], keys[uniform_index(g, static_cast<std::uint32_t>(i + 1))]);
  std::vector<std::int32_t> values(static_cast<std::size_t>(pairs));
  for (auto& v : values) v = 36 + static_cast<std::int32_t>(uniform_index(g, 32u));
  std::vector<std::int32_t> doc{0};
  for (int i = 0; i < pairs; ++i) {
    doc.push_back(keys[static_cast<std::size_t>(i)]);
    doc.push_back(values[static_cast<std::size_t>(i)]);
  }
  doc.push_back(1);
  for (int q = 0; q < queries; ++q) {
    const auto i = uniform_index(g, static_cast<std::uint32_t>(pairs));
    doc.push_back(keys[i]);
    doc.push_back(values[i]);
  }
  return doc;
}

/// The largest |a[i] - b[i]| of two logit vectors (1e30 when their sizes differ).
inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e30;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

}  // namespace latentaudit::test

#endif
