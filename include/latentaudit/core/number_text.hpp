// SPDX-License-Identifier: MIT
// latentaudit: numbers as text in messages and files — the shortest decimal text that reads back
// as the same double (std::to_chars), "nan" / "inf" / "-inf" for non-finite values.
#ifndef LATENTAUDIT_CORE_NUMBER_TEXT_HPP
#define LATENTAUDIT_CORE_NUMBER_TEXT_HPP

#include <charconv>
#include <cmath>
#include <string>
#include <type_traits>

namespace latentaudit {

/// @brief Shortest round-trip decimal text of a double ("nan", "inf", "-inf" for non-finite values):
/// `number_text(0.1)` is "0.1", `number_text(1e300)` "1e+300".
/// @param x any double
/// @returns the text, which std::from_chars reads back as `x` (finite values)
inline std::string number_text(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, res.ptr);
}

/// @brief Decimal text of an integer (std::to_string).
/// @tparam Int an integral type
/// @param x the integer
/// @returns its decimal text
template <class Int>
requires std::is_integral_v<Int>
inline std::string number_text(Int x) { return std::to_string(x); }

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_NUMBER_TEXT_HPP
