// SPDX-License-Identifier: MIT
// The audit specification (runner/audit_spec.hpp): a bad field is refused naming it; the design's
// identity (design_hash) changes when a field a record depends on changes and not otherwise; and a
// library user who declares the spec `latentaudit audit` builds from its options gets the CLI's
// design, hash for hash.
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/runner/audit_session.hpp>
#include <latentaudit/runner/audit_spec.hpp>
#include <latentaudit/trial/task.hpp>

#include <filesystem>
#include <functional>
#include <string>

#include "support/catch.hpp"
#include "support/cli_runner.hpp"
#include "support/common.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;

// The spec `latentaudit audit --model models/organism-a --partner models/organism-b --items N
// --seeds K` declares: the defaults, the organism's directory, its drift manifest, messages and
// maps directory.
audit_spec cli_like_spec(std::uint64_t items, std::uint64_t seeds) {
  audit_spec s;
  s.organism_dir = models + "organism-a";
  s.items = items;
  s.seeds = seeds;
  s.drift = read_drift_manifest(models + "organism-a-drift");
  s.messages = organism_message_options(s.organism_dir);
  s.maps = read_audit_map_directory(models + "maps");
  return s;
}

// The organisms' engines, loaded once for every spec of this file: B's model, the partner and every
// drifted sender of the organism's manifest (build_audit_design reads the senders a spec's arms
// name, refusing one it lacks by name; the others are not part of its design).
const audit_engines<reference_cpu_engine>& organism_engines() {
  static const audit_engines<reference_cpu_engine> engines = [] {
    const audit_spec s = cli_like_spec(4, 1);
    audit_engines<reference_cpu_engine> e{reference_cpu_engine::load(models + "organism-a"),
                                          reference_cpu_engine::load(models + "organism-b"),
                                          {}};
    for (const auto& [sender, level] : audit_drift_senders(s, audit_design_arms(s).design))
      e.senders.emplace_back(
          sender, reference_cpu_engine::load_with_overlay(level.base, s.drift->overlay_path(level)));
    return e;
  }();
  return engines;
}

// The design of `s` on the organisms: B's model, the partner, the drifted senders the spec names.
audit_design build_on_organisms(const audit_spec& s) {
  const auto& first = organism_engines();  // a sender missing there is refused by name
  const auto fmt = organism_format::load(s.organism_dir);
  const task_file_source tasks(organism_task_file(fmt, s.organism_task_options_of(), s.items), {},
                               {.vocab_size = first.engine.info().vocab_size});
  return build_audit_design(s, first, tasks);
}

void expect_refused(const audit_spec& s, const std::string& field) {
  INFO("field " << field);
  try {
    (void)audit_design_arms(s);
    FAIL("accepted");
  } catch (const invalid_argument& e) {
    CHECK(std::string(e.what()).find("'" + field + "'") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("audit_spec: a bad field is refused naming it", "[cli][audit_spec]") {
  const audit_spec good = cli_like_spec(4, 1);
  CHECK_NOTHROW(audit_design_arms(good));
  auto s = good;
  s.items = 0;
  expect_refused(s, "items");
  s = good;
  s.seeds = 0;
  expect_refused(s, "seeds");
  s = good;
  s.timing_repeat_fraction = 1.5;
  expect_refused(s, "timing_repeat_fraction");
  s = good;
  s.organism_dir.clear();
  expect_refused(s, "organism_dir");
  s = good;
  s.scoring = task_scoring::exact;
  expect_refused(s, "scoring");
  s = good;
  s.organism_tasks.stale_fraction = -0.1;
  expect_refused(s, "organism_tasks.stale_fraction");
  s = good;
  s.arms = std::vector<trial_arm>{};
  expect_refused(s, "arms");
  s = good;
  s.arms = std::vector<trial_arm>{parse_arm("no_comm"), parse_arm("kv_drift_7")};
  expect_refused(s, "drift");  // the manifest has no level 7
  s = good;
  s.batch_items = 2;  // stop when decided needs every item's regime
  expect_refused(s, "item_regime");
  s = good;
  s.topology.jobs = 0;
  expect_refused(s, "topology.jobs");
  s = good;
  s.topology.relay_peer = "127.0.0.1:7700";  // a peer address without a tcp relay
  expect_refused(s, "topology.relay_peer");
}

TEST_CASE("audit_spec: the session takes the report's options and the topology from the spec",
          "[cli][audit_spec]") {
  audit_spec s = cli_like_spec(4, 1);
  s.report.bootstrap_replicates = 321;
  s.topology.jobs = 3;
  dist::relay_channel* none = nullptr;
  const auto channels = [&](unsigned, const trial_design&) -> dist::relay_channel& { return *none; };
  // a relay the options' channels do not match is refused naming the spec's field, either way
  s.topology.relay = audit_relay_transport::tcp;
  CHECK_THROWS_WITH(audit_session(s, {}), Catch::Contains("'spec.topology.relay'"));
  audit_session_options with_channels;
  with_channels.topology.channel = channels;
  s.topology.relay = audit_relay_transport::none;
  CHECK_THROWS_WITH(audit_session(s, std::move(with_channels)), Catch::Contains("'spec.topology.relay'"));
  audit_session_options relay;
  relay.topology.channel = channels;
  s.topology.relay = audit_relay_transport::mpi;  // a relay over MPI needs its ranks too
  CHECK_THROWS_WITH(audit_session(s, std::move(relay)), Catch::Contains("'spec.topology.relay'"));
  // the workers are the spec's: 3 of them (the options' 1 is replaced) need a factory for two more,
  // refused before any trial
  s.topology.relay = audit_relay_transport::none;
  s.arms = std::vector<trial_arm>{parse_arm("no_comm"), parse_arm("text_full")};
  s.maps = {};
  s.drift.reset();
  audit_engines<reference_cpu_engine> first{
      reference_cpu_engine::load(models + "organism-a"), std::nullopt, {}};
  const auto fmt = organism_format::load(s.organism_dir);
  const task_file_source tasks(organism_task_file(fmt, s.organism_task_options_of(), s.items), {},
                               {.vocab_size = first.engine.info().vocab_size});
  audit_session_options o;
  o.out = std::filesystem::temp_directory_path() / "latentaudit_spec_topology";
  std::filesystem::remove_all(o.out);
  o.jobs = 1;
  o.trials_only = true;
  CHECK_THROWS_WITH(audit_session(s, std::move(o)).run(tasks, first), Catch::Contains("make_worker"));
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / "latentaudit_spec_topology");
}

TEST_CASE("audit_spec: the default arms follow the partner, the drift manifest and the messages",
          "[cli][audit_spec]") {
  auto s = cli_like_spec(4, 1);
  const auto has = [](const audit_design& d, const std::string& label) {
    return std::any_of(d.design.arms.begin(), d.design.arms.end(),
                       [&](const trial_arm& a) { return a.label == label; });
  };
  const auto all = audit_design_arms(s);
  CHECK(has(all, "cross_model"));
  CHECK(has(all, "kv_drift_" + std::to_string(s.drift->levels.front().steps)));
  CHECK(has(all, "kv_message"));
  s.with_partner = false;
  s.drift_overlays = false;
  s.engine = "llama.cpp";
  const auto cut = audit_design_arms(s);
  CHECK_FALSE(has(cut, "cross_model"));
  CHECK_FALSE(has(cut, "kv_drift_" + std::to_string(s.drift->levels.front().steps)));
  REQUIRE(cut.arms_unavailable.size() == s.drift->levels.size());  // named, with the reason
  CHECK(cut.arms_unavailable.front().reason.find("llama.cpp does not load") != std::string::npos);
}

TEST_CASE("audit_spec: the identity changes with every design field", "[cli][audit_spec]") {
  const audit_spec base = cli_like_spec(4, 1);
  const auto built = build_on_organisms(base);
  const std::string h = built.design.design_hash();
  CHECK(build_on_organisms(base).design.design_hash() == h);  // deterministic
  CHECK(built.design.identity.task_source == "organism");
  CHECK(built.design.identity.task_hash.size() == 64u);
  CHECK(built.design.identity.options.find("drift_senders") != nullptr);
  const std::vector<std::pair<const char*, std::function<void(audit_spec&)>>> changes = {
      {"seed", [](audit_spec& s) { s.seed = 2; }},
      {"items", [](audit_spec& s) { s.items = 5; }},
      {"seeds", [](audit_spec& s) { s.seeds = 2; }},
      {"arms",
       [](audit_spec& s) {
         s.arms = std::vector<trial_arm>{parse_arm("no_comm"), parse_arm("kv_full")};
       }},
      {"with_partner", [](audit_spec& s) { s.with_partner = false; }},
      {"drift", [](audit_spec& s) { s.drift.reset(); }},
      {"messages", [](audit_spec& s) { s.messages.reset(); }},
      {"link", [](audit_spec& s) { s.link = find_link("nvlink4"); }},
      {"timing_repeats", [](audit_spec& s) { s.timing_repeats = 0; }},
      {"timing_repeat_fraction", [](audit_spec& s) { s.timing_repeat_fraction = 0.5; }},
      {"organism_tasks", [](audit_spec& s) { s.organism_tasks.stale_fraction = 0.2; }},
      {"batch_items", [](audit_spec& s) {
         s.batch_items = 2;
         s.item_regime.assign(s.items, "need");
       }}};
  for (const auto& [field, change] : changes) {
    INFO("field " << field);
    audit_spec s = base;
    change(s);
    CHECK(build_on_organisms(s).design.design_hash() != h);
  }
}

TEST_CASE("audit_spec: a library user's spec builds the CLI's design", "[cli][audit_spec]") {
  const auto dir = test::cli_work_dir() / "audit_spec_cli";
  std::filesystem::remove_all(dir);
  const auto j = test::ok_json({"audit", "--items", "4", "--seeds", "2", "--out", dir.string(),
                                "--trials-only", "--quiet", "--jobs", "1", "--model", models + "organism-a",
                                "--partner", models + "organism-b", "--drift", models + "organism-a-drift"});
  const auto built = build_on_organisms(cli_like_spec(4, 2));
  CHECK(built.design.design_hash() == j.at("design_hash").as_string());
  CHECK(built.design.trials() == j.at("trials_total").as_number());
  CHECK(built.arms_unavailable.size() == j.at("arms_unavailable").as_object().size());
}
