// SPDX-License-Identifier: MIT
// Test support: reading golden CSV files written by the R / Python scripts in tests/golden/, and
// relative-tolerance comparisons with readable failure messages.
#ifndef LATENTAUDIT_TESTS_SUPPORT_GOLDEN_HPP
#define LATENTAUDIT_TESTS_SUPPORT_GOLDEN_HPP

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace latentaudit::test {

/// Path of a file under tests/golden/.
inline std::string golden_path(const std::string& rel) {
  // appended, not `std::string(dir) + "/" + rel`: GCC 12 reports a false -Warray-bounds on the
  // inlined operator+ for some lengths of the build path
  std::string p(LATENTAUDIT_GOLDEN_DIR);
  p.append("/").append(rel);
  return p;
}

/// Splits one CSV line on commas (golden files never quote).
inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream ss(line);
  while (std::getline(ss, cell, ',')) {
    if (!cell.empty() && cell.back() == '\r') cell.pop_back();
    out.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

/// Parses a number as written by R (`format(x, digits = 17)`) or Python (`repr`): also "NA",
/// "NaN", "Inf", "-Inf".
inline double parse_number(const std::string& s) {
  if (s == "NA" || s == "NaN" || s == "nan") return std::nan("");
  if (s == "Inf" || s == "inf") return INFINITY;
  if (s == "-Inf" || s == "-inf") return -INFINITY;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) throw std::runtime_error("golden: not a number: '" + s + "'");
  return v;
}

/// A CSV with a header row, read column-wise; non-numeric columns are kept as text.
struct golden_table {
  std::vector<std::string> names;                        ///< column names in file order
  std::map<std::string, std::vector<std::string>> text;  ///< raw cells by column

  /// Number of data rows.
  [[nodiscard]] std::size_t rows() const { return names.empty() ? 0 : text.at(names[0]).size(); }
  /// A numeric column.
  [[nodiscard]] std::vector<double> col(const std::string& name) const {
    auto it = text.find(name);
    if (it == text.end()) throw std::runtime_error("golden: no column '" + name + "'");
    std::vector<double> v;
    v.reserve(it->second.size());
    for (const auto& s : it->second) v.push_back(parse_number(s));
    return v;
  }
  /// One numeric cell.
  [[nodiscard]] double num(const std::string& name, std::size_t row) const {
    return parse_number(text.at(name).at(row));
  }
  /// One text cell.
  [[nodiscard]] const std::string& str(const std::string& name, std::size_t row) const {
    return text.at(name).at(row);
  }
};

/// Reads tests/golden/<rel> as a table with a header row.
inline golden_table read_golden_table(const std::string& rel) {
  std::ifstream in(golden_path(rel));
  if (!in) throw std::runtime_error("golden: cannot open " + golden_path(rel));
  golden_table t;
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error("golden: empty file " + rel);
  t.names = split_csv_line(line);
  for (auto& n : t.names) {
    if (n.size() >= 2 && n.front() == '"') n = n.substr(1, n.size() - 2);
    t.text[n];
  }
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto cells = split_csv_line(line);
    if (cells.size() != t.names.size()) throw std::runtime_error("golden: ragged row in " + rel);
    for (std::size_t j = 0; j < cells.size(); ++j) {
      auto c = cells[j];
      if (c.size() >= 2 && c.front() == '"') c = c.substr(1, c.size() - 2);
      t.text[t.names[j]].push_back(c);
    }
  }
  return t;
}

/// Reads a two-column "name,value" file into a map.
inline std::map<std::string, double> read_golden_values(const std::string& rel) {
  const auto t = read_golden_table(rel);
  std::map<std::string, double> m;
  for (std::size_t i = 0; i < t.rows(); ++i) m[t.str(t.names[0], i)] = t.num(t.names[1], i);
  return m;
}

/// |a - b| <= rtol * max(|a|, |b|) + atol; NaN equals NaN.
inline bool close(double a, double b, double rtol, double atol = 0.0) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= rtol * std::fmax(std::fabs(a), std::fabs(b)) + atol;
}

/// The two arms of one golden dataset.
struct golden_arms {
  std::vector<double> treated, control;
};

/// Reads tests/golden/<topic>/data.csv (dataset, arm, i, y) into arms by dataset name.
inline std::map<std::string, golden_arms> read_golden_arms(const std::string& file) {
  const auto t = read_golden_table(file);
  std::map<std::string, golden_arms> out;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    auto& a = out[t.str("dataset", r)];
    (t.str("arm", r) == "treated" ? a.treated : a.control).push_back(t.num("y", r));
  }
  return out;
}

}  // namespace latentaudit::test

/// CHECK that two doubles agree to a relative tolerance, printing both with 17 digits.
#define LATENTAUDIT_CHECK_CLOSE(a, b, rtol)                                                            \
  do {                                                                                                 \
    const double la_a_ = (a), la_b_ = (b);                                                             \
    INFO(#a " = " << std::setprecision(17) << la_a_ << ", " #b " = " << la_b_ << ", rtol " << (rtol)); \
    CHECK(::latentaudit::test::close(la_a_, la_b_, (rtol)));                                           \
  } while (false)

#include <iomanip>

#endif  // LATENTAUDIT_TESTS_SUPPORT_GOLDEN_HPP
