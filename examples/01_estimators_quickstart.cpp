// SPDX-License-Identifier: MIT
// A paired trial of 200 items: agent B answered each item once with the KV cache relayed from
// agent A ("kv") and once reading A's document as text ("text"). Does KV relay change accuracy,
// and is it equivalent to text within 5 points?
#include <latentaudit/latentaudit.hpp>

#include <cstdio>
#include <vector>

int main() {
  namespace la = latentaudit;
  // Simulated outcomes (0/1): text is right 85% of the time, kv 84%, correlated within items.
  std::vector<double> kv, text, no_comm;
  auto g = la::make_stream({.seed = 2026});
  for (int item = 0; item < 200; ++item) {
    const double difficulty = la::uniform01(g);
    text.push_back(difficulty < 0.85 ? 1.0 : 0.0);
    kv.push_back(difficulty < 0.84 || (difficulty > 0.97 && la::uniform01(g) < 0.5) ? 1.0 : 0.0);
    no_comm.push_back(la::uniform01(g) < 0.125 ? 1.0 : 0.0);  // chance: 1 in 8 values
  }

  const auto mc = la::mcnemar_test(kv, text);  // exact and asymptotic, Newcombe interval
  std::printf("kv - text: %+.3f [%+.3f, %+.3f], McNemar exact p = %.3f\n", mc.effect.estimate,
              mc.effect.ci_low, mc.effect.ci_high, mc.exact_p_value);

  const auto tost = la::equivalence_test(kv, text, la::equivalence_bounds::symmetric(0.05),
                                         {.design = la::t_test_design::paired});
  std::printf("TOST (margin 0.05): p = %.4f -> %s\n", tost.p_value,
              tost.equivalent ? "equivalent" : "not shown equivalent");

  const auto boot = la::bootstrap_paired_mean(kv, text, {.replicates = 9999, .seed = 7, .threads = 0});
  std::printf("paired bootstrap BCa: [%+.3f, %+.3f]\n", boot.effect.ci_low, boot.effect.ci_high);

  const auto vs_none = la::paired_t_test(kv, no_comm);
  const double p[] = {mc.exact_p_value, vs_none.p_value};
  const auto holm = la::multiple_test(p, {.method = la::p_adjust_method::holm});
  std::printf("Holm-adjusted p: kv vs text %.3f, kv vs no_comm %.3g\n", holm.adjusted_p_values[0],
              holm.adjusted_p_values[1]);
  return holm.rejected[1] ? 0 : 1;  // relay must beat no communication on these data
}
