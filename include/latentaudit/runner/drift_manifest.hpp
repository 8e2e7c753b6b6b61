// SPDX-License-Identifier: MIT
// latentaudit: the drift manifest of an audit's drifted senders (models/organism-a-drift/drift.json):
// the base model and the fine-tuning overlays, one per level; each level is a kv_drift_<steps> arm
// (audit_spec::drift). The one reader of drift.json.
#ifndef LATENTAUDIT_RUNNER_DRIFT_MANIFEST_HPP
#define LATENTAUDIT_RUNNER_DRIFT_MANIFEST_HPP

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/file_check.hpp"
#include "../core/json.hpp"

namespace latentaudit {

/// @brief One level of a drift manifest: the sender's fine-tuning steps and its overlay file (the
/// tensors the fine-tuning changed, applied on the manifest's base model).
struct drift_level {
  std::int32_t steps = 0;      ///< the fine-tuning steps (the arm kv_drift_<steps>)
  std::string overlay;         ///< the overlay's file name, in the manifest's directory
  std::filesystem::path base;  ///< the base model's directory (the manifest's `base`, under its directory)
};

/// @brief A drift manifest read: its directory and its levels, in file order.
struct drift_manifest {
  std::filesystem::path dir;        ///< the directory holding drift.json and the overlays
  std::vector<drift_level> levels;  ///< the levels, steps distinct

  /// @brief The level of `steps` fine-tuning steps, or null when the manifest lacks it.
  [[nodiscard]] const drift_level* find(std::int32_t steps) const noexcept {
    for (const auto& l : levels)
      if (l.steps == steps) return &l;
    return nullptr;
  }
  /// @brief The overlay file of `level`.
  [[nodiscard]] std::filesystem::path overlay_path(const drift_level& level) const {
    return dir / level.overlay;
  }
};

/// @brief Reads DIR/drift.json: {"base": "<dir of the base model, relative to DIR>", "levels":
/// [{"steps": k, "overlay": "<file in DIR>"}, ...]}: at most 64 levels, steps distinct integers in
/// [0, 1e9], each overlay a plain file name (no directory part).
/// @throws invalid_argument "drift manifest '<DIR>/drift.json': ..." naming the field (`base`,
///         `levels`, `levels[].steps`, `levels[].overlay`), or why the file cannot be read.
[[nodiscard]] inline drift_manifest read_drift_manifest(const std::filesystem::path& dir) {
  const auto path = dir / "drift.json";
  const std::string where = "drift manifest '" + path.string() + "'";
  const auto fail = [&](const std::string& why) { LATENTAUDIT_THROW(invalid_argument(where + ": " + why)); };
  json_value j;
  try {
    if (require_regular_file(path, "drift manifest") > (std::uint64_t{1} << 20)) fail("is larger than 1 MiB");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    j = parse_json(ss.str(), {.max_depth = 8, .max_bytes = std::size_t{1} << 20});
  } catch (const invalid_argument& e) {
    if (std::string(e.what()).rfind(where, 0) == 0) throw;
    fail(e.what());
  } catch (const error& e) {
    fail(e.what());
  }
  const json_value* base = j.is_object() ? j.find("base") : nullptr;
  if (base == nullptr || !base->is_string() || base->as_string().empty())
    fail("field 'base' must be a non-empty string");
  const json_value* levels = j.find("levels");
  if (levels == nullptr || !levels->is_array() || levels->as_array().size() > 64)
    fail("field 'levels' must be an array of at most 64 levels");
  drift_manifest out{.dir = dir, .levels = {}};
  for (const auto& l : levels->as_array()) {
    const json_value* st = l.is_object() ? l.find("steps") : nullptr;
    const json_value* ov = l.is_object() ? l.find("overlay") : nullptr;
    if (st == nullptr || !st->is_number() || st->as_number() < 0 || st->as_number() > 1e9 ||
        st->as_number() != std::floor(st->as_number()))
      fail("field 'levels[].steps' must be an integer in [0, 1e9]");
    if (ov == nullptr || !ov->is_string() || ov->as_string().empty() ||
        ov->as_string().find_first_of("/\\") != std::string::npos || ov->as_string().rfind("..", 0) == 0)
      fail("field 'levels[].overlay' must be a file name in the manifest's directory");
    const auto steps = static_cast<std::int32_t>(st->as_number());
    if (out.find(steps) != nullptr) fail("level steps " + std::to_string(steps) + " repeats");
    out.levels.push_back({steps, ov->as_string(), dir / base->as_string()});
  }
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_RUNNER_DRIFT_MANIFEST_HPP
