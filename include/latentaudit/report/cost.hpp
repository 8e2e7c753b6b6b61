// SPDX-License-Identifier: MIT
// latentaudit: what relaying the cache costs and buys, from records alone. (1) Cost-benefit in the
// need regime: one sensitivity statement (break-even bandwidth and break-even fixed latency per
// relay, with cluster-bootstrap CIs over items), a per-link evaluation (receiver latency of the KV
// relay against the full text relay, transfer time recomputed from bytes) reported as a finding
// only where its verdict differs from the statement (and for the records' own link), and a
// projection of KV bytes and break-even bandwidths for real model shapes. (2) A per-request relay
// gate: relay when the predicted accuracy gain over the fallback, P(helps | x) − P(hurts | x) from two
// logistic models on features a serving stack knows before the transfer, exceeds a stated cost;
// cross-fitted over items, evaluated against always-relay, never-relay and always-text on the same
// requests with betting intervals.
// Formulas, defaults and references: docs/audit-report.md, "Cost-benefit and relay gate".
#ifndef LATENTAUDIT_REPORT_COST_HPP
#define LATENTAUDIT_REPORT_COST_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "../config.hpp"
#include "../estimators/effect_estimate.hpp"
#include "../trial/link.hpp"
#include "../trial/record.hpp"
#include "detail/record_units.hpp"
#include "finding.hpp"

namespace latentaudit {

// ============================================================================================
// Cost-benefit
// ============================================================================================

/// @brief A model's KV-cache shape, for the projection (bytes per token = 2·layers·kv_heads·head_dim·bytes).
struct model_shape {
  std::string name;                   ///< e.g. "Llama-3-8B"
  std::uint32_t layers = 0;           ///< transformer layers
  std::uint32_t kv_heads = 0;         ///< key/value heads (grouped-query attention)
  std::uint32_t head_dim = 0;         ///< dimension of one head
  std::uint32_t bytes_per_value = 2;  ///< bytes of one cached value (2 = bf16)

  /// @brief KV-cache bytes per document token: keys and values of every layer and KV head.
  [[nodiscard]] double kv_bytes_per_token() const noexcept {
    return 2.0 * layers * kv_heads * head_dim * bytes_per_value;
  }
};

/// @brief Llama-3-8B (32 layers, 8 KV heads, head dim 128), Llama-3-70B (80, 8, 128) and
/// Qwen2.5-7B (28, 4, 128), bf16 caches (from the models' config.json).
[[nodiscard]] std::vector<model_shape> default_model_shapes();

/// @brief Options of cost_benefit_analysis().
struct cost_options {
  /// the KV relay arm; each arm name answers by label, else by arm_kind (ties: the first label in
  /// sorted order), the rule of every analysis (report/detail/arm_roles.hpp)
  std::string relay_arm = "kv_full";
  std::string text_arm = "text_full";  ///< the text relay it is compared with (resolved likewise)
  /// Links to evaluate; empty: link_presets() plus every "custom:<GB/s>:<µs>" link named in the records.
  std::vector<link_preset> links = {};
  /// The link whose finding is always reported (the decision reads it); "": the records' first
  /// non-empty link, pcie4 when there is none or it is a custom link (the rule of decide()).
  std::string primary_link = {};
  /// Latency SLO (seconds, receiver side), given by the user; empty: no SLO is evaluated.
  std::optional<double> latency_slo_s = {};
  /// Receiver prefill throughput (document tokens per second) for the projection; empty: the
  /// projection is tabulated at 2,000, 10,000 and 50,000 tokens/s.
  std::optional<double> prefill_tokens_per_s = {};
  /// Model shapes of the projection; empty: default_model_shapes().
  std::vector<model_shape> model_shapes = {};
  double margin = 0.05;  ///< non-inferiority margin of the accuracy difference (relay − text)
  double alpha = 0.05;   ///< one-sided error of each verdict limit (betting over items), in (0, 0.5)
  double level = 0.95;   ///< confidence level of the descriptive bootstrap intervals
  std::size_t bootstrap_replicates = 2000;     ///< cluster-bootstrap replicates (item clusters)
  std::uint64_t seed = 0x636f73745f62656eULL;  ///< bootstrap seed
  /// the items the betting intervals are tuned for (audit_options::horizon; 0 = each sample's size)
  std::size_t horizon =
      0;  /// the report's one table (every arm's records grouped by (item, seed) once; build_audit_report
  /// sets it, for these very records): the analysis reads its arms' columns instead of grouping the
  /// records again. Null (the default): it groups them itself.
  const detail::unit_records* units = nullptr;
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
  /// mean item difference of relay − text correctness, betting verdict interval over items (α per side)
  effect_estimate accuracy_difference;
  std::optional<double> latency_slo_s;  ///< the user's SLO (absent when none was given)
  std::optional<double> slo_met_relay;  ///< share of units whose relay receiver latency is ≤ the SLO
  std::optional<double> slo_met_text;   ///< share of units whose text receiver latency is ≤ the SLO
  /// relay − text SLO attainment, betting verdict interval over items (absent without an SLO)
  std::optional<effect_estimate> slo_difference;
  break_even_region region = break_even_region::never;  ///< where the relay saves latency
  /// The bandwidth (bytes/s) at which the mean saved latency is 0, with this link's alpha
  /// (set for regions above and below only).
  std::optional<double> break_even_bandwidth_bytes_s;
  /// The largest extra fixed cost (seconds) per relay, on top of link.alpha_s, at this link's
  /// bandwidth for which the relay still saves latency on average (empty when it saves none).
  std::optional<double> break_even_extra_alpha_s;
  verdict pays = verdict::inconclusive;  ///< this link's verdict
  bool reported = false;  ///< true when it has its own finding (differs from the statement, or primary link)
};

/// @brief The link-free sensitivity statement of the cost-benefit.
struct cost_sensitivity {
  std::size_t units = 0;  ///< need-regime (item, seed) units with both arms
  std::size_t items = 0;  ///< their items
  /// mean text − relay receiver latency without any transfer time (unlimited bandwidth, α = 0), seconds,
  /// cluster bootstrap over items
  effect_estimate saved_without_transfer_s;
  effect_estimate extra_bytes;          ///< mean relay − text bytes, cluster bootstrap
  effect_estimate accuracy_difference;  ///< relay − text, betting verdict interval over items (α per side)
  break_even_region region = break_even_region::never;  ///< at link fixed cost α = 0
  std::optional<double> break_even_bandwidth_bytes_s;   ///< β* = ΔB / D (regions above, below)
  /// percentile limits of β* over the item bootstrap; absent when the limit is unbounded (some
  /// replicates save at no bandwidth) or the region has no break-even
  std::optional<double> break_even_bandwidth_low, break_even_bandwidth_high;
  /// α* = D / f_relay: the largest fixed latency per relay (paid by the relay only) at unlimited
  /// bandwidth for which the relay still saves latency on average (absent when D ≤ 0)
  std::optional<double> break_even_alpha_s;
  std::optional<double> break_even_alpha_low, break_even_alpha_high;  ///< its percentile limits
  verdict pays = verdict::inconclusive;  ///< the statement's verdict (common verdict of every link)
  std::string statement;                 ///< the sentence reported
  std::string timing_note;               ///< what the CIs do and do not include
  /// Records of the two arms with repeated timings (latency_repeats_s), pooled for the run-to-run CVs.
  std::size_t repeated_records = 0;
  /// Measured run-to-run coefficient of variation of the receiver latency without transfer time
  /// (pooled within-trial SD of timing / trial mean), per arm; absent without repeated records.
  std::optional<double> run_to_run_cv_relay, run_to_run_cv_text;
};

/// @brief One row of the projection: a model shape at one receiver prefill throughput.
struct cost_projection_row {
  model_shape model;                        ///< the shape
  double kv_bytes_per_token = 0;            ///< KV-cache bytes per document token
  double prefill_tokens_per_s = 0;          ///< receiver prefill throughput assumed
  double break_even_bandwidth_bytes_s = 0;  ///< b·T: relaying beats prefilling above this bandwidth
  /// per link evaluated: the shortest document (tokens) for which relaying saves receiver latency
  /// (α / (1/T − b/β)); absent when the link is at or below the break-even bandwidth
  std::vector<std::pair<std::string, std::optional<double>>> break_even_doc_tokens;
};

/// @brief Result of cost_benefit_analysis().
struct [[nodiscard]] cost_benefit_result {
  cost_sensitivity sensitivity;                 ///< the link-free statement
  std::vector<link_cost> links;                 ///< one per link evaluated
  std::vector<cost_projection_row> projection;  ///< projection for real model shapes (not a finding)
  std::string primary_link;                     ///< the link whose finding is always reported
  std::string missing;                          ///< what was missing ("" when the analysis ran)
  std::vector<std::string> notes;  ///< links in the records that could not be parsed, dropped units
  /// cost.relay_pays (the statement), cost.relay_pays_on_<primary link>, and
  /// cost.relay_pays_on_<link> for every other link whose verdict differs from the statement
  std::vector<finding> findings;
};

/// @brief Cost-benefit of the KV relay against the text relay in the need regime.
///
/// For each need-regime unit with both arms, latency on link L is the record's receiver latency
/// (latency_split::receiver_s) with transfer_s replaced by L.transfer_seconds(bytes). Per link:
/// saved = mean(text − relay) and extra bytes with a percentile cluster bootstrap over items; the
/// accuracy difference (relay − text) with the betting verdict interval over items
/// (clustered_paired_difference, `alpha` per side). Break-even bandwidth, closed form: with
/// D = mean(base) + α(f_text − f_relay) (base = receiver latency without transfer, text − relay;
/// f = share of units with bytes > 0) and ΔB = mean bytes relay − text, the mean saving at
/// bandwidth β is D − ΔB/β; it is 0 at β* = ΔB/D. Break-even extra alpha = saved / f_relay.
/// Per-link verdict: yes if saved has CI > 0, the accuracy difference's lower limit exceeds
/// −margin and (with an SLO) the SLO attainment difference's lower limit exceeds −margin; no if
/// saved has CI < 0, or the accuracy difference's upper limit is below −margin, or (with an SLO)
/// the attainment difference's upper limit is below −margin; inconclusive otherwise.
/// Statement (cost.relay_pays): β* and α* = mean(base)/f_relay at α = 0 with percentile limits
/// of the item bootstrap; verdict = the per-link verdict when every link agrees, else
/// inconclusive (the relay pays on some links only).
/// Run-to-run timing: when records of the two arms carry latency_repeats_s, the pooled
/// run-to-run CV per arm (run_to_run_pool) perturbs every resampled unit's latency in each
/// bootstrap replicate (noisy_clustered_mean; conservative, see docs/audit-report.md); without
/// repeats the bootstraps are unchanged.
/// @param records trial records (any arms; one per (item, seed, arm))
/// @param options arms, links, SLO, throughput, margin, alpha, level, bootstrap
/// @returns statement, per-link results, projection and findings (inconclusive with n = 0 when
///          arms or need-regime units are missing)
/// @throws invalid_argument on bad options (level, alpha, margin, SLO, throughput, a link with
///         bandwidth ≤ 0 or alpha < 0, a model shape with a zero dimension) or on duplicate
///         (item, seed, arm) records
[[nodiscard]] cost_benefit_result cost_benefit_analysis(std::span<const trial_record> records,
                                                        const cost_options& options = {});

// ============================================================================================
// Relay gate
// ============================================================================================

/// @brief Options of fit_relay_gate().
struct relay_gate_options {
  /// the relay the gate switches on; each arm name answers by label, else by arm_kind (ties: the
  /// first label in sorted order), the rule of every analysis (report/detail/arm_roles.hpp)
  std::string relay_arm = "kv_full";
  /// the fallback: what the receiver does when the gate does not relay (the gain is measured against it)
  std::string control_arm = "no_comm";
  std::string text_arm = "text_full";  ///< the always-text comparison policy (optional arm)
  /// further relays the gate decides on (e.g. the drift arms kv_drift_<k>: senders fine-tuned apart):
  /// each one present on a unit with the control is one more request of that unit (same control
  /// and text), so fingerprint_match and drift_steps vary; absent labels are ignored
  std::vector<std::string> extra_relay_arms = {};
  std::size_t folds = 5;  ///< cross-fitting folds over items, ≥ 2
  /// fold assignment: items ordered by item_uniform(split_seed, item, 5), fold = rank mod folds
  std::uint64_t split_seed = 0x67617465ULL;
  std::size_t min_held_out_items = 30;  ///< fewer held-out items: the verdict is inconclusive
  /// relay when the predicted gain P(helps | x) − P(hurts | x) exceeds it: the accuracy (a fraction,
  /// 0.02 = 2 points) a relay must buy to pay for its bytes and latency; finite, in [−1, 1]
  double cost = 0;
  double margin = 0.05;       ///< non-inferiority margin of the accuracy vs always-relay
  double skip_margin = 0.05;  ///< "no" when the share of requests not relayed is shown below it
  double ridge = 1.0;         ///< L2 penalty (standardized features) used only if the plain fit separates
  double alpha = 0.05;        ///< one-sided error of each verdict limit (betting over items), in (0, 0.5)
  double level = 0.95;        ///< confidence level of the descriptive bootstrap intervals
  std::size_t bootstrap_replicates = 2000;   ///< cluster-bootstrap replicates (item clusters)
  std::uint64_t seed = 0x676174655f6369ULL;  ///< bootstrap seed
  /// the items the betting intervals are tuned for (audit_options::horizon; 0 = each sample's size)
  std::size_t horizon =
      0;  /// the report's one table (every arm's records grouped by (item, seed) once; build_audit_report
  /// sets it, for these very records): the analysis reads its arms' columns instead of grouping the
  /// records again. Null (the default): it groups them itself.
  const detail::unit_records* units = nullptr;
};

/// @brief One logistic model of the gate: P(label | x) = expit(c₀ + Σ cⱼ xⱼ) on raw feature values,
/// or exactly `constant` when its training label had one class.
struct relay_gate_logistic {
  std::vector<std::string> features;  ///< feature names, in coefficient order (after the intercept)
  std::vector<double> coefficients;  ///< intercept first, then one per feature (raw scale); empty if constant
  /// set (0 or 1, with no features and no coefficients) when the training label had one class
  std::optional<double> constant;
  bool penalized = false;  ///< true when the ridge fallback was used (separation)

  /// @brief The predicted probability for raw feature values in `features` order.
  /// @throws shape_mismatch if x or coefficients have the wrong size; invalid_argument on non-finite
  /// values or an unfitted model (neither coefficients nor constant)
  [[nodiscard]] double probability(std::span<const double> x) const;
};

/// @brief A deployable gate: relay when gain(x) = P(helps | x) − P(hurts | x) > cost, where "helps"
/// is relay correct and fallback wrong, "hurts" relay wrong and fallback right, so that gain(x) is
/// the predicted E[relay correct − fallback correct | x].
struct relay_gate_model {
  /// inputs of gain() and relays(), in candidate order: every feature of helps or hurts
  std::vector<std::string> features;
  relay_gate_logistic helps;  ///< P(relay correct, fallback wrong | x)
  relay_gate_logistic hurts;  ///< P(relay wrong, fallback correct | x)
  double cost = 0;            ///< relay when gain > cost (accuracy as a fraction)
  bool penalized = false;     ///< true when either model used the ridge fallback

  /// @brief Predicted accuracy gain of relaying over the fallback, in [−1, 1], for raw feature values
  /// in `features` order.
  /// @throws shape_mismatch if x has the wrong size; invalid_argument on non-finite values, an
  /// unfitted model, or a helps/hurts feature missing from `features`
  [[nodiscard]] double gain(std::span<const double> x) const;
  /// @brief Whether the gate relays for raw feature values x: gain(x) > cost.
  /// @throws as gain(), and invalid_argument when cost is not finite
  [[nodiscard]] bool relays(std::span<const double> x) const;
};

/// @brief Value of one policy on the held-out units.
struct policy_value {
  std::string name;          ///< "gate", "always_relay", "never_relay", "always_text"
  bool available = false;    ///< false when an arm it needs is missing on some held-out unit
  effect_estimate accuracy;  ///< mean correctness, cluster bootstrap (descriptive)
  effect_estimate bytes;     ///< mean bytes moved, cluster bootstrap (descriptive)
  double relay_rate = 0;     ///< share of held-out units it relays (KV)
};

/// @brief Requests of one group (a regime, or an extra relay arm) in the gate's population.
struct gate_population_count {
  std::string name;          ///< the regime label ("" when unlabelled) or the extra relay arm
  std::size_t requests = 0;  ///< requests of the group
};

/// @brief Result of fit_relay_gate().
struct [[nodiscard]] relay_gate_result {
  relay_gate_model model;                      ///< the deployable gate, fitted on every item
  std::vector<relay_gate_model> fold_models;   ///< the cross-fitted gates, fold k fitted without fold k
  std::vector<std::size_t> fold_items;         ///< held-out items per fold
  std::vector<std::string> dropped_features;   ///< "name: why" for each candidate not in `model`
  std::vector<std::string> excluded_features;  ///< "name: why" for what is never a feature
  std::string relay_arm;                       ///< the relay arm (resolved label)
  std::string fallback;      ///< the control arm (resolved label): what the receiver does when not relaying
  std::size_t folds = 0;     ///< folds used
  std::size_t items = 0;     ///< items with relay and control (all held out once)
  std::size_t requests = 0;  ///< requests of the population (units + extra relays)
  /// requests per regime (the relay record's regime label), sorted by regime
  std::vector<gate_population_count> requests_by_regime;
  /// requests from each extra relay arm present (e.g. drifted senders), in options order
  std::vector<gate_population_count> extra_relay_requests;
  /// one sentence: the requests, their regimes and extra relays, the fallback, and that every policy
  /// is evaluated on these same requests
  std::string population;
  std::size_t held_out_items = 0;      ///< items with a cross-fitted prediction
  std::size_t held_out_units = 0;      ///< their requests
  double positive_rate = 0;            ///< share of requests where relay helps (d = +1)
  double negative_rate = 0;            ///< share of requests where relay hurts (d = −1)
  std::vector<policy_value> policies;  ///< gate, always_relay, never_relay, always_text
  /// gate − always-relay correctness, mean of item means, betting verdict interval (α per side)
  effect_estimate accuracy_vs_always_relay;
  effect_estimate skip_share;   ///< share of requests the gate does not relay, betting over items
  effect_estimate bytes_saved;  ///< mean of always-relay − gate bytes (held out), cluster bootstrap
  std::string missing;          ///< what was missing ("" when the gate was fitted)
  /// gate.not_worse_than_always_relay and gate.saves_relays (one claim each)
  std::vector<finding> findings;
};

/// @brief Fits and cross-fits a per-request relay gate.
///
/// Population (requests): (item, seed) units with relay and control records (every regime), plus one
/// request per extra relay arm (options.extra_relay_arms, e.g. drifted senders) present on such a
/// unit; the fallback is the control arm, and every policy (gate, always-relay, never-relay =
/// the fallback, always-text) is evaluated on these same requests. Labels, with d = relay correct −
/// fallback correct: "helps" (d = +1) and "hurts" (d = −1). Rule: relay when the predicted gain
/// P(helps | x) − P(hurts | x) = E[d | x] exceeds options.cost. Candidate features, all known to a
/// serving stack before the transfer: doc_tokens and own_tokens (covariates: A's document length, B's
/// own-prompt length), cache_age_versions (covariate: document versions the cache is behind — a stale
/// cache is ≥ 1), prompt_overlap (covariate: share of A's document keys also in B's own prompt — a
/// conflict or no-need signal), cache_bytes (the relay record's bytes), fingerprint_match (the
/// relay record's sender fingerprint equals its receiver's; only when both are recorded) and
/// drift_steps (the relay record's sender fine-tuning distance; 0 for matching fingerprints). Never
/// features: the regime label (experimental, not observable) and metrics measured after the import
/// (attention_mass, hidden_cosine, next_token_kl). A feature is dropped, with the reason, if it is
/// missing on some unit, constant among training units, or collinear with the features kept before
/// it. Cross-fitting: items are ordered by item_uniform(split_seed, item, 5) and item of rank r is in
/// fold r mod `folds`; the gate for fold k is fitted on the other folds' units and predicts fold k's
/// units, so every item is held out once. Each of the two models is logistic_regression on the
/// selected standardized features (falling back to an L2-penalized fit when the plain fit separates),
/// and exactly 0 or 1 when its label has one class among the training units (relay never hurts: the
/// gate relays wherever P(helps) > cost); `model` is the same procedure on every item, coefficients
/// on the raw scale. Two findings, one claim each, on the betting verdict intervals over items (α
/// per side): gate.not_worse_than_always_relay — yes if the gate − always-relay accuracy has lower
/// limit > −margin, no if its upper limit < −margin (inferiority shown); gate.saves_relays — yes if
/// the share of requests not relayed has lower limit > 0 and skipping saves bytes (mean relay −
/// control bytes > 0), no if its upper limit < skip_margin (the gate relays nearly every request:
/// where relay never hurts, the right gate, not a failure); each inconclusive otherwise, and always
/// with fewer than min_held_out_items held-out items.
/// @param records trial records
/// @param options arms, folds, cost, margins, ridge, alpha, level, bootstrap
/// @returns the model, the population, the policy values and the finding (inconclusive with n = 0
///          when arms are missing or d is the same on every request)
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

/// @brief The projection rows for the options' shapes and throughputs on `links`.
std::vector<cost_projection_row> cost_projection(const cost_options& o, std::span<const link_preset> links);

/// @brief The links to evaluate: the options' or the presets plus the records' custom links.
std::vector<link_preset> links_to_evaluate(std::string_view fn, std::span<const trial_record> records,
                                           const cost_options& o, std::vector<std::string>& notes);

/// @brief L2-penalized logistic regression by Newton's method on [1, X] (intercept unpenalized);
/// strictly concave for ridge > 0, so it converges under separation.
/// @throws numerical_error if it does not converge in 200 steps
Eigen::VectorXd ridge_logistic(std::string_view fn, const Eigen::MatrixXd& x, std::span<const double> y,
                               double ridge);

void check_gate_options(std::string_view fn, const relay_gate_options& o);

/// @brief Item-level sums of the cost statement, for the item bootstrap.
struct cost_item_sums {
  double units = 0;        ///< units of the item
  double base = 0;         ///< sum of text − relay receiver latency without transfer
  double extra_bytes = 0;  ///< sum of relay − text bytes
  double relay_moves = 0;  ///< units whose relay moves bytes
  double noise_var = 0;    ///< sum of the units' run-to-run variances of base (seconds²)
};

/// @brief Pooled run-to-run timing variation of one arm's records.
struct run_to_run_pool {
  double sum_sq = 0;        ///< Σ over repeated records of Σ_j (x_j / x̄ − 1)²
  std::size_t df = 0;       ///< Σ over repeated records of (timings − 1)
  std::size_t records = 0;  ///< repeated records
  /// @brief Adds a record: its timings are receiver_s and latency_repeats_s, less transfer_s.
  void add(const trial_record& r);
  /// @brief sqrt(sum_sq / df), the pooled coefficient of variation; absent when df = 0.
  [[nodiscard]] std::optional<double> cv() const;
};

/// @brief Mean of `values` with a percentile cluster-bootstrap interval in which every resampled
/// unit i also gets an independent N(0, noise_sd[i]²) perturbation (its run-to-run timing noise);
/// with every noise_sd 0 it is clustered_mean() exactly. Stream (o.seed, 0, tag, 0).
/// @throws invalid_argument on sizes that differ or bad options
[[nodiscard]] effect_estimate noisy_clustered_mean(std::span<const double> values,
                                                   std::span<const double> noise_sd,
                                                   std::span<const std::size_t> clusters,
                                                   const clustered_mean_options& o, std::uint32_t tag);

/// @brief β* (α = 0) in the direction of `region` (0 when the sums save at every bandwidth, +∞
/// when at none in that direction; NaN for regions without a break-even) and α* = D / f_relay
/// (+∞ when the relay moves no bytes but saves, 0 when it saves nothing) of item sums.
std::pair<double, double> cost_statement_of(const cost_item_sums& s, break_even_region region);

/// @brief One pre-transfer candidate feature of the gate, one value per unit.
struct gate_candidate {
  std::string name;            ///< feature name
  std::vector<double> values;  ///< value per unit
  std::size_t missing = 0;     ///< units without a value
};

/// @brief The gate's features selected on some units: present, varying and not collinear.
struct gate_design {
  std::vector<std::size_t> kept;     ///< candidate indices kept, in candidate order
  std::vector<std::string> dropped;  ///< "name: why" per candidate not kept
  std::vector<double> mean, sd;      ///< of each kept feature on the rows
  Eigen::MatrixXd xs;                ///< standardized kept features, one row per training row
};

/// @brief Feature selection on `rows` (n = units in all, for the "missing" reason).
gate_design select_gate_features(const std::vector<gate_candidate>& cand, std::span<const std::size_t> rows,
                                 std::size_t n);

/// @brief A logistic fit of `label` on `rows` with the design's features (ridge fallback under
/// separation, intercept only without features); with one label class among `rows`, the constant
/// model (exactly 0 or 1). On failure, `why` is set and the model is unfitted.
relay_gate_logistic fit_gate_logistic(std::string_view fn, const gate_design& d,
                                      const std::vector<gate_candidate>& cand, std::span<const double> label,
                                      std::span<const std::size_t> rows, double ridge, std::string& why);

/// @brief A gate fitted on some units.
struct gate_fit {
  relay_gate_model model;            ///< raw-scale helps and hurts models
  std::vector<std::size_t> kept;     ///< candidate indices of model.features
  std::vector<std::string> dropped;  ///< "name: why" per candidate not kept
  std::string why;                   ///< non-empty when a model could not be fitted
};

/// @brief Feature selection on `rows`, then the helps and hurts models (fit_gate_logistic) and the
/// cost of the options.
gate_fit fit_gate_on(std::string_view fn, const std::vector<gate_candidate>& cand,
                     std::span<const double> helps, std::span<const double> hurts,
                     std::span<const std::size_t> rows, const relay_gate_options& o);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/cost-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_COST_HPP
