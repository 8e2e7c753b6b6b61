// SPDX-License-Identifier: MIT
// `latentaudit audit`'s options, and the part of them a relay peer reads (`latentaudit relay-peer`:
// the models, tasks, drift manifest and maps it runs the audit's design on; the design itself comes
// in the audit's greeting). One list, so that the audit's loopback peer gets exactly the options the
// peer reads.
#ifndef LATENTAUDIT_TOOLS_CLI_AUDIT_OPTIONS_HPP
#define LATENTAUDIT_TOOLS_CLI_AUDIT_OPTIONS_HPP

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "engine_select.hpp"
#include "report_options.hpp"
#include "tokenizer_select.hpp"

namespace latentaudit::cli {

/// The options of `latentaudit audit`.
inline std::vector<option_spec> audit_option_specs() {
  std::vector<option_spec> specs = {
      {"--model", "DIR",
       "the agents' model (HF dir + task.json); default models/organism-a (then the source tree's)"},
      {"--partner", "DIR",
       "the heterogeneous partner for cross_model; default models/organism-b; 'none' drops cross_model"},
      engine_option(),
      verbose_option(),
      {"--task", "FILE",
       "the organism's task.json (default: the --model directory's; required with --engine llama.cpp, "
       "whose --model and --partner are GGUF files)"},
      {"--tasks", "FILE",
       "audit the tasks of a task file (JSONL, docs/tasks.md) instead of the organism's built-in ones; "
       "items = the file's tasks"},
      tokenizer_option(),
      {"--scoring", "MODE",
       "how answers of --tasks are scored: token_exact, exact, normalized, contains, regex, first_word or "
       "word_prefix (default: the "
       "file's header, else token_exact for token answers and exact for text)"},
      {"--items", "N", "documents (default 450; with --tasks: the first N tasks, default all)"},
      {"--seeds", "K", "queries (and random streams) per document (default 3)"},
      {"--arms", "LIST", "comma-separated arms (default: all built-in arms; see docs/audit-report.md)"},
      {"--link", "NAME",
       "link for the modeled transfer: pcie4 (default), pcie5, nvlink4, rdma100, rdma400, "
       "custom:<GB/s>:<alpha us>; 'measured': records model pcie4, the cost verdicts use the link fitted "
       "from the relays' measured transfer (--relay-transport)"},
      {"--relay-transport", "tcp|mpi",
       "relays cross a real link: agent A runs in a peer process (tcp: relay-peer; mpi: rank 1 of "
       "`mpirun -np 2`, rank 0 audits), each wire frame is sent, received, decoded and imported by B; "
       "records gain transfer_measured_s (docs/distributed.md)"},
      {"--relay-peer", "HOST:PORT",
       "the relay-peer to connect to (tcp); default: a loopback peer spawned with the same options"},
      {"--relay-key-file", "FILE",
       "the tcp relay's shared secret (>= 32 bytes; also LATENTAUDIT_RELAY_KEY_FILE): the audit and its "
       "relay-peer authenticate each other and every message; without one the relay stays on loopback "
       "(docs/distributed.md, \"Threat model\")"},
      {"--out", "DIR",
       "output directory (default audit-out): records.jsonl, design.json, report.md, report.json, *.svg"},
      {"--resume", "", "continue the records in --out (skips completed (item, seed, arm) keys)"},
      {"--until-decided", "",
       "run the items in batches (item order) and stop once the decision is relay, relay with conditions, "
       "text or no communication: after each batch the report's decision on the records so far, its "
       "intervals confidence sequences over --items (the budget), so the stop costs no error "
       "(docs/audit-report.md, \"An audit that stops when it has decided\"); one process, not with "
       "--relay-transport or under mpirun"},
      {"--max-items", "N", "with --until-decided: the most items to run (the same as --items; give one)"},
      {"--batch-items", "B",
       "with --until-decided: items run between two looks at the decision (default: a tenth of the items, "
       "at least 10)"},
      {"--force", "",
       "replace a previous audit's results in --out: its records*.jsonl, design.json, report.md, "
       "report.json, report.html and *.svg are removed first (other files are kept; refused while "
       "another audit holds --out, and with --resume)"},
      {"--threads", "T", "engine threads (default 1; records do not depend on it)"},
      {"--jobs", "N",
       "units run on N workers at once, each with its own engines (default: the cores, up to 8, on the "
       "reference engine; 1 on llama.cpp, whose --threads use the cores, and under mpirun, where each "
       "rank runs N workers on its units; records do not depend on it; with --relay-transport: N "
       "conversations with agent A, whose relay peer needs the same --jobs)"},
      {"--batched", "",
       "llama.cpp with --jobs N >= 2: the workers share one context per model and their prefills and "
       "decode steps run together in one llama_decode (faster decoding; log-probabilities then equal "
       "the unbatched run's up to float rounding, not bit for bit)"},
      {"--seed", "S", "master seed in [0, 2^53) (default 1): tasks, execution order, every random stream"},
      {"--no-need-fraction", "P", "share of no-need items: B's own prompt holds the pairs (default 0.3)"},
      {"--stale-fraction", "P",
       "share of stale items: A's cache is of an older version of the document, text relays the current "
       "one (default 0.1)"},
      {"--conflict-fraction", "P",
       "share of conflict items: A's document binds B's own keys to other values (default 0.1); need items "
       "are the rest"},
      {"--drift", "DIR",
       "drifted senders for the kv_drift_<steps> arms: DIR/drift.json and its overlays; default "
       "models/organism-a-drift (every level shipped there is an arm); 'none' drops the drift arms"},
      {"--map", "FILE[,FILE]",
       "cache maps (latentaudit map fit) for the kv_mapped arms: a map from the partner adds kv_mapped, one "
       "from a drifted sender kv_mapped_drift_<steps>; default every map in models/maps whose models this "
       "audit runs; 'none' drops them"},
      {"--timing-repeats", "R",
       "extra timed runs of each trial of the subsampled units, for the run-to-run timing variation in "
       "the cost CIs (default 3; 0: none)"},
      {"--timing-repeat-fraction", "P",
       "share of (item, seed) units whose trials are repeated (default 0.1)"},
      {"--config", "FILE",
       "JSON object with any of these options as keys (without --), e.g. {\"items\": 100, \"arms\": "
       "\"no_comm,kv_full\"}; command-line options win"},
  };
  const auto shared = report_option_specs();  // the report's options, as `report` takes them
  specs.insert(specs.end(), shared.begin(), shared.end());
  specs.insert(
      specs.end(),
      {
          {"--trials-only", "", "run and journal the trials, skip the report"},
          {"--durable", "", "fsync after every record (survives power loss, slower)"},
          {"--shard-schedule", "S",
           "under mpirun: how units are shared among ranks: interleaved (default: rank r runs units r, r+N, "
           "...), dynamic (rank 0 hands out the next unit on request) or block (records never depend on it; "
           "docs/distributed.md)"},
          {"--quiet", "", "no progress on stderr"},
          common_option("--pretty"),
      });
  return specs;
}

/// The options a relay peer reads: what it runs the audit's design on (the design — arms, items,
/// seeds, seed, task options, link — comes in the audit's greeting, dist::design_of_hello).
inline constexpr std::string_view peer_option_names[] = {"--model",     "--partner", "--task",  "--tasks",
                                                         "--tokenizer", "--drift",   "--map",   "--engine",
                                                         "--threads",   "--jobs",    "--quiet", "--config"};

/// The specs of the relay peer's options (peer_option_names), as `audit` declares them.
inline std::vector<option_spec> peer_option_specs() {
  auto specs = audit_option_specs();
  std::erase_if(specs, [](const option_spec& o) {
    return std::find(std::begin(peer_option_names), std::end(peer_option_names), o.name) ==
           std::end(peer_option_names);
  });
  return specs;
}

/// The audit's loopback relay peer's options: the audit's own values of the peer's options (a
/// --config file's included), as command-line words.
inline std::vector<std::string> peer_words(const arguments& args) {
  std::vector<std::string> words;
  for (const auto& o : peer_option_specs()) {
    if (o.name == "--config") continue;  // its entries are in `args` already
    if (o.metavar.empty() && args.has(o.name)) words.push_back(o.name);
    if (o.metavar.empty()) continue;
    if (const auto v = args.get(o.name)) {
      words.push_back(o.name);
      words.push_back(*v);
    }
  }
  return words;
}

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_TOOLS_CLI_AUDIT_OPTIONS_HPP
