// SPDX-License-Identifier: MIT
// latentaudit CUDA example: launchers of the kernels in cuda_kernels.cu. Plain C++ declarations
// (raw device pointers, the legacy default stream), so the host code that includes them is
// compiled by the host compiler with the project's warning flags; only cuda_kernels.cu goes
// through nvcc. Every launcher enqueues asynchronously; callers check cudaGetLastError().
#ifndef LATENTAUDIT_EXAMPLES_CUDA_KERNELS_HPP
#define LATENTAUDIT_EXAMPLES_CUDA_KERNELS_HPP

#include <cstdint>

namespace latentaudit::cuda_kernels {

/// @brief x[i] = table[tokens[i]] (rows of d floats).
void embed(const float* table, const std::int32_t* tokens, int n, int d, float* x);

/// @brief y[n×out] = x[n×in] · Wᵀ (+ y when accumulate) with W bf16 row-major [out][in]
/// (HF linear layout), binary32 products and sums: the bf16-weight path of the engine.
void linear_bf16w(const float* x, int n, const std::uint16_t* w, int out, int in, float* y, bool accumulate);

/// @brief HF LlamaRMSNorm of `rows` rows: y = x · 1/sqrt(mean(x²) + eps) · w.
void rms_norm(const float* x, const float* w, float* y, int rows, int d, float eps);

/// @brief NEOX RoPE in binary64 as latentaudit::rotate_head: row r_i = rows ? rows[i] : i of x
/// (row stride `row_stride` floats), `heads` heads of hd dims, rotated by the angles whose cos
/// and sin are cs/sn[t·hd/2 + f], t = i if per_row_table else 0.
void rope(float* x, const std::int32_t* rows, int n_rows, std::int64_t row_stride, int heads, int hd,
          const double* cs, const double* sn, bool per_row_table);

/// @brief Grouped-query attention of n new queries over T = old_T + n cached tokens of one
/// layer (k, v: [T][Hkv·hd]; visible: [T]); query i sees cached tokens j <= old_T + i that are
/// visible. scores: scratch of n·H·T floats; out: [n][H·hd]; capture (nullable): [H][n][T].
void attention(const float* q, const float* k, const float* v, const std::uint8_t* visible, int n, int old_T,
               int H, int Hkv, int hd, float scale, float* scores, float* out, float* capture);

/// @brief gate = silu(gate) · up, n elements.
void swiglu(float* gate, const float* up, std::int64_t n);

/// @brief Gathers rows: for each dst unit u and i < n_rows, copies row_bytes bytes from
/// src + unit_map[u]·src_unit_stride + src_rows[i]·row_bytes to dst + u·dst_unit_stride + i·row_bytes
/// (unit_map null: identity; src_rows null: rows 0, 1, ...). row_bytes must be a multiple of 4.
void gather_rows(void* dst, const void* src, const std::int32_t* src_rows, int n_rows, std::int64_t row_bytes,
                 int units, const std::int32_t* unit_map, std::int64_t src_unit_stride,
                 std::int64_t dst_unit_stride);

/// @brief f32 → bf16 (round to nearest even, as latentaudit's store_cache) and back.
void f32_to_bf16(const float* x, std::uint16_t* y, std::int64_t n);
/// @brief bf16 → f32.
void bf16_to_f32(const std::uint16_t* x, float* y, std::int64_t n);

/// @brief Fills n bf16 values with a deterministic pseudo-random pattern (for benchmarks):
/// roughly normal-sized values, a hash of (seed, index).
void fill_bf16(std::uint16_t* y, std::int64_t n, std::uint32_t seed);

/// @brief A set of (layer, part) units of a block on the device and the rows each one touches.
struct unit_rows {
  void* base = nullptr;          ///< block payload
  bool bf16 = false;             ///< element type bf16 (else f32)
  int units = 0;                 ///< units
  std::int64_t unit_stride = 0;  ///< elements between consecutive units' first rows (unit u = units_index[u])
  const std::int32_t* unit_index =
      nullptr;       ///< device: position of unit u in the payload (in units of unit_stride)
  int channels = 0;  ///< elements a row (kv_heads · head_dim)
  const std::int32_t* row_offset = nullptr;  ///< device: units + 1 offsets into rows
  const std::int32_t* rows = nullptr;        ///< device: the rows of each unit, increasing
  int max_rows = 0;                          ///< largest row count of a unit
};

/// @brief Per-channel sums of squares as latentaudit::add_noise computes them (binary32
/// partials of 64 rows, added into binary64 in row order): ss[u·channels + c]. partial: scratch
/// of units · channel_sums_chunks(ur) · channels floats.
void channel_sums(const unit_rows& ur, double* ss, float* partial);

/// @brief Row chunks (of 64) channel_sums needs scratch for, per unit.
int channel_sums_chunks(const unit_rows& ur);

/// @brief Sets each element with σ ≠ 0 to fma(σ[u·channels + c], z, x) rounded once to the
/// payload's type, z the binary32 deviate of latentaudit::bulk_normal_batch (the bulk noise
/// stream of add_noise) for stream key (k0, k1) and counter words (part[u], layer[u]) at stream
/// element (row rank · channels + c); noise_power[u] += Σ (new − old)² (summed in another order
/// than the CPU's). The arithmetic is cuda_noise_stream.hpp's.
void add_noise(const unit_rows& ur, const float* sigma, std::uint32_t k0, std::uint32_t k1,
               const std::uint32_t* part, const std::uint32_t* layer, double* noise_power);

/// @brief KIVI int8/int4 quantize → dequantize in place, exactly as latentaudit::quantize_roundtrip:
/// `is_key[u]` units grouped per channel over `group` rows (when keys_per_channel), the others
/// per row over `group` consecutive dims of a head of head_dim dims. levels = 255 or 15.
void quantize_roundtrip(const unit_rows& ur, const std::uint8_t* is_key, bool keys_per_channel, int group,
                        int head_dim, double levels);

}  // namespace latentaudit::cuda_kernels

#endif  // LATENTAUDIT_EXAMPLES_CUDA_KERNELS_HPP
