// SPDX-License-Identifier: MIT
// The driver's side of the engine contract: the default design runs with one engine; the
// engine's capabilities decide which arms run (refused up front, or dropped by
// restrict_to_engine with the reason) and which metrics are recorded (absent with the reason);
// H2O, SnapKV and PyramidKV selections get their scores from the sender's attention capture;
// sequences are released when the engine or the wire throws; outputs of the wrong shape give
// engine_error, never an out-of-bounds read.
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "support/common.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;

// The reference engine behind the capabilities of an engine like llama.cpp: no attention
// capture (no prefill_capture), no hidden state, whole-layer imports only, no position gaps.
// Faults can be injected to test the driver's handling of a misbehaving engine.
class limited_engine {
 public:
  explicit limited_engine(reference_cpu_engine& inner) : inner_(inner), info_(inner.info()) {
    info_.name = "limited";
    info_.caps = {.kv_dtypes = {dtype::f32}};
  }
  const engine_info& info() const { return info_; }
  seq_id open_seq() {
    ++open;
    return inner_.open_seq();
  }
  void close_seq(seq_id s) {
    --open;
    inner_.close_seq(s);
  }
  forward_output prefill(seq_id s, std::span<const token_id> t, position_t p, const forward_options& o) {
    if (throw_on_prefill && --throw_on_prefill == 0) throw engine_error("limited: injected prefill failure");
    auto out = inner_.prefill(s, t, p, forward_options{.all_logits = o.all_logits});
    if (short_logits) out.logits.resize(out.logits.size() / 2);
    return out;
  }
  forward_output decode(seq_id s, token_id t, position_t p, const forward_options& o) {
    const token_id one[1] = {t};
    return prefill(s, one, p, o);
  }
  kv_block export_kv(seq_id s, index_range tokens, index_range layers) {
    if (short_export) tokens.last = std::max(tokens.first, tokens.last - 1);
    return inner_.export_kv(s, tokens, layers);
  }
  void import_kv(seq_id s, const kv_block& b, const import_options& o) {
    if (throw_on_import) throw corrupt_data("limited: injected import failure");
    if (b.type() != dtype::f32) throw invalid_argument("limited: f32 blocks only");
    inner_.import_kv(s, b, o);
  }
  void shift(seq_id s, position_t p0, position_t p1, position_t d) { inner_.shift(s, p0, p1, d); }
  void erase(seq_id s, position_t p0, position_t p1) { inner_.erase(s, p0, p1); }
  std::int64_t n_tokens(seq_id s) const { return inner_.n_tokens(s); }
  position_t next_position(seq_id s) const { return inner_.next_position(s); }

  int open = 0;
  int throw_on_prefill = 0;  // throw at the n-th prefill (0: never)
  bool throw_on_import = false, short_logits = false, short_export = false;

 private:
  reference_cpu_engine& inner_;
  engine_info info_;
};
static_assert(inference_engine<limited_engine>);
static_assert(!attention_capturing_engine<limited_engine>);

struct contract_fixture {
  reference_cpu_engine ref = reference_cpu_engine::load(models + "organism-a");
  organism_format fmt = organism_format::load(models + "organism-a");
  template <class E>
  std::vector<trial_record> run(E& e, const trial_design& d) {
    trial_driver<E> drv(e);
    std::vector<trial_record> out;
    drv.run(
        d, [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, {.seed = d.seed}, i, s); },
        [&](const trial_record& r) { out.push_back(r); });
    return out;
  }
};

std::string contract_timeless(trial_record r) {
  r.latency = {};
  return record_to_line(r);
}

}  // namespace

TEST_CASE("engine contract: the default design runs with one engine, cross_model only with a partner") {
  contract_fixture f;
  const trial_design d{.seed = 4, .items = 3, .seeds = 1};
  for (const auto& a : d.arms) CHECK(a.kind != arm_kind::cross_model);
  CHECK(default_arms(true).back().kind == arm_kind::cross_model);
  CHECK(default_arms(true).size() == default_arms().size() + 1);
  const auto recs = f.run(f.ref, d);
  CHECK(recs.size() == d.trials());
  for (const auto& r : recs) CHECK(r.unavailable.empty());  // the reference engine produces every metric
}

TEST_CASE("engine contract: unsupported arms are refused up front, or dropped with the reason") {
  contract_fixture f;
  limited_engine lim(f.ref);
  trial_design d{.seed = 4, .items = 4, .seeds = 1};
  CHECK_THROWS_WITH(f.run(lim, d), Catch::Contains("trial_driver::run") && Catch::Contains("kv_layers_0") &&
                                       Catch::Contains("partial_layer_import"));
  CHECK(lim.open == 0);
  const auto cut = restrict_to_engine(d, lim);
  std::map<std::string, std::string> skipped;
  for (const auto& s : cut.skipped) skipped[s.arm] = s.reason;
  CHECK(skipped.size() == 3);
  CHECK_THAT(skipped.at("kv_layers_0"), Catch::Contains("partial_layer_import"));
  CHECK_THAT(skipped.at("kv_layers_1"), Catch::Contains("partial_layer_import"));
  CHECK_THAT(skipped.at("kv_first_half"), Catch::Contains("position_gaps"));
  CHECK(cut.design.arms.size() == d.arms.size() - 3);
  // @rebase removes the gap, so the first half runs renumbered
  CHECK_FALSE(arm_unsupported_reason(parse_arm("kv_first_half@rebase"), capabilities_of(lim), 2, false));
  // what runs gives the reference engine's outcomes; the metrics it cannot produce are absent, with the
  // reason
  const auto limited = f.run(lim, cut.design);
  const auto full = f.run(f.ref, cut.design);
  REQUIRE(limited.size() == full.size());
  CHECK(lim.open == 0);
  std::map<trial_key, const trial_record*> by_key;
  for (const auto& r : full) by_key[{r.item, r.seed, r.arm}] = &r;
  for (const auto& r : limited) {
    const trial_record& x = *by_key.at({r.item, r.seed, r.arm});
    CHECK(r.correct == x.correct);
    REQUIRE(r.answer_logprob.has_value());
    REQUIRE(x.answer_logprob.has_value());
    CHECK(*r.answer_logprob == Approx(*x.answer_logprob).margin(1e-9));
    CHECK(r.bytes == x.bytes);
    CHECK_FALSE(r.attention_mass);
    CHECK_FALSE(r.hidden_cosine);
    CHECK(r.next_token_kl);  // computed from the logits on every engine
    std::set<std::string> missing;
    for (const auto& u : r.unavailable) missing.insert(u.metric);
    CHECK(missing.count("hidden_cosine") == 1);
    CHECK(missing.count("attention_mass") == (r.relay_tokens > 0 ? 1u : 0u));
    // the reasons travel in the record's JSON and back
    const auto line = record_to_line(r);
    CHECK_THAT(line, Catch::Contains("\"unavailable\":{"));
    const auto back = record_from_json(parse_json(line));
    REQUIRE(back.unavailable.size() == r.unavailable.size());
    CHECK(back.unavailable.front().reason == r.unavailable.front().reason);
  }
}

TEST_CASE(
    "engine contract: H2O, SnapKV and PyramidKV take their scores from the sender's attention capture") {
  contract_fixture f;
  trial_design d{.seed = 6, .items = 6, .seeds = 1};
  d.arms = {parse_arm("kv_full"),
            kv_policy_arm(kv_policy{.label = "kv_h2o", .tokens = heavy_hitter_spec{.heavy = 6, .recent = 4}}),
            kv_policy_arm(kv_policy{.label = "kv_snapkv",
                                    .tokens = snapkv_spec{.window = 4, .budget = 6, .kernel = 3}}),
            kv_policy_arm(kv_policy{.label = "kv_pyramid",
                                    .tokens = pyramid_spec{.average = 8, .beta = 2, .window = 2}})};
  const auto recs = f.run(f.ref, d);
  REQUIRE(recs.size() == d.trials());
  std::map<std::string, int> trimmed;
  for (const auto& r : recs) {
    if (r.arm == "kv_full") continue;
    INFO(r.arm);
    CHECK(r.policy.find("tokens_kept")->as_number() <= r.policy.find("tokens_in")->as_number());
    trimmed[r.arm] += r.policy.find("tokens_kept")->as_number() < r.policy.find("tokens_in")->as_number();
    CHECK(r.attention_mass);
  }
  CHECK(trimmed.size() == 3);
  for (const auto& [arm, n] : trimmed) CHECK(n > 0);
  // the same scores by hand: H2O keeps the recent window and the heaviest older tokens
  const auto task = make_organism_task(f.fmt, {.seed = 6}, 0, 0);
  const auto s = f.ref.open_seq();
  std::vector<layer_index> layers{0};
  for (layer_index l = 1; l < f.ref.info().fingerprint.n_layers; ++l) layers.push_back(l);
  const auto cap = f.ref.prefill_capture(s, task.document, 0, layers, {});
  f.ref.close_seq(s);
  const auto scores = reduce_attention(cap.weights, cap.layers.size(), cap.heads, cap.queries, cap.keys, 4);
  const auto want = tokens_heavy_hitters(scores.token, 6, 4);
  for (const auto& r : recs)
    if (r.arm == "kv_h2o" && r.item == 0) CHECK(r.relay_tokens == static_cast<std::int64_t>(want.size()));
  // an engine without attention capture refuses them up front
  limited_engine lim(f.ref);
  d.arms.erase(d.arms.begin());
  for (const auto& a : d.arms) {
    trial_design one = d;
    one.arms = {a};
    CHECK_THROWS_WITH(f.run(lim, one), Catch::Contains(a.label) && Catch::Contains("cannot run"));
  }
  CHECK(lim.open == 0);
}

TEST_CASE("engine contract: a throw in the engine or the wire leaks no sequence") {
  contract_fixture f;
  limited_engine lim(f.ref);
  trial_design d{.seed = 4, .items = 3, .seeds = 1};
  d.arms = {parse_arm("no_comm"), parse_arm("text_full"), parse_arm("kv_full"), parse_arm("deranged")};
  lim.throw_on_import = true;
  CHECK_THROWS_WITH(f.run(lim, d), Catch::Contains("injected import failure"));
  CHECK(lim.open == 0);
  lim.throw_on_import = false;
  for (int k : {1, 2, 3, 5}) {
    lim.throw_on_prefill = k;
    CHECK_THROWS_WITH(f.run(lim, d), Catch::Contains("injected prefill failure"));
    CHECK(lim.open == 0);
  }
  lim.throw_on_prefill = 0;
  // a sink that throws mid-unit: the sender's sequence is released as well
  trial_driver<limited_engine> drv(lim);
  int n = 0;
  CHECK_THROWS_WITH(
      drv.run(
          d, [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(f.fmt, {.seed = 4}, i, s); },
          [&](const trial_record&) {
            if (++n == 2) throw std::runtime_error("sink full");
          }),
      Catch::Contains("sink full"));
  CHECK(lim.open == 0);
}

TEST_CASE("engine contract: outputs of the wrong shape give engine_error, not out-of-bounds reads") {
  contract_fixture f;
  limited_engine lim(f.ref);
  trial_design d{.seed = 4, .items = 2, .seeds = 1};
  d.arms = {parse_arm("no_comm"), parse_arm("kv_full")};
  lim.short_logits = true;
  CHECK_THROWS_AS(f.run(lim, d), engine_error);
  CHECK_THROWS_WITH(f.run(lim, d), Catch::Contains("limited") && Catch::Contains("logits"));
  CHECK(lim.open == 0);
  lim.short_logits = false;
  lim.short_export = true;
  CHECK_THROWS_WITH(f.run(lim, d), Catch::Contains("exported") && Catch::Contains("expected"));
  CHECK(lim.open == 0);
  lim.short_export = false;
  // task tokens outside the vocabulary are refused before any engine call reads them
  trial_driver<limited_engine> drv(lim);
  CHECK_THROWS_WITH(drv.run(
                        d,
                        [&](std::uint64_t i, std::uint64_t s) {
                          auto t = make_organism_task(f.fmt, {.seed = 4}, i, s);
                          t.answer[0] = 1000;
                          return t;
                        },
                        [](const trial_record&) {}),
                    Catch::Contains("answer") && Catch::Contains("vocabulary"));
  CHECK(lim.open == 0);
  CHECK(contract_timeless(f.run(lim, d).front()).size() > 0);
}
