// SPDX-License-Identifier: MIT
// `latentaudit policy --report report.json --request '{...}'` (issue 54 item 1): the audit's rules
// evaluated by the library's one evaluator. Acceptance on a reduced main-job design (organism-a
// receiving; the partner organism-b, the 300-step drifted sender and their maps from models/maps;
// 200 items x 1 seed, margin 0.10, design seed 1): a request from the drifted 300-step sender goes
// through its map, a stale cache (cache_age_versions 1) gets text, a fresh cache between identical
// fingerprints without prompt overlap is relayed, organism-b's sender gets text, each naming its
// rule; every audit request sent through `--requests` reproduces report.json's policy_replay;
// `latentaudit diff` reads the rules; malformed input exits 2 naming the field.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "latentaudit/trial/journal.hpp"
#include "support/cli_runner.hpp"
#include "support/common.hpp"

namespace la = latentaudit;
namespace fs = std::filesystem;

namespace policy_cli_test {

using latentaudit::test::write_text;

std::string request(const std::string& sender, const std::string& receiver, int age, double overlap,
                    const std::vector<std::string>& maps, bool needs_document = true) {
  la::json_value m = la::json_value::array();
  for (const auto& x : maps) m.push_back(x);
  return la::write_json(la::json_value::object({{"sender_fingerprint", sender},
                                                {"receiver_fingerprint", receiver},
                                                {"cache_age_versions", age},
                                                {"prompt_overlap", overlap},
                                                {"needs_document", needs_document},
                                                {"maps", std::move(m)}}));
}

const la::trial_record& of_arm(const std::vector<la::trial_record>& recs, const std::string& arm) {
  for (const auto& r : recs)
    if (r.arm == arm) return r;
  FAIL("no record of arm " << arm);
  return recs.front();
}

}  // namespace policy_cli_test

TEST_CASE(
    "policy: the acceptance requests on a reduced main-job audit, the replay through --requests, bad input",
    "[cli][policy]") {
  using namespace policy_cli_test;
  // the audit runs once (Catch runs the case once per section)
  const auto base = la::test::cli_work_dir() / "policy";
  const auto out = base / "audit";
  static const la::test::run_result r = [&] {
    fs::remove_all(base);
    fs::create_directories(base);
    return la::test::run_cli(
        {"audit",
         "--model",
         la::test::models + "organism-a",
         "--partner",
         la::test::models + "organism-b",
         "--items",
         "200",
         "--seeds",
         "1",
         "--margin",
         "0.1",
         "--bootstrap",
         "200",
         "--arms",
         "no_comm,text_full,kv_full,cross_model,kv_drift_300,kv_mapped,kv_mapped_drift_300",
         "--no-need-fraction",
         "0.25",
         "--stale-fraction",
         "0.15",
         "--conflict-fraction",
         "0.15",
         "--out",
         out.string(),
         "--quiet"});
  }();
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto report = (out / "report.json").string();
  const auto doc = la::parse_json(la::test::slurp_file(out / "report.json"));
  INFO("verdict " << doc.at("decision").at("verdict").as_string());
  REQUIRE(doc.at("decision").at("verdict").as_string() == "relay with conditions");
  const auto recs = la::read_records(out / "records.jsonl");
  const auto& same = of_arm(recs, "kv_full");
  const std::string a = same.receiver_fingerprint, d300 = of_arm(recs, "kv_drift_300").sender_fingerprint,
                    b = of_arm(recs, "cross_model").sender_fingerprint,
                    m300 = of_arm(recs, "kv_mapped_drift_300").map;
  REQUIRE(same.sender_fingerprint == a);
  REQUIRE_FALSE(m300.empty());
  const auto& rules = doc.at("decision").at("rules").as_array();
  auto decide = [&](const std::string& req) {
    return la::test::ok_json({"policy", "--report", report, "--request", req, "--json"});
  };
  auto rule_text = [&](const la::json_value& j) {
    return rules.at(j.at("rule").as_int64()).at("text").as_string();
  };

  SECTION("the four acceptance requests, each naming its rule") {
    const auto drifted = decide(request(d300, a, 0, 0.0, {m300}));
    CHECK(drifted.at("action").as_string() == "relay_through_map");
    CHECK(drifted.at("map").as_string() == m300);
    CHECK(drifted.at("check").as_string() == "map_kv_mapped_drift_300");
    CHECK(rule_text(drifted).find("only through cache map " + m300) != std::string::npos);
    const auto stale = decide(request(a, a, 1, 0.0, {}));
    CHECK(stale.at("action").as_string() == "text");
    CHECK(stale.at("check").as_string() == "freshness");
    CHECK(rule_text(stale).find("relay only fresh caches") != std::string::npos);
    const auto fresh = decide(request(a, a, 0, 0.0, {}));
    CHECK(fresh.at("action").as_string() == "relay");
    CHECK(rule_text(fresh).find("relay only between identical model fingerprints") != std::string::npos);
    const auto foreign = decide(request(b, a, 0, 0.0, {}));
    CHECK(foreign.at("action").as_string() == "text");
    CHECK(foreign.at("check").as_string() == "map_kv_mapped");
    CHECK(rule_text(foreign).find("send text from sender " + b) != std::string::npos);
    // text output: the action and the rule's line
    const auto t = la::test::run_cli(
        {"policy", "--report", out.string(), "--request", request(d300, a, 0, 0.0, {m300})});
    REQUIRE(t.code == 0);
    CHECK(t.out.rfind("relay_through_map " + m300 + " (rule ", 0) == 0);
  }

  SECTION("every audit request through --requests reproduces report.json's policy_replay") {
    // one request per (item, seed) and sender arm, with the features the records carry
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<const la::trial_record*>> unit;
    for (const auto& x : recs) unit[{x.item, x.seed}].push_back(&x);
    std::string lines;
    std::vector<std::pair<const std::vector<const la::trial_record*>*, const la::trial_record*>> asked;
    for (const auto& u : unit)
      for (const auto* s : u.second) {
        if (s->arm_kind != "kv_full" && s->arm_kind != "drifted" && s->arm_kind != "cross_model") continue;
        std::vector<std::string> maps;
        for (const auto* m : u.second)
          if (m->arm_kind == "kv_mapped" && m->sender_fingerprint == s->sender_fingerprint)
            maps.push_back(m->map);
        // needs_document from the regime: need and stale need A's document
        lines += request(s->sender_fingerprint, s->receiver_fingerprint,
                         static_cast<int>(*s->covariate_value("cache_age_versions")),
                         *s->covariate_value("prompt_overlap"), maps,
                         s->regime == "need" || s->regime == "stale") +
                 "\n";
        asked.emplace_back(&u.second, s);
      }
    const auto file = base / "requests.jsonl";
    write_text(file, lines);
    const auto j = la::test::ok_json({"policy", "--report", report, "--requests", file.string(), "--json"});
    const auto& ds = j.at("decisions").as_array();
    REQUIRE(ds.size() == asked.size());
    std::size_t relayed = 0, correct = 0, resolved = 0;
    for (std::size_t i = 0; i < ds.size(); ++i) {
      const std::string action = ds[i].at("action").as_string();
      const auto& [u, s] = asked[i];
      const la::trial_record* answer = nullptr;
      for (const auto* x : *u) {
        if (action == "relay" && x == s) answer = x;
        if (action == "text" && x->arm_kind == "text_full") answer = x;
        if (action == "no_communication" && x->arm_kind == "no_comm") answer = x;
        if (action == "relay_through_map" && x->arm_kind == "kv_mapped" &&
            x->map == ds[i].at("map").as_string() && x->sender_fingerprint == s->sender_fingerprint)
          answer = x;
      }
      relayed += action == "relay" || action == "relay_through_map" ? 1 : 0;
      if (answer == nullptr) continue;
      ++resolved;
      correct += answer->correct ? 1 : 0;
    }
    const auto& rep = doc.at("decision").at("policy_replay");
    INFO(la::write_json(rep));
    CHECK(rep.at("requests").as_number() == static_cast<double>(ds.size()));
    CHECK(rep.at("relayed").as_number() == static_cast<double>(relayed));
    CHECK(rep.at("resolved").as_number() == static_cast<double>(resolved));
    CHECK(rep.at("correct").as_number() == static_cast<double>(correct));
    CHECK(rep.at("relay_share").as_number() ==
          Approx(static_cast<double>(relayed) / static_cast<double>(ds.size())).epsilon(1e-12));
    CHECK(relayed > 0);
    CHECK(relayed < ds.size());
  }

  SECTION("diff reads the rules: a changed action is a removed and an added rule") {
    const auto same = la::test::ok_json({"diff", report, report, "--json"});
    CHECK(same.at("rules").at("removed").as_array().empty());
    CHECK(same.at("rules").at("added").as_array().empty());
    la::json_value edited = doc;
    la::json_value dec = doc.at("decision");
    la::json_value rs = dec.at("rules");
    REQUIRE(rs.as_array()[0].at("rests_on").at("check").as_string() == "freshness");
    rs.as_array()[0].set("action", "relay");
    dec.set("rules", std::move(rs));
    edited.set("decision", std::move(dec));
    const auto after = base / "relay_stale.json";
    write_text(after, la::write_json(edited));
    const auto d = la::test::ok_json({"diff", report, after.string(), "--json"});
    REQUIRE(d.at("rules").at("removed").as_array().size() == 1);
    CHECK(d.at("rules").at("removed").at(0).as_string() == "cache_age_versions >= 1 -> text");
    CHECK(d.at("rules").at("added").at(0).as_string() == "cache_age_versions >= 1 -> relay");
    rs = edited.at("decision").at("rules");
    rs.as_array()[1].set("action", "teleport");
    dec = edited.at("decision");
    dec.set("rules", std::move(rs));
    edited.set("decision", std::move(dec));
    write_text(after, la::write_json(edited));
    la::test::expect_one_line_error(la::test::run_cli({"diff", report, after.string()}),
                                    "field 'decision.rules[1].action' is an unknown action 'teleport'");
  }

  SECTION("bad input exits 2 naming the option, file, line or field") {
    la::test::expect_one_line_error(
        la::test::run_cli({"policy", "--report", report, "--request", R"({"cache_age_version": 1})"}),
        "field 'request.cache_age_version'");
    la::test::expect_one_line_error(
        la::test::run_cli({"policy", "--report", report, "--request", R"({"sender_fingerprint": "x"})"}),
        "field 'request.cache_age_versions' is missing");
    la::test::expect_one_line_error(la::test::run_cli({"policy", "--report", report, "--request", "{"}),
                                    "--request: not a JSON object");
    la::test::expect_one_line_error(la::test::run_cli({"policy", "--report", report}), "one of --request");
    la::test::expect_one_line_error(la::test::run_cli({"policy", "--request", "{}"}), "--report");
    const auto bad_lines = base / "bad.jsonl";
    write_text(bad_lines, request(a, a, 0, 0.0, {}) + "\n{\"prompt_overlap\": 3}\n");
    la::test::expect_one_line_error(
        la::test::run_cli({"policy", "--report", report, "--requests", bad_lines.string()}),
        "line 2: field 'request.prompt_overlap'");
    la::json_value edited = doc;
    la::json_value dec = doc.at("decision");
    la::json_value rs = dec.at("rules");
    rs.as_array()[0].set("action", "teleport");
    dec.set("rules", std::move(rs));
    edited.set("decision", std::move(dec));
    const auto bad_report = base / "bad_report.json";
    write_text(bad_report, la::write_json(edited));
    la::test::expect_one_line_error(la::test::run_cli({"policy", "--report", bad_report.string(), "--request",
                                                       request(a, a, 0, 0.0, {})}),
                                    "field 'decision.rules[0].action' is an unknown action 'teleport'");
  }
}
