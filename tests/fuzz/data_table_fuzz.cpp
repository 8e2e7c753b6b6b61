// SPDX-License-Identifier: MIT
// libFuzzer target for the table readers of the `estimate` and `interval` commands and of Python's
// tables (parse_csv, parse_jsonl in core/data_table.hpp): any byte string, as a CSV or a JSONL file,
// must either read or throw a latentaudit::error — never crash, hang or read out of bounds. A table
// that reads is rectangular: every column has one cell per row, every row a source line, and each
// column either converts to numbers or is refused with an error naming it.
#include <latentaudit/core/data_table.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void check_table(const latentaudit::data_table& t) {
  const auto names = t.column_names();
  if (names.size() != t.columns()) std::abort();
  for (std::size_t r = 0; r < t.rows(); ++r)
    if (t.line_of(r) == 0) std::abort();  // lines count from 1
  for (const auto& n : names) {
    if (!t.has_column(n)) std::abort();
    try {
      if (t.numeric_column(n).size() != t.rows()) std::abort();
    } catch (const latentaudit::error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const data_table_options limits{.max_bytes = std::size_t{1} << 20, .max_columns = 256, .max_depth = 16};
  try {
    check_table(parse_csv(text, "data.csv", limits));
  } catch (const latentaudit::error&) {
  }
  try {
    check_table(parse_jsonl(text, "data.jsonl", limits));
  } catch (const latentaudit::error&) {
  }
  return 0;
}
