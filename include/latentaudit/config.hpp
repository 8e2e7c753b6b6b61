// SPDX-License-Identifier: MIT
// latentaudit: configuration macros (throw point, internal assertions).
#ifndef LATENTAUDIT_CONFIG_HPP
#define LATENTAUDIT_CONFIG_HPP

#include <cstdio>
#include <cstdlib>

/// @brief Every throw in the library goes through this macro. Without exceptions
/// (`-fno-exceptions`) it prints the message and aborts.
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define LATENTAUDIT_THROW(...) throw __VA_ARGS__
#else
#define LATENTAUDIT_THROW(...)                                            \
  do {                                                                    \
    std::fprintf(stderr, "latentaudit: fatal error (exceptions off)\n"); \
    std::abort();                                                         \
  } while (false)
#endif

/// @brief Internal invariant check; compiled away under NDEBUG. Not for user input:
/// user input is checked with the `detail::check_*` helpers, which always throw.
#ifdef NDEBUG
#define LATENTAUDIT_ASSERT(expr, msg) static_cast<void>(0)
#else
#define LATENTAUDIT_ASSERT(expr, msg)                                                       \
  do {                                                                                      \
    if (!(expr)) {                                                                          \
      std::fprintf(stderr, "latentaudit: assertion failed: %s (%s) at %s:%d\n", #expr, msg, \
                   __FILE__, __LINE__);                                                     \
      std::abort();                                                                         \
    }                                                                                       \
  } while (false)
#endif

#endif  // LATENTAUDIT_CONFIG_HPP
