// SPDX-License-Identifier: MIT
// Text at field boundaries and the continuation endpoint on a real SentencePiece vocabulary
// (issue 50 items 2-3, docs/tasks.md): stories260K through llama.cpp, its GGUF's own tokenizer, on
// the held-out story tasks of tests/golden/real_models/story_tasks.jsonl. [real_models] tests skip
// by name without the models folder (tests/support/real_models.hpp).
#include <latentaudit/engine/llama_cpp.hpp>
#include <latentaudit/engine/llama_cpp_tokenizer.hpp>
#include <latentaudit/engine/tokenizer_json.hpp>
#include <latentaudit/report.hpp>

#include <fmt/format.h>

#include "support/catch.hpp"
#include "support/real_models.hpp"
#include "support/story_tasks.hpp"

using namespace latentaudit;

namespace {

// The audit's codec over a llama.cpp tokenizer (as the CLI's tokenizer_select.hpp builds it).
text_codec llama_codec(const llama_cpp_tokenizer& t) {
  text_codec c;
  c.encode = [&t](std::string_view s) { return t.encode(s); };
  c.decode = [&t](std::span<const token_id> ids) {
    std::size_t n = 0;
    while (n < ids.size() && !t.is_end_of_generation(ids[n])) ++n;
    return t.decode(ids.first(n));
  };
  c.bos = t.bos();
  return c;
}

}  // namespace

TEST_CASE("llama.cpp story tasks: fields tokenized as one text, no dummy prefix at a boundary",
          "[engine][llama_cpp][real_models][joint_text]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  const auto tok = llama_cpp_tokenizer::load(m.stories260k());
  const auto codec = llama_codec(tok);
  // The issue's example: on its own, " Max" starts with the dummy-prefix token 410 (▁).
  CHECK(tok.encode(" Max") == std::vector<token_id>{410, 392, 412, 444});
  std::istringstream in(R"({"id": "a", "document": "Lily had a dog.", "query": " She called her dog,",)"
                        R"( "answers": ["Max"], "continuation": "Max. Max was happy."})");
  const task_file_source src(read_task_stream(in, "t.jsonl"), codec, {.vocab_size = 512});
  const auto t = src.task(0, 0, 1);
  CHECK(t.answer == std::vector<token_id>{392, 412, 444});  // "▁Max" as in "her dog, Max"
  std::vector<token_id> ctx = t.document;
  ctx.insert(ctx.end(), t.query.begin(), t.query.end());
  std::vector<token_id> want = tok.encode("Lily had a dog. She called her dog,");
  want.insert(want.begin(), tok.bos());
  CHECK(ctx == want);
  CHECK(std::count(t.query.begin(), t.query.end(), 410) == 0);
}

TEST_CASE("llama.cpp story tasks: the continuation endpoint, kv_full = text_full, in-context answer",
          "[engine][llama_cpp][real_models][joint_text]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  auto engine = llama_cpp_engine::load(m.stories260k(), {.n_ctx = 1024, .max_context = 512, .n_seq_max = 6});
  const auto tok = engine.tokenizer();
  const auto r = test::audit_story_tasks(engine, llama_codec(tok));
  INFO("records " << r.records << ", in-context equal " << r.in_context_equal << "/" << r.units
                  << " (max diff " << r.max_in_context_diff << "), kv-text answer " << r.max_kv_text_answer
                  << ", continuation " << r.max_kv_text_continuation << ", mean continuation_prob text "
                  << r.mean_prob_text << " no_comm " << r.mean_prob_none);
  WARN("stories260K story tasks: in-context "
       << r.in_context_equal << "/" << r.units << " (max |diff| " << r.max_in_context_diff
       << "), max |kv-text| answer_logprob " << r.max_kv_text_answer << ", continuation_prob "
       << r.max_kv_text_continuation << "; mean continuation_prob text_full " << r.mean_prob_text
       << ", no_comm " << r.mean_prob_none);
  CHECK(r.records == 4 * r.units);
  CHECK(r.prob_in_range == r.records);
  CHECK(r.max_kv_text_answer <= 1e-3);
  CHECK(r.max_kv_text_continuation <= 1e-3);
  CHECK(static_cast<double>(r.in_context_equal) >= 0.95 * static_cast<double>(r.units));
  CHECK(r.answer_joint == r.units);            // the answer as the joint text continues
  CHECK(r.boundary_to_context == 0);           // SentencePiece keeps the boundary: lm-eval's split
  CHECK(r.mean_prob_text > r.mean_prob_none);  // the document raises the continuation's probability
}

namespace {

// Every text a task's fields form (each field, and the joint texts B reads and is scored on).
std::vector<std::string> story_texts(const task_entry& e) {
  std::vector<std::string> out;
  const auto add = [&](const task_text& t) {
    if (t.text) out.push_back(*t.text);
  };
  add(e.document);
  add(e.text_document);
  add(e.prompt);
  add(e.continuation);
  add(e.instruction);
  const std::string prompt = e.prompt.text ? *e.prompt.text : std::string();
  for (const auto& q : e.queries) {
    add(q.query);
    add(q.stale_answer);
    for (const auto& a : q.answers) {
      add(a);
      out.push_back(*e.document.text + prompt + *q.query.text + " " + *a.text);
    }
    out.push_back(*e.document.text + prompt + *q.query.text + " " + *e.continuation.text);
  }
  return out;
}

}  // namespace

TEST_CASE("story task generator: a function of its options, the regime shares, the fields of a task",
          "[engine][llama_cpp][story_generator]") {
  const auto path = test::generate_story_tasks("shares.jsonl", "--tasks 300 --seed 7");
  const auto again = test::generate_story_tasks("shares-again.jsonl", "--tasks 300 --seed 7");
  const auto other = test::generate_story_tasks("shares-other.jsonl", "--tasks 300 --seed 8");
  if (!path || !again || !other) {
    WARN("SKIPPED(python3): no /usr/bin/python3, tools/tasks/story_tasks.py not run");
    return;
  }
  const auto file = read_task_file(*path);
  CHECK(file.sha256 == read_task_file(*again).sha256);  // a function of the options alone
  CHECK(file.sha256 != read_task_file(*other).sha256);
  REQUIRE(file.tasks.size() == 300);
  CHECK(file.header.scoring == task_scoring::word_prefix);
  std::map<task_regime, int> regimes;
  for (const auto& e : file.tasks) {
    ++regimes[e.regime];
    CHECK(e.continuation.text);  // every task continues its story
    CHECK(e.instruction.text);
    REQUIRE(e.queries.size() == 1);
    // the continuation starts with the answer; a stale task's old value differs from it
    CHECK(e.continuation.text->rfind(*e.queries[0].answers[0].text, 0) == 0);
    CHECK(e.text_document.text.has_value() == (e.regime == task_regime::stale));
    CHECK(e.prompt.text.has_value() ==
          (e.regime == task_regime::no_need || e.regime == task_regime::conflict));
    if (e.regime == task_regime::stale)
      CHECK(*e.queries[0].stale_answer.text != *e.queries[0].answers[0].text);
    if (e.regime == task_regime::no_need) CHECK(*e.prompt.text == " " + *e.document.text);
    if (e.regime == task_regime::conflict) CHECK(*e.prompt.text != " " + *e.document.text);
  }
  CHECK(regimes[task_regime::need] == 150);  // the default shares: 0.2 no_need, 0.15 stale and conflict
  CHECK(regimes[task_regime::no_need] == 60);
  CHECK(regimes[task_regime::stale] == 45);
  CHECK(regimes[task_regime::conflict] == 45);
}

TEST_CASE("story task generator: every text inside both real vocabularies, every task loads on both",
          "[engine][llama_cpp][real_models][story_generator]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  const auto path = test::generate_story_tasks("vocab.jsonl", "--tasks 300 --seed 7");
  if (!path) {
    WARN("SKIPPED(python3): no /usr/bin/python3, tools/tasks/story_tasks.py not run");
    return;
  }
  const auto file = read_task_file(*path);
  // stories260K: 512 SentencePiece pieces without byte pieces (a character outside them is <unk>,
  // id 0); TinyStories-656K: BPE whose byte fallback has no <0xNN> pieces (the reader emits unk).
  const auto spm = llama_cpp_tokenizer::load(m.stories260k());
  const auto bpe = tokenizer_json::load(m.tinystories656k());
  std::size_t texts = 0, spm_ok = 0, bpe_ok = 0;
  for (const auto& e : file.tasks)
    for (const auto& t : story_texts(e)) {
      ++texts;
      const auto a = spm.encode(t), b = bpe.encode(t);
      const bool a_ok = std::count(a.begin(), a.end(), 0) == 0 && spm.decode(a) == t;
      const bool b_ok = std::count(b.begin(), b.end(), bpe.unk()) == 0 && bpe.decode(b) == t;
      if (!a_ok) UNSCOPED_INFO("stories260K: " << t);
      if (!b_ok) UNSCOPED_INFO("TinyStories-656K: " << t);
      spm_ok += a_ok ? 1 : 0;
      bpe_ok += b_ok ? 1 : 0;
    }
  CHECK(texts >= 6 * file.tasks.size());  // each field and the two joint texts of each task
  // The loader splits every task on both vocabularies: each answer, stale answer and continuation
  // keeps tokens past the query's (the 656K BPE merges a word with its following space).
  text_codec bpe_codec;
  bpe_codec.encode = [&bpe](std::string_view s) { return bpe.encode(s); };
  bpe_codec.decode = [&bpe](std::span<const token_id> ids) { return bpe.decode(ids); };
  bpe_codec.bos = bpe.bos();
  CHECK_NOTHROW(task_file_source(read_task_file(*path), llama_codec(spm), {.vocab_size = 512}));
  const task_file_source on_bpe(read_task_file(*path), bpe_codec, {.vocab_size = 2048});
  CHECK(spm_ok == texts);
  CHECK(bpe_ok == texts);
  // On the 656K BPE the token that merges the query's last word with the space after it (`named▁`,
  // `green▁`) goes to B's context (docs/tasks.md, "Text at field boundaries"), so every scored text
  // is exactly its own tokens: the answer, the stale value and the continuation decode to
  // themselves (lm-eval's split cut 836 of 1,000 answers of `--tasks 1000 --seed 1` inside a token).
  std::size_t answers = 0, stales = 0, continuations = 0, stale_tasks = 0;
  for (std::size_t i = 0; i < file.tasks.size(); ++i) {
    const auto t = on_bpe.task(i, 0, 1);
    const auto& q = file.tasks[i].queries[0];
    answers += bpe.decode(t.answer) == *q.answers[0].text ? 1 : 0;
    continuations += bpe.decode(t.continuation) == *file.tasks[i].continuation.text ? 1 : 0;
    if (q.stale_answer.text) {
      ++stale_tasks;
      stales += bpe.decode(t.stale_answer) == *q.stale_answer.text ? 1 : 0;
    }
  }
  CHECK(answers == file.tasks.size());
  CHECK(continuations == file.tasks.size());
  CHECK(stales == stale_tasks);
}

TEST_CASE("held-out generated story tasks on stories260K: continuation_prob, kv_full = text_full, in-context",
          "[engine][llama_cpp][real_models][story_generator]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  // A seed no test or doc uses elsewhere: tasks nobody tuned anything on (need and no_need only:
  // the text arms relay A's document, so kv_full and text_full read the same tokens).
  const auto path = test::generate_story_tasks(
      "heldout.jsonl", "--tasks 32 --seed 50123 --no-need-share 0.25 --stale-share 0 --conflict-share 0");
  if (!path) {
    WARN("SKIPPED(python3): no /usr/bin/python3, tools/tasks/story_tasks.py not run");
    return;
  }
  auto engine = llama_cpp_engine::load(m.stories260k(), {.n_ctx = 1024, .max_context = 512, .n_seq_max = 6});
  const auto tok = engine.tokenizer();
  const auto r = test::audit_story_tasks(engine, llama_codec(tok), *path);
  WARN("stories260K held-out generated tasks: in-context "
       << r.in_context_equal << "/" << r.units << " (max |diff| " << r.max_in_context_diff
       << "), max |kv-text| answer_logprob " << r.max_kv_text_answer << ", continuation_prob "
       << r.max_kv_text_continuation << "; mean continuation_prob text_full " << r.mean_prob_text
       << ", no_comm " << r.mean_prob_none << ", deranged " << r.mean_prob_deranged);
  CHECK(r.units == 32);
  CHECK(r.records == 4 * r.units);
  CHECK(r.prob_in_range == r.records);
  CHECK(r.max_kv_text_answer <= 1e-3);
  CHECK(r.max_kv_text_continuation <= 1e-3);
  CHECK(static_cast<double>(r.in_context_equal) >= 0.95 * static_cast<double>(r.units));
  CHECK(r.answer_joint == r.units);
  CHECK(r.mean_prob_text > r.mean_prob_none);      // the document raises the continuation's probability
  CHECK(r.mean_prob_deranged < r.mean_prob_text);  // another story's cache does not
  // report.html's drill-down shows the real text (issue 50 item 6): B's answer and the
  // continuation's probability in kv_full's cell
  REQUIRE(r.first_kv.answer_text);
  REQUIRE(r.first_kv.continuation_prob);
  const auto report =
      build_audit_report(r.all, {.bootstrap_replicates = 100, .seed = 1});  // the least allowed
  const std::string html = report_html(report, r.all, {});
  const double cp = *r.first_kv.continuation_prob;
  CHECK(html.find("<q>" + detail::html_escape(*r.first_kv.answer_text) +
                  "</q><br><span class=\"lbl\">continuation</span> " +
                  (cp < 0.001 ? std::string("&lt;0.1%") : fmt::format("{:.1f}%", 100.0 * cp))) !=
        std::string::npos);
}
