// SPDX-License-Identifier: MIT
// `latentaudit audit --relay-transport tcp`: agent A in a loopback peer the audit spawns, or in a
// `latentaudit relay-peer --listen` started first; every relay record carries
// transfer_measured_s, the report fits the link (--link measured uses it), and bad relay options
// exit 2 with one line.
#include <latentaudit/dist/transport.hpp>
#include <latentaudit/trial/journal.hpp>

#include <sys/wait.h>

#include "support/cli_runner.hpp"

using namespace latentaudit;

namespace {

const std::string models = std::string(LATENTAUDIT_SOURCE_DIR).append("/models/");

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
  auto peer_words = small_audit(dir / "unused", {"--listen", address});
  peer_words[0] = "relay-peer";
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
}
