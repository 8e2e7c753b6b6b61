// SPDX-License-Identifier: MIT
// latentaudit: controlled damage to a relayed cache — Gaussian noise at an absolute or relative
// scale, zeroing and token dropout — to measure how much its content matters.
//
// Noise for (layer l, part K|V) comes from stream make_stream({seed, item, arm = part (0 = K,
// 1 = V), replicate = model layer id}): its bulk binary32 normals (bulk_normal_batch, batch 0,
// 1, ... of 1024 deviates each: one Philox4x32-10 block a batch seeding SplitMix64, Box–Muller
// with explicit FMAs) assigned in the block's element order over the selected, present tokens,
// so the result does not depend on thread count, execution order or the other layers. Noise is
// added in binary32 (fma(σ, z, x), rounded once to the block's dtype). The AVX-512, AVX2+FMA
// and portable kernels give the same bits; on AVX-512, bf16 rows of a multiple of 32 elements
// are generated and perturbed in one loop (detail::row_noise_bf16_fused_avx512).
#ifndef LATENTAUDIT_KV_NOISE_HPP
#define LATENTAUDIT_KV_NOISE_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/parallel.hpp"
#include "../core/rng.hpp"
#include "../core/types.hpp"
#include "kv_block.hpp"
#include "policy_spec.hpp"
#include "selection.hpp"

namespace latentaudit {

/// @brief What add_noise did.
struct noise_record {
  double sigma_requested = 0;    ///< spec.sigma
  double sigma_applied_rms = 0;  ///< RMS of the σ actually used per perturbed element
  double signal_rms = 0;         ///< RMS of the perturbed elements before noise
  double realized_snr_db =
      std::numeric_limits<double>::infinity();  ///< 10·log10(signal power / added noise power)
  std::uint64_t elements = 0;                   ///< elements perturbed
};

namespace detail {

/// @brief The σ of each channel (head h, dim d → h·D + d) of one (layer, part) unit under
/// `spec`, from the per-channel sums of squares `ss` (H·D of them) over its `rows` present,
/// selected tokens. Shared with engines that compute the sums elsewhere (the CUDA example).
[[nodiscard]] inline std::vector<double> channel_sigmas(const noise_spec& spec, std::span<const double> ss,
                                                        std::int64_t rows, std::size_t H, std::size_t D) {
  double layer_ss = 0;
  for (double v : ss) layer_ss += v;
  std::vector<double> sig(H * D, 0.0);
  for (std::size_t h = 0; h < H; ++h) {
    double head_ss = 0;
    for (std::size_t d = 0; d < D; ++d) head_ss += ss[h * D + d];
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t c = h * D + d;
      const double n_layer = static_cast<double>(rows) * static_cast<double>(H * D);
      switch (spec.scale) {
        case noise_scale::absolute:
          sig[c] = spec.sigma;
          break;
        case noise_scale::rms_layer:
          sig[c] = spec.sigma * std::sqrt(layer_ss / n_layer);
          break;
        case noise_scale::rms_head:
          sig[c] = spec.sigma * std::sqrt(head_ss / (static_cast<double>(rows) * static_cast<double>(D)));
          break;
        case noise_scale::rms_channel:
          sig[c] = spec.sigma * std::sqrt(ss[c] / static_cast<double>(rows));
          break;
        case noise_scale::snr_db:
          sig[c] = std::sqrt(layer_ss / n_layer) * std::pow(10.0, -spec.sigma / 20.0);
          break;
      }
    }
  }
  return sig;
}

/// @brief Per-channel sums of squares of one row (acc[c] += x[c]²) in binary32.
template <class T>
[[gnu::always_inline]] inline void row_squares_body(const std::byte* x, std::size_t n, float* acc) noexcept {
  for (std::size_t c = 0; c < n; ++c) {
    const float v = load_cache<T>(x, c);
    acc[c] += v * v;
  }
}

/// @brief x[c] = fma(σ[c], z[c], x[c]) rounded to T where σ[c] ≠ 0 (elements with σ = 0 keep
/// their bits), and the power actually added: np[c] = fma(d, d, np[c]), d = new − old; with
/// Squares also sq[c] = fma(old, old, sq[c]). Every product is an explicit fused multiply-add,
/// so the portable, AVX2 and AVX-512 kernels give the same bits.
template <class T, bool Squares = false>
[[gnu::always_inline]] inline void row_noise_body(std::byte* x, std::size_t n, const float* sig,
                                                  const float* z, float* np, float* sq = nullptr) noexcept {
  for (std::size_t c = 0; c < n; ++c) {
    const float old = load_cache<T>(x, c);
    if constexpr (Squares) sq[c] = std::fma(old, old, sq[c]);
    const float sum = std::fma(sig[c], z[c], old);
    store_cache<T>(x, c, select_bits(sig[c] != 0.0f, sum, old));
    const float added = load_cache<T>(x, c) - old;
    np[c] = std::fma(added, added, np[c]);
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
template <class T>
__attribute__((target("avx2"))) void row_squares_avx2(const std::byte* x, std::size_t n,
                                                      float* acc) noexcept {
  row_squares_body<T>(x, n, acc);
}
template <class T, bool Squares>
__attribute__((target("avx2,fma"))) void row_noise_avx2(std::byte* x, std::size_t n, const float* sig,
                                                        const float* z, float* np, float* sq) noexcept {
  row_noise_body<T, Squares>(x, n, sig, z, np, sq);
}
#endif

template <class T>
void row_squares(const std::byte* x, std::size_t n, float* acc) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (normals_have_avx2()) return row_squares_avx2<T>(x, n, acc);
#endif
  row_squares_body<T>(x, n, acc);
}

template <class T, bool Squares = false>
void row_noise(std::byte* x, std::size_t n, const float* sig, const float* z, float* np,
               float* sq = nullptr) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (bulk_have_avx2_fma()) return row_noise_avx2<T, Squares>(x, n, sig, z, np, sq);
#endif
  row_noise_body<T, Squares>(x, n, sig, z, np, sq);
}

#ifdef LATENTAUDIT_BULK_AVX512
#if !defined(__clang__)
#pragma GCC diagnostic push  // see core/rng.hpp: GCC 12's intrinsics and -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/// @brief Bulk noise on one present bf16 row of C elements (C a multiple of 32) whose first
/// element is stream element n0 (a multiple of 32), generated and added in the same AVX-512
/// loop: a 64-byte chunk holds elements 2l (low halves) and 2l + 1 (high halves) of 16 lanes,
/// which are exactly the cos and sin deviates of Box–Muller pair l of the chunk's group
/// (bulk_normal_batch). σ, the noise power and the squares are kept in the same even/odd
/// layout (sig_eo[32k + l] = σ[32k + 2l], sig_eo[32k + 16 + l] = σ[32k + 2l + 1]). The same
/// operations as bulk_group_portable + row_noise_body, so the same bits. Masked: some σ may be
/// 0 (those elements keep their bits); without it every σ must be nonzero.
template <int N, bool Squares, bool Masked>
[[gnu::always_inline]] LATENTAUDIT_BULK_AVX512_TARGET inline void noise_chunks_bf16_avx512(
    std::byte* row, const float* sig_eo, float* np_eo, float* sq_eo, std::uint64_t first_seed,
    std::uint64_t group_in_batch) noexcept {
  const __m512i jg =
      _mm512_set_epi64(static_cast<long long>(8 * bulk_gamma), static_cast<long long>(7 * bulk_gamma),
                       static_cast<long long>(6 * bulk_gamma), static_cast<long long>(5 * bulk_gamma),
                       static_cast<long long>(4 * bulk_gamma), static_cast<long long>(3 * bulk_gamma),
                       static_cast<long long>(2 * bulk_gamma), static_cast<long long>(bulk_gamma));
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  const __m512i bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1);
  __m512i h[2 * N];
  h[0] = _mm512_add_epi64(
      _mm512_set1_epi64(static_cast<long long>(first_seed + 16 * group_in_batch * bulk_gamma)), jg);
  for (int k = 0; k < N; ++k) {
    if (k > 0)
      h[k] = _mm512_add_epi64(
          h[0], _mm512_set1_epi64(static_cast<long long>(16 * static_cast<std::uint64_t>(k) * bulk_gamma)));
    h[N + k] = _mm512_add_epi64(h[k], _mm512_set1_epi64(static_cast<long long>(8 * bulk_gamma)));
  }
  mix64_avx512<2 * N>(h);
  __m512 zc[N], zs[N];
  bulk_pairs_avx512<N>(h, h + N, zc, zs);
  for (int k = 0; k < N; ++k) {
    std::byte* const p = row + 64 * k;
    const float* const se = sig_eo + 32 * k;
    const __m512i xin = _mm512_loadu_si512(p);
    const __m512 ev = _mm512_castsi512_ps(_mm512_slli_epi32(xin, 16)),
                 od = _mm512_castsi512_ps(_mm512_and_si512(xin, high));
    const __m512 s0 = _mm512_loadu_ps(se), s1 = _mm512_loadu_ps(se + 16);
    __m512 ne, no;
    if constexpr (Masked) {  // σ = 0 keeps the old bits (fma(0, z, x) turns −0 into +0, quiets sNaN)
      const __m512 zero = _mm512_setzero_ps();
      ne = _mm512_mask3_fmadd_ps(s0, zc[k], ev, _mm512_cmp_ps_mask(s0, zero, _CMP_NEQ_UQ));
      no = _mm512_mask3_fmadd_ps(s1, zs[k], od, _mm512_cmp_ps_mask(s1, zero, _CMP_NEQ_UQ));
    } else {
      ne = _mm512_fmadd_ps(s0, zc[k], ev);
      no = _mm512_fmadd_ps(s1, zs[k], od);
    }
    const __m512i be = _mm512_castps_si512(ne), bo = _mm512_castps_si512(no);
    const __m512i re =
        _mm512_add_epi32(_mm512_add_epi32(be, bias), _mm512_and_si512(_mm512_srli_epi32(be, 16), one));
    const __m512i ro =
        _mm512_add_epi32(_mm512_add_epi32(bo, bias), _mm512_and_si512(_mm512_srli_epi32(bo, 16), one));
    _mm512_storeu_si512(p,
                        _mm512_ternarylogic_epi32(_mm512_srli_epi32(re, 16), ro, high, 0xF8));  // a | (b & c)
    const __m512 de = _mm512_sub_ps(_mm512_castsi512_ps(_mm512_and_si512(re, high)), ev);
    const __m512 dd = _mm512_sub_ps(_mm512_castsi512_ps(_mm512_and_si512(ro, high)), od);
    float* const n = np_eo + 32 * k;
    _mm512_storeu_ps(n, _mm512_fmadd_ps(de, de, _mm512_loadu_ps(n)));
    _mm512_storeu_ps(n + 16, _mm512_fmadd_ps(dd, dd, _mm512_loadu_ps(n + 16)));
    if constexpr (Squares) {
      float* const q = sq_eo + 32 * k;
      _mm512_storeu_ps(q, _mm512_fmadd_ps(ev, ev, _mm512_loadu_ps(q)));
      _mm512_storeu_ps(q + 16, _mm512_fmadd_ps(od, od, _mm512_loadu_ps(q + 16)));
    }
  }
}

/// @brief Bulk noise on one present bf16 row of C elements (C a multiple of 32) whose first
/// element is stream element n0 (a multiple of 32), generated and added in the same AVX-512
/// loop: a 64-byte chunk holds elements 2l (low halves) and 2l + 1 (high halves) of 16 lanes,
/// which are exactly the cos and sin deviates of Box–Muller pair l of the chunk's group
/// (bulk_normal_batch). σ, the noise power and the squares are kept in the same even/odd
/// layout (sig_eo[32k + l] = σ[32k + 2l], sig_eo[32k + 16 + l] = σ[32k + 2l + 1]). The same
/// operations as bulk_group_portable + row_noise_body, so the same bits. Four groups at a time
/// (their dependency chains interleaved) within a batch, else one. Masked: as in
/// noise_chunks_bf16_avx512 (false only when every σ is nonzero).
template <bool Squares, bool Masked>
LATENTAUDIT_BULK_AVX512_TARGET void row_noise_bf16_fused_avx512(std::byte* row, std::size_t C,
                                                                const float* sig_eo, float* np_eo,
                                                                float* sq_eo, const philox4x32& g,
                                                                std::uint64_t n0, std::uint64_t& cur_batch,
                                                                std::uint64_t& cur_seed) noexcept {
  for (std::size_t c0 = 0; c0 < C;) {
    const std::uint64_t group = (n0 + c0) / 32, batch = group / 32, k = group % 32;
    if (batch != cur_batch) {
      cur_seed = bulk_batch_seed(g, batch);
      cur_batch = batch;
    }
    float* const sq = Squares ? sq_eo + c0 : nullptr;
    if (c0 + 128 <= C && k + 3 < 32) {
      noise_chunks_bf16_avx512<4, Squares, Masked>(row + 2 * c0, sig_eo + c0, np_eo + c0, sq, cur_seed, k);
      c0 += 128;
    } else {
      noise_chunks_bf16_avx512<1, Squares, Masked>(row + 2 * c0, sig_eo + c0, np_eo + c0, sq, cur_seed, k);
      c0 += 32;
    }
  }
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

inline void check_noise_spec(std::string_view fn, const noise_spec& s) {
  check_finite(fn, "spec.sigma", s.sigma);
  if (s.scale != noise_scale::snr_db) check_nonnegative(fn, "spec.sigma", s.sigma);
  if (s.part != kv_part::keys && s.part != kv_part::values && s.part != kv_part::both)
    throw_invalid(fn, "spec.part", "must be keys, values or both");
  if (s.layers.first < 0 || s.tokens.first < 0)
    throw_invalid(fn, "spec.layers/tokens", "bands must start at >= 0");
}
}  // namespace detail

/// @brief Adds N(0, σ_eff²) noise in place (rounded once to the block's dtype).
/// σ = 0 leaves the block bit-for-bit unchanged. Absent (masked) rows stay zero.
/// @returns the realized σ, SNR and element count.
/// @throws invalid_argument on a negative or non-finite σ, or a bad band.
inline noise_record add_noise(kv_block& block, const noise_spec& spec) {
  constexpr std::string_view fn = "add_noise";
  detail::check_noise_spec(fn, spec);
  noise_record rec;
  rec.sigma_requested = spec.sigma;
  const std::int64_t t0 = std::max<std::int64_t>(0, spec.tokens.first),
                     t1 = std::min(block.n_tokens(), spec.tokens.last);
  const std::size_t H = static_cast<std::size_t>(block.n_kv_heads());
  // work units: (present layer, part) in the band; each has its own stream
  struct unit {
    std::size_t i;
    int part;
    double signal = 0, noise_power = 0, sigma2 = 0;
    std::uint64_t elements = 0;
  };
  std::vector<unit> units;
  for (std::size_t i = 0; i < block.n_layers(); ++i) {
    if (!spec.layers.contains(block.layers()[i])) continue;
    if (spec.part != kv_part::values) units.push_back({i, 0});
    if (spec.part != kv_part::keys) units.push_back({i, 1});
  }
  visit_cache_type(block.type(), [&](auto tag) {
    using T = decltype(tag);
    parallel_chunks(units.size(), 1, spec.threads, [&](std::size_t u0, std::size_t u1) {
      for (std::size_t u = u0; u < u1; ++u) {
        unit& w = units[u];
        const bool value = w.part == 1;
        const std::size_t D = static_cast<std::size_t>(value ? block.head_dim_v() : block.head_dim_k());
        std::span<T> x = value ? block.template v<T>(w.i) : block.template k<T>(w.i);
        std::byte* const base = std::as_writable_bytes(x).data();
        const std::size_t C = H * D, row_bytes = C * sizeof(T);
        // per-channel sums of squares over the selected, present tokens (binary32 per 64 rows)
        std::vector<double> ss(C, 0.0);
        std::vector<float> acc(C, 0.0f);
        auto flush = [&] {
          for (std::size_t c = 0; c < C; ++c) {
            ss[c] += static_cast<double>(acc[c]);
            acc[c] = 0.0f;
          }
        };
        // an absolute σ does not depend on the data: the squares are then summed in the noise pass
        const bool fused = spec.scale == noise_scale::absolute && spec.sigma != 0.0;
        std::int64_t rows = 0;
        for (std::int64_t t = t0; t < t1; ++t) {
          if (!block.token_present(w.i, t)) continue;
          if (!fused) detail::row_squares<T>(base + static_cast<std::size_t>(t) * row_bytes, C, acc.data());
          if (++rows % 64 == 0 && !fused) flush();
        }
        flush();
        if (rows == 0) continue;
        double layer_ss = 0;
        for (double v : ss) layer_ss += v;
        const std::vector<double> sig = detail::channel_sigmas(spec, ss, rows, H, D);
        std::vector<float> sigf(C);
        for (std::size_t c = 0; c < C; ++c) {
          w.sigma2 += sig[c] * sig[c];
          sigf[c] = static_cast<float>(sig[c]);
        }
        w.sigma2 *= static_cast<double>(rows);
        w.signal = layer_ss;
        w.elements = static_cast<std::uint64_t>(rows) * H * D;
        bool any = false;
        for (float v : sigf) any = any || v != 0.0f;
        if (!any) continue;  // σ = 0: the block is left bit for bit as it was
        const auto g = make_stream({.seed = spec.seed,
                                    .item = spec.item,
                                    .arm = static_cast<std::uint32_t>(w.part),
                                    .replicate = static_cast<std::uint32_t>(block.layers()[w.i])});
        // bulk deviates (bulk_normal_batch) in element order over the present rows: stream element
        // rank·C + c for channel c of the rank-th present row
        std::fill(acc.begin(), acc.end(), 0.0f);
        std::vector<double> np(C, 0.0);
        std::vector<float> sq(fused ? C : 0, 0.0f);
        // the AVX-512 bf16 kernel generates and adds in one loop when every row starts a group of 32
        bool fast = false;
#ifdef LATENTAUDIT_BULK_AVX512
        fast = std::is_same_v<T, Eigen::bfloat16> && C % 32 == 0 && detail::bulk_have_avx512();
#endif
        // position in acc / sq of channel c: channel order, or the fast kernel's even/odd layout
        auto pos = [fast](std::size_t c) {
          return fast ? (c & ~std::size_t{31}) + (c & 1u) * 16 + ((c & 31u) >> 1) : c;
        };
        std::vector<float> sig_eo;
        bool masked = true;  // whether some σ is 0 (those elements must keep their bits)
        if (fast) {
          sig_eo.resize(C);
          for (std::size_t c = 0; c < C; ++c) sig_eo[pos(c)] = sigf[c];
          masked = std::find(sigf.begin(), sigf.end(), 0.0f) != sigf.end();
        }
        // the double sums np and (fused) ss_acc are kept in the layout of acc and sq, and mapped
        // back to channel order at the end: the same additions in the same order per channel
        std::vector<double> ss_acc(fused ? C : 0, 0.0);
        auto flush_noise = [&] {
          for (std::size_t i = 0; i < C; ++i) {
            np[i] += static_cast<double>(acc[i]);
            acc[i] = 0.0f;
          }
          if (fused)
            for (std::size_t i = 0; i < C; ++i) {
              ss_acc[i] += static_cast<double>(sq[i]);
              sq[i] = 0.0f;
            }
        };
        alignas(64) std::array<float, bulk_normal_batch_size> z;
        std::size_t used = bulk_normal_batch_size;
        std::uint64_t batch = 0, cur_batch = ~std::uint64_t{0}, cur_seed = 0;
        std::int64_t since = 0;
        for (std::int64_t t = t0; t < t1; ++t) {
          if (!block.token_present(w.i, t)) continue;
          std::byte* row = base + static_cast<std::size_t>(t) * row_bytes;
#ifdef LATENTAUDIT_BULK_AVX512
          if (fast) {
            const std::uint64_t n0 = static_cast<std::uint64_t>(since) * C;
            float* const sqp = fused ? sq.data() : nullptr;
            if (fused && masked) {
              detail::row_noise_bf16_fused_avx512<true, true>(row, C, sig_eo.data(), acc.data(), sqp, g, n0,
                                                              cur_batch, cur_seed);
            } else if (fused) {
              detail::row_noise_bf16_fused_avx512<true, false>(row, C, sig_eo.data(), acc.data(), sqp, g, n0,
                                                               cur_batch, cur_seed);
            } else if (masked) {
              detail::row_noise_bf16_fused_avx512<false, true>(row, C, sig_eo.data(), acc.data(), sqp, g, n0,
                                                               cur_batch, cur_seed);
            } else {
              detail::row_noise_bf16_fused_avx512<false, false>(row, C, sig_eo.data(), acc.data(), sqp, g, n0,
                                                                cur_batch, cur_seed);
            }
          }
#endif
          for (std::size_t c0 = 0; c0 < C && !fast;) {
            if (used == bulk_normal_batch_size) {
              bulk_normal_batch(g, batch++, z);
              used = 0;
            }
            const std::size_t len = std::min(C - c0, bulk_normal_batch_size - used);
            if (fused) {
              detail::row_noise<T, true>(row + c0 * sizeof(T), len, sigf.data() + c0, z.data() + used,
                                         acc.data() + c0, sq.data() + c0);
            } else {
              detail::row_noise<T>(row + c0 * sizeof(T), len, sigf.data() + c0, z.data() + used,
                                   acc.data() + c0);
            }
            used += len;
            c0 += len;
          }
          if (++since % 64 == 0) flush_noise();
        }
        flush_noise();
        for (std::size_t c = 0; c < C; ++c) w.noise_power += np[pos(c)];
        if (fused) {
          double total = 0;
          for (std::size_t c = 0; c < C; ++c) total += ss[c] + ss_acc[pos(c)];
          w.signal = total;
        }
      }
    });
  });
  double signal = 0, noise_power = 0, sigma2 = 0;
  for (const auto& w : units) {
    signal += w.signal;
    noise_power += w.noise_power;
    sigma2 += w.sigma2;
    rec.elements += w.elements;
  }
  if (rec.elements > 0) {
    rec.sigma_applied_rms = std::sqrt(sigma2 / static_cast<double>(rec.elements));
    rec.signal_rms = std::sqrt(signal / static_cast<double>(rec.elements));
    rec.realized_snr_db =
        noise_power > 0 ? 10.0 * std::log10(signal / noise_power) : std::numeric_limits<double>::infinity();
  }
  return rec;
}

/// @brief Sets K and/or V of the selected layers and tokens to zero (positions unchanged).
/// @returns the number of elements zeroed.
inline std::uint64_t zero_kv(kv_block& block, kv_part part = kv_part::both,
                             index_range layers = {0, std::numeric_limits<std::int64_t>::max()},
                             index_range tokens = {0, std::numeric_limits<std::int64_t>::max()}) {
  std::uint64_t n = 0;
  const std::int64_t t0 = std::max<std::int64_t>(0, tokens.first),
                     t1 = std::min(block.n_tokens(), tokens.last);
  for (std::size_t i = 0; i < block.n_layers(); ++i) {
    if (!layers.contains(block.layers()[i])) continue;
    for (std::int64_t t = t0; t < t1; ++t)
      for (std::int32_t h = 0; h < block.n_kv_heads(); ++h) {
        if (part != kv_part::values)
          for (std::int32_t d = 0; d < block.head_dim_k(); ++d, ++n) block.set(i, false, t, h, d, 0.0f);
        if (part != kv_part::keys)
          for (std::int32_t d = 0; d < block.head_dim_v(); ++d, ++n) block.set(i, true, t, h, d, 0.0f);
      }
  }
  return n;
}

/// @brief Token dropout: removes each token independently with probability p (stream
/// (seed, item, arm = 2, replicate = 0), one uniform per token in order); kept tokens keep their
/// positions. `dropped` receives the removed token indices when non-null.
/// @throws invalid_argument unless 0 <= p <= 1.
[[nodiscard]] inline kv_block drop_tokens(const kv_block& block, double p, std::uint64_t seed,
                                          std::uint64_t item, std::vector<std::int64_t>* dropped = nullptr) {
  detail::check_closed_unit("drop_tokens", "p", p);
  auto g = make_stream({.seed = seed, .item = item, .arm = 2, .replicate = 0});
  std::vector<std::int64_t> keep;
  for (std::int64_t t = 0; t < block.n_tokens(); ++t) {
    if (uniform01(g) < p) {
      if (dropped != nullptr) dropped->push_back(t);
    } else {
      keep.push_back(t);
    }
  }
  std::vector<layer_index> layers(block.layers().begin(), block.layers().end());
  return apply_selection(block, uniform_selection(std::move(layers), std::move(keep)));
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_NOISE_HPP
