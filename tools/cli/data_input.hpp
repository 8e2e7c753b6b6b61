// SPDX-License-Identifier: MIT
// latentaudit CLI: turning a data table plus --outcome/--treatment/--pair/--cluster options into
// the arrays the estimators take. Every data problem names the file, the line and the column.
#ifndef LATENTAUDIT_TOOLS_CLI_DATA_INPUT_HPP
#define LATENTAUDIT_TOOLS_CLI_DATA_INPUT_HPP

#include <latentaudit/core/data_table.hpp>

#include <string>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {

/// @brief Two independent arms (rows in file order) and, optionally, each row's cluster id.
struct two_arms {
  std::vector<double> treated;                ///< outcomes with treatment 1
  std::vector<double> control;                ///< outcomes with treatment 0
  std::vector<std::string> treated_clusters;  ///< cluster ids of treated rows (if --cluster)
  std::vector<std::string> control_clusters;  ///< cluster ids of control rows (if --cluster)
};

/// @brief Matched pairs in order of first appearance of their id (long) or of rows (wide).
struct paired_arms {
  std::vector<double> treated;  ///< treated outcome of each pair
  std::vector<double> control;  ///< control outcome of each pair
  std::string layout;           ///< "long" (--pair) or "wide" (--outcome-treated/--outcome-control)
};

/// @brief The options of a paired (or two-arm) estimate on a table: --data, --outcome, --treatment,
/// --pair (long layout), --outcome-treated / --outcome-control (wide layout), --level.
inline std::vector<option_spec> paired_options() {
  return {common_option("--data"), common_option("--outcome"),         common_option("--treatment"),
          common_option("--pair"), common_option("--outcome-treated"), common_option("--outcome-control"),
          common_option("--level")};
}

/// @brief Reads --data. The path must be a regular file (a directory, FIFO or device is refused
/// before it is opened), and a file whose table could not fit in half of this machine's memory is
/// refused before it is parsed (an estimate from its size and cell count).
/// @throws usage_error if absent; latentaudit::error for file problems and for a table without
/// data rows.
data_table load_table(const arguments& args);

/// @brief The 0/1 treatment codes of a column. @throws corrupt_data naming line and column for a
/// non-numeric, non-finite or other code.
std::vector<double> treatment_codes(const data_table& t, const std::string& column);

/// @brief Checks that a numeric column holds only 0/1; `what` names the expected values in the
/// message ("a binary outcome", "a 0/1 indicator"). @throws corrupt_data naming line and column.
void check_binary_column(const data_table& t, const std::string& column, const std::vector<double>& values,
                         const std::string& what = "a binary outcome");

/// @brief Splits --outcome by --treatment (and --cluster if given and wanted).
/// @throws usage_error for missing options; latentaudit::error for data problems or an empty arm.
two_arms load_two_arms(const arguments& args, bool binary_outcome, bool with_clusters);

/// @brief Whether the options ask for a paired design (--pair, or --outcome-treated/--outcome-control).
bool wants_pairs(const arguments& args);

/// @brief Builds pairs from --pair (long: --outcome, --treatment, --pair) or the wide layout
/// (--outcome-treated, --outcome-control).
/// @throws usage_error for a mix of layouts or missing options; latentaudit::error for unpaired ids
///         (naming the id and its lines), a duplicated arm within an id, bad codes or values.
paired_arms load_pairs(const arguments& args, bool binary_outcome);

/// @brief Reads a file of numbers, one per line; blank lines are skipped and the first non-blank
/// line may be a (non-numeric) header. `option` names the option in messages.
/// @throws invalid_argument if the file cannot be opened; corrupt_data naming file and line for a
///         non-numeric or non-finite line, or a file without numbers.
std::vector<double> read_number_file(const std::string& path, const std::string& option);

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_TOOLS_CLI_DATA_INPUT_HPP
