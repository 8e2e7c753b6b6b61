// SPDX-License-Identifier: MIT
// latentaudit: the result aggregate every estimator returns.
#ifndef LATENTAUDIT_ESTIMATORS_EFFECT_ESTIMATE_HPP
#define LATENTAUDIT_ESTIMATORS_EFFECT_ESTIMATE_HPP

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace latentaudit {

/// @brief Whether an estimate is usable.
enum class estimate_status {
  ok,          ///< every field is defined
  degenerate,  ///< the data make the statistic undefined (e.g. zero variance); fields are NaN
  failed,      ///< a numerical method failed (no convergence); fields are NaN
};

/// @brief What to do when the statistics are undefined for the data (zero variance, no
/// discordant pairs, a degenerate bootstrap distribution).
enum class on_degenerate {
  throw_error,  ///< throw latentaudit::numerical_error (the default)
  flag,         ///< return an effect_estimate with status degenerate and NaN fields
};

/// @brief Text name of a status ("ok", "degenerate", "failed").
[[nodiscard]] constexpr std::string_view status_name(estimate_status s) noexcept {
  switch (s) {
    case estimate_status::ok:
      return "ok";
    case estimate_status::degenerate:
      return "degenerate";
    case estimate_status::failed:
      return "failed";
  }
  return "unknown";
}

/// @brief One estimated effect with its uncertainty. Effects are treated minus control.
///
/// Unused fields hold NaN (e.g. `df` for a normal-reference method) or 0 (counts).
struct effect_estimate {
  static constexpr double nan = std::numeric_limits<double>::quiet_NaN();  ///< "not applicable"

  std::string method;         ///< e.g. "welch", "paired_t", "mcnemar_exact", "bootstrap_bca"
  std::string estimand;       ///< e.g. "difference_in_means", "risk_difference", "att"
  double estimate = nan;      ///< the point estimate
  double std_error = nan;     ///< its standard error (NaN where the method has none)
  double ci_low = nan;        ///< lower confidence limit
  double ci_high = nan;       ///< upper confidence limit
  double level = nan;         ///< confidence level of [ci_low, ci_high], e.g. 0.95
  double df = nan;            ///< degrees of freedom of the reference distribution (NaN: normal/exact)
  double statistic = nan;     ///< the test statistic (t, z, chi-square, ...)
  double p_value = nan;       ///< two-sided p-value for "no effect" unless the method says otherwise
  std::size_t n_treated = 0;  ///< treated observations (unpaired designs)
  std::size_t n_control = 0;  ///< control observations (unpaired designs)
  std::size_t n_pairs = 0;    ///< pairs (paired designs)
  estimate_status status = estimate_status::ok;  ///< whether the fields are defined
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_EFFECT_ESTIMATE_HPP
