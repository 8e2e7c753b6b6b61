// SPDX-License-Identifier: MIT
// Relays over a real link (dist/transport.hpp): the tcp transport on loopback (framing, the size
// limit refused before allocation, deadlines, a closed peer), and the trial driver with agent A in a
// peer (a thread with its own engine, dist::serve_sender) — records equal the in-process run's but for
// timings, transfer_measured_s is measured, and a frame damaged on the link is rejected and
// recorded as relay_error, never imported.
#include <latentaudit/dist/relay_protocol.hpp>
#include <latentaudit/dist/transport.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/common.hpp"

using namespace latentaudit;
using namespace latentaudit::dist;

namespace {

using latentaudit::test::models;

std::vector<std::byte> bytes_of(std::string_view s) {
  const auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}

// A raw loopback client socket (no framing), to send a bogus length prefix.
int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// Records without timings (they differ run to run and across a link).
std::string link_timeless(trial_record r) {
  r.latency = {};
  r.transfer_measured_s.reset();
  for (auto& x : r.latency_repeats_s) x = 0.0;
  return record_to_line(r);
}

struct link_engines {
  reference_cpu_engine a = reference_cpu_engine::load(models + "organism-a");
  reference_cpu_engine b = reference_cpu_engine::load(models + "organism-b");
};

trial_design small_design() {
  trial_design d{.seed = 7, .items = 5, .seeds = 1};
  d.arms = {parse_arm("no_comm"),     parse_arm("text_full"),     parse_arm("kv_full"),
            parse_arm("deranged"),    parse_arm("kv_int8"),       parse_arm("kv_last_half@rebase"),
            parse_arm("zeroed"),      parse_arm("text_budget_2"), parse_arm("cross_model"),
            parse_arm("kv_noise_0.5")};
  return d;
}

// Runs `d` with agent A in a peer thread (its own link_engines) over a loopback tcp link; `tamper`
// (may be empty) damages frames the receiver gets.
std::vector<trial_record> run_over_tcp(
    const trial_design& d, const std::function<void(std::uint64_t, std::vector<std::byte>&)>& tamper) {
  const organism_format fmt = organism_format::load(models + "organism-a");
  const organism_task_options to{.seed = d.seed};
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); };
  tcp_listener listener("127.0.0.1:0", {.timeout_s = 30});
  const std::string address = "127.0.0.1:" + std::to_string(listener.port());
  std::string peer_error;
  std::thread peer([&] {
    try {
      link_engines e;
      auto link = tcp_transport::connect(address, {.timeout_s = 30});
      trial_driver<reference_cpu_engine> a_side(e.a, &e.b);
      (void)serve_sender(a_side, d, tasks, link);
    } catch (const std::exception& ex) {
      peer_error = ex.what();
    }
  });
  std::vector<trial_record> out;
  {
    link_engines e;
    auto link = listener.accept();
    fault_injecting_channel faulty(link, tamper);
    trial_driver<reference_cpu_engine> b_side(e.a, &e.b);
    channel_sender remote(faulty);
    b_side.set_remote_sender(&remote);
    b_side.run(d, tasks, [&](const trial_record& r) { out.push_back(r); });
  }
  peer.join();
  CHECK(peer_error.empty());
  return out;
}

std::vector<trial_record> run_local(const trial_design& d) {
  const organism_format fmt = organism_format::load(models + "organism-a");
  const organism_task_options to{.seed = d.seed};
  link_engines e;
  trial_driver<reference_cpu_engine> drv(e.a, &e.b);
  std::vector<trial_record> out;
  drv.run(
      d, [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); },
      [&](const trial_record& r) { out.push_back(r); });
  return out;
}

bool is_frame(const std::vector<std::byte>& m) {
  return m.size() >= 4 && m[0] == std::byte{'L'} && m[1] == std::byte{'A'} && m[2] == std::byte{'R'} &&
         m[3] == std::byte{'L'};
}

}  // namespace

TEST_CASE("tcp transport: messages cross loopback whole and in order") {
  tcp_listener listener("127.0.0.1:0", {.timeout_s = 10});
  REQUIRE(listener.port() != 0);
  std::vector<std::vector<std::byte>> got;
  std::thread peer([&] {
    auto c = tcp_transport::connect("127.0.0.1:" + std::to_string(listener.port()), {.timeout_s = 10});
    std::vector<std::byte> m;
    for (int i = 0; i < 3; ++i) {
      c.receive(m);
      c.send(m);  // echo
    }
  });
  auto s = listener.accept();
  CHECK(s.name() == "tcp");
  std::vector<std::byte> big(3u << 20);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::byte>(i * 131u);
  const std::vector<std::vector<std::byte>> sent = {{}, bytes_of("x"), big};
  std::vector<std::byte> m;
  for (const auto& x : sent) {
    s.send(x);
    s.receive(m);
    CHECK(m == x);
  }
  peer.join();
}

TEST_CASE("tcp transport: a claimed 10 GB message is refused before allocation, deadlines, a closed peer") {
  std::vector<std::byte> m;
  {
    tcp_listener listener("127.0.0.1:0", {.timeout_s = 10});
    const int fd = connect_loopback(listener.port());
    auto s = listener.accept();
    const std::uint64_t n = 10'000'000'000ull;  // above the default limit of 4 GiB
    REQUIRE(::send(fd, &n, 8, 0) == 8);
    CHECK_THROWS_WITH(s.receive(m),
                      Catch::Contains("10000000000 bytes") && Catch::Contains("refused before allocation"));
    ::close(fd);
  }
  {
    // a smaller limit: an 8-byte message is above a 4-byte limit
    tcp_listener listener("127.0.0.1:0", {.timeout_s = 10, .max_message_bytes = 4});
    std::thread p([&] {
      auto c = tcp_transport::connect("127.0.0.1:" + std::to_string(listener.port()), {.timeout_s = 10});
      c.send(bytes_of("12345678"));
    });
    auto s = listener.accept();
    CHECK_THROWS_WITH(s.receive(m), Catch::Contains("above the limit of 4"));
    p.join();
  }
  {
    // a deadline: the peer sends nothing; then it closes the link
    tcp_listener listener("127.0.0.1:0", {.timeout_s = 0.2});
    std::atomic<bool> quit{false};
    std::thread p([&] {
      auto c = tcp_transport::connect("127.0.0.1:" + std::to_string(listener.port()), {.timeout_s = 10});
      while (!quit.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
    auto s = listener.accept();
    CHECK_THROWS_WITH(s.receive(m), Catch::Contains("timed out"));
    quit = true;
    p.join();
    CHECK_THROWS_WITH(s.receive(m), Catch::Contains("closed the link"));
  }
  {
    // accept's still_waiting hook ends a wait for a peer that will never connect long before the
    // 60 s timeout (the CLI's loopback peer that exited); a peer that does connect is accepted
    tcp_listener listener("127.0.0.1:0", {.timeout_s = 60});
    int calls = 0;
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(listener.accept([&] {
      if (++calls == 3) throw link_error("the peer exited");
    }),
                      Catch::Contains("the peer exited"));
    CHECK(calls == 3);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    const int fd = connect_loopback(listener.port());
    auto s = listener.accept([] {});
    ::close(fd);
    CHECK_THROWS_WITH(s.receive(m), Catch::Contains("closed the link"));
    // with the hook, the timeout still holds
    tcp_listener quick("127.0.0.1:0", {.timeout_s = 0.3});
    CHECK_THROWS_WITH(quick.accept([] {}), Catch::Contains("timed out"));
  }
  CHECK_THROWS_AS(tcp_transport::connect("127.0.0.1:1", {.timeout_s = 0.1}), link_error);
  CHECK_THROWS_AS(parse_host_port("nohostport"), invalid_argument);
  CHECK_THROWS_AS(parse_host_port("h:70000"), invalid_argument);
  CHECK(parse_host_port("[::1]:80").host == "::1");
}

TEST_CASE("relay over tcp: agent A in a peer, records equal the in-process run's but for timings") {
  const auto d = small_design();
  const auto local = run_local(d);
  const auto linked = run_over_tcp(d, {});
  REQUIRE(linked.size() == local.size());
  std::map<trial_key, std::string> want;
  for (const auto& r : local) want[{r.item, r.seed, r.arm}] = link_timeless(r);
  std::size_t measured = 0;
  for (const auto& r : linked) {
    CHECK(want.at({r.item, r.seed, r.arm}) == link_timeless(r));
    CHECK(!r.relay_error);
    if (r.bytes > 0) {
      REQUIRE(r.transfer_measured_s.has_value());
      CHECK(*r.transfer_measured_s > 0);
      ++measured;
    } else {
      CHECK(!r.transfer_measured_s);
    }
  }
  CHECK(measured == local.size() - d.items * d.seeds);  // every arm but no_comm relays
  for (const auto& r : local) CHECK(!r.transfer_measured_s);
  // the record carries it on its line, and reads it back
  const auto& r0 = linked.front().bytes > 0 ? linked.front() : linked.back();
  const auto back = record_from_json(parse_json(record_to_line(r0)));
  CHECK(back.transfer_measured_s == r0.transfer_measured_s);
}

TEST_CASE("relay over tcp: a flipped byte or a truncated frame is rejected and recorded, never imported") {
  trial_design d{.seed = 3, .items = 4, .seeds = 1};
  d.arms = {parse_arm("kv_full"), parse_arm("text_full")};
  d.randomize_order = false;
  REQUIRE(d.authenticate);
  const auto local = run_local(d);
  std::uint64_t frames = 0;
  const auto linked = run_over_tcp(d, [&](std::uint64_t, std::vector<std::byte>& m) {
    if (!is_frame(m)) return;
    const std::uint64_t k = frames++;
    if (k % 4 == 0) m[m.size() / 2] ^= std::byte{0x10};  // a flipped payload bit
    if (k % 4 == 1) m.resize(m.size() - 7);              // truncated
    if (k % 4 == 2) m.back() ^= std::byte{0x01};         // a flipped bit of the HMAC tag
  });
  REQUIRE(linked.size() == local.size());
  std::map<trial_key, const trial_record*> want;
  for (const auto& r : local) want[{r.item, r.seed, r.arm}] = &r;
  std::size_t failed = 0, hmac = 0;
  for (const auto& r : linked) {
    const auto& l = *want.at({r.item, r.seed, r.arm});
    if (r.relay_error) {
      ++failed;
      hmac += r.relay_error->find("does not verify") != std::string::npos;
      CHECK(r.relay_tokens == 0);  // nothing imported
      CHECK((Catch::Contains("CRC32C").match(*r.relay_error) ||
             Catch::Contains("truncated").match(*r.relay_error) ||
             Catch::Contains("HMAC").match(*r.relay_error)));
      CHECK(r.bytes > 0);
    } else {
      CHECK(link_timeless(r) == link_timeless(l));
    }
  }
  CHECK(hmac == 2);
  CHECK(failed == 6);  // frames 0, 1, 2, 4, 5, 6 of 8 (the design HMAC-tags every relay)
  const auto it =
      std::find_if(linked.begin(), linked.end(), [](const trial_record& r) { return r.relay_error; });
  REQUIRE(it != linked.end());
  const auto back = record_from_json(parse_json(record_to_line(*it)));
  CHECK(back.relay_error == it->relay_error);
}

TEST_CASE("relay over tcp: a peer with another design is refused before any trial") {
  const organism_format fmt = organism_format::load(models + "organism-a");
  trial_design d{.seed = 7, .items = 2, .seeds = 1};
  d.arms = {parse_arm("kv_full")};
  trial_design other = d;
  other.seed = 8;
  const organism_task_options to{.seed = d.seed};
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); };
  tcp_listener listener("127.0.0.1:0", {.timeout_s = 30});
  std::string peer_error;
  std::thread peer([&] {
    try {
      link_engines e;
      auto link = tcp_transport::connect("127.0.0.1:" + std::to_string(listener.port()), {.timeout_s = 30});
      trial_driver<reference_cpu_engine> a_side(e.a, &e.b);
      (void)serve_sender(a_side, other, tasks, link);
    } catch (const std::exception& ex) {
      peer_error = ex.what();
    }
  });
  link_engines e;
  auto link = listener.accept();
  trial_driver<reference_cpu_engine> b_side(e.a, &e.b);
  channel_sender remote(link);
  b_side.set_remote_sender(&remote);
  std::size_t n = 0;
  CHECK_THROWS_WITH(b_side.run(d, tasks, [&](const trial_record&) { ++n; }),
                    Catch::Contains("refused by the relay peer") && Catch::Contains("field 'seed' is 7"));
  peer.join();
  CHECK(n == 0);
  CHECK_THAT(peer_error, Catch::Contains("differs"));
}
