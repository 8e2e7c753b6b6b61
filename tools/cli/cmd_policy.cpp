// SPDX-License-Identifier: MIT
// latentaudit CLI: `latentaudit policy --report report.json --request '{...}'` (or --requests
// FILE.jsonl) — the audit's serving policy evaluated on requests: report.json's decision.rules read
// by the library's one evaluator (serve/relay_policy.hpp), and per request the action (relay, relay
// through map M, text, no communication) and the rule that fired. Exit 2 naming the file, line and
// field for malformed input.
#include <latentaudit/core/data_table.hpp>
#include <latentaudit/core/json.hpp>
#include <latentaudit/serve/relay_policy.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {
namespace {

std::vector<option_spec> policy_options() {
  return {
      {"--report", "FILE", "the audit's report.json (or its directory); its decision.rules are the policy"},
      {"--request", "JSON", "one request: a JSON object of features, e.g. '{\"cache_age_versions\": 1}'"},
      {"--requests", "FILE", "many requests: a JSONL file, one JSON object of features a line"},
      {"--json", "", "print JSON (one object; with --requests its decisions in order) instead of text"},
      common_option("--pretty"),
  };
}

const char* policy_description =
    "Evaluates the audit's serving policy (report.json decision.rules, docs/policy.schema.json) on\n"
    "requests: the first rule whose conditions all hold fires; its action (relay, relay_through_map\n"
    "with the map id, text, no_communication) and its rule (index, policy line, check) are printed.\n"
    "A request is a JSON object of features: sender_fingerprint, receiver_fingerprint,\n"
    "cache_age_versions, prompt_overlap, needs_document, maps (ids of the cache maps the stack\n"
    "holds), doc_tokens, own_tokens, link. A rule that reads a feature the request lacks, an unknown\n"
    "feature or a value of the wrong kind exits 2 naming the field. With no rule (an inconclusive\n"
    "audit has none) the answer is text and no rule.\n";

constexpr std::size_t policy_requests_max_bytes = std::size_t{64} << 20;
constexpr std::size_t policy_requests_max_lines = 1000000;

// The library's "relay_policy: argument 'X' rest" in the CLI's words: "field 'X' rest".
std::string policy_field_words(const std::string& msg) {
  for (const char* prefix : {"relay_policy: argument ", "relay_policy::decide: argument "}) {
    const std::string p(prefix);
    if (msg.rfind(p, 0) == 0) return "field " + msg.substr(p.size());
  }
  return msg;
}

relay_policy read_policy(const std::string& given) {
  std::filesystem::path p(given);
  if (std::filesystem::is_directory(p)) p /= "report.json";
  try {
    return relay_policy::load(p.string());
  } catch (const latentaudit::error& e) {
    throw usage_error("policy: --report '" + p.string() + "': " + policy_field_words(e.what()));
  }
}

json_value choice_json(const relay_policy& policy, const relay_choice& c) {
  json_value j;
  j.set("action", relay_action_name(c.action));
  j.set("map", c.map.empty() ? json_value() : json_value(c.map));
  if (c.rule) {
    const policy_rule& r = policy.rules().at(*c.rule);
    j.set("rule", *c.rule);
    j.set("line", r.line);
    j.set("check", r.check);
    j.set("finding", r.finding.empty() ? json_value() : json_value(r.finding));
  } else {
    j.set("rule", json_value());
  }
  j.set("text", c.text);
  return j;
}

std::string choice_text(const relay_choice& c) {
  std::string out(relay_action_name(c.action));
  if (!c.map.empty()) out += " " + c.map;
  if (c.rule) return out + " (rule " + std::to_string(*c.rule) + ", " + c.check + "): " + c.text;
  return out + " (no rule): " + c.text;
}

// One request's decision; `where` names the request in errors ("--request", "FILE line N").
relay_choice decide_one(const relay_policy& policy, const std::string& text, const std::string& where) {
  json_value request;
  try {
    request = parse_json(text, {.max_depth = 8, .max_bytes = std::size_t{1} << 20});
  } catch (const latentaudit::error& e) {
    throw usage_error("policy: " + where + ": not a JSON object: " + e.what());
  }
  try {
    return policy.decide(request);
  } catch (const latentaudit::error& e) {
    throw usage_error("policy: " + where + ": " + policy_field_words(e.what()));
  }
}

int run_policy(std::span<const std::string> words) {
  const auto specs = policy_options();
  const auto args = arguments::parse(words, specs, "policy");
  if (args.help()) {
    std::fputs(
        help_text("latentaudit policy --report report.json (--request JSON | --requests FILE.jsonl) [--json]",
                  policy_description, specs)
            .c_str(),
        stdout);
    return exit_ok;
  }
  const std::string report = args.require("--report");
  if (args.has("--request") == args.has("--requests"))
    throw usage_error("policy: give one of --request JSON and --requests FILE.jsonl");
  const relay_policy policy = read_policy(report);
  const bool as_json = args.has("--json");
  if (const auto one = args.get("--request")) {
    const relay_choice c = decide_one(policy, *one, "--request");
    if (as_json)
      print_json(choice_json(policy, c), args.has("--pretty"));
    else
      std::printf("%s\n", choice_text(c).c_str());
    return exit_ok;
  }
  const std::string file = args.require("--requests");
  std::string text;
  try {
    text = read_whole_file(file, policy_requests_max_bytes, "policy");
  } catch (const latentaudit::error& e) {
    throw usage_error("policy: --requests: " + std::string(e.what()));
  }
  // every request is decided before anything is printed: bad input prints nothing on stdout
  json_value decisions = json_value::array();
  std::string printed;
  std::size_t line_no = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (++line_no > policy_requests_max_lines)
      throw usage_error("policy: --requests '" + file + "': more than 1000000 lines");
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const relay_choice c = decide_one(policy, line, "'" + file + "' line " + std::to_string(line_no));
    if (as_json) {
      json_value j = choice_json(policy, c);
      j.set("request_line", line_no);
      decisions.push_back(std::move(j));
    } else {
      printed += "line " + std::to_string(line_no) + ": " + choice_text(c) + "\n";
    }
  }
  if (as_json)
    print_json(json_value::object({{"decisions", std::move(decisions)}}), args.has("--pretty"));
  else
    std::fputs(printed.c_str(), stdout);
  return exit_ok;
}

[[maybe_unused]] const bool registered_policy = register_subcommand(
    {"policy", "the audit's serving policy (report.json decision.rules) evaluated on requests", run_policy});

}  // namespace
}  // namespace latentaudit::cli
