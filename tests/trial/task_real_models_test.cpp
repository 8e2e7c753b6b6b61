// SPDX-License-Identifier: MIT
// Text at field boundaries and the continuation endpoint on a real BPE vocabulary (issue 50 items
// 2-3, docs/tasks.md): TinyStories-656K on the reference engine with its tokenizer.json, on the
// held-out story tasks of tests/golden/real_models/story_tasks.jsonl. [real_models] tests skip by
// name without the models folder (tests/support/real_models.hpp).
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/engine/tokenizer_json.hpp>

#include "support/catch.hpp"
#include "support/real_models.hpp"
#include "support/story_tasks.hpp"

using namespace latentaudit;

TEST_CASE(
    "story tasks on the reference engine: continuation endpoint, kv_full = text_full, in-context answer",
    "[task_file][real_models][joint_text]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  auto engine = reference_cpu_engine::load(m.tinystories656k());
  const auto tok = tokenizer_json::load(m.tinystories656k());
  text_codec codec;
  codec.encode = [&tok](std::string_view s) { return tok.encode(s); };
  codec.decode = [&tok](std::span<const token_id> ids) {
    std::size_t n = 0;
    while (n < ids.size() && ids[n] != tok.eos()) ++n;
    return tok.decode(ids.first(n));
  };
  codec.bos = tok.bos();
  const auto r = test::audit_story_tasks(engine, codec);
  WARN("TinyStories-656K story tasks: in-context "
       << r.in_context_equal << "/" << r.units << " (max |diff| " << r.max_in_context_diff
       << "), boundary token in B's context on " << r.boundary_to_context << ", max |kv-text| answer_logprob "
       << r.max_kv_text_answer << ", continuation_prob " << r.max_kv_text_continuation
       << "; mean continuation_prob text_full " << r.mean_prob_text << ", no_comm " << r.mean_prob_none);
  CHECK(r.records == 4 * r.units);
  CHECK(r.prob_in_range == r.records);
  CHECK(r.max_kv_text_answer <= 1e-3);
  CHECK(r.max_kv_text_continuation <= 1e-3);
  CHECK(static_cast<double>(r.in_context_equal) >= 0.95 * static_cast<double>(r.units));
  CHECK(r.answer_joint == r.units);  // the answer as the joint text continues
  // The 656K BPE attaches the space after a word to the word (`named▁`, `green▁`): B's context takes
  // that boundary token, and the answer starts at the fact's own first token.
  CHECK(r.boundary_to_context > 0);
  CHECK(r.mean_prob_text > r.mean_prob_none);
}
