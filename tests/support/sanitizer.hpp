// SPDX-License-Identifier: MIT
// Test support: whether this test program is built with AddressSanitizer (the second CI stage), and
// a size that shrinks there. The sanitizer stage exists to find memory errors and undefined
// behaviour on every code path; the statistical claims of the long organism tests (planted truths,
// verdicts at a given number of items) are checked at full size in the release stage. Tests that
// scale down under the sanitizer keep every code path and every structural check, and skip only
// the checks whose truth needs the full sample (docs/building.md, "What the sanitizer stage runs").
#ifndef LATENTAUDIT_TESTS_SUPPORT_SANITIZER_HPP
#define LATENTAUDIT_TESTS_SUPPORT_SANITIZER_HPP

#include <cstdint>

namespace latentaudit::test {

#if defined(__SANITIZE_ADDRESS__)
/// @brief True in a build with AddressSanitizer (GCC's macro).
inline constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool sanitized = true;  // clang's spelling
#else
inline constexpr bool sanitized = false;
#endif
#else
inline constexpr bool sanitized = false;
#endif

/// @brief `full` in the release build, `reduced` under the sanitizer.
template <class T>
constexpr T full_or_sanitized(T full, T reduced) noexcept {
  return sanitized ? reduced : full;
}

/// @brief Whether the checks that need the full sample run (not under the sanitizer).
inline constexpr bool full_sample = !sanitized;

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_SANITIZER_HPP
