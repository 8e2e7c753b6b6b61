// SPDX-License-Identifier: MIT
// Tests for `latentaudit kv inspect` and `latentaudit kv make-example`: summaries equal the
// library's view of the relay; corrupt, tampered and unauthenticated relays exit 2 with one line.
#include <latentaudit/core/json.hpp>
#include <latentaudit/kv/wire.hpp>

#include "support/catch.hpp"
#include "support/cli_runner.hpp"

using namespace latentaudit;
using test::expect_one_line_error;
using test::run_cli;

namespace {
std::string path(const std::string& name) { return (test::cli_work_dir() / name).string(); }
void write(const std::string& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }
/// A key file as the relay's rule wants it: the user's own, mode 0600.
void write_key(const std::string& p, const std::string& s) {
  write(p, s);
  std::filesystem::permissions(p, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}
}  // namespace

TEST_CASE("kv make-example writes a relay that kv inspect and the library agree on", "[cli][kv]") {
  const auto f = path("ex.lakv");
  const auto m =
      run_cli({"kv", "make-example", "--out", f, "--tokens", "5", "--dtype", "f16", "--seed", "3"});
  INFO(m.err);
  REQUIRE(m.code == 0);
  const auto made = parse_json(m.out);
  const auto r = run_cli({"kv", "inspect", f});
  REQUIRE(r.code == 0);
  const auto j = parse_json(r.out);
  std::ifstream in(f, std::ios::binary);
  const auto d = decode_relay(in);
  CHECK(j.at("kind").as_string() == "kv");
  CHECK(j.at("tokens").as_number() == 5);
  CHECK(j.at("dtype").as_string() == "f16");
  CHECK(j.at("bytes").as_number() == static_cast<double>(d.wire_bytes));
  CHECK(made.at("bytes").as_number() == static_cast<double>(d.wire_bytes));
  CHECK(j.at("content_bytes").as_number() == static_cast<double>(d.kv.content_bytes()));
  CHECK(j.at("fingerprint").at("n_kv_heads").as_number() == 2);
  CHECK(j.at("positions").at("last").as_number() == 4);
  CHECK(j.at("checksum_ok").as_bool());
  CHECK_FALSE(j.at("authenticated").as_bool());
}

TEST_CASE("kv inspect authenticates with --key-file and refuses bad relays", "[cli][kv]") {
  const auto key = path("key"), other = path("other"), f = path("auth.lakv");
  write_key(key, "correct horse");
  write_key(other, "battery staple");
  REQUIRE(run_cli({"kv", "make-example", "--out", f, "--key-file", key}).code == 0);
  // a key file others may read is refused, naming its mode (the relay's rule, as ssh's)
  const auto open_key = path("open_key");
  write(open_key, "correct horse");
  std::filesystem::permissions(open_key,
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                                   std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  expect_one_line_error(run_cli({"kv", "inspect", f, "--key-file", open_key}), "has mode 0644");
  const auto ok = run_cli({"kv", "inspect", f, "--key-file", key, "--require-auth"});
  REQUIRE(ok.code == 0);
  CHECK(parse_json(ok.out).at("authenticated").as_bool());
  expect_one_line_error(run_cli({"kv", "inspect", f, "--key-file", other}), "HMAC");
  REQUIRE(run_cli({"kv", "make-example", "--out", path("plain.lakv")}).code == 0);
  expect_one_line_error(run_cli({"kv", "inspect", path("plain.lakv"), "--key-file", key, "--require-auth"}),
                        "no HMAC tag");
  // a flipped bit
  auto bytes = test::slurp_file(f);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x20);
  write(path("tampered.lakv"), bytes);
  expect_one_line_error(run_cli({"kv", "inspect", path("tampered.lakv")}), "CRC32C");
  write(path("garbage.lakv"), "not a relay at all, just text");
  expect_one_line_error(run_cli({"kv", "inspect", path("garbage.lakv")}), "magic");
  write(path("short.lakv"), "LARL");
  expect_one_line_error(run_cli({"kv", "inspect", path("short.lakv")}), "truncated");
  expect_one_line_error(run_cli({"kv", "inspect", path("missing.lakv")}), "cannot open");
  expect_one_line_error(run_cli({"kv", "inspect"}), "missing the relay FILE");
  expect_one_line_error(run_cli({"kv", "frobnicate"}), "unknown command");
  expect_one_line_error(run_cli({"kv"}), "missing command");
  expect_one_line_error(run_cli({"kv", "make-example"}), "--out");
  expect_one_line_error(run_cli({"kv", "make-example", "--out", path("x"), "--dtype", "f64"}), "--dtype");
  expect_one_line_error(run_cli({"kv", "make-example", "--out", path("x"), "--tokens", "0"}), "--tokens");
}

TEST_CASE("kv subcommands document their options", "[cli][kv]") {
  const auto a = run_cli({"kv", "inspect", "--help"});
  CHECK(a.code == 0);
  for (const char* o : {"--key-file", "--require-auth", "--pretty"})
    CHECK(a.out.find(o) != std::string::npos);
  const auto b = run_cli({"kv", "make-example", "--help"});
  CHECK(b.code == 0);
  for (const char* o : {"--out", "--key-file", "--tokens", "--dtype", "--seed", "--quantize"})
    CHECK(b.out.find(o) != std::string::npos);
  CHECK(run_cli({"kv", "--help"}).code == 0);
}

TEST_CASE("kv make-example --quantize writes a smaller relay that inspect reports", "[cli][kv]") {
  const auto raw = path("raw.lakv"), q = path("q.lakv");
  REQUIRE(run_cli({"kv", "make-example", "--out", raw, "--tokens", "32"}).code == 0);
  REQUIRE(run_cli({"kv", "make-example", "--out", q, "--tokens", "32", "--quantize", "int4"}).code == 0);
  const auto r = run_cli({"kv", "inspect", q});
  REQUIRE(r.code == 0);
  const auto j = parse_json(r.out);
  CHECK(j.at("quantization").as_string() == "int4");
  CHECK(j.at("group_size").as_number() == 16);
  // int4 with f32 scale and zero per group of 16: 0.5 + 0.5 bytes an element against bf16's 2
  CHECK(j.at("bytes").as_number() <
        0.6 * parse_json(run_cli({"kv", "inspect", raw}).out).at("bytes").as_number());
  expect_one_line_error(run_cli({"kv", "make-example", "--out", q, "--quantize", "int3"}), "--quantize");
}
