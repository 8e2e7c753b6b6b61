// SPDX-License-Identifier: MIT
// The cross-model cache map (kv/kv_map.hpp, engine/kv_map_file.hpp): on caches whose target is a
// planted linear function of the source's pre-RoPE keys and values the fit recovers it (R² ≈ 1,
// the planted source layer chosen) across a change of layers, KV heads, head dims and RoPE, and
// the mapped cache equals the planted one with the target's RoPE at the source's positions; a
// model mapped onto itself gives its own cache back; the file round-trips and a hostile file is
// refused naming the field.
#include <catch2/catch.hpp>
#include <latentaudit/core/rng.hpp>
#include <latentaudit/engine/kv_map_file.hpp>
#include <latentaudit/kv/kv_map.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace la = latentaudit;

namespace kv_map_test {

la::model_fingerprint shape(std::int32_t layers, std::int32_t heads, std::int32_t dim, la::rope_pairing p,
                            float theta, std::uint64_t hash) {
  la::model_fingerprint f;
  f.architecture = "LlamaForCausalLM";
  f.n_layers = layers;
  f.n_heads = heads;
  f.n_kv_heads = heads;
  f.head_dim_k = f.head_dim_v = dim;
  f.rope.pairing = p;
  f.rope.theta = theta;
  f.weights_hash = hash;
  return f;
}

// A cache of `f` with pre-RoPE values from `value(layer, token, column)` (column: heads' key then
// value), then rotated to positions first, first + 1, ...
template <class Value>
la::kv_block cache(const la::model_fingerprint& f, std::int64_t tokens, la::position_t first, Value&& value) {
  auto b = la::kv_block::all_layers(f, tokens, la::dtype::f32);
  std::fill(b.positions().begin(), b.positions().end(), la::position_t{0});
  for (std::size_t l = 0; l < b.n_layers(); ++l)
    for (std::int64_t t = 0; t < tokens; ++t) {
      int c = 0;
      for (std::int32_t h = 0; h < f.n_kv_heads; ++h) {
        for (std::int32_t d = 0; d < f.head_dim_k; ++d) b.set(l, false, t, h, d, value(l, t, c++));
        for (std::int32_t d = 0; d < f.head_dim_v; ++d) b.set(l, true, t, h, d, value(l, t, c++));
      }
    }
  std::vector<la::position_t> pos(static_cast<std::size_t>(tokens));
  for (std::size_t t = 0; t < pos.size(); ++t) pos[t] = first + static_cast<la::position_t>(t);
  la::set_positions(b, pos);
  return b;
}

double max_abs_diff(const la::kv_block& a, const la::kv_block& b) {
  const auto x = a.to_floats(), y = b.to_floats();
  REQUIRE(x.size() == y.size());
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(x[i]) - y[i]));
  return m;
}

std::filesystem::path dir() {
  return std::filesystem::temp_directory_path() / ("latentaudit_kv_map_" + std::to_string(::getpid()));
}

}  // namespace kv_map_test

using namespace kv_map_test;

TEST_CASE("kv map: a planted linear map across shapes and RoPE is recovered (seed 2901)", "[kv][kv_map]") {
  const auto src = shape(2, 2, 8, la::rope_pairing::neox, 10000.0f, 0x51);  // 32 features a layer
  const auto tgt = shape(3, 4, 4, la::rope_pairing::norm, 500.0f, 0x7A);    // 32 outputs a layer
  // target layer l = A_l · (source layer 1) + c_l, planted; source layer 0 is unrelated noise
  auto g = la::make_stream({2901, 0, 0, 0});
  std::vector<std::vector<double>> a(3, std::vector<double>(32 * 32)), c(3, std::vector<double>(32));
  for (auto& m : a)
    for (auto& x : m) x = la::standard_normal(g) / 6.0;
  for (auto& m : c)
    for (auto& x : m) x = la::standard_normal(g);
  std::vector<la::kv_block> sources, targets;
  auto pair = [&](std::uint64_t seq, std::int64_t tokens, la::position_t first) {
    auto h = la::make_stream({2901, seq, 1, 0});
    std::vector<double> s0(static_cast<std::size_t>(tokens * 32)), s1(s0.size());
    for (auto& x : s0) x = la::standard_normal(h);
    for (auto& x : s1) x = la::standard_normal(h);
    auto s = cache(src, tokens, first, [&](std::size_t l, std::int64_t t, int col) {
      return static_cast<float>((l == 0 ? s0 : s1)[static_cast<std::size_t>(t * 32 + col)]);
    });
    auto t = cache(tgt, tokens, first, [&](std::size_t l, std::int64_t t, int row) {
      double y = c[l][static_cast<std::size_t>(row)];
      for (int k = 0; k < 32; ++k)
        y += a[l][static_cast<std::size_t>(row * 32 + k)] * s1[static_cast<std::size_t>(t * 32 + k)];
      return static_cast<float>(y);
    });
    return std::pair{std::move(s), std::move(t)};
  };
  for (std::uint64_t seq = 0; seq < 12; ++seq) {
    auto [s, t] = pair(seq, 20, static_cast<la::position_t>(3 * seq));
    sources.push_back(std::move(s));
    targets.push_back(std::move(t));
  }
  const auto m = la::fit_kv_map(sources, targets, {.ridge = 1e-6, .top_layers = 1});
  REQUIRE(m.layers.size() == 3u);
  CHECK(m.calibration_tokens == 240u);
  for (const auto& lm : m.layers) {
    CHECK(lm.source_layers == std::vector<la::layer_index>{1});  // the planted layer, not the noise
    for (double r : lm.r2_key) CHECK(r > 0.9999);
    for (double r : lm.r2_value) CHECK(r > 0.9999);
  }
  // a fresh sequence at other positions: the mapped cache is the planted one, keys rotated with
  // the target's RoPE at the source's positions
  auto [s, t] = pair(99, 9, 40);
  const auto mapped = la::apply_kv_map(m, s);
  CHECK(mapped.fingerprint() == tgt);
  CHECK(std::vector<la::position_t>(mapped.positions().begin(), mapped.positions().end()) ==
        std::vector<la::position_t>(t.positions().begin(), t.positions().end()));
  CHECK(max_abs_diff(mapped, t) < 1e-3);
  // two source layers: the fit still holds, with both layers as features
  const auto m2 = la::fit_kv_map(sources, targets, {.ridge = 1e-6, .top_layers = 2});
  CHECK(m2.layers[0].source_layers == std::vector<la::layer_index>{0, 1});
  CHECK(max_abs_diff(la::apply_kv_map(m2, s), t) < 1e-3);
  // the file: written, read back equal, used the same way
  std::filesystem::create_directories(dir());
  const auto path = dir() / "map.safetensors";
  const std::vector<std::uint64_t> docs = {0xfedcba9876543210u, 7u, 0x0123456789abcdefu};
  auto three = m;
  three.calibration_sequences = 3;
  la::write_kv_map(path, three, std::string(64, 'a'), docs);
  const auto back = la::read_kv_map(path);
  CHECK(back.calibration_sha256 == std::string(64, 'a'));
  CHECK(back.calibration_documents ==
        std::vector<std::uint64_t>{7u, 0x0123456789abcdefu, 0xfedcba9876543210u});
  // the id: the same map gives the same id, read back or not; another weight another id
  CHECK(back.id == la::kv_map_id(m));
  CHECK(back.id.size() == 16u);
  auto other = m;
  other.layers[0].bias[0] += 1.0f;
  CHECK(la::kv_map_id(other) != back.id);
  CHECK(back.map.source == src);
  CHECK(back.map.target == tgt);
  CHECK(back.map.ridge == m.ridge);
  CHECK(back.map.calibration_tokens == 240u);
  for (std::size_t l = 0; l < 3; ++l) {
    CHECK(back.map.layers[l].source_layers == m.layers[l].source_layers);
    CHECK(back.map.layers[l].weight == m.layers[l].weight);
    CHECK(back.map.layers[l].bias == m.layers[l].bias);
    CHECK(back.map.layers[l].r2_key == m.layers[l].r2_key);
  }
  CHECK(max_abs_diff(la::apply_kv_map(back.map, s), mapped) == 0.0);
  // a cache of another model is refused
  CHECK_THROWS_AS(la::apply_kv_map(m, t), la::incompatible_model);
  std::filesystem::remove_all(dir());
}

TEST_CASE("kv map: a model mapped onto itself gives its own cache back", "[kv][kv_map]") {
  const auto f = shape(2, 2, 8, la::rope_pairing::neox, 10000.0f, 0x33);
  std::vector<la::kv_block> caches;
  for (std::uint64_t seq = 0; seq < 8; ++seq) {
    auto h = la::make_stream({2902, seq, 0, 0});
    std::vector<double> v(2 * 16 * 32);
    for (auto& x : v) x = la::standard_normal(h);
    caches.push_back(
        cache(f, 16, static_cast<la::position_t>(seq), [&](std::size_t l, std::int64_t t, int col) {
          return static_cast<float>(
              v[(l * 16 + static_cast<std::size_t>(t)) * 32 + static_cast<std::size_t>(col)]);
        }));
  }
  const auto m = la::fit_kv_map(caches, caches, {.ridge = 1e-8, .top_layers = 1});
  for (std::size_t l = 0; l < 2; ++l)
    CHECK(m.layers[l].source_layers == std::vector<la::layer_index>{static_cast<la::layer_index>(l)});
  CHECK(max_abs_diff(la::apply_kv_map(m, caches[3]), caches[3]) < 1e-4);
}

TEST_CASE("kv map: bad calls and a hostile map file are refused naming the field", "[kv][kv_map]") {
  const auto f = shape(2, 1, 4, la::rope_pairing::neox, 10000.0f, 0x1);
  auto one = cache(f, 5, 0,
                   [](std::size_t l, std::int64_t t, int c) { return static_cast<float>(l + t * 0.5 + c); });
  const std::vector<la::kv_block> s{one};
  CHECK_THROWS_WITH(la::fit_kv_map(s, std::vector<la::kv_block>{}), Catch::Contains("source"));
  CHECK_THROWS_WITH(la::fit_kv_map(s, s, {.ridge = 0.0}), Catch::Contains("options.ridge"));
  CHECK_THROWS_WITH(la::fit_kv_map(s, s, {.top_layers = 3}), Catch::Contains("options.top_layers"));
  auto shifted = one;
  std::vector<la::position_t> p{1, 2, 3, 4, 5};
  la::set_positions(shifted, p);
  CHECK_THROWS_WITH(la::fit_kv_map(s, std::vector<la::kv_block>{shifted}),
                    Catch::Contains("must hold the source's tokens at its positions"));
  // the file
  std::filesystem::create_directories(dir());
  const auto good = dir() / "good.safetensors";
  const auto m =
      la::fit_kv_map(std::vector<la::kv_block>{one, shifted}, std::vector<la::kv_block>{one, shifted});
  const std::vector<std::uint64_t> docs = {1u, 2u};
  la::write_kv_map(good, m, std::string(64, '0'), docs);
  // a copy of the good file with one metadata entry replaced (the tensors as they were)
  const auto st = la::safetensors_file::open(good);
  auto rewrite = [&](const std::string& key, const std::string& value) {
    auto meta = st.metadata();
    meta[key] = value;
    std::vector<la::tensor_to_write> tensors;
    for (const auto& t : st.tensors())
      tensors.push_back(
          {.name = t.name, .type = la::dtype::f32, .shape = t.shape, .values = st.read_f32(t.name)});
    const auto p2 = dir() / "bad.safetensors";
    la::write_safetensors(p2, tensors, meta);
    return p2;
  };
  auto refused = [&](const std::string& key, const std::string& value, const std::string& what) {
    INFO(key << " = " << value);
    CHECK_THROWS_WITH(la::read_kv_map(rewrite(key, value)), Catch::Contains(what));
  };
  refused("format", "latentaudit kv map 9", "__metadata__.format");
  std::string target = st.metadata().at("target");
  refused("target", "{}", "__metadata__.target.architecture must be a string");
  auto with = [&](std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  refused("target", with(target, "\"weights_hash\":\"0000000000000001\"", "\"weights_hash\":\"xyz\""),
          "target.weights_hash must be 16 lower-case hex digits");
  refused("target", with(target, "\"n_layers\":2", "\"n_layers\":3"),
          "layers must hold one entry per target layer");
  refused("target", with(target, "\"n_kv_heads\":1", "\"n_kv_heads\":2"), "r2_key must hold one number per");
  refused("layers", with(st.metadata().at("layers"), "\"source_layers\":[0", "\"source_layers\":[7"),
          "source_layers must be ascending source layers");
  refused("ridge", "-1", "__metadata__.ridge must be a positive number");
  refused("calibration_tokens", "many", "calibration_tokens must be a whole number");
  refused("layers", "[", "__metadata__.layers");
  refused("calibration_sha256", "h", "calibration_sha256 must be 64 lower-case hex digits");
  refused("calibration_documents", std::string(16, '0'), "calibration_documents must hold 16 hex digits per");
  refused("calibration_documents", std::string(31, '0') + "g",
          "calibration_documents must hold 16 hex digits per");
  std::filesystem::remove_all(dir());
}

TEST_CASE("kv map screen: the attention-output cosine is 1 for the native cache and falls for another",
          "[kv][kv_map]") {
  const auto f = shape(2, 2, 8, la::rope_pairing::neox, 10000.0f, 0x5C);
  auto random_cache = [&](std::uint64_t seed) {
    auto h = la::make_stream({seed, 0, 0, 0});
    std::vector<double> v(2 * 12 * 32);
    for (auto& x : v) x = la::standard_normal(h);
    return cache(f, 12, 0, [&](std::size_t l, std::int64_t t, int col) {
      return static_cast<float>(
          v[(l * 12 + static_cast<std::size_t>(t)) * 32 + static_cast<std::size_t>(col)]);
    });
  };
  const auto native = random_cache(1), other = random_cache(2);
  CHECK(la::attention_output_cosine(native, native) == Approx(1.0).margin(1e-12));
  const double c = la::attention_output_cosine(other, native);
  CHECK(c < 0.5);
  CHECK(c > -1.0);
  // one probe or all of them: still 1 against itself
  CHECK(la::attention_output_cosine(native, native, 1) == Approx(1.0).margin(1e-12));
  CHECK(la::attention_output_cosine(native, native, 1000) == Approx(1.0).margin(1e-12));
  // a small perturbation keeps it close to 1
  auto near = native;
  near.set(0, true, 3, 1, 2, near.get(0, true, 3, 1, 2) + 0.01f);
  CHECK(la::attention_output_cosine(near, native) > 0.99);
  CHECK_THROWS_WITH(la::attention_output_cosine(native, native, 0), Catch::Contains("probes"));
  const auto g = shape(2, 2, 8, la::rope_pairing::neox, 10000.0f, 0x5D);  // another model
  const auto foreign = cache(g, 12, 0, [](std::size_t, std::int64_t, int) { return 0.5f; });
  CHECK_THROWS_WITH(la::attention_output_cosine(foreign, native), Catch::Contains("mapped"));
}
