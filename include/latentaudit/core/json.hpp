// SPDX-License-Identifier: MIT
// latentaudit: a small dependency-free JSON value, a strict RFC 8259 parser with limits, and a
// writer with shortest round-trip numbers. Used for JSONL journals, data tables and reports.
//
// Conventions (also in docs/cli.md):
//  - numbers are IEEE doubles: integers are exact up to 2^53 in magnitude; integral values in
//    that range are written without a fraction or exponent ("200", not "2e+02");
//  - other numbers are written with std::to_chars' shortest representation that round-trips;
//  - NaN and ±infinity have no JSON spelling and are written as `null`;
//  - objects keep their members in insertion order; the parser rejects duplicate keys;
//  - strings are UTF-8: the parser rejects invalid UTF-8 and lone surrogate escapes; the writer
//    escapes '"', '\\' and control characters and replaces invalid UTF-8 bytes by U+FFFD.
#ifndef LATENTAUDIT_CORE_JSON_HPP
#define LATENTAUDIT_CORE_JSON_HPP

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "../config.hpp"
#include "detail/check.hpp"
#include "error.hpp"

namespace latentaudit {

/// @brief The six kinds of JSON value.
enum class json_kind : unsigned char {
  null,     ///< `null`
  boolean,  ///< `true` / `false`
  number,   ///< a double (integers exact up to 2^53)
  string,   ///< UTF-8 text
  array,    ///< an ordered list of values
  object,   ///< string keys to values, in insertion order
};

/// @brief Text name of a kind ("null", "boolean", "number", "string", "array", "object").
[[nodiscard]] constexpr std::string_view json_kind_name(json_kind k) noexcept {
  switch (k) {
    case json_kind::null:
      return "null";
    case json_kind::boolean:
      return "boolean";
    case json_kind::number:
      return "number";
    case json_kind::string:
      return "string";
    case json_kind::array:
      return "array";
    case json_kind::object:
      return "object";
  }
  return "unknown";
}

/// @brief Largest magnitude up to which every integer is exactly representable (2^53).
inline constexpr double json_max_exact_integer = 9007199254740992.0;

/// @brief One JSON value: null, boolean, number, string, array or object.
///
/// Objects are vectors of (key, value) members, so they keep insertion order; lookups are linear.
/// Accessors of the wrong kind throw invalid_argument naming the accessor and both kinds.
class json_value {
 public:
  using array_type = std::vector<json_value>;              ///< an array's elements
  using member_type = std::pair<std::string, json_value>;  ///< one object member
  using object_type = std::vector<member_type>;            ///< an object's members, in order

  /// @brief A null value.
  json_value() noexcept = default;
  /// @brief A null value.
  json_value(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)
  /// @brief A boolean.
  json_value(bool b) noexcept : v_(b) {}  // NOLINT
  /// @brief A number from any arithmetic type (converted to double; integers beyond 2^53 round).
  template <class Number>
  requires(std::is_arithmetic_v<Number> && !std::is_same_v<Number, bool>) json_value(Number x)
  noexcept : v_(static_cast<double>(x)) {}  // NOLINT
  /// @brief A string (copied).
  json_value(std::string s) noexcept : v_(std::move(s)) {}  // NOLINT
  /// @brief A string (copied).
  json_value(std::string_view s) : v_(std::string(s)) {}  // NOLINT
  /// @brief A string (copied).
  json_value(const char* s) : v_(std::string(s)) {}  // NOLINT
  /// @brief An array.
  json_value(array_type a) noexcept : v_(std::move(a)) {}  // NOLINT
  /// @brief An object.
  json_value(object_type o) noexcept : v_(std::move(o)) {}  // NOLINT

  /// @brief An empty array, or one holding `elements`.
  [[nodiscard]] static json_value array(array_type elements = {}) { return json_value(std::move(elements)); }
  /// @brief An empty object, or one holding `members` (keys must be distinct; not checked).
  [[nodiscard]] static json_value object(object_type members = {}) { return json_value(std::move(members)); }

  /// @brief The kind of this value.
  [[nodiscard]] json_kind kind() const noexcept { return static_cast<json_kind>(v_.index()); }
  /// @brief Whether this is null.
  [[nodiscard]] bool is_null() const noexcept { return kind() == json_kind::null; }
  /// @brief Whether this is a boolean.
  [[nodiscard]] bool is_bool() const noexcept { return kind() == json_kind::boolean; }
  /// @brief Whether this is a number.
  [[nodiscard]] bool is_number() const noexcept { return kind() == json_kind::number; }
  /// @brief Whether this is a string.
  [[nodiscard]] bool is_string() const noexcept { return kind() == json_kind::string; }
  /// @brief Whether this is an array.
  [[nodiscard]] bool is_array() const noexcept { return kind() == json_kind::array; }
  /// @brief Whether this is an object.
  [[nodiscard]] bool is_object() const noexcept { return kind() == json_kind::object; }

  /// @brief The boolean. @throws invalid_argument if this is not a boolean.
  [[nodiscard]] bool as_bool() const { return get<bool>("as_bool", json_kind::boolean); }
  /// @brief The number. @throws invalid_argument if this is not a number.
  [[nodiscard]] double as_number() const { return get<double>("as_number", json_kind::number); }
  /// @brief The number as an exact integer.
  /// @throws invalid_argument if this is not a number, not integral, or beyond ±2^53.
  [[nodiscard]] std::int64_t as_int64() const {
    const double x = as_number();
    if (!(std::fabs(x) <= json_max_exact_integer) || std::trunc(x) != x) {
      detail::throw_invalid("json_value::as_int64", "value",
                            "must be an integer of magnitude at most 2^53, got " + number_text(x));
    }
    return static_cast<std::int64_t>(x);
  }
  /// @brief The string. @throws invalid_argument if this is not a string.
  [[nodiscard]] const std::string& as_string() const {
    return get<std::string>("as_string", json_kind::string);
  }
  /// @brief The array's elements. @throws invalid_argument if this is not an array.
  [[nodiscard]] const array_type& as_array() const { return get<array_type>("as_array", json_kind::array); }
  /// @brief The array's elements (mutable). @throws invalid_argument if this is not an array.
  [[nodiscard]] array_type& as_array() { return get<array_type>("as_array", json_kind::array); }
  /// @brief The object's members. @throws invalid_argument if this is not an object.
  [[nodiscard]] const object_type& as_object() const {
    return get<object_type>("as_object", json_kind::object);
  }
  /// @brief The object's members (mutable). @throws invalid_argument if this is not an object.
  [[nodiscard]] object_type& as_object() { return get<object_type>("as_object", json_kind::object); }

  /// @brief Number of elements (array) or members (object).
  /// @throws invalid_argument for the other kinds.
  [[nodiscard]] std::size_t size() const {
    if (is_array()) return std::get<array_type>(v_).size();
    if (is_object()) return std::get<object_type>(v_).size();
    wrong_kind("size", "an array or an object");
  }

  /// @brief The member named `key`, or nullptr if there is none.
  /// @throws invalid_argument if this is not an object.
  [[nodiscard]] const json_value* find(std::string_view key) const {
    for (const auto& m : as_object()) {
      if (m.first == key) return &m.second;
    }
    return nullptr;
  }
  /// @brief Whether the object has a member named `key`. @throws invalid_argument if not an object.
  [[nodiscard]] bool contains(std::string_view key) const { return find(key) != nullptr; }
  /// @brief The member named `key`.
  /// @throws invalid_argument if this is not an object or has no such member.
  [[nodiscard]] const json_value& at(std::string_view key) const {
    const json_value* v = find(key);
    if (v == nullptr)
      detail::throw_invalid("json_value::at", "key",
                            "'" + std::string(key) + "' is not a member of the object");
    return *v;
  }
  /// @brief Element `index` of an array.
  /// @throws invalid_argument if this is not an array or index is out of range.
  [[nodiscard]] const json_value& at(std::size_t index) const {
    const auto& a = as_array();
    if (index >= a.size()) {
      detail::throw_invalid(
          "json_value::at", "index",
          "must be less than " + std::to_string(a.size()) + ", got " + std::to_string(index));
    }
    return a[index];
  }

  /// @brief Sets member `key` to `value` (replacing an existing member in place, else appending).
  /// A null value first becomes an empty object.
  /// @returns the stored member value
  /// @throws invalid_argument if this is neither null nor an object.
  json_value& set(std::string_view key, json_value value) {
    if (is_null()) v_ = object_type{};
    auto& o = as_object();
    for (auto& m : o) {
      if (m.first == key) {
        m.second = std::move(value);
        return m.second;
      }
    }
    o.emplace_back(std::string(key), std::move(value));
    return o.back().second;
  }
  /// @brief Appends `value` to an array. A null value first becomes an empty array.
  /// @returns the stored element
  /// @throws invalid_argument if this is neither null nor an array.
  json_value& push_back(json_value value) {
    if (is_null()) v_ = array_type{};
    auto& a = as_array();
    a.push_back(std::move(value));
    return a.back();
  }

  /// @brief Deep equality (numbers compare as doubles, so NaN != NaN; objects compare in order).
  friend bool operator==(const json_value& a, const json_value& b) { return a.v_ == b.v_; }

 private:
  // Alternative order must match json_kind.
  std::variant<std::nullptr_t, bool, double, std::string, array_type, object_type> v_{nullptr};

  [[noreturn]] void wrong_kind(std::string_view accessor, std::string_view expected) const {
    std::string m("json_value::");
    m.append(accessor)
        .append(": value is ")
        .append(json_kind_name(kind()))
        .append(", expected ")
        .append(expected);
    LATENTAUDIT_THROW(invalid_argument(m));
  }
  template <class T>
  [[nodiscard]] const T& get(std::string_view accessor, json_kind k) const {
    if (kind() != k)
      wrong_kind(accessor, std::string(k == json_kind::array || k == json_kind::object ? "an " : "a ") +
                               std::string(json_kind_name(k)));
    return std::get<T>(v_);
  }
  template <class T>
  [[nodiscard]] T& get(std::string_view accessor, json_kind k) {
    if (kind() != k)
      wrong_kind(accessor, std::string(k == json_kind::array || k == json_kind::object ? "an " : "a ") +
                               std::string(json_kind_name(k)));
    return std::get<T>(v_);
  }
};

/// @brief Limits of parse_json. Input beyond them is rejected with corrupt_data before it is stored.
struct json_parse_options {
  std::size_t max_depth = 128;                     ///< deepest nesting of arrays and objects, >= 1
  std::size_t max_bytes = std::size_t{256} << 20;  ///< largest accepted input, in bytes
};

/// @brief Layout of write_json.
struct json_write_options {
  int indent = -1;  ///< -1: one line, no spaces; >= 0: one member per line, indented by this many spaces
};

namespace detail {

/// @brief Length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 if it is invalid
/// (bad lead or continuation byte, truncated, overlong, surrogate, beyond U+10FFFF).
[[nodiscard]] inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  std::uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1Fu;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0Fu;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07u;
  } else {
    return 0;
  }
  if (len > s.size() - i) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3Fu);
  }
  const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

/// @brief Appends the UTF-8 encoding of code point cp (<= U+10FFFF, not a surrogate).
inline void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// @brief Recursive-descent parser over one buffer; errors carry line, column and byte offset.
class json_parser {
 public:
  json_parser(std::string_view text, const json_parse_options& o) : s_(text), o_(o) {}

  /// @brief Parses exactly one value followed only by whitespace.
  json_value parse_document() {
    skip_ws();
    json_value v = parse_value(0);
    skip_ws();
    if (i_ != s_.size()) fail("unexpected data after the JSON value");
    return v;
  }

 private:
  std::string_view s_;
  json_parse_options o_;
  std::size_t i_ = 0;

  // Throws corrupt_data "parse_json: <what> at line L, column C (byte offset B)".
  [[noreturn]] void fail(std::string_view what) const { fail_at(what, i_); }
  [[noreturn]] void fail_at(std::string_view what, std::size_t at) const {
    std::size_t line = 1, col = 1;
    for (std::size_t k = 0; k < at && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string m("parse_json: ");
    m.append(what)
        .append(" at line ")
        .append(std::to_string(line))
        .append(", column ")
        .append(std::to_string(col))
        .append(" (byte offset ")
        .append(std::to_string(at))
        .append(")");
    LATENTAUDIT_THROW(corrupt_data(m));
  }
  void skip_ws() noexcept {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  [[nodiscard]] bool at_end() const noexcept { return i_ >= s_.size(); }
  // Describes the character at i_ for messages ("'x'", "byte 0x07", "end of input").
  [[nodiscard]] std::string here() const {
    if (at_end()) return "end of input";
    const auto c = static_cast<unsigned char>(s_[i_]);
    if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
    const char* hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
  }
  void expect_literal(std::string_view lit) {
    if (s_.substr(i_, lit.size()) != lit) fail("invalid literal (expected '" + std::string(lit) + "')");
    i_ += lit.size();
  }

  json_value parse_value(std::size_t depth) {
    if (at_end()) fail("unexpected end of input, expected a value");
    switch (s_[i_]) {
      case '{':
        return parse_object(depth + 1);
      case '[':
        return parse_array(depth + 1);
      case '"':
        return json_value(parse_string());
      case 't':
        expect_literal("true");
        return json_value(true);
      case 'f':
        expect_literal("false");
        return json_value(false);
      case 'n':
        expect_literal("null");
        return json_value(nullptr);
      default:
        if (s_[i_] == '-' || (s_[i_] >= '0' && s_[i_] <= '9')) return json_value(parse_number());
        fail("unexpected " + here() + ", expected a value");
    }
  }

  void enter(std::size_t depth) const {
    if (depth > o_.max_depth)
      fail("nesting deeper than the limit max_depth = " + std::to_string(o_.max_depth));
  }

  json_value parse_array(std::size_t depth) {
    enter(depth);
    ++i_;  // '['
    json_value::array_type a;
    skip_ws();
    if (!at_end() && s_[i_] == ']') {
      ++i_;
      return json_value(std::move(a));
    }
    for (;;) {
      skip_ws();
      a.push_back(parse_value(depth));
      skip_ws();
      if (at_end()) fail("unexpected end of input in an array, expected ',' or ']'");
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (s_[i_] == ']') {
        ++i_;
        return json_value(std::move(a));
      }
      fail("unexpected " + here() + " in an array, expected ',' or ']'");
    }
  }

  json_value parse_object(std::size_t depth) {
    enter(depth);
    ++i_;  // '{'
    json_value::object_type o;
    std::unordered_set<std::string> keys;  // used once the object is large
    skip_ws();
    if (!at_end() && s_[i_] == '}') {
      ++i_;
      return json_value(std::move(o));
    }
    for (;;) {
      skip_ws();
      if (at_end() || s_[i_] != '"') fail("unexpected " + here() + " in an object, expected a string key");
      const std::size_t key_at = i_;
      std::string key = parse_string();
      bool duplicate = false;
      if (o.size() < 16) {
        for (const auto& m : o) duplicate = duplicate || m.first == key;
        if (o.size() == 15) {
          for (const auto& m : o) keys.insert(m.first);
          keys.insert(key);
        }
      } else {
        duplicate = !keys.insert(key).second;
      }
      if (duplicate) fail_at("duplicate key \"" + key + "\"", key_at);
      skip_ws();
      if (at_end() || s_[i_] != ':') fail("unexpected " + here() + " after an object key, expected ':'");
      ++i_;
      skip_ws();
      json_value v = parse_value(depth);
      o.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (at_end()) fail("unexpected end of input in an object, expected ',' or '}'");
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (s_[i_] == '}') {
        ++i_;
        return json_value(std::move(o));
      }
      fail("unexpected " + here() + " in an object, expected ',' or '}'");
    }
  }

  std::uint32_t parse_hex4() {
    if (s_.size() - i_ < 4) fail("truncated \\u escape");
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else
        fail("invalid hex digit " + here() + " in a \\u escape");
      ++i_;
    }
    return v;
  }

  std::string parse_string() {
    const std::size_t start = i_;
    ++i_;  // opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail_at("unterminated string", start);
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c < 0x20) fail("unescaped control character " + here() + " in a string");
      if (c == '\\') {
        ++i_;
        if (at_end()) fail_at("unterminated string", start);
        const char e = s_[i_++];
        switch (e) {
          case '"':
            out.push_back('"');
            break;
          case '\\':
            out.push_back('\\');
            break;
          case '/':
            out.push_back('/');
            break;
          case 'b':
            out.push_back('\b');
            break;
          case 'f':
            out.push_back('\f');
            break;
          case 'n':
            out.push_back('\n');
            break;
          case 'r':
            out.push_back('\r');
            break;
          case 't':
            out.push_back('\t');
            break;
          case 'u': {
            const std::size_t esc_at = i_ - 2;
            std::uint32_t cp = parse_hex4();
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (s_.substr(i_, 2) != "\\u") fail_at("unpaired high surrogate in a \\u escape", esc_at);
              i_ += 2;
              const std::uint32_t lo = parse_hex4();
              if (lo < 0xDC00 || lo > 0xDFFF) fail_at("invalid low surrogate in a \\u escape", esc_at);
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              fail_at("unpaired low surrogate in a \\u escape", esc_at);
            }
            append_utf8(out, cp);
            break;
          }
          default:
            --i_;
            fail("invalid escape " + here() + " in a string");
        }
        continue;
      }
      const std::size_t len = utf8_sequence_length(s_, i_);
      if (len == 0) fail("invalid UTF-8 " + here() + " in a string");
      out.append(s_.substr(i_, len));
      i_ += len;
    }
  }

  double parse_number() {
    const std::size_t start = i_;
    auto digit = [&](std::size_t k) { return k < s_.size() && s_[k] >= '0' && s_[k] <= '9'; };
    if (s_[i_] == '-') ++i_;
    if (!digit(i_)) fail("invalid number: expected a digit");
    if (s_[i_] == '0') {
      ++i_;
      if (digit(i_)) fail_at("invalid number: leading zero", start);
    } else {
      while (digit(i_)) ++i_;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digit(i_)) fail("invalid number: expected a digit after '.'");
      while (digit(i_)) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digit(i_)) fail("invalid number: expected a digit in the exponent");
      while (digit(i_)) ++i_;
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + i_;
    double v = 0;
    const auto r = std::from_chars(first, last, v);
    if (r.ec == std::errc::result_out_of_range) {
      // from_chars reports both overflow and underflow; strtod tells them apart.
      const std::string copy(first, last);
      v = std::strtod(copy.c_str(), nullptr);
      if (std::isinf(v)) fail_at("number out of range of a double", start);
    } else if (r.ec != std::errc() || r.ptr != last) {
      fail_at("invalid number", start);
    }
    return v;
  }
};

/// @brief Appends `s` as a JSON string literal (quoted, escaped; invalid UTF-8 becomes U+FFFD).
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t i = 0;
  while (i < s.size()) {
    // A run of printable ASCII that needs no escape is copied in one piece.
    std::size_t j = i;
    while (j < s.size()) {
      const auto c = static_cast<unsigned char>(s[j]);
      if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') break;
      ++j;
    }
    out.append(s.data() + i, j - i);
    i = j;
    if (i == s.size()) break;
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out.append("\\\"");
        ++i;
        continue;
      case '\\':
        out.append("\\\\");
        ++i;
        continue;
      case '\b':
        out.append("\\b");
        ++i;
        continue;
      case '\f':
        out.append("\\f");
        ++i;
        continue;
      case '\n':
        out.append("\\n");
        ++i;
        continue;
      case '\r':
        out.append("\\r");
        ++i;
        continue;
      case '\t':
        out.append("\\t");
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      out.append("\\u00");
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      out.append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
  out.push_back('"');
}

/// @brief Appends a number: `null` if not finite, integer digits if integral within ±2^53,
/// else the shortest round-trip form of std::to_chars.
inline void append_json_number(std::string& out, double x) {
  if (!std::isfinite(x)) {
    out.append("null");
    return;
  }
  char buf[32];
  std::to_chars_result r{};
  if (x != 0.0 && std::trunc(x) == x && std::fabs(x) <= json_max_exact_integer) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(x));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, x);
  }
  out.append(buf, r.ptr);
}

inline void append_newline(std::string& out, int indent, std::size_t depth) {
  out.push_back('\n');
  out.append(static_cast<std::size_t>(indent) * depth, ' ');
}

inline void append_json(std::string& out, const json_value& v, int indent, std::size_t depth) {
  switch (v.kind()) {
    case json_kind::null:
      out.append("null");
      return;
    case json_kind::boolean:
      out.append(v.as_bool() ? "true" : "false");
      return;
    case json_kind::number:
      append_json_number(out, v.as_number());
      return;
    case json_kind::string:
      append_json_string(out, v.as_string());
      return;
    case json_kind::array: {
      const auto& a = v.as_array();
      out.push_back('[');
      for (std::size_t k = 0; k < a.size(); ++k) {
        if (k > 0) out.push_back(',');
        if (indent >= 0) append_newline(out, indent, depth + 1);
        append_json(out, a[k], indent, depth + 1);
      }
      if (indent >= 0 && !a.empty()) append_newline(out, indent, depth);
      out.push_back(']');
      return;
    }
    case json_kind::object: {
      const auto& o = v.as_object();
      out.push_back('{');
      for (std::size_t k = 0; k < o.size(); ++k) {
        if (k > 0) out.push_back(',');
        if (indent >= 0) append_newline(out, indent, depth + 1);
        append_json_string(out, o[k].first);
        out.append(indent >= 0 ? ": " : ":");
        append_json(out, o[k].second, indent, depth + 1);
      }
      if (indent >= 0 && !o.empty()) append_newline(out, indent, depth);
      out.push_back('}');
      return;
    }
  }
}

}  // namespace detail

/// @brief Parses one JSON document (RFC 8259, strict: no comments, no trailing commas, no NaN,
/// no leading zeros, no duplicate keys, valid UTF-8 only).
/// @param text the document; surrounding whitespace is allowed
/// @param options nesting and size limits
/// @returns the value
/// @throws corrupt_data "parse_json: <problem> at line L, column C (byte offset B)", also when the
///         input exceeds max_bytes or nests deeper than max_depth;
///         invalid_argument if max_depth is 0
[[nodiscard]] inline json_value parse_json(std::string_view text, const json_parse_options& options = {}) {
  if (options.max_depth == 0) detail::throw_invalid("parse_json", "max_depth", "must be at least 1, got 0");
  if (text.size() > options.max_bytes) {
    LATENTAUDIT_THROW(
        corrupt_data("parse_json: input of " + std::to_string(text.size()) +
                     " bytes exceeds the limit max_bytes = " + std::to_string(options.max_bytes)));
  }
  return detail::json_parser(text, options).parse_document();
}

/// @brief Appends the JSON text of `value` to `out` (see the file comment for number rules).
/// @param out the buffer to append to
/// @param value the value
/// @param options layout (one line by default)
/// @throws invalid_argument if options.indent < -1
inline void append_json(std::string& out, const json_value& value, const json_write_options& options = {}) {
  if (options.indent < -1)
    detail::throw_invalid("write_json", "indent",
                          "must be -1 or >= 0, got " + std::to_string(options.indent));
  detail::append_json(out, value, options.indent, 0);
}

/// @brief The JSON text of `value`: one line by default, NaN/±inf as null, shortest round-trip
/// numbers, insertion order of object members.
/// @param value the value
/// @param options layout
/// @returns the text, without a trailing newline
/// @throws invalid_argument if options.indent < -1
[[nodiscard]] inline std::string write_json(const json_value& value, const json_write_options& options = {}) {
  std::string out;
  append_json(out, value, options);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_JSON_HPP
