// SPDX-License-Identifier: MIT
// latentaudit Python binding of the always-valid relay switch (serve/relay_monitor.hpp):
// `_latentaudit._RelayMonitor`, wrapped by python/latentaudit/_relay_monitor.py as `la.RelayMonitor`.
// Every answer is the C++ monitor's own (its bettors, thresholds, event and guarantee text); the
// Prometheus text is serve/relay_metrics.hpp's formatter fed by relay_metrics::set_monitor.
#include <latentaudit/serve/relay_metrics.hpp>
#include <latentaudit/serve/relay_monitor.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "common.hpp"

namespace latentaudit::python {

namespace {

constexpr std::pair<std::string_view, relay_fallback> fallbacks[] = {{"text", relay_fallback::text},
                                                                     {"no_comm", relay_fallback::no_comm}};
constexpr std::pair<std::string_view, relay_endpoint> endpoints[] = {
    {"correct", relay_endpoint::correct}, {"likelihood", relay_endpoint::likelihood}};

// The monitor of the wrapper's arguments; a window below 2 is refused here with the C++ check's
// message (relay_switch_options::window is unsigned, so a negative one cannot reach that check).
relay_monitor make_monitor(double alpha, std::int64_t window, double max_bet, bool vs_text, bool vs_no_comm,
                           bool on_correct, bool on_likelihood) {
  if (window < 2)
    throw invalid_argument("relay_monitor: argument 'window' must be at least 2, got " + std::to_string(window));
  relay_monitor_options o;
  o.bets.alpha = alpha;
  o.bets.window = static_cast<std::size_t>(window);
  o.bets.max_bet = max_bet;
  o.vs_text = vs_text;
  o.vs_no_comm = vs_no_comm;
  o.on_correct = on_correct;
  o.on_likelihood = on_likelihood;
  return relay_monitor(o);
}

// The off event as a dict (None while relay is on).
py::object off_dict(const relay_monitor& m) {
  if (!m.off()) return py::none();
  const relay_off_event& ev = *m.off();
  py::dict d;
  d["pairs"] = ev.pairs;
  d["request_id"] = ev.request_id ? py::object(py::int_(*ev.request_id)) : py::object(py::none());
  d["fallback"] = std::string(relay_fallback_name(ev.fallback));
  d["endpoint"] = std::string(relay_endpoint_name(ev.endpoint));
  d["log_capital"] = ev.log_capital;
  d["log_threshold"] = ev.log_threshold;
  d["reason"] = ev.reason;
  return std::move(d);
}

// Each configured stream's bettor: fallback, endpoint, log capital, next bet, observations.
py::list state_list(const relay_monitor& m) {
  py::list out;
  for (const auto& [fname, f] : fallbacks)
    for (const auto& [ename, e] : endpoints)
      if (m.enabled(f, e)) {
        const worse_bettor& b = m.bettor(f, e);
        py::dict d;
        d["fallback"] = std::string(fname);
        d["endpoint"] = std::string(ename);
        d["log_capital"] = b.log_capital();
        d["next_bet"] = b.next_bet();
        d["observations"] = b.n();
        out.append(std::move(d));
      }
  return out;
}

}  // namespace

/// Registers `_RelayMonitor` on the extension module.
void bind_relay_monitor(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<relay_monitor>(m, "_RelayMonitor", "The C++ relay_monitor (use latentaudit.RelayMonitor).")
      .def(py::init(&make_monitor), "alpha"_a, "window"_a, "max_bet"_a, "vs_text"_a, "vs_no_comm"_a,
           "on_correct"_a, "on_likelihood"_a, "relay_monitor(relay_monitor_options)")
      .def(
          "observe",
          [](relay_monitor& mon, const std::string& fallback, bool relay_correct, bool fallback_correct,
             std::optional<double> relay_likelihood, std::optional<double> fallback_likelihood,
             std::uint64_t request_id) {
            relay_pair p;
            p.request_id = request_id;
            p.fallback = parse_choice("RelayMonitor.observe", "fallback", fallback, fallbacks);
            p.relay_correct = relay_correct;
            p.fallback_correct = fallback_correct;
            p.relay_likelihood = relay_likelihood;
            p.fallback_likelihood = fallback_likelihood;
            mon.observe(p);
          },
          "fallback"_a, "relay_correct"_a, "fallback_correct"_a, "relay_likelihood"_a,
          "fallback_likelihood"_a, "request_id"_a, "relay_monitor::observe of one relay_pair")
      .def(
          "observe_difference",
          [](relay_monitor& mon, const std::string& fallback, const std::string& endpoint, double x,
             std::optional<std::uint64_t> request_id) {
            mon.observe_difference(
                parse_choice("RelayMonitor.observe_difference", "fallback", fallback, fallbacks),
                parse_choice("RelayMonitor.observe_difference", "endpoint", endpoint, endpoints), x,
                request_id);
          },
          "fallback"_a, "endpoint"_a, "x"_a, "request_id"_a, "relay_monitor::observe_difference")
      .def_property_readonly("on", &relay_monitor::on)
      .def_property_readonly("pairs", &relay_monitor::pairs)
      .def_property_readonly("streams", &relay_monitor::streams)
      .def_property_readonly("log_threshold", &relay_monitor::log_threshold)
      .def("off", &off_dict, "relay_monitor::off as a dict, or None while on")
      .def("state", &state_list, "each configured stream's bettor as a dict")
      .def("guarantee", &relay_monitor::guarantee, "relay_monitor::guarantee")
      .def(
          "prometheus_text",
          [](const relay_monitor& mon) {
            relay_metrics metrics;
            metrics.set_monitor(mon);
            return metrics.text();
          },
          "relay_metrics::text of a relay_metrics holding only this monitor's state");
  m.attr("_prometheus_content_type") = std::string(prometheus_content_type);
}

}  // namespace latentaudit::python
