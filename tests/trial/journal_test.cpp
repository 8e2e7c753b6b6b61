// SPDX-License-Identifier: MIT
// The record journal: one line per record, torn last lines dropped on resume, keys never
// duplicated, a different design refused; records round-trip through JSON.
#include <latentaudit/dist/shard.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#if defined(__unix__)
#include <sys/stat.h>
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
  r.seed = 0;
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
  // the reader gives back every field the writer was given (not only the same line again)
  CHECK(back.item == 4);
  CHECK(back.seed == 0);
  CHECK(back.arm == "kv_full");
  CHECK(back.arm_kind == "kv_full");
  CHECK(back.regime == "need");
  CHECK(back.correct);
  CHECK(back.answer_logprob == -0.125);
  CHECK(back.bytes == 11320);
  CHECK(back.latency.b_prefill_s == 1.5e-4);
  CHECK(back.attention_mass == 0.97);
  CHECK(back.covariate_value("doc_tokens") == 33.0);
  CHECK(back.policy.at("policy").as_string() == "kv_full");
  CHECK(record_to_line(back) == record_to_line(r));
  // The direct line writer and the JSON tree agree byte for byte.
  std::string tree;
  append_json(tree, parse_json(record_to_line(r)), {.indent = -1});
  CHECK(record_to_line(r) == tree);
  CHECK(back.covariate_value("pairs") == 16.0);
  // Records from other stacks: only item, seed, arm, correct are required.
  const auto minimal = record_from_json(parse_json(R"({"item": 1, "seed": 0, "arm": "text", "correct": 1})"));
  CHECK(minimal.arm_kind.empty());                  // "text" names no arm: no kind (the report warns)
  CHECK_FALSE(minimal.answer_logprob.has_value());  // not measured: null, never probability 1
  CHECK(record_to_line(minimal).find("\"answer_logprob\":null") != std::string::npos);
  CHECK_THROWS_WITH(record_from_json(parse_json(
                        R"({"item": 1, "seed": 0, "arm": "x", "correct": 0, "answer_logprob": 0.5})")),
                    Catch::Contains("answer_logprob"));
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
  CHECK_THROWS_WITH(parse_json(record_to_line(bad)), Catch::Contains("answer_logprob"));
  CHECK_THROWS_WITH(record_to_line(bad), Catch::Contains("answer_logprob"));
  auto twice = sample(1, "x");
  twice.covariates.push_back({"pairs", 3});  // a line with a repeated key would not read back
  CHECK_THROWS_WITH(record_to_line(twice),
                    Catch::Contains("record.covariates") && Catch::Contains("'pairs' repeats"));
}

TEST_CASE("records: a file without arm_kind is classified by its labels, through the reader", "[records]") {
  // docs/records.md: arm_kind is optional; the reader resolves it once from the label (issue 53).
  const auto dir = fresh_dir("labels");
  std::filesystem::create_directories(dir);
  const auto path = dir / "records.jsonl";
  {
    std::ofstream f(path, std::ios::binary);
    f << R"({"item":0,"seed":0,"arm":"kv_noise_0.5","correct":1})" << '\n'
      << R"({"item":0,"seed":0,"arm":"text_budget_4","correct":0})" << '\n'
      << R"({"item":0,"seed":0,"arm":"kv_drift_300","correct":1})" << '\n'
      << R"({"item":0,"seed":0,"arm":"kv_last_half@rebase","correct":1})" << '\n'
      << R"({"item":0,"seed":0,"arm":"no_comm","correct":0})" << '\n'
      << R"({"item":0,"seed":0,"arm":"kv_ful","correct":1})" << '\n'
      << R"({"item":0,"seed":0,"arm":"mine","arm_kind":"text_full","correct":1})" << '\n';
  }
  const auto rs = read_records(path);
  REQUIRE(rs.size() == 7u);
  CHECK(rs[0].arm_kind == "kv_policy");
  CHECK(rs[1].arm_kind == "text_budget");
  CHECK(rs[2].arm_kind == "drifted");
  CHECK(rs[3].arm_kind == "kv_policy");  // a placed whole cache is a policy
  CHECK(rs[4].arm_kind == "no_comm");
  CHECK(rs[5].arm_kind.empty());         // names no arm: no kind
  CHECK(rs[6].arm_kind == "text_full");  // a field that is set wins over the label
  // the kind the reader resolved is the one every classification reads
  CHECK(record_arm_kind(rs[0].arm_kind, rs[0].arm) == arm_kind::kv_policy);
  CHECK_FALSE(record_arm_kind(rs[5].arm_kind, rs[5].arm).has_value());
  // a stream (the same reader, line by line) reads the same kinds
  std::istringstream in(R"({"item":0,"seed":0,"arm":"kv_noise_0.5","correct":1})");
  std::string line;
  std::getline(in, line);
  CHECK(record_from_json(parse_json(line), "stream:1").arm_kind == "kv_policy");
  std::filesystem::remove_all(dir);
}

TEST_CASE("records: the lint names unknown fields and arms once, with the closest name", "[records]") {
  CHECK(record_field_names().size() == 49u);  // + continuation_logprob, _tokens, _prob
  CHECK(closest_record_field("bytse") == "bytes");
  CHECK(closest_record_field("export_sec") == "export_s");
  CHECK(closest_record_field("bytes").empty());  // a field: no hint
  CHECK(closest_record_field("frobnicate").empty());
  CHECK(closest_arm_name("kv_ful") == "kv_full");
  CHECK(closest_arm_name("kv_nosie_0.5") == "kv_noise_0.5");
  CHECK(closest_arm_name("kv_ful@rebase") == "kv_full@rebase");
  CHECK(closest_arm_name("mine").empty());
  std::vector<std::string> seen;
  record_lint lint([&](const std::string& s) { seen.push_back(s); });
  {
    const record_lint_scope scope(lint);
    for (int line = 1; line <= 3; ++line)
      (void)record_from_json(parse_json(R"({"item":)" + std::to_string(line) +
                                        R"(,"seed":0,"arm":"kv_ful","correct":1,"bytse":1})"),
                             "f:" + std::to_string(line));
    (void)record_from_json(parse_json(R"({"item":1,"seed":0,"arm":"x","arm_kind":"kv_polcy","correct":1})"),
                           "f:4");
    CHECK_THROWS_WITH(
        record_from_json(parse_json(R"({"item":1,"seed":0,"arm":"no_comm","correct":1,"regime":"need"})"),
                         "f:5"),
        Catch::Contains("f:5: the arms of (item 1, seed 0) disagree on the regime") &&
            Catch::Contains("at f:1 says ''"));
  }
  REQUIRE(seen.size() == 3u);  // once per field, once per label
  CHECK(seen[0] ==
        "f:1: unknown record field 'bytse' (did you mean 'bytes'?); it is ignored (docs/records.md lists "
        "the fields)");
  CHECK(seen[1].find(
            "f:1: arm 'kv_ful' has no arm_kind and its label names no arm (did you mean 'kv_full'?)") == 0);
  CHECK(seen[2].find("f:4: arm 'x': arm_kind 'kv_polcy' names no arm kind (did you mean 'kv_policy'?)") == 0);
  CHECK(lint.warnings() == seen);
  // no scope: no lint
  (void)record_from_json(parse_json(R"({"item":9,"seed":0,"arm":"kv_ful","correct":1,"zzz":1})"), "f:6");
  CHECK(lint.warnings().size() == 3u);
}

TEST_CASE("records: record_field_names are docs/record.schema.json's properties", "[records]") {
  std::ifstream in(std::string(LATENTAUDIT_SOURCE_DIR) + "/docs/record.schema.json");
  std::stringstream text;
  text << in.rdbuf();
  const auto schema = parse_json(text.str());
  std::vector<std::string> props;
  for (const auto& [name, value] : schema.at("properties").as_object()) props.push_back(name);
  std::vector<std::string> known(record_field_names().begin(), record_field_names().end());
  std::sort(props.begin(), props.end());
  std::sort(known.begin(), known.end());
  CHECK(props == known);
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

TEST_CASE("journal: one writer per directory, the lock dies with its holder") {
  const auto dir = fresh_dir("lock");
  trial_design d{.items = 3, .seeds = 1};
  {
    record_journal j(dir, d, false);
    j.append(sample(0, "kv_full"));
    // A second journal (fresh or resumed) on the held directory is refused before it reads or
    // cuts anything, naming the holder.
    const std::string holder =
        "another audit holds " + dir.string() + " (pid " + std::to_string(::getpid()) + ")";
    CHECK_THROWS_WITH(record_journal(dir, d, true), Catch::Contains(holder));
    CHECK_THROWS_WITH(record_journal(dir, d, false), Catch::Contains(holder));
    CHECK_THROWS_WITH(directory_lock(dir), Catch::Contains(holder));
    j.append(sample(1, "kv_full"));
  }
  {  // released with the journal
    record_journal j(dir, d, true);
    CHECK(j.done().size() == 2);
  }
#if defined(__unix__)
  // A holder that dies without releasing (as kill -9) leaves nothing held.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    directory_lock held(dir);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK_NOTHROW(directory_lock(dir));
#endif
  // A lock can be taken first and handed to the journal (which keeps it).
  directory_lock lock(dir);
  record_journal j(std::move(lock), d, true);
  CHECK_FALSE(lock.held());
  CHECK_THROWS_WITH(directory_lock(dir), Catch::Contains("another audit holds"));
  j.close();
  CHECK_THROWS_WITH(directory_lock(dir), Catch::Contains("another audit holds"));  // held until destroyed
  std::filesystem::remove_all(dir);
}

TEST_CASE("journal: a resume checks the whole design identity, design.json first") {
  const auto dir = fresh_dir("identity");
  trial_design d{.items = 3, .seeds = 1};
  d.identity.model = "LlamaForCausalLM:2x2x16:00000000000000aa";
  d.identity.partner = "LlamaForCausalLM:2x2x16:00000000000000bb";
  d.identity.task_source = "organism";
  d.identity.task_hash = "1234";
  d.identity.task_options = json_value::object();
  d.identity.task_options.set("no_need_fraction", 0.5);
  {
    record_journal j(dir, d, false);
    j.append(sample(0, "kv_full"));
  }
  const auto records = dir / "records.jsonl";
  const auto before = std::filesystem::file_size(records);
  auto refused = [&](const trial_design& other, const std::string& words) {
    CHECK_THROWS_WITH(record_journal(dir, other, true), Catch::Contains(words));
    CHECK(std::filesystem::file_size(records) == before);  // nothing written or cut
  };
  trial_design m = d;
  m.identity.model = "LlamaForCausalLM:2x2x16:00000000000000cc";
  refused(m, "field 'model_fingerprint'");
  trial_design p = d;
  p.identity.partner.clear();
  refused(p, "field 'partner_fingerprint'");
  trial_design t = d;
  t.identity.task_options.set("no_need_fraction", 0.3);
  refused(t, "field 'task_options.no_need_fraction' is 0.5 in the records' design, 0.3 now");
  trial_design e = d;
  e.identity.engine = "llama.cpp";
  refused(e, "field 'engine'");
  trial_design h = d;
  h.identity.task_hash = "5678";
  refused(h, "field 'task_hash'");
  trial_design r = d;
  r.timing_repeats = 2;
  refused(r, "field 'timing_repeats'");
  // The same design resumes, and its hash is stable and differs from the others'.
  { record_journal ok(dir, d, true); }
  CHECK(d.design_hash() == trial_design(d).design_hash());
  CHECK(d.design_hash().size() == 64);
  CHECK(d.design_hash() != m.design_hash());
  CHECK(d.design_hash() != t.design_hash());
  // A record outside the design is refused on resume, naming its key.
  {
    std::ofstream f(records, std::ios::app | std::ios::binary);
    f << record_to_line(sample(9999, "kv_full")) << "\n";
  }
  CHECK_THROWS_WITH(record_journal(dir, d, true),
                    Catch::Contains("outside the design") && Catch::Contains("item 9999"));
  std::filesystem::resize_file(records, before);
  {
    std::ofstream f(records, std::ios::app | std::ios::binary);
    f << record_to_line(sample(1, "unknown_arm")) << "\n";
  }
  CHECK_THROWS_WITH(record_journal(dir, d, true), Catch::Contains("arm unknown_arm"));
  std::filesystem::resize_file(records, before);
  // A design.json of the first format (no models, task, engine) cannot vouch for a resume.
  {
    std::ofstream f(dir / "design.json", std::ios::binary | std::ios::trunc);
    f << R"({"seed": 1, "items": 3, "seeds": 1})";
  }
  CHECK_THROWS_WITH(record_journal(dir, d, true), Catch::Contains("predates"));
  // A missing design.json is named as missing, not as a different design.
  std::filesystem::remove(dir / "design.json");
  CHECK_THROWS_WITH(record_journal(dir, d, true), Catch::Contains("no design.json"));
  // A corrupt one names the file.
  {
    std::ofstream f(dir / "design.json", std::ios::binary | std::ios::trunc);
    f << "{not json";
  }
  CHECK_THROWS_WITH(record_journal(dir, d, true), Catch::Contains("design.json"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("journal: read_records streams: a huge line or zero tail is bounded, non-files are refused") {
  const auto dir = fresh_dir("stream");
  std::filesystem::create_directories(dir);
  const auto file = dir / "records.jsonl";
  const std::string l0 = record_to_line(sample(0, "kv_full")) + "\n";
  {  // a line of 3 MiB without a newline after one good record
    std::ofstream f(file, std::ios::binary);
    f << l0 << std::string(3u << 20, 'x');
  }
  CHECK_THROWS_WITH(read_records(file), Catch::Contains("records.jsonl:2") && Catch::Contains("longer than"));
  std::uint64_t torn = 0;
  CHECK_THROWS_WITH(read_records(file, &torn), Catch::Contains("longer than"));
  {  // a long zero tail (64 MiB, sparse) is padding, counted and never stored
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << l0;
  }
  std::filesystem::resize_file(file, l0.size() + (64u << 20));
  CHECK(read_records(file, &torn).size() == 1);
  CHECK(torn == l0.size());
  {  // zeros inside a line (followed by data) are not padding
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << l0 << std::string(10, '\0') << l0;
  }
  CHECK_THROWS_AS(read_records(file), corrupt_data);
  // A directory or a FIFO is refused by type, before it is opened (a FIFO without a writer
  // would block an open for reading).
  CHECK_THROWS_WITH(read_records(dir), Catch::Contains("is a directory"));
#if defined(__unix__)
  const auto fifo = dir / "fifo.jsonl";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(read_records(fifo), Catch::Contains("is a FIFO"));
#endif
  CHECK_THROWS_WITH(read_records("/dev/zero"), Catch::Contains("character device"));
  CHECK_THROWS_WITH(read_records(dir / "missing.jsonl"), Catch::Contains("cannot open"));
  // And a journal directory that is a file is refused naming it.
  CHECK_THROWS_WITH(record_journal(file, trial_design{}, false), Catch::Contains("not a directory"));
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "journal: the report's readers drop the policy on request and put a record set in run order in place") {
  const auto dir = fresh_dir("readers");
  std::filesystem::create_directories(dir);
  trial_design d;
  d.items = 6;
  d.seeds = 2;
  d.arms = {parse_arm("no_comm"), parse_arm("kv_full"), parse_arm("text_full")};
  // the records in the order a one-process run journals them: units, then each unit's arms
  std::vector<trial_record> run;
  for (const auto& [item, seed] : d.unit_order())
    for (const auto a : d.arm_order(item, seed)) {
      auto r = sample(item, d.arms[a].label);
      r.seed = seed;
      run.push_back(r);
    }
  // a file holding them reversed: read without the policy, then put in run order in place
  {
    std::ofstream f(dir / "records.jsonl");
    for (auto it = run.rbegin(); it != run.rend(); ++it) f << record_to_line(*it) << "\n";
  }
  const std::filesystem::path files[] = {dir / "records.jsonl"};
  auto kept = dist::read_records_set(files);
  auto dropped = dist::read_records_set(files, {.policy = false});
  REQUIRE(kept.size() == run.size());
  REQUIRE(dropped.size() == run.size());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    CHECK(kept[i].policy.is_object());
    CHECK(dropped[i].policy.is_null());
    dropped[i].policy = kept[i].policy;  // nothing else differs
    CHECK(record_to_line(dropped[i]) == record_to_line(kept[i]));
  }
  dist::order_as_executed(kept, d);
  REQUIRE(kept.size() == run.size());
  for (std::size_t i = 0; i < run.size(); ++i) CHECK(record_to_line(kept[i]) == record_to_line(run[i]));
  std::filesystem::remove_all(dir);
}

TEST_CASE("design.json: design_from_json reads back every design it writes and names a bad field") {
  trial_design d{.seed = 9007199254740991ull, .items = 450, .seeds = 3};  // 2^53 - 1
  d.arms = default_arms(true);
  for (const char* a : {"kv_last_half@rebase", "kv_noise_0.25", "text_message_4", "kv_mapped", "kv_drift_10",
                        "kv_mapped_drift_300", "text_budget_4", "kv_message_only"})
    if (std::none_of(d.arms.begin(), d.arms.end(), [&](const trial_arm& x) { return x.label == a; }))
      d.arms.push_back(parse_arm(a));
  d.link = find_link("rdma100");
  d.timing_repeats = 3;
  d.identity.engine = "reference";
  d.identity.engine_version = "0.1.0 (kernel avx2)";
  d.identity.model = "LlamaForCausalLM:2x2x16:4b0363948e791863";
  d.identity.task_source = "organism";
  d.identity.task_hash = std::string(64, 'c');
  d.identity.task_options = organism_task_options{.seed = 1}.to_json();
  d.identity.options = json_value::object({{"drift_senders", json_value::object({{"kv_drift_10", "x"}})}});
  const trial_design back = design_from_json(d.to_json(), "design.json");
  CHECK(back.to_json() == d.to_json());
  CHECK(back.design_hash() == d.design_hash());
  CHECK(back.seed == d.seed);
  REQUIRE(back.arms.size() == d.arms.size());
  for (std::size_t i = 0; i < d.arms.size(); ++i) CHECK(back.arms[i].kind == d.arms[i].kind);
  // each bad field is named
  auto bad = [&](const char* field, json_value v) {
    json_value j = d.to_json();
    if (v.is_null())
      std::erase_if(j.as_object(), [&](const auto& m) { return m.first == field; });
    else
      j.set(field, std::move(v));
    return j;
  };
  CHECK_THROWS_WITH(design_from_json(bad("items", json_value()), "X"), "X: field 'items' is missing");
  CHECK_THROWS_WITH(design_from_json(bad("seed", json_value(9007199254740992.0)), "X"),
                    Catch::Contains("field 'seed' must be an integer in [0, 2^53)"));
  CHECK_THROWS_WITH(design_from_json(bad("seeds", json_value(1.5)), "X"), Catch::Contains("field 'seeds'"));
  // the largest seed a design takes is the largest design.json reads back; 2^53 is refused before
  // it could share a hash with 2^53 + 1
  trial_design top = d;
  top.seed = max_exact_seed - 1;
  CHECK(design_from_json(top.to_json(), "X").seed == max_exact_seed - 1);
  top.seed = max_exact_seed;
  CHECK_THROWS_WITH(top.validate(), Catch::Contains("seed") && Catch::Contains("2^53"));
  CHECK_THROWS_WITH(design_from_json(bad("randomize_order", json_value("yes")), "X"),
                    Catch::Contains("field 'randomize_order' must be true or false"));
  CHECK_THROWS_WITH(design_from_json(bad("arms", json_value::array_type{json_value("kv_noise_x")}), "X"),
                    Catch::Contains("field 'arms' holds 'kv_noise_x', not an arm"));
  CHECK_THROWS_WITH(design_from_json(bad("arms", json_value::array_type{json_value(3.0)}), "X"),
                    Catch::Contains("field 'arms' must hold arm labels"));
  CHECK_THROWS_WITH(design_from_json(bad("arms", json_value::array_type{json_value("teleport")}), "X"),
                    Catch::Contains("holds 'teleport', not an arm"));
  CHECK_THROWS_WITH(design_from_json(bad("format", json_value(1.0)), "X"),
                    Catch::Contains("field 'format' must be 2"));
  CHECK_THROWS_WITH(design_from_json(bad("extra", json_value(1.0)), "X"),
                    Catch::Contains("not a design this version writes") && Catch::Contains("'extra'"));
  CHECK_THROWS_WITH(design_from_json(bad("items", json_value(2e7)), "X"),
                    Catch::Contains("more than 10000000"));
  CHECK_THROWS_AS(design_from_json(json_value("design"), "X"), corrupt_data);
}
