// SPDX-License-Identifier: MIT
// Writes the seed corpora of the safetensors / cache-map fuzzer (tests/fuzz/corpus/safetensors)
// with the library's writers: a miniature model file (f32, f16, bf16 tensors and metadata) and a
// miniature cache map (one layer, one KV head of width 2 on each side); tests/fuzz/make_corpus.sh
// builds and runs it.
#include <latentaudit/engine/kv_map_file.hpp>
#include <latentaudit/engine/safetensors.hpp>

#include <cstdint>
#include <string>
#include <vector>

int main(int, char** argv) {
  using namespace latentaudit;
  const std::string d = argv[1];
  write_safetensors(
      d + "/tiny_model.safetensors",
      {{.name = "model.embed_tokens.weight",
        .type = dtype::f32,
        .shape = {3, 2},
        .values = {1, 2, 3, 4, 5, 6}},
       {.name = "model.norm.weight", .type = dtype::bf16, .shape = {2}, .values = {1, -1}},
       {.name = "lm_head.weight", .type = dtype::f16, .shape = {3, 2}, .values = {0.5f, 1, 2, 3, 4, 5}}},
      {{"format", "pt"}});
  model_fingerprint f{.architecture = "LlamaForCausalLM",
                      .n_layers = 1,
                      .n_heads = 1,
                      .n_kv_heads = 1,
                      .head_dim_k = 2,
                      .head_dim_v = 2,
                      .rope = {},
                      .weights_hash = 17};
  kv_map m;
  m.source = f;
  m.target = f;
  m.target.weights_hash = 99;
  m.ridge = 1e-3;
  m.calibration_sequences = 2;
  m.calibration_tokens = 8;
  m.layers.push_back({.source_layers = {0},
                      .in = 4,
                      .out = 4,
                      .weight = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1},
                      .bias = {0, 0.5f, 0, -0.5f},
                      .r2_key = {0.99},
                      .r2_value = {0.98}});
  const std::vector<std::uint64_t> docs = {7, 0x0123456789abcdefu};
  write_kv_map(d + "/tiny_map.safetensors", m, std::string(64, 'a'), docs);
  return 0;
}
