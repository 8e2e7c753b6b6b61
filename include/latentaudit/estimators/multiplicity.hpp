// SPDX-License-Identifier: MIT
// latentaudit: multiplicity control — adjusted p-values (Bonferroni, Holm, Hochberg,
// Benjamini–Hochberg, Benjamini–Yekutieli) computed exactly as R's p.adjust, and a family-wise
// decision helper over p-values or effect estimates.
// Formulas and references: docs/estimators/multiplicity.md.
#ifndef LATENTAUDIT_ESTIMATORS_MULTIPLICITY_HPP
#define LATENTAUDIT_ESTIMATORS_MULTIPLICITY_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief Which p-value adjustment to apply (R's `p.adjust` methods; statsmodels names in brackets).
enum class p_adjust_method {
  none,        ///< no adjustment ("none")
  bonferroni,  ///< min(1, m·p) ("bonferroni")
  holm,        ///< Holm (1979) step-down, controls the FWER ("holm")
  hochberg,    ///< Hochberg (1988) step-up, FWER under independence/PRDS ("hochberg"; "simes-hochberg")
  benjamini_hochberg,   ///< Benjamini–Hochberg (1995) step-up, controls the FDR ("BH"/"fdr"; "fdr_bh")
  benjamini_yekutieli,  ///< Benjamini–Yekutieli (2001), FDR under arbitrary dependence ("BY"; "fdr_by")
};

/// @brief R's name of a method: "none", "bonferroni", "holm", "hochberg", "BH", "BY".
[[nodiscard]] constexpr std::string_view p_adjust_method_name(p_adjust_method m) noexcept {
  switch (m) {
    case p_adjust_method::none:
      return "none";
    case p_adjust_method::bonferroni:
      return "bonferroni";
    case p_adjust_method::holm:
      return "holm";
    case p_adjust_method::hochberg:
      return "hochberg";
    case p_adjust_method::benjamini_hochberg:
      return "BH";
    case p_adjust_method::benjamini_yekutieli:
      return "BY";
  }
  return "unknown";
}

/// @brief Parses a method name as R (`"none"`, `"bonferroni"`, `"holm"`, `"hochberg"`, `"BH"`,
/// `"fdr"`, `"BY"`) or statsmodels (`"simes-hochberg"`, `"fdr_bh"`, `"fdr_by"`) spell it;
/// case-sensitive, as both peers are.
///
/// @code
/// const auto adjusted = p_adjust(p, parse_p_adjust_method("BH"));  // R's p.adjust(p, "BH")
/// @endcode
/// @param name the method name
/// @returns the method
/// @throws invalid_argument if the name is not one of those listed
[[nodiscard]] inline p_adjust_method parse_p_adjust_method(std::string_view name) {
  if (name == "none") return p_adjust_method::none;
  if (name == "bonferroni") return p_adjust_method::bonferroni;
  if (name == "holm") return p_adjust_method::holm;
  if (name == "hochberg" || name == "simes-hochberg") return p_adjust_method::hochberg;
  if (name == "BH" || name == "fdr" || name == "fdr_bh") return p_adjust_method::benjamini_hochberg;
  if (name == "BY" || name == "fdr_by") return p_adjust_method::benjamini_yekutieli;
  detail::throw_invalid("parse_p_adjust_method", "name",
                        "must be one of none, bonferroni, holm, hochberg, simes-hochberg, BH, fdr, "
                        "fdr_bh, BY, fdr_by; got '" +
                            std::string(name) + "'");
}

/// @brief Options of p_adjust.
struct p_adjust_options {
  /// Number of hypotheses in the family (R's `n`); 0 means the number of non-missing p-values.
  /// A larger value accounts for tests whose p-values are not passed (they count as p = 1 for
  /// Bonferroni/Holm/BH/BY, exactly as R treats them).
  std::size_t family_size = 0;
  /// NaN p-values: false (default) throws invalid_argument; true treats them as R's NA — they stay
  /// NaN in the output and do not count towards the default family size.
  bool allow_missing = false;
};

/// @brief Adjusted p-values, in input order, computed exactly as R's `p.adjust(p, method, n)`.
///
/// With p₍₁₎ ≤ … ≤ p₍ₖ₎ the sorted (non-missing) p-values and m the family size:
/// - bonferroni: min(1, m·pᵢ)
/// - holm: p̃₍ᵢ₎ = min(1, maxⱼ≤ᵢ (m+1−j)·p₍ⱼ₎)
/// - hochberg: p̃₍ᵢ₎ = min(1, minⱼ≥ᵢ (m+1−j)·p₍ⱼ₎)
/// - BH: p̃₍ᵢ₎ = min(1, minⱼ≥ᵢ (m/j)·p₍ⱼ₎)
/// - BY: as BH with the factor q = Σₖ₌₁ᵐ 1/k: min(1, minⱼ≥ᵢ (q·m/j)·p₍ⱼ₎)
///
/// Tied p-values receive equal adjusted values. For m ≤ 1 the input is returned unchanged (as R).
/// @param p p-values in [0, 1] (NaN only with `options.allow_missing`); may be empty
/// @param method the adjustment
/// @param options family size and missing-value policy
/// @returns adjusted p-values, same size and order as `p` (empty for empty input)
/// @throws invalid_argument if a p-value is outside [0, 1] or NaN (unless allowed), or if
///         `family_size` is non-zero and smaller than the number of non-missing p-values
[[nodiscard]] inline std::vector<double> p_adjust(std::span<const double> p, p_adjust_method method,
                                                  const p_adjust_options& options = {}) {
  constexpr std::string_view fn = "p_adjust";
  std::vector<std::size_t> present;  // indices of non-missing p-values, input order
  present.reserve(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (std::isnan(p[i])) {
      if (!options.allow_missing) {
        detail::throw_invalid(fn, "p",
                              "must hold p-values in [0, 1], got nan at index " + std::to_string(i) +
                                  " (set allow_missing to treat NaN as missing)");
      }
      continue;
    }
    if (!(p[i] >= 0.0 && p[i] <= 1.0)) {
      detail::throw_invalid(
          fn, "p",
          "must hold p-values in [0, 1], got " + number_text(p[i]) + " at index " + std::to_string(i));
    }
    present.push_back(i);
  }
  const std::size_t k = present.size();
  if (options.family_size != 0 && options.family_size < k) {
    detail::throw_invalid(fn, "family_size",
                          "must be 0 or at least the number of non-missing p-values (" + std::to_string(k) +
                              "), got " + std::to_string(options.family_size));
  }
  std::vector<double> out(p.begin(), p.end());
  const std::size_t m = options.family_size != 0 ? options.family_size : k;
  if (m <= 1 || method == p_adjust_method::none) return out;  // R: `if (n <= 1) return(p0)`
  const double md = static_cast<double>(m);

  if (method == p_adjust_method::bonferroni) {
    for (std::size_t i : present) out[i] = std::fmin(1.0, md * p[i]);
    return out;
  }

  // Stable order of the non-missing p-values: ascending for Holm, descending for the step-up
  // methods (R's order(), which keeps ties in input order; tie order does not change the result).
  std::vector<std::size_t> o = present;
  if (method == p_adjust_method::holm) {
    std::stable_sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
    double run = 0.0;  // cummax
    for (std::size_t r = 0; r < k; ++r) {
      const double i = static_cast<double>(r + 1);  // rank 1..k from the smallest
      run = std::fmax(run, (md + 1.0 - i) * p[o[r]]);
      out[o[r]] = std::fmin(1.0, run);
    }
    return out;
  }

  std::stable_sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  double q = 1.0;  // BY's harmonic factor Σ 1/k, accumulated in long double as R's sum()
  if (method == p_adjust_method::benjamini_yekutieli) {
    long double s = 0.0L;
    for (std::size_t j = 1; j <= m; ++j) s += 1.0L / static_cast<long double>(j);
    q = static_cast<double>(s);
  }
  double run = INFINITY;  // cummin from the largest p-value down
  for (std::size_t r = 0; r < k; ++r) {
    const double i = static_cast<double>(k - r);  // rank of o[r] from the smallest: k, k-1, ..., 1
    double v = 0.0;
    switch (method) {
      case p_adjust_method::hochberg:
        v = (md + 1.0 - i) * p[o[r]];
        break;
      case p_adjust_method::benjamini_hochberg:
        v = md / i * p[o[r]];
        break;
      default:
        v = q * md / i * p[o[r]];
        break;  // benjamini_yekutieli: R's q * n/i * p
    }
    run = std::fmin(run, v);
    out[o[r]] = std::fmin(1.0, run);
  }
  return out;
}

/// @brief Options of multiple_test.
struct multiple_test_options {
  p_adjust_method method = p_adjust_method::holm;  ///< the adjustment (R's default, Holm)
  double alpha = 0.05;          ///< family-wise error rate (FWER methods) or FDR level, in (0, 1)
  std::size_t family_size = 0;  ///< hypotheses in the family; 0: the number of non-missing p-values
  /// Effect estimates whose status is not ok (or NaN p-values): throw numerical_error (default),
  /// or flag — they are kept as missing (adjusted p NaN, not rejected, not counted in the family).
  on_degenerate if_degenerate = on_degenerate::throw_error;
};

/// @brief Decisions for a family of hypotheses.
struct [[nodiscard]] multiple_test_result {
  p_adjust_method method = p_adjust_method::holm;  ///< the adjustment used
  double alpha = 0.05;                             ///< the level used
  std::size_t family_size = 0;                     ///< m, the family size used
  std::vector<double> p_values{};                  ///< raw p-values, input order (NaN: missing)
  std::vector<double> adjusted_p_values{};         ///< adjusted p-values, input order (NaN: missing)
  std::vector<bool> rejected{};                    ///< adjusted p ≤ alpha, input order
  std::size_t n_rejected = 0;                      ///< number of rejections
  std::size_t n_missing = 0;                       ///< entries flagged as missing
};

namespace detail {

/// @brief Shared tail of the multiple_test overloads: adjust and decide.
[[nodiscard]] inline multiple_test_result decide_family(std::vector<double> p, const multiple_test_options& o,
                                                        std::size_t n_missing) {
  multiple_test_result r{.method = o.method, .alpha = o.alpha};
  r.adjusted_p_values = p_adjust(p, o.method, {.family_size = o.family_size, .allow_missing = true});
  r.family_size = o.family_size != 0 ? o.family_size : p.size() - n_missing;
  r.rejected.assign(p.size(), false);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (r.adjusted_p_values[i] <= o.alpha) {  // false for NaN (missing)
      r.rejected[i] = true;
      ++r.n_rejected;
    }
  }
  r.p_values = std::move(p);
  r.n_missing = n_missing;
  return r;
}

inline void check_multiple_test_options(std::string_view fn, const multiple_test_options& o) {
  check_open_unit(fn, "alpha", o.alpha);
}

}  // namespace detail

/// @brief Adjusts a family of p-values and decides which hypotheses are rejected at `alpha`:
/// hypothesis i is rejected iff its adjusted p-value is ≤ alpha (equivalent to the step-down /
/// step-up procedures of Holm, Hochberg, Benjamini–Hochberg and to statsmodels' `multipletests`).
/// @param p_values p-values in [0, 1]; NaN counts as missing only if `if_degenerate` is flag
/// @param options method, alpha, family size, missing-value policy
/// @returns adjusted p-values and decisions in input order (empty input gives an empty result)
/// @throws invalid_argument for alpha outside (0, 1), p-values outside [0, 1], NaN p-values
///         (unless flagged) or a family size below the number of p-values
[[nodiscard]] inline multiple_test_result multiple_test(std::span<const double> p_values,
                                                        const multiple_test_options& options = {}) {
  constexpr std::string_view fn = "multiple_test";
  detail::check_multiple_test_options(fn, options);
  std::size_t n_missing = 0;
  for (std::size_t i = 0; i < p_values.size(); ++i) {
    if (std::isnan(p_values[i])) {
      if (options.if_degenerate == on_degenerate::throw_error) {
        detail::throw_invalid(fn, "p_values",
                              "must hold p-values in [0, 1], got nan at index " + std::to_string(i));
      }
      ++n_missing;
    } else if (!(p_values[i] >= 0.0 && p_values[i] <= 1.0)) {
      detail::throw_invalid(
          fn, "p_values",
          "must hold p-values in [0, 1], got " + number_text(p_values[i]) + " at index " + std::to_string(i));
    }
  }
  const std::size_t k = p_values.size() - n_missing;
  if (options.family_size != 0 && options.family_size < k) {
    detail::throw_invalid(fn, "family_size",
                          "must be 0 or at least the number of non-missing p-values (" + std::to_string(k) +
                              "), got " + std::to_string(options.family_size));
  }
  return detail::decide_family(std::vector<double>(p_values.begin(), p_values.end()), options, n_missing);
}

/// @brief Multiple testing over a family of effect estimates (e.g. one per subgroup or per arm
/// contrast), using each estimate's two-sided `p_value`.
/// @param estimates the family; each must have status ok and a p-value in [0, 1]
/// @param options method, alpha, family size; with `if_degenerate = flag`, estimates whose status
///        is not ok are treated as missing (adjusted p NaN, not rejected, not counted in m)
/// @returns adjusted p-values and decisions in the order of `estimates`
/// @throws numerical_error if an estimate's status is not ok (unless flagged);
///         invalid_argument if an ok estimate has no p-value (NaN) or one outside [0, 1], for alpha
///         outside (0, 1), or a family size below the number of usable estimates
[[nodiscard]] inline multiple_test_result multiple_test(std::span<const effect_estimate> estimates,
                                                        const multiple_test_options& options = {}) {
  constexpr std::string_view fn = "multiple_test";
  detail::check_multiple_test_options(fn, options);
  std::vector<double> p(estimates.size());
  std::size_t n_missing = 0;
  for (std::size_t i = 0; i < estimates.size(); ++i) {
    const auto& e = estimates[i];
    if (e.status != estimate_status::ok) {
      if (options.if_degenerate == on_degenerate::throw_error) {
        detail::throw_numerical(fn, "estimate at index " + std::to_string(i) + " (" + e.method +
                                        ") has status " + std::string(status_name(e.status)) +
                                        "; its p-value is undefined");
      }
      p[i] = NAN;
      ++n_missing;
      continue;
    }
    if (!(e.p_value >= 0.0 && e.p_value <= 1.0)) {
      detail::throw_invalid(
          fn, "estimates",
          "must carry p-values in [0, 1], got " + number_text(e.p_value) + " at index " + std::to_string(i));
    }
    p[i] = e.p_value;
  }
  const std::size_t k = estimates.size() - n_missing;
  if (options.family_size != 0 && options.family_size < k) {
    detail::throw_invalid(fn, "family_size",
                          "must be 0 or at least the number of usable estimates (" + std::to_string(k) +
                              "), got " + std::to_string(options.family_size));
  }
  return detail::decide_family(std::move(p), options, n_missing);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_MULTIPLICITY_HPP
