// SPDX-License-Identifier: MIT
// `latentaudit audit --jobs N` (trial/workers.hpp): the records, in their order, and the report's
// verdicts do not depend on N; a resume on another N completes the same set; over a tcp relay link
// each worker holds its own conversation with agent A, and a relay peer with another --jobs is
// refused at both ends.
#include <catch2/catch.hpp>
#include <latentaudit/dist/transport.hpp>
#include <latentaudit/trial/journal.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "support/cli_runner.hpp"
#include "support/common.hpp"

namespace la = latentaudit;
namespace fs = std::filesystem;
using la::test::ok_json;
using la::test::run_cli;

namespace {

std::vector<std::string> jobs_audit(const fs::path& out, const std::string& jobs) {
  return {"audit",
          "--model",
          la::test::models + "organism-a",
          "--partner",
          la::test::models + "organism-b",
          "--items",
          "12",
          "--seeds",
          "2",
          "--arms",
          "no_comm,text_full,kv_full,deranged,kv_noise_1,kv_int4,cross_model",
          "--drift",
          "none",
          "--jobs",
          jobs,
          "--out",
          out.string(),
          "--quiet"};
}

}  // namespace

TEST_CASE("audit --jobs: records in the same order and the same verdicts for 1, 2 and 3 workers",
          "[cli][jobs]") {
  const auto base = la::test::cli_work_dir() / "jobs";
  fs::remove_all(base);
  const auto one = ok_json(jobs_audit(base / "j1", "1"));
  const auto ref = la::test::timeless_record_lines(base / "j1" / "records.jsonl");
  REQUIRE(ref.size() == 12u * 2u * 7u);
  for (const char* n : {"2", "3"}) {
    INFO("--jobs " << n);
    const auto j = ok_json(jobs_audit(base / (std::string("j") + n), n));
    CHECK(la::test::timeless_record_lines(base / (std::string("j") + n) / "records.jsonl") == ref);
    CHECK(j.find("trials_run")->as_number() == static_cast<double>(ref.size()));
    CHECK(j.find("decision")->find("verdict")->as_string() ==
          one.find("decision")->find("verdict")->as_string());
    // every finding not on measured latencies (cost.*, gate.* read the timings, which differ)
    for (const auto& [id, v] : one.find("findings")->as_object()) {
      if (id.rfind("cost.", 0) == 0 || id.rfind("gate.", 0) == 0) continue;
      const auto* w = j.find("findings")->find(id);
      REQUIRE(w != nullptr);
      CHECK(v.as_string() == w->as_string());
    }
  }
  // a run cut short (its first 100 records kept) resumed on 3 workers completes the same records
  const auto cut = base / "cut";
  fs::create_directories(cut);
  fs::copy_file(base / "j1" / "design.json", cut / "design.json");
  {
    std::ofstream f(cut / "records.jsonl");
    const auto all = la::read_records(base / "j1" / "records.jsonl");
    for (std::size_t k = 0; k < 100; ++k) f << la::record_to_line(all[k]) << "\n";
  }
  auto resume = jobs_audit(cut, "3");
  resume.emplace_back("--resume");
  const auto rj = ok_json(resume);
  CHECK(rj.find("trials_skipped")->as_number() == 100.0);
  CHECK(la::test::timeless_record_lines(cut / "records.jsonl") == ref);
  fs::remove_all(base);
}

TEST_CASE("audit --jobs over a tcp relay link: one conversation per worker, the one-worker records",
          "[cli][jobs]") {
  const auto base = la::test::cli_work_dir() / "jobs_tcp";
  fs::remove_all(base);
  auto tcp = [&](const std::string& dir, const std::string& jobs) {
    auto w = jobs_audit(base / dir, jobs);
    w.insert(w.end(), {"--relay-transport", "tcp"});
    return w;
  };
  // the loopback peer serves both workers' conversations (the audit passes it --jobs 2)
  const auto j1 = ok_json(tcp("t1", "1"));
  const auto j2 = ok_json(tcp("t2", "2"));
  CHECK(j2.find("relay_transport")->as_string() == "tcp");
  CHECK(j2.find("trials_run")->as_number() == j1.find("trials_run")->as_number());
  CHECK(la::test::timeless_record_lines(base / "t2" / "records.jsonl") ==
        la::test::timeless_record_lines(base / "t1" / "records.jsonl"));
  std::size_t measured = 0;
  for (const auto& r : la::read_records(base / "t2" / "records.jsonl"))
    measured += r.transfer_measured_s.has_value() ? 1 : 0;
  CHECK(measured > 0);
  // a relay-peer listening first with another --jobs: both ends exit 2 naming --jobs
  std::uint16_t port = 0;
  {
    la::dist::tcp_listener probe("127.0.0.1:0");
    port = probe.port();
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const std::vector<std::string> peer_words = {"relay-peer",
                                               "--model",
                                               la::test::models + "organism-a",
                                               "--partner",
                                               la::test::models + "organism-b",
                                               "--drift",
                                               "none",
                                               "--jobs",
                                               "1",
                                               "--quiet",
                                               "--listen",
                                               address};
  const pid_t peer =
      la::test::spawn_cli(peer_words, (base / "peer.out").string(), (base / "peer.err").string());
  auto words = tcp("t3", "2");
  words.insert(words.end(), {"--relay-peer", address});
  const auto r = run_cli(words);
  int status = 0;
  REQUIRE(waitpid(peer, &status, 0) == peer);
  CHECK(r.code == 2);
  CHECK(r.err.find("the other end opens 1 relay conversation(s) (its --jobs), this one 2") !=
        std::string::npos);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 2));
  CHECK(
      la::test::slurp_file(base / "peer.err").find("run the audit and the relay peer with the same --jobs") !=
      std::string::npos);
  // --jobs 0 is refused naming the option
  la::test::expect_one_line_error(run_cli(jobs_audit(base / "z", "0")), "--jobs");
  fs::remove_all(base);
}
