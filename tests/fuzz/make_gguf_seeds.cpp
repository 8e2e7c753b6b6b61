// SPDX-License-Identifier: MIT
// Writes the seed corpus of the GGUF reader fuzzer (tests/fuzz/corpus/gguf_read) with the library's
// GGUF writer; tests/fuzz/make_corpus.sh builds and runs it.
#include <latentaudit/engine/gguf.hpp>
using namespace latentaudit;
int main(int, char** argv) {
  std::string d = argv[1];
  {  // a Llama-shaped export in miniature: the keys the exporter writes, three tensors
    gguf_writer w;
    w.set("general.architecture", gguf_value::of("llama"));
    w.set("general.name", gguf_value::of("seed"));
    w.set("llama.block_count", gguf_value::of(std::uint32_t{1}));
    w.set("llama.context_length", gguf_value::of(std::uint32_t{128}));
    w.set("llama.rope.freq_base", gguf_value::of(10000.0f));
    w.set("tokenizer.ggml.model", gguf_value::of("none"));
    w.set("llama.vocab_size", gguf_value::of(std::uint32_t{4}));
    w.add_tensor("token_embd.weight", dtype::f32, {4, 2}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
    w.add_tensor("output_norm.weight", dtype::bf16, {2}, std::vector<float>{1, -1});
    w.add_tensor("output.weight", dtype::f16, {4, 2}, std::vector<float>{0.5f, 1, 2, 3, 4, 5, 6, 7});
    w.write(d + "/llama_tiny.gguf");
  }
  {  // every value type and arrays, alignment 64
    gguf_writer w(64);
    w.set("u8", gguf_value::of(std::uint8_t{1}));
    w.set("i8", gguf_value::of(std::int8_t{-1}));
    w.set("u16", gguf_value::of(std::uint16_t{2}));
    w.set("i16", gguf_value::of(std::int16_t{-2}));
    w.set("i32", gguf_value::of(std::int32_t{-3}));
    w.set("u64", gguf_value::of(std::uint64_t{4}));
    w.set("i64", gguf_value::of(std::int64_t{-4}));
    w.set("f64", gguf_value::of(0.5));
    w.set("b", gguf_value::of(true));
    const std::vector<float> sc{0.0f, -1.0f, -2.0f};
    w.set("tokenizer.ggml.scores", gguf_value::array(std::span<const float>(sc)));
    w.set("tokenizer.ggml.tokens", gguf_value::array(std::vector<std::string>{"<s>", "a",
                                                                              "\xe2\x96\x81"
                                                                              "b"}));
    const std::vector<std::int32_t> tt{3, 1, 1};
    w.set("tokenizer.ggml.token_type", gguf_value::array(std::span<const std::int32_t>(tt)));
    w.add_tensor("t", dtype::f32, {3}, std::vector<float>{1, 2, 3});
    w.write(d + "/values_align64.gguf");
  }
  {  // metadata only (like llama.cpp's vocabulary files)
    gguf_writer w;
    w.set("general.architecture", gguf_value::of("llama"));
    w.set("tokenizer.ggml.model", gguf_value::of("gpt2"));
    w.set("tokenizer.ggml.merges", gguf_value::array(std::vector<std::string>{"a b", "ab c"}));
    w.write(d + "/vocab_only.gguf");
  }
}
