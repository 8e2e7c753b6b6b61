// SPDX-License-Identifier: MIT
// Tests for core/json.hpp: value model, strict parser (errors with line/column/offset, limits),
// writer (escaping, shortest round-trip numbers, NaN/Inf as null), and round trips.
#include <latentaudit/core/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "support/catch.hpp"

using Catch::Matchers::Contains;
using latentaudit::json_kind;
using latentaudit::json_value;
using latentaudit::parse_json;
using latentaudit::write_json;

TEST_CASE("json_value: kinds, accessors and wrong-kind errors", "[core][json]") {
  CHECK(json_value().is_null());
  CHECK(json_value(nullptr).kind() == json_kind::null);
  CHECK(json_value(true).as_bool());
  CHECK(json_value(3).as_number() == 3.0);
  CHECK(json_value(std::size_t{7}).as_int64() == 7);
  CHECK(json_value("x").as_string() == "x");
  CHECK(json_value(std::string("yz")).as_string() == "yz");
  CHECK_THROWS_AS(json_value("x").as_number(), latentaudit::invalid_argument);
  CHECK_THROWS_WITH(json_value("x").as_number(), "json_value::as_number: value is string, expected a number");
  CHECK_THROWS_WITH(json_value(1).as_array(), "json_value::as_array: value is number, expected an array");
  CHECK_THROWS_WITH(json_value(1.5).as_int64(), Contains("as_int64") && Contains("1.5"));
  CHECK_THROWS_AS(json_value(1e300).as_int64(), latentaudit::invalid_argument);
  CHECK_THROWS_AS(json_value(true).size(), latentaudit::invalid_argument);

  json_value o;
  o.set("b", 1);
  o.set("a", "two");
  o.set("b", 3);  // replaced in place, order kept
  REQUIRE(o.is_object());
  REQUIRE(o.size() == 2);
  CHECK(o.as_object()[0].first == "b");
  CHECK(o.at("b").as_number() == 3.0);
  CHECK(o.find("zz") == nullptr);
  CHECK_FALSE(o.contains("zz"));
  CHECK_THROWS_WITH(o.at("zz"), Contains("'zz'"));
  json_value a;
  a.push_back(1);
  a.push_back("s");
  CHECK(a.size() == 2);
  CHECK(a.at(std::size_t{1}).as_string() == "s");
  CHECK_THROWS_AS(a.at(std::size_t{2}), latentaudit::invalid_argument);
  CHECK_THROWS_AS(a.set("k", 1), latentaudit::invalid_argument);
  CHECK_THROWS_AS(o.push_back(1), latentaudit::invalid_argument);
}

TEST_CASE("parse_json: documents of every kind", "[core][json]") {
  const auto v = parse_json(R"( {"n": -12.5e1, "i": 9007199254740992, "t": true, "f": false, "z": null,
      "s": "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00", "arr": [1, [2, {}], []], "o": {"k": "v"}} )");
  REQUIRE(v.is_object());
  CHECK(v.at("n").as_number() == -125.0);
  CHECK(v.at("i").as_int64() == (std::int64_t{1} << 53));
  CHECK(v.at("t").as_bool());
  CHECK_FALSE(v.at("f").as_bool());
  CHECK(v.at("z").is_null());
  CHECK(v.at("s").as_string() == "a\"b\\c/d\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80");
  CHECK(v.at("arr").size() == 3);
  CHECK(v.at("arr").at(std::size_t{1}).at(std::size_t{1}).size() == 0);
  CHECK(v.at("o").at("k").as_string() == "v");
  // order of members is the document's
  CHECK(v.as_object()[0].first == "n");
  CHECK(v.as_object()[7].first == "o");
  CHECK(parse_json("0").as_number() == 0.0);
  CHECK(std::signbit(parse_json("-0").as_number()));
  CHECK(parse_json("1E+2").as_number() == 100.0);
  CHECK(parse_json("1e-400").as_number() == 0.0);  // underflow rounds to zero
  CHECK(parse_json("\"\"").as_string().empty());
}

TEST_CASE("parse_json: malformed input is corrupt_data with line, column and offset", "[core][json]") {
  struct bad {
    const char* text;
    const char* expect;
  };
  const bad cases[] = {
      {"", "unexpected end of input"},
      {"{", "expected a string key"},
      {"[1,]", "expected a value"},
      {"{\"a\":1,}", "expected a string key"},
      {"{\"a\" 1}", "expected ':'"},
      {"[1 2]", "expected ',' or ']'"},
      {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
      {"01", "leading zero"},
      {"1.", "after '.'"},
      {"1e", "exponent"},
      {"-", "expected a digit"},
      {"+1", "expected a value"},
      {"NaN", "expected a value"},
      {"Infinity", "expected a value"},
      {"nul", "invalid literal"},
      {"tru", "invalid literal"},
      {"\"abc", "unterminated string"},
      {"\"a\tb\"", "control character"},
      {"\"\\x\"", "invalid escape"},
      {"\"\\u12g4\"", "invalid hex digit"},
      {"\"\\ud800\"", "unpaired high surrogate"},
      {"\"\\udc00\"", "unpaired low surrogate"},
      {"\"\\ud800\\u0041\"", "invalid low surrogate"},
      {"\"\xC3\x28\"", "invalid UTF-8"},
      {"\"\xED\xA0\x80\"", "invalid UTF-8"},  // encoded surrogate
      {"\"\xC0\xAF\"", "invalid UTF-8"},      // overlong
      {"1e400", "out of range"},
      {"[1] x", "unexpected data after"},
      {"{\"a\":1,\"a\":2}", "duplicate key \"a\""},
      {"// c\n1", "expected a value"},
  };
  for (const auto& c : cases) {
    INFO("input: " << c.text);
    CHECK_THROWS_AS(parse_json(c.text), latentaudit::corrupt_data);
    CHECK_THROWS_WITH(parse_json(c.text), Contains("parse_json: ") && Contains(c.expect) &&
                                              Contains("line 1, column") && Contains("byte offset"));
  }
  CHECK_THROWS_WITH(parse_json("{\n  \"a\": 1,\n  \"b\": x\n}"),
                    Contains("at line 3, column 8 (byte offset 19)"));
}

TEST_CASE("parse_json: duplicate keys are found in large objects too", "[core][json]") {
  std::string s = "{";
  for (int k = 0; k < 40; ++k) s += "\"k" + std::to_string(k) + "\":" + std::to_string(k) + ",";
  std::string ok = s;
  ok.back() = '}';
  CHECK(parse_json(ok).size() == 40);
  s += "\"k33\":0}";
  CHECK_THROWS_WITH(parse_json(s), Contains("duplicate key \"k33\""));
}

TEST_CASE("parse_json: depth and size limits", "[core][json]") {
  std::string deep(200, '[');
  deep += std::string(200, ']');
  CHECK_THROWS_WITH(parse_json(deep), Contains("max_depth = 128"));
  CHECK_NOTHROW(parse_json(deep, {.max_depth = 200}));
  CHECK_THROWS_AS(parse_json(deep, {.max_depth = 199}), latentaudit::corrupt_data);
  CHECK_THROWS_WITH(parse_json("[1, 2, 3]", {.max_bytes = 4}), Contains("max_bytes = 4"));
  CHECK_THROWS_AS(parse_json("1", {.max_depth = 0}), latentaudit::invalid_argument);
}

TEST_CASE("write_json: numbers, NaN/Inf as null, escaping, layout", "[core][json]") {
  CHECK(write_json(json_value(200)) == "200");
  CHECK(write_json(json_value(-3.0)) == "-3");
  CHECK(write_json(json_value(9007199254740992.0)) == "9007199254740992");
  CHECK(write_json(json_value(1e300)) == "1e+300");
  CHECK(write_json(json_value(0.1)) == "0.1");
  CHECK(write_json(json_value(-0.0)) == "-0");
  CHECK(write_json(json_value(std::nan(""))) == "null");
  CHECK(write_json(json_value(INFINITY)) == "null");
  CHECK(write_json(json_value(-INFINITY)) == "null");
  CHECK(write_json(json_value("q\"\\\n\x01\x7f\xC3\xA9")) == "\"q\\\"\\\\\\n\\u0001\\u007f\xC3\xA9\"");
  CHECK(write_json(json_value("bad\xFF")) == "\"bad\xEF\xBF\xBD\"");  // invalid UTF-8 -> U+FFFD
  json_value o;
  o.set("z", 1);
  o.set("a", json_value::array({json_value(true), json_value(nullptr)}));
  o.set("e", json_value::object());
  CHECK(write_json(o) == R"({"z":1,"a":[true,null],"e":{}})");
  CHECK(write_json(o, {.indent = 2}) ==
        "{\n  \"z\": 1,\n  \"a\": [\n    true,\n    null\n  ],\n  \"e\": {}\n}");
  CHECK_THROWS_AS(write_json(o, {.indent = -2}), latentaudit::invalid_argument);
}

TEST_CASE("write_json / parse_json round trip doubles exactly", "[core][json]") {
  // Deterministic sweep over bit patterns (seedless LCG, so the test is reproducible).
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  int checked = 0;
  for (int k = 0; k < 20000; ++k) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double x;
    std::memcpy(&x, &state, sizeof x);
    if (!std::isfinite(x)) continue;
    const double y = parse_json(write_json(json_value(x))).as_number();
    REQUIRE(std::memcmp(&x, &y, sizeof x) == 0);
    ++checked;
  }
  CHECK(checked > 19000);
  for (double x :
       {std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(),
        std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(), 1.0 / 3.0, 2.5e-8}) {
    CHECK(parse_json(write_json(json_value(x))).as_number() == x);
  }
  const std::string doc = R"({"a":[1,2.5,"x",{"b":null}],"c":true,"d":"\u00e9"})";
  CHECK(write_json(parse_json(doc)) == R"({"a":[1,2.5,"x",{"b":null}],"c":true,"d":"é"})");
  CHECK(parse_json(write_json(parse_json(doc), {.indent = 4})) == parse_json(doc));
}
