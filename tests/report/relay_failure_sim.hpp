// SPDX-License-Identifier: MIT
// Test support (report): synthetic clustered trial records with the four regimes (need, no_need,
// stale, conflict) and drift arms, each with a planted truth, for the relay-failure analyses
// (tests/report/relay_failure_test.cpp, benchmarks/bench_verdicts.cpp). Each item draws an item
// effect shared by its seeds (a logit shift, sd `item_sd`), so seeds of an item are correlated.
#ifndef LATENTAUDIT_TESTS_REPORT_RELAY_FAILURE_SIM_HPP
#define LATENTAUDIT_TESTS_REPORT_RELAY_FAILURE_SIM_HPP

#include <latentaudit/trial/record.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace latentaudit::test {

/// Planted accuracies per regime and arm (before the item effect), drift and mechanisms.
struct relay_failure_design {
  std::size_t items_per_regime = 150;
  std::size_t seeds = 2;
  double item_sd = 0.6;  ///< sd of the item's logit shift (shared by its arms and seeds)
  bool with_stale = true, with_conflict = true, with_drift = true, with_attention = true;
  // need
  double need_no_comm = 0.05, need_text = 0.95, need_kv = 0.95;
  // stale: kv relays the old version
  double stale_kv = 0.10, stale_text = 0.92, stale_no_comm = 0.05;
  double stale_share_of_wrong = 0.9;  ///< P(stale value | kv wrong); text: 0.1
  // conflict
  double conflict_no_comm = 0.95, conflict_kv = 0.20, conflict_text = 0.30;
  double attention_need = 0.5, attention_conflict = 0.25;
  // drift: accuracy of kv_drift_<k> in need = need_kv − slope·k (clipped at need_no_comm)
  std::vector<double> drift_steps = {25, 50, 100, 200};
  double drift_slope = 0.001;  ///< accuracy points lost per step (fraction): crossing of −0.05 at 50
  // Issue 25's scenarios (defaults leave the records above unchanged, draw for draw):
  /// items per regime (need, no_need, stale, conflict); empty: items_per_regime each
  std::vector<std::size_t> regime_items = {};
  double no_need_kv = 0.95, no_need_text = 0.95, no_need_no_comm = 0.95;  ///< no_need accuracies
  bool with_cross_model = false;  ///< a cross_model arm (a foreign model's cache) at no_comm's accuracy
  /// seeds of the odd items (0: `seeds`): unequal seeds per item
  std::size_t odd_item_seeds = 0;
  /// each wrong kv_full record is dropped with this probability (a stack that loses failed relays);
  /// the drops draw from their own stream (seed + 1)
  double drop_wrong_kv = 0.0;
  /// the regime whose kv_full records may be dropped ("" = every regime)
  std::string drop_regime = "";
  /// the arm whose wrong records drop_wrong_kv drops (issue 29: "kv_mapped", a map whose failed
  /// relays go missing)
  std::string drop_arm = "kv_full";
  /// Issue 52: a dropped record takes its whole (item, seed) unit with it — every arm's record (a
  /// stack that loses the unit when its relay fails: a timeout, a crash of B)
  bool drop_unit = false;
  /// Issue 52: the need-regime kv_full accuracy of the odd items (< 0: need_kv), with odd_item_seeds
  /// the items with more queries losing more
  double odd_item_need_kv = -1.0;
  /// Issue 28 (the answer-probability endpoint): when > 0 every record carries answer_logprob =
  /// log p with p = expit(logit(arm accuracy) + item shift + logprob_sd · z), z ~ N(0, 1) per record
  /// from its own stream (seed + 2), so the outcomes above are drawn exactly as without it; 0: the
  /// records carry no answer_logprob (null)
  double logprob_sd = 0.0;
  /// Issue 50 (the continuation endpoint): when > 0 every record carries continuation_prob =
  /// expit(logit(arm accuracy) + item shift + continuation_sd · z), z per record from its own
  /// stream (seed + 3), with continuation_tokens = 4 and continuation_logprob = 4 log p; 0: none
  double continuation_sd = 0.0;
  /// Issue 52: the planted accuracy behind need-regime kv_full's likelihoods (answer_logprob and
  /// continuation_prob) when >= 0 — the likelihood moves while accuracy (need_kv) does not; < 0:
  /// need_kv's
  double need_kv_likelihood = -1.0;
  /// Issue 29: when >= 0, a kv_mapped arm (a foreign sender's cache through a cache map, sender
  /// fingerprint "cc", map "m1") planted at this need-regime accuracy (kv_full's elsewhere); drawn
  /// after every other arm of a unit, so the records above are unchanged; < 0: no kv_mapped arm
  double mapped_need = -1.0;
};

inline double sim_expit(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double sim_logit(double p) { return std::log(p / (1.0 - p)); }

/// The records of one design at generator seed `seed`.
inline std::vector<trial_record> simulate_relay_failure(const relay_failure_design& d, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::mt19937_64 gp(seed + 2);  // answer_logprob's own stream: the outcomes draw as without it
  std::normal_distribution<double> zp(0.0, 1.0);
  std::mt19937_64 gc(seed + 3);  // continuation_prob's own stream
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<trial_record> out;
  const char* regimes[] = {"need", "no_need", "stale", "conflict"};
  std::uint64_t item = 0;
  for (const char* const& rg : regimes) {
    const std::string regime = rg;
    if (regime == "stale" && !d.with_stale) continue;
    if (regime == "conflict" && !d.with_conflict) continue;
    const std::size_t regime_index = static_cast<std::size_t>(&rg - regimes);
    const std::size_t n_items = d.regime_items.empty() ? d.items_per_regime : d.regime_items.at(regime_index);
    for (std::size_t i = 0; i < n_items; ++i, ++item) {
      const double shift = d.item_sd * z(g);
      const double doc = 10.0 + static_cast<double>(item % 23);
      const std::size_t n_seeds = d.odd_item_seeds > 0 && item % 2 == 1 ? d.odd_item_seeds : d.seeds;
      for (std::uint64_t s = 0; s < n_seeds; ++s) {
        auto add = [&](const std::string& arm, const std::string& kind, double p, double bytes) {
          trial_record r;
          r.item = item;
          r.seed = s;
          r.arm = arm;
          r.arm_kind = kind;
          r.regime = regime;
          const double pp = p <= 0.0 ? 0.0 : p >= 1.0 ? 1.0 : sim_expit(sim_logit(p) + shift);
          r.correct = u(g) < pp;
          r.bytes = static_cast<std::uint64_t>(bytes);
          r.link = "pcie4";
          r.latency.b_prefill_s = kind == "text_full" ? 2e-3 : 1e-3;
          r.covariates = {{"doc_tokens", doc},
                          {"own_tokens", regime == "no_need" || regime == "conflict" ? doc : 4.0},
                          {"cache_age_versions", regime == "stale" ? 1.0 : 0.0},
                          {"prompt_overlap", regime == "no_need" || regime == "conflict" ? 1.0 : 0.0}};
          const double pl =
              regime == "need" && kind == "kv_full" && d.need_kv_likelihood >= 0.0 ? d.need_kv_likelihood : p;
          const double l = pl <= 0.0 ? -30.0 : pl >= 1.0 ? 30.0 : sim_logit(pl);
          if (d.logprob_sd > 0.0)
            r.answer_logprob = std::min(0.0, std::log(sim_expit(l + shift + d.logprob_sd * zp(gp))));
          if (d.continuation_sd > 0.0) {
            const double pc = sim_expit(l + shift + d.continuation_sd * zp(gc));
            r.continuation_prob = pc;
            r.continuation_tokens = 4;
            r.continuation_logprob = std::min(0.0, 4.0 * std::log(pc));
          }
          r.receiver_fingerprint = "aa";
          if (kind != "no_comm") r.sender_fingerprint = "aa";
          if (regime == "stale") {
            const double share = kind == "kv_full" || kind == "drifted" ? d.stale_share_of_wrong : 0.1;
            r.stale_answer = !r.correct && u(g) < share;
          }
          if (kind == "kv_full" && d.with_attention && (regime == "need" || regime == "conflict")) {
            const double m = regime == "need" ? d.attention_need : d.attention_conflict;
            r.attention_mass = std::clamp(m + 0.1 * z(g), 0.0, 1.0);
          }
          out.push_back(std::move(r));
          return &out.back();
        };
        const bool need = regime == "need";
        const double kv = need && item % 2 == 1 && d.odd_item_need_kv >= 0.0 ? d.odd_item_need_kv
                          : need                                             ? d.need_kv
                          : regime == "stale"                                ? d.stale_kv
                          : regime == "conflict"                             ? d.conflict_kv
                                                                             : d.no_need_kv;
        const double tx = need                   ? d.need_text
                          : regime == "stale"    ? d.stale_text
                          : regime == "conflict" ? d.conflict_text
                                                 : d.no_need_text;
        const double nc = need                   ? d.need_no_comm
                          : regime == "stale"    ? d.stale_no_comm
                          : regime == "conflict" ? d.conflict_no_comm
                                                 : d.no_need_no_comm;
        add("no_comm", "no_comm", nc, 0);
        add("text_full", "text_full", tx, 40 * doc);
        add("kv_full", "kv_full", kv, 4000 * doc);
        if (d.with_drift) {
          for (double k : d.drift_steps) {
            const double p = need ? std::max(d.need_no_comm, d.need_kv - d.drift_slope * k) : kv;
            auto* r = add("kv_drift_" + std::to_string(static_cast<int>(k)), "drifted", p, 4000 * doc);
            r->drift_steps = k;
            r->sender_fingerprint = "bb" + std::to_string(static_cast<int>(k));
          }
        }
        if (d.with_cross_model) add("cross_model", "cross_model", nc, 4000 * doc)->sender_fingerprint = "cc";
        if (d.mapped_need >= 0.0) {
          auto* r = add("kv_mapped", "kv_mapped", need ? d.mapped_need : kv, 4000 * doc);
          r->sender_fingerprint = "cc";
          r->map = "m1";
        }
      }
    }
  }
  if (d.drop_wrong_kv > 0.0) {
    std::mt19937_64 gd(seed + 1);
    std::vector<trial_record> kept;
    kept.reserve(out.size());
    std::set<std::pair<std::uint64_t, std::uint64_t>> lost;  // drop_unit: the units dropped
    for (auto& r : out) {
      const bool drop = r.arm == d.drop_arm && !r.correct &&
                        (d.drop_regime.empty() || r.regime == d.drop_regime) && u(gd) < d.drop_wrong_kv;
      if (drop && d.drop_unit) lost.emplace(r.item, r.seed);
      if (!drop) kept.push_back(std::move(r));
    }
    if (d.drop_unit)
      std::erase_if(kept, [&](const trial_record& r) { return lost.count({r.item, r.seed}) != 0; });
    out = std::move(kept);
  }
  return out;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_REPORT_RELAY_FAILURE_SIM_HPP
