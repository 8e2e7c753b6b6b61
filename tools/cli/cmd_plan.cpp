// SPDX-License-Identifier: MIT
// latentaudit CLI: `latentaudit plan` — before any trial, for each check of the audit's decision:
// the power of its verdict rule at the planned items, the items it needs for the target power, and
// the difference it can detect (estimators/betting_power.hpp: the item-level betting limit the
// findings use, simulated on clustered paired binary outcomes). docs/cli.md "plan".
#include <latentaudit/estimators/betting.hpp>
#include <latentaudit/estimators/betting_power.hpp>
#include <latentaudit/estimators/betting_ratio.hpp>
#include <latentaudit/report/finding_catalog.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {
namespace {

std::vector<option_spec> plan_options() {
  return {
      {"--items", "K", "need-regime items (documents) of the planned audit, >= 1; default 30"},
      {"--seeds", "S", "queries (seeds) per item, in [1, 1000]; default 2"},
      {"--no-need-items", "K", "no-need-regime items; default: --items"},
      {"--no-comm", "P", "assumed need-regime accuracy of no_comm (B alone), in [0, 1]; default 0.3"},
      {"--text", "P", "assumed need-regime accuracy of text_full, in [0, 1]; default 0.6"},
      {"--kv", "P", "assumed need-regime accuracy of kv_full, in [0, 1]; default: --text"},
      {"--cross-model", "P", "assumed need-regime accuracy of cross_model, in [0, 1]; default: --no-comm"},
      {"--no-need-accuracy", "P", "assumed no-need accuracy of no_comm, in [0, 1]; default 0.9"},
      {"--mapped", "P",
       "assumed need-regime accuracy of kv_mapped (a foreign sender's cache through a cache map, "
       "docs/mapping.md), in [0, 1]; adds the map's rows (non-inferiority, the retention gate); default: "
       "none"},
      {"--retention-gate", "G", "the retention gate of mapped.retention (its lower limit >= G); default 0.9"},
      {"--retention-replicates", "R",
       "simulated designs per power value of the retention gate (each runs the ratio's test inversion), "
       "in [50, 100000]; default 200"},
      {"--no-need-change", "D",
       "assumed kv_full - no_comm in the no-need regime (a fraction, e.g. -0.02); default 0"},
      {"--item-sd", "SD",
       "sd of each item's logit shift, shared by its seeds and arms (how much items differ), in [0, 10]; "
       "default 0.6"},
      {"--margin", "M", "the audit's margin as a fraction (0.05 = 5 points), in (0, 1); default 0.05"},
      {"--alpha", "A", "the audit's alpha, in (0, 0.5); default 0.05"},
      {"--power", "P", "target power, in (0, 1); default 0.8"},
      {"--max-items", "K", "largest design searched for the target power, in [1, 100000]; default 2000"},
      {"--replicates", "R", "simulated designs per power value, in [100, 100000]; default 1000"},
      {"--seed", "N", "seed of the simulation's streams; default 2028"},
      {"--json", "", "print only the JSON object (no table and sentences before it)"},
      common_option("--threads"),
      common_option("--pretty"),
  };
}

double accuracy(const arguments& a, std::string_view name, double fallback) {
  const double x = a.number(name, fallback);
  if (!(x >= 0.0 && x <= 1.0))
    throw usage_error(a.command() + ": option " + std::string(name) + " must lie in [0, 1], got " +
                      std::to_string(x));
  return x;
}

// x rounded to `decimals` decimals: the JSON carries what the simulation resolves (powers of
// 1000 designs, differences bisected to 0.001), not 0.09775390624999998.
double rounded(double x, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(x * scale) / scale;
}

// The options of one plan.
struct plan_inputs {
  std::size_t items = 30, seeds = 2, nn_items = 30;
  double nc = 0.3, tx = 0.6, kv = 0.6, cm = 0.3, nn = 0.9, change = 0.0;
  std::optional<double> mapped;
  double gate = 0.9;
  std::size_t ratio_reps = 200;
  double family = 3.0;  // the risk family: three risks, and the map
  double sd = 0.6, margin = 0.05, alpha = 0.05, power = 0.8;
  std::size_t max_items = 2000, reps = 1000;
  std::uint64_t seed = 2028;
  unsigned threads = 1;
};

plan_inputs read_inputs(const arguments& a) {
  plan_inputs in;
  in.items = static_cast<std::size_t>(a.integer("--items", 30, 1, 100000));
  in.seeds = static_cast<std::size_t>(a.integer("--seeds", 2, 1, 1000));
  in.nn_items = static_cast<std::size_t>(a.integer("--no-need-items", in.items, 1, 100000));
  in.nc = accuracy(a, "--no-comm", 0.3);
  in.tx = accuracy(a, "--text", 0.6);
  in.kv = accuracy(a, "--kv", in.tx);
  in.cm = accuracy(a, "--cross-model", in.nc);
  in.nn = accuracy(a, "--no-need-accuracy", 0.9);
  in.change = a.number("--no-need-change", 0.0);
  if (a.get("--mapped")) in.mapped = accuracy(a, "--mapped", 0.0);
  in.gate = a.number("--retention-gate", 0.9);
  if (!(in.gate > -10.0 && in.gate < 10.0))
    throw usage_error("plan: option --retention-gate must lie in (-10, 10)");
  in.ratio_reps = static_cast<std::size_t>(a.integer("--retention-replicates", 200, 50, 100000));
  in.family = in.mapped ? 4.0 : 3.0;
  if (!(in.nn + in.change >= 0.0 && in.nn + in.change <= 1.0))
    throw usage_error("plan: --no-need-accuracy + --no-need-change must lie in [0, 1]");
  in.sd = a.number("--item-sd", 0.6);
  if (!(in.sd >= 0.0 && in.sd <= 10.0)) throw usage_error("plan: option --item-sd must lie in [0, 10]");
  in.margin = a.number("--margin", 0.05);
  if (!(in.margin > 0.0 && in.margin < 1.0)) throw usage_error("plan: option --margin must lie in (0, 1)");
  in.alpha = a.alpha();
  in.power = a.number("--power", 0.8);
  if (!(in.power > 0.0 && in.power < 1.0)) throw usage_error("plan: option --power must lie in (0, 1)");
  in.max_items = static_cast<std::size_t>(a.integer("--max-items", 2000, 1, 100000));
  in.reps = static_cast<std::size_t>(a.integer("--replicates", 1000, 100, 100000));
  in.seed = a.integer("--seed", 2028, 0, UINT64_MAX);
  const auto t = static_cast<unsigned>(a.integer("--threads", 0, 0, 1024));
  in.threads = t != 0 ? t : std::max(1u, std::thread::hardware_concurrency());
  return in;
}

// One check of the decision: its finding, the contrast, the claim and the model it is planned
// under, and (once simulated) its power, the items it needs and the difference it detects.
struct plan_check {
  const char* check;
  std::string finding;  ///< the finding's id, from the catalog (report/finding_catalog.hpp)
  const char* contrast;
  clustered_binary_model model;
  betting_power_options options;
  std::size_t items;
  const char* note;
  betting_power_result power = {};
  std::optional<std::size_t> items_for_power;
  std::optional<double> detectable;
};

std::vector<plan_check> plan_checks(const plan_inputs& in) {
  auto opts = [&](betting_claim c, double threshold, double level) {
    return betting_power_options{
        .alpha = level, .threshold = threshold, .claim = c, .replicates = in.reps, .seed = in.seed};
  };
  auto model = [&](double control, double treated) {
    return clustered_binary_model{
        .control = control, .treated = treated, .item_sd = in.sd, .seeds = in.seeds};
  };
  std::vector<plan_check> checks = {
      {"positive_control", finding_id(finding_kind::need_text_beats_no_comm), "text_full - no_comm (need)",
       model(in.nc, in.tx), opts(betting_claim::above, 0.0, in.alpha), in.items,
       "first step of the decision's fixed sequence (full alpha)"},
      {"dependency", finding_id(finding_kind::need_kv_beats_no_comm), "kv_full - no_comm (need)",
       model(in.nc, in.kv), opts(betting_claim::above, 0.0, in.alpha), in.items,
       "second step: shown only after the positive control (full alpha)"},
      {"value", finding_id(finding_kind::need_kv_noninferior_to_text), "kv_full - text_full (need)",
       model(in.tx, in.kv), opts(betting_claim::above, -in.margin, in.alpha), in.items,
       "non-inferiority at the margin"},
      {"cross_model", finding_id(finding_kind::need_cross_model_beats_no_comm),
       "cross_model - no_comm (need)", model(in.nc, in.cm), opts(betting_claim::below, in.margin, in.alpha),
       in.items, "a foreign cache's benefit of the margin excluded"},
      {"no_need_harm", finding_id(finding_kind::no_need_kv_changes_accuracy), "kv_full - no_comm (no_need)",
       model(in.nn, in.nn + in.change), opts(betting_claim::above, -in.margin, in.alpha / in.family),
       in.nn_items,
       in.mapped
           ? "absence of harm at alpha/4: the first step of Holm over the risk family (three risks and the "
             "map; the upper side of the finding's equivalence interval is not planned)"
           : "absence of harm at alpha/3: the first step of Holm over the three risk checks (the upper side "
             "of the finding's equivalence interval is not planned)"},
  };
  if (in.mapped)
    checks.push_back(
        {"map", finding_id(finding_kind::mapped_noninferior_to_same_model), "kv_mapped - kv_full (need)",
         model(in.kv, *in.mapped), opts(betting_claim::above, -in.margin, in.alpha / in.family), in.items,
         "the cache map's non-inferiority at alpha/4: the first step of Holm over the risk family, "
         "which it joins (the decision relays the sender through the map only when it is shown)"});
  return checks;
}

// The retention gate of mapped.retention: a ratio, its own simulation.
struct retention_row {
  clustered_ratio_model model;
  betting_power_options options;
  betting_power_result power = {};
  std::optional<std::size_t> items_for_power;
};

// Runs the jobs on `threads` threads, longest first (the caller's order); each job writes only its
// own result, so the plan does not depend on the threads. On a terminal, stderr shows how many of
// the simulations are done (the plan takes seconds to a minute on a small machine).
void run_jobs(std::vector<std::function<void()>>& jobs, unsigned threads) {
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex m;
  std::exception_ptr failure;
  const bool tty = ::isatty(2) == 1;
  auto work = [&] {
    for (std::size_t j = next++; j < jobs.size(); j = next++) {
      try {
        jobs[j]();
      } catch (...) {
        const std::lock_guard<std::mutex> lock(m);
        if (!failure) failure = std::current_exception();
      }
      const std::size_t d = ++done;
      if (tty) {
        const std::lock_guard<std::mutex> lock(m);
        std::fprintf(stderr, "\rplan: %zu of %zu simulations done", d, jobs.size());
        std::fflush(stderr);
      }
    }
  };
  if (tty) std::fprintf(stderr, "plan: 0 of %zu simulations done", jobs.size());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<std::size_t>(threads, jobs.size()); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (tty) std::fputs("\r\033[K", stderr);
  if (failure) std::rethrow_exception(failure);
}

void simulate(const plan_inputs& in, std::vector<plan_check>& checks, std::optional<retention_row>& gate) {
  std::vector<std::function<void()>> jobs;  // the item searches first: they cost the most
  for (auto& c : checks)
    jobs.emplace_back([&in, &c] {
      c.items_for_power = clustered_betting_items(in.power, c.model, c.options, in.max_items);
    });
  if (gate)
    jobs.emplace_back([&in, &gate] {
      gate->items_for_power = clustered_ratio_gate_items(in.power, gate->model, in.gate, gate->options,
                                                         std::min<std::size_t>(in.max_items, 100000));
    });
  for (auto& c : checks)
    jobs.emplace_back(
        [&in, &c] { c.detectable = clustered_betting_detectable(c.items, in.power, c.model, c.options); });
  for (auto& c : checks)
    jobs.emplace_back([&c] { c.power = clustered_betting_power(c.items, c.model, c.options); });
  if (gate)
    jobs.emplace_back([&in, &gate] {
      gate->power = clustered_ratio_gate_power(in.items, gate->model, in.gate, gate->options);
    });
  run_jobs(jobs, in.threads);
}

json_value plan_row(const plan_check& c, double margin) {
  json_value j = json_value::object();
  j.set("check", c.check);
  j.set("finding", c.finding);
  j.set("contrast", c.contrast);
  const bool above = c.options.claim == betting_claim::above;
  char threshold[32];
  std::snprintf(threshold, sizeof threshold, "%g", c.options.threshold);
  j.set("claim", std::string(above ? "verdict lower limit > " : "verdict upper limit < ") + threshold);
  j.set("alpha", rounded(c.options.alpha, 7));
  j.set("assumed_difference", rounded(c.model.treated - c.model.control, 6));
  j.set("items", static_cast<double>(c.items));
  j.set("power", rounded(c.power.power, 4));
  j.set("power_se", rounded(c.power.std_error, 4));
  j.set("items_for_power",
        c.items_for_power ? json_value(static_cast<double>(*c.items_for_power)) : json_value(nullptr));
  j.set("detectable_difference", c.detectable ? json_value(rounded(*c.detectable, 4)) : json_value(nullptr));
  // the floor of every valid interval: no design smaller shows a claim inside the margin
  if (c.options.threshold != 0.0)
    j.set("items_floor", static_cast<double>(betting_items_for_margin(margin, c.options.alpha)));
  j.set("note", c.note);
  return j;
}

json_value retention_json(const plan_inputs& in, const retention_row& g) {
  json_value j = json_value::object();
  j.set("check", "retention_gate");
  j.set("finding", finding_id(finding_kind::mapped_retention));
  j.set("contrast", "(kv_mapped - no_comm) / (kv_full - no_comm) (need)");
  char claim[64];
  std::snprintf(claim, sizeof claim, "ratio lower limit >= %g", in.gate);
  j.set("claim", claim);
  j.set("alpha", rounded(g.options.alpha, 7));
  const double ratio = g.model.ratio();
  j.set("assumed_retention", std::isfinite(ratio) ? json_value(rounded(ratio, 4)) : json_value(nullptr));
  j.set("items", static_cast<double>(in.items));
  j.set("power", rounded(g.power.power, 4));
  j.set("power_se", rounded(g.power.std_error, 4));
  j.set("replicates", static_cast<double>(in.ratio_reps));
  j.set("items_for_power",
        g.items_for_power ? json_value(static_cast<double>(*g.items_for_power)) : json_value(nullptr));
  j.set("note",
        "the semantic-router-style gate: the share of same-model relay's benefit the map keeps, its "
        "test-inversion interval's lower limit at least the gate (not part of the decision; the decision "
        "reads the map's non-inferiority)");
  return j;
}

json_value plan_json(const plan_inputs& in, const std::vector<plan_check>& checks,
                     const std::optional<retention_row>& gate) {
  json_value design = json_value::object();
  design.set("items", static_cast<double>(in.items));
  design.set("no_need_items", static_cast<double>(in.nn_items));
  design.set("seeds", static_cast<double>(in.seeds));
  design.set("item_sd", in.sd);
  design.set("margin", in.margin);
  design.set("alpha", in.alpha);
  design.set("power", in.power);
  if (in.mapped) design.set("mapped", *in.mapped);
  design.set("replicates", static_cast<double>(in.reps));
  design.set("seed", std::to_string(in.seed));
  json_value::array_type rows;
  for (const auto& c : checks) rows.push_back(plan_row(c, in.margin));
  if (gate) rows.push_back(retention_json(in, *gate));
  json_value out = json_value::object();
  out.set("design", std::move(design));
  out.set("checks", json_value::array(std::move(rows)));
  return out;
}

// One sentence for a check: "value: 200 items give power 0.30; 782 are needed for 0.8."
std::string plan_sentence(const char* check, std::size_t items, double power, std::optional<std::size_t> need,
                          const plan_inputs& in, std::optional<std::size_t> floor) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof buf, "%s: %zu items give power %.2f; ", check, items, power);
  std::string s(buf, static_cast<std::size_t>(std::max(n, 0)));
  if (need)
    std::snprintf(buf, sizeof buf, "%zu %s for %g", *need, *need <= items ? "are enough" : "are needed",
                  in.power);
  else
    std::snprintf(buf, sizeof buf, "no design up to %zu items (--max-items) reaches %g", in.max_items,
                  in.power);
  s += buf;
  if (floor && items < *floor) {
    std::snprintf(buf, sizeof buf, " (no design below %zu items can show it)", *floor);
    s += buf;
  }
  return s + ".\n";
}

// The table and the sentences printed before the JSON (without --json).
std::string plan_text(const plan_inputs& in, const std::vector<plan_check>& checks,
                      const std::optional<retention_row>& gate) {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "plan: %zu need items (%zu no-need), %zu seeds each; margin %g points, alpha %g, target power "
      "%g, %zu simulated designs per value\n\n",
      in.items, in.nn_items, in.seeds, rounded(100.0 * in.margin, 4), in.alpha, in.power, in.reps);
  std::string out = buf;
  std::snprintf(buf, sizeof buf, "%-17s %-33s %5s  %9s  %10s\n", "check", "finding", "power", "items for",
                "detectable");
  out += buf;
  auto items_text = [](std::optional<std::size_t> k) { return k ? std::to_string(*k) : std::string("none"); };
  for (const auto& c : checks) {
    char det[32] = "-";
    if (c.detectable) std::snprintf(det, sizeof det, "%+.1f pts", 100.0 * *c.detectable);
    std::snprintf(buf, sizeof buf, "%-17s %-33s %5.2f  %9s  %10s\n", c.check, c.finding.c_str(),
                  c.power.power, items_text(c.items_for_power).c_str(), det);
    out += buf;
  }
  if (gate) {
    std::snprintf(buf, sizeof buf, "%-17s %-33s %5.2f  %9s  %10s\n", "retention_gate",
                  finding_id(finding_kind::mapped_retention).c_str(), gate->power.power,
                  items_text(gate->items_for_power).c_str(), "-");
    out += buf;
  }
  out += "\n";
  for (const auto& c : checks) {
    std::optional<std::size_t> floor;
    if (c.options.threshold != 0.0) floor = betting_items_for_margin(in.margin, c.options.alpha);
    out += plan_sentence(c.check, c.items, c.power.power, c.items_for_power, in, floor);
  }
  if (gate)
    out += plan_sentence("retention_gate", in.items, gate->power.power, gate->items_for_power, in, {});
  return out + "\n";
}

int run_plan(std::span<const std::string> words) {
  const auto spec = plan_options();
  const auto a = arguments::parse(words, spec, "plan");
  if (a.help()) {
    std::fputs(
        help_text(
            "latentaudit plan [options]",
            "Plans an audit before any trial: for each check of the decision (docs/audit-report.md\n"
            "\"Decision\"), the power of its verdict rule at the planned items, the items it needs for the\n"
            "target power, and the smallest true difference it detects with that power (for an upper-limit\n"
            "claim: the largest). The rule is the one the findings use: the one-sided betting limit over\n"
            "item mean differences at alpha (the no-need absence at alpha/3, the first step of the risk\n"
            "family's Holm procedure), simulated on clustered paired 0/1 outcomes (each item draws a logit\n"
            "shift shared by its seeds and arms, sd --item-sd). The positive control and dependency are a\n"
            "fixed sequence: the dependency is shown only after the positive control, so its power in the\n"
            "audit is at most the smaller of the two. Freshness and conflict pass either way (shown\n"
            "present or absent) and are not planned here. With --mapped P (a foreign sender's cache through\n"
            "a cache map, docs/mapping.md) the map's non-inferiority joins the risk family (alpha/4) and a\n"
            "row plans the retention gate (mapped.retention's lower limit >= --retention-gate, simulated\n"
            "with the ratio's own test inversion). The simulations run on --threads threads (the numbers do\n"
            "not depend on them); on a terminal, stderr counts the simulations done.\n\n"
            "Prints a table (check, finding, power, items for the target power, detectable difference in\n"
            "points) and one sentence per check (\"value: 200 items give power 0.30; 782 are needed for\n"
            "0.8.\"), then one JSON object (only the JSON with --json): the design, and one row per check\n"
            "(check, finding, contrast, claim, alpha, assumed_difference, items, power, power_se,\n"
            "items_for_power (null beyond --max-items), detectable_difference, items_floor for margin\n"
            "claims: below it no data can show them, note); powers and differences rounded to 4 decimals.\n",
            spec)
            .c_str(),
        stdout);
    return exit_ok;
  }
  const plan_inputs in = read_inputs(a);
  auto checks = plan_checks(in);
  std::optional<retention_row> gate;
  if (in.mapped)
    gate = retention_row{
        .model =
            {.base = in.nc, .reference = in.kv, .treated = *in.mapped, .item_sd = in.sd, .seeds = in.seeds},
        .options = {.alpha = std::min(in.alpha, 0.249), .replicates = in.ratio_reps, .seed = in.seed}};
  simulate(in, checks, gate);
  if (!a.has("--json")) {
    const std::string text = plan_text(in, checks, gate);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  print_json(plan_json(in, checks, gate), a.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_plan = register_subcommand(
    {"plan", "power, items needed and detectable difference of each decision check, before any trial",
     run_plan});

}  // namespace
}  // namespace latentaudit::cli
