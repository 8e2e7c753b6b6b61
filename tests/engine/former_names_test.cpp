// SPDX-License-Identifier: MIT
// The engine module's former names still compile (one word, "engine", for one concept; the
// former "backend" spellings are deprecated): the forwarding headers under backend/ and the
// deprecated aliases name the same entities as the new ones.
#include <latentaudit/backend.hpp>
#include <latentaudit/backend/reference_cpu.hpp>

#include <catch2/catch.hpp>

#include <type_traits>

#include "support/common.hpp"

#if defined(__clang__)
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
#else
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

TEST_CASE("engine: the former backend names are deprecated aliases of the engine names", "[engine]") {
  using namespace latentaudit;
  STATIC_REQUIRE(std::is_same_v<reference_cpu_backend, reference_cpu_engine>);
  STATIC_REQUIRE(std::is_same_v<backend_error, engine_error>);
  STATIC_REQUIRE(std::is_same_v<backend_info, engine_info>);
  STATIC_REQUIRE(std::is_same_v<backend_capabilities, engine_capabilities>);
  STATIC_REQUIRE(inference_backend<reference_cpu_engine>);
  STATIC_REQUIRE(attention_capturing_backend<reference_cpu_engine>);
  const auto e = reference_cpu_backend::load(latentaudit::test::models + "organism-a", 1);
  CHECK(e.info().vocab_size > 0);
  CHECK_THROWS_AS(reference_cpu_backend::load(latentaudit::test::models + "no-such-model", 1), error);
}
