// SPDX-License-Identifier: MIT
// latentaudit: the library's internal spelling of the file checks, whose one definition is the
// public core/file_check.hpp (the CLI and users call them there).
#ifndef LATENTAUDIT_CORE_DETAIL_FILE_CHECK_HPP
#define LATENTAUDIT_CORE_DETAIL_FILE_CHECK_HPP

#include "../file_check.hpp"

namespace latentaudit::detail {
using latentaudit::file_kind_text;
using latentaudit::output_temp_path;
using latentaudit::require_output_directory;
using latentaudit::require_output_file;
using latentaudit::require_regular_file;
}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_CORE_DETAIL_FILE_CHECK_HPP
