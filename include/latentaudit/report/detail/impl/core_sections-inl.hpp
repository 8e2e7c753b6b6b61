// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/detail/core_sections.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_DETAIL_IMPL_CORE_SECTIONS_INL_HPP
#define LATENTAUDIT_REPORT_DETAIL_IMPL_CORE_SECTIONS_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../core_sections.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "../../html.hpp"
#include "../../report.hpp"
#include "../failure_report.hpp"

namespace latentaudit::detail {

namespace {
// Accuracy differences in signed points, one decimal, a zero unsigned ("+1.2 pts", "0.0 pts").
inline number_format core_points() {
  return {.spec = "{:+.1f}", .scale = 100.0, .unit = " pts", .unsigned_zero = true};
}
// A points interval "[lo, hi] pts" (a zero unsigned), without its estimate.
inline report_cell core_points_interval(double lo, double hi) {
  return report_cell::interval(std::nullopt, lo, hi, {},
                               {.spec = "{:.1f}", .scale = 100.0, .unsigned_zero = true}, " pts");
}
// A fraction in percent, one decimal ("87.5").
inline number_format core_percent() { return {.spec = "{:.1f}", .scale = 100.0}; }
// A percent interval "[lo, hi]".
inline report_cell core_percent_interval(double lo, double hi) {
  return report_cell::interval(std::nullopt, lo, hi, {}, core_percent());
}
// Four significant digits ("1234", "0.9876").
inline number_format core_g4() { return {.spec = "{:.4g}"}; }
// A count.
inline report_cell core_count(std::size_t n) {
  return report_cell::number(static_cast<double>(n), {.spec = "{}"});
}
// A p-value: "<0.001" below 0.001 (a format without a field: the text, the value kept for sorting and
// JSON), else three decimals ("–" when not finite).
inline report_cell core_p(double p) {
  return report_cell::number(p, {.spec = std::isfinite(p) && p < 0.001 ? "<0.001" : "{:.3f}"});
}
// An estimate with its CI, four significant digits ("0.1234 [0.05, 0.2]").
inline report_cell core_estimate(const effect_estimate& e) {
  return report_cell::interval(e.estimate, e.ci_low, e.ci_high, core_g4(), core_g4());
}
inline report_column core_col(std::string header, bool numeric = false) {
  return {std::move(header), {}, numeric};
}
// "95%" for the 1 − α level.
inline std::string core_level(double alpha) { return fmt::format("{:g}%", 100.0 * (1.0 - alpha)); }
}  // namespace

LATENTAUDIT_INLINE report_section title_section(const audit_report& r) {
  report_section s{
      .id = {}, .title = "latentaudit report: when does latent communication pay?", .level = 1, .blocks = {}};
  report_paragraph meta{
      {report_span::prose(
          fmt::format("{} records, {} items, {} seeds. Family-wise α = {}, equivalence margin ±{} accuracy "
                      "points, {} bootstrap replicates (seed {}).",
                      r.core.n_records, r.core.n_items, r.core.n_seeds, r.options.alpha,
                      format_number(r.options.equivalence_margin, core_percent()),
                      r.options.bootstrap_replicates, r.options.seed))},
      false};
  meta.style = "meta";
  s.blocks.emplace_back(std::move(meta));
  if (r.options.horizon == 0) return s;
  // stopped when decided (`audit --until-decided`): the horizon, the looks, the arms stopped one by one
  const auto& sc = r.options.schedule;
  // with arms stopped one by one, an item whose regime's arms had all stopped holds no record
  const std::size_t run =
      sc.empty()
          ? r.core.n_items
          : static_cast<std::size_t>(std::min<std::uint64_t>(sc.batches * sc.batch_items, r.options.horizon));
  const std::string held =
      run == r.core.n_items ? std::string() : fmt::format(" ({} of them hold records)", r.core.n_items);
  s.blocks.emplace_back(report_paragraph{
      {report_span::strong("Stopped when decided"), report_span::prose(" ("),
       report_span::code("--until-decided"),
       report_span::prose(fmt::format(
           "): these are the first {}{} of the design's {} items, looked at up to {} times. Every betting "
           "interval and p-value over items is a confidence sequence tuned for the design's items of its "
           "regime (report.json options.regime_horizon_items; valid at the stop the data chose); the cost "
           "findings' latency bootstrap runs at α/{}. The descriptive bootstrap intervals (CIs of paired "
           "effects, CATE, noise and drift tolerances) are not adjusted for the stop.",
           run, held, r.options.horizon, r.options.looks, r.options.looks))},
      true});
  if (sc.empty()) return s;
  std::size_t not_run = 0;  // the trials of cells left out, on the units the records hold
  for (const auto& c : r.core.completeness) not_run += c.not_scheduled;
  s.blocks.emplace_back(report_paragraph{
      {report_span::prose(fmt::format(
          "Arms stopped one by one: {} (regime, arm) cells stopped before the last of {} batches of {} items "
          "once every finding that reads them was decided (schedule.json; report.json options.schedule); the "
          "trials they never ran are not missing records ({} on the (item, seed) units the records hold: "
          "completeness not_scheduled), and the findings of a stopped cell rest on the items it ran.",
          sc.partial.size(), sc.batches, sc.batch_items, not_run))},
      true});
  return s;
}

LATENTAUDIT_INLINE report_section accuracy_section(const audit_report& r) {
  report_section s{.id = "accuracy", .title = "Accuracy by arm", .level = 2, .blocks = {}};
  std::vector<const arm_summary*> arms;  // by regime (need, no_need, stale, conflict, ...), then arm
  for (const auto& a : r.core.arms)
    if (a.regime != "all") arms.push_back(&a);
  std::stable_sort(arms.begin(), arms.end(), [](const arm_summary* a, const arm_summary* b) {
    return std::tuple(regime_rank(a->regime), a->regime, a->arm) <
           std::tuple(regime_rank(b->regime), b->regime, b->arm);
  });
  report_table t;
  t.columns = {core_col("regime"),
               core_col("arm"),
               core_col("n", true),
               core_col("accuracy %", true),
               core_col(core_level(r.options.alpha) + " CI % (item-clustered)", true),
               core_col("mean bytes", true),
               core_col("receiver µs", true),
               core_col("attention on relay", true),
               core_col("hidden cosine vs text", true),
               core_col("KL vs text", true)};
  auto opt = [](const std::optional<double>& x) {
    return x ? report_cell::number(*x, core_g4()) : report_cell::none();
  };
  for (const auto* a : arms)
    t.rows.push_back(
        {report_cell::of_text({report_span::data(a->regime)}, regime_rank(a->regime)),
         report_cell::label(a->arm), core_count(a->n), report_cell::number(a->accuracy, core_percent()),
         core_percent_interval(a->ci_low, a->ci_high), report_cell::number(a->mean_bytes, core_g4()),
         report_cell::number(a->mean_receiver_s, {.spec = "{:.1f}", .scale = 1e6}),
         opt(a->mean_attention_mass), opt(a->mean_hidden_cosine), opt(a->mean_next_token_kl)});
  s.blocks.emplace_back(std::move(t));
  return s;
}

// forest.svg's data: the paired effects, the decomposition and the relay-failure rows with their
// descriptive CIs, each verdict interval behind its line, ±margin.
LATENTAUDIT_INLINE forest_figure forest_figure_of(const audit_report& r) {
  forest_figure f;
  // the verdict interval the findings read, drawn behind the descriptive CI when finite
  auto verdict_of = [](const paired_effect& e) -> std::optional<std::pair<double, double>> {
    if (std::isfinite(e.verdict_low) && std::isfinite(e.verdict_high) && e.verdict_low <= e.verdict_high)
      return std::pair{e.verdict_low, e.verdict_high};
    return std::nullopt;
  };
  for (const auto& e : r.core.effects)
    if (std::isfinite(e.estimate) && std::isfinite(e.ci_low) && std::isfinite(e.ci_high))
      f.rows.push_back({e.regime + ": " + e.treated + " − " + e.control, e.estimate, e.ci_low, e.ci_high,
                        e.regime, verdict_of(e)});
  for (const auto& e : r.core.decomposition)
    if (std::isfinite(e.estimate) && std::isfinite(e.ci_low) && std::isfinite(e.ci_high))
      f.rows.push_back(
          {"decomposition: " + e.id, e.estimate, e.ci_low, e.ci_high, "decomposition", verdict_of(e)});
  relay_failure_forest_rows(r.core, f.rows);  // stale, conflict and drift rows
  const double m = r.options.equivalence_margin;
  const std::string lv = fmt::format("{:g}%", 100.0 * (1.0 - r.options.alpha)),
                    vv = fmt::format("{:g}%", 100.0 * (1.0 - 2.0 * r.options.alpha));
  if (std::isfinite(m) && m > 0) {
    f.marks.margins = {-m, m};
    f.marks.margin_label = fmt::format("margin ±{:g}", m);
  }
  f.marks.ci_label = lv + " CI (bootstrap; relay-failure rows: betting)";
  f.marks.verdict_label = vv + " verdict interval (betting)";
  f.options = {.title = "Paired effects on accuracy: " + lv + " CI (line), " + vv +
                        " verdict interval (pale bar), ±margin (dotted)",
               .x_label = "difference in accuracy",
               .width = 960};
  return f;
}

// dose_response.svg's data: need-regime accuracy against the noise σ with its Wilson band, the text
// relay dashed, the tolerance σ with its interval.
LATENTAUDIT_INLINE band_figure dose_response_figure_of(const audit_report& r) {
  band_series s{"accuracy (Wilson CI)", {}};
  for (const auto& p : r.core.noise.curve)
    if (std::isfinite(p.accuracy) && std::isfinite(p.ci_low) && std::isfinite(p.ci_high))
      s.points.push_back({p.sigma, p.accuracy, p.ci_low, p.ci_high});
  band_figure f{
      .series = {std::move(s)},
      .options = {.title = "Accuracy vs relay noise (need regime); dashed: text relay; marker: tolerance σ",
                  .x_label = "noise σ (× RMS of K/V)",
                  .y_label = "accuracy"},
      .hline = text_relay_accuracy(r.core),
      .vline = r.core.noise.tolerance_sigma,
      .vband = std::nullopt};
  if (r.core.noise.tolerance_sigma && r.core.noise.ci_low && r.core.noise.ci_high)
    f.vband = std::pair{*r.core.noise.ci_low, *r.core.noise.ci_high};
  return f;
}

// frontier.svg's data: bytes against need-regime accuracy, the Pareto set coloured.
LATENTAUDIT_INLINE frontier_figure frontier_figure_of(const audit_report& r) {
  frontier_figure f;
  for (const auto& p : r.core.frontier)
    if (p.mean_bytes > 0 && std::isfinite(p.accuracy))
      f.points.push_back({p.arm, p.mean_bytes, p.accuracy, p.ci_low, p.ci_high, p.pareto});
  f.options = {.title = "Bytes on the wire vs accuracy (need regime); coloured: Pareto set",
               .x_label = "mean relay bytes",
               .y_label = "accuracy",
               .log_x = true};
  return f;
}

LATENTAUDIT_INLINE report_section effects_section(const audit_report& r) {
  report_section s{.id = "effects",
                   .title = "Paired effects (Holm across the family) and decomposition",
                   .level = 2,
                   .blocks = {}};
  const std::string level = core_level(r.options.alpha);
  const std::string vlevel = core_level(2.0 * r.options.alpha);
  s.blocks.emplace_back(report_paragraph{
      {report_span::prose(
          "Forest plot: the line is the descriptive " + level +
          " cluster bootstrap CI, the wide pale bar the " + vlevel +
          " verdict interval (betting over items) the findings use; dotted lines mark ±margin.")},
      true});
  s.blocks.emplace_back(report_figure{"forest.svg", "forest plot", forest_figure_of(r)});
  report_table t;
  t.columns = {core_col("contrast"),
               core_col("regime"),
               core_col("pairs", true),
               core_col("items", true),
               core_col("estimate", true),
               core_col(level + " bootstrap CI", true),
               core_col(vlevel + " verdict interval (betting)", true),
               core_col("p (betting)", true),
               core_col("p (Holm)", true)};
  for (const auto* es : {&r.core.effects, &r.core.decomposition})
    for (const auto& e : *es)
      t.rows.push_back({report_cell::label(e.id), report_cell::label(e.regime), core_count(e.n_pairs),
                        core_count(e.n_clusters), report_cell::number(e.estimate, core_points()),
                        core_points_interval(e.ci_low, e.ci_high),
                        core_points_interval(e.verdict_low, e.verdict_high), core_p(e.p_value),
                        e.in_holm_family         ? core_p(e.p_holm)
                        : e.in_decision_sequence ? report_cell::words("decision sequence")
                                                 : report_cell::words("not in family")});
  s.blocks.emplace_back(std::move(t));
  return s;
}

LATENTAUDIT_INLINE std::optional<report_section> cate_section(const audit_report& r) {
  if (r.core.cate.empty()) return std::nullopt;
  report_section s{.id = "cate", .title = "Effects by regime and covariate (CATE)", .level = 2, .blocks = {}};
  report_table t;
  t.columns = {core_col("contrast"),
               core_col("variable"),
               core_col("level"),
               core_col("n", true),
               core_col("estimate", true),
               core_col(core_level(r.options.alpha) + " bootstrap CI", true),
               core_col("p (McNemar)", true),
               core_col("p adjusted (Holm)", true)};
  for (const auto& c : r.core.cate)
    t.rows.push_back({report_cell::label(c.arm_pair), report_cell::label(c.variable),
                      report_cell::label(c.level), core_count(c.n),
                      report_cell::number(c.estimate, core_points()),
                      core_points_interval(c.ci_low, c.ci_high), core_p(c.p_value), core_p(c.p_adjusted)});
  s.blocks.emplace_back(std::move(t));
  return s;
}

LATENTAUDIT_INLINE report_section noise_section(const audit_report& r) {
  report_section s{.id = "noise", .title = "Noise dose-response", .level = 2, .blocks = {}};
  const std::string level = core_level(r.options.alpha);
  const auto& nz = r.core.noise;
  s.blocks.emplace_back(report_figure{"dose_response.svg", "dose-response", dose_response_figure_of(r)});
  const number_format g4 = core_g4();
  const auto beyond = [&](const std::optional<double>& x) {
    return x ? format_number(*x, g4) : std::string("beyond");
  };
  if (nz.curve.size() < 2)
    s.blocks.emplace_back(
        report_paragraph{{report_span::prose("No noise arms were run (or none pairs with kv\\_full). "),
                          report_span::data(nz.method)},
                         false});
  else
    s.blocks.emplace_back(report_paragraph{
        {report_span::prose(fmt::format(
            "Tolerance σ (the fitted difference vs kv_full reaches −{} points): {}, {} CI [{}, {}] ({}% of "
            "replicates never reach it; \"beyond\": beyond the tested range). Largest σ shown non-inferior "
            "(conservative): {}.",
            format_number(r.options.noninferiority_margin, core_percent()), beyond(nz.tolerance_sigma), level,
            beyond(nz.ci_low), beyond(nz.ci_high), format_number(nz.unbounded_fraction, core_percent()),
            nz.sigma_noninferior ? format_number(*nz.sigma_noninferior, g4) : "none"))},
        false});
  if (nz.curve.empty()) return s;
  report_table t;
  t.columns = {core_col("σ", true),
               core_col("n", true),
               core_col("items", true),
               core_col("accuracy %", true),
               core_col(level + " CI %", true),
               core_col("difference vs kv_full", true),
               core_col("CI", true),
               core_col("fitted", true),
               core_col("non-inferior")};
  for (const auto& p : nz.curve)
    t.rows.push_back({report_cell::number(p.sigma, g4), core_count(p.n), core_count(p.items),
                      report_cell::number(p.accuracy, core_percent()),
                      core_percent_interval(p.ci_low, p.ci_high),
                      report_cell::number(p.diff_vs_kv_full, core_points()),
                      core_points_interval(p.diff_ci_low, p.diff_ci_high),
                      report_cell::number(p.fitted_diff, core_points()),
                      report_cell::words(p.noninferior ? "yes" : "no")});
  if (nz.curve.size() >= 2) t.notes.push_back({report_span::data(nz.method)});
  s.blocks.emplace_back(std::move(t));
  return s;
}

LATENTAUDIT_INLINE report_section frontier_section(const audit_report& r) {
  report_section s{
      .id = "frontier", .title = "Slicing and compression frontier (need regime)", .level = 2, .blocks = {}};
  s.blocks.emplace_back(report_figure{"frontier.svg", "frontier", frontier_figure_of(r)});
  report_table t;
  t.columns = {core_col("arm"), core_col("mean bytes", true), core_col("accuracy %", true),
               core_col(core_level(r.options.alpha) + " CI % (item-clustered)", true), core_col("Pareto")};
  for (const auto& p : r.core.frontier)
    t.rows.push_back({report_cell::label(p.arm), report_cell::number(p.mean_bytes, core_g4()),
                      report_cell::number(p.accuracy, core_percent()),
                      core_percent_interval(p.ci_low, p.ci_high), report_cell::words(p.pareto ? "yes" : "")});
  s.blocks.emplace_back(std::move(t));
  return s;
}

namespace {
// The demonstrations' "method | estimate [CI]" table: one row per (method, estimate).
inline report_table core_methods_table(
    std::initializer_list<std::pair<const char*, const effect_estimate*>> rows) {
  report_table t;
  t.columns = {core_col("method"), core_col("estimate [CI]", true)};
  for (const auto& [name, e] : rows) t.rows.push_back({report_cell::words(name), core_estimate(*e)});
  return t;
}
// An estimate with its CI as text, four significant digits ("0.1234 [0.05, 0.2]").
inline std::string core_estimate_text(const effect_estimate& e) {
  const number_format g4 = core_g4();
  return fmt::format("{} [{}, {}]", format_number(e.estimate, g4), format_number(e.ci_low, g4),
                     format_number(e.ci_high, g4));
}
}  // namespace

LATENTAUDIT_INLINE report_section demonstrations_section(const audit_report& r) {
  report_section s{.id = "demonstrations",
                   .title = "Teaching demonstrations — true by construction, not findings",
                   .level = 2,
                   .blocks = {}};
  auto para = [&](report_text t) { s.blocks.emplace_back(report_paragraph{std::move(t), false}); };
  para({report_span::prose(
            "Observational methods on a production log and a rollout simulated from the randomized records "
            "(the "
            "randomized result is the truth by construction). They teach which methods recover a randomized "
            "effect; they are not findings about the relay, and report.json lists them under "),
        report_span::code("demonstrations"), report_span::prose(", never under "),
        report_span::code("findings"), report_span::prose(". Every interval is clustered by item.")});
  if (!r.demonstrations.empty()) {
    report_table t;
    t.columns = {core_col("demonstration"),  core_col("outcome"),
                 core_col("estimate", true), core_col(core_level(r.options.alpha) + " CI", true),
                 core_col("n", true),        core_col("method")};
    report_list details;
    for (const auto& f : r.demonstrations) {
      report_cell id = report_cell::code_id(f.id);
      id.breakable = true;  // HTML: wraps only after a dot
      t.rows.push_back(
          {std::move(id), report_cell::of_verdict(f.answer), report_cell::number(f.estimate, core_points()),
           core_points_interval(f.ci_low, f.ci_high), core_count(f.n), report_cell::label(f.method)});
      if (!f.detail.empty())
        details.items.push_back(
            {report_span::code(f.id), report_span::prose(": "), report_span::data(f.detail)});
    }
    s.blocks.emplace_back(std::move(t));
    s.blocks.emplace_back(std::move(details));  // empty: a blank line in report.md, nothing in report.html
  }
  const auto& L = r.observational.log;
  if (!L.missing.empty()) {
    para({report_span::prose("Production log: not run ("), report_span::data(L.missing),
          report_span::prose(").")});
  } else {
    para(
        {report_span::prose(fmt::format("Production log: a scheduler relayed {} of {} units, mostly long "
                                        "documents and need items. Randomized "
                                        "truth {}.",
                                        L.treated, L.units, core_estimate_text(L.randomized)))});
    s.blocks.emplace_back(core_methods_table({{"naive difference", &L.naive},
                                              {"nearest-neighbour matching", &L.matching},
                                              {"IPW (Hájek)", &L.ipw},
                                              {"AIPW", &L.aipw}}));
  }
  const auto& R = r.observational.rollout;
  if (!R.missing.empty()) {
    para({report_span::prose("Rollout: not run ("), report_span::data(R.missing), report_span::prose(").")});
  } else {
    std::string drift;
    for (double a : R.period_text_accuracy)
      drift += (drift.empty() ? "" : ", ") + format_number(a, core_percent()) + "%";
    para({report_span::prose(
              fmt::format("Rollout over {} periods with drifting difficulty (accuracy of ", R.periods)),
          report_span::data(R.text_arm),
          report_span::prose(
              fmt::format(" per period: {}). Truth (ATT) {}.", drift, core_estimate_text(R.truth)))});
    s.blocks.emplace_back(
        core_methods_table({{"before/after", &R.before_after}, {"difference in differences", &R.did}}));
  }
  return s;
}

LATENTAUDIT_INLINE std::optional<report_section> warnings_section(const audit_report& r) {
  if (r.core.warnings.empty()) return std::nullopt;
  report_section s{.id = "warnings", .title = "Warnings", .level = 2, .blocks = {}};
  report_list l;
  for (const auto& w : r.core.warnings) l.items.push_back({report_span::data(w)});
  s.blocks.emplace_back(std::move(l));
  return s;
}

LATENTAUDIT_INLINE std::optional<report_section> unavailable_section(const audit_report& r,
                                                                     std::span<const trial_record> records) {
  const audit_options& o = r.options;
  if (o.engine.empty()) return std::nullopt;
  std::map<std::string, std::string> metrics;  // one reason a metric, in name order
  for (const auto& rec : records)
    for (const auto& u : rec.unavailable) metrics.emplace(u.metric, u.reason);
  if (o.arms_unavailable.empty() && metrics.empty()) return std::nullopt;
  report_section s{.id = "unavailable", .title = "Unavailable on this engine", .level = 2, .blocks = {}};
  s.heading = {report_span::prose("Unavailable on this engine ("), report_span::data(o.engine),
               report_span::prose(")")};
  s.blocks.emplace_back(report_paragraph{
      {report_span::prose("Arms left out of the design and metrics absent from the records (null, never "
                          "zero), with the reason each engine gives (engine\\_capabilities, "
                          "trial/engine\\_support.hpp).")}});
  report_table t{.columns = {{.header = "arm or metric"}, {.header = "reason"}}};
  const auto row = [&](const char* what, const std::string& name, const std::string& why) {
    t.rows.push_back(
        {report_cell::of_text({report_span::prose(what), report_span::code(name)}), report_cell::label(why)});
  };
  for (const auto& [arm, why] : o.arms_unavailable) row("arm ", arm, why);
  for (const auto& [m, why] : metrics) row("metric ", m, why);
  s.blocks.emplace_back(std::move(t));
  return s;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_IMPL_CORE_SECTIONS_INL_HPP
