// SPDX-License-Identifier: MIT
// latentaudit: the trial design — items × seeds × arms, every arm on every (item, seed) unit
// (paired), a randomized execution order derived from the design seed, and the keys the journal
// uses to resume.
#ifndef LATENTAUDIT_TRIAL_DESIGN_HPP
#define LATENTAUDIT_TRIAL_DESIGN_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/file_check.hpp"
#include "../core/hash.hpp"
#include "../core/json.hpp"
#include "../core/rng.hpp"
#include "arm.hpp"
#include "link.hpp"

namespace latentaudit {

/// @brief A trial's identity: (item, seed, arm label).
struct trial_key {
  std::uint64_t item = 0;  ///< item index
  std::uint64_t seed = 0;  ///< seed index
  std::string arm;         ///< arm label
  /// @brief Lexicographic order (for sets).
  friend auto operator<=>(const trial_key&, const trial_key&) = default;
};

/// @brief Everything besides items × seeds × arms that changes a record: the engine, the models,
/// the task source and the task generator's options. It is part of the design identity
/// (trial_design::to_json, design_hash), so a resume with another model, partner, task file,
/// task option or engine is refused before a trial runs. Empty strings mean "not recorded".
struct design_identity {
  std::string engine = "reference";  ///< the inference engine (e.g. "reference", "llama.cpp")
  std::string engine_version;        ///< the engine's version (e.g. the library or llama.cpp build)
  std::string model;                 ///< fingerprint of the agents' model (e.g. fingerprint_text)
  std::string partner;               ///< fingerprint of the cross_model partner ("" without one)
  std::string task_source;           ///< where the tasks come from (e.g. "organism:models/organism-a")
  std::string task_hash;             ///< content hash of the task definition (e.g. SHA-256 of task.json)
  /// The task generator's options (an object, e.g. organism_task_options::to_json()); null when
  /// the tasks take none.
  json_value task_options;
  /// Other options that change records (an object; e.g. a regime mix or drift model); null: none.
  json_value options;
};

/// @brief The version of the design.json layout trial_design::to_json writes (absent in files of
/// version 1, which held neither models, task nor engine).
inline constexpr int design_format_version = 2;

/// The first seed a design refuses: design.json writes the seed as a JSON number (a double), exact
/// below 2^53, so every seed it holds reads back as itself and two designs never share a hash by
/// rounding.
inline constexpr std::uint64_t max_exact_seed = std::uint64_t{1} << 53;

/// @brief What to run: items × seeds × arms.
struct trial_design {
  std::uint64_t seed = 1;                        ///< master seed: tasks, execution order, every random stream
  std::uint64_t items = 100;                     ///< items 0 .. items−1
  std::uint64_t seeds = 3;                       ///< seed indices 0 .. seeds−1 per item
  std::vector<trial_arm> arms = default_arms();  ///< arms (labels unique)
  link_preset link = link_presets().front();     ///< link used for the modeled transfer time
  bool randomize_order = true;                   ///< shuffle units, and arms within each unit
  bool authenticate = true;                      ///< HMAC-SHA256 tag on every relay (key derived from seed)
  /// Extra timed runs of the receiver stage of each trial of a subsampled unit (0: none). The
  /// record keeps the first run's outcome and timings and lists the repeats' receiver latencies
  /// in latency_repeats_s, so the cost analysis can estimate run-to-run timing variation.
  std::uint32_t timing_repeats = 0;
  /// Share of (item, seed) units whose trials are repeated (when timing_repeats > 0), in [0, 1];
  /// the units are chosen by timing_repeat_unit().
  double timing_repeat_fraction = 0.1;
  /// Engine, models and task: the rest of what changes a record (see design_identity).
  design_identity identity;

  /// @brief Checks the design.
  /// @throws invalid_argument on a seed of 2^53 or more (design.json writes it as a JSON number,
  ///         exact below 2^53 only: larger seeds would share a design hash), zero items or seeds, no
  ///         arms, duplicate labels, an arm that needs more items than the design has
  ///         (arm_plan::min_items), or a bad link.
  void validate() const {
    constexpr std::string_view fn = "trial_design::validate";
    if (seed >= max_exact_seed)
      detail::throw_invalid(fn, "seed", "must be below 2^53 (design.json holds it exactly)");
    if (items == 0) detail::throw_invalid(fn, "items", "must be at least 1");
    if (seeds == 0 || seeds > 0xFFFFFFFFull) detail::throw_invalid(fn, "seeds", "must be in [1, 2^32 - 1]");
    if (arms.empty()) detail::throw_invalid(fn, "arms", "must hold at least one arm");
    std::set<std::string> labels;
    for (const auto& a : arms) {
      if (a.label.empty()) detail::throw_invalid(fn, "arms", "every arm needs a label");
      if (!labels.insert(a.label).second)
        detail::throw_invalid(fn, "arms", "labels must be unique, '" + a.label + "' repeats");
      if (items < a.plan().min_items)
        detail::throw_invalid(fn, "items",
                              "arm '" + a.label + "' needs at least " + std::to_string(a.plan().min_items) +
                                  " items, the design has " + std::to_string(items));
    }
    if (!(link.bandwidth_bytes_s > 0) || !std::isfinite(link.bandwidth_bytes_s) || !(link.alpha_s >= 0) ||
        !std::isfinite(link.alpha_s))
      detail::throw_invalid(fn, "link", "needs a finite bandwidth > 0 and alpha >= 0");
    if (timing_repeats > 100) detail::throw_invalid(fn, "timing_repeats", "must be at most 100");
    if (!(timing_repeat_fraction >= 0 && timing_repeat_fraction <= 1))
      detail::throw_invalid(fn, "timing_repeat_fraction", "must lie in [0, 1]");
  }

  /// @brief Whether the trials of unit (item, s) get timing_repeats extra timed runs: the first
  /// uniform of the counter-based stream (seed, item, 0x7E, s) is below timing_repeat_fraction, so
  /// the choice depends on neither the execution order, the thread count nor a resume.
  [[nodiscard]] bool timing_repeat_unit(std::uint64_t item, std::uint64_t s) const noexcept {
    if (timing_repeats == 0 || !(timing_repeat_fraction > 0)) return false;
    auto g = make_stream({seed, item, 0x7E, static_cast<std::uint32_t>(s)});
    return uniform01(g) < timing_repeat_fraction;
  }

  /// @brief Total trials.
  [[nodiscard]] std::uint64_t trials() const noexcept { return items * seeds * arms.size(); }

  /// @brief The (item, seed) units in execution order: shuffled by the design seed when
  /// randomize_order (stream (seed, 0, 0x0RD, 0)), else item-major.
  [[nodiscard]] std::vector<std::pair<std::uint64_t, std::uint64_t>> unit_order() const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> units;
    units.reserve(static_cast<std::size_t>(items * seeds));
    for (std::uint64_t i = 0; i < items; ++i)
      for (std::uint64_t s = 0; s < seeds; ++s) units.emplace_back(i, s);
    if (randomize_order) {
      auto g = make_stream({seed, 0, 0x0D, 0});
      for (std::size_t i = units.size(); i > 1; --i) {
        const std::size_t j = static_cast<std::size_t>(uniform01(g) * static_cast<double>(i));
        std::swap(units[i - 1], units[std::min(j, i - 1)]);
      }
    }
    return units;
  }

  /// @brief The arm indices of unit (item, s) in execution order (stream (seed, item, 0xA7, s)).
  [[nodiscard]] std::vector<std::size_t> arm_order(std::uint64_t item, std::uint64_t s) const {
    std::vector<std::size_t> order(arms.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (randomize_order) {
      auto g = make_stream({seed, item, 0xA7, static_cast<std::uint32_t>(s)});
      for (std::size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[uniform_index(g, static_cast<std::uint32_t>(i))]);
    }
    return order;
  }

  /// @brief Whether `k` belongs to the design: item < items, seed < seeds, and one of its arms.
  [[nodiscard]] bool contains(const trial_key& k) const noexcept {
    return k.item < items && k.seed < seeds &&
           std::any_of(arms.begin(), arms.end(), [&](const trial_arm& a) { return a.label == k.arm; });
  }

  /// @brief The design identity as JSON (written beside the journal as design.json; a resume must
  /// match it field by field): every field that changes a record, in a fixed order.
  [[nodiscard]] json_value to_json() const {
    json_value j = json_value::object();
    j.set("format", design_format_version);
    j.set("seed", static_cast<double>(seed));
    j.set("items", static_cast<double>(items));
    j.set("seeds", static_cast<double>(seeds));
    json_value a = json_value::array_type{};
    for (const auto& arm : arms) a.push_back(arm.label);
    j.set("arms", std::move(a));
    j.set("link", link.name);
    j.set("link_bandwidth_bytes_s", link.bandwidth_bytes_s);
    j.set("link_alpha_s", link.alpha_s);
    j.set("randomize_order", randomize_order);
    j.set("authenticate", authenticate);
    j.set("timing_repeats", static_cast<double>(timing_repeats));
    j.set("timing_repeat_fraction", timing_repeat_fraction);
    j.set("engine", identity.engine);
    j.set("engine_version", identity.engine_version);
    j.set("model_fingerprint", identity.model);
    j.set("partner_fingerprint", identity.partner);
    j.set("task_source", identity.task_source);
    j.set("task_hash", identity.task_hash);
    j.set("task_options", identity.task_options);
    j.set("options", identity.options);
    return j;
  }

  /// @brief A stable hash of the design identity: the SHA-256 (64 hex digits) of to_json() written
  /// compactly. Equal designs give equal hashes on every machine and run (e.g. for ranks of one
  /// audit to check they run the same design).
  [[nodiscard]] std::string design_hash() const {
    const std::string text = write_json(to_json());
    return to_hex(sha256::of(std::as_bytes(std::span(text.data(), text.size()))));
  }
};

/// @brief The first difference between a recorded design identity (a design.json) and the current
/// one, in words naming the field ("field 'model_fingerprint' is \"a1\" in the records' design,
/// \"b2\" now"); empty when they agree. Objects are compared member by member (nested names are
/// dotted, e.g. "task_options.no_need_fraction"); a field present on one side only is a difference.
/// A design.json of format 1 (before models, task and engine were recorded) differs by its
/// missing "format". At the top level the identities of what runs the design (engine, models,
/// task source) are compared first: they are the cause when other fields differ with them (the
/// default arms depend on the model, e.g. its message arms). `recorded_name` names the recorded
/// side in the words ("the audit's design" for a relay peer's check).
[[nodiscard]] inline std::string design_difference(const json_value& recorded, const json_value& now,
                                                   const std::string& prefix = "",
                                                   const std::string& recorded_name = "the records' design") {
  auto brief = [](const json_value& v) {
    std::string t = write_json(v);
    if (t.size() > 80) t = t.substr(0, 77) + "...";
    return t;
  };
  if (recorded.is_object() && now.is_object()) {
    if (prefix.empty() && recorded.find("format") != nullptr) {
      for (const char* k : {"engine", "engine_version", "model_fingerprint", "partner_fingerprint",
                            "task_source", "task_hash"}) {
        const json_value *r = recorded.find(k), *v = now.find(k);
        if (r != nullptr && v != nullptr)
          if (auto d = design_difference(*r, *v, std::string(k) + ".", recorded_name); !d.empty()) return d;
      }
    }
    for (const auto& [k, v] : now.as_object()) {
      const json_value* r = recorded.find(k);
      if (r == nullptr) {
        if (prefix.empty() && k == "format")
          return "the records' design.json predates format " + brief(v) +
                 " (it does not record the models, task or engine), so the resume cannot be checked";
        return "field '" + prefix + k + "' is missing from " + recorded_name + ", " + brief(v) + " now";
      }
      if (auto d = design_difference(*r, v, prefix + k + ".", recorded_name); !d.empty()) return d;
    }
    for (const auto& [k, v] : recorded.as_object())
      if (now.find(k) == nullptr)
        return "field '" + prefix + k + "' is " + brief(v) + " in " + recorded_name + ", absent now";
    return {};
  }
  if (write_json(recorded) == write_json(now)) return {};
  std::string name = prefix;
  if (!name.empty() && name.back() == '.') name.pop_back();
  return "field '" + name + "' is " + brief(recorded) + " in " + recorded_name + ", " + brief(now) + " now";
}

/// @brief The one reader of design.json (trial_design::to_json, written by record_journal): the
/// file as JSON, at most 1 MiB and 16 levels deep. A resume (record_journal, dist's records
/// sets), `report --records DIR` and the records' design warnings read it through this.
/// @throws invalid_argument if it is not a regular file; corrupt_data naming it if it is larger
///         than 1 MiB, cannot be read or parsed, or is not a JSON object.
[[nodiscard]] inline json_value read_design_json(const std::filesystem::path& p) {
  if (require_regular_file(p, "design file") > (std::uint64_t{1} << 20))
    LATENTAUDIT_THROW(corrupt_data(p.string() + " is larger than 1 MiB"));
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  json_value j;
  try {
    j = parse_json(ss.str(), {.max_depth = 16, .max_bytes = std::size_t{1} << 20});
  } catch (const error& e) {
    LATENTAUDIT_THROW(corrupt_data(p.string() + ": " + e.what()));
  }
  if (!j.is_object()) LATENTAUDIT_THROW(corrupt_data(p.string() + ": not a JSON object"));
  return j;
}

/// @brief The most a design.json may declare: arms (a design of the CLI has a few dozen), items
/// (the task reader's max_tasks) and seeds (the CLI's --seeds bound). What reads a design (the
/// report's order and completeness, a resume) sizes its tables by these.
inline constexpr std::uint64_t max_design_arms = 4096;
inline constexpr std::uint64_t max_design_items = 10'000'000;
inline constexpr std::uint64_t max_design_seeds = 100'000;

/// @brief Refuses a design.json (`j`, read from `p`) that declares more than max_design_arms arms,
/// max_design_items items or max_design_seeds seeds, before anything is sized by them.
/// @throws corrupt_data "<p>: field 'arms' declares N arms, more than 4096".
inline void check_design_bounds(const json_value& j, const std::filesystem::path& p) {
  if (!j.is_object()) return;
  auto bound = [&](const char* field, std::uint64_t n, std::uint64_t max, const char* what) {
    if (n > max)
      LATENTAUDIT_THROW(corrupt_data(p.string() + ": field '" + field + "' declares " + std::to_string(n) +
                                     " " + what + ", more than " + std::to_string(max)));
  };
  if (const json_value* a = j.find("arms"); a != nullptr && a->is_array())
    bound("arms", a->as_array().size(), max_design_arms, "arms");
  for (const auto& [field, max] :
       {std::pair{"items", max_design_items}, std::pair{"seeds", max_design_seeds}})
    if (const json_value* v = j.find(field); v != nullptr && v->is_number() && v->as_number() > 0)
      bound(field, v->as_number() >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(v->as_number()), max,
            field);
}

/// @brief The design a design.json object describes: trial_design::to_json's inverse, the one
/// converter (a relay peer builds the audit's design from it). `j` is checked by
/// check_design_bounds first, then field by field: format design_format_version, seed, items and
/// seeds non-negative integers below 2^53, every arm label one parse_arm reads back to itself, the
/// link's name, bandwidth and alpha, the flags, the timing repeats and the identity's strings and
/// objects; the design is validated and must write `j` back exactly (no field more or less).
/// @throws corrupt_data "<where>: field 'F' ..." naming the first field that fails.
[[nodiscard]] inline trial_design design_from_json(const json_value& j, const std::string& where) {
  if (!j.is_object()) LATENTAUDIT_THROW(corrupt_data(where + ": a design is a JSON object"));
  check_design_bounds(j, where);
  auto fail = [&](const char* field, const std::string& why) {
    LATENTAUDIT_THROW(corrupt_data(where + ": field '" + field + "' " + why));
  };
  auto field = [&](const char* name) -> const json_value& {
    const json_value* v = j.find(name);
    if (v == nullptr) fail(name, "is missing");
    return *v;
  };
  auto integer = [&](const char* name) {
    const json_value& v = field(name);
    if (!v.is_number() || !(v.as_number() >= 0) || v.as_number() >= 9007199254740992.0 ||
        v.as_number() != std::floor(v.as_number()))
      fail(name, "must be an integer in [0, 2^53)");
    return static_cast<std::uint64_t>(v.as_number());
  };
  auto number = [&](const char* name) {
    const json_value& v = field(name);
    if (!v.is_number()) fail(name, "must be a number");
    return v.as_number();
  };
  auto flag = [&](const char* name) {
    const json_value& v = field(name);
    if (!v.is_bool()) fail(name, "must be true or false");
    return v.as_bool();
  };
  auto text = [&](const char* name) {
    const json_value& v = field(name);
    if (!v.is_string()) fail(name, "must be a string");
    return v.as_string();
  };
  if (integer("format") != static_cast<std::uint64_t>(design_format_version))
    fail("format", "must be " + std::to_string(design_format_version));
  trial_design d;
  d.seed = integer("seed");
  d.items = integer("items");
  d.seeds = integer("seeds");
  const json_value& arms = field("arms");
  if (!arms.is_array()) fail("arms", "must be an array of arm labels");
  d.arms.clear();
  for (const auto& a : arms.as_array()) {
    if (!a.is_string()) fail("arms", "must hold arm labels (strings)");
    std::optional<trial_arm> arm;
    try {
      arm = parse_arm(a.as_string());
    } catch (const error& e) {
      fail("arms", "holds '" + a.as_string() + "', not an arm: " + e.what());
    }
    if (arm->label != a.as_string())
      fail("arms", "holds '" + a.as_string() + "', which reads back as '" + arm->label + "'");
    d.arms.push_back(std::move(*arm));
  }
  d.link = link_preset{text("link"), number("link_bandwidth_bytes_s"), number("link_alpha_s")};
  d.randomize_order = flag("randomize_order");
  d.authenticate = flag("authenticate");
  const std::uint64_t repeats = integer("timing_repeats");
  if (repeats > 100) fail("timing_repeats", "must be at most 100");
  d.timing_repeats = static_cast<std::uint32_t>(repeats);
  d.timing_repeat_fraction = number("timing_repeat_fraction");
  d.identity.engine = text("engine");
  d.identity.engine_version = text("engine_version");
  d.identity.model = text("model_fingerprint");
  d.identity.partner = text("partner_fingerprint");
  d.identity.task_source = text("task_source");
  d.identity.task_hash = text("task_hash");
  d.identity.task_options = field("task_options");
  d.identity.options = field("options");
  try {
    d.validate();
  } catch (const error& e) {
    LATENTAUDIT_THROW(corrupt_data(where + ": " + e.what()));
  }
  if (const std::string diff = design_difference(j, d.to_json(), "", "the file"); !diff.empty())
    LATENTAUDIT_THROW(corrupt_data(where + ": not a design this version writes: " + diff));
  return d;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_DESIGN_HPP
