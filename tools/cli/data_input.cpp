// SPDX-License-Identifier: MIT
// latentaudit CLI: data loading helpers (see data_input.hpp).
#include "data_input.hpp"

#include <latentaudit/core/error.hpp>
#include <latentaudit/core/file_check.hpp>
#include <latentaudit/core/number_text.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <unordered_map>

namespace latentaudit::cli {

namespace {

// Refuses a data file whose parsed table would not fit: every cell of the table costs about 120
// bytes while it is parsed (the tokenised field and the typed cell), on top of the text itself.
// Cells are counted by streaming the file (separators and line ends), so nothing is allocated.
void check_table_memory(const std::string& path, std::uint64_t size) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(std::size_t{1} << 16);
  std::uint64_t cells = 1;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < got; ++i) cells += buf[i] == ',' || buf[i] == '\n' || buf[i] == ':';
  }
  const long double need = 2.0L * static_cast<long double>(size) + 120.0L * static_cast<long double>(cells);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const long double have = static_cast<long double>(pages) * static_cast<long double>(page);
  if (need > have / 2) {
    char msg[160];
    std::snprintf(msg, sizeof msg,
                  " (%llu bytes, about %llu cells) needs about %.3Lg GB to load, more than half "
                  "of this machine's %.3Lg GB",
                  static_cast<unsigned long long>(size), static_cast<unsigned long long>(cells), need / 1e9L,
                  have / 1e9L);
    throw invalid_argument("data file '" + path + "'" + msg);
  }
}

}  // namespace

data_table load_table(const arguments& args) {
  const std::string path = args.require("--data");
  const std::uint64_t size = require_regular_file(path, "--data file");
  if (size == 0) throw corrupt_data(path + ": empty file (no header, no rows)");
  if (size <= (std::uint64_t{1} << 30)) check_table_memory(path, size);
  data_table t = read_data_table(path);
  if (t.rows() == 0) throw corrupt_data(path + ": no data rows after the header");
  // Magnitudes whose squares overflow a double (|x| > 1e150) would surface later as a misleading
  // "constant covariate", "fit is exact" or "rank 0": refused here, naming the cell.
  for (const auto& name : t.column_names())
    for (std::size_t r = 0; r < t.rows(); ++r) {
      const data_cell& c = t.cell(r, name);
      if (c.kind == cell_kind::number && std::isfinite(c.number) && std::fabs(c.number) > 1e150)
        t.cell_error(r, name,
                     "value " + number_text(c.number) +
                         " is too large for the statistics (its square overflows); rescale the column "
                         "to |x| <= 1e150");
    }
  return t;
}

std::vector<double> treatment_codes(const data_table& t, const std::string& column) {
  std::vector<double> z = t.numeric_column(column);
  for (std::size_t r = 0; r < z.size(); ++r) {
    if (z[r] != 0.0 && z[r] != 1.0) {
      t.cell_error(r, column, "treatment must be coded 0 (control) or 1 (treated), got " + number_text(z[r]));
    }
  }
  return z;
}

void check_binary_column(const data_table& t, const std::string& column, const std::vector<double>& values,
                         const std::string& what) {
  for (std::size_t r = 0; r < values.size(); ++r) {
    if (values[r] != 0.0 && values[r] != 1.0) {
      t.cell_error(r, column, "expected " + what + " 0 or 1, got " + number_text(values[r]));
    }
  }
}

namespace {

// "f.csv: column 'z' has no control rows (code 0)".
[[noreturn]] void empty_arm(const data_table& t, const std::string& column, bool treated) {
  throw invalid_argument(t.source() + ": column '" + column + "' has no " +
                         (treated ? "treated rows (code 1)" : "control rows (code 0)") +
                         "; both arms need observations");
}

}  // namespace

two_arms load_two_arms(const arguments& args, bool binary_outcome, bool with_clusters) {
  const std::string outcome = args.require("--outcome");
  const std::string treatment = args.require("--treatment");
  std::string cluster;
  if (with_clusters && args.has("--cluster")) cluster = args.require("--cluster");
  const data_table t = load_table(args);
  const auto z = treatment_codes(t, treatment);
  const auto y = t.numeric_column(outcome);
  if (binary_outcome) check_binary_column(t, outcome, y);
  std::vector<std::string> ids;
  if (!cluster.empty()) ids = t.text_column(cluster);
  two_arms a;
  for (std::size_t r = 0; r < y.size(); ++r) {
    if (z[r] == 1.0) {
      a.treated.push_back(y[r]);
      if (!cluster.empty()) a.treated_clusters.push_back(ids[r]);
    } else {
      a.control.push_back(y[r]);
      if (!cluster.empty()) a.control_clusters.push_back(ids[r]);
    }
  }
  if (a.treated.empty()) empty_arm(t, treatment, true);
  if (a.control.empty()) empty_arm(t, treatment, false);
  return a;
}

bool wants_pairs(const arguments& args) {
  return args.has("--pair") || args.has("--outcome-treated") || args.has("--outcome-control");
}

paired_arms load_pairs(const arguments& args, bool binary_outcome) {
  const bool wide = args.has("--outcome-treated") || args.has("--outcome-control");
  if (wide) {
    for (const char* o : {"--pair", "--outcome", "--treatment"}) {
      if (args.has(o)) {
        throw usage_error(args.command() + ": option " + o +
                          " cannot be combined with --outcome-treated/--outcome-control (wide layout)");
      }
    }
    const std::string yt = args.require("--outcome-treated");
    const std::string yc = args.require("--outcome-control");
    const data_table t = load_table(args);
    paired_arms p{t.numeric_column(yt), t.numeric_column(yc), "wide"};
    if (binary_outcome) {
      check_binary_column(t, yt, p.treated);
      check_binary_column(t, yc, p.control);
    }
    return p;
  }
  const std::string outcome = args.require("--outcome");
  const std::string treatment = args.require("--treatment");
  const std::string pair = args.require("--pair");
  const data_table t = load_table(args);
  const auto z = treatment_codes(t, treatment);
  const auto y = t.numeric_column(outcome);
  if (binary_outcome) check_binary_column(t, outcome, y);
  const auto ids = t.text_column(pair);
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  struct slots {
    std::size_t treated = none, control = none;
  };
  std::unordered_map<std::string, std::size_t> index;
  std::vector<slots> pairs;
  std::vector<std::string> order;
  for (std::size_t r = 0; r < ids.size(); ++r) {
    auto [it, fresh] = index.emplace(ids[r], pairs.size());
    if (fresh) {
      pairs.emplace_back();
      order.push_back(ids[r]);
    }
    std::size_t& slot = z[r] == 1.0 ? pairs[it->second].treated : pairs[it->second].control;
    if (slot != none) {
      t.cell_error(r, pair,
                   "pair id '" + ids[r] + "' has a second " + (z[r] == 1.0 ? "treated" : "control") +
                       " row (the first is on line " + std::to_string(t.line_of(slot)) +
                       "); each pair needs exactly one treated and one control row");
    }
    slot = r;
  }
  paired_arms p;
  p.layout = "long";
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto& s = pairs[k];
    if (s.treated == none || s.control == none) {
      const std::size_t have = s.treated == none ? s.control : s.treated;
      t.cell_error(have, pair,
                   "pair id '" + order[k] + "' is unpaired: it has no " +
                       (s.treated == none ? "treated (code 1)" : "control (code 0)") +
                       " row; each pair needs exactly one treated and one control row");
    }
    p.treated.push_back(y[s.treated]);
    p.control.push_back(y[s.control]);
  }
  return p;
}

std::vector<double> read_number_file(const std::string& path, const std::string& option) {
  (void)require_regular_file(path, option + " file");
  const std::string text = read_whole_file(path, std::size_t{1} << 30, option);
  std::vector<double> out;
  std::size_t pos = 0, line = 0;
  bool seen = false;  // a non-blank line was read
  while (pos < text.size()) {
    ++line;
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string ln = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (!ln.empty() && ln.back() == '\r') ln.pop_back();
    if (ln.find_first_not_of(" \t") == std::string::npos) continue;
    const data_cell c = classify_csv_cell(ln);
    const bool first = !seen;
    seen = true;
    if (c.kind == cell_kind::text && first) continue;  // header
    if (c.kind != cell_kind::number)
      throw_at_line(path, line, "expected one number per line, got '" + ln.substr(0, 40) + "'");
    if (!std::isfinite(c.number))
      throw_at_line(path, line, "non-finite value '" + ln.substr(0, 40) + "', expected a finite number");
    out.push_back(c.number);
  }
  if (out.empty()) throw corrupt_data(path + ": no numbers (" + option + " expects one number per line)");
  return out;
}

}  // namespace latentaudit::cli
