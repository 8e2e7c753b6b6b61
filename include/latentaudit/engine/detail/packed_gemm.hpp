// SPDX-License-Identifier: MIT
// latentaudit: the reference engine's matrix product y = x · wᵀ on the processor's vector units,
// chosen at run time (llama.cpp's way, without a -march build): w, a linear layer's weights as HF
// stores them (out × in), packed once at load into panels of 16 output features, k-major, and a
// 6 × 16 AVX2/FMA kernel (one fused multiply-add per k, in k order, for every output) compiled with
// a function-level target attribute, so a baseline x86-64 build carries it and runs it where
// the processor has AVX2 and FMA. A row's values do not depend on the rows beside it (a decode
// step's single row equals the same row within a prefill), nor on the thread count (panels are
// independent). Elsewhere (no AVX2/FMA, another architecture or compiler, or
// LATENTAUDIT_REFERENCE_KERNEL=baseline) the engine keeps Eigen's product (docs/engines.md).
#ifndef LATENTAUDIT_ENGINE_DETAIL_PACKED_GEMM_HPP
#define LATENTAUDIT_ENGINE_DETAIL_PACKED_GEMM_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define LATENTAUDIT_PACKED_GEMM_X86 1
#include <immintrin.h>
#else
#define LATENTAUDIT_PACKED_GEMM_X86 0
#endif

// Under AddressSanitizer the kernel is not instrumented load by load (its inner loop is a few
// vector loads and fused multiply-adds, and a check on each made it ~10x slower: 0.86 s against
// 0.09 s for 300 of the organisms' products, g++ 12 -O1, docs/building.md); packed_gemm checks
// every byte the kernel will read or write, once per call, before running it (packed_gemm_check).
#if defined(__SANITIZE_ADDRESS__)
#define LATENTAUDIT_PACKED_GEMM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LATENTAUDIT_PACKED_GEMM_ASAN 1
#endif
#endif
#ifndef LATENTAUDIT_PACKED_GEMM_ASAN
#define LATENTAUDIT_PACKED_GEMM_ASAN 0
#endif
#if LATENTAUDIT_PACKED_GEMM_ASAN
#include <sanitizer/asan_interface.h>
// The kernel's own accesses and index arithmetic unchecked: packed_gemm_check does both for the
// whole call (its index products bound the kernel's, and UBSan checks them there for overflow).
#define LATENTAUDIT_PACKED_GEMM_UNCHECKED no_sanitize("address", "undefined"),
#else
#define LATENTAUDIT_PACKED_GEMM_UNCHECKED
#endif

namespace latentaudit::detail {

/// @brief Whether the packed AVX2/FMA product runs here: the processor has AVX2 and FMA and the
/// environment does not ask for the baseline (LATENTAUDIT_REFERENCE_KERNEL=baseline, to reproduce a
/// baseline machine's bits). Read when an engine is constructed.
inline bool packed_gemm_available() noexcept {
#if LATENTAUDIT_PACKED_GEMM_X86
  const char* env = std::getenv("LATENTAUDIT_REFERENCE_KERNEL");
  if (env != nullptr && std::string_view(env) == "baseline") return false;
  __builtin_cpu_init();  // safe to repeat; needed when an engine is built during static initialization
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

/// @brief A weight matrix (out × in, row-major) in panels of 16 output features: panel p holds, for
/// each k, w[16p + 0..15][k] contiguously, zero past `out`. Empty: not packed.
struct packed_weight {
  std::vector<float> panels;
  std::int64_t out = 0, in = 0;
  [[nodiscard]] bool empty() const noexcept { return panels.empty(); }
  [[nodiscard]] std::int64_t panel_count() const noexcept { return (out + 15) / 16; }
};

/// @brief Packs `w` (out × in, row-major, `ld` floats a row).
inline packed_weight pack_weight(const float* w, std::int64_t out, std::int64_t in, std::int64_t ld) {
  packed_weight p;
  p.out = out;
  p.in = in;
  p.panels.assign(static_cast<std::size_t>(p.panel_count() * in * 16), 0.0f);
  for (std::int64_t q = 0; q < p.panel_count(); ++q)
    for (std::int64_t c = 0; c < 16 && q * 16 + c < out; ++c) {
      const float* row = w + (q * 16 + c) * ld;
      float* dst = p.panels.data() + q * in * 16 + c;
      for (std::int64_t k = 0; k < in; ++k) dst[k * 16] = row[k];
    }
  return p;
}

#if LATENTAUDIT_PACKED_GEMM_X86
/// @brief Stores 16 accumulated outputs of panel `q` into `yrow` (those below `out`).
__attribute__((LATENTAUDIT_PACKED_GEMM_UNCHECKED target("avx2,fma"), always_inline)) inline void packed_store(
    float* yrow, std::int64_t q, std::int64_t out, __m256 c0, __m256 c1) {
  alignas(32) float t[16];
  _mm256_store_ps(t, c0);
  _mm256_store_ps(t + 8, c1);
  const std::int64_t j0 = q * 16, cols = std::min<std::int64_t>(16, out - j0);
  std::memcpy(yrow + j0, t, static_cast<std::size_t>(cols) * sizeof(float));
}

/// @brief y[i][j] = Σ_k x[i][k] · w[j][k] for rows 0..n−1 and the output features of panels
/// [p0, p1): each output one FMA chain over k in order. x: n rows of w.in floats, `ldx` apart;
/// y: `ldy` floats a row.
__attribute__((LATENTAUDIT_PACKED_GEMM_UNCHECKED target("avx2,fma"))) inline void packed_gemm_avx2(
    const float* x, std::int64_t ldx, const packed_weight& w, float* y, std::int64_t ldy, std::int64_t n,
    std::int64_t p0, std::int64_t p1) {
  const std::int64_t in = w.in, out = w.out;
  const std::int64_t n6 = n - n % 6;
  for (std::int64_t q = p0; q < p1; ++q) {  // six rows at a time: 12 accumulators
    const float* panel = w.panels.data() + q * in * 16;
    for (std::int64_t i = 0; i < n6; i += 6) {
      __m256 c[6][2];
      for (auto& r : c) r[0] = r[1] = _mm256_setzero_ps();
      const float* xr = x + i * ldx;
      for (std::int64_t k = 0; k < in; ++k) {
        const __m256 b0 = _mm256_loadu_ps(panel + k * 16), b1 = _mm256_loadu_ps(panel + k * 16 + 8);
#pragma GCC unroll 6  // the twelve accumulators in registers at -O1 too (the sanitizer build)
        for (int a = 0; a < 6; ++a) {
          const __m256 av = _mm256_broadcast_ss(xr + a * ldx + k);
          c[a][0] = _mm256_fmadd_ps(av, b0, c[a][0]);
          c[a][1] = _mm256_fmadd_ps(av, b1, c[a][1]);
        }
      }
      for (int a = 0; a < 6; ++a) packed_store(y + (i + a) * ldy, q, out, c[a][0], c[a][1]);
    }
  }
  for (std::int64_t i = n6; i < n; ++i) {  // the rows left (a decode step's one): four panels at a time
    const float* xr = x + i * ldx;
    std::int64_t q = p0;
    for (; q + 4 <= p1; q += 4) {
      __m256 c[4][2];
      for (auto& r : c) r[0] = r[1] = _mm256_setzero_ps();
      const float* pn = w.panels.data() + q * in * 16;
      for (std::int64_t k = 0; k < in; ++k) {
        const __m256 av = _mm256_broadcast_ss(xr + k);
#pragma GCC unroll 4
        for (int b = 0; b < 4; ++b) {
          const float* pk = pn + (b * in + k) * 16;
          c[b][0] = _mm256_fmadd_ps(av, _mm256_loadu_ps(pk), c[b][0]);
          c[b][1] = _mm256_fmadd_ps(av, _mm256_loadu_ps(pk + 8), c[b][1]);
        }
      }
      for (int b = 0; b < 4; ++b) packed_store(y + i * ldy, q + b, out, c[b][0], c[b][1]);
    }
    for (; q < p1; ++q) {
      const float* panel = w.panels.data() + q * in * 16;
      __m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps();
      for (std::int64_t k = 0; k < in; ++k) {
        const __m256 av = _mm256_broadcast_ss(xr + k);
        c0 = _mm256_fmadd_ps(av, _mm256_loadu_ps(panel + k * 16), c0);
        c1 = _mm256_fmadd_ps(av, _mm256_loadu_ps(panel + k * 16 + 8), c1);
      }
      packed_store(y + i * ldy, q, out, c0, c1);
    }
  }
}
#endif

#if LATENTAUDIT_PACKED_GEMM_ASAN
/// @brief Under AddressSanitizer: every byte packed_gemm_avx2(x, ldx, w, y, ldy, n, p0, p1) will
/// touch is checked before it runs (the panels [p0, p1) of `w`; each of the n rows of x, w.in
/// floats; each row of y, the outputs of those panels below w.out). The first poisoned byte is read
/// here, by an instrumented load, so ASan reports it as it would have in the kernel (as a READ of
/// size 1, whether the kernel would have read or written it), with this call's stack.
inline void packed_gemm_check(const float* x, std::int64_t ldx, const packed_weight& w, const float* y,
                              std::int64_t ldy, std::int64_t n, std::int64_t p0, std::int64_t p1) {
  const auto check = [](const float* p, std::int64_t floats) {
    if (floats <= 0) return;
    auto* begin = const_cast<float*>(p);  // the interface takes a non-const pointer; nothing is written
    if (void* bad = __asan_region_is_poisoned(begin, static_cast<std::size_t>(floats) * sizeof(float)))
      (void)*static_cast<const volatile char*>(bad);
  };
  if (p1 <= p0 || n <= 0) return;
  const std::int64_t f0 = p0 * w.in * 16, f1 = p1 * w.in * 16;  // the largest of the kernel's offsets
  check(w.panels.data() + f0, f1 - f0);
  const std::int64_t j0 = p0 * 16, j1 = std::min(p1 * 16, w.out);
  for (std::int64_t i = 0; i < n; ++i) {
    check(x + i * ldx, w.in);
    check(y + i * ldy + j0, j1 - j0);
  }
}
#endif

/// @brief packed_gemm_avx2 where it is compiled in; callers check packed_gemm_available() first
/// (a call elsewhere is a programming error and does nothing).
inline void packed_gemm(const float* x, std::int64_t ldx, const packed_weight& w, float* y, std::int64_t ldy,
                        std::int64_t n, std::int64_t p0, std::int64_t p1) {
#if LATENTAUDIT_PACKED_GEMM_X86
#if LATENTAUDIT_PACKED_GEMM_ASAN
  packed_gemm_check(x, ldx, w, y, ldy, n, p0, p1);
#endif
  packed_gemm_avx2(x, ldx, w, y, ldy, n, p0, p1);
#else
  (void)x, (void)ldx, (void)w, (void)y, (void)ldy, (void)n, (void)p0, (void)p1;
#endif
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_ENGINE_DETAIL_PACKED_GEMM_HPP
