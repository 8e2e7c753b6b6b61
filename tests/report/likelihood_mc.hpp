// SPDX-License-Identifier: MIT
// Test support (report): the Monte Carlo of the likelihood endpoints (issues 50 and 52) on clustered
// records (tests/report/relay_failure_sim.hpp): the size and power of the continuation-probability
// findings, and of the decision's dependency check where it rests on a likelihood endpoint
// (need.kv_carries_information: accuracy at α/2, the likelihood endpoints sharing α/2). Shared by
// tests/report/answer_probability_test.cpp (short) and benchmarks/bench_verdicts.cpp (long);
// numbers in docs/audit-report.md "Continuation probability" and "Likelihood endpoints in the
// dependency check".
#ifndef LATENTAUDIT_TESTS_REPORT_LIKELIHOOD_MC_HPP
#define LATENTAUDIT_TESTS_REPORT_LIKELIHOOD_MC_HPP

#include <latentaudit/report/report.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "report/decision_mc.hpp"
#include "report/relay_failure_sim.hpp"

namespace latentaudit::test {

/// One cell: a design, a generator seed (replicate r uses seed + r) and the finding counted.
struct likelihood_cell {
  std::string name;             ///< printed
  relay_failure_design design;  ///< the records
  std::uint64_t seed = 0;       ///< seed of replicate 0
  std::string finding;          ///< the finding whose "yes" is counted
  bool null = true;             ///< whether "yes" is an error (size) or power
};

/// Counts of one cell.
struct likelihood_counts {
  std::size_t reps = 0;
  std::size_t finding_yes = 0;     ///< `finding` said yes
  std::size_t accuracy_yes = 0;    ///< need.kv_beats_no_comm said yes
  std::size_t dependency_yes = 0;  ///< the decision's dependency check passed (relay carries information)
  std::size_t dependency_no = 0;   ///< the dependency check said "no" (relay carries none)
  std::size_t says_none = 0;       ///< dependency "no" while a likelihood finding said yes: the error
  /// @brief count / reps
  [[nodiscard]] double rate(std::size_t count) const {
    return reps == 0 ? 0.0 : static_cast<double>(count) / static_cast<double>(reps);
  }
};

/// The need-only design of the likelihood cells: `items` items × 2 seeds, text_full at 0.95, no_comm
/// and kv_full at accuracy `acc`; answer_logprob (sd 0.5) and, with `continuation`,
/// continuation_prob (sd 0.5) drawn around each arm's accuracy logit + item shift; kv_full's
/// likelihoods planted at `kv_likelihood` (< 0: its accuracy).
inline relay_failure_design likelihood_design(std::size_t items, double acc, double kv_likelihood,
                                              bool continuation, bool answer = true) {
  relay_failure_design d;
  d.seeds = 2;
  d.item_sd = 0.6;
  d.with_stale = d.with_conflict = d.with_drift = d.with_attention = false;
  d.regime_items = {items, 0, 0, 0};
  d.need_no_comm = d.need_kv = acc;
  d.need_text = 0.95;
  d.logprob_sd = answer ? 0.5 : 0.0;
  d.continuation_sd = continuation ? 0.5 : 0.0;
  d.need_kv_likelihood = kv_likelihood;
  return d;
}

/// The planted accuracy whose mean likelihood in likelihood_design is `points` above that of an
/// arm planted at `acc` (the item shift, sd 0.6, and the record noise, sd 0.5, together).
inline double likelihood_shifted(double acc, double points) {
  const double sd = std::sqrt(0.6 * 0.6 + 0.5 * 0.5);
  return sim_p_for_accuracy(sim_mean_accuracy(acc, sd) + points, sd);
}

/// The cells: the continuation findings' size (dependency and value nulls) and power, and the
/// decision's dependency check's size (no effect on any endpoint) and power (+15 points on a
/// likelihood endpoint, accuracy unchanged). `items` scales the designs (60 in the short test).
inline std::vector<likelihood_cell> likelihood_cells(std::size_t items) {
  std::vector<likelihood_cell> c;
  const double margin_kv = likelihood_shifted(0.80, -0.05);  // 5 points below text's at 0.80
  c.push_back({"continuation: dependency null (kv = no_comm)", likelihood_design(items, 0.30, -1, true),
               52100000, "need.kv_raises_continuation_probability", true});
  {
    auto d = likelihood_design(items * 5 / 2, 0.30, -1, true);
    d.need_text = 0.80;
    d.need_kv = 0.30;
    d.need_kv_likelihood = margin_kv;
    c.push_back({"continuation: value at the margin (kv 5 points below text)", d, 52200000,
                 "need.kv_continuation_noninferior_to_text", true});
  }
  c.push_back({"continuation: +10 points, accuracy unchanged",
               likelihood_design(items, 0.30, likelihood_shifted(0.30, 0.10), true), 52300000,
               "need.kv_raises_continuation_probability", false});
  c.push_back({"decision: no effect on any endpoint (answer + continuation)",
               likelihood_design(items, 0.30, -1, true), 52400000, "need.kv_carries_information", true});
  c.push_back({"decision: no effect on any endpoint (answer only)", likelihood_design(items, 0.30, -1, false),
               52500000, "need.kv_carries_information", true});
  c.push_back({"decision: answer probability +15 points, accuracy unchanged",
               likelihood_design(items, 0.30, likelihood_shifted(0.30, 0.15), false), 52600000,
               "need.kv_carries_information", false});
  c.push_back({"decision: +15 points on both likelihoods, accuracy unchanged",
               likelihood_design(items, 0.30, likelihood_shifted(0.30, 0.15), true), 52700000,
               "need.kv_carries_information", false});
  return c;
}

/// Runs `reps` replicates of cell `c` (the full report: findings and decision).
inline likelihood_counts run_likelihood_cell(const likelihood_cell& c, std::size_t reps) {
  likelihood_counts out;
  for (std::size_t r = 0; r < reps; ++r) {
    const auto recs = simulate_relay_failure(c.design, c.seed + r);
    const auto rep = build_audit_report(recs, decision_mc_options());
    ++out.reps;
    bool lik_yes = false;
    for (const auto& f : rep.findings) {
      if (f.id == c.finding && f.answer == verdict::yes) ++out.finding_yes;
      if (f.id == "need.kv_beats_no_comm" && f.answer == verdict::yes) ++out.accuracy_yes;
      if ((f.id == "need.kv_raises_answer_probability" ||
           f.id == "need.kv_raises_continuation_probability") &&
          f.answer == verdict::yes)
        lik_yes = true;
    }
    for (const auto& item : rep.decision.checklist) {
      if (item.name != "dependency") continue;
      out.dependency_yes += item.passed == verdict::yes ? 1 : 0;
      out.dependency_no += item.passed == verdict::no ? 1 : 0;
      out.says_none += item.passed == verdict::no && lik_yes ? 1 : 0;
    }
  }
  return out;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_REPORT_LIKELIHOOD_MC_HPP
