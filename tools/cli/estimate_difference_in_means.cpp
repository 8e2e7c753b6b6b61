// SPDX-License-Identifier: MIT
// latentaudit CLI: `estimate welch|student|paired` (estimators/difference_in_means.hpp).
#include <latentaudit/estimators/difference_in_means.hpp>

#include "cli.hpp"
#include "data_input.hpp"

namespace latentaudit::cli {
namespace {

json_value run_two_sample(const arguments& args, bool welch) {
  const auto arms = load_two_arms(args, false, false);
  const t_test_options o{.level = args.level()};
  const auto e =
      welch ? welch_t_test(arms.treated, arms.control, o) : student_t_test(arms.treated, arms.control, o);
  json_value j = effect_to_json(e);
  j.set("design", "two_sample");
  return j;
}

json_value run_paired(const arguments& args) {
  if (!wants_pairs(args)) {
    throw usage_error(args.command() +
                      ": paired data needed: give --pair COL (long layout) or --outcome-treated COL "
                      "--outcome-control COL (wide layout)");
  }
  const auto p = load_pairs(args, false);
  const auto e = paired_t_test(p.treated, p.control, t_test_options{.level = args.level()});
  json_value j = effect_to_json(e);
  set_pairs(j, e.n_pairs);
  j.set("design", "paired");
  return j;
}

std::vector<option_spec> two_sample_options() {
  return {common_option("--data"), common_option("--outcome"), common_option("--treatment"),
          common_option("--level")};
}

[[maybe_unused]] const bool reg_welch = register_estimate_method({
    "welch",
    "Welch two-sample t test (unequal variances), R t.test(y1, y0)",
    "Welch's two-sample t test of mean(treated) - mean(control) with the Welch-Satterthwaite\n"
    "degrees of freedom; the interval and p-value use the t distribution (R: t.test(y1, y0)).\n"
    "Needs at least 2 observations per arm and non-constant data.\n",
    two_sample_options(),
    [](const arguments& a) { return run_two_sample(a, true); },
});

[[maybe_unused]] const bool reg_student = register_estimate_method({
    "student",
    "Student two-sample t test (pooled variance), R t.test(y1, y0, var.equal = TRUE)",
    "Student's two-sample t test with a pooled variance and n1 + n0 - 2 degrees of freedom\n"
    "(R: t.test(y1, y0, var.equal = TRUE); scipy: ttest_ind default).\n",
    two_sample_options(),
    [](const arguments& a) { return run_two_sample(a, false); },
});

[[maybe_unused]] const bool reg_paired = register_estimate_method({
    "paired",
    "paired t test on within-pair differences, R t.test(y1, y0, paired = TRUE)",
    "Paired t test of the mean within-pair difference treated - control, df = pairs - 1\n"
    "(R: t.test(y1, y0, paired = TRUE)). Pairs come from --pair COL (long layout: each id has\n"
    "exactly one treated and one control row) or from --outcome-treated/--outcome-control\n"
    "(wide layout: one row per pair).\n",
    paired_options(),
    run_paired,
});

}  // namespace
}  // namespace latentaudit::cli
