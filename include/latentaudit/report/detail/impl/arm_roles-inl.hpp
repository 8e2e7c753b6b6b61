// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/detail/arm_roles.hpp (header-only mode includes this file; compiled
// mode compiles it once in src/)
#ifndef LATENTAUDIT_REPORT_DETAIL_IMPL_ARM_ROLES_INL_HPP
#define LATENTAUDIT_REPORT_DETAIL_IMPL_ARM_ROLES_INL_HPP

#include "../arm_roles.hpp"

#include <set>

#include <fmt/format.h>

namespace latentaudit::detail {

[[nodiscard]] LATENTAUDIT_INLINE const std::string& arm_roles::of(std::string_view role) const noexcept {
  static const std::string none;
  if (role == "no_comm") return no_comm;
  if (role == "text_full") return text_full;
  if (role == "kv_full") return kv_full;
  if (role == "deranged") return deranged;
  if (role == "zeroed") return zeroed;
  if (role == "random") return random;
  if (role == "cross_model") return cross_model;
  return none;
}

[[nodiscard]] LATENTAUDIT_INLINE std::string resolve_arm(std::span<const trial_record> records,
                                                         std::string_view name,
                                                         std::vector<std::string>& warnings) {
  std::set<std::string> by_kind;  // sorted: the first is the tie-break
  for (const auto& r : records) {
    if (r.arm == name) return r.arm;
    const std::string_view kind = r.arm_kind.empty() ? std::string_view(r.arm) : std::string_view(r.arm_kind);
    if (kind == name) by_kind.insert(r.arm);
  }
  if (by_kind.empty()) return {};
  if (by_kind.size() > 1) {
    std::string names;
    for (const auto& l : by_kind) names += (names.empty() ? "'" : ", '") + l + "'";
    warnings.push_back(fmt::format(
        "{} arms have arm_kind '{}' and none is labelled so ({}); the '{}' role uses '{}', the first label "
        "in sorted order: label the intended arm '{}' to choose another",
        by_kind.size(), name, names, name, *by_kind.begin(), name));
  }
  return *by_kind.begin();
}

[[nodiscard]] LATENTAUDIT_INLINE std::string resolve_arm_or_name(std::span<const trial_record> records,
                                                                 std::string_view name,
                                                                 std::vector<std::string>& warnings) {
  std::string label = resolve_arm(records, name, warnings);
  return label.empty() ? std::string(name) : label;
}

[[nodiscard]] LATENTAUDIT_INLINE arm_roles resolve_arm_roles(std::span<const trial_record> records,
                                                             std::vector<std::string>& warnings) {
  arm_roles r;
  r.no_comm = resolve_arm(records, "no_comm", warnings);
  r.text_full = resolve_arm(records, "text_full", warnings);
  r.kv_full = resolve_arm(records, "kv_full", warnings);
  r.deranged = resolve_arm(records, "deranged", warnings);
  r.zeroed = resolve_arm(records, "zeroed", warnings);
  r.random = resolve_arm(records, "random", warnings);
  r.cross_model = resolve_arm(records, "cross_model", warnings);
  return r;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_IMPL_ARM_ROLES_INL_HPP
