// SPDX-License-Identifier: MIT
// latentaudit: the audit specification — what an audit runs, declared: the engine's name, the task
// source (the organism's generator and its options, or a task file and its scoring), items, seeds
// and seed, the arm names (or the default set), the partner, the drift manifest of the drifted
// senders, the organism's messages, the cache maps, the link, the timing repeats and the stopping
// rule's batches — and the ONE builder that turns it, with the loaded engines and the tasks, into
// the validated design with its whole identity (design.json's: a resume refuses another design)
// and the arms left out with their reasons. `latentaudit audit` maps its options onto it field by
// field, `latentaudit relay-peer` receives it from the audit's greeting (audit_spec_of_design), and
// an audit_session runs it. docs/design.md, "The audit specification".
#ifndef LATENTAUDIT_RUNNER_AUDIT_SPEC_HPP
#define LATENTAUDIT_RUNNER_AUDIT_SPEC_HPP

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/file_check.hpp"
#include "../core/hash.hpp"
#include "../core/json.hpp"
#include "../report/audit.hpp"
#include "../trial/arm.hpp"
#include "../trial/design.hpp"
#include "../trial/engine_support.hpp"
#include "../trial/link.hpp"
#include "../trial/message.hpp"
#include "../trial/task.hpp"
#include "../trial/task_file.hpp"
#include "../version.hpp"
#include "audit_maps.hpp"
#include "drift_manifest.hpp"

namespace latentaudit {

/// @brief The engines of one audit worker: B's model, the partner (the arms whose sender is the
/// partner, cross_model) and the named senders (drifted models, trial_driver::add_sender). Each
/// worker of `--jobs N` has its own; `Engine` and `Partner` model the engine concepts
/// (engine/concepts.hpp).
template <class Engine, class Partner = Engine>
struct audit_engines {
  Engine engine;                                        ///< agent B's model (and A's, by default)
  std::optional<Partner> partner;                       ///< the partner model, where arms need it
  std::vector<std::pair<std::string, Engine>> senders;  ///< named senders, by arm sender name
};

/// @brief Where an audit's tasks come from.
enum class audit_task_source {
  organism,  ///< the organism's generator (audit_spec::organism_dir's task.json, organism_tasks)
  file,      ///< a task file (docs/tasks.md), read by the caller into a task_file_source
};

/// @brief How agent A's half of the relays reaches agent B (audit_spec_topology::relay).
enum class audit_relay_transport {
  none,  ///< agent A runs in B's process
  tcp,   ///< agent A is a relay peer at the other end of tcp links (one per worker)
  mpi,   ///< agent A is rank 1 of a relay over MPI (`mpirun -np 2`)
};

/// @brief Where an audit runs, declared: its workers and where agent A runs. The links themselves
/// are the caller's (audit_session_options::topology carries the channels); the session checks that
/// they are there for the relay the spec names.
struct audit_spec_topology {
  unsigned jobs = 1;  ///< workers in this process, each with its own engines (run_on_workers)
  audit_relay_transport relay = audit_relay_transport::none;  ///< where agent A runs
  /// tcp: agent A's HOST:PORT ("": a loopback peer the caller starts); agent A: the audit's
  std::string relay_peer;
};

/// @brief An audit, declared. The defaults are `latentaudit audit`'s: a library user who sets the
/// fields a command line sets gets the design the CLI builds (tests/runner/audit_spec_test.cpp).
struct audit_spec {
  /// the engine's name in the identity ("reference", "llama.cpp")
  std::string engine = "reference";
  /// arms whose sender is the partner (cross_model) belong to the default set; false (`--partner
  /// none`): every such arm is left out, named ones too
  bool with_partner = true;
  /// the engine loads the drift manifest's fine-tuning overlays (the reference engine); false
  /// (llama.cpp): the drifted senders' arms are left out with the reason
  bool drift_overlays = true;
  audit_task_source tasks = audit_task_source::organism;  ///< where the tasks come from
  /// the organism's directory (its task.json: the identity's task_hash); the organism source only
  std::filesystem::path organism_dir;
  /// the organism generator's options (its `seed` is the design's: set by the builder)
  organism_task_options organism_tasks{
      .no_need_fraction = 0.3, .stale_fraction = 0.1, .conflict_fraction = 0.1};
  /// a task file's name in the identity ("": the file's own path); a relay peer names the audit's
  std::string task_file_name;
  /// a task file's scoring (wins over its header; pass it to the task_file_source too)
  std::optional<task_scoring> scoring;
  std::uint64_t seed = 1;     ///< the master seed: tasks, execution order, every random stream (< 2^53)
  std::uint64_t items = 450;  ///< documents (a task file: its first `items` tasks)
  std::uint64_t seeds = 3;    ///< queries (and random streams) per document
  /// the arms by name (parse_arm); nullopt: the default set — default_arms(with_partner), one
  /// kv_drift_<steps> arm per drift level, the message arms with `messages`, the matched maps' arms
  std::optional<std::vector<trial_arm>> arms;
  /// the drifted senders' manifest (read_drift_manifest); each named drift arm needs its level
  /// (nullopt: no drifted sender; a named drift arm is refused)
  std::optional<drift_manifest> drift;
  /// the organism's messages (organism_message_options); with the default set the message arms
  /// text_message_{4,8,16,32}, kv_message and kv_message_only join it
  std::optional<message_options> messages;
  audit_maps maps;                        ///< the cache maps of the kv_mapped arms
  link_preset link = find_link("pcie4");  ///< the link of the modeled transfer
  std::uint32_t timing_repeats = 3;       ///< extra timed runs per trial of the subsampled units
  double timing_repeat_fraction = 0.1;    ///< share of units whose trials are repeated, in [0, 1]
  /// stop when decided: items per batch (0: the whole design at once); part of the identity
  std::uint64_t batch_items = 0;
  /// stop when decided: each item's regime (item i = task i), at least `items` of them
  std::vector<std::string> item_regime;
  /// arms already left out, with reasons (a relay peer: those the audit's engine left out)
  std::vector<skipped_arm> arms_unavailable;
  /// the report's options: margins, alpha, bootstrap replicates and seed, latency SLO, prefill rate,
  /// link measured (the session sets the design's arms, horizon, engine and unavailable arms); no
  /// part of the design's identity: a resume may report with others
  audit_options report;
  audit_spec_topology topology;  ///< the workers and where agent A runs (no part of the identity)

  /// @brief The organism generator's options for this design (organism_tasks, `seed` = the design's).
  [[nodiscard]] organism_task_options organism_task_options_of() const {
    organism_task_options o = organism_tasks;
    o.seed = seed;
    return o;
  }
};

/// @brief A design built from an audit_spec: what to run, and what was left out.
struct audit_design {
  trial_design design;                        ///< the design, its identity whole once built on engines
  std::vector<skipped_arm> arms_unavailable;  ///< every arm left out, with its reason, in order
  audit_matched_maps maps;                    ///< the matched cache maps (add_to each driver)
};

namespace detail {

inline void check_audit_spec(const audit_spec& s) {
  constexpr std::string_view fn = "audit_spec";
  if (s.seed >= max_exact_seed)
    throw_invalid(fn, "seed", "must be below 2^53 (design.json holds it exactly)");
  if (s.items == 0) throw_invalid(fn, "items", "must be at least 1");
  if (s.seeds == 0 || s.seeds > 0xFFFFFFFFull) throw_invalid(fn, "seeds", "must be in [1, 2^32 - 1]");
  if (s.timing_repeats > 100) throw_invalid(fn, "timing_repeats", "must be at most 100");
  if (!(s.timing_repeat_fraction >= 0 && s.timing_repeat_fraction <= 1))
    throw_invalid(fn, "timing_repeat_fraction",
                  "must lie in [0, 1], got " + number_text(s.timing_repeat_fraction));
  if (s.arms && s.arms->empty())
    throw_invalid(fn, "arms", "must name at least one arm (nullopt: the default set)");
  if (s.tasks == audit_task_source::organism) {
    if (s.organism_dir.empty()) throw_invalid(fn, "organism_dir", "must name the organism's directory");
    if (s.scoring) throw_invalid(fn, "scoring", "applies to a task file (tasks = audit_task_source::file)");
    const auto& o = s.organism_tasks;
    const std::pair<const char*, double> shares[] = {
        {"organism_tasks.no_need_fraction", o.no_need_fraction},
        {"organism_tasks.stale_fraction", o.stale_fraction},
        {"organism_tasks.conflict_fraction", o.conflict_fraction}};
    for (const auto& [name, x] : shares)
      if (!(x >= 0.0 && x <= 1.0)) throw_invalid(fn, name, "must lie in [0, 1], got " + number_text(x));
    if (!(o.no_need_fraction + o.stale_fraction + o.conflict_fraction <= 1 + 1e-12))
      throw_invalid(fn, "organism_tasks", "fractions must sum to at most 1");
  }
  if (s.topology.jobs == 0) throw_invalid(fn, "topology.jobs", "must be at least 1");
  if (s.topology.relay != audit_relay_transport::tcp && !s.topology.relay_peer.empty())
    throw_invalid(fn, "topology.relay_peer", "applies to a relay over tcp");
  if (s.batch_items != 0 && s.topology.relay != audit_relay_transport::none)
    throw_invalid(fn, "batch_items", "(stop when decided) runs in one process: no relay");
  if (s.batch_items > s.items) throw_invalid(fn, "batch_items", "must be at most items");
  if (s.batch_items != 0 && s.item_regime.size() < s.items)
    throw_invalid(fn, "item_regime", "must name every item's regime (stop when decided)");
}

// A drifted sender reads A's document: an arm whose sender is named and not the partner.
inline bool is_drift_sender(const trial_arm& a) {
  return a.plan().sender == arm_sender::named && a.sender != partner_sender;
}

// The SHA-256 of a small file (an organism's task.json), 64 hex digits.
inline std::string small_file_sha256(const std::filesystem::path& p) {
  if (require_regular_file(p, "task file") > (std::uint64_t{1} << 24))
    throw_invalid("build_audit_design", "organism_dir", "'" + p.string() + "' is larger than 16 MiB");
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof())
    throw_invalid("build_audit_design", "organism_dir", "cannot read '" + p.string() + "'");
  const std::string text = ss.str();
  return to_hex(sha256::of(std::as_bytes(std::span(text))));
}

}  // namespace detail

/// @brief The design's arms, before any engine is loaded: the named arms or the default set (with
/// the partner's, the drift levels', the message arms), without the partner's arms when there is no
/// partner, without the drift arms where the engine loads no overlays (named, with the reason), and
/// the link and timing repeats. The caller loads the drifted senders it names (audit_drift_senders)
/// and then calls build_audit_design.
/// @throws invalid_argument naming the spec's field: a field out of range; a drift arm whose level
///         the manifest lacks (`drift`).
[[nodiscard]] inline audit_design audit_design_arms(const audit_spec& s) {
  detail::check_audit_spec(s);
  audit_design out;
  out.arms_unavailable = s.arms_unavailable;
  trial_design& d = out.design;
  d.seed = s.seed;
  d.items = s.items;
  d.seeds = s.seeds;
  d.arms = s.arms ? *s.arms : default_arms(s.with_partner);
  if (!s.with_partner) std::erase_if(d.arms, [](const trial_arm& a) { return a.needs_partner(); });
  const std::string no_overlays =
      "drifted senders are reference-engine models with fine-tuning overlays, which " + s.engine +
      " does not load";
  if (!s.drift_overlays)
    for (const auto& a : d.arms)
      if (detail::is_drift_sender(a)) out.arms_unavailable.push_back({a.label, no_overlays});
  if (!s.drift_overlays) std::erase_if(d.arms, detail::is_drift_sender);
  if (!s.arms && s.drift && s.drift_overlays)
    for (const auto& l : s.drift->levels) d.arms.push_back(kv_drift_arm(l.steps));
  if (!s.arms && s.messages)
    for (const char* n : {"text_message_4", "text_message_8", "text_message_16", "text_message_32",
                          "kv_message", "kv_message_only"})
      d.arms.push_back(parse_arm(n));
  if (!s.arms && s.drift && !s.drift_overlays)
    for (const auto& l : s.drift->levels)
      out.arms_unavailable.push_back({kv_drift_arm(l.steps).label, no_overlays});
  for (const auto& a : d.arms)
    if (detail::is_drift_sender(a) && (!s.drift || s.drift->find(*a.drift_steps) == nullptr))
      detail::throw_invalid("audit_spec", "drift",
                            "lacks drift level " + std::to_string(*a.drift_steps) + ", which arm '" +
                                a.label + "' needs" +
                                (s.drift ? " ('" + (s.drift->dir / "drift.json").string() + "')"
                                         : std::string(" (no drift manifest is loaded)")));
  d.link = s.link;
  d.timing_repeats = s.timing_repeats;
  d.timing_repeat_fraction = s.timing_repeat_fraction;
  d.validate();
  return out;
}

/// @brief The drifted senders `design`'s arms name, each with its level of `s.drift`, in arm order
/// (one per sender): the engines the caller loads into audit_engines::senders (the reference
/// engine: reference_cpu_engine::load_with_overlay(level.base, s.drift->overlay_path(level))).
[[nodiscard]] inline std::vector<std::pair<std::string, drift_level>> audit_drift_senders(
    const audit_spec& s, const trial_design& design) {
  std::vector<std::pair<std::string, drift_level>> out;
  for (const auto& a : design.arms)
    if (detail::is_drift_sender(a) && s.drift &&
        std::none_of(out.begin(), out.end(), [&](const auto& x) { return x.first == a.sender; }))
      if (const drift_level* l = s.drift->find(*a.drift_steps)) out.emplace_back(a.sender, *l);
  return out;
}

namespace detail {

// The task part of the identity: the organism's task.json and generator options, or the task
// file's content hash, name and scoring.
inline void set_task_identity(const audit_spec& s, const task_file_source& tasks, design_identity& id) {
  if (s.tasks == audit_task_source::organism) {
    id.task_source = "organism";
    id.task_hash = small_file_sha256(s.organism_dir / "task.json");
    id.task_options = s.organism_task_options_of().to_json();
    return;
  }
  id.task_source = "file";
  id.task_hash = tasks.file().sha256;
  json_value tj = json_value::object();
  // a relay peer's copy of the audit's file may sit at another path: the content is the identity
  tj.set("path", s.task_file_name.empty() ? tasks.file().path : s.task_file_name);
  tj.set("scoring", task_scoring_name(tasks.scoring()));
  id.task_options = std::move(tj);
}

// The engine's part of a design built on `first`: the arms the engine (and the tasks) cannot run
// are left out with their reasons; the identity names the engine, its models, the arms left out and
// the stopping rule (batch_items, the looks, each regime's items); the design is checked.
template <class Engine, class Partner>
void restrict_audit_design(trial_design& d, std::vector<skipped_arm>& skipped,
                           const audit_engines<Engine, Partner>& first, const task_file_source& tasks,
                           const std::string& engine_name, std::uint64_t batch_items,
                           const std::vector<std::string>& item_regime) {
  const Partner* partner = first.partner ? &*first.partner : nullptr;
  auto cut = restrict_to_engine(d, first.engine, partner);
  for (auto& sk : cut.skipped) skipped.push_back(std::move(sk));
  d = std::move(cut.design);
  if (!tasks.has_budget_units()) {  // text_budget arms belong to tasks with budget units (the organism's)
    for (const auto& a : d.arms)
      if (a.plan().payload == arm_payload::document_pairs)
        skipped.push_back({a.label,
                           "the tasks have no budget units (budget_cuts, docs/tasks.md): "
                           "text_budget arms apply to the organism's recall task"});
    std::erase_if(d.arms, [](const trial_arm& a) { return a.plan().payload == arm_payload::document_pairs; });
  }
  auto& id = d.identity;
  id.engine = engine_name;
  id.engine_version = latentaudit::version_string;
  if constexpr (requires { first.engine.kernel(); })  // the reference engine's products: one kernel's bits
    id.engine_version += std::string(" (kernel ") + first.engine.kernel() + ")";
  id.model = fingerprint_text(first.engine.info().fingerprint);
  id.partner = partner != nullptr ? fingerprint_text(partner->info().fingerprint) : std::string();
  json_value o = id.options.is_object() ? id.options : json_value::object();
  if (!skipped.empty()) {
    json_value sk = json_value::object();
    for (const auto& x : skipped) sk.set(x.arm, x.reason);
    o.set("arms_unavailable_on_engine", std::move(sk));
  }
  if (batch_items != 0) {
    json_value u = json_value::object();
    u.set("batch_items", static_cast<double>(batch_items));
    u.set("looks", static_cast<double>((d.items + batch_items - 1) / batch_items));
    u.set("arms", "stop when decided");  // arms stop one by one once their findings are decided
    std::map<std::string, std::size_t> regimes;
    for (const auto& g : item_regime) ++regimes[g];
    json_value ri = json_value::object();
    for (const auto& [name, k] : regimes) ri.set(name, static_cast<double>(k));
    u.set("regime_items", std::move(ri));
    o.set("until_decided", std::move(u));
  }
  if (!o.as_object().empty()) id.options = std::move(o);
  d.validate();
}

}  // namespace detail

/// @brief THE builder: the validated design of `s` on the loaded engines `first` (B's model, the
/// partner, the drifted senders audit_drift_senders names) and the tasks `tasks`, with its whole
/// identity, and the arms left out with their reasons. In order: the arms (audit_design_arms); a
/// drifted sender of another cache shape than B's model is left out (it cannot force-import its
/// cache); the maps are matched to the engines (their arms join a default set; named kv_mapped arms
/// need one); the identity's task part (the organism's task.json and options, or the task file's
/// hash, name and scoring), the drifted senders' fingerprints and the maps; then the arms the engine
/// or the tasks cannot run (restrict_to_engine; text_budget without budget units), the engine and
/// its models, the arms left out and the stopping rule. Two specs that differ in any field a record
/// depends on give designs of different design_hash(); a resume of another design is refused.
/// @throws invalid_argument naming the spec's field (audit_design_arms; a map that matches no
///         engine, a second map for one sender, a map calibrated on an item; a named kv_mapped arm
///         without a map; a drift arm whose sender is not loaded: `senders`); corrupt_data from
///         the organism's task.json.
template <class Engine, class Partner>
[[nodiscard]] audit_design build_audit_design(const audit_spec& s,
                                              const audit_engines<Engine, Partner>& first,
                                              const task_file_source& tasks) {
  audit_design out = audit_design_arms(s);
  trial_design& d = out.design;
  const auto& receiver = first.engine.info().fingerprint;
  for (const auto& needed : audit_drift_senders(s, d))
    if (std::none_of(first.senders.begin(), first.senders.end(),
                     [&](const auto& x) { return x.first == needed.first; }))
      detail::throw_invalid("build_audit_design", "first.senders",
                            "lacks the drifted sender '" + needed.first + "' (drift level " +
                                std::to_string(needed.second.steps) + ", audit_drift_senders)");
  // a drifted sender of another cache shape than B's model (a drift manifest of another model)
  // cannot force-import its cache: its arm is left out with the reason
  std::erase_if(d.arms, [&](const trial_arm& a) {
    if (a.plan().sender != arm_sender::named || a.needs_partner()) return false;
    for (const auto& [name, e] : first.senders)
      if (name == a.sender)
        if (auto why = foreign_shape_reason(a, receiver, e.info().fingerprint)) {
          out.arms_unavailable.push_back({a.label, std::move(*why)});
          return true;
        }
    return false;
  });
  const Partner* partner = first.partner ? &*first.partner : nullptr;
  out.maps = detail::match_audit_maps(s.maps, d, s.arms.has_value(), receiver, partner, first.senders, tasks);
  detail::set_task_identity(s, tasks, d.identity);
  json_value drift_senders = json_value::object();
  for (const auto& a : d.arms)
    for (const auto& [name, e] : first.senders)
      if (a.plan().sender == arm_sender::named && a.sender == name)
        drift_senders.set(a.label, fingerprint_text(e.info().fingerprint));
  json_value o = json_value::object();
  if (!drift_senders.as_object().empty()) o.set("drift_senders", std::move(drift_senders));
  if (!out.maps.identity.as_object().empty()) o.set("maps", out.maps.identity);
  if (!o.as_object().empty()) d.identity.options = std::move(o);
  detail::restrict_audit_design(d, out.arms_unavailable, first, tasks, s.engine, s.batch_items,
                                s.item_regime);
  return out;
}

/// @brief The spec of a design received whole (a relay peer's, from the audit's greeting:
/// dist::design_of_hello): its seed, items, seeds, arms (named: the audit's, after its engine's
/// cut), link, timing repeats, task source and options (the organism's fractions; a task file's
/// name and scoring), and the arms the audit's engine left out. The receiver sets what it runs the
/// design on: engine, organism_dir or the task file, drift, maps (build_audit_design then fixes its
/// own identity, which the greeting's check compares with the audit's).
/// @throws corrupt_data naming the design's field that is missing or mistyped.
[[nodiscard]] inline audit_spec audit_spec_of_design(const trial_design& d) {
  const auto fail = [](const std::string& why) {
    LATENTAUDIT_THROW(corrupt_data("audit_spec_of_design: " + why));
  };
  audit_spec s;
  s.seed = d.seed;
  s.items = d.items;
  s.seeds = d.seeds;
  s.arms = d.arms;
  s.link = d.link;
  s.timing_repeats = d.timing_repeats;
  s.timing_repeat_fraction = d.timing_repeat_fraction;
  const json_value& to = d.identity.task_options;
  const auto field = [&](const char* k) -> const json_value* {
    return to.is_object() ? to.find(k) : nullptr;
  };
  if (d.identity.task_source == "organism") {
    s.tasks = audit_task_source::organism;
    for (const auto& [k, x] :
         {std::pair<const char*, double*>{"no_need_fraction", &s.organism_tasks.no_need_fraction},
          {"stale_fraction", &s.organism_tasks.stale_fraction},
          {"conflict_fraction", &s.organism_tasks.conflict_fraction}}) {
      const json_value* v = field(k);
      if (v == nullptr || !v->is_number()) fail(std::string("the audit's task options lack '") + k + "'");
      *x = v->as_number();
    }
  } else {
    s.tasks = audit_task_source::file;
    const json_value* path = field("path");
    const json_value* sc = field("scoring");
    s.task_file_name = path != nullptr && path->is_string() ? path->as_string() : "?";
    s.scoring = sc != nullptr && sc->is_string() ? parse_task_scoring(sc->as_string()) : std::nullopt;
  }
  if (const json_value* o =
          d.identity.options.is_object() ? d.identity.options.find("arms_unavailable_on_engine") : nullptr;
      o != nullptr && o->is_object())
    for (const auto& [arm, why] : o->as_object())
      s.arms_unavailable.push_back({arm, why.is_string() ? why.as_string() : write_json(why)});
  return s;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_RUNNER_AUDIT_SPEC_HPP
