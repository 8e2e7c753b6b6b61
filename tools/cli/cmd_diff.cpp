// SPDX-License-Identifier: MIT
// latentaudit CLI: `latentaudit diff BEFORE/report.json AFTER/report.json` — what changed between two
// audits: the decision (relay_allowed, verdict), the checklist's checks, the policy lines, findings
// whose verdict flipped, appeared or disappeared, and effects that moved beyond their intervals. Exit 1
// when relay_allowed went from true to false (the before/after gate of a pull request), else 0.
#include <latentaudit/core/data_table.hpp>
#include <latentaudit/core/json.hpp>
#include <latentaudit/serve/relay_policy.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {
namespace {

std::vector<option_spec> diff_options() {
  return {
      {"--json", "", "print the changes as one JSON object instead of the text summary"},
      common_option("--pretty"),
  };
}

const char* diff_description =
    "Compares two audits' report.json (or their directories): the decision (relay_allowed, verdict),\n"
    "each check of the decision's checklist, the policy lines and their rules (decision.rules as\n"
    "'when -> action'), findings whose verdict flipped,\n"
    "appeared or disappeared, and findings whose estimate moved outside the other report's interval.\n"
    "Exit 1 when relay_allowed went from true to false (a gate for a pull request), 0 otherwise\n"
    "(also when nothing changed), 2 for unreadable or malformed input.\n";

constexpr std::size_t diff_max_bytes = std::size_t{64} << 20;  // a report.json of 10^6 records is ~1 MB

/// One report as the diff reads it; every field checked for type here, so the comparison below
/// reads plain values.
struct report_view {
  std::string path;
  bool relay_allowed = false;
  std::string verdict;
  std::map<std::string, std::string> checks;  // check -> passed ("yes", "no", ...)
  std::vector<std::string> policy;
  /// decision.rules (read by relay_policy, the one reader) as "when -> action": what a scheduler
  /// does, without the prose; empty for a report.json written before the rules existed
  std::vector<std::string> rules;
  struct finding_view {
    std::string verdict;
    double estimate = NAN, ci_low = NAN, ci_high = NAN;
  };
  std::map<std::string, finding_view> findings;  // id -> view
};

[[noreturn]] void malformed(const std::string& path, const std::string& field, const std::string& what) {
  throw usage_error("diff: " + path + ": field '" + field + "' " + what);
}

const json_value& member(const json_value& o, const std::string& path, const std::string& where,
                         const std::string& key, json_kind kind, const char* kind_name) {
  const std::string field = where.empty() ? key : where + "." + key;
  const json_value* v = o.find(key);
  if (v == nullptr) malformed(path, field, "is missing (is this a latentaudit report.json?)");
  if (v->kind() != kind) malformed(path, field, std::string("must be ") + kind_name);
  return *v;
}

double number_or_nan(const json_value& o, const char* key) {
  const json_value* v = o.find(key);
  return v != nullptr && v->kind() == json_kind::number ? v->as_number() : NAN;
}

/// A rule as "feature op value and ... -> action [map]" ("always -> relay" without conditions).
std::string rule_signature(const policy_rule& r) {
  std::string out;
  for (const auto& c : r.when)
    out += (out.empty() ? "" : " and ") + c.feature + " " + c.op + " " +
           (c.other.empty() ? write_json(c.value) : c.other);
  out = (out.empty() ? "always" : out) + " -> " + std::string(relay_action_name(r.action));
  return r.map.empty() ? out : out + " " + r.map;
}

report_view read_report(std::string path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) path = (fs::path(path) / "report.json").string();
  report_view r;
  r.path = path;
  json_value doc;
  try {
    doc = parse_json(read_whole_file(path, diff_max_bytes, "diff"));
  } catch (const corrupt_data& e) {
    throw usage_error("diff: " + path + ": not a JSON document (" + std::string(e.what()) + ")");
  }
  if (doc.kind() != json_kind::object) throw usage_error("diff: " + path + ": not a JSON object");
  const auto& d = member(doc, path, "", "decision", json_kind::object, "an object");
  r.relay_allowed =
      member(d, path, "decision", "relay_allowed", json_kind::boolean, "true or false").as_bool();
  r.verdict = member(d, path, "decision", "verdict", json_kind::string, "a string").as_string();
  if (const json_value* cl = d.find("checklist"); cl != nullptr && cl->kind() == json_kind::array) {
    for (const auto& c : cl->as_array()) {
      const json_value* name = c.find("check");
      const json_value* passed = c.find("passed");
      if (name == nullptr || name->kind() != json_kind::string || passed == nullptr ||
          passed->kind() != json_kind::string)
        malformed(path, "decision.checklist", "must hold objects with string 'check' and 'passed'");
      r.checks[name->as_string()] = passed->as_string();
    }
  }
  if (const json_value* pl = d.find("policy"); pl != nullptr && pl->kind() == json_kind::array) {
    for (const auto& line : pl->as_array()) {
      if (line.kind() != json_kind::string) malformed(path, "decision.policy", "must hold strings");
      r.policy.push_back(line.as_string());
    }
  }
  if (d.find("rules") != nullptr) {
    try {
      const relay_policy policy = relay_policy::from_json(doc);
      for (const auto& rule : policy.rules()) r.rules.push_back(rule_signature(rule));
    } catch (const latentaudit::invalid_argument& e) {
      std::string what = e.what();
      const std::string lib = "relay_policy: argument ";
      if (what.rfind(lib, 0) == 0) what = "field " + what.substr(lib.size());
      throw usage_error("diff: " + path + ": " + what);
    }
  }
  for (const auto& f : member(doc, path, "", "findings", json_kind::array, "an array").as_array()) {
    const json_value* id = f.find("id");
    const json_value* verdict = f.find("verdict");
    if (id == nullptr || id->kind() != json_kind::string || verdict == nullptr ||
        verdict->kind() != json_kind::string)
      malformed(path, "findings", "must hold objects with string 'id' and 'verdict'");
    r.findings[id->as_string()] = {verdict->as_string(), number_or_nan(f, "estimate"),
                                   number_or_nan(f, "ci_low"), number_or_nan(f, "ci_high")};
  }
  return r;
}

/// A finding's estimate as report.json holds it (a fraction for accuracy findings, seconds or a
/// ratio for others): four significant digits, the units being the finding's.
std::string number(double x) {
  if (!std::isfinite(x)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

/// The changes as JSON (the text summary is printed from the same object).
json_value compare(const report_view& a, const report_view& b) {
  json_value out = json_value::object();
  out.set("before", a.path);
  out.set("after", b.path);
  json_value dec = json_value::object();
  dec.set("relay_allowed_before", a.relay_allowed);
  dec.set("relay_allowed_after", b.relay_allowed);
  dec.set("verdict_before", a.verdict);
  dec.set("verdict_after", b.verdict);
  out.set("decision", std::move(dec));
  json_value checks = json_value::array();
  std::set<std::string> names;
  for (const auto& [k, v] : a.checks) names.insert(k);
  for (const auto& [k, v] : b.checks) names.insert(k);
  for (const auto& n : names) {
    const auto ia = a.checks.find(n), ib = b.checks.find(n);
    const std::string pa = ia == a.checks.end() ? "absent" : ia->second;
    const std::string pb = ib == b.checks.end() ? "absent" : ib->second;
    if (pa == pb) continue;
    json_value c = json_value::object();
    c.set("check", n);
    c.set("before", pa);
    c.set("after", pb);
    checks.push_back(std::move(c));
  }
  out.set("checks", std::move(checks));
  json_value removed = json_value::array(), added = json_value::array();
  const std::set<std::string> pa(a.policy.begin(), a.policy.end()), pb(b.policy.begin(), b.policy.end());
  for (const auto& l : a.policy)
    if (!pb.count(l)) removed.push_back(l);
  for (const auto& l : b.policy)
    if (!pa.count(l)) added.push_back(l);
  json_value policy = json_value::object();
  policy.set("removed", std::move(removed));
  policy.set("added", std::move(added));
  out.set("policy", std::move(policy));
  json_value rules_removed = json_value::array(), rules_added = json_value::array();
  const std::set<std::string> ra(a.rules.begin(), a.rules.end()), rb(b.rules.begin(), b.rules.end());
  for (const auto& l : a.rules)
    if (!rb.count(l)) rules_removed.push_back(l);
  for (const auto& l : b.rules)
    if (!ra.count(l)) rules_added.push_back(l);
  json_value rules = json_value::object();
  rules.set("removed", std::move(rules_removed));
  rules.set("added", std::move(rules_added));
  out.set("rules", std::move(rules));
  json_value flipped = json_value::array(), moved = json_value::array(), gone = json_value::array(),
             fresh = json_value::array();
  for (const auto& [id, fa] : a.findings) {
    const auto it = b.findings.find(id);
    if (it == b.findings.end()) {
      gone.push_back(id);
      continue;
    }
    const auto& fb = it->second;
    if (fa.verdict != fb.verdict) {
      json_value f = json_value::object();
      f.set("id", id);
      f.set("before", fa.verdict);
      f.set("after", fb.verdict);
      flipped.push_back(std::move(f));
    }
    // beyond its interval: either estimate outside the other report's interval
    const bool outside =
        (std::isfinite(fb.estimate) && (fb.estimate < fa.ci_low || fb.estimate > fa.ci_high)) ||
        (std::isfinite(fa.estimate) && (fa.estimate < fb.ci_low || fa.estimate > fb.ci_high));
    if (outside) {
      json_value f = json_value::object();
      f.set("id", id);
      f.set("estimate_before", fa.estimate);
      f.set("ci_before", json_value::array({fa.ci_low, fa.ci_high}));
      f.set("estimate_after", fb.estimate);
      f.set("ci_after", json_value::array({fb.ci_low, fb.ci_high}));
      moved.push_back(std::move(f));
    }
  }
  for (const auto& [id, fb] : b.findings)
    if (!a.findings.count(id)) fresh.push_back(id);
  json_value findings = json_value::object();
  findings.set("flipped", std::move(flipped));
  findings.set("moved_beyond_interval", std::move(moved));
  findings.set("removed", std::move(gone));
  findings.set("added", std::move(fresh));
  out.set("findings", std::move(findings));
  return out;
}

void print_section(const char* title, const json_value& list,
                   const std::function<std::string(const json_value&)>& line) {
  const auto& a = list.as_array();
  if (a.empty()) return;
  std::printf("%s (%zu):\n", title, a.size());
  for (const auto& x : a) std::printf("  %s\n", line(x).c_str());
}

void print_text(const report_view& a, const report_view& b, const json_value& d) {
  const bool same_decision = a.relay_allowed == b.relay_allowed && a.verdict == b.verdict;
  std::printf("decision: %s\n",
              same_decision
                  ? ("unchanged, relay_allowed " + std::string(a.relay_allowed ? "true" : "false") + " (" +
                     a.verdict + ")")
                        .c_str()
                  : ("relay_allowed " + std::string(a.relay_allowed ? "true" : "false") + " -> " +
                     (b.relay_allowed ? "true" : "false") + " (" + a.verdict + " -> " + b.verdict + ")")
                        .c_str());
  print_section("checks changed", d.at("checks"), [](const json_value& c) {
    return c.at("check").as_string() + ": " + c.at("before").as_string() + " -> " + c.at("after").as_string();
  });
  const auto& pol = d.at("policy");
  print_section("policy lines removed", pol.at("removed"), [](const json_value& l) { return l.as_string(); });
  print_section("policy lines added", pol.at("added"), [](const json_value& l) { return l.as_string(); });
  const auto& rules = d.at("rules");
  print_section("rules removed", rules.at("removed"), [](const json_value& l) { return l.as_string(); });
  print_section("rules added", rules.at("added"), [](const json_value& l) { return l.as_string(); });
  const auto& f = d.at("findings");
  print_section("findings whose verdict flipped", f.at("flipped"), [](const json_value& x) {
    return x.at("id").as_string() + ": " + x.at("before").as_string() + " -> " + x.at("after").as_string();
  });
  print_section("findings whose estimate moved beyond the other's interval", f.at("moved_beyond_interval"),
                [](const json_value& x) {
                  auto num = [](const json_value& v) {
                    return v.kind() == json_kind::number ? v.as_number() : NAN;
                  };
                  const auto& ca = x.at("ci_before").as_array();
                  const auto& cb = x.at("ci_after").as_array();
                  return x.at("id").as_string() + ": " + number(num(x.at("estimate_before"))) + " [" +
                         number(num(ca[0])) + ", " + number(num(ca[1])) + "] -> " +
                         number(num(x.at("estimate_after"))) + " [" + number(num(cb[0])) + ", " +
                         number(num(cb[1])) + "]";
                });
  print_section("findings only in the first report", f.at("removed"),
                [](const json_value& x) { return x.as_string(); });
  print_section("findings only in the second report", f.at("added"),
                [](const json_value& x) { return x.as_string(); });
}

int run_diff(std::span<const std::string> words) {
  const auto specs = diff_options();
  // the two reports are positional; every option of diff is a flag
  std::vector<std::string> files, options;
  for (const auto& w : words) (w.size() > 1 && w[0] == '-' ? options : files).push_back(w);
  const auto args = arguments::parse(options, specs, "diff");
  if (args.help()) {
    std::fputs(
        help_text("latentaudit diff BEFORE/report.json AFTER/report.json [--json]", diff_description, specs)
            .c_str(),
        stdout);
    return exit_ok;
  }
  if (files.size() != 2)
    throw usage_error("diff: expected two report.json files (or audit directories), got " +
                      std::to_string(files.size()));
  const report_view a = read_report(files[0]), b = read_report(files[1]);
  const json_value d = compare(a, b);
  const bool regressed = a.relay_allowed && !b.relay_allowed;
  if (args.has("--json")) {
    json_value out = d;
    out.set("relay_allowed_regressed", regressed);
    print_json(out, args.has("--pretty"));
  } else {
    print_text(a, b, d);
  }
  if (regressed) {
    std::string failed;
    for (const auto& c : d.at("checks").as_array())
      if (c.at("after").as_string() != "yes" && c.at("before").as_string() == "yes")
        failed += (failed.empty() ? "" : ", ") + c.at("check").as_string();
    std::fprintf(stderr, "latentaudit diff: relay_allowed went from true to false%s\n",
                 failed.empty() ? "" : (" (checks no longer passed: " + failed + ")").c_str());
    return 1;
  }
  return exit_ok;
}

[[maybe_unused]] const bool registered_diff = register_subcommand(
    {"diff", "what changed between two audits' report.json (exit 1 when relay_allowed turned false)",
     run_diff});

}  // namespace
}  // namespace latentaudit::cli
