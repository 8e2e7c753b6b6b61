// SPDX-License-Identifier: MIT
// `audit --map`: the cache maps of the kv_mapped arms (docs/mapping.md). The map files are read
// (the one reader, engine/kv_map_file.hpp), each is matched by its fingerprints to this audit's
// receiver and to one of its senders (the partner, or a drifted sender), its calibration documents
// are compared with the audit's item documents (a map calibrated on an item is refused), and the
// matched maps become kv_mapped arms and the drivers' relay maps (trial_driver::add_map).
#ifndef LATENTAUDIT_CLI_AUDIT_MAPS_HPP
#define LATENTAUDIT_CLI_AUDIT_MAPS_HPP

#include <latentaudit/engine/kv_map_file.hpp>
#include <latentaudit/kv/kv_map.hpp>
#include <latentaudit/trial/design.hpp>
#include <latentaudit/trial/driver.hpp>
#include <latentaudit/trial/task_file.hpp>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {

/// One map file of --map, read.
struct audit_map_file {
  std::filesystem::path path;         ///< as given (or found in the default directory)
  kv_map_file file;                   ///< read_kv_map's result
  std::shared_ptr<const kv_map> map;  ///< the map, shared by every driver's relay_map
};

/// The maps of one audit: the files read, and those matched to a sender.
struct audit_maps {
  bool given = false;                 ///< --map FILE[,FILE...] (else the default directory, if any)
  std::vector<audit_map_file> files;  ///< every file read
  /// the matched maps by sender name (trial_driver::add_map), one per sender
  std::vector<std::pair<std::string, relay_map>> by_sender;
  /// the design identity's "maps": per kv_mapped arm label, the map's id and calibration hash
  json_value identity = json_value::object();

  /// Registers every matched map with `driver` (each of an audit's drivers, workers included).
  template <class Driver>
  void add_to(Driver& driver) const {
    for (const auto& [sender, m] : by_sender) driver.add_map(sender, m);
  }
};

/// Reads --map FILE[,FILE...]: each file through read_kv_map (a bad file exits 2 naming it and the
/// field); 'none' reads none; without the option every *.safetensors of `default_dir` (sorted by
/// name), if that directory exists.
inline audit_maps read_audit_maps(const arguments& args, const std::filesystem::path& default_dir) {
  audit_maps out;
  std::vector<std::filesystem::path> paths;
  if (const auto given = args.get("--map")) {
    if (*given == "none") return out;
    out.given = true;
    std::size_t i = 0;
    while (i <= given->size()) {
      const std::size_t j = std::min(given->find(',', i), given->size());
      if (j == i) throw usage_error("audit: option --map: an empty file name in '" + *given + "'");
      paths.emplace_back(given->substr(i, j - i));
      i = j + 1;
    }
  } else if (std::error_code ec; std::filesystem::is_directory(default_dir, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(default_dir))
      if (e.path().extension() == ".safetensors") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
  }
  for (const auto& p : paths) {
    if (std::error_code ec; !std::filesystem::is_regular_file(p, ec))
      throw usage_error("audit: option --map: '" + p.string() + "' is not a file");
    kv_map_file f = read_kv_map(p);
    auto shared = std::make_shared<const kv_map>(f.map);
    out.files.push_back({p, std::move(f), std::move(shared)});
  }
  return out;
}

/// Matches the maps to this audit's engines and adds their arms. A map whose target is `engine`'s
/// model and whose source is the partner's becomes kv_mapped (sender "partner"); one whose source
/// is a drifted sender's becomes kv_mapped_<sender>. A given map (--map) that matches no engine,
/// or a second map for one sender, exits 2 naming the file; a default-directory map that matches
/// none is left out, and so is a map whose arm an explicit --arms does not name. Without --arms the matched
/// maps' arms are added to the design; with --arms every kv_mapped arm named there needs a matched map (exit
/// 2 otherwise). A map calibrated on one of the audit's item documents (calibration_document_hash of the
/// tokens B's model reads: text documents through `codec`, as the trials will) exits 2 naming the file and
/// the item.
template <class Engine, class Partner, class Drifted>
void attach_audit_maps(audit_maps& maps, trial_design& d, bool arms_given, const Engine& engine,
                       const Partner* partner, const std::vector<std::pair<std::string, Drifted>>& drifted,
                       const task_file& tasks, const text_codec& codec) {
  if (arms_given && std::none_of(d.arms.begin(), d.arms.end(),
                                 [](const trial_arm& a) { return a.kind == arm_kind::kv_mapped; }))
    return;  // --arms names no kv_mapped arm: the maps play no part
  const model_fingerprint& receiver = engine.info().fingerprint;
  std::vector<std::pair<std::size_t, std::uint64_t>> item_docs;  // for the overlap check
  if (!maps.files.empty()) {
    const bool text = std::any_of(tasks.tasks.begin(), tasks.tasks.end(),
                                  [](const task_entry& t) { return t.document.is_text(); });
    if (text && codec) {  // the documents as the trials tokenize them
      const task_file_source src(tasks, codec, {.vocab_size = engine.info().vocab_size, .max_context = 0});
      for (std::uint64_t i = 0; i < src.items(); ++i)
        item_docs.emplace_back(i, calibration_document_hash(src.task(i, 0, d.seed).document));
    } else {  // token documents (a text one without a tokenizer is refused when the trials start)
      for (std::size_t i = 0; i < tasks.tasks.size(); ++i)
        if (!tasks.tasks[i].document.is_text())
          item_docs.emplace_back(i, calibration_document_hash(tasks.tasks[i].document.tokens));
    }
  }
  for (const auto& f : maps.files) {
    const kv_map& m = *f.map;
    const std::string where = "audit: option --map: '" + f.path.string() + "'";
    std::string sender;
    if (partner != nullptr && m.source == partner->info().fingerprint) sender = std::string(partner_sender);
    for (const auto& [name, e] : drifted)
      if (sender.empty() && m.source == e.info().fingerprint) sender = name;
    if (!(m.target == receiver) || sender.empty()) {
      if (!maps.given) continue;
      throw usage_error(where + " maps " + fingerprint_text(m.source) + " to " + fingerprint_text(m.target) +
                        (!(m.target == receiver)
                             ? ", not to this audit's model " + fingerprint_text(receiver)
                             : ", and its source is neither the partner (--partner) nor a drifted sender "
                               "(--drift) of this audit"));
    }
    const trial_arm arm = kv_mapped_arm(sender);
    const bool in_design =
        std::any_of(d.arms.begin(), d.arms.end(), [&](const trial_arm& x) { return x.label == arm.label; });
    if (arms_given && !in_design) continue;  // --arms names no arm of this map: it plays no part
    if (std::any_of(maps.by_sender.begin(), maps.by_sender.end(),
                    [&](const auto& x) { return x.first == sender; }))
      throw usage_error(where + " is a second map from sender '" + sender + "' (arm '" + arm.label +
                        "'): give one map per sender");
    // the calibration must not hold an item of this audit (the map would have seen its answers' context)
    std::size_t shared = 0, first = 0;
    for (const auto& [i, h] : item_docs)
      if (std::binary_search(f.file.calibration_documents.begin(), f.file.calibration_documents.end(), h) &&
          shared++ == 0)
        first = i;
    if (shared > 0)
      throw usage_error(
          where + " was calibrated on " + std::to_string(shared) + " of this audit's item documents (item " +
          std::to_string(first) +
          " first): refit it on documents apart from the audit's (map fit --seed, or other tasks)");
    maps.by_sender.emplace_back(
        sender, relay_map{.id = f.file.id,
                          .source = m.source,
                          .target = m.target,
                          .apply = [map = f.map](const kv_block& b) { return apply_kv_map(*map, b); }});
    json_value id = json_value::object();
    id.set("id", f.file.id);
    id.set("calibration_sha256", f.file.calibration_sha256);
    maps.identity.set(arm.label, std::move(id));
    if (!arms_given && !in_design) d.arms.push_back(arm);
  }
  for (const auto& a : d.arms)
    if (a.kind == arm_kind::kv_mapped && std::none_of(maps.by_sender.begin(), maps.by_sender.end(),
                                                      [&](const auto& x) { return x.first == a.sender; }))
      throw usage_error("audit: arm '" + a.label + "' needs a cache map from sender '" + a.sender +
                        "' to this audit's model (--map FILE, made by latentaudit map fit)");
}

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_CLI_AUDIT_MAPS_HPP
