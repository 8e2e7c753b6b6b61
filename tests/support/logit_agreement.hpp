// SPDX-License-Identifier: MIT
// Test support: how far two engines' logits on the same token ids lie apart (the real-model tests
// compare the reference engine with llama.cpp on one model through this one loop).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include <latentaudit/core/types.hpp>

namespace latentaudit::test {

/// The largest |Δ logit|, the largest |logit| of the first engine, the positions compared and those
/// whose argmax is the same, accumulated over texts.
struct logit_agreement {
  double worst = 0;
  double scale = 0;
  std::size_t rows = 0;
  std::size_t argmax_same = 0;

  /// Prefills `ids` into a fresh sequence of each engine (all logits) and adds their comparison.
  /// Returns false when the two logit tables differ in size (the caller REQUIREs it).
  template <class A, class B>
  [[nodiscard]] bool add(A& a, B& b, std::span<const token_id> ids, std::size_t vocab) {
    const auto sa = a.open_seq();
    const auto sb = b.open_seq();
    const auto x = a.prefill(sa, ids, 0, {.all_logits = true}).logits;
    const auto y = b.prefill(sb, ids, 0, {.all_logits = true}).logits;
    a.close_seq(sa);
    b.close_seq(sb);
    if (x.size() != y.size() || x.size() != ids.size() * vocab) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(x[i]) - y[i]));
      scale = std::max(scale, std::fabs(static_cast<double>(x[i])));
    }
    for (std::size_t r = 0; r < ids.size(); ++r) {
      const auto xr = x.begin() + static_cast<std::ptrdiff_t>(r * vocab);
      const auto yr = y.begin() + static_cast<std::ptrdiff_t>(r * vocab);
      const auto vn = static_cast<std::ptrdiff_t>(vocab);
      argmax_same += std::max_element(xr, xr + vn) - xr == std::max_element(yr, yr + vn) - yr ? 1 : 0;
    }
    rows += ids.size();
    return true;
  }
};

}  // namespace latentaudit::test
