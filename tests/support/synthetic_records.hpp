// SPDX-License-Identifier: MIT
// Synthetic trial records with planted truths, for the report tests (observational, cost).
//
// Items 0..items−1, seeds 0..seeds−1. Item i has N = 2 + (item_uniform · 15) pairs (2..16) and
// doc_tokens = 1 + 2N; even items are in the "need" regime, odd items in "no_need". Accuracies:
// need: kv_full, text_full 0.98, no_comm 0.03, text_budget_4 min(0.98, 4/N); no_need: every arm
// 0.98. Bytes: kv_full kv_bytes_per_token·doc_tokens + 100, text arms 4·doc_tokens + 60, no_comm 0.
// Latencies (seconds, each × (1 + 0.1·(u − ½))): B prefills 3e-5 s per token of its prompt (10
// own tokens, + doc_tokens for text_full; + 2·budget + 1 for text_budget); kv_full pays export
// 1e-5, encode 5e-6 + 1e-12·bytes, decode 5e-6, import 2e-5; text pays encode/decode 2e-6 each;
// B decodes in 5e-4; transfer_s is modeled on `link`.
#ifndef LATENTAUDIT_TESTS_SUPPORT_SYNTHETIC_RECORDS_HPP
#define LATENTAUDIT_TESTS_SUPPORT_SYNTHETIC_RECORDS_HPP

#include <latentaudit/core/rng.hpp>
#include <latentaudit/trial/link.hpp>
#include <latentaudit/trial/record.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace latentaudit::test {

/// @brief Settings of synthetic_records().
struct synthetic_settings {
  std::size_t items = 150;          ///< items
  std::size_t seeds = 3;            ///< seeds per item
  std::uint64_t seed = 1;           ///< generator seed (printed by the tests)
  double kv_bytes_per_token = 512;  ///< relay bytes per document token
  std::string link = "pcie4";       ///< link used for transfer_s
  bool attention_mass = true;       ///< fill kv_full's attention_mass
  std::vector<std::string> arms = {"no_comm", "text_full", "text_budget_4", "kv_full"};  ///< arms produced
};

/// @brief Pairs N of item `item` (2..16).
inline int synthetic_pairs(std::uint64_t seed, std::uint64_t item) {
  auto g = make_stream({.seed = seed, .item = item, .arm = 99, .replicate = 0});
  return 2 + static_cast<int>(uniform01(g) * 15.0);
}

/// @brief The records (one per item, seed, arm in settings.arms).
inline std::vector<trial_record> synthetic_records(const synthetic_settings& s = {}) {
  const link_preset link = find_link(s.link);
  std::vector<trial_record> out;
  for (std::uint64_t item = 0; item < s.items; ++item) {
    const int N = synthetic_pairs(s.seed, item);
    const double doc = 1.0 + 2.0 * N;
    const bool need = item % 2 == 0;
    for (std::uint64_t sd = 0; sd < s.seeds; ++sd) {
      for (std::uint32_t a = 0; a < s.arms.size(); ++a) {
        const std::string& arm = s.arms[a];
        auto g = make_stream(
            {.seed = s.seed, .item = item, .arm = a, .replicate = static_cast<std::uint32_t>(sd)});
        auto jit = [&] { return 1.0 + 0.1 * (uniform01(g) - 0.5); };
        trial_record r;
        r.item = item;
        r.seed = sd;
        r.arm = arm;
        r.regime = need ? "need" : "no_need";
        r.link = s.link;
        r.covariates = {{"doc_tokens", doc}, {"pairs", static_cast<double>(N)}};
        double p = 0.98;
        auto& L = r.latency;
        L.b_decode_s = 5e-4 * jit();
        if (arm == "no_comm") {
          r.arm_kind = "no_comm";
          if (need) p = 0.03;
          L.b_prefill_s = 3e-5 * 10 * jit();
        } else if (arm == "text_full") {
          r.arm_kind = "text_full";
          r.bytes = static_cast<std::uint64_t>(4 * doc + 60);
          L.encode_s = 2e-6 * jit();
          L.decode_s = 2e-6 * jit();
          L.b_prefill_s = 3e-5 * (10 + doc) * jit();
        } else if (arm.rfind("text_budget_", 0) == 0) {
          const double k = std::stod(arm.substr(12));
          r.arm_kind = "text_budget";
          r.budget = k;
          if (need) p = std::min(0.98, k / N);
          r.bytes = static_cast<std::uint64_t>(4 * (2 * k + 1) + 60);
          L.encode_s = 2e-6 * jit();
          L.decode_s = 2e-6 * jit();
          L.b_prefill_s = 3e-5 * (10 + 2 * k + 1) * jit();
        } else {  // kv_full
          r.arm_kind = "kv_full";
          r.bytes = static_cast<std::uint64_t>(s.kv_bytes_per_token * doc + 100);
          L.export_s = 1e-5 * jit();
          L.encode_s = (5e-6 + 1e-12 * static_cast<double>(r.bytes)) * jit();
          L.decode_s = 5e-6 * jit();
          L.import_s = 2e-5 * jit();
          L.b_prefill_s = 3e-5 * 10 * jit();
          if (s.attention_mass) r.attention_mass = need ? 0.6 + 0.1 * uniform01(g) : 0.1 + 0.1 * uniform01(g);
        }
        L.transfer_s = link.transfer_seconds(r.bytes);
        r.correct = uniform01(g) < p;
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

/// @brief The records without those of arm `arm`.
inline std::vector<trial_record> without_arm(std::vector<trial_record> r, const std::string& arm) {
  r.erase(std::remove_if(r.begin(), r.end(), [&](const trial_record& x) { return x.arm == arm; }), r.end());
  return r;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_SYNTHETIC_RECORDS_HPP
