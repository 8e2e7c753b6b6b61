// SPDX-License-Identifier: MIT
// latentaudit: the one escaping of text that reaches report.md from records, tasks or options
// (regime names, arm labels, task text, warnings and sentences built around them). Data never
// renders as Markdown or HTML: no tag (<script>), no link or image ([x](javascript:...),
// ![x](https://...)), no autolink (<https://...>, bare http://... or www. ...), no emphasis or code
// span, no table cell break, no line break.
#ifndef LATENTAUDIT_REPORT_DETAIL_MARKDOWN_TEXT_HPP
#define LATENTAUDIT_REPORT_DETAIL_MARKDOWN_TEXT_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <cctype>
#include <string>
#include <string_view>

namespace latentaudit::detail {

/// @brief `t` as inert Markdown text (CommonMark and GitHub's dialect), readable as written: '<'
/// becomes the entity &lt; (so no raw tag survives, not even as a substring), '&' is backslash-escaped
/// (no entity begins), a leading '>' too (no block quote); the characters that
/// open links, images, emphasis, code spans or split a table cell (`[ ] ( ) ! * _ ` | \ ~`) are
/// backslash-escaped; the ':' of a "scheme://" and the '.' after "www" are escaped, so no bare URL
/// becomes a link; control bytes (newline, NUL, DEL) become the text \xNN.
/// @returns the escaped text, rendered by any Markdown viewer as the bytes of `t` (control bytes
///          shown as \xNN).
[[nodiscard]] inline std::string markdown_text(std::string_view t) {
  std::string out;
  out.reserve(t.size() + t.size() / 8);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += i == 0 ? "\\>" : ">";  // a '>' opens a block quote only at the start; elsewhere it is text
    } else if (c == '&') {
      out += "\\&";  // escaped, it cannot begin an entity; "x >= 1 & y" stays readable in the raw file
    } else if (u < 0x20 || u == 0x7F) {
      static constexpr char hex[] = "0123456789ABCDEF";
      out += "\\x";
      out.push_back(hex[u >> 4]);
      out.push_back(hex[u & 0xF]);
    } else {
      const bool url_colon = c == ':' && t.substr(i + 1, 2) == "//";
      const bool www_dot = c == '.' && i >= 3 && std::tolower(static_cast<unsigned char>(t[i - 1])) == 'w' &&
                           std::tolower(static_cast<unsigned char>(t[i - 2])) == 'w' &&
                           std::tolower(static_cast<unsigned char>(t[i - 3])) == 'w';
      switch (c) {
        case '|':
        case '*':
        case '_':
        case '`':
        case '\\':
        case '[':
        case ']':
        case '(':
        case ')':
        case '!':
        case '~':
          out.push_back('\\');
          break;
        default:
          if (url_colon || www_dot) out.push_back('\\');
      }
      out.push_back(c);
    }
  }
  return out;
}

/// @brief `t` as a Markdown code span (`t`) where that is inert: printable text without a
/// backtick, '|', '\\', '<', '>' or '&' (bytes from 0x80 pass: UTF-8); anything else as
/// markdown_text(t), escaped instead of code-spanned.
[[nodiscard]] inline std::string markdown_code(std::string_view t) {
  bool plain = !t.empty();
  for (const char c : t) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F || c == '`' || c == '|' || c == '\\' || c == '<' || c == '>' || c == '&')
      plain = false;
  }
  return plain ? "`" + std::string(t) + "`" : markdown_text(t);
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_MARKDOWN_TEXT_HPP
