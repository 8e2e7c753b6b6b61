// SPDX-License-Identifier: MIT
// The twelve libFuzzer targets compiled as one translation unit: each harness's entry point
// (LLVMFuzzerTestOneInput in its own file) is renamed latentaudit_fuzz_<name> here, so the readers'
// header-only code is parsed and instrumented once instead of twelve times (tests/CMakeLists.txt).
// Each fuzzer binary is this object plus fuzz_entry.cpp, which forwards LLVMFuzzerTestOneInput to
// its harness. A harness file stays a complete target on its own (clang++ -fsanitize=fuzzer
// records_fuzz.cpp builds it alone); the file-scope names of the twelve must not repeat.
#define LATENTAUDIT_FUZZ_HARNESS(name) latentaudit_fuzz_##name

#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(wire_decode)
#include "wire_decode_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(records)
#include "records_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(config)
#include "config_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(gguf_read)
#include "gguf_read_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(relay_report)
#include "relay_report_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(relay_hello)
#include "relay_hello_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(task_file)
#include "task_file_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(tokenizer_json)
#include "tokenizer_json_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(safetensors)
#include "safetensors_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(schedule)
#include "schedule_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(data_table)
#include "data_table_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput LATENTAUDIT_FUZZ_HARNESS(relay_policy)
#include "relay_policy_fuzz.cpp"
#undef LLVMFuzzerTestOneInput
