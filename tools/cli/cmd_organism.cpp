// SPDX-License-Identifier: MIT
// `latentaudit organism eval --model DIR [--pairs N] [--items K] [--seed S] [--threads T]
// [--engine reference|llama.cpp --task FILE]` (llama.cpp: --model is the organism's GGUF file):
// accuracy of a model organism (models/organism-*) on multi-query associative recall items from
// make_organism_task (need regime), reading the document itself and without communication
// (context BOS SEP key), each with its Wilson 95 % interval, and the chance level.
#include <latentaudit/core/file_check.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/estimators/paired_binary.hpp>
#include <latentaudit/trial/task.hpp>
#include <latentaudit/trial/task_file.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli.hpp"
#include "engine_select.hpp"
#include "output_guard.hpp"

namespace latentaudit::cli {
namespace {

const std::vector<option_spec>& eval_options() {
  static const std::vector<option_spec> o = {
      {"--model", "DIR",
       "model organism directory with config.json, model.safetensors and task.json; a GGUF file with "
       "--engine llama.cpp (required)"},
      engine_option(),
      verbose_option(),
      {"--task", "FILE",
       "the organism's task.json (default: DIR/task.json; required with --engine llama.cpp)"},
      {"--pairs", "N", "key-value pairs per document, in [1, the model's max_pairs]; default max_pairs"},
      {"--items", "K", "documents evaluated, in [1, 1000000]; default 500"},
      {"--seed", "S", "design seed of the items (make_organism_task), an integer in [0, 2^64); default 1"},
      {"--threads", "T", "attention threads, 0 = all cores; default 1 (the results do not depend on it)"},
      common_option("--pretty"),
  };
  return o;
}

/// Argmax of the last row of the logits (lowest id on ties).
token_id last_argmax(const forward_output& o, std::size_t vocab) {
  const float* l = o.logits.data() + static_cast<std::size_t>(o.rows - 1) * vocab;
  return static_cast<token_id>(std::max_element(l, l + vocab) - l);
}

/// The answer B gives after reading `context` from position 0 in a fresh sequence.
template <class Engine>
token_id answer(Engine& b, const std::vector<token_id>& context) {
  const auto s = b.open_seq();
  const auto out = b.prefill(s, context, 0, forward_options{});
  b.close_seq(s);
  return last_argmax(out, static_cast<std::size_t>(b.info().vocab_size));
}

int run_eval(std::span<const std::string> words) {
  const auto args = arguments::parse(words, eval_options(), "organism eval");
  if (args.help()) {
    std::fputs(
        help_text("latentaudit organism eval --model DIR [options]",
                  "Evaluates a model organism on K multi-query associative recall items with N pairs each\n"
                  "(BOS k1 v1 ... kN vN SEP q; the answer is the value of q, read at q's position): reading\n"
                  "the document itself, and without communication (BOS SEP q). Prints both accuracies with\n"
                  "Wilson 95% intervals and the chance level 1/values. A bad model directory or --pairs\n"
                  "outside [1, max_pairs] exits with code 2.\n",
                  eval_options())
            .c_str(),
        stdout);
    return exit_ok;
  }
  const std::string dir = args.require("--model");
  const auto items = args.integer("--items", 500, 1, 1000000);
  const auto seed = args.integer("--seed", 1, 0, UINT64_MAX);
  const auto threads = static_cast<unsigned>(args.integer("--threads", 1, 0, 1024));
  const auto engine = parse_engine(args, "organism eval");
  std::filesystem::path task_dir = dir;
  if (auto task = args.get("--task")) {
    const std::filesystem::path tp = *task;
    if (tp.filename() != "task.json")
      throw usage_error("organism eval: option --task must name an organism's task.json, got '" + *task +
                        "'");
    task_dir = tp.parent_path().empty() ? std::filesystem::path(".") : tp.parent_path();
  } else if (engine == engine_kind::llama_cpp) {
    throw usage_error("organism eval: --engine llama.cpp needs --task (the organism's task.json)");
  }
  const auto fmt = organism_format::load(task_dir);
  const auto pairs = static_cast<std::int32_t>(
      args.integer("--pairs", static_cast<std::uint64_t>(fmt.max_pairs), 0, UINT64_MAX));
  if (pairs < 1 || pairs > fmt.max_pairs)
    throw usage_error("organism eval: option --pairs must lie in [1, " + std::to_string(fmt.max_pairs) +
                      "] (the model's max_pairs), got " + *args.get("--pairs"));
  const organism_task_options opts{
      .seed = seed, .min_pairs = pairs, .max_pairs = pairs, .no_need_fraction = 0.0};
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t correct = 0, correct_none = 0;
  auto evaluate = [&](auto& engine, std::string_view source) {
    if (engine.info().vocab_size != fmt.vocab_size)
      throw corrupt_data("organism eval: task.json's vocab_size " + std::to_string(fmt.vocab_size) +
                         " differs from " + std::string(source) + "'s " +
                         std::to_string(engine.info().vocab_size) + " in '" + dir + "'");
    for (std::uint64_t i = 0; i < items; ++i) {
      const auto t = make_organism_task(fmt, opts, i, 0);
      std::vector<token_id> read = t.document, none = t.no_relay_prefix;
      read.insert(read.end(), t.query.begin(), t.query.end());
      none.insert(none.end(), t.query.begin(), t.query.end());
      correct += answer(engine, read) == t.answer[0];
      correct_none += answer(engine, none) == t.answer[0];
    }
  };
  if (engine == engine_kind::reference) {
    auto engine = reference_cpu_engine::load(dir, threads);
    evaluate(engine, "config.json");
  } else {
#if LATENTAUDIT_CLI_LLAMA_CPP
    require_gguf(dir, "organism eval", "--model");
    auto engine = llama_cpp_engine::load(
        dir, {.n_ctx = 1024, .n_seq_max = 2, .threads = static_cast<std::int32_t>(std::max(1u, threads))});
    evaluate(engine, "the GGUF file");
#endif
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto ci = wilson_interval({.successes = correct, .trials = items});
  const auto ci_none = wilson_interval({.successes = correct_none, .trials = items});
  json_value j = json_value::object();
  j.set("model", dir);
  j.set("engine", engine == engine_kind::reference ? "reference" : "llama.cpp");
  j.set("pairs", pairs);
  j.set("items", items);
  j.set("seed", std::to_string(seed));
  j.set("correct", correct);
  j.set("accuracy", ci.estimate);
  j.set("ci_low", ci.low);
  j.set("ci_high", ci.high);
  j.set("no_comm_correct", correct_none);
  j.set("no_comm_accuracy", ci_none.estimate);
  j.set("no_comm_ci_low", ci_none.low);
  j.set("no_comm_ci_high", ci_none.high);
  j.set("level", 0.95);
  j.set("chance", 1.0 / static_cast<double>(fmt.value_count));
  j.set("seconds", seconds);
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

const std::vector<option_spec>& tasks_options() {
  static const std::vector<option_spec> o = {
      {"--out", "FILE", "the task file to write (JSONL, docs/tasks.md; required)"},
      {"--model", "DIR",
       "the organism whose task.json defines the tokens (default models/organism-a, then the source tree's)"},
      {"--task", "FILE", "the organism's task.json (instead of --model)"},
      {"--items", "N", "documents, one task line each (default 450, as `audit`)"},
      {"--seed", "S",
       "master seed (default 1): use the same --seed in `audit --tasks` for the built-in audit's trials"},
      {"--no-need-fraction", "P", "share of no-need items (default 0.3, as `audit`)"},
      {"--stale-fraction", "P", "share of stale items (default 0.1)"},
      {"--conflict-fraction", "P", "share of conflict items (default 0.1)"},
      common_option("--pretty"),
  };
  return o;
}

#ifndef LATENTAUDIT_DEFAULT_MODELS
#define LATENTAUDIT_DEFAULT_MODELS "models"
#endif

int run_tasks(std::span<const std::string> words) {
  const auto args = arguments::parse(words, tasks_options(), "organism tasks");
  if (args.help()) {
    std::fputs(
        help_text(
            "latentaudit organism tasks --out FILE.jsonl [options]",
            "Writes the organism's recall items as a task file (docs/tasks.md): one line per document\n"
            "with every pair the query may ask about under `queries` (the seed picks one), the regime,\n"
            "the covariates and the budget units of the text_budget arms. `latentaudit audit --tasks\n"
            "FILE --seed S` on it gives the built-in audit's records (same --seed and --items).\n",
            tasks_options())
            .c_str(),
        stdout);
    return exit_ok;
  }
  const std::filesystem::path out = args.require("--out");
  require_output_file(out, "--out");
  std::filesystem::path task_dir;
  if (auto task = args.get("--task")) {
    const std::filesystem::path tp = *task;
    if (tp.filename() != "task.json")
      throw usage_error("organism tasks: option --task must name an organism's task.json, got '" + *task +
                        "'");
    task_dir = tp.parent_path().empty() ? std::filesystem::path(".") : tp.parent_path();
  } else if (auto m = args.get("--model")) {
    task_dir = *m;
  } else {
    task_dir = std::filesystem::path("models") / "organism-a";
    if (!std::filesystem::exists(task_dir / "task.json"))
      task_dir = std::filesystem::path(LATENTAUDIT_DEFAULT_MODELS) / "organism-a";
  }
  refuse_output_over_inputs(
      "organism tasks", "--out", out,
      {args.get("--task") ? guarded_input{"--task", *args.get("--task")}
                          : guarded_input{args.get("--model") ? "--model" : "the organism", task_dir}});
  const auto fmt = organism_format::load(task_dir);
  const auto items = args.integer("--items", 450, 1, 10000000);
  organism_task_options o;
  o.seed = args.integer("--seed", 1, 0, 1ull << 53);
  o.no_need_fraction = args.number("--no-need-fraction", 0.3);
  o.stale_fraction = args.number("--stale-fraction", 0.1);
  o.conflict_fraction = args.number("--conflict-fraction", 0.1);
  try {
    o.validate(fmt);
  } catch (const invalid_argument& e) {
    throw usage_error(std::string("organism tasks: ") + e.what());
  }
  const auto f = organism_task_file(fmt, o, items);
  write_task_file(out, f);
  json_value j = json_value::object();
  j.set("out", out.string());
  j.set("tasks", items);
  j.set("seed", o.seed);
  j.set("options", o.to_json());
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

int run_organism(std::span<const std::string> words) {
  if (words.empty()) throw usage_error("organism: missing command (eval; see 'latentaudit organism --help')");
  if (words[0] == "--help") {
    std::fputs(
        "usage: latentaudit organism eval --model DIR [options]\n"
        "       latentaudit organism tasks --out FILE.jsonl [options]\n\n"
        "  eval               accuracy of a model organism reading the document itself and without "
        "communication\n"
        "  tasks              the organism's recall items as a task file (docs/tasks.md)\n\n"
        "Run 'latentaudit organism eval --help' or 'organism tasks --help' for the options.\n",
        stdout);
    return exit_ok;
  }
  if (words[0] == "eval") return run_eval(words.subspan(1));
  if (words[0] == "tasks") return run_tasks(words.subspan(1));
  throw usage_error("organism: unknown command '" + words[0] + "' (expected eval or tasks)");
}

[[maybe_unused]] const bool registered_organism = register_subcommand(
    {"organism", "evaluate a model organism on associative recall (organism eval --model DIR)",
     run_organism});

}  // namespace
}  // namespace latentaudit::cli
