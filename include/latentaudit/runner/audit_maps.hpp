// SPDX-License-Identifier: MIT
// latentaudit: the cache maps of an audit's kv_mapped arms (docs/mapping.md), as audit_spec::maps
// holds them. The map files are read (the one reader, engine/kv_map_file.hpp); build_audit_design
// matches each by its fingerprints to the audit's receiver and to one of its senders (the partner,
// or a drifted sender), compares its calibration documents with the audit's item documents (a map
// calibrated on an item is refused), and the matched maps become kv_mapped arms, part of the design's
// identity and the drivers' relay maps (trial_driver::add_map).
#ifndef LATENTAUDIT_RUNNER_AUDIT_MAPS_HPP
#define LATENTAUDIT_RUNNER_AUDIT_MAPS_HPP

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/json.hpp"
#include "../engine/kv_map_file.hpp"
#include "../kv/kv_map.hpp"
#include "../trial/design.hpp"
#include "../trial/driver.hpp"
#include "../trial/task_file.hpp"

namespace latentaudit {

/// @brief One cache map file of an audit, read.
struct audit_map_file {
  std::filesystem::path path;         ///< as given (or found in a directory)
  kv_map_file file;                   ///< read_kv_map's result
  std::shared_ptr<const kv_map> map;  ///< the map, shared by every driver's relay_map
};

/// @brief The cache map files of one audit.
struct audit_maps {
  /// the files were named by the user: one that matches none of the audit's engines is an error
  /// (else, files found in a default directory, it is left out)
  bool given = false;
  std::vector<audit_map_file> files;  ///< every file read
};

/// @brief The maps of an audit matched to its engines: one per sender, and the design identity's part.
struct audit_matched_maps {
  /// the matched maps by sender name (trial_driver::add_map), one per sender
  std::vector<std::pair<std::string, relay_map>> by_sender;
  /// the design identity's "maps": per kv_mapped arm label, the map's id and calibration hash
  json_value identity = json_value::object();

  /// @brief Registers every matched map with `driver` (each of an audit's drivers, workers included).
  template <class Driver>
  void add_to(Driver& driver) const {
    for (const auto& [sender, m] : by_sender) driver.add_map(sender, m);
  }
};

/// @brief Reads the map files `paths` (each through read_kv_map); `given`: named by the user.
/// @throws invalid_argument naming a path that is not a regular file; corrupt_data (read_kv_map)
///         naming the file and field of a bad map.
[[nodiscard]] inline audit_maps read_audit_maps(const std::vector<std::filesystem::path>& paths, bool given) {
  audit_maps out{.given = given, .files = {}};
  for (const auto& p : paths) {
    if (std::error_code ec; !std::filesystem::is_regular_file(p, ec))
      LATENTAUDIT_THROW(invalid_argument("read_audit_maps: '" + p.string() + "' is not a file"));
    kv_map_file f = read_kv_map(p);
    auto shared = std::make_shared<const kv_map>(f.map);
    out.files.push_back({p, std::move(f), std::move(shared)});
  }
  return out;
}

/// @brief The map files of `dir` (every *.safetensors, sorted by name; none if `dir` is no
/// directory), read as found ones (not given).
[[nodiscard]] inline audit_maps read_audit_map_directory(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> paths;
  if (std::error_code ec; std::filesystem::is_directory(dir, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
  }
  return read_audit_maps(paths, false);
}

namespace detail {

// The item documents' calibration hashes (the tokens B's model reads, as the trials prepare them).
inline std::vector<std::pair<std::size_t, std::uint64_t>> audit_item_documents(const task_file_source& tasks,
                                                                               std::uint64_t seed) {
  std::vector<std::pair<std::size_t, std::uint64_t>> out;
  for (std::uint64_t i = 0; i < tasks.items(); ++i)
    out.emplace_back(static_cast<std::size_t>(i), calibration_document_hash(tasks.task(i, 0, seed).document));
  return out;
}

// Matches `maps` to the engines and adds their arms to `d` (see build_audit_design): a map whose
// target is `receiver` and whose source is the partner's becomes kv_mapped (sender "partner"), one
// whose source is a drifted sender's kv_mapped_<sender>. A given map that matches no engine, or a
// second map for one sender, is refused naming the file; a found one that matches none is left
// out, and so is a map whose arm explicit arms (`arms_given`) do not name. Without explicit arms
// the matched maps' arms are added; with them every kv_mapped arm named needs a matched map. A map
// calibrated on one of the audit's item documents is refused naming the file and the item.
template <class Partner, class Drifted>
audit_matched_maps match_audit_maps(const audit_maps& maps, trial_design& d, bool arms_given,
                                    const model_fingerprint& receiver, const Partner* partner,
                                    const std::vector<std::pair<std::string, Drifted>>& drifted,
                                    const task_file_source& tasks) {
  audit_matched_maps out;
  if (arms_given && std::none_of(d.arms.begin(), d.arms.end(),
                                 [](const trial_arm& a) { return a.kind == arm_kind::kv_mapped; }))
    return out;  // the arms name no kv_mapped arm: the maps play no part
  const auto fail = [](const std::string& why) {
    LATENTAUDIT_THROW(invalid_argument("build_audit_design: audit_spec.maps: " + why));
  };
  std::vector<std::pair<std::size_t, std::uint64_t>> item_docs;  // for the overlap check
  if (!maps.files.empty()) item_docs = audit_item_documents(tasks, d.seed);
  for (const auto& f : maps.files) {
    const kv_map& m = *f.map;
    const std::string where = "'" + f.path.string() + "'";
    std::string sender;
    if (partner != nullptr && m.source == partner->info().fingerprint) sender = std::string(partner_sender);
    for (const auto& [name, e] : drifted)
      if (sender.empty() && m.source == e.info().fingerprint) sender = name;
    if (!(m.target == receiver) || sender.empty()) {
      if (!maps.given) continue;
      fail(where + " maps " + fingerprint_text(m.source) + " to " + fingerprint_text(m.target) +
           (!(m.target == receiver)
                ? ", not to this audit's model " + fingerprint_text(receiver)
                : ", and its source is neither the partner (--partner) nor a drifted sender "
                  "(--drift) of this audit"));
    }
    const trial_arm arm = kv_mapped_arm(sender);
    const bool in_design =
        std::any_of(d.arms.begin(), d.arms.end(), [&](const trial_arm& x) { return x.label == arm.label; });
    if (arms_given && !in_design) continue;  // the arms name no arm of this map: it plays no part
    if (std::any_of(out.by_sender.begin(), out.by_sender.end(),
                    [&](const auto& x) { return x.first == sender; }))
      fail(where + " is a second map from sender '" + sender + "' (arm '" + arm.label +
           "'): give one map per sender");
    // the calibration must not hold an item of this audit (the map would have seen its answers' context)
    std::size_t shared = 0, first = 0;
    for (const auto& [i, h] : item_docs)
      if (std::binary_search(f.file.calibration_documents.begin(), f.file.calibration_documents.end(), h) &&
          shared++ == 0)
        first = i;
    if (shared > 0)
      fail(where + " was calibrated on " + std::to_string(shared) + " of this audit's item documents (item " +
           std::to_string(first) +
           " first): refit it on documents apart from the audit's (map fit --seed, or other tasks)");
    out.by_sender.emplace_back(
        sender, relay_map{.id = f.file.id,
                          .source = m.source,
                          .target = m.target,
                          .apply = [map = f.map](const kv_block& b) { return apply_kv_map(*map, b); }});
    json_value id = json_value::object();
    id.set("id", f.file.id);
    id.set("calibration_sha256", f.file.calibration_sha256);
    out.identity.set(arm.label, std::move(id));
    if (!arms_given && !in_design) d.arms.push_back(arm);
  }
  for (const auto& a : d.arms)
    if (a.kind == arm_kind::kv_mapped && std::none_of(out.by_sender.begin(), out.by_sender.end(),
                                                      [&](const auto& x) { return x.first == a.sender; }))
      LATENTAUDIT_THROW(invalid_argument("build_audit_design: arm '" + a.label +
                                         "' needs a cache map from sender '" + a.sender +
                                         "' to this audit's model (audit_spec.maps: --map FILE, made by "
                                         "latentaudit map fit)"));
  return out;
}

}  // namespace detail

}  // namespace latentaudit

#endif  // LATENTAUDIT_RUNNER_AUDIT_MAPS_HPP
