// SPDX-License-Identifier: MIT
// latentaudit: element types of caches and relays, and conversions between them.
#ifndef LATENTAUDIT_CORE_DTYPE_HPP
#define LATENTAUDIT_CORE_DTYPE_HPP

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

#include "../config.hpp"
#include "detail/check.hpp"

namespace latentaudit {

/// @brief Element type of a tensor. The numeric values are part of the wire format: never reorder.
enum class dtype : std::uint8_t {
  f32 = 0,   ///< IEEE-754 binary32
  f16 = 1,   ///< IEEE-754 binary16 (Eigen::half)
  bf16 = 2,  ///< bfloat16 (Eigen::bfloat16): the high half of a binary32
  i8 = 3,    ///< signed 8-bit integer (quantized payloads)
  u8 = 4,    ///< unsigned 8-bit integer (packed int4 pairs, fp8 codes)
  i32 = 5,   ///< signed 32-bit integer (token ids, positions)
};

/// @brief Bytes per element of t.
[[nodiscard]] constexpr std::size_t dtype_size(dtype t) noexcept {
  switch (t) {
    case dtype::f32:
      return 4;
    case dtype::f16:
      return 2;
    case dtype::bf16:
      return 2;
    case dtype::i8:
      return 1;
    case dtype::u8:
      return 1;
    case dtype::i32:
      return 4;
  }
  return 0;
}

/// @brief Lower-case name of t ("f32", "f16", "bf16", "i8", "u8", "i32").
[[nodiscard]] constexpr std::string_view dtype_name(dtype t) noexcept {
  switch (t) {
    case dtype::f32:
      return "f32";
    case dtype::f16:
      return "f16";
    case dtype::bf16:
      return "bf16";
    case dtype::i8:
      return "i8";
    case dtype::u8:
      return "u8";
    case dtype::i32:
      return "i32";
  }
  return "unknown";
}

/// @brief The dtype named `name` (as printed by dtype_name, or HF safetensors' "F32", "F16",
/// "BF16", "I8", "U8", "I32"), or nullopt.
[[nodiscard]] constexpr std::optional<dtype> parse_dtype(std::string_view name) noexcept {
  if (name == "f32" || name == "F32" || name == "float32") return dtype::f32;
  if (name == "f16" || name == "F16" || name == "float16") return dtype::f16;
  if (name == "bf16" || name == "BF16" || name == "bfloat16") return dtype::bf16;
  if (name == "i8" || name == "I8" || name == "int8") return dtype::i8;
  if (name == "u8" || name == "U8" || name == "uint8") return dtype::u8;
  if (name == "i32" || name == "I32" || name == "int32") return dtype::i32;
  return std::nullopt;
}

/// @brief Whether t is a floating-point element type (f32, f16, bf16).
[[nodiscard]] constexpr bool is_floating(dtype t) noexcept {
  return t == dtype::f32 || t == dtype::f16 || t == dtype::bf16;
}

/// @brief Maps a C++ element type to its dtype.
template <class T>
struct dtype_of;
/// @brief float is f32.
template <>
struct dtype_of<float> {
  static constexpr dtype value = dtype::f32;  ///< f32
};
/// @brief Eigen::half is f16.
template <>
struct dtype_of<Eigen::half> {
  static constexpr dtype value = dtype::f16;  ///< f16
};
/// @brief Eigen::bfloat16 is bf16.
template <>
struct dtype_of<Eigen::bfloat16> {
  static constexpr dtype value = dtype::bf16;  ///< bf16
};
/// @brief std::int8_t is i8.
template <>
struct dtype_of<std::int8_t> {
  static constexpr dtype value = dtype::i8;  ///< i8
};
/// @brief std::uint8_t is u8.
template <>
struct dtype_of<std::uint8_t> {
  static constexpr dtype value = dtype::u8;  ///< u8
};
/// @brief std::int32_t is i32.
template <>
struct dtype_of<std::int32_t> {
  static constexpr dtype value = dtype::i32;  ///< i32
};

/// @brief The element types a cache may hold: float, Eigen::half, Eigen::bfloat16.
template <class T>
concept cache_scalar =
    std::same_as<T, float> || std::same_as<T, Eigen::half> || std::same_as<T, Eigen::bfloat16>;

/// @brief Decodes `count` elements of type `src` stored little-endian in `bytes` into floats.
/// @throws invalid_argument if src is not floating or the buffer sizes disagree.
inline void decode_to_float(dtype src, std::span<const std::byte> bytes, std::span<float> out) {
  constexpr std::string_view fn = "decode_to_float";
  if (!is_floating(src)) detail::throw_invalid(fn, "src", "must be f32, f16 or bf16");
  detail::check_same_size(fn, "bytes", bytes.size(), "out * dtype_size", out.size() * dtype_size(src));
  const std::byte* p = bytes.data();
  switch (src) {
    case dtype::f32:
      if (!out.empty()) std::memcpy(out.data(), p, out.size() * 4);
      break;
    case dtype::f16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint16_t b;
        std::memcpy(&b, p + 2 * i, 2);
        out[i] = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(b));
      }
      break;
    case dtype::bf16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint16_t b;
        std::memcpy(&b, p + 2 * i, 2);
        const std::uint32_t w = std::uint32_t{b} << 16;
        std::memcpy(&out[i], &w, 4);
      }
      break;
    default:
      break;
  }
}

/// @brief Encodes floats as `dst` (round-to-nearest-even) into little-endian bytes.
/// @throws invalid_argument if dst is not floating or the buffer sizes disagree.
inline void encode_from_float(dtype dst, std::span<const float> in, std::span<std::byte> bytes) {
  constexpr std::string_view fn = "encode_from_float";
  if (!is_floating(dst)) detail::throw_invalid(fn, "dst", "must be f32, f16 or bf16");
  detail::check_same_size(fn, "bytes", bytes.size(), "in * dtype_size", in.size() * dtype_size(dst));
  std::byte* p = bytes.data();
  switch (dst) {
    case dtype::f32:
      if (!in.empty()) std::memcpy(p, in.data(), in.size() * 4);
      break;
    case dtype::f16:
      for (std::size_t i = 0; i < in.size(); ++i) {
        const auto b = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(in[i]));
        std::memcpy(p + 2 * i, &b, 2);
      }
      break;
    case dtype::bf16:
      for (std::size_t i = 0; i < in.size(); ++i) {
        const auto b = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(in[i]));
        std::memcpy(p + 2 * i, &b, 2);
      }
      break;
    default:
      break;
  }
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_DTYPE_HPP
