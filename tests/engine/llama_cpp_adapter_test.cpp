// SPDX-License-Identifier: MIT
// The llama.cpp adapter (engine/llama_cpp.hpp) on organism-a converted to GGUF: the conformance
// kit passes (tolerance 1e-4 on logits; masked_relay skipped: no per-layer visibility mask);
// caches relay across engines through the wire (CRC, HMAC) in both directions within 1e-4 logits
// of reading the document; an export right after a shift sees re-rotated keys; what llama.cpp
// cannot do is refused with a clear error; the trial driver runs the default design restricted to
// the engine, and its outcomes agree with the reference engine's.
#include <latentaudit/engine/gguf_export.hpp>
#include <latentaudit/engine/llama_cpp.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include "support/captured_stderr.hpp"
#include "support/llama_cpp_engine.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

using namespace latentaudit;

namespace {

const std::filesystem::path models = std::filesystem::path(LATENTAUDIT_SOURCE_DIR) / "models";

// organism-a as an f32 GGUF, written once per process into its own scratch directory (a fixed
// path raced between the test processes ctest runs in parallel: one's rename removed the other's
// file).
std::filesystem::path organism_gguf() { return test::organism_gguf("organism-a"); }

using test::max_abs_diff;

std::vector<token_id> cat(std::vector<token_id> a, const std::vector<token_id>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("llama.cpp adapter: fingerprint and logits equal the reference engine's") {
  auto ll = llama_cpp_engine::load(organism_gguf());
  auto ref = reference_cpu_engine::load(models / "organism-a");
  CHECK(ll.info().fingerprint == ref.info().fingerprint);
  CHECK(ll.info().vocab_size == ref.info().vocab_size);
  CHECK(ll.v_transposed());  // flash attention off
  const auto task = make_organism_task(organism_format::load(models / "organism-a"), {.seed = 2}, 3, 0);
  const auto s1 = ll.open_seq(), s2 = ref.open_seq();
  const auto x = ll.prefill(s1, task.document, 0, {.all_logits = true});
  const auto y = ref.prefill(s2, task.document, 0, {.all_logits = true});
  CHECK(x.rows == static_cast<std::int64_t>(task.document.size()));
  CHECK(max_abs_diff(x.logits, y.logits) < 1e-4);
  // decode continues the sequence; a position gap is refused before llama.cpp sees it
  const auto p = static_cast<position_t>(task.document.size());
  CHECK(max_abs_diff(ll.decode(s1, 4, p, {}).logits, ref.decode(s2, 4, p, {}).logits) < 1e-4);
  CHECK_THROWS_WITH(ll.decode(s1, 4, p + 3, {}), Catch::Contains("no position gaps"));
  ll.close_seq(s1);
  ref.close_seq(s2);
}

TEST_CASE("llama.cpp adapter: the conformance kit passes (masked_relay skipped, with the reason)") {
  auto ll = llama_cpp_engine::load(organism_gguf());
  const auto task = make_organism_task(organism_format::load(models / "organism-a"), {.seed = 5}, 1, 0);
  std::vector<token_id> b = task.own_prompt;
  b.insert(b.end(), task.query.begin(), task.query.end());
  if (b.empty()) b = {task.query.front()};
  const auto res = run_conformance(ll, {.a = task.document, .b = b, .delta = 5, .tolerance = 1e-4});
  for (const auto& r : res) {
    INFO(r.check << ": " << r.detail << " (max |d| " << r.max_abs_diff << ")");
    if (r.check == "masked_relay") {
      CHECK(r.skipped);
      CHECK_THAT(r.detail, Catch::Contains("partial_layer_import"));
    } else {
      CHECK(r.passed);
    }
  }
  CHECK(res.size() == 7);
}

TEST_CASE("llama.cpp adapter: caches relay across engines through the wire, both ways, within 1e-4") {
  auto ll = llama_cpp_engine::load(organism_gguf());
  auto ref = reference_cpu_engine::load(models / "organism-a");
  const auto fmt = organism_format::load(models / "organism-a");
  const auto key = relay_hmac_key(7);
  for (std::uint64_t item = 0; item < 4; ++item) {
    const auto task = make_organism_task(fmt, {.seed = 7}, item, 0);
    const auto own = cat(task.own_prompt, task.query);
    const auto n = static_cast<position_t>(task.document.size());
    // B reading the document itself on the reference engine: what a relay must reproduce
    const auto sr = ref.open_seq();
    const auto want_all = ref.prefill(sr, cat(task.document, own), 0, {.all_logits = true}).logits;
    ref.close_seq(sr);
    const std::vector<float> want(
        want_all.end() -
            static_cast<std::ptrdiff_t>(own.size() * static_cast<std::size_t>(ref.info().vocab_size)),
        want_all.end());
    auto wire = [&](const kv_block& blk) {
      const auto bytes = encode_relay(blk, {.hmac_key = key});
      return decode_relay(bytes, {.hmac_key = key,
                                  .require_authentication = true,
                                  .expected_fingerprint = &ref.info().fingerprint})
          .kv;
    };
    {  // llama.cpp -> reference
      const auto a = ll.open_seq();
      (void)ll.prefill(a, task.document, 0, {});
      const auto blk = wire(ll.export_kv(a, {0, n}, {0, ll.info().fingerprint.n_layers}));
      ll.close_seq(a);
      const auto b = ref.open_seq();
      ref.import_kv(b, blk, {});
      const auto got = ref.prefill(b, own, n, {.all_logits = true}).logits;
      ref.close_seq(b);
      INFO("item " << item << " llama.cpp -> reference");
      CHECK(max_abs_diff(got, want) < 1e-4);
    }
    {  // reference -> llama.cpp
      const auto a = ref.open_seq();
      (void)ref.prefill(a, task.document, 0, {});
      const auto blk = wire(ref.export_kv(a, {0, n}, {0, ref.info().fingerprint.n_layers}));
      ref.close_seq(a);
      const auto b = ll.open_seq();
      ll.import_kv(b, blk, {});
      CHECK(ll.n_tokens(b) == n);
      CHECK(ll.next_position(b) == n);
      const auto got = ll.prefill(b, own, n, {.all_logits = true}).logits;
      ll.close_seq(b);
      INFO("item " << item << " reference -> llama.cpp");
      CHECK(max_abs_diff(got, want) < 1e-4);
    }
  }
}

TEST_CASE("llama.cpp adapter: an export right after a shift sees re-rotated keys") {
  auto ll = llama_cpp_engine::load(organism_gguf());
  auto ref = reference_cpu_engine::load(models / "organism-a");
  const auto task = make_organism_task(organism_format::load(models / "organism-a"), {.seed = 3}, 2, 0);
  const auto n = static_cast<std::int64_t>(task.document.size());
  const auto L = ll.info().fingerprint.n_layers;
  const auto s = ll.open_seq();
  (void)ll.prefill(s, task.document, 0, {});
  ll.shift(s, 0, static_cast<position_t>(n), 9);
  const auto got = ll.export_kv(s, {0, n}, {0, L});
  const auto r = ref.open_seq();
  (void)ref.prefill(r, task.document, 9, {});
  const auto want = ref.export_kv(r, {0, n}, {0, L});
  CHECK(got.positions()[0] == 9);
  double m = 0;
  for (std::size_t i = 0; i < got.n_layers(); ++i)
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int32_t h = 0; h < got.n_kv_heads(); ++h)
        for (std::int32_t d = 0; d < got.head_dim_k(); ++d)
          m = std::max(
              m, static_cast<double>(std::fabs(got.get(i, false, t, h, d) - want.get(i, false, t, h, d))));
  CHECK(m < 1e-4);
}

TEST_CASE("llama.cpp adapter: what llama.cpp cannot do is refused with a clear error") {
  auto ll = llama_cpp_engine::load(organism_gguf());
  const auto task = make_organism_task(organism_format::load(models / "organism-a"), {.seed = 3}, 2, 0);
  const auto n = static_cast<std::int64_t>(task.document.size());
  const auto a = ll.open_seq();
  (void)ll.prefill(a, task.document, 0, {});
  const auto full = ll.export_kv(a, {0, n}, {0, ll.info().fingerprint.n_layers});
  const auto one_layer = ll.export_kv(a, {0, n}, {0, 1});
  CHECK_THROWS_WITH(ll.import_kv(a, full, {}), Catch::Contains("empty"));  // set_data would replace a
  const auto b = ll.open_seq();
  CHECK_THROWS_WITH(ll.import_kv(b, one_layer, {}), Catch::Contains("partial_layer_import"));
  CHECK_THROWS_WITH(ll.import_kv(b, full, {.layer_mask = {true, false}}), Catch::Contains("layer_mask"));
  auto other = full;
  auto fp = other.fingerprint();
  fp.weights_hash ^= 1;
  other.set_fingerprint(fp);
  CHECK_THROWS_AS(ll.import_kv(b, other, {}), incompatible_model);
  CHECK(ll.n_tokens(b) == 0);
  CHECK_THROWS_AS(ll.prefill(b, std::vector<token_id>{1000}, 0, {}), invalid_argument);
  CHECK_THROWS_WITH(llama_cpp_engine::load("/nonexistent.gguf"), Catch::Contains("gguf"));
}

TEST_CASE("llama.cpp adapter: the default design restricted to the engine agrees with the reference") {
  auto ll = llama_cpp_engine::load(organism_gguf());
  auto ref = reference_cpu_engine::load(models / "organism-a");
  const auto fmt = organism_format::load(models / "organism-a");
  trial_design d{.seed = 1, .items = 12, .seeds = 1};
  CHECK_THROWS_WITH(
      trial_driver<llama_cpp_engine>(ll).run(
          d, [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, {.seed = 1}, i, s); },
          [](const trial_record&) {}),
      Catch::Contains("kv_layers_0"));
  const auto cut = restrict_to_engine(d, ll);
  std::set<std::string> skipped;
  for (const auto& s : cut.skipped) skipped.insert(s.arm);
  CHECK(skipped == std::set<std::string>{"kv_layers_0", "kv_layers_1", "kv_first_half"});
  std::map<trial_key, trial_record> on_ll, on_ref;
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, {.seed = 1}, i, s); };
  trial_driver<llama_cpp_engine>(ll).run(cut.design, tasks, [&](const trial_record& r) {
    on_ll[{r.item, r.seed, r.arm}] = r;
  });
  trial_driver<reference_cpu_engine>(ref).run(cut.design, tasks, [&](const trial_record& r) {
    on_ref[{r.item, r.seed, r.arm}] = r;
  });
  REQUIRE(on_ll.size() == cut.design.trials());
  std::size_t agree = 0;
  for (const auto& [k, r] : on_ll) {
    agree += r.correct == on_ref.at(k).correct;
    CHECK_FALSE(r.attention_mass);
    CHECK_FALSE(r.hidden_cosine);
    CHECK_FALSE(r.unavailable.empty());
  }
  CHECK(static_cast<double>(agree) >= 0.99 * static_cast<double>(on_ll.size()));
}

#ifdef LATENTAUDIT_CLI_PATH
TEST_CASE("llama.cpp adapter: `forward --engine llama.cpp` writes the reference's logits CSV") {
  const auto dir = std::filesystem::temp_directory_path() / "latentaudit_llama_cpp_cli";
  std::filesystem::create_directories(dir);
  const std::string cli = LATENTAUDIT_CLI_PATH, tokens = "0,5,41,6,42,1,5";
  const std::string ref = cli + " forward --model " + (models / "organism-a").string() + " --tokens " +
                          tokens + " --all --logits-out " + (dir / "ref.csv").string() + " > /dev/null";
  const std::string ll = cli + " forward --engine llama.cpp --model " + organism_gguf().string() +
                         " --tokens " + tokens + " --all --logits-out " + (dir / "ll.csv").string() +
                         " > /dev/null";
  REQUIRE(std::system(ref.c_str()) == 0);
  REQUIRE(std::system(ll.c_str()) == 0);
  auto read = [](const std::filesystem::path& p) {
    std::vector<float> v;
    std::ifstream in(p);
    std::string cell;
    while (std::getline(in, cell, ',')) {
      std::stringstream ss(cell);
      float x = 0;
      while (ss >> x) v.push_back(x);
    }
    return v;
  };
  const auto a = read(dir / "ref.csv"), b = read(dir / "ll.csv");
  CHECK(a.size() == 7u * 68u);
  CHECK(max_abs_diff(a, b) < 1e-4);
  // a model that is not a GGUF file is one line and exit code 2
  const std::string bad = cli + " forward --engine llama.cpp --model " + (models / "organism-a").string() +
                          " --tokens 1 2> " + (dir / "err.txt").string();
  CHECK(WEXITSTATUS(std::system(bad.c_str())) == 2);
}
#endif

#ifdef LATENTAUDIT_CLI_PATH
TEST_CASE(
    "llama.cpp adapter: `audit --engine llama.cpp` runs the default design and reports what it left out") {
  const auto dir = std::filesystem::temp_directory_path() / "latentaudit_llama_cpp_audit";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto b = dir / "organism_b.gguf";
  (void)export_llama_gguf(models / "organism-b", b, {});
  const std::string cli = LATENTAUDIT_CLI_PATH;
  const std::string cmd = cli + " audit --engine llama.cpp --model " + organism_gguf().string() +
                          " --partner " + b.string() + " --task " +
                          (models / "organism-a" / "task.json").string() +
                          " --items 24 --seeds 1 --timing-repeats 0 --quiet --out " + (dir / "out").string() +
                          " > " + (dir / "summary.json").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(dir / "summary.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = parse_json(ss.str());
  CHECK(j.at("engine").as_string() == "llama.cpp");
  CHECK(j.at("arms_unavailable").find("kv_layers_0") != nullptr);
  CHECK(j.at("arms_unavailable").find("cross_model") == nullptr);  // the partner ran on llama.cpp
  CHECK(j.at("metrics_unavailable").find("attention_mass") != nullptr);
  std::ifstream md(dir / "out" / "report.md");
  std::stringstream m;
  m << md.rdbuf();
  CHECK_THAT(m.str(), Catch::Contains("## Unavailable on this engine (llama.cpp)") &&
                          Catch::Contains("partial\\_layer\\_import"));  // report.md escapes data text
  // without --task the llama.cpp audit is one line and exit code 2
  const std::string bad = cli + " audit --engine llama.cpp --model " + organism_gguf().string() + " --out " +
                          (dir / "bad").string() + " 2> " + (dir / "err.txt").string();
  CHECK(WEXITSTATUS(std::system(bad.c_str())) == 2);
}
#endif

TEST_CASE("llama.cpp adapter: NaN weights give an error, never a NaN logit") {
  // the organism with one NaN in its final norm (every logit NaN), written past the CLI's check
  const auto src = organism_gguf();
  const auto copy = std::filesystem::temp_directory_path() / "latentaudit_llama_nan_weight.gguf";
  std::filesystem::copy_file(src, copy, std::filesystem::copy_options::overwrite_existing);
  {
    const auto g = gguf_file::open(copy);
    const auto& ts = g.tensors();
    const auto it =
        std::find_if(ts.begin(), ts.end(), [](const auto& t) { return t.name == "output_norm.weight"; });
    REQUIRE(it != ts.end());
    REQUIRE(it->ggml_type == ggml_type_f32);
    std::fstream io(copy, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(static_cast<std::streamoff>(g.data_offset() + it->offset));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    io.write(reinterpret_cast<const char*>(&nan), 4);
  }
  auto ll = llama_cpp_engine::load(copy);
  const auto s = ll.open_seq();
  CHECK_THROWS_WITH(ll.prefill(s, std::vector<token_id>{1, 2, 3}, 0, {}),
                    Catch::Contains("non-finite logit"));
  std::filesystem::remove(copy);
}

TEST_CASE(
    "llama.cpp adapter: llama.cpp's lines stay off stderr unless verbose, its first error is the reason") {
  using detail::llama_cpp_warnings_log;
  const std::string got = test::captured_stderr([&] {
    detail::llama_cpp_reset_reason();
    llama_cpp_warnings_log(GGML_LOG_LEVEL_INFO, "llama_model_loader: loaded meta data\n", nullptr);
    llama_cpp_warnings_log(GGML_LOG_LEVEL_WARN, "load: special token 9 (test case) replaced", nullptr);
    llama_cpp_warnings_log(GGML_LOG_LEVEL_CONT, " by token 2\n", nullptr);
    llama_cpp_warnings_log(GGML_LOG_LEVEL_DEBUG, "a debug line\n", nullptr);
    llama_cpp_warnings_log(GGML_LOG_LEVEL_ERROR, "llama_model_load: error loading model:", nullptr);
    llama_cpp_warnings_log(GGML_LOG_LEVEL_CONT, " tensor 'x' is out of bounds\n", nullptr);
    llama_cpp_warnings_log(GGML_LOG_LEVEL_ERROR, "llama_model_load_from_file: failed to load model\n",
                           nullptr);
    int verbose = 1;  // --verbose: every line as it comes
    llama_cpp_warnings_log(GGML_LOG_LEVEL_INFO, "shown when verbose\n", &verbose);
  });
  CHECK(got == "shown when verbose\n");
  CHECK(detail::llama_cpp_last_reason() ==
        "llama_model_load: error loading model: tensor 'x' is out of bounds");
  CHECK(detail::llama_cpp_failure_text("m.gguf") ==
        "'m.gguf': llama_model_load: error loading model: tensor 'x' is out of bounds");
  detail::llama_cpp_reset_reason();
  CHECK(detail::llama_cpp_failure_text("m.gguf") == "'m.gguf'");
}
