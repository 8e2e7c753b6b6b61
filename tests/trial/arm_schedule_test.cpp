// SPDX-License-Identifier: MIT
// The schedule of an audit that stops arms one by one (trial/arm_schedule.hpp): which trials each
// batch scheduled, its JSON form and its one reader, which refuses a malformed file naming the
// field.
#include <catch2/catch.hpp>
#include <latentaudit/trial/arm_schedule.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <unistd.h>

namespace la = latentaudit;

namespace arm_schedule_test {
std::filesystem::path schedule_dir(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("latentaudit_schedule_" + std::to_string(::getpid())) /
         name;
}
}  // namespace arm_schedule_test

using arm_schedule_test::schedule_dir;

TEST_CASE("arm_schedule: batches, a cell stopped and started again, the JSON round trip",
          "[trial][until_decided]") {
  la::arm_schedule s{.batch_items = 10};
  const la::arm_cell kv{"need", "kv_full"}, nc{"need", "no_comm"}, st{"stale", "kv_full"};
  CHECK(s.runs(3, kv) == false);  // no batch scheduled yet: nothing runs
  s.add_batch({});
  s.add_batch({kv, st});
  s.add_batch({st});
  s.add_batch({st});
  CHECK(s.batches == 4);
  for (std::uint64_t item : {0, 5, 9}) CHECK(s.runs(item, kv));
  CHECK_FALSE(s.runs(15, kv));  // batch 1 left kv_full out on the need items
  CHECK(s.runs(25, kv));        // and batch 2 ran it again
  CHECK(s.runs(15, nc));        // a cell never left out runs in every batch
  CHECK(s.runs(39, nc));
  CHECK_FALSE(s.runs(40, nc));  // batch 4 is not scheduled
  CHECK(s.runs(9, st));
  CHECK_FALSE(s.runs(10, st));
  CHECK_FALSE(s.runs(35, st));
  REQUIRE(s.partial.count(kv) == 1);
  CHECK(s.partial.at(kv) == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{0, 1}, {2, 4}});
  CHECK(s.partial.at(st) == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{0, 1}});
  const auto dir = schedule_dir("ok");
  std::filesystem::create_directories(dir);
  la::write_arm_schedule(dir / "schedule.json", s);
  const auto back = la::read_arm_schedule(dir / "schedule.json", 40, {"kv_full", "no_comm"});
  CHECK(back.batch_items == 10);
  CHECK(back.batches == 4);
  CHECK(back.partial == s.partial);
  CHECK_FALSE(std::filesystem::exists(dir / "schedule.json.tmp"));
  std::filesystem::remove_all(dir);
  CHECK(la::arm_schedule{}.runs(1'000'000, kv));  // empty: every trial scheduled
}

TEST_CASE("arm_schedule: a malformed schedule.json is refused naming the field", "[trial][until_decided]") {
  const auto dir = schedule_dir("bad");
  std::filesystem::create_directories(dir);
  const auto p = dir / "schedule.json";
  const std::set<std::string> arms{"kv_full", "no_comm"};
  auto refused = [&](const std::string& text, const std::string& what) {
    {
      std::ofstream f(p, std::ios::trunc);
      f << text;
    }
    INFO(text);
    CHECK_THROWS_WITH(la::read_arm_schedule(p, 40, arms), Catch::Contains(what));
  };
  refused("[]", "not a JSON object");
  refused("{\"batches\":1,\"partial\":[]}", "field 'batch_items' must be a number");
  refused("{\"batch_items\":0,\"batches\":1,\"partial\":[]}",
          "field 'batch_items' must be an integer in [1, 40]");
  refused("{\"batch_items\":10,\"batches\":5,\"partial\":[]}",
          "field 'batches' must be an integer in [0, 4]");
  refused("{\"batch_items\":10,\"batches\":2,\"partial\":{}}", "field 'partial' must be an array");
  refused(
      "{\"batch_items\":10,\"batches\":2,\"partial\":[{\"regime\":\"needs\",\"arm\":\"kv_full\",\"ran\":[]}]"
      "}",
      "field 'partial[0].regime' must be one of need, no_need, stale, conflict");
  refused("{\"batch_items\":10,\"batches\":2,\"partial\":[{\"regime\":\"need\",\"arm\":\"kv\",\"ran\":[]}]}",
          "field 'partial[0].arm' must name an arm of the design");
  refused(
      "{\"batch_items\":10,\"batches\":2,\"partial\":[{\"regime\":\"need\",\"arm\":\"kv_full\",\"ran\":[[1,0]"
      "]}]}",
      "field 'partial[0].ran[0]' must be a non-empty range");
  refused(
      "{\"batch_items\":10,\"batches\":2,\"partial\":[{\"regime\":\"need\",\"arm\":\"kv_full\",\"ran\":[[0,3]"
      "]}]}",
      "field 'partial[0].ran[0][1]' must be an integer in [0, 2]");
  refused(
      "{\"batch_items\":10,\"batches\":3,\"partial\":[{\"regime\":\"need\",\"arm\":\"kv_full\",\"ran\":[[0,1]"
      ",[1,2]]}]}",
      "field 'partial[0].ran[1]' must be a non-empty range after the one before it, not adjacent to it");
  refused(
      "{\"batch_items\":10,\"batches\":2,\"partial\":[{\"regime\":\"need\",\"arm\":\"kv_full\",\"ran\":[]},"
      "{\"regime\":\"need\",\"arm\":\"kv_full\",\"ran\":[]}]}",
      "field 'partial[1]' lists its cell twice");
  {
    std::ofstream f(p, std::ios::trunc);
    f << std::string(5u << 20, ' ');
  }
  CHECK_THROWS_WITH(la::read_arm_schedule(p, 40, arms), Catch::Contains("is larger than 4 MiB"));
  std::filesystem::remove_all(dir);
}
