// SPDX-License-Identifier: MIT
// Precompiled header of the test programs: the heavy third-party headers (Catch2, Eigen,
// Boost.Math distributions) and the standard library, parsed once per build instead of once per
// test file. Only headers outside latentaudit, so header self-sufficiency is still tested by the
// separate per-header targets.
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
