// SPDX-License-Identifier: MIT
// libFuzzer target for the GGUF reader (engine/gguf.hpp): any byte string must either parse or
// throw a latentaudit::error — never crash, leak, read out of bounds or allocate what a header
// claims beyond the limits. A file that parses has every value readable through the typed
// accessors it claims and every f32/f16/bf16 tensor readable inside the buffer.
#include <latentaudit/engine/gguf.hpp>

#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  const auto bytes = std::as_bytes(std::span(data, size));
  gguf_limits limits;
  limits.max_array_elements = 1u << 20;  // keep the fuzzer's memory small
  limits.max_string_bytes = 1u << 20;
  try {
    const auto f = gguf_file::parse(bytes, limits, "fuzz");
    for (const auto& [key, v] : f.metadata()) {
      for (std::size_t i = 0; i < v.size() && i < 4; ++i) {
        switch (v.type()) {
          case gguf_value_type::string:
            (void)v.as_string(i).size();
            break;
          case gguf_value_type::f32:
          case gguf_value_type::f64:
            (void)v.as_float(i);
            break;
          case gguf_value_type::boolean:
            (void)v.as_bool(i);
            break;
          default:
            try {
              (void)v.as_int(i);
            } catch (const invalid_argument&) {  // u64 above int64's range
              (void)v.as_uint(i);
            }
        }
      }
      if (v.size() != (v.type() == gguf_value_type::string ? v.strings().size()
                                                           : v.raw().size() / gguf_value_type_size(v.type())))
        std::abort();
    }
    for (const auto& t : f.tensors()) {
      if (f.data_offset() + t.offset + t.bytes > size) std::abort();  // validated inside the buffer
      if (t.float_type() && t.bytes <= (1u << 20)) (void)f.read_f32(t.name);
    }
  } catch (const latentaudit::error&) {
  }
  return 0;
}
