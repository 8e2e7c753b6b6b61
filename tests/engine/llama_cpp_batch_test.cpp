// SPDX-License-Identifier: MIT
// Batched trials on llama.cpp (engine/llama_cpp_batch.hpp, llama_cpp_engine::forward_batch) on
// organism-a as GGUF: several sequences' prefills and decode steps in one llama_decode give each
// sequence's own prefill logits within 1e-4 and the same argmax, also when the requests span
// several n_batch calls; a request the engine refuses fails before anything runs; trial drivers on
// two threads sharing one context through a llama_cpp_batch give the one-driver run's records (the
// same answers, correctness and tokens; log-probabilities within 1e-4 but where a rounding tie
// flips A's greedy message or a wire quantizer's code, which must stay rare) and do batch; `audit
// --engine llama.cpp --jobs 2 --batched` agrees with --jobs 1 record by record; a failing
// llama_decode answers every waiting seat.
#include <latentaudit/engine/llama_cpp.hpp>
#include <latentaudit/engine/llama_cpp_batch.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include "support/llama_cpp_engine.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace latentaudit;

namespace batch_test {  // named: the unity build joins this file with the other llama.cpp tests

const std::filesystem::path models = std::filesystem::path(LATENTAUDIT_SOURCE_DIR) / "models";

token_id argmax(std::span<const float> row) {
  return static_cast<token_id>(std::max_element(row.begin(), row.end()) - row.begin());
}

}  // namespace batch_test

TEST_CASE(
    "llama.cpp batch: forward_batch gives each sequence its own prefill's logits, across n_batch calls") {
  const auto fmt = organism_format::load(batch_test::models / "organism-a");
  std::vector<std::vector<token_id>> docs;
  for (std::uint64_t i = 0; i < 3; ++i) docs.push_back(make_organism_task(fmt, {.seed = 5}, i, 0).document);
  for (std::uint32_t n_batch : {2048u, 8u}) {  // 8: every document spans several llama_decode calls
    CAPTURE(n_batch);
    auto solo = llama_cpp_engine::load(test::organism_gguf("organism-a"), {.n_batch = n_batch});
    auto many = llama_cpp_engine::load(test::organism_gguf("organism-a"), {.n_batch = n_batch});
    std::vector<forward_output> want;
    std::vector<seq_id> ss, ms;
    for (const auto& d : docs) {
      ss.push_back(solo.open_seq());
      want.push_back(solo.prefill(ss.back(), d, 0, {.all_logits = true}));
      ms.push_back(many.open_seq());
    }
    std::vector<llama_cpp_forward> rs;
    for (std::size_t i = 0; i < docs.size(); ++i)
      rs.push_back({.seq = ms[i], .tokens = docs[i], .first = 0, .options = {.all_logits = i != 1}});
    const auto got = many.forward_batch(rs);
    REQUIRE(got.size() == docs.size());
    const auto V = static_cast<std::size_t>(many.info().vocab_size);
    for (std::size_t i = 0; i < docs.size(); ++i) {
      CHECK(many.n_tokens(ms[i]) == static_cast<std::int64_t>(docs[i].size()));
      if (i == 1) {  // the last row only
        REQUIRE(got[i].rows == 1);
        const std::vector<float> last(want[i].logits.end() - static_cast<std::ptrdiff_t>(V),
                                      want[i].logits.end());
        CHECK(test::max_abs_diff(got[i].logits, last) <= 1e-4);
      } else {
        CHECK(got[i].rows == static_cast<std::int64_t>(docs[i].size()));
        CHECK(test::max_abs_diff(got[i].logits, want[i].logits) <= 1e-4);
      }
    }
    // greedy decode steps of the three sequences in one batch each equal their own
    std::vector<token_id> next(docs.size());
    for (std::size_t i = 0; i < docs.size(); ++i)
      next[i] = batch_test::argmax(std::span<const float>(want[i].logits).last(V));
    for (int step = 0; step < 4; ++step) {
      std::vector<llama_cpp_forward> steps;
      std::vector<forward_output> own;
      for (std::size_t i = 0; i < docs.size(); ++i) {
        const auto p = static_cast<position_t>(docs[i].size()) + step;
        own.push_back(solo.decode(ss[i], next[i], p, {}));
        steps.push_back({.seq = ms[i], .tokens = std::span<const token_id>(&next[i], 1), .first = p});
      }
      const auto outs = many.forward_batch(steps);
      for (std::size_t i = 0; i < docs.size(); ++i) {
        CHECK(test::max_abs_diff(outs[i].logits, own[i].logits) <= 1e-4);
        CHECK(batch_test::argmax(outs[i].logits) == batch_test::argmax(own[i].logits));
        next[i] = batch_test::argmax(own[i].logits);
      }
    }
  }
}

TEST_CASE("llama.cpp batch: a refused request runs nothing, and a seat uses only its own sequences") {
  auto e = llama_cpp_engine::load(test::organism_gguf("organism-a"));
  const std::vector<token_id> t = {1, 5, 7};
  const auto a = e.open_seq(), b = e.open_seq();
  std::vector<llama_cpp_forward> dup = {{.seq = a, .tokens = t}, {.seq = a, .tokens = t}};
  CHECK_THROWS_WITH(e.forward_batch(dup), Catch::Contains("twice"));
  std::vector<llama_cpp_forward> gap = {{.seq = a, .tokens = t}, {.seq = b, .tokens = t, .first = -1}};
  CHECK_THROWS_AS(e.forward_batch(gap), invalid_argument);
  CHECK(e.n_tokens(a) == 0);  // nothing ran
  e.close_seq(a);
  e.close_seq(b);

  llama_cpp_batch batch({&e});
  auto one = batch.seat_engine(batch.add_seat(), 0), two = batch.seat_engine(batch.add_seat(), 0);
  const auto s = one.open_seq();
  CHECK_THROWS_WITH(two.prefill(s, t, 0, {}), Catch::Contains("not open on this seat"));
  const std::vector<token_id> bad = {1, 1 << 30};
  CHECK_THROWS_WITH(one.prefill(s, bad, 0, {}), Catch::Contains("tokens"));  // refused alone, nothing waits
  CHECK(one.prefill(s, t, 0, {}).rows == 1);
  CHECK(one.n_tokens(s) == 3);
  one.close_seq(s);
  CHECK_THROWS_AS(batch.seat_engine(7, 0), invalid_argument);
  CHECK_THROWS_AS(batch.seat_engine(0, 1), invalid_argument);
}

TEST_CASE("llama.cpp batch: a llama_decode that fails answers every waiting seat, and none hangs") {
  // Three sequences of 100 tokens in one batch need 300 cells; the context has 256 (llama.cpp's
  // smallest; organism-a trains on 128 positions): llama_decode cannot place the batch, and every
  // waiting seat gets the error.
  auto e = llama_cpp_engine::load(test::organism_gguf("organism-a"), {.n_ctx = 256, .n_batch = 512});
  llama_cpp_batch batch({&e});
  std::vector<token_id> doc(100);
  for (std::size_t i = 0; i < doc.size(); ++i) doc[i] = static_cast<token_id>(1 + i % 7);
  std::vector<llama_cpp_seat_engine> seats;
  std::vector<seq_id> seqs;
  for (int k = 0; k < 3; ++k) {
    seats.push_back(batch.seat_engine(batch.add_seat(), 0));
    seqs.push_back(seats.back().open_seq());  // every seat live: no forward runs before all three wait
  }
  std::vector<std::string> errors(3);
  {
    std::vector<std::jthread> threads;
    for (std::size_t k = 0; k < 3; ++k)
      threads.emplace_back([&, k] {
        try {
          (void)seats[k].prefill(seqs[k], doc, 0, {});
        } catch (const engine_error& x) {
          errors[k] = x.what();
        }
      });
  }  // joined: none waits forever
  for (const auto& err : errors) CHECK_THAT(err, Catch::Contains("llama_decode"));
  CHECK(batch.stats().batched == 3);
  for (std::size_t k = 0; k < 3; ++k) seats[k].close_seq(seqs[k]);
  const auto a = seats[0].open_seq();  // alone, it fits
  CHECK(seats[0].prefill(a, doc, 0, {}).rows == 1);
  seats[0].close_seq(a);
}

TEST_CASE("llama.cpp batch: drivers on two threads sharing one context give the one-driver records") {
  const auto fmt = organism_format::load(batch_test::models / "organism-a");
  auto plain = llama_cpp_engine::load(test::organism_gguf("organism-a"));
  const trial_design d = restrict_to_engine(trial_design{.seed = 3, .items = 16, .seeds = 1}, plain).design;
  const trial_driver<llama_cpp_engine>::task_source tasks = [&](std::uint64_t i, std::uint64_t s) {
    return make_organism_task(fmt, {.seed = 3}, i, s);
  };
  std::vector<trial_record> want, got;
  trial_driver<llama_cpp_engine>(plain).run(d, tasks, [&](const trial_record& r) { want.push_back(r); });

  auto shared = llama_cpp_engine::load(test::organism_gguf("organism-a"),
                                       {.n_ctx = 8192, .max_context = 4096, .n_seq_max = 9});
  llama_cpp_batch batch({&shared});
  using driver_type = trial_driver<llama_cpp_seat_engine>;
  auto e0 = batch.seat_engine(batch.add_seat(), 0), e1 = batch.seat_engine(batch.add_seat(), 0);
  driver_type d0(e0), d1(e1);
  std::vector<driver_type*> drivers{&d0, &d1};
  const driver_type::task_source seat_tasks = tasks;
  (void)run_on_workers<driver_type>(drivers, d, seat_tasks, [&](const trial_record& r) { got.push_back(r); });
  REQUIRE(got.size() == want.size());
  double worst = 0;
  std::set<std::uint64_t> flipped_items;  // A's greedy message at a rounding tie (see the CLI case)
  std::vector<std::string> code_flips;    // a wire quantizer's code at a rounding tie (see the CLI case)
  const auto quantized = [&](const std::string& arm) {
    return std::ranges::any_of(d.arms, [&](const trial_arm& a) { return a.label == arm && a.wire_quantize; });
  };
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(want[i].item, want[i].arm);
    CHECK(got[i].item == want[i].item);
    CHECK(got[i].arm == want[i].arm);
    if (got[i].message_tokens != want[i].message_tokens || got[i].message != want[i].message) {
      flipped_items.insert(want[i].item);
      continue;
    }
    CHECK(got[i].bytes == want[i].bytes);
    REQUIRE(got[i].answer_logprob.has_value() == want[i].answer_logprob.has_value());
    const double moved =
        want[i].answer_logprob ? std::fabs(*got[i].answer_logprob - *want[i].answer_logprob) : 0.0;
    if (moved > 1e-4 && quantized(want[i].arm)) {
      code_flips.push_back(std::to_string(want[i].item) + "/" + want[i].arm);
      continue;
    }
    CHECK(got[i].correct == want[i].correct);
    CHECK(got[i].generated_tokens == want[i].generated_tokens);
    worst = std::max(worst, moved);
  }
  CHECK(worst <= 1e-4);
  CAPTURE(flipped_items, code_flips);
  CHECK(flipped_items.size() <= 1);  // of 16 items; none here
  CHECK(code_flips.size() <= 2);     // of the quantized arms' records; none here
  const auto c = batch.stats();
  CHECK(c.forwards > 0);
  CHECK(c.batched > 0);  // the two drivers' forwards met in one llama_decode
  CHECK(c.batches < c.forwards);
}

#ifdef LATENTAUDIT_CLI_PATH
TEST_CASE(
    "llama.cpp batch: `audit --engine llama.cpp --jobs 2 --batched` agrees with --jobs 1 record by record") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("latentaudit_llama_batch_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string cli = LATENTAUDIT_CLI_PATH;
  auto run = [&](int jobs) {
    const auto out = dir / ("jobs" + std::to_string(jobs));
    const std::string cmd = cli + " audit --engine llama.cpp --model " +
                            test::organism_gguf("organism-a").string() + " --task " +
                            (batch_test::models / "organism-a" / "task.json").string() +
                            " --items 20 --seeds 1 --timing-repeats 0 --quiet --jobs " +
                            std::to_string(jobs) + (jobs > 1 ? " --batched" : "") + " --out " + out.string() +
                            " > " + (dir / "summary.json").string() + " 2> " + (dir / "err.txt").string();
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::vector<json_value> rs;
    std::ifstream in(out / "records.jsonl");
    for (std::string line; std::getline(in, line);) rs.push_back(parse_json(line));
    return rs;
  };
  const auto one = run(1), two = run(2);
  REQUIRE(one.size() == two.size());
  REQUIRE_FALSE(one.empty());
  // Batching changes float rounding (ggml's reduction order, the cells a sequence occupies): every
  // record keeps its answer, tokens and bytes, and answer_logprob moves by rounding only (2.8e-5 at
  // most on 60 items x 24 arms; 4.4e-5 over 30 batched runs of this design under load). The one
  // discrete amplifier is A's greedy message: where two tokens' logits tie within rounding, the
  // batched run may write another message, and B's answer_logprob then moves by far more than
  // rounding. Such an item is counted, shown, and must stay rare; its other fields are not compared.
  // The other amplifier is a quantizer on the wire (kv_fp8, kv_int8, kv_int4): a K/V value within
  // rounding of a code boundary may take the neighbouring code in the batched run. CI's run of
  // 812f360 moved item 15's kv_fp8 answer_logprob by 0.0107 so (its fp8 cache moves that item's
  // answer_logprob by 0.84 against kv_full, the median item's by 6e-7): such a record keeps its
  // bytes and relay tokens, is counted, shown, and must stay rare.
  const auto text = [](const json_value& r, const char* k) {
    const auto* v = r.find(k);
    return v == nullptr ? std::string("absent") : write_json(*v);
  };
  const auto quantized = [](const json_value& r) {
    const auto* p = r.find("policy");
    return p != nullptr && p->is_object() && p->find("wire_quantization") != nullptr;
  };
  std::set<std::string> flipped_items;
  std::vector<std::string> code_flips;  // "item/arm" of quantized records moved beyond rounding
  std::size_t quantized_records = 0;
  for (std::size_t i = 0; i < one.size(); ++i) {
    CAPTURE(i, text(one[i], "item"), text(one[i], "arm"));
    for (const char* k : {"item", "seed", "arm"}) REQUIRE(text(one[i], k) == text(two[i], k));
    if (text(one[i], "message_tokens") != text(two[i], "message_tokens") ||
        text(one[i], "message") != text(two[i], "message")) {
      flipped_items.insert(text(one[i], "item"));
      continue;
    }
    for (const char* k : {"bytes", "relay_tokens"}) CHECK(text(one[i], k) == text(two[i], k));
    const double moved =
        std::fabs(one[i].at("answer_logprob").as_number() - two[i].at("answer_logprob").as_number());
    if (quantized(one[i])) {
      ++quantized_records;
      if (moved > 1e-4) {
        code_flips.push_back(text(one[i], "item") + "/" + text(one[i], "arm"));
        continue;
      }
    }
    for (const char* k : {"correct", "generated_tokens"}) CHECK(text(one[i], k) == text(two[i], k));
    CHECK(moved <= 1e-4);
  }
  CAPTURE(flipped_items, code_flips, quantized_records);
  CHECK(flipped_items.size() <= 1);  // of 20 items; none in 30 runs here
  CHECK(quantized_records == 60);    // 20 items x kv_fp8, kv_int8, kv_int4: the rule above is exercised
  CHECK(code_flips.size() <= 2);     // of those 60; none in 40 runs here, one in CI's run of 812f360
  // --batched needs llama.cpp and --jobs 2 or more, and runs in one process: one line, exit 2
  const std::string llama = " --engine llama.cpp --model " + test::organism_gguf("organism-a").string() +
                            " --task " + (batch_test::models / "organism-a" / "task.json").string();
  for (const std::string& bad : {llama + " --batched", std::string(" --batched --jobs 2"),
                                 llama + " --batched --jobs 2 --relay-transport tcp"}) {
    const std::string cmd = cli + " audit" + bad + " --items 4 --seeds 1 --quiet --out " +
                            (dir / "bad").string() + " > /dev/null 2> " + (dir / "err.txt").string();
    CHECK(WEXITSTATUS(std::system(cmd.c_str())) == 2);
    std::ifstream err(dir / "err.txt");
    std::string line, rest;
    std::getline(err, line);
    CHECK_THAT(line, Catch::Contains("--batched"));
    CHECK_FALSE(std::getline(err, rest));
  }
  std::filesystem::remove_all(dir);
}
#endif
