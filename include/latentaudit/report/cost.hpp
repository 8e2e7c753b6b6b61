// SPDX-License-Identifier: MIT
// latentaudit: what relaying the cache costs and buys, from records alone. (1) Cost-benefit in the
// need regime: per link preset, the receiver-side latency of the KV relay against the full text
// relay (transfer time recomputed from bytes), the bytes moved, the accuracy difference, the
// break-even bandwidth and fixed cost, and a verdict under a latency SLO. (2) A per-request relay
// gate: a logistic model on features known before the transfer, fitted on half the items and
// evaluated on the other half against always-relay, never-relay and always-text.
// Formulas, defaults and references: docs/audit-report.md, "Cost-benefit and relay gate".
#ifndef LATENTAUDIT_REPORT_COST_HPP
#define LATENTAUDIT_REPORT_COST_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Core>

#include "../config.hpp"
#include "../estimators/effect_estimate.hpp"
#include "../trial/link.hpp"
#include "../trial/record.hpp"
#include "finding.hpp"

namespace latentaudit {

// ============================================================================================
// Cost-benefit
// ============================================================================================

/// @brief Options of cost_benefit_analysis().
struct cost_options {
  std::string relay_arm = "kv_full";   ///< the KV relay arm
  std::string text_arm = "text_full";  ///< the text relay it is compared with
  /// Links to evaluate; empty: link_presets() plus every "custom:<GB/s>:<µs>" link named in the records.
  std::vector<link_preset> links = {};
  /// Latency SLO (seconds, receiver side); empty: per link, the median receiver latency of the text arm.
  std::optional<double> latency_slo_s = {};
  double margin = 0.05;  ///< non-inferiority margin of the accuracy difference (relay − text)
  double level = 0.95;   ///< confidence level of every interval
  std::size_t bootstrap_replicates = 2000;     ///< cluster-bootstrap replicates (item clusters)
  std::uint64_t seed = 0x636f73745f62656eULL;  ///< bootstrap seed
};

/// @brief Where on the bandwidth axis the relay saves latency (mean over units).
enum class break_even_region {
  above,   ///< the relay saves latency at bandwidths above the break-even bandwidth
  below,   ///< the relay saves latency at bandwidths below it (the relay moves fewer bytes but costs more
           ///< otherwise)
  always,  ///< the relay saves latency at every bandwidth (no break-even bandwidth)
  never,   ///< the relay saves latency at no bandwidth (no break-even bandwidth)
};

/// @brief "above", "below", "always" or "never".
[[nodiscard]] constexpr const char* break_even_region_name(break_even_region r) noexcept {
  return r == break_even_region::above    ? "above"
         : r == break_even_region::below  ? "below"
         : r == break_even_region::always ? "always"
                                          : "never";
}

/// @brief The cost-benefit of the relay on one link.
struct link_cost {
  link_preset link;             ///< the link evaluated
  std::size_t units = 0;        ///< need-regime (item, seed) units with both arms
  effect_estimate saved_s;      ///< mean of text − relay receiver latency (seconds), cluster bootstrap
  effect_estimate extra_bytes;  ///< mean of relay − text bytes, cluster bootstrap
  effect_estimate accuracy_difference;  ///< mean of relay − text correctness, cluster bootstrap
  double latency_slo_s = 0;             ///< the SLO used on this link
  double slo_met_relay = 0;             ///< share of units whose relay receiver latency is ≤ the SLO
  double slo_met_text = 0;              ///< share of units whose text receiver latency is ≤ the SLO
  break_even_region region = break_even_region::never;  ///< where the relay saves latency
  /// The bandwidth (bytes/s) at which the mean saved latency is 0, with this link's alpha
  /// (set for regions above and below only).
  std::optional<double> break_even_bandwidth_bytes_s;
  /// The largest extra fixed cost (seconds) per relay, on top of link.alpha_s, at this link's
  /// bandwidth for which the relay still saves latency on average (empty when it saves none).
  std::optional<double> break_even_extra_alpha_s;
  verdict pays = verdict::inconclusive;  ///< the finding's verdict
};

/// @brief Result of cost_benefit_analysis().
struct [[nodiscard]] cost_benefit_result {
  std::vector<link_cost> links;    ///< one per link evaluated
  std::string missing;             ///< what was missing ("" when the analysis ran)
  std::vector<std::string> notes;  ///< links in the records that could not be parsed, dropped units
  std::vector<finding> findings;   ///< cost.relay_pays_on_<link> per link
};

/// @brief Finding id of a link: "cost.relay_pays_on_" + the name with every character other than
[[nodiscard]] std::string cost_finding_id(std::string_view link_name);

/// @brief Cost-benefit of the KV relay against the text relay in the need regime, per link.
///
/// For each need-regime unit with both arms, latency on link L is the record's receiver latency
/// (latency_split::receiver_s) with transfer_s replaced by L.transfer_seconds(bytes). Per link:
/// saved = mean(text − relay), extra bytes, accuracy difference (relay − text), each with a
/// percentile cluster bootstrap over items. Break-even bandwidth, closed form: with
/// D = mean(base) + α(f_text − f_relay) (base = receiver latency without transfer, text − relay;
/// f = share of units with bytes > 0) and ΔB = mean bytes relay − text, the mean saving at
/// bandwidth β is D − ΔB/β; it is 0 at β* = ΔB/D. Break-even extra alpha = saved / f_relay.
/// Verdict: yes if saved has CI > 0, the accuracy difference's lower limit exceeds −margin and the
/// relay meets the SLO at least as often as text; no if saved has CI < 0, or the accuracy
/// difference's upper limit is below −margin, or the relay meets the SLO less often although
/// faster on average; inconclusive otherwise.
/// @param records trial records (any arms; one per (item, seed, arm))
/// @param options arms, links, SLO, margin, level, bootstrap
/// @returns per-link results and one finding per link (inconclusive with n = 0 when arms or
///          need-regime units are missing)
/// @throws invalid_argument on bad options (level, margin, SLO, a link with bandwidth ≤ 0 or
///         alpha < 0) or on duplicate (item, seed, arm) records
[[nodiscard]] cost_benefit_result cost_benefit_analysis(std::span<const trial_record> records,
                                                        const cost_options& options = {});

// ============================================================================================
// Relay gate
// ============================================================================================

/// @brief Options of fit_relay_gate().
struct relay_gate_options {
  std::string relay_arm = "kv_full";    ///< the relay the gate switches on
  std::string control_arm = "no_comm";  ///< what the receiver does without relay
  std::string text_arm = "text_full";   ///< the always-text comparison policy (optional arm)
  double train_fraction = 0.5;          ///< share of items used to fit, in (0, 1)
  std::uint64_t split_seed =
      0x67617465ULL;       ///< item i trains if item_uniform(split_seed, i, 4) < train_fraction
  double threshold = 0.5;  ///< relay when the predicted probability exceeds it, in (0, 1)
  double margin = 0.05;    ///< non-inferiority margin of the accuracy vs always-relay
  double ridge = 1.0;      ///< L2 penalty (standardized features) used only if the plain fit separates
  double level = 0.95;     ///< confidence level
  std::size_t bootstrap_replicates = 2000;   ///< cluster-bootstrap replicates (item clusters)
  std::uint64_t seed = 0x676174655f6369ULL;  ///< bootstrap seed
};

/// @brief A deployable gate: P(relay helps | x) = expit(c₀ + Σ cⱼ xⱼ) on raw feature values.
struct relay_gate_model {
  std::vector<std::string> features;  ///< feature names, in coefficient order (after the intercept)
  std::vector<double> coefficients;   ///< intercept first, then one per feature (raw scale)
  double threshold = 0.5;             ///< relay when probability > threshold
  bool penalized = false;             ///< true when the ridge fallback was used (separation)

  /// @brief Predicted probability that relaying helps, for raw feature values in `features` order.
  /// @throws shape_mismatch if x has the wrong size; invalid_argument on non-finite values or an unfitted
  /// model
  [[nodiscard]] double probability(std::span<const double> x) const;
  /// @brief Whether the gate relays for raw feature values x.
  /// @throws as probability()
  [[nodiscard]] bool relays(std::span<const double> x) const { return probability(x) > threshold; }
};

/// @brief Value of one policy on the held-out units.
struct policy_value {
  std::string name;          ///< "gate", "always_relay", "never_relay", "always_text"
  bool available = false;    ///< false when an arm it needs is missing on some held-out unit
  effect_estimate accuracy;  ///< mean correctness, cluster bootstrap
  effect_estimate bytes;     ///< mean bytes moved, cluster bootstrap
  double relay_rate = 0;     ///< share of held-out units it relays (KV)
};

/// @brief Result of fit_relay_gate().
struct [[nodiscard]] relay_gate_result {
  relay_gate_model model;                     ///< the fitted gate
  std::vector<std::string> dropped_features;  ///< "name: why" for each candidate feature not used
  std::size_t train_units = 0;                ///< units of the training items
  std::size_t test_units = 0;                 ///< units of the held-out items
  std::size_t train_items = 0;                ///< training items
  std::size_t test_items = 0;                 ///< held-out items
  double train_positive_rate = 0;             ///< share of training units where relay helps
  std::vector<policy_value> policies;         ///< gate, always_relay, never_relay, always_text
  effect_estimate accuracy_vs_always_relay;   ///< mean of gate − always-relay correctness (held out)
  effect_estimate bytes_saved;                ///< mean of always-relay − gate bytes (held out)
  std::string missing;                        ///< what was missing ("" when the gate was fitted)
  std::vector<finding> findings;              ///< gate.matches_always_relay
};

/// @brief Fits and evaluates a per-request relay gate.
///
/// Units: (item, seed) with relay and control records (both regimes). Label: relay correct and
/// control not correct ("relay helps"). Candidate features, known before the transfer: doc_tokens,
/// need (regime = "need"), relay_bytes (the relay record's bytes) and attention_mass (the relay
/// record's; B's attention on A's cache). A feature is dropped, with the reason, if it is missing
/// on some unit, constant among training units, or collinear with the features kept before it.
/// Items (not units) are split by item_uniform(split_seed, item, 4) < train_fraction. The model is
/// logistic_regression on standardized features (falling back to an L2-penalized fit when the
/// plain fit separates); coefficients are returned on the raw scale. Held-out policy values
/// (accuracy, bytes) use a percentile cluster bootstrap over items. Finding
/// "gate.matches_always_relay": yes if the gate's accuracy minus always-relay's has lower limit
/// > −margin and the bytes saved have lower limit > 0; no if that difference's upper limit is
/// < −margin or the gate saves no bytes (upper limit ≤ 0); inconclusive otherwise.
/// @param records trial records
/// @param options arms, split, threshold, margin, ridge, level, bootstrap
/// @returns the model, the policy values and the finding (inconclusive with n = 0 when arms are
///          missing or the label has one class among training units)
/// @throws invalid_argument on bad options or duplicate (item, seed, arm) records
[[nodiscard]] relay_gate_result fit_relay_gate(std::span<const trial_record> records,
                                               const relay_gate_options& options = {});

namespace detail {

/// @brief "1.23 ms" / "45.6 µs" / "1.2 s" for a duration in seconds.
std::string seconds_text(double s);

/// @brief "12.3 kB" style byte text.
std::string bytes_text(double b);

/// @brief Median of a copy of x (x non-empty).
double median_of(std::vector<double> x);

/// @brief Closed-form break-even of the mean saving D − ΔB/β over the bandwidth β > 0.
struct break_even_solution {
  break_even_region region = break_even_region::never;
  std::optional<double> bandwidth;
};

break_even_solution solve_break_even(double d, double delta_bytes);

void check_link(std::string_view fn, const link_preset& l);

/// @brief The links to evaluate: the options' or the presets plus the records' custom links.
std::vector<link_preset> links_to_evaluate(std::string_view fn, std::span<const trial_record> records,
                                           const cost_options& o, std::vector<std::string>& notes);

/// @brief L2-penalized logistic regression by Newton's method on [1, X] (intercept unpenalized);
/// strictly concave for ridge > 0, so it converges under separation.
/// @throws numerical_error if it does not converge in 200 steps
Eigen::VectorXd ridge_logistic(std::string_view fn, const Eigen::MatrixXd& x, std::span<const double> y,
                               double ridge);

void check_gate_options(std::string_view fn, const relay_gate_options& o);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/cost-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_COST_HPP
