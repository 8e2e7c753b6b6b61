// SPDX-License-Identifier: MIT
// latentaudit Python binding of the serving policy's one evaluator (serve/relay_policy.hpp):
// `_latentaudit._RelayPolicy`, wrapped by python/latentaudit/_relay_policy.py as `la.RelayPolicy`.
// Requests and rules cross as JSON text, so Python's answers are the C++ evaluator's own (the same
// strict request parser, the same first-match evaluation).
#include <latentaudit/core/json.hpp>
#include <latentaudit/serve/relay_policy.hpp>

#include <string>

#include "common.hpp"

namespace latentaudit::python {

namespace {

// One decision as JSON text: action, map, rule (index or null), line, text, check, finding.
std::string choice_json(const relay_policy& p, const relay_choice& c) {
  json_value j;
  j.set("action", relay_action_name(c.action));
  j.set("map", c.map.empty() ? json_value() : json_value(c.map));
  j.set("rule", c.rule ? json_value(*c.rule) : json_value());
  j.set("line", c.rule ? json_value(p.rules().at(*c.rule).line) : json_value());
  j.set("text", c.text);
  j.set("check", c.rule ? json_value(c.check) : json_value());
  const std::string finding = c.rule ? p.rules().at(*c.rule).finding : std::string();
  j.set("finding", finding.empty() ? json_value() : json_value(finding));
  return write_json(j);
}

}  // namespace

/// Registers `_RelayPolicy` on the extension module.
void bind_relay_policy(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<relay_policy>(m, "_RelayPolicy", "The C++ relay_policy (use latentaudit.RelayPolicy).")
      .def_static("load", &relay_policy::load, "path"_a, "relay_policy::load: report.json's decision.rules")
      .def_static(
          "from_json_text", [](const std::string& text) { return relay_policy::from_json(parse_json(text)); },
          "text"_a, "relay_policy::from_json of a report.json document given as text")
      .def(
          "decide_json",
          [](const relay_policy& p, const std::string& request) {
            return choice_json(
                p, p.decide(parse_json(request, {.max_depth = 8, .max_bytes = std::size_t{1} << 20})));
          },
          "request"_a, "relay_policy::decide of a request given as JSON text; the choice as JSON text")
      .def(
          "rules_json",
          [](const relay_policy& p) {
            json_value a = json_value::array();
            for (std::size_t i = 0; i < p.rules().size(); ++i) a.push_back(policy_rule_json(p.rules()[i], i));
            return write_json(a);
          },
          "the rules as report.json writes them (JSON text)")
      .def_property_readonly("verdict", &relay_policy::verdict)
      .def_property_readonly("relay_allowed", &relay_policy::relay_allowed);
}

}  // namespace latentaudit::python
