// SPDX-License-Identifier: MIT
// Tests for report/cost.hpp on synthetic records with planted truths
// (tests/support/synthetic_records.hpp, generator seeds printed): the relay saves ~0.5 ms of
// receiver latency per request at 512 B/token on every preset; at 512 kB/token it pays only
// above ~17 GB/s. The closed-form break-even bandwidth and extra alpha are checked against a
// direct re-evaluation on a custom link (|mean saved| < 1e-12 s there, sign change at ±1 %).
// The relay gate must match always-relay's accuracy within 0.05 while moving fewer bytes.
#include <latentaudit/report/cost.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/synthetic_records.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;
using latentaudit::test::synthetic_records;
using latentaudit::test::synthetic_settings;
using latentaudit::test::without_arm;

namespace {

const finding& find(const std::vector<finding>& fs, const std::string& id) {
  for (const auto& f : fs)
    if (f.id == id) return f;
  FAIL("no finding " << id);
  return fs.front();
}

/// Mean saved latency on one link, evaluated directly through cost_benefit_analysis.
double saved_on(const std::vector<trial_record>& records, const link_preset& l) {
  const auto r = cost_benefit_analysis(records, {.links = {l}, .bootstrap_replicates = 100});
  REQUIRE(r.links.size() == 1);
  return r.links[0].saved_s.estimate;
}

}  // namespace

TEST_CASE("cost: relay pays on every preset at 512 B/token", "[report][cost]") {
  const std::uint64_t seed = GENERATE(1, 2, 3);
  INFO("generator seed " << seed << ", 150 items x 3 seeds");
  const auto records = synthetic_records({.seed = seed});
  const auto r = cost_benefit_analysis(records);
  CHECK(r.missing.empty());
  REQUIRE(r.links.size() == 5);
  REQUIRE(r.findings.size() == 5);
  for (const char* name : {"pcie4", "pcie5", "nvlink4", "rdma100", "rdma400"}) {
    const auto& f = find(r.findings, std::string("cost.relay_pays_on_") + name);
    INFO(f.id << ": " << f.detail);
    CHECK(f.answer == verdict::yes);
    CHECK(f.n == 225);
    // Planted saving: 3e-5 s per document token (mean 1 + 2·E[N] ≈ 19) minus ~4e-5 s of KV overhead.
    CHECK(f.estimate > 3e-4);
    CHECK(f.estimate < 8e-4);
    CHECK(f.ci_low > 0);
  }
  for (const auto& c : r.links) {
    CHECK(c.region == break_even_region::above);
    REQUIRE(c.break_even_bandwidth_bytes_s.has_value());
    CHECK(*c.break_even_bandwidth_bytes_s < 1e9);  // ~9.6 kB / 0.5 ms ≈ 20 MB/s
    REQUIRE(c.break_even_extra_alpha_s.has_value());
    CHECK(c.extra_bytes.estimate > 5000);
    CHECK(std::abs(c.accuracy_difference.estimate) < 0.05);
    // Default SLO: the text arm's median receiver latency on the link.
    CHECK(std::abs(c.slo_met_text - 0.5) < 0.01);
    CHECK(c.slo_met_relay > c.slo_met_text);
  }
}

TEST_CASE("cost: break-even closed form agrees with direct evaluation", "[report][cost]") {
  const double per_token = GENERATE(512.0, 512e3);
  INFO("generator seed 5, kv bytes per token " << per_token);
  const auto records = synthetic_records({.seed = 5, .kv_bytes_per_token = per_token});
  const link_preset base{"probe", 25e9, 10e-6};
  const auto r = cost_benefit_analysis(records, {.links = {base}, .bootstrap_replicates = 100});
  REQUIRE(r.links.size() == 1);
  const auto& c = r.links[0];
  REQUIRE(c.region == break_even_region::above);
  const double beta = *c.break_even_bandwidth_bytes_s;
  INFO("break-even bandwidth " << beta);
  CHECK(std::abs(saved_on(records, {"at", beta, base.alpha_s})) < 1e-12);
  CHECK(saved_on(records, {"above", beta * 1.01, base.alpha_s}) > 0);
  CHECK(saved_on(records, {"below", beta * 0.99, base.alpha_s}) < 0);
  // The saving at the break-even bandwidth does not depend on the shared alpha (both arms relay).
  CHECK(std::abs(saved_on(records, {"at2", beta, 1e-3})) < 1e-12);
  if (c.break_even_extra_alpha_s) {
    // An extra fixed cost x per relay: add it to the relay records' transfer and re-evaluate.
    auto shifted = records;
    for (auto& rec : shifted)
      if (rec.arm == "kv_full") rec.latency.export_s += *c.break_even_extra_alpha_s;
    CHECK(std::abs(saved_on(shifted, base)) < 1e-12);
  }
}

TEST_CASE("cost: heavy caches pay only on fast links", "[report][cost]") {
  // 512 kB per token: ~10 MB per relay; planted break-even ≈ 5.12e5 / 3e-5 ≈ 17 GB/s.
  const auto records = synthetic_records({.seed = 11, .kv_bytes_per_token = 512e3});
  INFO("generator seed 11, 512 kB/token");
  const auto r = cost_benefit_analysis(records);
  REQUIRE(r.links.size() == 5);
  for (const auto& c : r.links) {
    INFO(c.link.name << ": " << find(r.findings, cost_finding_id(c.link.name)).detail);
    REQUIRE(c.break_even_bandwidth_bytes_s.has_value());
    const double beta = *c.break_even_bandwidth_bytes_s;
    CHECK(beta > 10e9);
    CHECK(beta < 25e9);
    if (c.link.bandwidth_bytes_s > 1.2 * beta) CHECK(c.pays == verdict::yes);
    if (c.link.bandwidth_bytes_s < 0.8 * beta) CHECK(c.pays == verdict::no);
    CHECK(c.break_even_extra_alpha_s.has_value() == (c.saved_s.estimate > 0));
  }
  CHECK(find(r.findings, "cost.relay_pays_on_nvlink4").answer == verdict::yes);
  CHECK(find(r.findings, "cost.relay_pays_on_rdma100").answer == verdict::no);
}

TEST_CASE("cost: an inferior relay does not pay", "[report][cost]") {
  auto records = synthetic_records({.items = 60, .seed = 4});
  for (auto& rec : records)
    if (rec.arm == "kv_full") rec.correct = false;
  const auto r = cost_benefit_analysis(records);
  for (const auto& f : r.findings) {
    INFO(f.id << ": " << f.detail);
    CHECK(f.answer == verdict::no);
  }
}

TEST_CASE("cost: custom links named in the records are evaluated", "[report][cost]") {
  const auto records = synthetic_records({.seed = 2, .link = "custom:30:5"});
  const auto r = cost_benefit_analysis(records);
  REQUIRE(r.links.size() == 6);
  CHECK(r.links.back().link.bandwidth_bytes_s == 30e9);
  CHECK(find(r.findings, "cost.relay_pays_on_custom_30_5").answer == verdict::yes);
  CHECK(cost_finding_id("custom:30:5") == "cost.relay_pays_on_custom_30_5");
}

TEST_CASE("cost: an explicit SLO", "[report][cost]") {
  const auto records = synthetic_records({.items = 40, .seed = 2});
  const auto r = cost_benefit_analysis(records, {.latency_slo_s = 1.0});
  for (const auto& c : r.links) {
    CHECK(c.latency_slo_s == 1.0);
    CHECK(c.slo_met_relay == 1.0);
    CHECK(c.slo_met_text == 1.0);
  }
}

TEST_CASE("cost: break-even regions", "[report][cost]") {
  using detail::solve_break_even;
  CHECK(solve_break_even(1e-3, 1e4).region == break_even_region::above);
  CHECK(*solve_break_even(1e-3, 1e4).bandwidth == Approx(1e7));
  CHECK(solve_break_even(-1e-3, 1e4).region == break_even_region::never);
  CHECK_FALSE(solve_break_even(-1e-3, 1e4).bandwidth.has_value());
  CHECK(solve_break_even(1e-3, -1e4).region == break_even_region::always);
  CHECK(solve_break_even(-1e-3, -1e4).region == break_even_region::below);
  CHECK(*solve_break_even(-1e-3, -1e4).bandwidth == Approx(1e7));
  CHECK(solve_break_even(1e-3, 0).region == break_even_region::always);
  CHECK(solve_break_even(0, 0).region == break_even_region::never);
  CHECK(std::string(break_even_region_name(break_even_region::below)) == "below");
}

TEST_CASE("cost: missing arms and regimes give inconclusive findings", "[report][cost]") {
  const auto records = synthetic_records({.items = 30, .seed = 6});
  SECTION("no text_full") {
    const auto r = cost_benefit_analysis(without_arm(records, "text_full"));
    REQUIRE(r.findings.size() == 5);
    for (const auto& f : r.findings) {
      CHECK(f.answer == verdict::inconclusive);
      CHECK(f.n == 0);
      CHECK_THAT(f.detail, Contains("text_full"));
    }
  }
  SECTION("no need regime") {
    auto stripped = records;
    for (auto& rec : stripped) rec.regime = "no_need";
    const auto r = cost_benefit_analysis(stripped);
    for (const auto& f : r.findings) {
      CHECK(f.answer == verdict::inconclusive);
      CHECK_THAT(f.detail, Contains("need regime"));
    }
  }
  SECTION("no records") {
    const auto r = cost_benefit_analysis(std::vector<trial_record>{});
    CHECK(r.findings.size() == 5);
  }
}

TEST_CASE("cost: bad options throw", "[report][cost]") {
  const auto records = synthetic_records({.items = 10, .seed = 1});
  CHECK_THROWS_AS(cost_benefit_analysis(records, {.latency_slo_s = -1.0}), invalid_argument);
  CHECK_THROWS_AS(cost_benefit_analysis(records, {.margin = 0}), invalid_argument);
  CHECK_THROWS_AS(cost_benefit_analysis(records, {.links = {{"bad", 0.0, 0.0}}}), invalid_argument);
  CHECK_THROWS_WITH(cost_benefit_analysis(records, {.level = 2}),
                    Contains("cost_benefit_analysis") && Contains("level"));
  CHECK_THROWS_AS(fit_relay_gate(records, {.train_fraction = 1.0}), invalid_argument);
  CHECK_THROWS_AS(fit_relay_gate(records, {.threshold = 0}), invalid_argument);
}

TEST_CASE("gate: matches always-relay with fewer bytes", "[report][cost][gate]") {
  const std::uint64_t seed = GENERATE(1, 2, 3);
  INFO("generator seed " << seed << ", 150 items x 3 seeds");
  const auto records = synthetic_records({.seed = seed});
  const auto g = fit_relay_gate(records);
  REQUIRE(g.missing.empty());
  REQUIRE(g.findings.size() == 1);
  const auto& f = g.findings[0];
  INFO(f.detail);
  CHECK(f.id == "gate.matches_always_relay");
  CHECK(f.answer == verdict::yes);
  CHECK(f.n == g.test_units);
  CHECK(g.train_items + g.test_items == 150);
  CHECK(g.test_items > 50);
  // relay_bytes = 512·doc_tokens + 100 is collinear with doc_tokens.
  bool collinear = false;
  for (const auto& d : g.dropped_features) collinear = collinear || d.rfind("relay_bytes", 0) == 0;
  CHECK(collinear);
  REQUIRE(g.model.features.size() + 1 == g.model.coefficients.size());
  REQUIRE(g.policies.size() == 4);
  const auto& gate = g.policies[0];
  const auto& always = g.policies[1];
  const auto& never = g.policies[2];
  const auto& text = g.policies[3];
  CHECK(gate.relay_rate > 0.3);
  CHECK(gate.relay_rate < 0.7);
  CHECK(std::abs(gate.accuracy.estimate - always.accuracy.estimate) < 0.03);
  CHECK(never.accuracy.estimate < always.accuracy.estimate - 0.3);
  CHECK(text.available);
  CHECK(gate.bytes.estimate < 0.7 * always.bytes.estimate);
  CHECK(g.bytes_saved.ci_low > 0);
}

TEST_CASE("gate: the returned model is deployable", "[report][cost][gate]") {
  const auto records = synthetic_records({.seed = 8});
  const auto g = fit_relay_gate(records);
  REQUIRE(g.missing.empty());
  const auto& m = g.model;
  INFO("features " << m.features.size());
  // Need units (attention mass 0.6..0.7) relay, no-need units (0.1..0.2) do not.
  std::vector<double> need_x, other_x;
  for (const auto& name : m.features) {
    if (name == "doc_tokens") {
      need_x.push_back(19);
      other_x.push_back(19);
    } else if (name == "need") {
      need_x.push_back(1);
      other_x.push_back(0);
    } else if (name == "attention_mass") {
      need_x.push_back(0.65);
      other_x.push_back(0.15);
    } else {
      need_x.push_back(0);
      other_x.push_back(0);
    }
  }
  CHECK(m.relays(need_x));
  CHECK_FALSE(m.relays(other_x));
  CHECK(m.probability(need_x) > 0.8);
  CHECK_THROWS_AS(m.probability(std::vector<double>(m.features.size() + 1, 0.0)), shape_mismatch);
  CHECK_THROWS_AS(relay_gate_model{}.probability(std::vector<double>{}), invalid_argument);
}

TEST_CASE("gate: separation falls back to the penalized fit", "[report][cost][gate]") {
  // Label = need exactly: kv always right, no_comm right exactly in the no-need regime.
  auto records = synthetic_records({.items = 80, .seed = 12});
  for (auto& rec : records) {
    if (rec.arm == "kv_full") rec.correct = true;
    if (rec.arm == "no_comm") rec.correct = rec.regime == "no_need";
  }
  const auto g = fit_relay_gate(records);
  REQUIRE(g.missing.empty());
  CHECK(g.model.penalized);
  CHECK(g.findings[0].answer == verdict::yes);
  CHECK(g.accuracy_vs_always_relay.estimate == 0.0);
}

TEST_CASE("gate: missing pieces", "[report][cost][gate]") {
  const auto records = synthetic_records({.items = 60, .seed = 6, .attention_mass = false});
  SECTION("no attention mass: the feature is dropped and named") {
    const auto g = fit_relay_gate(records);
    bool named = false;
    for (const auto& d : g.dropped_features) named = named || d.rfind("attention_mass: missing", 0) == 0;
    CHECK(named);
    CHECK(g.missing.empty());
  }
  SECTION("no no_comm: inconclusive, n = 0") {
    const auto g = fit_relay_gate(without_arm(records, "no_comm"));
    REQUIRE(g.findings.size() == 1);
    CHECK(g.findings[0].answer == verdict::inconclusive);
    CHECK(g.findings[0].n == 0);
    CHECK_THAT(g.findings[0].detail, Contains("no_comm"));
  }
  SECTION("no text_full: always-text unavailable, the gate still evaluated") {
    const auto g = fit_relay_gate(without_arm(records, "text_full"));
    REQUIRE(g.policies.size() == 4);
    CHECK_FALSE(g.policies[3].available);
    CHECK(g.findings[0].answer != verdict::inconclusive);
  }
  SECTION("one label class") {
    auto same = records;
    for (auto& rec : same) rec.correct = true;
    const auto g = fit_relay_gate(same);
    CHECK(g.findings[0].answer == verdict::inconclusive);
    CHECK_THAT(g.findings[0].detail, Contains("relay helps"));
  }
}
