// SPDX-License-Identifier: MIT
// The relay channel against a hostile peer on 127.0.0.1 (dist/relay_auth.hpp, the driver's checks
// of the peer's reports; docs/distributed.md, "Threat model"): length prefixes refused before
// allocation, bounded connects, idle clients dropped at the hello deadline, the mutual
// challenge–response (wrong key, no key against a key), replayed, reordered and foreign messages,
// and every invalid report or frame recorded as relay_error — never a record that record_from_json
// (and so `report` and `--resume`) would refuse. Every wait here is bounded by a few seconds.
#include <latentaudit/dist/relay_auth.hpp>
#include <latentaudit/dist/relay_protocol.hpp>
#include <latentaudit/dist/transport.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
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

using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

int raw_connect(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  timeval tv{10, 0};  // no test read waits longer
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// The transport's framing by hand: an 8-byte little-endian length, then the bytes.
void raw_send(int fd, std::span<const std::byte> m) {
  const std::uint64_t n = m.size();
  REQUIRE(::send(fd, &n, 8, MSG_NOSIGNAL) == 8);
  std::size_t off = 0;
  while (off < m.size()) {
    const ssize_t w = ::send(fd, m.data() + off, m.size() - off, MSG_NOSIGNAL);
    REQUIRE(w > 0);
    off += static_cast<std::size_t>(w);
  }
}
void raw_send(int fd, const std::string& s) { raw_send(fd, std::as_bytes(std::span(s.data(), s.size()))); }
bool raw_read(int fd, void* p, std::size_t n) {
  auto* b = static_cast<char*>(p);
  std::size_t off = 0;
  while (off < n) {
    const ssize_t r = ::recv(fd, b + off, n - off, 0);
    if (r <= 0) return false;
    off += static_cast<std::size_t>(r);
  }
  return true;
}
std::string raw_receive(int fd) {
  std::uint64_t n = 0;
  if (!raw_read(fd, &n, 8) || n > (1u << 24)) return {};
  std::string s(n, '\0');
  if (!raw_read(fd, s.data(), n)) return {};
  return s;
}

std::vector<std::byte> key_of(char c) { return std::vector<std::byte>(32, static_cast<std::byte>(c)); }
const std::string hash_a(64, 'a');

// An authenticated pair over loopback: server (accepting) and client (connecting) with their keys.
struct pair_result {
  std::optional<authenticated_channel> server, client;
  std::string server_error, client_error;
};
pair_result auth_pair(std::span<const std::byte> server_key, std::span<const std::byte> client_key,
                      const std::string& server_hash = hash_a, const std::string& client_hash = hash_a) {
  pair_result r;
  tcp_listener listener("127.0.0.1:0", {.timeout_s = 10});
  std::thread c([&] {
    try {
      r.client.emplace(authenticated_channel::client(
          tcp_transport::connect("127.0.0.1:" + std::to_string(listener.port()), {.timeout_s = 10}),
          client_key, client_hash, {.hello_timeout_s = 2, .client_wait_s = 3}));
    } catch (const std::exception& e) {
      r.client_error = e.what();
    }
  });
  try {
    r.server.emplace(authenticated_channel::server(listener.accept(), server_key, server_hash,
                                                   {.hello_timeout_s = 2, .client_wait_s = 3}));
  } catch (const std::exception& e) {
    r.server_error = e.what();
  }
  c.join();
  return r;
}

// A forwarding proxy between a client and a server: `tamper(index, message)` edits the messages
// going server-ward from the client (index from 0, handshake messages included).
struct proxy {
  tcp_listener front{"127.0.0.1:0", {.timeout_s = 10}};
  std::thread th;
  proxy(std::uint16_t back_port, std::function<void(std::uint64_t, std::vector<std::byte>&)> tamper) {
    th = std::thread([this, back_port, tamper] {
      try {
        auto a = front.accept();
        auto b = tcp_transport::connect("127.0.0.1:" + std::to_string(back_port), {.timeout_s = 10});
        std::atomic<bool> stop{false};
        std::thread down([&] {  // server -> client, unchanged
          try {
            std::vector<std::byte> m;
            while (!stop) {
              b.receive(m);
              a.send(m);
            }
          } catch (const std::exception&) {
          }
        });
        std::vector<std::byte> m;
        try {
          for (std::uint64_t i = 0;; ++i) {
            a.receive(m);
            if (tamper) tamper(i, m);
            if (!m.empty()) b.send(m);
          }
        } catch (const std::exception&) {
        }
        stop = true;
        b.close();
        a.close();
        down.join();
      } catch (const std::exception&) {
      }
    });
  }
  ~proxy() { th.join(); }
};

}  // namespace

TEST_CASE("relay channel: a 2^32-1 length prefix is refused before allocation, naming the peer") {
  tcp_listener listener("127.0.0.1:0", {.timeout_s = 5});
  const int fd = raw_connect(listener.port());
  auto t = listener.accept();
  const std::uint64_t n = 0xFFFFFFFFull;
  REQUIRE(::send(fd, &n, 8, 0) == 8);
  const auto t0 = clock_type::now();
  // the server's first read is the client's hello: at most 105 bytes
  CHECK_THROWS_WITH(authenticated_channel::server(std::move(t), key_of('k'), hash_a, {.hello_timeout_s = 2}),
                    Catch::Contains("4294967295 bytes") && Catch::Contains("refused before allocation") &&
                        Catch::Contains("127.0.0.1:"));
  CHECK(since(t0) < 1.0);  // refused at once, not after a 4 GiB fill
  ::close(fd);
  // a bounded receive on a plain transport
  tcp_listener l2("127.0.0.1:0", {.timeout_s = 5});
  const int fd2 = raw_connect(l2.port());
  auto t2 = l2.accept();
  REQUIRE(::send(fd2, &n, 8, 0) == 8);
  std::vector<std::byte> m;
  CHECK_THROWS_WITH(t2.receive_at_most(m, 1 << 20), Catch::Contains("above the limit of 1048576"));
  CHECK(m.capacity() == 0);
  ::close(fd2);
}

TEST_CASE("relay channel: connect gives up after a bounded number of attempts, naming the address") {
  std::uint16_t port = 0;
  {
    tcp_listener probe("127.0.0.1:0");
    port = probe.port();
  }  // now closed: connections are refused
  const auto t0 = clock_type::now();
  CHECK_THROWS_WITH(
      tcp_transport::connect("127.0.0.1:" + std::to_string(port), {.timeout_s = 600, .connect_attempts = 4}),
      Catch::Contains("cannot connect to '127.0.0.1:" + std::to_string(port) + "'") &&
          Catch::Contains("4 attempts"));
  CHECK(since(t0) < 3.0);  // 0.1 + 0.2 + 0.4 s of pauses, not the 600 s timeout
}

TEST_CASE("relay channel: mutual challenge-response, wrong key, no key against a key, another design") {
  const auto k = key_of('k');
  {
    auto p = auth_pair(k, k);
    REQUIRE(p.server_error.empty());
    REQUIRE(p.client_error.empty());
    CHECK(p.server->keyed());
    CHECK(p.server->wire_key() == p.client->wire_key());
    std::vector<std::byte> m;
    const std::string hello = "hello";
    p.client->send(std::as_bytes(std::span(hello.data(), hello.size())));
    p.server->receive_at_most(m, 64);
    CHECK(std::string(reinterpret_cast<const char*>(m.data()), m.size()) == hello);
    p.server->send(std::as_bytes(std::span(hello.data(), hello.size())));
    p.client->receive_at_most(m, 64);
    CHECK(m.size() == hello.size());
    // the wire key is the key's, not the design seed's
    const auto seed_key = relay_hmac_key(1);  // one object: begin() and end() of one range
    const auto& wire = p.server->wire_key();
    CHECK(std::vector<std::byte>(wire.begin(), wire.end()) !=
          std::vector<std::byte>(seed_key.begin(), seed_key.end()));
  }
  {
    auto p = auth_pair(k, key_of('x'));  // the client does not hold the server's key
    CHECK_THAT(p.client_error, Catch::Contains("fails the challenge"));
    CHECK(!p.server);
  }
  {
    auto p = auth_pair(k, {});  // no key against a key: both ends name that cause
    CHECK_THAT(p.server_error, Catch::Contains("has no relay key, but this end has one"));
    CHECK_THAT(p.client_error, Catch::Contains("has a relay key, but this end has none"));
    CHECK(!p.client);
  }
  {
    auto p = auth_pair({}, k);  // a key against no key: the same, the other way round
    CHECK_THAT(p.server_error, Catch::Contains("has a relay key, but this end has none"));
    CHECK_THAT(p.client_error, Catch::Contains("has no relay key, but this end has one"));
    CHECK(!p.client);
  }
  {
    auto p = auth_pair({}, {});  // both unkeyed: works (loopback, with a warning in the CLI)
    REQUIRE(p.server_error.empty());
    CHECK(!p.server->keyed());
  }
  {
    auto p = auth_pair(k, k, hash_a, std::string(64, 'b'));
    CHECK_THAT(p.server_error, Catch::Contains("differs"));
    CHECK_THAT(p.client_error, Catch::Contains("refused by the relay peer"));
  }
}

TEST_CASE("relay channel: an idle or trickling client is dropped at the hello deadline") {
  tcp_listener listener("127.0.0.1:0", {.timeout_s = 5});
  const int idle = raw_connect(listener.port());
  const char one = 'L';
  REQUIRE(::send(idle, &one, 1, 0) == 1);  // one byte of a prefix, then nothing
  auto t0 = clock_type::now();
  CHECK_THROWS_WITH(
      authenticated_channel::server(listener.accept(), key_of('k'), hash_a, {.hello_timeout_s = 0.5}),
      Catch::Contains("timed out"));
  const double dropped = since(t0);
  CHECK(dropped < 2.0);
  ::close(idle);
  // a client speaking another protocol is refused at once
  const int other = raw_connect(listener.port());
  raw_send(other, std::string(105, 'x'));
  CHECK_THROWS_WITH(
      authenticated_channel::server(listener.accept(), key_of('k'), hash_a, {.hello_timeout_s = 2}),
      Catch::Contains("does not speak the latentaudit relay protocol"));
  // an unauthenticated client learns nothing of the design: the server's reply carries no hash
  ::close(other);
}

TEST_CASE("relay channel: replayed, reordered and foreign messages fail authentication") {
  const auto k = key_of('k');
  for (int mode = 0; mode < 3; ++mode) {
    tcp_listener server_listener("127.0.0.1:0", {.timeout_s = 10});
    std::vector<std::byte> kept;
    proxy px(server_listener.port(), [&](std::uint64_t i, std::vector<std::byte>& m) {
      // messages 0, 1: the handshake; 2, 3, 4: the client's payloads
      if (mode == 0 && i == 2) kept = m;
      if (mode == 0 && i == 3) m = kept;              // replay of message 2 in place of 3
      if (mode == 1 && i == 2) m.clear();             // reorder: 2 is held back, 3 arrives first
      if (mode == 2 && i == 2) m[8] ^= std::byte{1};  // a payload bit of another sender
    });
    std::optional<authenticated_channel> server;
    std::string client_error;
    std::thread c([&] {
      try {
        auto ch = authenticated_channel::client(
            tcp_transport::connect("127.0.0.1:" + std::to_string(px.front.port()), {.timeout_s = 10}), k,
            hash_a, {.client_wait_s = 1});
        for (const char* s : {"m0", "m1", "m2"}) ch.send(std::as_bytes(std::span(s, 2)));
        std::vector<std::byte> m;
        ch.receive_at_most(m, 16);  // wait for the server to finish
      } catch (const std::exception& e) {
        client_error = e.what();
      }
    });
    server.emplace(
        authenticated_channel::server(server_listener.accept(), k, hash_a, {.hello_timeout_s = 5}));
    std::vector<std::byte> m;
    if (mode == 0) {
      server->receive_at_most(m, 16);
      CHECK_THROWS_WITH(server->receive_at_most(m, 16),
                        Catch::Contains("sequence number 0") && Catch::Contains("replayed or reordered"));
    } else if (mode == 1) {
      CHECK_THROWS_WITH(server->receive_at_most(m, 16), Catch::Contains("sequence number 1"));
    } else {
      CHECK_THROWS_WITH(server->receive_at_most(m, 16), Catch::Contains("fails authentication"));
    }
    server.reset();  // closes: the client's wait ends
    c.join();
  }
}

namespace {

struct engines {
  reference_cpu_engine a = reference_cpu_engine::load(models + "organism-a");
  reference_cpu_engine b = reference_cpu_engine::load(models + "organism-b");
};

json_value parse_text(const std::string& s) { return parse_json(s); }

}  // namespace

TEST_CASE(
    "relay over tcp: a scripted malicious peer's reports and frames become relay_error, never bad records") {
  const organism_format fmt = organism_format::load(models + "organism-a");
  trial_design d{.seed = 5, .items = 7, .seeds = 1};
  d.arms = {parse_arm("kv_full"), parse_arm("text_message_4")};
  d.randomize_order = false;
  const organism_task_options to{.seed = d.seed};
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); };
  engines e;
  const auto fp = e.a.info().fingerprint;
  const auto key = relay_hmac_key(d.seed);
  tcp_listener listener("127.0.0.1:0", {.timeout_s = 10});
  std::atomic<int> served{0};
  std::thread peer([&] {
    const int fd = raw_connect(listener.port());
    (void)raw_receive(fd);  // hello
    raw_send(fd, std::string(R"({"ok":true})"));
    for (int k = 0;; ++k) {
      const std::string q = raw_receive(fd);
      if (q.empty() || q.find("\"done\"") != std::string::npos) break;
      const json_value rq = parse_text(q);
      const bool kv = rq.at("arm").as_string() == "kv_full";
      const auto item = static_cast<std::uint64_t>(rq.at("item").as_number());
      std::string report =
          R"({"a_prefill_s":0.001,"export_s":0,"policy_s":0,"encode_s":0,"sender_fingerprint":"x","policy":{}})";
      const int bad = static_cast<int>(item);  // one kind of lie per item
      if (bad == 0)
        report = R"({"a_prefill_s":1e308,"export_s":0,"policy_s":0,"encode_s":0,"sender_fingerprint":"x"})";
      if (bad == 1) {
        std::string deep;
        for (int i = 0; i < 60; ++i) deep += "{\"a\":";
        deep += "1";
        for (int i = 0; i < 60; ++i) deep += "}";
        report =
            R"({"a_prefill_s":0,"export_s":0,"policy_s":0,"encode_s":0,"sender_fingerprint":"x","policy":)" +
            (kv ? deep : std::string("[1,2]")) + "}";
      }
      if (bad == 2)
        report =
            std::string(
                R"({"a_prefill_s":0,"export_s":0,"policy_s":0,"encode_s":0,"sender_fingerprint":"x","policy":)") +
            (kv ? "[1]" : "{}") + R"(,"message_tokens":[)" + (kv ? "1" : "1e30") + "]}";
      if (bad == 3) {
        std::string many = "[";
        for (int i = 0; i < 5000; ++i) many += (i ? ",1" : "1");
        report =
            R"({"a_prefill_s":0,"export_s":0,"policy_s":0,"encode_s":0,"sender_fingerprint":"x","message_tokens":)" +
            many + "]}";
      }
      if (bad == 4)
        report =
            R"({"a_prefill_s":0,"export_s":0,"policy_s":0,"encode_s":-5,"sender_fingerprint":"x","message_tokens":[-5]})";
      raw_send(fd, report);
      (void)raw_receive(fd);  // go
      const trial_task t = tasks(item, 0);
      std::vector<std::byte> frame;
      if (kv) {  // item 5: NaN keys; otherwise a well-formed block
        auto b = kv_block::all_layers(fp, static_cast<std::int64_t>(t.document.size()), dtype::f32);
        for (std::size_t l = 0; l < b.n_layers(); ++l) {
          for (auto& x : b.k<float>(l)) x = bad == 5 ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
          for (auto& x : b.v<float>(l)) x = 0.0f;
        }
        for (std::size_t i = 0; i < b.positions().size(); ++i) b.positions()[i] = static_cast<position_t>(i);
        frame = encode_relay(b, wire_encode_options{.hmac_key = key});
      } else {
        text_relay tr{.as_tokens = true, .tokens = t.no_relay_prefix};
        frame = encode_relay(tr, wire_encode_options{.hmac_key = key});
      }
      if (bad == 6 && kv) {  // item 6: a 2^32-1 length prefix instead of the frame
        const std::uint64_t n = 0xFFFFFFFFull;
        ::send(fd, &n, 8, MSG_NOSIGNAL);
        break;
      }
      raw_send(fd, std::span<const std::byte>(frame));
      ++served;
    }
    ::close(fd);
  });
  auto link = listener.accept();
  trial_driver<reference_cpu_engine> b_side(e.a, &e.b);
  dist::channel_sender remote(link);
  b_side.set_remote_sender(&remote);
  std::vector<trial_record> out;
  const auto t0 = clock_type::now();
  CHECK_THROWS_WITH(b_side.run(d, tasks, [&](const trial_record& r) { out.push_back(r); }),
                    Catch::Contains("4294967295 bytes") && Catch::Contains("refused before allocation") &&
                        Catch::Contains("127.0.0.1:"));
  CHECK(since(t0) < 30.0);
  peer.join();
  REQUIRE(out.size() == 12);  // items 0..5, both arms
  for (const auto& r : out) {
    INFO("item " << r.item << " arm " << r.arm << " relay_error " << r.relay_error.value_or("-"));
    // every record reads back: nothing journaled that report or --resume would refuse
    CHECK_NOTHROW(record_from_json(parse_json(record_to_line(r))));
    const bool clean = (r.item == 5 && r.arm == "text_message_4");
    if (r.item <= 4 || (r.item == 5 && r.arm == "kv_full")) {
      REQUIRE(r.relay_error.has_value());
      CHECK_THAT(*r.relay_error, Catch::Contains("127.0.0.1:"));
      CHECK(r.relay_tokens == 0);
      CHECK(r.latency.a_prefill_s < 1.0);
      CHECK(r.message_tokens.size() <= 4);
    } else {
      CHECK(clean);
    }
  }
  auto err = [&](std::uint64_t item, const std::string& arm) {
    for (const auto& r : out)
      if (r.item == item && r.arm == arm) return r.relay_error.value_or("");
    return std::string();
  };
  CHECK_THAT(err(0, "kv_full"), Catch::Contains("'a_prefill_s'"));
  CHECK_THAT(err(1, "kv_full"), Catch::Contains("deeper than 8"));
  CHECK_THAT(err(2, "kv_full"), Catch::Contains("'policy' must be an object"));
  CHECK_THAT(err(2, "text_message_4"), Catch::Contains("token ids"));
  CHECK_THAT(err(3, "text_message_4"), Catch::Contains("5000 tokens") && Catch::Contains("budget of 4"));
  CHECK_THAT(err(4, "kv_full"), Catch::Contains("'encode_s'"));
  CHECK_THAT(err(5, "kv_full"), Catch::Contains("non-finite"));
}

TEST_CASE(
    "relay over an authenticated channel: records equal a plain link's, a replayed frame is a relay_error") {
  const organism_format fmt = organism_format::load(models + "organism-a");
  trial_design d{.seed = 9, .items = 3, .seeds = 1};
  d.arms = {parse_arm("kv_full"), parse_arm("text_full")};
  d.randomize_order = false;
  const organism_task_options to{.seed = d.seed};
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); };
  const auto key = random_bytes(32);
  auto run = [&](bool replay) {
    tcp_listener listener("127.0.0.1:0", {.timeout_s = 10});
    // A -> B messages: 0, 1 handshake (the client's hello and proof), then the driver's protocol;
    // replace the frame of the second relay by the first relay's frame (a replay under the same key)
    std::vector<std::vector<std::byte>> frames;
    proxy px(listener.port(), [&](std::uint64_t i, std::vector<std::byte>& m) {
      // wire frames: "LARL" after the channel's 8-byte sequence number
      if (!replay || i < 2 || m.size() < 12 || std::memcmp(m.data() + 8, "LARL", 4) != 0) return;
      frames.push_back(m);
      if (frames.size() == 3) m = frames[0];
    });
    std::string peer_error;
    std::thread peer([&] {
      try {
        engines e;
        auto ch = authenticated_channel::client(
            tcp_transport::connect("127.0.0.1:" + std::to_string(px.front.port()), {.timeout_s = 10}), key,
            d.design_hash(), {.client_wait_s = 10});
        trial_driver<reference_cpu_engine> a_side(e.a, &e.b);
        a_side.set_relay_key(ch.wire_key());
        (void)dist::serve_sender(a_side, d, tasks, ch);
      } catch (const std::exception& ex) {
        peer_error = ex.what();
      }
    });
    std::vector<trial_record> out;
    {
      engines e;
      auto ch =
          authenticated_channel::server(listener.accept(), key, d.design_hash(), {.hello_timeout_s = 10});
      trial_driver<reference_cpu_engine> b_side(e.a, &e.b);
      dist::channel_sender remote(ch);
      b_side.set_remote_sender(&remote);
      b_side.set_relay_key(ch.wire_key());
      b_side.run(d, tasks, [&](const trial_record& r) { out.push_back(r); });
    }
    peer.join();
    CHECK(peer_error.empty());
    return out;
  };
  const auto clean = run(false);
  REQUIRE(clean.size() == 6);
  for (const auto& r : clean) CHECK(!r.relay_error);
  const auto replayed = run(true);
  REQUIRE(replayed.size() == 6);
  std::size_t errors = 0;
  for (const auto& r : replayed)
    if (r.relay_error) {
      ++errors;
      CHECK_THAT(*r.relay_error, Catch::Contains("replayed or reordered"));
      CHECK(r.relay_tokens == 0);
    }
  CHECK(errors >= 1);
}

TEST_CASE("relay channel: an end without a design adopts the other's, bound and keyed alike") {
  const auto k = key_of('k');
  {  // the accepting end adopts the client's design (relay-peer --listen)
    auto p = auth_pair(k, k, "", hash_a);
    REQUIRE(p.server_error.empty());
    REQUIRE(p.client_error.empty());
    CHECK(p.server->design_hash() == hash_a);
    CHECK(p.server->wire_key() == p.client->wire_key());
    const auto same = auth_pair(k, k);
    CHECK(p.server->wire_key() == same.server->wire_key());  // the wire key of the adopted design
  }
  {  // the connecting end adopts the server's (the audit's loopback peer, relay-peer --connect)
    auto p = auth_pair(k, k, hash_a, "");
    REQUIRE(p.server_error.empty());
    REQUIRE(p.client_error.empty());
    CHECK(p.client->design_hash() == hash_a);
    CHECK(p.server->wire_key() == p.client->wire_key());
    std::vector<std::byte> m;
    const std::string hello = "hello";
    p.client->send(std::as_bytes(std::span(hello.data(), hello.size())));
    p.server->receive_at_most(m, 64);
    CHECK(m.size() == hello.size());
  }
  {  // unkeyed, as on loopback without a key
    auto p = auth_pair({}, {}, hash_a, "");
    REQUIRE(p.client_error.empty());
    CHECK(p.client->design_hash() == hash_a);
  }
  {  // two ends without a design: both refuse
    auto p = auth_pair(k, k, "", "");
    CHECK_THAT(p.server_error, Catch::Contains("neither end holds a design"));
    CHECK_THAT(p.client_error, Catch::Contains("neither end holds a design"));
  }
  {  // adopting does not bypass the key
    auto p = auth_pair(k, key_of('x'), hash_a, "");
    CHECK_THAT(p.client_error, Catch::Contains("fails the challenge"));
    CHECK(!p.server);
  }
}

TEST_CASE("tcp transport: a trickled message is cut off after idle_s, a steady one passes") {
  tcp_listener listener("127.0.0.1:0", {.timeout_s = 10, .idle_s = 0.3});
  const std::string address = "127.0.0.1:" + std::to_string(listener.port());
  std::thread c([&] {
    auto t = tcp_transport::connect(address, {.timeout_s = 10});
    const int fd = t.native_handle();
    const std::uint64_t n = 4;
    // a steady message: its 4 bytes 0.1 s apart
    (void)::send(fd, &n, 8, MSG_NOSIGNAL);
    for (int i = 0; i < 4; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      (void)::send(fd, "x", 1, MSG_NOSIGNAL);
    }
    // a trickled one: its prefix, one byte, then a pause past idle_s
    (void)::send(fd, &n, 8, MSG_NOSIGNAL);
    (void)::send(fd, "y", 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  });
  auto s = listener.accept();
  std::vector<std::byte> m;
  s.receive_at_most(m, 16);
  CHECK(m.size() == 4);
  const auto t0 = clock_type::now();
  CHECK_THROWS_AS(s.receive_at_most(m, 16), link_error);
  const double took = std::chrono::duration<double>(clock_type::now() - t0).count();
  CHECK(took < 1.5);  // the idle limit, not the 10 s message deadline
  c.join();
}

TEST_CASE("relay protocol: a greeting's design larger than the peer serves is refused before it is built") {
  json_value d = json_value::object();
  d.set("items", 10000000.0);
  d.set("seeds", 100000.0);
  d.set("arms", json_value(json_value::array_type{json_value("no_comm"), json_value("kv_full")}));
  json_value hello = json_value::object({{"op", "hello"}, {"design", d}});
  CHECK_THROWS_WITH(design_of_hello(hello), Catch::Contains("10000000 items x 100000 seeds x 2 arms") &&
                                                Catch::Contains("more than a relay peer serves"));
}
