// SPDX-License-Identifier: MIT
// latentaudit: configuration macros (compiled mode, throw point, internal assertions).
#ifndef LATENTAUDIT_CONFIG_HPP
#define LATENTAUDIT_CONFIG_HPP

#include <cstdio>
#include <cstdlib>

/// @brief Compiled mode. By default latentaudit is header-only: every function is defined in the
/// headers. Defining `LATENTAUDIT_COMPILED_LIB` (the CMake target `latentaudit::compiled` does it for
/// its users) turns the heavy non-template functions — the ones whose bodies instantiate Eigen
/// decompositions and Boost.Math distributions — into declarations; their definitions in
/// `<module>/impl/<name>-inl.hpp` are then compiled once, one translation unit each (CMakeLists.txt), instead
/// of in every translation unit that includes them (docs/building.md). The same scheme as {fmt}'s
/// `FMT_HEADER_ONLY` and spdlog's `SPDLOG_COMPILED_LIB`.
#if defined(LATENTAUDIT_COMPILED_LIB)
#define LATENTAUDIT_INLINE
#else
#define LATENTAUDIT_INLINE inline
#endif

/// @brief Every throw in the library goes through this macro. latentaudit reports every bad input
/// by exception (docs/getting-started.md "Errors") and needs exceptions enabled.
#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS)
#error "latentaudit reports errors by exception: compile with exceptions enabled (no -fno-exceptions)"
#endif
#define LATENTAUDIT_THROW(...) throw __VA_ARGS__

/// @brief Internal invariant check; compiled away under NDEBUG. Not for user input:
/// user input is checked with the `detail::check_*` helpers, which always throw.
#ifdef NDEBUG
#define LATENTAUDIT_ASSERT(expr, msg) static_cast<void>(0)
#else
#define LATENTAUDIT_ASSERT(expr, msg)                                                                 \
  do {                                                                                                \
    if (!(expr)) {                                                                                    \
      std::fprintf(stderr, "latentaudit: assertion failed: %s (%s) at %s:%d\n", #expr, msg, __FILE__, \
                   __LINE__);                                                                         \
      std::abort();                                                                                   \
    }                                                                                                 \
  } while (false)
#endif

#endif  // LATENTAUDIT_CONFIG_HPP
