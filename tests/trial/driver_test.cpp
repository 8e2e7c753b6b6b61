// SPDX-License-Identifier: MIT
// The trial driver on the model organisms: relay semantics per arm, determinism (same records at
// any execution order and after resumption), byte accounting on the wire, and bad designs.
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/kv/kv_map.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include "support/common.hpp"
#include "support/organism_records.hpp"
#include "support/sanitizer.hpp"

#include <map>

using namespace latentaudit;

namespace {

using latentaudit::test::models;

struct fixture {
  reference_cpu_engine a = reference_cpu_engine::load(models + "organism-a");
  reference_cpu_engine b = reference_cpu_engine::load(models + "organism-b");
  organism_format fmt = organism_format::load(models + "organism-a");
  std::vector<trial_record> run(const trial_design& d, const std::set<trial_key>& done = {}) {
    trial_driver<reference_cpu_engine> drv(a, &b);
    std::vector<trial_record> out;
    const organism_task_options to{.seed = d.seed};
    drv.run(
        d, [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); },
        [&](const trial_record& r) { out.push_back(r); }, done);
    return out;
  }
};

// A record without its timings (which differ run to run).
std::map<trial_key, std::string> by_key(const std::vector<trial_record>& rs) {
  std::map<trial_key, std::string> m;
  for (const auto& r : rs) m[{r.item, r.seed, r.arm}] = testing::timeless_line(r);
  return m;
}

}  // namespace

TEST_CASE("driver: the planted relay semantics of the organism, arm by arm") {
  fixture f;
  // 15 items under the sanitizer: the accuracy rates need the full sample, the per-unit semantics
  // below are exact and checked on every unit (support/sanitizer.hpp).
  trial_design d{.seed = 11,
                 .items = test::full_or_sanitized<std::uint64_t>(60, 15),
                 .seeds = 2,
                 .arms = default_arms(/*with_partner=*/true)};
  const auto recs = f.run(d);
  REQUIRE(recs.size() == d.trials());
  std::map<std::string, std::pair<double, double>> acc;  // arm/regime -> (correct, n)
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::map<std::string, const trial_record*>> units;
  for (const auto& r : recs) {
    auto& x = acc[r.arm + "/" + r.regime];
    x.first += r.correct;
    x.second += 1;
    units[{r.item, r.seed}][r.arm] = &r;
  }
  auto rate = [&](const std::string& k) { return acc.at(k).first / acc.at(k).second; };
  // Need regime: relay of the full cache answers exactly as reading the text; nothing → chance.
  if (test::full_sample) {
    CHECK(rate("kv_full/need") >= 0.97);
    CHECK(rate("text_full/need") >= 0.97);
    CHECK(rate("no_comm/need") <= 0.15);
    for (const char* placebo : {"deranged/need", "zeroed/need", "random/need", "cross_model/need"})
      CHECK(rate(placebo) <= 0.2);
    // No-need regime: B has the pairs; relay changes nothing.
    CHECK(rate("no_comm/no_need") >= 0.97);
    CHECK(rate("kv_full/no_need") >= 0.97);
  }
  for (const auto& [unit, arms] : units) {
    const auto* kv = arms.at("kv_full");
    const auto* text = arms.at("text_full");
    // Same model, same context: KV relay = reading the document (logits to float rounding).
    CHECK(kv->correct == text->correct);
    REQUIRE(kv->answer_logprob.has_value());
    REQUIRE(text->answer_logprob.has_value());
    CHECK(*kv->answer_logprob == Approx(*text->answer_logprob).margin(1e-4));
    REQUIRE(kv->hidden_cosine.has_value());
    CHECK(*kv->hidden_cosine > 0.99999);
    CHECK(*kv->next_token_kl < 1e-6);
    // Bytes on one framing: the text relay is far smaller than the cache; quantized caches are smaller.
    CHECK(text->bytes < kv->bytes);
    CHECK(arms.at("kv_int8")->bytes < kv->bytes);
    CHECK(arms.at("kv_int4")->bytes < arms.at("kv_int8")->bytes);
    CHECK(arms.at("kv_layers_0")->bytes < kv->bytes);
    CHECK(arms.at("no_comm")->bytes == 0);
    CHECK_FALSE(arms.at("no_comm")->attention_mass.has_value());
    CHECK(kv->relay_tokens == static_cast<std::int64_t>(kv->covariate_value("doc_tokens").value()));
    // Sender / receiver fingerprints: equal except across models.
    CHECK(kv->sender_fingerprint == kv->receiver_fingerprint);
    CHECK(arms.at("cross_model")->sender_fingerprint != arms.at("cross_model")->receiver_fingerprint);
    CHECK(arms.at("kv_noise_0.5")->noise_sigma == 0.5);
    CHECK(arms.at("kv_full")->latency.transfer_s == Approx(d.link.transfer_seconds(kv->bytes)));
  }
}

TEST_CASE("driver: records do not depend on execution order, and a resumed run completes the same set") {
  fixture f;
  trial_design d{.seed = 5, .items = 6, .seeds = 2};
  d.arms = {
      parse_arm("no_comm"),  parse_arm("kv_full"),       parse_arm("kv_noise_1"),         parse_arm("random"),
      parse_arm("deranged"), parse_arm("text_budget_2"), parse_arm("kv_last_half@rebase")};
  const auto ordered = by_key(f.run(d));
  trial_design shuffled = d;
  shuffled.randomize_order = true;
  d.randomize_order = false;
  CHECK(by_key(f.run(d)) == ordered);
  CHECK(by_key(f.run(shuffled)) == ordered);
  // Resume: pretend every third trial is done; the rest are produced, none twice.
  std::set<trial_key> done;
  std::size_t i = 0;
  for (const auto& [k, line] : ordered)
    if (i++ % 3 == 0) done.insert(k);
  const auto rest = f.run(d, done);
  CHECK(rest.size() == ordered.size() - done.size());
  for (const auto& r : rest) {
    CHECK(done.count({r.item, r.seed, r.arm}) == 0);
    CHECK(ordered.at({r.item, r.seed, r.arm}) == testing::timeless_line(r));
  }
}

TEST_CASE("driver: bad designs and sources are refused with named arguments") {
  fixture f;
  trial_driver<reference_cpu_engine> solo(f.a);
  const organism_task_options to{};
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(f.fmt, to, i, s); };
  auto sink = [](const trial_record&) {};
  trial_design d{.items = 2, .seeds = 1};
  d.arms = {parse_arm("cross_model")};
  CHECK_THROWS_WITH(solo.run(d, tasks, sink),
                    Catch::Contains("trial_driver::run") && Catch::Contains("partner"));
  d.arms = {parse_arm("kv_full"), parse_arm("kv_full")};
  CHECK_THROWS_WITH(solo.run(d, tasks, sink), Catch::Contains("unique"));
  d.arms = {parse_arm("deranged")};
  d.items = 1;
  CHECK_THROWS_AS(solo.run(d, tasks, sink), invalid_argument);
  d.items = 0;
  CHECK_THROWS_WITH(solo.run(d, tasks, sink), Catch::Contains("items"));
  d = trial_design{.items = 1, .seeds = 1};
  d.arms = {parse_arm("kv_full")};
  CHECK_THROWS_WITH(solo.run(
                        d, [](std::uint64_t, std::uint64_t) { return trial_task{}; }, sink),
                    Catch::Contains("tasks"));
  CHECK_THROWS_WITH(solo.run(d, {}, sink), Catch::Contains("tasks"));
}

TEST_CASE("arms: parse_arm accepts the documented forms and names what it accepts otherwise") {
  CHECK(parse_arm("text_budget_3").budget == 3);
  CHECK(parse_arm("text_budget_3").kind == arm_kind::text_budget);
  CHECK(parse_arm("kv_noise_0.75").noise_sigma == 0.75);
  CHECK(parse_arm("kv_layers_0_1").policy.layers == std::vector<layer_index>{0, 1});
  CHECK(parse_arm("kv_int4").wire_quantize->scheme == quant_scheme::int4);
  CHECK(parse_arm("kv_sinks_2_8").kind == arm_kind::kv_policy);
  for (const char* bad : {"", "kv", "kv_noise_", "kv_noise_-1", "kv_noise_nan", "text_budget_x", "kv_layers_",
                          "kv_sinks_3", "Kv_full"})
    CHECK_THROWS_WITH(parse_arm(bad), Catch::Contains("parse_arm") && Catch::Contains("name"));
  const auto rebased = parse_arm("kv_last_half@rebase");
  CHECK(rebased.kind == arm_kind::kv_policy);
  CHECK(rebased.policy.mode == position_mode::rebase_contiguous);
  CHECK(rebased.label == "kv_last_half@rebase");
  CHECK(parse_arm("kv_full@append").policy.mode == position_mode::append_after);
  CHECK_THROWS_WITH(parse_arm("no_comm@rebase"), Catch::Contains("kv_full and kv_*"));
  CHECK_THROWS_WITH(parse_arm("kv_full@sideways"), Catch::Contains("preserve, rebase or append"));
  std::set<std::string> labels;
  for (const auto& a : default_arms()) CHECK(labels.insert(a.label).second);
}

TEST_CASE("links: presets, custom links and errors") {
  CHECK(find_link("nvlink4").bandwidth_bytes_s == 400e9);
  const auto c = find_link("custom:10:3");
  CHECK(c.bandwidth_bytes_s == 10e9);
  CHECK(c.alpha_s == Approx(3e-6));
  CHECK(c.transfer_seconds(0) == 0.0);
  CHECK(c.transfer_seconds(10'000) == Approx(1e-6 + 3e-6));
  for (const char* bad : {"pcie6", "custom:", "custom:0:1", "custom:1:-1", "custom:1", "custom:x:1"})
    CHECK_THROWS_WITH(find_link(bad), Catch::Contains("find_link"));
}

TEST_CASE("tasks: the organism generator is deterministic, regime-consistent and validated") {
  const auto fmt = organism_format::load(models + "organism-a");
  const organism_task_options o{.seed = 3};
  for (std::uint64_t item = 0; item < 200; ++item) {
    const auto t = make_organism_task(fmt, o, item, 1);
    const auto u = make_organism_task(fmt, o, item, 1);
    CHECK(t.document == u.document);
    CHECK(t.query == u.query);
    REQUIRE(t.document.size() == 1 + 2 * static_cast<std::size_t>(t.pairs));
    CHECK(t.document[0] == fmt.bos);
    CHECK(t.query[0] == fmt.sep);
    // The answer is the value after the queried key in the document.
    const auto it = std::find(t.document.begin() + 1, t.document.end(), t.query[1]);
    REQUIRE(it != t.document.end());
    CHECK(*(it + 1) == t.answer[0]);
    if (t.regime == task_regime::need) {
      CHECK(t.own_prompt.empty());
    } else {
      CHECK(t.pairs <= fmt.max_pairs / 2);
      auto a = std::vector<token_id>(t.document.begin() + 1, t.document.end()), b = t.own_prompt;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      CHECK(a == b);
    }
  }
  // Seeds of one item ask about the same document.
  CHECK(make_organism_task(fmt, o, 7, 0).document == make_organism_task(fmt, o, 7, 5).document);
  CHECK_THROWS_WITH(make_organism_task(fmt, organism_task_options{.min_pairs = 0}, 0, 0),
                    Catch::Contains("min_pairs"));
  CHECK_THROWS_WITH(make_organism_task(fmt, organism_task_options{.max_pairs = 17}, 0, 0),
                    Catch::Contains("max_pairs"));
  CHECK_THROWS_WITH(make_organism_task(fmt, organism_task_options{.no_need_fraction = 2}, 0, 0),
                    Catch::Contains("no_need_fraction"));
  CHECK_THROWS_AS(organism_format::from_json(parse_json(R"({"vocab_size": 10})")), corrupt_data);
  CHECK_THROWS_WITH(organism_format::from_json(
                        parse_json(R"({"vocab_size": 68, "bos": 0, "sep": 1, "key_first": 4, "key_count": 32,
      "value_first": 20, "value_count": 32, "max_pairs": 16})")),
                    Catch::Contains("overlap"));
  CHECK_THROWS_AS(organism_format::load("/nonexistent"), corrupt_data);
}

TEST_CASE("driver: timing repeats re-run the subsampled units' trials without changing their outcome") {
  fixture f;
  trial_design d{.seed = 5, .items = 40, .seeds = 2};
  d.arms = {parse_arm("no_comm"), parse_arm("text_full"), parse_arm("kv_full"), parse_arm("deranged")};
  const auto plain = f.run(d);
  d.timing_repeats = 2;
  d.timing_repeat_fraction = 0.25;
  const auto rep = f.run(d);
  REQUIRE(rep.size() == plain.size());
  const auto base = by_key(plain);
  std::size_t repeated = 0;
  for (const auto& r : rep) {
    const bool chosen = d.timing_repeat_unit(r.item, r.seed);
    CHECK(r.latency_repeats_s.size() == (chosen ? 2u : 0u));
    CHECK(r.repeat_mismatches == 0);  // the reference engine is deterministic
    for (double x : r.latency_repeats_s) CHECK(x > 0);
    // Outcomes are the first run's, and equal those of the run without repeats.
    trial_record t = r;
    t.latency_repeats_s.clear();
    t.repeat_mismatches = 0;
    CHECK(testing::timeless_line(t) == base.at({r.item, r.seed, r.arm}));
    repeated += chosen ? 1 : 0;
  }
  // The subsample: 25 % of 80 units × 4 arms, within a loose binomial band.
  CHECK(repeated > 4 * 8);
  CHECK(repeated < 4 * 32);
  // The choice depends on the design only (counter-based stream), not on the execution order.
  trial_design other = d;
  other.randomize_order = false;
  for (std::uint64_t i = 0; i < d.items; ++i)
    for (std::uint64_t s = 0; s < d.seeds; ++s)
      CHECK(other.timing_repeat_unit(i, s) == d.timing_repeat_unit(i, s));
  // The design identity records the option (0 without repeats).
  CHECK(d.to_json().at("timing_repeats").as_number() == static_cast<double>(d.timing_repeats));
  CHECK(trial_design{}.to_json().at("timing_repeats").as_number() == 0);
  CHECK_THROWS_AS((trial_design{.timing_repeat_fraction = 1.5}.validate()), invalid_argument);
}

TEST_CASE("records: latency_repeats_s round-trips and is absent from records without repeats") {
  trial_record r{.item = 3, .seed = 1, .arm = "kv_full", .correct = true};
  r.latency.b_prefill_s = 1e-4;
  CHECK(record_to_line(r).find("latency_repeats_s") == std::string::npos);
  CHECK(record_from_json(parse_json(record_to_line(r))).latency_repeats_s.empty());
  r.latency_repeats_s = {1.1e-4, 0.9e-4, 1.3e-4};
  r.repeat_mismatches = 1;
  const auto back = record_from_json(parse_json(record_to_line(r)));
  CHECK(back.latency_repeats_s == r.latency_repeats_s);
  CHECK(back.repeat_mismatches == 1);
  // Older readers' records (no field) and bad values.
  const auto old = parse_json(R"({"item":0,"seed":0,"arm":"a","correct":1})");
  CHECK(record_from_json(old).latency_repeats_s.empty());
  const auto bad = parse_json(R"({"item":0,"seed":0,"arm":"a","correct":1,"latency_repeats_s":[-1]})");
  CHECK_THROWS_AS(record_from_json(bad), corrupt_data);
  r.latency_repeats_s = {std::nan("")};
  CHECK_THROWS_AS(record_to_line(r), invalid_argument);
}

namespace {
// A map from organism-b's cache to organism-a's, fitted on `n` documents of a stream apart from
// the designs' items (seed 77).
kv_map fit_b_to_a(fixture& f, std::uint64_t n) {
  std::vector<kv_block> src, tgt;
  const organism_task_options to{.seed = 77};
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto t = make_organism_task(f.fmt, to, i, 0);
    for (auto* e : {&f.b, &f.a}) {
      const auto s = e->open_seq();
      (void)e->prefill(s, t.document, 0, {});
      (e == &f.b ? src : tgt)
          .push_back(e->export_kv(s, {0, static_cast<std::int64_t>(t.document.size())},
                                  {0, e->info().fingerprint.n_layers}));
      e->close_seq(s);
    }
  }
  return fit_kv_map(src, tgt);
}
}  // namespace

TEST_CASE("driver: kv_mapped relays the partner's cache through its map, checked at import") {
  fixture f;
  const auto m = std::make_shared<const kv_map>(fit_b_to_a(f, 60));
  const relay_map rm{
      .id = kv_map_id(*m), .source = m->source, .target = m->target, .apply = [m](const kv_block& b) {
        return apply_kv_map(*m, b);
      }};
  trial_design d{.seed = 5, .items = 24, .seeds = 1};
  d.arms = {no_comm_arm(), cross_model_arm(), kv_mapped_arm()};
  const organism_task_options to{.seed = d.seed};
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(f.fmt, to, i, s); };
  std::vector<trial_record> out;
  auto sink = [&](const trial_record& r) { out.push_back(r); };
  {
    trial_driver<reference_cpu_engine> drv(f.a, &f.b);
    // without its map the arm is refused before any trial
    CHECK_THROWS_WITH(drv.run(d, tasks, sink),
                      Catch::Contains("kv_mapped") && Catch::Contains("no cache map"));
    CHECK(out.empty());
    // a map the other way round (target organism-b) is refused naming both models
    relay_map wrong = rm;
    std::swap(wrong.source, wrong.target);
    drv.add_map(std::string(partner_sender), wrong);
    CHECK_THROWS_WITH(drv.run(d, tasks, sink),
                      Catch::Contains("cache map") && Catch::Contains("not the sender"));
    drv.add_map(std::string(partner_sender), rm);
    drv.run(d, tasks, sink);
  }
  double mapped = 0, raw = 0, n = 0;
  for (const auto& r : out) {
    if (r.arm == "kv_mapped") {
      CHECK(r.map == rm.id);
      CHECK(r.arm_kind == "kv_mapped");
      CHECK(r.sender_fingerprint == fingerprint_text(f.b.info().fingerprint));
      CHECK(r.receiver_fingerprint == fingerprint_text(f.a.info().fingerprint));
      CHECK(r.relay_tokens > 0);
      REQUIRE(r.map_cosine.has_value());  // the screen against organism-a's own cache of the document
      CHECK(*r.map_cosine > 0.0);
      CHECK(*r.map_cosine <= 1.0);
    } else {
      CHECK(r.map.empty());
      CHECK(!r.map_cosine.has_value());
    }
    if (r.regime != "need") continue;
    if (r.arm == "kv_mapped") mapped += r.correct ? 1 : 0, n += 1;
    if (r.arm == "cross_model") raw += r.correct ? 1 : 0;
  }
  REQUIRE(n > 5);
  // the planted organisms: organism-b's raw cache tells organism-a nothing; mapped, most of it
  CHECK(raw / n < 0.2);
  CHECK(mapped / n > 0.5);
  // the record round-trips with its map
  const auto line = record_to_line(out.back());
  CHECK(record_from_json(parse_json(line)).map == out.back().map);
}
