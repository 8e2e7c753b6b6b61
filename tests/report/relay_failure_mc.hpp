// SPDX-License-Identifier: MIT
// Monte Carlo validation of the relay-failure verdict rules (issue 18) on clustered data with an
// EXACT known truth, shared by tests/report/relay_failure_test.cpp ([slow]) and
// benchmarks/bench_verdicts.cpp (the tables of docs/audit-report.md "When relay does not pay").
//
// Items draw their own success probabilities p_arm,i ~ Beta(mean_arm, concentration) (a point
// mass with concentration 0), independently per arm; each (item, seed) then draws a Bernoulli
// outcome per arm. Item mean paired differences are i.i.d. with mean exactly the difference of
// the arm means. Every rule runs through the library's own path: records → build_audit_data →
// audit_stale / audit_conflict → Holm over the relay-failure family → the findings;
// estimate_noise_tolerance with the drift steps as the dose; relay_switch item by item.
// Draws: std::mt19937_64 with the printed seed (reproducible on one standard library).
#ifndef LATENTAUDIT_TESTS_REPORT_RELAY_FAILURE_MC_HPP
#define LATENTAUDIT_TESTS_REPORT_RELAY_FAILURE_MC_HPP

#include <latentaudit/report/analyses/conflict.hpp>
#include <latentaudit/report/analyses/drift.hpp>
#include <latentaudit/report/analyses/relay_switch.hpp>
#include <latentaudit/report/analyses/stale.hpp>
#include <latentaudit/report/detail/audit_data.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/clustered_binary_sim.hpp"

namespace latentaudit::test {

/// Verdict counts of one Monte Carlo cell.
struct mc_counts {
  std::size_t reps = 0, yes = 0, no = 0, inconclusive = 0;
  [[nodiscard]] double rate(std::size_t k) const {
    return static_cast<double>(k) / static_cast<double>(reps);
  }
  /// binomial standard error of a rate r over reps
  [[nodiscard]] double se(double r) const { return std::sqrt(r * (1.0 - r) / static_cast<double>(reps)); }
  void add(verdict v) {
    ++reps;
    (v == verdict::yes ? yes : v == verdict::no ? no : inconclusive) += 1;
  }
};

/// One regime contrast cell: K items × S seeds in regime `regime` ("stale": kv_full vs text_full;
/// "conflict": kv_full vs no_comm), the treated arm (kv_full) and the control with Beta specs;
/// for "stale", kv_full's wrong answers are stale with probability `stale_share`.
struct failure_cell {
  std::string regime = "stale";
  std::size_t items = 150, seeds = 3;
  beta_spec kv{0.85, 5.0}, control{0.85, 5.0};
  double stale_share = 0.5;  ///< P(stale value | kv_full wrong)
  double alpha = 0.05, margin = 0.05;
};

/// The two stale findings and the conflict finding of one simulated data set (regime `c.regime`
/// only; the other regime's finding is then inconclusive and leaves the Holm family).
struct failure_verdicts {
  verdict worse = verdict::inconclusive;  ///< stale.kv_worse_than_text or conflict.kv_worse_than_no_comm
  verdict stale_answer = verdict::inconclusive;  ///< stale.kv_gives_stale_answer (stale cells)
};

inline failure_verdicts run_failure_once(const failure_cell& c, std::mt19937_64& g) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<trial_record> recs;
  recs.reserve(c.items * c.seeds * 3);
  const std::string control = c.regime == "stale" ? "text_full" : "no_comm";
  const std::string other = c.regime == "stale" ? "no_comm" : "text_full";
  for (std::uint64_t i = 0; i < c.items; ++i) {
    const double pk = draw_beta(g, c.kv), pc = draw_beta(g, c.control);
    for (std::uint64_t s = 0; s < c.seeds; ++s) {
      trial_record k{.item = i, .seed = s, .arm = "kv_full", .arm_kind = "kv_full", .regime = c.regime};
      k.correct = u(g) < pk;
      if (c.regime == "stale") k.stale_answer = !k.correct && u(g) < c.stale_share;
      trial_record t{.item = i, .seed = s, .arm = control, .arm_kind = control, .regime = c.regime};
      t.correct = u(g) < pc;
      if (c.regime == "stale") t.stale_answer = false;
      trial_record o{.item = i, .seed = s, .arm = other, .arm_kind = other, .regime = c.regime};
      o.correct = false;
      if (c.regime == "stale") o.stale_answer = false;
      recs.push_back(std::move(k));
      recs.push_back(std::move(t));
      recs.push_back(std::move(o));
    }
  }
  const auto d = detail::build_audit_data("mc", recs);
  const std::size_t kv = d.find_label("kv_full"), tx = d.find_label("text_full"),
                    nc = d.find_label("no_comm");
  std::vector<std::string> warn;
  auto st = detail::audit_stale(d, recs, kv, tx, nc, c.alpha, warn);
  auto co = detail::audit_conflict(d, recs, kv, tx, nc, c.alpha, warn);
  regime_contrast* family[] = {&st.kv_vs_text, &st.stale_excess, &co.kv_vs_no_comm};
  detail::holm_over(family);
  failure_verdicts v;
  if (c.regime == "stale") {
    v.worse = stale_worse_finding(st, c.alpha, c.margin).answer;
    v.stale_answer = stale_answer_finding(st, c.alpha, c.margin).answer;
  } else {
    v.worse = conflict_worse_finding(co, c.alpha, c.margin).answer;
  }
  return v;
}

/// Counts of the "worse" finding and of the stale-answer finding over `reps` data sets.
inline std::pair<mc_counts, mc_counts> run_failure_cell(const failure_cell& c, std::size_t reps,
                                                        std::uint64_t seed) {
  std::mt19937_64 g(seed);
  mc_counts w, a;
  for (std::size_t r = 0; r < reps; ++r) {
    const auto v = run_failure_once(c, g);
    w.add(v.worse);
    a.add(v.stale_answer);
  }
  return {w, a};
}

/// The drift tolerance cell: K items × S seeds; kv_full p_i ~ Beta(0.9, 5); at drift level k a
/// correct kv_full answer survives with probability 1 − slope·k·c_i/0.9, c_i ~ U(0.5, 1.5)
/// independent of p_i, so δ(k) = −slope·k exactly and the true crossing of −margin is
/// margin/slope.
struct drift_cell {
  std::size_t items = 150, seeds = 3;
  std::vector<double> steps = {25, 50, 100, 200};
  double slope = 0.001;  ///< crossing of −0.05 at 50 steps
  double alpha = 0.05, margin = 0.05;
  std::size_t bootstrap = 99;
  [[nodiscard]] double truth() const { return margin / slope; }
};

/// Coverage counts: covered, missed below (upper limit < truth), missed above (lower > truth),
/// located, and the mean width of the located intervals.
struct coverage_counts {
  std::size_t reps = 0, covered = 0, below = 0, above = 0, located = 0;
  double width_sum = 0.0;
};

inline coverage_counts run_drift_cell(const drift_cell& c, std::size_t reps, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  coverage_counts out;
  const double inf = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < reps; ++r) {
    std::vector<noise_level_pairs> levels(c.steps.size());
    for (std::size_t k = 0; k < c.steps.size(); ++k) {
      levels[k].arm = "kv_drift_" + std::to_string(static_cast<int>(c.steps[k]));
      levels[k].sigma = c.steps[k];
    }
    noise_reference ref;
    for (std::uint64_t i = 0; i < c.items; ++i) {
      const double p = draw_beta(g, {0.9, 5.0}), ci = 0.5 + u(g);
      double acc = 0.0;
      for (std::uint64_t s = 0; s < c.seeds; ++s) {
        const bool y = u(g) < p;
        acc += y ? 1.0 : 0.0;
        ++ref.n;
        ref.correct += y ? 1 : 0;
        for (std::size_t k = 0; k < c.steps.size(); ++k) {
          const double survive = 1.0 - c.slope * c.steps[k] * ci / 0.9;
          levels[k].item.push_back(i);
          levels[k].reference.push_back(y ? 1.0 : 0.0);
          levels[k].noise.push_back(y && u(g) < survive ? 1.0 : 0.0);
        }
      }
      ref.item_means.push_back(acc / static_cast<double>(c.seeds));
    }
    noise_options o{.alpha = c.alpha,
                    .margin = c.margin,
                    .bootstrap_replicates = c.bootstrap,
                    .seed = r + 1,
                    .dose = "drift steps",
                    .dose_field = "drift_steps"};
    const auto t = estimate_noise_tolerance(levels, ref, o);
    const double lo = t.ci_low.value_or(inf), hi = t.ci_high.value_or(inf);
    const double truth = c.truth();
    ++out.reps;
    if (t.tolerance_sigma && t.ci_low && t.ci_high) {
      ++out.located;
      out.width_sum += hi - lo;
    }
    if (lo <= truth && truth <= hi)
      ++out.covered;
    else if (hi < truth)
      ++out.below;
    else
      ++out.above;
  }
  return out;
}

/// The relay switch: under a null stream (every item's relay − text and relay − no_comm have
/// mean 0; items heterogeneous: p ~ Beta(0.8, 2) per arm) of `items` items × `seeds` seeds, the
/// share of streams in which relay is ever turned off; under the planted change (`good` items
/// where relay matches text and beats no_comm, then stale and conflict items merged with the rest
/// at a share rising as in replay_relay_switch), the share turned off and the mean delay after the
/// change point.
struct switch_cell {
  std::size_t items = 400, seeds = 3;
  bool null = true;
  std::size_t good = 150;  ///< change point (planted cells)
  relay_switch_options options{};
};

struct switch_counts {
  std::size_t reps = 0, off = 0, off_before_change = 0;
  double delay_sum = 0.0;  ///< Σ (off_at − change point) over streams turned off after the change
};

inline switch_counts run_switch_cell(const switch_cell& c, std::size_t reps, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  switch_counts out;
  auto item_mean = [&](double pa, double pb) {
    double s = 0.0;
    for (std::size_t k = 0; k < c.seeds; ++k) s += (u(g) < pa ? 1.0 : 0.0) - (u(g) < pb ? 1.0 : 0.0);
    return s / static_cast<double>(c.seeds);
  };
  for (std::size_t r = 0; r < reps; ++r) {
    relay_switch sw(c.options);
    // planted: `good` need items, then bad share rising (cumulative bad = B (j/L)^2), B = L/2
    const std::size_t L = c.items - c.good, B = L / 2;
    std::size_t bad_used = 0;
    for (std::size_t i = 0; i < c.items; ++i) {
      if (c.null) {
        const beta_spec b{0.8, 2.0};
        const double pr = draw_beta(g, b), pt = draw_beta(g, b), pn = draw_beta(g, b);
        const double xt = item_mean(pr, pt), xn = item_mean(pr, pn);
        sw.update(xt, xn);
        continue;
      }
      bool bad = false;
      if (i >= c.good) {
        const std::size_t j = i - c.good;
        const double f = static_cast<double>(j + 1) / static_cast<double>(L);
        const auto target = static_cast<std::size_t>(std::llround(static_cast<double>(B) * f * f));
        bad = bad_used < target;
        bad_used += bad ? 1 : 0;
      }
      const double pr = draw_beta(g, {0.9, 5.0});
      if (!bad) {
        sw.update(item_mean(pr, draw_beta(g, {0.9, 5.0})), item_mean(pr, draw_beta(g, {0.05, 5.0})));
      } else if (bad_used % 2 == 1) {  // stale: relay mostly wrong, text right, no_comm wrong
        const double ps = draw_beta(g, {0.1, 5.0});
        sw.update(item_mean(ps, draw_beta(g, {0.9, 5.0})), item_mean(ps, draw_beta(g, {0.05, 5.0})));
      } else {  // conflict: relay and text wrong, no_comm right
        const double ps = draw_beta(g, {0.2, 5.0});
        sw.update(item_mean(ps, draw_beta(g, {0.3, 5.0})), item_mean(ps, draw_beta(g, {0.95, 5.0})));
      }
    }
    ++out.reps;
    if (sw.off_at()) {
      ++out.off;
      if (!c.null && *sw.off_at() <= c.good)
        ++out.off_before_change;
      else if (!c.null)
        out.delay_sum += static_cast<double>(*sw.off_at() - c.good);
    }
  }
  return out;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_REPORT_RELAY_FAILURE_MC_HPP
