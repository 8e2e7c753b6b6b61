// SPDX-License-Identifier: MIT
// The reference engine on a real pretrained HF checkpoint (docs/real-models.md): TinyStories-656K,
// whose tied embeddings are stored only as lm_head.weight, against an independent PyTorch forward
// (tests/golden/real_models/generate.py); and the tied-embedding layouts on a tiny random model (no
// real model needed). Tests tagged [real_models] skip by name when the models folder is absent
// (tests/support/real_models.hpp) and fail when it is there with a missing or altered file.
#include <latentaudit/engine/gguf_export.hpp>
#include <latentaudit/engine/reference_cpu.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "support/catch.hpp"
#include "support/golden.hpp"
#include "support/real_models.hpp"
#include "support/tiny_llama.hpp"

using namespace latentaudit;

namespace {

std::vector<std::vector<token_id>> read_token_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<token_id>> out;
  for (std::string line; std::getline(in, line);) {
    std::vector<token_id> t;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) t.push_back(std::stoi(x));
    if (!t.empty()) out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

TEST_CASE("real models: the folder is found and every file has its sha256", "[engine][real_models]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  CHECK(std::filesystem::is_regular_file(m.stories260k()));
  CHECK(std::filesystem::is_regular_file(m.tinystories656k() / "tokenizer.json"));
}

TEST_CASE(
    "real models: the reference engine's logits on tinystories-656k equal PyTorch's within 1e-4 of the "
    "logit scale",
    "[engine][real_models][golden]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  auto e = reference_cpu_engine::load(m.tinystories656k());
  CHECK(e.config().tie_word_embeddings);
  const auto seqs = read_token_lines(test::golden_path("real_models/tokens.txt"));
  REQUIRE(seqs.size() == 2);
  std::vector<std::vector<float>> logits;
  for (const auto& s : seqs) {
    const auto q = e.open_seq();
    logits.push_back(e.prefill(q, s, 0, {.all_logits = true}).logits);
    e.close_seq(q);
  }
  const auto V = static_cast<std::size_t>(e.info().vocab_size);
  REQUIRE(V == 2048);
  std::ifstream golden(test::golden_path("real_models/tinystories656k_logits.csv"));
  std::string line;
  std::getline(golden, line);  // header
  double scale = 0, worst = 0;
  std::size_t values = 0;
  for (; std::getline(golden, line);) {
    const auto c = test::split_csv_line(line);
    REQUIRE(c.size() == 4);
    const auto s = static_cast<std::size_t>(std::stoi(c[0])), p = static_cast<std::size_t>(std::stoi(c[1]));
    const int t = std::stoi(c[2]);
    const double want = test::parse_number(c[3]);
    const float* row = logits.at(s).data() + p * V;
    if (t < 0) {  // the row's scale: max |logit| over the whole vocabulary
      double mine = 0;
      for (std::size_t v = 0; v < V; ++v) mine = std::max(mine, std::fabs(static_cast<double>(row[v])));
      CHECK(std::fabs(mine - want) <= 1e-4 * want);
      scale = std::max(scale, want);
      continue;
    }
    worst = std::max(worst, std::fabs(static_cast<double>(row[static_cast<std::size_t>(t)]) - want));
    ++values;
  }
  INFO("max |delta logit| = " << worst << " over " << values << " logits; logit scale " << scale);
  WARN("tinystories-656k vs PyTorch: max |delta logit| " << worst << ", scale " << scale << ", relative "
                                                         << worst / scale);
  CHECK(values == 12 * 18);
  CHECK(worst <= 1e-4 * scale);
}

TEST_CASE("tied embeddings stored only as lm_head.weight load as the same model", "[engine][reference_cpu]") {
  const auto dir = test::write_tiny_llama("tied_both", {.tied = true, .seed = 11});
  const auto head_dir = dir.parent_path() / "tied_head_only";
  std::filesystem::create_directories(head_dir);
  std::filesystem::copy_file(dir / "config.json", head_dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  {  // the same tensors, model.embed_tokens.weight renamed lm_head.weight (TinyStories-656K's layout)
    const auto st = safetensors_file::open(dir / "model.safetensors");
    std::vector<tensor_to_write> t;
    for (const auto& info : st.tensors())
      t.push_back({info.name == "model.embed_tokens.weight" ? "lm_head.weight" : info.name, dtype::f32,
                   info.shape, st.read_f32(info.name)});
    write_safetensors(head_dir / "model.safetensors", t);
  }
  auto a = reference_cpu_engine::load(dir);
  auto b = reference_cpu_engine::load(head_dir);
  CHECK(a.info().fingerprint.weights_hash == b.info().fingerprint.weights_hash);
  const std::vector<token_id> toks{1, 5, 9, 2, 33, 7};
  const auto sa = a.open_seq();
  const auto sb = b.open_seq();
  CHECK(a.prefill(sa, toks, 0, {.all_logits = true}).logits ==
        b.prefill(sb, toks, 0, {.all_logits = true}).logits);
  // gguf export of the head-only layout states the same weights hash as the engine
  const auto out = head_dir / "m.gguf";
  CHECK(export_llama_gguf(head_dir, out).weights_hash == b.info().fingerprint.weights_hash);
  // untied config with only lm_head: still refused, naming the missing embeddings
  std::ofstream(head_dir / "config.json")
      << "{\"architectures\":[\"LlamaForCausalLM\"],\"vocab_size\":40,"
         "\"hidden_size\":32,\"intermediate_size\":48,\"num_hidden_layers\":3,"
         "\"num_attention_heads\":4,\"num_key_value_heads\":2,"
         "\"tie_word_embeddings\":false}";
  CHECK_THROWS_WITH(reference_cpu_engine::load(head_dir), Catch::Contains("model.embed_tokens.weight"));
}

TEST_CASE("real models: a folder with a missing or altered file is a failure, not a skip", "[engine]") {
  const auto root =
      std::filesystem::temp_directory_path() / ("latentaudit_models_" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "stories260K");
  std::ofstream(root / "stories260K" / "stories260K.gguf") << "not the model";
  const auto m = test::inspect_real_models(root);
  CHECK(m.present);
  CHECK_THAT(m.problem,
             Catch::Contains("stories260K.gguf' has sha256") &&
                 Catch::Contains("missing '" + (root / "tinystories-656k/tokenizer.json").string()));
  CHECK_FALSE(test::inspect_real_models(root / "absent").present);  // absent: the skip
  std::filesystem::remove_all(root);
}
