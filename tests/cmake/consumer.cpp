// SPDX-License-Identifier: MIT
// A consumer of the installed (or add_subdirectory'd) package. The find_package header-only
// consumer includes the umbrella header (every header in header-only mode, through the project's
// compiler); the compiled-mode and add_subdirectory ones, which prove the wiring of the targets,
// include one narrow header (LATENTAUDIT_CONSUMER_NARROW; the add_subdirectory one through GCC where
// the project is built with clang), so the suite parses the umbrella header-only once.
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
