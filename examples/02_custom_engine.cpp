// SPDX-License-Identifier: MIT
// A minimal engine adapter: any engine that offers these eleven operations satisfies
// latentaudit::inference_engine and runs under the trial driver — here a toy "lookup" engine
// whose one-layer cache stores each token id in K and V, and which answers a query key with the
// token that followed the nearest key in its cache (a hard-wired induction head). Replace the
// bodies with calls into your engine (docs/engines.md maps llama.cpp, vLLM and HF onto them).
#include <latentaudit/trial.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

namespace la = latentaudit;

class lookup_engine {
 public:
  explicit lookup_engine(std::int32_t vocab) {
    info_.name = "lookup_engine";
    info_.vocab_size = vocab;
    info_.hidden_size = 0;  // no hidden state: hidden_cosine is simply not recorded
    info_.max_context = 1 << 20;
    info_.fingerprint = {.architecture = "ToyLookup",
                         .n_layers = 1,
                         .n_heads = 1,
                         .n_kv_heads = 1,
                         .head_dim_k = 2,
                         .head_dim_v = 2,
                         .rope = {.pairing = la::rope_pairing::neox, .theta = 10000.0f, .rotary_dims = 2},
                         .weights_hash = 42};
    info_.caps.kv_dtypes = {la::dtype::f32};
  }
  const la::engine_info& info() const { return info_; }
  la::seq_id open_seq() {
    seqs_.emplace_back();
    return static_cast<la::seq_id>(seqs_.size() - 1);
  }
  void close_seq(la::seq_id s) { seqs_.at(static_cast<std::size_t>(s)).clear(); }
  la::forward_output prefill(la::seq_id s, std::span<const la::token_id> tokens, la::position_t p,
                             const la::forward_options& = {}) {
    auto& c = seqs_.at(static_cast<std::size_t>(s));
    for (auto t : tokens) c.push_back({static_cast<float>(t), 0.0f, static_cast<float>(t), 0.0f, p++});
    return answer(c);
  }
  la::forward_output decode(la::seq_id s, la::token_id t, la::position_t p,
                            const la::forward_options& o = {}) {
    const la::token_id one[1] = {t};
    return prefill(s, one, p, o);
  }
  la::kv_block export_kv(la::seq_id s, la::index_range tokens, la::index_range) {
    const auto& c = seqs_.at(static_cast<std::size_t>(s));
    la::kv_block b(info_.fingerprint, {0}, tokens.size(), la::dtype::f32);
    auto k = b.k<float>(0), v = b.v<float>(0);
    for (std::int64_t i = 0; i < tokens.size(); ++i) {
      const auto& r = c.at(static_cast<std::size_t>(tokens.first + i));
      k[2 * i] = r.k0, k[2 * i + 1] = r.k1, v[2 * i] = r.v0, v[2 * i + 1] = r.v1;
      b.positions()[static_cast<std::size_t>(i)] = r.pos;
    }
    return b;
  }
  void import_kv(la::seq_id s, const la::kv_block& b, const la::import_options& o = {}) {
    if (!o.force && b.fingerprint() != info_.fingerprint)
      throw la::incompatible_model("lookup_engine::import_kv: " +
                                   la::fingerprint_mismatch(b.fingerprint(), info_.fingerprint));
    auto& c = seqs_.at(static_cast<std::size_t>(s));
    if (b.n_layers() == 0) return;
    auto k = b.k<float>(0), v = b.v<float>(0);
    for (std::int64_t i = 0; i < b.n_tokens(); ++i)
      c.push_back(
          {k[2 * i], k[2 * i + 1], v[2 * i], v[2 * i + 1], b.positions()[static_cast<std::size_t>(i)]});
  }
  void shift(la::seq_id s, la::position_t p0, la::position_t p1, la::position_t delta) {
    for (auto& r : seqs_.at(static_cast<std::size_t>(s)))
      if (r.pos >= p0 && r.pos < p1) r.pos += delta;  // no rotation in this toy: positions only
  }
  void erase(la::seq_id s, la::position_t p0, la::position_t p1) {
    std::erase_if(seqs_.at(static_cast<std::size_t>(s)),
                  [&](const row& r) { return r.pos >= p0 && r.pos < p1; });
  }
  std::int64_t n_tokens(la::seq_id s) const {
    return static_cast<std::int64_t>(seqs_.at(static_cast<std::size_t>(s)).size());
  }
  la::position_t next_position(la::seq_id s) const {
    la::position_t p = 0;
    for (const auto& r : seqs_.at(static_cast<std::size_t>(s))) p = std::max(p, r.pos + 1);
    return p;
  }

 private:
  struct row {
    float k0, k1, v0, v1;
    la::position_t pos;
  };
  // Logits of the last token: +10 on the value that followed the nearest earlier key.
  la::forward_output answer(const std::vector<row>& c) const {
    la::forward_output out;
    out.rows = 1;
    out.logits.assign(static_cast<std::size_t>(info_.vocab_size), 0.0f);
    if (c.size() < 3) return out;
    const float q = c.back().k0;
    std::size_t best = c.size();
    float dist = 0.5f;  // a key must be within half a token id to count as a match
    for (std::size_t i = 0; i + 2 < c.size(); ++i)
      if (std::fabs(c[i].k0 - q) < dist) dist = std::fabs(c[i].k0 - q), best = i;
    if (best < c.size()) {
      const long t = std::lround(c[best + 1].v0);
      if (t >= 0 && t < info_.vocab_size) out.logits[static_cast<std::size_t>(t)] = 10.0f;
    }
    return out;
  }
  la::engine_info info_;
  std::vector<std::vector<row>> seqs_;
};

static_assert(la::inference_engine<lookup_engine>, "the adapter must satisfy the engine concept");

int main() {
  // Organism-format tasks (the token map of models/organism-a/task.json), all in the need regime.
  const la::organism_format fmt{.vocab_size = 68,
                                .bos = 0,
                                .sep = 1,
                                .key_first = 4,
                                .key_count = 32,
                                .value_first = 36,
                                .value_count = 32,
                                .max_pairs = 16};
  const la::organism_task_options to{.seed = 3, .no_need_fraction = 0.0};
  lookup_engine engine(fmt.vocab_size);
  la::trial_design design{.seed = 3, .items = 50, .seeds = 2};
  design.arms = {la::parse_arm("no_comm"),        la::parse_arm("text_full"),     la::parse_arm("kv_full"),
                 la::parse_arm("kv_noise_0.002"), la::parse_arm("kv_noise_0.05"), la::parse_arm("kv_int8")};
  for (const auto& a : la::default_arms())  // the placebos: another item's, a zeroed and a random cache
    if (a.plan().family == la::arm_family::placebo) design.arms.push_back(a);
  la::trial_driver<lookup_engine> driver(engine);
  std::map<std::string, std::pair<int, int>> acc;
  const auto stats = driver.run(
      design,
      [&](std::uint64_t item, std::uint64_t seed) { return la::make_organism_task(fmt, to, item, seed); },
      [&](const la::trial_record& r) {
        acc[r.arm].first += r.correct;
        acc[r.arm].second += 1;
      });
  for (const auto& [arm, c] : acc)
    std::printf("%-16s accuracy %5.1f %%  (%d trials)\n", arm.c_str(), 100.0 * c.first / c.second, c.second);
  std::printf("%llu trials, engine %.3f s of %.3f s\n", static_cast<unsigned long long>(stats.trials),
              stats.engine_s, stats.wall_s);
  // The toy engine must recall through relay and text, and fail without communication.
  return acc["kv_full"].first == acc["kv_full"].second && acc["text_full"].first == acc["text_full"].second &&
                 acc["no_comm"].first == 0
             ? 0
             : 1;
}
