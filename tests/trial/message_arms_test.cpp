// SPDX-License-Identifier: MIT
// The message arms (text_message_<k>, kv_message, kv_message_only): parsing, the records' message
// fields and their reader, and — on organism-a, which writes out the pairs it read after its
// RECITE instruction (tools/organism/train.py) — the acceptance facts of issue 17 on a short
// fixed-seed design: text_message_k accuracy rises with k and reaches text_full at large k, and
// relaying A's cache of the document and its message is at least as good as a short text message;
// and the report's message family on planted records.
#include <latentaudit/report/audit.hpp>
#include <latentaudit/trial/arm.hpp>
#include <latentaudit/trial/message.hpp>
#include <latentaudit/trial/reference_driver.hpp>  // trial_driver<reference_cpu_engine>, compiled once
#include <latentaudit/trial/task.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>

using namespace latentaudit;

namespace {
const std::string organism = std::string(LATENTAUDIT_SOURCE_DIR).append("/models/organism-a");
}  // namespace

TEST_CASE("message arms: names parse to kinds, budgets and labels") {
  const auto t = parse_arm("text_message_8");
  CHECK(t.kind == arm_kind::text_message);
  CHECK(t.budget == 8);
  CHECK(t.label == "text_message_8");
  CHECK(!t.relays_kv());
  CHECK(t.uses_message());
  const auto k = parse_arm("kv_message");
  CHECK(k.kind == arm_kind::kv_message);
  CHECK(k.budget == default_message_budget);
  CHECK(k.relays_kv());
  CHECK(parse_arm("kv_message_12").budget == 12);
  CHECK(parse_arm("kv_message_12").kind == arm_kind::kv_message);
  const auto o = parse_arm("kv_message_only");
  CHECK(o.kind == arm_kind::kv_message_only);
  CHECK(o.policy.mode == position_mode::preserve);
  const auto r = parse_arm("kv_message_only@rebase");
  CHECK(r.kind == arm_kind::kv_message_only);
  CHECK(r.policy.mode == position_mode::rebase_contiguous);
  CHECK(r.label == "kv_message_only@rebase");
  CHECK(arm_kind_name(arm_kind::kv_message_only) == "kv_message_only");
  CHECK(!parse_arm("kv_full").uses_message());
  CHECK_THROWS_AS(parse_arm("text_message_0"), invalid_argument);
  CHECK_THROWS_AS(parse_arm("text_message_x"), invalid_argument);
  CHECK_THROWS_AS(parse_arm("text_message_4@rebase"), invalid_argument);
}

TEST_CASE(
    "message arms: records carry message_tokens, message and message_length, and the reader checks them") {
  trial_record r;
  r.arm = "text_message_4";
  r.arm_kind = "text_message";
  r.message_tokens = {5, 40, 7};
  r.message_length = 3;
  const std::string line = record_to_line(r);
  CHECK(line.find("\"message_tokens\":[5,40,7],\"message\":null,\"message_length\":3") != std::string::npos);
  const auto back = record_from_json(parse_json(line));
  CHECK(back.message_tokens == r.message_tokens);
  CHECK(back.message_length == 3);
  CHECK(!back.message);
  r.message = "k5 v40 k7";
  CHECK(record_from_json(parse_json(record_to_line(r))).message == r.message);
  trial_record plain;  // other arms write none of the fields
  plain.arm = "kv_full";
  CHECK(record_to_line(plain).find("message") == std::string::npos);
  r.message_length = 2;
  CHECK_THROWS_AS(record_to_line(r), invalid_argument);
  auto j = parse_json(record_to_line(plain));
  j.set("message_length", 2.0);
  j.set("message_tokens", json_value::array_type{json_value(1.0)});
  CHECK_THROWS_AS(record_from_json(j), corrupt_data);
}

TEST_CASE("message arms: the organism's task.json names its instruction and stop token") {
  const auto m = organism_message_options(organism);
  REQUIRE(m.has_value());
  CHECK(m->instruction == std::vector<token_id>{2});
  CHECK(m->stop == std::vector<token_id>{1});
  CHECK(!m->detokenize);
}

TEST_CASE(
    "message arms: on organism-a, text messages rise with k to text_full and kv_message beats short ones") {
  auto engine = reference_cpu_engine::load(organism);
  const auto fmt = organism_format::load(organism);
  trial_driver<reference_cpu_engine> drv(engine);
  trial_design d{.seed = 17, .items = 48, .seeds = 1, .arms = {no_comm_arm(), text_full_arm()}};
  for (int k : {4, 8, 16, 32}) d.arms.push_back(text_message_arm(k));
  d.arms.push_back(kv_message_arm());
  d.arms.push_back(kv_message_only_arm());
  // without message options and a task instruction the message arms are refused
  const organism_task_options to{.seed = d.seed, .no_need_fraction = 0.0};
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); };
  CHECK_THROWS_AS(drv.run(d, tasks, [](const trial_record&) {}), invalid_argument);
  drv.set_message_options(*organism_message_options(organism));
  std::vector<trial_record> recs;
  drv.run(d, tasks, [&](const trial_record& r) { recs.push_back(r); });
  REQUIRE(recs.size() == d.trials());
  std::map<std::string, double> acc;
  std::map<std::uint64_t, std::vector<token_id>> longest;  // item -> kv_message's message
  std::size_t exact = 0;
  double length = 0;  // kv_message's message length (its budget, 64, is never the limit on the organism)
  for (const auto& r : recs) {
    acc[r.arm] += r.correct ? 1.0 / static_cast<double>(d.items) : 0.0;
    if (r.arm == "kv_message") longest[r.item] = r.message_tokens;
  }
  for (const auto& r : recs) {
    const bool msg =
        r.arm_kind == "text_message" || r.arm_kind == "kv_message" || r.arm_kind == "kv_message_only";
    CHECK(r.message_length.has_value() == msg);
    if (!msg) continue;
    CHECK(!r.message);  // no tokenizer
    CHECK(*r.message_length <= static_cast<std::int64_t>(*r.budget));
    // every arm of a unit relays a prefix of the one message A wrote
    const auto& full = longest[r.item];
    REQUIRE(r.message_tokens.size() <= full.size());
    CHECK(std::equal(r.message_tokens.begin(), r.message_tokens.end(), full.begin()));
    if (r.arm == "kv_message") {
      const auto t = make_organism_task(fmt, to, r.item, r.seed);
      exact += std::vector<token_id>(t.document.begin() + 1, t.document.end()) == r.message_tokens;
      length += static_cast<double>(r.message_tokens.size()) / static_cast<double>(d.items);
      CHECK(r.relay_tokens == static_cast<std::int64_t>(t.document.size()) + 1 + *r.message_length);
    }
    if (r.arm == "kv_message_only") CHECK(r.relay_tokens == *r.message_length);
    if (r.arm_kind == "text_message") CHECK(r.relay_tokens == 1 + *r.message_length);  // BOS + message
  }
  std::string table;
  for (const auto& [arm, a] : acc) table += arm + " " + std::to_string(a) + "; ";
  INFO("accuracy: " << table);
  INFO("messages reciting the whole document: " << exact << " / " << d.items << ", mean length " << length);
  // A writes: since its second recite run organism-a recites every held-out document word for word
  // (models/organism-a/README.md), so kv_message's message (budget 64) is the whole document.
  CHECK(length > 8);
  CHECK(exact == d.items);
  // text_message_k rises with k (up to 1 item of noise), by more than 20 points from k = 4 to
  // k = 32, and reaches text_full at k = 32 (the organism's longest document is 32 tokens), within
  // the audit's default margin (0.05).
  CHECK(acc["text_message_8"] >= acc["text_message_4"] - 1.0 / 48);
  CHECK(acc["text_message_16"] >= acc["text_message_8"] - 1.0 / 48);
  CHECK(acc["text_message_32"] >= acc["text_message_16"] - 1.0 / 48);
  CHECK(acc["text_message_32"] - acc["text_message_4"] > 0.2);
  CHECK(acc["text_message_32"] <= acc["text_full"]);
  CHECK(acc["text_message_32"] >= acc["text_full"] - 0.05);
  // need regime: A's cache of document + message is at least as good as a short text message
  CHECK(acc["kv_message"] >= acc["text_message_4"]);
  CHECK(acc["kv_message"] >= acc["text_message_8"]);
  CHECK(acc["kv_message"] - acc["no_comm"] > 0.5);
}

TEST_CASE("message arms: the report's message family decides kv_message against each text message") {
  // 200 need items, one seed: text_message_4 right on every third item, text_message_32 and
  // kv_message always right, no_comm never, text_full always (the positive control passes).
  std::vector<trial_record> recs;
  auto add = [&](std::uint64_t item, const char* arm, const char* kind, bool correct,
                 std::optional<double> k) {
    trial_record r;
    r.item = item;
    r.arm = arm;
    r.arm_kind = kind;
    r.regime = "need";
    r.correct = correct;
    r.budget = k;
    if (k) {
      r.message_tokens.assign(static_cast<std::size_t>(*k), 4);
      r.message_length = static_cast<std::int64_t>(*k);
    }
    recs.push_back(r);
  };
  for (std::uint64_t i = 0; i < 200; ++i) {
    add(i, "no_comm", "no_comm", false, std::nullopt);
    add(i, "text_full", "text_full", true, std::nullopt);
    add(i, "text_message_4", "text_message", i % 3 == 0, 4.0);
    add(i, "text_message_32", "text_message", true, 32.0);
    add(i, "kv_message", "kv_message", true, 64.0);
  }
  const auto core = analyse_records(recs, audit_options{.bootstrap_replicates = 199});
  REQUIRE(core.messages.contrasts.size() == 2);
  CHECK(core.messages.contrasts[0].k == 4);
  CHECK(core.messages.contrasts[0].mean_message_length == 4.0);
  CHECK(core.messages.contrasts[0].kv_vs_text.estimate == Approx(133.0 / 200.0));
  CHECK(!core.messages.contrasts[0].kv_only_vs_text.estimable());  // no kv_message_only arm
  std::map<std::string, verdict> v;
  for (const auto& f : core.findings) v[f.id] = f.answer;
  CHECK(v.at("message.kv_vs_text_message.k4.need") == verdict::yes);
  CHECK(v.at("message.kv_vs_text_message.k32.need") == verdict::no);
  // records without message arms give no message finding
  std::erase_if(recs, [](const trial_record& r) { return r.message_length.has_value(); });
  for (const auto& f : analyse_records(recs, audit_options{.bootstrap_replicates = 199}).findings)
    CHECK(f.id.rfind("message.", 0) != 0);
}

TEST_CASE("message arms: an empty message relays A's document and instruction (kv_message) or nothing") {
  // Every token stops A's message, so A writes none: kv_message relays the cache of the document
  // and the instruction, kv_message_only and text_message relay nothing but B's own prefix (as
  // text). (Until the arm plans, an empty kv_message sent a text frame that its receiver refused.)
  auto engine = reference_cpu_engine::load(organism);
  const auto fmt = organism_format::load(organism);
  trial_driver<reference_cpu_engine> drv(engine);
  auto opts = *organism_message_options(organism);
  opts.stop.clear();
  for (token_id t = 0; t < engine.info().vocab_size; ++t) opts.stop.push_back(t);
  drv.set_message_options(opts);
  trial_design d{.seed = 5, .items = 6, .seeds = 1};
  d.arms = {no_comm_arm(), text_message_arm(4), kv_message_arm(), kv_message_only_arm()};
  const organism_task_options to{.seed = d.seed, .no_need_fraction = 0.0};
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); };
  std::vector<trial_record> recs;
  drv.run(d, tasks, [&](const trial_record& r) { recs.push_back(r); });
  REQUIRE(recs.size() == d.trials());
  for (const auto& r : recs) {
    INFO(r.arm << " item " << r.item);
    if (r.arm == "no_comm") continue;
    REQUIRE(r.message_length.has_value());
    CHECK(*r.message_length == 0);
    const auto t = tasks(r.item, r.seed);
    if (r.arm == "kv_message") {
      CHECK(r.relay_tokens == static_cast<std::int64_t>(t.document.size() + opts.instruction.size()));
      CHECK(r.policy.is_object());
    } else {  // text: B's own prefix only
      CHECK(r.relay_tokens == static_cast<std::int64_t>(t.no_relay_prefix.size()));
    }
  }
}
