// SPDX-License-Identifier: MIT
// latentaudit: the screen of a cross-model cache map (kv/kv_map.hpp): the attention-output cosine
// of a mapped cache against the receiver's own cache of the same tokens, which the audit records
// per kv_mapped trial (the record's map_cosine) and `map fit` reports on held-out calibration
// documents. Apart from kv_map.hpp so that the trial driver computes it without the fit's Eigen.
// docs/mapping.md "The screen".
#ifndef LATENTAUDIT_KV_MAP_SCREEN_HPP
#define LATENTAUDIT_KV_MAP_SCREEN_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "kv_block.hpp"

namespace latentaudit {

/// @brief The attention-output cosine of a mapped cache against the receiver's own cache of the
/// same tokens — the screen that predicts whether a map keeps what the receiver reads (the study
/// behind the map found it correlated with retention, r = +0.57, where R² was not). For each layer
/// and KV head, the receiver's own keys at the last `probes` positions serve as queries (a query
/// and a key live in one space, and a cache holds no queries); each probe attends causally, with
/// scale 1/√d_k, over the native cache (K, V) and over the mapped one (K', V'), and the cosine of
/// the two attention outputs is averaged over probes, heads and layers. 1 = the mapped cache gives
/// the receiver's attention the same output; ~0 = unrelated.
/// @param mapped the mapped cache (apply_kv_map), every layer of the receiver
/// @param native the receiver's own cache of the same tokens at the same positions
/// @param probes the last positions used as queries (≥ 1; all when larger than the tokens)
/// @throws invalid_argument if the two blocks differ in fingerprint, tokens, positions or layers,
///         carry a token mask, or probes is 0
[[nodiscard]] inline double attention_output_cosine(const kv_block& mapped, const kv_block& native,
                                                    std::int64_t probes = 16) {
  constexpr std::string_view fn = "attention_output_cosine";
  if (!(mapped.fingerprint() == native.fingerprint()) || mapped.n_tokens() != native.n_tokens() ||
      mapped.n_layers() != native.n_layers() || mapped.has_token_mask() || native.has_token_mask() ||
      !std::equal(mapped.positions().begin(), mapped.positions().end(), native.positions().begin()))
    detail::throw_invalid(fn, "mapped",
                          "must be a cache of the native cache's model, tokens, positions and layers");
  if (probes < 1) detail::throw_invalid(fn, "probes", "must be at least 1");
  const auto& f = native.fingerprint();
  const std::int64_t n = native.n_tokens();
  if (n == 0) return 1.0;
  const std::int32_t dk = f.head_dim_k, dv = f.head_dim_v;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dk));
  std::vector<double> q(static_cast<std::size_t>(dk)), wn(static_cast<std::size_t>(n)),
      wm(static_cast<std::size_t>(n));
  double sum = 0.0;
  std::size_t count = 0;
  for (std::size_t l = 0; l < native.n_layers(); ++l)
    for (std::int32_t h = 0; h < f.n_kv_heads; ++h)
      for (std::int64_t t = std::max<std::int64_t>(0, n - probes); t < n; ++t) {
        for (std::int32_t d = 0; d < dk; ++d) q[static_cast<std::size_t>(d)] = native.get(l, false, t, h, d);
        auto softmax = [&](const kv_block& b, std::vector<double>& w) {
          double top = -std::numeric_limits<double>::infinity();
          for (std::int64_t j = 0; j <= t; ++j) {
            double s = 0.0;
            for (std::int32_t d = 0; d < dk; ++d)
              s += q[static_cast<std::size_t>(d)] * b.get(l, false, j, h, d);
            w[static_cast<std::size_t>(j)] = s * scale;
            top = std::max(top, w[static_cast<std::size_t>(j)]);
          }
          double z = 0.0;
          for (std::int64_t j = 0; j <= t; ++j)
            z += (w[static_cast<std::size_t>(j)] = std::exp(w[static_cast<std::size_t>(j)] - top));
          for (std::int64_t j = 0; j <= t; ++j) w[static_cast<std::size_t>(j)] /= z;
        };
        softmax(native, wn);
        softmax(mapped, wm);
        double dot = 0.0, nn = 0.0, nm = 0.0;
        for (std::int32_t d = 0; d < dv; ++d) {
          double on = 0.0, om = 0.0;
          for (std::int64_t j = 0; j <= t; ++j) {
            on += wn[static_cast<std::size_t>(j)] * native.get(l, true, j, h, d);
            om += wm[static_cast<std::size_t>(j)] * mapped.get(l, true, j, h, d);
          }
          dot += on * om;
          nn += on * on;
          nm += om * om;
        }
        sum += nn > 0.0 && nm > 0.0 ? dot / std::sqrt(nn * nm) : (nn == nm ? 1.0 : 0.0);
        ++count;
      }
  return sum / static_cast<double>(count);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_MAP_SCREEN_HPP
