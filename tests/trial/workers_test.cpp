// SPDX-License-Identifier: MIT
// Tests of trial/workers.hpp (`audit --jobs N`): one design on several drivers at once gives one
// driver's records in one driver's order (but for timings), resumes, refuses two drivers on one relay
// channel, and passes a driver's failure on after the finished trials.
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <vector>

#include "support/common.hpp"
#include "support/organism_records.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;
using driver_type = trial_driver<reference_cpu_engine>;

struct workers {
  std::vector<std::unique_ptr<reference_cpu_engine>> engines;
  std::vector<std::unique_ptr<driver_type>> drivers;
  std::vector<driver_type*> ptrs;
  explicit workers(std::size_t n) {
    const auto a = reference_cpu_engine::load(models + "organism-a");
    const auto b = reference_cpu_engine::load(models + "organism-b");
    for (std::size_t i = 0; i < n; ++i) {
      engines.push_back(std::make_unique<reference_cpu_engine>(a));  // copies, as `audit --jobs`
      engines.push_back(std::make_unique<reference_cpu_engine>(b));
      drivers.push_back(std::make_unique<driver_type>(*engines[2 * i], engines[2 * i + 1].get()));
      ptrs.push_back(drivers.back().get());
    }
  }
};

trial_design workers_design() {
  trial_design d{.seed = 9, .items = 10, .seeds = 2};
  d.arms = {parse_arm("no_comm"),  parse_arm("text_full"),  parse_arm("kv_full"),
            parse_arm("deranged"), parse_arm("kv_noise_1"), parse_arm("cross_model")};
  d.timing_repeats = 2;  // some units re-run their trials for timing: which ones must not change
  return d;
}

}  // namespace

TEST_CASE("workers: N drivers give one driver's records in its order, and resume") {
  const auto d = workers_design();
  const auto fmt = organism_format::load(models + "organism-a");
  const organism_task_options to{.seed = d.seed};
  const driver_type::task_source tasks = [&](std::uint64_t i, std::uint64_t s) {
    return make_organism_task(fmt, to, i, s);
  };
  auto run = [&](std::size_t n, const std::set<trial_key>& done = {}) {
    workers w(n);
    std::vector<std::string> out;
    std::uint64_t last_progress = 0;
    const auto stats = run_on_workers<driver_type>(
        w.ptrs, d, tasks, [&](const trial_record& r) { out.push_back(testing::timeless_line(r)); }, done,
        [&](std::uint64_t done_now, std::uint64_t total) {
          CHECK(total == d.trials());
          last_progress = done_now;
        });
    CHECK(stats.trials == out.size());
    CHECK(stats.skipped == done.size());
    CHECK(last_progress == d.trials());
    if (n > 1) CHECK(stats.worker_wall_s > 0.0);
    return out;
  };
  const auto one = run(1);
  REQUIRE(one.size() == d.trials());
  CHECK(run(2) == one);
  CHECK(run(3) == one);
  CHECK(run(7) == one);  // more drivers than the units some of them get
  // resume: every third key done; the rest, in the same order
  std::set<trial_key> done;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < one.size(); ++i) {
    const auto r = record_from_json(parse_json(one[i]), "record");
    if (i % 3 == 0)
      done.insert({r.item, r.seed, r.arm});
    else
      rest.push_back(one[i]);
  }
  CHECK(run(3, done) == rest);
}

TEST_CASE("workers: a failing unit stops the hand-out, its finished trials are passed on, then it throws") {
  auto d = workers_design();
  d.timing_repeats = 0;
  const auto fmt = organism_format::load(models + "organism-a");
  const organism_task_options to{.seed = d.seed};
  const auto order = d.unit_order();
  const auto bad = order[6];  // the 7th unit's task fails
  const driver_type::task_source tasks = [&](std::uint64_t i, std::uint64_t s) {
    if (i == bad.first && s == bad.second) throw std::runtime_error("task source failed");
    return make_organism_task(fmt, to, i, s);
  };
  workers w(3);
  std::vector<trial_record> out;
  CHECK_THROWS_WITH(
      run_on_workers<driver_type>(w.ptrs, d, tasks, [&](const trial_record& r) { out.push_back(r); }),
      "task source failed");
  // every unit before the failing one finished and was passed on, in order; none twice
  std::set<trial_key> seen;
  for (const auto& r : out) CHECK(seen.insert({r.item, r.seed, r.arm}).second);
  for (std::size_t p = 0; p < 6; ++p)
    for (const auto& a : d.arms) CHECK(seen.count({order[p].first, order[p].second, a.label}) == 1);
  for (const auto& a : d.arms) CHECK(seen.count({bad.first, bad.second, a.label}) == 0);
  CHECK(out.size() < d.trials());
}

TEST_CASE("workers: bad arguments are refused naming them") {
  const auto d = workers_design();
  const auto fmt = organism_format::load(models + "organism-a");
  const organism_task_options to{};
  const driver_type::task_source tasks = [&](std::uint64_t i, std::uint64_t s) {
    return make_organism_task(fmt, to, i, s);
  };
  const auto sink = [](const trial_record&) {};
  std::vector<driver_type*> none;
  CHECK_THROWS_WITH(run_on_workers<driver_type>(none, d, tasks, sink),
                    Catch::Contains("run_on_workers") && Catch::Contains("drivers"));
  std::vector<driver_type*> null_one{nullptr};
  CHECK_THROWS_WITH(run_on_workers<driver_type>(null_one, d, tasks, sink), Catch::Contains("null"));
  workers w(2);
  CHECK_THROWS_WITH(run_on_workers<driver_type>(w.ptrs, d, {}, sink), Catch::Contains("tasks"));
  CHECK_THROWS_WITH(run_on_workers<driver_type>(w.ptrs, d, tasks, {}), Catch::Contains("sink"));
  // two drivers that relay through one remote sender: one relay channel is one conversation
  struct unused_sender : remote_sender {
    void begin(const trial_design&) override { FAIL("no run may begin"); }
    sender_half relay(const trial_task&, const trial_arm&, position_t, const remote_relay_limits&) override {
      FAIL("no relay may be asked for");
      return {};
    }
    void end() override { FAIL("no run may end"); }
    [[nodiscard]] std::string peer_name() const override { return "test"; }
  } sender;
  w.ptrs[0]->set_remote_sender(&sender);
  w.ptrs[1]->set_remote_sender(&sender);
  CHECK_THROWS_WITH(run_on_workers<driver_type>(w.ptrs, d, tasks, sink),
                    Catch::Contains("one remote sender"));
}
