// SPDX-License-Identifier: MIT
// latentaudit CLI: `latentaudit plan` — before any trial, for each check of the audit's decision:
// the power of its verdict rule at the planned items, the items it needs for the target power, and
// the difference it can detect (estimators/betting_power.hpp: the item-level betting limit the
// findings use, simulated on clustered paired binary outcomes). docs/cli.md "plan".
#include <latentaudit/estimators/betting.hpp>
#include <latentaudit/estimators/betting_power.hpp>
#include <latentaudit/estimators/betting_ratio.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
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

// One check of the decision: its finding, the contrast, the claim and the model it is planned under.
struct plan_check {
  const char* check;
  const char* finding;
  const char* contrast;
  clustered_binary_model model;
  betting_power_options options;
  std::size_t items;
  const char* note;
};

json_value plan_row(const plan_check& c, double power, std::size_t max_items, double margin) {
  json_value j = json_value::object();
  j.set("check", c.check);
  j.set("finding", c.finding);
  j.set("contrast", c.contrast);
  const bool above = c.options.claim == betting_claim::above;
  char threshold[32];
  std::snprintf(threshold, sizeof threshold, "%g", c.options.threshold);
  j.set("claim", std::string(above ? "verdict lower limit > " : "verdict upper limit < ") + threshold);
  j.set("alpha", c.options.alpha);
  j.set("assumed_difference", c.model.treated - c.model.control);
  j.set("items", static_cast<double>(c.items));
  const auto p = clustered_betting_power(c.items, c.model, c.options);
  j.set("power", p.power);
  j.set("power_se", p.std_error);
  const auto need = clustered_betting_items(power, c.model, c.options, max_items);
  j.set("items_for_power", need ? json_value(static_cast<double>(*need)) : json_value(nullptr));
  const auto det = clustered_betting_detectable(c.items, power, c.model, c.options);
  j.set("detectable_difference", det ? json_value(*det) : json_value(nullptr));
  // the floor of every valid interval: no design smaller shows a claim inside the margin
  if (c.options.threshold != 0.0)
    j.set("items_floor", static_cast<double>(betting_items_for_margin(margin, c.options.alpha)));
  j.set("note", c.note);
  return j;
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
            "with the ratio's own test inversion). Prints one JSON object: the design, and one row\n"
            "per check (check, finding, contrast, claim, alpha, assumed_difference, items, power,\n"
            "power_se, items_for_power (null beyond --max-items), detectable_difference, items_floor for\n"
            "margin claims: below it no data can show them, note).\n",
            spec)
            .c_str(),
        stdout);
    return exit_ok;
  }
  const auto items = static_cast<std::size_t>(a.integer("--items", 30, 1, 100000));
  const auto seeds = static_cast<std::size_t>(a.integer("--seeds", 2, 1, 1000));
  const auto nn_items = static_cast<std::size_t>(a.integer("--no-need-items", items, 1, 100000));
  const double nc = accuracy(a, "--no-comm", 0.3), tx = accuracy(a, "--text", 0.6);
  const double kv = accuracy(a, "--kv", tx), cm = accuracy(a, "--cross-model", nc);
  const double nn = accuracy(a, "--no-need-accuracy", 0.9);
  const double change = a.number("--no-need-change", 0.0);
  const std::optional<double> mapped =
      a.get("--mapped") ? std::optional<double>(accuracy(a, "--mapped", 0.0)) : std::nullopt;
  const double gate = a.number("--retention-gate", 0.9);
  if (!(gate > -10.0 && gate < 10.0))
    throw usage_error("plan: option --retention-gate must lie in (-10, 10)");
  const auto ratio_reps = static_cast<std::size_t>(a.integer("--retention-replicates", 200, 50, 100000));
  const double family = mapped ? 4.0 : 3.0;  // the risk family: three risks, and the map
  if (!(nn + change >= 0.0 && nn + change <= 1.0))
    throw usage_error("plan: --no-need-accuracy + --no-need-change must lie in [0, 1]");
  const double sd = a.number("--item-sd", 0.6);
  if (!(sd >= 0.0 && sd <= 10.0)) throw usage_error("plan: option --item-sd must lie in [0, 10]");
  const double margin = a.number("--margin", 0.05);
  if (!(margin > 0.0 && margin < 1.0)) throw usage_error("plan: option --margin must lie in (0, 1)");
  const double alpha = a.alpha();
  const double power = a.number("--power", 0.8);
  if (!(power > 0.0 && power < 1.0)) throw usage_error("plan: option --power must lie in (0, 1)");
  const auto max_items = static_cast<std::size_t>(a.integer("--max-items", 2000, 1, 100000));
  const auto reps = static_cast<std::size_t>(a.integer("--replicates", 1000, 100, 100000));
  const auto seed = a.integer("--seed", 2028, 0, UINT64_MAX);

  auto opts = [&](betting_claim c, double threshold, double level) {
    return betting_power_options{
        .alpha = level, .threshold = threshold, .claim = c, .replicates = reps, .seed = seed};
  };
  auto model = [&](double control, double treated) {
    return clustered_binary_model{.control = control, .treated = treated, .item_sd = sd, .seeds = seeds};
  };
  const plan_check checks[] = {
      {"positive_control", "need.text_beats_no_comm", "text_full - no_comm (need)", model(nc, tx),
       opts(betting_claim::above, 0.0, alpha), items,
       "first step of the decision's fixed sequence (full alpha)"},
      {"dependency", "need.kv_beats_no_comm", "kv_full - no_comm (need)", model(nc, kv),
       opts(betting_claim::above, 0.0, alpha), items,
       "second step: shown only after the positive control (full alpha)"},
      {"value", "need.kv_noninferior_to_text", "kv_full - text_full (need)", model(tx, kv),
       opts(betting_claim::above, -margin, alpha), items, "non-inferiority at the margin"},
      {"cross_model", "need.cross_model_beats_no_comm", "cross_model - no_comm (need)", model(nc, cm),
       opts(betting_claim::below, margin, alpha), items, "a foreign cache's benefit of the margin excluded"},
      {"no_need_harm", "no_need.kv_changes_accuracy", "kv_full - no_comm (no_need)", model(nn, nn + change),
       opts(betting_claim::above, -margin, alpha / family), nn_items,
       mapped
           ? "absence of harm at alpha/4: the first step of Holm over the risk family (three risks and the "
             "map; the upper side of the finding's equivalence interval is not planned)"
           : "absence of harm at alpha/3: the first step of Holm over the three risk checks (the upper side "
             "of the finding's equivalence interval is not planned)"},
      {"map", "mapped.noninferior_to_same_model", "kv_mapped - kv_full (need)",
       model(kv, mapped.value_or(kv)), opts(betting_claim::above, -margin, alpha / family), items,
       "the cache map's non-inferiority at alpha/4: the first step of Holm over the risk family, which it "
       "joins (the decision relays the sender through the map only when it is shown)"},
  };
  json_value design = json_value::object();
  design.set("items", static_cast<double>(items));
  design.set("no_need_items", static_cast<double>(nn_items));
  design.set("seeds", static_cast<double>(seeds));
  design.set("item_sd", sd);
  design.set("margin", margin);
  design.set("alpha", alpha);
  design.set("power", power);
  if (mapped) design.set("mapped", *mapped);
  design.set("replicates", static_cast<double>(reps));
  design.set("seed", std::to_string(seed));
  json_value::array_type rows;
  for (const auto& c : checks)
    if (mapped || std::string_view(c.check) != "map") rows.push_back(plan_row(c, power, max_items, margin));
  if (mapped) {  // the retention gate: a ratio, its own simulation (the rule of mapped.retention)
    const clustered_ratio_model rm{
        .base = nc, .reference = kv, .treated = *mapped, .item_sd = sd, .seeds = seeds};
    const betting_power_options ro{.alpha = std::min(alpha, 0.249), .replicates = ratio_reps, .seed = seed};
    json_value j = json_value::object();
    j.set("check", "retention_gate");
    j.set("finding", "mapped.retention");
    j.set("contrast", "(kv_mapped - no_comm) / (kv_full - no_comm) (need)");
    char claim[64];
    std::snprintf(claim, sizeof claim, "ratio lower limit >= %g", gate);
    j.set("claim", claim);
    j.set("alpha", ro.alpha);
    j.set("assumed_retention", std::isfinite(rm.ratio()) ? json_value(rm.ratio()) : json_value(nullptr));
    j.set("items", static_cast<double>(items));
    const auto p = clustered_ratio_gate_power(items, rm, gate, ro);
    j.set("power", p.power);
    j.set("power_se", p.std_error);
    j.set("replicates", static_cast<double>(ratio_reps));
    const auto need =
        clustered_ratio_gate_items(power, rm, gate, ro, std::min<std::size_t>(max_items, 100000));
    j.set("items_for_power", need ? json_value(static_cast<double>(*need)) : json_value(nullptr));
    j.set("note",
          "the semantic-router-style gate: the share of same-model relay's benefit the map keeps, its "
          "test-inversion interval's lower limit at least the gate (not part of the decision; the decision "
          "reads the map's non-inferiority)");
    rows.push_back(std::move(j));
  }
  json_value out = json_value::object();
  out.set("design", std::move(design));
  out.set("checks", json_value::array(std::move(rows)));
  print_json(out, a.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_plan = register_subcommand(
    {"plan", "power, items needed and detectable difference of each decision check, before any trial",
     run_plan});

}  // namespace
}  // namespace latentaudit::cli
