// SPDX-License-Identifier: MIT
// The relay-failure findings on the model organisms (organism-a relaying to itself, organism-b as
// the foreign partner) with stale and conflict items from the task generator: a fixed design seed
// guards each planted truth of the data side (issue 18).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "latentaudit/report/audit.hpp"
#include "latentaudit/trial.hpp"
#include "support/common.hpp"
#include "support/findings.hpp"
#include "support/sanitizer.hpp"

namespace la = latentaudit;

namespace {
using latentaudit::test::fast_options;
using latentaudit::test::find;
}  // namespace

TEST_CASE("relay failures: the organisms' stale, conflict and drift truths are found (design seed 1808)",
          "[report][relay_failure][organism]") {
  // organism-a relaying to itself, organism-b as the foreign partner, four drifted senders
  // (organism-a fine-tuned 5, 10, 20 and 300 steps on a remapped vocabulary: models/organism-a-drift);
  // 160 items x 1 seed with 20 % stale and 20 % conflict items (the data side's task generator);
  // 40 items under the sanitizer, where the verdicts are not checked (support/sanitizer.hpp)
  using latentaudit::test::models;
  auto a = la::reference_cpu_engine::load(models + "organism-a");
  auto b = la::reference_cpu_engine::load(models + "organism-b");
  const auto fmt = la::organism_format::load(models + "organism-a");
  la::trial_design d{.seed = 1808, .items = la::test::full_or_sanitized<std::uint64_t>(160, 40), .seeds = 1};
  const int steps[] = {5, 10, 20, 300};
  std::vector<la::reference_cpu_engine> senders;
  senders.reserve(std::size(steps));
  for (int k : steps) {
    senders.push_back(la::reference_cpu_engine::load_with_overlay(
        models + "organism-a", models + "organism-a-drift/steps-" + std::to_string(k) + ".safetensors"));
    d.arms.push_back(la::kv_drift_arm(k));
  }
  la::trial_driver<la::reference_cpu_engine> drv(a, &b);
  for (std::size_t i = 0; i < senders.size(); ++i)
    drv.add_sender("drift_" + std::to_string(steps[i]), senders[i]);
  const la::organism_task_options to{
      .seed = d.seed, .no_need_fraction = 0.2, .stale_fraction = 0.2, .conflict_fraction = 0.2};
  std::vector<la::trial_record> recs;
  drv.run(
      d, [&](std::uint64_t i, std::uint64_t s) { return la::make_organism_task(fmt, to, i, s); },
      [&](const la::trial_record& r) { recs.push_back(r); });
  const auto core = la::analyse_records(recs, fast_options());
  for (const char* id : {"stale.kv_worse_than_text", "stale.kv_gives_stale_answer",
                         "conflict.kv_worse_than_no_comm", "drift.tolerance_steps"}) {
    const auto& f = find(core.findings, id);
    INFO(id << ": " << f.detail);
    if (la::test::full_sample) CHECK(f.answer == la::verdict::yes);
  }
  if (!la::test::full_sample) return;
  CHECK(core.stale.kv_answers.stale > core.stale.kv_answers.other_wrong);
  INFO(core.conflict.attention.note);
  CHECK(core.conflict.attention.available);  // the reference engine captures attention
  // non-inferiority to same-model relay fails between 5 and 20 steps (the default run: 8.2)
  const auto& dr = find(core.findings, "drift.tolerance_steps");
  CHECK(dr.estimate > 5.0);
  CHECK(dr.estimate < 20.0);
}
