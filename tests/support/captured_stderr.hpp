// SPDX-License-Identifier: MIT
// Test support: what a piece of code writes to the process's stderr (file descriptor 2, so a C
// library's fprintf is captured too, not only std::cerr).
#ifndef LATENTAUDIT_TESTS_SUPPORT_CAPTURED_STDERR_HPP
#define LATENTAUDIT_TESTS_SUPPORT_CAPTURED_STDERR_HPP

#include <unistd.h>

#include <cstdio>
#include <string>

#include "catch.hpp"

namespace latentaudit::test {

/// @brief Runs `f` with stderr sent to a temporary file and returns what was written there.
template <class F>
std::string captured_stderr(F&& f) {
  std::fflush(stderr);
  const int saved = ::dup(2);
  std::FILE* tmp = std::tmpfile();
  REQUIRE(tmp != nullptr);
  ::dup2(::fileno(tmp), 2);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::rewind(tmp);
  std::string got;
  for (int c; (c = std::fgetc(tmp)) != EOF;) got.push_back(static_cast<char>(c));
  std::fclose(tmp);
  return got;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_CAPTURED_STDERR_HPP
