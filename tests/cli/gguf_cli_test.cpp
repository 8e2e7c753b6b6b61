// SPDX-License-Identifier: MIT
// `latentaudit gguf export` and `gguf inspect`: the organisms and tiny GQA / tied checkpoints export
// (the file equals the library's export byte for byte; the metadata llama.cpp reads is there, the
// tied head is not written); bad input exits 2 with one line naming the problem: missing options, an
// unreadable directory, another architecture, a missing, mis-shaped, unexpected or non-finite
// tensor, a bad dtype, an unwritable output, and truncated, oversized-header or non-GGUF files for
// inspect. The exports run on llama.cpp in tests/engine/llama_cpp_exactness_test.cpp.
#include <latentaudit/engine/gguf.hpp>
#include <latentaudit/engine/gguf_export.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/cli_runner.hpp"
#include "support/common.hpp"
#include "support/tiny_llama.hpp"

#ifdef LATENTAUDIT_CLI_PATH

using namespace latentaudit;
using latentaudit::test::expect_one_line_error;
using latentaudit::test::ok_json;
using latentaudit::test::run_cli;
namespace fs = std::filesystem;

namespace {
using latentaudit::test::model_path;
fs::path work(const std::string& name) { return latentaudit::test::cli_work_dir() / name; }
std::string bytes_of(const fs::path& p) { return latentaudit::test::slurp_file(p); }
}  // namespace

TEST_CASE("cli: gguf export writes the library's file for the organisms", "[cli][gguf]") {
  const auto out = work("a.gguf");
  const auto j =
      ok_json({"gguf", "export", "--model", (model_path / "organism-a").string(), "--out", out.string()});
  CHECK(j.at("architecture").as_string() == "llama");
  CHECK(j.at("dtype").as_string() == "f32");
  CHECK(j.at("tensors").as_number() == 21);  // embeddings, 2 x 9 per layer, final norm, head
  CHECK(j.at("layers").as_number() == 2);
  CHECK(j.at("kv_heads").as_number() == 2);
  CHECK(j.at("tied_embeddings").as_bool() == false);
  CHECK(j.at("bytes").as_number() == static_cast<double>(fs::file_size(out)));
  const auto lib = work("a.lib.gguf");
  const auto s = export_llama_gguf(model_path / "organism-a", lib, {.name = "organism-a"});
  CHECK(bytes_of(out) == bytes_of(lib));
  CHECK(j.at("weights_hash").as_string() == std::to_string(s.weights_hash));

  const auto i = ok_json({"gguf", "inspect", out.string(), "--tensors"});
  CHECK(i.at("version").as_number() == 3);
  const auto& m = i.at("metadata");
  CHECK(m.at("general.architecture").as_string() == "llama");
  CHECK(m.at("tokenizer.ggml.model").as_string() == "none");
  CHECK(m.at("llama.vocab_size").as_number() == 68);
  CHECK(m.at("llama.attention.head_count").as_number() == 16);
  CHECK(m.at("llama.attention.head_count_kv").as_number() == 2);
  CHECK(m.at("llama.attention.key_length").as_number() == 16);
  CHECK(m.at("llama.rope.freq_base").as_number() == 10000);
  CHECK(m.at("latentaudit.source.weights_hash").as_string() == std::to_string(s.weights_hash));
  CHECK(i.at("tensor_count").as_number() == 21);
  CHECK(i.at("tensors").as_array().size() == 21);

  const auto b = ok_json({"gguf", "export", "--model", (model_path / "organism-b").string(), "--out",
                          work("b16.gguf").string(), "--dtype", "bf16", "--name", "b"});
  CHECK(b.at("dtype").as_string() == "bf16");
  const auto f = gguf_file::open(work("b16.gguf"));
  CHECK(f.get_string("general.name") == "b");
  CHECK(f.find_tensor("token_embd.weight")->ggml_type == ggml_type_bf16);
  CHECK(f.find_tensor("output_norm.weight")->ggml_type == ggml_type_f32);
}

TEST_CASE("cli: gguf export handles GQA and tied embeddings", "[cli][gguf]") {
  const auto tied =
      latentaudit::test::write_tiny_llama("gguf_tied", {.heads = 4, .kv_heads = 1, .tied = true});
  const auto j = ok_json({"gguf", "export", "--model", tied.string(), "--out", work("tied.gguf").string()});
  CHECK(j.at("tied_embeddings").as_bool());
  CHECK(j.at("tensors").as_number() == 1 + 3 * 9 + 1);  // no output.weight
  const auto f = gguf_file::open(work("tied.gguf"));
  CHECK(f.find_tensor("output.weight") == nullptr);
  CHECK(f.get_uint("llama.attention.head_count_kv") == 1);
  CHECK(f.find_tensor("blk.2.attn_k.weight")->shape() == std::vector<std::int64_t>{8, 32});
  // the Q/K rows are the HF rows permuted within each head, V rows are not
  const auto st = safetensors_file::open(tied / "model.safetensors");
  const auto q = st.read_f32("model.layers.0.self_attn.q_proj.weight");
  CHECK(f.read_f32("blk.0.attn_q.weight") == permute_rope_rows(q, 4, 8, 32));
  CHECK(f.read_f32("blk.0.attn_v.weight") == st.read_f32("model.layers.0.self_attn.v_proj.weight"));
}

TEST_CASE("cli: gguf export --vocab copies a tokenizer, tokenize refuses bad input with one line",
          "[cli][gguf]") {
  // a 40-token vocabulary GGUF (tokenizer.* keys and one unrelated key), and one without a tokenizer
  auto vocab_file = [](const fs::path& p, std::size_t n, bool with_tokenizer) {
    gguf_writer w;
    w.set("general.architecture", gguf_value::of("llama"));
    if (with_tokenizer) {
      w.set("tokenizer.ggml.model", gguf_value::of("gpt2"));
      std::vector<std::string> tokens;
      for (std::size_t i = 0; i < n; ++i) tokens.push_back("t" + std::to_string(i));
      w.set("tokenizer.ggml.tokens", gguf_value::array(std::move(tokens)));
      w.set("tokenizer.ggml.bos_token_id", gguf_value::of(std::uint32_t{1}));
    }
    w.write(p);
  };
  vocab_file(work("vocab40.gguf"), 40, true);
  vocab_file(work("vocab41.gguf"), 41, true);
  vocab_file(work("novocab.gguf"), 0, false);
  const auto tiny = latentaudit::test::write_tiny_llama("gguf_vocab", {.vocab = 40});
  const auto j = ok_json({"gguf", "export", "--model", tiny.string(), "--out",
                          work("with_vocab.gguf").string(), "--vocab", work("vocab40.gguf").string()});
  CHECK(j.at("tokenizer_from").as_string() == work("vocab40.gguf").string());
  const auto f = gguf_file::open(work("with_vocab.gguf"));
  CHECK(f.get_string("tokenizer.ggml.model") == "gpt2");
  CHECK(f.find("tokenizer.ggml.tokens")->size() == 40);
  CHECK(f.find("tokenizer.ggml.tokens")->as_string(39) == "t39");
  CHECK(f.get_uint("tokenizer.ggml.bos_token_id") == 1);
  CHECK(f.get_string("general.architecture") == "llama");
  // the model's weights are those of the export without a vocabulary
  (void)ok_json({"gguf", "export", "--model", tiny.string(), "--out", work("no_vocab.gguf").string()});
  const auto g = gguf_file::open(work("no_vocab.gguf"));
  CHECK(g.get_string("tokenizer.ggml.model") == "none");
  CHECK(f.read_f32("token_embd.weight") == g.read_f32("token_embd.weight"));
  // a vocabulary of another size, or none at all: one line, exit 2, nothing written
  expect_one_line_error(run_cli({"gguf", "export", "--model", tiny.string(), "--out",
                                 work("bad.gguf").string(), "--vocab", work("vocab41.gguf").string()}),
                        "has 41 tokens, but config.json's vocab_size is 40");
  expect_one_line_error(run_cli({"gguf", "export", "--model", tiny.string(), "--out",
                                 work("bad.gguf").string(), "--vocab", work("novocab.gguf").string()}),
                        "has no tokenizer");
  CHECK_FALSE(fs::exists(work("bad.gguf")));
  // tokenize: a missing file (or, in a CLI built without llama.cpp, the missing engine) and missing
  // options are one line and exit 2 in either build
  const auto missing = run_cli({"tokenize", "--vocab", work("missing.gguf").string(), "--text", "x"});
  CHECK(missing.code == 2);
  CHECK(std::count(missing.err.begin(), missing.err.end(), '\n') == 1);
  CHECK((missing.err.find("missing.gguf") != std::string::npos ||
         missing.err.find("built without llama.cpp") != std::string::npos));
  expect_one_line_error(run_cli({"tokenize", "--vocab", work("vocab40.gguf").string()}), "--text");
}

TEST_CASE("cli: gguf export and inspect refuse bad input with one line", "[cli][gguf]") {
  const auto ok = latentaudit::test::write_tiny_llama("gguf_ok");
  const std::string out = work("x.gguf").string();
  expect_one_line_error(run_cli({"gguf"}), "missing command");
  expect_one_line_error(run_cli({"gguf", "convert"}), "unknown command 'convert'");
  expect_one_line_error(run_cli({"gguf", "export", "--out", out}), "--model");
  expect_one_line_error(run_cli({"gguf", "export", "--model", ok.string()}), "--out");
  expect_one_line_error(run_cli({"gguf", "export", "--model", (ok / "nope").string(), "--out", out}),
                        "config.json");
  expect_one_line_error(run_cli({"gguf", "export", "--model", ok.string(), "--out", out, "--dtype", "q8"}),
                        "--dtype");
  expect_one_line_error(
      run_cli({"gguf", "export", "--model", ok.string(), "--out", (work("no") / "x.gguf").string()}),
      "cannot be written");
  // another architecture
  const auto mistral = latentaudit::test::write_tiny_llama("gguf_mistral");
  {
    std::string cfg = bytes_of(mistral / "config.json");
    cfg.replace(cfg.find("LlamaForCausalLM"), 16, "MistralForCausalLM");
    std::ofstream(mistral / "config.json") << cfg;
  }
  expect_one_line_error(run_cli({"gguf", "export", "--model", mistral.string(), "--out", out}),
                        "architectures");
  // missing, mis-shaped, unexpected and non-finite tensors
  auto rewrite = [](const fs::path& dir, auto&& edit) {
    const auto st = safetensors_file::open(dir / "model.safetensors");
    std::vector<tensor_to_write> ts;
    for (const auto& t : st.tensors()) ts.push_back({t.name, dtype::f32, t.shape, st.read_f32(t.name)});
    edit(ts);
    write_safetensors(dir / "model.safetensors", ts);
  };
  const auto missing = latentaudit::test::write_tiny_llama("gguf_missing");
  rewrite(missing, [](auto& ts) {
    std::erase_if(ts, [](const auto& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
  });
  expect_one_line_error(run_cli({"gguf", "export", "--model", missing.string(), "--out", out}),
                        "missing tensor 'model.layers.1.mlp.up_proj.weight'");
  const auto shape = latentaudit::test::write_tiny_llama("gguf_shape");
  rewrite(shape, [](auto& ts) {
    for (auto& t : ts)
      if (t.name == "model.norm.weight") {
        t.shape = {31};
        t.values.resize(31);
      }
  });
  expect_one_line_error(run_cli({"gguf", "export", "--model", shape.string(), "--out", out}),
                        "model.norm.weight");
  const auto bias = latentaudit::test::write_tiny_llama("gguf_bias");
  rewrite(bias, [](auto& ts) {
    ts.push_back({"model.layers.0.self_attn.q_proj.bias", dtype::f32, {32}, std::vector<float>(32)});
  });
  expect_one_line_error(run_cli({"gguf", "export", "--model", bias.string(), "--out", out}),
                        "unexpected tensor 'model.layers.0.self_attn.q_proj.bias'");
  const auto nan = latentaudit::test::write_tiny_llama("gguf_nan");
  rewrite(nan, [](auto& ts) { ts[0].values[5] = std::numeric_limits<float>::quiet_NaN(); });
  expect_one_line_error(run_cli({"gguf", "export", "--model", nan.string(), "--out", out}),
                        "non-finite value at index 5");
  CHECK_FALSE(fs::exists(out));  // no file left behind by a failed export

  // inspect: missing, not GGUF, truncated, oversized header
  expect_one_line_error(run_cli({"gguf", "inspect"}), "missing the GGUF FILE");
  expect_one_line_error(run_cli({"gguf", "inspect", work("none.gguf").string()}), "cannot be opened");
  expect_one_line_error(run_cli({"gguf", "inspect", (ok / "config.json").string()}), "no 'GGUF' magic");
  REQUIRE(run_cli({"gguf", "export", "--model", ok.string(), "--out", out}).code == 0);
  const std::string good = bytes_of(out);
  std::ofstream(work("cut.gguf"), std::ios::binary) << good.substr(0, good.size() / 2);
  expect_one_line_error(run_cli({"gguf", "inspect", work("cut.gguf").string()}),
                        "lies outside the data section");
  std::ofstream(work("head.gguf"), std::ios::binary) << good.substr(0, 200);
  expect_one_line_error(run_cli({"gguf", "inspect", work("head.gguf").string()}), "gguf: ");
  std::string huge = good;
  const std::int64_t claim = std::int64_t{1} << 40;
  huge.replace(8, 8, reinterpret_cast<const char*>(&claim), 8);  // the tensor count
  std::ofstream(work("huge.gguf"), std::ios::binary) << huge;
  expect_one_line_error(run_cli({"gguf", "inspect", work("huge.gguf").string()}),
                        "tensor count 1099511627776");
}

#endif
