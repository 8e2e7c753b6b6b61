// SPDX-License-Identifier: MIT
// Nothing is lost: `latentaudit audit --resume` killed with SIGKILL at random moments (at least
// 20 times) and resumed until complete yields exactly the records of an uninterrupted run (every
// field but the measured timings), with no key twice and no torn line left behind.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/trial/journal.hpp>

#include <signal.h>

#include <chrono>
#include <map>
#include <thread>

#include "support/cli_runner.hpp"
#include "support/common.hpp"
#include "support/sanitizer.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;

// Items of the design: 40, or 16 under the sanitizer, where a trial costs ~25x more and each full
// run (the reference and the last, completing one) would take ~45 s instead of ~18 s.
constexpr int kill_items = latentaudit::test::full_or_sanitized(40, 16);

std::vector<std::string> kill_audit_args(const std::filesystem::path& out) {
  return {"audit",
          "--model",
          models + "organism-a",
          "--partner",
          models + "organism-b",
          "--items",
          std::to_string(kill_items),
          "--seeds",
          "2",
          "--out",
          out.string(),
          "--resume",
          "--trials-only",
          "--quiet",
          "--drift",
          "none"};  // the 21 built-in arms (no drifted senders)
}

std::map<trial_key, std::string> timeless(const std::vector<trial_record>& rs) {
  std::map<trial_key, std::string> m;
  for (auto r : rs) {
    r.latency = {};
    for (auto& x : r.latency_repeats_s) x = 0.0;  // timings differ; which trials repeat does not
    m[{r.item, r.seed, r.arm}] = record_to_line(r);
  }
  return m;
}

}  // namespace

TEST_CASE("audit: kill -9 at random moments, resume, and the records equal an uninterrupted run's") {
  const auto base = test::cli_work_dir() / "kill";
  std::filesystem::remove_all(base);
  const auto clean = base / "clean", killed = base / "killed";
  const auto r = test::run_cli(kill_audit_args(clean));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto reference = timeless(read_records(clean / "records.jsonl"));
  // items x seeds x the design's arms (the default arms depend on the model: design.json lists them)
  const auto design = parse_json(test::slurp_file(clean / "design.json"));
  REQUIRE(reference.size() == std::size_t{kill_items} * 2u * design.at("arms").as_array().size());

  const std::uint64_t seed = 20261129;
  std::printf("audit_kill_test: kill schedule seed %llu\n", static_cast<unsigned long long>(seed));
  auto g = make_stream({seed, 0, 0, 0});
  int kills = 0, runs = 0;
  bool complete = false;
  // Kill after a uniformly random delay in [2, 80] ms, at least 20 times (8 under the sanitizer,
  // where each start costs ~5x more: support/sanitizer.hpp); then let it finish. On a fast
  // machine the set may complete before that many kills: each complete set is checked against
  // the reference, and the next round starts from an empty directory.
  const int min_kills = test::full_or_sanitized(20, 8);
  int rounds = 0;
  while (runs < 400) {
    const pid_t pid = test::spawn_cli(kill_audit_args(killed), "/dev/null", "/dev/null");
    ++runs;
    int status = 0;
    if (kills < min_kills || runs % 2 == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(2000 + static_cast<int>(uniform01(g) * 78000)));
      ::kill(pid, SIGKILL);
      REQUIRE(waitpid(pid, &status, 0) == pid);
      if (WIFSIGNALED(status))
        ++kills;
      else
        REQUIRE(WEXITSTATUS(status) == 0);
    } else {
      REQUIRE(waitpid(pid, &status, 0) == pid);
      REQUIRE(WIFEXITED(status));
      REQUIRE(WEXITSTATUS(status) == 0);
    }
    if (std::filesystem::exists(killed / "records.jsonl")) {
      std::uint64_t good = 0;
      const auto partial = read_records(killed / "records.jsonl", &good);  // throws on a duplicate key
      complete =
          partial.size() == reference.size() && good == std::filesystem::file_size(killed / "records.jsonl");
    }
    if (!complete) continue;
    ++rounds;
    CHECK(timeless(read_records(killed / "records.jsonl")) == reference);
    if (kills >= min_kills) break;
    std::filesystem::remove_all(killed);
    complete = false;
  }
  std::printf("audit_kill_test: %d runs in %d rounds, %d killed by SIGKILL\n", runs, rounds, kills);
  CHECK(kills >= min_kills);
  REQUIRE(complete);
  std::filesystem::remove_all(base);
}
