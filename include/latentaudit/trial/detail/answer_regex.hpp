// SPDX-License-Identifier: MIT
// latentaudit: the matcher of the `regex` scoring of task files (docs/tasks.md): RE2 syntax, matched
// in linear time with bounded memory and no recursion. RE2 is optional: define
// LATENTAUDIT_HAVE_RE2=1 and link libre2 (the CMake target latentaudit::re2, or latentaudit::compiled,
// which links it). Without it, regex scoring is refused at load (the message says why); every other
// scoring works without RE2. std::regex is not used: its recursive matcher overflows the stack on a
// nested pattern ("(" * 60000 + "a" + ")" * 60000), which no bound on the input can make safe.
#ifndef LATENTAUDIT_TRIAL_DETAIL_ANSWER_REGEX_HPP
#define LATENTAUDIT_TRIAL_DETAIL_ANSWER_REGEX_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#if defined(LATENTAUDIT_HAVE_RE2) && LATENTAUDIT_HAVE_RE2
#include <re2/re2.h>
#endif

namespace latentaudit::detail {

/// Longest accepted pattern, in bytes.
inline constexpr std::size_t answer_regex_max_bytes = 4096;
/// Memory RE2 may spend on one compiled pattern (its program and DFA caches), in bytes.
inline constexpr std::int64_t answer_regex_max_mem = std::int64_t{1} << 20;

/// @brief A compiled answer pattern: matches somewhere in a text (RE2 PartialMatch).
using answer_matcher = std::function<bool(std::string_view)>;

/// @brief Compiles `pattern`; on failure returns an empty matcher and sets `why` (a message without
/// the field's name, e.g. "is not a valid RE2 regex: missing ): (b").
[[nodiscard]] inline answer_matcher compile_answer_regex(const std::string& pattern, std::string& why) {
  if (pattern.size() > answer_regex_max_bytes) {
    why = "is a pattern of " + std::to_string(pattern.size()) + " bytes, longer than the limit of " +
          std::to_string(answer_regex_max_bytes);
    return {};
  }
#if defined(LATENTAUDIT_HAVE_RE2) && LATENTAUDIT_HAVE_RE2
  RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(answer_regex_max_mem);
  auto re = std::make_shared<const RE2>(pattern, o);
  if (!re->ok()) {
    why = "is not a valid RE2 regex (docs/tasks.md): " + re->error();
    return {};
  }
  return [re](std::string_view text) {
    return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re);
  };
#else
  why =
      "regex scoring needs RE2, and this build has none (install libre2-dev and rebuild; header-only "
      "users define LATENTAUDIT_HAVE_RE2=1 and link re2, docs/tasks.md)";
  return {};
#endif
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_TRIAL_DETAIL_ANSWER_REGEX_HPP
