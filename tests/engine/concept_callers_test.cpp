// SPDX-License-Identifier: MIT
// The engine concept checks exactly what its callers call: a minimal adapter whose prefill and
// decode take `const forward_options&` without a default satisfies inference_engine AND compiles
// (and runs) inside the trial driver and the conformance kit; an adapter without the options
// parameter fails the concept. The kit skips, with the reason, checks an engine's capabilities
// do not cover, and scoped_seq closes sequences when a check throws.
#include <latentaudit/engine/conformance.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <span>
#include <vector>

namespace la = latentaudit;

namespace {

// A toy one-layer engine (K = V = the token id): logits put +10 on the token that followed the
// nearest earlier key, so relays carry information. prefill/decode take the options WITHOUT a
// default; import_kv takes its options without a default too.
class strict_engine {
 public:
  strict_engine() {
    info_.name = "strict_engine";
    info_.vocab_size = 68;
    info_.max_context = 1 << 16;
    info_.fingerprint = {.architecture = "ToyStrict",
                         .n_layers = 1,
                         .n_heads = 1,
                         .n_kv_heads = 1,
                         .head_dim_k = 1,
                         .head_dim_v = 1,
                         .rope = {.pairing = la::rope_pairing::none},
                         .weights_hash = 7};
    info_.caps.kv_dtypes = {la::dtype::f32};  // no partial import, no gaps, no capture, no hidden state
  }
  const la::engine_info& info() const { return info_; }
  la::seq_id open_seq() {
    ++open_;
    seqs_.emplace_back();
    return static_cast<la::seq_id>(seqs_.size() - 1);
  }
  void close_seq(la::seq_id s) {
    --open_;
    seqs_.at(static_cast<std::size_t>(s)).clear();
  }
  la::forward_output prefill(la::seq_id s, std::span<const la::token_id> tokens, la::position_t p,
                             const la::forward_options& o) {
    auto& c = seqs_.at(static_cast<std::size_t>(s));
    la::forward_output out;
    for (auto t : tokens) c.push_back({static_cast<float>(t), p++});
    const std::size_t rows = o.all_logits ? tokens.size() : 1;
    out.rows = static_cast<std::int64_t>(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t upto = c.size() - (rows - 1 - r);
      auto row = answer(std::span<const cell>(c.data(), upto));
      out.logits.insert(out.logits.end(), row.begin(), row.end());
    }
    return out;
  }
  la::forward_output decode(la::seq_id s, la::token_id t, la::position_t p, const la::forward_options& o) {
    const la::token_id one[1] = {t};
    return prefill(s, one, p, o);
  }
  la::kv_block export_kv(la::seq_id s, la::index_range tokens, la::index_range) {
    const auto& c = seqs_.at(static_cast<std::size_t>(s));
    la::kv_block b(info_.fingerprint, {0}, tokens.size(), la::dtype::f32);
    for (std::int64_t i = 0; i < tokens.size(); ++i) {
      const auto& r = c.at(static_cast<std::size_t>(tokens.first + i));
      b.k<float>(0)[static_cast<std::size_t>(i)] = r.id;
      b.v<float>(0)[static_cast<std::size_t>(i)] = r.id;
      b.positions()[static_cast<std::size_t>(i)] = r.pos;
    }
    return b;
  }
  void import_kv(la::seq_id s, const la::kv_block& b, const la::import_options& o) {
    if (!o.force) la::check_fingerprint("strict_engine::import_kv", info_.fingerprint, b.fingerprint());
    la::check_positions("strict_engine::import_kv", b);
    auto& c = seqs_.at(static_cast<std::size_t>(s));
    for (std::int64_t i = 0; i < b.n_tokens(); ++i)
      c.push_back({b.v<float>(0)[static_cast<std::size_t>(i)], b.positions()[static_cast<std::size_t>(i)]});
  }
  void shift(la::seq_id s, la::position_t p0, la::position_t p1, la::position_t d) {
    for (auto& r : seqs_.at(static_cast<std::size_t>(s)))
      if (r.pos >= p0 && r.pos < p1) r.pos += d;
  }
  void erase(la::seq_id s, la::position_t p0, la::position_t p1) {
    std::erase_if(seqs_.at(static_cast<std::size_t>(s)),
                  [&](const cell& r) { return r.pos >= p0 && r.pos < p1; });
  }
  std::int64_t n_tokens(la::seq_id s) const {
    return static_cast<std::int64_t>(seqs_.at(static_cast<std::size_t>(s)).size());
  }
  la::position_t next_position(la::seq_id s) const {
    la::position_t p = 0;
    for (const auto& r : seqs_.at(static_cast<std::size_t>(s))) p = std::max(p, r.pos + 1);
    return p;
  }
  int open_sequences() const { return open_; }

 private:
  struct cell {
    float id;
    la::position_t pos;
  };
  std::vector<float> answer(std::span<const cell> c) const {
    std::vector<float> row(static_cast<std::size_t>(info_.vocab_size), 0.0f);
    if (c.size() < 3) return row;
    const float q = c.back().id;
    for (std::size_t i = c.size() - 2; i-- > 0;)
      if (c[i].id == q) {
        row[static_cast<std::size_t>(c[i + 1].id)] = 10.0f;
        break;
      }
    return row;
  }
  la::engine_info info_;
  std::vector<std::vector<cell>> seqs_;
  int open_ = 0;
};

// The same engine without the options parameter: the callers pass options, so it must fail the concept.
struct no_options_engine {
  const la::engine_info& info() const;
  la::seq_id open_seq();
  void close_seq(la::seq_id);
  la::forward_output prefill(la::seq_id, std::span<const la::token_id>, la::position_t);
  la::forward_output decode(la::seq_id, la::token_id, la::position_t);
  la::kv_block export_kv(la::seq_id, la::index_range, la::index_range);
  void import_kv(la::seq_id, const la::kv_block&, const la::import_options&);
  void shift(la::seq_id, la::position_t, la::position_t, la::position_t);
  void erase(la::seq_id, la::position_t, la::position_t);
  std::int64_t n_tokens(la::seq_id) const;
  la::position_t next_position(la::seq_id) const;
};

static_assert(la::inference_engine<strict_engine>, "options without a default satisfy the concept");
static_assert(!la::inference_engine<no_options_engine>,
              "an adapter without forward_options fails the concept");
static_assert(!la::attention_capturing_engine<strict_engine>);

}  // namespace

// Instantiating the callers is the compile-time half of the test.
template class la::trial_driver<strict_engine>;
template std::vector<la::conformance_result> la::run_conformance<strict_engine>(
    strict_engine&, const la::conformance_options&);

TEST_CASE(
    "concept: an adapter without option defaults runs in the conformance kit, missing capabilities are "
    "skipped") {
  strict_engine e;
  const auto res = la::run_conformance(e, {.a = {0, 4, 40, 5, 41, 1}, .b = {4, 5}});
  std::set<std::string> names;
  for (const auto& r : res) {
    names.insert(r.check);
    INFO(r.check << ": " << r.detail);
    if (r.check == "masked_relay") {
      CHECK(r.skipped);
      CHECK_FALSE(r.passed);
      CHECK_THAT(r.detail, Catch::Contains("partial_layer_import"));
    } else {
      CHECK_FALSE(r.skipped);
      CHECK(r.passed);
    }
  }
  CHECK(names == std::set<std::string>{"split_prefill", "relay", "shift", "erase", "masked_relay",
                                       "fingerprint", "gate"});
  CHECK(e.open_sequences() == 0);
}

TEST_CASE("concept: an adapter without option defaults runs under the trial driver") {
  strict_engine e;
  const la::organism_format fmt{.vocab_size = 68,
                                .bos = 0,
                                .sep = 1,
                                .key_first = 4,
                                .key_count = 32,
                                .value_first = 36,
                                .value_count = 32,
                                .max_pairs = 16};
  la::trial_design d{.seed = 3, .items = 10, .seeds = 1};
  d.arms = {la::parse_arm("no_comm"), la::parse_arm("text_full"), la::parse_arm("kv_full"),
            la::parse_arm("kv_int8"), la::parse_arm("deranged")};
  la::trial_driver<strict_engine> drv(e);
  std::vector<la::trial_record> recs;
  drv.run(
      d, [&](std::uint64_t i, std::uint64_t s) { return la::make_organism_task(fmt, {.seed = 3}, i, s); },
      [&](const la::trial_record& r) { recs.push_back(r); });
  CHECK(recs.size() == d.trials());
  CHECK(e.open_sequences() == 0);
  for (const auto& r : recs) {
    // this engine captures no attention and returns no hidden state: absent, with the reason
    CHECK_FALSE(r.hidden_cosine);
    CHECK_FALSE(r.attention_mass);
    bool hidden_noted = false, mass_noted = false;
    for (const auto& u : r.unavailable) {
      hidden_noted |= u.metric == "hidden_cosine" && u.reason.find("hidden_state") != std::string::npos;
      mass_noted |= u.metric == "attention_mass" && u.reason.find("attention_capture") != std::string::npos;
    }
    CHECK(hidden_noted);
    CHECK(mass_noted == (r.arm != "no_comm"));
  }
}
