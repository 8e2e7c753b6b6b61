// SPDX-License-Identifier: MIT
// libFuzzer target for the reader of an --until-decided audit's schedule.json (read_arm_schedule,
// the path of `report DIR`, `audit --resume` and Python's report(DIR)): any byte string must either
// read against a design of 6 items and three arms or throw a latentaudit::error — never crash or
// hang. A schedule that reads writes back to a file that reads again to the same schedule.
#include <latentaudit/trial/arm_schedule.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  static const std::string stem = std::to_string(::getpid());
  static const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("latentaudit_schedule_fuzz_" + stem + ".json");
  static const std::filesystem::path again =
      std::filesystem::temp_directory_path() / ("latentaudit_schedule_fuzz_" + stem + "_again.json");
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const std::set<std::string> arms = {"no_comm", "kv_full", "text_full"};
  arm_schedule s;
  try {
    s = read_arm_schedule(file, 6, arms);
  } catch (const latentaudit::error&) {
    return 0;
  }
  try {
    write_arm_schedule(again, s);
    const arm_schedule back = read_arm_schedule(again, 6, arms);
    if (write_json(back.to_json()) != write_json(s.to_json())) std::abort();
  } catch (const latentaudit::error&) {
    std::abort();  // the writer's own output must read back
  }
  return 0;
}
