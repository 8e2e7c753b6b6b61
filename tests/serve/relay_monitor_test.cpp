// SPDX-License-Identifier: MIT
// Tests of the public relay monitor (serve/relay_monitor.hpp): its bettor against hand-computed
// capitals, its thresholds and reasons, the report's replay switch running on it, and the Monte
// Carlo of issue 54's acceptance (200 seeded streams; seeds printed; numbers in docs/serving.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <iostream>

#include "latentaudit/core/error.hpp"
#include "latentaudit/report/analyses/relay_switch.hpp"
#include "latentaudit/serve/relay_monitor.hpp"
#include "serve/relay_monitor_mc.hpp"

namespace la = latentaudit;

TEST_CASE("worse_bettor: capital prod(1 - lambda x) with the windowed plug-in bet", "[serve]") {
  la::worse_bettor b({.alpha = 0.05, .window = 2, .max_bet = 0.5});
  CHECK(b.next_bet() == 0.0);
  b.update(-1.0);  // bet 0: capital stays 1
  CHECK(b.log_capital() == 0.0);
  // window {-1}: m = -1, v = 0 -> clip(1/1, 0, 0.5) = 0.5
  CHECK(b.next_bet() == 0.5);
  b.update(-1.0);
  CHECK(b.log_capital() == Approx(std::log(1.5)));
  b.update(1.0);  // window {-1, -1}: bet 0.5; factor 1 - 0.5 = 0.5
  CHECK(b.log_capital() == Approx(std::log(1.5 * 0.5)));
  CHECK(b.n() == 3);
  CHECK_THROWS_AS(b.update(1.5), la::invalid_argument);
  CHECK_THROWS_AS(b.update(std::nan("")), la::invalid_argument);
}

TEST_CASE("relay_monitor: k streams, threshold log(k/alpha), off once with when and why", "[serve]") {
  la::relay_monitor m({.bets = {.alpha = 0.05, .window = 5, .max_bet = 0.5},
                       .vs_text = true,
                       .vs_no_comm = false,
                       .on_correct = true,
                       .on_likelihood = true});
  CHECK(m.streams() == 2);
  CHECK(m.log_threshold() == Approx(std::log(2.0 / 0.05)));
  CHECK_THROWS_AS(m.bettor(la::relay_fallback::no_comm, la::relay_endpoint::correct), la::invalid_argument);
  CHECK_THROWS_AS(m.observe_difference(la::relay_fallback::no_comm, la::relay_endpoint::correct, 0.0),
                  la::invalid_argument);
  std::uint64_t id = 100;
  while (m.on() && id < 200) {
    m.observe({.request_id = id++,
               .fallback = la::relay_fallback::text,
               .relay_correct = false,
               .fallback_correct = true,
               .relay_likelihood = 0.1,
               .fallback_likelihood = 0.9});
  }
  REQUIRE_FALSE(m.on());
  const auto& ev = *m.off();
  CHECK(ev.pairs == m.pairs());
  CHECK(ev.request_id == id - 1);
  CHECK(ev.fallback == la::relay_fallback::text);
  CHECK(ev.endpoint == la::relay_endpoint::correct);  // the correctness stream is stepped first
  CHECK(ev.log_capital >= ev.log_threshold);
  CHECK(ev.reason.find("worse than text on correct") != std::string::npos);
  // a pair without likelihoods feeds the correctness stream only; capitals keep moving after off
  const auto nl = m.bettor(la::relay_fallback::text, la::relay_endpoint::likelihood).n();
  m.observe({.request_id = 1, .relay_correct = false, .fallback_correct = true});
  CHECK(m.bettor(la::relay_fallback::text, la::relay_endpoint::likelihood).n() == nl);
  CHECK(m.off()->pairs == ev.pairs);  // the event stays the first one
  CHECK_THROWS_AS(m.observe({.relay_likelihood = 1.5, .fallback_likelihood = 0.5}), la::invalid_argument);
  CHECK_THROWS_AS(la::relay_monitor({.vs_text = false, .vs_no_comm = false}), la::invalid_argument);
  CHECK_THROWS_AS(la::relay_monitor({.on_correct = false, .on_likelihood = false}), la::invalid_argument);
  CHECK_THROWS_AS(la::relay_monitor({.bets = {.alpha = 0.0}}), la::invalid_argument);
  CHECK(m.guarantee().find("Ville") != std::string::npos);
}

TEST_CASE("relay_switch (the report's replay) runs on the public monitor", "[serve]") {
  // the same differences through both give the same capitals and the same switch item
  la::relay_switch sw;
  la::relay_monitor m;
  auto g = la::make_stream({7, 0, 1, 0});
  for (int i = 0; i < 400; ++i) {
    const double xt = i < 200 ? 0.0 : (la::uniform01(g) < 0.6 ? -1.0 : 0.0);
    const double xn = la::uniform01(g) < 0.5 ? 1.0 : 0.0;
    sw.update(xt, xn);
    m.observe_difference(la::relay_fallback::text, la::relay_endpoint::correct, xt);
    m.observe_difference(la::relay_fallback::no_comm, la::relay_endpoint::correct, xn);
    CHECK(sw.vs_text().log_capital() ==
          m.bettor(la::relay_fallback::text, la::relay_endpoint::correct).log_capital());
  }
  REQUIRE(sw.off_at());
  CHECK(*sw.off_at() > 200);
  CHECK(sw.reason() == "text");
  CHECK(m.off()->pairs == 2 * *sw.off_at() - 1);  // two differences per item; text crossed first
}

namespace {
constexpr std::uint64_t mc_seed = 20270154;
constexpr std::uint64_t mc_reps = 200;
}  // namespace

TEST_CASE("relay_monitor Monte Carlo: 200 seeded streams without change, with a change point", "[serve]") {
  // Acceptance (issue 54): without change never off in >= 95 % of 200 streams; with a change point
  // off after it in >= 80 % and never before it in >= 95 %. MC s.e. of a rate p over 200 streams:
  // sqrt(p(1-p)/200) (0.0154 at p = 0.95, 0.028 at p = 0.8). The null here is the boundary of H0
  // (relay exactly as good as text), where Ville's bound allows up to alpha = 0.05 switches: the
  // 2000-stream estimates of the [slow] case below put the rate at 0.021 (s.e. 0.003), and 0.018
  // before the change: the 200-stream rates then sit about 3 s.e. (0.010) inside the 95 % bounds.
  // The seeds are fixed, so the test is exact; docs/serving.md has the numbers.
  la::test::monitor_scenario null_c{.pairs = 2000, .change = 0};
  la::test::monitor_scenario change_c{.pairs = 1500, .change = 500};
  const auto n = la::test::run_monitor_mc(null_c, mc_reps, mc_seed, 1);
  const auto c = la::test::run_monitor_mc(change_c, mc_reps, mc_seed + 1, 2);
  const double never_null = 1.0 - n.rate(n.off);
  const double after = c.rate(c.off_after), never_before = 1.0 - c.rate(c.off_before);
  std::cout << "relay_monitor MC (" << mc_reps << " streams each; seeds " << mc_seed
            << " (no change, 2000 pairs), " << mc_seed + 1
            << " (change at pair 500 of 1500, stale share 0.5)): never off without change " << never_null
            << " (s.e. " << la::test::mc_se(never_null, mc_reps) << "); off after the change " << after
            << " (s.e. " << la::test::mc_se(after, mc_reps) << "), never before it " << never_before
            << " (s.e. " << la::test::mc_se(never_before, mc_reps) << "), mean delay " << c.mean_delay()
            << " pairs\n";
  CHECK(never_null >= 0.95);
  CHECK(after >= 0.80);
  CHECK(never_before >= 0.95);
}

TEST_CASE("relay_monitor Monte Carlo: a milder change, the correctness stream alone", "[serve][slow]") {
  // Numbers for docs/serving.md (not acceptance bounds): stale share 0.2; one stream (k = 1).
  la::test::monitor_scenario mild{.pairs = 3000, .change = 500, .stale_share = 0.2};
  la::test::monitor_scenario one{.pairs = 1500, .change = 500};
  one.options.on_likelihood = false;
  const auto a = la::test::run_monitor_mc(mild, mc_reps, mc_seed + 2, 3);
  const auto b = la::test::run_monitor_mc(one, mc_reps, mc_seed + 3, 4);
  // the acceptance's two scenarios on 2000 streams each (seeds + 4, + 5): the rates behind the bounds
  constexpr std::uint64_t big = 2000;
  const auto n = la::test::run_monitor_mc({.pairs = 2000, .change = 0}, big, mc_seed + 4, 1);
  const auto c = la::test::run_monitor_mc({.pairs = 1500, .change = 500}, big, mc_seed + 5, 2);
  std::cout << "relay_monitor MC, " << big << " streams (seeds " << mc_seed + 4 << ", " << mc_seed + 5
            << "): off without change " << n.rate(n.off) << " (s.e. " << la::test::mc_se(n.rate(n.off), big)
            << "); with the change: off after " << c.rate(c.off_after) << " (s.e. "
            << la::test::mc_se(c.rate(c.off_after), big) << "), before " << c.rate(c.off_before) << " (s.e. "
            << la::test::mc_se(c.rate(c.off_before), big) << "), mean delay " << c.mean_delay() << "\n";
  CHECK(n.rate(n.off) <= 0.05 + 3 * la::test::mc_se(0.05, big));
  std::cout << "relay_monitor MC mild (seed " << mc_seed + 2
            << ", stale share 0.2, change at 500 of 3000): off after " << a.rate(a.off_after) << ", before "
            << a.rate(a.off_before) << ", mean delay " << a.mean_delay() << "; correctness only (seed "
            << mc_seed + 3 << "): off after " << b.rate(b.off_after) << ", before " << b.rate(b.off_before)
            << ", mean delay " << b.mean_delay() << "\n";
  CHECK(a.rate(a.off_before) <= 0.05 + 3 * la::test::mc_se(0.05, mc_reps));
  CHECK(b.rate(b.off_before) <= 0.05 + 3 * la::test::mc_se(0.05, mc_reps));
}
