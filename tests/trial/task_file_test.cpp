// SPDX-License-Identifier: MIT
// Task files (trial/task_file.hpp, docs/tasks.md): the reader's file:line:field errors, the writer's
// round trip, the checks against an engine (tokenizer, vocabulary, context), text scoring, and the
// one path of the built-in audit: the organism's items written as a task file and read back give
// the trial tasks of make_organism_task, and a driver run on either gives identical records.
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial/driver.hpp>
#include <latentaudit/trial/task_file.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/common.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;

task_file read_text(const std::string& text, const task_file_limits& lim = {}) {
  std::istringstream in(text);
  return read_task_stream(in, "t.jsonl", lim);
}

// The message of what `f` throws (corrupt_data), or "" when it does not throw.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

// A byte-level codec: id = byte value + 2 (0 = BOS, 1 unused), vocabulary 258.
text_codec byte_codec() {
  text_codec c;
  c.encode = [](std::string_view s) {
    std::vector<token_id> v;
    for (unsigned char ch : s) v.push_back(static_cast<token_id>(ch) + 2);
    return v;
  };
  c.decode = [](std::span<const token_id> ids) {
    std::string s;
    for (auto x : ids)
      if (x >= 2) s.push_back(static_cast<char>(x - 2));
    return s;
  };
  c.bos = 0;
  return c;
}

// Records without timings (which differ run to run).
std::string task_timeless(trial_record r) {
  r.latency = {};
  r.latency_repeats_s.clear();
  return record_to_line(r);
}

}  // namespace

TEST_CASE("task_file: the reader's errors name file, line and field", "[task_file]") {
  const std::pair<std::string, std::string> cases[] = {
      {"{\"id\": \"a\", \"document_tokens\": [1, 2], \"query_tokens\": [3]}\n", "t.jsonl:1:answers: missing"},
      {"\n{\"id\": \"a\", \"document_tokens\": [1], \"query_tokens\": [3], \"answers\": []}\n",
       "t.jsonl:2:answers: is empty"},
      {"{\"id\": \"a\", \"document_tokens\": [1], \"query_tokens\": [3], \"answers\": [[4]]\n",
       "t.jsonl:1:(json): "},
      {"{\"id\": \"a\", \"document\": \"x\", \"document_tokens\": [1], \"query_tokens\": [3], \"answers\": "
       "[[4]]}\n",
       "t.jsonl:1:document: give either"},
      {"{\"id\": \"a\", \"document_tokens\": [1, -4], \"query_tokens\": [3], \"answers\": [[4]]}\n",
       "t.jsonl:1:document_tokens: holds -4"},
      {"{\"id\": \"a\", \"query_tokens\": [3], \"answers\": [[4]]}\n", "t.jsonl:1:document: missing"},
      {"{\"id\": \"a\", \"document_tokens\": [1], \"query_tokens\": [3], \"answers\": [[4]]}\n"
       "{\"id\": \"a\", \"document_tokens\": [1], \"query_tokens\": [3], \"answers\": [[4]]}\n",
       "t.jsonl:2:id: 'a' repeats"},
      {"{\"id\": \"a\", \"document_tokens\": [1], \"query_tokens\": [3], \"answers\": [[4]], \"regime\": "
       "\"x\"}\n",
       "t.jsonl:1:regime: must be one of"},
      {"{\"id\": \"a\", \"document_tokens\": [1], \"answers\": [[4]], \"covariates\": {\"len\": [1]}}\n",
       "t.jsonl:1:covariates.len: must be a number or a label"},
      {"{\"id\": \"a\", \"document_tokens\": [1], \"queries\": [{\"query_tokens\": [2]}]}\n",
       "t.jsonl:1:queries[0].answers: missing"},
      {"{\"id\": \"a\", \"document_tokens\": [1], \"query_tokens\": [3], \"answers\": [[4]]}\n"
       "{\"latentaudit_tasks\": 1}\n",
       "t.jsonl:2:latentaudit_tasks: the header must be the file's first line"},
      {"{\"latentaudit_tasks\": 1, \"scoring\": \"fuzzy\"}\n", "t.jsonl:1:scoring: must be one of"},
      {"[1, 2]\n", "t.jsonl:1:(line): must be a JSON object"},
  };
  for (const auto& [text, want] : cases) {
    INFO(text);
    const std::string& input = text;  // clang 14 does not capture structured bindings
    const auto e = error_of([&] { (void)read_text(input); });
    CHECK(e.rfind(want, 0) == 0);
    CHECK(e.find('\n') == std::string::npos);
  }
  // An oversize line is refused without reading it whole.
  const std::string big = "{\"id\": \"a\", \"document\": \"" + std::string(5000, 'x') + "\"}\n";
  CHECK(error_of([&] {
          (void)read_text(big, {.max_line_bytes = 1000});
        }).rfind("t.jsonl:1:(line): is longer than 1000 bytes", 0) == 0);
}

TEST_CASE("task_file: what every record carries (id, covariates, extra fields) fits a record line",
          "[task_file]") {
  const std::string big(300000, 'x');  // over the 256 KiB bound, under the 4 MiB line bound
  const std::string rest = "\"document\": \"d\", \"query\": \"q\", \"answers\": [\"a\"]";
  const std::string bound = "262144 bytes of JSON, which every record of the task carries";
  CHECK(
      error_of([&] {
        (void)read_text("{\"id\": \"" + big + "\", " + rest + "}\n");
      }).rfind("t.jsonl:1:id: brings the task's id, covariates and other fields to more than " + bound, 0) ==
      0);
  CHECK(error_of([&] {
          (void)read_text("{\"id\": \"a\", \"covariates\": {\"lab\": \"" + big + "\"}, " + rest + "}\n");
        }).rfind("t.jsonl:1:covariates.lab: brings", 0) == 0);
  CHECK(error_of([&] {
          (void)read_text("\n{\"id\": \"a\", \"source\": {\"text\": \"" + big + "\"}, " + rest + "}\n");
        }).find("t.jsonl:2:source: brings") != std::string::npos);
  // Several fields that only together pass the bound: the one that crosses it is named.
  const std::string half(140000, 'y');
  CHECK(error_of([&] {
          (void)read_text("{\"id\": \"a\", \"f1\": \"" + half + "\", \"f2\": \"" + half + "\", " + rest +
                          "}\n");
        }).rfind("t.jsonl:1:f2: brings", 0) == 0);
  // Query-level labels count once per query (a record carries one query).
  CHECK(error_of([&] {
          (void)read_text(
              "{\"id\": \"a\", \"document\": \"d\", \"queries\": [{\"query\": \"q\", "
              "\"answers\": [\"a\"], \"covariates\": {\"l\": \"" +
              big + "\"}}]}\n");
        }).rfind("t.jsonl:1:queries[0].covariates.l: brings", 0) == 0);
  CHECK_NOTHROW(read_text("{\"id\": \"a\", \"f1\": \"" + half + "\", " + rest + "}\n"));
}

TEST_CASE("task_file: fields, extra fields and several queries survive the writer", "[task_file]") {
  const std::string text =
      "{\"latentaudit_tasks\": 1, \"scoring\": \"normalized\", \"max_answer_tokens\": 12}\n"
      "{\"id\": 7, \"document\": \"Paris is in France.\", \"prompt\": \"Q:\", \"query\": \"capital?\", "
      "\"answers\": [\"Paris\", \"paris, france\"], \"covariates\": {\"len\": 19, \"domain\": \"geo\"}, "
      "\"source\": {\"dataset\": \"mine\", \"row\": 3}, \"instruction\": \"Summarize.\"}\n"
      "\r\n"
      "{\"id\": \"b\", \"document_tokens\": [0, 5, 6], \"queries\": [{\"query_tokens\": [7], \"answers\": "
      "[[5]], "
      "\"covariates\": {\"pos\": 0}}, {\"query_tokens\": [8], \"answers\": [[6], [6, 6]], \"covariates\": "
      "{\"pos\": "
      "1}}], \"budget_cuts\": [1, 2, 3], \"regime\": \"no_need\"}\n";
  const auto f = read_text(text);
  REQUIRE(f.tasks.size() == 2);
  CHECK(f.header.scoring == task_scoring::normalized);
  CHECK(f.header.max_answer_tokens == 12);
  const auto& a = f.tasks[0];
  CHECK(a.id == "7");
  CHECK(a.line == 2);
  CHECK(*a.document.text == "Paris is in France.");
  CHECK(a.covariates.size() == 1);
  CHECK(a.labels.size() == 1);
  CHECK(a.labels[0].value == "geo");
  CHECK(a.extra.find("source") != nullptr);
  CHECK(*a.instruction.text == "Summarize.");
  const auto& b = f.tasks[1];
  CHECK(b.line == 4);
  CHECK(b.queries.size() == 2);
  CHECK(b.regime == task_regime::no_need);
  CHECK(b.queries[1].covariates[0].name == "pos");
  // Written and read back: the same tasks, line by line.
  std::string written = task_header_line(f.header) + "\n";
  for (const auto& t : f.tasks) written += task_entry_line(t) + "\n";
  const auto g = read_text(written);
  REQUIRE(g.tasks.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) CHECK(task_entry_line(g.tasks[i]) == task_entry_line(f.tasks[i]));
  CHECK(task_header_line(g.header) == task_header_line(f.header));
}

TEST_CASE("task_file: checks against the engine before any trial", "[task_file]") {
  const std::string text_task =
      "{\"id\": \"a\", \"document\": \"abc\", \"query\": \"q\", \"answers\": [\"b\"]}\n";
  // A text task on an engine without a tokenizer.
  CHECK(error_of([&] {
          task_file_source(read_text(text_task), {}, {.vocab_size = 300});
        }).rfind("t.jsonl:1:document: is text, but the engine has no tokenizer", 0) == 0);
  // Token ids outside the vocabulary.
  const std::string tok =
      "{\"id\": \"a\", \"document_tokens\": [0, 1, 99], \"query_tokens\": [3], \"answers\": [[4]]}\n";
  CHECK(error_of([&] {
          task_file_source(read_text(tok), {}, {.vocab_size = 50});
        }).rfind("t.jsonl:1:document_tokens: holds token 99, outside the engine's vocabulary [0, 50)", 0) ==
        0);
  const std::string ans =
      "{\"id\": \"a\", \"document_tokens\": [0], \"query_tokens\": [3], \"answers\": [[4], [60]]}\n";
  CHECK(error_of([&] {
          task_file_source(read_text(ans), {}, {.vocab_size = 50});
        }).rfind("t.jsonl:1:answers[1]: holds token 60", 0) == 0);
  // A document longer than the context (with B's prompt, query and answer).
  CHECK(
      error_of([&] { task_file_source(read_text(tok), {}, {.vocab_size = 100, .max_context = 4}); })
          .rfind(
              "t.jsonl:1:document_tokens: the document (3 tokens) with B's prompt, query and answer needs 5 "
              "positions, longer than the engine's context of 4",
              0) == 0);
  CHECK_NOTHROW(task_file_source(read_text(tok), {}, {.vocab_size = 100, .max_context = 5}));
  // Text scoring without a tokenizer; a regex that does not compile; budget cuts past the document.
  CHECK(error_of([&] {
          task_file_source(read_text(tok), {}, {.vocab_size = 100}, task_scoring::contains);
        }).rfind("t.jsonl:1:answers[0]: scoring 'contains' compares text", 0) == 0);
  CHECK(error_of([&] {
          task_file_source(read_text(text_task), byte_codec(), {.vocab_size = 300}, task_scoring::regex);
          task_file_source(
              read_text("{\"id\": \"a\", \"document\": \"x\", \"query\": \"q\", \"answers\": [\"(b\"]}"),
              byte_codec(), {.vocab_size = 300}, task_scoring::regex);
        }).rfind("t.jsonl:1:answers[0]: is not a valid RE2 regex", 0) == 0);
  CHECK(error_of([&] {
          task_file_source(read_text("{\"id\": \"a\", \"document_tokens\": [0, 1], \"query_tokens\": [3], "
                                     "\"answers\": [[4]], \"budget_cuts\": [1, 3]}"),
                           {}, {.vocab_size = 100});
        }).rfind("t.jsonl:1:budget_cuts: a cut of 3 tokens lies past", 0) == 0);
  // A token task without budget cuts has no text_budget units.
  const task_file_source s(read_text(tok), {}, {.vocab_size = 100});
  CHECK_FALSE(s.has_budget_units());
  CHECK_THROWS_AS(s.task(0, 0, 1).document_prefix_pairs(1), invalid_argument);
}

TEST_CASE("task_file: regex answers are bounded RE2 patterns (no recursion, no stack overflow)",
          "[task_file]") {
  auto source = [](const std::string& pattern) {
    json_value j = json_value::object();
    j.set("id", "a");
    j.set("document", "x");
    j.set("query", "q");
    j.set("answers", json_value(json_value::array_type{json_value(pattern)}));
    return task_file_source(read_text(write_json(j) + "\n"), byte_codec(), {.vocab_size = 300},
                            task_scoring::regex);
  };
  // 120 KB of nesting: refused by its length before any regex engine sees it.
  const std::string deep = std::string(60000, '(') + "a" + std::string(60000, ')');
  CHECK(error_of([&] {
          (void)source(deep);
        }).rfind("t.jsonl:1:answers[0]: is a pattern of 120001 bytes, longer than the limit of 4096", 0) ==
        0);
  // Nesting within the length limit: RE2 parses it without recursion (accepted or refused, never a crash).
  const std::string nested = std::string(2000, '(') + "a" + std::string(2000, ')');
  try {
    const auto s = source(nested);
    CHECK(s.task(0, 0, 1).check_answer(byte_codec().encode("xa")).correct);
  } catch (const corrupt_data& e) {
    CHECK(std::string(e.what()).rfind("t.jsonl:1:answers[0]: is not a valid RE2 regex", 0) == 0);
  }
  // A program larger than RE2's memory bound is refused, naming the field.
  CHECK(error_of([&] { (void)source("((((a{100}){100}){100}){100})"); }).rfind("t.jsonl:1:answers[0]: ", 0) ==
        0);
  // RE2 syntax: classes, alternation, anchors; no backreferences.
  const auto s = source("^(yes|y)\\b|[0-9]{2,}");
  const auto t = s.task(0, 0, 1);
  CHECK(t.check_answer(byte_codec().encode("yes sir")).correct);
  CHECK(t.check_answer(byte_codec().encode("it is 42")).correct);
  CHECK_FALSE(t.check_answer(byte_codec().encode("no 4")).correct);
  CHECK(error_of([&] {
          (void)source("(a)\\1");
        }).rfind("t.jsonl:1:answers[0]: is not a valid RE2 regex", 0) == 0);
}

TEST_CASE("task_file: text tasks through a codec, scored exact, normalized, contains, regex", "[task_file]") {
  const std::string text =
      "{\"id\": \"a\", \"document\": \"Paris is in France.\", \"prompt\": \"Q: \", \"query\": \"capital?\", "
      "\"answers\": [\"The Paris\", \"paris, france\"], \"covariates\": {\"domain\": \"geo\", \"len\": 3}, "
      "\"row\": 17}\n";
  const auto codec = byte_codec();
  auto ids = [&](std::string_view s) { return codec.encode(s); };
  const task_file_source exact(read_text(text), codec, {.vocab_size = 258});
  CHECK(exact.scoring() == task_scoring::exact);
  CHECK(exact.has_text());
  const auto t = exact.task(0, 0, 1);
  CHECK(t.document.front() == 0);  // the codec's BOS
  CHECK(t.document.size() == 1 + std::string("Paris is in France.").size());
  CHECK(t.no_relay_prefix == std::vector<token_id>{0});
  CHECK(t.own_prompt == ids("Q: "));
  CHECK(t.answer == ids(" The Paris"));  // the query's continuation after lm-eval's delimiter (a space)
  CHECK(t.answer_tokens() == std::string(" paris, france").size() + 4);  // the longest answer + 4
  CHECK(t.labels.size() == 1);
  CHECK(t.id == "a");
  CHECK(t.extra.find("row") != nullptr);
  CHECK(t.check_answer(ids(" The Paris \nmore")).correct);  // first line, trimmed
  CHECK_FALSE(t.check_answer(ids("the paris")).correct);
  CHECK(t.check_answer(ids("the paris")).text == "the paris");
  const task_file_source norm(read_text(text), codec, {.vocab_size = 258}, task_scoring::normalized);
  CHECK(norm.task(0, 0, 1).check_answer(ids("paris")).correct);  // articles and case dropped
  CHECK(norm.task(0, 0, 1).check_answer(ids("Paris France!")).correct);
  CHECK_FALSE(norm.task(0, 0, 1).check_answer(ids("Paris, Texas")).correct);
  const task_file_source cont(read_text(text), codec, {.vocab_size = 258}, task_scoring::contains);
  CHECK(cont.task(0, 0, 1).check_answer(ids("It is Paris.")).correct);
  CHECK_FALSE(cont.task(0, 0, 1).check_answer(ids("Lyon")).correct);
  const task_file_source rx(
      read_text(
          "{\"id\": \"a\", \"document\": \"x\", \"query\": \"q\", \"answers\": [\"^\\\\s*4[0-9]\\\\b\"]}"),
      codec, {.vocab_size = 258}, task_scoring::regex);
  const auto rt = rx.task(0, 0, 1);
  CHECK(rt.answer.empty());
  CHECK(rt.answer_tokens() == 16);
  CHECK(rt.check_answer(ids(" 42 apples")).correct);
  CHECK_FALSE(rt.check_answer(ids("142")).correct);
  // Token-exact with several accepted answers: B's first |a| tokens.
  const task_file_source tk(
      read_text(
          "{\"id\": \"a\", \"document_tokens\": [0], \"query_tokens\": [3], \"answers\": [[4, 5], [6]]}"),
      {}, {.vocab_size = 10});
  const auto kt = tk.task(0, 0, 1);
  CHECK(kt.answer_tokens() == 2);
  CHECK(kt.check_answer(std::vector<token_id>{6, 9}).correct);
  CHECK(kt.check_answer(std::vector<token_id>{4, 5}).correct);
  CHECK_FALSE(kt.check_answer(std::vector<token_id>{4, 6}).correct);
}

TEST_CASE("task_file: the organism's items as a task file give make_organism_task's tasks", "[task_file]") {
  const auto fmt = organism_format::load(models + "organism-a");
  const organism_task_options o{
      .seed = 3, .no_need_fraction = 0.3, .stale_fraction = 0.1, .conflict_fraction = 0.1};
  const std::uint64_t items = 40;
  const auto built_in = organism_task_file(fmt, o, items);
  const auto path = std::filesystem::temp_directory_path() /
                    ("latentaudit_task_file_test." + std::to_string(::getpid()) + ".jsonl");
  write_task_file(path, built_in);
  const auto read = read_task_file(path);
  std::filesystem::remove(path);
  const task_file_source a(built_in, {}, {.vocab_size = fmt.vocab_size});
  const task_file_source b(read, {}, {.vocab_size = fmt.vocab_size});
  CHECK(a.has_budget_units());
  CHECK(b.has_budget_units());
  std::set<task_regime> regimes;
  for (std::uint64_t i = 0; i < items; ++i)
    for (std::uint64_t s = 0; s < 3; ++s) {
      const auto want = make_organism_task(fmt, o, i, s);
      for (const task_file_source* src : {&a, &b}) {
        const auto t = src->task(i, s, o.seed);
        REQUIRE(t.document == want.document);
        CHECK(t.text_document == want.text_document);
        CHECK(t.own_prompt == want.own_prompt);
        CHECK(t.no_relay_prefix == want.no_relay_prefix);
        CHECK(t.query == want.query);
        CHECK(t.answer == want.answer);
        CHECK(t.stale_answer == want.stale_answer);
        CHECK(t.regime == want.regime);
        CHECK(t.answer_tokens() == 1);
        REQUIRE(t.covariates.size() == want.covariates.size());
        for (std::size_t k = 0; k < t.covariates.size(); ++k) {
          CHECK(t.covariates[k].name == want.covariates[k].name);
          CHECK(t.covariates[k].value == want.covariates[k].value);
        }
        for (std::int32_t k = 0; k <= fmt.max_pairs + 1; ++k)
          CHECK(t.document_prefix_pairs(k) == want.document_prefix_pairs(k));
      }
      regimes.insert(want.regime);
    }
  CHECK(regimes.size() == 4);
}

TEST_CASE("task_file: a driver run on the written file gives the built-in path's records", "[task_file]") {
  auto engine = reference_cpu_engine::load(models + "organism-a", 1);
  const auto fmt = organism_format::load(models + "organism-a");
  trial_design d;
  d.items = 6;
  d.seeds = 2;
  d.seed = 11;
  d.timing_repeats = 0;
  d.arms = {parse_arm("no_comm"), parse_arm("text_full"), parse_arm("text_budget_1"), parse_arm("kv_full")};
  const organism_task_options o{
      .seed = d.seed, .no_need_fraction = 0.3, .stale_fraction = 0.1, .conflict_fraction = 0.1};
  const auto built_in = organism_task_file(fmt, o, d.items);
  std::ostringstream text;
  text << task_header_line(built_in.header) << "\n";
  for (const auto& t : built_in.tasks) text << task_entry_line(t) << "\n";
  std::vector<std::string> runs[2];
  for (int k = 0; k < 2; ++k) {
    const task_file_source src(k == 0 ? built_in : read_text(text.str()), {},
                               {.vocab_size = engine.info().vocab_size});
    trial_driver<reference_cpu_engine> driver(engine);
    driver.run(
        d, [&](std::uint64_t item, std::uint64_t s) { return src.task(item, s, d.seed); },
        [&](const trial_record& r) { runs[k].push_back(task_timeless(r)); });
  }
  REQUIRE(runs[0].size() == d.trials());
  CHECK(runs[0] == runs[1]);
  // The records carry the task's id and the query asked.
  const auto r0 = record_from_json(parse_json(runs[0][0]));
  CHECK(r0.task_id.rfind("organism-", 0) == 0);
  CHECK(r0.query_index.has_value());
}

TEST_CASE("task_file: covariates and extra fields of a token-id task file reach the records", "[task_file]") {
  auto engine = reference_cpu_engine::load(models + "organism-a", 1);
  const auto fmt = organism_format::load(models + "organism-a");
  // Two hand-written recall tasks in the organism's tokens.
  const auto k = fmt.key_first, v = fmt.value_first;
  std::ostringstream f;
  f << "{\"latentaudit_tasks\": 1, \"bos\": " << fmt.bos << "}\n";
  for (int i = 0; i < 2; ++i)
    f << "{\"id\": \"t" << i << "\", \"document_tokens\": [" << fmt.bos << ", " << k + i << ", " << v + 3 + i
      << ", " << k + 5 << ", " << v + 1 << "], \"query_tokens\": [" << fmt.sep << ", " << k + i
      << "], \"answers\": [[" << v + 3 + i << "]], \"covariates\": {\"domain\": \"" << (i == 0 ? "x" : "y")
      << "\", \"hardness\": " << 0.5 * i << "}, \"origin\": \"hand\"}\n";
  const task_file_source src(
      read_text(f.str()), {},
      {.vocab_size = engine.info().vocab_size, .max_context = engine.info().max_context});
  trial_design d;
  d.items = 2;
  d.seeds = 1;
  d.timing_repeats = 0;
  d.arms = {parse_arm("no_comm"), parse_arm("kv_full")};
  std::vector<trial_record> recs;
  trial_driver<reference_cpu_engine> driver(engine);
  driver.run(
      d, [&](std::uint64_t item, std::uint64_t s) { return src.task(item, s, d.seed); },
      [&](const trial_record& r) { recs.push_back(record_from_json(parse_json(record_to_line(r)))); });
  REQUIRE(recs.size() == 4);
  for (const auto& r : recs) {
    REQUIRE(r.covariate_labels.size() == 1);
    CHECK(r.covariate_labels[0].name == "domain");
    CHECK(r.covariate_labels[0].value == (r.item == 0 ? "x" : "y"));
    CHECK(r.covariate_value("hardness") == 0.5 * static_cast<double>(r.item));
    CHECK(r.task_id == std::string("t").append(std::to_string(
                           r.item)));  // append: GCC 12 -O3 false -Wstringop-overflow on "t" + ...
    REQUIRE(r.task_fields.is_object());
    CHECK(r.task_fields.find("origin")->as_string() == "hand");
    if (r.arm == "kv_full") CHECK(r.correct);  // the organism recalls a pair it read
  }
}
