// SPDX-License-Identifier: MIT
// Catch2 shim: v2 single header today (Debian 12 ships 2.13); v3 later touches only this file.
#ifndef LATENTAUDIT_TESTS_SUPPORT_CATCH_HPP
#define LATENTAUDIT_TESTS_SUPPORT_CATCH_HPP
#if __has_include(<catch2/catch.hpp>)
#include <catch2/catch.hpp>
#else
#include <catch2/catch_all.hpp>
#endif
#endif
