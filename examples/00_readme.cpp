#include <cstdio>
#include <latentaudit/estimators/bootstrap.hpp>
#include <latentaudit/estimators/equivalence.hpp>
#include <latentaudit/estimators/paired_binary.hpp>
#include <vector>

int main() {
  namespace la = latentaudit;
  // Per-item accuracy (0/1) of agent B with the relayed KV cache and with A's document as text.
  std::vector<double> kv{1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1};
  std::vector<double> text{1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1};

  auto mc = la::mcnemar_test(kv, text);  // exact binomial p, chi-square, Newcombe interval
  std::printf("kv - text %+.2f [%+.2f, %+.2f], exact p = %.3f\n", mc.effect.estimate, mc.effect.ci_low,
              mc.effect.ci_high, mc.exact_p_value);

  auto tost = la::equivalence_test(kv, text, la::equivalence_bounds::symmetric(0.10),
                                   {.design = la::t_test_design::paired});
  std::printf("equivalent within 10 points: %s (p = %.3f)\n", tost.equivalent ? "yes" : "no", tost.p_value);

  auto boot = la::bootstrap_paired_mean(kv, text, {.replicates = 9999, .seed = 7});
  std::printf("paired bootstrap BCa [%+.2f, %+.2f]\n", boot.effect.ci_low, boot.effect.ci_high);
}
