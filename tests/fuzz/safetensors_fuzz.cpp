// SPDX-License-Identifier: MIT
// libFuzzer target for the safetensors reader (safetensors_file::open and read_f32, the path of
// every model and cache-map file the CLI reads) and for the cache-map reader on top of it
// (read_kv_map, `audit --map`, `map check`): any byte string, as such a file, must either read or
// throw a latentaudit::error — never crash, read out of bounds or allocate what a header claims
// beyond the file's own bytes.
#include <latentaudit/engine/kv_map_file.hpp>
#include <latentaudit/engine/safetensors.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  static const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("latentaudit_safetensors_fuzz_" + std::to_string(::getpid()) + ".safetensors");
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const auto st = safetensors_file::open(
        file, {.max_header_bytes = std::uint64_t{1} << 20, .max_tensors = 4096, .max_rank = 8});
    for (const auto& t : st.tensors()) {
      if (t.end < t.begin || t.end - t.begin > size) std::abort();  // ranges inside the file
      try {
        (void)st.read_f32(t.name);
      } catch (const latentaudit::error&) {
      }
    }
  } catch (const latentaudit::error&) {
  }
  try {
    const auto m = read_kv_map(file);
    if (m.map.layers.empty()) std::abort();  // the reader's own check: a map has layers
  } catch (const latentaudit::error&) {
  }
  return 0;
}
