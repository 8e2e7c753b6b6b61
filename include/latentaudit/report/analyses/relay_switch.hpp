// SPDX-License-Identifier: MIT
// latentaudit: the online relay switch — an always-valid, one-sided test that turns relay OFF when
// relaying becomes worse than the fallbacks (text, and no communication) — and its replay on the
// audit's records in an order with a change point (a stale/conflict share rising after some item).
//
// Observations, one per item (its seeds averaged): x_text = mean(relay − text), x_none =
// mean(relay − no_comm), each in [−1, 1]. For each, a bettor bets that relay is worse: capital
// K_t = Π_{i≤t} (1 − λ_i x_i) with a predictable bet λ_i ∈ [0, max_bet] (max_bet ≤ 1/2, so every
// factor is ≥ 1/2 > 0): λ_i = clip(−m̂/(v̂ + m̂²), 0, max_bet), m̂ and v̂ the mean and variance of the
// last `window` observations before i (0 before any). Under H₀ "at every item, relay is at least
// as accurate as the fallback in conditional expectation" (E[x_i | past] ≥ 0 for all i), each K is
// a non-negative supermartingale with K_0 = 1, so by Ville's inequality P(∃t: K_t ≥ 2/α) ≤ α/2;
// the switch turns relay off the first time either capital reaches 2/α, so under H₀ it ever turns
// relay off — at any time, over an unbounded stream, whatever the order was chosen to be (fixed
// before the outcomes) — with probability ≤ α. The windowed bet forgets the good past, so the
// capital grows soon after a change point (it stays near 1 while relay is better: the bet is 0).
// Validation by simulation: docs/audit-report.md "Relay switch". The bettor and the switch are the
// public relay_monitor's (serve/relay_monitor.hpp: one owner of the betting math); the replay here
// is not part of the public API.
#ifndef LATENTAUDIT_REPORT_ANALYSES_RELAY_SWITCH_HPP
#define LATENTAUDIT_REPORT_ANALYSES_RELAY_SWITCH_HPP

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../config.hpp"
#include "../../serve/relay_monitor.hpp"
#include "../../trial/record.hpp"

namespace latentaudit::detail {
struct unit_records;  // report/detail/audit_data.hpp: the report's one table
}  // namespace latentaudit::detail

namespace latentaudit {

/// @brief The online switch of the replay: relay is on until either bettor (vs text, vs no
/// communication) reaches capital 2/α — the public relay_monitor (serve/relay_monitor.hpp) on the
/// correctness endpoint against both fallbacks, fed one item's mean differences at a time.
class relay_switch {
 public:
  /// @brief A switch with both capitals at 1.
  /// @param o the bettors' options
  /// @throws invalid_argument for bad options
  explicit relay_switch(const relay_switch_options& o = {});
  /// @brief Adds one item: x_text = relay − text, x_none = relay − no_comm (each in [−1, 1]).
  /// @param x_text the item's mean difference against text
  /// @param x_none the item's mean difference against no communication
  /// @throws invalid_argument for a difference outside [−1, 1] or not finite
  void update(double x_text, double x_none);
  /// @brief Whether relay is still on.
  /// @returns true until a capital crossed 2/α
  [[nodiscard]] bool on() const noexcept { return !off_at_.has_value(); }
  /// @brief The item (1-based) at which relay was turned off, if it was.
  /// @returns the item, or nothing
  [[nodiscard]] std::optional<std::size_t> off_at() const noexcept { return off_at_; }
  /// @brief Which fallback triggered it: "text" or "no_comm" ("" while on).
  /// @returns the fallback's name
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  /// @brief The bettor against text.
  /// @returns it
  [[nodiscard]] const worse_bettor& vs_text() const {
    return monitor_.bettor(relay_fallback::text, relay_endpoint::correct);
  }
  /// @brief The bettor against no communication.
  /// @returns it
  [[nodiscard]] const worse_bettor& vs_none() const {
    return monitor_.bettor(relay_fallback::no_comm, relay_endpoint::correct);
  }
  /// @brief Items seen.
  /// @returns the count
  [[nodiscard]] std::size_t n() const noexcept { return n_; }
  /// @brief The public monitor the switch runs on.
  /// @returns it
  [[nodiscard]] const relay_monitor& monitor() const noexcept { return monitor_; }

 private:
  relay_monitor monitor_;
  std::size_t n_ = 0;
  std::optional<std::size_t> off_at_;
  std::string reason_;
};

/// @brief The switch replayed on the records in an order with a change point.
struct switch_replay {
  bool available = false;                ///< the replay ran (else `note` says why)
  std::string note;                      ///< why it did not run, or how the order was built
  std::string relay, text, no_comm;      ///< the arms
  std::size_t items = 0;                 ///< items in the stream
  std::size_t change_point = 0;          ///< items before the first stale/conflict item
  std::size_t stale_items = 0;           ///< stale items in the stream
  std::size_t conflict_items = 0;        ///< conflict items in the stream
  std::vector<std::string> regimes;      ///< regime of each item, in stream order
  std::vector<double> log_capital_text;  ///< log capital vs text after each item
  std::vector<double> log_capital_none;  ///< log capital vs no_comm after each item
  std::optional<std::size_t> off_at;     ///< item at which relay was switched off
  std::string off_reason;                ///< "text" or "no_comm"
  double threshold = 0.0;                ///< log(2/α), the switching level of each log capital
  std::string guarantee;                 ///< the always-valid guarantee, in words
};

/// @brief Replays the switch: items holding relay, text and no_comm records, each regime's items
/// in item-id order; first half of the need/no_need items, then the rest of them merged with the
/// stale and conflict items so that the cumulative bad count follows B·(j/L)² (the bad share
/// rising linearly after the change point). The order depends on regimes and item ids only.
/// @param records the trial records
/// @param relay,text,no_comm arm labels (resolved by the caller)
/// @param o the switch options
/// @param units the report's one table of these records (detail::units_of), or null: grouped here
/// @throws invalid_argument for bad options or a duplicate (item, seed, arm)
[[nodiscard]] switch_replay replay_relay_switch(std::span<const trial_record> records, std::string_view relay,
                                                std::string_view text, std::string_view no_comm,
                                                const relay_switch_options& o = {},
                                                const detail::unit_records* units = nullptr);

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/relay_switch-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_RELAY_SWITCH_HPP
