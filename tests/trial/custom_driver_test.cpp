// SPDX-License-Identifier: MIT
// examples/04_custom_driver.cpp — a custom driver built from trial/record_builder.hpp writes the
// records the built-in driver writes (timings aside) — as a test, so the sanitizer stage (which
// builds no examples) covers it too.
#include <catch2/catch.hpp>

#define main latentaudit_example_04_main
#include "../../examples/04_custom_driver.cpp"
#undef main

TEST_CASE("custom driver: examples/04_custom_driver.cpp writes the built-in driver's records") {
  std::string models = std::string(LATENTAUDIT_SOURCE_DIR) + "/models";
  char name[] = "04_custom_driver";
  char* argv[] = {name, models.data(), nullptr};
  CHECK(latentaudit_example_04_main(2, argv) == 0);
}
