// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/relay_switch.hpp (header-only mode includes this
// file; compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_RELAY_SWITCH_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_RELAY_SWITCH_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../relay_switch.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "../../../core/detail/check.hpp"
#include "../../../core/error.hpp"
#include "../../detail/audit_data.hpp"

namespace latentaudit {

LATENTAUDIT_INLINE relay_switch::relay_switch(const relay_switch_options& o)
    : monitor_(relay_monitor_options{.bets = o}) {}

LATENTAUDIT_INLINE void relay_switch::update(double x_text, double x_none) {
  const bool was_on = monitor_.on();
  monitor_.observe_difference(relay_fallback::text, relay_endpoint::correct, x_text);
  monitor_.observe_difference(relay_fallback::no_comm, relay_endpoint::correct, x_none);
  ++n_;
  if (was_on && !monitor_.on()) {
    off_at_ = n_;
    reason_ = std::string(relay_fallback_name(monitor_.off()->fallback));
  }
}

LATENTAUDIT_INLINE switch_replay replay_relay_switch(std::span<const trial_record> records,
                                                     std::string_view relay, std::string_view text,
                                                     std::string_view no_comm, const relay_switch_options& o,
                                                     const detail::unit_records* units) {
  constexpr std::string_view fn = "replay_relay_switch";
  detail::check_relay_switch_options(fn, o);
  switch_replay out;
  out.relay = relay;
  out.text = text;
  out.no_comm = no_comm;
  out.threshold = std::log(2.0 / o.alpha);
  out.guarantee = fmt::format(
      "always valid: if at every item relay is at least as accurate as text and as no communication "
      "(conditional mean of each item's difference >= 0), the switch ever turns relay off - at any "
      "time, over an unbounded stream - with probability <= {:g} (two one-sided betting capitals "
      "prod(1 - lambda x) with predictable bets in [0, {:g}] from the last {} items, each stopped at "
      "2/alpha: Ville's inequality, alpha/2 each)",
      o.alpha, o.max_bet, o.window);
  const std::string arms[] = {std::string(relay), std::string(text), std::string(no_comm)};
  const auto t = detail::units_of(units, fn, records, arms, detail::duplicate_error::invalid_argument);
  struct item_obs {
    std::uint64_t item;
    std::string regime;
    double x_text = 0, x_none = 0, n = 0;
  };
  std::vector<item_obs> obs;
  for (std::size_t u = 0; u < t.units(); ++u) {
    const std::size_t a = t.record(u, 0), b = t.record(u, 1), c = t.record(u, 2);
    if (a == detail::unit_records::npos || b == detail::unit_records::npos || c == detail::unit_records::npos)
      continue;
    if (obs.empty() || obs.back().item != t.unit_item[u]) obs.push_back({t.unit_item[u], records[a].regime});
    auto& x = obs.back();
    const double y = records[a].correct ? 1.0 : 0.0;
    x.x_text += y - (records[b].correct ? 1.0 : 0.0);
    x.x_none += y - (records[c].correct ? 1.0 : 0.0);
    x.n += 1.0;
  }
  std::vector<const item_obs*> good, bad;
  for (auto& x : obs) {
    x.x_text /= x.n;
    x.x_none /= x.n;
    (x.regime == "stale" || x.regime == "conflict" ? bad : good).push_back(&x);
  }
  if (bad.empty() || good.size() < 2) {
    out.note = bad.empty()
                   ? "not replayed: no stale or conflict item holds the relay, text and no_comm arms"
                   : "not replayed: fewer than 2 need/no_need items hold the relay, text and no_comm arms";
    return out;
  }
  // First half of the good items, then the rest merged with the bad ones, bad share rising.
  std::vector<const item_obs*> order(good.begin(),
                                     good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  out.change_point = order.size();
  std::size_t gi = order.size(), bi = 0;
  const std::size_t L = good.size() - gi + bad.size();
  for (std::size_t j = 0; j < L; ++j) {
    const double f = static_cast<double>(j + 1) / static_cast<double>(L);
    const auto target = static_cast<std::size_t>(std::llround(static_cast<double>(bad.size()) * f * f));
    const bool take_bad = bi < bad.size() && (bi < target || gi >= good.size());
    order.push_back(take_bad ? bad[bi++] : good[gi++]);
  }
  relay_switch sw(o);
  for (const auto* x : order) {
    sw.update(x->x_text, x->x_none);
    out.regimes.push_back(x->regime);
    out.stale_items += x->regime == "stale" ? 1 : 0;
    out.conflict_items += x->regime == "conflict" ? 1 : 0;
    out.log_capital_text.push_back(sw.vs_text().log_capital());
    out.log_capital_none.push_back(sw.vs_none().log_capital());
  }
  out.available = true;
  out.items = order.size();
  out.off_at = sw.off_at();
  out.off_reason = sw.reason();
  out.note = fmt::format(
      "order fixed by regime and item id before any outcome: the first {} of {} need/no_need items, then "
      "the remaining {} merged with {} stale and {} conflict items, the cumulative count of stale/conflict "
      "items following {}*(j/{})^2 (their share rising linearly)",
      out.change_point, good.size(), good.size() - out.change_point, out.stale_items, out.conflict_items,
      bad.size(), L);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_RELAY_SWITCH_INL_HPP
