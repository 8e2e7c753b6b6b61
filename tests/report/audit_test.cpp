// SPDX-License-Identifier: MIT
// Tests of report/audit.hpp on synthetic records with planted truths: 120 items × 3 seeds, items
// 0–59 in the need regime and 60–119 in the no-need regime, correct ~ Bernoulli(planted accuracy)
// drawn from std::mt19937_64 with the printed seed. Monte-Carlo tolerances are stated per check.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "latentaudit/report/audit.hpp"
#include "latentaudit/report/decision.hpp"

#include "support/findings.hpp"

namespace la = latentaudit;

namespace {

constexpr std::uint64_t kSeed = 20261129;  // the generator's fixed seed

struct planted_arm {
  std::string arm, kind;
  double p_need, p_no_need;
  std::uint64_t bytes;
  std::optional<double> sigma, budget;
};

// Planted accuracies (need, no-need) and wire bytes. Need: relay ~ text ~ 99 %, no_comm and every
// placebo and cross_model at chance (3 %); text_budget_k ~ k/32; noise fails between 0.5 and 1.
// No-need: every arm 99 % (relaying changes nothing).
std::vector<planted_arm> planted_arms() {
  return {
      {"no_comm", "no_comm", 0.03, 0.99, 0, {}, {}},
      {"text_full", "text_full", 0.99, 0.99, 4000, {}, {}},
      {"text_budget_4", "text_budget", 4.0 / 32, 0.99, 500, {}, 4.0},
      {"text_budget_16", "text_budget", 16.0 / 32, 0.99, 2000, {}, 16.0},
      {"kv_full", "kv_full", 0.99, 0.99, 1000000, {}, {}},
      {"kv_noise_0.25", "kv_policy", 0.99, 0.99, 1000000, 0.25, {}},
      {"kv_noise_0.5", "kv_policy", 0.99, 0.99, 1000000, 0.5, {}},
      {"kv_noise_1", "kv_policy", 0.50, 0.99, 1000000, 1.0, {}},
      {"kv_noise_2", "kv_policy", 0.05, 0.99, 1000000, 2.0, {}},
      {"kv_int8", "kv_policy", 0.98, 0.99, 250000, {}, {}},
      {"kv_layers_0", "kv_policy", 0.20, 0.99, 500000, {}, {}},
      {"deranged", "deranged", 0.03, 0.99, 1000000, {}, {}},
      {"zeroed", "zeroed", 0.03, 0.99, 1000000, {}, {}},
      {"random", "random", 0.03, 0.99, 1000000, {}, {}},
      {"cross_model", "cross_model", 0.03, 0.99, 1000000, {}, {}},
  };
}

double planted(const std::string& arm, const std::string& regime) {
  for (const auto& a : planted_arms())
    if (a.arm == arm) return regime == "need" ? a.p_need : a.p_no_need;
  FAIL("no planted arm " << arm);
  return 0;
}

std::vector<la::trial_record> make_records(std::size_t items, std::size_t seeds, std::uint64_t seed = kSeed,
                                           std::size_t need_items = 0) {
  if (need_items == 0) need_items = items / 2;
  std::mt19937_64 g(seed);
  auto uniform = [&] { return static_cast<double>(g() >> 11) * 0x1.0p-53; };
  std::vector<la::trial_record> out;
  for (std::size_t i = 0; i < items; ++i) {
    const bool need = i < need_items;
    for (std::size_t s = 0; s < seeds; ++s) {
      for (const auto& a : planted_arms()) {
        la::trial_record r;
        r.item = i;
        r.seed = s;
        r.arm = a.arm;
        r.arm_kind = a.kind;
        r.regime = need ? "need" : "no_need";
        r.correct = uniform() < (need ? a.p_need : a.p_no_need);
        r.bytes = a.bytes;
        r.latency.b_decode_s = 0.01;
        r.latency.transfer_s = static_cast<double>(a.bytes) / 25e9;
        r.noise_sigma = a.sigma;
        r.budget = a.budget;
        if (a.kind.rfind("kv", 0) == 0) r.attention_mass = 0.5;
        r.covariates = {{"doc_tokens", 100.0 + 10.0 * static_cast<double>(i)}, {"pairs", 8}};
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

const la::finding& find(const la::audit_core& c, const std::string& id) {
  for (const auto& f : c.findings)
    if (f.id == id) return f;
  FAIL("no finding " << id);
  return c.findings.front();
}

using latentaudit::test::effect;

bool has_warning(const la::audit_core& c, const std::string& needle) {
  return std::any_of(c.warnings.begin(), c.warnings.end(),
                     [&](const std::string& w) { return w.find(needle) != std::string::npos; });
}

}  // namespace

TEST_CASE("audit recovers every planted truth", "[report][audit]") {
  static const bool printed = [] {
    std::cout << "audit_test: generator seed " << kSeed << ", 120 items x 3 seeds x 15 arms\n";
    return true;
  }();
  (void)printed;
  const auto records = make_records(120, 3);
  const auto c = la::analyse_records(records);
  REQUIRE(c.n_records == records.size());
  REQUIRE(c.n_items == 120);
  REQUIRE(c.n_seeds == 3);
  CHECK(c.warnings.empty());

  SECTION("arm summaries: accuracy within 4 binomial SE (+1/n) of the planted value") {
    REQUIRE(c.arms.size() == 15 * 3);
    for (const auto& s : c.arms) {
      if (s.regime == "all") {
        CHECK(s.n == 360);
        continue;
      }
      CHECK(s.n == 180);
      const double p = planted(s.arm, s.regime);
      INFO(s.arm << " " << s.regime << " acc " << s.accuracy);
      CHECK(std::fabs(s.accuracy - p) <= 4.0 * std::sqrt(p * (1 - p) / 180.0) + 1.0 / 180.0);
      CHECK(s.ci_low <= s.accuracy);
      CHECK(s.ci_high >= s.accuracy);
      CHECK(s.mean_receiver_s > 0);
      CHECK(s.mean_attention_mass.has_value() == (s.arm_kind.rfind("kv", 0) == 0));
    }
  }

  SECTION(
      "paired effects: 20 contrasts, 14 in the Holm family, estimates within 0.06 (about 4 SE) of the "
      "planted difference") {
    REQUIRE(c.effects.size() == 20);
    std::vector<double> p;
    std::vector<std::size_t> in;
    for (std::size_t i = 0; i < c.effects.size(); ++i) {
      const auto& e = c.effects[i];
      CHECK(e.n_pairs == 180);
      CHECK(e.n_clusters == 60);
      const double truth = planted(e.treated, e.regime) - planted(e.control, e.regime);
      INFO(e.id << " est " << e.estimate << " [" << e.ci_low << ", " << e.ci_high << "] truth " << truth);
      CHECK(std::fabs(e.estimate - truth) <= 0.06);
      CHECK(e.ci_low <= e.estimate);
      CHECK(e.ci_high >= e.estimate);
      CHECK(e.verdict_low < e.verdict_high);
      // {deranged,zeroed,random} − kv_full are decomposition material, not claims of their own; the
      // need regime's text_full − no_comm and kv_full − no_comm are steps of the decision's sequence.
      const bool sequence = e.regime == "need" && e.control == "no_comm" &&
                            (e.treated == "text_full" || e.treated == "kv_full");
      CHECK(e.in_decision_sequence == sequence);
      CHECK(e.in_holm_family == (e.control != "kv_full" && !sequence));
      if (e.in_holm_family) {
        p.push_back(e.p_value);
        in.push_back(i);
      } else {
        CHECK(std::isnan(e.p_holm));
      }
    }
    REQUIRE(in.size() == 12);
    // Holm exactly as p_adjust over the family.
    const auto holm = la::p_adjust(p, la::p_adjust_method::holm);
    for (std::size_t k = 0; k < holm.size(); ++k) CHECK(c.effects[in[k]].p_holm == holm[k]);
    // The verdict interval and the p-value are the betting ones over items: clustered_paired_difference
    // on the pairs' item ids (alpha 0.05 per side), bounded_mean_p_value of the item means at 0.
    std::vector<std::uint64_t> ids;
    std::vector<double> t, u;
    for (std::size_t i = 0; i < records.size(); i += 15) {
      if (records[i].regime != "need") continue;
      ids.push_back(records[i].item);
      t.push_back(records[i + 4].correct ? 1 : 0);  // kv_full
      u.push_back(records[i].correct ? 1 : 0);      // no_comm
    }
    const auto ref = la::clustered_paired_difference(ids, t, u, {.alpha_lower = 0.05, .alpha_upper = 0.05});
    const auto& e = effect(c.effects, "need:kv_full-no_comm");
    CHECK(e.verdict_low == ref.ci_low);
    CHECK(e.verdict_high == ref.ci_high);
    const auto items = la::item_mean_differences(ids, t, u);
    CHECK(e.p_value == la::bounded_mean_p_value(items, -1.0, 1.0, 0.0, 0.05));
    CHECK(e.method.find("betting") != std::string::npos);
  }

  SECTION("the cluster interval equals bootstrap_clustered on the pairs with item labels") {
    std::vector<double> diff;
    std::vector<std::size_t> item;
    for (std::size_t i = 0; i < records.size(); i += 15) {
      if (records[i].regime != "need") continue;
      diff.push_back((records[i + 4].correct ? 1.0 : 0.0) - (records[i].correct ? 1.0 : 0.0));
      item.push_back(records[i].item);
    }
    const auto ref = la::bootstrap_clustered(
        diff, item, [](const la::resample_view& v) { return v.mean(); },
        {.replicates = 2000, .level = 0.95, .method = la::bootstrap_ci_method::percentile, .seed = 1});
    const auto& e = effect(c.effects, "need:kv_full-no_comm");
    CHECK(e.estimate == Approx(ref.effect.estimate).margin(1e-12));
    CHECK(e.ci_low == Approx(ref.effect.ci_low).margin(1e-9));
    CHECK(e.ci_high == Approx(ref.effect.ci_high).margin(1e-9));
  }

  SECTION("findings: every planted verdict") {
    // 13 accuracy findings, the 3 of the answer-probability endpoint and the dependency check's union
    // (need.kv_carries_information; no continuation finding: the records carry no continuation_prob)
    REQUIRE(c.findings.size() == 17);
    const char* ids[] = {"need.text_beats_no_comm",
                         "need.kv_beats_no_comm",
                         "need.kv_noninferior_to_text",
                         "need.kv_equivalent_to_text",
                         "need.deranged_beats_no_comm",
                         "need.zeroed_beats_no_comm",
                         "need.cross_model_beats_no_comm",
                         "no_need.kv_changes_accuracy",
                         "noise.tolerance_sigma",
                         "stale.kv_worse_than_text",
                         "stale.kv_gives_stale_answer",
                         "conflict.kv_worse_than_no_comm",
                         "drift.tolerance_steps",
                         "need.kv_raises_answer_probability",
                         "need.kv_answer_probability_noninferior_to_text",
                         "need.pairing_raises_answer_probability"};
    for (std::size_t i = 0; i < 16; ++i) CHECK(c.findings[i].id == ids[i]);
    CHECK(c.findings[16].id == "need.kv_carries_information");
    for (const auto& f : c.findings) INFO(f.id << ": " << la::verdict_name(f.answer) << " — " << f.detail);
    CHECK(find(c, "need.text_beats_no_comm").answer == la::verdict::yes);  // the positive control
    const auto& beats = find(c, "need.kv_beats_no_comm");
    CHECK(beats.answer == la::verdict::yes);
    CHECK(beats.n == 180);
    CHECK(beats.ci_low <= 0.96);
    CHECK(beats.ci_high >= 0.96);
    // The findings report the verdict interval of their effect.
    CHECK(beats.ci_low == effect(c.effects, "need:kv_full-no_comm").verdict_low);
    CHECK(beats.ci_high == effect(c.effects, "need:kv_full-no_comm").verdict_high);
    // kv_full and text_full both at 99 % on 60 need items: the 90 % betting interval of 60 items cannot
    // exclude a 5-point loss (about 115 perfectly concordant items would), so non-inferiority and
    // equivalence are honestly inconclusive, never "no", at this size; 400 items: see the test below.
    for (const char* id : {"need.kv_noninferior_to_text", "need.kv_equivalent_to_text"}) {
      const auto& f = find(c, id);
      INFO(id << ": " << f.detail);
      CHECK(f.answer != la::verdict::no);
      CHECK(f.ci_low < f.ci_high);
    }
    // The placebos at chance: never "yes"; "no" needs the interval below the margin (not at 60 items).
    for (const char* id :
         {"need.deranged_beats_no_comm", "need.zeroed_beats_no_comm", "need.cross_model_beats_no_comm"}) {
      const auto& f = find(c, id);
      INFO(id << ": " << f.detail);
      CHECK(f.answer != la::verdict::yes);
      CHECK(f.ci_low < f.ci_high);
    }
    const auto& nn = find(c, "no_need.kv_changes_accuracy");
    INFO(nn.detail);
    CHECK(nn.answer != la::verdict::yes);
    const auto& noise = find(c, "noise.tolerance_sigma");
    INFO(noise.detail);
    CHECK(noise.answer == la::verdict::yes);
    // planted differences 0, 0, −0.49, −0.94: the fit reaches −0.05 at 0.5 + 0.5·0.05/0.49 ≈ 0.551
    CHECK((noise.estimate > 0.5 && noise.estimate < 0.62));
    for (const auto& f : c.findings) {
      CHECK_FALSE(f.method.empty());
      CHECK_FALSE(f.detail.empty());
      CHECK(la::finding_to_json(f).is_object());
    }
  }

  SECTION("decomposition: presence ~ 0, pairing ~ 0.96, content ~ 0 (each within 0.06)") {
    REQUIRE(c.decomposition.size() == 3);
    const auto& pres = effect(c.decomposition, "need:presence");
    CHECK(pres.treated == "{zeroed,random}");
    CHECK(std::fabs(pres.estimate) <= 0.06);
    CHECK(std::fabs(effect(c.decomposition, "need:pairing").estimate - 0.96) <= 0.06);
    CHECK(effect(c.decomposition, "need:pairing").p_holm < 0.05);
    CHECK(std::fabs(effect(c.decomposition, "need:content").estimate) <= 0.06);
    for (const auto& e : c.decomposition) CHECK((e.ci_low <= e.estimate && e.estimate <= e.ci_high));
  }

  SECTION("CATE: by regime and doc_tokens tertiles, Holm over subgroups") {
    REQUIRE(c.cate.size() == 5);
    CHECK(c.cate[0].level == "need");
    CHECK(c.cate[1].level == "no_need");
    CHECK(std::fabs(c.cate[0].estimate - 0.96) <= 0.06);
    CHECK(std::fabs(c.cate[1].estimate) <= 0.06);
    CHECK(c.cate[1].p_adjusted >= 0.05);
    std::size_t n = 0;
    std::vector<double> p;
    for (const auto& s : c.cate) p.push_back(s.p_value);
    const auto holm = la::p_adjust(p, la::p_adjust_method::holm);
    for (std::size_t i = 0; i < c.cate.size(); ++i) CHECK(c.cate[i].p_adjusted == holm[i]);
    for (std::size_t i = 2; i < 5; ++i) {
      const auto& s = c.cate[i];
      INFO(s.level);
      CHECK(s.variable == "doc_tokens");
      CHECK(s.regime == "need");
      CHECK(std::fabs(s.estimate - 0.96) <= 0.1);  // 60 pairs per tertile: about 4 SE
      CHECK(s.p_adjusted < 0.05);
      n += s.n;
    }
    CHECK(n == 180);
    CHECK(c.cate[2].level == "Q1 [100, 296.667]");
  }

  SECTION("noise: curve, tolerance between the planted 0.5 and 1 (report/analyses/noise.hpp)") {
    const auto& nt = c.noise;
    REQUIRE(nt.curve.size() == 5);
    CHECK(nt.curve[0].sigma == 0.0);
    CHECK(nt.curve[0].noninferior);
    CHECK_FALSE(nt.curve[3].noninferior);
    CHECK_FALSE(nt.curve[4].noninferior);
    CHECK(std::fabs(nt.curve[3].diff_vs_kv_full + 0.49) <= 0.1);
    // The isotonic fit reaches −0.05 between 0.5 (planted 0) and 1 (planted −0.49), at ≈ 0.551.
    REQUIRE(nt.tolerance_sigma.has_value());
    CHECK((*nt.tolerance_sigma > 0.5 && *nt.tolerance_sigma < 0.62));
    REQUIRE(nt.ci_low.has_value());
    REQUIRE(nt.ci_high.has_value());
    INFO("tolerance CI " << *nt.ci_low << " to " << *nt.ci_high);
    CHECK(*nt.ci_low <= *nt.tolerance_sigma);
    CHECK(*nt.ci_high >= *nt.tolerance_sigma);
    CHECK(*nt.ci_high < 1.0);
    CHECK(nt.unbounded_fraction == 0.0);
    for (const auto& p : nt.curve) CHECK(p.noninferior == (p.diff_ci_low > -0.05));
    if (nt.sigma_noninferior) CHECK(*nt.sigma_noninferior <= 0.5);
  }

  SECTION("frontier: kv and text arms, Pareto set by brute force") {
    REQUIRE(c.frontier.size() == 10);  // text_full, 2 budgets, kv_full, 4 noise, int8, layers_0
    for (std::size_t i = 1; i < c.frontier.size(); ++i)
      CHECK(c.frontier[i - 1].mean_bytes <= c.frontier[i].mean_bytes);
    CHECK(c.frontier[0].arm == "text_budget_4");
    CHECK(c.frontier[0].pareto);
    for (const auto& p : c.frontier) {
      bool dominated = false;
      for (const auto& q : c.frontier)
        dominated |= q.accuracy >= p.accuracy && q.mean_bytes <= p.mean_bytes &&
                     (q.accuracy > p.accuracy || q.mean_bytes < p.mean_bytes);
      CHECK(p.pareto == !dominated);
      if (p.arm == "kv_layers_0") CHECK_FALSE(p.pareto);
      if (p.arm == "text_budget_16") {
        CHECK(p.ci_low <= 0.5);
        CHECK(p.ci_high >= 0.5);
      }
    }
  }
}

TEST_CASE("audit results do not depend on the thread count", "[report][audit]") {
  const auto records = make_records(40, 3, kSeed + 1);
  const auto a = la::analyse_records(records, {.bootstrap_replicates = 999, .threads = 1});
  const auto b = la::analyse_records(records, {.bootstrap_replicates = 999, .threads = 3});
  REQUIRE(a.effects.size() == b.effects.size());
  for (std::size_t i = 0; i < a.effects.size(); ++i) {
    CHECK(a.effects[i].ci_low == b.effects[i].ci_low);
    CHECK(a.effects[i].ci_high == b.effects[i].ci_high);
  }
  REQUIRE(a.findings.size() == b.findings.size());
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    CHECK(a.findings[i].answer == b.findings[i].answer);
    CHECK(la::finding_to_json(a.findings[i]) == la::finding_to_json(b.findings[i]));
  }
  CHECK(a.noise.ci_low == b.noise.ci_low);
  CHECK(a.noise.ci_high == b.noise.ci_high);
}

TEST_CASE("audit: absent arms give inconclusive findings with n = 0, missing units are dropped",
          "[report][audit]") {
  auto records = make_records(120, 3);
  std::size_t dropped = 0;
  std::erase_if(records, [&](const la::trial_record& r) {
    if (r.arm == "deranged" || r.arm == "cross_model" || r.arm.rfind("kv_noise_", 0) == 0) return true;
    if (r.arm == "kv_full" && r.item < 5 && r.seed < 2) return ++dropped, true;  // 10 need units
    return false;
  });
  REQUIRE(dropped == 10);
  const auto c = la::analyse_records(records);
  REQUIRE(c.findings.size() == 17);
  for (const char* id :
       {"need.deranged_beats_no_comm", "need.cross_model_beats_no_comm", "noise.tolerance_sigma"}) {
    const auto& f = find(c, id);
    INFO(id << ": " << f.detail);
    CHECK(f.answer == la::verdict::inconclusive);
    CHECK(f.n == 0);
    CHECK(std::isnan(f.estimate));
    CHECK_FALSE(f.detail.empty());
  }
  const auto& beats = find(c, "need.kv_beats_no_comm");
  CHECK(beats.answer == la::verdict::yes);
  CHECK(beats.n == 170);
  CHECK(find(c, "need.zeroed_beats_no_comm").answer != la::verdict::yes);
  CHECK(has_warning(c, "arm 'kv_full' is missing on 10 of 360"));
  CHECK(has_warning(c, "need:deranged-no_comm"));
  CHECK(effect(c.effects, "no_need:kv_full-no_comm").n_pairs == 180);
  CHECK(effect(c.effects, "need:zeroed-kv_full").n_pairs == 170);
  CHECK(c.noise.curve.empty());
  CHECK_FALSE(c.noise.tolerance_sigma.has_value());
  // pairing needs deranged: left out, with a warning
  CHECK(c.decomposition.size() == 2);
  CHECK(has_warning(c, "pairing not estimable"));
}

TEST_CASE("audit: a stack with only some arms or no regime still yields every finding", "[report][audit]") {
  auto records = make_records(20, 2);
  std::erase_if(records,
                [](const la::trial_record& r) { return r.arm != "no_comm" && r.arm != "text_full"; });
  const auto c = la::analyse_records(records, {.bootstrap_replicates = 199});
  REQUIRE(c.findings.size() == 17);
  for (const auto& f : c.findings) {
    INFO(f.id);
    if (f.id == "need.text_beats_no_comm") {  // the positive control holds both its arms (10 items:
      CHECK(f.n == 20);                       // too few to show it after Holm, so it gates the rest)
      continue;
    }
    CHECK(f.answer == la::verdict::inconclusive);
    CHECK(f.n == 0);
  }
  CHECK(c.effects.size() == 2);  // text_full − no_comm in each regime
  CHECK(c.frontier.size() == 1);

  for (auto& r : records) r.regime.clear();
  const auto u = la::analyse_records(records, {.bootstrap_replicates = 199});
  CHECK(u.effects.empty());
  CHECK(u.arms.size() == 2);  // "all" only
  CHECK(has_warning(u, "no 'need', 'no_need', 'stale' or 'conflict' regime"));
  for (const auto& f : u.findings) CHECK(f.n == 0);

  // arms found by arm_kind when labels differ
  auto relabelled = make_records(60, 2);  // 30 need items: enough for the positive control
  for (auto& r : relabelled)
    if (r.arm == "kv_full") r.arm = "stackx_full_cache";
  const auto k = la::analyse_records(relabelled, {.bootstrap_replicates = 199});
  CHECK(find(k, "need.kv_beats_no_comm").answer == la::verdict::yes);
  CHECK(effect(k.effects, "need:stackx_full_cache-no_comm").n_pairs == 60);
}

TEST_CASE("audit: invalid input", "[report][audit]") {
  auto records = make_records(6, 2);
  CHECK_THROWS_AS(la::analyse_records(std::span<const la::trial_record>{}), la::invalid_argument);
  CHECK_THROWS_AS(la::analyse_records(records, {.alpha = 0.6}), la::invalid_argument);
  CHECK_THROWS_AS(la::analyse_records(records, {.equivalence_margin = 0}), la::invalid_argument);
  CHECK_THROWS_AS(la::analyse_records(records, {.noninferiority_margin = -1}), la::invalid_argument);
  CHECK_THROWS_WITH(la::analyse_records(records, {.bootstrap_replicates = 20}),
                    Catch::Contains("bootstrap_replicates"));

  auto dup = records;
  dup.push_back(dup[4 + 15 * 3]);  // kv_full of item 1, seed 1
  CHECK_THROWS_AS(la::analyse_records(dup), la::corrupt_data);
  CHECK_THROWS_WITH(la::analyse_records(dup), Catch::Contains("(item 1, seed 1, arm 'kv_full')"));

  auto mixed = records;
  mixed[2].regime = "no_need";
  CHECK_THROWS_AS(la::analyse_records(mixed), la::corrupt_data);
  CHECK_THROWS_WITH(la::analyse_records(mixed), Catch::Contains("disagree on the regime"));

  auto kinds = records;
  kinds[4].arm_kind = "kv_policy";
  CHECK_THROWS_WITH(la::analyse_records(kinds), Catch::Contains("two arm_kinds"));

  auto nan = records;
  nan[5].noise_sigma = std::nan("");
  CHECK_THROWS_AS(la::analyse_records(nan), la::corrupt_data);
}

TEST_CASE("audit helper: the item t interval is non_inferiority_test's paired interval", "[report][audit]") {
  std::mt19937_64 g(kSeed + 2);
  std::vector<double> a(25), b(25), d(25);
  std::vector<std::uint32_t> all(25);
  for (std::size_t i = 0; i < 25; ++i) {
    a[i] = static_cast<double>(g() % 4) / 3.0;
    b[i] = static_cast<double>(g() % 4) / 3.0;
    d[i] = a[i] - b[i];
    all[i] = static_cast<std::uint32_t>(i);
  }
  const auto r = la::non_inferiority_test(a, b, 0.1, {.design = la::t_test_design::paired, .alpha = 0.05});
  const auto iv = la::detail::item_interval(
      d, all, [](std::size_t n) { return la::detail::t_quantile_upper(0.05, static_cast<double>(n - 1)); });
  CHECK(iv.estimate == Approx(r.effect.estimate).margin(1e-12));
  CHECK(iv.low == Approx(r.effect.ci_low).margin(1e-12));
  CHECK(iv.high == Approx(r.effect.ci_high).margin(1e-12));
  CHECK((iv.low > -0.1) == r.non_inferior);
}

TEST_CASE("audit: 24000 records, 2000 replicates (timing printed, not asserted)", "[report][audit]") {
  // 800 items x 2 seeds x 15 arms = 24000 records.
  const auto records = make_records(800, 2, kSeed + 3, 400);
  REQUIRE(records.size() == 24000);
  const auto t0 = std::chrono::steady_clock::now();
  const auto c = la::analyse_records(records, {.bootstrap_replicates = 2000});
  const auto t1 = std::chrono::steady_clock::now();
  std::cout << "audit_test: analyse_records on 24000 records, B = 2000, 1 thread: "
            << std::chrono::duration<double>(t1 - t0).count() << " s\n";
  CHECK(find(c, "need.kv_beats_no_comm").answer == la::verdict::yes);
  CHECK(std::fabs(find(c, "noise.tolerance_sigma").estimate - 0.551) < 0.05);
}

TEST_CASE("audit: degenerate data (one unit, constant outcomes) gives defined results", "[report][audit]") {
  auto rec = [](std::uint64_t i, std::uint64_t s, const std::string& arm, const std::string& regime, bool c) {
    la::trial_record r;
    r.item = i;
    r.seed = s;
    r.arm = arm;
    r.arm_kind = arm.rfind("kv_noise_", 0) == 0 ? "kv_policy" : arm;
    r.regime = regime;
    r.correct = c;
    return r;
  };
  std::vector<la::trial_record> one;
  for (const char* a : {"no_comm", "kv_full", "text_full", "kv_noise_1"})
    one.push_back(rec(0, 0, a, "need", true));
  const auto c1 = la::analyse_records(one, {.bootstrap_replicates = 199});
  const auto& beats = find(c1, "need.kv_beats_no_comm");
  CHECK(beats.answer == la::verdict::inconclusive);
  CHECK(beats.n == 1);
  // One item: no bootstrap, but the betting interval is defined (and wide) at any number of items.
  CHECK(beats.ci_low < beats.ci_high);
  CHECK(beats.ci_low >= -1.0);
  CHECK(beats.ci_high <= 1.0);
  CHECK(find(c1, "need.text_beats_no_comm").answer == la::verdict::inconclusive);
  CHECK(find(c1, "noise.tolerance_sigma").answer == la::verdict::inconclusive);
  CHECK(has_warning(c1, "no bootstrap interval"));
  one.push_back(rec(1, 0, "kv_noise_2", "no_need", true));  // a noise arm without need-regime pairs
  const auto c1b = la::analyse_records(one, {.bootstrap_replicates = 199});
  CHECK(c1b.noise.curve.size() == 2);
  CHECK(has_warning(c1b, "noise arm 'kv_noise_2' has no need-regime unit"));

  // Every outcome correct: all paired differences 0, every bootstrap replicate 0 -> a point-mass
  // bootstrap, replaced by the betting interval; 5 items cannot show equivalence, and text does not
  // beat no_comm, so the positive control fails and gates every need/no_need finding.
  std::vector<la::trial_record> all;
  for (std::uint64_t i = 0; i < 10; ++i)
    for (std::uint64_t s = 0; s < 2; ++s)
      for (const char* a : {"no_comm", "kv_full", "text_full", "kv_noise_0.5", "deranged"})
        all.push_back(rec(i, s, a, i < 5 ? "need" : "no_need", true));
  const auto c2 = la::analyse_records(all, {.bootstrap_replicates = 199});
  for (const auto& e : c2.effects) {
    INFO(e.id << ": " << e.method);
    CHECK(e.estimate == 0.0);
    CHECK(e.ci_low < 0.0);
    CHECK(e.ci_high > 0.0);
    CHECK(e.method.find("point mass") != std::string::npos);
    CHECK(e.verdict_low < e.verdict_high);
  }
  for (const auto& f : c2.findings) {
    INFO(f.id << ": " << f.detail);
    if (std::isfinite(f.ci_low)) CHECK(f.ci_low < f.ci_high);
  }
  const auto& eq = find(c2, "need.kv_equivalent_to_text");
  CHECK(eq.answer == la::verdict::inconclusive);
  CHECK(eq.ci_low < -0.05);
  CHECK(eq.ci_high > 0.05);
  CHECK(find(c2, "need.text_beats_no_comm").answer == la::verdict::inconclusive);
  CHECK(find(c2, "need.kv_beats_no_comm").answer == la::verdict::inconclusive);
  CHECK(find(c2, "no_need.kv_changes_accuracy").answer == la::verdict::inconclusive);
  CHECK(find(c2, "no_need.kv_changes_accuracy").detail.rfind(la::positive_control_reason, 0) == 0);
  CHECK(find(c2, "noise.tolerance_sigma").answer == la::verdict::inconclusive);  // flat: beyond the range
  CHECK(c2.noise.curve.at(1).diff_vs_kv_full == 0.0);
  CHECK_FALSE(c2.noise.tolerance_sigma.has_value());

  // The noise arm always wrong: constant item differences of -1, the fit reaches −0.05 at
  // 0.5·0.05 = 0.025; the bootstrap is a point mass, so the betting band replaces it, and 5 items
  // cannot bound its upper side: not located (never a zero-width interval).
  for (auto& r : all)
    if (r.arm == "kv_noise_0.5") r.correct = false;
  const auto c3 = la::analyse_records(all, {.bootstrap_replicates = 199});
  const auto& noise = find(c3, "noise.tolerance_sigma");
  CHECK(noise.answer == la::verdict::inconclusive);
  CHECK(noise.estimate == Approx(0.025));
  CHECK(noise.ci_low <= noise.estimate);
  CHECK(std::isinf(noise.ci_high));
  CHECK(c3.noise.ci_from_betting_band);
}

TEST_CASE("audit: the cluster bootstrap interval covers the planted effect at about its level",
          "[report][audit][slow]") {
  // Item-correlated outcomes: P(correct) = base + an item shift drawn per (item, arm) in ±0.3, so
  // the seeds of one item share it and the paired differences are correlated within items.
  // Planted kv_full − no_comm = 0.6 − 0.4 = 0.2. 200 data sets of 40 items × 3 seeds, B = 999.
  // Monte-Carlo SE of a 0.95 coverage over 200 sets: 0.0154; accepted: [0.90, 0.99] (about 3 SE).
  // (Measured offline over 1000 sets: 0.941 at 40 items, 0.949 at 120; a Wald interval on the
  // pairs that ignores the items covers 0.91.)
  constexpr std::uint64_t seed = kSeed + 4;
  std::cout << "audit_test: coverage generator seed " << seed << "\n";
  std::mt19937_64 g(seed);
  auto uniform = [&] { return static_cast<double>(g() >> 11) * 0x1.0p-53; };
  int covered = 0;
  const int sets = 200;
  for (int k = 0; k < sets; ++k) {
    std::vector<la::trial_record> r;
    for (std::uint64_t i = 0; i < 40; ++i) {
      const double shift_kv = -0.3 + 0.6 * uniform(), shift_nc = -0.3 + 0.6 * uniform();
      for (std::uint64_t s = 0; s < 3; ++s) {
        for (const bool kv : {true, false}) {
          la::trial_record x;
          x.item = i;
          x.seed = s;
          x.arm = x.arm_kind = kv ? "kv_full" : "no_comm";
          x.regime = "need";
          x.correct = uniform() < (kv ? 0.6 + shift_kv : 0.4 + shift_nc);
          r.push_back(std::move(x));
        }
      }
    }
    const auto c =
        la::analyse_records(r, {.bootstrap_replicates = 999, .seed = static_cast<std::uint64_t>(k)});
    const auto& e = effect(c.effects, "need:kv_full-no_comm");
    covered += e.ci_low <= 0.2 && 0.2 <= e.ci_high ? 1 : 0;
  }
  const double coverage = static_cast<double>(covered) / sets;
  std::cout << "audit_test: 95% cluster interval coverage " << coverage << " over " << sets << " data sets\n";
  CHECK(coverage >= 0.90);
  CHECK(coverage <= 0.99);
}

namespace {

// Records of `items` items × `seeds` seeds for the given arms (label = arm_kind), all in `regime`
// (or items < need_items in need, the rest no_need), correct = outcome(arm, item, seed).
template <class Outcome>
std::vector<la::trial_record> constructed(const std::vector<std::string>& arms, std::uint64_t items,
                                          std::uint64_t seeds, std::uint64_t need_items,
                                          const Outcome& outcome) {
  std::vector<la::trial_record> out;
  for (std::uint64_t i = 0; i < items; ++i)
    for (std::uint64_t s = 0; s < seeds; ++s)
      for (const auto& a : arms) {
        la::trial_record r;
        r.item = i;
        r.seed = s;
        r.arm = r.arm_kind = a;
        r.regime = i < need_items ? "need" : "no_need";
        r.correct = outcome(a, i, s);
        out.push_back(std::move(r));
      }
  return out;
}

}  // namespace

TEST_CASE(
    "audit: all-concordant pairs never give a zero-width interval, few items give inconclusive "
    "non-inferiority and equivalence, enough items give yes",
    "[report][audit][betting]") {
  // no_comm always wrong, text_full and kv_full always right: kv_full − text_full is 0 on every pair.
  auto outcome = [](const std::string& a, std::uint64_t, std::uint64_t) { return a != "no_comm"; };
  for (const std::uint64_t items : {15, 200}) {
    INFO(items << " items");
    const auto recs = constructed({"no_comm", "text_full", "kv_full"}, items, 2, items, outcome);
    const auto c = la::analyse_records(recs, {.bootstrap_replicates = 199});
    CHECK(find(c, "need.text_beats_no_comm").answer == la::verdict::yes);  // the positive control holds
    const auto& e = effect(c.effects, "need:kv_full-text_full");
    CHECK(e.estimate == 0.0);
    CHECK(e.ci_low < 0.0);  // the point-mass bootstrap is replaced by the betting interval
    CHECK(e.ci_high > 0.0);
    CHECK(e.method.find("point mass") != std::string::npos);
    CHECK(e.verdict_low < 0.0);
    CHECK(e.verdict_high > 0.0);
    for (const auto& f : c.findings) {
      INFO(f.id << ": " << f.detail);
      if (f.n > 0) CHECK(f.ci_low < f.ci_high);
    }
    const auto& ni = find(c, "need.kv_noninferior_to_text");
    const auto& eq = find(c, "need.kv_equivalent_to_text");
    INFO(ni.detail << " / " << eq.detail);
    const auto expected = items == 15 ? la::verdict::inconclusive : la::verdict::yes;
    CHECK(ni.answer == expected);
    CHECK(eq.answer == expected);
    CHECK(ni.ci_low == e.verdict_low);
    CHECK(ni.ci_high == e.verdict_high);
  }
}

TEST_CASE("audit: a placebo with a real benefit beyond the margin is not called 'no' beyond the error rate",
          "[report][audit][betting][slow]") {
  // 60 need items × 3 seeds. no_comm always wrong, text and kv always right; deranged right on seed 0
  // of every fourth item: +1/3 on 15 items, a benefit of 0.083 > margin 0.05. The McNemar-era rule
  // called any non-significant placebo "no"; the benefit is not excluded, so it is at most inconclusive.
  auto outcome = [](const std::string& a, std::uint64_t i, std::uint64_t s) {
    if (a == "deranged") return s == 0 && i % 4 == 0;
    return a != "no_comm";
  };
  const auto recs = constructed({"no_comm", "text_full", "kv_full", "deranged"}, 60, 3, 60, outcome);
  const auto c = la::analyse_records(recs, {.bootstrap_replicates = 199});
  const auto& f = find(c, "need.deranged_beats_no_comm");
  INFO(f.detail);
  CHECK(f.estimate == Approx(5.0 / 60.0));
  CHECK(f.answer != la::verdict::no);
  CHECK(f.ci_high >= 0.05);
  // Random outcomes with the same planted benefit (no_comm 0.10, deranged 0.18) over 60 items, 200
  // generator seeds: "no" (the upper 90 % limit below 0.05 < 0.08) is an error of the one-sided α =
  // 0.05 limit, so its rate is at most 0.05 + 3 Monte Carlo se = 0.0962 (19 of 200).
  std::mt19937_64 g(kSeed + 5);
  auto uniform = [&] { return static_cast<double>(g() >> 11) * 0x1.0p-53; };
  int no = 0;
  for (int k = 0; k < 200; ++k) {
    auto random_outcome = [&](const std::string& a, std::uint64_t, std::uint64_t) {
      return uniform() < (a == "no_comm" ? 0.10 : a == "deranged" ? 0.18 : 0.95);
    };
    const auto r = constructed({"no_comm", "text_full", "kv_full", "deranged"}, 60, 3, 60, random_outcome);
    no += find(la::analyse_records(r, {.bootstrap_replicates = 199}), "need.deranged_beats_no_comm").answer ==
                  la::verdict::no
              ? 1
              : 0;
  }
  CHECK(no <= 19);
}

TEST_CASE("audit: the placebo rule reaches 'no' when the design is large enough",
          "[report][audit][betting]") {
  // 400 need items × 2 seeds of the planted records (placebos at chance, 3 %): the verdict interval
  // excludes a 5-point benefit; kv_full and text_full at 99 %: non-inferior.
  const auto records = make_records(800, 2, kSeed + 3, 400);
  const auto c = la::analyse_records(records, {.bootstrap_replicates = 499});
  for (const char* id : {"need.text_beats_no_comm", "need.kv_beats_no_comm", "need.kv_noninferior_to_text"}) {
    INFO(id << ": " << find(c, id).detail);
    CHECK(find(c, id).answer == la::verdict::yes);
  }
  for (const char* id : {"need.deranged_beats_no_comm", "need.zeroed_beats_no_comm",
                         "need.cross_model_beats_no_comm", "no_need.kv_changes_accuracy"}) {
    INFO(id << ": " << find(c, id).detail);
    CHECK(find(c, id).answer == la::verdict::no);
  }
}

TEST_CASE("audit: non-inferiority and superiority of kv_full over text_full", "[report][audit][betting]") {
  // 200 need items × 2 seeds; text_full right on items i % 10 < 6 (60 %), kv_full on i % 10 < 9 (90 %):
  // kv_full better by 0.3. Non-inferior with superiority shown; not equivalent (interval beyond +m).
  auto outcome = [](const std::string& a, std::uint64_t i, std::uint64_t) {
    if (a == "text_full") return i % 10 < 6;
    if (a == "kv_full") return i % 10 < 9;
    return false;
  };
  const auto c = la::analyse_records(constructed({"no_comm", "text_full", "kv_full"}, 200, 2, 200, outcome),
                                     {.bootstrap_replicates = 199});
  const auto& ni = find(c, "need.kv_noninferior_to_text");
  INFO(ni.detail);
  CHECK(ni.estimate == Approx(0.3));
  CHECK(ni.answer == la::verdict::yes);
  CHECK(ni.ci_low > 0.0);
  CHECK(ni.detail.find("superiority shown") != std::string::npos);
  CHECK(find(c, "need.kv_equivalent_to_text").answer == la::verdict::no);
  // Reversed (kv_full worse by 0.3): inferiority shown.
  auto reversed = [&](const std::string& a, std::uint64_t i, std::uint64_t s) {
    return outcome(a == "kv_full" ? "text_full" : a == "text_full" ? "kv_full" : a, i, s);
  };
  const auto r = la::analyse_records(constructed({"no_comm", "text_full", "kv_full"}, 200, 2, 200, reversed),
                                     {.bootstrap_replicates = 199});
  const auto& inf = find(r, "need.kv_noninferior_to_text");
  INFO(inf.detail);
  CHECK(inf.answer == la::verdict::no);
  CHECK(inf.ci_high < -0.05);
}

TEST_CASE("audit: kv_changes_accuracy is yes for harm of either sign, no only inside the margin",
          "[report][audit][betting]") {
  // 100 need + 100 no-need items × 2 seeds; need: text and kv right, no_comm wrong. no_need: no_comm
  // always right, kv_full wrong on items i % 5 == 0 (−0.2).
  auto outcome = [](const std::string& a, std::uint64_t i, std::uint64_t) {
    if (i < 100) return a != "no_comm";
    return !(a == "kv_full" && i % 5 == 0);
  };
  const auto c = la::analyse_records(constructed({"no_comm", "text_full", "kv_full"}, 200, 2, 100, outcome),
                                     {.bootstrap_replicates = 199});
  const auto& f = find(c, "no_need.kv_changes_accuracy");
  INFO(f.detail);
  CHECK(f.answer == la::verdict::yes);
  CHECK(f.estimate == Approx(-0.2));
  CHECK(f.ci_high < 0.0);
}

TEST_CASE("audit: positive control — every record wrong gates every need and no_need finding",
          "[report][audit][betting]") {
  auto wrong = [](const std::string&, std::uint64_t, std::uint64_t) { return false; };
  const auto recs = constructed({"no_comm", "text_full", "kv_full", "deranged", "zeroed", "cross_model"}, 400,
                                2, 200, wrong);
  const auto c = la::analyse_records(recs, {.bootstrap_replicates = 199});
  const auto& control = find(c, "need.text_beats_no_comm");
  CHECK(control.answer != la::verdict::yes);
  for (const auto& f : c.findings) {
    INFO(f.id << ": " << f.detail);
    if (f.id == "need.text_beats_no_comm" || f.id.rfind("noise.", 0) == 0) continue;
    CHECK(f.answer == la::verdict::inconclusive);
    CHECK(f.detail.rfind(la::positive_control_reason, 0) == 0);
    if (f.n > 0) CHECK(f.ci_low < f.ci_high);  // the interval stays (not-estimable findings: NaN)
  }
  // Without the gate the placebo findings would read "no" (200 need items, all concordant): the detail
  // says so.
  CHECK(find(c, "need.deranged_beats_no_comm").detail.find("would read no") != std::string::npos);
  // The gate is idempotent and leaves a passing control's findings alone.
  auto fs = c.findings;
  la::apply_positive_control(fs, &control);
  for (std::size_t i = 0; i < fs.size(); ++i) CHECK(fs[i].detail == c.findings[i].detail);
  const la::finding yes_control =
      la::make_finding({la::finding_kind::need_text_beats_no_comm}, la::verdict::yes);
  std::vector<la::finding> kept{
      la::make_finding({la::finding_kind::need_kv_beats_no_comm}, la::verdict::yes)};
  la::apply_positive_control(kept, &yes_control);
  CHECK(kept[0].answer == la::verdict::yes);
  la::apply_positive_control(kept, nullptr);  // absent control: not "yes"
  CHECK(kept[0].answer == la::verdict::inconclusive);
}

TEST_CASE("audit: relabelled arms are found by arm_kind, the positive control included", "[report][audit]") {
  auto records = make_records(120, 2);
  for (auto& r : records) {
    if (r.arm == "text_full") r.arm = "stackx_text";
    if (r.arm == "no_comm") r.arm = "stackx_alone";
  }
  const auto c = la::analyse_records(records, {.bootstrap_replicates = 199});
  const auto& control = find(c, "need.text_beats_no_comm");
  INFO(control.detail);
  CHECK(control.answer == la::verdict::yes);
  CHECK(control.n == 120);
  CHECK(effect(c.effects, "need:stackx_text-stackx_alone").in_decision_sequence);
  CHECK(find(c, "need.kv_beats_no_comm").answer == la::verdict::yes);
}

TEST_CASE("decision: the monitor replays one observation per item (seeds averaged), not per seed",
          "[report][decision][monitor]") {
  // 30 need items x 10 seeds, kv_full vs no_comm, the seeds of an item perfectly correlated: items
  // 0-5 favour kv_full (difference +1 on every seed), items 6-29 alternate -1, +1 (mean 0.2 overall).
  // Fed pair by pair, the first 60 pairs are all +1 and a betting monitor stops at pair 10 — the
  // seeds would count as 60 independent wins. Item by item the capital at 0 reaches only 1.5^6 =
  // 11.4 < 2/alpha = 40 and then falls: no stop. Item 30 has kv_full only and is left out.
  std::vector<la::trial_record> rs;
  std::vector<double> pairs;
  auto add = [&](std::uint64_t item, std::uint64_t seed, const char* arm, bool correct) {
    la::trial_record r;
    r.item = item;
    r.seed = seed;
    r.arm = r.arm_kind = arm;
    r.regime = "need";
    r.correct = correct;
    rs.push_back(r);
  };
  for (std::uint64_t i = 0; i < 30; ++i) {
    const bool kv_wins = i < 6 || i % 2 == 1;
    for (std::uint64_t s = 0; s < 10; ++s) {
      add(i, s, "kv_full", kv_wins);
      add(i, s, "no_comm", !kv_wins);
      pairs.push_back(kv_wins ? 1.0 : -1.0);
    }
  }
  add(30, 0, "kv_full", true);
  const auto d = la::decide({}, rs);
  REQUIRE(d.monitors.size() == 1);  // no text_full records: only kv_full - no_comm
  const auto& m = d.monitors.front();
  CHECK(m.contrast == "kv_full - no_comm");
  CHECK(m.unit == "item");
  CHECK(m.result.n == 30);
  CHECK(m.pairs == 300);
  CHECK(m.result.mean == Approx(0.2).epsilon(1e-12));
  CHECK_FALSE(m.stop_at.has_value());
  CHECK(m.result.ci_low < 0.0);
  CHECK(la::run_betting_sequential(pairs).first_rejection == std::optional<std::size_t>(10));
  const auto& check = d.checklist.back();
  CHECK(check.name == "monitor");
  CHECK(check.passed == la::verdict::no);
  CHECK(check.reason.find("item-level") != std::string::npos);
  CHECK(check.reason.find("30 need-regime items (300 pairs") != std::string::npos);

  // Every item favours kv_full: the item-level monitor stops at item 10 (1.5^10 = 57.7 >= 40).
  for (auto& r : rs) r.correct = r.arm == "kv_full";
  const auto up = la::decide({}, rs);
  REQUIRE(up.monitors.size() == 1);
  CHECK(up.monitors.front().stop_at == std::optional<std::size_t>(10));
  CHECK(up.checklist.back().passed == la::verdict::yes);
  CHECK(up.checklist.back().reason.find("after 10 of 30 need-regime items") != std::string::npos);
  // Bad monitor options are rejected whether or not there are records.
  CHECK_THROWS_AS(la::decide({}, {}, {.monitor = {.alpha = 1.5}}), la::invalid_argument);
}
