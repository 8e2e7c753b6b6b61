// SPDX-License-Identifier: MIT
// Text at field boundaries and the continuation endpoint on a real SentencePiece vocabulary
// (issue 50 items 2-3, docs/tasks.md): stories260K through llama.cpp, its GGUF's own tokenizer, on
// the held-out story tasks of tests/golden/real_models/story_tasks.jsonl. [real_models] tests skip
// by name without the models folder (tests/support/real_models.hpp).
#include <latentaudit/engine/llama_cpp.hpp>
#include <latentaudit/engine/llama_cpp_tokenizer.hpp>

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
  CHECK(r.mean_prob_text > r.mean_prob_none);  // the document raises the continuation's probability
}
