// SPDX-License-Identifier: MIT
// latentaudit: what a report of an existing audit reads besides its records — the one path from a
// records file or an audit directory to the records and the audit_options they are reported under.
// `latentaudit report --records PATH` and Python's `report(path)` both call read_report_input, so a
// report of one directory decides the same way from either: the design's arms (completeness), an
// audit stopped when decided (its horizon, looks and schedule: intervals as confidence sequences),
// the task file design.json names (regimes, labels), and the design as the denominator (design.json's
// items × seeds: a unit a stack lost in every arm is missing and bounded, docs/audit-report.md
// "Missing records"); plus the warnings where the records disagree with the design beside them.
#ifndef LATENTAUDIT_RUNNER_REPORT_INPUT_HPP
#define LATENTAUDIT_RUNNER_REPORT_INPUT_HPP

#include <cstddef>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "../core/json.hpp"
#include "../dist/shard.hpp"
#include "../report/audit.hpp"
#include "../trial/arm.hpp"
#include "../trial/design.hpp"
#include "../trial/record.hpp"

namespace latentaudit {

/// @brief The records of a report and what was read beside them (read_report_input).
struct report_input {
  std::vector<trial_record> records;  ///< every record of the file or the directory's set
  bool directory = false;             ///< the path named an audit directory
  /// One line each where the records disagree with the design.json beside them (keys outside the
  /// design, another model, partner or link than it names), a design.json that cannot be read, or one
  /// that lists too many units to be this set's design. Warnings, not errors: records from any stack
  /// may sit beside any file.
  std::vector<std::string> design_warnings;
};

namespace detail {

// The design.json beside `records_path` (its directory's), or nullopt when there is none; a
// design.json that cannot be read is a warning in `warnings`.
inline std::optional<json_value> design_beside(const std::filesystem::path& records_path,
                                               std::vector<std::string>& warnings) {
  const auto dir =
      records_path.parent_path().empty() ? std::filesystem::path(".") : records_path.parent_path();
  const auto path = dir / "design.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    return read_design_json(path);
  } catch (const error& e) {
    warnings.push_back(path.string() +
                       " beside the records cannot be read, so they are not checked against it: " + e.what());
    return std::nullopt;
  }
}

// Where the records disagree with the design `d` read from `path`.
inline void add_design_warnings(const json_value& d, const std::filesystem::path& path,
                                const std::vector<trial_record>& records, std::vector<std::string>& out) {
  auto number = [&](const char* key) -> std::optional<double> {
    const json_value* v = d.find(key);
    return v != nullptr && v->is_number() ? std::optional<double>(v->as_number()) : std::nullopt;
  };
  auto text = [&](const char* key) -> std::string {
    const json_value* v = d.find(key);
    return v != nullptr && v->is_string() ? v->as_string() : std::string();
  };
  std::set<std::string> arms;
  if (const json_value* a = d.find("arms"); a != nullptr && a->is_array())
    for (const auto& x : a->as_array())
      if (x.is_string()) arms.insert(x.as_string());
  const auto items = number("items"), seeds = number("seeds");
  const std::string model = text("model_fingerprint"), partner = text("partner_fingerprint"),
                    link = text("link");
  std::size_t outside = 0, other_model = 0, other_partner = 0, other_link = 0;
  std::string first_outside;
  for (const auto& r : records) {
    const bool out_of = (items && static_cast<double>(r.item) >= *items) ||
                        (seeds && static_cast<double>(r.seed) >= *seeds) ||
                        (!arms.empty() && !arms.count(r.arm));
    if (out_of && outside++ == 0)
      first_outside =
          "(item " + std::to_string(r.item) + ", seed " + std::to_string(r.seed) + ", arm " + r.arm + ")";
    if (!model.empty() && !r.receiver_fingerprint.empty() && r.receiver_fingerprint != model) ++other_model;
    if (!partner.empty() && r.arm_kind == arm_kind_name(arm_kind::cross_model) &&
        !r.sender_fingerprint.empty() && r.sender_fingerprint != partner)
      ++other_partner;
    if (!link.empty() && !r.link.empty() && r.link != link) ++other_link;
  }
  const std::string beside = " (" + path.string() + ")";
  if (outside > 0)
    out.push_back(std::to_string(outside) + " record(s) lie outside the design beside them" + beside +
                  ", first " + first_outside);
  if (other_model > 0)
    out.push_back(std::to_string(other_model) + " record(s) ran another model than the design's " + model +
                  beside);
  if (other_partner > 0)
    out.push_back(std::to_string(other_partner) +
                  " cross_model record(s) ran another partner than the design's " + partner + beside);
  if (other_link > 0)
    out.push_back(std::to_string(other_link) + " record(s) used another link than the design's " + link +
                  beside);
}

// The design as the denominator: design.json's items × seeds are the units the report counts; each
// item's regime from the design's task file when it was read. One listing more than 4 × the records
// + 1024 units is not this set's design (a warning, the records not counted against it).
inline void add_design_units(const json_value& d, const std::filesystem::path& path, std::size_t records,
                             audit_options& aopt, std::vector<std::string>& warnings) {
  const json_value* items = d.find("items");
  const json_value* seeds = d.find("seeds");
  if (items == nullptr || seeds == nullptr || !items->is_number() || !seeds->is_number() ||
      !(items->as_number() >= 1) || !(seeds->as_number() >= 1))
    return;
  const double units = items->as_number() * seeds->as_number();
  if (units > 4.0 * static_cast<double>(records) + 1024.0) {
    warnings.push_back(path.string() + " lists " + std::to_string(static_cast<unsigned long long>(units)) +
                       " (item, seed) units, more than 4 x the " + std::to_string(records) +
                       " records + 1024: the records are not counted against it");
    return;
  }
  aopt.design_items = static_cast<std::uint64_t>(items->as_number());
  aopt.design_seeds = static_cast<std::uint64_t>(seeds->as_number());
  aopt.design_item_regime.clear();
  if (aopt.tasks != nullptr && aopt.tasks->tasks.size() >= aopt.design_items)
    for (const auto& t : aopt.tasks->tasks) aopt.design_item_regime.emplace_back(regime_name(t.regime));
}

}  // namespace detail

/// @brief Reads the records of `path` (a records file, or an audit directory: its records.jsonl and
/// a sharded run's records.<rank>.jsonl, dist::read_records_input) and sets in `aopt` what the
/// directory's design.json and schedule.json say: the design's arms, an audit stopped when decided
/// (horizon, looks, the regimes' items, the schedule), the task file it names
/// (dist::read_design_tasks; `aopt.tasks_note` says why it was not read), and — for a directory of a
/// fixed design — the design's items × seeds as the report's denominator. `policy`: whether the
/// records' policy objects are kept (no analysis of the report reads them).
/// @throws corrupt_data / invalid_argument as dist::read_records_input and read_design_tasks
[[nodiscard]] inline report_input read_report_input(const std::filesystem::path& path, audit_options& aopt,
                                                    bool policy = false) {
  report_input out;
  std::error_code ec;
  out.directory = std::filesystem::is_directory(path, ec);
  auto in = dist::read_records_input(path, {.policy = policy});
  aopt.design_arms = std::move(in.design_arms);
  aopt.horizon = in.horizon;  // a stopped audit: its intervals tuned for the design, as the audit's
  aopt.looks = in.looks;
  aopt.regime_horizon = in.regime_horizon;
  aopt.schedule = in.schedule;
  aopt.tasks = dist::read_design_tasks(in, path, aopt.tasks_note);
  out.records = std::move(in.records);
  const std::filesystem::path records_path = out.directory ? path / "records.jsonl" : path;
  const auto design = detail::design_beside(records_path, out.design_warnings);
  if (!design) return out;
  const auto design_path =
      (records_path.parent_path().empty() ? std::filesystem::path(".") : records_path.parent_path()) /
      "design.json";
  if (out.directory && aopt.horizon == 0)
    detail::add_design_units(*design, design_path, out.records.size(), aopt, out.design_warnings);
  detail::add_design_warnings(*design, design_path, out.records, out.design_warnings);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_RUNNER_REPORT_INPUT_HPP
