// SPDX-License-Identifier: MIT
// `audit --map FILE[,FILE...]`: the option's files as the spec's cache maps (audit_spec::maps;
// runner/audit_maps.hpp reads them, and build_audit_design matches them to the engines and adds the
// kv_mapped arms; docs/mapping.md).
#ifndef LATENTAUDIT_CLI_AUDIT_MAPS_HPP
#define LATENTAUDIT_CLI_AUDIT_MAPS_HPP

#include <latentaudit/runner/audit_maps.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {

/// Reads --map FILE[,FILE...] (a bad file exits 2 naming it and the field); 'none' reads none;
/// without the option every *.safetensors of `default_dir` (sorted by name), if that directory exists.
inline audit_maps audit_maps_of_option(const arguments& args, const std::filesystem::path& default_dir) {
  const auto given = args.get("--map");
  if (!given) return read_audit_map_directory(default_dir);
  if (*given == "none") return {};
  std::vector<std::filesystem::path> paths;
  for (std::size_t i = 0; i <= given->size();) {
    const std::size_t j = std::min(given->find(',', i), given->size());
    if (j == i) throw usage_error("audit: option --map: an empty file name in '" + *given + "'");
    paths.emplace_back(given->substr(i, j - i));
    i = j + 1;
  }
  try {
    return read_audit_maps(paths, true);
  } catch (const invalid_argument& e) {
    throw usage_error(std::string("audit: option --map: ") + e.what());
  }
}

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_CLI_AUDIT_MAPS_HPP
