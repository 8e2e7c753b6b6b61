// SPDX-License-Identifier: MIT
// Sharded audits (`mpirun -np N latentaudit audit`, docs/distributed.md): the records and the
// report of N = 1, 2, 3 ranks equal a one-process run's (timings aside) under every schedule, also
// with --jobs 2 workers on each rank; a
// rank that cannot load its model, or ranks that disagree on the design, stop the whole job with
// that rank's message before any trial; kill -9 of one rank and --resume lose nothing and run no
// key twice. Each test starts Open MPI's mpirun with 2-3 ranks (--oversubscribe: the CI machine
// has 2 cores) and the two variables Open MPI needs to run as root, set here and nowhere else.
#include <latentaudit/core/rng.hpp>
#include <latentaudit/dist/shard.hpp>
#include <latentaudit/trial/journal.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "support/cli_runner.hpp"
#include "support/common.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;

// The audit's words for a small design: `items` items x 2 seeds x the built-in arms.
std::vector<std::string> audit_words(const std::filesystem::path& out, std::vector<std::string> extra = {},
                                     int items = 8) {
  std::vector<std::string> w = {"audit",
                                "--model",
                                models + "organism-a",
                                "--partner",
                                models + "organism-b",
                                "--items",
                                std::to_string(items),
                                "--seeds",
                                "2",
                                "--out",
                                out.string(),
                                "--quiet",
                                "--drift",
                                "none",
                                "--bootstrap",
                                "200"};
  w.insert(w.end(), extra.begin(), extra.end());
  return w;
}

// mpirun's words for one program run by `ranks` ranks, or (MPMD) several programs joined by ":".
std::vector<std::string> mpirun_words(const std::vector<std::pair<int, std::vector<std::string>>>& apps) {
  std::vector<std::string> w = {LATENTAUDIT_MPIEXEC, "--oversubscribe", "--bind-to", "none"};
  for (std::size_t i = 0; i < apps.size(); ++i) {
    if (i > 0) w.emplace_back(":");
    w.insert(w.end(), {"-np", std::to_string(apps[i].first), LATENTAUDIT_CLI_PATH});
    w.insert(w.end(), apps[i].second.begin(), apps[i].second.end());
  }
  return w;
}

// Starts mpirun with Open MPI's permission to run as root in its environment only.
pid_t spawn_mpirun(const std::vector<std::string>& words, const std::string& out, const std::string& err) {
  std::vector<std::string> env_s = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
  std::vector<char*> envp, argv;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> ws = words;
  for (auto& x : ws) argv.push_back(x.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

// Waits for `pid` at most `limit`; a job still running then is killed and fails the test (a hang).
int wait_exit(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(90)) {
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    REQUIRE(r >= 0);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() - t0 > limit) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("mpirun did not finish within " << limit.count() << " s (a hang)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// Complete lines in the records files of `dir` so far (the journals' progress; a torn last line
// is not counted).
std::size_t journal_lines(const std::filesystem::path& dir) {
  std::size_t n = 0;
  if (!std::filesystem::exists(dir)) return 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("records", 0) != 0 || e.path().extension() != ".jsonl") continue;
    const std::string text = test::slurp_file(e.path());
    n += static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  }
  return n;
}

// Whether `pid` has exited, without reaping it (wait_exit reaps it after).
bool exited(pid_t pid) {
  siginfo_t info{};
  info.si_pid = 0;
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

test::run_result run_mpirun(const std::vector<std::pair<int, std::vector<std::string>>>& apps) {
  const std::string out = (test::cli_work_dir() / "mpi_stdout.txt").string(),
                    err = (test::cli_work_dir() / "mpi_stderr.txt").string();
  test::run_result r;
  r.code = wait_exit(spawn_mpirun(mpirun_words(apps), out, err));
  r.out = test::slurp_file(out);
  r.err = test::slurp_file(err);
  return r;
}

// Records by key with the measured timings cleared (they differ between any two runs).
std::map<trial_key, std::string> timeless(const std::vector<trial_record>& rs) {
  std::map<trial_key, std::string> m;
  for (auto r : rs) {
    r.latency = {};
    for (auto& x : r.latency_repeats_s) x = 0.0;
    m[{r.item, r.seed, r.arm}] = record_to_line(r);
  }
  return m;
}

// report.json without what the measured timings decide: the cost sections, the arms' mean
// receiver latencies, the cost findings' numbers and the decision's cost check (the cost
// verdicts rest on timings; when they agree, the whole decision is compared).
std::string without_timings(const std::filesystem::path& report) {
  json_value j = parse_json(test::slurp_file(report), {.max_depth = 64, .max_bytes = std::size_t{1} << 26});
  json_value out = json_value::object();
  for (const auto& [k, v] : j.as_object()) {
    if (k == "cost" || k == "cost_sensitivity") continue;
    json_value x = v;
    if (k == "arms")
      for (auto& a : x.as_array()) a.set("mean_receiver_s", json_value());
    if (k == "findings")
      for (auto& f : x.as_array())
        if (f.find("id")->as_string().rfind("cost.", 0) == 0) f = json_value::object({{"id", *f.find("id")}});
    if (k == "decision")
      for (auto& [dk, dv] : x.as_object())
        if (dk == "checklist")
          for (auto& c : dv.as_array())
            if (c.find("check")->as_string() == "cost") c.set("reason", json_value());
    out.set(k, std::move(x));
  }
  return write_json(out);
}

// The number of arms of the design in `dir` (its design.json).
std::size_t arms_of(const std::filesystem::path& dir) {
  return read_design_json(dir / "design.json").find("arms")->as_array().size();
}

std::vector<trial_record> read_set(const std::filesystem::path& dir) {
  return dist::read_records_set(dist::records_files(dir));
}

}  // namespace

TEST_CASE("sharded audit: N = 1, 2, 3 ranks give the one-process records and report under every schedule") {
  const auto base = test::cli_work_dir() / "sharded";
  std::filesystem::remove_all(base);
  const auto one = base / "one";
  const auto r1 = test::run_cli(audit_words(one));
  INFO(r1.err);
  REQUIRE(r1.code == 0);
  const auto reference = timeless(read_records(one / "records.jsonl"));
  const std::size_t arms = arms_of(one);  // the built-in arms without drifted senders
  REQUIRE(arms >= 20u);
  REQUIRE(reference.size() == 8u * 2u * arms);
  const std::string ref_report = without_timings(one / "report.json");

  struct run_case {
    int ranks;
    std::string schedule;
  };
  for (const auto& c : {run_case{1, "interleaved"}, run_case{2, "interleaved"}, run_case{3, "dynamic"},
                        run_case{3, "block"}}) {
    const auto dir = base / ("n" + std::to_string(c.ranks) + "_" + c.schedule);
    const auto r = run_mpirun({{c.ranks, audit_words(dir, {"--shard-schedule", c.schedule})}});
    INFO("N = " << c.ranks << ", " << c.schedule << ": " << r.err);
    REQUIRE(r.code == 0);
    const auto files = dist::records_files(dir);
    // N = 1 is a one-process run (records.jsonl); N > 1 writes one records.<rank>.jsonl per rank.
    CHECK(files.size() == static_cast<std::size_t>(c.ranks));
    if (c.ranks > 1) CHECK(files.back().filename() == dist::rank_records_name(c.ranks - 1));
    CHECK(timeless(read_set(dir)) == reference);  // throws on a key twice
    CHECK(without_timings(dir / "report.json") == ref_report);
    const json_value summary = parse_json(r.out);
    CHECK(summary.find("trials_run")->as_number() == static_cast<double>(8u * 2u * arms));
    if (c.ranks > 1) {
      const json_value* sh = summary.find("shard");
      REQUIRE(sh != nullptr);
      CHECK(sh->find("ranks")->as_number() == c.ranks);
      CHECK(sh->find("schedule")->as_string() == c.schedule);
      double units = 0;
      for (const auto& pr : sh->find("per_rank")->as_array()) units += pr.find("units")->as_number();
      CHECK(units == 16.0);
    }
  }

  // `report --records DIR` reads the rank files as one set, in the one-process order: with the
  // reference run's timings copied in, its report.json is byte for byte the reference's.
  const auto dir = base / "n3_dynamic";
  std::map<trial_key, trial_record> ref_records;
  for (auto& r : read_records(one / "records.jsonl")) ref_records[{r.item, r.seed, r.arm}] = r;
  for (const auto& f : dist::records_files(dir)) {
    std::string text;
    for (const auto& r : read_records(f))
      text += record_to_line(ref_records.at({r.item, r.seed, r.arm})) + "\n";
    std::ofstream(f, std::ios::binary | std::ios::trunc) << text;
  }
  // both as audit directories: `report` reads design.json beside the records (the design's units are
  // the report's denominator), so a bare records file would give another completeness section
  const auto a = test::run_cli({"report", "--records", one.string(), "--out", (base / "report_one").string(),
                                "--bootstrap", "200", "--quiet"});
  const auto b = test::run_cli({"report", "--records", dir.string(), "--out", (base / "report_set").string(),
                                "--bootstrap", "200", "--quiet"});
  INFO(a.err << b.err);
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  CHECK(test::slurp_file(base / "report_set" / "report.json") ==
        test::slurp_file(base / "report_one" / "report.json"));
  std::filesystem::remove_all(base);
}

TEST_CASE("sharded audit: --jobs 2 on each of 2 ranks gives the one-process records and report") {
  const auto base = test::cli_work_dir() / "sharded_jobs";
  std::filesystem::remove_all(base);
  const auto r1 = test::run_cli(audit_words(base / "one"));
  INFO(r1.err);
  REQUIRE(r1.code == 0);
  const auto reference = timeless(read_records(base / "one" / "records.jsonl"));
  const std::string ref_report = without_timings(base / "one" / "report.json");
  // interleaved, one worker per rank: each rank's file in the order of its units
  const auto plain = run_mpirun({{2, audit_words(base / "plain", {"--shard-schedule", "interleaved"})}});
  INFO(plain.err);
  REQUIRE(plain.code == 0);
  for (const auto& sch : {std::string("interleaved"), std::string("dynamic")}) {
    const auto dir = base / sch;
    const auto r = run_mpirun({{2, audit_words(dir, {"--shard-schedule", sch, "--jobs", "2"})}});
    INFO(sch << ": " << r.err);
    REQUIRE(r.code == 0);
    CHECK(timeless(read_set(dir)) == reference);  // throws on a key twice
    CHECK(without_timings(dir / "report.json") == ref_report);
    const json_value summary = parse_json(r.out);
    double units = 0;
    for (const auto& pr : summary.find("shard")->find("per_rank")->as_array())
      units += pr.find("units")->as_number();
    CHECK(units == 16.0);
    if (sch == "interleaved")  // the same units per rank, journaled in the same order as by one worker
      for (int rank = 0; rank < 2; ++rank) {
        auto order = [&](const std::filesystem::path& f) {
          std::vector<trial_key> keys;
          for (const auto& x : read_records(f)) keys.push_back({x.item, x.seed, x.arm});
          return keys;
        };
        CHECK(order(dir / dist::rank_records_name(rank)) ==
              order(base / "plain" / dist::rank_records_name(rank)));
      }
  }
  std::filesystem::remove_all(base);
}

TEST_CASE("sharded audit: a rank that cannot load its model stops every rank with its message") {
  const auto base = test::cli_work_dir() / "sharded_fail";
  std::filesystem::remove_all(base);
  // MPMD: rank 1 is started with another --model (a directory without a model), as a wrong
  // per-node path would do.
  const auto missing = base / "no-such-model";
  auto bad = audit_words(base / "out");
  bad[2] = missing.string();
  const auto r = run_mpirun({{1, audit_words(base / "out")}, {1, bad}});
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("latentaudit: error: rank 1: ") != std::string::npos);
  CHECK(r.err.find(missing.string()) != std::string::npos);
  CHECK(dist::records_set_keys(dist::records_files(base / "out")).empty());  // before any trial
  std::filesystem::remove_all(base);
}

TEST_CASE("sharded audit: ranks that disagree on the design exit before any trial, naming the field") {
  const auto base = test::cli_work_dir() / "sharded_design";
  std::filesystem::remove_all(base);
  const auto r =
      run_mpirun({{2, audit_words(base / "out")}, {1, audit_words(base / "out", {"--seed", "7"})}});
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find("latentaudit: error: rank 2: audit: the ranks disagree on the design") !=
        std::string::npos);
  CHECK(r.err.find("field 'seed'") != std::string::npos);
  CHECK(dist::records_set_keys(dist::records_files(base / "out")).empty());
  std::filesystem::remove_all(base);
}

TEST_CASE("sharded audit: kill -9 of one rank, then --resume: nothing lost, no key twice") {
  const auto base = test::cli_work_dir() / "sharded_kill";
  std::filesystem::remove_all(base);
  const auto clean = base / "clean", killed = base / "killed";
  const auto words = [](const std::filesystem::path& out) {
    return audit_words(out, {"--resume", "--trials-only"}, 16);
  };
  const auto r1 = test::run_cli(words(clean));
  INFO(r1.err);
  REQUIRE(r1.code == 0);
  const auto reference = timeless(read_records(clean / "records.jsonl"));
  REQUIRE(reference.size() == 16u * 2u * arms_of(clean));

  const std::uint64_t seed = 20261201;
  std::printf("sharded_audit_test: kill schedule seed %llu\n", static_cast<unsigned long long>(seed));
  auto g = make_stream({seed, 0, 0, 0});
  int kills = 0, runs = 0, partial_resumes = 0, rounds = 0;
  bool complete = false;
  const std::string out = (base / "stdout.txt").string(), err = (base / "stderr.txt").string();
  std::filesystem::create_directories(base);
  // Rounds of killed runs and resumes until the set is complete; the ranks that survive a kill
  // keep journaling until mpirun tears them down (hundreds of records here), so a round may
  // complete the set before the kills the test wants: each complete round is checked against the
  // reference, then the next one starts from an empty directory.
  while (runs < 60) {
    // 3 ranks under dynamic, then 2 under interleaved, ...: a resume may change N and the schedule.
    const int n = 2 + runs % 2;
    const auto before = dist::records_set_keys(dist::records_files(killed)).size();
    partial_resumes += before > 0 && before < reference.size() ? 1 : 0;
    auto w = words(killed);
    w.insert(w.end(), {"--shard-schedule", runs % 2 == 0 ? "interleaved" : "dynamic"});
    const pid_t pid = spawn_mpirun(mpirun_words({{n, w}}), out, err);
    ++runs;
    if (kills < 3 || partial_resumes < 2) {
      // Kill on progress, not on a clock (a fixed delay let the whole job finish first on a fast
      // machine): once the set holds a random share of the keys still missing, SIGKILL one rank;
      // mpirun tears the job down.
      const double share = 0.05 + 0.45 * uniform01(g);
      const auto target =
          before + std::max<std::size_t>(
                       1, static_cast<std::size_t>(share * static_cast<double>(reference.size() - before)));
      const auto t0 = std::chrono::steady_clock::now();
      while (journal_lines(killed) < target && !exited(pid) &&
             std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::vector<pid_t> ranks;
      for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string stat = test::slurp_file(e.path() / "stat");
        const auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 2));
        char state = 0;
        long ppid = 0;
        rest >> state >> ppid;
        if (ppid == pid) ranks.push_back(static_cast<pid_t>(std::stol(name)));
      }
      if (!ranks.empty())
        ::kill(
            ranks[static_cast<std::size_t>(uniform01(g) * static_cast<double>(ranks.size())) % ranks.size()],
            SIGKILL);
      const int code = wait_exit(pid);
      if (code != 0) ++kills;
    } else {
      const int code = wait_exit(pid);
      INFO(test::slurp_file(err));
      REQUIRE(code == 0);
    }
    // Every file of the set so far: a key twice (in one file or two) throws here.
    const auto files = dist::records_files(killed);
    const auto keys = dist::records_set_keys(files);
    complete = keys.size() == reference.size();
    if (!complete) continue;
    ++rounds;
    CHECK(timeless(read_set(killed)) == reference);  // nothing lost, nothing changed, no torn line
    if (kills >= 3 && partial_resumes >= 2) break;
    std::filesystem::remove_all(killed);
    complete = false;
  }
  std::printf("sharded_audit_test: %d runs in %d rounds, %d killed, %d resumed a partial set\n", runs, rounds,
              kills, partial_resumes);
  CHECK(kills >= 3);
  CHECK(partial_resumes >= 2);
  REQUIRE(complete);
  std::filesystem::remove_all(base);
}

TEST_CASE("sharded audit: schedules, records files and launch detection") {
  using dist::shard_schedule;
  // Block: contiguous shares of sizes floor / ceil of units / ranks, in rank order.
  for (std::uint64_t units : {1u, 7u, 16u, 100u})
    for (int ranks : {1, 2, 3, 8}) {
      std::vector<int> count(static_cast<std::size_t>(ranks));
      int last = 0;
      for (std::uint64_t p = 0; p < units; ++p) {
        const int o = dist::static_owner(shard_schedule::block, p, units, ranks);
        REQUIRE(o >= last);
        last = o;
        ++count[static_cast<std::size_t>(o)];
        CHECK(dist::static_owner(shard_schedule::interleaved, p, units, ranks) ==
              static_cast<int>(p % ranks));
      }
      for (int c : count)
        CHECK((c == static_cast<int>(units / ranks) || c == static_cast<int>(units / ranks) + 1));
    }
  CHECK_THROWS_AS(dist::static_owner(shard_schedule::dynamic, 0, 1, 2), invalid_argument);
  CHECK(dist::parse_schedule("interleaved") == shard_schedule::interleaved);
  CHECK_FALSE(dist::parse_schedule("round-robin"));

  const auto dir = test::cli_work_dir() / "records_files";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* n :
       {"records.10.jsonl", "records.2.jsonl", "records.jsonl", "records.02.jsonl", "records.x.jsonl"})
    std::ofstream(dir / n) << "";
  const auto files = dist::records_files(dir);
  REQUIRE(files.size() == 3u);
  CHECK(files[0].filename() == "records.jsonl");
  CHECK(files[1].filename() == "records.2.jsonl");
  CHECK(files[2].filename() == "records.10.jsonl");
  std::filesystem::remove_all(dir);

  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  const auto l = dist::mpi_launch_from_env();
  REQUIRE(l);
  CHECK(l->world_size == 3);
  CHECK(l->variable == "OMPI_COMM_WORLD_SIZE");
  ::setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  CHECK_FALSE(dist::mpi_launch_from_env());
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
}

TEST_CASE(
    "audit --relay-transport mpi: agent A on rank 1, agent B on rank 0 journals the one-process records") {
  const auto base = test::cli_work_dir() / "mpi_relay";
  std::filesystem::remove_all(base);
  const std::vector<std::string> arms = {"--arms", "no_comm,text_full,kv_full,kv_int8,deranged"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), arms.begin(), arms.end());
    return extra;
  };
  const auto r1 = test::run_cli(audit_words(base / "one", with({}), 6));
  INFO(r1.err);
  REQUIRE(r1.code == 0);
  auto strip = [](std::vector<trial_record> rs) {  // the measured transfer differs between runs too
    for (auto& r : rs) r.transfer_measured_s.reset();
    return timeless(rs);
  };
  const auto reference = strip(read_records(base / "one" / "records.jsonl"));
  REQUIRE(reference.size() == 6u * 2u * 5u);

  const auto dir = base / "mpi";
  const auto r = run_mpirun({{2, audit_words(dir, with({"--relay-transport", "mpi"}), 6)}});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(dist::records_files(dir) == std::vector<std::filesystem::path>{dir / "records.jsonl"});
  const auto records = read_records(dir / "records.jsonl");
  CHECK(strip(records) == reference);
  std::size_t measured = 0;
  for (const auto& x : records) {  // every relay (bytes on the link) was measured; no_comm sends nothing
    CHECK((x.bytes > 0) == x.transfer_measured_s.has_value());
    measured += x.transfer_measured_s.has_value();
  }
  CHECK(measured == 6u * 2u * 4u);
  const json_value summary = parse_json(r.out);
  CHECK(summary.find("relay_transport")->as_string() == "mpi");
  CHECK(summary.find("trials_run")->as_number() == 60.0);
  CHECK(std::filesystem::exists(dir / "report.json"));
  // --jobs 2: two conversations between the ranks (a pair of tags each, MPI_THREAD_MULTIPLE), the
  // same records in the same order
  const auto dir2 = base / "mpi_jobs";
  const auto r2 = run_mpirun({{2, audit_words(dir2, with({"--relay-transport", "mpi", "--jobs", "2"}), 6)}});
  INFO(r2.err);
  REQUIRE(r2.code == 0);
  CHECK(strip(read_records(dir2 / "records.jsonl")) == reference);
  CHECK(parse_json(r2.out).find("trials_run")->as_number() == 60.0);

  // Not under mpirun, or N != 2: one line, exit 2, before any trial.
  const auto solo = test::run_cli(audit_words(base / "solo", with({"--relay-transport", "mpi"}), 6));
  test::expect_one_line_error(solo, "--relay-transport mpi runs under `mpirun -np 2`");
  const auto three = run_mpirun({{3, audit_words(base / "three", with({"--relay-transport", "mpi"}), 6)}});
  CHECK(three.code == 2);
  CHECK(three.err.find("latentaudit: error: rank 0: audit: --relay-transport mpi runs under `mpirun -np 2` "
                       "(agent B on rank 0, agent A on rank 1), got 3 ranks") != std::string::npos);
  // Agent A's rank cannot load its model: both ranks stop with its message, no trial runs.
  auto bad = audit_words(base / "fail", with({"--relay-transport", "mpi"}), 6);
  bad[2] = (base / "no-such-model").string();
  const auto failed =
      run_mpirun({{1, audit_words(base / "fail", with({"--relay-transport", "mpi"}), 6)}, {1, bad}});
  CHECK(failed.code == 2);
  CHECK(failed.err.find("latentaudit: error: rank 1: ") != std::string::npos);
  CHECK(failed.err.find((base / "no-such-model").string()) != std::string::npos);
  CHECK(dist::records_set_keys(dist::records_files(base / "fail")).empty());
  std::filesystem::remove_all(base);
}
