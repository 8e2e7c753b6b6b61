// SPDX-License-Identifier: MIT
// Tests of the Prometheus text metrics (serve/relay_metrics.hpp): the text parsed back by a parser of
// the exposition format (HELP and TYPE once per family before its samples, counters ending in
// _total, label values unescaped), escaping of \, " and newline, and the atomic file write.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "latentaudit/serve/relay_metrics.hpp"
#include "latentaudit/serve/relay_monitor.hpp"

namespace la = latentaudit;

namespace {
struct parsed_sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
struct parsed_text {
  std::map<std::string, std::string> type, help;
  std::vector<parsed_sample> samples;
};

// A strict parser of the text format 0.0.4 for what relay_metrics writes; FAILs on anything else.
parsed_text parse_exposition(const std::string& text) {
  parsed_text out;
  REQUIRE(!text.empty());
  REQUIRE(text.back() == '\n');
  std::istringstream in(text);
  std::string line, current;
  while (std::getline(in, line)) {
    REQUIRE(!line.empty());
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const bool help = line[2] == 'H';
      const auto rest = line.substr(7);
      const auto sp = rest.find(' ');
      REQUIRE(sp != std::string::npos);
      const auto name = rest.substr(0, sp);
      auto& m = help ? out.help : out.type;
      REQUIRE(m.count(name) == 0);  // once per family
      m[name] = rest.substr(sp + 1);
      if (!help) {
        REQUIRE(out.help.count(name) == 1);  // HELP first
        current = name;
      }
      continue;
    }
    REQUIRE(line[0] != '#');
    parsed_sample s;
    std::size_t i = 0;
    while (i < line.size() &&
           (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == ':'))
      ++i;
    s.name = line.substr(0, i);
    REQUIRE(s.name == current);  // samples follow their family's TYPE
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const auto eq = line.find('=', i);
        REQUIRE(eq != std::string::npos);
        const auto key = line.substr(i, eq - i);
        REQUIRE(line[eq + 1] == '"');
        std::string v;
        std::size_t j = eq + 2;
        for (; line[j] != '"'; ++j) {
          REQUIRE(j < line.size());
          if (line[j] == '\\') {
            const char e = line[++j];
            REQUIRE((e == '\\' || e == '"' || e == 'n'));
            v.push_back(e == 'n' ? '\n' : e);
          } else {
            v.push_back(line[j]);
          }
        }
        s.labels[key] = v;
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    REQUIRE(line[i] == ' ');
    const auto v = line.substr(i + 1);
    s.value = v == "+Inf" ? HUGE_VAL : v == "-Inf" ? -HUGE_VAL : std::strtod(v.c_str(), nullptr);
    out.samples.push_back(std::move(s));
  }
  for (const auto& [name, type] : out.type) {
    REQUIRE((type == "counter" || type == "gauge"));
    CHECK((type == "counter") == (name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0));
    CHECK(name.rfind("latentaudit_relay_", 0) == 0);
  }
  return out;
}

const parsed_sample* find_sample(const parsed_text& t, const std::string& name,
                                 const std::map<std::string, std::string>& labels = {}) {
  for (const auto& s : t.samples)
    if (s.name == name && s.labels == labels) return &s;
  return nullptr;
}
}  // namespace

TEST_CASE("relay_metrics: the exposition text parses back, counters and gauges", "[serve]") {
  la::relay_metrics mx;
  mx.count_decision("relay", "fresh_cache");
  mx.count_decision("relay", "fresh_cache");
  mx.count_decision("text", "stale.kv_worse_than_text");
  mx.add_bytes("relay", 1000);
  mx.add_bytes("relay", 24);
  mx.add_latency_saved(0.25);
  la::relay_monitor m;
  for (std::uint64_t i = 0; i < 30; ++i) {
    const la::relay_pair p{.request_id = i, .relay_correct = false, .fallback_correct = true};
    m.observe(p);
    mx.count_sampled_pair(p);
  }
  REQUIRE_FALSE(m.on());
  mx.set_monitor(m);
  const auto t = parse_exposition(mx.text());
  CHECK(find_sample(t, "latentaudit_relay_decisions_total", {{"action", "relay"}, {"rule", "fresh_cache"}})
            ->value == 2);
  CHECK(find_sample(t, "latentaudit_relay_decisions_total",
                    {{"action", "text"}, {"rule", "stale.kv_worse_than_text"}})
            ->value == 1);
  CHECK(find_sample(t, "latentaudit_relay_sampled_pairs_total", {{"fallback", "text"}})->value == 30);
  CHECK(find_sample(t, "latentaudit_relay_bytes_total", {{"action", "relay"}})->value == 1024);
  CHECK(find_sample(t, "latentaudit_relay_latency_saved_seconds_total")->value == 0.25);
  CHECK(find_sample(t, "latentaudit_relay_monitor_on")->value == 0);
  CHECK(find_sample(t, "latentaudit_relay_monitor_pairs_total")->value == 30);
  CHECK(
      find_sample(t, "latentaudit_relay_monitor_log_capital", {{"fallback", "text"}, {"endpoint", "correct"}})
          ->value == Approx(m.bettor(la::relay_fallback::text, la::relay_endpoint::correct).log_capital()));
  CHECK(find_sample(t, "latentaudit_relay_monitor_log_threshold")->value == Approx(std::log(40.0)));
  CHECK(find_sample(t, "latentaudit_relay_monitor_off_at_pairs")->value ==
        static_cast<double>(m.off()->pairs));
  CHECK(find_sample(t, "latentaudit_relay_monitor_off", {{"fallback", "text"}, {"endpoint", "correct"}})
            ->value == 1);
  CHECK(t.type.at("latentaudit_relay_monitor_on") == "gauge");
  CHECK(t.type.at("latentaudit_relay_decisions_total") == "counter");
  CHECK_THROWS_AS(mx.add_latency_saved(-1), la::invalid_argument);
  CHECK_THROWS_AS(mx.count_decision("", "r"), la::invalid_argument);
  CHECK(la::prometheus_content_type.find("version=0.0.4") != std::string_view::npos);
}

TEST_CASE("relay_metrics: label values and HELP text are escaped", "[serve]") {
  CHECK(la::prometheus_escape_label("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(la::prometheus_escape_help("a\\b\"c\nd") == "a\\\\b\"c\\nd");
  CHECK(la::prometheus_number(1.0 / 0.0) == "+Inf");
  CHECK(la::prometheus_number(-1.0 / 0.0) == "-Inf");
  CHECK(la::prometheus_number(std::nan("")) == "NaN");
  CHECK(la::prometheus_number(3.0) == "3");
  la::relay_metrics mx;
  const std::string rule = "cache_age_versions >= 1 \"stale\"\\n\nnext line";
  mx.count_decision("text", rule);
  const auto text = mx.text();
  const auto t = parse_exposition(text);
  const auto* s = find_sample(t, "latentaudit_relay_decisions_total", {{"action", "text"}, {"rule", rule}});
  REQUIRE(s != nullptr);  // round-trips through the escaping
  CHECK(s->value == 1);
  CHECK(text.find("next line\"") != std::string::npos);
}

TEST_CASE("relay_metrics: write_file is atomic (temp + rename) and refuses a missing directory", "[serve]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("latentaudit_serve_metrics_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  la::relay_metrics mx;
  mx.count_decision("relay", "r1");
  const auto path = dir / "latentaudit.prom";
  mx.write_file(path);
  mx.count_decision("relay", "r1");
  mx.write_file(path);  // replaces the file
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == mx.text());
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  CHECK(files == 1);  // no temporary file left behind
  CHECK_THROWS_AS(mx.write_file(dir / "missing" / "x.prom"), la::invalid_argument);
  std::filesystem::remove_all(dir);
}
