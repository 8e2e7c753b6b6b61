// SPDX-License-Identifier: MIT
// latentaudit: argument checks at the API boundary. Each throws a latentaudit::error subtype whose
// message names the function, the argument and what was expected:
//   "welch_t_test: argument 'level' must lie in (0, 1), got 1.5"
#ifndef LATENTAUDIT_CORE_DETAIL_CHECK_HPP
#define LATENTAUDIT_CORE_DETAIL_CHECK_HPP

#include "internal_header_check.hpp"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "../../config.hpp"
#include "../error.hpp"
#include "../number_text.hpp"

namespace latentaudit::detail {

/// @brief Builds "function: argument 'name' expected" + details.
inline std::string arg_message(std::string_view function, std::string_view name, std::string_view what) {
  std::string m;
  m.reserve(function.size() + name.size() + what.size() + 16);
  m.append(function).append(": argument '").append(name).append("' ").append(what);
  return m;
}

/// @brief Throws invalid_argument "function: argument 'name' <what>" (cold path).
[[noreturn]] inline void throw_invalid(std::string_view function, std::string_view name,
                                       std::string_view what) {
  LATENTAUDIT_THROW(invalid_argument(arg_message(function, name, what)));
}

/// @brief Checks that x is finite (not NaN, not infinite).
/// @throws invalid_argument naming function and argument.
inline void check_finite(std::string_view function, std::string_view name, double x) {
  if (!std::isfinite(x)) throw_invalid(function, name, "must be finite, got " + number_text(x));
}

/// @brief Checks every element of xs is finite; the message gives the first bad index.
/// @throws invalid_argument naming function, argument and index.
inline void check_finite(std::string_view function, std::string_view name, std::span<const double> xs) {
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!std::isfinite(xs[i])) [[unlikely]] {
      throw_invalid(function, name,
                    "must hold finite values, got " + number_text(xs[i]) + " at index " + std::to_string(i));
    }
  }
}

/// @brief Checks 0 < p < 1 (confidence levels, significance levels, quantile probabilities).
/// @throws invalid_argument naming function and argument.
inline void check_open_unit(std::string_view function, std::string_view name, double p) {
  if (!(p > 0.0 && p < 1.0)) throw_invalid(function, name, "must lie in (0, 1), got " + number_text(p));
}

/// @brief Checks 0 <= p <= 1.
/// @throws invalid_argument naming function and argument.
inline void check_closed_unit(std::string_view function, std::string_view name, double p) {
  if (!(p >= 0.0 && p <= 1.0)) throw_invalid(function, name, "must lie in [0, 1], got " + number_text(p));
}

/// @brief Checks x > 0 and finite.
/// @throws invalid_argument naming function and argument.
inline void check_positive(std::string_view function, std::string_view name, double x) {
  if (!(x > 0.0) || !std::isfinite(x))
    throw_invalid(function, name, "must be positive and finite, got " + number_text(x));
}

/// @brief Checks x >= 0 and finite.
/// @throws invalid_argument naming function and argument.
inline void check_nonnegative(std::string_view function, std::string_view name, double x) {
  if (!(x >= 0.0) || !std::isfinite(x))
    throw_invalid(function, name, "must be non-negative and finite, got " + number_text(x));
}

/// @brief Checks that a sample has at least `minimum` observations.
/// @throws invalid_argument "function: argument 'name' has n observations, expected >= minimum".
inline void check_min_size(std::string_view function, std::string_view name, std::size_t n,
                           std::size_t minimum) {
  if (n < minimum) {
    throw_invalid(function, name,
                  "has " + std::to_string(n) + (n == 1 ? " observation" : " observations") +
                      ", expected at least " + std::to_string(minimum));
  }
}

/// @brief Checks that two paired arguments have the same size.
/// @throws shape_mismatch naming both arguments and sizes.
inline void check_same_size(std::string_view function, std::string_view name_a, std::size_t a,
                            std::string_view name_b, std::size_t b) {
  if (a != b) {
    std::string m(function);
    m.append(": arguments '")
        .append(name_a)
        .append("' and '")
        .append(name_b)
        .append("' must have the same size, got ")
        .append(std::to_string(a))
        .append(" and ")
        .append(std::to_string(b));
    LATENTAUDIT_THROW(shape_mismatch(m));
  }
}

/// @brief Checks lo <= x <= hi for an integer-like count.
/// @throws invalid_argument naming function and argument.
inline void check_in_range(std::string_view function, std::string_view name, long long x, long long lo,
                           long long hi) {
  if (x < lo || x > hi) {
    throw_invalid(
        function, name,
        "must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(x));
  }
}

/// @brief Checks that each element of xs is 0 or 1 (binary outcomes).
/// @throws invalid_argument naming the first bad index.
inline void check_binary(std::string_view function, std::string_view name, std::span<const double> xs) {
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] != 0.0 && xs[i] != 1.0) [[unlikely]] {
      throw_invalid(function, name,
                    "must hold 0/1 outcomes, got " + number_text(xs[i]) + " at index " + std::to_string(i));
    }
  }
}

/// @brief Throws numerical_error "function: what" for statistically undefined inputs.
[[noreturn]] inline void throw_numerical(std::string_view function, std::string_view what) {
  std::string m(function);
  m.append(": ").append(what);
  LATENTAUDIT_THROW(numerical_error(m));
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_CORE_DETAIL_CHECK_HPP
