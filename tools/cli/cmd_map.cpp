// SPDX-License-Identifier: MIT
// `latentaudit map fit`: a cross-model cache map (kv/kv_map.hpp) fitted on calibration documents —
// the sender's and the receiver's prefill caches of the same organism documents, drawn from a seed
// stream apart from the audit's items — written as a map file (engine/kv_map_file.hpp).
// docs/mapping.md.
#include <latentaudit/engine/kv_map_file.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#if LATENTAUDIT_CLI_LLAMA_CPP
#include <latentaudit/engine/llama_cpp.hpp>
#endif
#include <latentaudit/core/hash.hpp>
#include <latentaudit/kv/kv_map.hpp>
#include <latentaudit/trial/task.hpp>
#include <latentaudit/trial/task_file.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli.hpp"
#include "engine_select.hpp"
#include "output_guard.hpp"
#include "tokenizer_select.hpp"

namespace latentaudit::cli {
namespace {

// The calibration documents' seed stream: the organism generator under seed (S, "MAP"), so they
// are other documents than the audit's under the design seed S.
constexpr std::uint64_t calibration_stream = 0x4D4150;

std::vector<option_spec> map_fit_options() {
  return {
      engine_option(),
      verbose_option(),
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
      {"--ridge", "L|auto",
       "relative ridge penalty, > 0 (default 0.001); 'auto' chooses it from 1e-5 ... 1 by the R² on a "
       "validation split of the fitted documents (the held-out documents stay apart)"},
      {"--seed", "S", "the audit's seed: the documents come from a stream apart from its items (default 1)"},
      {"--threads", "N", "engine threads (default 1)"},
      {"--pretty", "", "indent the JSON summary"},
  };
}

// The calibration documents' source: a task file's first N tasks (--tasks), else the organism's
// task under the calibration stream (--task, default --to's task.json).
struct calibration_source {
  std::optional<task_file> tasks;  // --tasks, cut to N
  std::filesystem::path organism;  // the organism's directory (no --tasks)
  std::uint64_t n = 0;
};

calibration_source read_calibration_source(const arguments& args, const std::filesystem::path& to,
                                           engine_kind engine) {
  calibration_source c;
  c.n = static_cast<std::uint64_t>(args.integer("--calibration", 200, 2, 100000));
  if (const auto t = args.get("--tasks")) {
    if (args.get("--task"))
      throw usage_error("map fit: give --task (an organism) or --tasks (a task file), not both");
    c.tasks = read_task_file(*t);
    if (c.tasks->tasks.size() < 2)
      throw usage_error("map fit: option --tasks: '" + *t + "' holds fewer than 2 tasks");
    if (!args.get("--calibration")) c.n = c.tasks->tasks.size();
    if (c.n > c.tasks->tasks.size())
      throw usage_error("map fit: option --calibration " + std::to_string(c.n) + " exceeds the " +
                        std::to_string(c.tasks->tasks.size()) + " tasks of '" + *t + "'");
    c.tasks->tasks.resize(static_cast<std::size_t>(c.n));
    return c;
  }
  if (const auto t = args.get("--task")) {
    c.organism = std::filesystem::path(*t).parent_path();
  } else {
    if (engine != engine_kind::reference)
      throw usage_error(
          "map fit: option --engine llama.cpp needs --task FILE (the organism task.json) or --tasks FILE");
    c.organism = to;
  }
  return c;
}

// The calibration's paired caches: both models prefill every document (every layer).
struct calibration_caches {
  std::vector<kv_block> source, target;
  std::string sha256;                    // every document's tokens, in order
  std::vector<std::uint64_t> documents;  // each document's own hash (the audit refuses overlap)
};

template <class Sender, class Receiver>
calibration_caches calibration_of(calibration_source& c, text_tokenizer& tokenizer, std::uint64_t seed,
                                  std::size_t top, Sender& sender, Receiver& receiver) {
  if (sender.info().vocab_size != receiver.info().vocab_size)
    throw usage_error("map fit: the two models' vocabularies differ (" +
                      std::to_string(sender.info().vocab_size) + " vs " +
                      std::to_string(receiver.info().vocab_size) + " tokens): they cannot read one document");
  if (top > static_cast<std::size_t>(sender.info().fingerprint.n_layers))
    throw usage_error("map fit: option --top-layers must be at most the sender's " +
                      std::to_string(sender.info().fingerprint.n_layers) + " layers, got " +
                      std::to_string(top));
  std::vector<std::vector<token_id>> docs;
  if (!c.tasks) {
    const auto fmt = organism_format::load(c.organism);
    for (auto& t :
         organism_task_file(fmt, organism_task_options{.seed = seed ^ calibration_stream}, c.n).tasks)
      docs.push_back(std::move(t.document.tokens));
  } else {  // tokenized as the audit tokenizes a task file's documents
    const task_file_source src(std::move(*c.tasks), tokenizer.codec(receiver, "map fit"),
                               {.vocab_size = receiver.info().vocab_size, .max_context = 0});
    for (std::uint64_t i = 0; i < src.items(); ++i) docs.push_back(src.task(i, 0, seed).document);
  }
  calibration_caches out;
  sha256 h;
  for (const auto& d : docs) {
    h.update(std::as_bytes(std::span(d)));
    out.documents.push_back(calibration_document_hash(d));
  }
  out.sha256 = to_hex(h.finish());
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
  run(sender, out.source);
  run(receiver, out.target);
  return out;
}

// --ridge auto: the λ of 1e-5, 1e-4, ..., 1 whose map, fitted on the first 80 % of the fitted
// documents, has the largest mean R² (keys and values, every head and layer) on the rest; each
// candidate with its validation R² goes to `candidates`. With fewer than 5 documents, 1e-3.
double choose_ridge(std::span<const kv_block> s, std::span<const kv_block> t, std::size_t top,
                    json_value& candidates) {
  const std::size_t fit = s.size() * 4 / 5;
  if (fit < 2 || fit == s.size()) return 1e-3;
  double best = 1e-3, best_r2 = -std::numeric_limits<double>::infinity();
  for (const double lambda : {1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0}) {
    const auto m = fit_kv_map(s.first(fit), t.first(fit), {.ridge = lambda, .top_layers = top});
    double r2 = 0.0, k = 0.0;
    for (const auto& l : evaluate_kv_map(m, s.subspan(fit), t.subspan(fit)))
      for (std::size_t h = 0; h < l.r2_key.size(); ++h) {
        r2 += l.r2_key[h] + l.r2_value[h];
        k += 2.0;
      }
    r2 /= k;
    json_value o = json_value::object();
    o.set("ridge", lambda);
    o.set("validation_mean_r2", r2);
    candidates.push_back(std::move(o));
    if (r2 > best_r2) {
      best_r2 = r2;
      best = lambda;
    }
  }
  return best;
}

// The summary's per-layer rows: the source layers, the in-sample and held-out mean R².
json_value layer_summary(const kv_map& m, const std::vector<kv_layer_map>& held) {
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
  return layers;
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
        help_text(
            "latentaudit map fit --from DIR --to DIR --out FILE [options]",
            "Fits a map from the sender's KV cache to the receiver's: both models prefill the same\n"
            "calibration documents (the receiver's organism task, a seed stream apart from the\n"
            "audit's items, or a task file's documents with --tasks); per receiver layer the\n"
            "--top-layers sender layers whose own ridge fit explains it best, then one ridge\n"
            "regression on RoPE-stripped keys and values (docs/mapping.md). The models may differ in\n"
            "layers, KV heads and head dims; they must share the vocabulary. Prints a JSON summary\n"
            "with the map's id, the calibration R² per layer and the held-out attention-output cosine.\n",
            specs)
            .c_str(),
        stdout);
    return exit_ok;
  }
  const std::filesystem::path from = args.require("--from"), to = args.require("--to"),
                              out = args.require("--out");
  guarded_inputs inputs{{"--from", from}, {"--to", to}};
  for (const char* o : {"--from-overlay", "--tasks", "--task", "--tokenizer"})
    if (const auto p = args.get(o)) inputs.push_back({o, *p});
  refuse_output_over_inputs("map fit", "--out", out, inputs);
  const auto top = static_cast<std::size_t>(args.integer("--top-layers", 2, 1, 4096));
  const bool auto_ridge = args.get("--ridge") == std::optional<std::string>("auto");
  double ridge = auto_ridge ? 1e-3 : args.number("--ridge", 1e-3);
  if (!(ridge > 0.0) || !std::isfinite(ridge))
    throw usage_error("map fit: option --ridge must be a positive number or 'auto', got " +
                      number_text(ridge));
  const auto seed = static_cast<std::uint64_t>(args.integer("--seed", 1, 0, INT64_MAX));
  const auto threads = static_cast<unsigned>(args.integer("--threads", 1, 0, 1024));
  const auto t0 = std::chrono::steady_clock::now();
  const auto engine = parse_engine(args, "map fit");
  auto cal = read_calibration_source(args, to, engine);
  auto tokenizer = text_tokenizer::from_option(args, "map fit");
  calibration_caches c;
  if (engine == engine_kind::reference) {
    auto sender = args.get("--from-overlay")
                      ? reference_cpu_engine::load_with_overlay(from, *args.get("--from-overlay"), threads)
                      : reference_cpu_engine::load(from, threads);
    auto receiver = reference_cpu_engine::load(to, threads);
    c = calibration_of(cal, tokenizer, seed, top, sender, receiver);
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
    auto sender = llama_cpp_engine::load(from, lo);
    auto receiver = llama_cpp_engine::load(to, lo);
    c = calibration_of(cal, tokenizer, seed, top, sender, receiver);
#endif
  }
  // held out: fitted on the first 80 % of the documents, scored on the rest (in-sample R² flatters
  // a map with as many features as these); the map written is fitted on all of them
  const std::size_t split = std::max<std::size_t>(1, c.source.size() * 4 / 5);
  const std::span<const kv_block> s_all(c.source), t_all(c.target);
  json_value candidates = json_value::array();
  if (auto_ridge) ridge = choose_ridge(s_all.first(split), t_all.first(split), top, candidates);
  const auto part = fit_kv_map(s_all.first(split), t_all.first(split), {.ridge = ridge, .top_layers = top});
  const auto held = split < c.source.size()
                        ? evaluate_kv_map(part, s_all.subspan(split), t_all.subspan(split))
                        : std::vector<kv_layer_map>{};
  // the screen on the held-out documents: the mapped cache's attention-output cosine against the
  // receiver's own (kv/map_screen.hpp; what the audit records per trial as map_cosine)
  double screen = 0.0;
  for (std::size_t i = split; i < c.source.size(); ++i)
    screen += attention_output_cosine(apply_kv_map(part, c.source[i]), c.target[i]);
  if (split < c.source.size()) screen /= static_cast<double>(c.source.size() - split);
  const auto m = fit_kv_map(c.source, c.target, {.ridge = ridge, .top_layers = top});
  write_kv_map(out, m, c.sha256, c.documents);
  json_value j = json_value::object();
  j.set("out", out.string());
  j.set("id", kv_map_id(m));
  j.set("from", from.string());
  if (const auto o = args.get("--from-overlay")) j.set("from_overlay", *o);
  j.set("to", to.string());
  j.set("engine", engine == engine_kind::reference ? "reference" : "llama.cpp");
  j.set("calibration_documents", static_cast<double>(m.calibration_sequences));
  j.set("calibration_tokens", static_cast<double>(m.calibration_tokens));
  j.set("calibration_sha256", c.sha256);
  j.set("heldout_documents", static_cast<double>(c.source.size() - split));
  if (split < c.source.size()) j.set("heldout_attention_cosine", screen);
  j.set("ridge", ridge);
  if (auto_ridge) j.set("ridge_candidates", std::move(candidates));
  j.set("top_layers", static_cast<double>(top));
  j.set("layers", layer_summary(m, held));
  j.set("seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_map = register_subcommand(
    {"map", "fit a map from one model's KV cache to another's (map fit; docs/mapping.md)", run_map});

}  // namespace
}  // namespace latentaudit::cli
