// SPDX-License-Identifier: MIT
// latentaudit CUDA example: the noise kernel's arithmetic as __host__ __device__ functions — the
// bulk noise stream of latentaudit::bulk_normal_batch (core/rng.hpp; docs/kv-transfer.md, "The
// bulk noise stream") and the per-thread body of the noise kernel. cuda_kernels.cu runs them on
// the device; cuda_noise_host_check.cpp compiles the same code with the host compiler (no CUDA
// needed) and checks it bit for bit against bulk_normal_batch and add_noise.
//
// Every binary32 operation of the transform is an explicit correctly rounded intrinsic on the
// device (__fmaf_rn, __fmul_rn, __fadd_rn, __fsub_rn, __fsqrt_rn: never contracted, whatever
// --fmad says) and the corresponding std:: operation on the host (std::fma is a fused
// multiply-add, as CUDA's __fmaf_rn). No product feeds a sum except through an explicit fma, as
// in the library's bulk_pair, so the host compiler's -ffp-contract cannot change a bit either.
#ifndef LATENTAUDIT_EXAMPLES_CUDA_NOISE_STREAM_HPP
#define LATENTAUDIT_EXAMPLES_CUDA_NOISE_STREAM_HPP

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda_kernels.hpp"

#if defined(__CUDACC__)
#define LATENTAUDIT_CUDA_HD __host__ __device__
#else
#define LATENTAUDIT_CUDA_HD
#endif

namespace latentaudit::cuda_noise {

/// @brief Bits of a binary32 value.
LATENTAUDIT_CUDA_HD inline std::uint32_t f2u(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

/// @brief The binary32 value of some bits.
LATENTAUDIT_CUDA_HD inline float u2f(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

/// @brief a·b + c rounded once (fused multiply-add).
LATENTAUDIT_CUDA_HD inline float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// @brief a·b rounded to nearest (never contracted into a neighbouring add).
LATENTAUDIT_CUDA_HD inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

/// @brief a + b rounded to nearest.
LATENTAUDIT_CUDA_HD inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

/// @brief a − b rounded to nearest.
LATENTAUDIT_CUDA_HD inline float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

/// @brief √v correctly rounded (as std::sqrt in binary32).
LATENTAUDIT_CUDA_HD inline float sqrt_rn(float v) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(v);
#else
  return std::sqrt(v);
#endif
}

/// @brief The Weyl increment of SplitMix64 (latentaudit::detail::bulk_gamma).
constexpr std::uint64_t bulk_gamma = 0x9E3779B97F4A7C15ULL;

/// @brief SplitMix64 finaliser (latentaudit::detail::mix64).
LATENTAUDIT_CUDA_HD inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// @brief Seed of bulk batch `batch` of stream (key k0, k1; counter words c2 = part, c3 = layer):
/// words 0 and 1 of its Philox4x32-10 block `batch` (latentaudit::detail::bulk_batch_seed).
LATENTAUDIT_CUDA_HD inline std::uint64_t batch_seed(std::uint32_t k0, std::uint32_t k1, std::uint32_t c2,
                                                    std::uint32_t c3, std::uint64_t batch) {
  std::uint32_t x0 = static_cast<std::uint32_t>(batch), x1 = static_cast<std::uint32_t>(batch >> 32), x2 = c2,
                x3 = c3;
  std::uint32_t ka = k0, kb = k1;
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(0xD2511F53u) * x0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(0xCD9E8D57u) * x2;
    const std::uint32_t y0 = static_cast<std::uint32_t>(p1 >> 32) ^ x1 ^ ka,
                        y1 = static_cast<std::uint32_t>(p1);
    const std::uint32_t y2 = static_cast<std::uint32_t>(p0 >> 32) ^ x3 ^ kb,
                        y3 = static_cast<std::uint32_t>(p0);
    x0 = y0;
    x1 = y1;
    x2 = y2;
    x3 = y3;
    ka += 0x9E3779B9u;
    kb += 0xBB67AE85u;
  }
  return static_cast<std::uint64_t>(x0) | (static_cast<std::uint64_t>(x1) << 32);
}

/// @brief One Box–Muller pair in binary32 from radius word uw and angle word aw: the operations
/// of latentaudit::detail::bulk_pair in the same order (c = r cos φ, s = r sin φ).
LATENTAUDIT_CUDA_HD inline void box_muller(std::uint32_t uw, std::uint32_t aw, float& c, float& s) {
  const float u = fma_rn(static_cast<float>(static_cast<std::int32_t>(uw >> 1)), 0x1p-31f, 0x1p-33f);
  const std::uint32_t b = f2u(u);
  const std::uint32_t sig = b & 0x007FFFFFu;
  const bool hi = sig >= 0x003504F3u;
  const float x = sub_rn(u2f(sig | (hi ? 0x3F000000u : 0x3F800000u)), 1.0f);
  const float e =
      static_cast<float>(static_cast<std::int32_t>(b >> 23) - 127 + static_cast<std::int32_t>(hi));
  const float z = mul_rn(x, x);
  float p = 7.0376836292e-2f;
  p = fma_rn(p, x, -1.1514610310e-1f);
  p = fma_rn(p, x, 1.1676998740e-1f);
  p = fma_rn(p, x, -1.2420140846e-1f);
  p = fma_rn(p, x, 1.4249322787e-1f);
  p = fma_rn(p, x, -1.6668057665e-1f);
  p = fma_rn(p, x, 2.0000714765e-1f);
  p = fma_rn(p, x, -2.4999993993e-1f);
  p = fma_rn(p, x, 3.3333331174e-1f);
  const float zp = mul_rn(z, p);
  float y = mul_rn(x, zp);
  y = fma_rn(e, -2.12194440e-4f, y);
  y = fma_rn(-0.5f, z, y);
  y = add_rn(x, y);
  y = fma_rn(e, 0.693359375f, y);
  const float r = sqrt_rn(mul_rn(y, -2.0f));
  const float f = static_cast<float>(static_cast<std::int32_t>(aw & 0x3FFFFFFFu));
  const float t = fma_rn(f, 0x1.921FB6p-30f, -0x1.921FB6p-1f);
  const float t2 = mul_rn(t, t);
  const float ps = fma_rn(fma_rn(-1.9515295891e-4f, t2, 8.3321608736e-3f), t2, -1.6666654611e-1f);
  const float tt2 = mul_rn(t, t2);
  const float sn = fma_rn(tt2, ps, t);
  const float pc =
      fma_rn(fma_rn(2.443315711809948e-5f, t2, -1.388731625493765e-3f), t2, 4.166664568298827e-2f);
  const float t4 = mul_rn(t2, t2);
  const float cs = fma_rn(t4, pc, fma_rn(-0.5f, t2, 1.0f));
  const bool odd = (aw & 0x40000000u) != 0;
  const float a = odd ? sn : cs, bb = odd ? cs : sn;
  const std::uint32_t rb = f2u(r);
  const float rc = u2f(rb ^ ((aw ^ (aw << 1)) & 0x80000000u));
  const float rs = u2f(rb ^ (aw & 0x80000000u));
  c = mul_rn(rc, a);
  s = mul_rn(rs, bb);
}

/// @brief Elements 4·q4 … 4·q4 + 3 (q4 = 0…255) of the bulk batch with seed `seed`. Quad q
/// of group k = q4 / 8 holds Box–Muller pairs 2q and 2q + 1 of the group, which take the low
/// and the high 32-bit halves of h[q] (radius) and h[8 + q] (angle),
/// h[j] = mix64(seed + (16k + j + 1)·γ); pair i gives elements 2i (cos) and 2i + 1 (sin).
LATENTAUDIT_CUDA_HD inline void quad(std::uint64_t seed, unsigned q4, float* z) {
  const std::uint64_t k = q4 / 8, q = q4 % 8;
  const std::uint64_t hu = mix64(seed + (16 * k + q + 1) * bulk_gamma);
  const std::uint64_t ha = mix64(seed + (16 * k + 8 + q + 1) * bulk_gamma);
  box_muller(static_cast<std::uint32_t>(hu), static_cast<std::uint32_t>(ha), z[0], z[1]);
  box_muller(static_cast<std::uint32_t>(hu >> 32), static_cast<std::uint32_t>(ha >> 32), z[2], z[3]);
}

/// @brief bf16 bits of f rounded to nearest even (latentaudit::detail::store_cache; f not NaN).
LATENTAUDIT_CUDA_HD inline std::uint16_t bf16_bits(float f) {
  const std::uint32_t b = f2u(f);
  return static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

/// @brief Element i of a bf16 or f32 payload, as float.
LATENTAUDIT_CUDA_HD inline float load(const void* base, std::int64_t i, bool bf16) {
  if (bf16) return u2f(static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(base)[i]) << 16);
  return static_cast<const float*>(base)[i];
}

/// @brief Stores f (rounded to bf16 when bf16) as element i.
LATENTAUDIT_CUDA_HD inline void store(void* base, std::int64_t i, bool bf16, float f) {
  if (bf16)
    static_cast<std::uint16_t*>(base)[i] = bf16_bits(f);
  else
    static_cast<float*>(base)[i] = f;
}

/// @brief The work of one noise-kernel thread: elements 4·quad_index … + 3 of unit u (stream
/// element rank·channels + c is channel c of the unit's rank-th row), whose batch has seed
/// `seed`; each element with σ ≠ 0 becomes fma(σ, z, x) rounded once to the payload's type
/// (latentaudit::detail::row_noise_body). Returns Σ (new − old)² of these elements.
LATENTAUDIT_CUDA_HD inline float apply_quad(const cuda_kernels::unit_rows& ur, int u, const float* sigma,
                                            std::uint64_t seed, std::uint64_t quad_index) {
  const int r0 = ur.row_offset[u], nr = ur.row_offset[u + 1] - r0;
  const std::int64_t total = static_cast<std::int64_t>(nr) * ur.channels;
  const std::int64_t e0 = static_cast<std::int64_t>(4 * quad_index);
  float added2 = 0.0f;
  if (e0 >= total) return added2;
  float z[4];
  quad(seed, static_cast<unsigned>(quad_index % 256), z);
  const std::int64_t base = static_cast<std::int64_t>(ur.unit_index[u]) * ur.unit_stride;
  int rank = static_cast<int>(e0 / ur.channels), c = static_cast<int>(e0 % ur.channels);
  for (int j = 0; j < 4; ++j, ++c) {
    if (e0 + j >= total) break;
    if (c == ur.channels) {  // the next row
      c = 0;
      ++rank;
    }
    const float sg = sigma[static_cast<std::int64_t>(u) * ur.channels + c];
    if (sg == 0.0f) continue;
    const std::int64_t idx = base + static_cast<std::int64_t>(ur.rows[r0 + rank]) * ur.channels + c;
    const float old = load(ur.base, idx, ur.bf16);
    store(ur.base, idx, ur.bf16, fma_rn(sg, z[j], old));
    const float added = sub_rn(load(ur.base, idx, ur.bf16), old);
    added2 = fma_rn(added, added, added2);
  }
  return added2;
}

}  // namespace latentaudit::cuda_noise

#endif  // LATENTAUDIT_EXAMPLES_CUDA_NOISE_STREAM_HPP
