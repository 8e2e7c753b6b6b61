// SPDX-License-Identifier: MIT
// latentaudit: small vocabulary types shared by every module.
#ifndef LATENTAUDIT_CORE_TYPES_HPP
#define LATENTAUDIT_CORE_TYPES_HPP

#include <cstddef>
#include <cstdint>

namespace latentaudit {

/// @brief A token id.
using token_id = std::int32_t;
/// @brief A position in a sequence (RoPE position id).
using position_t = std::int32_t;
/// @brief A layer index.
using layer_index = std::int32_t;
/// @brief A sequence handle inside an engine.
using seq_id = std::int32_t;

/// @brief A half-open index range [first, last).
struct index_range {
  std::int64_t first = 0;  ///< first index included
  std::int64_t last = 0;   ///< one past the last index included

  /// @brief Number of indices in the range (0 if last <= first).
  [[nodiscard]] constexpr std::int64_t size() const noexcept { return last > first ? last - first : 0; }
  /// @brief Whether the range holds no index.
  [[nodiscard]] constexpr bool empty() const noexcept { return last <= first; }
  /// @brief Whether i lies in [first, last).
  [[nodiscard]] constexpr bool contains(std::int64_t i) const noexcept { return i >= first && i < last; }
  /// @brief Equality of both ends.
  friend constexpr bool operator==(const index_range&, const index_range&) = default;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_TYPES_HPP
