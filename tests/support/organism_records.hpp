// SPDX-License-Identifier: MIT
// Test support: trial records of the default design on the built-in organisms (organism-a relaying
// to itself, organism-b as the foreign partner), run in process with the reference engine; a
// record's line with its timings zeroed, for comparing runs.
#ifndef LATENTAUDIT_TESTS_SUPPORT_ORGANISM_RECORDS_HPP
#define LATENTAUDIT_TESTS_SUPPORT_ORGANISM_RECORDS_HPP

#include <latentaudit/trial.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace latentaudit::testing {

/// @brief Records of `items` × `seeds` units × the 21 default arms at design seed `seed`.
inline std::vector<trial_record> run_organism_records(std::uint64_t seed, std::uint64_t items,
                                                      std::uint64_t seeds) {
  const std::string models = std::string(LATENTAUDIT_SOURCE_DIR).append("/models/");
  auto a = reference_cpu_engine::load(models + "organism-a");
  auto b = reference_cpu_engine::load(models + "organism-b");
  const auto fmt = organism_format::load(models + "organism-a");
  trial_design d{.seed = seed, .items = items, .seeds = seeds, .arms = default_arms(/*with_partner=*/true)};
  const organism_task_options to{.seed = d.seed};
  std::vector<trial_record> out;
  trial_driver<reference_cpu_engine>(a, &b).run(
      d, [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); },
      [&](const trial_record& r) { out.push_back(r); });
  return out;
}

/// @brief `r`'s records.jsonl line with its latencies and timing repeats zeroed: two runs of one
/// design agree on it (timings differ; which trials repeat does not).
inline std::string timeless_line(trial_record r) {
  r.latency = {};
  for (auto& x : r.latency_repeats_s) x = 0.0;
  return record_to_line(r);
}

}  // namespace latentaudit::testing

#endif  // LATENTAUDIT_TESTS_SUPPORT_ORGANISM_RECORDS_HPP
