// SPDX-License-Identifier: MIT
// Tests for engine/reference_cpu.hpp: loading and its errors, concept checks (with negative
// cases), forward semantics (all logits, hidden state, thread independence), attention capture,
// export/import details (dtype conversion, positions, partial layers), shift/erase errors.
#include <latentaudit/engine/reference_cpu.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <limits>

#include "support/catch.hpp"
#include "support/tiny_llama.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
struct no_export {  // lacks export_kv: not an engine
  const engine_info& info() const;
  seq_id open_seq();
  void close_seq(seq_id);
  forward_output prefill(seq_id, std::span<const token_id>, position_t, const forward_options&);
  forward_output decode(seq_id, token_id, position_t, const forward_options&);
  void import_kv(seq_id, const kv_block&, const import_options&);
  void shift(seq_id, position_t, position_t, position_t);
  void erase(seq_id, position_t, position_t);
  std::int64_t n_tokens(seq_id) const;
  position_t next_position(seq_id) const;
};
static_assert(!inference_engine<no_export>);
static_assert(!inference_engine<int>);
static_assert(!attention_capturing_engine<no_export>);
}  // namespace

TEST_CASE("loading validates config and tensors", "[engine][reference_cpu]") {
  const auto dir = test::write_tiny_llama("load");
  auto b = reference_cpu_engine::load(dir);
  CHECK(b.info().fingerprint.n_layers == 3);
  CHECK(b.info().fingerprint.n_kv_heads == 2);
  CHECK(b.info().fingerprint.head_dim_k == 8);
  CHECK(b.info().fingerprint.weights_hash != 0);
  CHECK(b.info().vocab_size == 40);
  CHECK(reference_cpu_engine::load(test::write_tiny_llama("load2", {.seed = 2}))
            .info()
            .fingerprint.weights_hash != b.info().fingerprint.weights_hash);
  CHECK_THROWS_WITH(reference_cpu_engine::load(dir / "nope"), Contains("config.json"));
  // a config with an unsupported field, and a checkpoint missing a tensor
  const auto bad = test::write_tiny_llama("badcfg");
  std::ofstream(bad / "config.json")
      << R"({"vocab_size":40,"hidden_size":32,"intermediate_size":48,"num_hidden_layers":3,"num_attention_heads":4,"rope_scaling":{"type":"linear"}})";
  CHECK_THROWS_WITH(reference_cpu_engine::load(bad), Contains("rope_scaling"));
  std::ofstream(bad / "config.json")
      << R"({"vocab_size":40,"hidden_size":32,"intermediate_size":48,"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2})";
  CHECK_THROWS_WITH(reference_cpu_engine::load(bad), Contains("missing tensor 'model.layers.3."));
  std::ofstream(bad / "config.json")
      << R"({"vocab_size":40,"hidden_size":32,"intermediate_size":48,"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":3})";
  CHECK_THROWS_WITH(reference_cpu_engine::load(bad), Contains("divide"));
  std::ofstream(bad / "config.json")
      << R"({"vocab_size":40,"hidden_size":32,"intermediate_size":48,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2})";
  CHECK_THROWS_WITH(reference_cpu_engine::load(bad), Contains("unexpected tensor 'model.layers.2."));
}

TEST_CASE("load_with_overlay: the overlay's tensors used, every base and overlay tensor checked",
          "[engine][reference_cpu]") {
  const auto dir = test::write_tiny_llama("overlay_base", {.seed = 5});
  const auto base = reference_cpu_engine::load(dir);
  const auto st = safetensors_file::open(dir / "model.safetensors");
  const std::int64_t shape[] = {32};
  auto norm = st.read_f32("model.norm.weight", shape);
  for (auto& x : norm) x *= 1.5f;
  const auto scratch = fs::temp_directory_path() / ("latentaudit_overlay_" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  const auto ov = scratch / "norm.safetensors";
  write_safetensors(ov, {{"model.norm.weight", dtype::f32, {32}, norm}});
  const auto tuned = reference_cpu_engine::load_with_overlay(dir, ov);
  CHECK(tuned.info().fingerprint.weights_hash != base.info().fingerprint.weights_hash);
  CHECK(tuned.config().hidden_size == 32);
  // a non-finite value in the overlay: refused naming the overlay and the tensor
  auto bad = norm;
  bad[3] = std::numeric_limits<float>::quiet_NaN();
  const auto ov_nan = scratch / "norm_nan.safetensors";
  write_safetensors(ov_nan, {{"model.norm.weight", dtype::f32, {32}, bad}});
  CHECK_THROWS_WITH(reference_cpu_engine::load_with_overlay(dir, ov_nan),
                    Contains("'model.norm.weight' in '" + ov_nan.string() + "'") && Contains("index 3"));
  // a non-finite value in a base tensor the overlay replaces: refused as load() refuses it, naming
  // the base model's file
  const auto nan_base = scratch / "nan_base";
  fs::create_directories(nan_base);
  fs::copy_file(dir / "config.json", nan_base / "config.json");
  std::vector<tensor_to_write> tensors;
  for (const auto& t : st.tensors()) {
    auto v = st.read_f32(t.name, t.shape);
    if (t.name == "model.norm.weight") v[7] = std::numeric_limits<float>::infinity();
    tensors.push_back({t.name, dtype::f32, t.shape, std::move(v)});
  }
  write_safetensors(nan_base / "model.safetensors", tensors, {{"format", "pt"}});
  CHECK_THROWS_WITH(reference_cpu_engine::load(nan_base),
                    Contains("'model.norm.weight'") && Contains("index 7"));
  CHECK_THROWS_WITH(reference_cpu_engine::load_with_overlay(nan_base, ov),
                    Contains("'model.norm.weight' in '" + (nan_base / "model.safetensors").string() + "'") &&
                        Contains("index 7"));
  fs::remove_all(scratch);
}

TEST_CASE("forward: all logits, hidden state, thread independence, bad input", "[engine][reference_cpu]") {
  const auto dir = test::write_tiny_llama("fwd");
  auto b1 = reference_cpu_engine::load(dir, 1), b4 = reference_cpu_engine::load(dir, 4);
  const std::vector<token_id> t{1, 2, 3, 4, 5};
  const auto s1 = b1.open_seq(), s4 = b4.open_seq();
  const auto all = b1.prefill(s1, t, 0, {.all_logits = true, .want_hidden = true});
  CHECK(all.rows == 5);
  CHECK(all.logits.size() == 5 * 40);
  CHECK(all.hidden.size() == 32);
  const auto last = b4.prefill(s4, t, 0);
  CHECK(last.rows == 1);
  // the last row alone (GEMV) and within all rows (GEMM) round differently, by ~1 ulp
  for (std::size_t i = 0; i < 40; ++i) CHECK(std::fabs(last.logits[i] - all.logits[4 * 40 + i]) < 1e-5);
  // the thread count does not change a single bit
  const auto s1b = b1.open_seq();
  const auto one = b1.prefill(s1b, t, 0);
  CHECK(one.logits == last.logits);
  CHECK(b1.n_tokens(s1) == 5);
  CHECK(b1.next_position(s1) == 5);
  const std::vector<token_id> bad{1, 40};
  CHECK_THROWS_WITH(b1.prefill(s1, bad, 5), Contains("holds id 40 at index 1"));
  CHECK_THROWS_AS(b1.prefill(s1, {}, 5), invalid_argument);
  CHECK_THROWS_WITH(b1.prefill(s1, t, 254), Contains("outside [0, 256)"));
  CHECK_THROWS_AS(b1.prefill(99, t, 0), invalid_argument);
  b1.close_seq(s1);
  CHECK_THROWS_AS(b1.n_tokens(s1), invalid_argument);
}

TEST_CASE("forward: the matrix products on several threads give the one-thread bits",
          "[engine][reference_cpu]") {
  // products large enough to share (n·in·out >= 2^20 multiply-adds) and wider than one block of
  // 256 output features (intermediate 640 and vocab 600: three blocks each), prefill and decode
  const auto dir = test::write_tiny_llama(
      "fwd_blocks",
      {.vocab = 600, .hidden = 128, .intermediate = 640, .layers = 2, .heads = 4, .kv_heads = 2});
  std::vector<token_id> t;
  for (int i = 0; i < 48; ++i) t.push_back((i * 37) % 599 + 1);
  // both kernels: the one this processor gets, and Eigen's (forced), whose blocks are shared too
  for (const bool baseline : {false, true}) {
    if (baseline) ::setenv("LATENTAUDIT_REFERENCE_KERNEL", "baseline", 1);
    std::vector<std::vector<float>> logits;
    for (unsigned threads : {1u, 2u, 3u}) {
      auto b = reference_cpu_engine::load(dir, threads);
      const auto s = b.open_seq();
      auto out = b.prefill(s, t, 0, {.all_logits = true, .want_hidden = true});
      const auto step = b.decode(s, 7, 48);
      out.logits.insert(out.logits.end(), step.logits.begin(), step.logits.end());
      out.logits.insert(out.logits.end(), out.hidden.begin(), out.hidden.end());
      logits.push_back(std::move(out.logits));
    }
    ::unsetenv("LATENTAUDIT_REFERENCE_KERNEL");
    INFO("baseline kernel forced: " << baseline);
    CHECK(logits[1] == logits[0]);
    CHECK(logits[2] == logits[0]);
  }
}

TEST_CASE("forward: the packed AVX2/FMA kernel agrees with Eigen's product and keeps a row's bits",
          "[engine][reference_cpu]") {
  // products of several blocks and of rows left after the 6-row tiles (n = 47); the baseline
  // kernel forced through LATENTAUDIT_REFERENCE_KERNEL=baseline
  const auto dir = test::write_tiny_llama(
      "fwd_kernel",
      {.vocab = 600, .hidden = 128, .intermediate = 640, .layers = 2, .heads = 4, .kv_heads = 2});
  std::vector<token_id> t;
  for (int i = 0; i < 47; ++i) t.push_back((i * 53) % 599 + 1);
  auto run = [&](unsigned threads) {
    auto b = reference_cpu_engine::load(dir, threads);
    const auto s = b.open_seq();
    auto all = b.prefill(s, t, 0, {.all_logits = true});
    return std::make_pair(std::string(b.kernel()), all.logits);
  };
  ::setenv("LATENTAUDIT_REFERENCE_KERNEL", "baseline", 1);
  const auto [base_kernel, base] = run(1);
  ::unsetenv("LATENTAUDIT_REFERENCE_KERNEL");
  const auto [kernel, fast] = run(1);
  CHECK(base_kernel == "baseline");
  CHECK(kernel == (detail::packed_gemm_available() ? "avx2-fma" : "baseline"));
  REQUIRE(fast.size() == base.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < fast.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(fast[i] - base[i])) / (1.0 + std::fabs(base[i])));
  CHECK(worst < 1e-4);  // float rounding of a different summation order, not a different model
  // a decode step's single row equals that row within a prefill (the packed kernel's per-output
  // chain does not depend on the rows beside it)
  auto b = reference_cpu_engine::load(dir, 2);
  const auto s = b.open_seq();
  (void)b.prefill(s, std::span(t).first(46), 0);
  const auto last = b.decode(s, t[46], 46);
  const std::vector<float> row(fast.end() - 600, fast.end());
  if (kernel == "avx2-fma") CHECK(last.logits == row);
  for (std::size_t i = 0; i < row.size(); ++i) CHECK(std::fabs(last.logits[i] - row[i]) < 1e-4f);
}

TEST_CASE("attention capture: rows sum to one over visible cached tokens", "[engine][reference_cpu]") {
  auto b = reference_cpu_engine::load(test::write_tiny_llama("cap"));
  const auto s = b.open_seq();
  (void)b.prefill(s, std::vector<token_id>{5, 6, 7}, 0);
  const layer_index layers[] = {0, 2};
  const auto cap = b.prefill_capture(s, std::vector<token_id>{8, 9}, 3, layers);
  CHECK(cap.queries == 2);
  CHECK(cap.keys == 5);
  CHECK(cap.weights.size() == 2 * 4 * 2 * 5);
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < 4; ++h)
      for (std::size_t q = 0; q < 2; ++q) {
        double sum = 0;
        for (std::size_t k = 0; k < 5; ++k) sum += cap.weights[((l * 4 + h) * 2 + q) * 5 + k];
        CHECK(sum == Approx(1.0).epsilon(1e-5));
        CHECK(cap.weights[((l * 4 + h) * 2 + 0) * 5 + 4] == 0.0f);  // causal: query 0 cannot see key 4
      }
  const layer_index bad[] = {3};
  CHECK_THROWS_AS(b.prefill_capture(s, std::vector<token_id>{1}, 5, bad), invalid_argument);
}

TEST_CASE("export/import: dtypes, position modes, partial layers", "[engine][reference_cpu]") {
  auto b = reference_cpu_engine::load(test::write_tiny_llama("xi"));
  const std::vector<token_id> a{4, 8, 15, 16, 23}, q{42 % 40, 7};
  const auto sa = b.open_seq();
  (void)b.prefill(sa, a, 0);
  const auto blk = b.export_kv(sa, {0, 5}, {0, 3});
  CHECK(blk.n_tokens() == 5);
  CHECK(blk.positions()[4] == 4);
  // relayed at other positions with re-rotation: equals prefilling A there
  const auto s1 = b.open_seq(), s2 = b.open_seq();
  auto rebased = blk;  // placement is the caller's (policy's) step: import keeps the positions it is given
  apply_position_mode(rebased, position_mode::rebase_contiguous, 10);
  b.import_kv(s1, rebased);
  CHECK(b.next_position(s1) == 15);
  (void)b.prefill(s2, a, 10);
  const auto x = b.prefill(s1, q, 15).logits, y = b.prefill(s2, q, 15).logits;
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(x[i] - y[i]) < 1e-4);
  // a bf16 relay is accepted and stays close
  const auto s3 = b.open_seq(), s4 = b.open_seq();
  b.import_kv(s3, blk.converted(dtype::bf16));
  b.import_kv(s4, blk);
  const auto u = b.prefill(s3, q, 5).logits, v = b.prefill(s4, q, 5).logits;
  double m = 0;
  for (std::size_t i = 0; i < u.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(u[i] - v[i])));
  CHECK(m < 0.05);
  CHECK(m > 0);
  // a partial-layer relay: exporting layers [1, 3) and importing gives a ragged export back
  const auto part = b.export_kv(sa, {1, 4}, {1, 3});
  CHECK(part.layers().size() == 2);
  const auto s5 = b.open_seq();
  b.import_kv(s5, part);
  const auto back = b.export_kv(s5, {0, 3}, {0, 3});
  CHECK(back.has_token_mask());
  CHECK(back.present_tokens(0) == 0);
  CHECK(back.present_tokens(1) == 3);
  CHECK_THROWS_AS(b.export_kv(sa, {0, 6}, {0, 3}), invalid_argument);
  CHECK_THROWS_AS(b.import_kv(s5, blk, {.layer_mask = {true}}), shape_mismatch);
  auto beyond = blk;
  beyond.positions()[4] = 300;
  CHECK_THROWS_WITH(b.import_kv(b.open_seq(), beyond), Contains("context length"));
}

TEST_CASE("shift and erase check their arguments", "[engine][reference_cpu]") {
  auto b = reference_cpu_engine::load(test::write_tiny_llama("se"));
  const auto s = b.open_seq();
  (void)b.prefill(s, std::vector<token_id>{1, 2, 3}, 0);
  CHECK_THROWS_WITH(b.shift(s, 0, 3, -1), Contains("outside [0, max_context)"));
  CHECK_THROWS_AS(b.shift(s, 3, 0, 1), invalid_argument);
  b.shift(s, 1, 3, 10);
  CHECK(b.next_position(s) == 13);
  b.erase(s, 11, 12);
  CHECK(b.n_tokens(s) == 2);
  CHECK_THROWS_AS(b.erase(s, 5, 1), invalid_argument);
}
