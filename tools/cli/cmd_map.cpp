// SPDX-License-Identifier: MIT
// `latentaudit map fit`: a cross-model cache map (kv/kv_map.hpp) fitted on calibration documents —
// the sender's and the receiver's prefill caches of the same organism documents, drawn from a seed
// stream apart from the audit's items — written as a map file (backend/kv_map_file.hpp).
// docs/mapping.md.
#include <latentaudit/backend/kv_map_file.hpp>
#include <latentaudit/backend/reference_cpu.hpp>
#if LATENTAUDIT_CLI_LLAMA_CPP
#include <latentaudit/backend/llama_cpp.hpp>
#endif
#include <latentaudit/core/hash.hpp>
#include <latentaudit/kv/kv_map.hpp>
#include <latentaudit/trial/task.hpp>
#include <latentaudit/trial/task_file.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "cli.hpp"
#include "engine_select.hpp"

namespace latentaudit::cli {
namespace {

// The calibration documents' seed stream: the organism generator under seed (S, "MAP"), so they
// are other documents than the audit's under the design seed S.
constexpr std::uint64_t calibration_stream = 0x4D4150;

std::vector<option_spec> map_fit_options() {
  return {
      engine_option(),
      {"--from", "DIR|FILE", "the sender's model (reference: a directory; llama.cpp: a GGUF file)"},
      {"--from-overlay", "FILE",
       "the sender's weights replaced by this safetensors file's (reference engine; a drifted sender: "
       "--from models/organism-a --from-overlay models/organism-a-drift/steps-300.safetensors)"},
      {"--to", "DIR|FILE", "the receiver's model"},
      {"--task", "FILE",
       "the organism task.json of the calibration documents (default: --to's, reference only)"},
      {"--tasks", "FILE.jsonl",
       "calibration documents from a task file instead (docs/tasks.md): the documents of its first "
       "--calibration tasks (default all), tokenized as the audit reads them — a real model pair's own "
       "documents, none of them an audit task"},
      {"--tokenizer", "F.gguf",
       "the tokenizer of text documents in --tasks (reference engine; llama.cpp uses --to's vocabulary)"},
      {"--out", "FILE", "the map file to write (safetensors)"},
      {"--calibration", "N", "calibration documents (default 200)"},
      {"--top-layers", "K", "source layers each target layer is mapped from (default 2)"},
      {"--ridge", "L", "relative ridge penalty, > 0 (default 0.001)"},
      {"--seed", "S", "the audit's seed: the documents come from a stream apart from its items (default 1)"},
      {"--threads", "N", "backend threads (default 1)"},
      {"--pretty", "", "indent the JSON summary"},
  };
}

int run_map(std::span<const std::string> words) {
  if (words.empty() || words[0] != "fit") {
    if (!words.empty() && (words[0] == "--help" || words[0] == "-h")) {
      std::fputs("latentaudit map fit --from DIR --to DIR --out FILE [options]\n", stdout);
      return exit_ok;
    }
    throw usage_error("map: expected the subcommand 'fit' (latentaudit map fit --help)");
  }
  const auto specs = map_fit_options();
  const auto args = arguments::parse(words.subspan(1), specs, "map fit");
  if (args.help()) {
    std::fputs(
        help_text("latentaudit map fit --from DIR --to DIR --out FILE [options]",
                  "Fits a map from the sender's KV cache to the receiver's: both models prefill the same\n"
                  "calibration documents (the receiver's organism task, a seed stream apart from the\n"
                  "audit's items); per receiver layer the --top-layers sender layers whose own ridge fit\n"
                  "explains it best, then one ridge regression on RoPE-stripped keys and values\n"
                  "(docs/mapping.md). The models may differ in layers, KV heads and head dims; they must\n"
                  "share the vocabulary. Prints a JSON summary with the calibration R² per layer.\n",
                  specs)
            .c_str(),
        stdout);
    return exit_ok;
  }
  const std::filesystem::path from = args.require("--from"), to = args.require("--to"),
                              out = args.require("--out");
  auto n = static_cast<std::uint64_t>(args.integer("--calibration", 200, 2, 100000));
  const auto top = static_cast<std::size_t>(args.integer("--top-layers", 2, 1, 4096));
  const double ridge = args.number("--ridge", 1e-3);
  if (!(ridge > 0.0) || !std::isfinite(ridge))
    throw usage_error("map fit: option --ridge must be a positive number, got " + detail::number_text(ridge));
  const auto seed = static_cast<std::uint64_t>(args.integer("--seed", 1, 0, INT64_MAX));
  const auto threads = static_cast<unsigned>(args.integer("--threads", 1, 0, 1024));
  const auto t0 = std::chrono::steady_clock::now();
  const auto engine = parse_engine(args, "map fit");
  // the calibration documents: a task file's (--tasks, tokenized as the audit reads them), or the
  // organism's under the calibration stream
  std::optional<task_file> user_tasks;
  if (const auto t = args.get("--tasks")) {
    if (args.get("--task"))
      throw usage_error("map fit: give --task (an organism) or --tasks (a task file), not both");
    user_tasks = read_task_file(*t);
    if (user_tasks->tasks.size() < 2)
      throw usage_error("map fit: option --tasks: '" + *t + "' holds fewer than 2 tasks");
    if (!args.get("--calibration")) n = user_tasks->tasks.size();
    if (n > user_tasks->tasks.size())
      throw usage_error("map fit: option --calibration " + std::to_string(n) + " exceeds the " +
                        std::to_string(user_tasks->tasks.size()) + " tasks of '" + *t + "'");
    user_tasks->tasks.resize(static_cast<std::size_t>(n));
  }
  std::filesystem::path task = args.get("--task").value_or("");
  if (task.empty() && !user_tasks) {
    if (engine != engine_kind::reference)
      throw usage_error(
          "map fit: option --engine llama.cpp needs --task FILE (the organism task.json) or --tasks FILE");
    task = to / "task.json";
  }
  auto tokenizer = text_tokenizer::from_option(args, "map fit");
  std::vector<std::vector<token_id>> docs;
  auto calibration_documents = [&](const auto& receiver) {
    if (!user_tasks) {
      const auto fmt = organism_format::load(task.parent_path());
      for (auto& t :
           organism_task_file(fmt, organism_task_options{.seed = seed ^ calibration_stream}, n).tasks)
        docs.push_back(std::move(t.document.tokens));
      return;
    }
    const task_file_source src(std::move(*user_tasks), tokenizer.codec(receiver, "map fit"),
                               {.vocab_size = receiver.info().vocab_size, .max_context = 0});
    for (std::uint64_t i = 0; i < src.items(); ++i) docs.push_back(src.task(i, 0, seed).document);
  };
  std::vector<kv_block> source, target;
  sha256 h;                              // the calibration: every document's tokens, in order
  std::vector<std::uint64_t> documents;  // and each document's own hash (the audit refuses overlap)
  // both models' prefill caches of every document, every layer
  auto caches = [&](auto& sender, auto& receiver) {
    calibration_documents(receiver);
    for (const auto& d : docs) {
      h.update(std::as_bytes(std::span(d)));
      documents.push_back(calibration_document_hash(d));
    }
    if (sender.info().vocab_size != receiver.info().vocab_size)
      throw usage_error(
          "map fit: the two models' vocabularies differ (" + std::to_string(sender.info().vocab_size) +
          " vs " + std::to_string(receiver.info().vocab_size) + " tokens): they cannot read one document");
    if (top > static_cast<std::size_t>(sender.info().fingerprint.n_layers))
      throw usage_error("map fit: option --top-layers must be at most the sender's " +
                        std::to_string(sender.info().fingerprint.n_layers) + " layers, got " +
                        std::to_string(top));
    auto run = [&](auto& e, std::vector<kv_block>& into) {
      for (std::size_t i = 0; i < docs.size(); ++i) {
        const auto& doc = docs[i];
        if (doc.empty() || static_cast<std::int64_t>(doc.size()) > e.info().max_context)
          throw usage_error("map fit: calibration document " + std::to_string(i) + " holds " +
                            std::to_string(doc.size()) + " tokens; a model's context holds 1 to " +
                            std::to_string(e.info().max_context));
        const auto s = e.open_seq();
        (void)e.prefill(s, doc, 0, {});
        into.push_back(
            e.export_kv(s, {0, static_cast<std::int64_t>(doc.size())}, {0, e.info().fingerprint.n_layers}));
        e.close_seq(s);
      }
    };
    run(sender, source);
    run(receiver, target);
  };
  if (engine == engine_kind::reference) {
    auto sender = args.get("--from-overlay")
                      ? reference_cpu_backend::load_with_overlay(from, *args.get("--from-overlay"), threads)
                      : reference_cpu_backend::load(from, threads);
    auto receiver = reference_cpu_backend::load(to, threads);
    caches(sender, receiver);
  } else {
#if LATENTAUDIT_CLI_LLAMA_CPP
    if (args.get("--from-overlay"))
      throw usage_error(
          "map fit: option --from-overlay applies to the reference engine (export the drifted "
          "sender to GGUF instead)");
    require_gguf(from, "map fit", "--from");
    require_gguf(to, "map fit", "--to");
    // one sequence at a time: a context of 4096 cells holds any calibration document up to that
    const llama_cpp_options lo{
        .n_ctx = 4096, .n_seq_max = 2, .threads = static_cast<std::int32_t>(std::max(1u, threads))};
    auto sender = llama_cpp_backend::load(from, lo);
    auto receiver = llama_cpp_backend::load(to, lo);
    caches(sender, receiver);
#endif
  }
  const std::string calibration = to_hex(h.finish());
  // held out: fitted on the first 80 % of the documents, scored on the rest (in-sample R² flatters
  // a map with as many features as these); the map written is fitted on all of them
  const std::size_t split = std::max<std::size_t>(1, source.size() * 4 / 5);
  const std::span<const kv_block> s_all(source), t_all(target);
  const auto part = fit_kv_map(s_all.first(split), t_all.first(split), {.ridge = ridge, .top_layers = top});
  const auto held = split < source.size() ? evaluate_kv_map(part, s_all.subspan(split), t_all.subspan(split))
                                          : std::vector<kv_layer_map>{};
  // the screen on the held-out documents: the mapped cache's attention-output cosine against the
  // receiver's own (kv/map_screen.hpp; what the audit records per trial as map_cosine)
  double screen = 0.0;
  for (std::size_t i = split; i < source.size(); ++i)
    screen += attention_output_cosine(apply_kv_map(part, source[i]), target[i]);
  if (split < source.size()) screen /= static_cast<double>(source.size() - split);
  const auto m = fit_kv_map(source, target, {.ridge = ridge, .top_layers = top});
  write_kv_map(out, m, calibration, documents);
  json_value layers = json_value::array();
  auto mean = [](const std::vector<double>& v) {
    double x = 0;
    for (const double r : v) x += r;
    return x / static_cast<double>(v.size());
  };
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const auto& lm = m.layers[l];
    json_value o = json_value::object(), src = json_value::array();
    for (const auto s : lm.source_layers) src.push_back(static_cast<double>(s));
    o.set("source_layers", std::move(src));
    o.set("mean_r2_key", mean(lm.r2_key));
    o.set("mean_r2_value", mean(lm.r2_value));
    if (!held.empty()) {
      o.set("heldout_mean_r2_key", mean(held[l].r2_key));
      o.set("heldout_mean_r2_value", mean(held[l].r2_value));
    }
    layers.push_back(std::move(o));
  }
  json_value j = json_value::object();
  j.set("out", out.string());
  j.set("id", kv_map_id(m));
  j.set("from", from.string());
  if (const auto o = args.get("--from-overlay")) j.set("from_overlay", *o);
  j.set("to", to.string());
  j.set("engine", engine == engine_kind::reference ? "reference" : "llama.cpp");
  j.set("calibration_documents", static_cast<double>(m.calibration_sequences));
  j.set("calibration_tokens", static_cast<double>(m.calibration_tokens));
  j.set("calibration_sha256", calibration);
  j.set("heldout_documents", static_cast<double>(source.size() - split));
  if (split < source.size()) j.set("heldout_attention_cosine", screen);
  j.set("ridge", ridge);
  j.set("top_layers", static_cast<double>(top));
  j.set("layers", std::move(layers));
  j.set("seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_map = register_subcommand(
    {"map", "fit a map from one model's KV cache to another's (map fit; docs/mapping.md)", run_map});

}  // namespace
}  // namespace latentaudit::cli
