// SPDX-License-Identifier: MIT
// `latentaudit audit --relay-transport tcp`: agent A in a loopback peer the audit spawns, or in a
// `latentaudit relay-peer --listen` started first; every relay record carries
// transfer_measured_s, the report fits the link (--link measured uses it), and bad relay options
// exit 2 with one line.
#include <latentaudit/dist/transport.hpp>
#include <latentaudit/trial/journal.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include <sys/wait.h>

#include "support/cli_runner.hpp"
#include "support/common.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;

std::vector<std::string> small_audit(const std::filesystem::path& out, std::vector<std::string> extra) {
  std::vector<std::string> a = {"audit",
                                "--model",
                                models + "organism-a",
                                "--items",
                                "4",
                                "--seeds",
                                "1",
                                "--arms",
                                "no_comm,text_full,kv_full,kv_int8",
                                "--drift",
                                "none",
                                "--bootstrap",
                                "200",
                                "--out",
                                out.string(),
                                "--quiet",
                                "--timing-repeats",
                                "0"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void check_measured(const std::filesystem::path& out) {
  std::size_t relays = 0;
  for (const auto& r : read_records(out / "records.jsonl")) {
    CHECK(!r.relay_error);
    if (r.bytes > 0) {
      CHECK(r.transfer_measured_s.has_value());
      ++relays;
    }
  }
  CHECK(relays == 12);  // 4 items x 3 relaying arms
  const auto rep = parse_json(test::slurp_file(out / "report.json"));
  REQUIRE(rep.find("link_fit") != nullptr);
  CHECK(rep.at("link_fit").at("relays").as_number() == 12);
}

}  // namespace

TEST_CASE("audit --relay-transport tcp: a spawned loopback peer, or a relay-peer started first") {
  const auto dir = test::cli_work_dir() / "relay_tcp";
  const auto j =
      test::ok_json(small_audit(dir / "spawned", {"--relay-transport", "tcp", "--link", "measured"}));
  CHECK(j.at("relay_transport").as_string() == "tcp");
  CHECK(j.at("decision").at("link").as_string() == "measured");
  check_measured(dir / "spawned");
  // a peer listening first (a free port: bind 0, read it, let it go)
  std::uint16_t port = 0;
  {
    dist::tcp_listener probe("127.0.0.1:0");
    port = probe.port();
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);
  // the peer's own options only: the design comes in the audit's greeting
  const std::vector<std::string> peer_words = {"relay-peer",          "--listen", address, "--model",
                                               models + "organism-a", "--drift",  "none",  "--quiet"};
  const pid_t peer = test::spawn_cli(peer_words, (dir.parent_path() / "peer.out").string(),
                                     (dir.parent_path() / "peer.err").string());
  const auto r =
      test::run_cli(small_audit(dir / "listened", {"--relay-transport", "tcp", "--relay-peer", address}));
  int status = 0;
  REQUIRE(waitpid(peer, &status, 0) == peer);
  INFO("audit stderr: " << r.err << "; peer stderr: " << test::slurp_file(dir.parent_path() / "peer.err"));
  REQUIRE(r.code == 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  check_measured(dir / "listened");
}

TEST_CASE("audit --relay-transport: bad relay options exit 2 with one line") {
  const auto dir = test::cli_work_dir() / "relay_bad";
  test::expect_one_line_error(test::run_cli(small_audit(dir, {"--relay-transport", "carrier-pigeon"})),
                              "--relay-transport must be tcp");
  test::expect_one_line_error(test::run_cli(small_audit(dir, {"--relay-peer", "127.0.0.1:9"})),
                              "--relay-peer needs --relay-transport tcp");
  test::expect_one_line_error(
      test::run_cli(small_audit(dir, {"--relay-transport", "tcp", "--relay-peer", "nocolon"})),
      "--relay-peer must read HOST:PORT");
  test::expect_one_line_error(test::run_cli(small_audit(dir, {"--link", "measured"})),
                              "--link measured needs --relay-transport");
  test::expect_one_line_error(test::run_cli({"relay-peer", "--items", "4"}),
                              "exactly one of --listen HOST:PORT and --connect HOST:PORT");
  // the design is the audit's: a relay peer reads no design option (its reader knows only the
  // models, tasks, drift manifest, maps, threads and workers it runs the design on)
  for (const char* design_option : {"--items", "--arms", "--out"})
    test::expect_one_line_error(test::run_cli({"relay-peer", "--listen", "127.0.0.1:0", design_option, "4"}),
                                std::string("unknown option '") + design_option + "'");
  test::expect_one_line_error(test::run_cli({"relay-peer", "--listen", "127.0.0.1:0", "--seed", "4"}),
                              "option --seed is not accepted by this command");
}

namespace {

// A key file of `n` random-looking bytes (deterministic: the tests need no secrecy).
std::string write_key(const std::filesystem::path& dir, const std::string& name, std::size_t n,
                      char c = 'k') {
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p, std::ios::binary) << std::string(n, c);
  std::filesystem::permissions(p, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return p.string();
}

}  // namespace

TEST_CASE("audit --relay-transport tcp: keys, loopback-only without one, bounded connects") {
  const auto dir = test::cli_work_dir() / "relay_keys";
  const auto short_key = write_key(dir, "short.key", 31);
  const auto key = write_key(dir, "good.key", 40);
  // a key shorter than 32 bytes: exit 2 naming the option (or the environment variable)
  test::expect_one_line_error(
      test::run_cli(small_audit(dir / "a", {"--relay-transport", "tcp", "--relay-key-file", short_key})),
      "option --relay-key-file");
  ::setenv("LATENTAUDIT_RELAY_KEY_FILE", short_key.c_str(), 1);
  test::expect_one_line_error(test::run_cli(small_audit(dir / "a", {"--relay-transport", "tcp"}) /*spawned*/),
                              "LATENTAUDIT_RELAY_KEY_FILE");
  ::unsetenv("LATENTAUDIT_RELAY_KEY_FILE");
  test::expect_one_line_error(test::run_cli(small_audit(dir / "a", {"--relay-key-file", key})),
                              "--relay-key-file needs --relay-transport tcp");
  // a key file its group or others may read is refused as ssh refuses a private key, naming its mode
  const auto open_key = write_key(dir, "open.key", 40);
  std::filesystem::permissions(open_key,
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                                   std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  const auto open_run =
      test::run_cli(small_audit(dir / "a", {"--relay-transport", "tcp", "--relay-key-file", open_key}));
  test::expect_one_line_error(open_run, "has mode 0644");
  CHECK(open_run.err.find("open.key") != std::string::npos);
  // no key: a non-loopback address is refused
  test::expect_one_line_error(
      test::run_cli(small_audit(dir / "a", {"--relay-transport", "tcp", "--relay-peer", "192.0.2.1:7700"})),
      "is not a loopback address");
  test::expect_one_line_error(test::run_cli({"relay-peer", "--listen", "0.0.0.0:0", "--items", "4"}),
                              "is not a loopback address");
  // a closed port: a few attempts (about 5 s), then exit 2 naming the address
  std::uint16_t port = 0;
  {
    dist::tcp_listener probe("127.0.0.1:0");
    port = probe.port();
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const auto t0 = std::chrono::steady_clock::now();
  test::expect_one_line_error(
      test::run_cli(small_audit(
          dir / "b", {"--relay-transport", "tcp", "--relay-peer", address, "--relay-key-file", key})),
      "cannot reach the relay peer at '" + address + "'");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
}

TEST_CASE(
    "relay-peer --listen with a key: an idle client is dropped, the audit served, a wrong key refused") {
  const auto dir = test::cli_work_dir() / "relay_listen_key";
  const auto key = write_key(dir, "good.key", 48);
  const auto other = write_key(dir, "other.key", 48, 'o');
  std::uint16_t port = 0;
  {
    dist::tcp_listener probe("127.0.0.1:0");
    port = probe.port();
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const std::vector<std::string> peer_words = {
      "relay-peer",          "--listen", address, "--relay-key-file", key, "--model",
      models + "organism-a", "--drift",  "none",  "--quiet"};
  const pid_t peer = test::spawn_cli(peer_words, (dir / "peer.out").string(), (dir / "peer.err").string());
  // an idle client connects first (and holds the connection)
  std::optional<dist::tcp_transport> idle;
  for (int i = 0; i < 100 && !idle; ++i) {
    try {
      idle.emplace(dist::tcp_transport::connect(address, {.timeout_s = 10, .connect_attempts = 1}));
    } catch (const link_error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  REQUIRE(idle);
  // a client with the wrong key fails the challenge (exit 2), after the idle one is dropped
  const auto t0 = std::chrono::steady_clock::now();
  const auto wrong = test::run_cli(small_audit(
      dir / "wrong", {"--relay-transport", "tcp", "--relay-peer", address, "--relay-key-file", other}));
  test::expect_one_line_error(wrong, "fails the challenge");
  const auto r = test::run_cli(small_audit(
      dir / "right", {"--relay-transport", "tcp", "--relay-peer", address, "--relay-key-file", key}));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int status = 0;
  REQUIRE(waitpid(peer, &status, 0) == peer);
  const std::string peer_err = test::slurp_file(dir / "peer.err");
  INFO("audit stderr: " << r.err << "; peer stderr: " << peer_err);
  REQUIRE(r.code == 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(r.err.empty());                                            // keyed: no warning
  CHECK(std::count(peer_err.begin(), peer_err.end(), '\n') == 2);  // the idle and the wrong client, dropped
  CHECK_THAT(peer_err, Catch::Contains("dropped a client"));
  CHECK(took < 30);
  check_measured(dir / "right");
}

namespace {

// The port in the --connect option of a running `latentaudit relay-peer` whose parent is the
// process `parent` (0 while there is none): the audit's spawned loopback peer, found as any local
// process could find it (/proc/PID/cmdline and stat are world-readable).
std::uint16_t spawned_peer_port(pid_t parent) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');  // "pid (comm) state ppid ..."
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    long ppid = 0;
    if (!(rest >> state >> ppid) || ppid != static_cast<long>(parent)) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::vector<std::string> argv;
    for (std::string w; std::getline(in, w, '\0');) argv.push_back(w);
    if (argv.size() < 2 || argv[1] != "relay-peer") continue;
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == "--connect") return static_cast<std::uint16_t>(std::stoi(argv[i + 1].substr(10)));
  }
  return 0;
}

}  // namespace

TEST_CASE(
    "audit --relay-transport tcp: a local process that reaches the audit's listener before its "
    "spawned peer is dropped, and the peer served") {
  const auto dir = test::cli_work_dir() / "relay_hijack";
  std::filesystem::create_directories(dir);
  const auto out = dir / "audit";
  const pid_t audit = test::spawn_cli(small_audit(out, {"--relay-transport", "tcp"}),
                                      (dir / "audit.out").string(), (dir / "audit.err").string());
  // the attacker: reads the port off the spawned peer's command line and connects first, posing as
  // agent A with a well-formed hello (flag "keyed", its own nonce) and then a guessed proof
  std::uint16_t port = 0;
  for (int i = 0; i < 20000 && port == 0; ++i) {
    port = spawned_peer_port(audit);
    if (port == 0) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  REQUIRE(port != 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  auto attacker = dist::tcp_transport::connect(address, {.timeout_s = 10});
  std::vector<std::byte> hello(8 + 1 + 32 + 64, std::byte{0});
  std::memcpy(hello.data(), "LARELAY1", 8);
  hello[8] = std::byte{1};
  std::memset(hello.data() + 41, 'a', 64);
  attacker.send(hello);
  std::vector<std::byte> reply;
  std::string refused;
  try {
    attacker.receive_at_most(reply, 1 << 12);  // the audit's nonce and proof (its key is fresh)
    attacker.send(std::vector<std::byte>(32, std::byte{0}));
    attacker.receive_at_most(reply, 1 << 12);  // never: the audit drops us
  } catch (const link_error& e) {
    refused = e.what();
  }
  CHECK(!refused.empty());
  int status = 0;
  REQUIRE(waitpid(audit, &status, 0) == audit);
  const std::string err = test::slurp_file(dir / "audit.err");
  INFO("audit stderr: " << err);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  // the attacker was first in the queue (it connected before the peer had loaded its models) and
  // was dropped with one line naming it; the audit's records are its peer's
  CHECK_THAT(err, Catch::Contains("audit: dropped a client"));
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  check_measured(out);
}

TEST_CASE(
    "relay-peer: the design comes from the audit, the peer names only its model, another model is refused") {
  const auto dir = test::cli_work_dir() / "relay_design_wire";
  std::filesystem::remove_all(dir);
  auto start_peer = [&](const std::string& model, const std::string& name) {
    std::uint16_t port = 0;
    {
      dist::tcp_listener probe("127.0.0.1:0");
      port = probe.port();
    }
    const std::string address = "127.0.0.1:" + std::to_string(port);
    // no design option: items, seeds, arms and seed come from the audit
    const std::vector<std::string> words = {"relay-peer", "--listen", address, "--model", models + model};
    std::filesystem::create_directories(dir);
    const pid_t pid =
        test::spawn_cli(words, (dir / (name + ".out")).string(), (dir / (name + ".err")).string());
    return std::pair{pid, address};
  };
  {
    const auto [peer, address] = start_peer("organism-a", "same");
    const auto r =
        test::run_cli(small_audit(dir / "same", {"--relay-transport", "tcp", "--relay-peer", address}));
    int status = 0;
    REQUIRE(waitpid(peer, &status, 0) == peer);
    INFO("audit stderr: " << r.err << "; peer stderr: " << test::slurp_file(dir / "same.err"));
    REQUIRE(r.code == 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(read_records(dir / "same" / "records.jsonl").size() == 16);  // 4 items x 4 arms
  }
  {  // the peer's model is not the audit's: both stop before any trial, naming the field
    const auto [peer, address] = start_peer("organism-b", "other");
    const auto r =
        test::run_cli(small_audit(dir / "other", {"--relay-transport", "tcp", "--relay-peer", address}));
    int status = 0;
    REQUIRE(waitpid(peer, &status, 0) == peer);
    CHECK(r.code == 2);  // one error line (after the unauthenticated-loopback warning)
    CHECK(r.err.find("error: argument 'design' is refused by the relay peer") != std::string::npos);
    CHECK(r.err.find("field 'model_fingerprint'") != std::string::npos);
    CHECK(r.err.find("must run the receiver's design on the models") != std::string::npos);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 2));
    CHECK(test::slurp_file(dir / "other.err").find("model_fingerprint") != std::string::npos);
    CHECK(read_records(dir / "other" / "records.jsonl").empty());
  }
}
