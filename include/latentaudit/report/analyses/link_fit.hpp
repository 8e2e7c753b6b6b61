// SPDX-License-Identifier: MIT
// latentaudit: the link fitted from measured relays — records that crossed a real link
// (transfer_measured_s, trial_driver::set_remote_sender) give the frame's measured crossing time
// at its size; least squares of time on bytes gives the link's fixed cost α (intercept) and its
// bandwidth (1 / slope), with HC3 sandwich intervals. The per-arm table sets the modeled transfer
// (the records' transfer_s) beside the measured one. `--link measured` makes the cost verdicts use
// the fitted link. Formulas and reference: docs/audit-report.md, "Link fitted from measured relays".
#ifndef LATENTAUDIT_REPORT_ANALYSES_LINK_FIT_HPP
#define LATENTAUDIT_REPORT_ANALYSES_LINK_FIT_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "../../estimators/effect_estimate.hpp"
#include "../../estimators/regression.hpp"
#include "../../trial/link.hpp"
#include "../../trial/record.hpp"

namespace latentaudit {

/// @brief Options of fit_link().
struct link_fit_options {
  double level = 0.95;  ///< confidence level of the α and slope intervals, in (0, 1)
};

/// @brief A link fitted from measured relays: t = α + bytes / bandwidth + error.
struct link_fit_result {
  std::size_t relays = 0;          ///< records used (transfer_measured_s present, bytes > 0, no relay_error)
  std::size_t distinct_sizes = 0;  ///< distinct frame sizes among them
  std::size_t failed_relays = 0;   ///< records with relay_error (left out of the fit)
  effect_estimate alpha_s;         ///< the intercept α (seconds per relay), HC3 interval with n − 2 df
  effect_estimate seconds_per_byte;  ///< the slope 1 / bandwidth, HC3 interval with n − 2 df
  double bandwidth_bytes_s = std::numeric_limits<double>::quiet_NaN();  ///< 1 / slope (NaN if slope ≤ 0)
  /// Interval of the bandwidth: 1 / (slope interval), the ends swapped; an end is absent (unbounded)
  /// when the slope interval reaches 0 or below.
  std::optional<double> bandwidth_low, bandwidth_high;
  std::string missing;  ///< why there is no fit ("" when there is one)

  /// @brief Whether the fit exists (missing is empty).
  [[nodiscard]] bool ok() const noexcept { return missing.empty(); }
  /// @brief The fitted link as a preset named `name`: bandwidth 1/slope and α clamped at 0. When the
  /// slope is not positive (frames too small for the link's speed to show), the upper limit of its
  /// interval is used instead: the slowest bandwidth the data allow (bandwidth_low).
  /// @throws invalid_argument if there is no fit or the slope's whole interval is ≤ 0.
  [[nodiscard]] link_preset as_link(std::string name = "measured") const {
    const double slope = seconds_per_byte.estimate > 0 ? seconds_per_byte.estimate : seconds_per_byte.ci_high;
    if (!ok() || !(slope > 0))
      latentaudit::detail::throw_invalid(
          "link_fit_result::as_link", "fit",
          ok() ? "has a slope interval at or below 0 (no finite bandwidth)" : "is missing: " + missing);
    return {std::move(name), 1.0 / slope, std::max(0.0, alpha_s.estimate)};
  }
};

/// @brief Modeled against measured transfer of one arm's relays.
struct link_arm_row {
  std::string arm;               ///< arm label
  std::size_t relays = 0;        ///< records with transfer_measured_s and bytes > 0
  std::size_t failed = 0;        ///< of them, rejected frames (relay_error)
  double mean_bytes = 0;         ///< mean frame size
  double mean_modeled_s = 0;     ///< mean transfer_s (the records' modeled link)
  double mean_measured_s = 0;    ///< mean transfer_measured_s
  double median_measured_s = 0;  ///< median transfer_measured_s
  double mean_fitted_s =
      std::numeric_limits<double>::quiet_NaN();  ///< mean α̂ + bytes · slope (NaN without a fit)
};

/// @brief Least squares of the measured crossing time on the frame size over the records that
/// crossed a real link: t_i = α + β·b_i + e_i (β = 1/bandwidth), OLS with the HC3 covariance
/// (MacKinnon & White 1985), t reference with n − 2 df; bandwidth interval 1/(β interval).
/// Records without transfer_measured_s, with bytes = 0 or with relay_error are left out.
/// @returns the fit, or missing = the reason (fewer than 3 relays or 2 distinct sizes, an exact fit).
/// @throws invalid_argument on a bad level.
[[nodiscard]] inline link_fit_result fit_link(std::span<const trial_record> records,
                                              const link_fit_options& o = {}) {
  if (!(o.level > 0 && o.level < 1)) detail::throw_invalid("fit_link", "options.level", "must be in (0, 1)");
  link_fit_result out;
  std::vector<double> x, y;
  std::set<std::uint64_t> sizes;
  for (const auto& r : records) {
    if (!r.transfer_measured_s || r.bytes == 0) continue;
    if (r.relay_error) {
      ++out.failed_relays;
      continue;
    }
    x.push_back(static_cast<double>(r.bytes));
    y.push_back(*r.transfer_measured_s);
    sizes.insert(r.bytes);
  }
  out.relays = x.size();
  out.distinct_sizes = sizes.size();
  if (out.relays < 3 || out.distinct_sizes < 2) {
    out.missing = out.relays == 0
                      ? "no record holds transfer_measured_s (relays over a real link: --relay-transport)"
                      : "needs at least 3 measured relays of at least 2 frame sizes, got " +
                            std::to_string(out.relays) + " of " + std::to_string(out.distinct_sizes);
    return out;
  }
  // bytes in MB keep the design well scaled; the slope is converted back to seconds per byte
  std::vector<double> mb(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) mb[i] = x[i] / 1e6;
  try {
    const auto X = design_builder(x.size()).intercept("alpha").add("per_mb", mb).build();
    // Stage 1: OLS; its fitted times set the weights of stage 2, WLS with w = 1 / max(ŷ, floor)²
    // (timing noise grows with the time), and the HC3 covariance keeps the intervals valid when
    // that variance model is wrong (Romano & Wolf 2017).
    const auto first = ols(X, y, ols_options{.covariance = covariance_type::classical, .level = o.level});
    const double a0 = first.coefficients[0], b0 = first.coefficients[1];
    double top = 0;
    for (double m : mb) top = std::max(top, a0 + b0 * m);
    std::vector<double> w(x.size());
    const double floor = top > 0 ? 1e-3 * top : 1.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double f = std::max(a0 + b0 * mb[i], floor);
      w[i] = 1.0 / (f * f);
    }
    // the weights' scale does not matter: normalise to mean 1
    double wm = 0;
    for (double v : w) wm += v;
    wm /= static_cast<double>(w.size());
    for (double& v : w) v /= wm;
    const auto fit = ols(X, y,
                         ols_options{.covariance = covariance_type::hc3,
                                     .distribution = reference_distribution::t_residual,
                                     .level = o.level,
                                     .weights = w});
    out.alpha_s = fit.term("alpha");
    out.seconds_per_byte = fit.term("per_mb");
    for (double* v : {&out.seconds_per_byte.estimate, &out.seconds_per_byte.std_error,
                      &out.seconds_per_byte.ci_low, &out.seconds_per_byte.ci_high})
      *v /= 1e6;
  } catch (const error& e) {
    out.missing = std::string("the least-squares fit failed: ") + e.what();
    return out;
  }
  out.alpha_s.estimand = "link fixed cost alpha (s)";
  out.seconds_per_byte.estimand = "link seconds per byte (1 / bandwidth)";
  const auto& s = out.seconds_per_byte;
  if (s.estimate > 0) out.bandwidth_bytes_s = 1.0 / s.estimate;
  if (s.ci_high > 0) out.bandwidth_low = 1.0 / s.ci_high;
  if (s.ci_low > 0) out.bandwidth_high = 1.0 / s.ci_low;
  return out;
}

/// @brief Modeled vs measured transfer per arm (arms in label order), over the records with
/// transfer_measured_s and bytes > 0; mean_fitted_s uses `fit` when it exists.
[[nodiscard]] inline std::vector<link_arm_row> link_by_arm(std::span<const trial_record> records,
                                                           const link_fit_result& fit) {
  std::map<std::string, std::vector<const trial_record*>> by;
  for (const auto& r : records)
    if (r.transfer_measured_s && r.bytes > 0) by[r.arm].push_back(&r);
  std::vector<link_arm_row> out;
  for (const auto& [arm, rs] : by) {
    link_arm_row row{.arm = arm, .relays = rs.size()};
    std::vector<double> m;
    double fitted = 0;
    for (const auto* r : rs) {
      row.failed += r->relay_error ? 1 : 0;
      row.mean_bytes += static_cast<double>(r->bytes);
      row.mean_modeled_s += r->latency.transfer_s;
      row.mean_measured_s += *r->transfer_measured_s;
      m.push_back(*r->transfer_measured_s);
      fitted += fit.alpha_s.estimate + static_cast<double>(r->bytes) * fit.seconds_per_byte.estimate;
    }
    const auto n = static_cast<double>(rs.size());
    row.mean_bytes /= n;
    row.mean_modeled_s /= n;
    row.mean_measured_s /= n;
    std::sort(m.begin(), m.end());
    row.median_measured_s =
        m.size() % 2 == 1 ? m[m.size() / 2] : 0.5 * (m[m.size() / 2 - 1] + m[m.size() / 2]);
    if (fit.ok()) row.mean_fitted_s = fitted / n;
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_ANALYSES_LINK_FIT_HPP
