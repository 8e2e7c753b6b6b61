// SPDX-License-Identifier: MIT
// The reference engine on GGUF files (engine/gguf_import.hpp, docs/gguf.md "Importing"): an f32
// export of an HF checkpoint loads as the checkpoint itself (same weights, logits and fingerprint);
// malformed, altered, truncated and quantized files are refused with the file and the key or tensor
// named, never a crash. And the reference engine on stories260K's GGUF (tests tagged [real_models]
// skip by name without the models folder: tests/support/real_models.hpp).
#include <latentaudit/engine/gguf_export.hpp>
#include <latentaudit/engine/gguf_import.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/engine/spm_tokenizer.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "support/catch.hpp"
#include "support/real_models.hpp"
#include "support/story_tasks.hpp"
#include "support/tiny_llama.hpp"

using namespace latentaudit;
namespace fs = std::filesystem;

namespace {

/// A scratch directory of this process for GGUF files.
fs::path import_scratch() {
  static const fs::path dir = [] {
    const auto d = fs::temp_directory_path() / ("latentaudit_gguf_import_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

/// The tiny checkpoint `name` and its export (`type` storage) to GGUF.
std::pair<fs::path, fs::path> tiny_with_export(const std::string& name, const test::tiny_llama_shape& s,
                                               dtype type = dtype::f32) {
  const auto dir = test::write_tiny_llama(name, s);
  const auto out = import_scratch() / (name + ".gguf");
  (void)export_llama_gguf(dir, out, {.type = type});
  return {dir, out};
}

std::vector<std::byte> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
  return b;
}

void write_bytes(const fs::path& p, std::span<const std::byte> b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

/// Every logit of `tokens` at positions 0, 1, ...
std::vector<float> all_logits(reference_cpu_engine& e, const std::vector<token_id>& tokens) {
  const auto s = e.open_seq();
  auto out = e.prefill(s, tokens, 0, {.all_logits = true}).logits;
  e.close_seq(s);
  return out;
}

/// A GGUF file rewritten from `src` through the bounded reader and the writer, with `edit` applied to
/// its metadata and tensors (`drop`: tensor names left out; `extra`: tensors added).
struct gguf_edit {
  std::vector<std::pair<std::string, gguf_value>> set;                     ///< keys replaced or added
  std::vector<std::string> remove_keys;                                    ///< keys left out
  std::vector<std::string> drop;                                           ///< tensors left out
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> reshape;  ///< tensors given another shape
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> extra;    ///< zero tensors added
};

fs::path rewrite_gguf(const fs::path& src, const std::string& name, const gguf_edit& e) {
  const auto f = gguf_file::open(src);
  gguf_writer w;
  auto has = [](const auto& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  for (const auto& [k, v] : f.metadata()) {
    if (has(e.remove_keys, k) || k == "general.alignment") continue;
    bool replaced = false;
    for (const auto& [k2, v2] : e.set)
      if (k2 == k) {
        w.set(k, v2);
        replaced = true;
      }
    if (!replaced) w.set(k, v);
  }
  for (const auto& [k2, v2] : e.set)
    if (f.find(k2) == nullptr) w.set(k2, v2);
  for (const auto& t : f.tensors()) {
    if (has(e.drop, t.name)) continue;
    auto shape = t.shape();
    for (const auto& [n, s] : e.reshape)
      if (n == t.name) shape = s;
    w.add_tensor(t.name, dtype::f32, shape, f.read_f32(t.name));
  }
  for (const auto& [n, s] : e.extra) {
    std::size_t count = 1;
    for (auto d : s) count *= static_cast<std::size_t>(d);
    w.add_tensor(n, dtype::f32, s, std::vector<float>(count, 0.0f));
  }
  const auto out = import_scratch() / (name + ".gguf");
  w.write(out);
  return out;
}

/// The message reference_cpu_engine::load throws on `p` ("" when it loads).
std::string load_error(const fs::path& p) {
  try {
    (void)reference_cpu_engine::load(p);
  } catch (const latentaudit::error& e) {
    return e.what();
  }
  return {};
}

/// The engine of an in-memory GGUF import (the constructor load() uses for a GGUF file).
reference_cpu_engine engine_of(const gguf_llama_import& g) {
  detail::reference_weights w;
  w.path = g.file().name();
  w.names = g.hf_names();
  w.has = [&g](const std::string& n) { return g.has(n); };
  w.read = [&g](const std::string& n, std::span<const std::int64_t> s) { return g.read_f32(n, s); };
  return reference_cpu_engine(g.config(), w);
}

}  // namespace

TEST_CASE("gguf import: unpermute_rope_rows inverts the export's permutation", "[engine][gguf]") {
  std::vector<float> w(3 * 8 * 5);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  const auto p = permute_rope_rows(w, 3, 8, 5);
  CHECK(p != w);
  CHECK(unpermute_rope_rows(p, 3, 8, 5) == w);
  // row 2i + j of a head comes from row j·d/2 + i: head 0, i = 1, j = 1 → row 3 from row 5
  CHECK(p[3 * 5] == w[5 * 5]);
  CHECK_THROWS_AS(unpermute_rope_rows(w, 3, 7, 5), invalid_argument);
  CHECK_THROWS_AS(unpermute_rope_rows(w, 2, 8, 5), invalid_argument);
}

TEST_CASE("gguf import: llama.cpp tensor names map to HF names", "[engine][gguf]") {
  CHECK(hf_name_of_gguf_tensor("token_embd.weight") == "model.embed_tokens.weight");
  CHECK(hf_name_of_gguf_tensor("output.weight") == "lm_head.weight");
  CHECK(hf_name_of_gguf_tensor("output_norm.weight") == "model.norm.weight");
  CHECK(hf_name_of_gguf_tensor("blk.12.attn_q.weight") == "model.layers.12.self_attn.q_proj.weight");
  CHECK(hf_name_of_gguf_tensor("blk.0.ffn_norm.weight") == "model.layers.0.post_attention_layernorm.weight");
  CHECK(hf_name_of_gguf_tensor("blk.3.ffn_down.weight") == "model.layers.3.mlp.down_proj.weight");
  CHECK_FALSE(hf_name_of_gguf_tensor("blk.01.attn_q.weight"));
  CHECK_FALSE(hf_name_of_gguf_tensor("blk.x.attn_q.weight"));
  CHECK_FALSE(hf_name_of_gguf_tensor("blk.0.attn_q.bias"));
  CHECK_FALSE(hf_name_of_gguf_tensor("rope_freqs.weight"));
}

TEST_CASE("gguf import: an f32 export loads as the checkpoint itself (weights, logits, fingerprint)",
          "[engine][gguf]") {
  for (const bool tied : {false, true}) {
    INFO("tied " << tied);
    const auto [dir, gguf] =
        tiny_with_export(tied ? "import_tied" : "import_untied", {.tied = tied, .seed = 21});
    auto hf = reference_cpu_engine::load(dir);
    auto gg = reference_cpu_engine::load(gguf);
    CHECK(gg.config().vocab_size == hf.config().vocab_size);
    CHECK(gg.config().n_layers == hf.config().n_layers);
    CHECK(gg.config().n_heads == hf.config().n_heads);
    CHECK(gg.config().n_kv_heads == hf.config().n_kv_heads);
    CHECK(gg.config().head_dim == hf.config().head_dim);
    CHECK(gg.config().intermediate_size == hf.config().intermediate_size);
    CHECK(gg.config().max_context == hf.config().max_context);
    CHECK(gg.config().tie_word_embeddings == tied);
    CHECK(gg.config().rope_theta == hf.config().rope_theta);
    CHECK(gg.config().rms_norm_eps == hf.config().rms_norm_eps);
    CHECK(gg.info().fingerprint.weights_hash == hf.info().fingerprint.weights_hash);
    const std::vector<token_id> tokens = {1, 5, 9, 33, 2, 17, 17, 39, 0, 12};
    CHECK(all_logits(gg, tokens) == all_logits(hf, tokens));  // bit for bit: the same f32 weights
  }
}

TEST_CASE("gguf import: f16 and bf16 exports load within their rounding", "[engine][gguf]") {
  const auto [dir, gguf16] = tiny_with_export("import_f16", {.seed = 22}, dtype::f16);
  const auto bf = import_scratch() / "import_bf16.gguf";
  (void)export_llama_gguf(dir, bf, {.type = dtype::bf16});
  auto hf = reference_cpu_engine::load(dir);
  const std::vector<token_id> tokens = {3, 1, 4, 1, 5, 9, 2, 6};
  const auto want = all_logits(hf, tokens);
  for (const auto& [p, tol] : {std::pair{gguf16, 0.05}, std::pair{bf, 0.5}}) {
    auto e = reference_cpu_engine::load(p);
    CHECK(e.info().fingerprint.weights_hash != hf.info().fingerprint.weights_hash);  // rounded weights
    const auto got = all_logits(e, tokens);
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
    INFO(p.filename().string() << ": max |delta logit| " << worst);
    CHECK(worst > 0);
    CHECK(worst < tol);
  }
}

TEST_CASE("gguf import: an overlay applies to a GGUF model as to its HF checkpoint", "[engine][gguf]") {
  const auto [dir, gguf] = tiny_with_export("import_overlay", {.seed = 23});
  const auto st = safetensors_file::open(dir / "model.safetensors");
  const std::int64_t shape[] = {32};
  auto norm = st.read_f32("model.norm.weight", shape);
  for (auto& x : norm) x *= 1.5f;
  const auto ov = import_scratch() / "import_overlay.safetensors";
  write_safetensors(ov, {{"model.norm.weight", dtype::f32, {32}, norm}});
  auto a = reference_cpu_engine::load_with_overlay(dir, ov);
  auto b = reference_cpu_engine::load_with_overlay(gguf, ov);
  CHECK(a.info().fingerprint.weights_hash == b.info().fingerprint.weights_hash);
  const std::vector<token_id> tokens = {7, 8, 9};
  CHECK(all_logits(a, tokens) == all_logits(b, tokens));
}

TEST_CASE("gguf import: altered files are refused naming the file and the key or tensor", "[engine][gguf]") {
  const auto [dir, gguf] = tiny_with_export("import_altered", {.seed = 24});
  const auto file = gguf.string();
  struct bad_case {
    std::string name;
    gguf_edit edit;
    std::vector<std::string> says;
  };
  const std::vector<bad_case> cases = {
      {"arch",
       {.set = {{"general.architecture", gguf_value::of("gpt2")}}},
       {"general.architecture", "'gpt2'"}},
      {"no_blocks", {.remove_keys = {"llama.block_count"}}, {"llama.block_count"}},
      {"no_eps", {.remove_keys = {"llama.attention.layer_norm_rms_epsilon"}}, {"layer_norm_rms_epsilon"}},
      {"partial_rope",
       {.set = {{"llama.rope.dimension_count", gguf_value::of(std::uint32_t{4})}}},
       {"partial rotary"}},
      {"kv_heads",
       {.set = {{"llama.attention.head_count_kv", gguf_value::of(std::uint32_t{3})}}},
       {"head_count_kv"}},
      {"zero_heads",
       {.set = {{"llama.attention.head_count", gguf_value::of(std::uint32_t{0})}}},
       {"head_count"}},
      {"huge_ctx",
       {.set = {{"llama.context_length", gguf_value::of(std::uint64_t{1} << 40)}}},
       {"context_length"}},
      {"rope_scaling", {.set = {{"llama.rope.scaling.type", gguf_value::of("linear")}}}, {"rope scaling"}},
      {"vocab_key", {.set = {{"llama.vocab_size", gguf_value::of(std::uint32_t{41})}}}, {"llama.vocab_size"}},
      {"bad_theta", {.set = {{"llama.rope.freq_base", gguf_value::of(-1.0f)}}}, {"rope.freq_base"}},
      {"missing_tensor", {.drop = {"blk.1.ffn_up.weight"}}, {"blk.1.ffn_up.weight", "missing"}},
      {"no_embd", {.drop = {"token_embd.weight"}}, {"token_embd.weight"}},
      {"bias", {.extra = {{"blk.0.attn_q.bias", {32}}}}, {"unexpected tensor", "blk.0.attn_q.bias"}},
      {"twice", {.extra = {{"model.norm.weight", {32}}}}, {"output_norm.weight", "both"}},
      {"shape", {.reshape = {{"blk.2.ffn_gate.weight", {32, 48}}}}, {"blk.2.ffn_gate.weight", "shape"}},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const auto p = rewrite_gguf(gguf, "altered_" + c.name, c.edit);
    const auto msg = load_error(p);
    INFO(msg);
    CHECK_FALSE(msg.empty());
    CHECK(msg.find(p.string()) != std::string::npos);  // names the file
    for (const auto& s : c.says) CHECK(msg.find(s) != std::string::npos);
  }
  // the unaltered rewrite loads (the edits above are what is refused)
  CHECK(load_error(rewrite_gguf(gguf, "altered_none", {})).empty());
  // a quantized tensor: the type field of blk.0.ffn_gate.weight (ne {32, 48}) patched to q8_0
  auto bytes = read_bytes(gguf);
  const std::string name = "blk.0.ffn_gate.weight";
  const std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const auto at = all.find(name);
  REQUIRE(at != std::string_view::npos);
  const std::size_t type_at = at + name.size() + 4 + 2 * 8;  // u32 n_dims, i64 ne[2], u32 type
  std::uint32_t type = 0;
  std::memcpy(&type, bytes.data() + type_at, 4);
  REQUIRE(type == 0);  // f32
  type = 8;            // q8_0
  std::memcpy(bytes.data() + type_at, &type, 4);
  const auto q = import_scratch() / "altered_q8_0.gguf";
  write_bytes(q, bytes);
  const auto msg = load_error(q);
  INFO(msg);
  CHECK(msg.find(q.string()) != std::string::npos);
  CHECK(msg.find(name) != std::string::npos);
  CHECK(msg.find("q8_0") != std::string::npos);
  CHECK(msg.find("quantized") != std::string::npos);
  // not a GGUF file at all
  const auto text = import_scratch() / "not_a_model.gguf";
  std::ofstream(text) << "hello";
  CHECK_FALSE(load_error(text).empty());
}

TEST_CASE("gguf import: every truncation and thousands of byte flips fail cleanly, never crash",
          "[engine][gguf][fuzz]") {
  const auto [dir, gguf] = tiny_with_export(
      "import_fuzz",
      {.vocab = 24, .hidden = 16, .intermediate = 24, .layers = 2, .heads = 4, .kv_heads = 2, .seed = 25});
  const auto good = read_bytes(gguf);
  const auto opened = gguf_file::open(gguf);
  const auto header_end = opened.data_offset();
  std::uint64_t data_end = header_end;  // the end of the last tensor (the padding after it is optional)
  for (const auto& t : opened.tensors()) data_end = std::max(data_end, header_end + t.offset + t.bytes);
  std::size_t refused = 0, loaded = 0;
  auto attempt = [&](std::span<const std::byte> b) {
    try {
      const auto g = gguf_llama_import(gguf_file::parse(b, {}, "fuzz.gguf"));
      auto e = engine_of(g);
      const std::vector<token_id> t = {1, 2, 3};
      (void)all_logits(e, t);
      ++loaded;
    } catch (const latentaudit::error&) {
      ++refused;
    }
  };
  // every truncation of the header and metadata, then every 61st of the data
  for (std::size_t n = 0; n < data_end; n += n < header_end ? 1 : 61) attempt(std::span(good).first(n));
  CHECK(loaded == 0);
  CHECK(refused > header_end);
  // byte flips: 1 to 4 random bytes of the header (where every byte is structure) or anywhere
  std::mt19937_64 rng(50);
  refused = loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    auto b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const std::size_t at = i % 2 == 0 ? rng() % header_end : rng() % b.size();
      b[at] = static_cast<std::byte>(rng() & 0xFF);
    }
    attempt(b);
  }
  WARN("gguf import fuzz: 3000 altered files, " << refused << " refused, " << loaded
                                                << " loaded and ran (a flipped weight is still a model)");
  CHECK(refused + loaded == 3000);
  CHECK(refused > 0);
  // and through the file path (reference_cpu_engine::load) for a sample of truncations
  for (std::size_t n :
       {std::size_t{0}, std::size_t{3}, std::size_t{20}, header_end / 2, header_end, good.size() - 1}) {
    const auto p = import_scratch() / "fuzz_truncated.gguf";
    write_bytes(p, std::span(good).first(n));
    INFO("truncated to " << n);
    CHECK_FALSE(load_error(p).empty());
  }
}

TEST_CASE("spm tokenizer: score-ordered merges, dummy prefix, byte fallback and special tokens",
          "[engine][tokenizer]") {
  // <unk> <s> </s>, the 256 byte pieces, then pieces with scores (higher merges first)
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<std::int32_t> types = {2, 3, 3};
  static constexpr char hex[] = "0123456789ABCDEF";
  for (int c = 0; c < 256; ++c) {
    tokens.push_back(std::string{'<', '0', 'x', hex[c >> 4], hex[c & 15], '>'});
    scores.push_back(0);
    types.push_back(6);
  }
  const std::string sp = "\xE2\x96\x81";
  const std::vector<std::pair<std::string, float>> pieces = {{sp, -1},   {"a", -2},       {"b", -3},
                                                             {"c", -4},  {sp + "a", -10}, {"ab", -5},
                                                             {"bc", -6}, {"abc", -7},     {sp + "abc", -20}};
  for (const auto& [p, s] : pieces) {
    tokens.push_back(p);
    scores.push_back(s);
    types.push_back(1);
  }
  const auto id = [&](const std::string& p) {
    return static_cast<token_id>(std::find(tokens.begin(), tokens.end(), p) - tokens.begin());
  };
  gguf_writer w;
  w.set("tokenizer.ggml.model", gguf_value::of("llama"));
  w.set("tokenizer.ggml.tokens", gguf_value::array(tokens));
  w.set("tokenizer.ggml.scores", gguf_value::array(std::span<const float>(scores)));
  w.set("tokenizer.ggml.token_type", gguf_value::array(std::span<const std::int32_t>(types)));
  w.set("tokenizer.ggml.bos_token_id", gguf_value::of(std::uint32_t{1}));
  w.set("tokenizer.ggml.eos_token_id", gguf_value::of(std::uint32_t{2}));
  const auto p = import_scratch() / "spm_vocab.gguf";
  w.write(p);
  const auto t = spm_tokenizer::load(p);
  CHECK(t.vocab_size() == static_cast<std::int32_t>(tokens.size()));
  CHECK(t.bos() == 1);
  CHECK(t.eos() == 2);
  CHECK(t.add_bos());
  CHECK(t.add_space_prefix());
  // "abc" → "▁abc": "ab" (-5) merges before "▁a" (-10) and "bc" (-6); then "abc" (-7); then "▁abc" (-20)
  CHECK(t.encode("abc") == std::vector<token_id>{id(sp + "abc")});
  // "cab" → "▁cab": "ab" first, then "▁c" and "cab" are not pieces: ▁ c ab
  CHECK(t.encode("cab") == std::vector<token_id>{id(sp), id("c"), id("ab")});
  // a character outside the pieces: its UTF-8 bytes
  CHECK(t.encode("\xC3\xA9") == std::vector<token_id>{id(sp), id("<0xC3>"), id("<0xA9>")});
  CHECK(t.encode("").empty());
  CHECK(t.encode("", true) == std::vector<token_id>{1});
  // special-token text is plain text unless `special`
  CHECK(t.encode("<s>a", true) == std::vector<token_id>{1, 1, id(sp + "a")});
  CHECK(t.encode("<s>a").front() == id(sp));
  // decode: ▁ as space, the prefix space stripped, bytes joined, special tokens dropped
  for (const std::string s : {"abc", "cab", "a b  c", "\xC3\xA9t\xC3\xA9"}) {
    INFO(s);
    CHECK(t.decode(t.encode(s)) == s);
  }
  CHECK(t.decode(std::vector<token_id>{1, id("a")}, true) == "<s>a");
  CHECK_THROWS_AS(t.decode(std::vector<token_id>{9999}), invalid_argument);
  // a vocabulary of another kind, or malformed, is refused naming the file and the key
  gguf_writer b;
  b.set("tokenizer.ggml.model", gguf_value::of("gpt2"));
  b.set("tokenizer.ggml.tokens", gguf_value::array(tokens));
  const auto bp = import_scratch() / "spm_gpt2.gguf";
  b.write(bp);
  try {
    (void)spm_tokenizer::load(bp);
    FAIL("loaded a gpt2 vocabulary");
  } catch (const corrupt_data& e) {
    CHECK(std::string(e.what()).find(bp.string()) != std::string::npos);
    CHECK(std::string(e.what()).find("tokenizer.ggml.model") != std::string::npos);
  }
  gguf_writer c;
  c.set("tokenizer.ggml.model", gguf_value::of("llama"));
  c.set("tokenizer.ggml.tokens", gguf_value::array(tokens));
  c.set("tokenizer.ggml.scores", gguf_value::array(std::span<const float>(scores).first(10)));
  const auto cp = import_scratch() / "spm_short_scores.gguf";
  c.write(cp);
  CHECK_THROWS_WITH(spm_tokenizer::load(cp), Catch::Contains("tokenizer.ggml.scores"));
}

TEST_CASE("spm tokenizer: llama.cpp's test vectors of its Llama SentencePiece vocabulary",
          "[engine][tokenizer]") {
  const fs::path inp =
      fs::path(LATENTAUDIT_SOURCE_DIR) / ".deps" / "llama.cpp" / "models" / "ggml-vocab-llama-spm.gguf.inp";
  if (!fs::is_regular_file(inp)) {
    WARN("no llama.cpp vocabularies at " << inp.parent_path().string() << " (scripts/install-deps.sh)");
    return;
  }
  const auto t = spm_tokenizer::load(fs::path(inp).replace_extension(""));
  CHECK(t.vocab_size() == 32000);
  std::ifstream in(inp, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str(), sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (std::size_t pos = 0; pos < s.size();) {
    std::size_t next = s.find(sep, pos);
    if (next == std::string::npos) next = s.size();
    texts.push_back(s.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::ifstream out(fs::path(inp).replace_extension(".out"));
  std::size_t checked = 0;
  for (const auto& text : texts) {
    std::string line;
    REQUIRE(std::getline(out, line));
    std::stringstream ls(line);
    std::vector<token_id> want;
    for (token_id x = 0; ls >> x;) want.push_back(x);
    INFO("text '" << text << "'");
    CHECK(t.encode(text) == want);
    ++checked;
  }
  CHECK(checked == 46);
}

TEST_CASE("real models: stories260K's GGUF runs on the reference engine with its own vocabulary",
          "[engine][real_models]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  auto e = reference_cpu_engine::load(m.stories260k());
  const auto& c = e.config();
  CHECK(c.vocab_size == 512);
  CHECK(c.n_layers == 5);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.hidden_size == 64);
  CHECK(c.head_dim == 8);
  CHECK(c.intermediate_size == 172);
  CHECK(c.max_context == 2048);
  CHECK_FALSE(c.tie_word_embeddings);
  const auto t = spm_tokenizer::load(m.stories260k());
  CHECK(t.vocab_size() == 512);
  CHECK(t.bos() == 1);
  CHECK(t.eos() == 2);
  CHECK(t.unk() == 0);
  // issue 50's measurement: a field " Max" tokenized alone begins with the dummy prefix ▁ (410)
  CHECK(t.encode(" Max") == std::vector<token_id>{410, 392, 412, 444});
  const auto in_text = t.encode("her dog, Max");
  REQUIRE(in_text.size() >= 3);
  CHECK(std::vector<token_id>(in_text.end() - 3, in_text.end()) == std::vector<token_id>{392, 412, 444});
  const auto ids = t.encode("Once upon a time, there was a little girl named Lily.", true);
  CHECK(ids.front() == 1);
  const auto logits = all_logits(e, ids);
  REQUIRE(logits.size() == ids.size() * 512);
  for (const float x : logits) REQUIRE(std::isfinite(x));
  // the model continues its own training text: after "Once upon a" the likeliest token is " time"
  const auto time = t.encode(" time");
  const auto upto = t.encode("Once upon a", true);
  auto e2 = reference_cpu_engine::load(m.stories260k());
  const auto s = e2.open_seq();
  const auto last = e2.prefill(s, upto, 0).logits;
  const auto best = std::max_element(last.begin(), last.end()) - last.begin();
  CHECK(t.decode(std::vector<token_id>{static_cast<token_id>(best)}) == "time");
  CHECK(time.size() >= 1);
}

TEST_CASE("real models: stories260K's story tasks on the reference engine with its SentencePiece reader",
          "[engine][real_models][joint_text]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  auto engine = reference_cpu_engine::load(m.stories260k());
  const auto tok = spm_tokenizer::load(m.stories260k());
  text_codec codec;  // as the CLI's (tools/cli/tokenizer_select.hpp): no special tokens, decode to EOS
  codec.encode = [&tok](std::string_view s) { return tok.encode(s); };
  codec.decode = [&tok](std::span<const token_id> ids) {
    std::size_t n = 0;
    while (n < ids.size() && ids[n] != tok.eos()) ++n;
    return tok.decode(ids.first(n));
  };
  codec.bos = tok.add_bos() ? tok.bos() : -1;
  const auto r = test::audit_story_tasks(engine, codec);
  WARN("stories260K story tasks on the reference engine: in-context "
       << r.in_context_equal << "/" << r.units << " (max |diff| " << r.max_in_context_diff
       << "), max |kv-text| answer_logprob " << r.max_kv_text_answer << ", continuation_prob "
       << r.max_kv_text_continuation << "; mean continuation_prob text_full " << r.mean_prob_text
       << ", no_comm " << r.mean_prob_none << ", deranged " << r.mean_prob_deranged);
  CHECK(r.records == 4 * r.units);
  CHECK(r.units == 20);
  CHECK(r.prob_in_range == r.records);
  CHECK(r.max_kv_text_answer <= 1e-3);
  CHECK(r.max_kv_text_continuation <= 1e-3);
  CHECK(static_cast<double>(r.in_context_equal) >= 0.95 * static_cast<double>(r.units));
  CHECK(r.answer_joint == r.units);
  CHECK(r.boundary_to_context == 0);  // SentencePiece keeps the boundary: lm-eval's split
  CHECK(r.mean_prob_text > r.mean_prob_none);
}
