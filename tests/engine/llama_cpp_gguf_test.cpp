// SPDX-License-Identifier: MIT
// engine/gguf.hpp against ggml's own GGUF code (llama.cpp v0.5.0's gguf.h): ggml reads what our
// writer writes (every key, type, value, tensor type, shape, offset and byte) and our reader reads
// what ggml's writer writes; both readers agree on llama.cpp's 19 tokenizer vocabularies
// (.deps/llama.cpp/models/ggml-vocab-*.gguf, installed by scripts/install-deps.sh, which issue 17's
// tokenizer tests use). Built and run only where llama.cpp is.
#include <gguf.h>

#include <cstring>
#include <fstream>
#include <latentaudit/engine/gguf.hpp>
#include <memory>

#include "support/catch.hpp"
#include "support/llama_cpp_engine.hpp"

using namespace latentaudit;
namespace fs = std::filesystem;

namespace {

struct gguf_deleter {
  void operator()(gguf_context* c) const { gguf_free(c); }
};
using gguf_ptr = std::unique_ptr<gguf_context, gguf_deleter>;

gguf_ptr ggml_open(const fs::path& p) {
  gguf_ptr g(gguf_init_from_file(p.c_str(), {.no_alloc = true, .ctx = nullptr}));
  REQUIRE(g != nullptr);
  return g;
}

// Our reader's metadata equals ggml's, key by key.
void check_same_metadata(const gguf_file& ours, gguf_context* g) {
  REQUIRE(static_cast<std::size_t>(gguf_get_n_kv(g)) == ours.metadata().size());
  for (std::int64_t i = 0; i < gguf_get_n_kv(g); ++i) {
    const auto& [key, v] = ours.metadata()[static_cast<std::size_t>(i)];
    INFO(key);
    CHECK(key == gguf_get_key(g, i));
    const bool array = gguf_get_kv_type(g, i) == GGUF_TYPE_ARRAY;
    CHECK(v.is_array() == array);
    const auto type = array ? gguf_get_arr_type(g, i) : gguf_get_kv_type(g, i);
    CHECK(static_cast<int>(v.type()) == static_cast<int>(type));
    if (type == GGUF_TYPE_STRING) {
      if (array) {
        REQUIRE(gguf_get_arr_n(g, i) == v.size());
        for (std::size_t j = 0; j < v.size(); ++j)
          if (v.as_string(j) != gguf_get_arr_str(g, i, j))
            FAIL("string " << j << " of " << key << " differs");
      } else {
        CHECK(v.as_string() == gguf_get_val_str(g, i));
      }
    } else if (array) {
      REQUIRE(gguf_get_arr_n(g, i) == v.size());
      CHECK(std::memcmp(v.raw().data(), gguf_get_arr_data(g, i), v.raw().size()) == 0);
    } else {
      CHECK(std::memcmp(v.raw().data(), gguf_get_val_data(g, i), v.raw().size()) == 0);
    }
  }
}

void check_same_tensors(const gguf_file& ours, gguf_context* g) {
  REQUIRE(static_cast<std::size_t>(gguf_get_n_tensors(g)) == ours.tensors().size());
  CHECK(gguf_get_data_offset(g) == ours.data_offset());
  CHECK(gguf_get_alignment(g) == ours.alignment());
  for (std::int64_t i = 0; i < gguf_get_n_tensors(g); ++i) {
    const auto& t = ours.tensors()[static_cast<std::size_t>(i)];
    INFO(t.name);
    CHECK(t.name == gguf_get_tensor_name(g, i));
    CHECK(t.ggml_type == static_cast<std::uint32_t>(gguf_get_tensor_type(g, i)));
    CHECK(t.offset == gguf_get_tensor_offset(g, i));
    CHECK(t.bytes == gguf_get_tensor_size(g, i));
    const std::int64_t* ne = gguf_get_tensor_ne(g, i);
    for (std::size_t d = 0; d < 4; ++d) CHECK(ne[d] == (d < t.ne.size() ? t.ne[d] : 1));
  }
}

}  // namespace

TEST_CASE("ggml reads what the GGUF writer writes", "[engine][llama_cpp][gguf]") {
  const auto dir = test::organism_gguf("organism-b").parent_path();
  for (std::uint32_t alignment : {32u, 64u}) {
    gguf_writer w(alignment);
    w.set("general.architecture", gguf_value::of("llama"));
    w.set("u8", gguf_value::of(std::uint8_t{7}));
    w.set("i16", gguf_value::of(std::int16_t{-7}));
    w.set("u64", gguf_value::of(std::uint64_t{1} << 40));
    w.set("f64", gguf_value::of(-0.25));
    w.set("b", gguf_value::of(true));
    const std::vector<float> scores{0.5f, -1.5f};
    w.set("scores", gguf_value::array(std::span<const float>(scores)));
    w.set("tokens", gguf_value::array(std::vector<std::string>{"<s>", "\xe2\x96\x81hi"}));
    std::vector<float> a(3 * 5), b(7);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = -static_cast<float>(i);
    w.add_tensor("a", dtype::f16, {3, 5}, a);
    w.add_tensor("b", dtype::f32, {7}, b);
    w.add_tensor("c", dtype::bf16, {2, 2, 2}, std::vector<float>(8, 3.0f));
    const auto p = dir / ("ours" + std::to_string(alignment) + ".gguf");
    w.write(p);
    const auto ours = gguf_file::open(p);
    auto g = ggml_open(p);
    CHECK(gguf_get_version(g.get()) == 3);
    check_same_metadata(ours, g.get());
    check_same_tensors(ours, g.get());
  }
  // and the organism export
  const auto e = test::organism_gguf("organism-b");
  auto g = ggml_open(e);
  const auto ours = gguf_file::open(e);
  check_same_metadata(ours, g.get());
  check_same_tensors(ours, g.get());
}

TEST_CASE("the GGUF reader reads what ggml writes", "[engine][llama_cpp][gguf]") {
  gguf_ptr g(gguf_init_empty());
  gguf_set_val_str(g.get(), "general.architecture", "llama");
  // (no general.alignment here: ggml's writer lays the data out at 32 whatever that key says)
  gguf_set_val_i32(g.get(), "i32", -3);
  gguf_set_val_f32(g.get(), "f32", 1.5f);
  gguf_set_val_bool(g.get(), "bool", false);
  const std::int32_t ids[] = {4, 5, 6};
  gguf_set_arr_data(g.get(), "ids", GGUF_TYPE_INT32, ids, 3);
  const char* words[] = {"x", "yy", ""};
  gguf_set_arr_str(g.get(), "words", words, 3);
  ggml_init_params ip{.mem_size = 1 << 20, .mem_buffer = nullptr, .no_alloc = false};
  std::unique_ptr<ggml_context, void (*)(ggml_context*)> ctx(ggml_init(ip), ggml_free);
  ggml_tensor* t = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4, 3);  // ne {4, 3}: 3 rows of 4
  ggml_set_name(t, "w");
  for (int i = 0; i < 12; ++i) static_cast<float*>(t->data)[i] = static_cast<float>(i);
  ggml_tensor* h = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F16, 5);
  ggml_set_name(h, "h");
  for (int i = 0; i < 5; ++i)
    static_cast<ggml_fp16_t*>(h->data)[i] = ggml_fp32_to_fp16(static_cast<float>(i) / 4);
  gguf_add_tensor(g.get(), t);
  gguf_add_tensor(g.get(), h);
  const auto p = test::organism_gguf("organism-b").parent_path() / "ggml.gguf";
  REQUIRE(gguf_write_to_file(g.get(), p.c_str(), false));
  const auto ours = gguf_file::open(p);
  auto back = ggml_open(p);  // the writer's context has no data offset: compare with ggml's reading
  check_same_metadata(ours, back.get());
  check_same_tensors(ours, back.get());
  CHECK(ours.find_tensor("w")->shape() == std::vector<std::int64_t>{3, 4});
  std::vector<float> expect(12);
  for (int i = 0; i < 12; ++i) expect[static_cast<std::size_t>(i)] = static_cast<float>(i);
  CHECK(ours.read_f32("w") == expect);
  CHECK(ours.read_f32("h") == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1});
}

#if LATENTAUDIT_LLAMA_CPP_HAS_VOCABS
TEST_CASE("both readers agree on llama.cpp's tokenizer vocabularies", "[engine][llama_cpp][gguf]") {
  const fs::path models = LATENTAUDIT_LLAMA_CPP_VOCAB_DIR;
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(models)) {
    if (e.path().extension() != ".gguf") continue;
    INFO(e.path());
    const auto ours = gguf_file::open(e.path());
    auto g = ggml_open(e.path());
    check_same_metadata(ours, g.get());
    CHECK(ours.find("tokenizer.ggml.tokens")->size() > 1000);
    ++files;
  }
  CHECK(files == 19);
}
#endif
