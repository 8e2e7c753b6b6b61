// SPDX-License-Identifier: MIT
// latentaudit: the one escaping of text that reaches report.html (html_escape), in its own header so
// that the report model's HTML writer (impl/report_model-inl.hpp) and report_html share it without
// including each other. Not part of the public API (html.hpp includes it).
#ifndef LATENTAUDIT_REPORT_DETAIL_HTML_TEXT_HPP
#define LATENTAUDIT_REPORT_DETAIL_HTML_TEXT_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <string>
#include <string_view>

namespace latentaudit::detail {

/// @brief Escapes & < > " ' for HTML text and attribute values; control bytes other than tab and
/// newline become U+FFFD.
/// @param s the text (UTF-8)
/// @returns the escaped text
[[nodiscard]] inline std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7F)
          out += "\xEF\xBF\xBD";  // U+FFFD
        else
          out.push_back(c);
    }
  }
  return out;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_HTML_TEXT_HPP
