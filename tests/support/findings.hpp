// SPDX-License-Identifier: MIT
// Test support: a finding or a paired effect of a report looked up by id (the case fails when it is
// missing), and the audit options of the fast report tests.
#ifndef LATENTAUDIT_TESTS_SUPPORT_FINDINGS_HPP
#define LATENTAUDIT_TESTS_SUPPORT_FINDINGS_HPP

#include <latentaudit/report/audit.hpp>
#include <latentaudit/report/finding.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace latentaudit::test {

/// The finding `id` of `fs`; fails the test case when there is none.
inline const finding& find(const std::vector<finding>& fs, const std::string& id) {
  for (const auto& f : fs)
    if (f.id == id) return f;
  FAIL("no finding " << id);
  return fs.front();
}

/// The paired effect `id` of `es`; fails the test case when there is none.
inline const paired_effect& effect(const std::vector<paired_effect>& es, const std::string& id) {
  for (const auto& e : es)
    if (e.id == id) return e;
  FAIL("no effect " << id);
  return es.front();
}

/// The report options of the fast tests: 199 bootstrap replicates.
inline audit_options fast_options() {
  audit_options o;
  o.bootstrap_replicates = 199;
  return o;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_FINDINGS_HPP
