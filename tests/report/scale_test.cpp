// SPDX-License-Identifier: MIT
// The report at scale (issue 51 item 1): 10 000 items x 3 seeds x 3 arms (90 000 records of the
// synthetic stack, support/synthetic_records.hpp) through build_audit_report, the library call behind
// `latentaudit report`: it completes, counts every record, and every finding and demonstration keeps
// its estimate inside its interval with a three-valued verdict (1.5 s in the release build; 2000 items
// under the sanitizers, past the demonstrations' cap). Sizes around the demonstrations' cap
// (450 items) and whole audits up to 5000 items are the soak's (tests/cli/scale_soak_cli_test.cpp);
// 10^5 and 10^6 records through the CLI are bench_report's (benchmarks/README.md).
#include <latentaudit/report/report.hpp>

#include <cmath>
#include <vector>

#include "support/catch.hpp"
#include "support/sanitizer.hpp"
#include "support/synthetic_records.hpp"

namespace la = latentaudit;

namespace scale_report_test {

void check_interval(const la::finding& f) {
  INFO(f.id << ": " << f.estimate << " [" << f.ci_low << ", " << f.ci_high << "]");
  CHECK(
      (f.answer == la::verdict::yes || f.answer == la::verdict::no || f.answer == la::verdict::inconclusive));
  if (std::isnan(f.estimate)) return;  // not estimable: written as null
  CHECK(f.ci_low <= f.estimate + 1e-12);
  CHECK(f.estimate <= f.ci_high + 1e-12);
}

}  // namespace scale_report_test

TEST_CASE("report at 10 000 items x 3 seeds: every record counted, every estimate inside its interval",
          "[report][scale]") {
  la::test::synthetic_settings s;
  s.items = la::test::full_or_sanitized<std::size_t>(10000, 2000);  // 2000 under the sanitizers
  s.seeds = 3;
  s.seed = 5111;
  s.arms = {"no_comm", "text_full", "kv_full"};
  const auto records = la::test::synthetic_records(s);
  REQUIRE(records.size() == s.items * 9u);
  la::audit_options o;
  o.bootstrap_replicates = 200;
  o.seed = 5111;
  const auto r = la::build_audit_report(records, o);
  CHECK(r.core.n_records == records.size());
  CHECK(r.findings.size() > 10u);
  for (const auto& f : r.findings) scale_report_test::check_interval(f);
  for (const auto& f : r.demonstrations) scale_report_test::check_interval(f);
}
