// SPDX-License-Identifier: MIT
// Relay semantics on the trained model organisms (models/organism-a, models/organism-b; tasks
// from make_organism_task, need regime): (a) B given A's exported cache answers exactly as B
// reading the document itself (same argmax on every item, logits within 1e-4); (b) B without
// communication is at chance (1/32); (c) organism-a's cache is refused by organism-b's
// fingerprint check unless forced, and forced it leaves B near chance; (d) B reading the
// document itself is >= 0.97 accurate at N = 16 on held-out items.
//
// Chance bands: under Bin(n, 1/32) the accuracy lies in [q(1e-6), q(1 - 1e-6)] / n, computed
// below with Boost.Math and printed (n = 200: [0, 21] correct, i.e. accuracy in [0, 0.105]);
// items: design seed 20261129, items 0..199 (a-c) and design seed 77, items 0..299 (d).
// Measured when written: read = relayed = 200/200 on both organisms (max |logit difference|
// 3.8e-6), no communication 4/200 (a) and 8/200 (b), forced a -> b 9/200, N = 16: 300/300.
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial/task.hpp>

#include <boost/math/distributions/binomial.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "support/catch.hpp"

using namespace latentaudit;

namespace {

/// models/<name> in the source tree (appended: GCC 12's false -Warray-bounds on operator+).
std::string model_dir(const char* name) {
  std::string p(LATENTAUDIT_SOURCE_DIR);
  p.append("/models/").append(name);
  return p;
}

/// Argmax over the whole vocabulary of the last row of a forward output (lowest id on ties).
token_id argmax_last(const forward_output& o, std::int32_t vocab) {
  const float* l = o.logits.data() + static_cast<std::size_t>(o.rows - 1) * static_cast<std::size_t>(vocab);
  return static_cast<token_id>(std::max_element(l, l + vocab) - l);
}

/// Concatenation of token lists.
std::vector<token_id> concat(std::vector<token_id> a, const std::vector<token_id>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// B reads `context` itself and answers after its last token.
forward_output read_itself(reference_cpu_engine& b, const std::vector<token_id>& context) {
  const auto s = b.open_seq();
  auto out = b.prefill(s, context, 0);
  b.close_seq(s);
  return out;
}

/// A reads the document; its whole cache goes into a fresh sequence of B (positions preserved);
/// B then reads the query after it.
forward_output relay(reference_cpu_engine& a, reference_cpu_engine& b, const trial_task& t,
                     const import_options& o) {
  const auto sa = a.open_seq();
  (void)a.prefill(sa, t.document, 0);
  const auto block = a.export_kv(sa, {0, a.n_tokens(sa)}, {0, a.config().n_layers});
  a.close_seq(sa);
  const auto sb = b.open_seq();
  b.import_kv(sb, block, o);
  auto out = b.prefill(sb, t.query, b.next_position(sb));
  b.close_seq(sb);
  return out;
}

/// [lo, hi] accuracy band of Bin(n, p) at tail probability 1e-6 on each side.
std::pair<double, double> chance_band(std::size_t n, double p) {
  const boost::math::binomial_distribution<double> d(static_cast<double>(n), p);
  const double lo = std::floor(boost::math::quantile(d, 1e-6)),
               hi = std::ceil(boost::math::quantile(boost::math::complement(d, 1e-6)));
  return {lo / static_cast<double>(n), hi / static_cast<double>(n)};
}

constexpr std::size_t n_items = 200;
constexpr std::uint64_t design_seed = 20261129;

}  // namespace

TEST_CASE("organism: a relayed cache answers exactly as reading the document, no relay is chance",
          "[engine][organism]") {
  for (const char* name : {"organism-a", "organism-b"}) {
    INFO(name << ", design seed " << design_seed << ", items 0.." << n_items - 1 << ", need regime");
    const auto dir = model_dir(name);
    const auto fmt = organism_format::load(dir);
    auto a = reference_cpu_engine::load(dir);
    auto b = reference_cpu_engine::load(dir);
    const auto V = b.config().vocab_size;
    std::size_t same_argmax = 0, correct_read = 0, correct_relay = 0, correct_none = 0;
    float max_diff = 0;
    for (std::size_t i = 0; i < n_items; ++i) {
      const auto t = make_organism_task(fmt, {.seed = design_seed, .no_need_fraction = 0.0}, i, 0);
      REQUIRE(t.regime == task_regime::need);
      const auto own = read_itself(b, concat(t.document, t.query));
      const auto rel = relay(a, b, t, {});
      const auto none = read_itself(b, concat(t.no_relay_prefix, t.query));
      REQUIRE(own.logits.size() == static_cast<std::size_t>(V));
      REQUIRE(rel.logits.size() == own.logits.size());
      for (std::size_t v = 0; v < own.logits.size(); ++v)
        max_diff = std::max(max_diff, std::fabs(own.logits[v] - rel.logits[v]));
      same_argmax += argmax_last(own, V) == argmax_last(rel, V);
      correct_read += argmax_last(own, V) == t.answer[0];
      correct_relay += argmax_last(rel, V) == t.answer[0];
      correct_none += argmax_last(none, V) == t.answer[0];
    }
    const double chance = 1.0 / fmt.value_count;
    const auto [lo, hi] = chance_band(n_items, chance);
    const double acc_none = static_cast<double>(correct_none) / n_items;
    WARN(name << ": max |logit difference| relayed vs read " << max_diff << "; accuracy read " << correct_read
              << "/" << n_items << ", relayed " << correct_relay << "/" << n_items << ", no communication "
              << correct_none << "/" << n_items << " (chance band [" << lo << ", " << hi << "] = Bin("
              << n_items << ", 1/" << fmt.value_count << ") quantiles 1e-6, 1 - 1e-6)");
    // (a) the relay is lossless
    CHECK(same_argmax == n_items);
    CHECK(correct_relay == correct_read);
    CHECK(max_diff <= 1e-4f);
    CHECK(static_cast<double>(correct_read) / n_items >= 0.97);
    // (b) without communication B is at chance
    CHECK(acc_none >= lo);
    CHECK(acc_none <= hi);
  }
}

TEST_CASE("organism: organism-a's cache in organism-b is refused unless forced, and forced it is near chance",
          "[engine][organism]") {
  const auto dir_a = model_dir("organism-a"), dir_b = model_dir("organism-b");
  const auto fmt = organism_format::load(dir_b);
  auto a = reference_cpu_engine::load(dir_a);
  auto b = reference_cpu_engine::load(dir_b);
  REQUIRE(a.info().fingerprint.n_kv_heads ==
          b.info().fingerprint.n_kv_heads);  // same cache shape: only the fingerprint tells them apart
  REQUIRE(a.info().fingerprint.head_dim_k == b.info().fingerprint.head_dim_k);
  const auto V = b.config().vocab_size;
  // (c1) refused by the fingerprint check
  {
    const auto t = make_organism_task(fmt, {.seed = design_seed, .no_need_fraction = 0.0}, 0, 0);
    CHECK_THROWS_AS(relay(a, b, t, {}), incompatible_model);
    const auto sb = b.open_seq();
    const auto sa = a.open_seq();
    (void)a.prefill(sa, t.document, 0);
    const auto block = a.export_kv(sa, {0, a.n_tokens(sa)}, {0, 2});
    CHECK_THROWS_AS(b.import_kv(sb, block), incompatible_model);
    CHECK(b.n_tokens(sb) == 0);  // nothing was appended
    a.close_seq(sa);
    b.close_seq(sb);
  }
  // (c2) forced: B cannot read it
  std::size_t correct = 0;
  for (std::size_t i = 0; i < n_items; ++i) {
    const auto t = make_organism_task(fmt, {.seed = design_seed, .no_need_fraction = 0.0}, i, 0);
    correct += argmax_last(relay(a, b, t, {.force = true}), V) == t.answer[0];
  }
  const auto [lo, hi] = chance_band(n_items, 1.0 / fmt.value_count);
  const double acc = static_cast<double>(correct) / n_items;
  WARN("forced organism-a -> organism-b relay: accuracy " << correct << "/" << n_items << " (design seed "
                                                          << design_seed << "; chance band [" << lo << ", "
                                                          << hi << "])");
  CHECK(acc >= lo);
  CHECK(acc <= hi);
}

TEST_CASE("organism: reading the document itself is >= 0.97 accurate at N = 16 on held-out items",
          "[engine][organism]") {
  constexpr std::size_t n = 300;
  constexpr std::uint64_t seed = 77;
  for (const char* name : {"organism-a", "organism-b"}) {
    const auto dir = model_dir(name);
    const auto fmt = organism_format::load(dir);
    auto b = reference_cpu_engine::load(dir);
    std::size_t correct = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto t = make_organism_task(
          fmt, {.seed = seed, .min_pairs = 16, .max_pairs = 16, .no_need_fraction = 0.0}, i, i % 3);
      REQUIRE(t.pairs == 16);
      correct +=
          argmax_last(read_itself(b, concat(t.document, t.query)), b.config().vocab_size) == t.answer[0];
    }
    WARN(name << ": accuracy at N = 16: " << correct << "/" << n << " (design seed " << seed << ")");
    CHECK(static_cast<double>(correct) / n >= 0.97);
  }
}
