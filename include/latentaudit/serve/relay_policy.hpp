// SPDX-License-Identifier: MIT
// latentaudit: the audit's serving policy as data — report.json `decision.rules`, an ordered list of
// rules over request features a serving stack knows before relaying (sender and receiver
// fingerprints, cache age in document versions, prompt overlap, whether B needs A's document, the
// cache maps the stack holds, document and own-prompt length, link) — and the one evaluator of those
// rules: `relay_policy::decide(request)` gives the action (relay, relay through map M, text, no
// communication) and the rule that fired. The first rule whose conditions all hold fires.
//
// One owner: the decision (report/decision.hpp) writes each policy line and its rules in one place
// (audit_decision::policy and ::rules; rule.line names its line), and replays the rules on the
// audit's own requests with this evaluator (audit_decision::replay, report.json
// `decision.policy_replay`). The CLI (`latentaudit policy`) and Python (`la.RelayPolicy`) call this
// evaluator. Schema: docs/policy.schema.json; docs/serving.md "The policy as rules".
#ifndef LATENTAUDIT_SERVE_RELAY_POLICY_HPP
#define LATENTAUDIT_SERVE_RELAY_POLICY_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/data_table.hpp"
#include "../core/detail/check.hpp"
#include "../core/edit_distance.hpp"
#include "../core/error.hpp"
#include "../core/json.hpp"
#include "../trial/record.hpp"

namespace latentaudit {

/// @brief What a rule tells the stack to do with a request.
enum class relay_action {
  relay,              ///< relay A's cache to B as it is
  relay_through_map,  ///< relay A's cache through the cache map policy_rule::map
  text,               ///< send A's document as text
  no_communication    ///< B answers without A (neither cache nor text)
};

/// @brief The JSON name of an action ("relay", "relay_through_map", "text", "no_communication").
[[nodiscard]] constexpr std::string_view relay_action_name(relay_action a) noexcept {
  switch (a) {
    case relay_action::relay:
      return "relay";
    case relay_action::relay_through_map:
      return "relay_through_map";
    case relay_action::text:
      return "text";
    case relay_action::no_communication:
      return "no_communication";
  }
  return "text";
}

/// @brief The kind of value a request feature holds.
enum class policy_feature_kind { string, number, boolean, string_list };

/// @brief One request feature a rule may read: its name, kind and meaning.
struct policy_feature_spec {
  std::string_view name;     ///< the JSON key of the request and of a condition's `feature`
  policy_feature_kind kind;  ///< its value's kind
  std::string_view meaning;  ///< one line for the docs and error messages
};

/// @brief Every feature a rule may read (a request with another key is refused).
inline constexpr std::array<policy_feature_spec, 9> relay_policy_features = {{
    {"sender_fingerprint", policy_feature_kind::string, "model fingerprint of the sender A's engine"},
    {"receiver_fingerprint", policy_feature_kind::string, "model fingerprint of the receiver B's engine"},
    {"cache_age_versions", policy_feature_kind::number,
     "document versions A's cache is behind the current document (integer >= 0; 0 = fresh)"},
    {"prompt_overlap", policy_feature_kind::number,
     "share of the document's keys that B's own prompt also binds, in [0, 1]"},
    {"needs_document", policy_feature_kind::boolean, "whether B's request needs A's document"},
    {"maps", policy_feature_kind::string_list, "ids of the cache maps the stack holds (kv_map_id)"},
    {"doc_tokens", policy_feature_kind::number, "A's document length in tokens (>= 0)"},
    {"own_tokens", policy_feature_kind::number, "B's own prompt length in tokens (>= 0)"},
    {"link", policy_feature_kind::string, "the link the relay crosses (pcie4, nvlink4, ...)"},
}};

/// @brief A request's features (each optional: a rule that reads an absent one is an error).
struct relay_request {
  std::optional<std::string> sender_fingerprint;    ///< A's model fingerprint
  std::optional<std::string> receiver_fingerprint;  ///< B's model fingerprint
  std::optional<double> cache_age_versions;         ///< versions the cache is behind (integer >= 0)
  std::optional<double> prompt_overlap;             ///< share of the document's keys B's prompt binds
  std::optional<bool> needs_document;               ///< whether B needs A's document
  std::optional<std::vector<std::string>> maps;     ///< cache map ids the stack holds
  std::optional<double> doc_tokens;                 ///< A's document length (tokens)
  std::optional<double> own_tokens;                 ///< B's own prompt length (tokens)
  std::optional<std::string> link;                  ///< link preset name
};

/// @brief One condition of a rule: `feature op value`.
struct policy_condition {
  std::string feature;  ///< a name of relay_policy_features
  /// "==", "!=" (any kind), ">=", ">", "<=", "<" (numbers), "contains" (maps: value is a map id)
  std::string op;
  json_value value;  ///< a string, number or boolean of the feature's kind (null with `other`)
  /// another feature of the same kind to compare with instead of `value` (e.g. sender_fingerprint
  /// != receiver_fingerprint); "" = compare with `value`
  std::string other;
};

/// @brief One rule: when every condition holds, the action.
struct policy_rule {
  std::size_t line = 0;  ///< index of its prose line in decision.policy (several rules may share one)
  std::string text;      ///< that prose line
  std::vector<policy_condition> when;        ///< all must hold; empty = always
  relay_action action = relay_action::text;  ///< what the stack does
  std::string map;                           ///< relay_through_map: the cache map's id ("" otherwise)
  std::string check;    ///< the checklist item the rule rests on (freshness, map_<arm>, value, ...)
  std::string finding;  ///< the finding behind that check ("" when none was computed)
  double estimate = std::numeric_limits<double>::quiet_NaN();  ///< the finding's estimate (NaN: none)
  double lo = std::numeric_limits<double>::quiet_NaN();        ///< its interval's lower limit
  double hi = std::numeric_limits<double>::quiet_NaN();        ///< its interval's upper limit
  std::string verdict;  ///< the finding's verdict (yes, no, inconclusive; "" when none)
  /// evaluation rank: the decision orders its rules by it (stable); not written to JSON, where the
  /// list's order is the evaluation order
  int rank = 0;
};

/// @brief What decide() answers for one request.
struct relay_choice {
  relay_action action = relay_action::text;  ///< the action
  std::string map;                           ///< relay_through_map: the map id
  /// the rule that fired (its index in the rules); none when no rule fired (the policy has no
  /// rules, e.g. an inconclusive audit): then the action is text, the fallback that relays nothing
  std::optional<std::size_t> rule;
  std::string text;   ///< the fired rule's prose line (or why none fired)
  std::string check;  ///< the fired rule's check ("" when none fired)
};

/// @brief The rules replayed on the audit's own requests (replay_relay_policy).
struct policy_replay {
  std::size_t requests = 0;  ///< requests: one per (item, seed) unit and sender arm
  std::size_t resolved = 0;  ///< requests whose chosen arm has a record in the unit
  std::size_t relayed = 0;   ///< requests the rules relay (relay or relay_through_map)
  std::size_t correct = 0;   ///< resolved requests whose chosen record is correct
  double accuracy = std::numeric_limits<double>::quiet_NaN();     ///< correct / resolved
  double relay_share = std::numeric_limits<double>::quiet_NaN();  ///< relayed / requests
  std::vector<std::size_t> by_rule;  ///< requests each rule decided (index = rule)
  /// why the rules were not replayed ("" when they were): the decision sets it when a rule reads a
  /// feature the records do not carry (e.g. task files without cache_age_versions)
  std::string note;
};

namespace detail {

inline const policy_feature_spec* policy_feature(std::string_view name) noexcept {
  for (const auto& f : relay_policy_features)
    if (f.name == name) return &f;
  return nullptr;
}

// "unknown feature 'x' (did you mean 'y'?; features: a, b, ...)"
inline std::string unknown_feature_text(std::string_view name) {
  std::string near, all;
  std::size_t best = 3;
  for (const auto& f : relay_policy_features) {
    all.append(all.empty() ? "" : ", ").append(f.name);
    const std::size_t d = edit_distance(name, f.name);
    if (d < best) {
      best = d;
      near = std::string(f.name);
    }
  }
  return "is an unknown feature '" + std::string(name) + "'" +
         (near.empty() ? std::string() : " (did you mean '" + near + "'?)") + "; features: " + all;
}

inline std::string_view feature_kind_text(policy_feature_kind k) noexcept {
  switch (k) {
    case policy_feature_kind::string:
      return "a string";
    case policy_feature_kind::number:
      return "a number";
    case policy_feature_kind::boolean:
      return "a boolean";
    case policy_feature_kind::string_list:
      return "an array of strings";
  }
  return "a value";
}

inline constexpr std::size_t policy_max_string = 4096;  // bytes of one string value
inline constexpr std::size_t policy_max_list = 1024;    // map ids of a request
inline constexpr std::size_t policy_max_rules = 4096;   // rules of a policy
inline constexpr std::size_t policy_max_when = 64;      // conditions of a rule

// A request feature's value as JSON (null when absent).
inline json_value request_feature(const relay_request& r, std::string_view name) {
  auto str = [](const std::optional<std::string>& s) { return s ? json_value(*s) : json_value(); };
  auto num = [](const std::optional<double>& x) { return x ? json_value(*x) : json_value(); };
  if (name == "sender_fingerprint") return str(r.sender_fingerprint);
  if (name == "receiver_fingerprint") return str(r.receiver_fingerprint);
  if (name == "cache_age_versions") return num(r.cache_age_versions);
  if (name == "prompt_overlap") return num(r.prompt_overlap);
  if (name == "needs_document") return r.needs_document ? json_value(*r.needs_document) : json_value();
  if (name == "doc_tokens") return num(r.doc_tokens);
  if (name == "own_tokens") return num(r.own_tokens);
  if (name == "link") return str(r.link);
  if (name == "maps" && r.maps) {
    json_value a = json_value::array();
    for (const auto& m : *r.maps) a.push_back(m);
    return a;
  }
  return json_value();
}

// Checks one feature value of a request (kind and bounds), naming `where`.
inline void check_feature_value(std::string_view fn, const std::string& where, const policy_feature_spec& f,
                                const json_value& v) {
  const bool kind_ok = (f.kind == policy_feature_kind::string && v.is_string()) ||
                       (f.kind == policy_feature_kind::number && v.is_number()) ||
                       (f.kind == policy_feature_kind::boolean && v.is_bool()) ||
                       (f.kind == policy_feature_kind::string_list && v.is_array());
  if (!kind_ok)
    throw_invalid(fn, where,
                  "must be " + std::string(feature_kind_text(f.kind)) + ", got " +
                      std::string(json_kind_name(v.kind())));
  if (v.is_string() && v.as_string().size() > policy_max_string)
    throw_invalid(fn, where, "is longer than " + number_text(policy_max_string) + " bytes");
  if (v.is_array()) {
    if (v.size() > policy_max_list)
      throw_invalid(fn, where, "holds more than " + number_text(policy_max_list) + " map ids");
    for (const auto& e : v.as_array())
      if (!e.is_string() || e.as_string().size() > policy_max_string)
        throw_invalid(fn, where, "must hold map ids (strings of at most 4096 bytes)");
  }
  if (!v.is_number()) return;
  const double x = v.as_number();
  if (f.name == "prompt_overlap" && !(x >= 0.0 && x <= 1.0))
    throw_invalid(fn, where, "must lie in [0, 1], got " + number_text(x));
  if (f.name == "cache_age_versions" && !(x >= 0.0 && x <= json_max_exact_integer && std::trunc(x) == x))
    throw_invalid(fn, where, "must be an integer >= 0, got " + number_text(x));
  if (!(x >= 0.0 && std::isfinite(x)))
    throw_invalid(fn, where, "must be a finite number >= 0, got " + number_text(x));
}

// Checks one condition (feature known, operator fits its kind, value of its kind), naming `where`.
inline void check_condition(std::string_view fn, const std::string& where, const policy_condition& c) {
  const policy_feature_spec* f = policy_feature(c.feature);
  if (f == nullptr) throw_invalid(fn, where + ".feature", unknown_feature_text(c.feature));
  const bool any = c.op == "==" || c.op == "!=";
  const bool order = c.op == ">=" || c.op == ">" || c.op == "<=" || c.op == "<";
  if (!any && !order && c.op != "contains")
    throw_invalid(fn, where + ".op",
                  "is an unknown operator '" + c.op + "' (==, !=, >=, >, <=, <, contains)");
  if (f->kind == policy_feature_kind::string_list) {
    if (c.op != "contains")
      throw_invalid(fn, where + ".op",
                    "must be 'contains' for the feature " + c.feature + ", got '" + c.op + "'");
    if (!c.value.is_string()) throw_invalid(fn, where + ".value", "must be a map id (a string)");
    return;
  }
  if (c.op == "contains")
    throw_invalid(fn, where + ".op", "'contains' reads only the feature maps, not " + c.feature);
  if (order && f->kind != policy_feature_kind::number)
    throw_invalid(fn, where + ".op", "'" + c.op + "' compares numbers; " + c.feature + " is not one");
  if (!c.other.empty()) {
    const policy_feature_spec* g = policy_feature(c.other);
    if (g == nullptr) throw_invalid(fn, where + ".other", unknown_feature_text(c.other));
    if (g->kind != f->kind)
      throw_invalid(fn, where + ".other",
                    "must be a feature of the kind of " + c.feature + ", got " + c.other);
    if (!c.value.is_null()) throw_invalid(fn, where + ".value", "must be null (or absent) with 'other'");
    return;
  }
  check_feature_value(fn, where + ".value", *f, c.value);
}

// Whether condition `c` holds for `r`; a feature the request lacks throws, naming the rule.
inline bool condition_holds(const policy_condition& c, const relay_request& r, std::size_t rule) {
  const std::string said = c.feature + " " + c.op + " " + (c.other.empty() ? write_json(c.value) : c.other);
  const json_value v = request_feature(r, c.feature);
  if (v.is_null())
    throw_invalid("relay_policy::decide", "request." + c.feature,
                  "is missing: rule " + number_text(rule) + " reads it (" + said + ")");
  const json_value w = c.other.empty() ? c.value : request_feature(r, c.other);
  if (w.is_null())
    throw_invalid("relay_policy::decide", "request." + c.other,
                  "is missing: rule " + number_text(rule) + " reads it (" + said + ")");
  if (c.op == "contains") {
    for (const auto& e : v.as_array())
      if (e.as_string() == c.value.as_string()) return true;
    return false;
  }
  if (c.op == "==") return v == w;
  if (c.op == "!=") return !(v == w);
  const double x = v.as_number(), y = w.as_number();
  if (c.op == ">=") return x >= y;
  if (c.op == ">") return x > y;
  if (c.op == "<=") return x <= y;
  return x < y;
}

}  // namespace detail

/// @brief Parses one request (a JSON object of relay_policy_features), strictly.
/// @param request the request object, e.g. {"sender_fingerprint": "...", "cache_age_versions": 0}
/// @returns the request's features
/// @throws invalid_argument naming `request.<key>` for an unknown key (with the nearest feature), a
///         value of the wrong kind, a number out of its range, or a string over 4096 bytes; naming
///         `request` when it is not an object
[[nodiscard]] inline relay_request parse_relay_request(const json_value& request) {
  constexpr std::string_view fn = "relay_policy";
  if (!request.is_object())
    detail::throw_invalid(
        fn, "request",
        "must be a JSON object of features, got " + std::string(json_kind_name(request.kind())));
  relay_request r;
  for (const auto& [key, v] : request.as_object()) {
    const policy_feature_spec* f = detail::policy_feature(key);
    if (f == nullptr) detail::throw_invalid(fn, "request." + key, detail::unknown_feature_text(key));
    detail::check_feature_value(fn, "request." + key, *f, v);
    if (key == "sender_fingerprint") r.sender_fingerprint = v.as_string();
    if (key == "receiver_fingerprint") r.receiver_fingerprint = v.as_string();
    if (key == "cache_age_versions") r.cache_age_versions = v.as_number();
    if (key == "prompt_overlap") r.prompt_overlap = v.as_number();
    if (key == "needs_document") r.needs_document = v.as_bool();
    if (key == "doc_tokens") r.doc_tokens = v.as_number();
    if (key == "own_tokens") r.own_tokens = v.as_number();
    if (key == "link") r.link = v.as_string();
    if (key == "maps") {
      r.maps.emplace();
      for (const auto& e : v.as_array()) r.maps->push_back(e.as_string());
    }
  }
  return r;
}

/// @brief One rule as report.json writes it (docs/policy.schema.json): index, line, text, when,
/// action, map (null unless relay_through_map), rests_on {check, finding, estimate, lo, hi, verdict}.
/// @param r the rule
/// @param index its position in the list
[[nodiscard]] inline json_value policy_rule_json(const policy_rule& r, std::size_t index) {
  json_value j;
  j.set("index", index);
  j.set("line", r.line);
  j.set("text", r.text);
  json_value when = json_value::array();
  for (const auto& c : r.when)
    when.push_back(c.other.empty()
                       ? json_value::object({{"feature", c.feature}, {"op", c.op}, {"value", c.value}})
                       : json_value::object({{"feature", c.feature}, {"op", c.op}, {"other", c.other}}));
  j.set("when", std::move(when));
  j.set("action", relay_action_name(r.action));
  j.set("map", r.action == relay_action::relay_through_map ? json_value(r.map) : json_value());
  auto num = [](double x) { return std::isfinite(x) ? json_value(x) : json_value(); };
  json_value on;
  on.set("check", r.check);
  on.set("finding", r.finding.empty() ? json_value() : json_value(r.finding));
  on.set("estimate", num(r.estimate));
  on.set("lo", num(r.lo));
  on.set("hi", num(r.hi));
  on.set("verdict", r.verdict.empty() ? json_value() : json_value(r.verdict));
  j.set("rests_on", std::move(on));
  return j;
}

namespace detail {

// A string member `key` of `o`, naming `where.key`.
inline std::string policy_string(const json_value& o, std::string_view key, const std::string& where,
                                 bool nullable = false) {
  const json_value* v = o.find(key);
  const std::string name = where + "." + std::string(key);
  if (v == nullptr) throw_invalid("relay_policy", name, "is missing");
  if (nullable && v->is_null()) return {};
  if (!v->is_string() || v->as_string().size() > policy_max_string)
    throw_invalid("relay_policy", name, std::string("must be a string") + (nullable ? " or null" : ""));
  return v->as_string();
}

// A number member `key` of `o` (null: NaN), naming `where.key`.
inline double policy_number(const json_value& o, std::string_view key, const std::string& where) {
  const json_value* v = o.find(key);
  const std::string name = where + "." + std::string(key);
  if (v == nullptr) throw_invalid("relay_policy", name, "is missing");
  if (v->is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v->is_number()) throw_invalid("relay_policy", name, "must be a number or null");
  return v->as_number();
}

// Refuses members of object `o` outside `keys`, naming `where.<key>`.
inline void policy_known_keys(const json_value& o, std::span<const std::string_view> keys,
                              const std::string& where) {
  for (const auto& m : o.as_object())
    if (std::find(keys.begin(), keys.end(), m.first) == keys.end())
      throw_invalid("relay_policy", where + "." + m.first,
                    "is not a field of the policy schema (docs/policy.schema.json)");
}

// The `rests_on` object of a rule.
inline void parse_rests_on(policy_rule& r, const json_value& j, const std::string& where) {
  const json_value* on = j.find("rests_on");
  if (on == nullptr || !on->is_object())
    throw_invalid("relay_policy", where + ".rests_on", "must be an object");
  static constexpr std::array<std::string_view, 6> keys = {"check", "finding", "estimate",
                                                           "lo",    "hi",      "verdict"};
  policy_known_keys(*on, keys, where + ".rests_on");
  r.check = policy_string(*on, "check", where + ".rests_on");
  r.finding = policy_string(*on, "finding", where + ".rests_on", true);
  r.estimate = policy_number(*on, "estimate", where + ".rests_on");
  r.lo = policy_number(*on, "lo", where + ".rests_on");
  r.hi = policy_number(*on, "hi", where + ".rests_on");
  r.verdict = policy_string(*on, "verdict", where + ".rests_on", true);
  if (!r.verdict.empty() && r.verdict != "yes" && r.verdict != "no" && r.verdict != "inconclusive")
    throw_invalid("relay_policy", where + ".rests_on.verdict", "must be yes, no, inconclusive or null");
}

// One rule of `decision.rules[i]`, strictly.
inline policy_rule parse_policy_rule(const json_value& j, std::size_t i) {
  const std::string where = "decision.rules[" + number_text(i) + "]";
  if (!j.is_object()) throw_invalid("relay_policy", where, "must be an object");
  static constexpr std::array<std::string_view, 7> keys = {"index",  "line", "text",    "when",
                                                           "action", "map",  "rests_on"};
  policy_known_keys(j, keys, where);
  policy_rule r;
  const double line = policy_number(j, "line", where), index = policy_number(j, "index", where);
  if (!(line >= 0 && line < 1e6 && std::trunc(line) == line))
    throw_invalid("relay_policy", where + ".line", "must be an integer >= 0");
  if (index != static_cast<double>(i))
    throw_invalid("relay_policy", where + ".index", "must equal " + number_text(i));
  r.line = static_cast<std::size_t>(line);
  r.text = policy_string(j, "text", where);
  const std::string action = policy_string(j, "action", where);
  if (action == "relay")
    r.action = relay_action::relay;
  else if (action == "relay_through_map")
    r.action = relay_action::relay_through_map;
  else if (action == "text")
    r.action = relay_action::text;
  else if (action == "no_communication")
    r.action = relay_action::no_communication;
  else
    throw_invalid("relay_policy", where + ".action",
                  "is an unknown action '" + action + "' (relay, relay_through_map, text, no_communication)");
  r.map = policy_string(j, "map", where, true);
  if ((r.action == relay_action::relay_through_map) != !r.map.empty())
    throw_invalid("relay_policy", where + ".map",
                  "must be a map id exactly when the action is relay_through_map");
  const json_value* when = j.find("when");
  if (when == nullptr || !when->is_array() || when->size() > policy_max_when)
    throw_invalid("relay_policy", where + ".when", "must be an array of at most 64 conditions");
  for (std::size_t k = 0; k < when->size(); ++k) {
    const std::string cw = where + ".when[" + number_text(k) + "]";
    const json_value& c = when->at(k);
    if (!c.is_object()) throw_invalid("relay_policy", cw, "must be an object {feature, op, value}");
    static constexpr std::array<std::string_view, 4> ckeys = {"feature", "op", "value", "other"};
    policy_known_keys(c, ckeys, cw);
    if (c.contains("value") == c.contains("other"))
      throw_invalid("relay_policy", cw + ".value", "needs exactly one of 'value' and 'other'");
    policy_condition pc{policy_string(c, "feature", cw), policy_string(c, "op", cw),
                        c.contains("value") ? c.at("value") : json_value(),
                        c.contains("other") ? policy_string(c, "other", cw) : std::string()};
    check_condition("relay_policy", cw, pc);
    r.when.push_back(std::move(pc));
  }
  parse_rests_on(r, j, where);
  return r;
}

}  // namespace detail

/// @brief The audit's policy as rules, and the one evaluator of them.
///
/// @code
/// auto policy = la::relay_policy::load("audit-out/report.json");
/// auto choice = policy.decide({.sender_fingerprint = a_fp, .receiver_fingerprint = b_fp,
///                              .cache_age_versions = 0, .prompt_overlap = 0.0,
///                              .needs_document = true, .maps = {{}}});
/// if (choice.action == la::relay_action::relay_through_map) relay_through(choice.map);
/// @endcode
class relay_policy {
 public:
  /// @brief A policy of `rules`, evaluated in order (each rule checked as on load).
  /// @param rules the rules, in evaluation order
  /// @param verdict the decision's verdict they came from ("" when unknown)
  /// @param relay_allowed the decision's relay_allowed
  /// @throws invalid_argument naming `rules[i].when[k]` for a bad condition
  explicit relay_policy(std::vector<policy_rule> rules, std::string verdict = {}, bool relay_allowed = false)
      : rules_(std::move(rules)), verdict_(std::move(verdict)), relay_allowed_(relay_allowed) {
    for (std::size_t i = 0; i < rules_.size(); ++i)
      for (std::size_t k = 0; k < rules_[i].when.size(); ++k)
        detail::check_condition("relay_policy", "rules[" + number_text(i) + "].when[" + number_text(k) + "]",
                                rules_[i].when[k]);
  }

  /// @brief The policy of a report.json document (its `decision`: rules, verdict, relay_allowed).
  /// @param report the parsed report.json
  /// @throws invalid_argument naming the field (decision.rules[i].action, .when[k].feature, ...) for
  ///         a missing or malformed field, an unknown action, feature, operator or rule field
  [[nodiscard]] static relay_policy from_json(const json_value& report) {
    if (!report.is_object()) detail::throw_invalid("relay_policy", "report", "must be a JSON object");
    const json_value* d = report.find("decision");
    if (d == nullptr || !d->is_object())
      detail::throw_invalid("relay_policy", "decision", "must be an object");
    const json_value* rules = d->find("rules");
    if (rules == nullptr || !rules->is_array())
      detail::throw_invalid("relay_policy", "decision.rules",
                            "must be an array (a report.json written before the rules existed has none)");
    if (rules->size() > detail::policy_max_rules)
      detail::throw_invalid("relay_policy", "decision.rules", "holds more than 4096 rules");
    std::vector<policy_rule> out;
    for (std::size_t i = 0; i < rules->size(); ++i) out.push_back(detail::parse_policy_rule(rules->at(i), i));
    const json_value* v = d->find("verdict");
    const json_value* allowed = d->find("relay_allowed");
    if (allowed != nullptr && !allowed->is_bool())
      detail::throw_invalid("relay_policy", "decision.relay_allowed", "must be a boolean");
    return relay_policy(std::move(out), v != nullptr && v->is_string() ? v->as_string() : std::string(),
                        allowed != nullptr && allowed->as_bool());
  }

  /// @brief Reads report.json (at most 256 MiB) and its policy (from_json).
  /// @param path the report.json file
  /// @throws invalid_argument naming the file when it cannot be read, or the field (from_json);
  ///         corrupt_data when it is not JSON or over the limit
  [[nodiscard]] static relay_policy load(const std::string& path) {
    const std::string text = read_whole_file(path, std::size_t{256} << 20, "relay_policy");
    json_value doc;
    try {
      doc = parse_json(text);
    } catch (const corrupt_data& e) {
      LATENTAUDIT_THROW(corrupt_data("relay_policy: '" + path + "': " + e.what()));
    }
    return from_json(doc);
  }

  /// @brief The action for one request: the first rule whose conditions all hold.
  /// @param r the request's features
  /// @returns the action, the map id (relay_through_map), the rule's index, line text and check;
  ///          with no rule firing (no rules), text and no rule
  /// @throws invalid_argument naming `request.<feature>` when a rule reached reads a feature `r` lacks
  [[nodiscard]] relay_choice decide(const relay_request& r) const {
    for (std::size_t i = 0; i < rules_.size(); ++i) {
      const auto& rule = rules_[i];
      if (!std::all_of(rule.when.begin(), rule.when.end(),
                       [&](const policy_condition& c) { return detail::condition_holds(c, r, i); }))
        continue;
      return {rule.action, rule.map, i, rule.text, rule.check};
    }
    return {relay_action::text,
            {},
            std::nullopt,
            "no rule fired (the policy has " + number_text(rules_.size()) + " rules; verdict " +
                (verdict_.empty() ? std::string("unknown") : verdict_) +
                "): send text, which relays no cache",
            {}};
  }

  /// @brief decide() of a request given as JSON (parse_relay_request, strict).
  /// @param request the request object
  /// @throws invalid_argument naming `request.<key>` (parse_relay_request, decide)
  [[nodiscard]] relay_choice decide(const json_value& request) const {
    return decide(parse_relay_request(request));
  }

  /// @brief The rules, in evaluation order.
  [[nodiscard]] const std::vector<policy_rule>& rules() const noexcept { return rules_; }
  /// @brief The decision's verdict the rules came from ("" when unknown).
  [[nodiscard]] const std::string& verdict() const noexcept { return verdict_; }
  /// @brief The decision's relay_allowed.
  [[nodiscard]] bool relay_allowed() const noexcept { return relay_allowed_; }

 private:
  std::vector<policy_rule> rules_;
  std::string verdict_;
  bool relay_allowed_ = false;
};

/// @brief The request features of an audit record of a sender arm (the features the audit's
/// organism and task files record): fingerprints, cache_age_versions, prompt_overlap, doc_tokens and
/// own_tokens from its covariates (absent when it has none), needs_document from its regime (need
/// and stale: true; no_need and conflict: false; absent otherwise), link, and `maps` as given.
/// @param r the record of the request's relay arm (kv_full, a drifted or a cross_model sender)
/// @param maps the map ids the stack holds for this sender
[[nodiscard]] inline relay_request request_of_record(const trial_record& r,
                                                     std::vector<std::string> maps = {}) {
  relay_request q;
  if (!r.sender_fingerprint.empty()) q.sender_fingerprint = r.sender_fingerprint;
  if (!r.receiver_fingerprint.empty()) q.receiver_fingerprint = r.receiver_fingerprint;
  q.cache_age_versions = r.covariate_value("cache_age_versions");
  q.prompt_overlap = r.covariate_value("prompt_overlap");
  q.doc_tokens = r.covariate_value("doc_tokens");
  q.own_tokens = r.covariate_value("own_tokens");
  if (r.regime == "need" || r.regime == "stale") q.needs_document = true;
  if (r.regime == "no_need" || r.regime == "conflict") q.needs_document = false;
  if (!r.link.empty()) q.link = r.link;
  q.maps = std::move(maps);
  return q;
}

/// @brief Replays `policy` on the audit's own requests. A request is one (item, seed) unit and one
/// sender arm of it — an arm of arm_kind kv_full, drifted or cross_model whose record carries a
/// sender fingerprint — with the features request_of_record() gives (its maps: the map ids of the
/// unit's kv_mapped records from that sender). The action picks the unit's record that answers it:
/// relay, the sender arm's own record; relay_through_map M, the kv_mapped record from that sender
/// through M; text, the text_full record; no_communication, the no_comm record. A request whose
/// record is missing counts in `requests` but not in `resolved`.
/// @param policy the rules
/// @param records the audit's records
/// @returns counts, accuracy over the resolved requests and the relay share over all requests
/// @throws invalid_argument when a rule reads a feature a request lacks (decide)
[[nodiscard]] inline policy_replay replay_relay_policy(const relay_policy& policy,
                                                       std::span<const trial_record> records) {
  using unit_key = std::pair<std::uint64_t, std::uint64_t>;
  std::map<unit_key, std::vector<const trial_record*>> units;
  for (const auto& r : records) units[{r.item, r.seed}].push_back(&r);
  policy_replay out;
  out.by_rule.assign(policy.rules().size(), 0);
  for (const auto& unit : units) {
    const std::vector<const trial_record*>& rs = unit.second;
    auto of_kind = [&](std::string_view kind, auto&& also) -> const trial_record* {
      for (const trial_record* r : rs)
        if (r->arm_kind == kind && also(*r)) return r;
      return nullptr;
    };
    for (const trial_record* s : rs) {
      if ((s->arm_kind != "kv_full" && s->arm_kind != "drifted" && s->arm_kind != "cross_model") ||
          s->sender_fingerprint.empty())
        continue;
      std::vector<std::string> maps;
      for (const trial_record* m : rs)
        if (m->arm_kind == "kv_mapped" && m->sender_fingerprint == s->sender_fingerprint && !m->map.empty())
          maps.push_back(m->map);
      const relay_choice c = policy.decide(request_of_record(*s, std::move(maps)));
      ++out.requests;
      if (c.rule) ++out.by_rule[*c.rule];
      const trial_record* answer = nullptr;
      switch (c.action) {
        case relay_action::relay:
          answer = s;
          break;
        case relay_action::relay_through_map:
          answer = of_kind("kv_mapped", [&](const trial_record& m) {
            return m.map == c.map && m.sender_fingerprint == s->sender_fingerprint;
          });
          break;
        case relay_action::text:
          answer = of_kind("text_full", [](const trial_record&) { return true; });
          break;
        case relay_action::no_communication:
          answer = of_kind("no_comm", [](const trial_record&) { return true; });
          break;
      }
      if (c.action == relay_action::relay || c.action == relay_action::relay_through_map) ++out.relayed;
      if (answer == nullptr) continue;
      ++out.resolved;
      out.correct += answer->correct ? 1 : 0;
    }
  }
  if (out.resolved > 0) out.accuracy = static_cast<double>(out.correct) / static_cast<double>(out.resolved);
  if (out.requests > 0)
    out.relay_share = static_cast<double>(out.relayed) / static_cast<double>(out.requests);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_SERVE_RELAY_POLICY_HPP
