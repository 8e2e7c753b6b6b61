// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/detail/report_sections.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_DETAIL_IMPL_REPORT_SECTIONS_INL_HPP
#define LATENTAUDIT_REPORT_DETAIL_IMPL_REPORT_SECTIONS_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../report_sections.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "../../report.hpp"
#include "../failure_report.hpp"

namespace latentaudit::detail {

namespace {
// Accuracy differences in signed points, one decimal ("+98.4"); "–" when not finite.
inline number_format sec_points() { return {.spec = "{:+.1f}", .scale = 100.0}; }
// A count.
inline report_cell sec_count(std::size_t n) {
  return report_cell::number(static_cast<double>(n), {.spec = "{}"});
}
// A contrast's verdict interval in signed points, without its estimate.
inline report_cell sec_verdict_interval(double lo, double hi) {
  return report_cell::interval(std::nullopt, lo, hi, {}, sec_points());
}
// "treated − control", both labels from the records.
inline report_cell sec_contrast_label(const std::string& treated, const std::string& control) {
  return report_cell::of_text(
      {report_span::data(treated), report_span::prose(" − "), report_span::data(control)});
}
inline report_column sec_col(std::string header, bool numeric = false, std::string unit = {}) {
  return {std::move(header), std::move(unit), numeric};
}
}  // namespace

LATENTAUDIT_INLINE report_section relay_failures_section(const audit_core& c, double margin) {
  report_section s{.id = "relay-failures",
                   .title = "When relay does not pay: stale caches, conflicting caches, drifted senders",
                   .level = 2,
                   .blocks = {}};
  auto para = [&](report_text t) { s.blocks.emplace_back(report_paragraph{std::move(t), false}); };
  para({report_span::prose(
      fmt::format("Accuracy differences in points with their 90 % betting verdict intervals over items; the "
                  "margin is {:.1f} points.",
                  100.0 * margin))});
  report_table t;
  t.columns = {sec_col("regime"),
               sec_col("contrast"),
               sec_col("pairs", true),
               sec_col("items", true),
               sec_col("estimate", true, "points"),
               sec_col("verdict interval", true, "points"),
               sec_col("Holm p", true)};
  for (const auto* k :
       {&c.stale.kv_vs_text, &c.stale.kv_vs_no_comm, &c.stale.text_vs_no_comm, &c.stale.stale_excess,
        &c.conflict.kv_vs_no_comm, &c.conflict.text_vs_no_comm, &c.conflict.kv_vs_text}) {
    if (!k->estimable()) continue;
    t.rows.push_back({report_cell::label(k->regime), sec_contrast_label(k->treated, k->control),
                      sec_count(k->n_pairs), sec_count(k->n_items),
                      report_cell::number(k->estimate, sec_points()),
                      sec_verdict_interval(k->verdict_low, k->verdict_high),
                      report_cell::number(k->p_holm, {.spec = "{:.3g}"})});
  }
  auto not_tested = [&](const char* regime, const char* why) {
    std::vector<report_cell> row{report_cell::words(regime), report_cell::words(why)};
    row.resize(t.columns.size(), report_cell::blank());
    t.rows.push_back(std::move(row));
  };
  if (c.stale.units == 0) not_tested("stale", "not tested (no stale units)");
  if (c.conflict.units == 0) not_tested("conflict", "not tested (no conflict units)");
  s.blocks.emplace_back(std::move(t));
  const auto& k = c.stale.kv_answers;
  if (k.classified > 0)
    para({report_span::prose(
        fmt::format("kv\\_full's stale-regime answers: {} stale value, {} other wrong, {} current (of {}).",
                    k.stale, k.other_wrong, k.correct, k.classified))});
  const auto& a = c.conflict.attention;
  const number_format three{.spec = "{:.3f}"};
  auto n3 = [&](double x) { return format_number(x, three); };
  if (a.available)
    para({report_span::prose(fmt::format(
        "Mechanism: B's attention mass on the relayed tokens (kv\\_full) is {} [{}, {}] in conflict vs {} "
        "[{}, "
        "{}] in need; difference {} [{}, {}].",
        n3(a.conflict_mean), n3(a.conflict_low), n3(a.conflict_high), n3(a.need_mean), n3(a.need_low),
        n3(a.need_high), n3(a.difference), n3(a.difference_low), n3(a.difference_high)))});
  else
    para({report_span::prose("Mechanism (attention mass on the relay): "), report_span::data(a.note),
          report_span::prose(".")});
  const auto& tol = c.drift.tolerance;
  if (tol.curve.size() < 2) {
    para({report_span::prose("Drift: not tested (no drift arms paired with kv\\_full in the need regime).")});
    return s;
  }
  if (auto f = drift_response_figure(c))
    s.blocks.emplace_back(report_figure{"drift_response.svg", "drift dose-response", std::move(*f)});
  auto beyond = [](const std::optional<double>& x) {
    return x ? fmt::format("{:.3g}", *x) : std::string("beyond");
  };
  para({report_span::prose(
      fmt::format("Drift tolerance (steps where the fitted difference vs kv\\_full reaches −{:.1f} points): "
                  "{}, CI [{}, {}].",
                  100.0 * margin, beyond(tol.tolerance_sigma), beyond(tol.ci_low), beyond(tol.ci_high)))});
  report_table d;
  d.columns = {sec_col("steps", true),
               sec_col("arm"),
               sec_col("items", true),
               sec_col("accuracy %", true),
               sec_col("difference vs kv\\_full", true, "points"),
               sec_col("verdict interval", true, "points"),
               sec_col("benefit vs no\\_comm", true, "points"),
               sec_col("verdict interval", true, "points")};
  for (std::size_t i = 0; i < tol.curve.size(); ++i) {
    const auto& p = tol.curve[i];
    const regime_contrast* b = i < c.drift.benefit.size() ? &c.drift.benefit[i].benefit : nullptr;
    d.rows.push_back({report_cell::number(p.sigma, {.spec = "{:g}"}), report_cell::label(p.arm),
                      sec_count(p.items), report_cell::number(p.accuracy, {.spec = "{:.1f}", .scale = 100.0}),
                      report_cell::number(p.diff_vs_kv_full, sec_points()),
                      sec_verdict_interval(p.diff_ci_low, p.diff_ci_high),
                      b ? report_cell::number(b->estimate, sec_points()) : report_cell::none(),
                      b ? sec_verdict_interval(b->verdict_low, b->verdict_high) : report_cell::none()});
  }
  s.blocks.emplace_back(std::move(d));
  return s;
}

LATENTAUDIT_INLINE std::optional<report_section> messages_section(const message_analysis& m, double margin) {
  if (m.contrasts.empty() && m.kv_message.empty() && m.kv_message_only.empty()) return std::nullopt;
  report_section s{
      .id = "messages", .title = "Messages: A's cache or A's message?", .level = 2, .blocks = {}};
  s.blocks.emplace_back(report_paragraph{
      {report_span::prose(fmt::format(
          "A writes a message after its instruction; text\\_message\\_k relays at most k of its tokens as "
          "text, "
          "{} relays A's cache of the document, the instruction and the message, {} the message's cache rows "
          "only. Accuracy differences in points with their 90 % betting verdict intervals over items; Holm "
          "over "
          "the kv\\_message − text\\_message\\_k column (the message family); the margin is {:.1f} points.",
          m.kv_message.empty() ? "kv\\_message (absent)" : "kv\\_message",
          m.kv_message_only.empty() ? "kv\\_message\\_only (absent)" : "kv\\_message\\_only",
          100.0 * margin))},
      false});
  auto cell = [](const regime_contrast& c) {
    return c.estimable()
               ? report_cell::interval(c.estimate, c.verdict_low, c.verdict_high, sec_points(), sec_points())
               : report_cell::none();
  };
  report_table t;
  t.columns = {sec_col("k", true, "tokens"),
               sec_col("regime"),
               sec_col("mean length", true, "tokens"),
               sec_col("text\\_message − no\\_comm", true, "points"),
               sec_col("kv\\_message − text\\_message", true, "points"),
               sec_col("Holm p", true),
               sec_col("kv\\_message\\_only − text\\_message", true, "points")};
  for (const auto& c : m.contrasts)
    t.rows.push_back({report_cell::number(static_cast<double>(c.k), {.spec = "{}"}),
                      report_cell::label(c.regime),
                      report_cell::number(c.mean_message_length, {.spec = "{:.1f}"}), cell(c.text_vs_no_comm),
                      cell(c.kv_vs_text), report_cell::number(c.kv_vs_text.p_holm, {.spec = "{:.3g}"}),
                      cell(c.kv_only_vs_text)});
  s.blocks.emplace_back(std::move(t));
  return s;
}

LATENTAUDIT_INLINE std::optional<report_section> mapped_section(const mapped_analysis& m, double margin) {
  if (m.arms.empty()) return std::nullopt;
  report_section s{.id = "mapped", .title = "Relay through a cache map", .level = 2, .blocks = {}};
  s.blocks.emplace_back(report_paragraph{
      {report_span::prose(
           "A foreign sender's cache mapped into B's model's shape (kv\\_mapped, a map made by "),
       report_span::code("latentaudit map fit"),
       report_span::prose(fmt::format(
           "), need regime: accuracy differences in points with their 90 % betting verdict intervals over "
           "items, and the retention (kv\\_mapped − no\\_comm) / (kv\\_full − no\\_comm) with its interval; "
           "the "
           "margin is {:.1f} points, the retention gate {:.2f}.",
           100.0 * margin, m.gate))},
      false});
  auto cell = [](const regime_contrast& c) {
    return c.estimable()
               ? report_cell::interval(c.estimate, c.verdict_low, c.verdict_high,
                                       {.spec = "{:+.1f}", .scale = 100.0, .unit = " points"}, sec_points())
               : report_cell::none();
  };
  auto ratio = [](const ratio_interval& r) {
    return std::isfinite(r.estimate) ? report_cell::interval(r.estimate, r.low, r.high, {.spec = "{:.2f}"},
                                                             {.spec = "{:.2f}", .infinities = true})
                                     : report_cell::none();
  };
  auto screen = [](const mapped_screen& x) {
    if (x.items == 0) return report_cell::none();
    std::string t = fmt::format("{:.3f}", x.mean_cosine);
    if (std::isfinite(x.r))
      t +=
          fmt::format(", r = {:+.2f}", x.r) +
          (std::isfinite(x.ci_low) ? fmt::format(" [{:+.2f}, {:+.2f}]", x.ci_low, x.ci_high) : std::string());
    return report_cell::words(t + fmt::format(" ({} items)", x.items));
  };
  report_table t;
  t.columns = {sec_col("arm"),
               sec_col("map"),
               sec_col("kv\\_mapped − unmapped", true, "points"),
               sec_col("kv\\_mapped − kv\\_full", true, "points"),
               sec_col("kv\\_mapped − no\\_comm", true, "points"),
               sec_col("retention", true),
               sec_col("screen: attention cosine, r with the benefit")};
  for (const auto& c : m.arms)
    t.rows.push_back({report_cell::code_id(c.arm),
                      c.map.empty() ? report_cell::none() : report_cell::code_id(c.map),
                      cell(c.beats_unmapped), cell(c.vs_same_model), cell(c.mapped_benefit),
                      ratio(c.retention), screen(c.screen)});
  s.blocks.emplace_back(std::move(t));
  return s;
}

LATENTAUDIT_INLINE std::optional<report_section> link_fit_section(const audit_report& r) {
  const auto& F = r.link_fit;
  if (F.relays == 0 && F.failed_relays == 0) return std::nullopt;
  report_section s{.id = "link-fit", .title = "Link fitted from measured relays", .level = 2, .blocks = {}};
  const number_format sec{.automatic = number_format::auto_unit::seconds};
  const number_format bytes{.automatic = number_format::auto_unit::bytes};
  report_text intro{
      report_span::prose("Relays that crossed a real link ("), report_span::code("--relay-transport"),
      report_span::prose("): measured crossing time of the wire frame ("),
      report_span::code("transfer_measured_s"),
      report_span::prose(fmt::format(") against its size; least squares t = α + bytes / bandwidth, HC3 "
                                     "intervals (docs/audit-report.md). {} "
                                     "relays of {} frame sizes; {} rejected frames (relay_error) left out.",
                                     F.relays, F.distinct_sizes, F.failed_relays))};
  if (r.options.link_measured) {
    intro.push_back(report_span::prose(" The cost verdicts above use this link ("));
    intro.push_back(report_span::code("--link measured"));
    intro.push_back(report_span::prose(
        "; with a slope estimate at or below 0, the lower limit of the bandwidth interval)."));
  }
  s.blocks.emplace_back(report_paragraph{std::move(intro), false});
  if (F.ok()) {
    auto gbs = [](const std::optional<double>& x) {
      return x ? fmt::format("{:.3g}", *x / 1e9) : std::string("unbounded");
    };
    report_list l;
    l.items.push_back({report_span::prose(
        fmt::format("α = {} [{}, {}]", format_number(F.alpha_s.estimate, sec),
                    format_number(F.alpha_s.ci_low, sec), format_number(F.alpha_s.ci_high, sec)))});
    l.items.push_back({report_span::prose(
        fmt::format("bandwidth = {} GB/s [{}, {}]",
                    std::isfinite(F.bandwidth_bytes_s) ? fmt::format("{:.3g}", F.bandwidth_bytes_s / 1e9)
                                                       : std::string("not positive"),
                    F.bandwidth_low ? gbs(F.bandwidth_low) : std::string("0"), gbs(F.bandwidth_high)))});
    s.blocks.emplace_back(std::move(l));
  } else {
    s.blocks.emplace_back(report_paragraph{
        {report_span::prose("No fit: "), report_span::data(F.missing), report_span::prose(".")}, false});
  }
  report_table t;
  t.columns = {sec_col("arm"),
               sec_col("relays", true),
               sec_col("rejected", true),
               sec_col("mean frame", true),
               sec_col("modeled transfer", true),
               sec_col("measured (mean / median)"),
               sec_col("fitted", true)};
  for (const auto& a : r.link_rows)
    t.rows.push_back({report_cell::label(a.arm), sec_count(a.relays), sec_count(a.failed),
                      report_cell::number(a.mean_bytes, bytes), report_cell::number(a.mean_modeled_s, sec),
                      report_cell::words(format_number(a.mean_measured_s, sec) + " / " +
                                         format_number(a.median_measured_s, sec)),
                      report_cell::number(a.mean_fitted_s, sec)});
  s.blocks.emplace_back(std::move(t));
  return s;
}

LATENTAUDIT_INLINE report_section cost_section(const audit_report& r) {
  report_section s{.id = "cost", .title = "Cost-benefit by link", .level = 2, .blocks = {}};
  auto para = [&](report_text t) { s.blocks.emplace_back(report_paragraph{std::move(t), false}); };
  const std::vector<std::string> stages(latency_stage_names.begin(), latency_stage_names.end());
  bars_figure end_to_end{.bars = {},
                         .options = {.title = "Mean end-to-end latency per trial by stage, A's prefill "
                                              "included (need regime)",
                                     .x_label = "microseconds"},
                         .colour_order = stages};  // one colour a stage in both figures
  bars_figure receiver{.bars = {},
                       .options = {.title = "Mean receiver latency per trial by stage (need regime; what the "
                                            "cost verdict compares)",
                                   .x_label = "microseconds"},
                       .colour_order = stages};
  for (const auto& a : r.core.stage_latency) {  // what the cost verdict is about: A's prefill left out
    stacked_bar b{a.arm, {}}, rb{a.arm, {}};
    for (std::size_t i = 0; i < stages.size(); ++i) {
      b.segments.push_back({stages[i], 1e6 * a.total_s[i] / static_cast<double>(a.records)});
      if (i > 0) rb.segments.push_back(b.segments.back());
    }
    end_to_end.bars.push_back(std::move(b));
    receiver.bars.push_back(std::move(rb));
  }
  s.blocks.emplace_back(
      report_figure{"latency_receiver.svg", "receiver latency breakdown", std::move(receiver)});
  s.blocks.emplace_back(report_figure{"latency.svg", "end-to-end latency breakdown", std::move(end_to_end)});
  const number_format sec{.automatic = number_format::auto_unit::seconds};
  const number_format bytes{.automatic = number_format::auto_unit::bytes};
  if (!r.cost.missing.empty()) {
    para({report_span::prose("Not run ("), report_span::data(r.cost.missing), report_span::prose(").")});
  } else {
    const auto& S = r.cost.sensitivity;
    para({report_span::prose(fmt::format(
              "KV relay (kv_full) against text relay (text_full), need regime, {} items. ", S.items)),
          report_span::strong("Statement"), report_span::prose(" ("),
          report_span::code(finding_id(finding_kind::cost_relay_pays)),
          report_span::prose(std::string(": ") + verdict_name(S.pays) + "): "),
          report_span::data(S.statement), report_span::prose(".")});
    para(
        {report_span::prose(
             "Method: receiver latency with the transfer time recomputed per link from the bytes; break-even "
             "CIs: percentile cluster bootstrap over items; accuracy: betting over items. Timing: "),
         report_span::data(S.timing_note), report_span::prose(".")});
    report_table t;
    t.columns = {sec_col("link"),
                 sec_col("saved latency per request", true, "s"),
                 sec_col("extra bytes", true, "bytes"),
                 sec_col("SLO met kv / text"),
                 sec_col("break-even bandwidth"),
                 sec_col("break-even extra α", true, "s"),
                 sec_col("relay pays"),
                 sec_col("own finding")};
    for (const auto& l : r.cost.links)
      t.rows.push_back(
          {report_cell::label(l.link.name),
           report_cell::interval(l.saved_s.estimate, l.saved_s.ci_low, l.saved_s.ci_high, sec, sec),
           report_cell::number(l.extra_bytes.estimate, bytes),
           report_cell::words(l.slo_met_relay ? pct(*l.slo_met_relay) + "% / " + pct(*l.slo_met_text) + "%"
                                              : std::string("no SLO given")),
           report_cell::words(
               fmt::format("{} ({})",
                           l.break_even_bandwidth_bytes_s
                               ? fmt::format("{:.3g} GB/s", *l.break_even_bandwidth_bytes_s / 1e9)
                               : std::string("–"),
                           break_even_region_name(l.region))),
           report_cell::number(l.break_even_extra_alpha_s ? *l.break_even_extra_alpha_s
                                                          : std::numeric_limits<double>::quiet_NaN(),
                               sec),
           report_cell::of_verdict(l.pays), report_cell::words(l.reported ? "yes" : "–")});
    s.blocks.emplace_back(std::move(t));
    para(
        {report_span::strong("Projection for real model shapes (not a finding):"),
         report_span::prose(
             " KV bytes per document token (bf16) and the bandwidth above which relaying the cache beats the "
             "receiver prefilling the document at the given throughput (b·T; the link's fixed cost and the "
             "relay's export/import overheads are not included).")});
    report_table p;
    p.columns = {sec_col("model"), sec_col("KV bytes/token", true, "bytes"),
                 sec_col("prefill throughput", true, "tokens/s"),
                 sec_col("break-even bandwidth", true, "GB/s")};
    for (const auto& q : r.cost.projection)
      p.rows.push_back({report_cell::label(q.model.name), report_cell::number(q.kv_bytes_per_token, bytes),
                        report_cell::number(q.prefill_tokens_per_s, {.spec = "{:.3g}", .unit = " tokens/s"}),
                        report_cell::number(q.break_even_bandwidth_bytes_s,
                                            {.spec = "{:.3g}", .scale = 1e-9, .unit = " GB/s"})});
    s.blocks.emplace_back(std::move(p));
  }
  if (!r.cost.notes.empty()) {
    report_list notes;
    for (const auto& n : r.cost.notes) notes.items.push_back({report_span::data(n)});
    s.blocks.emplace_back(std::move(notes));
  }
  return s;
}

LATENTAUDIT_INLINE report_section gate_section(const audit_report& r) {
  report_section s{.id = "gate", .title = "Per-request relay gate", .level = 2, .blocks = {}};
  const auto& G = r.gate;
  auto para = [&](report_text t) { s.blocks.emplace_back(report_paragraph{std::move(t), false}); };
  if (!G.missing.empty()) {
    report_text t{report_span::prose("Not fitted ("), report_span::data(G.missing), report_span::prose(").")};
    if (!G.population.empty()) {
      t.push_back(report_span::prose(" "));
      t.push_back(report_span::data(G.population));
    }
    para(std::move(t));
    return s;
  }
  auto logistic_text = [](const relay_gate_logistic& m) {
    if (m.constant) return fmt::format("{}", *m.constant);
    std::string t = fmt::format("expit({:.4g}", m.coefficients.empty() ? 0.0 : m.coefficients[0]);
    for (std::size_t i = 0; i < m.features.size() && i + 1 < m.coefficients.size(); ++i)
      t += fmt::format(" {:+.4g}·{}", m.coefficients[i + 1], m.features[i]);
    return t + ")";
  };
  const std::string eq = fmt::format("P(helps) = {}; P(hurts) = {}; relay when P(helps) − P(hurts) > {}{}",
                                     logistic_text(G.model.helps), logistic_text(G.model.hurts), G.model.cost,
                                     G.model.penalized ? " (ridge fallback: a plain fit separated)" : "");
  para({report_span::data(G.population)});
  para({report_span::prose("Gain gate on pre-transfer features: it relays when the predicted accuracy gain "
                           "over the fallback '"),
        report_span::data(G.fallback),
        report_span::prose(fmt::format(
            "', P(relay right, fallback wrong) − P(relay wrong, fallback right), exceeds the cost; "
            "cross-fitted "
            "over {} items ({} folds; every item held out once); deployable model fitted on every item: ",
            G.held_out_items, G.folds)),
        report_span::code(eq), report_span::prose(".")});
  report_list features;  // written even when empty: report.md has its blank line
  for (const auto& d : G.excluded_features)
    features.items.push_back({report_span::prose("never a feature: "), report_span::data(d)});
  for (const auto& d : G.dropped_features)
    features.items.push_back({report_span::prose("dropped feature "), report_span::data(d)});
  s.blocks.emplace_back(std::move(features));
  const number_format g4{.spec = "{:.4g}"};
  auto estimate = [&](const effect_estimate& e) {
    return report_cell::interval(e.estimate, e.ci_low, e.ci_high, g4, g4);
  };
  report_table t;
  t.columns = {sec_col("policy"), sec_col("accuracy [CI]", true),
               sec_col("bytes per request [CI]", true, "bytes"), sec_col("relay rate", true, "%")};
  for (const auto& p : G.policies)
    if (p.available)
      t.rows.push_back({report_cell::label(p.name), estimate(p.accuracy), estimate(p.bytes),
                        report_cell::number(p.relay_rate, {.spec = "{:.1f}", .scale = 100.0, .unit = "%"})});
  s.blocks.emplace_back(std::move(t));
  para({report_span::prose(fmt::format(
      "Gate − always-relay accuracy {} (betting over items); share of requests not relayed {}; bytes "
      "saved per request {}.",
      estimate_md(G.accuracy_vs_always_relay), estimate_md(G.skip_share), estimate_md(G.bytes_saved)))});
  return s;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_IMPL_REPORT_SECTIONS_INL_HPP
