// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/cost.hpp (header-only mode includes this file; compiled mode compiles it
// once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_IMPL_COST_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_COST_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../cost.hpp"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "../../core/detail/check.hpp"
#include "../../core/error.hpp"
#include "../../estimators/betting.hpp"
#include "../../estimators/weighting.hpp"
#include "../detail/arm_roles.hpp"
#include "../detail/record_units.hpp"

namespace latentaudit {

LATENTAUDIT_INLINE double relay_gate_logistic::probability(std::span<const double> x) const {
  constexpr std::string_view fn = "relay_gate_logistic::probability";
  detail::check_same_size(fn, "x", x.size(), "features", features.size());
  detail::check_finite(fn, "x", x);
  if (constant) {
    if (!(*constant == 0.0 || *constant == 1.0))
      detail::throw_invalid(fn, "constant", "must be 0 or 1, got " + number_text(*constant));
    if (!features.empty() || !coefficients.empty())
      detail::throw_invalid(fn, "constant", "a constant model has no features and no coefficients");
    return *constant;
  }
  if (coefficients.empty())
    detail::throw_invalid(fn, "coefficients", "must hold a fitted model (intercept first) or a constant");
  detail::check_same_size(fn, "coefficients", coefficients.size(), "features + 1", features.size() + 1);
  detail::check_finite(fn, "coefficients", coefficients);
  double eta = coefficients[0];
  for (std::size_t j = 0; j < x.size(); ++j) eta += coefficients[j + 1] * x[j];
  return detail::expit(eta);
}

LATENTAUDIT_INLINE double relay_gate_model::gain(std::span<const double> x) const {
  constexpr std::string_view fn = "relay_gate_model::gain";
  detail::check_same_size(fn, "x", x.size(), "features", features.size());
  detail::check_finite(fn, "x", x);
  auto p = [&](const relay_gate_logistic& m, std::string_view which) {
    std::vector<double> sub;
    sub.reserve(m.features.size());
    for (const auto& name : m.features) {
      const auto it = std::find(features.begin(), features.end(), name);
      if (it == features.end())
        detail::throw_invalid(fn, which, "names feature '" + name + "', which is not in features");
      sub.push_back(x[static_cast<std::size_t>(it - features.begin())]);
    }
    return m.probability(sub);
  };
  return p(helps, "helps.features") - p(hurts, "hurts.features");
}

LATENTAUDIT_INLINE bool relay_gate_model::relays(std::span<const double> x) const {
  if (!std::isfinite(cost))
    detail::throw_invalid("relay_gate_model::relays", "cost", "must be finite, got " + number_text(cost));
  return gain(x) > cost;
}

namespace detail {

LATENTAUDIT_INLINE std::string seconds_text(double s) {
  const double a = std::fabs(s);
  if (a >= 1.0) return fmt::format("{:.3g} s", s);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} µs", s * 1e6);
}

LATENTAUDIT_INLINE std::string bytes_text(double b) {
  const double a = std::fabs(b);
  if (a >= 1e9) return fmt::format("{:.3g} GB", b / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g} MB", b / 1e6);
  if (a >= 1e3) return fmt::format("{:.3g} kB", b / 1e3);
  return fmt::format("{:.3g} B", b);
}

LATENTAUDIT_INLINE double median_of(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const std::size_t m = x.size() / 2;
  return x.size() % 2 == 1 ? x[m] : 0.5 * (x[m - 1] + x[m]);
}

LATENTAUDIT_INLINE break_even_solution solve_break_even(double d, double delta_bytes) {
  break_even_solution s;
  if (delta_bytes > 0) {
    if (d > 0) {
      s.region = break_even_region::above;
      s.bandwidth = delta_bytes / d;
    } else {
      s.region = break_even_region::never;
    }
  } else if (delta_bytes < 0) {
    if (d >= 0) {
      s.region = break_even_region::always;
    } else {
      s.region = break_even_region::below;
      s.bandwidth = delta_bytes / d;
    }
  } else {
    s.region = d > 0 ? break_even_region::always : break_even_region::never;
  }
  return s;
}

LATENTAUDIT_INLINE void check_link(std::string_view fn, const link_preset& l) {
  if (!(l.bandwidth_bytes_s > 0) || !std::isfinite(l.bandwidth_bytes_s)) {
    throw_invalid(
        fn, "options.links",
        "must have bandwidths > 0, got " + number_text(l.bandwidth_bytes_s) + " for '" + l.name + "'");
  }
  if (!(l.alpha_s >= 0) || !std::isfinite(l.alpha_s)) {
    throw_invalid(fn, "options.links",
                  "must have alpha >= 0, got " + number_text(l.alpha_s) + " for '" + l.name + "'");
  }
}

LATENTAUDIT_INLINE std::vector<link_preset> links_to_evaluate(std::string_view fn,
                                                              std::span<const trial_record> records,
                                                              const cost_options& o,
                                                              std::vector<std::string>& notes) {
  std::vector<link_preset> links = o.links;
  if (links.empty()) {
    links = link_presets();
    std::vector<std::string> seen;
    for (const auto& r : records) {
      if (r.link.rfind("custom:", 0) != 0) continue;
      if (std::find(seen.begin(), seen.end(), r.link) != seen.end()) continue;
      seen.push_back(r.link);
      try {
        links.push_back(find_link(r.link));
      } catch (const error&) {
        notes.push_back("the records name the link '" + r.link +
                        "', which is not a valid custom link; skipped");
      }
    }
  }
  for (const auto& l : links) check_link(fn, l);
  return links;
}

}  // namespace detail

LATENTAUDIT_INLINE std::vector<model_shape> default_model_shapes() {
  return {{"Llama-3-8B", 32, 8, 128, 2}, {"Llama-3-70B", 80, 8, 128, 2}, {"Qwen2.5-7B", 28, 4, 128, 2}};
}

namespace detail {

LATENTAUDIT_INLINE std::vector<cost_projection_row> cost_projection(const cost_options& o,
                                                                    std::span<const link_preset> links) {
  const auto shapes = o.model_shapes.empty() ? default_model_shapes() : o.model_shapes;
  const std::vector<double> throughputs = o.prefill_tokens_per_s
                                              ? std::vector<double>{*o.prefill_tokens_per_s}
                                              : std::vector<double>{2e3, 1e4, 5e4};
  std::vector<cost_projection_row> rows;
  for (const auto& m : shapes) {
    for (double t : throughputs) {
      cost_projection_row r;
      r.model = m;
      r.kv_bytes_per_token = m.kv_bytes_per_token();
      r.prefill_tokens_per_s = t;
      r.break_even_bandwidth_bytes_s = r.kv_bytes_per_token * t;
      for (const auto& l : links) {
        // Saving for a document of n tokens: n/T − (n·b/β + α); positive for n > α / (1/T − b/β).
        const double per_token = 1.0 / t - r.kv_bytes_per_token / l.bandwidth_bytes_s;
        std::optional<double> n;
        if (per_token > 0) n = l.alpha_s / per_token;
        r.break_even_doc_tokens.emplace_back(l.name, n);
      }
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

LATENTAUDIT_INLINE std::pair<double, double> cost_statement_of(const cost_item_sums& s,
                                                               break_even_region region) {
  const double d = s.base / s.units, db = s.extra_bytes / s.units, f = s.relay_moves / s.units;
  const auto be = solve_break_even(d, db);
  double beta = std::numeric_limits<double>::quiet_NaN();
  if (region == break_even_region::above) {
    beta = be.region == break_even_region::above    ? *be.bandwidth
           : be.region == break_even_region::always ? 0.0
                                                    : std::numeric_limits<double>::infinity();
  } else if (region == break_even_region::below) {
    beta = be.region == break_even_region::below    ? *be.bandwidth
           : be.region == break_even_region::always ? std::numeric_limits<double>::infinity()
                                                    : 0.0;
  }
  const double a = f > 0 && d > 0 ? d / f : (d > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  return {beta, a};
}

LATENTAUDIT_INLINE void run_to_run_pool::add(const trial_record& r) {
  if (r.latency_repeats_s.empty()) return;
  const double tr = r.latency.transfer_s;
  std::vector<double> x{r.latency.receiver_s() - tr};
  for (double v : r.latency_repeats_s) x.push_back(v - tr);
  double m = 0;
  for (double v : x) m += v;
  m /= static_cast<double>(x.size());
  if (!(m > 0)) return;
  for (double v : x) sum_sq += (v / m - 1) * (v / m - 1);
  df += x.size() - 1;
  ++records;
}

LATENTAUDIT_INLINE std::optional<double> run_to_run_pool::cv() const {
  if (df == 0) return std::nullopt;
  return std::sqrt(sum_sq / static_cast<double>(df));
}

LATENTAUDIT_INLINE effect_estimate noisy_clustered_mean(std::span<const double> values,
                                                        std::span<const double> noise_sd,
                                                        std::span<const std::size_t> clusters,
                                                        const clustered_mean_options& o, std::uint32_t tag) {
  constexpr std::string_view fn = "noisy_clustered_mean";
  check_same_size(fn, "noise_sd", noise_sd.size(), "values", values.size());
  check_same_size(fn, "clusters", clusters.size(), "values", values.size());
  if (std::all_of(noise_sd.begin(), noise_sd.end(), [](double s) { return s == 0; }))
    return clustered_mean(values, clusters, o);
  effect_estimate e{.method = "cluster_bootstrap_percentile(item)+run_to_run_perturbation",
                    .estimand = "mean"};
  e.level = o.level;
  e.n_pairs = values.size();
  double sum = 0;
  for (double v : values) sum += v;
  e.estimate = sum / static_cast<double>(values.size());
  // Units grouped by cluster.
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return clusters[a] < clusters[b]; });
  std::vector<std::size_t> starts;
  for (std::size_t k = 0; k < order.size(); ++k)
    if (k == 0 || clusters[order[k]] != clusters[order[k - 1]]) starts.push_back(k);
  const std::size_t g = starts.size();
  if (g < 2) {
    e.status = estimate_status::degenerate;
    return e;
  }
  starts.push_back(order.size());
  auto rng = make_stream({.seed = o.seed, .item = 0, .arm = tag, .replicate = 0});
  std::vector<double> reps(o.replicates);
  for (auto& rep : reps) {
    double s = 0, m = 0;
    for (std::size_t j = 0; j < g; ++j) {
      const std::size_t c = uniform_index(rng, static_cast<std::uint32_t>(g));
      for (std::size_t k = starts[c]; k < starts[c + 1]; ++k) {
        const std::size_t i = order[k];
        s += values[i] + (noise_sd[i] > 0 ? noise_sd[i] * standard_normal(rng) : 0.0);
        m += 1;
      }
    }
    rep = s / m;
  }
  const auto [mean, sd] = mean_sd(reps);
  (void)mean;
  std::sort(reps.begin(), reps.end());
  const double q = (1.0 - o.level) / 2.0;
  const auto nb = static_cast<double>(reps.size());
  const auto lo_i = static_cast<std::size_t>(std::max(0.0, std::ceil(q * nb) - 1));
  const auto hi_i = std::min(reps.size() - 1, static_cast<std::size_t>(std::ceil((1 - q) * nb) - 1));
  e.std_error = sd;
  e.ci_low = reps[lo_i];
  e.ci_high = reps[hi_i];
  e.status = estimate_status::ok;
  return e;
}

// cost_benefit_analysis's option checks (arms already resolved).
LATENTAUDIT_INLINE void check_cost_options(std::string_view fn, const cost_options& o) {
  check_level_replicates(fn, o.level, o.bootstrap_replicates);
  check_positive(fn, "options.margin", o.margin);
  if (!(o.alpha > 0 && o.alpha < 0.5))
    throw_invalid(fn, "options.alpha", "must lie in (0, 0.5), got " + number_text(o.alpha));
  if (o.latency_slo_s) check_positive(fn, "options.latency_slo_s", *o.latency_slo_s);
  if (o.prefill_tokens_per_s) check_positive(fn, "options.prefill_tokens_per_s", *o.prefill_tokens_per_s);
  for (const auto& m : o.model_shapes)
    if (m.layers == 0 || m.kv_heads == 0 || m.head_dim == 0 || m.bytes_per_value == 0)
      throw_invalid(fn, "options.model_shapes", "must have non-zero dimensions, '" + m.name + "' has not");
  if (o.relay_arm.empty() || o.text_arm.empty() || o.relay_arm == o.text_arm) {
    throw_invalid(fn, "options.relay_arm", "and options.text_arm must be non-empty and differ");
  }
}

// The paired need-regime units of cost_benefit_analysis as vectors: receiver-latency saving
// without transfer (text - relay), extra bytes, both arms' correctness, the run-to-run SD of the
// saving, the item of each unit, the arms' mean bytes and relay shares, and sums per item.
struct cost_unit_data {
  std::size_t n = 0;
  std::vector<double> base, extra_bytes, acc_relay, acc_text, noise_sd;
  std::vector<std::size_t> cluster;
  std::vector<std::uint64_t> item_id;
  double bytes_relay = 0, bytes_text = 0, f_relay = 0, f_text = 0, mean_base = 0;
  std::vector<cost_item_sums> item_sums;
};

LATENTAUDIT_INLINE cost_unit_data cost_units_of(std::span<const record_unit* const> units,
                                                std::optional<double> cv_relay,
                                                std::optional<double> cv_text) {
  cost_unit_data u;
  const std::size_t n = units.size();
  const double nn = static_cast<double>(n);
  u.n = n;
  auto& base = u.base;
  auto& extra_bytes = u.extra_bytes;
  auto& acc_relay = u.acc_relay;
  auto& acc_text = u.acc_text;
  auto& noise_sd = u.noise_sd;
  auto& cluster = u.cluster;
  auto& item_id = u.item_id;
  auto& item_sums = u.item_sums;
  base.resize(n);
  extra_bytes.resize(n);
  acc_relay.resize(n);
  acc_text.resize(n);
  noise_sd.assign(n, 0.0);
  cluster.resize(n);
  item_id.resize(n);
  double bytes_relay = 0, bytes_text = 0, f_relay = 0, f_text = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& k = *units[i]->arms[0];
    const auto& t = *units[i]->arms[1];
    base[i] =
        (t.latency.receiver_s() - t.latency.transfer_s) - (k.latency.receiver_s() - k.latency.transfer_s);
    extra_bytes[i] = static_cast<double>(k.bytes) - static_cast<double>(t.bytes);
    acc_relay[i] = k.correct ? 1.0 : 0.0;
    acc_text[i] = t.correct ? 1.0 : 0.0;
    cluster[i] = static_cast<std::size_t>(units[i]->item);
    item_id[i] = units[i]->item;
    bytes_relay += static_cast<double>(k.bytes);
    bytes_text += static_cast<double>(t.bytes);
    f_relay += k.bytes > 0 ? 1.0 : 0.0;
    f_text += t.bytes > 0 ? 1.0 : 0.0;
    // Run-to-run SD of base: each arm's measured receiver latency times its pooled CV.
    const double sr = cv_relay.value_or(0.0) * (k.latency.receiver_s() - k.latency.transfer_s);
    const double st = cv_text.value_or(0.0) * (t.latency.receiver_s() - t.latency.transfer_s);
    noise_sd[i] = std::sqrt(sr * sr + st * st);
    if (i == 0 || units[i]->item != units[i - 1]->item) item_sums.emplace_back();
    auto& s = item_sums.back();
    s.units += 1;
    s.base += base[i];
    s.extra_bytes += extra_bytes[i];
    s.relay_moves += k.bytes > 0 ? 1.0 : 0.0;
    s.noise_var += noise_sd[i] * noise_sd[i];
  }
  u.bytes_relay = bytes_relay / nn;
  u.bytes_text = bytes_text / nn;
  u.f_relay = f_relay / nn;
  u.f_text = f_text / nn;
  double mean_base = 0;
  for (double b : base) mean_base += b;
  u.mean_base = mean_base / nn;
  return u;
}

// The item-bootstrap limits of the break-even bandwidth and fixed latency (S's point values set).
LATENTAUDIT_INLINE void break_even_limits(cost_sensitivity& S, std::span<const cost_item_sums> item_sums,
                                          const cost_options& o) {
  if (item_sums.size() < 2) return;
  {
    const std::size_t g = item_sums.size();
    std::vector<double> betas, alphas;
    auto rng = make_stream({.seed = o.seed, .item = 0, .arm = 0xC057, .replicate = 0});
    for (std::size_t b = 0; b < o.bootstrap_replicates; ++b) {
      cost_item_sums s;
      for (std::size_t j = 0; j < g; ++j) {
        const auto& x = item_sums[uniform_index(rng, static_cast<std::uint32_t>(g))];
        s.units += x.units;
        s.base += x.base;
        s.extra_bytes += x.extra_bytes;
        s.relay_moves += x.relay_moves;
        if (x.noise_var > 0) s.base += std::sqrt(x.noise_var) * standard_normal(rng);
      }
      const auto [beta, a] = cost_statement_of(s, S.region);
      betas.push_back(beta);
      alphas.push_back(a);
    }
    auto limits = [&](std::vector<double>& v) -> std::pair<std::optional<double>, std::optional<double>> {
      std::sort(v.begin(), v.end());
      const double q = (1.0 - o.level) / 2.0;
      const auto lo_i =
          static_cast<std::size_t>(std::max(0.0, std::ceil(q * static_cast<double>(v.size())) - 1));
      const auto hi_i = std::min(
          v.size() - 1, static_cast<std::size_t>(std::ceil((1 - q) * static_cast<double>(v.size())) - 1));
      std::optional<double> lo, hi;
      if (std::isfinite(v[lo_i])) lo = v[lo_i];
      if (std::isfinite(v[hi_i])) hi = v[hi_i];
      return {lo, hi};
    };
    if (S.break_even_bandwidth_bytes_s) {
      const auto [lo, hi] = limits(betas);
      S.break_even_bandwidth_low = lo;
      S.break_even_bandwidth_high = hi;
    }
    if (S.break_even_alpha_s) {
      const auto [lo, hi] = limits(alphas);
      S.break_even_alpha_low = lo;
      S.break_even_alpha_high = hi;
    }
  }
}

// One link's cost of the relay: the receiver latency saved with the link's transfer time, the SLO
// attainment (with a latency SLO), the break-even, and the link's verdict.
LATENTAUDIT_INLINE link_cost cost_on_link(const link_preset& l, std::span<const record_unit* const> units,
                                          const cost_unit_data& u, const clustered_mean_options& cm,
                                          const betting_options& bo, const effect_estimate& acc_e,
                                          const effect_estimate& bytes_e, const cost_options& o) {
  const std::size_t n = u.n;
  const double nn = static_cast<double>(n);
  link_cost c;
  c.link = l;
  c.units = n;
  std::vector<double> saved(n), relay_s(n), text_s(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& k = *units[i]->arms[0];
    const auto& t = *units[i]->arms[1];
    relay_s[i] = k.latency.receiver_s() - k.latency.transfer_s + l.transfer_seconds(k.bytes);
    text_s[i] = t.latency.receiver_s() - t.latency.transfer_s + l.transfer_seconds(t.bytes);
    saved[i] = text_s[i] - relay_s[i];
  }
  c.saved_s = noisy_clustered_mean(saved, u.noise_sd, u.cluster, cm, 0xC0DE);
  c.saved_s.estimand = "saved_seconds";
  c.extra_bytes = bytes_e;
  c.accuracy_difference = acc_e;
  if (o.latency_slo_s) {
    c.latency_slo_s = *o.latency_slo_s;
    std::vector<double> met_relay(n), met_text(n);
    double mr = 0, mt = 0;
    for (std::size_t i = 0; i < n; ++i) {
      met_relay[i] = relay_s[i] <= *o.latency_slo_s ? 1.0 : 0.0;
      met_text[i] = text_s[i] <= *o.latency_slo_s ? 1.0 : 0.0;
      mr += met_relay[i];
      mt += met_text[i];
    }
    c.slo_met_relay = mr / nn;
    c.slo_met_text = mt / nn;
    c.slo_difference = clustered_paired_difference(u.item_id, met_relay, met_text, bo);
    c.slo_difference->estimand = "slo_attainment_difference";
  }
  const double d = u.mean_base + l.alpha_s * (u.f_text - u.f_relay);
  const auto be = solve_break_even(d, u.bytes_relay - u.bytes_text);
  c.region = be.region;
  c.break_even_bandwidth_bytes_s = be.bandwidth;
  if (u.f_relay > 0 && c.saved_s.estimate > 0) c.break_even_extra_alpha_s = c.saved_s.estimate / u.f_relay;
  if (has_interval(c.saved_s)) {
    const bool saves = c.saved_s.ci_low > 0, costs = c.saved_s.ci_high < 0;
    const bool non_inferior = acc_e.ci_low > -o.margin, inferior = acc_e.ci_high < -o.margin;
    const bool slo_ok = !c.slo_difference || c.slo_difference->ci_low > -o.margin;
    const bool slo_bad = c.slo_difference && c.slo_difference->ci_high < -o.margin;
    if (saves && non_inferior && slo_ok) {
      c.pays = verdict::yes;
    } else if (costs || inferior || slo_bad) {
      c.pays = verdict::no;
    }
  }
  return c;
}

// The link-free statement of cost_benefit_analysis: where the relay saves latency (break-even
// bandwidth and fixed latency, with their limits), the accuracy difference, and the links it pays on.
LATENTAUDIT_INLINE std::string cost_statement(const cost_sensitivity& S, std::span<const link_cost> links,
                                              const effect_estimate& acc_e, double margin) {
  std::string yes_links, no_links;
  for (const auto& c : links) {
    if (c.pays == verdict::yes) yes_links += (yes_links.empty() ? "" : ", ") + c.link.name;
    if (c.pays == verdict::no) no_links += (no_links.empty() ? "" : ", ") + c.link.name;
  }
  auto gbs = [](const std::optional<double>& b) {
    return b ? fmt::format("{:.3g} GB/s", *b / 1e9) : std::string("unbounded");
  };
  std::string be_text;
  switch (S.region) {
    case break_even_region::above:
      be_text = fmt::format("the relay saves receiver latency at bandwidths above {} [{}, {}]",
                            gbs(S.break_even_bandwidth_bytes_s),
                            S.break_even_bandwidth_low ? gbs(S.break_even_bandwidth_low) : std::string("0"),
                            gbs(S.break_even_bandwidth_high));
      break;
    case break_even_region::below:
      be_text = fmt::format("the relay saves receiver latency only at bandwidths below {} [{}, {}]",
                            gbs(S.break_even_bandwidth_bytes_s),
                            S.break_even_bandwidth_low ? gbs(S.break_even_bandwidth_low) : std::string("0"),
                            gbs(S.break_even_bandwidth_high));
      break;
    case break_even_region::always:
      be_text = "the relay saves receiver latency at every bandwidth";
      break;
    case break_even_region::never:
      be_text = "the relay saves receiver latency at no bandwidth";
      break;
  }
  if (S.break_even_alpha_s) {
    be_text += fmt::format(
        "; with unlimited bandwidth it affords up to {} [{}, {}] of fixed latency per relay",
        seconds_text(*S.break_even_alpha_s),
        S.break_even_alpha_low ? seconds_text(*S.break_even_alpha_low) : std::string("0"),
        S.break_even_alpha_high ? seconds_text(*S.break_even_alpha_high) : std::string("unbounded"));
  }
  return fmt::format(
      "{}; accuracy relay − text {:+.3f} [{:+.3f}, {:+.3f}] (margin {:.3g}); relay pays on {}{}", be_text,
      acc_e.estimate, acc_e.ci_low, acc_e.ci_high, margin, yes_links.empty() ? "no link" : yes_links,
      no_links.empty() ? std::string() : "; does not pay on " + no_links);
}

}  // namespace detail

LATENTAUDIT_INLINE cost_benefit_result cost_benefit_analysis(std::span<const trial_record> records,
                                                             const cost_options& options) {
  constexpr std::string_view fn = "cost_benefit_analysis";
  // The arms answer by label, else by arm_kind (detail::resolve_arm: the resolver of every analysis).
  std::vector<std::string> arm_notes;
  cost_options o = options;
  o.relay_arm = detail::resolve_arm_or_name(records, o.relay_arm, arm_notes);
  o.text_arm = detail::resolve_arm_or_name(records, o.text_arm, arm_notes);
  detail::check_cost_options(fn, o);
  cost_benefit_result out;
  out.notes = std::move(arm_notes);
  const auto links = detail::links_to_evaluate(fn, records, o, out.notes);
  out.projection = detail::cost_projection(o, links);
  out.primary_link = detail::cost_link_of(records, o.primary_link);
  // Run-to-run timing variation, pooled per arm over the records with repeated timings.
  detail::run_to_run_pool pool_relay, pool_text;
  for (const auto& r : records) {
    if (r.arm == o.relay_arm) pool_relay.add(r);
    if (r.arm == o.text_arm) pool_text.add(r);
  }
  const auto cv_relay = pool_relay.cv(), cv_text = pool_text.cv();
  const bool perturbed = cv_relay || cv_text;
  const std::string timing_note =
      perturbed
          ? fmt::format(
                "run-to-run timing variation is in the CIs: {} repeated records ({} relay, {} text) give a "
                "pooled run-to-run CV of the receiver latency of {:.3g} (relay) and {:.3g} (text); each "
                "bootstrap replicate perturbs every resampled unit's latency by a normal draw with that "
                "CV (conservative: the single timings already carry this noise once); a shift shared "
                "by a whole run is not estimable from one run",
                pool_relay.records + pool_text.records, pool_relay.records, pool_text.records,
                cv_relay.value_or(0.0), cv_text.value_or(0.0))
          : std::string(
                "each (item, seed, arm) carries one timing and none was repeated: run-to-run timing "
                "variation of the same trial is in the CIs only as far as the single timings carry "
                "it (the item bootstrap covers variation between documents and queries)");
  const std::string method_base =
      "need regime, paired per (item, seed): text − relay receiver latency with transfer recomputed for the "
      "link, cluster bootstrap (item) percentile; accuracy relay − text: betting over items, " +
      fmt::format("one-sided {:.3g} per side", o.alpha) + "; " + timing_note;
  const finding_key statement_key{finding_kind::cost_relay_pays};
  auto link_key = [](const std::string& link) {
    return finding_key{finding_kind::cost_relay_pays_on_link, {.link = link}};
  };
  const std::vector<arm_cell> cost_reads{{"need", o.relay_arm}, {"need", o.text_arm}};
  auto all_inconclusive = [&](const std::string& why) {
    out.missing = why;
    out.sensitivity.timing_note = timing_note;
    out.sensitivity.repeated_records = pool_relay.records + pool_text.records;
    out.sensitivity.run_to_run_cv_relay = cv_relay;
    out.sensitivity.run_to_run_cv_text = cv_text;
    out.findings.push_back(detail::inconclusive_finding(statement_key, method_base, why));
    out.findings.push_back(detail::inconclusive_finding(link_key(out.primary_link), method_base, why));
    for (auto& f : out.findings) f.reads = cost_reads;
    return out;
  };
  for (const auto& arm : {o.relay_arm, o.text_arm}) {
    if (!detail::has_arm(records, arm))
      return all_inconclusive("arm '" + arm + "' is absent from the records");
  }
  const std::string arms[] = {o.relay_arm, o.text_arm};
  const auto all = detail::group_units(fn, records, arms, o.units);
  std::vector<const detail::record_unit*> units;
  std::size_t paired = 0;
  for (const auto& u : all) {
    if (!u.has({0, 1})) continue;
    ++paired;
    if (u.arms[0]->regime == "need") units.push_back(&u);
  }
  if (paired == 0) {
    return all_inconclusive("no (item, seed) unit has both '" + o.relay_arm + "' and '" + o.text_arm + "'");
  }
  if (units.empty()) return all_inconclusive("no paired unit is in the need regime");
  const auto U = detail::cost_units_of(units, cv_relay, cv_text);
  const std::size_t n = U.n;
  const detail::clustered_mean_options cm{
      .level = o.level, .replicates = o.bootstrap_replicates, .seed = o.seed};
  const betting_options bo{.alpha_lower = o.alpha, .alpha_upper = o.alpha, .horizon = o.horizon};
  auto acc_e = clustered_paired_difference(U.item_id, U.acc_relay, U.acc_text, bo);
  acc_e.estimand = "accuracy_difference";
  auto bytes_e = detail::clustered_mean(U.extra_bytes, U.cluster, cm);
  bytes_e.estimand = "extra_bytes";
  // --- The link-free statement (α = 0), with the item bootstrap of β* and α*.
  auto& S = out.sensitivity;
  S.units = n;
  S.items = U.item_sums.size();
  S.timing_note = timing_note;
  S.repeated_records = pool_relay.records + pool_text.records;
  S.run_to_run_cv_relay = cv_relay;
  S.run_to_run_cv_text = cv_text;
  S.saved_without_transfer_s = detail::noisy_clustered_mean(U.base, U.noise_sd, U.cluster, cm, 0xC0DE);
  S.saved_without_transfer_s.estimand = "saved_seconds_without_transfer";
  S.extra_bytes = bytes_e;
  S.accuracy_difference = acc_e;
  const auto be0 = detail::solve_break_even(U.mean_base, U.bytes_relay - U.bytes_text);
  S.region = be0.region;
  S.break_even_bandwidth_bytes_s = be0.bandwidth;
  if (U.f_relay > 0 && U.mean_base > 0) S.break_even_alpha_s = U.mean_base / U.f_relay;
  detail::break_even_limits(S, U.item_sums, o);
  // --- Per link.
  for (const auto& l : links)
    out.links.push_back(detail::cost_on_link(l, units, U, cm, bo, acc_e, bytes_e, o));
  // --- The statement's verdict: the links' common verdict, else inconclusive.
  bool agree = !out.links.empty();
  for (const auto& c : out.links) agree = agree && c.pays == out.links.front().pays;
  S.pays = agree ? out.links.front().pays : verdict::inconclusive;
  S.statement = detail::cost_statement(S, out.links, acc_e, o.margin);
  out.findings.push_back(finding{.id = statement_key.id(),
                                 .answer = S.pays,
                                 .estimate = S.saved_without_transfer_s.estimate,
                                 .ci_low = S.saved_without_transfer_s.ci_low,
                                 .ci_high = S.saved_without_transfer_s.ci_high,
                                 .method = method_base + "; estimate: saving without transfer time; verdict: "
                                                         "the links' common verdict, else inconclusive",
                                 .n = n,
                                 .detail = S.statement,
                                 .reads = cost_reads,
                                 .key = statement_key});
  for (auto& c : out.links) {
    c.reported = c.link.name == out.primary_link || c.pays != S.pays;
    if (!c.reported) continue;
    const std::string slo_text = c.slo_difference
                                     ? fmt::format("; SLO {} met by {:.0f} % (relay) vs {:.0f} % (text)",
                                                   detail::seconds_text(*c.latency_slo_s),
                                                   100 * *c.slo_met_relay, 100 * *c.slo_met_text)
                                     : std::string();
    out.findings.push_back(finding{
        .id = link_key(c.link.name).id(),
        .answer = c.pays,
        .estimate = c.saved_s.estimate,
        .ci_low = c.saved_s.ci_low,
        .ci_high = c.saved_s.ci_high,
        .method = method_base + "; accuracy non-inferiority margin " + number_text(o.margin),
        .n = n,
        .detail = fmt::format("on {} the relay saves {} [{}, {}] of receiver latency, moves {} more{}{}",
                              c.link.name, detail::seconds_text(c.saved_s.estimate),
                              detail::seconds_text(c.saved_s.ci_low), detail::seconds_text(c.saved_s.ci_high),
                              detail::bytes_text(U.bytes_relay - U.bytes_text), slo_text,
                              c.pays == S.pays
                                  ? std::string(" (as the statement)")
                                  : std::string(" (differs from the statement: ") + verdict_name(c.pays) +
                                        " here, " + verdict_name(S.pays) + " overall)"),
        .reads = cost_reads,
        .key = link_key(c.link.name)});
  }
  return out;
}

namespace detail {

LATENTAUDIT_INLINE Eigen::VectorXd ridge_logistic(std::string_view fn, const Eigen::MatrixXd& x,
                                                  std::span<const double> y, double ridge) {
  const Eigen::Index n = x.rows(), p = x.cols() + 1;
  Eigen::MatrixXd x1(n, p);
  x1.col(0).setOnes();
  x1.rightCols(p - 1) = x;
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(p);
  Eigen::VectorXd pen = Eigen::VectorXd::Constant(p, ridge);
  pen(0) = 0;
  for (int it = 0; it < 200; ++it) {
    const Eigen::VectorXd eta = x1 * beta;
    Eigen::VectorXd mu(n), w(n), r(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      mu(i) = expit(eta(i));
      w(i) = std::max(mu(i) * (1 - mu(i)), 1e-12);
      r(i) = y[static_cast<std::size_t>(i)] - mu(i);
    }
    Eigen::MatrixXd h = x1.transpose() * w.asDiagonal() * x1;
    h.diagonal() += pen;
    const Eigen::VectorXd g = x1.transpose() * r - pen.cwiseProduct(beta);
    const Eigen::VectorXd step = h.ldlt().solve(g);
    if (!step.allFinite()) break;
    beta += step;
    if (step.norm() < 1e-10 * (1 + beta.norm())) return beta;
  }
  throw_numerical(fn, "the penalized gate model did not converge");
}

LATENTAUDIT_INLINE void check_gate_options(std::string_view fn, const relay_gate_options& o) {
  if (!(std::isfinite(o.cost) && o.cost >= -1.0 && o.cost <= 1.0))
    throw_invalid(fn, "options.cost", "must be finite and lie in [-1, 1], got " + number_text(o.cost));
  check_positive(fn, "options.margin", o.margin);
  check_positive(fn, "options.skip_margin", o.skip_margin);
  check_positive(fn, "options.ridge", o.ridge);
  check_level_replicates(fn, o.level, o.bootstrap_replicates);
  if (!(o.alpha > 0 && o.alpha < 0.5))
    throw_invalid(fn, "options.alpha", "must lie in (0, 0.5), got " + number_text(o.alpha));
  if (o.folds < 2) throw_invalid(fn, "options.folds", "must be at least 2, got " + std::to_string(o.folds));
  if (o.relay_arm.empty() || o.control_arm.empty() || o.relay_arm == o.control_arm) {
    throw_invalid(fn, "options.relay_arm", "and options.control_arm must be non-empty and differ");
  }
}

LATENTAUDIT_INLINE gate_design select_gate_features(const std::vector<gate_candidate>& cand,
                                                    std::span<const std::size_t> rows, std::size_t n) {
  gate_design d;
  d.xs.resize(static_cast<Eigen::Index>(rows.size()), 0);
  for (std::size_t j = 0; j < cand.size(); ++j) {
    const auto& c = cand[j];
    if (c.missing > 0) {
      d.dropped.push_back(c.name + fmt::format(": missing on {} of {} units", c.missing, n));
      continue;
    }
    std::vector<double> v;
    for (auto i : rows) v.push_back(c.values[i]);
    const auto [m, s] = mean_sd(v);
    if (!(s > 0)) {
      d.dropped.push_back(c.name + ": constant among training units");
      continue;
    }
    Eigen::MatrixXd trial(d.xs.rows(), d.xs.cols() + 1);
    trial.leftCols(d.xs.cols()) = d.xs;
    for (std::size_t r = 0; r < rows.size(); ++r)
      trial(static_cast<Eigen::Index>(r), d.xs.cols()) = (v[r] - m) / s;
    Eigen::MatrixXd with1(trial.rows(), trial.cols() + 1);
    with1.col(0).setOnes();
    with1.rightCols(trial.cols()) = trial;
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(with1);
    qr.setThreshold(1e-9);
    if (qr.rank() < with1.cols()) {
      d.dropped.push_back(c.name + ": collinear with the features before it");
      continue;
    }
    d.xs = std::move(trial);
    d.kept.push_back(j);
    d.mean.push_back(m);
    d.sd.push_back(s);
  }
  return d;
}

LATENTAUDIT_INLINE relay_gate_logistic fit_gate_logistic(std::string_view fn, const gate_design& d,
                                                         const std::vector<gate_candidate>& cand,
                                                         std::span<const double> label,
                                                         std::span<const std::size_t> rows, double ridge,
                                                         std::string& why) {
  relay_gate_logistic out;
  double pos = 0;
  for (auto i : rows) pos += label[i];
  const double nr = static_cast<double>(rows.size());
  if (pos == 0 || pos == nr) {  // one class: exactly 0 or 1 (no logistic fit exists)
    out.constant = pos == 0 ? 0.0 : 1.0;
    return out;
  }
  std::vector<double> y;
  for (auto i : rows) y.push_back(label[i]);
  const std::size_t p = d.kept.size();
  Eigen::VectorXd beta(static_cast<Eigen::Index>(p + 1));
  if (p == 0) {
    beta(0) = std::log(pos / (nr - pos));
  } else {
    try {
      beta = logistic_regression(d.xs, y).coefficients;
    } catch (const numerical_error&) {
      try {
        beta = ridge_logistic(fn, d.xs, y, ridge);
        out.penalized = true;
      } catch (const numerical_error& e) {
        why = std::string("the gate model could not be fitted: ") + e.what();
        return out;
      }
    } catch (const invalid_argument& e) {
      why = std::string("the gate model could not be fitted: ") + e.what();
      return out;
    }
  }
  out.coefficients.assign(p + 1, 0.0);
  out.coefficients[0] = beta(0);
  for (std::size_t j = 0; j < p; ++j) {
    const double b = beta(static_cast<Eigen::Index>(j + 1));
    out.features.push_back(cand[d.kept[j]].name);
    out.coefficients[j + 1] = b / d.sd[j];
    out.coefficients[0] -= b * d.mean[j] / d.sd[j];
  }
  return out;
}

LATENTAUDIT_INLINE gate_fit fit_gate_on(std::string_view fn, const std::vector<gate_candidate>& cand,
                                        std::span<const double> helps, std::span<const double> hurts,
                                        std::span<const std::size_t> rows, const relay_gate_options& o) {
  gate_fit out;
  out.model.cost = o.cost;
  const std::size_t n = helps.size();
  auto d = select_gate_features(cand, rows, n);
  out.dropped = std::move(d.dropped);
  std::string why;
  out.model.helps = fit_gate_logistic(fn, d, cand, helps, rows, o.ridge, why);
  if (why.empty()) out.model.hurts = fit_gate_logistic(fn, d, cand, hurts, rows, o.ridge, why);
  if (!why.empty()) {
    out.why = std::move(why);
    return out;
  }
  out.model.penalized = out.model.helps.penalized || out.model.hurts.penalized;
  // Both fitted models carry the design's features; a constant model carries none.
  if (!out.model.helps.constant || !out.model.hurts.constant) {
    out.kept = d.kept;
    for (auto j : d.kept) out.model.features.push_back(cand[j].name);
  }
  return out;
}

// One request of the relay gate: a unit with the relay arm in `slot` (0, or an extra relay arm).
struct gate_request {
  const record_unit* unit;
  std::size_t slot;
  const record_unit* operator->() const noexcept { return unit; }
  const record_unit& operator*() const noexcept { return *unit; }
};

// The gate's requests: every unit with the relay and control arms (slot 0), plus one request per
// extra relay arm present on such a unit; in the units' order (by item).
LATENTAUDIT_INLINE std::vector<gate_request> gate_requests(std::span<const record_unit> all,
                                                           std::size_t n_arms) {
  std::vector<gate_request> units;
  for (const auto& u : all) {
    if (!u.has({0, 1})) continue;
    units.push_back({&u, 0});
    for (std::size_t e = 3; e < n_arms; ++e)
      if (u.arms[e] != nullptr) units.push_back({&u, e});
  }
  return units;
}

// The gate's candidate features (only what a serving stack knows before the transfer) and labels
// (relay helps: d = +1, hurts: d = -1, with d = relay correct - fallback correct) of each request.
struct gate_data {
  std::vector<gate_candidate> cand;
  std::vector<double> helps, hurts;
};

LATENTAUDIT_INLINE gate_data gate_features(std::span<const gate_request> units) {
  const std::size_t n = units.size();
  // Candidate features: only what a serving stack knows before the transfer.
  // cache_age_versions (document versions the cache is behind) and prompt_overlap (share of A's
  // document keys also in B's own prompt) are covariates; drift_steps (the sender's fine-tuning
  // distance, 0 for a sender with B's fingerprint) is the relay record's. A candidate missing on
  // some unit (older records) is dropped with the reason, as before.
  gate_data g;
  auto& cand = g.cand;
  cand = {{"doc_tokens", std::vector<double>(n), 0},         {"own_tokens", std::vector<double>(n), 0},
          {"cache_age_versions", std::vector<double>(n), 0}, {"prompt_overlap", std::vector<double>(n), 0},
          {"cache_bytes", std::vector<double>(n), 0},        {"fingerprint_match", std::vector<double>(n), 0},
          {"drift_steps", std::vector<double>(n), 0}};
  constexpr std::size_t n_covariates = 4;  // the first candidates, read from the covariates
  // Labels, with d = relay correct − fallback correct: helps (d = +1) and hurts (d = −1).
  auto& helps = g.helps;
  auto& hurts = g.hurts;
  helps.resize(n);
  hurts.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& k = *units[i]->arms[units[i].slot];
    const auto& c = *units[i]->arms[1];
    for (std::size_t j = 0; j < n_covariates; ++j) {
      auto v = k.covariate_value(cand[j].name);
      if (!v) v = c.covariate_value(cand[j].name);
      if (v)
        cand[j].values[i] = *v;
      else
        ++cand[j].missing;
    }
    cand[4].values[i] = static_cast<double>(k.bytes);
    const bool fingerprints = !k.sender_fingerprint.empty() && !k.receiver_fingerprint.empty();
    if (fingerprints)
      cand[5].values[i] = k.sender_fingerprint == k.receiver_fingerprint ? 1.0 : 0.0;
    else
      ++cand[5].missing;
    if (k.drift_steps)
      cand[6].values[i] = *k.drift_steps;
    else if (fingerprints && k.sender_fingerprint == k.receiver_fingerprint)
      cand[6].values[i] = 0.0;  // the receiver's own model: no drift
    else
      ++cand[6].missing;
    helps[i] = k.correct && !c.correct ? 1.0 : 0.0;
    hurts[i] = !k.correct && c.correct ? 1.0 : 0.0;
  }
  return g;
}

// The gate's population: requests per regime (the relay record's) and per extra relay arm.
LATENTAUDIT_INLINE void count_gate_population(relay_gate_result& out, std::span<const gate_request> units,
                                              std::span<const std::string> arms) {
  out.requests = units.size();
  {
    std::vector<std::string> regimes;
    for (const auto& u : units) regimes.push_back(u->arms[u.slot]->regime);
    std::sort(regimes.begin(), regimes.end());
    for (const auto& r : regimes) {
      if (out.requests_by_regime.empty() || out.requests_by_regime.back().name != r)
        out.requests_by_regime.push_back({r, 0});
      ++out.requests_by_regime.back().requests;
    }
    for (std::size_t e = 3; e < arms.size(); ++e) {
      std::size_t k = 0;
      for (const auto& u : units) k += u.slot == e ? 1 : 0;
      out.extra_relay_requests.push_back({arms[e], k});
    }
  }
}

// The sentence that says which requests the gate decides and what it is compared with.
LATENTAUDIT_INLINE std::string gate_population_text(const relay_gate_result& out,
                                                    const relay_gate_options& o) {
  {
    std::string regimes, extra;
    for (const auto& r : out.requests_by_regime)
      regimes += fmt::format("{}{} {}", regimes.empty() ? "" : ", ", r.requests,
                             r.name.empty() ? "(no regime)" : r.name);
    std::size_t n_extra = 0;
    for (const auto& e : out.extra_relay_requests) {
      n_extra += e.requests;
      extra += fmt::format("{}{} {}", extra.empty() ? "" : ", ", e.name, e.requests);
    }
    return fmt::format(
        "The gate decides {} requests on {} items (by regime: {}): every (item, seed) unit with '{}' "
        "and '{}'{}; when it does not relay, the receiver falls back to '{}', and always_relay, "
        "never_relay (= '{}') and always_text (where every request has '{}') are evaluated on these "
        "same requests.",
        out.requests, out.items, regimes, o.relay_arm, o.control_arm,
        n_extra == 0 ? std::string(", no extra relays")
                     : fmt::format(", plus {} extra relays of those units ({})", n_extra, extra),
        o.control_arm, o.control_arm, o.text_arm.empty() ? std::string("a text arm") : o.text_arm);
  }
}

// Each request's fold: its item's rank in `order` (items by their uniform) modulo `folds`.
LATENTAUDIT_INLINE std::vector<std::size_t> gate_folds(
    std::span<const gate_request> units, std::span<const std::pair<double, std::uint64_t>> order,
    std::size_t folds) {
  const std::size_t n = units.size();
  std::vector<std::size_t> fold_of(n);
  {
    std::vector<std::pair<std::uint64_t, std::size_t>> fold_by_item;
    for (std::size_t r = 0; r < order.size(); ++r) fold_by_item.emplace_back(order[r].second, r % folds);
    std::sort(fold_by_item.begin(), fold_by_item.end());
    for (std::size_t i = 0; i < n; ++i)
      fold_of[i] = std::lower_bound(fold_by_item.begin(), fold_by_item.end(),
                                    std::pair<std::uint64_t, std::size_t>{units[i]->item, 0})
                       ->second;
  }
  return fold_of;
}

// The held-out policies of the gate (gate, always_relay, never_relay, always_text) from the
// cross-fitted decisions `relay`, the gate's accuracy against always-relay, the share not relayed and
// the bytes saved; returns the bytes a skipped relay saves, summed (> 0: skipping saves bytes).
LATENTAUDIT_INLINE double gate_held_out(relay_gate_result& out, std::span<const gate_request> units,
                                        std::span<const char> relay, const relay_gate_options& o) {
  const std::size_t n = units.size();
  std::vector<double> g_acc(n), g_bytes(n), r_acc(n), r_bytes(n), c_acc(n), c_bytes(n), t_acc(n), t_bytes(n),
      saved(n), skip(n);
  std::vector<std::size_t> cl(n);
  std::vector<std::uint64_t> item_id(n);
  std::size_t relayed = 0;
  bool text_ok = !o.text_arm.empty();
  double skip_bytes = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& u = *units[i];
    const auto& k = *u.arms[units[i].slot];
    const auto& c = *u.arms[1];
    relayed += relay[i] ? 1 : 0;
    r_acc[i] = k.correct ? 1.0 : 0.0;
    r_bytes[i] = static_cast<double>(k.bytes);
    c_acc[i] = c.correct ? 1.0 : 0.0;
    c_bytes[i] = static_cast<double>(c.bytes);
    g_acc[i] = relay[i] ? r_acc[i] : c_acc[i];
    g_bytes[i] = relay[i] ? r_bytes[i] : c_bytes[i];
    saved[i] = r_bytes[i] - g_bytes[i];
    skip[i] = relay[i] ? 0.0 : 1.0;
    skip_bytes += r_bytes[i] - c_bytes[i];
    cl[i] = static_cast<std::size_t>(u.item);
    item_id[i] = u.item;
    if (u.arms[2] == nullptr) {
      text_ok = false;
    } else {
      t_acc[i] = u.arms[2]->correct ? 1.0 : 0.0;
      t_bytes[i] = static_cast<double>(u.arms[2]->bytes);
    }
  }
  const clustered_mean_options cm{.level = o.level, .replicates = o.bootstrap_replicates, .seed = o.seed};
  auto policy = [&](std::string name, bool available, const std::vector<double>& a,
                    const std::vector<double>& b, double rate) {
    policy_value v;
    v.name = std::move(name);
    v.available = available;
    v.relay_rate = rate;
    if (available) {
      v.accuracy = clustered_mean(a, cl, cm);
      v.bytes = clustered_mean(b, cl, cm);
    } else {
      v.accuracy.status = v.bytes.status = estimate_status::degenerate;
    }
    return v;
  };
  const double rate = static_cast<double>(relayed) / static_cast<double>(n);
  out.policies.push_back(policy("gate", true, g_acc, g_bytes, rate));
  out.policies.push_back(policy("always_relay", true, r_acc, r_bytes, 1.0));
  out.policies.push_back(policy("never_relay", true, c_acc, c_bytes, 0.0));
  out.policies.push_back(policy("always_text", text_ok, t_acc, t_bytes, 0.0));
  const betting_options bo{.alpha_lower = o.alpha, .alpha_upper = o.alpha, .horizon = o.horizon};
  out.accuracy_vs_always_relay = clustered_paired_difference(item_id, g_acc, r_acc, bo);
  out.accuracy_vs_always_relay.estimand = "accuracy_gate_minus_always_relay";
  {
    const std::vector<double> zero(n, 0.0);
    const auto items_skip = item_mean_differences(item_id, skip, zero);
    const auto iv = bounded_mean_interval(items_skip, 0.0, 1.0, bo);
    auto& s = out.skip_share;
    s.method = "betting_items";
    s.estimand = "share_not_relayed";
    s.estimate = iv.estimate;
    s.ci_low = iv.low;
    s.ci_high = iv.high;
    s.level = 1.0 - 2.0 * o.alpha;
    s.df = static_cast<double>(items_skip.size());
    s.n_pairs = n;
  }
  out.bytes_saved = clustered_mean(saved, cl, cm);
  out.bytes_saved.estimand = "bytes_saved";
  return skip_bytes;
}

// The gate's two findings, one claim each (issue 52 item 5): whether the gate keeps always-relay's
// accuracy (gate.not_worse_than_always_relay) and whether it skips relays at all
// (gate.saves_relays). One finding used to carry both, and its "no" read as a failing gate where
// relay never hurts and the gate rightly relays every request.
LATENTAUDIT_INLINE void add_gate_findings(relay_gate_result& out, const relay_gate_options& o,
                                          const std::string& method, double rate, double skip_bytes) {
  const auto& a = out.accuracy_vs_always_relay;
  const auto& s = out.skip_share;
  const bool enough = out.held_out_items >= o.min_held_out_items;
  const std::string too_few =
      enough ? std::string()
             : fmt::format("; inconclusive: {} held-out items, at least {} are needed for a verdict",
                           out.held_out_items, o.min_held_out_items);
  const std::string base = fmt::format(
      "cross-fitted over {} items ({} folds): the gate (relay when the predicted gain over '{}' exceeds "
      "{:.3g}) relays {:.0f} % of {} held-out requests, accuracy vs always-relay {} (margin {:.3g}), share "
      "not relayed {}, bytes saved per request {} [{}, {}]",
      out.held_out_items, out.folds, out.fallback, o.cost, 100 * rate, out.held_out_units,
      detail::estimate_text(a), o.margin, detail::estimate_text(s),
      detail::bytes_text(out.bytes_saved.estimate), detail::bytes_text(out.bytes_saved.ci_low),
      detail::bytes_text(out.bytes_saved.ci_high));
  verdict va = verdict::inconclusive, vs = verdict::inconclusive;
  if (enough) {
    va = a.ci_low > -o.margin ? verdict::yes : a.ci_high < -o.margin ? verdict::no : verdict::inconclusive;
    vs = s.ci_low > 0 && skip_bytes > 0 ? verdict::yes
         : s.ci_high < o.skip_margin    ? verdict::no
                                        : verdict::inconclusive;
  }
  const char* a_says = va == verdict::yes  ? ": the gate keeps always-relay's accuracy within the margin"
                       : va == verdict::no ? ": the gate loses more than the margin against always relaying"
                                           : "";
  const char* s_says =
      vs == verdict::yes ? ": the gate skips a share of the relays and saves bytes"
      : vs == verdict::no
          ? ": the gate relays nearly every request, so it saves next to nothing (where relay never "
            "hurts this is the right gate, not a failing one)"
          : "";
  out.findings.push_back(finding{
      .id = finding_id(finding_kind::gate_not_worse_than_always_relay),
      .answer = va,
      .estimate = a.estimate,
      .ci_low = a.ci_low,
      .ci_high = a.ci_high,
      .method = method + fmt::format("; yes: accuracy gate − always-relay lower limit > −{:.3g} "
                                     "(non-inferiority); no: its upper limit < −{:.3g} (inferiority shown)",
                                     o.margin, o.margin),
      .n = out.held_out_units,
      .detail = base + a_says + too_few,
      .key = {finding_kind::gate_not_worse_than_always_relay}});
  out.findings.push_back(finding{
      .id = finding_id(finding_kind::gate_saves_relays),
      .answer = vs,
      .estimate = s.estimate,
      .ci_low = s.ci_low,
      .ci_high = s.ci_high,
      .method =
          method + fmt::format("; yes: share not relayed lower limit > 0 and skipping saves bytes (mean "
                               "relay − fallback bytes > 0); no: its upper limit < {:.3g} (the gate "
                               "relays nearly every request)",
                               o.skip_margin),
      .n = out.held_out_units,
      .detail = base + s_says + too_few,
      .key = {finding_kind::gate_saves_relays}});
}

}  // namespace detail

LATENTAUDIT_INLINE relay_gate_result fit_relay_gate(std::span<const trial_record> records,
                                                    const relay_gate_options& options) {
  constexpr std::string_view fn = "fit_relay_gate";
  // The arms answer by label, else by arm_kind (detail::resolve_arm: the resolver of every analysis;
  // an ambiguity is reported by the core audit's warnings).
  std::vector<std::string> arm_notes;
  relay_gate_options o = options;
  o.relay_arm = detail::resolve_arm_or_name(records, o.relay_arm, arm_notes);
  o.control_arm = detail::resolve_arm_or_name(records, o.control_arm, arm_notes);
  if (!o.text_arm.empty()) o.text_arm = detail::resolve_arm_or_name(records, o.text_arm, arm_notes);
  detail::check_gate_options(fn, o);
  relay_gate_result out;
  out.model.cost = o.cost;
  out.relay_arm = o.relay_arm;
  out.fallback = o.control_arm;
  out.excluded_features = {
      "regime: the experimental label, not known to a serving stack",
      "attention_mass, hidden_cosine, next_token_kl: measured after the import, not known before the "
      "transfer",
      "needed_position, pairs: properties of the task's answer and construction, not of the request"};
  const std::string method = fmt::format(
      "gain gate: relay when P(helps | x) − P(hurts | x) > cost {:.3g} (two logistic models on features "
      "known before the transfer; fallback '{}'), cross-fitted over items ({} folds by item); held-out "
      "accuracy gate − always-relay (non-inferiority margin {:.3g}) and share of requests not relayed: "
      "betting over items, one-sided {:.3g} per side; at least {} held-out items for a verdict",
      o.cost, o.control_arm, o.folds, o.margin, o.alpha, o.min_held_out_items);
  auto give_up = [&](std::string why) {
    out.missing = why;
    for (const finding_kind k :
         {finding_kind::gate_not_worse_than_always_relay, finding_kind::gate_saves_relays})
      out.findings.push_back(detail::inconclusive_finding({k}, method, why));
    return out;
  };
  for (const auto& arm : {o.relay_arm, o.control_arm}) {
    if (!detail::has_arm(records, arm)) return give_up("arm '" + arm + "' is absent from the records");
  }
  // Requests: (unit, relay slot). Slot 0 is the relay arm; every extra relay arm (a drifted
  // sender) present on a unit with the control is one more request of that unit, so the gate sees
  // senders at several fingerprint distances. Units are sorted by item, so are the requests.
  std::vector<std::string> arms = {o.relay_arm, o.control_arm, o.text_arm};
  for (const auto& e : o.extra_relay_arms) {
    const std::string label = detail::resolve_arm_or_name(records, e, arm_notes);
    if (std::find(arms.begin(), arms.end(), label) == arms.end() && detail::has_arm(records, label))
      arms.push_back(label);
  }
  const auto all = detail::group_units(fn, records, arms, o.units);
  const auto units = detail::gate_requests(all, arms.size());
  if (units.empty())
    return give_up("no (item, seed) unit has both '" + o.relay_arm + "' and '" + o.control_arm + "'");
  const std::size_t n = units.size();
  auto [cand, helps, hurts] = detail::gate_features(units);
  detail::count_gate_population(out, units, arms);
  // Folds: items ordered by their uniform, rank mod folds.
  std::vector<std::uint64_t> items;
  for (const auto& u : units)
    if (items.empty() || items.back() != u->item) items.push_back(u->item);
  std::vector<std::pair<double, std::uint64_t>> order;
  for (auto it : items) order.emplace_back(detail::item_uniform(o.split_seed, it, 5), it);
  std::sort(order.begin(), order.end());
  const std::size_t folds = std::min(o.folds, items.size());
  out.folds = folds;
  out.items = items.size();
  out.population = detail::gate_population_text(out, o);
  if (folds < 2) return give_up(fmt::format("{} item(s): cross-fitting needs at least 2", items.size()));
  const auto fold_of = detail::gate_folds(units, order, folds);
  double pos = 0, neg = 0;
  for (std::size_t i = 0; i < n; ++i) {
    pos += helps[i];
    neg += hurts[i];
  }
  out.positive_rate = pos / static_cast<double>(n);
  out.negative_rate = neg / static_cast<double>(n);
  const bool one_d = (pos == 0 && neg == 0) || pos == static_cast<double>(n) || neg == static_cast<double>(n);
  if (one_d) {
    return give_up(fmt::format(
        "d = relay correct − fallback correct is {} on every request (relay helps and relay hurts never "
        "vary); the gate cannot be fitted",
        pos == static_cast<double>(n)   ? "+1"
        : neg == static_cast<double>(n) ? "−1"
                                        : "0"));
  }
  // The deployable model, on every unit.
  std::vector<std::size_t> every(n);
  for (std::size_t i = 0; i < n; ++i) every[i] = i;
  auto full = detail::fit_gate_on(fn, cand, helps, hurts, every, o);
  if (!full.why.empty()) return give_up(full.why);
  out.model = full.model;
  out.dropped_features = full.dropped;
  // Cross-fitted predictions.
  std::vector<char> relay(n, 0);
  out.fold_items.assign(folds, 0);
  for (std::size_t f = 0; f < folds; ++f) {
    std::vector<std::size_t> train, test;
    for (std::size_t i = 0; i < n; ++i) (fold_of[i] == f ? test : train).push_back(i);
    auto fit = detail::fit_gate_on(fn, cand, helps, hurts, train, o);
    if (!fit.why.empty()) return give_up("fold " + std::to_string(f) + ": " + fit.why);
    std::vector<double> x(fit.kept.size());
    for (auto i : test) {
      for (std::size_t j = 0; j < fit.kept.size(); ++j) x[j] = cand[fit.kept[j]].values[i];
      relay[i] = fit.model.relays(x) ? 1 : 0;
    }
    for (std::size_t r = 0; r < order.size(); ++r) out.fold_items[f] += r % folds == f ? 1 : 0;
    out.fold_models.push_back(std::move(fit.model));
  }
  out.held_out_items = items.size();
  out.held_out_units = n;
  const double skip_bytes = detail::gate_held_out(out, units, relay, o);
  const double rate = static_cast<double>(std::count(relay.begin(), relay.end(), 1)) / static_cast<double>(n);
  detail::add_gate_findings(out, o, method, rate, skip_bytes);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_COST_INL_HPP
