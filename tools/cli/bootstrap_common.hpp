// SPDX-License-Identifier: MIT
// latentaudit CLI: options and output shared by `estimate bootstrap` and `interval`.
#ifndef LATENTAUDIT_TOOLS_CLI_BOOTSTRAP_COMMON_HPP
#define LATENTAUDIT_TOOLS_CLI_BOOTSTRAP_COMMON_HPP

#include <latentaudit/estimators/bootstrap.hpp>

#include <string>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {

/// @brief The interval method named by an option value (percentile|basic|normal|bca|studentized).
inline bootstrap_ci_method ci_method_of(const std::string& name) {
  if (name == "percentile") return bootstrap_ci_method::percentile;
  if (name == "basic") return bootstrap_ci_method::basic;
  if (name == "normal") return bootstrap_ci_method::normal;
  if (name == "studentized") return bootstrap_ci_method::studentized;
  return bootstrap_ci_method::bca;
}

/// @brief The convention named by --convention (boot, the default, or scipy).
inline bootstrap_convention convention_of(const arguments& args) {
  return args.choice("--convention", "boot", {"boot", "scipy"}) == "scipy" ? bootstrap_convention::scipy
                                                                           : bootstrap_convention::boot;
}

/// @brief The common effect fields plus the bootstrap diagnostics.
inline json_value bootstrap_to_json(const bootstrap_result& r, const std::string& convention) {
  json_value j = effect_to_json(r.effect);
  j.set("convention", convention);
  j.set("replicates_used", r.replicates_used);
  j.set("bias_correction", r.bias_correction);
  j.set("acceleration", r.acceleration);
  j.set("alpha_low", r.alpha_low);
  j.set("alpha_high", r.alpha_high);
  return j;
}

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_TOOLS_CLI_BOOTSTRAP_COMMON_HPP
