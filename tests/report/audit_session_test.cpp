// SPDX-License-Identifier: MIT
// The audit as a library call (runner/audit_session.hpp): on the organisms, a session journals the
// records a bare trial driver produces (but timings), on one worker or two; fixes the engine's part
// of the identity and leaves out, with reasons, the arms the engine or tasks cannot run; refuses a
// resume of another design and skips what a resume of the same one already holds; runs agent A in
// another "process" (a thread with its own session over a loopback tcp link) with the same
// records; writes the report once as a set; stops when decided (schedule.json, the summary); and
// refuses options the topology contradicts.
#include <latentaudit/dist/transport.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/runner/audit_session.hpp>
#include <latentaudit/trial.hpp>
#include <latentaudit/trial/task_file.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/common.hpp"

using namespace latentaudit;

namespace session_test {

using latentaudit::test::models;
using engines = audit_engines<reference_cpu_engine>;

// Records without timings (they differ run to run).
std::string timeless(trial_record r) {
  r.latency = {};
  r.transfer_measured_s.reset();
  for (auto& x : r.latency_repeats_s) x = 0.0;
  return record_to_line(r);
}

std::vector<std::string> timeless_file(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (auto& r : read_records((dir / "records.jsonl").string())) out.push_back(timeless(std::move(r)));
  return out;
}

trial_design small_design(std::uint64_t items = 6) {
  trial_design d{.seed = 13, .items = items, .seeds = 1};
  d.timing_repeats = 0;
  d.arms = {parse_arm("no_comm"),  parse_arm("text_full"),   parse_arm("kv_full"),
            parse_arm("deranged"), parse_arm("cross_model"), parse_arm("text_budget_1")};
  return d;
}

organism_task_options task_options(const trial_design& d) {
  return {.seed = d.seed, .no_need_fraction = 0.3, .stale_fraction = 0.1, .conflict_fraction = 0.1};
}

// The organism's tasks as a task file source, the identity's task part as the CLI sets it.
struct fixture {
  organism_format fmt = organism_format::load(models + "organism-a");
  engines first{reference_cpu_engine::load(models + "organism-a", 1), std::nullopt, {}};
  std::filesystem::path dir;
  explicit fixture(const std::string& name, bool partner = true)
      : dir(std::filesystem::temp_directory_path() / ("latentaudit_session_" + name)) {
    std::filesystem::remove_all(dir);
    if (partner) first.partner.emplace(reference_cpu_engine::load(models + "organism-b", 1));
  }
  ~fixture() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;
  [[nodiscard]] task_file_source source(const trial_design& d, bool budget = true) const {
    auto f = organism_task_file(fmt, task_options(d), d.items);
    if (!budget)
      for (auto& t : f.tasks) t.budget_cuts.clear();
    return task_file_source(std::move(f), {}, {.vocab_size = first.engine.info().vocab_size});
  }
  [[nodiscard]] trial_design with_identity(trial_design d) const {
    d.identity.task_source = "organism";
    d.identity.task_hash = "test";
    d.identity.task_options = task_options(d).to_json();
    return d;
  }
  [[nodiscard]] audit_worker_factory<reference_cpu_engine> copies() {
    return [this] { return std::make_unique<engines>(first); };
  }
};

audit_session_options trials_only(const std::filesystem::path& out, unsigned jobs = 1) {
  audit_session_options o;
  o.out = out;
  o.trials_only = true;
  o.jobs = jobs;
  return o;
}

}  // namespace session_test

using namespace session_test;

TEST_CASE("audit_session: journals a bare driver's records on one worker or two", "[audit_session]") {
  fixture f("records");
  const trial_design d = f.with_identity(small_design());
  const auto src = f.source(d);
  std::vector<std::string> bare;
  {
    trial_driver<reference_cpu_engine> drv(f.first.engine, &*f.first.partner);
    drv.run(
        d, [&](std::uint64_t i, std::uint64_t s) { return src.task(i, s, d.seed); },
        [&](const trial_record& r) { bare.push_back(timeless(r)); });
  }
  for (const unsigned jobs : {1u, 2u}) {
    const auto out = f.dir / ("jobs" + std::to_string(jobs));
    audit_session s(d, trials_only(out, jobs));
    const auto res = s.run(src, f.first, f.copies());
    CHECK(res.stats.trials == d.trials());
    CHECK(res.summarises);
    CHECK_FALSE(res.report.has_value());
    CHECK(timeless_file(out) == bare);
    // the engine's part of the identity, written to design.json
    CHECK(res.design.identity.engine == "reference");
    CHECK(res.design.identity.model == fingerprint_text(f.first.engine.info().fingerprint));
    CHECK(res.design.identity.partner == fingerprint_text(f.first.partner->info().fingerprint));
    CHECK(read_design_json(out / "design.json") == res.design.to_json());
  }
}

TEST_CASE("audit_session: arms the engine or the tasks cannot run are left out with reasons",
          "[audit_session]") {
  fixture f("restrict", false);  // no partner: cross_model cannot run
  const trial_design d = f.with_identity(small_design());
  const auto src = f.source(d, false);  // no budget units: text_budget cannot run
  auto o = trials_only(f.dir);
  o.arms_unavailable = {{"kv_drift_10", "the caller's reason"}};
  audit_session s(d, std::move(o));
  const auto res = s.run(src, f.first);
  std::vector<std::string> left;
  for (const auto& x : res.arms_unavailable) left.push_back(x.arm);
  CHECK(left == std::vector<std::string>{"kv_drift_10", "cross_model", "text_budget_1"});
  CHECK(res.design.arms.size() == 4);
  CHECK(res.stats.trials == 4 * d.items);
  const json_value* why = res.design.identity.options.find("arms_unavailable_on_engine");
  REQUIRE(why != nullptr);
  CHECK(why->find("cross_model") != nullptr);
  CHECK(why->find("text_budget_1") != nullptr);
}

TEST_CASE("audit_session: a resume skips what it holds and refuses another design", "[audit_session]") {
  fixture f("resume");
  const trial_design d = f.with_identity(small_design());
  const auto src = f.source(d);
  { (void)audit_session(d, trials_only(f.dir)).run(src, f.first); }
  const auto first_run = timeless_file(f.dir);
  auto o = trials_only(f.dir);
  o.resume = true;
  const auto again = audit_session(d, std::move(o)).run(src, f.first);
  CHECK(again.stats.trials == 0);
  CHECK(again.stats.skipped == d.trials());
  CHECK(timeless_file(f.dir) == first_run);
  trial_design other = d;
  other.seed = 14;
  auto o2 = trials_only(f.dir);
  o2.resume = true;
  CHECK_THROWS_AS(audit_session(other, std::move(o2)).run(f.source(other), f.first), error);
  CHECK(timeless_file(f.dir) == first_run);  // nothing mixed
  // a session runs once: its lock went to the first run's journal
  auto o3 = trials_only(f.dir);
  o3.resume = true;
  audit_session once(d, std::move(o3));
  CHECK(once.run(src, f.first).stats.trials == 0);
  CHECK_THROWS_WITH(once.run(src, f.first), Catch::Contains("a session runs once"));
  CHECK(timeless_file(f.dir) == first_run);
}

namespace session_test {

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// `from`'s design.json and its records.jsonl's first `lines` lines, then a torn line and the zero
// padding a killed journal leaves, in `to`.
void crashed_copy(const std::filesystem::path& from, const std::filesystem::path& to, std::size_t lines) {
  std::filesystem::create_directories(to);
  std::filesystem::copy_file(from / "design.json", to / "design.json");
  const std::string all = file_text(from / "records.jsonl");
  std::size_t end = 0;
  for (std::size_t k = 0; k < lines; ++k) end = all.find('\n', end) + 1;
  write_text(to / "records.jsonl", all.substr(0, end) + R"({"item": 3, "seed")" + std::string(4096, '\0'));
}

}  // namespace session_test

TEST_CASE("audit_session: a resume parses each records file once and ends as an uninterrupted run",
          "[audit_session]") {
  fixture f("parse_once");
  const trial_design d = f.with_identity(small_design());
  const auto src = f.source(d);
  const auto reported = [&](const std::filesystem::path& out, bool resume) {
    audit_session_options o;
    o.out = out;
    o.resume = resume;
    o.report.bootstrap_replicates = 199;
    return o;
  };
  const auto whole = f.dir / "whole";
  (void)audit_session(d, reported(whole, false)).run(src, f.first);
  const auto reference = timeless_file(whole);
  REQUIRE(reference.size() == d.trials());
  // killed halfway: the resume reads records.jsonl once (before: the records set's check, the
  // journal and the keys done each parsed it) and runs the rest
  const auto cut = f.dir / "cut";
  crashed_copy(whole, cut, reference.size() / 2);
  auto o = trials_only(cut);
  o.resume = true;
  const std::uint64_t before = detail::records_parsed.load();
  const auto res = audit_session(d, std::move(o)).run(src, f.first);
  CHECK(detail::records_parsed.load() - before == 1);
  CHECK(res.stats.skipped == reference.size() / 2);
  CHECK(res.stats.trials == d.trials() - reference.size() / 2);
  CHECK(timeless_file(cut) == reference);
  // killed after the last record: the resume runs nothing and writes the uninterrupted run's report;
  // it parses records.jsonl on opening and once more for the report
  const auto late = f.dir / "late";
  crashed_copy(whole, late, reference.size());
  const std::uint64_t before2 = detail::records_parsed.load();
  const auto res2 = audit_session(d, reported(late, true)).run(src, f.first);
  CHECK(detail::records_parsed.load() - before2 == 2);
  CHECK(res2.stats.trials == 0);
  CHECK(file_text(late / "records.jsonl") == file_text(whole / "records.jsonl"));
  for (const char* name : {"report.json", "report.md"})
    CHECK(file_text(late / name) == file_text(whole / name));
}

TEST_CASE("audit_session: agent A in another process over tcp gives the same records", "[audit_session]") {
  fixture f("tcp");
  const trial_design d = f.with_identity(small_design(4));
  const auto src = f.source(d);
  { (void)audit_session(d, trials_only(f.dir / "local")).run(src, f.first); }
  dist::tcp_listener listener("127.0.0.1:0", {.timeout_s = 30});
  const std::string address = "127.0.0.1:" + std::to_string(listener.port());
  std::string peer_error;
  driver_stats served;
  std::thread peer([&] {
    try {
      fixture a("tcp_a");
      auto link = dist::tcp_transport::connect(address, {.timeout_s = 30});
      audit_session_options o;
      o.topology.role = audit_role::agent_a;
      o.topology.channel = [&](unsigned, const trial_design&) -> dist::relay_channel& { return link; };
      const auto res = audit_session(d, std::move(o)).run(a.source(d), a.first);
      CHECK_FALSE(res.summarises);
      served = res.stats;
    } catch (const std::exception& e) {
      peer_error = e.what();
    }
  });
  auto link = listener.accept();
  auto o = trials_only(f.dir / "relay");
  o.topology.channel = [&](unsigned, const trial_design&) -> dist::relay_channel& { return link; };
  bool ended = false;
  o.topology.after_trials = [&] { ended = true; };
  const auto res = audit_session(d, std::move(o)).run(src, f.first);
  peer.join();
  CHECK(peer_error.empty());
  CHECK(ended);
  CHECK(res.stats.trials == d.trials());
  CHECK(timeless_file(f.dir / "relay") == timeless_file(f.dir / "local"));
}

namespace session_test {

// Agent A in a thread that receives the design from B's greeting (dist::design_of_hello) and serves
// it on `model` (and the other organism as partner); returns B's records but timings, and sets
// `b_error` and `a_error` to the two ends' failures, if any.
std::vector<std::string> relay_from_the_wire(fixture& f, const trial_design& d, const std::string& model,
                                             std::string& b_error, std::string& a_error) {
  dist::tcp_listener listener("127.0.0.1:0", {.timeout_s = 30});
  const std::string address = "127.0.0.1:" + std::to_string(listener.port());
  std::thread peer([&] {
    try {
      const std::string other = model == "organism-a" ? "organism-b" : "organism-a";
      engines a_side{
          reference_cpu_engine::load(models + model, 1), reference_cpu_engine::load(models + other, 1), {}};
      auto link = dist::tcp_transport::connect(address, {.timeout_s = 30});
      audit_session_options o;
      o.topology.role = audit_role::agent_a;
      o.topology.received_hello = dist::receive_hello(link);
      trial_design received = dist::design_of_hello(o.topology.received_hello);
      o.topology.channel = [&](unsigned, const trial_design&) -> dist::relay_channel& { return link; };
      const auto src = f.source(received);
      (void)audit_session(std::move(received), std::move(o)).run(src, a_side);
    } catch (const std::exception& e) {
      a_error = e.what();
    }
  });
  auto link = listener.accept();
  auto o = trials_only(f.dir / "wire");
  o.topology.channel = [&](unsigned, const trial_design&) -> dist::relay_channel& { return link; };
  try {
    (void)audit_session(d, std::move(o)).run(f.source(d), f.first);
  } catch (const std::exception& e) {
    b_error = e.what();
  }
  peer.join();
  return b_error.empty() ? timeless_file(f.dir / "wire") : std::vector<std::string>{};
}

}  // namespace session_test

TEST_CASE("audit_session: a relay peer runs the design it receives and is refused where its model differs",
          "[audit_session]") {
  fixture f("from_wire");
  const trial_design d = f.with_identity(small_design(4));
  { (void)audit_session(d, trials_only(f.dir / "local")).run(f.source(d), f.first); }
  std::string b_error, a_error;
  CHECK(relay_from_the_wire(f, d, "organism-a", b_error, a_error) == timeless_file(f.dir / "local"));
  CHECK(b_error.empty());
  CHECK(a_error.empty());
  // a peer whose model is not the one the audit names: refused before any trial, naming the field
  std::filesystem::remove_all(f.dir / "wire");
  (void)relay_from_the_wire(f, d, "organism-b", b_error, a_error);
  CHECK_THAT(b_error, Catch::Contains("refused by the relay peer") && Catch::Contains("model_fingerprint"));
  CHECK_THAT(a_error, Catch::Contains("model_fingerprint"));
  CHECK(read_records((f.dir / "wire" / "records.jsonl").string()).empty());
}

TEST_CASE("audit_session: the report is written once as a set and stopping when decided looks",
          "[audit_session]") {
  fixture f("report");
  const trial_design d = f.with_identity(small_design(20));
  const auto src = f.source(d);
  audit_session_options o;
  o.out = f.dir;
  o.report.bootstrap_replicates = 199;
  o.batch_items = 10;
  for (const auto& t : organism_task_file(f.fmt, task_options(d), d.items).tasks)
    o.item_regime.emplace_back(regime_name(t.regime));
  std::size_t looks_seen = 0;
  o.on_look = [&](std::size_t k, std::size_t looks, std::uint64_t items, const audit_report&, std::size_t,
                  std::size_t) {
    ++looks_seen;
    CHECK(looks == 2);
    CHECK(items == 10 * k);
  };
  std::size_t analysed = 0;
  o.before_report = [&](std::size_t n) { analysed = n; };
  const auto res = audit_session(d, std::move(o)).run(src, f.first);
  REQUIRE(res.report.has_value());
  CHECK(looks_seen >= 1);
  CHECK(res.until_decided.find("looks_taken")->as_number() == static_cast<double>(looks_seen));
  CHECK(analysed == res.records);
  CHECK(res.records == read_records((f.dir / "records.jsonl").string()).size());
  for (const char* name : {"report.md", "report.json", "report.html", "schedule.json", "design.json"})
    CHECK(std::filesystem::exists(f.dir / name));
  // the identity names the stopping rule: a resume with another rule is refused
  CHECK(res.design.identity.options.find("until_decided") != nullptr);
  // a resume replays the looks on the records it read on opening (records.jsonl parsed once, and
  // once more for the report) and writes the same report
  const std::string report_json = file_text(f.dir / "report.json");
  audit_session_options again;
  again.out = f.dir;
  again.resume = true;
  again.report.bootstrap_replicates = 199;
  again.batch_items = 10;
  for (const auto& t : organism_task_file(f.fmt, task_options(d), d.items).tasks)
    again.item_regime.emplace_back(regime_name(t.regime));
  const std::uint64_t before = detail::records_parsed.load();
  const auto res2 = audit_session(d, std::move(again)).run(src, f.first);
  CHECK(detail::records_parsed.load() - before == 2);
  CHECK(res2.stats.trials == 0);
  CHECK(file_text(f.dir / "report.json") == report_json);
}

TEST_CASE("audit_session: options the topology contradicts are refused", "[audit_session]") {
  const trial_design d = small_design();
  audit_session_options o;
  o.batch_items = 2;
  o.item_regime.assign(d.items, "need");
  o.topology.channel = [](unsigned, const trial_design&) -> dist::relay_channel& { throw error("no link"); };
  CHECK_THROWS_AS(audit_session(d, std::move(o)), invalid_argument);
  audit_session_options a;
  a.topology.role = audit_role::agent_a;  // without its channels
  CHECK_THROWS_AS(audit_session(d, std::move(a)), invalid_argument);
  audit_session_options z;
  z.jobs = 0;
  CHECK_THROWS_AS(audit_session(d, std::move(z)), invalid_argument);
  audit_session_options r;
  r.batch_items = 2;  // without the items' regimes
  CHECK_THROWS_AS(audit_session(d, std::move(r)), invalid_argument);
}
