// SPDX-License-Identifier: MIT
// Tests for core/detail/check.hpp and core/error.hpp: every helper throws the right type with a
// message that names the function, the argument and what was expected.
#include <latentaudit/config.hpp>  // before the internal check.hpp (white-box test)
#include <latentaudit/core/detail/check.hpp>
#include <latentaudit/core/error.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "support/catch.hpp"

namespace d = latentaudit::detail;
using Catch::Matchers::Contains;

TEST_CASE("the error hierarchy derives from latentaudit::error", "[core][error]") {
  STATIC_REQUIRE(std::is_base_of_v<latentaudit::error, latentaudit::invalid_argument>);
  STATIC_REQUIRE(std::is_base_of_v<latentaudit::invalid_argument, latentaudit::shape_mismatch>);
  STATIC_REQUIRE(std::is_base_of_v<latentaudit::error, latentaudit::corrupt_data>);
  STATIC_REQUIRE(std::is_base_of_v<latentaudit::corrupt_data, latentaudit::authentication_failed>);
  STATIC_REQUIRE(std::is_base_of_v<latentaudit::error, latentaudit::incompatible_model>);
  STATIC_REQUIRE(std::is_base_of_v<latentaudit::error, latentaudit::numerical_error>);
  STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, latentaudit::error>);
}

TEST_CASE("check helpers name function, argument and expectation", "[core][check]") {
  CHECK_THROWS_WITH(d::check_open_unit("f", "level", 1.5), "f: argument 'level' must lie in (0, 1), got 1.5");
  CHECK_THROWS_AS(d::check_open_unit("f", "level", 0.0), latentaudit::invalid_argument);
  CHECK_THROWS_AS(d::check_open_unit("f", "level", std::nan("")), latentaudit::invalid_argument);
  CHECK_NOTHROW(d::check_open_unit("f", "level", 0.95));
  CHECK_THROWS_WITH(d::check_finite("g", "x", INFINITY), "g: argument 'x' must be finite, got inf");
  const std::vector<double> xs{1.0, 2.0, std::nan("")};
  CHECK_THROWS_WITH(d::check_finite("g", "y", xs),
                    "g: argument 'y' must hold finite values, got nan at index 2");
  CHECK_THROWS_WITH(d::check_min_size("h", "treated", 1, 2),
                    "h: argument 'treated' has 1 observation, expected at least 2");
  CHECK_THROWS_AS(d::check_same_size("h", "a", 3, "b", 4), latentaudit::shape_mismatch);
  CHECK_THROWS_WITH(d::check_same_size("h", "a", 3, "b", 4),
                    "h: arguments 'a' and 'b' must have the same size, got 3 and 4");
  CHECK_THROWS_WITH(d::check_positive("p", "sigma", -1.0), Contains("'sigma'") && Contains("positive"));
  CHECK_THROWS_AS(d::check_nonnegative("p", "sigma", -0.5), latentaudit::invalid_argument);
  CHECK_NOTHROW(d::check_nonnegative("p", "sigma", 0.0));
  CHECK_THROWS_WITH(d::check_in_range("p", "threads", 0, 1, 64),
                    "p: argument 'threads' must lie in [1, 64], got 0");
  const std::vector<double> bin{0.0, 1.0, 0.5};
  CHECK_THROWS_WITH(d::check_binary("m", "y", bin),
                    "m: argument 'y' must hold 0/1 outcomes, got 0.5 at index 2");
  CHECK_THROWS_AS(d::throw_numerical("m", "zero variance"), latentaudit::numerical_error);
  CHECK(latentaudit::number_text(0.1) == "0.1");
  CHECK(latentaudit::number_text(-INFINITY) == "-inf");
}
