// SPDX-License-Identifier: MIT
// The finding catalog (report/finding_catalog.hpp): one row per kind, ids produced from kinds and
// typed parameters, the checks that read each kind, and docs/audit-report.md checked against it (every
// row's id is documented; every finding id the document names is a catalog row's), so the document
// and the catalog cannot drift apart.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "latentaudit/report/report.hpp"

namespace la = latentaudit;

namespace {

// The regular expression of the ids a row's pattern produces, also matching the pattern's own
// placeholders (as the document writes them).
std::string catalog_id_regex(const la::finding_kind_info& row) {
  std::string re;
  std::string_view s = row.pattern;
  auto take = [&s](std::string_view token) {
    if (!s.starts_with(token)) return false;
    s.remove_prefix(token.size());
    return true;
  };
  while (!s.empty()) {
    if (take("<arm>")) {
      re += la::arm_kind_name(row.subject);
    } else if (take("<k>")) {
      re += "([0-9]+|<k>)";
    } else if (take("<regime>")) {
      re += "([a-z_]+|<regime>)";
    } else if (take("<sender>")) {
      re += "([A-Za-z0-9_]+|<sender>)";
    } else if (take("<link>")) {
      re += "([A-Za-z0-9_]*|<link>)";  // empty: a finding of no link
    } else if (take("[")) {
      re += "(\\[?";
    } else if (take("]")) {
      re += "\\]?)?";
    } else {
      if (s.front() == '.') re += '\\';
      re.push_back(s.front());
      s.remove_prefix(1);
    }
  }
  return re;
}

}  // namespace

TEST_CASE("finding catalog: one row per kind, ids from kinds and parameters", "[report][catalog]") {
  std::set<std::string> ids;
  for (const auto& row : la::finding_catalog()) {
    INFO(row.pattern);
    CHECK(la::finding_info(row.kind).pattern == row.pattern);
    CHECK(!row.family.empty());
    CHECK(row.pattern.starts_with(row.family));  // the family is the id's first part
    CHECK(!row.method_short.empty());
    CHECK(row.arm_count >= 1);
    CHECK(row.arm_count <= row.arms.size());
    if (!row.question.empty()) CHECK((!row.yes.empty() && !row.no.empty()));
    CHECK_FALSE((row.demonstration && row.gated));
    // a row the positive control gates is downstream of it; the control itself is not gated
    if (row.kind == la::finding_kind::need_text_beats_no_comm) CHECK_FALSE(row.gated);
    const std::string id = la::finding_id(row.kind);
    CHECK(ids.insert(id).second);  // distinct kinds, distinct ids
    CHECK(std::regex_match(id, std::regex(catalog_id_regex(row))));
  }
  CHECK(la::finding_info(la::finding_kind::unknown).pattern.empty());
  CHECK(la::finding_id(la::finding_kind::unknown).empty());
  // the parameters a pattern names, and only those
  using K = la::finding_kind;
  CHECK(la::finding_id(K::need_pairing_placebo_beats_no_comm) ==
        "need." + std::string(la::arm_kind_name(la::pairing_placebo_kind())) + "_beats_no_comm");
  CHECK(la::finding_id(K::need_cross_model_beats_no_comm, {.link = "pcie4"}) ==
        "need.cross_model_beats_no_comm");
  CHECK(la::finding_id(K::message_kv_vs_text_message, {.budget = 8, .regime = "no_need"}) ==
        "message.kv_vs_text_message.k8.no_need");
  CHECK(la::finding_id(K::message_kv_vs_text_message) == "message.kv_vs_text_message");  // not estimable
  CHECK(la::finding_id(K::mapped_retention) == "mapped.retention");
  CHECK(la::finding_id(K::mapped_retention, {.sender = "drift_300"}) == "mapped.drift_300.retention");
  CHECK(la::finding_id(K::cost_relay_pays_on_link, {.link = "custom:30:5"}) ==
        "cost.relay_pays_on_custom_30_5");
  const la::finding f = la::make_finding({K::stale_kv_worse_than_text}, la::verdict::yes);
  CHECK(f.id == "stale.kv_worse_than_text");
  CHECK(f.key.kind == K::stale_kv_worse_than_text);
  CHECK(la::finding_to_json(f).at("id").as_string() == f.id);
}

TEST_CASE("finding catalog: make_finding's doc example, as written there", "[report][catalog]") {
  using namespace latentaudit;
  finding f = make_finding({finding_kind::cost_relay_pays_on_link, {.link = "pcie4"}}, verdict::yes);
  // f.id == "cost.relay_pays_on_pcie4"
  f.estimate = 0.012;
  f.ci_low = 0.004;
  f.ci_high = 0.020;
  f.n = 200;
  CHECK(f.id == "cost.relay_pays_on_pcie4");
  CHECK(f.key == finding_key{finding_kind::cost_relay_pays_on_link, {.link = "pcie4"}});
  CHECK(f.answer == verdict::yes);
  const json_value j = finding_to_json(f);
  CHECK(j.at("id").as_string() == "cost.relay_pays_on_pcie4");
  CHECK(j.at("n").as_number() == 200.0);
}

TEST_CASE("finding catalog: the checks name the kinds they read", "[report][catalog]") {
  using K = la::finding_kind;
  CHECK(la::finding_kinds_read_by("positive_control") == std::vector<K>{K::need_text_beats_no_comm});
  CHECK(la::finding_kinds_read_by("dependency") ==
        std::vector<K>{K::need_kv_beats_no_comm, K::need_kv_carries_information,
                       K::need_kv_raises_answer_probability, K::need_kv_raises_continuation_probability});
  CHECK(la::finding_kinds_read_by("homogeneity") == std::vector<K>{K::need_cross_model_beats_no_comm});
  CHECK(la::finding_kinds_read_by("cross_model") == std::vector<K>{K::need_cross_model_beats_no_comm});
  CHECK(la::finding_kinds_read_by("value") == std::vector<K>{K::need_kv_noninferior_to_text});
  CHECK(la::finding_kinds_read_by("cost") == std::vector<K>{K::cost_relay_pays_on_link});
  CHECK(la::finding_kinds_read_by("drift") == std::vector<K>{K::drift_tolerance_steps});
  const std::vector<K> family = {K::no_need_kv_changes_accuracy, K::stale_kv_worse_than_text,
                                 K::conflict_kv_worse_than_no_comm, K::mapped_noninferior_to_same_model};
  for (const char* check : {"no_need_harm", "freshness", "conflict", "map_kv_mapped"}) {
    INFO(check);
    CHECK(la::finding_kinds_read_by(check) == family);
  }
  CHECK(la::finding_kinds_read_by("monitor").empty());
  // a decision's checklist carries the kinds and names their findings by id
  const auto fs = std::vector<la::finding>{la::make_finding({K::need_text_beats_no_comm}, la::verdict::yes),
                                           la::make_finding({K::need_kv_beats_no_comm}, la::verdict::yes)};
  const auto d = la::decide(fs, std::vector<la::trial_record>{});
  for (const auto& c : d.checklist) {
    INFO(c.name);
    CHECK(c.kinds == la::finding_kinds_read_by(c.name));
    if (c.name == "dependency") CHECK(c.findings == std::vector<std::string>{"need.kv_beats_no_comm"});
    if (c.name == "cost") CHECK(c.findings == std::vector<std::string>{"cost.relay_pays_on_" + d.link});
  }
  CHECK(std::string(la::decision_verdict_name(d.verdict)) == "inconclusive");
  CHECK(std::string(la::decision_verdict_name(la::decision_verdict::relay_with_conditions)) ==
        "relay with conditions");
  CHECK(la::is_relay_verdict(la::decision_verdict::relay_unverified));
  CHECK_FALSE(la::is_relay_verdict(la::decision_verdict::text));
}

TEST_CASE("finding catalog: docs/audit-report.md lists every kind and no other finding id",
          "[report][catalog]") {
  std::ifstream in(std::filesystem::path(LATENTAUDIT_SOURCE_DIR) / "docs" / "audit-report.md");
  const std::string doc{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  REQUIRE(!doc.empty());
  // every row's id as the document writes it, in backticks: the pattern with only `<arm>` replaced
  // (the parameters a finding gives stay placeholders: `<k>`, `<regime>`, `[.<sender>]`, `<link>`)
  for (const auto& row : la::finding_catalog()) {
    std::string documented(row.pattern);
    if (const auto at = documented.find("<arm>"); at != std::string::npos)
      documented.replace(at, 5, std::string(la::arm_kind_name(row.subject)));
    INFO(documented);
    CHECK(doc.find("`" + documented + "`") != std::string::npos);
  }
  // every backticked finding id of the document is a row's (families from the catalog; `need.*`
  // wildcards and file names are not ids)
  std::set<std::string> families;
  for (const auto& row : la::finding_catalog()) families.insert(std::string(row.family));
  const std::regex token("`([a-z_]+)([.\\[][^` ]*)`");
  std::size_t checked = 0;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), token); it != std::sregex_iterator(); ++it) {
    const std::string family = (*it)[1].str();
    const std::string id = family + (*it)[2].str();
    if (!families.contains(family) || id.find('*') != std::string::npos || id.ends_with(".hpp") ||
        id.ends_with(".md"))
      continue;
    INFO(id);
    bool known = false;
    for (const auto& row : la::finding_catalog())
      known = known || std::regex_match(id, std::regex(catalog_id_regex(row)));
    CHECK(known);
    ++checked;
  }
  CHECK(checked >= la::finding_catalog().size());
}
