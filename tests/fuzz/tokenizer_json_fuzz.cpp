// SPDX-License-Identifier: MIT
// libFuzzer target for the tokenizer.json reader (tokenizer_json::parse, the path of `tokenize`,
// `forward` and `audit` on a Hugging Face checkpoint): any byte string, as a tokenizer.json, must
// either load or throw a latentaudit::error — never crash, hang or read out of bounds. A tokenizer
// that loads encodes a few texts (ASCII, ▁, bytes outside any vocabulary, its own added-token
// texts) to ids inside its vocabulary, which decode without an error.
#include <latentaudit/engine/tokenizer_json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const tokenizer_json_limits limits{.max_file_bytes = std::uint64_t{1} << 20,
                                     .max_tokens = std::size_t{1} << 14,
                                     .max_merges = std::size_t{1} << 15,
                                     .max_token_bytes = 256,
                                     .max_text_bytes = std::size_t{1} << 12};
  try {
    const tokenizer_json t = tokenizer_json::parse(text, "tokenizer.json", nullptr, limits);
    const std::string samples[] = {"Once upon a time, Max had a dog.", " \xe2\x96\x81 two  spaces",
                                   "\xc3\xa9\xf0\x9f\x98\x80\x01", std::string(text.substr(0, 64))};
    for (const auto& s : samples) {
      for (const bool special : {false, true}) {
        const auto ids = t.encode(s, special);
        for (const auto id : ids)
          if (id < 0 || id >= t.vocab_size()) std::abort();
        (void)t.decode(ids, special);
      }
    }
  } catch (const latentaudit::error&) {
  }
  return 0;
}
