// SPDX-License-Identifier: MIT
// latentaudit: which trials of a design an audit that stops arms one by one scheduled
// (`latentaudit audit --until-decided`): the design's items run in batches, and after each look an
// arm stops on the items of a regime once every finding that reads it is decided. The schedule is
// what tells a trial that was never scheduled from a record that is missing (a failed relay the
// stack did not record): the report bounds the second by the worst case and leaves the first out.
// Its file, schedule.json beside records.jsonl, has one writer (the audit) and one reader
// (read_arm_schedule). docs/audit-report.md "An audit that stops when it has decided".
#ifndef LATENTAUDIT_TRIAL_ARM_SCHEDULE_HPP
#define LATENTAUDIT_TRIAL_ARM_SCHEDULE_HPP

#include <algorithm>
#include <compare>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/file_check.hpp"
#include "../core/json.hpp"

namespace latentaudit {

/// @brief One (regime, arm) cell of a design: the trials of `arm` on the items of `regime`
/// ("need", "no_need", "stale", "conflict"). What a finding reads (finding::reads) and what the
/// schedule of a stopped audit turns on and off.
struct arm_cell {
  std::string regime;  ///< the items' regime
  std::string arm;     ///< the arm label
  /// @brief Cells order by regime, then arm.
  friend auto operator<=>(const arm_cell&, const arm_cell&) = default;
  /// @brief Equal when regime and arm are.
  friend bool operator==(const arm_cell&, const arm_cell&) = default;
};

/// @brief The trials an audit scheduled, batch by batch: item i is in batch i / batch_items, and a
/// cell runs on a batch's items unless the schedule left it out of that batch. An empty schedule
/// (batch_items 0) left nothing out: every arm of the design runs on every item.
struct arm_schedule {
  std::uint64_t batch_items = 0;  ///< items per batch (0: nothing left out)
  std::uint64_t batches = 0;      ///< batches scheduled so far (run or running); later items have none
  /// the cells left out of at least one batch, each with the batches it did run in: ascending,
  /// disjoint, non-adjacent ranges [from, to) within [0, batches). A cell not listed ran in every
  /// batch.
  std::map<arm_cell, std::vector<std::pair<std::uint64_t, std::uint64_t>>> partial;

  /// @brief Whether nothing is left out (every trial of the design scheduled).
  [[nodiscard]] bool empty() const noexcept { return batch_items == 0; }

  /// @brief Whether the trials of `cell` on `item` were scheduled: always for an empty schedule;
  /// else when item's batch is scheduled and the cell ran in it.
  [[nodiscard]] bool runs(std::uint64_t item, const arm_cell& cell) const {
    if (empty()) return true;
    const std::uint64_t b = item / batch_items;
    if (b >= batches) return false;
    const auto it = partial.find(cell);
    if (it == partial.end()) return true;
    for (const auto& [from, to] : it->second)
      if (b >= from && b < to) return true;
    return false;
  }

  /// @brief Schedules the next batch: every cell runs on its items but those in `skipped`.
  void add_batch(const std::set<arm_cell>& skipped) {
    const std::uint64_t b = batches++;
    for (const auto& c : skipped)
      partial.try_emplace(c,
                          b == 0 ? decltype(partial)::mapped_type{} : decltype(partial)::mapped_type{{0, b}});
    for (auto& [c, ranges] : partial) {
      if (skipped.count(c) != 0) continue;
      if (!ranges.empty() && ranges.back().second == b)
        ranges.back().second = b + 1;
      else
        ranges.emplace_back(b, b + 1);
    }
  }

  /// @brief {"batch_items", "batches", "partial": [{"regime", "arm", "ran": [[from, to], ...]}]}.
  [[nodiscard]] json_value to_json() const {
    json_value cells = json_value::array();
    for (const auto& [c, ranges] : partial) {
      json_value ran = json_value::array();
      for (const auto& [from, to] : ranges)
        ran.push_back(json_value::array({static_cast<double>(from), static_cast<double>(to)}));
      json_value o = json_value::object();
      o.set("regime", c.regime);
      o.set("arm", c.arm);
      o.set("ran", std::move(ran));
      cells.push_back(std::move(o));
    }
    json_value j = json_value::object();
    j.set("batch_items", static_cast<double>(batch_items));
    j.set("batches", static_cast<double>(batches));
    j.set("partial", std::move(cells));
    return j;
  }
};

/// @brief The schedule in `j` (arm_schedule::to_json), read from `p`, checked against the design:
/// `batch_items` and `batches` integers with batches · batch_items < items + batch_items, each
/// cell's regime one of the four and arm one of `arms`, no cell twice, its ranges ascending,
/// disjoint and non-adjacent within [0, batches).
/// @throws corrupt_data naming `p` and the field
[[nodiscard]] inline arm_schedule arm_schedule_from_json(const json_value& j, const std::filesystem::path& p,
                                                         std::uint64_t items,
                                                         const std::set<std::string>& arms) {
  auto bad = [&](const std::string& field, const std::string& why) {
    LATENTAUDIT_THROW(corrupt_data(p.string() + ": field '" + field + "' " + why));
  };
  if (!j.is_object()) LATENTAUDIT_THROW(corrupt_data(p.string() + ": not a JSON object"));
  auto count = [&](const json_value* v, const std::string& field, double least, double most) {
    if (v == nullptr || !v->is_number()) bad(field, "must be a number");
    const double x = v->as_number();
    if (!(x >= least && x <= most && x == static_cast<double>(static_cast<std::uint64_t>(x))))
      bad(field, "must be an integer in [" + std::to_string(static_cast<std::uint64_t>(least)) + ", " +
                     std::to_string(static_cast<std::uint64_t>(most)) + "]");
    return static_cast<std::uint64_t>(x);
  };
  arm_schedule s;
  s.batch_items = count(j.find("batch_items"), "batch_items", 1, static_cast<double>(items));
  s.batches = count(j.find("batches"), "batches", 0,
                    static_cast<double>((items + s.batch_items - 1) / s.batch_items));
  const json_value* cells = j.find("partial");
  if (cells == nullptr || !cells->is_array()) bad("partial", "must be an array");
  if (cells->as_array().size() > 4 * arms.size()) bad("partial", "lists more cells than the design has");
  for (std::size_t i = 0; i < cells->as_array().size(); ++i) {
    const auto& c = cells->as_array()[i];
    const std::string at = "partial[" + std::to_string(i) + "]";
    if (!c.is_object()) bad(at, "must be an object");
    const json_value* rg = c.find("regime");
    const json_value* arm = c.find("arm");
    const json_value* ran = c.find("ran");
    if (rg == nullptr || !rg->is_string() ||
        (rg->as_string() != "need" && rg->as_string() != "no_need" && rg->as_string() != "stale" &&
         rg->as_string() != "conflict"))
      bad(at + ".regime", "must be one of need, no_need, stale, conflict");
    if (arm == nullptr || !arm->is_string() || arms.count(arm->as_string()) == 0)
      bad(at + ".arm", "must name an arm of the design");
    if (ran == nullptr || !ran->is_array() || ran->as_array().size() > s.batches)
      bad(at + ".ran", "must be an array of at most 'batches' ranges");
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (std::size_t k = 0; k < ran->as_array().size(); ++k) {
      const auto& r = ran->as_array()[k];
      const std::string rat = at + ".ran[" + std::to_string(k) + "]";
      if (!r.is_array() || r.as_array().size() != 2) bad(rat, "must be a pair [from, to]");
      const auto from = count(&r.as_array()[0], rat + "[0]", 0, static_cast<double>(s.batches));
      const auto to = count(&r.as_array()[1], rat + "[1]", 0, static_cast<double>(s.batches));
      if (!(from < to) || (!ranges.empty() && from <= ranges.back().second))
        bad(rat, "must be a non-empty range after the one before it, not adjacent to it");
      ranges.emplace_back(from, to);
    }
    if (!s.partial.try_emplace(arm_cell{rg->as_string(), arm->as_string()}, std::move(ranges)).second)
      bad(at, "lists its cell twice");
  }
  return s;
}

/// @brief The schedule `s` as it stood after its first `n` batches (n <= s.batches): every range cut
/// at n, a cell that ran in all n batches no longer listed. A resume compares a schedule.json with
/// the journal's replay through it (audit_session).
[[nodiscard]] inline arm_schedule arm_schedule_prefix(const arm_schedule& s, std::uint64_t n) {
  arm_schedule out;
  out.batch_items = s.batch_items;
  out.batches = std::min(n, s.batches);
  for (const auto& [cell, ranges] : s.partial) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> cut;
    for (const auto& [from, to] : ranges)
      if (from < out.batches) cut.emplace_back(from, std::min(to, out.batches));
    const bool everywhere = cut.size() == 1 && cut[0].first == 0 && cut[0].second == out.batches;
    if (!everywhere) out.partial.emplace(cell, std::move(cut));
  }
  return out;
}

/// @brief The one reader of schedule.json (written by write_arm_schedule): at most 4 MiB and 8
/// levels deep, checked by arm_schedule_from_json.
/// @throws invalid_argument if `p` is not a regular file; corrupt_data naming it if it is larger
///         than 4 MiB, cannot be parsed, or is malformed
[[nodiscard]] inline arm_schedule read_arm_schedule(const std::filesystem::path& p, std::uint64_t items,
                                                    const std::set<std::string>& arms) {
  constexpr std::size_t most = std::size_t{4} << 20;
  if (require_regular_file(p, "schedule file") > most)
    LATENTAUDIT_THROW(corrupt_data(p.string() + " is larger than 4 MiB"));
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  json_value j;
  try {
    j = parse_json(ss.str(), {.max_depth = 8, .max_bytes = most});
  } catch (const error& e) {
    LATENTAUDIT_THROW(corrupt_data(p.string() + ": " + e.what()));
  }
  return arm_schedule_from_json(j, p, items, arms);
}

/// @brief Writes `s` to `p` atomically (a temporary file beside it, then a rename), so a reader
/// sees the old schedule or the new one, never a torn file.
/// @throws corrupt_data naming the file when it cannot be written
inline void write_arm_schedule(const std::filesystem::path& p, const arm_schedule& s) {
  const auto tmp = std::filesystem::path(p.string() + ".tmp");
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    o << write_json(s.to_json()) << '\n';
    o.flush();
    if (!o) LATENTAUDIT_THROW(corrupt_data("cannot write '" + tmp.string() + "'"));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, p, ec);
  if (ec) LATENTAUDIT_THROW(corrupt_data("cannot write '" + p.string() + "': " + ec.message()));
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_ARM_SCHEDULE_HPP
