// SPDX-License-Identifier: MIT
// latentaudit: the always-valid relay monitor — the public switch a serving stack feeds with the
// paired observations of its production sample (serve/relay_sampler.hpp) and that turns relay OFF
// when relaying has become worse than a fallback (text, or no communication), saying when and why.
//
// One owner of the betting math: `worse_bettor` below is the bettor of the report's replay too
// (report/analyses/relay_switch.hpp: relay_switch is this monitor on the correctness endpoint).
//
// Each stream (fallback f ∈ {text, no_comm} × endpoint e ∈ {correct, likelihood}) sees differences
// x_i = relay − fallback ∈ [−1, 1] (correctness: 1/0 answers; likelihood: a probability in [0, 1],
// e.g. the continuation probability or exp(answer_logprob)). Its bettor bets that relay is worse:
// capital K_t = Π_{i≤t} (1 − λ_i x_i) with a predictable bet λ_i ∈ [0, max_bet] (max_bet ≤ 1/2, so
// every factor is ≥ 1/2 > 0): λ_i = clip(−m̂/(v̂ + m̂²), 0, max_bet), m̂ and v̂ the mean and variance of
// the last `window` observations before i (0 before any). Under H₀ "at every observation relay is at
// least as good as the fallback in conditional expectation" (E[x_i | past] ≥ 0), each K is a
// non-negative supermartingale with K_0 = 1, so by Ville's inequality P(∃t: K_t ≥ k/α) ≤ α/k; with k
// streams each stopped at k/α, relay is ever turned off under H₀ — at any time, over an unbounded
// stream — with probability ≤ α (a union bound over the k streams).
// Validation by simulation: docs/serving.md "The monitor's Monte Carlo" (tests/serve/).
#ifndef LATENTAUDIT_SERVE_RELAY_MONITOR_HPP
#define LATENTAUDIT_SERVE_RELAY_MONITOR_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"

namespace latentaudit {

/// @brief Options of the relay switch's bettors (shared by relay_monitor and the report's replay).
struct relay_switch_options {
  double alpha = 0.05;      ///< P(relay ever switched off | H₀) ≤ alpha; in (0, 1)
  std::size_t window = 20;  ///< observations behind each bet, ≥ 2
  double max_bet = 0.5;     ///< largest bet, in (0, 0.5]
};

namespace detail {
/// @brief Checks relay_switch_options, naming `fn`.
/// @param fn the public function named in the message
/// @param o the options
/// @throws invalid_argument for alpha outside (0, 1), window < 2 or max_bet outside (0, 0.5]
inline void check_relay_switch_options(std::string_view fn, const relay_switch_options& o) {
  check_open_unit(fn, "alpha", o.alpha);
  if (o.window < 2) throw_invalid(fn, "window", "must be at least 2, got " + number_text(o.window));
  if (!(o.max_bet > 0.0 && o.max_bet <= 0.5))
    throw_invalid(fn, "max_bet", "must lie in (0, 0.5], got " + number_text(o.max_bet));
}
}  // namespace detail

/// @brief One one-sided bettor "relay is worse than the fallback" (capital Π(1 − λ x)).
class worse_bettor {
 public:
  /// @brief A bettor with capital 1.
  /// @param o the options (alpha is not read here: the caller stops the capital)
  /// @throws invalid_argument for bad options
  explicit worse_bettor(const relay_switch_options& o = {}) : o_(o) {
    detail::check_relay_switch_options("worse_bettor", o_);
  }
  /// @brief Adds one observation x ∈ [−1, 1] (relay − fallback) and updates the capital.
  /// @param x the observation
  /// @throws invalid_argument for x outside [−1, 1] or not finite
  void update(double x) {
    if (!(x >= -1.0 && x <= 1.0))
      LATENTAUDIT_THROW(invalid_argument("worse_bettor::update: x = " + number_text(x) +
                                         " is outside [-1, 1] or not finite"));
    const double lambda = next_bet();
    log_k_ += std::log1p(-lambda * x);
    recent_.push_back(x);
    if (recent_.size() > o_.window) recent_.pop_front();
    ++n_;
  }
  /// @brief log of the current capital.
  /// @returns log K_t (0 before any observation)
  [[nodiscard]] double log_capital() const noexcept { return log_k_; }
  /// @brief The bet the next observation will be met with.
  /// @returns λ ∈ [0, max_bet]: clip(−m̂/(v̂ + m̂²), 0, max_bet) over the last `window` observations
  [[nodiscard]] double next_bet() const noexcept {
    if (recent_.empty()) return 0.0;
    double s = 0.0;
    for (double v : recent_) s += v;
    const double m = s / static_cast<double>(recent_.size());
    if (!(m < 0.0)) return 0.0;
    double ss = 0.0;
    for (double v : recent_) ss += (v - m) * (v - m);
    const double var = ss / static_cast<double>(recent_.size());
    return std::clamp(-m / (var + m * m), 0.0, o_.max_bet);
  }
  /// @brief Observations seen.
  /// @returns the count
  [[nodiscard]] std::uint64_t n() const noexcept { return n_; }

 private:
  relay_switch_options o_;
  std::deque<double> recent_;
  double log_k_ = 0.0;
  std::uint64_t n_ = 0;
};

/// @brief The fallback a relay is compared with.
enum class relay_fallback : std::uint8_t {
  text,     ///< agent A's document (or message) sent as text
  no_comm,  ///< B answers without anything from A
};

/// @brief The endpoint a relay is compared on.
enum class relay_endpoint : std::uint8_t {
  correct,     ///< answer correctness (1/0)
  likelihood,  ///< a bounded likelihood in [0, 1] (continuation probability, answer probability)
};

/// @brief The fallback's name: "text" or "no_comm".
/// @param f the fallback
/// @returns its name (the metrics' and the reasons' label)
[[nodiscard]] constexpr std::string_view relay_fallback_name(relay_fallback f) noexcept {
  return f == relay_fallback::text ? "text" : "no_comm";
}

/// @brief The endpoint's name: "correct" or "likelihood".
/// @param e the endpoint
/// @returns its name
[[nodiscard]] constexpr std::string_view relay_endpoint_name(relay_endpoint e) noexcept {
  return e == relay_endpoint::correct ? "correct" : "likelihood";
}

/// @brief Options of relay_monitor: the bettors and which streams run (fixed before any observation:
/// the number of streams k sets each stream's level k/α).
struct relay_monitor_options {
  relay_switch_options bets{};  ///< alpha (the overall level), window, max_bet
  bool vs_text = true;          ///< run the streams against text
  bool vs_no_comm = true;       ///< run the streams against no communication
  bool on_correct = true;       ///< run the correctness streams
  bool on_likelihood = false;   ///< run the likelihood streams (pairs without both likelihoods skip them)
};

/// @brief One sampled pair: the same request answered with relay and with one fallback.
struct relay_pair {
  std::uint64_t request_id = 0;                    ///< the stack's request id (for the reasons)
  relay_fallback fallback = relay_fallback::text;  ///< the fallback the request was also run on
  bool relay_correct = false;                      ///< the relay answer was scored correct
  bool fallback_correct = false;                   ///< the fallback answer was scored correct
  std::optional<double> relay_likelihood;          ///< relay's likelihood in [0, 1], if measured
  std::optional<double> fallback_likelihood;       ///< the fallback's likelihood in [0, 1], if measured
};

/// @brief When and why the monitor turned relay off.
struct relay_off_event {
  std::uint64_t pairs = 0;                            ///< pairs observed when it turned off (1-based)
  std::optional<std::uint64_t> request_id;            ///< the request whose pair crossed, if given
  relay_fallback fallback = relay_fallback::text;     ///< the stream that crossed: its fallback
  relay_endpoint endpoint = relay_endpoint::correct;  ///< and its endpoint
  double log_capital = 0.0;                           ///< that stream's log capital at the crossing
  double log_threshold = 0.0;                         ///< log(k/α)
  std::string reason;                                 ///< the event in one sentence
};

/// @brief The public always-valid relay switch: relay is on until one configured stream's capital
/// reaches k/α (k streams); then it stays off (a later reset is a new monitor) and off() says when
/// and why. The capitals keep updating after the switch (for metrics). Not thread-safe: a stack
/// feeding it from several threads holds one lock around observe().
class relay_monitor {
 public:
  /// @brief A monitor with every configured stream at capital 1.
  /// @param o the options
  /// @throws invalid_argument for bad bet options, or no fallback or no endpoint enabled
  explicit relay_monitor(const relay_monitor_options& o = {}) : o_(o) {
    constexpr std::string_view fn = "relay_monitor";
    detail::check_relay_switch_options(fn, o.bets);
    if (!o.vs_text && !o.vs_no_comm)
      detail::throw_invalid(fn, "options", "must enable vs_text or vs_no_comm (no stream to run)");
    if (!o.on_correct && !o.on_likelihood)
      detail::throw_invalid(fn, "options", "must enable on_correct or on_likelihood (no stream to run)");
    for (std::size_t s = 0; s < 4; ++s)
      if (enabled(fallback_of(s), endpoint_of(s))) {
        bettors_[s].emplace(o.bets);
        ++streams_;
      }
    log_threshold_ = std::log(static_cast<double>(streams_) / o.bets.alpha);
  }

  /// @brief Adds one sampled pair: its fallback's correctness stream (x = relay − fallback ∈ {−1, 0,
  /// 1}) and, when both likelihoods are given, its likelihood stream, each where configured.
  /// @param p the pair
  /// @throws invalid_argument for a likelihood outside [0, 1] or not finite
  void observe(const relay_pair& p) {
    constexpr std::string_view fn = "relay_monitor::observe";
    if (p.relay_likelihood) detail::check_closed_unit(fn, "pair.relay_likelihood", *p.relay_likelihood);
    if (p.fallback_likelihood)
      detail::check_closed_unit(fn, "pair.fallback_likelihood", *p.fallback_likelihood);
    ++pairs_;
    if (enabled(p.fallback, relay_endpoint::correct))
      step(p.fallback, relay_endpoint::correct,
           (p.relay_correct ? 1.0 : 0.0) - (p.fallback_correct ? 1.0 : 0.0), p.request_id);
    if (enabled(p.fallback, relay_endpoint::likelihood) && p.relay_likelihood && p.fallback_likelihood)
      step(p.fallback, relay_endpoint::likelihood, *p.relay_likelihood - *p.fallback_likelihood,
           p.request_id);
  }

  /// @brief Adds one difference x = relay − fallback ∈ [−1, 1] to one stream (an item's mean over its
  /// seeds, as the report's replay feeds it); counts one pair.
  /// @param f the stream's fallback
  /// @param e the stream's endpoint
  /// @param x the difference
  /// @param request_id the request, for the reasons (optional)
  /// @throws invalid_argument for a stream not configured, or x outside [−1, 1] or not finite
  void observe_difference(relay_fallback f, relay_endpoint e, double x,
                          std::optional<std::uint64_t> request_id = std::nullopt) {
    if (!enabled(f, e))
      detail::throw_invalid("relay_monitor::observe_difference", "stream",
                            "(" + std::string(relay_fallback_name(f)) + ", " +
                                std::string(relay_endpoint_name(e)) + ") is not configured");
    if (!(x >= -1.0 && x <= 1.0))
      detail::throw_invalid("relay_monitor::observe_difference", "x",
                            "must lie in [-1, 1], got " + number_text(x));
    ++pairs_;
    step(f, e, x, request_id);
  }

  /// @brief Whether relay is still on.
  /// @returns true until a stream crossed its threshold
  [[nodiscard]] bool on() const noexcept { return !off_.has_value(); }
  /// @brief When and why relay was turned off.
  /// @returns the event, or nothing while relay is on
  [[nodiscard]] const std::optional<relay_off_event>& off() const noexcept { return off_; }
  /// @brief Whether the stream (f, e) runs.
  /// @param f the fallback
  /// @param e the endpoint
  /// @returns true when configured
  [[nodiscard]] bool enabled(relay_fallback f, relay_endpoint e) const noexcept {
    return (f == relay_fallback::text ? o_.vs_text : o_.vs_no_comm) &&
           (e == relay_endpoint::correct ? o_.on_correct : o_.on_likelihood);
  }
  /// @brief The bettor of stream (f, e).
  /// @param f the fallback
  /// @param e the endpoint
  /// @returns the bettor (its log capital, next bet and count)
  /// @throws invalid_argument for a stream not configured
  [[nodiscard]] const worse_bettor& bettor(relay_fallback f, relay_endpoint e) const {
    const auto& b = bettors_[index(f, e)];
    if (!b)
      detail::throw_invalid("relay_monitor::bettor", "stream",
                            "(" + std::string(relay_fallback_name(f)) + ", " +
                                std::string(relay_endpoint_name(e)) + ") is not configured");
    return *b;
  }
  /// @brief Pairs (or differences) observed.
  /// @returns the count
  [[nodiscard]] std::uint64_t pairs() const noexcept { return pairs_; }
  /// @brief The number of streams k.
  /// @returns k ∈ {1, 2, 4}
  [[nodiscard]] std::size_t streams() const noexcept { return streams_; }
  /// @brief log(k/α): where each log capital switches relay off.
  /// @returns the threshold
  [[nodiscard]] double log_threshold() const noexcept { return log_threshold_; }
  /// @brief The options.
  /// @returns them
  [[nodiscard]] const relay_monitor_options& options() const noexcept { return o_; }
  /// @brief The guarantee in words.
  /// @returns one sentence
  [[nodiscard]] std::string guarantee() const {
    return "always valid: if at every observation relay is at least as good as each monitored fallback in "
           "conditional expectation, the monitor ever turns relay off - at any time, over an unbounded "
           "stream - "
           "with probability <= " +
           number_text(o_.bets.alpha) + " (" + std::to_string(streams_) +
           " one-sided betting capitals prod(1 - lambda x) with predictable bets in [0, " +
           number_text(o_.bets.max_bet) + "] from the last " + std::to_string(o_.bets.window) +
           " observations, each stopped at " + std::to_string(streams_) + "/alpha: Ville's inequality)";
  }

 private:
  static constexpr std::size_t index(relay_fallback f, relay_endpoint e) noexcept {
    return static_cast<std::size_t>(f) * 2 + static_cast<std::size_t>(e);
  }
  static constexpr relay_fallback fallback_of(std::size_t s) noexcept {
    return static_cast<relay_fallback>(s / 2);
  }
  static constexpr relay_endpoint endpoint_of(std::size_t s) noexcept {
    return static_cast<relay_endpoint>(s % 2);
  }

  void step(relay_fallback f, relay_endpoint e, double x, std::optional<std::uint64_t> request_id) {
    auto& b = *bettors_[index(f, e)];
    b.update(x);
    if (off_ || b.log_capital() < log_threshold_) return;
    relay_off_event ev;
    ev.pairs = pairs_;
    ev.request_id = request_id;
    ev.fallback = f;
    ev.endpoint = e;
    ev.log_capital = b.log_capital();
    ev.log_threshold = log_threshold_;
    ev.reason = "relay turned off after " + std::to_string(pairs_) + " sampled pairs" +
                (request_id ? " (request " + std::to_string(*request_id) + ")" : std::string()) +
                ": relay is worse than " + std::string(relay_fallback_name(f)) + " on " +
                std::string(relay_endpoint_name(e)) + " (log capital " + number_text(ev.log_capital) +
                " >= log(" + std::to_string(streams_) + "/alpha) = " + number_text(log_threshold_) +
                "; the chance of this under no change is <= alpha = " + number_text(o_.bets.alpha) + ")";
    off_ = std::move(ev);
  }

  relay_monitor_options o_;
  std::array<std::optional<worse_bettor>, 4> bettors_{};
  std::size_t streams_ = 0;
  double log_threshold_ = 0.0;
  std::uint64_t pairs_ = 0;
  std::optional<relay_off_event> off_;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_SERVE_RELAY_MONITOR_HPP
