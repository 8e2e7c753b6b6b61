// SPDX-License-Identifier: MIT
// Inside a serving stack (issue 54, docs/serving.md "The worked example"): two agents on llama.cpp —
// A reads a document, B answers a query about it — serve a stream of requests. Per request the
// audit's policy (serve/relay_policy.hpp, loaded from a report.json) decides: relay A's KV cache to B
// through the library's wire path (kv/wire.hpp: encode, authenticate, decode into B's sequence), send
// the document as text (the same wire), or let B answer alone. A share of the relayed requests is
// also answered over text (serve/relay_sampler.hpp: the draw per (seed, request id), both answers
// journaled as trial records); the pairs feed the always-valid switch (serve/relay_monitor.hpp);
// serve/relay_metrics.hpp writes the Prometheus text.
//
// The models: the organisms exported to GGUF (organism-a for both agents, organism-b as a foreign
// sender). The policy: the main job's decision shipped in examples/data/relay-policy-main-job.json
// (report.json's `decision` of scripts/run-main.sh; its fingerprints are the reference engine's,
// which llama.cpp's exports share), or `--report FILE` (any report.json with decision.rules). Then:
//  1. the stream: 320 requests; from request 160 on, half the documents change after A cached
//     them and the stack's version counter misses it (the requests say cache_age_versions 0): the
//     rules relay a stale cache and the monitor must turn relay off — after request 160 — while the
//     same stream without the change keeps it on;
//  2. the replay: the switch over 200 seeded streams of 1000 sampled pairs, resampled from real
//     pairs answered here on llama.cpp (40 fresh and 40 stale documents), without a change and with
//     stale caches from pair 500 on (share 0.5 and 0.2): how often it turns relay off, how late;
//     the acceptance of issue 54 is checked (exit 1 when missed);
//  3. decide()'s cost per request;
//  4. where the real TinyStories models are (LATENTAUDIT_MODELS, else ../shared/models;
//     docs/real-models.md): two agents on stories260K relay a story's cache through the same wire.
// Built without llama.cpp it prints "SKIPPED(llama.cpp)" and exits 0 (CTest counts it skipped).
// Run from the repository root (or pass the models directory: 05_serving_llama_cpp [models] [--report FILE]).
#include <latentaudit/engine/gguf_export.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/serve.hpp>
#include <latentaudit/trial.hpp>
#if defined(LATENTAUDIT_HAS_LLAMA_CPP)
#include <latentaudit/engine/llama_cpp.hpp>
#endif

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace la = latentaudit;
namespace fs = std::filesystem;

#if defined(LATENTAUDIT_HAS_LLAMA_CPP)
namespace {

using engine = la::llama_cpp_engine;

// One answer of B: greedy tokens (teacher-forced on the reference answer, so the log-probability
// below is the reference answer's), the reference answer's log-probability, the bytes on the wire.
struct b_answer {
  std::string text;  // B's greedy answer tokens as "id id ..."
  bool correct = false;
  double logprob = 0.0;  // log p(reference answer | B's context)
  std::uint64_t bytes = 0;
  std::int64_t relay_tokens = 0;
};

double log_softmax_at(std::span<const float> row, la::token_id id) {
  const float mx = *std::max_element(row.begin(), row.end());
  double sum = 0.0;
  for (const float v : row) sum += std::exp(static_cast<double>(v - mx));
  return static_cast<double>(row[static_cast<std::size_t>(id)] - mx) - std::log(sum);
}

std::string ids_text(std::span<const la::token_id> ids) {
  std::string s;
  for (const auto id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

// B answers `t` on sequence s after `ctx` (at positions from `first`), its own prompt and the query.
b_answer answer(engine& b, la::seq_id s, const la::trial_task& t, std::vector<la::token_id> ctx,
                la::position_t first) {
  ctx.insert(ctx.end(), t.own_prompt.begin(), t.own_prompt.end());
  ctx.insert(ctx.end(), t.query.begin(), t.query.end());
  la::forward_output out = b.prefill(s, ctx, first);
  la::position_t p = first + static_cast<la::position_t>(ctx.size());
  b_answer a;
  a.correct = true;
  std::vector<la::token_id> got;
  for (std::size_t k = 0; k < t.answer.size(); ++k) {
    const std::span<const float> row(out.logits);
    got.push_back(la::argmax_token(row));
    a.correct = a.correct && got.back() == t.answer[k];
    a.logprob += log_softmax_at(row, t.answer[k]);
    if (k + 1 < t.answer.size()) out = b.decode(s, t.answer[k], p++);
  }
  a.text = ids_text(got);
  return a;
}

// The three ways B is served. The relay: A prefills its document (version 1 of a stale one),
// exports its cache, the wire encodes and authenticates it, B's side decodes it (refusing another
// model's cache) and imports it at the positions it carries.
b_answer serve_relay(engine& a, engine& b, const la::trial_task& t, std::span<const std::byte> key) {
  const auto n = static_cast<std::int64_t>(t.document.size());
  la::scoped_seq<engine> sa(a);
  (void)a.prefill(sa.id(), t.document, 0);
  const auto block = a.export_kv(sa.id(), {0, n}, {0, a.info().fingerprint.n_layers});
  const auto bytes = la::encode_relay(block, {.hmac_key = key});
  const auto dec = la::decode_relay(
      bytes,
      {.hmac_key = key, .require_authentication = true, .expected_fingerprint = &b.info().fingerprint});
  la::scoped_seq<engine> sb(b);
  b.import_kv(sb.id(), dec.kv, {});
  b_answer r = answer(b, sb.id(), t, {}, static_cast<la::position_t>(n));
  r.bytes = bytes.size();
  r.relay_tokens = dec.kv.n_tokens();
  return r;
}

// The text: the current document's tokens on the same wire.
b_answer serve_text(engine& b, const la::trial_task& t, std::span<const std::byte> key) {
  const auto bytes =
      la::encode_relay(la::text_relay{.as_tokens = true, .tokens = t.relay_text()}, {.hmac_key = key});
  const auto dec = la::decode_relay(bytes, {.hmac_key = key, .require_authentication = true});
  la::scoped_seq<engine> sb(b);
  b_answer r = answer(b, sb.id(), t, dec.text.tokens, 0);
  r.bytes = bytes.size();
  r.relay_tokens = static_cast<std::int64_t>(dec.text.tokens.size());
  return r;
}

b_answer serve_alone(engine& b, const la::trial_task& t) {
  la::scoped_seq<engine> sb(b);
  return answer(b, sb.id(), t, t.no_relay_prefix, 0);
}

la::served_answer served(std::uint64_t id, const b_answer& a, const la::trial_task& t,
                         const std::string& sender, const std::string& receiver) {
  la::served_answer s;
  s.request_id = id;
  s.answer_text = a.text;
  s.regime = std::string(la::regime_name(t.regime));
  s.bytes = a.bytes;
  s.relay_tokens = a.relay_tokens;
  s.generated_tokens = static_cast<std::int64_t>(t.answer.size());
  s.answer_logprob = std::min(0.0, a.logprob);
  s.sender_fingerprint = sender;
  s.receiver_fingerprint = receiver;
  return s;
}

la::relay_pair pair_of(std::uint64_t id, const b_answer& relay, const b_answer& text) {
  return {.request_id = id,
          .fallback = la::relay_fallback::text,
          .relay_correct = relay.correct,
          .fallback_correct = text.correct,
          .relay_likelihood = std::exp(std::min(0.0, relay.logprob)),
          .fallback_likelihood = std::exp(std::min(0.0, text.logprob))};
}

// The monitor of the stream and of the replay: against text, on correctness and likelihood (k = 2).
const la::relay_monitor_options monitor_options{
    .bets = {}, .vs_text = true, .vs_no_comm = false, .on_correct = true, .on_likelihood = true};

// The main job's decision (scripts/run-main.sh: 450 items x 3 seeds, 33 arms, 44 550 trials; too long
// for a smoke test), shipped as examples/data/relay-policy-main-job.json: report.json's `decision`.
constexpr const char* shipped_policy = "examples/data/relay-policy-main-job.json";

struct stream_result {
  std::map<std::string, std::size_t> actions;  // served action -> requests
  std::size_t requests = 0, correct = 0, pairs = 0, switched_to_text = 0;
  std::optional<la::relay_off_event> off;
  double decide_s = 0.0;
  std::vector<la::relay_request> requests_seen;
  std::size_t journaled = 0;  // records in the sampler's files, read back
};

struct agents {
  engine& a;        // organism-a: the sender
  engine& foreign;  // organism-b: a foreign sender
  engine& b;        // organism-a: the receiver
};

// The stream of `n` requests; from request `change` on (0: never) half the documents changed after A
// cached them without the stack knowing (cache_age_versions 0 on the request).
stream_result serve_stream(agents& g, const la::relay_policy& policy, const la::organism_format& fmt,
                           std::uint64_t n, std::uint64_t change, const fs::path& dir,
                           la::relay_metrics* metrics) {
  const auto key = la::relay_hmac_key(54);
  const std::string fa = la::fingerprint_text(g.a.info().fingerprint);
  const std::string ff = la::fingerprint_text(g.foreign.info().fingerprint);
  const std::string fb = la::fingerprint_text(g.b.info().fingerprint);
  // the stream's documents: mixed regimes (stale ones with their age known), and after the change
  // stale ones whose age the stack does not see
  const la::organism_task_options mixed{
      .seed = 541, .no_need_fraction = 0.2, .stale_fraction = 0.1, .conflict_fraction = 0.1};
  const la::organism_task_options stale{.seed = 542, .no_need_fraction = 0.0, .stale_fraction = 1.0};
  const la::trial_design design{.seed = 54, .items = n, .seeds = 1, .arms = {la::parse_arm("kv_full")}};
  std::map<std::uint64_t, std::string> expected;  // request id -> reference answer (the scorer's key)
  la::relay_sampler sampler({.seed = 7, .fraction = 0.5, .relay_arm = "kv_full", .dir = dir},
                            [&](const la::served_answer& a, std::string_view) {
                              return a.answer_text == expected.at(a.request_id);
                            });
  la::relay_monitor monitor(monitor_options);
  stream_result out;
  for (std::uint64_t id = 0; id < n; ++id) {
    auto u = la::make_stream({54, id, 0x5E4E, 0});
    const bool hidden_stale = change != 0 && id >= change && la::uniform01(u) < 0.5;
    const bool from_foreign = la::uniform01(u) < 0.08;
    const la::trial_task t = la::make_organism_task(fmt, hidden_stale ? stale : mixed, id, 0);
    expected[id] = ids_text(t.answer);
    // the request's features, as an audit record of it states them (record_builder's begin_record)
    la::trial_record rec = la::begin_record(design, t, design.arms[0]);
    rec.sender_fingerprint = from_foreign ? ff : fa;
    rec.receiver_fingerprint = fb;
    la::relay_request q = la::request_of_record(rec);
    if (hidden_stale) q.cache_age_versions = 0.0;  // the version counter missed the update
    const auto t0 = std::chrono::steady_clock::now();
    const la::relay_choice c = policy.decide(q);
    out.decide_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.requests_seen.push_back(q);
    const std::string rule = c.rule ? std::to_string(*c.rule) : std::string("none");
    if (metrics != nullptr) metrics->count_decision(la::relay_action_name(c.action), rule);
    la::relay_action act = c.action;
    if (act == la::relay_action::relay_through_map) act = la::relay_action::text;  // no maps held here
    if (act == la::relay_action::relay && !monitor.on()) {
      act = la::relay_action::text;  // the switch is off: serve the fallback
      ++out.switched_to_text;
    }
    b_answer a;
    engine& sender = from_foreign ? g.foreign : g.a;
    if (act == la::relay_action::relay) {
      a = serve_relay(sender, g.b, t, key);
      std::optional<la::served_answer> fallback;
      b_answer text;
      if (sampler.sampled(id)) {
        text = serve_text(g.b, t, key);
        fallback = served(id, text, t, "", fb);
      }
      if (auto p = sampler.record(served(id, a, t, from_foreign ? ff : fa, fb), fallback)) {
        monitor.observe(*p);
        ++out.pairs;
        if (metrics != nullptr) {
          metrics->count_sampled_pair(*p);
          metrics->set_monitor(monitor);
        }
      }
    } else if (act == la::relay_action::text) {
      a = serve_text(g.b, t, key);
    } else {
      a = serve_alone(g.b, t);
    }
    if (metrics != nullptr) metrics->add_bytes(la::relay_action_name(act), a.bytes);
    ++out.actions[std::string(la::relay_action_name(act))];
    ++out.requests;
    out.correct += a.correct ? 1 : 0;
  }
  sampler.flush();
  for (const auto& f : sampler.files()) out.journaled += la::read_records(f).size();
  out.off = monitor.off();
  return out;
}

struct mc_counts {
  std::uint64_t streams = 0, off = 0, off_before = 0, off_after = 0;
  std::vector<std::uint64_t> delays;  // pairs after the change, for streams off after it
};

// The switch over `streams` streams of `pairs` sampled pairs resampled from real pairs: fresh ones,
// and from pair `change` on (0: never) stale ones with probability `share`; stream r draws from
// Philox (seed, r, 0x5E4F, 0).
mc_counts replay(std::span<const la::relay_pair> fresh, std::span<const la::relay_pair> stale,
                 std::uint64_t streams, std::uint64_t pairs, std::uint64_t change, double share,
                 std::uint64_t seed) {
  mc_counts c;
  auto pick = [](std::span<const la::relay_pair> pool, double u) {
    return pool[std::min(pool.size() - 1, static_cast<std::size_t>(u * static_cast<double>(pool.size())))];
  };
  for (std::uint64_t r = 0; r < streams; ++r) {
    auto g = la::make_stream({seed, r, 0x5E4F, 0});
    la::relay_monitor m(monitor_options);
    for (std::uint64_t i = 1; i <= pairs && m.on(); ++i) {
      const bool is_stale = change != 0 && i > change && la::uniform01(g) < share;
      la::relay_pair p = pick(is_stale ? stale : fresh, la::uniform01(g));
      p.request_id = i;
      m.observe(p);
    }
    ++c.streams;
    if (const auto& ev = m.off()) {
      ++c.off;
      if (change != 0 && ev->pairs <= change) ++c.off_before;
      if (change != 0 && ev->pairs > change) {
        ++c.off_after;
        c.delays.push_back(ev->pairs - change);
      }
    }
  }
  std::sort(c.delays.begin(), c.delays.end());
  return c;
}

double rate(std::uint64_t k, std::uint64_t n) { return static_cast<double>(k) / static_cast<double>(n); }

// Two agents on stories260K (the real TinyStories model): A's cache of a story relayed through the
// wire gives B the answer text gives it. Returns false on a mismatch.
bool real_story_models(const la::relay_policy& policy) {
  const char* env = std::getenv("LATENTAUDIT_MODELS");
  const fs::path root = env != nullptr ? fs::path(env) : fs::path("../shared/models");
  const fs::path gguf = root / "stories260K" / "stories260K.gguf";
  if (!fs::is_regular_file(gguf)) {
    std::printf("SKIPPED(real-models): no %s (set LATENTAUDIT_MODELS; docs/real-models.md)\n", gguf.c_str());
    return true;
  }
  auto a = engine::load(gguf, {.n_ctx = 1024, .max_context = 512, .n_seq_max = 4});
  auto b = engine::load(gguf, {.n_ctx = 1024, .max_context = 512, .n_seq_max = 4});
  const auto tok = b.tokenizer();
  const auto key = la::relay_hmac_key(260);
  struct story {
    const char* document;
    const char* query;
    const char* answer;
  };
  const story stories[] = {
      {"Lily had a dog named Max. Max liked to run in the park.", " One day, Lily threw the ball to", " Max"},
      {"Tom had a red ball. He played with it every day.", " Tom liked his", " red"},
      {"Sara saw a big cat in the garden. The cat was very soft.", " Sara wanted to pet the", " cat"},
  };
  std::size_t agree = 0;
  double max_diff = 0.0;
  for (const auto& s : stories) {
    la::trial_task t;
    t.document = tok.encode(s.document);
    t.document.insert(t.document.begin(), tok.bos());
    t.query = tok.encode(s.query);
    t.answer = tok.encode(s.answer);
    t.no_relay_prefix = {tok.bos()};
    const auto kv = serve_relay(a, b, t, key);
    const auto text = serve_text(b, t, key);
    max_diff = std::max(max_diff, std::abs(kv.logprob - text.logprob));
    agree += kv.text == text.text ? 1 : 0;
  }
  const std::string fp = la::fingerprint_text(b.info().fingerprint);
  std::printf(
      "real model stories260K (%s): %zu stories relayed through the wire, B's answer equal to the text "
      "relay's in %zu, max |log p(answer) kv - text| %.2g\n",
      fp.c_str(), std::size(stories), agree, max_diff);
  // the policy speaks for the receivers its audit measured: a request into this unaudited model gets
  // text (the fingerprint line's receiver scope rule), even between two copies of it
  const auto c = policy.decide(la::relay_request{.sender_fingerprint = fp,
                                                 .receiver_fingerprint = fp,
                                                 .cache_age_versions = 0,
                                                 .prompt_overlap = 0.0,
                                                 .needs_document = true,
                                                 .maps = std::vector<std::string>{}});
  std::printf("  the policy on a fresh stories260K request: %s (rule %s: %s)\n",
              std::string(la::relay_action_name(c.action)).c_str(),
              c.rule ? std::to_string(*c.rule).c_str() : "none", c.check.c_str());
  return agree == std::size(stories) && max_diff < 1e-3 && c.action == la::relay_action::text;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path models = "models";
  std::string report;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--report" && i + 1 < argc)
      report = argv[++i];
    else
      models = a;
  }
  const fs::path dir = fs::temp_directory_path() / ("latentaudit_example_05_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  int status = 0;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const la::relay_policy policy = la::relay_policy::load(report.empty() ? shipped_policy : report);
    std::printf("policy: %s, relay_allowed %s, %zu rules\n", policy.verdict().c_str(),
                policy.relay_allowed() ? "true" : "false", policy.rules().size());
    for (std::size_t i = 0; i < policy.rules().size(); ++i) {
      const auto& r = policy.rules()[i];
      std::string when;
      for (const auto& c : r.when)
        when += (when.empty() ? "" : " and ") + c.feature + " " + c.op + " " +
                (c.other.empty() ? la::write_json(c.value) : c.other);
      std::printf("  rule %zu: %s -> %s (%s)\n", i, when.empty() ? "always" : when.c_str(),
                  std::string(la::relay_action_name(r.action)).c_str(), r.check.c_str());
    }
    // the two agents on llama.cpp: the organisms exported to GGUF
    (void)la::export_llama_gguf(models / "organism-a", dir / "organism-a.gguf", {});
    (void)la::export_llama_gguf(models / "organism-b", dir / "organism-b.gguf", {});
    auto a = engine::load(dir / "organism-a.gguf", {.n_seq_max = 4});
    auto foreign = engine::load(dir / "organism-b.gguf", {.n_seq_max = 4});
    auto b = engine::load(dir / "organism-a.gguf", {.n_seq_max = 4});
    const auto ref_fp =
        la::fingerprint_text(la::reference_cpu_engine::load(models / "organism-a").info().fingerprint);
    std::printf("agents on llama.cpp: A and B %s (the reference engine's: %s), foreign sender %s\n",
                la::fingerprint_text(a.info().fingerprint).c_str(),
                ref_fp == la::fingerprint_text(a.info().fingerprint) ? "the same" : "DIFFERENT",
                la::fingerprint_text(foreign.info().fingerprint).c_str());
    const auto fmt = la::organism_format::load(models / "organism-a");
    agents g{a, foreign, b};

    // 1. the stream, without and with the change at request 160
    constexpr std::uint64_t n = 320, change = 160;
    const auto quiet = serve_stream(g, policy, fmt, n, 0, dir / "sample-quiet", nullptr);
    la::relay_metrics metrics;
    const auto s = serve_stream(g, policy, fmt, n, change, dir / "sample", &metrics);
    for (const auto* r : {&quiet, &s}) {
      std::string acts;
      for (const auto& [k, v] : r->actions) acts += (acts.empty() ? "" : ", ") + k + " " + std::to_string(v);
      std::printf("stream %s: %zu requests (%s), accuracy %.3f, %zu sampled pairs; monitor: %s\n",
                  r == &quiet ? "without change" : "with stale caches from request 160", r->requests,
                  acts.c_str(), rate(r->correct, r->requests), r->pairs,
                  r->off ? r->off->reason.c_str() : "relay stayed on");
    }
    if (quiet.off) status = 1;  // never off on the stream without the change
    if (!s.off || !s.off->request_id || *s.off->request_id < change) status = 1;  // off, after the change
    if (s.off)
      std::printf(
          "  switch: off at request %llu (%llu requests after the change), %zu later relays served as text\n",
          static_cast<unsigned long long>(*s.off->request_id),
          static_cast<unsigned long long>(*s.off->request_id - change), s.switched_to_text);
    metrics.write_file(dir / "metrics.prom");
    const std::string prom = metrics.text();
    std::printf("metrics (%zu bytes of Prometheus text, %s):\n", prom.size(), (dir / "metrics.prom").c_str());
    for (std::size_t at = 0; at < prom.size();) {
      const auto end = prom.find('\n', at);
      const std::string line = prom.substr(at, end - at);
      if (line.rfind("latentaudit_relay_monitor_on", 0) == 0 ||
          line.rfind("latentaudit_relay_decisions_total", 0) == 0)
        std::printf("  %s\n", line.c_str());
      at = end == std::string::npos ? prom.size() : end + 1;
    }
    std::printf(
        "journal: %zu records of the sampled pairs in %s (the journal's format, read back by read_records)\n",
        s.journaled, (dir / "sample").c_str());
    if (s.journaled != 2 * s.pairs) status = 1;

    // 2. the replay: real pairs on llama.cpp, resampled over 200 seeded streams
    const auto key = la::relay_hmac_key(54);
    std::vector<la::relay_pair> fresh, stale;
    for (std::uint64_t i = 0; i < 40; ++i) {
      const auto tf = la::make_organism_task(fmt, {.seed = 543, .no_need_fraction = 0.0}, i, 0);
      fresh.push_back(pair_of(i, serve_relay(a, b, tf, key), serve_text(b, tf, key)));
      const auto ts =
          la::make_organism_task(fmt, {.seed = 544, .no_need_fraction = 0.0, .stale_fraction = 1.0}, i, 0);
      stale.push_back(pair_of(i, serve_relay(a, b, ts, key), serve_text(b, ts, key)));
    }
    auto mean_x = [](const std::vector<la::relay_pair>& v) {
      double x = 0.0;
      for (const auto& p : v) x += (p.relay_correct ? 1.0 : 0.0) - (p.fallback_correct ? 1.0 : 0.0);
      return x / static_cast<double>(v.size());
    };
    std::printf(
        "replay pools (llama.cpp): 40 fresh pairs, relay - text %+.3f; 40 stale pairs, relay - text %+.3f\n",
        mean_x(fresh), mean_x(stale));
    const auto none = replay(fresh, stale, 200, 1000, 0, 0.0, 20270541);
    const auto big = replay(fresh, stale, 200, 1000, 500, 0.5, 20270542);
    const auto mild = replay(fresh, stale, 200, 1000, 500, 0.2, 20270543);
    auto pct = [](const std::vector<std::uint64_t>& d, double q) {
      return d.empty() ? 0ULL
                       : static_cast<unsigned long long>(
                             d[static_cast<std::size_t>(q * static_cast<double>(d.size() - 1))]);
    };
    auto mean = [](const std::vector<std::uint64_t>& d) {
      double x = 0.0;
      for (auto v : d) x += static_cast<double>(v);
      return d.empty() ? 0.0 : x / static_cast<double>(d.size());
    };
    std::printf("replay, 200 streams of 1000 sampled pairs each:\n");
    std::printf("  no change: never off %.3f\n", 1.0 - rate(none.off, none.streams));
    for (const auto* c : {&big, &mild})
      std::printf(
          "  stale share %.1f from pair 500: never off before %.3f, off after %.3f, delay mean %.1f "
          "median %llu 90th %llu pairs\n",
          c == &big ? 0.5 : 0.2, 1.0 - rate(c->off_before, c->streams), rate(c->off_after, c->streams),
          mean(c->delays), pct(c->delays, 0.5), pct(c->delays, 0.9));
    // the acceptance of issue 54
    if (rate(none.off, none.streams) > 0.05) status = 1;
    for (const auto* c : {&big, &mild})
      if (rate(c->off_before, c->streams) > 0.05 || rate(c->off_after, c->streams) < 0.8) status = 1;

    // 3. decide()'s cost per request, over the stream's requests
    const auto& qs = s.requests_seen;
    const auto t1 = std::chrono::steady_clock::now();
    std::size_t relays = 0;
    constexpr int rounds = 50;
    for (int k = 0; k < rounds; ++k)
      for (const auto& q : qs) relays += policy.decide(q).action == la::relay_action::relay ? 1 : 0;
    const double per = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() /
                       static_cast<double>(rounds * qs.size());
    std::printf("decide(): %.2f us per request (%zu calls; %zu relay), in the stream %.2f us\n", 1e6 * per,
                rounds * qs.size(), relays, 1e6 * s.decide_s / static_cast<double>(s.requests));

    // 4. the real story models, where they are
    if (!real_story_models(policy)) status = 1;
    std::printf("%s in %.2f s\n", status == 0 ? "ok" : "FAILED",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    status = 1;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return status;
}
#else
int main() {
  std::printf(
      "SKIPPED(llama.cpp): built without llama.cpp (cmake/LatentauditLlamaCpp.cmake found none; "
      "scripts/install-deps.sh installs it)\n");
  return 0;
}
#endif
