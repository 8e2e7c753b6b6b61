// SPDX-License-Identifier: MIT
// The link fitted from measured relays (report/analyses/link_fit.hpp): least squares of the
// measured crossing time on the frame size, HC3 intervals; what is left out; the per-arm table;
// the report's --link measured; and the intervals' coverage by Monte Carlo on synthetic timings.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/report/analyses/link_fit.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

using namespace latentaudit;

namespace {

// Synthetic measured relays: `per_size` frames at each of the sizes, t = alpha + bytes / bw + e with
// heteroskedastic, skewed noise: e = sd(bytes) · (exponential(1) − 1), sd = jitter + rel · bytes / bw.
std::vector<trial_record> synthetic(std::uint64_t seed, double alpha, double bw, std::size_t per_size,
                                    double jitter = 5e-6, double rel = 0.05) {
  const double sizes[] = {2e3, 2e4, 2e5, 1e6, 4e6, 1.6e7};
  auto g = make_stream({seed, 0, 0x4C46, 0});
  std::vector<trial_record> out;
  std::uint64_t item = 0;
  for (double b : sizes)
    for (std::size_t k = 0; k < per_size; ++k) {
      trial_record r;
      r.item = item++;
      r.arm = b < 1e5 ? "text_full" : "kv_full";
      r.bytes = static_cast<std::uint64_t>(b);
      r.latency.transfer_s = b / 25e9 + 10e-6;
      const double sd = jitter + rel * b / bw;
      const double e = -std::log(uniform_open01(g)) - 1.0;  // mean 0, sd 1, right-skewed
      r.transfer_measured_s = std::max(0.0, alpha + b / bw + sd * e);
      out.push_back(std::move(r));
    }
  return out;
}

}  // namespace

TEST_CASE("link fit: alpha and bandwidth from measured relays, what is left out, the per-arm table") {
  auto recs = synthetic(11, 40e-6, 2e9, 20);
  const auto f = fit_link(recs);
  REQUIRE(f.ok());
  CHECK(f.relays == recs.size());
  CHECK(f.distinct_sizes == 6);
  CHECK(f.alpha_s.ci_low < 40e-6);
  CHECK(f.alpha_s.ci_high > 40e-6);
  CHECK(f.bandwidth_bytes_s == Approx(2e9).epsilon(0.05));
  REQUIRE(f.bandwidth_low.has_value());
  REQUIRE(f.bandwidth_high.has_value());
  CHECK(*f.bandwidth_low < 2e9);
  CHECK(*f.bandwidth_high > 2e9);
  const auto L = f.as_link();
  CHECK(L.name == "measured");
  CHECK(L.bandwidth_bytes_s == f.bandwidth_bytes_s);
  CHECK(L.alpha_s >= 0);
  // rejected frames, unmeasured records and empty relays are left out
  trial_record bad = recs.front();
  bad.relay_error = "decode_relay: CRC32C mismatch";
  bad.transfer_measured_s = 100.0;
  trial_record local = recs.front();
  local.transfer_measured_s.reset();
  trial_record none = recs.front();
  none.bytes = 0;
  auto more = recs;
  more.push_back(bad);
  more.push_back(local);
  more.push_back(none);
  const auto g = fit_link(more);
  CHECK(g.relays == recs.size());
  CHECK(g.failed_relays == 1);
  CHECK(g.alpha_s.estimate == Approx(f.alpha_s.estimate).margin(1e-12));
  // per arm: modeled beside measured
  const auto rows = link_by_arm(more, g);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].arm == "kv_full");
  CHECK(rows[0].failed == 0);
  CHECK(rows[1].arm == "text_full");
  CHECK(rows[1].failed == 1);
  CHECK(rows[0].mean_measured_s > rows[0].mean_modeled_s);  // 2 GB/s measured vs pcie4 modeled
  CHECK(std::isfinite(rows[0].mean_fitted_s));
  // too little to fit
  CHECK(!fit_link(std::span(recs).first(2)).ok());
  std::vector<trial_record> one_size(recs.begin(), recs.begin() + 20);
  CHECK_THAT(fit_link(one_size).missing, Catch::Contains("2 frame sizes"));
  CHECK_THAT(fit_link(std::vector<trial_record>{}).missing, Catch::Contains("--relay-transport"));
  CHECK_THROWS_AS(fit_link(recs, {.level = 1.5}), invalid_argument);
  CHECK_THROWS_AS(fit_link(one_size).as_link(), invalid_argument);
}

// Coverage of the 95 % intervals of alpha and of the slope (hence of the bandwidth interval, its
// reciprocal) on heteroskedastic, right-skewed synthetic timings: 6 sizes x 10 relays (n = 60) and
// x 40 (n = 240), 2000 replicates each, seeds 1..2000 (printed). The MC standard error of a 95 %
// coverage is 0.49 points: tolerance ±2 points (4 SE) around 95 %, except alpha at n = 60, whose
// interval rests on the 20 smallest frames with skewed noise and undercovers (measured 91.6 %):
// there the check is >= 90 %. Figures: docs/audit-report.md, "Link fitted from measured relays".
TEST_CASE("link fit: the 95 % intervals of alpha and bandwidth cover at the nominal rate (Monte Carlo)",
          "[slow]") {
  const double alpha = 30e-6, bw = 3e9;
  for (std::size_t per : {10u, 40u}) {
    std::size_t cover_a = 0, cover_b = 0, reps = 2000;
    for (std::uint64_t seed = 1; seed <= reps; ++seed) {
      const auto f = fit_link(synthetic(seed, alpha, bw, per));
      REQUIRE(f.ok());
      cover_a += f.alpha_s.ci_low <= alpha && alpha <= f.alpha_s.ci_high;
      cover_b += f.seconds_per_byte.ci_low <= 1 / bw && 1 / bw <= f.seconds_per_byte.ci_high;
    }
    const double ca = static_cast<double>(cover_a) / static_cast<double>(reps);
    const double cb = static_cast<double>(cover_b) / static_cast<double>(reps);
    std::printf("link fit coverage (n = %zu, seeds 1..%zu): alpha %.4f, bandwidth %.4f\n", 6 * per, reps, ca,
                cb);
    if (per == 10)
      CHECK(ca >= 0.90);
    else
      CHECK(std::abs(ca - 0.95) <= 0.02);
    CHECK(std::abs(cb - 0.95) <= 0.02);
  }
}
