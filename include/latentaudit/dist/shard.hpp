// SPDX-License-Identifier: MIT
// latentaudit: sharded audits without MPI's headers — how a design's units are assigned to ranks
// (block, interleaved, dynamic), where each rank's records go (records.<rank>.jsonl beside the
// one-process records.jsonl), how a directory's set of records files is sealed after a crash and
// read back as one set, and how a process learns that an MPI launcher started it
// (docs/distributed.md). The MPI calls themselves are in dist/mpi_runtime.hpp.
#ifndef LATENTAUDIT_DIST_SHARD_HPP
#define LATENTAUDIT_DIST_SHARD_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/json.hpp"
#include "../trial/arm_schedule.hpp"
#include "../trial/design.hpp"
#include "../trial/journal.hpp"
#include "../trial/record.hpp"
#include "../trial/task_file.hpp"

namespace latentaudit::dist {

/// @brief How the units of a design (its (item, seed) pairs, design.unit_order()) are assigned to
/// ranks. The assignment never changes a record (every random stream derives from (seed, item,
/// arm, replicate)); it changes only which rank's file holds it and how evenly the ranks are busy.
enum class shard_schedule {
  block,        ///< rank r runs the r-th contiguous block of the execution order
  interleaved,  ///< rank r runs positions r, r + N, r + 2N, ... of the execution order
  dynamic,      ///< rank 0 hands out the next position to whichever rank asks (self-scheduling)
};

/// @brief The schedule's name ("block", "interleaved", "dynamic").
[[nodiscard]] inline std::string_view schedule_name(shard_schedule s) noexcept {
  switch (s) {
    case shard_schedule::block:
      return "block";
    case shard_schedule::interleaved:
      return "interleaved";
    case shard_schedule::dynamic:
      return "dynamic";
  }
  return "dynamic";
}

/// @brief The schedule named `name`, or std::nullopt.
[[nodiscard]] inline std::optional<shard_schedule> parse_schedule(std::string_view name) noexcept {
  for (auto s : {shard_schedule::block, shard_schedule::interleaved, shard_schedule::dynamic})
    if (schedule_name(s) == name) return s;
  return std::nullopt;
}

/// @brief Under a static schedule (block or interleaved), the rank that runs position `position`
/// of `units` positions with `ranks` ranks. Block gives rank r the positions
/// [floor(r·units/ranks), floor((r+1)·units/ranks)).
/// @throws invalid_argument for the dynamic schedule, ranks < 1 or position >= units.
[[nodiscard]] inline int static_owner(shard_schedule s, std::uint64_t position, std::uint64_t units,
                                      int ranks) {
  constexpr std::string_view fn = "static_owner";
  if (ranks < 1) latentaudit::detail::throw_invalid(fn, "ranks", "must be at least 1");
  if (position >= units) latentaudit::detail::throw_invalid(fn, "position", "must be below units");
  const auto n = static_cast<std::uint64_t>(ranks);
  switch (s) {
    case shard_schedule::interleaved:
      return static_cast<int>(position % n);
    case shard_schedule::block: {
      // the largest r with floor(r·units/n) <= position: ceil((position+1)·n/units) − 1
      __extension__ using u128 = unsigned __int128;
      const u128 r = ((static_cast<u128>(position) + 1) * n + units - 1) / units - 1;
      return static_cast<int>(std::min<u128>(r, n - 1));
    }
    case shard_schedule::dynamic:
      break;
  }
  latentaudit::detail::throw_invalid(fn, "schedule",
                                     "must be block or interleaved (dynamic has no static owner)");
}

/// @brief The records file of rank `rank` of a sharded run: "records.<rank>.jsonl".
[[nodiscard]] inline std::string rank_records_name(int rank) {
  return "records." + std::to_string(rank) + ".jsonl";
}

/// @brief The journal lock file of rank `rank`: ".latentaudit.<rank>.lock" (one writer per
/// records file; the directory's own lock, directory_lock::file_name, is held by rank 0).
[[nodiscard]] inline std::string rank_lock_name(int rank) {
  return ".latentaudit." + std::to_string(rank) + ".lock";
}

/// @brief The records files of an audit directory, in a fixed order: records.jsonl (a
/// one-process run) first if present, then records.<k>.jsonl (a sharded run's ranks) by k. Other
/// files are ignored. Missing or unreadable directory: an empty list.
[[nodiscard]] inline std::vector<std::filesystem::path> records_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::map<std::uint64_t, std::filesystem::path> ranks;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == "records.jsonl") {
      out.insert(out.begin(), it->path());
      continue;
    }
    constexpr std::string_view pre = "records.", post = ".jsonl";
    if (name.size() <= pre.size() + post.size() || name.compare(0, pre.size(), pre) != 0 ||
        name.compare(name.size() - post.size(), post.size(), post) != 0)
      continue;
    const std::string k = name.substr(pre.size(), name.size() - pre.size() - post.size());
    if (k.size() > 9 || k.find_first_not_of("0123456789") != std::string::npos ||
        (k.size() > 1 && k[0] == '0'))
      continue;
    ranks.emplace(std::stoull(k), it->path());
  }
  for (auto& [k, p] : ranks) out.push_back(std::move(p));
  return out;
}

/// @brief Seals a records file left by a process that died: drops a torn last line (a record cut
/// short by the crash) and the zero padding after the last complete record, as record_journal
/// does on a resume. Only for files no process is writing (the caller holds the directory's lock).
/// @returns the bytes dropped.
/// @throws corrupt_data if a complete line is not a valid record or the file cannot be truncated.
inline std::uint64_t seal_records_file(const std::filesystem::path& path, std::uint64_t good);

/// @brief Seals a records file left by a process that died (see the overload taking `good`),
/// reading it first to find where its complete records end.
/// @returns the bytes dropped.
/// @throws corrupt_data if a complete line is not a valid record or the file cannot be truncated.
inline std::uint64_t seal_records_file(const std::filesystem::path& path) {
  std::uint64_t good = 0;
  (void)read_records(path, &good);
  return seal_records_file(path, good);
}

/// @brief Seals a records file whose complete records end at byte `good` (records_file_contents::
/// good, as the caller read it under the directory's lock): drops what follows (a torn last line,
/// the zero padding).
/// @returns the bytes dropped.
/// @throws corrupt_data if the file cannot be truncated.
inline std::uint64_t seal_records_file(const std::filesystem::path& path, std::uint64_t good) {
  const std::uint64_t size = std::filesystem::file_size(path);
  if (size == good) return 0;
  std::error_code ec;
  std::filesystem::resize_file(path, good, ec);
  if (ec)
    LATENTAUDIT_THROW(
        corrupt_data("seal_records_file: cannot truncate '" + path.string() + "': " + ec.message()));
  return size - good;
}

/// @brief Reads a set of records files as one: every file's records (read_records), in file
/// order; a key in two files is an error naming both (a key is run once, by one rank).
/// @param options what to keep of each record (record_read_options)
/// @throws invalid_argument / corrupt_data as read_records, or corrupt_data for a key twice.
[[nodiscard]] inline std::vector<trial_record> read_records_set(std::span<const std::filesystem::path> files,
                                                                const record_read_options& options = {}) {
  // one file (the one-process audit's): its records as read_records returns them, with no second
  // copy (at 1 000 000 records each copy of the vector is ~0.85 GB)
  if (files.size() == 1) return read_records(files[0], nullptr, options);
  std::vector<trial_record> out;
  std::map<trial_key, std::size_t> where;  // key -> index of the file that holds it
  for (std::size_t f = 0; f < files.size(); ++f) {
    auto rs = read_records(files[f], nullptr, options);
    out.reserve(out.size() + rs.size());
    for (auto& r : rs) {
      trial_key k{r.item, r.seed, r.arm};
      if (const auto [it, fresh] = where.emplace(k, f); !fresh)
        LATENTAUDIT_THROW(corrupt_data("read_records_set: key (item " + std::to_string(r.item) + ", seed " +
                                       std::to_string(r.seed) + ", arm " + r.arm + ") is in both '" +
                                       files[it->second].string() + "' and '" + files[f].string() + "'"));
      out.push_back(std::move(r));
    }
  }
  return out;
}

/// @brief What `report --records PATH` reads: a regular file is itself; a directory is its
/// records files (records_files).
/// @throws invalid_argument naming the path if it is neither, or a directory without records files.
[[nodiscard]] inline std::vector<std::filesystem::path> resolve_records_path(const std::filesystem::path& p) {
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) {
    auto files = records_files(p);
    if (files.empty())
      LATENTAUDIT_THROW(invalid_argument("directory '" + p.string() +
                                         "' holds no records.jsonl and no records.<rank>.jsonl"));
    return files;
  }
  return {p};
}

/// @brief An audit directory's records files as read once when it opens (read_records_set_contents):
/// each file's complete records. The opening hands them on — to dist::prepare_records_set, to each
/// file's record_journal (find), as the keys done (keys) and as the records a stopping audit's looks
/// read (take_records) — so that a resume parses each file once.
struct records_set_contents {
  std::vector<std::filesystem::path> files;     ///< records_files(dir), in its order
  std::vector<records_file_contents> contents;  ///< each file's records, as files

  /// @brief The contents of the file named `name` in the set; null if the set has none.
  [[nodiscard]] const records_file_contents* find(const std::string& name) const {
    for (std::size_t f = 0; f < files.size(); ++f)
      if (files[f].filename().string() == name) return &contents[f];
    return nullptr;
  }

  /// @brief The keys the set holds (records_set_keys).
  /// @throws corrupt_data for a key in two files, naming both.
  [[nodiscard]] std::set<trial_key> keys() const {
    std::map<trial_key, std::size_t> where;
    for (std::size_t f = 0; f < files.size(); ++f)
      for (const auto& r : contents[f].records) {
        trial_key k{r.item, r.seed, r.arm};
        if (const auto [it, fresh] = where.emplace(std::move(k), f); !fresh)
          LATENTAUDIT_THROW(corrupt_data("records_set_keys: key (item " + std::to_string(r.item) + ", seed " +
                                         std::to_string(r.seed) + ", arm " + r.arm + ") is in both '" +
                                         files[it->second].string() + "' and '" + files[f].string() + "'"));
      }
    std::set<trial_key> out;
    for (auto& [k, f] : where) out.insert(k);
    return out;
  }

  /// @brief Moves every file's records out, in file order (read_records_set's order), each without
  /// its policy object unless `options.policy`; the set keeps its files and byte counts.
  [[nodiscard]] std::vector<trial_record> take_records(const record_read_options& options = {}) {
    std::vector<trial_record> out;
    std::size_t n = 0;
    for (const auto& c : contents) n += c.records.size();
    out.reserve(n);
    for (auto& c : contents) {
      for (auto& r : c.records) {
        if (!options.policy) r.policy = json_value();
        out.push_back(std::move(r));
      }
      c.records.clear();
    }
    return out;
  }
};

/// @brief Reads every records file of `dir` (records_files) once, each tolerating a torn last line
/// (read_records_file): what an audit's opening hands on (records_set_contents).
/// @throws corrupt_data as read_records.
[[nodiscard]] inline records_set_contents read_records_set_contents(const std::filesystem::path& dir) {
  records_set_contents set;
  set.files = records_files(dir);
  for (const auto& f : set.files) set.contents.push_back(read_records_file(f));
  return set;
}

/// @brief Prepares an audit directory's set of records files before the journals open (the
/// process holding the directory's lock, rank 0 of a sharded run, calls it): files that no
/// journal of this run will own (`owned` names those that will, e.g. records.<r>.jsonl for every
/// rank r) are sealed on a resume (seal_records_file) and are an error without one; when any file
/// without a journal holds records (then `resume` is set), design.json must be there and equal
/// `design`'s identity, and their records must lie in the design. Owned files are left to their
/// journal (record_journal checks and seals its own file).
/// @throws invalid_argument naming the file or the differing design field; corrupt_data as
///         read_records.
/// @param set the directory's records files as the caller read them under its lock
///        (read_records_set_contents), parsed once for the whole opening.
inline void prepare_records_set(const records_set_contents& set, const std::filesystem::path& dir,
                                const trial_design& design, bool resume, const std::set<std::string>& owned) {
  bool any = false;
  // the files without a journal: path, records, bytes of complete records
  std::vector<std::tuple<std::filesystem::path, const std::vector<trial_record>*, std::uint64_t>> unowned;
  for (std::size_t i = 0; i < set.files.size(); ++i) {
    const auto& f = set.files[i];
    const auto& rs = set.contents[i].records;
    const bool mine = owned.count(f.filename().string()) != 0;
    if (rs.empty()) continue;
    any = true;
    if (mine) continue;  // its journal checks it
    if (!resume)
      LATENTAUDIT_THROW(invalid_argument("directory " + dir.string() + " already holds records (" +
                                         f.string() + "): pass --resume, or choose an empty directory"));
    unowned.emplace_back(f, &rs, set.contents[i].good);
  }
  // Files with a journal in this run check the design themselves (record_journal), so a plain
  // one-process resume behaves as before; files without one are checked here.
  if (!any || unowned.empty()) return;
  // The design first (a resume with another design names the differing field), then the keys.
  const auto design_path = dir / "design.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(design_path, ec))
    LATENTAUDIT_THROW(invalid_argument(dir.string() +
                                       " holds records but no design.json, so the resume cannot be checked "
                                       "against the design; choose an empty directory"));
  const json_value recorded = read_design_json(design_path);
  if (const auto diff = design_difference(recorded, design.to_json()); !diff.empty())
    LATENTAUDIT_THROW(
        invalid_argument("record_journal: the design differs from the design of the records in " +
                         dir.string() + ": " + diff));
  for (const auto& [f, rs, good] : unowned)
    for (const auto& r : *rs)
      if (!design.contains(trial_key{r.item, r.seed, r.arm}))
        LATENTAUDIT_THROW(invalid_argument(f.string() + " holds a record outside the design: (item " +
                                           std::to_string(r.item) + ", seed " + std::to_string(r.seed) +
                                           ", arm " + r.arm + ") with " + std::to_string(design.items) +
                                           " items, " + std::to_string(design.seeds) + " seeds"));
  for (const auto& [f, rs, good] : unowned) (void)seal_records_file(f, good);
}

/// @brief prepare_records_set on the directory's records files, read here (the overload taking a
/// records_set_contents reads nothing).
/// @throws as the other overload, or corrupt_data as read_records.
inline void prepare_records_set(const std::filesystem::path& dir, const trial_design& design, bool resume,
                                const std::set<std::string>& owned) {
  prepare_records_set(read_records_set_contents(dir), dir, design, resume, owned);
}

/// @brief The keys held by a set of records files, tolerating a torn last line in each (a file
/// whose journal has not opened yet); a key in two files is an error naming both.
/// @throws corrupt_data as read_records, or for a key twice.
[[nodiscard]] inline std::set<trial_key> records_set_keys(std::span<const std::filesystem::path> files) {
  records_set_contents set;  // one owner of the keys-in-two-files rule: records_set_contents::keys
  set.files.assign(files.begin(), files.end());
  for (const auto& f : set.files) set.contents.push_back(read_records_file(f));
  return set.keys();
}

/// @brief The part of a design.json that fixes the execution order (seed, items, seeds, arm labels
/// in order, randomize_order), as a trial_design whose arms carry only their labels: enough for
/// order_as_executed, not to run trials. std::nullopt if a field is missing or malformed.
[[nodiscard]] inline std::optional<trial_design> design_order_from_json(const json_value& j) {
  if (!j.is_object()) return std::nullopt;
  auto count = [&](const char* k) -> std::optional<std::uint64_t> {
    const json_value* v = j.find(k);
    if (v == nullptr || !v->is_number() || !(v->as_number() >= 0) || v->as_number() > 9.0e15 ||
        v->as_number() != std::floor(v->as_number()))
      return std::nullopt;
    return static_cast<std::uint64_t>(v->as_number());
  };
  const auto seed = count("seed"), items = count("items"), seeds = count("seeds");
  const json_value* arms = j.find("arms");
  const json_value* shuffle = j.find("randomize_order");
  if (!seed || !items || !seeds || *items == 0 || *seeds == 0 || arms == nullptr || !arms->is_array() ||
      shuffle == nullptr || !shuffle->is_bool())
    return std::nullopt;
  trial_design d;
  d.seed = *seed;
  d.items = *items;
  d.seeds = *seeds;
  d.randomize_order = shuffle->as_bool();
  d.arms.clear();
  for (const auto& a : arms->as_array()) {
    if (!a.is_string()) return std::nullopt;
    trial_arm arm;
    arm.label = a.as_string();
    d.arms.push_back(std::move(arm));
  }
  return d;
}

/// @brief Puts records in the order a one-process run of `design` journals them: units in
/// design.unit_order(), the arms of a unit in design.arm_order(); records outside the design go
/// last in (item, seed, arm) order. Every sharded run and every resume thus feeds the report the
/// same sequence as an uninterrupted one-process run.
inline void order_as_executed(std::vector<trial_record>& records, const trial_design& design) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> unit_pos;
  const auto units = design.unit_order();
  for (std::uint64_t i = 0; i < units.size(); ++i) unit_pos.emplace(units[static_cast<std::size_t>(i)], i);
  std::map<std::string, std::size_t> arm_index;
  for (std::size_t a = 0; a < design.arms.size(); ++a) arm_index.emplace(design.arms[a].label, a);
  struct rank_key {
    std::uint64_t unit;
    std::uint64_t arm;
    std::uint64_t item, seed;
    std::string label;
    auto operator<=>(const rank_key&) const = default;
  };
  std::vector<std::pair<rank_key, std::size_t>> keys;
  keys.reserve(records.size());
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::size_t>> arm_orders;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    rank_key k{UINT64_MAX, UINT64_MAX, r.item, r.seed, r.arm};
    const auto u = unit_pos.find({r.item, r.seed});
    const auto a = arm_index.find(r.arm);
    if (u != unit_pos.end() && a != arm_index.end()) {
      auto [it, fresh] = arm_orders.try_emplace({r.item, r.seed});
      if (fresh) {
        const auto order = design.arm_order(r.item, r.seed);
        it->second.assign(order.size(), 0);
        for (std::size_t p = 0; p < order.size(); ++p) it->second[order[p]] = p;
      }
      k.unit = u->second;
      k.arm = it->second[a->second];
    }
    keys.emplace_back(std::move(k), i);
  }
  std::sort(keys.begin(), keys.end());
  // in place, cycle by cycle (no second vector of records): position p takes record keys[p].second
  std::vector<std::size_t> from(keys.size());
  for (std::size_t p = 0; p < keys.size(); ++p) from[p] = keys[p].second;
  keys.clear();
  keys.shrink_to_fit();
  for (std::size_t start = 0; start < from.size(); ++start) {
    if (from[start] == start || from[start] == static_cast<std::size_t>(-1)) continue;
    trial_record held = std::move(records[start]);
    std::size_t p = start;
    while (from[p] != start) {
      const std::size_t q = from[p];
      records[p] = std::move(records[q]);
      from[p] = static_cast<std::size_t>(-1);
      p = q;
    }
    records[p] = std::move(held);
    from[p] = static_cast<std::size_t>(-1);
  }
}

/// @brief The records `report --records PATH` audits, with what the design beside them says.
struct records_input {
  std::vector<trial_record> records;  ///< every record of the file or of the directory's set
  /// the design's arm labels (design.json "arms"), for the report's completeness count; empty for a
  /// file, or a directory without a readable design.json
  std::vector<std::string> design_arms;
  bool ordered_as_executed = false;  ///< the records were put in the order of a one-process run
  /// the task file the design ran on, as design.json names it (task_source "file":
  /// task_options.path), and its SHA-256 (task_hash); empty for built-in tasks, a file, or a
  /// directory without a readable design.json
  std::string task_path;
  std::string task_sha256;  ///< see task_path
  /// an audit stopped when decided (design.json options.until_decided): the design's items, which
  /// the report tunes its intervals for (audit_options::horizon); 0 = a fixed design
  std::size_t horizon = 0;
  std::size_t looks = 1;                              ///< the rule's most looks (audit_options::looks)
  std::map<std::string, std::size_t> regime_horizon;  ///< the design's items per regime
  /// an audit that stopped arms one by one: the trials it scheduled (schedule.json; empty: all)
  arm_schedule schedule;
};

namespace detail {

/// @brief Reads design.json's options.until_decided (written by `audit --until-decided`) into
/// `in`: items, looks, regime_items, each checked (a stopped audit read as a fixed one would get
/// intervals that ignore the stop, so a malformed rule is an error, never skipped).
/// @throws corrupt_data naming `p` and the field
inline void read_until_decided(const json_value& dj, const std::filesystem::path& p, records_input& in) {
  const json_value* opts = dj.find("options");
  const json_value* u = opts != nullptr && opts->is_object() ? opts->find("until_decided") : nullptr;
  if (u == nullptr) return;
  auto bad = [&](const std::string& field, const std::string& why) {
    LATENTAUDIT_THROW(corrupt_data(p.string() + ": field '" + field + "' " + why));
  };
  auto count = [&](const json_value* v, const std::string& field, double most) {
    if (v == nullptr || !v->is_number()) bad(field, "must be a number");
    const double x = v->as_number();
    if (!(x >= 1 && x <= most && std::floor(x) == x))
      bad(field, "must be an integer in [1, " + latentaudit::number_text(most) + "]");
    return static_cast<std::size_t>(x);
  };
  if (!u->is_object()) bad("options.until_decided", "must be an object");
  in.horizon = count(dj.find("items"), "items", static_cast<double>(max_design_items));
  in.looks = count(u->find("looks"), "options.until_decided.looks", static_cast<double>(in.horizon));
  const json_value* ri = u->find("regime_items");
  if (ri == nullptr || !ri->is_object()) bad("options.until_decided.regime_items", "must be an object");
  for (const auto& [name, v] : ri->as_object()) {
    if (name != "need" && name != "no_need" && name != "stale" && name != "conflict")
      bad("options.until_decided.regime_items", "names an unknown regime '" + name + "'");
    in.regime_horizon[name] =
        count(&v, "options.until_decided.regime_items." + name, static_cast<double>(in.horizon));
  }
  // the records cannot hold more items than the design declares (in all, or in a regime): the
  // intervals are tuned for those counts, which must bound every sample
  std::map<std::string, std::set<std::uint64_t>> items;
  std::set<std::uint64_t> all;
  for (const auto& r : in.records) {
    items[r.regime].insert(r.item);
    all.insert(r.item);
  }
  if (all.size() > in.horizon)
    bad("items", "declares " + std::to_string(in.horizon) + " items, but the records hold " +
                     std::to_string(all.size()));
  for (const auto& [name, h] : in.regime_horizon)
    if (const auto it = items.find(name); it != items.end() && it->second.size() > h)
      bad("options.until_decided.regime_items." + name, "declares " + std::to_string(h) +
                                                            " items, but the records hold " +
                                                            std::to_string(it->second.size()));
  // arms stopped one by one (`audit --until-decided` since 2026-12-05): schedule.json beside the
  // records says which trials each batch scheduled; without it every trial counts as scheduled,
  // so a trial left out reads as a missing record (worst-case bounds: valid, wider)
  if (const json_value* arms = u->find("arms"); arms != nullptr) {
    if (!arms->is_string() || arms->as_string() != "stop when decided")
      bad("options.until_decided.arms", "must be \"stop when decided\"");
    const auto sp = p.parent_path() / "schedule.json";
    std::error_code ec;
    if (std::filesystem::exists(sp, ec)) {
      std::set<std::string> labels;
      if (const json_value* a = dj.find("arms"); a != nullptr && a->is_array())
        for (const auto& x : a->as_array())
          if (x.is_string()) labels.insert(x.as_string());
      in.schedule = read_arm_schedule(sp, in.horizon, labels);
    }
  }
}

}  // namespace detail

/// @brief Reads PATH as `latentaudit report --records` does: a regular file's records; or an audit
/// directory's set of records files (resolve_records_path, read_records_set) put in the order a
/// one-process run of the design beside them journals them (design.json, read by read_design_json
/// and checked by check_design_bounds before anything is sized by it; an order whose units exceed
/// four times the records plus 1024 is not applied) and the design's arms. A directory without a
/// readable design.json keeps the files' order (the report's design warnings say why).
/// @param options what to keep of each record (record_read_options; the CLI's report drops the policy)
/// @throws invalid_argument or corrupt_data naming the path or the file as the readers do
[[nodiscard]] inline records_input read_records_input(const std::filesystem::path& p,
                                                      const record_read_options& options = {}) {
  records_input in;
  in.records = read_records_set(resolve_records_path(p), options);
  std::error_code ec;
  if (!std::filesystem::is_directory(p, ec)) return in;
  std::optional<json_value> design_json;
  try {
    design_json = read_design_json(p / "design.json");
  } catch (const error&) {  // no readable design.json: the files' order
  }
  // A design declaring more than any audit has (90k arms) is refused before it sizes the report.
  if (design_json) check_design_bounds(*design_json, p / "design.json");
  if (design_json) detail::read_until_decided(*design_json, p / "design.json", in);
  try {
    const auto& dj = design_json ? *design_json : json_value();
    if (const auto od = design_order_from_json(dj);
        od && static_cast<long double>(od->items) * static_cast<long double>(od->seeds) <=
                  4.0L * static_cast<long double>(in.records.size()) + 1024.0L) {
      order_as_executed(in.records, *od);
      in.ordered_as_executed = true;
    }
    if (const json_value* a = dj.find("arms"); a != nullptr && a->is_array())
      for (const auto& x : a->as_array())
        if (x.is_string()) in.design_arms.push_back(x.as_string());
    const json_value* src = dj.find("task_source");
    const json_value* hash = dj.find("task_hash");
    const json_value* topt = dj.find("task_options");
    const json_value* path = topt != nullptr && topt->is_object() ? topt->find("path") : nullptr;
    if (src != nullptr && src->is_string() && src->as_string() == "file" && hash != nullptr &&
        hash->is_string() && path != nullptr && path->is_string()) {
      in.task_path = path->as_string();
      in.task_sha256 = hash->as_string();
    }
  } catch (const error&) {  // a design.json without a usable order: the files' order
  }
  return in;
}

/// @brief The task file a design ran on, for the report's drill-down: `task_path` and `task_sha256`
/// as design.json gives them (task_options.path, task_hash), read by read_task_file (a relative
/// path: from the working directory, then from `dir`, the audit directory) and kept only when its
/// SHA-256 equals the design's. Returns null and sets `note` (one sentence naming the path) when the design
/// names a file that is missing, unreadable or changed since the audit; null with an empty note when the
/// design names none.
[[nodiscard]] inline std::shared_ptr<const task_file> read_design_tasks(const std::string& task_path,
                                                                        const std::string& task_sha256,
                                                                        const std::filesystem::path& dir,
                                                                        std::string& note) {
  note.clear();
  if (task_path.empty()) return nullptr;
  std::filesystem::path p = task_path;
  std::error_code ec;
  if (p.is_relative() && !std::filesystem::is_regular_file(p, ec) &&
      std::filesystem::is_regular_file(dir / p, ec))
    p = dir / p;
  try {
    auto t = std::make_shared<task_file>(read_task_file(p));
    if (t->sha256 == task_sha256) return t;
    note = "the task file '" + task_path +
           "' that design.json names has changed since the audit (SHA-256 differs)";
  } catch (const error& e) {
    note = "the task file '" + task_path + "' that design.json names cannot be read (" + e.what() + ")";
  }
  return nullptr;
}

/// @brief read_design_tasks() for the task file records_input read from an audit directory's
/// design.json (records_input::task_path, task_sha256).
[[nodiscard]] inline std::shared_ptr<const task_file> read_design_tasks(const records_input& in,
                                                                        const std::filesystem::path& dir,
                                                                        std::string& note) {
  return read_design_tasks(in.task_path, in.task_sha256, dir, note);
}

/// @brief An MPI launch as the environment tells it, before MPI is initialised: the world size
/// and the variable that said so.
struct launch_info {
  int world_size = 1;    ///< processes in the job (0 when only "not the only one" is known)
  std::string variable;  ///< the environment variable read (e.g. "OMPI_COMM_WORLD_SIZE")
};

/// @brief Whether an MPI launcher started this process as one of several: OMPI_COMM_WORLD_SIZE
/// (Open MPI's mpirun), PMI_SIZE (MPICH's hydra, Slurm's srun --mpi=pmi2), MPI_LOCALNRANKS
/// (MPICH), SLURM_STEP_NUM_TASKS (any srun step) above 1, or a PMIX_RANK above 0 (a PMIx launch
/// such as srun --mpi=pmix, which does not export the size). std::nullopt for a lone process.
[[nodiscard]] inline std::optional<launch_info> mpi_launch_from_env() {
  auto number = [](const char* name) -> long {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return -1;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return end != nullptr && *end == '\0' ? n : -1;
  };
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"})
    if (const long n = number(name); n > 1)
      return launch_info{static_cast<int>(std::min<long>(n, 1 << 30)), name};
  if (number("PMIX_RANK") > 0) return launch_info{0, "PMIX_RANK"};
  return std::nullopt;
}

}  // namespace latentaudit::dist

#endif  // LATENTAUDIT_DIST_SHARD_HPP
