// SPDX-License-Identifier: MIT
// `latentaudit forward --model DIR --tokens 1,2,3 [--all] [--logits-out FILE.csv] [--engine E]`: runs
// the CPU reference engine (or llama.cpp on a GGUF file) on a token sequence and prints the argmax
// and top logits as JSON; the full logits of the last (or every) position go to a CSV (one row per
// position, one column per id), the same format on either engine.
#include <latentaudit/engine/reference_cpu.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "cli.hpp"
#include "engine_select.hpp"
#include "output_guard.hpp"

namespace latentaudit::cli {
namespace {

std::vector<option_spec> forward_options_spec() {
  return {
      {"--model", "DIR",
       "HF model directory with config.json and model.safetensors; a GGUF file with --engine llama.cpp "
       "(required)"},
      engine_option(),
      verbose_option(),
      {"--tokens", "IDS", "comma-separated token ids, e.g. 0,5,41 (required)"},
      {"--all", "", "report every position (default: the last)"},
      {"--logits-out", "FILE",
       "write the logits as CSV: one row per reported position, one column per token id, no header"},
      {"--threads", "N",
       "attention threads, 0 = all cores; default 1 (results do not depend on it); llama.cpp: its threads"},
      common_option("--pretty"),
  };
}

std::vector<token_id> parse_tokens(const std::string& s) {
  std::vector<token_id> out;
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t j = std::min(s.find(',', i), s.size());
    const std::string_view w(s.data() + i, j - i);
    long long v = 0;
    const auto r = std::from_chars(w.data(), w.data() + w.size(), v);
    if (w.empty() || r.ec != std::errc() || r.ptr != w.data() + w.size() || v < 0 || v > INT32_MAX)
      throw usage_error("forward: option --tokens expects comma-separated non-negative integers, got '" +
                        std::string(w) + "' at item " + std::to_string(out.size() + 1));
    out.push_back(static_cast<token_id>(v));
    i = j + 1;
  }
  return out;
}

int run_forward(std::span<const std::string> words) {
  const auto specs = forward_options_spec();
  const auto args = arguments::parse(words, specs, "forward");
  if (args.help()) {
    std::fputs(
        help_text(
            "latentaudit forward --model DIR --tokens IDS [options]",
            "Runs the CPU reference engine (HF LlamaForCausalLM in f32), or llama.cpp on a GGUF file\n"
            "(--engine llama.cpp: flash attention off, f32 cache), on the tokens at positions 0, 1, ...\n"
            "and prints, per reported position, the argmax and the five largest logits. Bad model\n"
            "directories, bad token ids and sequences longer than the context exit with code 2.\n",
            specs)
            .c_str(),
        stdout);
    return exit_ok;
  }
  if (const auto path = args.get("--logits-out"))
    refuse_output_over_inputs("forward", "--logits-out", *path, {{"--model", args.require("--model")}});
  const auto tokens = parse_tokens(args.require("--tokens"));
  const auto threads = static_cast<unsigned>(args.integer("--threads", 1, 0, 1024));
  const auto engine = parse_engine(args, "forward");
  const bool all = args.has("--all");
  forward_output out;
  std::size_t V = 0;
  std::uint64_t weights_hash = 0;
  auto run = [&](auto& engine) {
    const auto s = engine.open_seq();
    out = engine.prefill(s, tokens, 0, {.all_logits = all});
    engine.close_seq(s);
    V = static_cast<std::size_t>(engine.info().vocab_size);
    weights_hash = engine.info().fingerprint.weights_hash;
  };
  if (engine == engine_kind::reference) {
    auto engine = reference_cpu_engine::load(args.require("--model"), threads);
    run(engine);
  } else {
#if LATENTAUDIT_CLI_LLAMA_CPP
    require_gguf(args.require("--model"), "forward", "--model");
    auto engine = llama_cpp_engine::load(
        args.require("--model"),
        {.n_ctx = static_cast<std::uint32_t>(std::max<std::size_t>(tokens.size() + 8, 512)),
         .n_seq_max = 2,
         .threads = static_cast<std::int32_t>(std::max(1u, threads))});
    run(engine);
#endif
  }
  json_value rows = json_value::array();
  for (std::int64_t r = 0; r < out.rows; ++r) {
    const float* l = out.logits.data() + static_cast<std::size_t>(r) * V;
    std::vector<std::size_t> idx(V);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    const std::size_t k = std::min<std::size_t>(5, V);
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                      [&](auto a, auto b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    json_value row = json_value::object();
    row.set("position", all ? r : static_cast<std::int64_t>(tokens.size()) - 1);
    row.set("argmax", idx[0]);
    json_value top = json_value::array();
    for (std::size_t t = 0; t < k; ++t) {
      json_value e = json_value::object();
      e.set("token", idx[t]);
      e.set("logit", static_cast<double>(l[idx[t]]));
      top.push_back(std::move(e));
    }
    row.set("top", std::move(top));
    rows.push_back(std::move(row));
  }
  if (auto path = args.get("--logits-out")) {
    std::ofstream f(*path);
    if (!f) throw usage_error("forward: cannot write '" + *path + "'");
    char buf[32];
    for (std::int64_t r = 0; r < out.rows; ++r) {
      for (std::size_t v = 0; v < V; ++v) {
        const auto res =
            std::to_chars(buf, buf + sizeof buf, out.logits[static_cast<std::size_t>(r) * V + v]);
        if (v) f.put(',');
        f.write(buf, res.ptr - buf);
      }
      f.put('\n');
    }
    if (!f) throw usage_error("forward: writing '" + *path + "' failed");
  }
  json_value j = json_value::object();
  j.set("model", args.require("--model"));
  j.set("tokens", tokens.size());
  j.set("vocab_size", V);
  j.set("engine", engine == engine_kind::reference ? "reference" : "llama.cpp");
  j.set("weights_hash", std::to_string(weights_hash));
  j.set("positions", std::move(rows));
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_forward = register_subcommand(
    {"forward", "logits of a token sequence on the CPU reference engine or llama.cpp (--engine)",
     run_forward});

}  // namespace
}  // namespace latentaudit::cli
