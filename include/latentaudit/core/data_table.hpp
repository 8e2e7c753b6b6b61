// SPDX-License-Identifier: MIT
// latentaudit: a small table of named columns read from CSV (RFC 4180) or JSONL, with checked
// access to numeric columns. Every error names the source file, the 1-based line and the column.
#ifndef LATENTAUDIT_CORE_DATA_TABLE_HPP
#define LATENTAUDIT_CORE_DATA_TABLE_HPP

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <ios>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "detail/check.hpp"
#include "error.hpp"
#include "file_check.hpp"
#include "json.hpp"

namespace latentaudit {

namespace detail {
struct data_table_builder;
}  // namespace detail

/// @brief What a cell holds.
enum class cell_kind : unsigned char {
  missing,  ///< an empty CSV cell, a JSON null, or a key absent from a JSONL line
  number,   ///< a finite or non-finite number (CSV text that parses as a number, a JSON number)
  boolean,  ///< a JSON true/false (numeric value 1/0)
  text,     ///< anything else (CSV text that is not a number, a JSON string)
};

/// @brief One cell: its kind, its numeric value (NaN unless number/boolean) and its text as read
/// (CSV: the unquoted field; JSONL: the string, or the value written as JSON).
struct data_cell {
  cell_kind kind = cell_kind::missing;  ///< what the cell holds
  double number = std::nan("");         ///< the value of a number (may be non-finite) or boolean (0/1)
  std::string text;                     ///< the cell as text
};

/// @brief One named column.
struct data_column {
  std::string name;              ///< the header (CSV) or key (JSONL)
  std::vector<data_cell> cells;  ///< one cell per row
};

/// @brief Limits applied while reading a table.
struct data_table_options {
  std::size_t max_bytes = std::size_t{1} << 30;  ///< largest accepted file, in bytes
  std::size_t max_columns = 10000;               ///< most columns
  std::size_t max_depth = 64;                    ///< JSONL: deepest nesting inside one line
};

/// @brief A rectangular table of named columns, each row remembering the file line it came from.
///
/// Build one with read_data_table() (by file extension), read_csv()/read_jsonl() (files) or
/// parse_csv()/parse_jsonl() (text). Column access is by name; numeric access checks every cell.
class data_table {
 public:
  /// @brief An empty table named after `source` (used in error messages).
  explicit data_table(std::string source = "<memory>") : source_(std::move(source)) {}

  /// @brief The source name used in messages (usually the file path).
  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  /// @brief Number of data rows.
  [[nodiscard]] std::size_t rows() const noexcept { return lines_.size(); }
  /// @brief Number of columns.
  [[nodiscard]] std::size_t columns() const noexcept { return columns_.size(); }
  /// @brief Column names in file order (CSV header order; JSONL first-appearance order).
  [[nodiscard]] std::vector<std::string> column_names() const {
    std::vector<std::string> names;
    names.reserve(columns_.size());
    for (const auto& c : columns_) names.push_back(c.name);
    return names;
  }
  /// @brief Whether a column of that name exists.
  [[nodiscard]] bool has_column(std::string_view name) const { return index_of(name) != npos; }
  /// @brief The 1-based line of the file where data row `row` (0-based) starts.
  /// @throws invalid_argument if row >= rows().
  [[nodiscard]] std::size_t line_of(std::size_t row) const {
    if (row >= rows()) {
      detail::throw_invalid("data_table::line_of", "row",
                            "must be less than " + std::to_string(rows()) + ", got " + std::to_string(row));
    }
    return lines_[row];
  }
  /// @brief The column named `name`.
  /// @throws invalid_argument "<source>: no column 'name' (columns: a, b, c)".
  [[nodiscard]] const data_column& column(std::string_view name) const {
    const std::size_t k = index_of(name);
    if (k == npos) {
      std::string m = source_ + ": no column '" + std::string(name) + "' (columns: ";
      for (std::size_t j = 0; j < columns_.size(); ++j) m.append(j ? ", " : "").append(columns_[j].name);
      m.append(")");
      LATENTAUDIT_THROW(invalid_argument(m));
    }
    return columns_[k];
  }
  /// @brief One cell. @throws invalid_argument for an unknown column or a row out of range.
  [[nodiscard]] const data_cell& cell(std::size_t row, std::string_view name) const {
    const auto& c = column(name);
    if (row >= rows()) {
      detail::throw_invalid("data_table::cell", "row",
                            "must be less than " + std::to_string(rows()) + ", got " + std::to_string(row));
    }
    return c.cells[row];
  }

  /// @brief The numeric values of a column; booleans count as 1/0.
  /// @throws invalid_argument for an unknown column;
  ///         corrupt_data "<source>, line L, column 'name': <problem>" for the first cell that is
  ///         missing, text, or not finite (NaN/Inf).
  [[nodiscard]] std::vector<double> numeric_column(std::string_view name) const {
    const auto& c = column(name);
    std::vector<double> out;
    out.reserve(rows());
    for (std::size_t r = 0; r < rows(); ++r) {
      const data_cell& x = c.cells[r];
      switch (x.kind) {
        case cell_kind::missing:
          cell_error(r, c.name, "missing value, expected a number");
        case cell_kind::text: {
          // A text cell that reads as a number was quoted (a JSON string such as "0"): say so.
          double v = 0;
          const auto res = std::from_chars(x.text.data(), x.text.data() + x.text.size(), v);
          if (!x.text.empty() && res.ec == std::errc() && res.ptr == x.text.data() + x.text.size())
            cell_error(r, c.name,
                       "expected a number, got the string \"" + printable(x.text) +
                           "\" (a quoted number: write it without quotes)");
          cell_error(r, c.name, "expected a number, got '" + printable(x.text) + "'");
        }
        case cell_kind::number:
        case cell_kind::boolean:
          if (!std::isfinite(x.number))
            cell_error(r, c.name, "non-finite value '" + printable(x.text) + "', expected a finite number");
          out.push_back(x.number);
          break;
      }
    }
    return out;
  }

  /// @brief The text of each cell of a column (e.g. identifiers).
  /// @throws invalid_argument for an unknown column; corrupt_data naming line and column for a
  ///         missing cell.
  [[nodiscard]] std::vector<std::string> text_column(std::string_view name) const {
    const auto& c = column(name);
    std::vector<std::string> out;
    out.reserve(rows());
    for (std::size_t r = 0; r < rows(); ++r) {
      if (c.cells[r].kind == cell_kind::missing) cell_error(r, c.name, "missing value");
      out.push_back(c.cells[r].text);
    }
    return out;
  }

  /// @brief Throws corrupt_data "<source>, line L, column 'name': what" for data row `row`.
  [[noreturn]] void cell_error(std::size_t row, std::string_view name, std::string_view what) const {
    std::string m =
        source_ + ", line " + std::to_string(line_of(row)) + ", column '" + std::string(name) + "': ";
    m.append(what);
    LATENTAUDIT_THROW(corrupt_data(m));
  }

  /// @brief Appends a column (builders only; not needed by readers of a table).
  /// @throws invalid_argument if the name is empty or already used, or the size disagrees with rows().
  void add_column(data_column c) {
    if (c.name.empty()) detail::throw_invalid("data_table::add_column", "name", "must not be empty");
    if (has_column(c.name))
      detail::throw_invalid("data_table::add_column", "name", "'" + c.name + "' is already a column");
    if (!columns_.empty() && c.cells.size() != rows()) {
      detail::check_same_size("data_table::add_column", "cells", c.cells.size(), "rows", rows());
    }
    if (columns_.empty() && lines_.empty()) {
      lines_.resize(c.cells.size());
      for (std::size_t r = 0; r < lines_.size(); ++r) lines_[r] = r + 2;
    }
    index_.emplace(c.name, columns_.size());
    columns_.push_back(std::move(c));
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::string source_;
  std::vector<data_column> columns_;
  std::vector<std::size_t> lines_;  // file line of each row
  std::unordered_map<std::string, std::size_t> index_;

  [[nodiscard]] std::size_t index_of(std::string_view name) const {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? npos : it->second;
  }
  // Cell text for a message: at most 40 bytes, control characters shown as '?'.
  [[nodiscard]] static std::string printable(std::string_view s) {
    std::string out;
    for (char ch : s.substr(0, 40)) out.push_back(static_cast<unsigned char>(ch) < 0x20 ? '?' : ch);
    if (s.size() > 40) out.append("...");
    return out;
  }

  friend struct detail::data_table_builder;
};

namespace detail {

/// @brief The readers' access to a table under construction.
struct data_table_builder {
  data_table& t;  ///< the table being built
  /// @brief Adds an empty column (name checked by the caller).
  std::size_t add(std::string name) {
    t.index_.emplace(name, t.columns_.size());
    t.columns_.push_back(data_column{std::move(name), {}});
    return t.columns_.size() - 1;
  }
  /// @brief Column k, mutable.
  data_column& col(std::size_t k) { return t.columns_[k]; }
  /// @brief Index of a column or npos.
  [[nodiscard]] std::size_t find(std::string_view name) const { return t.index_of(name); }
  /// @brief The row lines, mutable.
  std::vector<std::size_t>& lines() { return t.lines_; }
  /// @brief "not found".
  static constexpr std::size_t npos = data_table::npos;
};

}  // namespace detail

/// @brief Classifies CSV cell text (public: the CLI's one-number-per-line files use it too): empty → missing;
/// a number (leading/trailing blanks and a leading '+' allowed; "nan", "inf", "infinity" in any case give
/// non-finite numbers; overflow gives ±inf) → number; anything else → text.
[[nodiscard]] inline data_cell classify_csv_cell(std::string text) {
  data_cell c;
  std::string_view s(text);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.empty()) {
    c.kind = cell_kind::missing;
  } else {
    std::string_view body = s;
    bool negative = false;
    if (body.front() == '+' || body.front() == '-') {
      negative = body.front() == '-';
      body.remove_prefix(1);
    }
    double v = 0;
    const auto r = std::from_chars(body.data(), body.data() + body.size(), v);
    const bool whole =
        r.ptr == body.data() + body.size() && !body.empty() && body.front() != '+' && body.front() != '-';
    if (whole && r.ec == std::errc()) {
      c.kind = cell_kind::number;
      c.number = negative ? -v : v;
    } else if (whole && r.ec == std::errc::result_out_of_range) {
      // Overflow or underflow: strtod tells which (inf or a tiny value).
      const std::string copy(body);
      const double w = std::strtod(copy.c_str(), nullptr);
      c.kind = cell_kind::number;
      c.number = negative ? -w : w;
    } else {
      c.kind = cell_kind::text;
    }
  }
  c.text = std::move(text);
  return c;
}

/// @brief Throws corrupt_data "<source>, line L: what" (the data readers' error of one line).
/// @param source the file's name, as errors show it
/// @param line the 1-based line
/// @param what what is wrong there
[[noreturn]] inline void throw_at_line(std::string_view source, std::size_t line, std::string_view what) {
  std::string m(source);
  m.append(", line ").append(std::to_string(line)).append(": ").append(what);
  LATENTAUDIT_THROW(corrupt_data(m));
}

/// @brief Reads a whole file into a string, after checking that it is a regular file.
/// @param path the file
/// @param max_bytes the most bytes it may hold
/// @param fn the caller's name, which starts every message
/// @throws invalid_argument if it cannot be opened; corrupt_data if it exceeds max_bytes.
[[nodiscard]] inline std::string read_whole_file(const std::string& path, std::size_t max_bytes,
                                                 std::string_view fn) {
  // By type first: a directory is not a file of 2^63 - 1 bytes, /dev/zero is not empty, and a
  // FIFO without a writer would block the open.
  try {
    (void)require_regular_file(path, "data file");
  } catch (const invalid_argument& e) {
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": " + e.what()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": cannot open data file '" + path + "'"));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0)
    LATENTAUDIT_THROW(
        invalid_argument(std::string(fn) + ": cannot read data file '" + path + "' (not a regular file?)"));
  if (static_cast<std::uint64_t>(size) > max_bytes) {
    LATENTAUDIT_THROW(corrupt_data(std::string(fn) + ": data file '" + path + "' has " +
                                   std::to_string(size) +
                                   " bytes, more than the limit max_bytes = " + std::to_string(max_bytes)));
  }
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), size);
  if (in.gcount() != size)
    LATENTAUDIT_THROW(corrupt_data(std::string(fn) + ": failed to read data file '" + path + "'"));
  return text;
}

namespace detail {

/// @brief Splits CSV text into records of fields (RFC 4180: ',' separators, '"' quoting with
/// '""' as an escaped quote, quoted fields may hold separators and line breaks; LF, CRLF or CR end
/// a record). Each record carries the 1-based line where it starts. Blank lines are skipped.
struct csv_record {
  std::vector<std::string> fields;  ///< unquoted fields
  std::vector<bool> quoted;         ///< whether each field was quoted
  std::size_t line = 0;             ///< 1-based line where the record starts
};

/// @brief Tokenises CSV text into records. @throws corrupt_data naming source and line.
[[nodiscard]] inline std::vector<csv_record> split_csv(std::string_view s, std::string_view source,
                                                       std::size_t max_columns) {
  std::vector<csv_record> records;
  std::size_t i = 0, line = 1;
  if (s.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // UTF-8 byte order mark
  auto end_of_line = [&](std::size_t k) { return k < s.size() && (s[k] == '\n' || s[k] == '\r'); };
  auto skip_eol = [&] {  // consumes LF, CRLF or CR
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    ++i;
    ++line;
  };
  while (i < s.size()) {
    if (end_of_line(i)) {  // blank line
      skip_eol();
      continue;
    }
    csv_record rec;
    rec.line = line;
    for (;;) {  // one field per iteration
      std::string field;
      bool quoted = false;
      if (i < s.size() && s[i] == '"') {
        quoted = true;
        const std::size_t open_line = line;
        ++i;
        for (;;) {
          if (i >= s.size())
            throw_at_line(source, open_line,
                          "unterminated quoted field (a '\"' opened here is never closed)");
          if (s[i] == '"') {
            if (i + 1 < s.size() && s[i + 1] == '"') {
              field.push_back('"');
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (s[i] == '\n' || (s[i] == '\r' && !(i + 1 < s.size() && s[i + 1] == '\n'))) ++line;
          field.push_back(s[i++]);
        }
        if (i < s.size() && s[i] != ',' && !end_of_line(i)) {
          throw_at_line(source, line,
                        "unexpected character after a closing quote in field " +
                            std::to_string(rec.fields.size() + 1) + " (expected ',' or the end of the line)");
        }
      } else {
        while (i < s.size() && s[i] != ',' && !end_of_line(i)) {
          if (s[i] == '"')
            throw_at_line(source, line,
                          "a '\"' inside unquoted field " + std::to_string(rec.fields.size() + 1) +
                              " (quote the whole field and double inner quotes)");
          field.push_back(s[i++]);
        }
      }
      rec.fields.push_back(std::move(field));
      rec.quoted.push_back(quoted);
      if (rec.fields.size() > max_columns)
        throw_at_line(source, rec.line, "more than the limit of " + std::to_string(max_columns) + " fields");
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size()) skip_eol();
      break;
    }
    records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace detail

/// @brief Parses CSV text with a header row into a table (RFC 4180 quoting).
///
/// Cells are classified by classify_csv_cell: empty → missing, numeric text → number
/// (quoted numbers too), anything else → text. Blank lines are skipped; a UTF-8 BOM is ignored.
/// @param text the CSV text
/// @param source name used in messages (the file path)
/// @param options limits
/// @returns the table (possibly with zero rows)
/// @throws corrupt_data naming source and line for: empty input, an empty or duplicate column name,
///         a row with a different number of fields than the header (ragged), bad quoting, limits
[[nodiscard]] inline data_table parse_csv(std::string_view text, const std::string& source,
                                          const data_table_options& options = {}) {
  if (text.size() > options.max_bytes) {
    throw_at_line(source, 1,
                  "input of " + std::to_string(text.size()) + " bytes exceeds the limit max_bytes");
  }
  auto records = detail::split_csv(text, source, options.max_columns);
  if (records.empty()) LATENTAUDIT_THROW(corrupt_data(source + ": empty file (expected a header row)"));
  data_table t(source);
  detail::data_table_builder b{t};
  const auto& header = records.front();
  for (std::size_t k = 0; k < header.fields.size(); ++k) {
    const std::string& name = header.fields[k];
    if (name.empty())
      throw_at_line(source, header.line,
                    "column " + std::to_string(k + 1) + " of the header has an empty name");
    if (b.find(name) != detail::data_table_builder::npos)
      throw_at_line(source, header.line, "duplicate column name '" + name + "' in the header");
    b.add(name);
  }
  const std::size_t ncol = header.fields.size();
  for (std::size_t r = 1; r < records.size(); ++r) {
    auto& rec = records[r];
    if (rec.fields.size() != ncol) {
      throw_at_line(source, rec.line,
                    "ragged row: " + std::to_string(rec.fields.size()) +
                        (rec.fields.size() == 1 ? " field" : " fields") + ", but the header has " +
                        std::to_string(ncol));
    }
    for (std::size_t k = 0; k < ncol; ++k) {
      data_cell c = classify_csv_cell(std::move(rec.fields[k]));
      b.col(k).cells.push_back(std::move(c));
    }
    b.lines().push_back(rec.line);
  }
  return t;
}

/// @brief Parses JSONL text (one JSON object per line) into a table.
///
/// Columns are the union of the keys, in order of first appearance; a key absent from a line is
/// a missing cell there. Values may be numbers, booleans (cell value 1/0), strings or null
/// (missing). Blank lines are skipped.
/// @param text the JSONL text
/// @param source name used in messages (the file path)
/// @param options limits
/// @returns the table
/// @throws corrupt_data naming source and line for: empty input (no objects), a line that is not
///         valid JSON or not an object, a nested array/object value, limits
[[nodiscard]] inline data_table parse_jsonl(std::string_view text, const std::string& source,
                                            const data_table_options& options = {}) {
  if (text.size() > options.max_bytes) {
    throw_at_line(source, 1,
                  "input of " + std::to_string(text.size()) + " bytes exceeds the limit max_bytes");
  }
  data_table t(source);
  detail::data_table_builder b{t};
  std::size_t pos = 0, line = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;
  while (pos < text.size()) {
    ++line;
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view ln = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (ln.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank line
    json_value v;
    try {
      v = parse_json(ln, json_parse_options{.max_depth = options.max_depth, .max_bytes = options.max_bytes});
    } catch (const corrupt_data& e) {
      std::string what = e.what();
      if (what.rfind("parse_json: ", 0) == 0) what.erase(0, 12);
      throw_at_line(source, line, "invalid JSON: " + what);
    }
    if (!v.is_object())
      throw_at_line(source, line, "expected a JSON object, got " + std::string(json_kind_name(v.kind())));
    const std::size_t row = t.rows();
    for (auto& [key, value] : v.as_object()) {
      std::size_t k = b.find(key);
      if (k == detail::data_table_builder::npos) {
        if (key.empty()) throw_at_line(source, line, "empty key");
        if (t.columns() >= options.max_columns)
          throw_at_line(source, line,
                        "more than the limit of " + std::to_string(options.max_columns) + " columns");
        k = b.add(key);
        b.col(k).cells.resize(row);  // missing in earlier rows
      }
      data_cell c;
      switch (value.kind()) {
        case json_kind::null:
          c.kind = cell_kind::missing;
          break;
        case json_kind::boolean:
          c.kind = cell_kind::boolean;
          c.number = value.as_bool() ? 1.0 : 0.0;
          c.text = value.as_bool() ? "true" : "false";
          break;
        case json_kind::number:
          c.kind = cell_kind::number;
          c.number = value.as_number();
          c.text = write_json(value);
          break;
        case json_kind::string:
          c.kind = cell_kind::text;
          c.text = value.as_string();
          break;
        case json_kind::array:
        case json_kind::object:
          throw_at_line(source, line,
                        "key '" + key + "' holds " +
                            std::string(value.is_array() ? "an array" : "an object") +
                            ", expected a number, boolean, string or null");
      }
      b.col(k).cells.push_back(std::move(c));
    }
    b.lines().push_back(line);
    for (std::size_t k = 0; k < t.columns(); ++k) b.col(k).cells.resize(row + 1);  // keys absent here
  }
  if (t.rows() == 0)
    LATENTAUDIT_THROW(corrupt_data(source + ": empty file (expected one JSON object per line)"));
  return t;
}

/// @brief Reads a CSV file. @throws invalid_argument if it cannot be opened; corrupt_data as parse_csv.
[[nodiscard]] inline data_table read_csv(const std::string& path, const data_table_options& options = {}) {
  return parse_csv(read_whole_file(path, options.max_bytes, "read_csv"), path, options);
}

/// @brief Reads a JSONL file. @throws invalid_argument if it cannot be opened; corrupt_data as parse_jsonl.
[[nodiscard]] inline data_table read_jsonl(const std::string& path, const data_table_options& options = {}) {
  return parse_jsonl(read_whole_file(path, options.max_bytes, "read_jsonl"), path, options);
}

/// @brief Reads a table, choosing the format by extension: ".csv" → CSV; ".jsonl", ".ndjson" → JSONL.
/// @throws invalid_argument for another extension or an unreadable file; corrupt_data as the parsers.
[[nodiscard]] inline data_table read_data_table(const std::string& path,
                                                const data_table_options& options = {}) {
  auto ends_with = [&](std::string_view suffix) {
    if (path.size() < suffix.size()) return false;
    for (std::size_t k = 0; k < suffix.size(); ++k) {
      char c = path[path.size() - suffix.size() + k];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != suffix[k]) return false;
    }
    return true;
  };
  if (ends_with(".csv")) return read_csv(path, options);
  if (ends_with(".jsonl") || ends_with(".ndjson")) return read_jsonl(path, options);
  LATENTAUDIT_THROW(
      invalid_argument("read_data_table: data file '" + path + "' must end in .csv, .jsonl or .ndjson"));
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_DATA_TABLE_HPP
