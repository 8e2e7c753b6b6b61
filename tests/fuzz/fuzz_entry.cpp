// SPDX-License-Identifier: MIT
// The entry point of one fuzzer binary: LLVMFuzzerTestOneInput forwards to the harness that
// LATENTAUDIT_FUZZ_ENTRY names (latentaudit_fuzz_<name>: the harness <name>_fuzz.cpp, its entry point renamed
// in the fuzzers' one translation unit, tests/CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#ifndef LATENTAUDIT_FUZZ_ENTRY
#error "compile with -DLATENTAUDIT_FUZZ_ENTRY=latentaudit_fuzz_<name> (tests/CMakeLists.txt)"
#endif

extern "C" int LATENTAUDIT_FUZZ_ENTRY(const std::uint8_t* data, std::size_t size);

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return LATENTAUDIT_FUZZ_ENTRY(data, size);
}
