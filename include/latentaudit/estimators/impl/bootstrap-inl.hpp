// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/bootstrap.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_BOOTSTRAP_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_BOOTSTRAP_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../bootstrap.hpp"

namespace latentaudit::detail {

LATENTAUDIT_INLINE void check_bootstrap_options(std::string_view fn, const bootstrap_options& o,
                                                bool check_replicates) {
  check_open_unit(fn, "level", o.level);
  if (check_replicates) {
    if (o.replicates < 2 || o.replicates > std::numeric_limits<std::uint32_t>::max()) {
      throw_invalid(fn, "replicates", "must lie in [2, 4294967295], got " + number_text(o.replicates));
    }
    if (o.method != bootstrap_ci_method::normal &&
        (static_cast<double>(o.replicates) + 1.0) * ((1.0 - o.level) / 2.0) < 1.0) {
      throw_invalid(
          fn, "replicates",
          "is too small for level " + number_text(o.level) + ": the " + bootstrap_method_name(o.method) +
              " interval needs (replicates + 1)(1 - level)/2 >= 1, got " + number_text(o.replicates));
    }
  }
  switch (o.method) {
    case bootstrap_ci_method::percentile:
    case bootstrap_ci_method::basic:
    case bootstrap_ci_method::normal:
    case bootstrap_ci_method::bca:
    case bootstrap_ci_method::studentized:
      break;
    default:
      throw_invalid(fn, "method", "is not a bootstrap_ci_method value");
  }
  if (o.convention != bootstrap_convention::boot && o.convention != bootstrap_convention::scipy) {
    throw_invalid(fn, "convention", "is not a bootstrap_convention value");
  }
  if (o.if_degenerate != on_degenerate::throw_error && o.if_degenerate != on_degenerate::flag) {
    throw_invalid(fn, "if_degenerate", "is not an on_degenerate value");
  }
  check_finite(fn, "influence", o.influence);
}

LATENTAUDIT_INLINE void check_arm(std::string_view fn, std::string_view name, std::span<const double> x) {
  check_min_size(fn, name, x.size(), 2);
  if (x.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw_invalid(fn, name, "has more than 4294967295 observations");
  }
  check_finite(fn, name, x);
}

LATENTAUDIT_INLINE void settle_degenerate(std::string_view fn, bootstrap_result& r, const std::string& why,
                                          const bootstrap_options& o) {
  if (o.if_degenerate == on_degenerate::throw_error) throw_numerical(fn, why);
  r.effect.status = estimate_status::degenerate;
  r.effect.ci_low = r.effect.ci_high = effect_estimate::nan;
}

LATENTAUDIT_INLINE void finish_bootstrap(std::string_view fn, bootstrap_result& r,
                                         const bootstrap_interval_input& in, const bootstrap_options& o) {
  const auto out = compute_interval(in, o.method, o.level, o.convention);
  r.effect.method = bootstrap_method_name(o.method);
  r.effect.estimate = in.t0;
  r.effect.std_error = out.std_error;
  r.effect.level = o.level;
  r.effect.ci_low = out.low;
  r.effect.ci_high = out.high;
  r.bias_correction = out.z0;
  r.acceleration = out.acceleration;
  r.alpha_low = out.alpha_low;
  r.alpha_high = out.alpha_high;
  r.replicates_used = out.used;
  if (out.degenerate) settle_degenerate(fn, r, out.reason, o);
}

LATENTAUDIT_INLINE cluster_layout make_cluster_layout(std::string_view fn,
                                                      std::span<const std::size_t> labels0,
                                                      std::span<const std::size_t> labels1,
                                                      std::size_t arms) {
  std::vector<std::size_t> uniq(labels0.begin(), labels0.end());
  uniq.insert(uniq.end(), labels1.begin(), labels1.end());
  std::sort(uniq.begin(), uniq.end());
  uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
  if (uniq.size() < 2)
    throw_invalid(fn, "cluster", "must name at least 2 distinct clusters, got " + number_text(uniq.size()));
  cluster_layout c;
  c.clusters = static_cast<std::uint32_t>(uniq.size());
  for (std::size_t a = 0; a < arms; ++a) {
    const auto labels = a == 0 ? labels0 : labels1;
    std::vector<std::uint32_t> dense(labels.size());
    c.offset[a].assign(uniq.size() + 1, 0);
    for (std::size_t i = 0; i < labels.size(); ++i) {
      dense[i] =
          static_cast<std::uint32_t>(std::lower_bound(uniq.begin(), uniq.end(), labels[i]) - uniq.begin());
      ++c.offset[a][dense[i] + 1];
    }
    for (std::size_t g = 0; g < uniq.size(); ++g) c.offset[a][g + 1] += c.offset[a][g];
    c.members[a].resize(labels.size());
    std::vector<std::uint32_t> fill(c.offset[a].begin(), c.offset[a].end() - 1);
    for (std::size_t i = 0; i < labels.size(); ++i)
      c.members[a][fill[dense[i]]++] = static_cast<std::uint32_t>(i);
  }
  return c;
}

LATENTAUDIT_INLINE void expand_clusters(const cluster_layout& c, std::size_t a,
                                        std::span<const std::uint32_t> drawn,
                                        std::vector<std::uint32_t>& out) {
  // Sized once, then filled with plain copies: a range insert per cluster (a few members each)
  // cost more than the copy itself at 10^5 clusters and more.
  const auto& off = c.offset[a];
  std::size_t total = 0;
  for (auto g : drawn) total += off[g + 1] - off[g];
  out.resize(total);
  const std::uint32_t* members = c.members[a].data();
  std::uint32_t* to = out.data();
  for (auto g : drawn)
    for (std::uint32_t i = off[g], end = off[g + 1]; i < end; ++i) *to++ = members[i];
}

LATENTAUDIT_INLINE std::string estimand_or(const bootstrap_options& o, std::string_view fallback) {
  return o.estimand.empty() ? std::string(fallback) : o.estimand;
}

LATENTAUDIT_INLINE effect_estimate bootstrap_base(const bootstrap_options& o, std::string_view fallback,
                                                  std::size_t n_treated, std::size_t n_control,
                                                  std::size_t n_pairs) {
  effect_estimate e;
  e.estimand = estimand_or(o, fallback);
  e.n_treated = n_treated;
  e.n_control = n_control;
  e.n_pairs = n_pairs;
  return e;
}

[[nodiscard]] LATENTAUDIT_INLINE double sum4(std::span<const double> x) noexcept {
  double a[4] = {0, 0, 0, 0};
  std::size_t j = 0;
  for (; j + 4 <= x.size(); j += 4) {
    a[0] += x[j];
    a[1] += x[j + 1];
    a[2] += x[j + 2];
    a[3] += x[j + 3];
  }
  for (; j < x.size(); ++j) a[j % 4] += x[j];
  return (a[0] + a[1]) + (a[2] + a[3]);
}
}  // namespace latentaudit::detail

namespace latentaudit {

[[nodiscard]] LATENTAUDIT_INLINE bootstrap_result bootstrap_mean_difference(
    std::span<const double> treated, std::span<const double> control, const bootstrap_options& options) {
  constexpr std::string_view fn = "bootstrap_mean_difference";
  detail::check_bootstrap_options(fn, options);
  detail::check_arm(fn, "treated", treated);
  detail::check_arm(fn, "control", control);
  if (options.method == bootstrap_ci_method::studentized) {
    // The studentized path needs per-resample variances: use the generic engine.
    auto stat = [](const resample_view& t, const resample_view& c) {
      auto var_of_mean = [](const resample_view& v) {
        const double m = v.mean();
        double ss = 0;
        for (double y : v) ss += (y - m) * (y - m);
        return ss / (static_cast<double>(v.size()) - 1.0) / static_cast<double>(v.size());
      };
      return estimate_and_variance{t.mean() - c.mean(), var_of_mean(t) + var_of_mean(c)};
    };
    bootstrap_options o = options;
    o.estimand = detail::estimand_or(options, "difference_in_means");
    return detail::two_sample_impl(fn, treated, control, stat, o);
  }
  if (options.method == bootstrap_ci_method::bca && !options.influence.empty() &&
      options.influence.size() != treated.size() + control.size()) {
    detail::throw_invalid(fn, "influence", "must hold one value per observation (treated then control)");
  }
  const double n1 = static_cast<double>(treated.size()), n0 = static_cast<double>(control.size());
  const double m1 = detail::sum4(treated) / n1, m0 = detail::sum4(control) / n0;
  bootstrap_result res;
  res.effect = detail::bootstrap_base(options, "difference_in_means", treated.size(), control.size());
  const double t0 = m1 - m0;
  std::vector<double> t(options.replicates);
  parallel_chunks(t.size(), 16, options.threads, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t r = lo; r < hi; ++r) {
      const auto rr = static_cast<std::uint32_t>(r);
      const double s1 =
          detail::draw_and_sum({.seed = options.seed, .item = 0, .arm = 1, .replicate = rr}, treated);
      const double s0 =
          detail::draw_and_sum({.seed = options.seed, .item = 0, .arm = 0, .replicate = rr}, control);
      t[r] = s1 / n1 - s0 / n0;
    }
  });
  std::vector<double> influence;
  std::span<const double> inf = options.influence;
  if (options.method == bootstrap_ci_method::bca && inf.empty()) {
    influence.resize(treated.size() + control.size());
    for (std::size_t i = 0; i < treated.size(); ++i) influence[i] = treated[i] - m1;
    for (std::size_t i = 0; i < control.size(); ++i) influence[treated.size() + i] = -(control[i] - m0);
    inf = influence;
  }
  const std::size_t strata[2] = {treated.size(), control.size()};
  detail::finish_bootstrap(
      fn, res, {.t0 = t0, .t = t, .influence = inf, .strata = strata, .v0 = effect_estimate::nan, .v = {}},
      options);
  if (options.keep_replicates) res.replicates = std::move(t);
  return res;
}

[[nodiscard]] LATENTAUDIT_INLINE bootstrap_result bootstrap_paired_mean(std::span<const double> treated,
                                                                        std::span<const double> control,
                                                                        const bootstrap_options& options) {
  constexpr std::string_view fn = "bootstrap_paired_mean";
  detail::check_bootstrap_options(fn, options);
  detail::check_same_size(fn, "treated", treated.size(), "control", control.size());
  detail::check_arm(fn, "treated", treated);
  detail::check_arm(fn, "control", control);
  const std::size_t n = treated.size();
  const double nn = static_cast<double>(n);
  if (options.method == bootstrap_ci_method::studentized) {
    auto stat = [](const resample_view& t, const resample_view& c) {
      const auto idx = t.indices();
      const auto tv = t.values(), cv = c.values();
      double s = 0;
      for (auto i : idx) s += tv[i] - cv[i];
      const double k = static_cast<double>(idx.size());
      const double m = s / k;
      double ss = 0;
      for (auto i : idx) ss += (tv[i] - cv[i] - m) * (tv[i] - cv[i] - m);
      return estimate_and_variance{m, ss / (k - 1.0) / k};
    };
    bootstrap_options o = options;
    o.estimand = detail::estimand_or(options, "mean_paired_difference");
    return detail::paired_impl(fn, treated, control, stat, o);
  }
  if (options.method == bootstrap_ci_method::bca && !options.influence.empty() &&
      options.influence.size() != n) {
    detail::throw_invalid(fn, "influence", "must hold one value per pair");
  }
  double a[4] = {0, 0, 0, 0};
  for (std::size_t j = 0; j < n; ++j) a[j % 4] += treated[j] - control[j];
  const double t0 = ((a[0] + a[1]) + (a[2] + a[3])) / nn;
  bootstrap_result res;
  res.effect = detail::bootstrap_base(options, "mean_paired_difference", 0, 0, n);
  std::vector<double> t(options.replicates);
  parallel_chunks(t.size(), 16, options.threads, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t r = lo; r < hi; ++r) {
      const stream_id id{
          .seed = options.seed, .item = 0, .arm = 0, .replicate = static_cast<std::uint32_t>(r)};
      t[r] = detail::draw_and_sum_differences(id, treated, control) / nn;
    }
  });
  std::vector<double> influence;
  std::span<const double> inf = options.influence;
  if (options.method == bootstrap_ci_method::bca && inf.empty()) {
    influence.resize(n);
    for (std::size_t i = 0; i < n; ++i) influence[i] = (treated[i] - control[i]) - t0;
    inf = influence;
  }
  detail::finish_bootstrap(
      fn, res, {.t0 = t0, .t = t, .influence = inf, .strata = {}, .v0 = effect_estimate::nan, .v = {}},
      options);
  if (options.keep_replicates) res.replicates = std::move(t);
  return res;
}

[[nodiscard]] LATENTAUDIT_INLINE bootstrap_result bootstrap_interval(const bootstrap_replicates& input,
                                                                     const bootstrap_options& options) {
  constexpr std::string_view fn = "bootstrap_interval";
  detail::check_bootstrap_options(fn, options, false);
  detail::check_finite(fn, "t0", input.t0);
  const std::size_t b = input.replicates.size();
  detail::check_min_size(fn, "replicates", b, 2);
  detail::check_finite(fn, "replicates", input.replicates);
  if (options.method != bootstrap_ci_method::normal &&
      (static_cast<double>(b) + 1.0) * ((1.0 - options.level) / 2.0) < 1.0) {
    detail::throw_invalid(fn, "replicates",
                          "is too small for level " + number_text(options.level) +
                              ": needs (replicates + 1)(1 - level)/2 >= 1, got " + number_text(b));
  }
  if (options.method == bootstrap_ci_method::bca) {
    detail::check_min_size(fn, "influence", input.influence.size(), 2);
    detail::check_finite(fn, "influence", input.influence);
    if (!input.strata.empty()) {
      std::size_t total = 0;
      for (auto s : input.strata) {
        if (s == 0) detail::throw_invalid(fn, "strata", "must hold positive stratum sizes");
        total += s;
      }
      detail::check_same_size(fn, "strata (total)", total, "influence", input.influence.size());
    }
  }
  if (options.method == bootstrap_ci_method::studentized) {
    detail::check_same_size(fn, "replicate_variances", input.replicate_variances.size(), "replicates", b);
    for (std::size_t r = 0; r < b; ++r) {
      if (std::isnan(input.replicate_variances[r]) || input.replicate_variances[r] < 0) {
        detail::throw_invalid(fn, "replicate_variances",
                              "must hold non-negative values, got " +
                                  number_text(input.replicate_variances[r]) + " at index " +
                                  std::to_string(r));
      }
    }
    detail::check_nonnegative(fn, "t0_variance", input.t0_variance);
  }
  bootstrap_result res;
  res.effect.estimand = detail::estimand_or(options, "statistic");
  detail::finish_bootstrap(fn, res,
                           {.t0 = input.t0,
                            .t = input.replicates,
                            .influence = input.influence,
                            .strata = input.strata,
                            .v0 = input.t0_variance,
                            .v = input.replicate_variances},
                           options);
  if (options.keep_replicates) res.replicates.assign(input.replicates.begin(), input.replicates.end());
  return res;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_BOOTSTRAP_INL_HPP
