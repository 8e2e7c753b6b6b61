// SPDX-License-Identifier: MIT
// Test support shared by the test files of several modules: where the organisms live, the message
// of an expected exception, a JSON number that may be null, a text file written, a substring counted. One
// definition each, so that the test files of a program can be compiled together (CI's unity build,
// docs/building.md).
#ifndef LATENTAUDIT_TESTS_SUPPORT_COMMON_HPP
#define LATENTAUDIT_TESTS_SUPPORT_COMMON_HPP

#include <latentaudit/core/json.hpp>

#include <cmath>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

namespace latentaudit::test {

/// The built-in organisms' directory (models/ of the source tree), with a trailing slash.
inline const std::string models = std::string(LATENTAUDIT_SOURCE_DIR).append("/models/");

/// The same directory as a path.
inline const std::filesystem::path model_path = std::filesystem::path(LATENTAUDIT_SOURCE_DIR) / "models";

/// The message of the exception `f()` throws, or "" when it throws none.
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

/// The number under `key` of a JSON object, NaN where it is null.
inline double num(const json_value& j, const char* key) {
  const auto& v = j.at(key);
  return v.is_null() ? std::nan("") : v.as_number();
}

/// Writes `text` to `p` (created or truncated), byte for byte.
inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

/// How many times `what` (not empty) occurs in `s`, without overlaps.
inline std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_COMMON_HPP
