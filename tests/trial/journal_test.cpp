// SPDX-License-Identifier: MIT
// The record journal: one line per record, torn last lines dropped on resume, keys never
// duplicated, a different design refused; records round-trip through JSON.
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <fstream>

#if defined(__unix__)
#include <sys/wait.h>
#include <unistd.h>
#endif

using namespace latentaudit;

namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("latentaudit_journal_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p;
}

trial_record sample(std::uint64_t item, std::string arm) {
  trial_record r;
  r.item = item;
  r.seed = 2;
  r.arm = std::move(arm);
  r.arm_kind = "kv_full";
  r.regime = "need";
  r.correct = true;
  r.answer_logprob = -0.125;
  r.bytes = 11320;
  r.latency.b_prefill_s = 1.5e-4;
  r.attention_mass = 0.97;
  r.covariates = {{"doc_tokens", 33}, {"pairs", 16}};
  r.policy = json_value::object_type{};
  r.policy.set("policy", "kv_full");
  return r;
}

}  // namespace

TEST_CASE("journal: records round-trip through their JSON line") {
  const auto r = sample(4, "kv_full");
  const auto back = record_from_json(parse_json(record_to_line(r)));
  CHECK(record_to_line(back) == record_to_line(r));
  // The direct line writer and the JSON tree agree byte for byte.
  std::string tree;
  append_json(tree, record_to_json(r), {.indent = -1});
  CHECK(record_to_line(r) == tree);
  CHECK(back.covariate_value("pairs") == 16.0);
  // Records from other stacks: only item, seed, arm, correct are required.
  const auto minimal = record_from_json(parse_json(R"({"item": 1, "seed": 0, "arm": "text", "correct": 1})"));
  CHECK(minimal.arm_kind == "text");
  CHECK_FALSE(minimal.attention_mass.has_value());
  CHECK_THROWS_WITH(record_from_json(parse_json(R"({"item": 1, "seed": 0, "arm": "x"})")),
                    Catch::Contains("correct"));
  CHECK_THROWS_WITH(record_from_json(parse_json(R"({"item": -1, "seed": 0, "arm": "x", "correct": 0})")),
                    Catch::Contains("item"));
  CHECK_THROWS_WITH(record_from_json(parse_json(R"({"item": 1, "seed": 0, "arm": "x", "correct": 0.5})")),
                    Catch::Contains("correct"));
  CHECK_THROWS_WITH(
      record_from_json(parse_json(R"({"item": 1, "seed": 0, "arm": "x", "correct": 0, "b_prefill_s": -1})")),
      Catch::Contains("b_prefill_s"));
  auto bad = sample(1, "x");
  bad.answer_logprob = std::nan("");
  CHECK_THROWS_WITH(record_to_json(bad), Catch::Contains("answer_logprob"));
  CHECK_THROWS_WITH(record_to_line(bad), Catch::Contains("answer_logprob"));
  auto twice = sample(1, "x");
  twice.covariates.push_back({"pairs", 3});  // a line with a repeated key would not read back
  CHECK_THROWS_WITH(record_to_line(twice),
                    Catch::Contains("record.covariates") && Catch::Contains("'pairs' repeats"));
}

TEST_CASE("journal: append, resume after a torn line, refuse duplicates and other designs") {
  const auto dir = fresh_dir("resume");
  trial_design d{.items = 3, .seeds = 1};
  {
    record_journal j(dir, d, false);
    j.append(sample(0, "kv_full"));
    j.append(sample(1, "kv_full"));
    CHECK_THROWS_WITH(j.append(sample(1, "kv_full")), Catch::Contains("already journaled"));
  }
  // A crash in the middle of a write leaves a torn last line.
  {
    std::ofstream f(dir / "records.jsonl", std::ios::app | std::ios::binary);
    f << R"({"item": 2, "seed": 2, "arm": "kv_fu)";
  }
  CHECK_THROWS_AS(read_records(dir / "records.jsonl"), corrupt_data);
  CHECK_THROWS_WITH(record_journal(dir, d, false), Catch::Contains("already holds records"));
  {
    record_journal j(dir, d, true);
    CHECK(j.dropped_torn_line());
    CHECK(j.done().size() == 2);
    j.append(sample(2, "kv_full"));
  }
  const auto all = read_records(dir / "records.jsonl");
  REQUIRE(all.size() == 3);
  CHECK(all[2].item == 2);
  trial_design other = d;
  other.seed = 99;
  CHECK_THROWS_WITH(record_journal(dir, other, true), Catch::Contains("design"));
  // A corrupt line in the middle is an error naming the line.
  {
    std::ofstream f(dir / "records.jsonl", std::ios::app | std::ios::binary);
    f << "{not json}\n" << record_to_line(sample(5, "kv_full")) << "\n";
  }
  CHECK_THROWS_WITH(read_records(dir / "records.jsonl"), Catch::Contains("records.jsonl:4"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("journal: the zero padding a crash leaves is skipped, resumed over and cut on close") {
  const auto dir = fresh_dir("padding");
  const auto file = dir / "records.jsonl";
  trial_design d{.items = 4, .seeds = 1};
  const std::string l0 = record_to_line(sample(0, "kv_full")) + "\n",
                    l1 = record_to_line(sample(1, "kv_full")) + "\n";
#if defined(__unix__)
  // A child appends two records and dies without closing the journal (as kill -9 would).
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    record_journal j(dir, d, false);
    j.append(sample(0, "kv_full"));
    j.append(sample(1, "kv_full"));
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
#else
  {
    std::ofstream f(file, std::ios::binary);
    f << l0 << l1 << std::string(4096, '\0');
  }
#endif
  const auto size = std::filesystem::file_size(file);
  INFO("file size after the crash " << size << ", records " << l0.size() + l1.size() << " bytes");
  CHECK(size >= l0.size() + l1.size());
  {
    std::ifstream f(file, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK(text.substr(0, l0.size() + l1.size()) == l0 + l1);
    CHECK(text.find_first_not_of('\0', l0.size() + l1.size()) == std::string::npos);
  }
  CHECK(read_records(file).size() == 2);  // the padding is not a record (nor a torn line)
  CHECK_THROWS_WITH(record_journal(dir, d, false), Catch::Contains("already holds records"));
  {
    record_journal j(dir, d, true, /*durable=*/true);
    CHECK_FALSE(j.dropped_torn_line());
    CHECK(j.done().size() == 2);
    CHECK(j.size_bytes() == l0.size() + l1.size());
    j.append(sample(2, "kv_full"));
    j.close();
    j.close();  // idempotent
    CHECK_THROWS_WITH(j.append(sample(3, "kv_full")), Catch::Contains("closed"));
  }
  const auto all = read_records(file);
  REQUIRE(all.size() == 3);
  CHECK(all[2].item == 2);
  CHECK(std::filesystem::file_size(file) ==
        l0.size() + l1.size() + record_to_line(sample(2, "kv_full")).size() + 1);
  // A file of padding only holds no records: a fresh journal may use the directory.
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(file, std::ios::binary);
    f << std::string(1000, '\0');
  }
  {
    record_journal j(dir, d, false);
    CHECK(j.done().empty());
    for (std::uint64_t i = 0; i < 4; ++i) j.append(sample(i, "kv_full"));
  }
  CHECK(read_records(file).size() == 4);
  std::filesystem::remove_all(dir);
}

TEST_CASE("journal: many records cross the mapping's growth steps intact") {
  const auto dir = fresh_dir("growth");
  trial_design d{.items = 5000, .seeds = 1};
  std::uint64_t bytes = 0;
  {
    record_journal j(dir, d, false);
    for (std::uint64_t i = 0; i < 5000; ++i) {  // ~2.5 MB: two growths past the first 1 MiB
      auto r = sample(i, "kv_full");
      bytes += record_to_line(r).size() + 1;
      j.append(r);
    }
    CHECK(j.size_bytes() == bytes);
  }
  CHECK(std::filesystem::file_size(dir / "records.jsonl") == bytes);
  const auto all = read_records(dir / "records.jsonl");
  REQUIRE(all.size() == 5000);
  for (std::uint64_t i = 0; i < 5000; ++i) CHECK(all[i].item == i);
  std::filesystem::remove_all(dir);
}
