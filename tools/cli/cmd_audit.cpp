// SPDX-License-Identifier: MIT
// `latentaudit audit`: the main job — run the paired trial design on the model organisms (agent A
// reads, its cache or text is relayed to agent B under every arm), journal every record, then
// audit the records into report.md / report.json / SVG plots (`latentaudit report`, which audits
// records from any stack, is cmd_report.cpp; the options they share, report_options.hpp).
#include <latentaudit/dist/relay_protocol.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/report.hpp>
#include <latentaudit/runner/audit_session.hpp>
#include <latentaudit/runner/audit_spec.hpp>
#include <latentaudit/runner/report_input.hpp>
#include <latentaudit/trial.hpp>
#include <latentaudit/trial/task_file.hpp>
#include <latentaudit/version.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "audit_config.hpp"
#include "audit_maps.hpp"
#include "audit_options.hpp"
#include "audit_shard.hpp"
#include "cli.hpp"
#include "engine_select.hpp"
#include "output_guard.hpp"
#include "relay_session.hpp"
#include "report_options.hpp"
#include "tokenizer_select.hpp"

#ifndef LATENTAUDIT_DEFAULT_MODELS
#define LATENTAUDIT_DEFAULT_MODELS "models"
#endif

namespace latentaudit::cli {
namespace {

std::filesystem::path model_dir(const std::optional<std::string>& given, const char* name) {
  if (given) return *given;
  const std::filesystem::path local = std::filesystem::path("models") / name;
  if (std::filesystem::exists(local / "config.json")) return local;
  return std::filesystem::path(LATENTAUDIT_DEFAULT_MODELS) / name;
}

// The design's size, checked before anything is allocated: the execution order holds 16 bytes
// per (item, seed) unit, the journal's key set about 96 bytes per trial, and the report about
// 2 KiB per record in memory. Refuses a design whose estimate exceeds the machine's memory.
void check_design_size(const trial_design& d, bool trials_only) {
  const long double units = static_cast<long double>(d.items) * static_cast<long double>(d.seeds);
  const long double trials = units * static_cast<long double>(d.arms.size());
  const long double bytes = units * 16.0L + trials * (trials_only ? 96.0L : 96.0L + 2048.0L);
  long double phys = 0;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) phys = static_cast<long double>(pages) * static_cast<long double>(page);
  const long double limit = phys > 0 ? phys / 2 : static_cast<long double>(std::uint64_t{1} << 34);
  if (bytes > limit) {
    char msg[400];
    std::snprintf(msg, sizeof msg,
                  "audit: the design is too large: %llu items x %llu seeds x %zu arms = %.4Lg trials, "
                  "needing about %.3Lg GB of memory, more than half of this machine's %.3Lg GB; lower "
                  "--items or --seeds",
                  static_cast<unsigned long long>(d.items), static_cast<unsigned long long>(d.seeds),
                  d.arms.size(), trials, bytes / 1e9L, phys / 1e9L);
    throw usage_error(msg);
  }
}

// The state of one `audit` (or `relay-peer`) run: the options, the spec they declare (the library
// builds the design from it: runner/audit_spec.hpp), the topology and what the run leaves for the
// summary.
struct audit_run {
  arguments& args;
  audit_shard* shard;
  relay_session* serve;
  unsigned threads = 1;
  bool batched = false;  ///< --batched: llama.cpp workers share a context, forwards batched
  bool on_llama = false;
  std::filesystem::path model;
  std::optional<std::string> partner_arg;
  bool no_partner = false;
  audit_spec spec;  ///< the audit, declared: the options field by field
  std::optional<task_file> user_tasks;
  std::optional<organism_format> fmt;
  std::filesystem::path out;
  dist::shard_schedule scheme = dist::shard_schedule::interleaved;
  bool mpi_relay = false;
  bool mpi_a = false;
  std::optional<directory_lock> lock;
  std::unique_ptr<relay_session> relay;
  /// --relay-transport mpi: the conversations with the other rank, one per --jobs worker
  std::vector<std::unique_ptr<dist::relay_channel>> mpi_links;
  audit_session_result result;  ///< what the library's audit_session ran and found
  /// relay-peer: the audit's greeting on the first conversation, whose design the peer runs
  json_value received_hello;
};

// --seeds K > 1 on a task file whose tasks each hold one query: every seed of an item asks the
// same query, so the K trials per item differ only in their random streams (docs/tasks.md,
// "Several queries") — a repeat, not more evidence. One line on stderr (not with --quiet).
void warn_single_query_seeds(const audit_run& r) {
  if (!r.user_tasks || r.spec.seeds <= 1 || r.args.has("--quiet")) return;
  if ((r.shard != nullptr && r.shard->rank() != 0) || r.serve != nullptr) return;  // the audit warns
  const auto& tasks = r.user_tasks->tasks;
  if (!std::all_of(tasks.begin(), tasks.end(), [](const auto& t) { return t.queries.size() <= 1; })) return;
  std::fprintf(stderr,
               "latentaudit: warning: --seeds %llu with tasks of one query each: the %llu trials of an item "
               "ask the same query and differ only in their random streams (pass --seeds 1, or give the "
               "tasks several \"queries\", docs/tasks.md)\n",
               static_cast<unsigned long long>(r.spec.seeds), static_cast<unsigned long long>(r.spec.seeds));
}

task_scoring scoring_of(const arguments& a, const std::string& sc) {
  const auto s = parse_task_scoring(sc);
  if (!s)
    throw usage_error(a.command() +
                      ": option --scoring must be token_exact, exact, normalized, contains, regex, "
                      "first_word or word_prefix, got '" +
                      sc + "'");
  return *s;
}

// A reference-engine model named by `option` (--model, --partner): a folder holding config.json (an
// HF checkpoint, an organism) or a file (a GGUF import; its loader checks the file). Checked with the
// other options, before --out is created and locked, so a mistyped path is one line naming the option
// and leaves nothing behind.
void require_reference_model(const std::filesystem::path& p, const char* option) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(p, ec)) return;
  if (!std::filesystem::is_directory(p, ec))
    throw usage_error(std::string("audit: option ") + option + ": '" + p.string() +
                      "' is neither a model folder nor a GGUF file");
  if (!std::filesystem::is_regular_file(p / "config.json", ec))
    throw usage_error(std::string("audit: option ") + option + ": '" + p.string() +
                      "' holds no config.json (not a model folder)");
}

// The models and where the tasks come from (options --model, --engine, --task, --tasks, --partner,
// --threads): spec.engine, tasks, organism_dir, with_partner; a relay peer's too.
void read_audit_models(audit_run& r) {
  auto& args = r.args;
  auto& s = r.spec;
  r.threads = static_cast<unsigned>(args.integer("--threads", 1, 0, 1024));
  r.on_llama = parse_engine(args, "audit") == engine_kind::llama_cpp;
  s.engine = r.on_llama ? "llama.cpp" : "reference";
  if (r.on_llama && !args.get("--model"))
    throw usage_error("audit: --engine llama.cpp needs --model FILE.gguf");
  r.model = r.on_llama ? std::filesystem::path(args.require("--model"))
                       : model_dir(args.get("--model"), "organism-a");
  if (r.on_llama)
    require_gguf(r.model, "audit", "--model");
  else
    require_reference_model(r.model, "--model");
  s.organism_dir = r.model;
  if (auto task = args.get("--task")) {
    const std::filesystem::path tp = *task;
    if (tp.filename() != "task.json")
      throw usage_error("audit: option --task must name an organism's task.json, got '" + *task + "'");
    s.organism_dir = tp.parent_path().empty() ? std::filesystem::path(".") : tp.parent_path();
  } else if (r.on_llama && !args.get("--tasks")) {
    throw usage_error("audit: --engine llama.cpp needs --task (the organism's task.json) or --tasks");
  }
  const auto tasks_arg = args.get("--tasks");
  s.tasks = tasks_arg ? audit_task_source::file : audit_task_source::organism;
  if (tasks_arg)
    for (const char* o : {"--no-need-fraction", "--stale-fraction", "--conflict-fraction", "--task"})
      if (args.get(o))
        throw usage_error(std::string("audit: option ") + o +
                          " shapes the organism's built-in tasks and does not apply with --tasks");
  // The tasks, read and checked before any trial runs (file:line:field errors exit 2).
  if (tasks_arg) r.user_tasks = read_task_file(*tasks_arg);
  // The organism's tasks come from task.json beside the model (or --task's folder).
  std::error_code ec;
  if (!tasks_arg && !std::filesystem::is_regular_file(s.organism_dir / "task.json", ec))
    throw usage_error(args.get("--task") ? "audit: option --task: '" + *args.get("--task") + "' is not a file"
                                         : "audit: option --model: '" + r.model.string() +
                                               "' holds no task.json (the organism's tasks; give --task "
                                               "FILE or --tasks FILE)");
  r.partner_arg = args.get("--partner");
  r.no_partner = r.partner_arg && *r.partner_arg == "none";
  s.with_partner = !r.no_partner;  // cross_model with the partner engine
  if (!r.no_partner && !r.on_llama)
    require_reference_model(model_dir(r.partner_arg, "organism-b"), "--partner");
}

// The models (read_audit_models), the scoring and the design's size (options --scoring, --seed,
// --items, --max-items, --seeds): spec.scoring, seed, items, seeds.
void read_audit_tasks(audit_run& r) {
  read_audit_models(r);
  auto& args = r.args;
  auto& s = r.spec;
  const auto tasks_arg = args.get("--tasks");
  s.scoring = args.parsed("--scoring", scoring_of);
  if (s.scoring && !tasks_arg) throw usage_error("audit: option --scoring applies to --tasks");
  s.seed = static_cast<std::uint64_t>(args.integer("--seed", 1, 0, max_exact_seed - 1));
  if (args.get("--max-items") && !args.has("--until-decided"))
    throw usage_error("audit: option --max-items applies to --until-decided (else --items sets the items)");
  if (args.get("--max-items") && args.get("--items"))
    throw usage_error("audit: options --items and --max-items set the same budget: give one of them");
  const std::string items_opt = args.get("--max-items") ? "--max-items" : "--items";
  s.items = static_cast<std::uint64_t>(args.integer(items_opt, 450, 1, 10000000));
  if (r.user_tasks) {
    if (r.user_tasks->tasks.empty())
      throw usage_error("audit: --tasks file '" + *tasks_arg + "' holds no tasks");
    const auto n = static_cast<std::uint64_t>(r.user_tasks->tasks.size());
    if (args.get(items_opt) && s.items > n)
      throw usage_error("audit: option " + items_opt + " is " + std::to_string(s.items) + ", but '" +
                        *tasks_arg + "' holds " + std::to_string(n) + " tasks");
    if (!args.get(items_opt)) s.items = n;
    r.user_tasks->tasks.resize(static_cast<std::size_t>(s.items));
  }
  s.seeds = static_cast<std::uint64_t>(args.integer("--seeds", 3, 1, 100000));
  warn_single_query_seeds(r);
}

std::vector<trial_arm> arms_of(const arguments& a, const std::string& list) {
  std::vector<trial_arm> out;
  for (std::size_t i = 0; i <= list.size();) {
    const std::size_t j = std::min(list.find(',', i), list.size());
    try {
      out.push_back(parse_arm(std::string_view(list).substr(i, j - i)));
    } catch (const error& e) {
      throw usage_error(a.command() + ": option --arms: " + e.what());
    }
    i = j + 1;
  }
  return out;
}

link_preset link_of(const arguments& a, const std::string& name) {
  try {
    return find_link(name == "measured" ? "pcie4" : name);  // measured: the report's fitted link
  } catch (const error& e) {
    throw usage_error(a.command() + ": option --link: " + e.what());
  }
}

// The parts of the spec a relay peer takes from its own options too: the drift manifest (--drift:
// one kv_drift_<steps> arm per level; default models/organism-a-drift), the organism's messages
// (task.json `recite`) and the cache maps (--map; default models/maps).
void read_audit_senders(audit_run& r) {
  auto& s = r.spec;
  const auto drift_arg = r.args.get("--drift");
  const bool no_drift = drift_arg && *drift_arg == "none";
  const auto drift_dir = no_drift ? std::filesystem::path() : model_dir(drift_arg, "organism-a-drift");
  try {
    if (!no_drift && (drift_arg || std::filesystem::exists(drift_dir / "drift.json")))
      s.drift = read_drift_manifest(drift_dir);
  } catch (const error& e) {
    throw usage_error(std::string("audit: --") + e.what());  // "audit: --drift manifest '...': ..."
  }
  if (no_drift && s.arms)  // --drift none drops the drift arms --arms names
    std::erase_if(*s.arms, [](const trial_arm& a) {
      return a.plan().sender == arm_sender::named && a.sender != partner_sender;
    });
  s.drift_overlays = !r.on_llama;  // drifted senders are reference-engine overlays
  if (std::filesystem::exists(s.organism_dir / "task.json"))
    s.messages = organism_message_options(s.organism_dir);
  const std::filesystem::path local_maps = std::filesystem::path("models") / "maps";
  s.maps = audit_maps_of_option(r.args, std::filesystem::exists(local_maps)
                                            ? local_maps
                                            : std::filesystem::path(LATENTAUDIT_DEFAULT_MODELS) / "maps");
}

// The arms (--arms, --drift, --map, the organism's messages), the link and the timing repeats;
// the arms are resolved once here (audit_design_arms) so a bad one exits before any model loads.
void read_audit_arms(audit_run& r) {
  auto& args = r.args;
  auto& s = r.spec;
  s.arms = args.parsed("--arms", arms_of);
  read_audit_senders(r);
  const std::string link_name = args.get("--link").value_or("pcie4");
  s.link = args.parsed("--link", link_of).value_or(find_link("pcie4"));
  if (link_name == "measured" && !args.get("--relay-transport"))
    throw usage_error(
        "audit: option --link measured needs --relay-transport (the link is fitted from "
        "the relays' measured transfer)");
  s.timing_repeats = static_cast<std::uint32_t>(args.integer("--timing-repeats", 3, 0, 100));
  s.timing_repeat_fraction = args.number("--timing-repeat-fraction", 0.1);
  if (!(s.timing_repeat_fraction >= 0 && s.timing_repeat_fraction <= 1))
    throw usage_error("audit: option --timing-repeat-fraction must lie in [0, 1]");
  (void)audit_design_arms(s);
}

double fraction_option(const arguments& args, const char* name, double fallback) {
  const double x = args.number(name, fallback);
  if (!(x >= 0 && x <= 1)) throw usage_error(std::string("audit: option ") + name + " must lie in [0, 1]");
  return x;
}

// The regime fractions, the report's options, --out, the shard schedule, the workers and the
// stopping rule's batches.
void read_audit_options(audit_run& r) {
  auto& args = r.args;
  auto& s = r.spec;
  auto& o = s.organism_tasks;
  o.no_need_fraction = fraction_option(args, "--no-need-fraction", 0.3);
  o.stale_fraction = fraction_option(args, "--stale-fraction", 0.1);
  o.conflict_fraction = fraction_option(args, "--conflict-fraction", 0.1);
  if (!(o.no_need_fraction + o.stale_fraction + o.conflict_fraction <= 1 + 1e-12))
    throw usage_error(
        "audit: options --no-need-fraction + --stale-fraction + --conflict-fraction must sum to at "
        "most 1, got " +
        number_text(o.no_need_fraction + o.stale_fraction + o.conflict_fraction));
  s.report = report_options(args, s.seed);
  r.out = args.get("--out").value_or("audit-out");
  check_design_size(audit_design_arms(s).design, args.has("--trials-only"));
  const auto schedule_of = [](const arguments& a, const std::string& name) {
    const auto sc = dist::parse_schedule(name);
    if (!sc)
      throw usage_error(a.command() +
                        ": option --shard-schedule must be interleaved, dynamic or block, got '" + name +
                        "'");
    return *sc;
  };
  r.scheme = args.parsed("--shard-schedule", schedule_of).value_or(dist::shard_schedule::interleaved);
  // --jobs: by default the cores (up to 8) on the reference engine, whose weights each worker
  // copies (the organisms: a few MB); 1 on llama.cpp, whose --threads already use the cores (with
  // --batched its workers share one context: run_audit_on_llama_cpp); 1 where the topology runs
  // elsewhere (open_audit_topology)
  const unsigned cores = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  const bool elsewhere = r.shard != nullptr || args.get("--relay-transport").has_value();
  auto& topo = s.topology;  // --jobs, --relay-transport, --relay-peer (open_audit_topology checks them)
  topo.jobs = static_cast<unsigned>(args.integer("--jobs", r.on_llama || elsewhere ? 1 : cores, 1, 256));
  const auto transport = args.get("--relay-transport");
  topo.relay = transport == std::optional<std::string>("tcp")   ? audit_relay_transport::tcp
               : transport == std::optional<std::string>("mpi") ? audit_relay_transport::mpi
                                                                : audit_relay_transport::none;
  topo.relay_peer = topo.relay == audit_relay_transport::tcp ? args.get("--relay-peer").value_or("") : "";
  r.batched = args.has("--batched");
  if (r.batched && !r.on_llama) throw usage_error("audit: option --batched applies to --engine llama.cpp");
  if (r.batched && r.spec.topology.jobs < 2)
    throw usage_error("audit: option --batched needs --jobs 2 or more");
  // the batched seats wait for one another; a relay conversation per seat is not built (nor tested)
  if (r.batched && args.get("--relay-transport"))
    throw usage_error(
        "audit: option --batched runs the trials in one process: it excludes --relay-transport");
  // --until-decided: batches of items, a look at the decision after each (spec.batch_items)
  if (args.get("--batch-items") && !args.has("--until-decided"))
    throw usage_error("audit: option --batch-items applies to --until-decided");
  if (!args.has("--until-decided")) return;
  if (elsewhere)
    throw usage_error(
        "audit: option --until-decided runs in one process: it excludes --relay-transport and mpirun");
  const auto fallback = static_cast<std::int64_t>(std::max<std::uint64_t>(10, (s.items + 9) / 10));
  s.batch_items =
      std::min(static_cast<std::uint64_t>(args.integer("--batch-items", fallback, 1, 10000000)), s.items);
  const std::size_t looks = static_cast<std::size_t>((s.items + s.batch_items - 1) / s.batch_items);
  if ((static_cast<double>(s.report.bootstrap_replicates) + 1.0) * s.report.alpha /
          (2.0 * static_cast<double>(looks)) <
      1.0)
    throw usage_error(
        "audit: --until-decided takes " + std::to_string(looks) +
        " looks; the cost bootstrap at alpha/looks needs (--bootstrap + 1)·alpha/(2·looks) >= 1: "
        "raise --batch-items or --bootstrap");
}

// --out under its lock (held by the caller, so no other audit or report writes there): --force
// removes the files a previous audit wrote (records*.jsonl, design.json, report.*, *.svg; nothing
// else), and without --resume or --force a directory that already holds records is refused in
// the CLI's words before the journal opens.
void prepare_out_dir(const arguments& args, const std::filesystem::path& out, const audit_shard* shard) {
  const bool resume = args.has("--resume");
  const bool force = args.has("--force");
  if (force && resume)
    throw usage_error(
        "audit: options --force and --resume exclude each other (--force replaces the "
        "records in --out, --resume continues them)");
  if (force && shard != nullptr)
    throw usage_error(
        "audit: option --force applies to a one-process audit; under mpirun, remove the "
        "previous audit's files from --out '" +
        out.string() + "' first");
  const auto files = dist::records_files(out);
  if (force) {
    std::vector<std::filesystem::path> doomed = files;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
      const auto name = it->path().filename().string();
      const bool ours = name == "design.json" || name == "report.md" || name == "report.json" ||
                        name == "report.html" || name == "schedule.json" ||
                        (name.size() > 4 && name.compare(name.size() - 4, 4, ".svg") == 0);
      if (ours && it->is_regular_file(ec)) doomed.push_back(it->path());
    }
    for (const auto& f : doomed) {
      std::error_code rm;
      std::filesystem::remove(f, rm);
      if (rm) throw usage_error("audit: --force cannot remove '" + f.string() + "': " + rm.message());
    }
    return;
  }
  if (resume || files.empty()) return;
  if (dist::records_set_keys(files).empty()) return;  // empty or zero-padded files hold no records
  throw usage_error("audit: --out '" + out.string() +
                    "' already holds records of an audit: pass --resume to continue it, --force to "
                    "replace it, or choose another --out");
}

// The topology: the --out lock, the relay links (tcp peer, MPI relay) and the shards' first step.
void open_audit_topology(audit_run& r) {
  auto& args = r.args;
  auto* shard = r.shard;
  // One writer per --out: taken before anything else, held until this function returns (the
  // journal and the report), released by the kernel if the process dies. In a sharded audit rank
  // 0 holds it and every rank locks its own records file (docs/distributed.md).
  // --relay-transport mpi (docs/distributed.md): under `mpirun -np 2` rank 0 is agent B (the
  // audit: journal, report) and rank 1 agent A (dist::serve_sender), linked by dist::mpi_transport.
  r.mpi_relay = args.get("--relay-transport") == std::optional<std::string>("mpi");
  if (r.mpi_relay) {
    if (args.get("--relay-peer"))
      throw usage_error("audit: option --relay-peer applies to --relay-transport tcp, not mpi");
    if (shard == nullptr || shard->size() != 2)
      throw usage_error(
          "audit: --relay-transport mpi runs under `mpirun -np 2` (agent B on rank 0, agent A on rank 1), "
          "got " +
          (shard == nullptr ? std::string("one process") : std::to_string(shard->size()) + " ranks"));
  }
  r.mpi_a = r.mpi_relay && shard->rank() == 1;  // agent A: serves the sender's half
  if (!r.mpi_a && (shard == nullptr || shard->rank() == 0)) {
    r.lock.emplace(r.out, "--out");
    prepare_out_dir(args, r.out, shard);
  }
  // --jobs: workers in this process, each with its own engines (under mpirun: on each rank, its
  // workers sharing the rank's units). Over a relay link each worker holds its own conversation
  // with agent A (tcp: relay_session opens --jobs links; mpi: a pair of tags each), which agent A
  // serves on its own thread and engines; over MPI the two ranks' threads then call MPI at once.
  if (r.spec.topology.jobs > 1 && r.mpi_relay && !shard->concurrent_threads())
    throw usage_error(std::string("audit: option --jobs ") + std::to_string(r.spec.topology.jobs) +
                      " over --relay-transport mpi needs an MPI that lets threads call it at once "
                      "(MPI_THREAD_MULTIPLE); this MPI does not: pass --jobs 1 or use --relay-transport tcp");
  if (r.spec.topology.jobs > 1 && shard != nullptr && !shard->serialized_threads())
    throw usage_error(std::string("audit: option --jobs ") + std::to_string(r.spec.topology.jobs) +
                      " under mpirun needs an MPI that lets threads call it one at a time "
                      "(MPI_THREAD_SERIALIZED); this MPI does not: pass --jobs 1");
  // --relay-transport: B's end of the link (a loopback peer starts now and loads its models)
  r.relay = !r.mpi_relay ? relay_session::for_audit(args, peer_words(args)) : nullptr;
  if (r.mpi_relay)
    for (unsigned w = 0; w < r.spec.topology.jobs; ++w)
      r.mpi_links.push_back(shard->relay_link(1 - shard->rank(), 600.0, w));
  if (shard != nullptr) shard->step([] {});
}

// relay-peer: the design is the audit's, received over the link (dist::design_of_hello: design.json's
// one converter) and turned into the spec (audit_spec_of_design: arms, items, seeds, seed, task
// options, the arms the audit's engine left out); the peer's own options (peer_option_names, read
// before: read_audit_models, read_audit_senders) give only what it runs the design on — its engine,
// models, tasks, tokenizer, drift manifest, maps, threads and workers. The peer's build then fixes
// the identity its own models and tasks give, and the first conversation's greeting refuses the
// audit (naming the first differing field) unless it is the audit's.
void receive_audit_design(audit_run& r) {
  dist::relay_channel& first = r.serve->channel(0, r.spec.topology.jobs, "");  // adopts the audit's hash
  const auto fail = [&](const std::string& why) {
    try {
      dist::send_refusal(first, why);
    } catch (const std::exception&) {
    }
    throw usage_error("relay-peer: " + why);
  };
  audit_spec s;
  try {
    r.received_hello = dist::receive_hello(first);
    s = audit_spec_of_design(dist::design_of_hello(r.received_hello));
  } catch (const corrupt_data& e) {
    fail(e.what());
  }
  if (s.tasks == audit_task_source::organism && r.user_tasks)
    fail("the audit runs the organism's tasks, but option --tasks is given");
  if (s.tasks == audit_task_source::file) {
    if (!r.user_tasks)
      fail("the audit runs the task file '" + s.task_file_name + "': pass it as option --tasks");
    if (r.user_tasks->tasks.size() < s.items)
      fail("the audit runs " + std::to_string(s.items) + " tasks, option --tasks holds " +
           std::to_string(r.user_tasks->tasks.size()));
    r.user_tasks->tasks.resize(static_cast<std::size_t>(s.items));
  }
  // what the peer runs the design on: its engine, organism, drifted senders, messages, maps, workers
  s.engine = r.spec.engine;
  s.organism_dir = r.spec.organism_dir;
  s.drift = std::move(r.spec.drift);
  s.drift_overlays = r.spec.drift_overlays;
  s.messages = std::move(r.spec.messages);
  s.maps = std::move(r.spec.maps);
  s.topology = r.spec.topology;
  try {
    (void)audit_design_arms(s);  // e.g. a drifted sender's level that the peer's --drift lacks
  } catch (const invalid_argument& e) {
    fail(std::string("the audit's design does not run here: ") + e.what());
  }
  r.spec = std::move(s);
}

// report.html's drill-down: the tasks again, read when the report is written rather than held
// through the trials (the task source frees each entry once prepared): the organism's generated
// anew, a --tasks file read as `report --records` reads it (its SHA-256 checked)
std::shared_ptr<const task_file> report_tasks(const audit_run& r, const trial_design& d, std::string& note) {
  if (r.fmt)
    return std::make_shared<const task_file>(
        organism_task_file(*r.fmt, r.spec.organism_task_options_of(), d.items));
  if (const json_value* p =
          d.identity.task_options.is_object() ? d.identity.task_options.find("path") : nullptr;
      p != nullptr && p->is_string())
    return dist::read_design_tasks(p->as_string(), d.identity.task_hash, r.out, note);
  return nullptr;
}

// The library's audit_session options of this run: the records directory and its lock, the
// workers, the report, and the topology (agent A over tcp or MPI, on either end; a share of a
// sharded run under mpirun). The design itself is the spec's (audit_session(spec, ...)).
audit_session_options session_options(audit_run& r,
                                      std::function<std::string(std::span<const token_id>)> detokenize,
                                      progress_meter& meter) {
  auto& args = r.args;
  audit_session_options so;
  so.out = r.out;
  so.lock = std::move(r.lock);
  so.resume = args.has("--resume");
  so.durable = args.has("--durable");
  so.trials_only = args.has("--trials-only");
  so.messages.detokenize = std::move(detokenize);  // the records' message text (null without a tokenizer)
  so.progress = [&meter](std::uint64_t done, std::uint64_t total, std::uint64_t resumed) {
    meter(done, total, resumed);
  };
  const bool quiet = args.has("--quiet");
  so.on_look = [quiet, &r](std::size_t k, std::size_t looks, std::uint64_t items, const audit_report& look,
                           std::size_t cells, std::size_t cells_all) {
    if (!quiet) print_look(k, looks, items, r.spec.items, look, cells, cells_all);
  };
  so.before_report = [quiet, out = r.out,
                      replicates = r.spec.report.bootstrap_replicates](std::size_t records) {
    if (!quiet)  // the analysis runs for seconds without progress of its own
      std::fprintf(stderr,
                   "latentaudit: analysing %zu records (%zu bootstrap replicates) for the report in %s\n",
                   records, replicates, out.string().c_str());
  };
  so.report_tasks = [&r](const trial_design& d, std::string& note) { return report_tasks(r, d, note); };
  auto& t = so.topology;
  t.ranks = r.shard;
  t.ranks_relay = r.mpi_relay;
  t.scheme = r.scheme;
  t.role = r.serve != nullptr || r.mpi_a ? audit_role::agent_a : audit_role::agent_b;
  t.received_hello = r.received_hello;
  if (r.serve != nullptr || r.relay) {  // tcp: the session's links, authenticated, one per worker
    relay_session* link = r.serve != nullptr ? r.serve : r.relay.get();
    const std::size_t n = r.spec.topology.jobs;
    t.channel = [link, n](unsigned w, const trial_design& d) -> dist::relay_channel& {
      return link->channel(w, n, d.design_hash());
    };
    t.relay_key = [link](unsigned w) { return link->wire_key(w); };
    if (r.relay) t.after_trials = [link] { link->finish(); };
  } else if (!r.mpi_links.empty()) {  // mpi: a pair of tags per worker
    t.channel = [&r](unsigned w, const trial_design&) -> dist::relay_channel& { return *r.mpi_links.at(w); };
  }
  return so;
}

// The spec on `first`'s engines (and `--jobs - 1` more from make_worker) through the library's
// audit_session: the tasks' source on the engine's codec, then the session (which builds the design
// and its identity from the spec — build_audit_design —, opens the journal and runs the trials, or in
// a relay peer or MPI rank 1 serves the sender's half, and reports).
template <class Engine, class Partner>
void run_audit_on(audit_run& r, text_tokenizer& tokenizer, audit_engines<Engine, Partner>& first,
                  const audit_worker_factory<Engine, Partner>& make_worker) {
  const auto& engine = first.engine;
  const Partner* partner = first.partner ? &*first.partner : nullptr;
  if (r.fmt && engine.info().vocab_size != r.fmt->vocab_size)
    throw usage_error("audit: the task's vocab_size " + std::to_string(r.fmt->vocab_size) +
                      " differs from the model's " + std::to_string(engine.info().vocab_size) + " ('" +
                      r.model.string() + "')");
  text_codec codec = tokenizer.codec(first.engine, "audit");
  auto detokenize = codec.decode;
  const task_file_source source(
      std::move(*r.user_tasks), std::move(codec),
      {.vocab_size = engine.info().vocab_size, .max_context = engine.info().max_context}, r.spec.scoring);
  r.user_tasks.reset();
  if (partner != nullptr && partner->info().vocab_size != engine.info().vocab_size)
    throw usage_error("audit: the partner's vocab_size " + std::to_string(partner->info().vocab_size) +
                      " differs from the model's " + std::to_string(engine.info().vocab_size));
  progress_meter meter(r.args.has("--quiet") || (r.shard != nullptr && r.shard->rank() != 0));
  audit_session session(r.spec, session_options(r, std::move(detokenize), meter));
  r.result = session.run(source, first, make_worker);
}

// Before any trial: a design whose need regime has fewer items than the verdict interval needs to
// show anything inside --margin (betting_items_for_margin: even with every item concordant) gets a
// warning naming the counts and the options that change them (issue 28: "audit warns before any
// trial when the design cannot reach the margin").
void warn_design_reach(const audit_run& r) {
  if (r.args.has("--quiet") || (r.shard != nullptr && r.shard->rank() != 0) || !r.user_tasks ||
      r.serve != nullptr)  // a relay peer: the audit warns
    return;
  const auto need =
      static_cast<std::size_t>(std::count_if(r.user_tasks->tasks.begin(), r.user_tasks->tasks.end(),
                                             [](const auto& t) { return t.regime == task_regime::need; }));
  const std::size_t least = betting_items_for_margin(r.spec.report.equivalence_margin, r.spec.report.alpha);
  if (need >= least) return;
  std::fprintf(stderr,
               "latentaudit: warning: the design has %zu need-regime items; at --margin %s and --alpha %s "
               "non-inferiority (need.kv_noninferior_to_text) and absence (\"no\") verdicts need at least "
               "%zu, even when every item agrees: they will be inconclusive (raise --items, or --margin)\n",
               need, number_text(r.spec.report.equivalence_margin).c_str(),
               number_text(r.spec.report.alpha).c_str(), least);
}

// --until-decided on a task file: its tasks run in a permutation drawn from the seed (stream
// (seed, 0, 0x5EF, 0)), since a file's order may carry meaning (sorted by difficulty or topic)
// and a stop after the first batches must have seen a random sample of it, not its head. The
// permuted tasks are written to --out/tasks.until-decided.jsonl and read back (the one reader),
// so the design names that file and its SHA-256, item i is its line i (report.html, `report
// --records`), and a resume rewrites the same bytes (or is refused when the tasks changed).
void shuffle_tasks_for_until_decided(audit_run& r) {
  auto& tasks = r.user_tasks->tasks;
  auto g = make_stream({r.spec.seed, 0, 0x5EF, 0});
  for (std::size_t i = tasks.size(); i > 1; --i)
    std::swap(tasks[i - 1],
              tasks[std::min<std::size_t>(i - 1, uniform_index(g, static_cast<std::uint32_t>(i)))]);
  const auto path = std::filesystem::absolute(r.out / "tasks.until-decided.jsonl");
  write_task_file(path, *r.user_tasks);
  r.user_tasks = read_task_file(path.string());
}

#if LATENTAUDIT_CLI_LLAMA_CPP
void run_audit_on_llama_cpp(audit_run& r, text_tokenizer& tokenizer, bool wants_partner);
#endif

// The reference engine's audit: B's model, the partner where arms need it, the drifted senders the
// spec's arms name (audit_drift_senders: the manifest's base model with the level's overlay); each
// further --jobs worker copies them (the reference engine's weights are plain data; no sequence is
// open yet).
void run_audit_on_reference(audit_run& r, text_tokenizer& tokenizer, bool wants_partner) {
  using engines = audit_engines<reference_cpu_engine>;
  engines first{reference_cpu_engine::load(r.model, r.threads), std::nullopt, {}};
  if (wants_partner)
    first.partner.emplace(reference_cpu_engine::load(model_dir(r.partner_arg, "organism-b"), r.threads));
  for (const auto& [sender, level] : audit_drift_senders(r.spec, audit_design_arms(r.spec).design))
    first.senders.emplace_back(sender, reference_cpu_engine::load_with_overlay(
                                           level.base, r.spec.drift->overlay_path(level), r.threads));
  run_audit_on<reference_cpu_engine, reference_cpu_engine>(
      r, tokenizer, first, [&first] { return std::make_unique<engines>(first); });
}

// The trials: the tasks (the organism's written as task lines and read through the same
// task_file_source as a user's --tasks file), the reach warning, the engines, and the session.
void run_audit_trials(audit_run& r) {
  if (!r.user_tasks) {
    r.fmt = organism_format::load(r.spec.organism_dir);
    r.user_tasks = organism_task_file(*r.fmt, r.spec.organism_task_options_of(), r.spec.items);
  } else if (r.spec.batch_items != 0) {
    shuffle_tasks_for_until_decided(r);  // the organism's items are drawn from the seed already
  }
  warn_design_reach(r);
  if (r.spec.batch_items != 0)  // the intervals of each regime are tuned for its items in the design
    for (const auto& t : r.user_tasks->tasks) r.spec.item_regime.emplace_back(regime_name(t.regime));
  // The engine's tokenizer as a text_codec (trial/task_file.hpp) for text task files
  // (tokenizer_select.hpp): --tokenizer F.gguf (vocab-only), else a llama.cpp model's own
  // vocabulary, else empty; a text task without one exits 2 naming the file, line and field.
  auto tokenizer = text_tokenizer::from_option(r.args, "audit");  // --tokenizer F.gguf, vocab-only
  const auto arms = audit_design_arms(r.spec).design.arms;
  const bool wants_partner =
      std::any_of(arms.begin(), arms.end(), [](const trial_arm& a) { return a.needs_partner(); });
  if (!r.on_llama) return run_audit_on_reference(r, tokenizer, wants_partner);
#if LATENTAUDIT_CLI_LLAMA_CPP
  run_audit_on_llama_cpp(r, tokenizer, wants_partner);
#endif
}

#if LATENTAUDIT_CLI_LLAMA_CPP
// The audit on llama.cpp. Without --batched: one context per model and worker (--jobs N: each
// further worker loads the models again; records identical for every N). --batched: one context per
// model with room for N workers' sequences (4 each, plus the adapter's scratch; each sequence as
// long as unbatched), shared through a llama_cpp_batch: the workers' prefills and decode steps run
// together in one llama_decode (engine/llama_cpp_batch.hpp).
void run_audit_on_llama_cpp(audit_run& r, text_tokenizer& tokenizer, bool wants_partner) {
  const auto& model = r.model;
  const auto& partner_arg = r.partner_arg;
  llama_cpp_options lo{.threads = static_cast<std::int32_t>(std::max(1u, r.threads))};
  if (r.batched) {
    lo.max_context = lo.n_ctx;
    lo.n_ctx *= r.spec.topology.jobs;
    lo.n_seq_max = std::min(4 * r.spec.topology.jobs + 1, 256u);
  }
  const bool with_partner = wants_partner && partner_arg;  // else cross_model is dropped with the reason
  if (with_partner) require_gguf(*partner_arg, "audit", "--partner");
  if (!r.batched) {
    using engines = audit_engines<llama_cpp_engine>;
    auto load = [&] {  // --jobs: each further worker loads the model (and partner) into its own context
      auto w = std::make_unique<engines>(engines{llama_cpp_engine::load(model, lo), std::nullopt, {}});
      if (with_partner) w->partner.emplace(llama_cpp_engine::load(*partner_arg, lo));
      return w;
    };
    auto first = load();
    return run_audit_on<llama_cpp_engine, llama_cpp_engine>(r, tokenizer, *first, load);
  }
  auto engine = llama_cpp_engine::load(model, lo);
  std::optional<llama_cpp_engine> partner;
  if (with_partner) partner.emplace(llama_cpp_engine::load(*partner_arg, lo));
  std::vector<llama_cpp_engine*> engines{&engine};
  if (partner) engines.push_back(&*partner);
  llama_cpp_batch batch(std::move(engines));
  using seats = audit_engines<llama_cpp_seat_engine>;
  auto make = [&] {  // a seat of the batch: its views of the model (and partner)
    const std::size_t seat = batch.add_seat();
    auto w = std::make_unique<seats>(seats{batch.seat_engine(seat, 0), std::nullopt, {}});
    if (partner) w->partner.emplace(batch.seat_engine(seat, 1));
    return w;
  };
  auto first = make();
  run_audit_on<llama_cpp_seat_engine, llama_cpp_seat_engine>(r, tokenizer, *first, make);
}
#endif

// The summary on stdout (the one process, or rank 0): the design, the trials, the timing, the
// findings and the decision of the report the session wrote.
int finish_audit(audit_run& r, std::chrono::steady_clock::time_point t0) {
  const auto& res = r.result;
  if (!res.summarises) return exit_ok;  // agent A or a rank > 0: rank 0 (or B) summarises
  const auto& stats = res.stats;
  json_value j = json_value::object();
  j.set("out", r.out.string());
  j.set("model", r.model.string());
  j.set("engine", r.on_llama ? "llama.cpp" : "reference");
  {
    json_value ju = json_value::object();  // arms this engine cannot run, and why
    for (const auto& x : res.arms_unavailable) ju.set(x.arm, x.reason);
    j.set("arms_unavailable", std::move(ju));
  }
  j.set("design_hash", res.design.design_hash());
  j.set("trials_total", res.design.trials());
  j.set("trials_run", stats.trials);
  j.set("trials_skipped", stats.skipped);
  if (r.spec.batch_items != 0) j.set("until_decided", res.until_decided);
  json_value timing = json_value::object();
  timing.set("trials_wall_s", stats.wall_s);
  timing.set("engine_s", stats.engine_s);
  timing.set("relay_s", stats.relay_s);
  timing.set("driver_overhead_s", stats.overhead_s());
  timing.set("journal_s", stats.sink_s);
  timing.set("timing_repeat_runs", stats.repeat_runs);
  timing.set("timing_repeat_mismatches", stats.repeat_mismatches);
  if (res.shard.is_object()) {  // rank 0 of a sharded run: every rank's trials
    j.set("trials_run", *res.shard.find("trials_run"));
    j.set("shard", res.shard);
  }
  if (res.report) {
    json_value jm = json_value::object();  // what this engine could not measure, and why
    for (const auto& [m, why] : res.metrics_unavailable) jm.set(m, why);
    j.set("metrics_unavailable", std::move(jm));
    timing.set("analysis_s", res.analysis_s);
    input_warnings(*res.report, j, r.args.has("--quiet"));
    j.set("findings", findings_summary(*res.report));
    j.set("decision", decision_summary(*res.report));
  }
  timing.set("total_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  j.set("timing", std::move(timing));
  if (r.relay) j.set("relay_transport", r.relay->transport());
  if (r.mpi_relay) j.set("relay_transport", "mpi");
  print_json(j, r.args.has("--pretty"));
  return exit_ok;
}

// --out never replaces an input (output_guard.hpp): not inside a model, partner or drift folder,
// and none of the files the audit writes there is a task, tokenizer, map or config file it reads.
void refuse_audit_out_over_inputs(const audit_run& r) {
  const auto& args = r.args;
  guarded_inputs inputs{{"--model", r.model}};
  if (!r.no_partner)
    inputs.push_back({"--partner", r.on_llama ? std::filesystem::path(r.partner_arg.value_or(""))
                                              : model_dir(r.partner_arg, "organism-b")});
  if (r.spec.drift) inputs.push_back({"--drift", r.spec.drift->dir});
  for (const char* o : {"--task", "--tasks", "--tokenizer", "--config"})
    if (const auto p = args.get(o)) inputs.push_back({o, *p});
  if (const auto m = args.get("--map"); m && *m != "none") add_listed_inputs(inputs, "--map", *m);
  refuse_output_dir_over_inputs("audit", "--out", r.out, audit_output_names(), inputs);
}

int run_audit_body(std::span<const std::string> raw, audit_shard* shard) {
  const auto specs = audit_option_specs();
  std::vector<std::string> overridden;
  std::string overridden_where;
  const auto words = with_config(raw, specs, &overridden, &overridden_where);
  auto args = arguments::parse(words, specs, "audit");
  if (!overridden.empty()) args.set_shadow(arguments::parse(overridden, specs, overridden_where));
  if (args.help()) {
    std::fputs(
        help_text(
            "latentaudit audit [options]",
            "Runs the paired trial design on the model organisms and audits it: does relaying agent A's KV\n"
            "cache to agent B beat text, is it the cache's content, how much damage does it tolerate, and\n"
            "does it pay for its bytes on each link? Records are journaled to --out/records.jsonl as they\n"
            "complete (--resume continues after a crash); the report goes to --out (report.md, report.json\n"
            "with machine-readable findings, SVG plots). Prints a JSON summary on stdout. Defaults finish "
            "in\n"
            "a few minutes on 2 cores.\n",
            specs)
            .c_str(),
        stdout);
    return exit_ok;
  }
  const auto t0 = std::chrono::steady_clock::now();
  audit_run r{.args = args, .shard = shard};
  read_audit_tasks(r);
  read_audit_arms(r);
  read_audit_options(r);
  refuse_audit_out_over_inputs(r);
  open_audit_topology(r);
  run_audit_trials(r);
  return finish_audit(r, t0);
}

// relay-peer (agent A over tcp): its own options (peer_option_specs: the models, tasks, drift
// manifest and maps it runs on, its threads and workers), then the spec of the design the audit's
// greeting carries (receive_audit_design), then the same session in the role agent_a.
int run_relay_peer_body(std::span<const std::string> raw, relay_session& serve) {
  const auto specs = peer_option_specs();
  auto args = arguments::parse(with_config(raw, specs), specs, "relay-peer");
  const auto t0 = std::chrono::steady_clock::now();
  audit_run r{.args = args, .shard = nullptr, .serve = &serve};
  read_audit_models(r);
  read_audit_senders(r);
  r.spec.topology = {.jobs = static_cast<unsigned>(args.integer("--jobs", 1, 1, 256)),
                     .relay = audit_relay_transport::tcp};
  receive_audit_design(r);
  run_audit_trials(r);
  return finish_audit(r, t0);
}

int run_audit(std::span<const std::string> raw) {
  // Under an MPI launcher: this process is one rank of a sharded audit (docs/distributed.md).
  const auto shard = audit_shard::from_launch();
  if (shard == nullptr) return run_audit_body(raw, nullptr);
  return shard->run([&] { return run_audit_body(raw, shard.get()); });
}

[[maybe_unused]] const bool registered_audit = register_subcommand(
    {"audit", "run the relay audit on the model organisms: trials, journal, report (the main job)",
     run_audit});

}  // namespace

int run_audit_as_peer(std::span<const std::string> words, relay_session& peer) {
  return run_relay_peer_body(words, peer);
}

}  // namespace latentaudit::cli
