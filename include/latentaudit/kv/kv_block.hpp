// SPDX-License-Identifier: MIT
// latentaudit: the canonical KV block — what agent A hands agent B.
//
// Per present layer, K and V are stored token-major as [tokens][kv_heads][head_dim] (llama.cpp
// rows, vLLM "NHD"); K and V head dims may differ. Each token carries the position its key was
// rotated for. The block may hold a subset of the model's layers (layer slicing), listed in
// `layers()` in increasing order. A model fingerprint travels with the block; import checks it.
#ifndef LATENTAUDIT_KV_KV_BLOCK_HPP
#define LATENTAUDIT_KV_KV_BLOCK_HPP

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#endif

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/types.hpp"

namespace latentaudit {

/// @brief How rotary dimensions are paired. The numeric values are part of the wire format.
enum class rope_pairing : std::uint8_t {
  none = 0,  ///< no rotary embedding (keys are position-free)
  neox = 1,  ///< split-half pairs (i, i + rot/2): HF `rotate_half`, GPT-NeoX, Qwen
  norm = 2,  ///< adjacent pairs (2i, 2i + 1): llama.cpp's NORM for Llama GGUFs, GPT-J
};

/// @brief Name of a pairing ("none", "neox", "norm").
[[nodiscard]] constexpr std::string_view rope_pairing_name(rope_pairing p) noexcept {
  switch (p) {
    case rope_pairing::none:
      return "none";
    case rope_pairing::neox:
      return "neox";
    case rope_pairing::norm:
      return "norm";
  }
  return "unknown";
}

/// @brief The rotary embedding a cache's keys carry.
struct rope_descriptor {
  rope_pairing pairing = rope_pairing::neox;  ///< pairing convention
  float theta = 10000.0f;                     ///< base θ (HF `rope_theta`)
  std::int32_t rotary_dims = 0;               ///< rotated dims per head; 0 means all of head_dim_k
  /// @brief Field-wise equality.
  friend bool operator==(const rope_descriptor&, const rope_descriptor&) = default;
};

/// @brief Identifies the model a cache belongs to. A cache can only be imported by a model with
/// an equal fingerprint (unless the caller forces it).
struct model_fingerprint {
  std::string architecture;        ///< e.g. "LlamaForCausalLM"
  std::int32_t n_layers = 0;       ///< transformer layers
  std::int32_t n_heads = 0;        ///< query heads
  std::int32_t n_kv_heads = 0;     ///< key/value heads (GQA)
  std::int32_t head_dim_k = 0;     ///< key head dimension
  std::int32_t head_dim_v = 0;     ///< value head dimension
  rope_descriptor rope;            ///< rotary embedding of the keys
  std::uint64_t weights_hash = 0;  ///< hash of the weights (0 = unknown)
  /// @brief Field-wise equality.
  friend bool operator==(const model_fingerprint&, const model_fingerprint&) = default;
};

/// @brief Names the fields in which two fingerprints differ ("" if equal), e.g.
/// "n_kv_heads 2 vs 4, weights_hash 17 vs 99".
[[nodiscard]] inline std::string fingerprint_mismatch(const model_fingerprint& a,
                                                      const model_fingerprint& b) {
  std::string out;
  auto add = [&](std::string_view field, const std::string& x, const std::string& y) {
    if (x == y) return;
    if (!out.empty()) out += ", ";
    out.append(field).append(" ").append(x).append(" vs ").append(y);
  };
  add("architecture", a.architecture, b.architecture);
  add("n_layers", number_text(a.n_layers), number_text(b.n_layers));
  add("n_heads", number_text(a.n_heads), number_text(b.n_heads));
  add("n_kv_heads", number_text(a.n_kv_heads), number_text(b.n_kv_heads));
  add("head_dim_k", number_text(a.head_dim_k), number_text(b.head_dim_k));
  add("head_dim_v", number_text(a.head_dim_v), number_text(b.head_dim_v));
  add("rope.pairing", std::string(rope_pairing_name(a.rope.pairing)),
      std::string(rope_pairing_name(b.rope.pairing)));
  add("rope.theta", number_text(static_cast<double>(a.rope.theta)),
      number_text(static_cast<double>(b.rope.theta)));
  add("rope.rotary_dims", number_text(a.rope.rotary_dims), number_text(b.rope.rotary_dims));
  add("weights_hash", number_text(a.weights_hash), number_text(b.weights_hash));
  return out;
}

/// @brief Throws incompatible_model if `offered` differs from `expected`, naming the fields.
/// @throws incompatible_model "function: cache fingerprint does not match the model: <fields>"
inline void check_fingerprint(std::string_view function, const model_fingerprint& expected,
                              const model_fingerprint& offered) {
  if (expected == offered) return;
  std::string m(function);
  m.append(": cache fingerprint does not match the model: ").append(fingerprint_mismatch(offered, expected));
  LATENTAUDIT_THROW(incompatible_model(m));
}

/// @brief Checks that a fingerprint is self-consistent (positive sizes, heads divisible, rotary
/// dims even and within head_dim_k).
/// @throws invalid_argument naming the field.
inline void check_fingerprint_valid(std::string_view function, const model_fingerprint& f) {
  detail::check_in_range(function, "fingerprint.n_layers", f.n_layers, 1, 1 << 16);
  detail::check_in_range(function, "fingerprint.n_heads", f.n_heads, 1, 1 << 16);
  detail::check_in_range(function, "fingerprint.n_kv_heads", f.n_kv_heads, 1, f.n_heads);
  if (f.n_heads % f.n_kv_heads != 0) {
    detail::throw_invalid(
        function, "fingerprint.n_kv_heads",
        "must divide n_heads, got " + std::to_string(f.n_kv_heads) + " and " + std::to_string(f.n_heads));
  }
  detail::check_in_range(function, "fingerprint.head_dim_k", f.head_dim_k, 1, 1 << 16);
  detail::check_in_range(function, "fingerprint.head_dim_v", f.head_dim_v, 1, 1 << 16);
  if (f.rope.pairing != rope_pairing::none) {
    detail::check_in_range(function, "fingerprint.rope.rotary_dims", f.rope.rotary_dims, 0, f.head_dim_k);
    const int rot = f.rope.rotary_dims == 0 ? f.head_dim_k : f.rope.rotary_dims;
    if (rot % 2 != 0)
      detail::throw_invalid(function, "fingerprint.rope.rotary_dims",
                            "must be even, got " + std::to_string(rot));
    detail::check_positive(function, "fingerprint.rope.theta", static_cast<double>(f.rope.theta));
  }
}

/// @brief Calls f(T{}) with T the C++ element type of t (float, Eigen::half, Eigen::bfloat16).
/// @pre t is f32, f16 or bf16.
template <class F>
decltype(auto) visit_cache_type(dtype t, F&& f) {
  switch (t) {
    case dtype::f16:
      return f(Eigen::half{});
    case dtype::bf16:
      return f(Eigen::bfloat16{});
    default:
      return f(float{});
  }
}

namespace detail {

/// @brief std::allocator that leaves value-initialised elements uninitialised: growing a vector
/// (resize) only allocates, it does not write the new elements. Used for the payload of kv_block
/// so that code which overwrites every byte (slicing, decoding) does not pay for a zero fill.
/// Only for implicit-lifetime element types (trivially copyable and destructible), whose objects
/// the allocation itself creates.
template <class T>
struct uninitialized_allocator {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  using value_type = T;  ///< element type
  uninitialized_allocator() noexcept = default;
  /// @brief Rebinding copy.
  template <class U>
  constexpr uninitialized_allocator(const uninitialized_allocator<U>&) noexcept {
  }  // NOLINT(google-explicit-constructor)
  /// @brief Storage for n elements.
  [[nodiscard]] T* allocate(std::size_t n) { return std::allocator<T>{}.allocate(n); }
  /// @brief Frees storage from allocate.
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>{}.deallocate(p, n); }
  /// @brief Value-initialisation is skipped (the element keeps an unspecified value).
  template <class U>
  void construct(U*) noexcept {}
  /// @brief Construction from arguments (copies) is ordinary placement new.
  template <class U, class A0, class... A>
  void construct(U* p, A0&& a0, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A0>(a0), std::forward<A>(a)...);
  }
  /// @brief All instances are interchangeable.
  template <class U>
  friend constexpr bool operator==(const uninitialized_allocator&,
                                   const uninitialized_allocator<U>&) noexcept {
    return true;
  }
};

/// @brief A vector of cache elements whose growth does not zero-fill.
template <class T>
using cache_vector = std::vector<T, uninitialized_allocator<T>>;

/// @brief Copies worth streaming past the cache (bulk payloads, far larger than any cache level
/// the copy could usefully leave them in).
inline constexpr std::size_t stream_copy_min_bytes = std::size_t{16} << 20;

/// @brief memcpy for bulk payload pieces: on x86-64, non-temporal (streaming) stores over four
/// interleaved 4 KiB pages at a time, prefetching the next four, which avoids reading the destination into
/// the cache before overwriting it (what glibc's memcpy does for copies larger than its own threshold);
/// elsewhere, and for short pieces, memcpy. The stores are fenced before return. The ranges must not overlap.
inline void stream_copy(std::byte* d, const std::byte* s, std::size_t n) noexcept {
#if defined(__x86_64__) || defined(_M_X64)
  constexpr std::size_t page = 4096;
  if (n >= 4 * page + 64) {
    // whole destination cache lines: partial lines defeat write combining
    const std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(d) & 63u)) & 63u;
    if (head != 0) std::memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 4 * page; n -= 4 * page, d += 4 * page, s += 4 * page) {
      for (std::size_t i = 0; i < page; i += 64) {
        for (std::size_t k = 0; k < 4; ++k) {
          // the same line of the next four pages (a hint: never faults, even past the end)
          _mm_prefetch(reinterpret_cast<const char*>(s + 4 * page + k * page + i), _MM_HINT_T0);
          const auto* src = reinterpret_cast<const __m128i*>(s + k * page + i);
          auto* dst = reinterpret_cast<__m128i*>(d + k * page + i);
          const __m128i a = _mm_loadu_si128(src), b = _mm_loadu_si128(src + 1), c = _mm_loadu_si128(src + 2),
                        e = _mm_loadu_si128(src + 3);
          _mm_stream_si128(dst, a);
          _mm_stream_si128(dst + 1, b);
          _mm_stream_si128(dst + 2, c);
          _mm_stream_si128(dst + 3, e);
        }
      }
    }
    _mm_sfence();
  }
#endif
  if (n != 0) std::memcpy(d, s, n);
}

struct kv_block_access;

/// @brief Element c of a row of cache elements of type T held at `p`, as float (bf16 by a
/// shift). Through memcpy of the element's bits, which the compiler vectorizes.
template <class T>
[[gnu::always_inline]] inline float load_cache(const std::byte* p, std::size_t c) noexcept {
  if constexpr (std::is_same_v<T, float>) {
    float f;
    std::memcpy(&f, p + 4 * c, 4);
    return f;
  } else {
    std::uint16_t u;
    std::memcpy(&u, p + 2 * c, 2);
    if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
      return std::bit_cast<float>(static_cast<std::uint32_t>(u) << 16);
    } else {
      return static_cast<float>(Eigen::numext::bit_cast<T>(u));
    }
  }
}

/// @brief Stores f rounded to T as element c of the row at `p` (bf16: round to nearest even, as
/// Eigen does for every f that is not NaN).
/// @pre f is not NaN (decoded values never are: zero point and scale are finite).
template <class T>
[[gnu::always_inline]] inline void store_cache(std::byte* p, std::size_t c, float f) noexcept {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(p + 4 * c, &f, 4);
  } else {
    std::uint16_t u;
    if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
      const std::uint32_t b = std::bit_cast<std::uint32_t>(f);
      u = static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
    } else {
      u = Eigen::numext::bit_cast<std::uint16_t>(static_cast<T>(f));
    }
    std::memcpy(p + 2 * c, &u, 2);
  }
}

}  // namespace detail

/// @brief An owning KV block: K and V of some layers of a model for a run of tokens.
class kv_block {
 public:
  /// @brief An empty block (no layers, no tokens).
  kv_block() = default;

  /// @brief A zero-filled block for `layers` (model layer ids, strictly increasing, each in
  /// [0, fingerprint.n_layers)) and `n_tokens` tokens, element type `type` (f32, f16, bf16).
  /// Positions are 0, 1, ..., n_tokens − 1.
  /// @throws invalid_argument on an invalid fingerprint, layer list, token count or dtype.
  kv_block(model_fingerprint fingerprint, std::vector<layer_index> layers, std::int64_t n_tokens, dtype type)
      : fp_(std::move(fingerprint)), layers_(std::move(layers)), n_tokens_(n_tokens), type_(type) {
    check_shape("kv_block");
    allocate();
    const auto bytes = payload_mut();
    if (!bytes.empty()) std::memset(bytes.data(), 0, bytes.size());
  }

  /// @brief A block holding every layer of the model.
  static kv_block all_layers(model_fingerprint fingerprint, std::int64_t n_tokens, dtype type) {
    std::vector<layer_index> l(static_cast<std::size_t>(std::max(0, fingerprint.n_layers)));
    for (std::size_t i = 0; i < l.size(); ++i) l[i] = static_cast<layer_index>(i);
    return kv_block(std::move(fingerprint), std::move(l), n_tokens, type);
  }

  /// @brief The model this cache belongs to.
  [[nodiscard]] const model_fingerprint& fingerprint() const noexcept { return fp_; }
  /// @brief Replaces the fingerprint (e.g. a forced cross-model relay); shapes must agree.
  /// @throws shape_mismatch if kv heads or head dims differ.
  void set_fingerprint(model_fingerprint f) {
    constexpr std::string_view fn = "kv_block::set_fingerprint";
    check_fingerprint_valid(fn, f);
    detail::check_same_size(fn, "n_kv_heads", static_cast<std::size_t>(f.n_kv_heads), "block n_kv_heads",
                            static_cast<std::size_t>(fp_.n_kv_heads));
    detail::check_same_size(fn, "head_dim_k", static_cast<std::size_t>(f.head_dim_k), "block head_dim_k",
                            static_cast<std::size_t>(fp_.head_dim_k));
    detail::check_same_size(fn, "head_dim_v", static_cast<std::size_t>(f.head_dim_v), "block head_dim_v",
                            static_cast<std::size_t>(fp_.head_dim_v));
    if (!layers_.empty() && layers_.back() >= f.n_layers)
      detail::throw_invalid(fn, "f.n_layers", "must cover the block's layers");
    fp_ = std::move(f);
  }
  /// @brief Element type of K and V.
  [[nodiscard]] dtype type() const noexcept { return type_; }
  /// @brief Model layer ids present, increasing.
  [[nodiscard]] std::span<const layer_index> layers() const noexcept { return layers_; }
  /// @brief Number of layers present.
  [[nodiscard]] std::size_t n_layers() const noexcept { return layers_.size(); }
  /// @brief Number of tokens.
  [[nodiscard]] std::int64_t n_tokens() const noexcept { return n_tokens_; }
  /// @brief KV heads per layer.
  [[nodiscard]] std::int32_t n_kv_heads() const noexcept { return fp_.n_kv_heads; }
  /// @brief Key head dimension.
  [[nodiscard]] std::int32_t head_dim_k() const noexcept { return fp_.head_dim_k; }
  /// @brief Value head dimension.
  [[nodiscard]] std::int32_t head_dim_v() const noexcept { return fp_.head_dim_v; }
  /// @brief Index of model layer `layer` among the present layers, or −1.
  [[nodiscard]] std::int64_t find_layer(layer_index layer) const noexcept {
    auto it = std::lower_bound(layers_.begin(), layers_.end(), layer);
    return (it != layers_.end() && *it == layer) ? it - layers_.begin() : -1;
  }

  /// @brief Positions of the tokens (the RoPE positions the keys are rotated for).
  [[nodiscard]] std::span<position_t> positions() noexcept { return positions_; }
  /// @brief Positions of the tokens.
  [[nodiscard]] std::span<const position_t> positions() const noexcept { return positions_; }

  /// @brief Elements of K in one layer: tokens × kv_heads × head_dim_k.
  [[nodiscard]] std::size_t k_elements() const noexcept {
    return static_cast<std::size_t>(n_tokens_) * static_cast<std::size_t>(fp_.n_kv_heads) *
           static_cast<std::size_t>(fp_.head_dim_k);
  }
  /// @brief Elements of V in one layer: tokens × kv_heads × head_dim_v.
  [[nodiscard]] std::size_t v_elements() const noexcept {
    return static_cast<std::size_t>(n_tokens_) * static_cast<std::size_t>(fp_.n_kv_heads) *
           static_cast<std::size_t>(fp_.head_dim_v);
  }

  /// @brief K of present layer i as T (T must match type()).
  /// @throws invalid_argument on a dtype mismatch or i out of range.
  template <cache_scalar T>
  [[nodiscard]] std::span<T> k(std::size_t i) {
    return layer_span<T>(i, false);
  }
  /// @brief V of present layer i as T.
  template <cache_scalar T>
  [[nodiscard]] std::span<T> v(std::size_t i) {
    return layer_span<T>(i, true);
  }
  /// @brief K of present layer i as T (read-only).
  template <cache_scalar T>
  [[nodiscard]] std::span<const T> k(std::size_t i) const {
    return const_cast<kv_block*>(this)->layer_span<T>(i, false);
  }
  /// @brief V of present layer i as T (read-only).
  template <cache_scalar T>
  [[nodiscard]] std::span<const T> v(std::size_t i) const {
    return const_cast<kv_block*>(this)->layer_span<T>(i, true);
  }

  /// @brief Raw little-endian bytes of the whole payload (layer-major, K then V per layer).
  [[nodiscard]] std::span<const std::byte> payload() const noexcept {
    return std::visit([](const auto& v) { return std::as_bytes(std::span(v)); }, data_);
  }
  /// @brief Writable raw bytes of the payload.
  [[nodiscard]] std::span<std::byte> payload_mut() noexcept {
    return std::visit([](auto& v) { return std::as_writable_bytes(std::span(v)); }, data_);
  }

  /// @brief Bytes of K and V (the payload).
  [[nodiscard]] std::size_t payload_bytes() const noexcept { return payload().size(); }
  /// @brief Bytes of one token's K and V in one layer.
  [[nodiscard]] std::size_t row_bytes() const noexcept { return layer_elements() * dtype_size(type_); }

  /// @brief Payload of the present rows plus positions (4 bytes a token) plus the token mask
  /// bitmap when there is one: the bytes a relay must carry at minimum.
  [[nodiscard]] std::size_t content_bytes() const noexcept {
    if (mask_.empty()) return payload_bytes() + positions_.size() * sizeof(position_t);
    std::size_t rows = 0;
    for (auto m : mask_) rows += m;
    return rows * row_bytes() + positions_.size() * sizeof(position_t) + (mask_.size() + 7) / 8;
  }

  /// @brief Whether some layers hold only some of the block's tokens (ragged selections such as
  /// PyramidKV budgets or KVComm's sink-only layers).
  [[nodiscard]] bool has_token_mask() const noexcept { return !mask_.empty(); }
  /// @brief Whether token t is present in present layer i (always true without a mask). A token
  /// absent from a layer has zero K and V there and must not be attended to by the receiver.
  [[nodiscard]] bool token_present(std::size_t i, std::int64_t t) const noexcept {
    return mask_.empty() || mask_[i * static_cast<std::size_t>(n_tokens_) + static_cast<std::size_t>(t)] != 0;
  }
  /// @brief The mask, layer-major [n_layers][n_tokens] of 0/1 (empty: every token everywhere).
  [[nodiscard]] std::span<const std::uint8_t> token_mask() const noexcept { return mask_; }
  /// @brief Number of tokens present in present layer i.
  [[nodiscard]] std::int64_t present_tokens(std::size_t i) const noexcept {
    if (mask_.empty()) return n_tokens_;
    std::int64_t c = 0;
    for (std::int64_t t = 0; t < n_tokens_; ++t)
      c += mask_[i * static_cast<std::size_t>(n_tokens_) + static_cast<std::size_t>(t)];
    return c;
  }
  /// @brief Sets the per-layer token mask (layer-major, values 0/1) and zeroes K and V of absent
  /// entries. An all-ones mask is stored as no mask.
  /// @throws shape_mismatch if mask.size() != n_layers · n_tokens; invalid_argument on values
  ///         other than 0/1.
  void set_token_mask(std::vector<std::uint8_t> mask) {
    constexpr std::string_view fn = "kv_block::set_token_mask";
    detail::check_same_size(fn, "mask", mask.size(), "n_layers * n_tokens",
                            layers_.size() * static_cast<std::size_t>(n_tokens_));
    bool all = true;
    for (std::size_t j = 0; j < mask.size(); ++j) {
      if (mask[j] > 1)
        detail::throw_invalid(
            fn, "mask", "must hold 0/1, got " + std::to_string(mask[j]) + " at index " + std::to_string(j));
      all = all && mask[j] == 1;
    }
    if (all) {
      mask_.clear();
      return;
    }
    mask_ = std::move(mask);
    for (std::size_t i = 0; i < layers_.size(); ++i)
      for (std::int64_t t = 0; t < n_tokens_; ++t)
        if (!token_present(i, t)) zero_row(i, t);
  }
  /// @brief Zeroes K and V of token t in present layer i.
  void zero_row(std::size_t i, std::int64_t t) noexcept {
    for (std::int32_t h = 0; h < fp_.n_kv_heads; ++h) {
      for (std::int32_t d = 0; d < fp_.head_dim_k; ++d) set(i, false, t, h, d, 0.0f);
      for (std::int32_t d = 0; d < fp_.head_dim_v; ++d) set(i, true, t, h, d, 0.0f);
    }
  }

  /// @brief Reads element (layer i, token t, head h, dim d) of K or V as float.
  /// @pre indices in range (checked by LATENTAUDIT_ASSERT in debug builds).
  [[nodiscard]] float get(std::size_t i, bool value, std::int64_t t, std::int32_t h,
                          std::int32_t d) const noexcept {
    const std::size_t off = element_offset(i, value, t, h, d);
    return std::visit([off](const auto& v) { return static_cast<float>(v[off]); }, data_);
  }
  /// @brief Writes element (layer i, token t, head h, dim d) of K or V, rounding to type().
  void set(std::size_t i, bool value, std::int64_t t, std::int32_t h, std::int32_t d, float x) noexcept {
    const std::size_t off = element_offset(i, value, t, h, d);
    std::visit([off, x](auto& v) { v[off] = static_cast<std::decay_t<decltype(v[0])>>(x); }, data_);
  }

  /// @brief A copy with elements converted to `type` (round-to-nearest-even).
  /// @throws invalid_argument if type is not f32, f16 or bf16.
  [[nodiscard]] kv_block converted(dtype type) const {
    kv_block out(fp_, layers_, n_tokens_, type);
    out.positions_ = positions_;
    out.mask_ = mask_;
    std::visit(
        [&](const auto& src) {
          std::visit(
              [&](auto& dst) {
                using D = std::decay_t<decltype(dst[0])>;
                for (std::size_t j = 0; j < src.size(); ++j)
                  dst[j] = static_cast<D>(static_cast<float>(src[j]));
              },
              out.data_);
        },
        data_);
    return out;
  }

  /// @brief All K and V elements as floats (layer-major, K then V), for analysis and tests.
  [[nodiscard]] std::vector<float> to_floats() const {
    return std::visit(
        [](const auto& v) {
          std::vector<float> f(v.size());
          for (std::size_t j = 0; j < v.size(); ++j) f[j] = static_cast<float>(v[j]);
          return f;
        },
        data_);
  }

  /// @brief Exact equality of metadata, positions and payload bits.
  friend bool operator==(const kv_block& a, const kv_block& b) {
    if (!(a.fp_ == b.fp_ && a.layers_ == b.layers_ && a.n_tokens_ == b.n_tokens_ && a.type_ == b.type_ &&
          a.positions_ == b.positions_ && a.mask_ == b.mask_))
      return false;
    const auto pa = a.payload(), pb = b.payload();
    return pa.size() == pb.size() && std::equal(pa.begin(), pa.end(), pb.begin());
  }

 private:
  friend struct detail::kv_block_access;

  // Validates fingerprint, dtype, token count and layer list (in the members).
  void check_shape(std::string_view fn) const {
    check_fingerprint_valid(fn, fp_);
    if (!is_floating(type_)) detail::throw_invalid(fn, "type", "must be f32, f16 or bf16");
    detail::check_in_range(fn, "n_tokens", n_tokens_, 0, std::int64_t{1} << 31);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      detail::check_in_range(fn, "layers", layers_[i], 0, fp_.n_layers - 1);
      if (i > 0 && layers_[i] <= layers_[i - 1])
        detail::throw_invalid(fn, "layers", "must be strictly increasing");
    }
  }
  // Sizes the payload for the members' shape (reusing the storage when the element type is
  // unchanged; new elements are left unwritten), positions 0, 1, ..., no mask.
  void allocate() {
    const std::size_t n = static_cast<std::size_t>(n_tokens_) * layers_.size() * layer_elements();
    auto size_as = [&](auto tag) {
      using T = decltype(tag);
      if (auto* v = std::get_if<detail::cache_vector<T>>(&data_)) {
        v->resize(n);
      } else {
        data_ = detail::cache_vector<T>(n);
      }
    };
    switch (type_) {
      case dtype::f32:
        size_as(float{});
        break;
      case dtype::f16:
        size_as(Eigen::half{});
        break;
      default:
        size_as(Eigen::bfloat16{});
        break;
    }
    positions_.resize(static_cast<std::size_t>(n_tokens_));
    for (std::size_t t = 0; t < positions_.size(); ++t) positions_[t] = static_cast<position_t>(t);
    mask_.clear();
  }

  [[nodiscard]] std::size_t layer_elements() const noexcept {
    return static_cast<std::size_t>(fp_.n_kv_heads) *
           static_cast<std::size_t>(fp_.head_dim_k + fp_.head_dim_v);
  }
  [[nodiscard]] std::size_t element_offset(std::size_t i, bool value, std::int64_t t, std::int32_t h,
                                           std::int32_t d) const noexcept {
    LATENTAUDIT_ASSERT(i < layers_.size() && t >= 0 && t < n_tokens_ && h >= 0 && h < fp_.n_kv_heads,
                       "kv_block index");
    const std::size_t base = i * static_cast<std::size_t>(n_tokens_) * layer_elements();
    const std::size_t hd = static_cast<std::size_t>(value ? fp_.head_dim_v : fp_.head_dim_k);
    const std::size_t start = value ? base + k_elements() : base;
    return start +
           (static_cast<std::size_t>(t) * static_cast<std::size_t>(fp_.n_kv_heads) +
            static_cast<std::size_t>(h)) *
               hd +
           static_cast<std::size_t>(d);
  }
  template <cache_scalar T>
  [[nodiscard]] std::span<T> layer_span(std::size_t i, bool value) {
    constexpr std::string_view fn = "kv_block::k/v";
    if (dtype_of<T>::value != type_)
      detail::throw_invalid(fn, "T", "must match the block's dtype " + std::string(dtype_name(type_)));
    if (i >= layers_.size())
      detail::check_in_range(fn, "i", static_cast<long long>(i), 0,
                             static_cast<long long>(layers_.size()) - 1);
    auto& vec = std::get<detail::cache_vector<T>>(data_);
    const std::size_t base = i * static_cast<std::size_t>(n_tokens_) * layer_elements();
    return value ? std::span<T>(vec).subspan(base + k_elements(), v_elements())
                 : std::span<T>(vec).subspan(base, k_elements());
  }

  model_fingerprint fp_;
  std::vector<layer_index> layers_;
  std::int64_t n_tokens_ = 0;
  dtype type_ = dtype::f32;
  std::vector<position_t> positions_;
  std::vector<std::uint8_t> mask_;  // [layer][token] 0/1, empty = all present
  std::variant<detail::cache_vector<float>, detail::cache_vector<Eigen::half>,
               detail::cache_vector<Eigen::bfloat16>>
      data_;
};

namespace detail {

/// @brief Library-internal construction of blocks whose every payload byte the caller writes
/// next (slicing, decoding): no zero fill, and storage reused where possible.
struct kv_block_access {
  /// @brief Reshapes `b` in place (fingerprint, layers, tokens, dtype validated as by the
  /// constructor), keeping its payload storage when the dtype is unchanged. Positions become
  /// 0, 1, ..., the mask is cleared, and the payload's contents are unspecified: the caller must
  /// write every byte before the block is read.
  /// @throws invalid_argument as the kv_block constructor.
  static void reshape_unwritten(kv_block& b, model_fingerprint fingerprint, std::vector<layer_index> layers,
                                std::int64_t n_tokens, dtype type, std::string_view fn) {
    b.fp_ = std::move(fingerprint);
    b.layers_ = std::move(layers);
    b.n_tokens_ = n_tokens;
    b.type_ = type;
    try {
      b.check_shape(fn);
    } catch (...) {
      b = kv_block();
      throw;
    }
    b.allocate();
  }
};

}  // namespace detail

/// @brief Copies K (or V) of present layer i into HF's per-layer layout [1, kv_heads, tokens, head_dim]
/// (head-major "HND", as `DynamicCache.layers[l].keys`), as floats.
///
/// @code
/// const auto hf = to_hf_layout(b, i, value);  // element (h, t, d) at (h·tokens + t)·head_dim + d
/// from_hf_layout(c, i, value, hf);             // c's layer i now holds b's K (value false) or V
/// @endcode
[[nodiscard]] inline std::vector<float> to_hf_layout(const kv_block& b, std::size_t i, bool value) {
  detail::check_in_range("to_hf_layout", "i", static_cast<long long>(i), 0,
                         static_cast<long long>(b.n_layers()) - 1);
  const std::int32_t H = b.n_kv_heads(), D = value ? b.head_dim_v() : b.head_dim_k();
  const std::int64_t T = b.n_tokens();
  std::vector<float> out(static_cast<std::size_t>(H) * static_cast<std::size_t>(T) *
                         static_cast<std::size_t>(D));
  for (std::int32_t h = 0; h < H; ++h)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int32_t d = 0; d < D; ++d)
        out[(static_cast<std::size_t>(h) * static_cast<std::size_t>(T) + static_cast<std::size_t>(t)) *
                static_cast<std::size_t>(D) +
            static_cast<std::size_t>(d)] = b.get(i, value, t, h, d);
  return out;
}

/// @brief Fills K (or V) of present layer i from HF's layout [1, kv_heads, tokens, head_dim]
/// (the example of to_hf_layout).
/// @throws shape_mismatch if hf has the wrong number of elements.
inline void from_hf_layout(kv_block& b, std::size_t i, bool value, std::span<const float> hf) {
  constexpr std::string_view fn = "from_hf_layout";
  detail::check_in_range(fn, "i", static_cast<long long>(i), 0, static_cast<long long>(b.n_layers()) - 1);
  const std::int32_t H = b.n_kv_heads(), D = value ? b.head_dim_v() : b.head_dim_k();
  const std::int64_t T = b.n_tokens();
  detail::check_same_size(
      fn, "hf", hf.size(), "kv_heads*tokens*head_dim",
      static_cast<std::size_t>(H) * static_cast<std::size_t>(T) * static_cast<std::size_t>(D));
  for (std::int32_t h = 0; h < H; ++h)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int32_t d = 0; d < D; ++d)
        b.set(i, value, t, h, d,
              hf[(static_cast<std::size_t>(h) * static_cast<std::size_t>(T) + static_cast<std::size_t>(t)) *
                     static_cast<std::size_t>(D) +
                 static_cast<std::size_t>(d)]);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_KV_BLOCK_HPP
