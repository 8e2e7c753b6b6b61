// SPDX-License-Identifier: MIT
// latentaudit: nonparametric bootstrap confidence intervals for any statistic — one-sample,
// two-sample stratified by arm, paired and cluster resampling; percentile, basic, normal, BCa and
// studentized intervals under R boot's or scipy's conventions; deterministic multithreading
// (replicate r always uses the same counter-based stream); fast paths for mean differences.
// Formulas, conventions and references: docs/estimators/bootstrap.md.
#ifndef LATENTAUDIT_ESTIMATORS_BOOTSTRAP_HPP
#define LATENTAUDIT_ESTIMATORS_BOOTSTRAP_HPP

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/parallel.hpp"
#include "../core/rng.hpp"
#include "detail/bootstrap_draw.hpp"
#include "detail/bootstrap_intervals.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief What a studentized statistic returns: the estimate and an estimate of its variance.
struct estimate_and_variance {
  double estimate = effect_estimate::nan;  ///< the statistic
  double variance = effect_estimate::nan;  ///< an estimate of its variance (e.g. squared SE)
};

/// @brief One arm's resampled data as a statistic sees it: the drawn indices into the arm's
/// original values, and those values. Element j is values()[indices()[j]]; nothing is copied.
///
/// For the original sample the indices are 0, 1, ..., n−1; for a jackknife sample one unit is
/// left out; for a cluster bootstrap they are the observations of the drawn clusters, cluster
/// after cluster in draw order.
class resample_view {
 public:
  /// @brief Forward iterator over the resampled values.
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;  ///< forward traversal
    using value_type = double;                            ///< element type
    using difference_type = std::ptrdiff_t;               ///< distance type
    using pointer = const double*;                        ///< pointer type
    using reference = const double&;                      ///< reference type
    iterator() = default;
    /// @brief Iterator at draw `pos` of `view`.
    iterator(const resample_view* view, std::size_t pos) noexcept : view_(view), pos_(pos) {}
    /// @brief The current value.
    reference operator*() const noexcept { return view_->values_[view_->indices_[pos_]]; }
    /// @brief Advances to the next draw.
    iterator& operator++() noexcept {
      ++pos_;
      return *this;
    }
    /// @brief Post-increment.
    iterator operator++(int) noexcept {
      iterator old = *this;
      ++pos_;
      return old;
    }
    /// @brief Same position of the same view.
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.pos_ == b.pos_; }

   private:
    const resample_view* view_ = nullptr;
    std::size_t pos_ = 0;
  };

  /// @brief View of `values` at `indices` (every index < values.size()).
  resample_view(std::span<const double> values, std::span<const std::uint32_t> indices) noexcept
      : values_(values), indices_(indices) {}

  /// @brief Number of drawn observations.
  [[nodiscard]] std::size_t size() const noexcept { return indices_.size(); }
  /// @brief Whether no observation was drawn (possible only in cluster designs).
  [[nodiscard]] bool empty() const noexcept { return indices_.empty(); }
  /// @brief Value of draw j.
  [[nodiscard]] double operator[](std::size_t j) const noexcept { return values_[indices_[j]]; }
  /// @brief The drawn indices into the original arm (use them to look up other columns).
  [[nodiscard]] std::span<const std::uint32_t> indices() const noexcept { return indices_; }
  /// @brief The arm's original values.
  [[nodiscard]] std::span<const double> values() const noexcept { return values_; }
  /// @brief Sum of the drawn values, accumulated exactly as the fast mean paths do.
  [[nodiscard]] double sum() const noexcept { return detail::gather_sum(values_, indices_); }
  /// @brief Mean of the drawn values (NaN when empty).
  [[nodiscard]] double mean() const noexcept {
    return indices_.empty() ? effect_estimate::nan : sum() / static_cast<double>(indices_.size());
  }
  /// @brief First draw.
  [[nodiscard]] iterator begin() const noexcept { return {this, 0}; }
  /// @brief One past the last draw.
  [[nodiscard]] iterator end() const noexcept { return {this, indices_.size()}; }

 private:
  std::span<const double> values_;
  std::span<const std::uint32_t> indices_;
};

/// @brief Options of the bootstrap functions.
struct bootstrap_options {
  std::size_t replicates = 9999;  ///< B, number of bootstrap replicates (2 ≤ B ≤ 2³² − 1)
  double level = 0.95;            ///< confidence level, in (0, 1)
  bootstrap_ci_method method = bootstrap_ci_method::bca;         ///< interval construction
  bootstrap_convention convention = bootstrap_convention::boot;  ///< R boot or scipy rules
  std::uint64_t seed = 0;                  ///< replicate r uses make_stream({seed, 0, arm, r})
  unsigned threads = 1;                    ///< worker threads; 0 = all cores. Results do not depend on it
  std::span<const double> influence = {};  ///< BCa: influence values of the resampling units
                                           ///< (stratum after stratum); empty = jackknife
  bool keep_replicates = false;            ///< return t* in bootstrap_result::replicates
  std::string estimand = {};               ///< estimand label; empty = the function's default
  on_degenerate if_degenerate = on_degenerate::throw_error;  ///< degenerate t*: throw or flag
};

/// @brief A bootstrap interval with its diagnostics.
struct [[nodiscard]] bootstrap_result {
  effect_estimate effect;          ///< estimate = t₀, std_error = sd(t*) (ddof 1), ci_low/ci_high, level
  std::vector<double> replicates;  ///< t*₁..t*_B in replicate order (when keep_replicates)
  double bias_correction = effect_estimate::nan;  ///< BCa z₀
  double acceleration = effect_estimate::nan;     ///< BCa a
  double alpha_low = effect_estimate::nan;        ///< probability level of the quantile behind ci_low
  double alpha_high = effect_estimate::nan;       ///< probability level of the quantile behind ci_high
  std::size_t replicates_used = 0;                ///< replicates used (studentized: finite z*)
};

/// @brief Replicate values computed elsewhere (R's boot, scipy, another program), for
/// bootstrap_interval.
struct bootstrap_replicates {
  double t0 = effect_estimate::nan;                  ///< the statistic on the original data
  std::span<const double> replicates;                ///< t*₁..t*_B
  std::span<const double> influence;                 ///< BCa: influence values L (boot) / U (scipy)
  std::span<const std::size_t> strata = {};          ///< sizes of consecutive strata of `influence`
                                                     ///< (scipy's multi-sample acceleration); empty = one
  double t0_variance = effect_estimate::nan;         ///< studentized: v₀
  std::span<const double> replicate_variances = {};  ///< studentized: v*₁..v*_B
};

/// @brief A statistic's result type: a double, or estimate_and_variance for studentized intervals.
template <class R>
concept bootstrap_statistic_result =
    std::same_as<std::remove_cvref_t<R>, estimate_and_variance> || std::convertible_to<R, double>;

/// @brief A statistic of one resampled sample (one-sample and cluster bootstraps).
template <class F>
concept one_sample_statistic = std::invocable<const F&, const resample_view&> &&
    bootstrap_statistic_result<std::invoke_result_t<const F&, const resample_view&>>;

/// @brief A statistic of the resampled treated and control arms (two-sample, paired, cluster).
template <class F>
concept two_sample_statistic = std::invocable<const F&, const resample_view&, const resample_view&> &&
    bootstrap_statistic_result<std::invoke_result_t<const F&, const resample_view&, const resample_view&>>;

// ---- implementation ----------------------------------------------------------------------------
namespace detail {

/// @brief Checks the options shared by every bootstrap function.
void check_bootstrap_options(std::string_view fn, const bootstrap_options& o, bool check_replicates = true);

/// @brief Checks one arm of data: at least 2 finite values, fewer than 2³² observations.
void check_arm(std::string_view fn, std::string_view name, std::span<const double> x);

/// @brief The statistic's value as (estimate, variance); variance NaN for scalar statistics.
template <class R>
[[nodiscard]] inline estimate_and_variance as_estimate_and_variance(const R& r) {
  if constexpr (std::same_as<std::remove_cvref_t<R>, estimate_and_variance>) {
    return r;
  } else {
    return {static_cast<double>(r), effect_estimate::nan};
  }
}

/// @brief Resampling design: strata of units drawn independently, each with its stream arm.
struct bootstrap_design {
  std::vector<std::uint32_t> units;  ///< units (observations, pairs, clusters) per stratum
  std::vector<std::uint32_t> arms;   ///< stream arm of each stratum
};

/// @brief Unit indices drawn per stratum plus scratch buffers for expanded cluster indices.
struct bootstrap_workspace {
  std::vector<std::vector<std::uint32_t>> draws;  ///< per stratum: drawn unit indices
  std::vector<std::uint32_t> obs[2];              ///< expanded observation indices (clusters)
};

/// @brief Turns a degenerate interval into a throw or a flagged result.
void settle_degenerate(std::string_view fn, bootstrap_result& r, const std::string& why,
                       const bootstrap_options& o);

/// @brief Interval step shared by every entry point: fills `r` from t₀, t* and options.
void finish_bootstrap(std::string_view fn, bootstrap_result& r, const bootstrap_interval_input& in,
                      const bootstrap_options& o);

/// @brief The generic driver. `eval(workspace)` evaluates the statistic on the unit draws held in
/// workspace.draws (one vector per stratum) and returns estimate_and_variance.
template <class Eval>
[[nodiscard]] bootstrap_result run_bootstrap(std::string_view fn, const bootstrap_design& d, const Eval& eval,
                                             bool has_variance, const bootstrap_options& o,
                                             effect_estimate base) {
  const std::size_t n_strata = d.units.size();
  bootstrap_result res;
  res.effect = std::move(base);
  res.effect.method = bootstrap_method_name(o.method);
  res.effect.level = o.level;
  if (o.method == bootstrap_ci_method::studentized && !has_variance) {
    throw_invalid(fn, "statistic",
                  "must return estimate_and_variance for studentized intervals (see studentize())");
  }
  std::size_t total_units = 0;
  for (auto u : d.units) total_units += u;
  const bool bca = o.method == bootstrap_ci_method::bca;
  if (bca && !o.influence.empty() && o.influence.size() != total_units) {
    throw_invalid(fn, "influence",
                  "must hold one value per resampling unit (" + number_text(total_units) + "), got " +
                      number_text(o.influence.size()));
  }
  auto make_workspace = [&] {
    bootstrap_workspace ws;
    ws.draws.resize(n_strata);
    return ws;
  };
  auto set_identity = [&](bootstrap_workspace& ws) {
    for (std::size_t s = 0; s < n_strata; ++s) {
      ws.draws[s].resize(d.units[s]);
      std::iota(ws.draws[s].begin(), ws.draws[s].end(), std::uint32_t{0});
    }
  };
  // t0 on the original sample.
  auto ws0 = make_workspace();
  set_identity(ws0);
  const estimate_and_variance ev0 = eval(ws0);
  res.effect.estimate = ev0.estimate;
  if (!std::isfinite(ev0.estimate)) {
    settle_degenerate(fn, res, "the statistic is not finite on the original data", o);
    return res;
  }
  // Replicates: replicate r, stratum s draws units[s] units from make_stream({seed, 0, arms[s], r}).
  const std::size_t b = o.replicates;
  std::vector<double> t(b), v(has_variance ? b : 0);
  parallel_chunks(b, 16, o.threads, [&](std::size_t lo, std::size_t hi) {
    auto ws = make_workspace();
    for (std::size_t s = 0; s < n_strata; ++s) ws.draws[s].resize(d.units[s]);
    for (std::size_t r = lo; r < hi; ++r) {
      for (std::size_t s = 0; s < n_strata; ++s) {
        index_drawer g(
            {.seed = o.seed, .item = 0, .arm = d.arms[s], .replicate = static_cast<std::uint32_t>(r)});
        g.fill(ws.draws[s], d.units[s]);
      }
      const estimate_and_variance ev = eval(ws);
      t[r] = ev.estimate;
      if (has_variance) v[r] = ev.variance;
    }
  });
  for (std::size_t r = 0; r < b; ++r) {
    if (!std::isfinite(t[r])) {
      settle_degenerate(fn, res, "the statistic is not finite on bootstrap replicate " + number_text(r), o);
      return res;
    }
  }
  // Influence values for BCa: supplied, or the leave-one-unit-out jackknife within each stratum.
  std::vector<double> jack;
  std::vector<std::size_t> strata(d.units.begin(), d.units.end());
  std::span<const double> influence = o.influence;
  if (bca && influence.empty()) {
    jack.assign(total_units, 0.0);
    parallel_chunks(total_units, 64, o.threads, [&](std::size_t lo, std::size_t hi) {
      auto ws = make_workspace();
      set_identity(ws);
      std::size_t s = 0, first = 0;
      for (std::size_t u = lo; u < hi; ++u) {
        while (u >= first + d.units[s]) first += d.units[s++];
        const auto i = static_cast<std::uint32_t>(u - first);
        auto& dr = ws.draws[s];
        dr.resize(d.units[s] - 1);
        for (std::uint32_t k = 0; k + 1 < d.units[s]; ++k) dr[k] = k < i ? k : k + 1;
        jack[u] = eval(ws).estimate;
        dr.resize(d.units[s]);
        std::iota(dr.begin(), dr.end(), std::uint32_t{0});
      }
    });
    std::size_t first = 0;
    for (std::size_t s = 0; s < n_strata; ++s) {
      const double m = static_cast<double>(d.units[s]) - 1.0;
      double centre = ev0.estimate;
      if (o.convention == bootstrap_convention::scipy) {
        double acc = 0;
        for (std::size_t u = first; u < first + d.units[s]; ++u) acc += jack[u];
        centre = acc / static_cast<double>(d.units[s]);
      }
      for (std::size_t u = first; u < first + d.units[s]; ++u) {
        if (!std::isfinite(jack[u])) {
          settle_degenerate(fn, res, "the statistic is not finite on jackknife sample " + number_text(u), o);
          return res;
        }
        jack[u] = m * (centre - jack[u]);
      }
      first += d.units[s];
    }
    influence = jack;
  }
  bootstrap_interval_input in{
      .t0 = ev0.estimate, .t = t, .influence = influence, .strata = strata, .v0 = ev0.variance, .v = v};
  finish_bootstrap(fn, res, in, o);
  if (o.keep_replicates) res.replicates = std::move(t);
  return res;
}

/// @brief Dense cluster numbering: CSR lists of each arm's observations per cluster.
struct cluster_layout {
  std::uint32_t clusters = 0;             ///< G, distinct labels over all arms
  std::vector<std::uint32_t> offset[2];   ///< per arm: members of cluster g at [offset[g], offset[g+1])
  std::vector<std::uint32_t> members[2];  ///< per arm: observation indices grouped by cluster
};

cluster_layout make_cluster_layout(std::string_view fn, std::span<const std::size_t> labels0,
                                   std::span<const std::size_t> labels1, std::size_t arms);

/// @brief Expands drawn cluster ids into the observations of arm `a`, cluster after cluster.
void expand_clusters(const cluster_layout& c, std::size_t a, std::span<const std::uint32_t> drawn,
                     std::vector<std::uint32_t>& out);

/// @brief Default estimand label.
std::string estimand_or(const bootstrap_options& o, std::string_view fallback);

/// @brief The effect_estimate skeleton of a bootstrap result (estimand and sample sizes).
effect_estimate bootstrap_base(const bootstrap_options& o, std::string_view fallback,
                               std::size_t n_treated = 0, std::size_t n_control = 0, std::size_t n_pairs = 0);

/// @brief Σ x in the four-accumulator order of gather_sum over the identity indices.
[[nodiscard]] double sum4(std::span<const double> x) noexcept;

}  // namespace detail

/// @brief One-sample bootstrap: resamples the n observations of `x` with replacement.
///
/// Replicate r draws n indices from make_stream({.seed, .item = 0, .arm = 0, .replicate = r}).
/// For BCa without supplied influence values the statistic is evaluated on the n
/// leave-one-out samples (O(n) evaluations).
/// @param x the sample (n ≥ 2, finite)
/// @param statistic callable (const resample_view&) -> double or estimate_and_variance; it is
///        called concurrently from `options.threads` threads and must be thread-safe
/// @param options replicates, level, method, convention, seed, threads, ...
/// @returns the interval; method "bootstrap_<method>", estimand default "statistic"
/// @throws invalid_argument on bad data or options; numerical_error for a degenerate bootstrap
///         distribution (unless options flag it); whatever the statistic throws
template <one_sample_statistic Statistic>
[[nodiscard]] bootstrap_result bootstrap(std::span<const double> x, const Statistic& statistic,
                                         const bootstrap_options& options = {}) {
  constexpr std::string_view fn = "bootstrap";
  detail::check_bootstrap_options(fn, options);
  detail::check_arm(fn, "x", x);
  using R = std::invoke_result_t<const Statistic&, const resample_view&>;
  const detail::bootstrap_design d{{static_cast<std::uint32_t>(x.size())}, {0}};
  auto eval = [&](const detail::bootstrap_workspace& ws) {
    return detail::as_estimate_and_variance(statistic(resample_view(x, ws.draws[0])));
  };
  return detail::run_bootstrap(fn, d, eval, std::same_as<std::remove_cvref_t<R>, estimate_and_variance>,
                               options, detail::bootstrap_base(options, "statistic"));
}

namespace detail {
/// @brief bootstrap_two_sample, reporting errors as function `fn`.
template <class Statistic>
[[nodiscard]] bootstrap_result two_sample_impl(std::string_view fn, std::span<const double> treated,
                                               std::span<const double> control, const Statistic& statistic,
                                               const bootstrap_options& options) {
  detail::check_bootstrap_options(fn, options);
  detail::check_arm(fn, "treated", treated);
  detail::check_arm(fn, "control", control);
  using R = std::invoke_result_t<const Statistic&, const resample_view&, const resample_view&>;
  const detail::bootstrap_design d{
      {static_cast<std::uint32_t>(treated.size()), static_cast<std::uint32_t>(control.size())}, {1, 0}};
  auto eval = [&](const detail::bootstrap_workspace& ws) {
    return detail::as_estimate_and_variance(
        statistic(resample_view(treated, ws.draws[0]), resample_view(control, ws.draws[1])));
  };
  return detail::run_bootstrap(fn, d, eval, std::same_as<std::remove_cvref_t<R>, estimate_and_variance>,
                               options,
                               detail::bootstrap_base(options, "statistic", treated.size(), control.size()));
}
}  // namespace detail

/// @brief Two-sample bootstrap stratified by arm: each replicate resamples the treated arm and
/// the control arm separately (R boot's `strata`, scipy's multi-sample default).
///
/// Replicate r draws n₁ treated indices from stream {seed, 0, arm 1, r} and n₀ control indices
/// from stream {seed, 0, arm 0, r}. Jackknife units: each observation within its arm.
/// @param treated treated outcomes (n₁ ≥ 2, finite)
/// @param control control outcomes (n₀ ≥ 2, finite)
/// @param statistic callable (const resample_view& treated, const resample_view& control) ->
///        double or estimate_and_variance; thread-safe
/// @param options as for bootstrap(); influence values are treated then control
/// @returns the interval; estimand default "statistic", n_treated / n_control set
/// @throws invalid_argument, numerical_error as bootstrap()
template <two_sample_statistic Statistic>
[[nodiscard]] bootstrap_result bootstrap_two_sample(std::span<const double> treated,
                                                    std::span<const double> control,
                                                    const Statistic& statistic,
                                                    const bootstrap_options& options = {}) {
  return detail::two_sample_impl("bootstrap_two_sample", treated, control, statistic, options);
}

namespace detail {
/// @brief bootstrap_paired, reporting errors as function `fn`.
template <class Statistic>
[[nodiscard]] bootstrap_result paired_impl(std::string_view fn, std::span<const double> treated,
                                           std::span<const double> control, const Statistic& statistic,
                                           const bootstrap_options& options) {
  detail::check_bootstrap_options(fn, options);
  detail::check_same_size(fn, "treated", treated.size(), "control", control.size());
  detail::check_arm(fn, "treated", treated);
  detail::check_arm(fn, "control", control);
  using R = std::invoke_result_t<const Statistic&, const resample_view&, const resample_view&>;
  const detail::bootstrap_design d{{static_cast<std::uint32_t>(treated.size())}, {0}};
  auto eval = [&](const detail::bootstrap_workspace& ws) {
    return detail::as_estimate_and_variance(
        statistic(resample_view(treated, ws.draws[0]), resample_view(control, ws.draws[0])));
  };
  return detail::run_bootstrap(fn, d, eval, std::same_as<std::remove_cvref_t<R>, estimate_and_variance>,
                               options, detail::bootstrap_base(options, "statistic", 0, 0, treated.size()));
}
}  // namespace detail

/// @brief Paired bootstrap: resamples the n pairs (treatedᵢ, controlᵢ) together; both views
/// share the same drawn indices (scipy's `paired=True`; R boot on a two-column data frame).
///
/// Replicate r draws n pair indices from stream {seed, 0, arm 0, r}. Jackknife units: pairs.
///
/// @code
/// auto mean_diff = [](const resample_view& t, const resample_view& c) { return t.mean() - c.mean(); };
/// const auto paired = bootstrap_paired(x, y, mean_diff, o);  // x[i], y[i]: the two outcomes of pair i
/// @endcode
/// @param treated treated outcome of each pair (n ≥ 2, finite)
/// @param control control outcome of each pair, same size
/// @param statistic callable (const resample_view&, const resample_view&) -> double or
///        estimate_and_variance; thread-safe
/// @param options as for bootstrap(); influence values are one per pair
/// @returns the interval; estimand default "statistic", n_pairs set
/// @throws shape_mismatch if the sizes differ; invalid_argument, numerical_error as bootstrap()
template <two_sample_statistic Statistic>
[[nodiscard]] bootstrap_result bootstrap_paired(std::span<const double> treated,
                                                std::span<const double> control, const Statistic& statistic,
                                                const bootstrap_options& options = {}) {
  return detail::paired_impl("bootstrap_paired", treated, control, statistic, options);
}

/// @brief Cluster bootstrap of one sample: resamples the G clusters (e.g. item × seed) with
/// replacement and keeps each drawn cluster's observations together.
///
/// Replicate r draws G cluster indices from stream {seed, 0, arm 0, r}; clusters are numbered
/// by ascending label. The view lists the observations of the drawn clusters, cluster after
/// cluster, so its size varies between replicates. Jackknife units: clusters.
/// @param x observations (n ≥ 2, finite)
/// @param cluster cluster label of each observation (same size, ≥ 2 distinct labels)
/// @param statistic callable (const resample_view&) -> double or estimate_and_variance; thread-safe
/// @param options as for bootstrap(); influence values are one per cluster, by ascending label
/// @returns the interval; estimand default "statistic"
/// @throws shape_mismatch if the sizes differ; invalid_argument, numerical_error as bootstrap()
template <one_sample_statistic Statistic>
[[nodiscard]] bootstrap_result bootstrap_clustered(std::span<const double> x,
                                                   std::span<const std::size_t> cluster,
                                                   const Statistic& statistic,
                                                   const bootstrap_options& options = {}) {
  constexpr std::string_view fn = "bootstrap_clustered";
  detail::check_bootstrap_options(fn, options);
  detail::check_same_size(fn, "x", x.size(), "cluster", cluster.size());
  detail::check_arm(fn, "x", x);
  const auto layout = detail::make_cluster_layout(fn, cluster, {}, 1);
  using R = std::invoke_result_t<const Statistic&, const resample_view&>;
  const detail::bootstrap_design d{{layout.clusters}, {0}};
  auto eval = [&](const detail::bootstrap_workspace& ws) {
    std::vector<std::uint32_t> obs;
    obs.reserve(x.size() + x.size() / 4);
    detail::expand_clusters(layout, 0, ws.draws[0], obs);
    return detail::as_estimate_and_variance(statistic(resample_view(x, obs)));
  };
  return detail::run_bootstrap(fn, d, eval, std::same_as<std::remove_cvref_t<R>, estimate_and_variance>,
                               options, detail::bootstrap_base(options, "statistic"));
}

/// @brief Cluster bootstrap of two arms: clusters (e.g. items, or item × seed) hold observations
/// of both arms; each replicate draws G clusters and the statistic sees, per arm, the
/// observations of the drawn clusters.
///
/// Replicate r draws G cluster indices from stream {seed, 0, arm 0, r}; labels are numbered by
/// ascending value over both arms. A drawn set of clusters may hold no observation of an arm
/// (then that view is empty; a statistic returning NaN makes the result degenerate).
/// @param treated treated observations (≥ 2, finite)
/// @param treated_cluster cluster label of each treated observation
/// @param control control observations (≥ 2, finite)
/// @param control_cluster cluster label of each control observation
/// @param statistic callable (const resample_view& treated, const resample_view& control); thread-safe
/// @param options as for bootstrap(); influence values one per cluster, by ascending label
/// @returns the interval; estimand default "statistic", n_treated / n_control set
/// @throws shape_mismatch if a label vector's size differs from its arm's; invalid_argument,
///         numerical_error as bootstrap()
template <two_sample_statistic Statistic>
[[nodiscard]] bootstrap_result bootstrap_clustered(std::span<const double> treated,
                                                   std::span<const std::size_t> treated_cluster,
                                                   std::span<const double> control,
                                                   std::span<const std::size_t> control_cluster,
                                                   const Statistic& statistic,
                                                   const bootstrap_options& options = {}) {
  constexpr std::string_view fn = "bootstrap_clustered";
  detail::check_bootstrap_options(fn, options);
  detail::check_same_size(fn, "treated", treated.size(), "treated_cluster", treated_cluster.size());
  detail::check_same_size(fn, "control", control.size(), "control_cluster", control_cluster.size());
  detail::check_arm(fn, "treated", treated);
  detail::check_arm(fn, "control", control);
  const auto layout = detail::make_cluster_layout(fn, treated_cluster, control_cluster, 2);
  using R = std::invoke_result_t<const Statistic&, const resample_view&, const resample_view&>;
  const detail::bootstrap_design d{{layout.clusters}, {0}};
  auto eval = [&](const detail::bootstrap_workspace& ws) {
    std::vector<std::uint32_t> obs_t, obs_c;
    detail::expand_clusters(layout, 0, ws.draws[0], obs_t);
    detail::expand_clusters(layout, 1, ws.draws[0], obs_c);
    return detail::as_estimate_and_variance(
        statistic(resample_view(treated, obs_t), resample_view(control, obs_c)));
  };
  return detail::run_bootstrap(fn, d, eval, std::same_as<std::remove_cvref_t<R>, estimate_and_variance>,
                               options,
                               detail::bootstrap_base(options, "statistic", treated.size(), control.size()));
}

/// @brief Fast stratified bootstrap of mean(treated) − mean(control).
///
/// Bit-identical to bootstrap_two_sample with the statistic `t.mean() − c.mean()` and the same
/// options, but draws and sums without storing indices (O(n + B) memory) and takes the exact
/// jackknife influence values Lᵢ = yᵢ − ȳ₁ (treated), Lᵢ = −(yᵢ − ȳ₀) (control) in O(n).
/// @param treated treated outcomes (n₁ ≥ 2, finite)
/// @param control control outcomes (n₀ ≥ 2, finite)
/// @param options as for bootstrap(); studentized uses v = s₁²/n₁ + s₀²/n₀ of each resample
/// @returns the interval; estimand default "difference_in_means"
/// @throws invalid_argument, numerical_error as bootstrap()
[[nodiscard]] bootstrap_result bootstrap_mean_difference(std::span<const double> treated,
                                                         std::span<const double> control,
                                                         const bootstrap_options& options = {});

/// @brief Fast paired bootstrap of the mean within-pair difference mean(treatedᵢ − controlᵢ).
///
/// Replicate r draws n pair indices from stream {seed, 0, arm 0, r} and sums the differences
/// (O(n + B) memory); BCa uses the exact jackknife influence values Lᵢ = dᵢ − d̄.
/// @param treated treated outcome of each pair (n ≥ 2, finite)
/// @param control control outcome of each pair, same size
/// @param options as for bootstrap(); studentized uses v = s_d²/n of each resample
/// @returns the interval; estimand default "mean_paired_difference", n_pairs set
/// @throws shape_mismatch if the sizes differ; invalid_argument, numerical_error as bootstrap()
[[nodiscard]] bootstrap_result bootstrap_paired_mean(std::span<const double> treated,
                                                     std::span<const double> control,
                                                     const bootstrap_options& options = {});

/// @brief Intervals from replicate values computed elsewhere — reproduces R's boot.ci and
/// scipy.stats.bootstrap exactly when given their t₀, t* (and L, strata, variances).
///
/// options.replicates, seed, threads and influence are ignored (the inputs carry them).
/// @param input t₀, t* (B ≥ 2, finite); influence values for BCa (one per unit; `strata` gives
///        the sizes of consecutive strata for the scipy multi-sample acceleration); t0_variance
///        and replicate_variances for studentized intervals (non-finite z* are dropped, as boot)
/// @param options level, method, convention, estimand (default "statistic"), degenerate policy
/// @returns the interval; std_error = sd(t*) (ddof 1)
/// @throws invalid_argument on missing / non-finite inputs, sizes that disagree, or too few
///         replicates for the level; numerical_error for a degenerate distribution (unless flagged)
[[nodiscard]] bootstrap_result bootstrap_interval(const bootstrap_replicates& input,
                                                  const bootstrap_options& options = {});

/// @brief Combines a statistic and a standard-error callable with the same arguments into a
/// statistic returning estimate_and_variance{statistic(args...), se(args...)²}, for studentized
/// intervals.
///
/// @code
/// const bootstrap_options o{.replicates = 999, .method = bootstrap_ci_method::studentized, .seed = 1};
/// const auto a = bootstrap(x, studentize(mean, se), o);  // mean, se: callables (const resample_view&) ->
/// double
/// @endcode
/// @param statistic the statistic
/// @param std_error its standard error on the same (resampled) data
/// @returns a callable usable with every bootstrap function
template <class Statistic, class StdError>
[[nodiscard]] auto studentize(Statistic statistic, StdError std_error) {
  return [statistic = std::move(statistic), std_error = std::move(std_error)](const auto&... views) {
    const double se = static_cast<double>(std_error(views...));
    return estimate_and_variance{static_cast<double>(statistic(views...)), se * se};
  };
}

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/bootstrap-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_BOOTSTRAP_HPP
