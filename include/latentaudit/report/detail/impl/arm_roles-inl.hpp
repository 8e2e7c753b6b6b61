// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/detail/arm_roles.hpp (header-only mode includes this file; compiled
// mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_DETAIL_IMPL_ARM_ROLES_INL_HPP
#define LATENTAUDIT_REPORT_DETAIL_IMPL_ARM_ROLES_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../arm_roles.hpp"

#include <set>

#include <fmt/format.h>

namespace latentaudit::detail {

[[nodiscard]] LATENTAUDIT_INLINE std::string resolve_arm(std::span<const trial_record> records,
                                                         std::string_view name,
                                                         std::vector<std::string>& warnings) {
  std::set<std::string> by_kind;                                 // sorted: the first is the tie-break
  std::set<std::pair<std::string_view, std::string_view>> seen;  // (label, arm_kind) classified once
  for (const auto& r : records) {
    if (r.arm == name) return r.arm;
    if (!seen.emplace(r.arm, r.arm_kind).second) continue;
    const auto kind = record_arm_kind(r.arm_kind, r.arm);
    if (kind && arm_kind_name(*kind) == name) by_kind.insert(r.arm);
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
  for (const arm_kind k : all_arm_kinds)
    if (plan_of(k).role)
      r.label[static_cast<std::size_t>(k)] = resolve_arm(records, arm_kind_name(k), warnings);
  return r;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_IMPL_ARM_ROLES_INL_HPP
