// SPDX-License-Identifier: MIT
// latentaudit: definitions of kv/kv_map.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled): the ridge fits and products in double precision
// (Eigen's LDLT and matrix products), which a translation unit that only relays through a map
// need not instantiate.
#ifndef LATENTAUDIT_KV_IMPL_KV_MAP_INL_HPP
#define LATENTAUDIT_KV_IMPL_KV_MAP_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "../kv_map.hpp"

namespace latentaudit {

namespace detail {

// One layer's features of every token of `b` (f32, keys unrotated): row t = each KV head's key
// then value.
inline void kv_layer_features(const kv_block& b, std::size_t i, Eigen::Ref<Eigen::MatrixXd> out) {
  const auto H = b.n_kv_heads(), dk = b.head_dim_k(), dv = b.head_dim_v();
  for (std::int64_t t = 0; t < b.n_tokens(); ++t) {
    Eigen::Index c = 0;
    for (std::int32_t h = 0; h < H; ++h) {
      for (std::int32_t d = 0; d < dk; ++d) out(t, c++) = b.get(i, false, t, h, d);
      for (std::int32_t d = 0; d < dv; ++d) out(t, c++) = b.get(i, true, t, h, d);
    }
  }
}

// Every present layer's features of a set of blocks, stacked over the blocks' tokens.
inline std::vector<Eigen::MatrixXd> stacked_features(std::span<const kv_block> blocks, std::size_t tokens) {
  const auto& f = blocks.front().fingerprint();
  const auto width = static_cast<Eigen::Index>(f.n_kv_heads) * (f.head_dim_k + f.head_dim_v);
  std::vector<Eigen::MatrixXd> x(blocks.front().n_layers(),
                                 Eigen::MatrixXd(static_cast<Eigen::Index>(tokens), width));
  Eigen::Index row = 0;
  for (const auto& b0 : blocks) {
    auto b = b0.converted(dtype::f32);
    unrotate_keys(b);
    for (std::size_t i = 0; i < b.n_layers(); ++i)
      kv_layer_features(b, i, x[i].middleRows(row, static_cast<Eigen::Index>(b.n_tokens())));
    row += static_cast<Eigen::Index>(b.n_tokens());
  }
  return x;
}

// Ridge fit of Y on X (both uncentred; an intercept): W (in × out), b (out), and the fitted values.
struct ridge_fit {
  Eigen::MatrixXd w;
  Eigen::RowVectorXd b;
};

// The features' side of a ridge fit, factorised once: a design serves every target it is fitted to.
struct ridge_design {
  Eigen::RowVectorXd mx;           // feature means
  Eigen::MatrixXd xc;              // centred features
  Eigen::LDLT<Eigen::MatrixXd> g;  // XcᵀXc + λ·tr(XcᵀXc)/F · I, factorised

  ridge_design(const Eigen::MatrixXd& x, double ridge) : mx(x.colwise().mean()), xc(x.rowwise() - mx) {
    Eigen::MatrixXd gram = xc.transpose() * xc;
    const double scale = std::max(gram.trace() / static_cast<double>(gram.rows()), 1e-300);
    gram.diagonal().array() += ridge * scale;
    g.compute(gram);
  }
  [[nodiscard]] ridge_fit fit(const Eigen::MatrixXd& y) const {
    const Eigen::RowVectorXd my = y.colwise().mean();
    ridge_fit r;
    r.w = g.solve(xc.transpose() * (y.rowwise() - my));
    r.b = my - mx * r.w;
    return r;
  }
};

inline ridge_fit fit_ridge(const Eigen::MatrixXd& x, const Eigen::MatrixXd& y, double ridge) {
  return ridge_design(x, ridge).fit(y);
}

// R² of the columns [c0, c0 + n) of y under the fit.
inline double block_r2(const Eigen::MatrixXd& y, const Eigen::MatrixXd& fitted, Eigen::Index c0,
                       Eigen::Index n) {
  const auto yb = y.middleCols(c0, n);
  const double sst = (yb.rowwise() - yb.colwise().mean()).squaredNorm();
  const double sse = (yb - fitted.middleCols(c0, n)).squaredNorm();
  return sst > 0 ? 1.0 - sse / sst : (sse == 0 ? 1.0 : 0.0);
}

}  // namespace detail

LATENTAUDIT_INLINE kv_map fit_kv_map(std::span<const kv_block> source, std::span<const kv_block> target,
                                     const kv_map_options& o) {
  constexpr std::string_view fn = "fit_kv_map";
  if (source.empty() || source.size() != target.size())
    detail::throw_invalid(fn, "source", "must hold one cache per target cache, at least one");
  if (!(o.ridge > 0.0) || !std::isfinite(o.ridge)) detail::throw_invalid(fn, "options.ridge", "must be > 0");
  std::size_t tokens = 0;
  for (std::size_t c = 0; c < source.size(); ++c) {
    const auto& s = source[c];
    const auto& t = target[c];
    auto whole = [&](const kv_block& b, const model_fingerprint& f, const char* side) {
      if (!(b.fingerprint() == f))
        detail::throw_invalid(fn, side,
                              "must hold caches of one model (cache " + std::to_string(c) + " differs)");
      if (b.n_layers() != static_cast<std::size_t>(f.n_layers) || b.has_token_mask())
        detail::throw_invalid(fn, side,
                              "must hold every layer of every token (cache " + std::to_string(c) + ")");
    };
    whole(s, source.front().fingerprint(), "source");
    whole(t, target.front().fingerprint(), "target");
    if (s.n_tokens() != t.n_tokens() ||
        !std::equal(s.positions().begin(), s.positions().end(), t.positions().begin(), t.positions().end()))
      detail::throw_invalid(fn, "target",
                            "cache " + std::to_string(c) + " must hold the source's tokens at its positions");
    tokens += static_cast<std::size_t>(s.n_tokens());
  }
  const auto& sf = source.front().fingerprint();
  const auto& tf = target.front().fingerprint();
  if (o.top_layers < 1 || o.top_layers > static_cast<std::size_t>(sf.n_layers))
    detail::throw_invalid(
        fn, "options.top_layers",
        "must lie in [1, " + std::to_string(sf.n_layers) + "], got " + std::to_string(o.top_layers));
  if (tokens < 2) detail::throw_invalid(fn, "source", "must hold at least 2 tokens");
  const auto xs = detail::stacked_features(source, tokens);
  const auto ys = detail::stacked_features(target, tokens);
  kv_map m{.source = sf,
           .target = tf,
           .ridge = o.ridge,
           .calibration_sequences = source.size(),
           .calibration_tokens = tokens};
  const auto dk = static_cast<Eigen::Index>(tf.head_dim_k), dv = static_cast<Eigen::Index>(tf.head_dim_v);
  std::vector<detail::ridge_design> single;  // each source layer's design, factorised once
  for (const auto& x : xs) single.emplace_back(x, o.ridge);
  for (std::size_t lt = 0; lt < ys.size(); ++lt) {
    const auto& y = ys[lt];
    std::vector<std::pair<double, std::size_t>> score;  // (−R², source layer): best first
    for (std::size_t ls = 0; ls < xs.size(); ++ls) {
      const auto f = single[ls].fit(y);
      const Eigen::MatrixXd fitted = (xs[ls] * f.w).rowwise() + f.b;
      score.emplace_back(-detail::block_r2(y, fitted, 0, y.cols()), ls);
    }
    std::stable_sort(score.begin(), score.end());
    kv_layer_map lm;
    for (std::size_t k = 0; k < o.top_layers; ++k)
      lm.source_layers.push_back(static_cast<layer_index>(score[k].second));
    std::sort(lm.source_layers.begin(), lm.source_layers.end());
    Eigen::MatrixXd x(y.rows(), 0);
    for (const auto ls : lm.source_layers) {
      Eigen::MatrixXd wider(y.rows(), x.cols() + xs[static_cast<std::size_t>(ls)].cols());
      wider << x, xs[static_cast<std::size_t>(ls)];
      x = std::move(wider);
    }
    const auto f = detail::fit_ridge(x, y, o.ridge);
    const Eigen::MatrixXd fitted = (x * f.w).rowwise() + f.b;
    lm.in = static_cast<std::size_t>(x.cols());
    lm.out = static_cast<std::size_t>(y.cols());
    lm.weight.resize(lm.in * lm.out);
    for (std::size_t r = 0; r < lm.out; ++r)
      for (std::size_t c = 0; c < lm.in; ++c)
        lm.weight[r * lm.in + c] =
            static_cast<float>(f.w(static_cast<Eigen::Index>(c), static_cast<Eigen::Index>(r)));
    lm.bias.resize(lm.out);
    for (std::size_t r = 0; r < lm.out; ++r)
      lm.bias[r] = static_cast<float>(f.b(static_cast<Eigen::Index>(r)));
    for (Eigen::Index h = 0; h < tf.n_kv_heads; ++h) {
      lm.r2_key.push_back(detail::block_r2(y, fitted, h * (dk + dv), dk));
      lm.r2_value.push_back(detail::block_r2(y, fitted, h * (dk + dv) + dk, dv));
    }
    m.layers.push_back(std::move(lm));
  }
  return m;
}

LATENTAUDIT_INLINE kv_block apply_kv_map(const kv_map& m, const kv_block& source) {
  constexpr std::string_view fn = "apply_kv_map";
  check_kv_map(fn, m);
  check_fingerprint(fn, m.source, source.fingerprint());
  if (source.n_layers() != static_cast<std::size_t>(m.source.n_layers) || source.has_token_mask())
    detail::throw_invalid(fn, "source", "must hold every layer of every token");
  const auto x = detail::stacked_features(std::span<const kv_block>(&source, 1),
                                          static_cast<std::size_t>(source.n_tokens()));
  kv_block out = kv_block::all_layers(m.target, source.n_tokens(), dtype::f32);
  std::fill(out.positions().begin(), out.positions().end(), position_t{0});  // the keys below are pre-RoPE
  const auto H = m.target.n_kv_heads, dk = m.target.head_dim_k, dv = m.target.head_dim_v;
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const auto& lm = m.layers[l];
    Eigen::MatrixXd in(source.n_tokens(), static_cast<Eigen::Index>(lm.in));
    Eigen::Index c0 = 0;
    for (const auto ls : lm.source_layers) {
      const auto& xl = x[static_cast<std::size_t>(ls)];
      in.middleCols(c0, xl.cols()) = xl;
      c0 += xl.cols();
    }
    const Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> w(
        lm.weight.data(), static_cast<Eigen::Index>(lm.out), static_cast<Eigen::Index>(lm.in));
    const Eigen::Map<const Eigen::RowVectorXf> b(lm.bias.data(), static_cast<Eigen::Index>(lm.out));
    const Eigen::MatrixXd y = (in * w.cast<double>().transpose()).rowwise() + b.cast<double>();
    for (std::int64_t t = 0; t < source.n_tokens(); ++t) {
      Eigen::Index c = 0;
      for (std::int32_t h = 0; h < H; ++h) {
        for (std::int32_t d = 0; d < dk; ++d) out.set(l, false, t, h, d, static_cast<float>(y(t, c++)));
        for (std::int32_t d = 0; d < dv; ++d) out.set(l, true, t, h, d, static_cast<float>(y(t, c++)));
      }
    }
  }
  set_positions(out, source.positions());  // rotates the keys with the target's RoPE
  return out;
}

LATENTAUDIT_INLINE std::vector<kv_layer_map> evaluate_kv_map(const kv_map& m,
                                                             std::span<const kv_block> source,
                                                             std::span<const kv_block> target) {
  constexpr std::string_view fn = "evaluate_kv_map";
  if (source.empty() || source.size() != target.size())
    detail::throw_invalid(fn, "source", "must hold one cache per target cache, at least one");
  std::size_t tokens = 0;
  std::vector<kv_block> mapped;
  for (std::size_t c = 0; c < source.size(); ++c) {
    check_fingerprint(fn, m.target, target[c].fingerprint());
    if (target[c].n_layers() != static_cast<std::size_t>(m.target.n_layers) || target[c].has_token_mask() ||
        target[c].n_tokens() != source[c].n_tokens())
      detail::throw_invalid(fn, "target",
                            "cache " + std::to_string(c) + " must hold every layer of the source's tokens");
    mapped.push_back(apply_kv_map(m, source[c]));
    tokens += static_cast<std::size_t>(source[c].n_tokens());
  }
  const auto y = detail::stacked_features(target, tokens);
  const auto f = detail::stacked_features(mapped, tokens);
  const auto dk = static_cast<Eigen::Index>(m.target.head_dim_k),
             dv = static_cast<Eigen::Index>(m.target.head_dim_v);
  std::vector<kv_layer_map> out(m.layers.size());
  for (std::size_t l = 0; l < out.size(); ++l) {
    out[l].source_layers = m.layers[l].source_layers;
    for (Eigen::Index h = 0; h < m.target.n_kv_heads; ++h) {
      out[l].r2_key.push_back(detail::block_r2(y[l], f[l], h * (dk + dv), dk));
      out[l].r2_value.push_back(detail::block_r2(y[l], f[l], h * (dk + dv) + dk, dv));
    }
  }
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_IMPL_KV_MAP_INL_HPP
