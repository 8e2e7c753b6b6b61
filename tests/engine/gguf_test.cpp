// SPDX-License-Identifier: MIT
// Tests for engine/gguf.hpp: writer/reader round trips (every value type, arrays, f32/f16/bf16
// tensors, alignments 32 and 64, values produced at write time); every truncation of a valid file
// and hand-made malformed headers (bad magic or version, counts, string lengths and array counts
// claiming more than the file, nested arrays, invalid types, duplicate keys and names, bad
// alignment, dimensions, ggml types, misaligned, overlapping or out-of-file tensors) are refused
// with corrupt_data before anything they claim is allocated; writer argument errors.
// Cross-checks against ggml's own GGUF reader and writer are in llama_cpp_gguf_test.cpp.
#include <latentaudit/engine/gguf.hpp>

#include <unistd.h>
#include <fstream>

#include "support/catch.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
fs::path scratch(const std::string& name) {
  static const fs::path dir = [] {
    auto d = fs::temp_directory_path() / ("latentaudit_gguf_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir / name;
}
std::vector<std::byte> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

// Hand-made GGUF bytes, field by field.
struct builder {
  std::vector<std::byte> b;
  template <class T>
  builder& put(T v) {
    const std::size_t at = b.size();  // resize + memcpy: GCC 12 -O3 misreads insert (stringop-overflow)
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
    return *this;
  }
  builder& str(std::string_view s) {
    put(static_cast<std::uint64_t>(s.size()));
    const std::size_t at = b.size();
    b.resize(at + s.size());
    if (!s.empty()) std::memcpy(b.data() + at, s.data(), s.size());
    return *this;
  }
  builder& header(std::int64_t n_tensors, std::int64_t n_kv, std::uint32_t version = 3) {
    return put(std::array<char, 4>{'G', 'G', 'U', 'F'}).put(version).put(n_tensors).put(n_kv);
  }
  builder& kv_u32(std::string_view key, std::uint32_t v) { return str(key).put(std::uint32_t{4}).put(v); }
  builder& tensor(std::string_view name, std::vector<std::int64_t> ne, std::uint32_t type,
                  std::uint64_t offset) {
    str(name).put(static_cast<std::uint32_t>(ne.size()));
    for (auto d : ne) put(d);
    return put(type).put(offset);
  }
  builder& pad(std::size_t alignment = 32) {
    while (b.size() % alignment != 0) b.push_back(std::byte{0});
    return *this;
  }
  builder& zeros(std::size_t n) {
    b.insert(b.end(), n, std::byte{0});
    return *this;
  }
};

std::string parse_error(const std::vector<std::byte>& bytes) {
  try {
    (void)gguf_file::parse(bytes, {}, "case");
  } catch (const corrupt_data& e) {
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST_CASE("GGUF files round-trip metadata of every type and f32/f16/bf16 tensors", "[engine][gguf]") {
  for (std::uint32_t alignment : {32u, 64u}) {
    gguf_writer w(alignment);
    w.set("general.architecture", gguf_value::of("llama"));
    w.set("u8", gguf_value::of(std::uint8_t{200}));
    w.set("i8", gguf_value::of(std::int8_t{-100}));
    w.set("u16", gguf_value::of(std::uint16_t{60000}));
    w.set("i16", gguf_value::of(std::int16_t{-30000}));
    w.set("u32", gguf_value::of(std::uint32_t{4000000000u}));
    w.set("i32", gguf_value::of(std::int32_t{-2000000000}));
    w.set("u64", gguf_value::of(std::uint64_t{1} << 63));
    w.set("i64", gguf_value::of(std::int64_t{-5}));
    w.set("f32", gguf_value::of(0.1f));
    w.set("f64", gguf_value::of(0.1));
    w.set("bool", gguf_value::of(true));
    const std::vector<std::int32_t> ids{3, -1, 7};
    w.set("ids", gguf_value::array(std::span<const std::int32_t>(ids)));
    w.set("words", gguf_value::array(std::vector<std::string>{"a", "", "three"}));
    w.set("empty", gguf_value::array(std::vector<std::string>{}));
    int produced = 0;
    w.add_tensor("token_embd.weight", dtype::f32, {3, 2}, std::vector<float>{1, 2, 3, 4, 5, 6});
    w.add_tensor("output_norm.weight", dtype::bf16, {3}, [&] {
      ++produced;
      return std::vector<float>{1.5f, -0.25f, 3.0f};
    });
    w.add_tensor("blk.0.attn_q.weight", dtype::f16, {2, 2}, std::vector<float>{0.5f, 1.0f, -2.0f, 65504.0f});
    const auto p = scratch("ok" + std::to_string(alignment) + ".gguf");
    w.write(p);
    CHECK(produced == 1);
    CHECK_FALSE(fs::exists(p.string() + ".partial"));

    const auto f = gguf_file::open(p);
    CHECK(f.version() == 3);
    CHECK(f.alignment() == alignment);
    CHECK(f.data_offset() % alignment == 0);
    CHECK(f.metadata().size() == (alignment == 32 ? 15u : 16u));
    CHECK(f.get_string("general.architecture") == "llama");
    CHECK(f.get_uint("u8") == 200);
    CHECK(f.find("i8")->as_int() == -100);
    CHECK(f.get_uint("u16") == 60000);
    CHECK(f.find("i16")->as_int() == -30000);
    CHECK(f.get_uint("u32") == 4000000000u);
    CHECK(f.find("i32")->as_int() == -2000000000);
    CHECK(f.get_uint("u64") == (std::uint64_t{1} << 63));
    CHECK(f.find("i64")->as_int() == -5);
    CHECK(f.get_float("f32") == static_cast<double>(0.1f));
    CHECK(f.get_float("f64") == 0.1);
    CHECK(f.find("bool")->as_bool());
    const gguf_value* a = f.find("ids");
    REQUIRE(a != nullptr);
    CHECK(a->is_array());
    CHECK(a->type() == gguf_value_type::i32);
    CHECK(a->size() == 3);
    CHECK(a->as_int(1) == -1);
    CHECK(*a == gguf_value::array(std::span<const std::int32_t>(ids)));
    CHECK(f.find("words")->strings() == std::vector<std::string>{"a", "", "three"});
    CHECK(f.find("empty")->size() == 0);
    // typed access errors
    CHECK_THROWS_AS(f.find("i64")->as_uint(), invalid_argument);
    CHECK_THROWS_AS(f.find("u64")->as_int(), invalid_argument);
    CHECK_THROWS_AS(f.find("ids")->as_int(3), invalid_argument);
    CHECK_THROWS_AS(f.find("f32")->as_string(), invalid_argument);
    CHECK_THROWS_WITH(f.get_string("u32"), Contains("key 'u32' has type u32, expected string"));
    CHECK_THROWS_WITH(f.get_uint("nope"), Contains("missing key 'nope'"));
    CHECK_THROWS_WITH(f.get_uint("ids"), Contains("is an array"));

    REQUIRE(f.tensors().size() == 3);
    const auto* emb = f.find_tensor("token_embd.weight");
    REQUIRE(emb != nullptr);
    CHECK(emb->ne == std::vector<std::int64_t>{2, 3});
    CHECK(emb->shape() == std::vector<std::int64_t>{3, 2});
    CHECK(emb->ggml_type == ggml_type_f32);
    for (const auto& t : f.tensors()) CHECK(t.offset % alignment == 0);
    CHECK(f.find_tensor("output_norm.weight")->ggml_type == ggml_type_bf16);
    CHECK(f.find_tensor("blk.0.attn_q.weight")->ggml_type == ggml_type_f16);
    CHECK(f.read_f32("token_embd.weight") == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(f.read_f32("output_norm.weight") == std::vector<float>{1.5f, -0.25f, 3.0f});
    CHECK(f.read_f32("blk.0.attn_q.weight") == std::vector<float>{0.5f, 1.0f, -2.0f, 65504.0f});
    CHECK_THROWS_WITH(f.read_f32("nope"), Contains("missing tensor 'nope'"));

    // the same bytes parse from memory
    const auto bytes = slurp(p);
    const auto m = gguf_file::parse(bytes);
    CHECK(m.metadata() == f.metadata());
    CHECK(m.read_f32("output_norm.weight") == std::vector<float>{1.5f, -0.25f, 3.0f});
  }
}

TEST_CASE("every truncation of a GGUF file is refused with corrupt_data", "[engine][gguf]") {
  gguf_writer w;
  w.set("general.architecture", gguf_value::of("llama"));
  w.set("words", gguf_value::array(std::vector<std::string>{"x", "yz"}));
  const std::vector<float> v{1, 2};
  w.set("floats", gguf_value::array(std::span<const float>(v)));
  w.add_tensor("a", dtype::f32, {2, 3}, std::vector<float>(6, 1.0f));
  w.add_tensor("b", dtype::f16, {5}, std::vector<float>(5, 2.0f));
  const auto p = scratch("trunc.gguf");
  w.write(p);
  const auto bytes = slurp(p);
  REQUIRE(parse_error(bytes) == "accepted");
  // the padding after the last tensor is not required (llama.cpp's loader does not read it)
  const auto f = gguf_file::parse(bytes);
  const auto end = f.data_offset() + f.tensors().back().offset + f.tensors().back().bytes;
  REQUIRE(end < bytes.size());
  CHECK(parse_error({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(end)}) == "accepted");
  for (std::size_t n = 0; n < end; ++n) {
    const std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    INFO("truncated to " << n << " of " << bytes.size() << " bytes");
    CHECK_THAT(parse_error(cut), Contains("gguf: 'case': "));
  }
}

TEST_CASE("malformed GGUF headers are refused before allocation", "[engine][gguf]") {
  CHECK_THAT(parse_error(builder{}.header(0, 0).b), Contains("accepted"));
  auto bad_magic = builder{}.header(0, 0).b;
  bad_magic[0] = std::byte{'X'};
  CHECK_THAT(parse_error(bad_magic), Contains("no 'GGUF' magic"));
  CHECK_THAT(parse_error(builder{}.header(0, 0, 1).b), Contains("version 1 is not supported"));
  CHECK_THAT(parse_error(builder{}.header(0, 0, 2).b), Contains("accepted"));
  // counts claiming more than the limits or the file
  CHECK_THAT(parse_error(builder{}.header(-1, 0).b), Contains("tensor count -1"));
  CHECK_THAT(parse_error(builder{}.header(std::int64_t{1} << 40, 0).b), Contains("tensor count"));
  CHECK_THAT(parse_error(builder{}.header(0, std::int64_t{1} << 62).b), Contains("metadata count"));
  CHECK_THAT(parse_error(builder{}.header(100, 100).b), Contains("cannot fit in the file"));
  // string lengths and array counts
  CHECK_THAT(parse_error(builder{}.header(0, 1).put(std::uint64_t{1} << 60).zeros(16).b),
             Contains("exceeds the limit"));
  CHECK_THAT(parse_error(builder{}.header(0, 1).put(std::uint64_t{1000}).zeros(20).b),
             Contains("exceeds the file"));
  CHECK_THAT(parse_error(builder{}.header(0, 1).str("").put(std::uint32_t{4}).put(std::uint32_t{0}).b),
             Contains("empty key"));
  CHECK_THAT(parse_error(builder{}
                             .header(0, 1)
                             .str("k")
                             .put(std::uint32_t{9})
                             .put(std::uint32_t{4})
                             .put(std::uint64_t{1} << 40)
                             .b),
             Contains("above the limit"));
  CHECK_THAT(parse_error(builder{}
                             .header(0, 1)
                             .str("k")
                             .put(std::uint32_t{9})
                             .put(std::uint32_t{10})
                             .put(std::uint64_t{1000000})
                             .zeros(16)
                             .b),
             Contains("exceed the file"));
  CHECK_THAT(parse_error(builder{}
                             .header(0, 1)
                             .str("k")
                             .put(std::uint32_t{9})
                             .put(std::uint32_t{8})
                             .put(std::uint64_t{1000000})
                             .zeros(16)
                             .b),
             Contains("strings cannot fit"));
  CHECK_THAT(parse_error(builder{}
                             .header(0, 1)
                             .str("k")
                             .put(std::uint32_t{9})
                             .put(std::uint32_t{9})
                             .put(std::uint64_t{1})
                             .zeros(16)
                             .b),
             Contains("nested array"));
  CHECK_THAT(parse_error(builder{}.header(0, 1).str("k").put(std::uint32_t{13}).zeros(16).b),
             Contains("invalid value type 13"));
  CHECK_THAT(parse_error(builder{}.header(0, 2).kv_u32("k", 1).kv_u32("k", 2).b),
             Contains("duplicate metadata key 'k'"));
  // alignment
  CHECK_THAT(parse_error(builder{}.header(0, 1).kv_u32("general.alignment", 24).b),
             Contains("not a power of two"));
  CHECK_THAT(parse_error(builder{}.header(0, 1).kv_u32("general.alignment", 0).b),
             Contains("not a power of two"));
  CHECK_THAT(
      parse_error(
          builder{}.header(0, 1).str("general.alignment").put(std::uint32_t{10}).put(std::uint64_t{32}).b),
      Contains("general.alignment is not a u32"));
  // tensor infos
  auto one = [](std::string_view name, std::vector<std::int64_t> ne, std::uint32_t type, std::uint64_t offset,
                std::size_t data) {
    return builder{}.header(1, 0).tensor(name, std::move(ne), type, offset).pad().zeros(data).b;
  };
  CHECK_THAT(parse_error(one("t", {4}, 0, 0, 16)), Contains("accepted"));
  CHECK_THAT(parse_error(one("t", {4}, 0, 0, 15)), Contains("lies outside the data section"));
  CHECK_THAT(parse_error(one("t", {4}, 0, 32, 40)), Contains("lies outside the data section"));
  CHECK_THAT(parse_error(one("t", {4}, 0, 8, 64)), Contains("not a multiple of the alignment"));
  CHECK_THAT(parse_error(one("", {4}, 0, 0, 16)), Contains("name of 0 bytes"));
  CHECK_THAT(parse_error(one(std::string(64, 'n'), {4}, 0, 0, 16)), Contains("name of 64 bytes"));
  CHECK_THAT(parse_error(one("t", {}, 0, 0, 16)), Contains("0 dimensions"));
  CHECK_THAT(parse_error(one("t", {1, 1, 1, 1, 1}, 0, 0, 16)), Contains("5 dimensions"));
  CHECK_THAT(parse_error(one("t", {-4}, 0, 0, 16)), Contains("negative dimension"));
  CHECK_THAT(parse_error(one("t", {std::int64_t{1} << 40, std::int64_t{1} << 40}, 0, 0, 16)),
             Contains("more elements than int64"));
  CHECK_THAT(parse_error(one("t", {std::int64_t{1} << 62}, 0, 0, 16)), Contains("byte size above 2^64"));
  CHECK_THAT(parse_error(one("t", {std::int64_t{1} << 61}, 0, 0, 16)), Contains("lies outside"));
  CHECK_THAT(parse_error(one("t", {4}, 4, 0, 16)), Contains("unknown ggml type 4"));
  CHECK_THAT(parse_error(one("t", {4}, 99, 0, 16)), Contains("unknown ggml type 99"));
  CHECK_THAT(parse_error(one("t", {16}, 2, 0, 32)), Contains("not a multiple of the q4_0 block size 32"));
  CHECK_THAT(parse_error(one("t", {32, 2}, 2, 0, 36)), Contains("accepted"));  // 2 blocks of 18 bytes
  CHECK_THAT(
      parse_error(builder{}.header(2, 0).tensor("t", {4}, 0, 0).tensor("t", {4}, 0, 32).pad().zeros(64).b),
      Contains("duplicate tensor name 't'"));
  CHECK_THAT(
      parse_error(builder{}.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad().zeros(64).b),
      Contains("tensor 'b' overlaps tensor 'a'"));
  CHECK_THAT(
      parse_error(builder{}.header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {4}, 0, 32).pad().zeros(48).b),
      Contains("accepted"));
  // the data section must start inside the file
  CHECK_THAT(parse_error(builder{}.header(1, 0).tensor("t", {0}, 0, 0).b),
             Contains("past the end of the file"));
  // a read_f32 of a quantized tensor names its type
  const auto q = one("t", {32}, 8, 0, 34);
  CHECK_THROWS_WITH(gguf_file::parse(q).read_f32("t"), Contains("ggml type q8_0, expected f32, f16 or bf16"));
  // limits are the caller's to tighten
  CHECK_THROWS_WITH(gguf_file::parse(builder{}.header(0, 2).kv_u32("a", 1).kv_u32("b", 2).b, {.max_kv = 1}),
                    Contains("metadata count 2 is not in [0, 1]"));
  CHECK_THROWS_AS(gguf_file::open(scratch("does-not-exist.gguf")), invalid_argument);
}

TEST_CASE("the GGUF writer refuses bad arguments and leaves no partial file", "[engine][gguf]") {
  CHECK_THROWS_AS(gguf_writer(24), invalid_argument);
  gguf_writer w;
  w.set("k", gguf_value::of(std::uint32_t{1}));
  CHECK_THROWS_AS(w.set("k", gguf_value::of(std::uint32_t{2})), invalid_argument);
  CHECK_THROWS_AS(w.set("", gguf_value::of(std::uint32_t{2})), invalid_argument);
  CHECK_THROWS_AS(w.add_tensor(std::string(64, 'x'), dtype::f32, {1}, std::vector<float>{1}),
                  invalid_argument);
  CHECK_THROWS_AS(w.add_tensor("t", dtype::i8, {1}, std::vector<float>{1}), invalid_argument);
  CHECK_THROWS_AS(w.add_tensor("t", dtype::f32, {1, 1, 1, 1, 1}, std::vector<float>{1}), invalid_argument);
  CHECK_THROWS_AS(w.add_tensor("t", dtype::f32, {0}, std::vector<float>{}), invalid_argument);
  CHECK_THROWS_AS(w.add_tensor("t", dtype::f32, {2}, std::vector<float>{1}), shape_mismatch);
  w.add_tensor("t", dtype::f32, {2}, std::vector<float>{1, 2});
  CHECK_THROWS_AS(w.add_tensor("t", dtype::f32, {2}, std::vector<float>{1, 2}), invalid_argument);
  w.add_tensor("bad", dtype::f32, {3}, [] { return std::vector<float>{1}; });
  const auto p = scratch("bad.gguf");
  CHECK_THROWS_AS(w.write(p), shape_mismatch);
  CHECK_FALSE(fs::exists(p));
  CHECK_FALSE(fs::exists(p.string() + ".partial"));
  gguf_writer u;
  CHECK_THROWS_AS(u.write(scratch("no-such-dir") / "x.gguf"), invalid_argument);
}
