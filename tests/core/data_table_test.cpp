// SPDX-License-Identifier: MIT
// Tests for core/data_table.hpp: CSV (RFC 4180 quoting) and JSONL parsing, numeric access with
// checks, and errors naming the file, the 1-based line and the column.
#include <latentaudit/core/data_table.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "support/catch.hpp"

using Catch::Matchers::Contains;
using latentaudit::cell_kind;
using latentaudit::parse_csv;
using latentaudit::parse_jsonl;

namespace {
std::string temp_file(const std::string& name, const std::string& content) {
  std::string path(LATENTAUDIT_BINARY_DIR);  // appended: see golden_path (GCC 12 -Warray-bounds)
  path.append("/data_table_test_").append(name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}
}  // namespace

TEST_CASE("parse_csv: header, numbers, text, quoting, line numbers", "[core][data_table]") {
  const std::string csv =
      "\xEF\xBB\xBFid,y,label\r\n"
      "a,1.5,plain\r\n"
      "\n"
      "\"b,c\",-2e3,\"say \"\"hi\"\"\"\n"
      "d, +4 ,\"two\nlines\"\n"
      "e,\"7\",\n";
  const auto t = parse_csv(csv, "mem.csv");
  REQUIRE(t.rows() == 4);
  REQUIRE(t.columns() == 3);
  CHECK(t.column_names() == std::vector<std::string>{"id", "y", "label"});
  CHECK(t.numeric_column("y") == std::vector<double>{1.5, -2000.0, 4.0, 7.0});
  CHECK(t.text_column("id") == std::vector<std::string>{"a", "b,c", "d", "e"});
  CHECK(t.cell(1, "label").text == "say \"hi\"");
  CHECK(t.cell(2, "label").text == "two\nlines");
  CHECK(t.cell(3, "label").kind == cell_kind::missing);
  CHECK(t.cell(0, "label").kind == cell_kind::text);
  CHECK(t.line_of(0) == 2);
  CHECK(t.line_of(1) == 4);  // the blank line 3 is skipped
  CHECK(t.line_of(2) == 5);
  CHECK(t.line_of(3) == 7);  // the quoted line break counts
  CHECK(t.has_column("y"));
  CHECK_FALSE(t.has_column("Y"));
  CHECK_THROWS_AS(t.line_of(4), latentaudit::invalid_argument);
  // no trailing newline, CR-only line ends
  const auto u = parse_csv("x,y\r1,2\r3,4", "cr.csv");
  CHECK(u.numeric_column("y") == std::vector<double>{2.0, 4.0});
  CHECK(u.line_of(1) == 3);
}

TEST_CASE("parse_csv: numeric access names source, line and column", "[core][data_table]") {
  const auto t = parse_csv("g,y\n0,1\n1,abc\n0,nan\n1,Inf\n0,\n1,1e999\n", "f.csv");
  const std::vector<std::pair<std::string, std::string>> bad_rows = {
      {"0,1\n1,abc\n", "f.csv, line 3, column 'y': expected a number, got 'abc'"},
      {"0,1\n0,NaN\n", "f.csv, line 3, column 'y': non-finite value 'NaN'"},
      {"0,1\n1,-inf\n", "f.csv, line 3, column 'y': non-finite value '-inf'"},
      {"0,1\n0,\n", "f.csv, line 3, column 'y': missing value"},
      {"0,1\n1,1e999\n", "f.csv, line 3, column 'y': non-finite value '1e999'"},
      {"0,1\n1,1.5.2\n", "expected a number, got '1.5.2'"},
      {"0,1\n1,0x10\n", "expected a number, got '0x10'"},
      {"0,1\n1,+-1\n", "expected a number, got '+-1'"},
  };
  for (const auto& [body, msg] : bad_rows) {
    INFO(body);
    const auto b = parse_csv("g,y\n" + body, "f.csv");
    CHECK_THROWS_AS(b.numeric_column("y"), latentaudit::corrupt_data);
    CHECK_THROWS_WITH(b.numeric_column("y"), Contains(msg));
  }
  CHECK(t.numeric_column("g").size() == 6);
  CHECK_THROWS_AS(t.numeric_column("nope"), latentaudit::invalid_argument);
  CHECK_THROWS_WITH(t.numeric_column("nope"), "f.csv: no column 'nope' (columns: g, y)");
  CHECK_THROWS_WITH(t.text_column("y"), Contains("line 6, column 'y': missing value"));
  CHECK(parse_csv("a\n1e-400\n", "u.csv").numeric_column("a")[0] == 0.0);  // underflow is zero
}

TEST_CASE("parse_csv: structural errors are corrupt_data with the line", "[core][data_table]") {
  struct bad {
    std::string text;
    std::string expect;
  };
  const std::vector<bad> cases = {
      {"", "e.csv: empty file"},
      {"\n\n", "e.csv: empty file"},
      {"a,b\n1,2\n3\n", "e.csv, line 3: ragged row: 1 field, but the header has 2"},
      {"a,b\n1,2,3\n", "e.csv, line 2: ragged row: 3 fields, but the header has 2"},
      {"a,,c\n", "e.csv, line 1: column 2 of the header has an empty name"},
      {"a,b,a\n", "e.csv, line 1: duplicate column name 'a'"},
      {"a,b\n1,\"2\n", "e.csv, line 2: unterminated quoted field"},
      {"a,b\n1,\"2\"x\n", "e.csv, line 2: unexpected character after a closing quote"},
      {"a,b\n1,2\"x\n", "e.csv, line 2: a '\"' inside unquoted field 2"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK_THROWS_AS(parse_csv(c.text, "e.csv"), latentaudit::corrupt_data);
    CHECK_THROWS_WITH(parse_csv(c.text, "e.csv"), Contains(c.expect));
  }
  CHECK_THROWS_WITH(parse_csv("a,b,c\n", "e.csv", {.max_columns = 2}), Contains("limit of 2 fields"));
  CHECK(parse_csv("a,b\n", "h.csv").rows() == 0);  // a header alone is an empty table
}

TEST_CASE("parse_jsonl: objects per line, union of keys, booleans, nulls", "[core][data_table]") {
  const std::string jl =
      "{\"id\": 1, \"t\": true, \"y\": 0.25}\n"
      "\n"
      "{\"y\": 2, \"id\": \"x\", \"t\": false, \"extra\": \"e\"}\r\n"
      "{\"id\": 3, \"t\": 1, \"y\": null}\n";
  const auto t = parse_jsonl(jl, "d.jsonl");
  REQUIRE(t.rows() == 3);
  CHECK(t.column_names() == std::vector<std::string>{"id", "t", "y", "extra"});
  CHECK(t.numeric_column("t") == std::vector<double>{1.0, 0.0, 1.0});
  CHECK(t.text_column("id") == std::vector<std::string>{"1", "x", "3"});
  CHECK(t.cell(0, "extra").kind == cell_kind::missing);
  CHECK(t.cell(1, "extra").text == "e");
  CHECK(t.line_of(1) == 3);
  CHECK(t.line_of(2) == 4);
  CHECK_THROWS_WITH(t.numeric_column("y"), "d.jsonl, line 4, column 'y': missing value, expected a number");
  CHECK_THROWS_WITH(t.numeric_column("id"), "d.jsonl, line 3, column 'id': expected a number, got 'x'");
  CHECK_THROWS_WITH(t.numeric_column("extra"), Contains("line 1, column 'extra': missing value"));
}

TEST_CASE("parse_jsonl: malformed lines are corrupt_data with the line", "[core][data_table]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "j.jsonl: empty file"},
      {"\n  \n", "j.jsonl: empty file"},
      {"{\"a\":1}\n[1,2]\n", "j.jsonl, line 2: expected a JSON object, got array"},
      {"{\"a\":1}\n{\"a\":}\n", "j.jsonl, line 2: invalid JSON: unexpected '}'"},
      {"{\"a\":1}\n{\"a\":[1]}\n", "j.jsonl, line 2: key 'a' holds an array"},
      {"{\"a\":{\"b\":1}}\n", "j.jsonl, line 1: key 'a' holds an object"},
      {"{\"a\":1,\"a\":2}\n", "j.jsonl, line 1: invalid JSON: duplicate key"},
      {"{\"\":1}\n", "j.jsonl, line 1: empty key"},
      {"{\"a\":NaN}\n", "j.jsonl, line 1: invalid JSON"},
  };
  for (const auto& [text, msg] : cases) {
    INFO(text);
    CHECK_THROWS_AS(parse_jsonl(text, "j.jsonl"), latentaudit::corrupt_data);
    CHECK_THROWS_WITH(parse_jsonl(text, "j.jsonl"), Contains(msg));
  }
}

TEST_CASE("read_data_table: files by extension, missing files, size limit", "[core][data_table]") {
  const auto csv = temp_file("a.csv", "t,y\n0,1\n1,3\n");
  const auto jl = temp_file("a.JSONL", "{\"t\":0,\"y\":1}\n{\"t\":1,\"y\":3}\n");
  CHECK(latentaudit::read_data_table(csv).numeric_column("y") == std::vector<double>{1.0, 3.0});
  CHECK(latentaudit::read_data_table(jl).numeric_column("y") == std::vector<double>{1.0, 3.0});
  CHECK(latentaudit::read_data_table(csv).source() == csv);
  CHECK_THROWS_AS(latentaudit::read_data_table("/nonexistent/x.csv"), latentaudit::invalid_argument);
  CHECK_THROWS_WITH(latentaudit::read_data_table("/nonexistent/x.csv"),
                    Contains("cannot open data file '/nonexistent/x.csv'"));
  CHECK_THROWS_WITH(latentaudit::read_data_table(temp_file("a.txt", "x")),
                    Contains("must end in .csv, .jsonl or .ndjson"));
  CHECK_THROWS_WITH(latentaudit::read_csv(csv, {.max_bytes = 4}),
                    Contains("more than the limit max_bytes = 4"));
  CHECK_THROWS_WITH(latentaudit::read_csv(temp_file("empty.csv", "")), Contains("empty file"));
  std::remove(csv.c_str());
  std::remove(jl.c_str());
}

TEST_CASE("data_table::add_column builds tables in memory", "[core][data_table]") {
  latentaudit::data_table t("built");
  t.add_column({"x", {{cell_kind::number, 1.0, "1"}, {cell_kind::number, 2.0, "2"}}});
  t.add_column({"s", {{cell_kind::text, std::nan(""), "a"}, {cell_kind::boolean, 1.0, "true"}}});
  CHECK(t.rows() == 2);
  CHECK(t.line_of(0) == 2);
  CHECK_THROWS_WITH(t.numeric_column("s"), "built, line 2, column 's': expected a number, got 'a'");
  CHECK_THROWS_AS(t.add_column({"x", {{}, {}}}), latentaudit::invalid_argument);
  CHECK_THROWS_AS(t.add_column({"z", {{}}}), latentaudit::shape_mismatch);
  CHECK_THROWS_AS(t.add_column({"", {{}, {}}}), latentaudit::invalid_argument);
}
