// SPDX-License-Identifier: MIT
// examples/02_custom_engine.cpp — a user's own engine adapter run under the trial driver — as a
// test, so the sanitizer stage (which builds no examples) still covers the custom-engine path.
// The example's own main() is the test body: it returns 0 when the planted relay semantics hold.
#include <catch2/catch.hpp>

#define main latentaudit_example_02_main
#include "../../examples/02_custom_engine.cpp"
#undef main

TEST_CASE("custom engine: examples/02_custom_engine.cpp runs under the driver and finds the relay effect") {
  CHECK(latentaudit_example_02_main() == 0);
}
