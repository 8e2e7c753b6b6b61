// SPDX-License-Identifier: MIT
// Tests of the production sampler (serve/relay_sampler.hpp): the sampled fraction within its Monte
// Carlo tolerance, the draw reproducible per (seed, request id), records the library's reader reads,
// bounded rotation, and the refusals.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "latentaudit/core/error.hpp"
#include "latentaudit/serve/relay_monitor.hpp"
#include "latentaudit/serve/relay_sampler.hpp"
#include "latentaudit/trial/journal.hpp"

namespace la = latentaudit;
namespace fs = std::filesystem;

namespace {
fs::path sampler_dir(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("latentaudit_serve_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  return d;
}
la::served_answer answer(std::uint64_t id, std::string text) {
  la::served_answer a;
  a.request_id = id;
  a.answer_text = std::move(text);
  a.bytes = 1000 + id;
  a.continuation_logprob = -0.5;
  a.continuation_tokens = 2;
  return a;
}
// the stack's scorer: "yes" is correct
bool score(const la::served_answer& a, std::string_view) { return a.answer_text == "yes"; }
}  // namespace

TEST_CASE("relay_sampler: fraction within its MC tolerance, reproducible per (seed, request id)", "[serve]") {
  constexpr std::uint64_t n = 100000;
  for (double f : {0.01, 0.1, 0.5}) {
    std::uint64_t k = 0;
    for (std::uint64_t id = 0; id < n; ++id) k += la::relay_sampled(20270154, id, f) ? 1 : 0;
    const double se = std::sqrt(f * (1 - f) / static_cast<double>(n));
    INFO("fraction " << f << ": sampled " << k << " of " << n << " (MC s.e. " << se << ")");
    CHECK(std::abs(static_cast<double>(k) / n - f) <= 4 * se);
  }
  CHECK_FALSE(la::relay_sampled(1, 5, 0.0));
  CHECK(la::relay_sampled(1, 5, 1.0));
  // a pure function of (seed, id): the same in any order and any sampler; another seed differs
  const auto dir = sampler_dir("draw");
  la::relay_sampler s({.seed = 9, .fraction = 0.3, .dir = dir}, score);
  std::uint64_t differ = 0;
  for (std::uint64_t id = 1000; id > 0; --id) {
    CHECK(s.sampled(id) == la::relay_sampled(9, id, 0.3));
    differ += la::relay_sampled(9, id, 0.3) != la::relay_sampled(10, id, 0.3) ? 1 : 0;
  }
  CHECK(differ > 200);
  CHECK_THROWS_AS(la::relay_sampled(1, 1, 1.5), la::invalid_argument);
}

TEST_CASE("relay_sampler: both records journaled, read back by read_records, the pair returned", "[serve]") {
  const auto dir = sampler_dir("records");
  la::relay_monitor m({.vs_no_comm = false, .on_likelihood = true});
  std::uint64_t pairs = 0;
  {
    la::relay_sampler s({.seed = 3, .fraction = 0.5, .relay_arm = "kv_full", .dir = dir, .link = "lan"},
                        score);
    CHECK(s.options().fallback_arm == "text_full");
    for (std::uint64_t id = 1; id <= 40; ++id) {
      const auto r = answer(id, "yes");
      if (!s.sampled(id)) {
        CHECK_FALSE(s.record(r, std::nullopt));
        CHECK_THROWS_AS(s.record(r, answer(id, "no")), la::invalid_argument);  // not in the sample
        continue;
      }
      const auto p = s.record(r, answer(id, "no"));
      REQUIRE(p);
      CHECK(p->relay_correct);
      CHECK_FALSE(p->fallback_correct);
      CHECK(p->relay_likelihood == Approx(std::exp(-0.25)));
      m.observe(*p);
      ++pairs;
      CHECK_THROWS_AS(s.record(r, answer(id, "no")), la::invalid_argument);  // the key repeats
    }
    CHECK_THROWS_AS(s.record(answer(2, "yes"), answer(3, "yes")), la::invalid_argument);
    s.flush();
    const auto files = s.files();
    REQUIRE(files.size() == 1);
    const auto recs = la::read_records(files[0]);
    REQUIRE(recs.size() == 2 * pairs);
    for (const auto& rec : recs) {
      CHECK(rec.seed == 0);
      CHECK((rec.arm == "kv_full" || rec.arm == "text_full"));
      CHECK(rec.arm_kind == (rec.arm == "kv_full" ? "kv_full" : "text_full"));
      CHECK(rec.correct == (rec.arm == "kv_full"));
      CHECK(rec.link == "lan");
      CHECK(rec.bytes == 1000 + rec.item);
      REQUIRE(rec.continuation_prob);
      CHECK(*rec.continuation_prob == Approx(std::exp(-0.25)));
    }
    CHECK(fs::exists(dir / "design.json"));
    // a second sampler on the directory is refused while the first holds it
    CHECK_THROWS_AS(la::relay_sampler({.dir = dir}, score), la::invalid_argument);
  }
  CHECK(m.pairs() == pairs);
  CHECK(m.on());  // relay right and text wrong on every pair: the bets stay 0
  // a restart starts a new file after the old one
  la::relay_sampler s2({.seed = 3, .fraction = 1.0, .dir = dir}, score);
  (void)s2.record(answer(1, "yes"), answer(1, "yes"));
  s2.flush();
  REQUIRE(s2.files().size() == 2);
  CHECK(s2.files()[1].filename() == "sample-000002.jsonl");
  CHECK(la::read_records(s2.files()[1]).size() == 2);
}

TEST_CASE("relay_sampler: bounded rotation keeps at most max_files files", "[serve]") {
  const auto dir = sampler_dir("rotation");
  la::relay_sampler s({.seed = 1, .fraction = 1.0, .dir = dir, .max_file_bytes = 2048, .max_files = 3},
                      score);
  for (std::uint64_t id = 1; id <= 60; ++id) (void)s.record(answer(id, "yes"), answer(id, "no"));
  s.flush();
  const auto files = s.files();
  CHECK(files.size() == 3);
  std::size_t on_disk = 0;
  for (const auto& e : fs::directory_iterator(dir))
    on_disk += e.path().filename().string().rfind("sample-", 0) == 0 ? 1 : 0;
  CHECK(on_disk == 3);
  std::uint64_t last_item = 0;
  for (const auto& f : files) {
    const auto recs = la::read_records(f);
    REQUIRE_FALSE(recs.empty());
    CHECK(recs.size() % 2 == 0);  // a pair never straddles two files
    CHECK(fs::file_size(f) < 2048 + 2 * 1024);
    CHECK(recs.front().item > last_item);
    last_item = recs.back().item;
  }
  CHECK(last_item == 60);
}

TEST_CASE("relay_sampler: bad options are refused, naming the argument", "[serve]") {
  const auto dir = sampler_dir("bad");
  auto refuses = [&](la::relay_sampler_options o, const std::string& arg) {
    o.dir = o.dir.empty() ? dir : o.dir;
    try {
      la::relay_sampler s(o, score);
      FAIL("accepted");
    } catch (const la::invalid_argument& e) {
      CHECK_THAT(e.what(), Catch::Contains(arg));
    }
  };
  refuses({.fraction = -0.1}, "fraction");
  refuses({.seed = std::uint64_t{1} << 53}, "seed");
  refuses({.max_files = 0}, "max_files");
  refuses({.max_file_bytes = 10}, "max_file_bytes");
  refuses({.relay_arm = "text_full"}, "fallback_arm");
  refuses({.relay_arm = "no_such_arm"}, "parse_arm");
  CHECK_THROWS_AS(la::relay_sampler({.dir = dir}, la::answer_scorer{}), la::invalid_argument);
}
