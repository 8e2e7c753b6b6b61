// SPDX-License-Identifier: MIT
// libFuzzer target for the records reader (read_records, the path of `latentaudit report` and of
// every resume): any byte string, as the contents of a records.jsonl, must either read or throw a
// latentaudit::error — never crash, hang, read out of bounds or use memory beyond the per-line
// limit. Records that read write back to lines that read again to the same records.
#include <latentaudit/trial/journal.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  static const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("latentaudit_records_fuzz_" + std::to_string(::getpid()) + ".jsonl");
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  for (int torn = 0; torn < 2; ++torn) {
    try {
      std::uint64_t tail = 0;
      const auto records = read_records(file, torn ? &tail : nullptr);
      if (torn && tail > size) std::abort();
      // Round trip: each record's line reads back to the same line.
      for (const auto& r : records) {
        const std::string line = record_to_line(r);
        if (record_to_line(record_from_json(parse_json(line))) != line) std::abort();
      }
    } catch (const latentaudit::error&) {
    }
  }
  return 0;
}
