// SPDX-License-Identifier: MIT
// The Levenshtein distance behind every "did you mean" hint: record fields and arm names
// (trial/record.hpp) and the CLI's commands and options (tools/cli) — one implementation.
#ifndef LATENTAUDIT_CORE_EDIT_DISTANCE_HPP
#define LATENTAUDIT_CORE_EDIT_DISTANCE_HPP

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <vector>

namespace latentaudit {

/// @brief The Levenshtein distance between `a` and `b` (insertions, deletions, substitutions, each
/// costing 1; a swapped pair of letters costs 2), in O(|a|·|b|) time and O(|b|) memory.
/// @param a the first word
/// @param b the second word
/// @returns the number of edits that turn `a` into `b`
[[nodiscard]] inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0U : 1U)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_EDIT_DISTANCE_HPP
