// SPDX-License-Identifier: MIT
// The superiority ("beats") findings at one seed per item decide on exact conditional McNemar
// (issue 52 item 3; docs/estimators/findings.md "Superiority at one seed per item"): the exact p
// and its lower limit (detail::exact_view_of, detail::exact_lower_limit) against hand-computed
// values, and a Monte Carlo of the report's own path (records → analyse_records → findings) on
// clustered synthetic records: the "yes" rate of need.text_beats_no_comm, need.kv_beats_no_comm and
// need.deranged_beats_no_comm at a global null (every arm at the same item accuracy, items drawing a
// logit shift shared by their arms and seeds) at one seed per item (exact McNemar decides), at three
// seeds per item (the betting interval decides) and at one seed per item with 15 % of kv_full's
// records missing (worst-case bounds), each at most α + 2 MC s.e.; and the power of the new rule
// against the betting rule it replaces (verdict lower limit > 0, still in the paired effect) where
// kv_full beats no_comm by 20 points. Every replicate also checks that the finding's interval and
// its verdict agree (a "yes" never beside a lower limit below 0; a sequence step's lower limit
// above 0 only with a "yes"). Seeds are printed; MC s.e. = sqrt(r(1 − r)/R).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "latentaudit/report/audit.hpp"
#include "latentaudit/report/detail/audit_data.hpp"
#include "support/findings.hpp"

namespace la = latentaudit;

namespace {

constexpr double kAlpha = 0.05;

struct null_design {
  std::size_t items = 40;
  std::size_t seeds = 1;
  double p = 0.6;          ///< every arm's accuracy before the item shift
  double kv_gain = 0.0;    ///< kv_full's accuracy = p + kv_gain (before the shift)
  double text_gain = 0.0;  ///< text_full's accuracy = p + text_gain (the positive control's gate)
  double item_sd = 1.0;    ///< sd of the item's logit shift (shared by its arms and seeds)
  double drop_kv = 0.0;    ///< share of kv_full records lost at random
};

double expit(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double logit(double p) { return std::log(p / (1.0 - p)); }

std::vector<la::trial_record> simulate(const null_design& d, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<la::trial_record> out;
  for (std::size_t i = 0; i < d.items; ++i) {
    const double shift = d.item_sd * z(g);
    for (std::uint64_t s = 0; s < d.seeds; ++s) {
      for (const char* arm : {"no_comm", "text_full", "kv_full", "deranged"}) {
        const std::string a = arm;
        const double p = a == "kv_full" ? d.p + d.kv_gain : a == "text_full" ? d.p + d.text_gain : d.p;
        la::trial_record r;
        r.item = i;
        r.seed = s;
        r.arm = a;
        r.arm_kind = a;
        r.regime = "need";
        r.correct = u(g) < expit(logit(p) + shift);
        const bool drop = a == "kv_full" && u(g) < d.drop_kv;
        if (!drop) out.push_back(std::move(r));
      }
    }
  }
  return out;
}

struct exact_rates {
  std::size_t reps = 0;
  std::size_t text_yes = 0, kv_yes = 0, deranged_yes = 0, kv_betting_yes = 0, kv_exact_method = 0;
};

// The report's path on `reps` data sets of `d` (data set r: generator seed seed0 + r).
exact_rates run(const null_design& d, std::size_t reps, std::uint64_t seed0) {
  auto o = la::test::fast_options();
  o.bootstrap_replicates = 39;  // the descriptive interval only; no verdict reads it
  exact_rates r;
  r.reps = reps;
  for (std::size_t k = 0; k < reps; ++k) {
    const auto records = simulate(d, seed0 + k);
    const auto core = la::analyse_records(records, o);
    const auto& text = la::test::find(core.findings, "need.text_beats_no_comm");
    const auto& kv = la::test::find(core.findings, "need.kv_beats_no_comm");
    const auto& der = la::test::find(core.findings, "need.deranged_beats_no_comm");
    for (const auto* f : {&text, &kv, &der}) {
      INFO(f->id << " replicate " << k << " seed " << seed0 + k << ": " << f->detail);
      if (f->answer == la::verdict::yes) CHECK(f->ci_low >= 0.0);
      CHECK(f->ci_low <= f->estimate + 1e-12);
      CHECK(f->estimate <= f->ci_high + 1e-12);
    }
    for (const auto* f : {&text, &kv}) {  // sequence steps: a lower limit above 0 only with a "yes"
      INFO(f->id << " replicate " << k << " seed " << seed0 + k << ": " << f->detail);
      // (kv's "yes" needs the positive control's too: the gate makes it inconclusive otherwise)
      if (f->ci_low > 0.0 && (f == &text || text.answer == la::verdict::yes))
        CHECK(f->answer == la::verdict::yes);
    }
    r.text_yes += text.answer == la::verdict::yes ? 1 : 0;
    r.kv_yes += kv.answer == la::verdict::yes ? 1 : 0;
    r.deranged_yes += der.answer == la::verdict::yes ? 1 : 0;
    r.kv_exact_method += kv.method.find("exact conditional McNemar") != std::string::npos ? 1 : 0;
    const auto& e = la::test::effect(core.effects, "need:kv_full-no_comm");
    // the betting rule the sequence step used before: verdict lower limit > 0 in every view
    bool betting = e.verdict_low > 0.0;
    if (e.missing.any())
      betting = betting && e.missing.low.verdict_low > 0.0 && e.missing.high.verdict_low > 0.0;
    r.kv_betting_yes += betting ? 1 : 0;
  }
  return r;
}

double rate(std::size_t k, std::size_t n) { return static_cast<double>(k) / static_cast<double>(n); }
double mc_se(double r, std::size_t n) { return std::sqrt(r * (1.0 - r) / static_cast<double>(n)); }

}  // namespace

TEST_CASE("exact McNemar view: p-values and the lower limit that inverts the test",
          "[report][superiority_exact]") {
  // b = 10, c = 2: P(Bin(12, 1/2) >= 10) = (66 + 12 + 1) / 4096
  const auto v = la::detail::exact_view_of(10, 2, kAlpha, -0.03);
  CHECK(v.p_above == Approx(79.0 / 4096.0).epsilon(1e-12));
  CHECK(v.p_two == Approx(2.0 * 79.0 / 4096.0).epsilon(1e-12));
  CHECK(v.lower == 0.0);  // rejects: max(0, betting lower limit)
  CHECK(la::detail::exact_lower_limit(10, 2, kAlpha, 0.04) == 0.04);
  // b = 2, c = 10: no rejection; Clopper–Pearson lower limit of 2/12 at 0.05 is the π with
  // P_π(X >= 2) = 0.05, i.e. 1 − (1 − π)^12 − 12π(1 − π)^11 = 0.05
  const auto w = la::detail::exact_view_of(2, 10, kAlpha, -0.2);
  const double pl = (1.0 + w.lower) / 2.0;
  CHECK(1.0 - std::pow(1.0 - pl, 12) - 12.0 * pl * std::pow(1.0 - pl, 11) == Approx(kAlpha).epsilon(1e-6));
  CHECK(w.lower < -0.2);
  CHECK(w.p_above == Approx(1.0 - 13.0 / 4096.0).epsilon(1e-12));
  // no discordant pair: p = 1 and the conditional limit is −1 (nothing is known of π)
  const auto n0 = la::detail::exact_view_of(0, 0, kAlpha, -0.05);
  CHECK(n0.p_above == 1.0);
  CHECK(n0.p_two == 1.0);
  CHECK(n0.lower == -1.0);
  // b = 5, c = 0: P(X >= 5 | 5) = 1/32 <= 0.05 rejects
  CHECK(la::detail::exact_view_of(5, 0, kAlpha, -0.1).lower == 0.0);
  // b = 4, c = 0: 1/16 > 0.05 does not reject; π_L = 0.05^(1/4), so 2π_L − 1 = −0.054
  CHECK(la::detail::exact_view_of(4, 0, kAlpha, -0.1).lower == -0.1);
  CHECK(la::detail::exact_view_of(4, 0, kAlpha, -0.01).lower ==
        Approx(2.0 * std::pow(kAlpha, 0.25) - 1.0).epsilon(1e-9));
}

TEST_CASE("superiority findings: size at a clustered global null, power of exact McNemar vs betting",
          "[report][superiority_exact][mc]") {
  constexpr std::size_t R = 300;
  const double bound = kAlpha + 2.0 * mc_se(kAlpha, R);  // 0.0752 at R = 300
  struct cell {
    const char* name;
    null_design d;
    std::uint64_t seed;
  };
  // every arm equal (the positive control's null; the gate then holds the others inconclusive), and
  // text_full planted 35 points up so the gate opens and kv_full and deranged are at their null
  const cell nulls[] = {
      {"one seed per item, every arm equal (exact McNemar decides)", {.items = 40, .seeds = 1}, 52300000},
      {"one seed per item, text +35 points (exact McNemar decides)",
       {.items = 40, .seeds = 1, .text_gain = 0.35},
       52310000},
      {"three seeds per item, text +35 points (betting decides)",
       {.items = 30, .seeds = 3, .text_gain = 0.35},
       52320000},
      {"one seed per item, text +35 points, 15% of kv_full missing (worst-case bounds)",
       {.items = 40, .seeds = 1, .text_gain = 0.35, .drop_kv = 0.15},
       52330000},
  };
  for (const auto& c : nulls) {
    const auto r = run(c.d, R, c.seed);
    const double t = rate(r.text_yes, R), k = rate(r.kv_yes, R), p = rate(r.deranged_yes, R);
    std::cout << "superiority_exact_test: null, " << c.name << ", " << c.d.items << " items x " << c.d.seeds
              << " seeds, " << R << " data sets seeded " << c.seed << " + r: yes rate text_beats " << t
              << ", kv_beats " << k << ", deranged_beats (Holm) " << p << " (bound alpha + 2 se = " << bound
              << ")\n";
    INFO(c.name);
    if (c.d.text_gain == 0.0) CHECK(t <= bound);  // text_full is at its null only here
    CHECK(k <= bound);
    CHECK(p <= bound);
    if (c.d.seeds == 1) {
      CHECK(r.kv_exact_method == R);  // the method names the test that decided
    } else {
      CHECK(r.kv_exact_method == 0);
    }
  }
  // power: kv_full +20 points over no_comm at one seed per item
  const null_design alt{.items = 60, .seeds = 1, .p = 0.45, .kv_gain = 0.20, .text_gain = 0.45};
  constexpr std::uint64_t alt_seed = 52340000;
  const auto a = run(alt, R, alt_seed);
  const double exact = rate(a.kv_yes, R), betting = rate(a.kv_betting_yes, R);
  std::cout << "superiority_exact_test: power, kv_full +20 points (0.45 -> 0.65 before the item shift), "
            << alt.items << " items x 1 seed, " << R << " data sets seeded " << alt_seed
            << " + r: need.kv_beats_no_comm yes (exact McNemar) " << exact << ", betting lower limit > 0 "
            << betting << "\n";
  CHECK(a.kv_yes >= a.kv_betting_yes);
  CHECK(exact >= betting + 0.05);  // measured about 0.1 more at these seeds
}
