// SPDX-License-Identifier: MIT
// Test support: the held-out story tasks (tests/golden/real_models/story_tasks.jsonl, 20 tasks
// with a `continuation`) audited on a real model through an engine and its tokenizer, with the
// acceptance checks of issue 50 items 2-3 (docs/tasks.md "Text at field boundaries"):
//  - every record carries continuation_prob in [0, 1];
//  - kv_full equals text_full on continuation_prob and answer_logprob (the largest differences);
//  - text_full's answer_logprob equals the in-context value: the log-probability of the answer's
//    first token of whole = encode(document + query + " " + answer) after BOS + whole's first k
//    tokens, computed here on a fresh sequence, independently of the task loader. k is lm-eval's
//    split, the length of encode(document + query), when that is a prefix of whole; when the
//    tokenizer merged a token across the query's end (a trailing-space BPE: `green▁`), k is where
//    whole stops agreeing with encode(document + query + " ") (the boundary token in B's context),
//    or with encode(document + query) if that agrees further (docs/tasks.md, "Text at field
//    boundaries").
#ifndef LATENTAUDIT_TESTS_SUPPORT_STORY_TASKS_HPP
#define LATENTAUDIT_TESTS_SUPPORT_STORY_TASKS_HPP

#include <latentaudit/trial/driver.hpp>
#include <latentaudit/trial/task_file.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/golden.hpp"

namespace latentaudit::test {

/// What the story audit measured.
struct story_audit_result {
  std::size_t records = 0;        ///< records written
  std::size_t prob_in_range = 0;  ///< records with continuation_prob in [0, 1]
  std::size_t units = 0;          ///< (item, seed) units
  std::size_t in_context_equal =
      0;  ///< units whose text_full answer_logprob is the in-context value within 1e-3
  double max_in_context_diff = 0;       ///< the largest |text_full answer_logprob − in-context value|
  double max_kv_text_answer = 0;        ///< the largest |kv_full − text_full| on answer_logprob
  double max_kv_text_continuation = 0;  ///< the largest |kv_full − text_full| on continuation_prob
  double mean_prob_text = 0, mean_prob_none = 0;  ///< mean continuation_prob, text_full and no_comm
  double mean_prob_deranged = 0;                  ///< mean continuation_prob, deranged (another item's cache)
  std::size_t answer_joint = 0;  ///< units whose answer tokens are the joint text's past the context
  std::size_t boundary_to_context =
      0;                          ///< units where a token merged across the query's end went to B's context
  trial_record first_kv;          ///< the kv_full record of item 0 (B's answer, its probabilities)
  std::vector<trial_record> all;  ///< every record, in (item, arm) order
};

/// Runs the story task generator (tools/tasks/story_tasks.py) with `options` into a file under the
/// temp dir named `name`, and returns its path; nullopt when /usr/bin/python3 is absent (the caller
/// then skips by name). @throws std::runtime_error when the generator fails.
inline std::optional<std::string> generate_story_tasks(const std::string& name, const std::string& options) {
  if (!std::filesystem::exists("/usr/bin/python3")) return std::nullopt;
  const auto dir =
      std::filesystem::temp_directory_path() / ("latentaudit_stories_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto out = (dir / name).string();
  const std::string script =
      (std::filesystem::path(LATENTAUDIT_SOURCE_DIR) / "tools" / "tasks" / "story_tasks.py").string();
  const std::string cmd = "/usr/bin/python3 '" + script + "' '" + out + "' " + options;
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("story_tasks.py failed: " + cmd);
  return out;
}

/// Audits the story tasks of `path` (default: the golden file; text tasks of the need or no_need
/// regime: A's document is what the text arms relay) on `engine` (arms no_comm, text_full,
/// kv_full, deranged; one seed) with `codec`, and measures the acceptance checks.
template <class Engine>
story_audit_result audit_story_tasks(Engine& engine, const text_codec& codec, std::string path = {}) {
  if (path.empty()) path = golden_path("real_models/story_tasks.jsonl");
  const auto file = read_task_file(path);
  const std::vector<task_entry> entries = file.tasks;  // the source frees its entries
  const task_file_source src(file, codec, {.vocab_size = engine.info().vocab_size});
  trial_design d;
  d.items = src.items();
  d.seeds = 1;
  d.seed = 1;
  d.timing_repeats = 0;
  d.arms = {parse_arm("no_comm"), parse_arm("text_full"), parse_arm("kv_full"), parse_arm("deranged")};
  std::map<std::pair<std::uint64_t, std::string>, trial_record> by;
  trial_driver<Engine> driver(engine);
  driver.run(
      d, [&](std::uint64_t item, std::uint64_t s) { return src.task(item, s, d.seed); },
      [&](const trial_record& r) {
        by[{r.item, r.arm}] = r;
      });
  story_audit_result out;
  out.records = by.size();
  out.first_kv = by.at({0, "kv_full"});
  for (const auto& [k, r] : by) out.all.push_back(r);
  double sum_text = 0, sum_none = 0, sum_deranged = 0;
  for (const auto& [k, r] : by)
    if (r.continuation_prob && *r.continuation_prob >= 0 && *r.continuation_prob <= 1) ++out.prob_in_range;
  for (std::uint64_t i = 0; i < d.items; ++i) {
    ++out.units;
    const auto& text = by.at({i, "text_full"});
    const auto& kv = by.at({i, "kv_full"});
    const auto& none = by.at({i, "no_comm"});
    out.max_kv_text_answer =
        std::max(out.max_kv_text_answer, std::abs(*kv.answer_logprob - *text.answer_logprob));
    out.max_kv_text_continuation =
        std::max(out.max_kv_text_continuation, std::abs(*kv.continuation_prob - *text.continuation_prob));
    sum_text += *text.continuation_prob;
    sum_none += *none.continuation_prob;
    sum_deranged += *by.at({i, "deranged"}).continuation_prob;
    // The in-context value, from the texts alone.
    const auto& e = entries[static_cast<std::size_t>(i)];
    const std::string context =
        *e.document.text + (e.prompt.text ? *e.prompt.text : std::string()) + *e.queries[0].query.text;
    const auto ctx = codec.encode(context);
    const auto whole = codec.encode(context + " " + *e.queries[0].answers[0].text);
    auto agree = [](const std::vector<token_id>& a, const std::vector<token_id>& b) {
      return static_cast<std::size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first -
                                      a.begin());
    };
    std::size_t k = agree(ctx, whole);
    if (k < ctx.size()) {
      const std::size_t kept = k;
      k = std::max(k, agree(codec.encode(context + " "), whole));
      if (k > kept) ++out.boundary_to_context;
    }
    const auto t = src.task(i, 0, d.seed);
    if (whole.size() <= k) continue;
    std::vector<token_id> ids(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(k));
    ids.insert(ids.begin(), codec.bos);
    if (std::equal(t.answer.begin(), t.answer.end(), whole.begin() + static_cast<std::ptrdiff_t>(k),
                   whole.end()))
      ++out.answer_joint;
    const token_id next = whole[k];
    auto seq = engine.open_seq();
    const auto o = engine.prefill(seq, ids, 0, forward_options{});
    engine.close_seq(seq);
    const std::span<const float> row(o.logits.data(), static_cast<std::size_t>(engine.info().vocab_size));
    double mx = row[0];
    for (float x : row) mx = std::max(mx, static_cast<double>(x));
    double z = 0;
    for (float x : row) z += std::exp(static_cast<double>(x) - mx);
    const double lp = static_cast<double>(row[static_cast<std::size_t>(next)]) - mx - std::log(z);
    const double diff = std::abs(lp - *text.answer_logprob);
    out.max_in_context_diff = std::max(out.max_in_context_diff, diff);
    if (diff <= 1e-3) ++out.in_context_equal;
  }
  out.mean_prob_text = sum_text / static_cast<double>(d.items);
  out.mean_prob_none = sum_none / static_cast<double>(d.items);
  out.mean_prob_deranged = sum_deranged / static_cast<double>(d.items);
  return out;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_STORY_TASKS_HPP
