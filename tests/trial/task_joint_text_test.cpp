// SPDX-License-Identifier: MIT
// Task files, text at field boundaries (docs/tasks.md "Text at field boundaries"): the document, the
// prompt and the query are tokenized as the text they form together, the answer, stale value and
// continuation as the query's continuation after lm-eval's target delimiter; the first_word and
// word_prefix scorings; the continuation endpoint written to and read from records. A toy
// SentencePiece-like codec (a dummy-prefix space, one merge across a boundary) shows the rules
// without a model; tests/engine/llama_cpp_story_tasks_test.cpp runs them on the real vocabularies.
#include <latentaudit/trial/record_builder.hpp>
#include <latentaudit/trial/task_file.hpp>

#include <cmath>
#include <sstream>

#include "support/catch.hpp"

using namespace latentaudit;

namespace {

task_file joint_read(const std::string& s) {
  std::istringstream in(s);
  return read_task_stream(in, "t.jsonl");
}

// Byte ids + 2 (BOS 0) with a SentencePiece-like dummy prefix: encode(s) tokenizes " " + s, so a
// field encoded on its own starts with an extra space. ".A" is one token (258), merging across
// the boundary of "x." and "A...".
text_codec joint_toy_codec() {
  text_codec c;
  c.encode = [](std::string_view s) {
    const std::string t = " " + std::string(s);
    std::vector<token_id> v;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '.' && i + 1 < t.size() && t[i + 1] == 'A') {
        v.push_back(258);
        ++i;
        continue;
      }
      v.push_back(static_cast<token_id>(static_cast<unsigned char>(t[i])) + 2);
    }
    return v;
  };
  c.decode = [](std::span<const token_id> ids) {
    std::string s;
    for (auto x : ids)
      if (x == 258)
        s += ".A";
      else if (x >= 2)
        s.push_back(static_cast<char>(x - 2));
    return s;
  };
  c.bos = 0;
  return c;
}

std::vector<token_id> joint_bytes(std::string_view s) {
  std::vector<token_id> v;
  for (unsigned char ch : s) v.push_back(static_cast<token_id>(ch) + 2);
  return v;
}

std::vector<token_id> joint_cat(std::vector<token_id> a, const std::vector<token_id>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("task_file: text fields are tokenized as the text they form together", "[task_file][joint_text]") {
  const auto codec = joint_toy_codec();
  // On its own, " Max" gets the dummy prefix (two spaces); in the joint text it does not.
  CHECK(codec.encode(" Max") == joint_bytes("  Max"));
  const task_file_source src(
      joint_read(
          R"({"id": "a", "document": "her dog, Max.", "prompt": " Then", "query": " she threw the ball to",)"
          R"( "answers": ["Max"], "stale_answer": "Rex", "continuation": "Max. Max ran."})"),
      codec, {.vocab_size = 300});
  const auto t = src.task(0, 0, 1);
  CHECK(t.document ==
        joint_cat({0}, joint_bytes(" her dog, Max.")));  // BOS, then the document as it begins a text
  CHECK(t.own_prompt == joint_bytes(" Then"));           // no dummy prefix inside the text
  CHECK(t.query == joint_bytes(" she threw the ball to"));
  CHECK(t.answer == joint_bytes(" Max"));  // lm-eval's target delimiter, a space
  CHECK(t.stale_answer == joint_bytes(" Rex"));
  CHECK(t.continuation == joint_bytes(" Max. Max ran."));
  // The whole context is the joint text's tokens after BOS.
  CHECK(joint_cat(joint_cat(t.document, t.own_prompt), t.query) ==
        joint_cat({0}, codec.encode("her dog, Max. Then she threw the ball to")));
}

TEST_CASE("task_file: the target delimiter and the query's trailing whitespace follow lm-eval",
          "[task_file][joint_text]") {
  const auto codec = joint_toy_codec();
  // A query that ends in whitespace: the whitespace moves to the front of the answer (lm-eval's
  // _encode_pair), and no second space is added.
  const task_file_source a(joint_read(R"({"id": "a", "document": "d", "query": " q: ", "answers": ["x"]})"),
                           codec, {.vocab_size = 300});
  CHECK(a.task(0, 0, 1).query == joint_bytes(" q:"));
  CHECK(a.task(0, 0, 1).answer == joint_bytes(" x"));
  // An answer that begins with whitespace keeps it, without the delimiter.
  const task_file_source b(joint_read(R"({"id": "a", "document": "d", "query": " q:", "answers": ["\nx"]})"),
                           codec, {.vocab_size = 300});
  CHECK(b.task(0, 0, 1).answer == joint_bytes("\nx"));
}

TEST_CASE("task_file: a token merged across a field boundary goes to the later field",
          "[task_file][joint_text]") {
  const auto codec = joint_toy_codec();
  // "x." + "A b": the joint text holds ".A" (258); the document keeps "x", the query gets ".A b".
  const task_file_source src(joint_read(R"({"id": "a", "document": "x.", "query": "A b", "answers": ["c"]})"),
                             codec, {.vocab_size = 300});
  const auto t = src.task(0, 0, 1);
  CHECK(t.document == joint_cat({0}, joint_bytes(" x")));
  CHECK(t.query == joint_cat({258}, joint_bytes(" b")));
  CHECK(joint_cat(t.document, t.query) == joint_cat({0}, codec.encode("x.A b")));
  // Several queries: the document ends where every query's joint text agrees.
  const task_file_source many(
      joint_read(R"({"id": "a", "document": "x.", "queries": [{"query": " y", "answers": ["c"]},)"
                 R"( {"query": "A", "answers": ["c"]}]})"),
      codec, {.vocab_size = 300});
  for (std::uint64_t s = 0; s < 8; ++s) {
    const auto u = many.task(0, s, 1);
    CHECK(u.document == joint_cat({0}, joint_bytes(" x")));
    CHECK(joint_cat(u.document, u.query) ==
          joint_cat({0}, codec.encode(*u.query_index == 0 ? "x. y" : "x.A")));
  }
}

TEST_CASE("task_file: token-id fields are unchanged by the joint rule", "[task_file][joint_text]") {
  const task_file_source src(
      joint_read(R"({"id": "a", "document_tokens": [0, 5, 6], "prompt_tokens": [7], "query_tokens": [1, 5],)"
                 R"( "answers": [[6]], "continuation_tokens": [6, 7]})"),
      {}, {.vocab_size = 10});
  const auto t = src.task(0, 0, 1);
  CHECK(t.document == std::vector<token_id>{0, 5, 6});
  CHECK(t.own_prompt == std::vector<token_id>{7});
  CHECK(t.query == std::vector<token_id>{1, 5});
  CHECK(t.answer == std::vector<token_id>{6});
  CHECK(t.continuation == std::vector<token_id>{6, 7});
}

TEST_CASE("task_file: first_word and word_prefix accept 'Max. Max was' for 'Max'", "[task_file][scoring]") {
  const auto codec = joint_toy_codec();
  const std::string line =
      R"({"id": "a", "document": "d", "query": " q", "answers": ["Max", "the red ball"]})";
  auto score = [&](task_scoring m, const std::string& generated) {
    const task_file_source src(joint_read(line), codec, {.vocab_size = 300}, m);
    return src.task(0, 0, 1).check_answer(joint_bytes(generated)).correct;
  };
  CHECK(parse_task_scoring("first-word") == task_scoring::first_word);
  CHECK(parse_task_scoring("word_prefix") == task_scoring::word_prefix);
  CHECK_FALSE(score(task_scoring::exact, " Max. Max was"));
  CHECK(score(task_scoring::first_word, " Max. Max was"));
  CHECK(score(task_scoring::first_word, " \"Max!\" said"));
  CHECK_FALSE(score(task_scoring::first_word, " Maxine ran"));
  CHECK_FALSE(score(task_scoring::first_word, " max ran"));  // case-sensitive, as exact
  CHECK(score(task_scoring::word_prefix, " Max. Max was"));
  CHECK(score(task_scoring::word_prefix, " The red ball, and"));
  CHECK_FALSE(score(task_scoring::word_prefix, " Maxine ran"));
  CHECK_FALSE(score(task_scoring::word_prefix, " the red balloon"));
}

TEST_CASE("records: the continuation endpoint is written and read back, and bounded", "[task_file][record]") {
  trial_record r;
  r.arm = "kv_full";
  const std::vector<token_id> cont = {1, 0};
  const std::vector<float> rows = {0.0f, 0.0f, 0.0f, std::log(3.0f), 0.0f, 0.0f};  // p = 1/3, then 3/5
  record_continuation(r, cont, rows, 3);
  REQUIRE(r.continuation_logprob);
  CHECK(*r.continuation_logprob == Approx(std::log(1.0 / 3) + std::log(3.0 / 5)));
  CHECK(*r.continuation_tokens == 2);
  CHECK(*r.continuation_prob == Approx(std::sqrt(1.0 / 5)));
  const auto back = record_from_json(parse_json(record_to_line(r)));
  CHECK(back.continuation_logprob == r.continuation_logprob);
  CHECK(back.continuation_tokens == r.continuation_tokens);
  CHECK(back.continuation_prob == r.continuation_prob);
  // absent when the task has none: not written
  trial_record none;
  none.arm = "kv_full";
  CHECK(record_to_line(none).find("continuation") == std::string::npos);
  CHECK_THROWS_AS(record_continuation(r, cont, std::span<const float>(rows).first(3), 3), invalid_argument);
  CHECK_THROWS_AS(record_from_json(parse_json(R"({"item":0,"seed":0,"arm":"a","correct":true,)"
                                              R"("continuation_logprob":-1,"continuation_tokens":2,)"
                                              R"("continuation_prob":1.5})")),
                  corrupt_data);
}

namespace {

// Byte ids + 2 (BOS 0) like a BPE that attaches the space after a word to the word: "o " is one
// token (259), as the TinyStories-656K BPE's `to▁`, `green▁`; with `spans`, "o M" is one token
// (260), a merge that also takes the target's first character.
text_codec trailing_space_codec(bool spans) {
  text_codec c;
  c.encode = [spans](std::string_view s) {
    std::vector<token_id> v;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (spans && s.substr(i, 3) == "o M") {
        v.push_back(260);
        i += 2;
      } else if (s.substr(i, 2) == "o ") {
        v.push_back(259);
        ++i;
      } else {
        v.push_back(static_cast<token_id>(static_cast<unsigned char>(s[i])) + 2);
      }
    }
    return v;
  };
  c.decode = [](std::span<const token_id> ids) {
    std::string s;
    for (auto x : ids)
      s += x == 259   ? std::string("o ")
           : x == 260 ? std::string("o M")
                      : std::string(1, static_cast<char>(x - 2));
    return s;
  };
  c.bos = 0;
  return c;
}

}  // namespace

TEST_CASE("task_file: a token merged across the query's end and the target's delimiter goes to B's context",
          "[task_file][joint_text]") {
  const std::string line =
      R"({"id": "a", "document": "a dog.", "query": " ball to", "answers": ["Max", "Rex"],)"
      R"( "stale_answer": "Sam", "continuation": "Max ran."})";
  // lm-eval's split would give B "... t" `o` and the answer `o ` `M` `a` `x` past the context's
  // length, a token that is not the text's: B's context takes the boundary token `o ` instead.
  const auto codec = trailing_space_codec(false);
  const task_file_source src(joint_read(line), codec, {.vocab_size = 300});
  const auto t = src.task(0, 0, 1);
  CHECK(t.document == joint_cat({0}, joint_bytes("a dog.")));
  CHECK(t.query == joint_cat(joint_bytes(" ball t"), {259}));
  CHECK(t.answer == joint_bytes("Max"));
  CHECK(t.other_answers == std::vector<std::vector<token_id>>{joint_bytes("Rex")});
  CHECK(t.stale_answer == joint_bytes("Sam"));
  CHECK(t.continuation == joint_bytes("Max ran."));
  // B's context and the answer are the joint text's tokens, split where no token is cut.
  CHECK(joint_cat(joint_cat(joint_cat(t.document, t.own_prompt), t.query), t.answer) ==
        joint_cat({0}, codec.encode("a dog. ball to Max")));
  // A query that ends in the delimiter itself: the same split (the space is moved, then merged).
  const task_file_source moved(joint_read(R"({"id": "a", "document": "a dog.", "query": " ball to ",)"
                                          R"( "answers": ["Max"]})"),
                               codec, {.vocab_size = 300});
  CHECK(moved.task(0, 0, 1).query == t.query);
  CHECK(moved.task(0, 0, 1).answer == t.answer);
  // A merge that also takes the answer's first character ("o M"): the boundary token stays with the
  // targets that hold it (B's context ends before it, shared by every target of the query).
  const auto spans = trailing_space_codec(true);
  const task_file_source s2(joint_read(line), spans, {.vocab_size = 300});
  const auto u = s2.task(0, 0, 1);
  CHECK(u.query == joint_bytes(" ball t"));
  CHECK(u.answer == joint_cat({260}, joint_bytes("ax")));
  CHECK(u.other_answers == std::vector<std::vector<token_id>>{joint_cat({259}, joint_bytes("Rex"))});
  CHECK(u.continuation == joint_cat({260}, joint_bytes("ax ran.")));
  // A codec that keeps the boundary gives lm-eval's split, as before (the delimiter to the target).
  const task_file_source kept(joint_read(line), joint_toy_codec(), {.vocab_size = 300});
  CHECK(kept.task(0, 0, 1).query == joint_bytes(" ball to"));
  CHECK(kept.task(0, 0, 1).answer == joint_bytes(" Max"));
}
