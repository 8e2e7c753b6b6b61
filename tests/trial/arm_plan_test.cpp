// SPDX-License-Identifier: MIT
// The arm's one owner (trial/arm.hpp): every arm kind has one relay plan, its family, sender,
// payload and transform are the ones the driver runs and the report groups by, kind names round
// trip, and a record's kind comes from its arm_kind field, else from the label parse_arm reads.
#include <latentaudit/trial/arm.hpp>
#include <latentaudit/trial/design.hpp>

#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "support/kv_fixtures.hpp"

using namespace latentaudit;

TEST_CASE("arm plans: one plan per kind, with the family, sender and payload each kind runs") {
  std::set<std::string_view> names;
  for (const arm_kind k : all_arm_kinds) {
    INFO(arm_kind_name(k));
    CHECK(names.insert(arm_kind_name(k)).second);
    CHECK(parse_arm_kind(arm_kind_name(k)) == k);
    const arm_plan p = plan_of(k);
    CHECK((p.sender == arm_sender::none) == (p.payload == arm_payload::nothing));
    CHECK((p.family == arm_family::control) == (k == arm_kind::no_comm));
    // text families send text, every other relay sends cache rows
    CHECK((p.family == arm_family::text) ==
          (p.payload == arm_payload::document_text || p.payload == arm_payload::document_pairs ||
           p.payload == arm_payload::message_text));
    CHECK(p.relays_kv() ==
          (p.family == arm_family::kv || p.family == arm_family::placebo || p.family == arm_family::foreign));
    // a foreign cache is force-imported, unless a map puts it in B's shape (then its fingerprint is checked)
    CHECK(p.forced_import == (p.family == arm_family::foreign && p.transform != arm_transform::mapped));
    CHECK(p.placebo.has_value() == (p.family == arm_family::placebo));
    CHECK(p.placebo.has_value() ==
          (p.transform == arm_transform::other_item || p.transform == arm_transform::placebo));
    CHECK((p.transform == arm_transform::none) == !p.relays_kv());
    CHECK((p.transform == arm_transform::mapped) == (k == arm_kind::kv_mapped));
  }
  CHECK(names.size() == std::size(all_arm_kinds));
  CHECK(!parse_arm_kind("kv_noise").has_value());
  CHECK(!parse_arm_kind("").has_value());
  CHECK(plan_of(arm_kind::cross_model).sender == arm_sender::partner);
  CHECK(plan_of(arm_kind::drifted).sender == arm_sender::named);
  CHECK(plan_of(arm_kind::kv_message_only).payload == arm_payload::message_rows);
  CHECK(plan_of(arm_kind::kv_message).payload == arm_payload::message_cache);
  CHECK(plan_of(arm_kind::zeroed).placebo == placebo_kind::zeroed);
  CHECK(plan_of(arm_kind::random).placebo == placebo_kind::random);
  CHECK(plan_of(pairing_placebo_kind()).placebo == placebo_kind::deranged);
  // a placebo's record names the arm kind it stands for (the records' policy.placebo), and a placebo
  // made from A's cache is made by the one dispatch the driver calls (cache_placebo): same shape and
  // positions, other values, reproducible from (seed, item)
  const kv_block real = test::random_block(6, dtype::f32, 5);
  for (const arm_kind k : all_arm_kinds) {
    const arm_plan p = plan_of(k);
    if (!p.placebo) continue;
    INFO(arm_kind_name(k));
    CHECK(placebo_kind_name(*p.placebo) == arm_kind_name(k));
    if (p.transform != arm_transform::placebo) {
      CHECK_THROWS_AS(cache_placebo(*p.placebo, real, 1, 0), invalid_argument);
      continue;
    }
    const kv_block c = cache_placebo(*p.placebo, real, 1, 0);
    CHECK(c.n_tokens() == real.n_tokens());
    CHECK(std::equal(c.positions().begin(), c.positions().end(), real.positions().begin()));
    CHECK_FALSE(c == real);
    CHECK(cache_placebo(*p.placebo, real, 1, 0) == c);
  }
  // the roles the report reads: one arm each
  std::set<std::string_view> roles;
  for (const arm_kind k : all_arm_kinds)
    if (plan_of(k).role) roles.insert(arm_kind_name(k));
  CHECK(roles == std::set<std::string_view>{"no_comm", "text_full", "kv_full", "deranged", "zeroed", "random",
                                            "cross_model"});
}

TEST_CASE("arm plans: the parse forms follow the plan (position modes, budgets, the items an arm needs)") {
  for (const arm_kind k : all_arm_kinds) {
    INFO(arm_kind_name(k));
    const std::string base = k == arm_kind::kv_policy      ? "kv_noise_0.5"
                             : k == arm_kind::text_budget  ? "text_budget_4"
                             : k == arm_kind::drifted      ? "kv_drift_10"
                             : k == arm_kind::text_message ? "text_message_8"
                             : k == arm_kind::kv_mapped    ? "kv_mapped_drift_300"
                                                           : std::string(arm_kind_name(k));
    const trial_arm a = parse_arm(base);
    CHECK(a.kind == k);
    if (a.plan().placeable) {
      CHECK(parse_arm(base + "@rebase").policy.mode == position_mode::rebase_contiguous);
    } else {
      CHECK_THROWS_AS(parse_arm(base + "@rebase"), invalid_argument);
    }
    CHECK(a.plan().budgeted == (a.budget > 0));
  }
  trial_design d{.items = 1, .seeds = 1, .arms = {no_comm_arm(), deranged_arm()}};
  CHECK_THROWS_WITH(d.validate(), Catch::Contains("needs at least 2 items"));
  d.items = 2;
  CHECK_NOTHROW(d.validate());
}

TEST_CASE("arm plans: a record's kind is its arm_kind, else the kind its label parses to") {
  CHECK(record_arm_kind("kv_policy", "anything at all") == arm_kind::kv_policy);
  CHECK(record_arm_kind("", "kv_drift_300") == arm_kind::drifted);
  CHECK(record_arm_kind("", "text_budget_4") == arm_kind::text_budget);
  CHECK(record_arm_kind("", "kv_full@rebase") == arm_kind::kv_policy);
  CHECK(record_arm_kind("", "kv_message_only") == arm_kind::kv_message_only);
  CHECK(!record_arm_kind("", "my_relay").has_value());          // another stack's label, no kind
  CHECK(!record_arm_kind("kv_custom", "kv_full").has_value());  // a kind latentaudit does not know
  CHECK(plan_of(arm_kind::deranged).family == arm_family::placebo);
}

TEST_CASE("arm plans: kv_mapped names its sender, its unmapped arm and (for a drifted sender) its steps") {
  const trial_arm p = parse_arm("kv_mapped");
  CHECK(p.kind == arm_kind::kv_mapped);
  CHECK(p.sender == partner_sender);
  CHECK(p.needs_partner());
  CHECK(!p.drift_steps.has_value());
  CHECK(unmapped_arm_label(p) == std::optional<std::string>("cross_model"));
  CHECK(p.plan().sender == arm_sender::named);
  CHECK(!p.plan().forced_import);
  const trial_arm d = parse_arm("kv_mapped_drift_300");
  CHECK(d.label == "kv_mapped_drift_300");
  CHECK(d.sender == "drift_300");
  CHECK(!d.needs_partner());
  CHECK(d.drift_steps == 300);
  CHECK(unmapped_arm_label(d) == std::optional<std::string>("kv_drift_300"));
  const trial_arm o = parse_arm("kv_mapped_other_model");
  CHECK(o.sender == "other_model");
  CHECK(!unmapped_arm_label(o).has_value());  // no unmapped arm is known for a custom sender
  CHECK(!unmapped_arm_label(parse_arm("kv_full")).has_value());
  CHECK(kv_mapped_arm().label == "kv_mapped");
  CHECK_THROWS_WITH(parse_arm("kv_mapped_partner"), Catch::Contains("kv_mapped_<sender>"));
  CHECK_THROWS_WITH(parse_arm("kv_mapped_"), Catch::Contains("kv_mapped_<sender>"));
  CHECK_THROWS_WITH(parse_arm("kv_mapped_Big"), Catch::Contains("kv_mapped_<sender>"));
  CHECK_THROWS_AS(parse_arm("kv_mapped@rebase"), invalid_argument);
  CHECK(record_arm_kind("", "kv_mapped_drift_5") == arm_kind::kv_mapped);
  CHECK(plan_of(arm_kind::kv_mapped).family == arm_family::foreign);
}
