// SPDX-License-Identifier: MIT
// Precompiled header of the test programs: the heavy third-party headers (Catch2, Eigen,
// Boost.Math distributions), the standard library and the library's own declarations, parsed once
// per build instead of once per test file. Header self-sufficiency is tested apart, by the
// per-header check (one translation unit per header, no precompiled header).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include "catch.hpp"

// The library itself (declarations only: the test programs link latentaudit::compiled), parsed
// once per build instead of once per test file (~6 s of each file's ~17 s compile).
#include <latentaudit/latentaudit.hpp>
#include <latentaudit/report/detail/arm_roles.hpp>
#include <latentaudit/report/detail/audit_data.hpp>
