// SPDX-License-Identifier: MIT
// Tests for engine/safetensors.hpp: write/read round trips in every float dtype; malformed files
// (bad header length, JSON, dtype, shape, offsets out of range, overlaps, holes, trailing bytes,
// duplicate names, huge claims) are refused with corrupt_data naming the problem.
#include <latentaudit/engine/safetensors.hpp>

#include <fstream>

#include "support/catch.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
fs::path st_scratch(const std::string& name) {
  static const fs::path dir = [] {
    auto d = fs::temp_directory_path() / ("latentaudit_st_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir / name;
}
// A raw file with the given header text and data bytes.
fs::path raw_file(const std::string& name, const std::string& header, std::size_t data_bytes,
                  std::int64_t claimed = -1) {
  const auto p = st_scratch(name);
  std::ofstream out(p, std::ios::binary);
  const std::uint64_t n = claimed >= 0 ? static_cast<std::uint64_t>(claimed) : header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << std::string(data_bytes, '\0');
  return p;
}
}  // namespace

TEST_CASE("safetensors files round-trip in f32, f16 and bf16", "[engine][safetensors]") {
  const std::vector<tensor_to_write> ts{{"model.embed_tokens.weight", dtype::f32, {3, 2}, {1, 2, 3, 4, 5, 6}},
                                        {"model.norm.weight", dtype::bf16, {2}, {1.5f, -0.25f}},
                                        {"lm_head.weight", dtype::f16, {2, 2}, {0.5f, 1.0f, -2.0f, 65504.0f}},
                                        {"empty", dtype::f32, {0, 4}, {}}};
  const auto p = st_scratch("ok.safetensors");
  write_safetensors(p, ts, {{"format", "pt"}});
  const auto f = safetensors_file::open(p);
  CHECK(f.tensors().size() == 4);
  CHECK(f.metadata().at("format") == "pt");
  const std::int64_t shape[] = {3, 2};
  CHECK(f.read_f32("model.embed_tokens.weight", shape) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(f.read_f32("model.norm.weight") == std::vector<float>{1.5f, -0.25f});
  CHECK(f.read_f32("lm_head.weight") == std::vector<float>{0.5f, 1.0f, -2.0f, 65504.0f});
  CHECK(f.read_f32("empty").empty());
  const std::int64_t wrong[] = {2, 3};
  CHECK_THROWS_AS(f.read_f32("model.embed_tokens.weight", wrong), shape_mismatch);
  CHECK_THROWS_WITH(f.read_f32("nope"), Contains("missing tensor 'nope'"));
  CHECK(f.find("lm_head.weight")->type == dtype::f16);
  // in place: the same values in the caller's storage, checked before it is touched
  for (const auto& t : ts) {
    INFO(t.name);
    CHECK(&f.tensor_f32(t.name, t.shape) == f.find(t.name));
    std::vector<float> into(t.values.size(), -7.0f);
    f.read_f32_into(t.name, t.shape, into);
    CHECK(into == f.read_f32(t.name));
  }
  std::vector<float> untouched(6, -7.0f);
  CHECK_THROWS_AS(f.read_f32_into("model.embed_tokens.weight", wrong, untouched), shape_mismatch);
  CHECK_THROWS_AS(f.tensor_f32("model.embed_tokens.weight", wrong), shape_mismatch);
  CHECK_THROWS_WITH(f.tensor_f32("nope"), Contains("missing tensor 'nope'"));
  std::vector<float> short_out(5, -7.0f);
  CHECK_THROWS_AS(f.read_f32_into("model.embed_tokens.weight", shape, short_out), invalid_argument);
  CHECK(untouched == std::vector<float>(6, -7.0f));
  CHECK(short_out == std::vector<float>(5, -7.0f));
}

TEST_CASE("malformed safetensors files are refused with a clear error", "[engine][safetensors]") {
  const std::string t = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  CHECK_NOTHROW(safetensors_file::open(raw_file("good", "{" + t + "}", 8)));
  CHECK_THROWS_WITH(safetensors_file::open(raw_file("short", "", 0, -1).string() + "x"),
                    Contains("cannot be opened"));
  {
    const auto p = st_scratch("tiny");
    std::ofstream(p, std::ios::binary) << "abc";
    CHECK_THROWS_WITH(safetensors_file::open(p), Contains("shorter than"));
  }
  CHECK_THROWS_WITH(safetensors_file::open(raw_file("hugelen", "{}", 0, 1ll << 40)),
                    Contains("exceeds the limit"));
  CHECK_THROWS_WITH(safetensors_file::open(raw_file("pastend", "{}", 0, 1000)),
                    Contains("exceeds the file size"));
  CHECK_THROWS_WITH(safetensors_file::open(raw_file("badjson", "{\"a\":", 0)),
                    Contains("malformed header JSON"));
  CHECK_THROWS_WITH(safetensors_file::open(raw_file("notobj", "[1]", 0)), Contains("not a JSON object"));
  CHECK_THROWS_WITH(safetensors_file::open(
                        raw_file("dtype", R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8)),
                    Contains("unsupported dtype 'F64'"));
  CHECK_THROWS_WITH(safetensors_file::open(
                        raw_file("shape", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)),
                    Contains("non-negative integer"));
  CHECK_THROWS_WITH(safetensors_file::open(
                        raw_file("mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
                    Contains("occupies 8 bytes"));
  CHECK_THROWS_WITH(safetensors_file::open(
                        raw_file("range", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)),
                    Contains("outside the data buffer"));
  CHECK_THROWS_WITH(safetensors_file::open(raw_file(
                        "overlap", "{" + t + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)),
                    Contains("overlaps"));
  CHECK_THROWS_WITH(safetensors_file::open(
                        raw_file("hole", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)),
                    Contains("hole"));
  CHECK_THROWS_WITH(safetensors_file::open(raw_file("trailing", "{" + t + "}", 12)),
                    Contains("no tensor uses"));
  CHECK_THROWS_WITH(safetensors_file::open(raw_file("dup", "{" + t + "," + t + "}", 8)),
                    Contains("malformed header JSON"));
  CHECK_THROWS_WITH(safetensors_file::open(raw_file(
                        "extra", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8)),
                    Contains("exactly dtype"));
  CHECK_THROWS_WITH(
      safetensors_file::open(raw_file(
          "overflow", R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8)),
      Contains("occupies"));
  CHECK_THROWS_WITH(safetensors_file::open(raw_file("meta", R"({"__metadata__":{"k":1}})", 0)),
                    Contains("not a string"));
  CHECK_THROWS_AS(
      safetensors_file::open(raw_file("int", R"({"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", 4))
          .read_f32("a"),
      corrupt_data);
  CHECK_THROWS_AS(write_safetensors(st_scratch("bad.safetensors"), {{"x", dtype::f32, {2}, {1.0f}}}),
                  shape_mismatch);
}
