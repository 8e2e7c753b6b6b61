// SPDX-License-Identifier: MIT
// `latentaudit kv inspect FILE [--key-file K]` and `latentaudit kv make-example --out FILE
// [--key-file K]`: look inside a relay (docs/wire-format.md), or write a small valid one to try.
#include <latentaudit/core/file_check.hpp>
#include <latentaudit/core/rng.hpp>
#include <latentaudit/dist/relay_auth.hpp>
#include <latentaudit/kv/rope.hpp>
#include <latentaudit/kv/wire.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include <sys/stat.h>

#include "cli.hpp"
#include "output_guard.hpp"

namespace latentaudit::cli {
namespace {

const std::vector<option_spec>& kv_inspect_options() {
  static const std::vector<option_spec> o = {
      {"--key-file", "K", "file whose bytes (as-is) are the HMAC-SHA256 key; with it the tag must verify"},
      {"--require-auth", "", "fail unless the relay carries a tag that verifies under --key-file"},
      {"--pretty", "", "indent the JSON output"},
  };
  return o;
}

const std::vector<option_spec>& example_options() {
  static const std::vector<option_spec> o = {
      {"--out", "FILE", "where to write the relay (required)"},
      {"--key-file", "K", "file whose bytes (as-is) are the HMAC-SHA256 key; adds a tag"},
      {"--tokens", "N", "tokens in the example cache, in [1, 4096]; default 16"},
      {"--dtype", "TYPE", "element type: f32, f16 or bf16; default bf16"},
      {"--seed", "S", "random seed of the cache's values; default 0"},
      {"--quantize", "SCHEME",
       "carry K and V quantized: int8, int4 (groups of 16), fp8_e4m3 or fp8_e5m2; default none"},
      {"--pretty", "", "indent the JSON output"},
  };
  return o;
}

std::vector<std::byte> read_key(const std::string& path) {
  std::uint64_t size = 0;
  try {
    size = require_regular_file(path, "--key-file");  // a directory, FIFO or /dev/zero: refused unopened
  } catch (const error& e) {
    throw usage_error(std::string("kv: ") + e.what());
  }
  if (size > (std::uint64_t{1} << 20)) throw usage_error("kv: key file '" + path + "' is larger than 1 MiB");
  // the relay's rule for key files (as ssh's for private keys): the user's own, mode 0600 or stricter
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw usage_error("kv: cannot open key file '" + path + "'");
  if (const auto why = dist::key_file_mode_problem(st); !why.empty())
    throw usage_error("kv: --key-file '" + path + "' " + why);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error("kv: cannot open key file '" + path + "'");
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (s.empty()) throw usage_error("kv: key file '" + path + "' is empty");
  const auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}

json_value fingerprint_json(const model_fingerprint& f) {
  json_value j = json_value::object();
  j.set("architecture", f.architecture);
  j.set("n_layers", f.n_layers);
  j.set("n_heads", f.n_heads);
  j.set("n_kv_heads", f.n_kv_heads);
  j.set("head_dim_k", f.head_dim_k);
  j.set("head_dim_v", f.head_dim_v);
  j.set("rope_pairing", std::string(rope_pairing_name(f.rope.pairing)));
  j.set("rope_theta", static_cast<double>(f.rope.theta));
  j.set("rotary_dims", f.rope.rotary_dims);
  j.set("weights_hash", std::to_string(f.weights_hash));
  return j;
}

int run_kv_inspect(std::span<const std::string> words) {
  if (!words.empty() && words[0].rfind("--", 0) != 0) {
    const std::string file = words[0];
    const auto args = arguments::parse(words.subspan(1), kv_inspect_options(), "kv inspect");
    try {
      (void)require_regular_file(file, "relay file");
    } catch (const error& e) {
      throw usage_error(std::string("kv inspect: ") + e.what());
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) throw usage_error("kv inspect: cannot open relay file '" + file + "'");
    std::vector<std::byte> key;
    if (args.has("--key-file")) key = read_key(args.require("--key-file"));
    const auto d = decode_relay(in, {.hmac_key = key, .require_authentication = args.has("--require-auth")});
    if (in.peek() != std::char_traits<char>::eof()) {
      throw corrupt_data("kv inspect: '" + file + "' has bytes after the relay frame");
    }
    json_value j = json_value::object();
    j.set("file", file);
    j.set("kind", d.kind == relay_kind::kv            ? "kv"
                  : d.kind == relay_kind::text_tokens ? "text_tokens"
                                                      : "text_utf8");
    j.set("bytes", d.wire_bytes);
    if (d.kind == relay_kind::kv) {
      const auto& b = d.kv;
      json_value layers = json_value::array();
      for (auto l : b.layers()) layers.push_back(l);
      j.set("layers", std::move(layers));
      j.set("n_layers", b.n_layers());
      j.set("tokens", b.n_tokens());
      j.set("dtype", std::string(dtype_name(b.type())));
      j.set("payload_bytes", b.payload_bytes());
      j.set("content_bytes", b.content_bytes());
      j.set("token_mask", b.has_token_mask());
      j.set("quantization", d.quantization
                                ? json_value(std::string(quant_scheme_name(d.quantization->scheme)))
                                : json_value(nullptr));
      if (d.quantization && d.quantization->group_size > 0) j.set("group_size", d.quantization->group_size);
      j.set("fingerprint", fingerprint_json(b.fingerprint()));
      json_value pr = json_value::object();
      if (b.n_tokens() > 0) {
        pr.set("first", *std::min_element(b.positions().begin(), b.positions().end()));
        pr.set("last", *std::max_element(b.positions().begin(), b.positions().end()));
        pr.set("consistent", inspect_positions(b).ok);
      }
      j.set("positions", std::move(pr));
    } else if (d.kind == relay_kind::text_tokens) {
      j.set("tokens", d.text.tokens.size());
    } else {
      j.set("utf8_bytes", d.text.utf8.size());
    }
    char crc[11];
    std::snprintf(crc, sizeof crc, "0x%08x", d.crc);
    j.set("checksum", std::string(crc));
    j.set("checksum_ok", true);
    j.set("has_tag", d.has_tag);
    j.set("authenticated", d.authenticated);
    print_json(j, args.has("--pretty"));
    return exit_ok;
  }
  const auto args = arguments::parse(words, kv_inspect_options(), "kv inspect");
  if (args.help()) {
    std::fputs(
        help_text("latentaudit kv inspect FILE [options]",
                  "Decodes one relay (docs/wire-format.md) and prints a JSON summary: kind, layers, tokens, "
                  "dtype,\n"
                  "bytes, fingerprint, position range, checksum and authentication. A corrupt, tampered or\n"
                  "unauthenticated relay exits with code 2 and one line on stderr.\n",
                  kv_inspect_options())
            .c_str(),
        stdout);
    return exit_ok;
  }
  throw usage_error("kv inspect: missing the relay FILE (see 'latentaudit kv inspect --help')");
}

int run_make_example(std::span<const std::string> words) {
  const auto args = arguments::parse(words, example_options(), "kv make-example");
  if (args.help()) {
    std::fputs(
        help_text("latentaudit kv make-example --out FILE [options]",
                  "Writes a small valid KV relay (2 layers, 2 kv heads, head dim 16, NEOX RoPE) with seeded\n"
                  "values, to try `kv inspect` on.\n",
                  example_options())
            .c_str(),
        stdout);
    return exit_ok;
  }
  const std::string out = args.require("--out");
  refuse_output_over_inputs("kv make-example", "--out", out,
                            {{"--key-file", args.get("--key-file").value_or("")}});
  const auto tokens = static_cast<std::int64_t>(args.integer("--tokens", 16, 1, 4096));
  const auto type = *parse_dtype(args.choice("--dtype", "bf16", {"f32", "f16", "bf16"}));
  const auto seed = args.integer("--seed", 0, 0, UINT64_MAX);
  std::vector<std::byte> key;
  if (args.has("--key-file")) key = read_key(args.require("--key-file"));
  const model_fingerprint fp{.architecture = "LlamaForCausalLM",
                             .n_layers = 2,
                             .n_heads = 4,
                             .n_kv_heads = 2,
                             .head_dim_k = 16,
                             .head_dim_v = 16,
                             .rope = {.pairing = rope_pairing::neox, .theta = 10000.0f},
                             .weights_hash = 0x5eed};
  auto b = kv_block::all_layers(fp, tokens, type);
  auto g = make_stream({.seed = seed});
  for (std::size_t i = 0; i < b.n_layers(); ++i)
    for (int v = 0; v < 2; ++v)
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int32_t h = 0; h < 2; ++h)
          for (std::int32_t d = 0; d < 16; ++d)
            b.set(i, v != 0, t, h, d, static_cast<float>(standard_normal(g)));
  std::vector<std::string> schemes = {"none"};
  for (const quant_scheme q : all_quant_schemes) schemes.emplace_back(quant_scheme_name(q));
  const auto scheme = args.choice("--quantize", "none", schemes);
  wire_encode_options opts{.hmac_key = key};
  if (scheme != "none")
    opts.quantize = quantize_spec{.scheme = *quant_scheme_from_name(scheme), .group_size = 16};
  // To a temporary renamed over --out when complete: a full disk or a file-size limit leaves no
  // partial relay; a device or directory at --out is refused, never replaced.
  require_output_file(out, "--out");
  const auto tmp = output_temp_path(out);
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) throw usage_error("kv make-example: cannot write '" + out + "'");
  const auto n = encode_relay(b, f, opts);
  f.close();
  std::error_code ec;
  if (!f) {
    std::filesystem::remove(tmp, ec);
    throw usage_error("kv make-example: writing '" + out + "' failed: " + std::strerror(errno));
  }
  std::filesystem::rename(tmp, out, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw usage_error("kv make-example: cannot write '" + out + "': " + ec.message());
  }
  json_value j = json_value::object();
  j.set("out", out);
  j.set("bytes", n);
  j.set("tokens", tokens);
  j.set("dtype", std::string(dtype_name(type)));
  j.set("authenticated", !key.empty());
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

int run_kv(std::span<const std::string> words) {
  if (words.empty())
    throw usage_error("kv: missing command (inspect or make-example; see 'latentaudit kv --help')");
  if (words[0] == "--help") {
    std::fputs(
        "usage: latentaudit kv <inspect|make-example> ...\n\n"
        "  inspect FILE       decode a relay and print a JSON summary (exit 2 if corrupt or "
        "unauthenticated)\n"
        "  make-example       write a small valid relay to try\n\n"
        "Run 'latentaudit kv <command> --help' for the options.\n",
        stdout);
    return exit_ok;
  }
  if (words[0] == "inspect") return run_kv_inspect(words.subspan(1));
  if (words[0] == "make-example") return run_make_example(words.subspan(1));
  throw usage_error("kv: unknown command '" + words[0] + "' (expected inspect or make-example)");
}

[[maybe_unused]] const bool registered_kv = register_subcommand(
    {"kv", "inspect relay files (kv inspect FILE) or write an example (kv make-example)", run_kv});

}  // namespace
}  // namespace latentaudit::cli
