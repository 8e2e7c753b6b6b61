// SPDX-License-Identifier: MIT
// latentaudit: the relay's metrics in Prometheus' text exposition format (version 0.0.4) — the
// decisions by action and rule, the sampled pairs, the monitor's capitals and state, the bytes
// relayed and the latency saved — returned as a string for the stack's own /metrics endpoint or
// written to a file atomically (temporary file + rename: node_exporter's textfile collector reads
// whole files only). No server of our own.
//
// Families (HELP and TYPE once each, samples sorted by labels; counters end in _total):
//   latentaudit_relay_decisions_total{action,rule}           counter
//   latentaudit_relay_sampled_pairs_total{fallback}          counter
//   latentaudit_relay_bytes_total{action}                    counter
//   latentaudit_relay_latency_saved_seconds_total            counter
//   latentaudit_relay_monitor_on                             gauge (1 on, 0 off)
//   latentaudit_relay_monitor_pairs_total                    counter
//   latentaudit_relay_monitor_log_capital{fallback,endpoint} gauge
//   latentaudit_relay_monitor_log_threshold                  gauge
//   latentaudit_relay_monitor_off_at_pairs                   gauge (0 while on)
//   latentaudit_relay_monitor_off{fallback,endpoint}         gauge (1, present once off)
// Label values are escaped as the format requires (\ → \\, " → \", newline → \n); HELP text
// escapes \ and newline.
#ifndef LATENTAUDIT_SERVE_RELAY_METRICS_HPP
#define LATENTAUDIT_SERVE_RELAY_METRICS_HPP

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "relay_monitor.hpp"

namespace latentaudit {

/// @brief The Content-Type of the text relay_metrics::text() returns.
inline constexpr std::string_view prometheus_content_type = "text/plain; version=0.0.4; charset=utf-8";

/// @brief A label value escaped for the exposition format: \ → \\, " → \", newline → \n.
/// @param v the value (any UTF-8)
/// @returns the escaped value (without the quotes)
[[nodiscard]] inline std::string prometheus_escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

/// @brief A HELP text escaped for the exposition format: \ → \\, newline → \n.
/// @param v the text
/// @returns the escaped text
[[nodiscard]] inline std::string prometheus_escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

/// @brief A sample value in the exposition format: shortest round-trip decimal, "+Inf", "-Inf" or
/// "NaN".
/// @param x the value
/// @returns its text
[[nodiscard]] inline std::string prometheus_number(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, res.ptr);
}

/// @brief The relay's metrics: counters the stack adds to, and the monitor's state it copies in;
/// text() renders them. Thread-safe (one lock).
class relay_metrics {
 public:
  /// @brief Counts one decision of the policy (or the stack's own rule).
  /// @param action what was done: "relay", "relay_map", "text", "no_comm" (any label)
  /// @param rule the rule that fired (any label; "" when none)
  /// @throws invalid_argument for an empty action
  void count_decision(std::string_view action, std::string_view rule) {
    if (action.empty()) detail::throw_invalid("relay_metrics::count_decision", "action", "must not be empty");
    std::lock_guard<std::mutex> g(mu_);
    decisions_[{std::string(action), std::string(rule)}] += 1;
  }
  /// @brief Counts one sampled pair (relay_sampler::record's result).
  /// @param p the pair
  void count_sampled_pair(const relay_pair& p) {
    std::lock_guard<std::mutex> g(mu_);
    pairs_[std::string(relay_fallback_name(p.fallback))] += 1;
  }
  /// @brief Adds bytes sent on the wire under `action`.
  /// @param action the decision's action
  /// @param bytes the bytes
  /// @throws invalid_argument for an empty action
  void add_bytes(std::string_view action, std::uint64_t bytes) {
    if (action.empty()) detail::throw_invalid("relay_metrics::add_bytes", "action", "must not be empty");
    std::lock_guard<std::mutex> g(mu_);
    bytes_[std::string(action)] += static_cast<double>(bytes);
  }
  /// @brief Adds latency saved by relaying (the stack's estimate against its fallback, ≥ 0; a
  /// counter never decreases, so a relay slower than its fallback adds 0 and is seen in the
  /// sampled pairs' records).
  /// @param seconds the seconds saved
  /// @throws invalid_argument for a negative or non-finite value
  void add_latency_saved(double seconds) {
    if (!(seconds >= 0.0) || !std::isfinite(seconds))
      detail::throw_invalid("relay_metrics::add_latency_saved", "seconds",
                            "must be finite and >= 0, got " + number_text(seconds));
    std::lock_guard<std::mutex> g(mu_);
    latency_saved_ += seconds;
  }
  /// @brief Copies the monitor's state (call after each observe, or before each scrape).
  /// @param m the monitor
  void set_monitor(const relay_monitor& m) {
    monitor_state s;
    s.on = m.on();
    s.pairs = m.pairs();
    s.log_threshold = m.log_threshold();
    for (auto f : {relay_fallback::text, relay_fallback::no_comm})
      for (auto e : {relay_endpoint::correct, relay_endpoint::likelihood})
        if (m.enabled(f, e))
          s.log_capital[{std::string(relay_fallback_name(f)), std::string(relay_endpoint_name(e))}] =
              m.bettor(f, e).log_capital();
    if (m.off()) {
      s.off_at = m.off()->pairs;
      s.off_stream = {std::string(relay_fallback_name(m.off()->fallback)),
                      std::string(relay_endpoint_name(m.off()->endpoint))};
    }
    std::lock_guard<std::mutex> g(mu_);
    monitor_ = std::move(s);
  }

  /// @brief The metrics in the text exposition format (ends in a newline).
  /// @returns the text, served with prometheus_content_type
  [[nodiscard]] std::string text() const {
    std::lock_guard<std::mutex> g(mu_);
    std::string out;
    family(out, "latentaudit_relay_decisions_total", "counter",
           "Requests decided, by the action taken and the rule that fired.");
    for (const auto& [k, v] : decisions_)
      sample(out, "latentaudit_relay_decisions_total", {{"action", k.first}, {"rule", k.second}}, v);
    family(out, "latentaudit_relay_sampled_pairs_total", "counter",
           "Requests also run on the fallback arm (the production sample), by fallback.");
    for (const auto& [k, v] : pairs_)
      sample(out, "latentaudit_relay_sampled_pairs_total", {{"fallback", k}}, v);
    family(out, "latentaudit_relay_bytes_total", "counter", "Bytes sent on the wire, by action.");
    for (const auto& [k, v] : bytes_) sample(out, "latentaudit_relay_bytes_total", {{"action", k}}, v);
    family(out, "latentaudit_relay_latency_saved_seconds_total", "counter",
           "Seconds of latency saved by relaying instead of the fallback (the stack's estimate).");
    sample(out, "latentaudit_relay_latency_saved_seconds_total", {}, latency_saved_);
    if (!monitor_) return out;
    const auto& m = *monitor_;
    family(out, "latentaudit_relay_monitor_on", "gauge",
           "1 while the always-valid monitor lets relay through, 0 once it turned relay off.");
    sample(out, "latentaudit_relay_monitor_on", {}, m.on ? 1.0 : 0.0);
    family(out, "latentaudit_relay_monitor_pairs_total", "counter",
           "Paired observations the monitor has seen.");
    sample(out, "latentaudit_relay_monitor_pairs_total", {}, static_cast<double>(m.pairs));
    family(out, "latentaudit_relay_monitor_log_capital", "gauge",
           "Log capital of each betting stream (relay worse than the fallback on the endpoint).");
    for (const auto& [k, v] : m.log_capital)
      sample(out, "latentaudit_relay_monitor_log_capital", {{"fallback", k.first}, {"endpoint", k.second}},
             v);
    family(out, "latentaudit_relay_monitor_log_threshold", "gauge",
           "log(k/alpha): a stream's log capital at or above it turns relay off.");
    sample(out, "latentaudit_relay_monitor_log_threshold", {}, m.log_threshold);
    family(out, "latentaudit_relay_monitor_off_at_pairs", "gauge",
           "Paired observations when relay was turned off (0 while on).");
    sample(out, "latentaudit_relay_monitor_off_at_pairs", {}, static_cast<double>(m.off_at.value_or(0)));
    if (m.off_at) {
      family(out, "latentaudit_relay_monitor_off", "gauge", "1 for the stream that turned relay off.");
      sample(out, "latentaudit_relay_monitor_off",
             {{"fallback", m.off_stream.first}, {"endpoint", m.off_stream.second}}, 1.0);
    }
    return out;
  }

  /// @brief Writes text() to `path` atomically: to a temporary file beside it, then renamed over it,
  /// so a reader sees the old file or the new one, never a part.
  /// @param path the file (its directory must exist)
  /// @throws invalid_argument if the directory does not exist; corrupt_data if writing or renaming
  ///         fails (the temporary file is removed)
  void write_file(const std::filesystem::path& path) const {
    constexpr std::string_view fn = "relay_metrics::write_file";
    if (path.empty() || path.filename().empty()) detail::throw_invalid(fn, "path", "must name a file");
    const auto parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::error_code ec;
    if (!std::filesystem::is_directory(parent, ec))
      detail::throw_invalid(fn, "path", "'" + path.string() + "': its directory does not exist");
    const std::string body = text();
    auto tmp = path;
    tmp += ".tmp." + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(body.data(), static_cast<std::streamsize>(body.size()));
      f.flush();
      if (!f) {
        std::filesystem::remove(tmp, ec);
        LATENTAUDIT_THROW(corrupt_data(std::string(fn) + ": cannot write '" + tmp.string() + "'"));
      }
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      LATENTAUDIT_THROW(
          corrupt_data(std::string(fn) + ": cannot rename onto '" + path.string() + "': " + ec.message()));
    }
  }

 private:
  using label_list = std::vector<std::pair<std::string_view, std::string_view>>;
  struct monitor_state {
    bool on = true;
    std::uint64_t pairs = 0;
    double log_threshold = 0.0;
    std::map<std::pair<std::string, std::string>, double> log_capital;
    std::optional<std::uint64_t> off_at;
    std::pair<std::string, std::string> off_stream;
  };

  static void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(prometheus_escape_help(help)).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  }
  static void sample(std::string& out, std::string_view name, const label_list& labels, double v) {
    out.append(name);
    if (!labels.empty()) {
      out.push_back('{');
      for (std::size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) out.push_back(',');
        out.append(labels[i].first)
            .append("=\"")
            .append(prometheus_escape_label(labels[i].second))
            .append("\"");
      }
      out.push_back('}');
    }
    out.append(" ").append(prometheus_number(v)).append("\n");
  }

  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, double> decisions_;
  std::map<std::string, double> pairs_;
  std::map<std::string, double> bytes_;
  double latency_saved_ = 0.0;
  std::optional<monitor_state> monitor_;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_SERVE_RELAY_METRICS_HPP
