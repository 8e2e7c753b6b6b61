// SPDX-License-Identifier: MIT
// A consumer of the installed (or add_subdirectory'd) package: includes the umbrella header.
#include <latentaudit/latentaudit.hpp>

#include <cstdio>
#include <vector>

int main() {
  const std::vector<double> treated{0.9, 1.1, 1.3, 0.7, 1.0};
  const std::vector<double> control{0.2, 0.4, 0.1, 0.5, 0.3};
  const auto r = latentaudit::welch_t_test(treated, control);
  std::printf("%s estimate=%.6f p=%.3g\n", r.method.c_str(), r.estimate, r.p_value);
  return r.status == latentaudit::estimate_status::ok ? 0 : 1;
}
