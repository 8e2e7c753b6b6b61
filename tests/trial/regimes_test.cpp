// SPDX-License-Identifier: MIT
// The stale and conflict regimes of the organism task generator, the drift arms, the record
// fields they add (stale_answer, drift_steps, the cache_age_versions and prompt_overlap
// covariates), and each planted truth at the data level on a small design with fixed seeds:
// stale (a cache relay answers with the old value, text with the current one), conflict (a relay
// of conflicting bindings is worse than nothing) and drift (relay accuracy falls with the
// sender's fine-tuning steps).
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include "support/common.hpp"
#include "support/sanitizer.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace latentaudit;

namespace {

using latentaudit::test::models;

// key -> value of an organism token sequence of (key, value) pairs starting at `first`.
std::map<token_id, token_id> bindings(const std::vector<token_id>& t, std::size_t first) {
  std::map<token_id, token_id> m;
  for (std::size_t i = first; i + 1 < t.size(); i += 2) m[t[i]] = t[i + 1];
  return m;
}

// A task's covariate, or -1.
double cov(const trial_task& t, std::string_view name) {
  for (const auto& c : t.covariates)
    if (c.name == name) return c.value;
  return -1;
}

// The shipped drift levels (models/organism-a-drift/drift.json): steps and overlay file.
std::vector<std::pair<std::int32_t, std::string>> drift_levels() {
  const auto j = [] {
    std::ifstream in(models + "organism-a-drift/drift.json");
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse_json(ss.str());
  }();
  std::vector<std::pair<std::int32_t, std::string>> out;
  for (const auto& l : j.find("levels")->as_array())
    out.emplace_back(static_cast<std::int32_t>(l.find("steps")->as_number()), l.find("overlay")->as_string());
  return out;
}

}  // namespace

TEST_CASE("regimes: stale and conflict items have the planted structure") {
  const auto fmt = organism_format::load(models + "organism-a");
  const organism_task_options o{
      .seed = 5, .no_need_fraction = 0.25, .stale_fraction = 0.25, .conflict_fraction = 0.25};
  std::map<task_regime, int> count;
  const int items = 2000;
  for (std::uint64_t item = 0; item < static_cast<std::uint64_t>(items); ++item) {
    const auto t = make_organism_task(fmt, o, item, item % 3);
    ++count[t.regime];
    INFO("item " << item << " regime " << regime_name(t.regime));
    REQUIRE(t.document.size() == 1 + 2 * static_cast<std::size_t>(t.pairs));
    const auto doc = bindings(t.document, 1);
    REQUIRE(doc.size() == static_cast<std::size_t>(t.pairs));  // distinct keys
    CHECK(cov(t, "cache_age_versions") == (t.regime == task_regime::stale ? 1.0 : 0.0));
    const bool own = t.regime == task_regime::no_need || t.regime == task_regime::conflict;
    CHECK(cov(t, "prompt_overlap") == (own ? 1.0 : 0.0));
    if (t.regime == task_regime::stale) {
      // v1 (A's cache) and v2 (the text) bind the same keys in the same order; they differ on
      // 1 .. N/2 values, the asked pair among them; the answer is v2's, the stale answer v1's.
      REQUIRE(t.text_document.size() == t.document.size());
      std::size_t changed = 0;
      for (std::size_t i = 0; i < t.document.size(); ++i) {
        if (i % 2 == 1 || i == 0) CHECK(t.document[i] == t.text_document[i]);  // BOS and keys
        changed += t.document[i] != t.text_document[i];
      }
      CHECK(changed >= 1);
      CHECK(changed <= static_cast<std::size_t>(std::max(1, t.pairs / 2)));
      const auto v2 = bindings(t.text_document, 1);
      CHECK(t.answer == std::vector<token_id>{v2.at(t.query[1])});
      CHECK(t.stale_answer == std::vector<token_id>{doc.at(t.query[1])});
      CHECK(t.answer != t.stale_answer);
      CHECK(t.own_prompt.empty());
      CHECK(&t.relay_text() == &t.text_document);
      CHECK(t.document_prefix_pairs(2) ==
            std::vector<token_id>(t.text_document.begin(), t.text_document.begin() + 5));
    } else {
      CHECK(t.text_document.empty());
      CHECK(t.stale_answer.empty());
      CHECK(&t.relay_text() == &t.document);
    }
    if (t.regime == task_regime::conflict) {
      // B's own prompt holds the right pairs; A's document binds every one of its keys to another value.
      const auto mine = bindings(t.own_prompt, 0);
      REQUIRE(mine.size() == doc.size());
      for (const auto& [k, v] : mine) {
        REQUIRE(doc.count(k) == 1);
        CHECK(doc.at(k) != v);
      }
      CHECK(t.answer == std::vector<token_id>{mine.at(t.query[1])});
      CHECK(t.pairs <= fmt.max_pairs / 2);
    }
    if (t.regime == task_regime::need || t.regime == task_regime::no_need)
      CHECK(t.answer == std::vector<token_id>{doc.at(t.query[1])});
  }
  // Item-level shares within 4 points (binomial SD at n = 2000 is about 1 point).
  for (auto r : {task_regime::need, task_regime::no_need, task_regime::stale, task_regime::conflict})
    CHECK(std::abs(count[r] / double(items) - 0.25) < 0.04);
  // Seeds of a stale item ask about changed pairs of the same two versions.
  for (std::uint64_t item = 0; item < 200; ++item) {
    const auto a = make_organism_task(fmt, o, item, 0), b = make_organism_task(fmt, o, item, 4);
    CHECK(a.document == b.document);
    CHECK(a.text_document == b.text_document);
    CHECK(a.regime == b.regime);
  }
}

TEST_CASE("regimes: need and no_need items do not change when stale and conflict items are carved out") {
  const auto fmt = organism_format::load(models + "organism-a");
  // The audit's mix against the generator's default two-regime mix: every item that is need or
  // no_need in both is bit-identical (document, own prompt, query, answer).
  const organism_task_options old_mix{.seed = 1, .no_need_fraction = 0.5};
  const organism_task_options new_mix{
      .seed = 1, .no_need_fraction = 0.3, .stale_fraction = 0.1, .conflict_fraction = 0.1};
  int same = 0;
  for (std::uint64_t item = 0; item < 400; ++item)
    for (std::uint64_t s = 0; s < 3; ++s) {
      const auto a = make_organism_task(fmt, old_mix, item, s), b = make_organism_task(fmt, new_mix, item, s);
      if (b.regime == task_regime::need || b.regime == task_regime::no_need) {
        CHECK(a.regime == b.regime);  // the regimes are carved out of former no_need items only
        CHECK(a.document == b.document);
        CHECK(a.own_prompt == b.own_prompt);
        CHECK(a.query == b.query);
        CHECK(a.answer == b.answer);
        ++same;
      } else {
        CHECK(a.regime == task_regime::no_need);
      }
    }
  CHECK(same > 900);
  // Options: validated with the option's name; to_json carries every field.
  CHECK_THROWS_WITH(
      make_organism_task(fmt, {.no_need_fraction = 0.6, .stale_fraction = 0.3, .conflict_fraction = 0.2}, 0,
                         0),
      Catch::Contains("no_need_fraction + stale_fraction + conflict_fraction"));
  CHECK_THROWS_WITH(make_organism_task(fmt, {.stale_fraction = -0.1}, 0, 0),
                    Catch::Contains("stale_fraction"));
  CHECK_THROWS_WITH(make_organism_task(fmt, {.conflict_fraction = 1.5}, 0, 0),
                    Catch::Contains("conflict_fraction"));
  const auto j = new_mix.to_json();
  CHECK(j.find("stale_fraction")->as_number() == 0.1);
  CHECK(j.find("conflict_fraction")->as_number() == 0.1);
  CHECK(j.find("no_need_fraction")->as_number() == 0.3);
  CHECK(j.find("seed")->as_number() == 1);
}

TEST_CASE("regimes: records carry stale_answer and drift_steps, and the reader validates them") {
  trial_record r{.item = 3, .seed = 1, .arm = "kv_full", .arm_kind = "kv_full", .regime = "stale"};
  r.stale_answer = true;
  r.covariates = {{"cache_age_versions", 1}, {"prompt_overlap", 0}};
  auto back = record_from_json(parse_json(record_to_line(r)));
  CHECK(back.stale_answer == std::optional<bool>(true));
  CHECK(!back.drift_steps);
  CHECK(back.covariate_value("cache_age_versions") == 1.0);
  CHECK(record_to_line(back) == record_to_line(r));
  r.stale_answer = false;
  CHECK(record_from_json(parse_json(record_to_line(r))).stale_answer == std::optional<bool>(false));
  trial_record d{.item = 0, .seed = 0, .arm = "kv_drift_20", .arm_kind = "drifted", .regime = "need"};
  d.drift_steps = 20;
  back = record_from_json(parse_json(record_to_line(d)));
  CHECK(back.drift_steps == std::optional<double>(20));
  CHECK(!back.stale_answer);
  CHECK(record_to_line(d).find("\"stale_answer\":null") != std::string::npos);
  // Writer and reader refuse a stale answer outside the stale regime and a bad drift level.
  d.stale_answer = true;
  CHECK_THROWS_WITH(record_to_line(d), Catch::Contains("stale_answer"));
  d.stale_answer.reset();
  d.drift_steps = -1;
  CHECK_THROWS_WITH(record_to_line(d), Catch::Contains("drift_steps"));
  const std::string base = R"({"item":0,"seed":0,"arm":"a","correct":true,)";
  CHECK_THROWS_WITH(record_from_json(parse_json(base + R"("regime":"need","stale_answer":true})")),
                    Catch::Contains("stale_answer"));
  CHECK_THROWS_WITH(record_from_json(parse_json(base + R"("regime":"stale","stale_answer":1})")),
                    Catch::Contains("stale_answer"));
  CHECK_THROWS_WITH(record_from_json(parse_json(base + R"("drift_steps":2.5})")),
                    Catch::Contains("drift_steps"));
  CHECK_THROWS_WITH(record_from_json(parse_json(base + R"("drift_steps":-3})")),
                    Catch::Contains("drift_steps"));
  CHECK(record_from_json(parse_json(base + R"("regime":"stale","stale_answer":null})")).stale_answer ==
        std::nullopt);
}

TEST_CASE("regimes: drift arms parse, and the driver needs their sender engines") {
  const auto a = parse_arm("kv_drift_40");
  CHECK(a.kind == arm_kind::drifted);
  CHECK(a.label == "kv_drift_40");
  CHECK(a.sender == "drift_40");
  CHECK(a.drift_steps == std::optional<std::int32_t>(40));
  CHECK(a.relays_kv());
  CHECK(arm_kind_name(a.kind) == "drifted");
  CHECK_THROWS_WITH(parse_arm("kv_drift_x"), Catch::Contains("kv_drift_<steps>"));
  CHECK_THROWS_AS(parse_arm("kv_drift_40@rebase"), invalid_argument);
  CHECK_THROWS_AS(kv_drift_arm(-1), invalid_argument);
  auto engine = reference_cpu_engine::load(models + "organism-a");
  const auto fmt = organism_format::load(models + "organism-a");
  trial_driver<reference_cpu_engine> drv(engine);
  const trial_design d{.seed = 1, .items = 2, .seeds = 1, .arms = {no_comm_arm(), kv_drift_arm(40)}};
  CHECK_THROWS_WITH(
      drv.run(
          d, [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, {}, i, s); },
          [](const trial_record&) {}),
      Catch::Contains("drift_40"));
  CHECK_THROWS_AS(drv.add_sender("", engine), invalid_argument);
}

TEST_CASE(
    "regimes: drift overlays load on the base model with another fingerprint, and bad overlays are refused") {
  const auto base = reference_cpu_engine::load(models + "organism-a");
  const auto levels = drift_levels();
  REQUIRE(levels.size() >= 3);
  std::set<std::uint64_t> hashes{base.info().fingerprint.weights_hash};
  for (const auto& [steps, file] : levels) {
    const auto e =
        reference_cpu_engine::load_with_overlay(models + "organism-a", models + "organism-a-drift/" + file);
    CHECK(hashes.insert(e.info().fingerprint.weights_hash).second);  // a fingerprint of its own
    CHECK(e.info().fingerprint.n_kv_heads == base.info().fingerprint.n_kv_heads);
    CHECK(e.info().fingerprint.head_dim_k == base.info().fingerprint.head_dim_k);
  }
  const auto dir = std::filesystem::temp_directory_path() / "latentaudit_regimes_overlay";
  std::filesystem::create_directories(dir);
  write_safetensors(dir / "extra.safetensors",
                    {{.name = "model.extra.weight", .shape = {2}, .values = {1, 2}}});
  CHECK_THROWS_WITH(reference_cpu_engine::load_with_overlay(models + "organism-a", dir / "extra.safetensors"),
                    Catch::Contains("model.extra.weight"));
  write_safetensors(dir / "shape.safetensors",
                    {{.name = "model.norm.weight", .shape = {2}, .values = {1, 2}}});
  CHECK_THROWS_AS(reference_cpu_engine::load_with_overlay(models + "organism-a", dir / "shape.safetensors"),
                  shape_mismatch);
  std::filesystem::remove_all(dir);
}

TEST_CASE("regimes: the planted truths hold at the data level (stale, conflict, drift)") {
  auto engine = reference_cpu_engine::load(models + "organism-a");
  const auto fmt = organism_format::load(models + "organism-a");
  std::vector<reference_cpu_engine> senders;
  const auto levels = drift_levels();
  senders.reserve(levels.size());
  // 20 items under the sanitizer: the per-record checks run on every record, the accuracy
  // contrasts need the full sample (support/sanitizer.hpp).
  trial_design d{.seed = 21,
                 .items = test::full_or_sanitized<std::uint64_t>(80, 20),
                 .seeds = 2,
                 .arms = {no_comm_arm(), text_full_arm(), kv_full_arm()}};
  for (const auto& [steps, file] : levels) {
    senders.push_back(
        reference_cpu_engine::load_with_overlay(models + "organism-a", models + "organism-a-drift/" + file));
    d.arms.push_back(kv_drift_arm(steps));
  }
  trial_driver<reference_cpu_engine> drv(engine);
  for (std::size_t i = 0; i < levels.size(); ++i)
    drv.add_sender("drift_" + std::to_string(levels[i].first), senders[i]);
  const organism_task_options to{
      .seed = d.seed, .no_need_fraction = 0.2, .stale_fraction = 0.3, .conflict_fraction = 0.3};
  std::vector<trial_record> recs;
  drv.run(
      d, [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); },
      [&](const trial_record& r) { recs.push_back(r); });
  REQUIRE(recs.size() == d.trials());
  struct tally {
    double correct = 0, n = 0, wrong_stale = 0, wrong = 0;
    double acc() const { return n > 0 ? correct / n : 0.0; }
  };
  std::map<std::string, tally> t;  // "<regime>/<arm>"
  for (const auto& r : recs) {
    auto& x = t[r.regime + "/" + r.arm];
    x.correct += r.correct;
    x.n += 1;
    CHECK(r.stale_answer.has_value() == (r.regime == "stale"));
    if (r.regime == "stale" && !r.correct) {
      x.wrong += 1;
      x.wrong_stale += *r.stale_answer;
    }
    if (r.arm_kind == "drifted") {
      CHECK(r.drift_steps.has_value());
      CHECK(r.sender_fingerprint != r.receiver_fingerprint);
    } else {
      CHECK(!r.drift_steps);
    }
  }
  for (const auto& [k, x] : t) INFO(k << ": " << x.correct << " / " << x.n);
  if (!test::full_sample) return;
  // stale: the cache relay is far worse than the current text, and its wrong answers are stale.
  REQUIRE(t["stale/kv_full"].n >= 30);
  CHECK(t["stale/text_full"].acc() - t["stale/kv_full"].acc() > 0.6);
  CHECK(t["stale/kv_full"].wrong_stale >= 0.8 * t["stale/kv_full"].wrong);
  CHECK(t["stale/text_full"].wrong_stale == 0);
  // conflict: relaying the conflicting document (cache or text) is worse than nothing.
  REQUIRE(t["conflict/kv_full"].n >= 30);
  CHECK(t["conflict/no_comm"].acc() - t["conflict/kv_full"].acc() > 0.4);
  CHECK(t["conflict/no_comm"].acc() - t["conflict/text_full"].acc() > 0.4);
  // drift: on need items relay accuracy falls with the sender's fine-tuning steps (non-increasing up
  // to 5 points of sampling noise), and the most drifted level is far below the same-model relay.
  REQUIRE(t["need/kv_full"].n >= 30);
  double prev = t["need/kv_full"].acc();
  for (const auto& [steps, file] : levels) {
    const double a = t["need/kv_drift_" + std::to_string(steps)].acc();
    CHECK(a <= prev + 0.05);
    prev = std::min(prev, a);
  }
  CHECK(t["need/kv_full"].acc() - t["need/kv_drift_" + std::to_string(levels.back().first)].acc() > 0.5);
  // no_need: relay changes nothing (a control for the conflict contrast).
  CHECK(std::abs(t["no_need/kv_full"].acc() - t["no_need/no_comm"].acc()) < 0.1);
}
