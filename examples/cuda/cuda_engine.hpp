// SPDX-License-Identifier: MIT
// latentaudit CUDA example: a reference CUDA engine for the Llama-architecture models of
// latentaudit::reference_cpu_engine (HF LlamaForCausalLM: RMSNorm, NEOX RoPE with explicit
// positions, grouped-query attention, SwiGLU), in f32 with cuBLAS projections, plus the transfer
// policy's hot paths on device-resident blocks (token/layer gather, seeded noise, int8/int4
// round trip, RoPE re-rotation).
//
// The device cache of a sequence is one buffer [layers][K|V][capacity][kv_heads][head_dim] (f32)
// with host mirrors of the positions and of the per-layer visibility (imported tokens of a layer
// without relayed KV are invisible there); the device keeps a copy of the visibility for the
// attention kernel. Semantics follow engine/reference_cpu.hpp operation by operation, including
// the argument checks, the fingerprint check and the position-consistency gate (run on the host
// over the block's positions), and the weights hash, so caches move between the two engines.
//
// Host code only: the kernels are in cuda_kernels.cu (the one nvcc translation unit).
#ifndef LATENTAUDIT_EXAMPLES_CUDA_ENGINE_HPP
#define LATENTAUDIT_EXAMPLES_CUDA_ENGINE_HPP

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <latentaudit/core/hash.hpp>
#include <latentaudit/core/rng.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/engine/safetensors.hpp>
#include <latentaudit/kv/noise.hpp>
#include <latentaudit/kv/quantize.hpp>
#include <latentaudit/kv/rope.hpp>

#include "cuda_kernels.hpp"

namespace latentaudit {

namespace cuda_detail {

/// @brief Throws engine_error naming the CUDA call when e is not cudaSuccess.
inline void check_cuda(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return;
  std::string m("cuda_engine: ");
  m.append(what).append(" failed: ").append(cudaGetErrorString(e));
  LATENTAUDIT_THROW(engine_error(m));
}

/// @brief Throws engine_error naming the cuBLAS call when s is not CUBLAS_STATUS_SUCCESS.
inline void check_cublas(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::string m("cuda_engine: ");
  m.append(what).append(" failed with cuBLAS status ").append(std::to_string(static_cast<int>(s)));
  LATENTAUDIT_THROW(engine_error(m));
}

/// @brief Frees device memory.
struct device_free {
  void operator()(void* p) const noexcept { (void)cudaFree(p); }
};

/// @brief An owning device allocation (grow-only when used as scratch).
class device_buffer {
 public:
  device_buffer() = default;
  /// @brief Allocates `bytes` bytes (uninitialised).
  explicit device_buffer(std::size_t bytes) { resize_discard(bytes); }
  /// @brief Takes over o's allocation (o is left empty).
  device_buffer(device_buffer&& o) noexcept : p_(std::move(o.p_)), bytes_(std::exchange(o.bytes_, 0)) {}
  /// @brief Takes over o's allocation (o is left empty).
  device_buffer& operator=(device_buffer&& o) noexcept {
    p_ = std::move(o.p_);
    bytes_ = std::exchange(o.bytes_, 0);
    return *this;
  }
  /// @brief The allocation as T*.
  template <class T = void>
  [[nodiscard]] T* get() const noexcept {
    return static_cast<T*>(p_.get());
  }
  /// @brief Size in bytes.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// @brief Reallocates to exactly `bytes` bytes, dropping the contents.
  void resize_discard(std::size_t bytes) {
    p_.reset();
    bytes_ = 0;
    if (bytes == 0) return;
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
    p_.reset(p);
    bytes_ = bytes;
  }
  /// @brief Grows (never shrinks) to at least `bytes`, dropping the contents when it grows.
  template <class T = void>
  T* at_least(std::size_t bytes) {
    if (bytes > bytes_) resize_discard(bytes);
    return get<T>();
  }
  /// @brief Copies `bytes` bytes from host memory to offset `offset`.
  void upload(const void* src, std::size_t bytes, std::size_t offset = 0) {
    if (bytes != 0)
      check_cuda(cudaMemcpy(get<char>() + offset, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }

 private:
  std::unique_ptr<void, device_free> p_;
  std::size_t bytes_ = 0;
};

/// @brief A new device buffer holding `v`.
template <class T>
[[nodiscard]] device_buffer to_device(std::span<const T> v) {
  device_buffer b(v.size_bytes());
  b.upload(v.data(), v.size_bytes());
  return b;
}

/// @brief Copies `bytes` bytes from the device to host memory.
inline void download(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0) check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}

/// @brief Raises the last kernel launch error, if any.
inline void check_launch(std::string_view what) { check_cuda(cudaGetLastError(), what); }

}  // namespace cuda_detail

/// @brief Whether a CUDA device can be used (cudaGetDeviceCount succeeds and reports one or more).
[[nodiscard]] inline bool cuda_device_available() noexcept {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/// @brief A block of the canonical layout (per layer: K [tokens][kv_heads][head_dim], then V)
/// held in device memory, in f32 or bf16, with its metadata on the host.
struct device_kv_block {
  model_fingerprint fingerprint;         ///< the model
  std::vector<layer_index> layers;       ///< model layers held, increasing
  std::vector<position_t> positions;     ///< per token
  std::vector<std::uint8_t> token_mask;  ///< layers × tokens (1 = present); empty = all present
  std::int64_t n_tokens = 0;             ///< tokens
  dtype type = dtype::f32;               ///< f32 or bf16
  cuda_detail::device_buffer data;       ///< payload

  /// @brief Elements of one row (kv_heads · head_dim).
  [[nodiscard]] std::size_t row_elems() const noexcept {
    return static_cast<std::size_t>(fingerprint.n_kv_heads) *
           static_cast<std::size_t>(fingerprint.head_dim_k);
  }
  /// @brief Bytes of the payload.
  [[nodiscard]] std::size_t payload_bytes() const noexcept {
    return layers.size() * 2 * static_cast<std::size_t>(n_tokens) * row_elems() * dtype_size(type);
  }
  /// @brief Whether token t of the block's layer i is present.
  [[nodiscard]] bool token_present(std::size_t i, std::int64_t t) const noexcept {
    return token_mask.empty() ||
           token_mask[i * static_cast<std::size_t>(n_tokens) + static_cast<std::size_t>(t)] != 0;
  }

  /// @brief Uploads a host block (f16 is converted to f32 first).
  /// @throws invalid_argument if head_dim_k != head_dim_v.
  [[nodiscard]] static device_kv_block from_host(const kv_block& b) {
    if (b.head_dim_k() != b.head_dim_v())
      detail::throw_invalid("device_kv_block::from_host", "block", "must have head_dim_k == head_dim_v");
    if (b.type() == dtype::f16) return from_host(b.converted(dtype::f32));
    device_kv_block d;
    d.fingerprint = b.fingerprint();
    d.layers.assign(b.layers().begin(), b.layers().end());
    d.positions.assign(b.positions().begin(), b.positions().end());
    d.token_mask.assign(b.token_mask().begin(), b.token_mask().end());
    d.n_tokens = b.n_tokens();
    d.type = b.type();
    d.data.resize_discard(b.payload_bytes());
    d.data.upload(b.payload().data(), b.payload_bytes());
    return d;
  }

  /// @brief Downloads into a host block.
  [[nodiscard]] kv_block to_host() const {
    kv_block b(fingerprint, layers, n_tokens, type);
    cuda_detail::download(b.payload_mut().data(), data.get(), payload_bytes());
    std::copy(positions.begin(), positions.end(), b.positions().begin());
    if (!token_mask.empty()) b.set_token_mask(token_mask);
    return b;
  }

  /// @brief A copy in element type `t` (f32 or bf16), converted on the device.
  /// @throws invalid_argument for another type.
  [[nodiscard]] device_kv_block converted(dtype t) const {
    if (t != dtype::f32 && t != dtype::bf16)
      detail::throw_invalid("device_kv_block::converted", "type", "must be f32 or bf16");
    device_kv_block d;
    d.fingerprint = fingerprint;
    d.layers = layers;
    d.positions = positions;
    d.token_mask = token_mask;
    d.n_tokens = n_tokens;
    d.type = t;
    d.data.resize_discard(d.payload_bytes());
    const auto n =
        static_cast<std::int64_t>(layers.size() * 2 * static_cast<std::size_t>(n_tokens) * row_elems());
    if (t == type) {
      if (n != 0)
        cuda_detail::check_cuda(
            cudaMemcpy(d.data.get(), data.get(), payload_bytes(), cudaMemcpyDeviceToDevice),
            "cudaMemcpy D2D");
    } else if (t == dtype::bf16) {
      cuda_kernels::f32_to_bf16(data.get<float>(), d.data.get<std::uint16_t>(), n);
    } else {
      cuda_kernels::bf16_to_f32(data.get<std::uint16_t>(), d.data.get<float>(), n);
    }
    cuda_detail::check_launch("device_kv_block::converted");
    return d;
  }
};

namespace cuda_detail {

/// @brief The unit/row tables of the kernels for units (block layer i, part) on the host.
struct unit_tables {
  std::vector<std::size_t> layer_i;  // block layer of each unit
  std::vector<std::uint32_t> part;   // 0 = K, 1 = V
  std::vector<std::int32_t> unit_index, row_offset{0}, rows;
  int max_rows = 0;
  device_buffer d_unit_index, d_row_offset, d_rows;

  void add(const device_kv_block& b, std::size_t i, std::uint32_t p, std::int64_t t0, std::int64_t t1) {
    layer_i.push_back(i);
    part.push_back(p);
    unit_index.push_back(static_cast<std::int32_t>(2 * i + p));
    int n = 0;
    for (std::int64_t t = t0; t < t1; ++t)
      if (b.token_present(i, t)) {
        rows.push_back(static_cast<std::int32_t>(t));
        ++n;
      }
    row_offset.push_back(static_cast<std::int32_t>(rows.size()));
    max_rows = std::max(max_rows, n);
  }
  [[nodiscard]] std::int32_t row_count(std::size_t u) const noexcept {
    return row_offset[u + 1] - row_offset[u];
  }
  cuda_kernels::unit_rows upload(device_kv_block& b) {
    d_unit_index = to_device(std::span<const std::int32_t>(unit_index));
    d_row_offset = to_device(std::span<const std::int32_t>(row_offset));
    d_rows = to_device(std::span<const std::int32_t>(rows));
    cuda_kernels::unit_rows ur;
    ur.base = b.data.get();
    ur.bf16 = b.type == dtype::bf16;
    ur.units = static_cast<int>(part.size());
    ur.unit_stride = b.n_tokens * static_cast<std::int64_t>(b.row_elems());
    ur.unit_index = d_unit_index.get<std::int32_t>();
    ur.channels = static_cast<int>(b.row_elems());
    ur.row_offset = d_row_offset.get<std::int32_t>();
    ur.rows = d_rows.get<std::int32_t>();
    ur.max_rows = max_rows;
    return ur;
  }
};

}  // namespace cuda_detail

/// @brief Token/layer gather on the device: the block's `layers` (model layer ids it holds, in
/// increasing order) and tokens `tokens` (indices into the block, increasing), as
/// apply_selection(block, uniform_selection(layers, tokens)) does on the host.
/// @throws invalid_argument on a layer the block lacks or a token index out of range.
[[nodiscard]] inline device_kv_block device_gather(const device_kv_block& b,
                                                   std::span<const layer_index> layers,
                                                   std::span<const std::int64_t> tokens) {
  constexpr std::string_view fn = "device_gather";
  std::vector<std::int32_t> unit_map, rows;
  device_kv_block d;
  d.fingerprint = b.fingerprint;
  d.type = b.type;
  d.n_tokens = static_cast<std::int64_t>(tokens.size());
  std::vector<std::size_t> src_i;
  for (std::size_t j = 0; j < layers.size(); ++j) {
    const auto it = std::find(b.layers.begin(), b.layers.end(), layers[j]);
    if (it == b.layers.end())
      detail::throw_invalid(fn, "layers",
                            "holds layer " + std::to_string(layers[j]) + ", which the block lacks");
    if (j > 0 && layers[j] <= layers[j - 1])
      detail::throw_invalid(fn, "layers", "must be strictly increasing");
    const auto i = static_cast<std::size_t>(it - b.layers.begin());
    src_i.push_back(i);
    unit_map.push_back(static_cast<std::int32_t>(2 * i));
    unit_map.push_back(static_cast<std::int32_t>(2 * i + 1));
    d.layers.push_back(layers[j]);
  }
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    detail::check_in_range(fn, "tokens", tokens[k], 0, b.n_tokens - 1);
    if (k > 0 && tokens[k] <= tokens[k - 1])
      detail::throw_invalid(fn, "tokens", "must be strictly increasing");
    rows.push_back(static_cast<std::int32_t>(tokens[k]));
    d.positions.push_back(b.positions[static_cast<std::size_t>(tokens[k])]);
  }
  if (!b.token_mask.empty()) {
    bool ragged = false;
    d.token_mask.resize(src_i.size() * tokens.size());
    for (std::size_t j = 0; j < src_i.size(); ++j)
      for (std::size_t k = 0; k < tokens.size(); ++k) {
        d.token_mask[j * tokens.size() + k] = b.token_present(src_i[j], tokens[k]) ? 1 : 0;
        ragged = ragged || d.token_mask[j * tokens.size() + k] == 0;
      }
    if (!ragged) d.token_mask.clear();
  }
  d.data.resize_discard(d.payload_bytes());
  const auto row_bytes = static_cast<std::int64_t>(b.row_elems() * dtype_size(b.type));
  auto d_map = cuda_detail::to_device(std::span<const std::int32_t>(unit_map));
  auto d_rows = cuda_detail::to_device(std::span<const std::int32_t>(rows));
  cuda_kernels::gather_rows(d.data.get(), b.data.get(), d_rows.get<std::int32_t>(),
                            static_cast<int>(rows.size()), row_bytes, static_cast<int>(unit_map.size()),
                            d_map.get<std::int32_t>(), b.n_tokens * row_bytes, d.n_tokens * row_bytes);
  cuda_detail::check_launch(fn);
  return d;
}

/// @brief latentaudit::add_noise on the device: the same streams, the same σ (computed on the
/// host from per-channel sums the device accumulates in the CPU's order), the same binary32
/// arithmetic, so an f32 or bf16 block comes out bit-identical to the CPU's. The record's
/// realized SNR sums the added power in another order (its last bits may differ).
/// @throws invalid_argument as add_noise.
inline noise_record device_add_noise(device_kv_block& b, const noise_spec& spec) {
  constexpr std::string_view fn = "device_add_noise";
  detail::check_noise_spec(fn, spec);
  noise_record rec;
  rec.sigma_requested = spec.sigma;
  const std::int64_t t0 = std::max<std::int64_t>(0, spec.tokens.first),
                     t1 = std::min(b.n_tokens, spec.tokens.last);
  cuda_detail::unit_tables ut;
  for (std::size_t i = 0; i < b.layers.size(); ++i) {
    if (!spec.layers.contains(b.layers[i])) continue;
    if (spec.part != kv_part::values) ut.add(b, i, 0, t0, t1);
    if (spec.part != kv_part::keys) ut.add(b, i, 1, t0, t1);
  }
  if (ut.part.empty()) return rec;
  const auto ur = ut.upload(b);
  const std::size_t U = ut.part.size(), C = b.row_elems(),
                    H = static_cast<std::size_t>(b.fingerprint.n_kv_heads), D = C / H;
  cuda_detail::device_buffer d_ss(U * C * sizeof(double));
  cuda_detail::device_buffer d_partial(
      U * static_cast<std::size_t>(std::max(1, cuda_kernels::channel_sums_chunks(ur))) * C * sizeof(float));
  cuda_kernels::channel_sums(ur, d_ss.get<double>(), d_partial.get<float>());
  cuda_detail::check_launch(fn);
  std::vector<double> ss_all(U * C);
  cuda_detail::download(ss_all.data(), d_ss.get(), ss_all.size() * sizeof(double));
  std::vector<float> sigf(U * C, 0.0f);
  double signal = 0, sigma2 = 0;
  for (std::size_t u = 0; u < U; ++u) {
    const std::int64_t rows = ut.row_count(u);
    if (rows == 0) continue;
    const double* ss = ss_all.data() + u * C;
    double layer_ss = 0;
    for (std::size_t c = 0; c < C; ++c) layer_ss += ss[c];
    const std::vector<double> sig = detail::channel_sigmas(spec, std::span<const double>(ss, C), rows, H, D);
    double s2 = 0;
    for (std::size_t c = 0; c < C; ++c) {
      s2 += sig[c] * sig[c];
      sigf[u * C + c] = static_cast<float>(sig[c]);
    }
    sigma2 += s2 * static_cast<double>(rows);
    signal += layer_ss;
    rec.elements += static_cast<std::uint64_t>(rows) * C;
  }
  std::vector<std::uint32_t> layer_ids(U);
  for (std::size_t u = 0; u < U; ++u) layer_ids[u] = static_cast<std::uint32_t>(b.layers[ut.layer_i[u]]);
  const auto g = make_stream({.seed = spec.seed, .item = spec.item});
  const auto key = g.key();
  auto d_sig = cuda_detail::to_device(std::span<const float>(sigf));
  auto d_part = cuda_detail::to_device(std::span<const std::uint32_t>(ut.part));
  auto d_layer = cuda_detail::to_device(std::span<const std::uint32_t>(layer_ids));
  cuda_detail::device_buffer d_np(U * sizeof(double));
  cuda_detail::check_cuda(cudaMemset(d_np.get(), 0, U * sizeof(double)), "cudaMemset");
  cuda_kernels::add_noise(ur, d_sig.get<float>(), key[0], key[1], d_part.get<std::uint32_t>(),
                          d_layer.get<std::uint32_t>(), d_np.get<double>());
  cuda_detail::check_launch(fn);
  std::vector<double> np(U);
  cuda_detail::download(np.data(), d_np.get(), U * sizeof(double));
  double noise_power = 0;
  for (double v : np) noise_power += v;
  if (rec.elements > 0) {
    rec.sigma_applied_rms = std::sqrt(sigma2 / static_cast<double>(rec.elements));
    rec.signal_rms = std::sqrt(signal / static_cast<double>(rec.elements));
    rec.realized_snr_db =
        noise_power > 0 ? 10.0 * std::log10(signal / noise_power) : std::numeric_limits<double>::infinity();
  }
  return rec;
}

/// @brief latentaudit::quantize_roundtrip for int8 and int4 on the device (KIVI groups of the
/// present rows, codes and values in binary64 exactly as the CPU encoder/decoder): the block
/// comes out bit-identical to the CPU's. No record (the CPU's error statistics are not computed).
/// @throws invalid_argument for fp8 schemes or a bad group size.
inline void device_quantize_roundtrip(device_kv_block& b, const quantize_spec& spec) {
  constexpr std::string_view fn = "device_quantize_roundtrip";
  detail::check_quantize_spec(fn, spec);
  if (!detail::is_integer_scheme(spec.scheme))
    detail::throw_invalid(fn, "spec.scheme", "must be int8 or int4 on the device");
  cuda_detail::unit_tables ut;
  std::vector<std::uint8_t> is_key;
  for (std::size_t i = 0; i < b.layers.size(); ++i)
    for (std::uint32_t p = 0; p < 2; ++p) {
      ut.add(b, i, p, 0, b.n_tokens);
      is_key.push_back(p == 0 ? 1 : 0);
    }
  if (ut.part.empty()) return;
  const auto ur = ut.upload(b);
  auto d_key = cuda_detail::to_device(std::span<const std::uint8_t>(is_key));
  cuda_kernels::quantize_roundtrip(ur, d_key.get<std::uint8_t>(), spec.keys_per_channel, spec.group_size,
                                   b.fingerprint.head_dim_k,
                                   spec.scheme == quant_scheme::int4 ? 15.0 : 255.0);
  cuda_detail::check_launch(fn);
  cuda_detail::check_cuda(cudaDeviceSynchronize(), fn);
}

/// @brief latentaudit::set_positions on the device for an f32 block: each token's keys rotated
/// by (new − old) position in binary64 as rotate_head, positions replaced.
/// @throws invalid_argument for a bf16 block, a size mismatch, or a negative position.
inline void device_set_positions(device_kv_block& b, std::span<const position_t> new_positions) {
  constexpr std::string_view fn = "device_set_positions";
  if (b.type != dtype::f32) detail::throw_invalid(fn, "block", "must be f32 (convert bf16 blocks first)");
  detail::check_same_size(fn, "new_positions", new_positions.size(), "block tokens",
                          static_cast<std::size_t>(b.n_tokens));
  const auto& rope = b.fingerprint.rope;
  for (auto p : new_positions)
    if (p < 0) detail::throw_invalid(fn, "new_positions", "must be >= 0, got " + std::to_string(p));
  if (rope.pairing != rope_pairing::neox) detail::throw_invalid(fn, "block", "must use NEOX RoPE");
  const auto freq = rope_frequencies(rope, b.fingerprint.head_dim_k);
  if (static_cast<std::int32_t>(2 * freq.size()) != b.fingerprint.head_dim_k)
    detail::throw_invalid(fn, "block", "must rotate every dimension");
  const std::size_t half = freq.size(), T = static_cast<std::size_t>(b.n_tokens);
  std::vector<double> cs(T * half), sn(T * half);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t f = 0; f < half; ++f) {
      const double a = static_cast<double>(std::int64_t{new_positions[t]} - b.positions[t]) * freq[f];
      cs[t * half + f] = std::cos(a);
      sn[t * half + f] = std::sin(a);
    }
  if (T > 0 && !b.layers.empty()) {
    auto d_cs = cuda_detail::to_device(std::span<const double>(cs));
    auto d_sn = cuda_detail::to_device(std::span<const double>(sn));
    const std::int64_t row = static_cast<std::int64_t>(b.row_elems());
    for (std::size_t i = 0; i < b.layers.size(); ++i)
      cuda_kernels::rope(b.data.get<float>() + static_cast<std::int64_t>(2 * i) * b.n_tokens * row, nullptr,
                         static_cast<int>(T), row, b.fingerprint.n_kv_heads, b.fingerprint.head_dim_k,
                         d_cs.get<double>(), d_sn.get<double>(), true);
    cuda_detail::check_launch(fn);
    cuda_detail::check_cuda(cudaDeviceSynchronize(), fn);
  }
  b.positions.assign(new_positions.begin(), new_positions.end());
}

/// @brief The reference CUDA engine (satisfies attention_capturing_engine).
class cuda_engine {
 public:
  /// @brief Loads `dir/config.json` and `dir/model.safetensors` and uploads the weights.
  /// @param weight_type f32, or bf16 to keep the projection and LM-head matrices in bf16 on the
  ///        device (half the memory; activations and sums stay binary32 — for a bf16 checkpoint
  ///        the same weights as the f32 path, for an f32 checkpoint rounded to bf16)
  /// @throws corrupt_data / invalid_argument as reference_cpu_engine::load (invalid_argument also
  ///         for another weight_type); engine_error on a CUDA failure.
  static cuda_engine load(const std::filesystem::path& dir, dtype weight_type = dtype::f32) {
    const auto cfg_path = dir / "config.json";
    std::ifstream in(cfg_path);
    if (!in)
      detail::throw_invalid("cuda_engine::load", "dir",
                            "has no readable config.json: '" + cfg_path.string() + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    const auto cfg = llama_config::from_json(parse_json(ss.str(), {.max_depth = 16, .max_bytes = 1 << 20}),
                                             cfg_path.string());
    const auto st = safetensors_file::open(dir / "model.safetensors");
    return cuda_engine(cfg, st, weight_type);
  }

  /// @brief An engine over an opened weights file (HF tensor names); the fingerprint's weights
  /// hash is computed as the CPU engine computes it (over the f32 values read, for either
  /// weight_type). See load for weight_type.
  cuda_engine(const llama_config& cfg, const safetensors_file& st, dtype weight_type = dtype::f32)
      : cfg_(cfg), weight_type_(weight_type) {
    if (weight_type != dtype::f32 && weight_type != dtype::bf16)
      detail::throw_invalid("cuda_engine", "weight_type", "must be f32 or bf16");
    cublasHandle_t h = nullptr;
    cuda_detail::check_cublas(cublasCreate(&h), "cublasCreate");
    handle_.reset(h);
    cuda_detail::check_cublas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");  // no TF32
    const std::int64_t d = cfg.hidden_size, V = cfg.vocab_size, I = cfg.intermediate_size;
    const std::int64_t q_out = std::int64_t{cfg.n_heads} * cfg.head_dim,
                       kv_out = std::int64_t{cfg.n_kv_heads} * cfg.head_dim;
    std::vector<std::string> expected;
    sha256 hash;
    auto tensor = [&](const std::string& name, std::int64_t rows, std::int64_t cols) {
      expected.push_back(name);
      std::vector<std::int64_t> shape{rows};
      if (cols > 0) shape.push_back(cols);
      auto v = st.read_f32(name, shape);
      hash.update(std::as_bytes(std::span(name.data(), name.size())));
      hash.update(std::as_bytes(std::span(v)));
      if (weight_type_ == dtype::bf16 && cols > 0 && name != "model.embed_tokens.weight") {
        std::vector<std::uint16_t> h(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) {
          const std::uint32_t b = std::bit_cast<std::uint32_t>(v[i]);
          h[i] = static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >>
                                            16);  // nearest even, as store_cache
        }
        return cuda_detail::to_device(std::span<const std::uint16_t>(h));
      }
      return cuda_detail::to_device(std::span<const float>(v));
    };
    embed_ = tensor("model.embed_tokens.weight", V, d);
    for (std::int32_t l = 0; l < cfg.n_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      layer_weights w;
      w.in_norm = tensor(p + "input_layernorm.weight", d, 0);
      w.q = tensor(p + "self_attn.q_proj.weight", q_out, d);
      w.k = tensor(p + "self_attn.k_proj.weight", kv_out, d);
      w.v = tensor(p + "self_attn.v_proj.weight", kv_out, d);
      w.o = tensor(p + "self_attn.o_proj.weight", d, q_out);
      w.post_norm = tensor(p + "post_attention_layernorm.weight", d, 0);
      w.gate = tensor(p + "mlp.gate_proj.weight", I, d);
      w.up = tensor(p + "mlp.up_proj.weight", I, d);
      w.down = tensor(p + "mlp.down_proj.weight", d, I);
      layers_.push_back(std::move(w));
    }
    norm_ = tensor("model.norm.weight", d, 0);
    if (!cfg.tie_word_embeddings) lm_head_ = tensor("lm_head.weight", V, d);
    for (const auto& t : st.tensors()) {
      if (std::find(expected.begin(), expected.end(), t.name) != expected.end()) continue;
      if (cfg.tie_word_embeddings && t.name == "lm_head.weight") continue;
      LATENTAUDIT_THROW(
          corrupt_data("cuda_engine: unexpected tensor '" + t.name + "' in '" + st.path().string() + "'"));
    }
    const auto digest = hash.finish();
    std::uint64_t wh = 0;
    for (int i = 0; i < 8; ++i)
      wh |= static_cast<std::uint64_t>(digest[static_cast<std::size_t>(i)]) << (8 * i);
    info_.name = "cuda";
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

  /// @brief Identity, fingerprint and capabilities.
  [[nodiscard]] const engine_info& info() const noexcept { return info_; }
  /// @brief The model's configuration.
  [[nodiscard]] const llama_config& config() const noexcept { return cfg_; }
  /// @brief The device storage type of the weight matrices (f32 or bf16).
  [[nodiscard]] dtype weight_type() const noexcept { return weight_type_; }

  /// @brief Opens an empty sequence.
  [[nodiscard]] seq_id open_seq() {
    for (std::size_t i = 0; i < seqs_.size(); ++i)
      if (!seqs_[i].open) {
        seqs_[i] = sequence{};
        seqs_[i].open = true;
        return static_cast<seq_id>(i);
      }
    seqs_.emplace_back();
    seqs_.back().open = true;
    return static_cast<seq_id>(seqs_.size() - 1);
  }

  /// @brief Closes a sequence and frees its cache.
  /// @throws invalid_argument if s is not open.
  void close_seq(seq_id s) {
    seq("close_seq", s);
    seqs_[static_cast<std::size_t>(s)] = sequence{};
  }

  /// @brief Tokens in the cache of s.
  [[nodiscard]] std::int64_t n_tokens(seq_id s) const {
    return static_cast<std::int64_t>(seq("n_tokens", s).positions.size());
  }

  /// @brief One past the largest cached position of s (0 when empty).
  [[nodiscard]] position_t next_position(seq_id s) const {
    const auto& q = seq("next_position", s);
    return q.positions.empty() ? 0 : *std::max_element(q.positions.begin(), q.positions.end()) + 1;
  }

  /// @brief Appends tokens at positions first, first+1, ... and runs them.
  /// @throws invalid_argument as reference_cpu_engine::prefill; engine_error on a CUDA failure.
  forward_output prefill(seq_id s, std::span<const token_id> tokens, position_t first,
                         const forward_options& o = {}) {
    return forward(s, tokens, first, o, {}, nullptr);
  }

  /// @brief One decode step: the token at position p.
  forward_output decode(seq_id s, token_id token, position_t p, const forward_options& o = {}) {
    const token_id t[1] = {token};
    return forward(s, t, p, o, {}, nullptr);
  }

  /// @brief Prefill that also captures the attention weights of the new tokens in `layers`.
  /// @throws invalid_argument on a layer outside the model.
  attention_capture prefill_capture(seq_id s, std::span<const token_id> tokens, position_t first,
                                    std::span<const layer_index> layers, const forward_options& o = {}) {
    for (auto l : layers) detail::check_in_range("prefill_capture", "layers", l, 0, cfg_.n_layers - 1);
    attention_capture cap;
    cap.layers.assign(layers.begin(), layers.end());
    cap.heads = cfg_.n_heads;
    cap.output = forward(s, tokens, first, o, cap.layers, &cap);
    return cap;
  }

  /// @brief Cache rows `tokens` [first, last) (cache order) of layers `layer_range` as a host block.
  /// @throws invalid_argument on ranges outside the cache or the model.
  [[nodiscard]] kv_block export_kv(seq_id s, index_range tokens, index_range layer_range) const {
    const auto& q = seq("export_kv", s);
    check_export("export_kv", q, tokens, layer_range);
    std::vector<layer_index> ls;
    for (auto l = layer_range.first; l < layer_range.last; ++l) ls.push_back(static_cast<layer_index>(l));
    kv_block b(info_.fingerprint, ls, tokens.size(), dtype::f32);
    copy_out(q, tokens, layer_range, b.payload_mut().data(), cudaMemcpyDeviceToHost);
    for (std::int64_t t = 0; t < tokens.size(); ++t)
      b.positions()[static_cast<std::size_t>(t)] = q.positions[static_cast<std::size_t>(tokens.first + t)];
    auto mask = export_mask(q, tokens, layer_range);
    if (!mask.empty()) b.set_token_mask(std::move(mask));
    return b;
  }

  /// @brief export_kv without leaving the device: the rows as a device block in `type` (f32 or bf16).
  /// @throws invalid_argument as export_kv, or for another type.
  [[nodiscard]] device_kv_block export_kv_device(seq_id s, index_range tokens, index_range layer_range,
                                                 dtype type = dtype::f32) const {
    const auto& q = seq("export_kv_device", s);
    check_export("export_kv_device", q, tokens, layer_range);
    device_kv_block d;
    d.fingerprint = info_.fingerprint;
    for (auto l = layer_range.first; l < layer_range.last; ++l)
      d.layers.push_back(static_cast<layer_index>(l));
    d.n_tokens = tokens.size();
    for (std::int64_t t = 0; t < tokens.size(); ++t)
      d.positions.push_back(q.positions[static_cast<std::size_t>(tokens.first + t)]);
    d.token_mask = export_mask(q, tokens, layer_range);
    d.data.resize_discard(d.payload_bytes());
    copy_out(q, tokens, layer_range, d.data.get(), cudaMemcpyDeviceToDevice);
    return type == dtype::f32 ? std::move(d) : d.converted(type);
  }

  /// @brief Appends a relayed host block to the cache of s (see import_options).
  /// @throws incompatible_model on a fingerprint mismatch (unless forced); shape_mismatch if a
  ///         forced block's head shapes differ; corrupt_data if the positions fail the gate.
  void import_kv(seq_id s, const kv_block& block, const import_options& o = {}) {
    constexpr std::string_view fn = "import_kv";
    auto& q = seq(fn, s);
    check_import(fn, block.fingerprint(), block.layers(), o);
    kv_block b = block.type() == dtype::f32 ? block : block.converted(dtype::f32);
    if (o.force) {
      auto fp = b.fingerprint();
      fp.rope = info_.fingerprint.rope;
      b.set_fingerprint(fp);
    }
    check_positions(fn, b, {.context_length = cfg_.max_context, .prerope_reference = o.prerope_reference});
    append_block(q, b.layers(), b.n_tokens(), b.payload().data(), cudaMemcpyHostToDevice, o,
                 [&](std::size_t i, std::int64_t t) { return b.token_present(i, t); });
    q.positions.insert(q.positions.end(), b.positions().begin(), b.positions().end());
  }

  /// @brief import_kv from a device block: device-to-device copies; the gate runs on the host
  /// over the positions (a prerope_reference is checked against a host copy of the block).
  /// @throws as import_kv.
  /// Import places a block at the positions it carries (engine/capabilities.hpp import_options);
  /// `mode` and `first_position` renumber a device block on the device first, as apply_position_mode
  /// (kv/rope.hpp) does for a host block, so a device relay needs no host round trip to be rebased.
  void import_kv_device(seq_id s, const device_kv_block& block, const import_options& o = {},
                        position_mode mode = position_mode::preserve, position_t first_position = 0) {
    constexpr std::string_view fn = "import_kv_device";
    auto& q = seq(fn, s);
    check_import(fn, block.fingerprint, block.layers, o);
    const device_kv_block* src = &block;
    device_kv_block tmp;
    if (block.type != dtype::f32) {
      tmp = block.converted(dtype::f32);
      src = &tmp;
    }
    if (mode != position_mode::preserve) {
      const position_t base = mode == position_mode::rebase_contiguous ? first_position : next_position(s);
      if (base < 0)
        detail::throw_invalid("apply_position_mode",
                              mode == position_mode::rebase_contiguous ? "first_position" : "receiver_next",
                              "must be >= 0, got " + std::to_string(base));
      if (std::int64_t{base} + block.n_tokens > INT32_MAX)
        detail::throw_invalid("apply_position_mode", "block", "would overflow int32 positions");
      if (src == &block) {
        tmp = block.converted(dtype::f32);
        src = &tmp;
      }
      std::vector<position_t> p(static_cast<std::size_t>(block.n_tokens));
      for (std::size_t t = 0; t < p.size(); ++t)
        p[t] = static_cast<position_t>(base + static_cast<position_t>(t));
      if (o.force) tmp.fingerprint.rope = info_.fingerprint.rope;
      device_set_positions(tmp, p);
    }
    {
      kv_block meta(src->fingerprint, {}, src->n_tokens, dtype::f32);
      std::copy(src->positions.begin(), src->positions.end(), meta.positions().begin());
      if (o.prerope_reference != nullptr)
        check_positions(fn, src->to_host(),
                        {.context_length = cfg_.max_context, .prerope_reference = o.prerope_reference});
      else
        check_positions(fn, meta, {.context_length = cfg_.max_context});
    }
    append_block(q, src->layers, src->n_tokens, src->data.get<std::byte>(), cudaMemcpyDeviceToDevice, o,
                 [&](std::size_t i, std::int64_t t) { return src->token_present(i, t); });
    q.positions.insert(q.positions.end(), src->positions.begin(), src->positions.end());
  }

  /// @brief Moves tokens with positions in [p0, p1) by delta, re-rotating their keys on the device.
  /// @throws invalid_argument if p0 > p1 or a moved position leaves [0, max_context).
  void shift(seq_id s, position_t p0, position_t p1, position_t delta) {
    constexpr std::string_view fn = "shift";
    auto& q = seq(fn, s);
    if (p0 > p1) detail::throw_invalid(fn, "p1", "must be >= p0");
    for (auto p : q.positions)
      if (p >= p0 && p < p1 && (std::int64_t{p} + delta < 0 || std::int64_t{p} + delta >= cfg_.max_context))
        detail::throw_invalid(fn, "delta",
                              "moves position " + std::to_string(p) + " outside [0, max_context)");
    std::vector<std::int32_t> rows;
    for (std::size_t t = 0; t < q.positions.size(); ++t)
      if (q.positions[t] >= p0 && q.positions[t] < p1) rows.push_back(static_cast<std::int32_t>(t));
    if (rows.empty()) return;
    const std::size_t half = freq_.size();
    std::vector<double> cs(half), sn(half);
    for (std::size_t f = 0; f < half; ++f) {
      const double a = static_cast<double>(delta) * freq_[f];
      cs[f] = std::cos(a);
      sn[f] = std::sin(a);
    }
    if (delta != 0) {
      auto d_rows = cuda_detail::to_device(std::span<const std::int32_t>(rows));
      auto d_cs = cuda_detail::to_device(std::span<const double>(cs));
      auto d_sn = cuda_detail::to_device(std::span<const double>(sn));
      for (std::size_t l = 0; l < layers_.size(); ++l)
        cuda_kernels::rope(k_cache(q, l), d_rows.get<std::int32_t>(), static_cast<int>(rows.size()),
                           static_cast<std::int64_t>(row_elems()), cfg_.n_kv_heads, cfg_.head_dim,
                           d_cs.get<double>(), d_sn.get<double>(), false);
      cuda_detail::check_launch(fn);
      cuda_detail::check_cuda(cudaDeviceSynchronize(), fn);
    }
    for (auto t : rows) q.positions[static_cast<std::size_t>(t)] += delta;
  }

  /// @brief Removes tokens with positions in [p0, p1) (the cache is compacted on the device).
  /// @throws invalid_argument if p0 > p1.
  void erase(seq_id s, position_t p0, position_t p1) {
    constexpr std::string_view fn = "erase";
    auto& q = seq(fn, s);
    if (p0 > p1) detail::throw_invalid(fn, "p1", "must be >= p0");
    std::vector<std::int32_t> keep;
    for (std::size_t t = 0; t < q.positions.size(); ++t)
      if (q.positions[t] < p0 || q.positions[t] >= p1) keep.push_back(static_cast<std::int32_t>(t));
    if (keep.size() == q.positions.size()) return;
    const std::size_t w = keep.size(), L = layers_.size(), row_bytes = row_elems() * sizeof(float);
    if (w > 0) {
      auto d_keep = cuda_detail::to_device(std::span<const std::int32_t>(keep));
      float* tmp = scratch_erase_.at_least<float>(2 * L * w * row_bytes);
      const auto cap_bytes = static_cast<std::int64_t>(q.cap * row_bytes);
      cuda_kernels::gather_rows(tmp, q.cache.get(), d_keep.get<std::int32_t>(), static_cast<int>(w),
                                static_cast<std::int64_t>(row_bytes), static_cast<int>(2 * L), nullptr,
                                cap_bytes, static_cast<std::int64_t>(w * row_bytes));
      cuda_detail::check_launch(fn);
      cuda_detail::check_cuda(cudaMemcpy2D(q.cache.get(), static_cast<std::size_t>(cap_bytes), tmp,
                                           w * row_bytes, w * row_bytes, 2 * L, cudaMemcpyDeviceToDevice),
                              "cudaMemcpy2D");
    }
    for (std::size_t i = 0; i < w; ++i) {
      const auto t = static_cast<std::size_t>(keep[i]);
      q.positions[i] = q.positions[t];
      for (std::size_t l = 0; l < L; ++l) q.vis[l * q.cap + i] = q.vis[l * q.cap + t];
    }
    q.positions.resize(w);
    upload_vis(q);
  }

 private:
  struct cublas_destroy {
    void operator()(cublasHandle_t h) const noexcept { (void)cublasDestroy(h); }
  };
  struct layer_weights {
    cuda_detail::device_buffer in_norm, post_norm, q, k, v, o, gate, up, down;
  };
  struct sequence {
    bool open = false;
    std::vector<position_t> positions;
    std::size_t cap = 0;               // token capacity of the device cache
    std::vector<std::uint8_t> vis;     // host mirror: [layer][cap]
    cuda_detail::device_buffer cache;  // [layer][K|V][cap][kv_heads][head_dim] f32
    cuda_detail::device_buffer d_vis;  // [layer][cap]
  };

  [[nodiscard]] std::size_t row_elems() const noexcept {
    return static_cast<std::size_t>(cfg_.n_kv_heads) * static_cast<std::size_t>(cfg_.head_dim);
  }
  float* k_cache(const sequence& q, std::size_t l) const noexcept {
    return q.cache.get<float>() + 2 * l * q.cap * row_elems();
  }
  float* v_cache(const sequence& q, std::size_t l) const noexcept {
    return q.cache.get<float>() + (2 * l + 1) * q.cap * row_elems();
  }

  sequence& seq(std::string_view fn, seq_id s) {
    if (s < 0 || static_cast<std::size_t>(s) >= seqs_.size() || !seqs_[static_cast<std::size_t>(s)].open)
      detail::throw_invalid(fn, "seq", "is not an open sequence: " + std::to_string(s));
    return seqs_[static_cast<std::size_t>(s)];
  }
  const sequence& seq(std::string_view fn, seq_id s) const {
    return const_cast<cuda_engine*>(this)->seq(fn, s);
  }

  /// Grows the cache of q to hold `need` tokens (contents kept).
  void reserve(sequence& q, std::size_t need) {
    if (need <= q.cap) return;
    const std::size_t cap = std::max({need, 2 * q.cap, std::size_t{16}}), L = layers_.size(),
                      row_bytes = row_elems() * sizeof(float);
    cuda_detail::device_buffer cache(2 * L * cap * row_bytes);
    const std::size_t T = q.positions.size();
    if (T > 0)
      cuda_detail::check_cuda(cudaMemcpy2D(cache.get(), cap * row_bytes, q.cache.get(), q.cap * row_bytes,
                                           T * row_bytes, 2 * L, cudaMemcpyDeviceToDevice),
                              "cudaMemcpy2D");
    std::vector<std::uint8_t> vis(L * cap, 0);
    for (std::size_t l = 0; l < L; ++l)
      std::copy_n(q.vis.begin() + static_cast<std::ptrdiff_t>(l * q.cap), T,
                  vis.begin() + static_cast<std::ptrdiff_t>(l * cap));
    q.cache = std::move(cache);
    q.vis = std::move(vis);
    q.cap = cap;
    q.d_vis.resize_discard(L * cap);
  }
  void upload_vis(sequence& q) { q.d_vis.upload(q.vis.data(), q.vis.size()); }

  void check_export(std::string_view fn, const sequence& q, index_range tokens,
                    index_range layer_range) const {
    const auto T = static_cast<std::int64_t>(q.positions.size());
    detail::check_in_range(fn, "tokens.first", tokens.first, 0, T);
    detail::check_in_range(fn, "tokens.last", tokens.last, tokens.first, T);
    detail::check_in_range(fn, "layers.first", layer_range.first, 0, cfg_.n_layers);
    detail::check_in_range(fn, "layers.last", layer_range.last, layer_range.first, cfg_.n_layers);
  }
  /// Rows [tokens) of layers [layer_range) into dst in block layout (one 2-D copy: the layers are
  /// consecutive).
  void copy_out(const sequence& q, index_range tokens, index_range layer_range, void* dst,
                cudaMemcpyKind kind) const {
    const std::size_t n = static_cast<std::size_t>(tokens.size()),
                      nl = static_cast<std::size_t>(layer_range.size());
    if (n == 0 || nl == 0) return;
    const std::size_t row_bytes = row_elems() * sizeof(float);
    const float* src = k_cache(q, static_cast<std::size_t>(layer_range.first)) +
                       static_cast<std::size_t>(tokens.first) * row_elems();
    cuda_detail::check_cuda(
        cudaMemcpy2D(dst, n * row_bytes, src, q.cap * row_bytes, n * row_bytes, 2 * nl, kind),
        "cudaMemcpy2D");
  }
  std::vector<std::uint8_t> export_mask(const sequence& q, index_range tokens,
                                        index_range layer_range) const {
    const auto n = static_cast<std::size_t>(tokens.size());
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(layer_range.size()) * n, 1);
    bool ragged = false;
    for (std::size_t i = 0; i < static_cast<std::size_t>(layer_range.size()); ++i)
      for (std::size_t t = 0; t < n; ++t)
        if (!q.vis[(static_cast<std::size_t>(layer_range.first) + i) * q.cap +
                   static_cast<std::size_t>(tokens.first) + t]) {
          mask[i * n + t] = 0;
          ragged = true;
        }
    if (!ragged) mask.clear();
    return mask;
  }

  void check_import(std::string_view fn, const model_fingerprint& fp, std::span<const layer_index> layers,
                    const import_options& o) const {
    if (!o.force) check_fingerprint(fn, info_.fingerprint, fp);
    detail::check_same_size(fn, "block.n_kv_heads", static_cast<std::size_t>(fp.n_kv_heads),
                            "model n_kv_heads", static_cast<std::size_t>(cfg_.n_kv_heads));
    detail::check_same_size(fn, "block.head_dim_k", static_cast<std::size_t>(fp.head_dim_k), "model head_dim",
                            static_cast<std::size_t>(cfg_.head_dim));
    detail::check_same_size(fn, "block.head_dim_v", static_cast<std::size_t>(fp.head_dim_v), "model head_dim",
                            static_cast<std::size_t>(cfg_.head_dim));
    if (!o.layer_mask.empty())
      detail::check_same_size(fn, "options.layer_mask", o.layer_mask.size(), "model layers",
                              static_cast<std::size_t>(cfg_.n_layers));
    for (auto l : layers) detail::check_in_range(fn, "block.layers", l, 0, cfg_.n_layers - 1);
  }

  /// Appends T tokens of a block payload (f32, block layout, at `src` in host or device memory).
  template <class Present>
  void append_block(sequence& q, std::span<const layer_index> layers, std::int64_t n_tok,
                    const std::byte* src, cudaMemcpyKind kind, const import_options& o, Present present) {
    const std::size_t T = static_cast<std::size_t>(n_tok), old_T = q.positions.size(),
                      row_bytes = row_elems() * sizeof(float);
    reserve(q, old_T + T);
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const auto it = std::find(layers.begin(), layers.end(), static_cast<layer_index>(l));
      const bool use = it != layers.end() && (o.layer_mask.empty() || o.layer_mask[l]);
      float* dst = k_cache(q, l) + old_T * row_elems();
      if (T == 0) continue;
      if (use) {
        const auto i = static_cast<std::size_t>(it - layers.begin());
        cuda_detail::check_cuda(cudaMemcpy2D(dst, q.cap * row_bytes, src + i * 2 * T * row_bytes,
                                             T * row_bytes, T * row_bytes, 2, kind),
                                "cudaMemcpy2D");
        for (std::size_t t = 0; t < T; ++t)
          q.vis[l * q.cap + old_T + t] = present(i, static_cast<std::int64_t>(t)) ? 1 : 0;
      } else {
        cuda_detail::check_cuda(cudaMemset2D(dst, q.cap * row_bytes, 0, T * row_bytes, 2), "cudaMemset2D");
        for (std::size_t t = 0; t < T; ++t) q.vis[l * q.cap + old_T + t] = 0;
      }
    }
    upload_vis(q);
  }

  /// y[n×out] (+)= x[n×in] · W^T with W row-major [out][in] (HF linear layout); the embedding
  /// matrix (the tied head) is always f32.
  void linear(const float* x, int n, const cuda_detail::device_buffer& w, int out, int in, float* y,
              float beta) const {
    if (weight_type_ == dtype::bf16 && &w != &embed_) {
      cuda_kernels::linear_bf16w(x, n, w.get<std::uint16_t>(), out, in, y, beta != 0.0f);
      return;
    }
    const float alpha = 1.0f;
    cuda_detail::check_cublas(cublasSgemm(handle_.get(), CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &alpha,
                                          w.get<float>(), in, x, in, &beta, y, out),
                              "cublasSgemm");
  }

  forward_output forward(seq_id s, std::span<const token_id> tokens, position_t first,
                         const forward_options& o, std::span<const layer_index> capture_layers,
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
    const int H = cfg_.n_heads, Hkv = cfg_.n_kv_heads, hd = cfg_.head_dim, d = cfg_.hidden_size,
              I = cfg_.intermediate_size, V = cfg_.vocab_size;
    const int ni = static_cast<int>(n);
    const std::size_t row = row_elems(), old_T = q.positions.size(), T = old_T + static_cast<std::size_t>(n),
                      L = layers_.size();
    reserve(q, T);
    for (std::int64_t i = 0; i < n; ++i) q.positions.push_back(first + static_cast<position_t>(i));
    for (std::size_t l = 0; l < L; ++l)
      std::fill_n(q.vis.begin() + static_cast<std::ptrdiff_t>(l * q.cap + old_T), n, std::uint8_t{1});
    upload_vis(q);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const std::size_t half = freq_.size(), nn = static_cast<std::size_t>(n);
    std::vector<double> rope_cos(nn * half), rope_sin(rope_cos.size());
    for (std::size_t i = 0; i < nn; ++i)
      for (std::size_t f = 0; f < half; ++f) {
        const double a = static_cast<double>(first + static_cast<position_t>(i)) * freq_[f];
        rope_cos[i * half + f] = std::cos(a);
        rope_sin[i * half + f] = std::sin(a);
      }
    auto* d_tok = s_tok_.at_least<std::int32_t>(nn * sizeof(std::int32_t));
    s_tok_.upload(tokens.data(), nn * sizeof(std::int32_t));
    auto* cs = s_cos_.at_least<double>(rope_cos.size() * sizeof(double));
    s_cos_.upload(rope_cos.data(), rope_cos.size() * sizeof(double));
    auto* sn = s_sin_.at_least<double>(rope_sin.size() * sizeof(double));
    s_sin_.upload(rope_sin.data(), rope_sin.size() * sizeof(double));
    float* x = s_x_.at_least<float>(nn * static_cast<std::size_t>(d) * sizeof(float));
    float* h = s_h_.at_least<float>(nn * static_cast<std::size_t>(d) * sizeof(float));
    float* qm = s_q_.at_least<float>(nn * static_cast<std::size_t>(H * hd) * sizeof(float));
    float* att = s_att_.at_least<float>(nn * static_cast<std::size_t>(H * hd) * sizeof(float));
    float* km = s_k_.at_least<float>(nn * row * sizeof(float));
    float* vm = s_v_.at_least<float>(nn * row * sizeof(float));
    float* gate = s_gate_.at_least<float>(nn * static_cast<std::size_t>(I) * sizeof(float));
    float* up = s_up_.at_least<float>(nn * static_cast<std::size_t>(I) * sizeof(float));
    float* scores = s_scores_.at_least<float>(nn * static_cast<std::size_t>(H) * T * sizeof(float));
    const std::size_t cap_per_layer = static_cast<std::size_t>(H) * nn * T;
    float* capw = cap != nullptr && !capture_layers.empty()
                      ? s_cap_.at_least<float>(capture_layers.size() * cap_per_layer * sizeof(float))
                      : nullptr;
    if (capw != nullptr)
      cuda_detail::check_cuda(cudaMemset(capw, 0, capture_layers.size() * cap_per_layer * sizeof(float)),
                              "cudaMemset");
    cuda_kernels::embed(embed_.get<float>(), d_tok, ni, d, x);
    for (std::size_t l = 0; l < L; ++l) {
      const auto& w = layers_[l];
      cuda_kernels::rms_norm(x, w.in_norm.get<float>(), h, ni, d, cfg_.rms_norm_eps);
      linear(h, ni, w.q, H * hd, d, qm, 0.0f);
      linear(h, ni, w.k, Hkv * hd, d, km, 0.0f);
      linear(h, ni, w.v, Hkv * hd, d, vm, 0.0f);
      cuda_kernels::rope(qm, nullptr, ni, static_cast<std::int64_t>(H) * hd, H, hd, cs, sn, true);
      cuda_kernels::rope(km, nullptr, ni, static_cast<std::int64_t>(row), Hkv, hd, cs, sn, true);
      cuda_detail::check_cuda(cudaMemcpyAsync(k_cache(q, l) + old_T * row, km, nn * row * sizeof(float),
                                              cudaMemcpyDeviceToDevice),
                              "cudaMemcpyAsync");
      cuda_detail::check_cuda(cudaMemcpyAsync(v_cache(q, l) + old_T * row, vm, nn * row * sizeof(float),
                                              cudaMemcpyDeviceToDevice),
                              "cudaMemcpyAsync");
      const auto cap_it =
          std::find(capture_layers.begin(), capture_layers.end(), static_cast<layer_index>(l));
      float* cap_l = capw != nullptr && cap_it != capture_layers.end()
                         ? capw + static_cast<std::size_t>(cap_it - capture_layers.begin()) * cap_per_layer
                         : nullptr;
      cuda_kernels::attention(qm, k_cache(q, l), v_cache(q, l), q.d_vis.get<std::uint8_t>() + l * q.cap, ni,
                              static_cast<int>(old_T), H, Hkv, hd, scale, scores, att, cap_l);
      linear(att, ni, w.o, d, H * hd, x, 1.0f);
      cuda_kernels::rms_norm(x, w.post_norm.get<float>(), h, ni, d, cfg_.rms_norm_eps);
      linear(h, ni, w.gate, I, d, gate, 0.0f);
      linear(h, ni, w.up, I, d, up, 0.0f);
      cuda_kernels::swiglu(gate, up, static_cast<std::int64_t>(n) * I);
      linear(gate, ni, w.down, d, I, x, 1.0f);
    }
    const int rows = o.all_logits ? ni : 1;
    float* xn = s_h_.get<float>();
    cuda_kernels::rms_norm(x + static_cast<std::size_t>(ni - rows) * static_cast<std::size_t>(d),
                           norm_.get<float>(), xn, rows, d, cfg_.rms_norm_eps);
    float* logits = s_logits_.at_least<float>(static_cast<std::size_t>(rows) * static_cast<std::size_t>(V) *
                                              sizeof(float));
    linear(xn, rows, cfg_.tie_word_embeddings ? embed_ : lm_head_, V, d, logits, 0.0f);
    cuda_detail::check_launch(fn);
    forward_output out;
    out.rows = rows;
    out.logits.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(V));
    cuda_detail::download(out.logits.data(), logits, out.logits.size() * sizeof(float));
    if (o.want_hidden) {
      out.hidden.resize(static_cast<std::size_t>(d));
      cuda_detail::download(out.hidden.data(),
                            xn + static_cast<std::size_t>(rows - 1) * static_cast<std::size_t>(d),
                            out.hidden.size() * sizeof(float));
    }
    if (cap != nullptr) {
      cap->queries = n;
      cap->keys = static_cast<std::int64_t>(T);
      cap->weights.assign(capture_layers.size() * cap_per_layer, 0.0f);
      if (capw != nullptr)
        cuda_detail::download(cap->weights.data(), capw, cap->weights.size() * sizeof(float));
    }
    return out;
  }

  llama_config cfg_;
  dtype weight_type_ = dtype::f32;
  engine_info info_;
  std::vector<double> freq_;
  std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, cublas_destroy> handle_;
  cuda_detail::device_buffer embed_, lm_head_, norm_;
  std::vector<layer_weights> layers_;
  std::vector<sequence> seqs_;
  // grow-only scratch
  cuda_detail::device_buffer s_tok_, s_cos_, s_sin_, s_x_, s_h_, s_q_, s_att_, s_k_, s_v_, s_gate_, s_up_,
      s_scores_, s_cap_, s_logits_, scratch_erase_;
};

static_assert(inference_engine<cuda_engine>);
static_assert(attention_capturing_engine<cuda_engine>);

}  // namespace latentaudit

#endif  // LATENTAUDIT_EXAMPLES_CUDA_ENGINE_HPP
