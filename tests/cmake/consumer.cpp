// SPDX-License-Identifier: MIT
// A consumer of the installed (or add_subdirectory'd) package. The find_package consumer includes
// the umbrella header (every header, header-only and compiled mode); the add_subdirectory one,
// which proves the wiring of the targets, includes one narrow header
// (LATENTAUDIT_CONSUMER_NARROW), so the suite does not compile the umbrella header-only twice.
#ifdef LATENTAUDIT_CONSUMER_NARROW
#include <latentaudit/estimators/difference_in_means.hpp>
#else
#include <latentaudit/latentaudit.hpp>
#endif

#include <cstdio>
#include <vector>

int main() {
  const std::vector<double> treated{0.9, 1.1, 1.3, 0.7, 1.0};
  const std::vector<double> control{0.2, 0.4, 0.1, 0.5, 0.3};
  const auto r = latentaudit::welch_t_test(treated, control);
  std::printf("%s estimate=%.6f p=%.3g\n", r.method.c_str(), r.estimate, r.p_value);
  return r.status == latentaudit::estimate_status::ok ? 0 : 1;
}
