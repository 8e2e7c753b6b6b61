// SPDX-License-Identifier: MIT
// Monte Carlo validation of mapped.*.retention (issue 29) on clustered synthetic records, shared by
// tests/report/mapped_test.cpp ([slow]) and benchmarks/bench_verdicts.cpp (the table of
// docs/audit-report.md "Relay through a cache map"). Every replicate runs the library's own path:
// records → analyse_records → mapped_findings.
//
// The need regime alone: no_comm, kv_full and kv_mapped planted at exact accuracies under the item
// effect (relay_failure_sim.hpp: a logit shift shared by an item's seeds and arms, sd 0.6), so the
// true retention ρ = (acc(kv_mapped) − acc(no_comm)) / (acc(kv_full) − acc(no_comm)) is known. The
// claims: the 90 % interval covers ρ in at least 90 % of replicates, each limit misses on its side
// in at most α = 0.05, and "yes" (lower limit ≥ the 0.90 gate) when ρ is exactly 0.90 in at most α.
// Monte Carlo standard error of a rate r over R replicates: sqrt(r(1 − r)/R); a test allows the
// claim plus 3 of them.
#ifndef LATENTAUDIT_TESTS_REPORT_MAPPED_MC_HPP
#define LATENTAUDIT_TESTS_REPORT_MAPPED_MC_HPP

#include <latentaudit/report/audit.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "decision_mc.hpp"
#include "relay_failure_sim.hpp"

namespace latentaudit::test {

/// One retention scenario.
struct retention_scenario {
  std::string name;             ///< printed
  relay_failure_design design;  ///< the records
  double rho = 0.0;             ///< the true retention
  std::uint64_t seed = 0;       ///< generator seed of replicate 0 (replicate r: seed + r)
};

/// Counts of one scenario.
struct retention_mc_result {
  std::size_t reps = 0;
  std::size_t covered = 0;    ///< low ≤ ρ ≤ high
  std::size_t miss_low = 0;   ///< low > ρ (the lower limit misses from above)
  std::size_t miss_high = 0;  ///< high < ρ
  std::size_t yes = 0;        ///< the finding's "yes" (lower limit ≥ the gate)
  std::size_t no = 0;         ///< the finding's "no" (upper limit below the gate)
  double width = 0.0;         ///< summed width of the bounded intervals
  std::size_t bounded = 0;    ///< intervals with both limits finite
  [[nodiscard]] double rate(std::size_t k) const {
    return static_cast<double>(k) / static_cast<double>(reps);
  }
};

/// The need regime alone, `items` items × `seeds` seeds: exact accuracies no_comm `nc`, kv_full `kv`
/// and kv_mapped nc + rho (kv − nc) under the item effect; text_full at kv_full's accuracy and an
/// inert cross_model (no_comm's accuracy), the arms the mapped findings read.
inline retention_scenario retention_scenario_of(double rho, std::size_t items, std::size_t seeds, double nc,
                                                double kv, std::uint64_t seed) {
  retention_scenario s{.rho = rho, .seed = seed};
  s.name = "retention " + std::to_string(rho).substr(0, 4) + ", " + std::to_string(items) + " items x " +
           std::to_string(seeds) + " seeds (no_comm " + std::to_string(nc).substr(0, 4) + ", kv_full " +
           std::to_string(kv).substr(0, 4) + ")";
  auto& d = s.design;
  d.seeds = seeds;
  d.item_sd = 0.6;
  d.with_stale = d.with_conflict = d.with_drift = d.with_attention = false;
  d.with_cross_model = true;
  d.regime_items = {items, 0, 0, 0};
  d.need_no_comm = sim_p_for_accuracy(nc, d.item_sd);
  d.need_kv = d.need_text = sim_p_for_accuracy(kv, d.item_sd);
  d.mapped_need = sim_p_for_accuracy(nc + rho * (kv - nc), d.item_sd);
  return s;
}

/// The scenarios of the test and the benchmark: ρ = 0.68 (what the stranger's map keeps on the
/// organisms) at 60 and 30 items, ρ = 0.90 exactly at the gate, ρ = 1 (a perfect map).
inline std::vector<retention_scenario> retention_scenarios() {
  return {retention_scenario_of(0.68, 60, 2, 0.05, 0.95, 29100000),
          retention_scenario_of(0.68, 30, 2, 0.05, 0.95, 29110000),
          retention_scenario_of(0.90, 150, 3, 0.05, 0.95, 29120000),
          retention_scenario_of(1.00, 60, 2, 0.20, 0.80, 29130000)};
}

/// Runs `reps` replicates of `s`.
inline retention_mc_result run_retention_mc(const retention_scenario& s, std::size_t reps) {
  retention_mc_result out;
  audit_options o = decision_mc_options();
  for (std::size_t r = 0; r < reps; ++r) {
    const auto core = analyse_records(simulate_relay_failure(s.design, s.seed + r), o);
    ++out.reps;
    if (core.mapped.arms.empty()) continue;
    const auto& iv = core.mapped.arms.front().retention;
    out.covered += iv.low <= s.rho && s.rho <= iv.high ? 1 : 0;
    out.miss_low += iv.low > s.rho ? 1 : 0;
    out.miss_high += iv.high < s.rho ? 1 : 0;
    if (std::isfinite(iv.low) && std::isfinite(iv.high)) {
      out.width += iv.high - iv.low;
      ++out.bounded;
    }
    for (const auto& f : core.findings)
      if (f.id == "mapped.retention") {
        out.yes += f.answer == verdict::yes ? 1 : 0;
        out.no += f.answer == verdict::no ? 1 : 0;
      }
  }
  return out;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_REPORT_MAPPED_MC_HPP
