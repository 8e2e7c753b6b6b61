// SPDX-License-Identifier: MIT
// kv/llama_state.hpp against blobs and files llama.cpp v0.5.0 itself wrote, both directions, with
// V transposed (flash attention off, v_trans 1) and token-major (flash attention on, v_trans 0):
//  - a llama_state_seq_get_data blob parses (8-byte header, then the layout of every stream) into
//    the document's rows; written back it is the same bytes; its keys (NORM pairing) and values
//    match the reference engine's cache of the same document (converted to NEOX) within 1e-4
//    (flash attention off; measured 2.4e-6) or 1e-2 (on: layers above the first see f16 attention);
//  - llama_state_seq_set_data accepts what to_llama_seq_state writes, from llama.cpp's own cache
//    (then continuing gives bit-identical logits) and from the reference engine's (logits within
//    2e-4 of the reference's continuation, measured 4.8e-6; 0.1 with flash attention, measured
//    1.6e-3); a blob for another stream count or V layout is refused by llama.cpp;
//  - llama_state_seq_save_file files parse with their tokens, and llama_state_seq_load_file reads
//    what to_llama_seq_state_file writes.
// Built and run only where llama.cpp is.
#include <latentaudit/engine/gguf.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/kv/llama_state.hpp>
#include <latentaudit/kv/rope.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "support/catch.hpp"
#include "support/llama_cpp_engine.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::vector<std::byte> get_state(llama_context* ctx, llama_seq_id seq) {
  std::vector<std::byte> blob(llama_state_seq_get_size(ctx, seq));
  const auto n =
      llama_state_seq_get_data(ctx, reinterpret_cast<std::uint8_t*>(blob.data()), blob.size(), seq);
  REQUIRE(n == blob.size());
  return blob;
}

std::vector<std::byte> slurp_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

double state_max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

struct organism_case {
  reference_cpu_engine ref =
      reference_cpu_engine::load(fs::path(LATENTAUDIT_SOURCE_DIR) / "models/organism-a");
  llama_model_ptr model = test::load_llama_model(test::organism_gguf("organism-a"));
  std::vector<std::int32_t> doc = test::organism_document(7, 10, 0);     // BOS, 10 pairs, SEP
  std::vector<std::int32_t> queries = {doc[3], doc[4], doc[7], doc[8]};  // two keys and their values
  // llama.cpp's keys of the GGUF use the NORM pairing (the export permutes Q/K rows)
  model_fingerprint llama_fingerprint() const {
    auto fp = ref.info().fingerprint;
    fp.rope.pairing = rope_pairing::norm;
    return fp;
  }
};

}  // namespace

TEST_CASE("llama.cpp's sequence-state blobs parse, re-serialise byte for byte and match the reference cache",
          "[engine][llama_cpp][llama_state]") {
  organism_case c;
  const auto T = static_cast<std::int64_t>(c.doc.size());
  const auto s = c.ref.open_seq();
  (void)c.ref.prefill(s, c.doc, 0);
  const auto ref_block = c.ref.export_kv(s, {0, T}, {0, c.ref.info().fingerprint.n_layers});
  for (bool flash : {false, true}) {
    INFO("flash attention " << flash);
    auto ctx = test::make_llama_context(c.model.get(), {.flash_attn = flash, .n_seq = 2});
    (void)test::llama_decode_all(ctx.get(), 1, c.doc, 0);  // seq 1: not the first stream
    const auto blob = get_state(ctx.get(), 1);
    std::uint32_t magic, n_stream, vt_word;
    std::int32_t src_seq;
    std::memcpy(&magic, blob.data(), 4);
    std::memcpy(&src_seq, blob.data() + 4, 4);
    std::memcpy(&n_stream, blob.data() + 8, 4);
    CHECK(magic == llama_seq_state_magic);
    CHECK(src_seq == 1);
    CHECK(n_stream == 2);  // one stream per sequence (kv_unified off)
    auto block = from_llama_seq_state(blob, c.llama_fingerprint());
    REQUIRE(block.n_tokens() == T);
    for (std::int64_t t = 0; t < T; ++t) CHECK(block.positions()[static_cast<std::size_t>(t)] == t);
    CHECK(block.type() == dtype::f32);
    // the V layout follows flash attention: transposed without it
    const std::size_t vt_at = 8 + 4 + 4 /* stream 0: empty */ + 4 + static_cast<std::size_t>(T) * 12;
    std::uint32_t empty0;
    std::memcpy(&empty0, blob.data() + 12, 4);
    std::memcpy(&vt_word, blob.data() + vt_at, 4);
    CHECK(empty0 == 0);
    CHECK(vt_word == (flash ? 0u : 1u));
    // the same bytes back, with the cells written in the stream llama.cpp used
    const auto again = to_llama_seq_state(block, {.seq_id = 1, .v_trans = !flash, .n_stream = 1});
    REQUIRE(again.size() == blob.size() - 4);  // the one-stream framing lacks stream 0's empty count
    CHECK(std::memcmp(again.data() + 12, blob.data() + 16, again.size() - 12) == 0);
    // K (NEOX after conversion) and V equal the reference engine's cache of the same document
    convert_pairing(block, rope_pairing::neox);
    CHECK(block.fingerprint() == ref_block.fingerprint());
    const double d = state_max_diff(block.to_floats(), ref_block.to_floats());
    std::printf(
        "llama.cpp cache vs reference cache (organism-a, %lld tokens, flash attention %s): max |d| %.3g\n",
        static_cast<long long>(T), flash ? "on" : "off", d);
    // with flash attention the first layer's rows are still exact, the next ones carry the f16
    // rounding of the attention below them (measured 1.9e-3)
    CHECK(d < (flash ? 1e-2 : 1e-4));
  }
  c.ref.close_seq(s);
}

TEST_CASE("llama.cpp continues from blobs that to_llama_seq_state wrote",
          "[engine][llama_cpp][llama_state]") {
  organism_case c;
  const auto T = static_cast<std::int64_t>(c.doc.size());
  // the reference engine's continuation after reading the document
  const auto s = c.ref.open_seq();
  (void)c.ref.prefill(s, c.doc, 0);
  const auto ref_block = c.ref.export_kv(s, {0, T}, {0, c.ref.info().fingerprint.n_layers});
  const auto ref_next = c.ref.prefill(s, c.queries, T, {.all_logits = true}).logits;
  c.ref.close_seq(s);
  for (bool flash : {false, true}) {
    INFO("flash attention " << flash);
    const test::llama_context_settings settings{.flash_attn = flash, .n_seq = 2};
    // llama.cpp reading the document itself, then the queries
    auto reader = test::make_llama_context(c.model.get(), settings);
    (void)test::llama_decode_all(reader.get(), 0, c.doc, 0);
    const auto blob = get_state(reader.get(), 0);
    const auto own_next = test::llama_decode_all(reader.get(), 0, c.queries, T);

    // (a) llama.cpp's own cache, parsed and written again: continuing gives the same logits, bit for bit
    const auto parsed = from_llama_seq_state(blob, c.llama_fingerprint());
    const auto rewritten = to_llama_seq_state(parsed, {.v_trans = !flash, .n_stream = 2});
    CHECK(rewritten == blob);
    auto a = test::make_llama_context(c.model.get(), settings);
    REQUIRE(llama_state_seq_set_data(a.get(), reinterpret_cast<const std::uint8_t*>(rewritten.data()),
                                     rewritten.size(), 0) == rewritten.size());
    CHECK(llama_memory_seq_pos_max(llama_get_memory(a.get()), 0) == T - 1);
    CHECK(test::llama_decode_all(a.get(), 0, c.queries, T) == own_next);

    // (b) the reference engine's cache, converted to NORM keys and written for llama.cpp
    auto from_ref = ref_block;
    convert_pairing(from_ref, rope_pairing::norm);
    const auto ref_blob = to_llama_seq_state(from_ref, {.v_trans = !flash, .n_stream = 2});
    auto b = test::make_llama_context(c.model.get(), settings);
    REQUIRE(llama_state_seq_set_data(b.get(), reinterpret_cast<const std::uint8_t*>(ref_blob.data()),
                                     ref_blob.size(), 1) == ref_blob.size());
    const auto cross_next = test::llama_decode_all(b.get(), 1, c.queries, T);
    const double d = state_max_diff(cross_next, ref_next);
    std::printf(
        "llama.cpp continuing from the reference cache vs the reference (flash attention %s): max "
        "|dlogit| %.3g\n",
        flash ? "on" : "off", d);
    CHECK(d < (flash ? 0.1 : 2e-4));

    // llama.cpp refuses a blob framed for another stream count or V layout
    const auto one_stream = to_llama_seq_state(from_ref, {.v_trans = !flash, .n_stream = 1});
    auto r = test::make_llama_context(c.model.get(), settings);
    CHECK(llama_state_seq_set_data(r.get(), reinterpret_cast<const std::uint8_t*>(one_stream.data()),
                                   one_stream.size(), 0) == 0);
    const auto other_v = to_llama_seq_state(from_ref, {.v_trans = flash, .n_stream = 2});
    CHECK(llama_state_seq_set_data(r.get(), reinterpret_cast<const std::uint8_t*>(other_v.data()),
                                   other_v.size(), 0) == 0);
  }
}

TEST_CASE("llama.cpp state files parse with their tokens and load what to_llama_seq_state_file writes",
          "[engine][llama_cpp][llama_state]") {
  organism_case c;
  const auto T = static_cast<std::int64_t>(c.doc.size());
  const auto dir = test::organism_gguf("organism-a").parent_path();
  auto ctx = test::make_llama_context(c.model.get(), {.n_seq = 1});
  (void)test::llama_decode_all(ctx.get(), 0, c.doc, 0);
  const auto file = dir / "seq0.state";
  REQUIRE(llama_state_seq_save_file(ctx.get(), file.c_str(), 0, c.doc.data(), c.doc.size()) > 0);
  const auto bytes = slurp_bytes(file);
  const auto parsed = from_llama_seq_state_file(bytes, c.llama_fingerprint());
  CHECK(parsed.tokens == c.doc);
  CHECK(parsed.block == from_llama_seq_state(get_state(ctx.get(), 0), c.llama_fingerprint()));
  CHECK_THROWS_WITH(from_llama_seq_state(bytes, c.llama_fingerprint()),
                    Contains("llama_state_seq_save_file"));
  // the file written back is llama.cpp's, byte for byte, and loads
  const auto written = to_llama_seq_state_file(parsed.block, parsed.tokens, {.v_trans = true});
  CHECK(written == bytes);
  const auto ours = dir / "seq0.ours.state";
  std::ofstream(ours, std::ios::binary)
      .write(reinterpret_cast<const char*>(written.data()), static_cast<std::streamsize>(written.size()));
  auto fresh = test::make_llama_context(c.model.get(), {.n_seq = 1});
  std::vector<llama_token> tokens(64);
  std::size_t n_tokens = 0;
  REQUIRE(llama_state_seq_load_file(fresh.get(), ours.c_str(), 0, tokens.data(), tokens.size(), &n_tokens) ==
          written.size());
  CHECK(std::vector<std::int32_t>(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n_tokens)) ==
        c.doc);
  CHECK(test::llama_decode_all(fresh.get(), 0, c.queries, T) ==
        test::llama_decode_all(ctx.get(), 0, c.queries, T));
}
