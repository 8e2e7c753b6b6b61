// SPDX-License-Identifier: MIT
// `latentaudit audit`: the main job — run the paired trial design on the model organisms (agent A
// reads, its cache or text is relayed to agent B under every arm), journal every record, then
// audit the records into report.md / report.json / SVG plots. `latentaudit report` audits records
// from any stack.
#include <latentaudit/backend/reference_cpu.hpp>
#include <latentaudit/report.hpp>
#include <latentaudit/trial.hpp>
#include <latentaudit/version.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "cli.hpp"

#ifndef LATENTAUDIT_DEFAULT_MODELS
#define LATENTAUDIT_DEFAULT_MODELS "models"
#endif

namespace latentaudit::cli {
namespace {

std::vector<option_spec> audit_spec() {
  return {
      {"--model", "DIR",
       "the agents' model (HF dir + task.json); default models/organism-a (then the source tree's)"},
      {"--partner", "DIR",
       "the heterogeneous partner for cross_model; default models/organism-b; 'none' drops cross_model"},
      {"--items", "N", "documents (default 450)"},
      {"--seeds", "K", "queries (and random streams) per document (default 3)"},
      {"--arms", "LIST", "comma-separated arms (default: all built-in arms; see docs/audit-report.md)"},
      {"--link", "NAME",
       "link for the modeled transfer: pcie4 (default), pcie5, nvlink4, rdma100, rdma400, "
       "custom:<GB/s>:<alpha us>"},
      {"--out", "DIR",
       "output directory (default audit-out): records.jsonl, design.json, report.md, report.json, *.svg"},
      {"--resume", "", "continue the records in --out (skips completed (item, seed, arm) keys)"},
      {"--threads", "T", "backend threads (default 1; records do not depend on it)"},
      {"--seed", "S", "master seed (default 1): tasks, execution order, every random stream"},
      {"--no-need-fraction", "P", "share of no-need items (default 0.5)"},
      {"--timing-repeats", "R",
       "extra timed runs of each trial of the subsampled units, for the run-to-run timing variation in "
       "the cost CIs (default 3; 0: none)"},
      {"--timing-repeat-fraction", "P",
       "share of (item, seed) units whose trials are repeated (default 0.1)"},
      {"--config", "FILE",
       "JSON object with any of these options as keys (without --), e.g. {\"items\": 100, \"arms\": "
       "\"no_comm,kv_full\"}; command-line options win"},
      {"--margin", "M", "equivalence / non-inferiority margin in accuracy points (default 0.05)"},
      {"--alpha", "A", "family-wise level (default 0.05)"},
      {"--bootstrap", "B", "bootstrap replicates (default 2000)"},
      {"--latency-slo-ms", "MS", "receiver latency SLO for the cost findings (default: none evaluated)"},
      {"--prefill-tokens-per-s", "T",
       "receiver prefill throughput for the cost projection (default: a table at 2e3, 1e4, 5e4)"},
      {"--trials-only", "", "run and journal the trials, skip the report"},
      {"--durable", "", "fsync after every record (survives power loss, slower)"},
      {"--quiet", "", "no progress on stderr"},
      common_option("--pretty"),
  };
}

std::vector<option_spec> report_spec() {
  return {
      {"--records", "FILE",
       "records.jsonl from any stack (required): one JSON record per line, docs/records.md"},
      {"--out", "DIR", "output directory (default: the records' directory)"},
      {"--margin", "M", "equivalence / non-inferiority margin in accuracy points (default 0.05)"},
      {"--alpha", "A", "family-wise level (default 0.05)"},
      {"--bootstrap", "B", "bootstrap replicates (default 2000)"},
      {"--latency-slo-ms", "MS", "receiver latency SLO for the cost findings (default: none evaluated)"},
      {"--prefill-tokens-per-s", "T",
       "receiver prefill throughput for the cost projection (default: a table at 2e3, 1e4, 5e4)"},
      {"--seed", "S", "bootstrap seed (default 1)"},
      {"--quiet", "", "no warnings on stderr (records that disagree with the design.json beside them)"},
      common_option("--pretty"),
  };
}

// Command-line words plus --config entries (command line wins). Keys are option names without
// "--": a flag takes true or false, any other option a string or a number; "help" and "config"
// are refused.
std::vector<std::string> with_config(std::span<const std::string> words, const std::vector<option_spec>& specs) {
  std::vector<std::string> out(words.begin(), words.end());
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string path;
    if (words[i] == "--config" && i + 1 < words.size())
      path = words[i + 1];
    else if (words[i].rfind("--config=", 0) == 0)
      path = words[i].substr(9);
    else
      continue;
    const std::string where = "audit: --config file '" + path + "'";
    std::uint64_t size = 0;
    try {
      size = detail::require_regular_file(path, "--config file");
    } catch (const error& e) {
      throw usage_error(std::string("audit: ") + e.what());
    }
    if (size > (std::uint64_t{1} << 20)) throw usage_error(where + " is larger than 1 MiB");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw usage_error("audit: cannot read --config file '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    json_value j;
    try {
      j = parse_json(ss.str(), {.max_depth = 4, .max_bytes = 1 << 20});
    } catch (const error& e) {
      throw usage_error(where + ": " + e.what());
    }
    if (!j.is_object()) throw usage_error(where + " must hold a JSON object");
    for (const auto& [k, v] : j.as_object()) {
      const std::string opt = "--" + k;
      if (k == "config") throw usage_error(where + " may not name another config");
      if (k == "help") throw usage_error(where + ": key 'help' is not an option a config can set");
      const auto spec =
          std::find_if(specs.begin(), specs.end(), [&](const option_spec& s) { return s.name == opt; });
      if (spec == specs.end()) throw usage_error(where + ": unknown key '" + k + "' (no option " + opt + ")");
      const bool flag = spec->metavar.empty();
      bool given = false;
      for (const auto& w : words) given |= w == opt || w.rfind(opt + "=", 0) == 0;
      if (given) continue;
      if (flag) {
        if (!v.is_bool())
          throw usage_error(where + ": key '" + k + "' is a flag and takes true or false, got " + write_json(v));
        if (v.as_bool()) out.push_back(opt);
      } else if (v.is_string()) {
        out.push_back(opt + "=" + v.as_string());
      } else if (v.is_number()) {
        out.push_back(opt + "=" + detail::number_text(v.as_number()));
      } else {
        throw usage_error(where + ": key '" + k + "' must be a string or a number (option " + opt + " " +
                          spec->metavar + ")");
      }
    }
  }
  return out;
}

// Progress on stderr: a carriage-return line on a terminal, else a line every 10 %.
class progress_meter {
 public:
  explicit progress_meter(bool quiet)
      : quiet_(quiet), tty_(::isatty(2) == 1), t0_(std::chrono::steady_clock::now()) {}
  void operator()(std::uint64_t done, std::uint64_t total, std::uint64_t skipped) {
    if (quiet_ || total == 0) return;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const int decile = static_cast<int>(10 * done / total);
    const bool last = done == total;
    if (tty_ ? (el - last_ < 0.1 && !last) : (decile == decile_ && !last)) return;
    last_ = el;
    decile_ = decile;
    const double rate = done > skipped && el > 0 ? static_cast<double>(done - skipped) / el : 0.0;
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
    std::fprintf(stderr, "%saudit: %llu/%llu trials (%.0f%%), %.0f trials/s, ETA %.0f s%s", tty_ ? "\r" : "",
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                 100.0 * static_cast<double>(done) / static_cast<double>(total), rate, eta,
                 tty_ && !last ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  bool quiet_, tty_;
  std::chrono::steady_clock::time_point t0_;
  double last_ = -1;
  int decile_ = -1;
};

std::filesystem::path model_dir(const std::optional<std::string>& given, const char* name) {
  if (given) return *given;
  const std::filesystem::path local = std::filesystem::path("models") / name;
  if (std::filesystem::exists(local / "config.json")) return local;
  return std::filesystem::path(LATENTAUDIT_DEFAULT_MODELS) / name;
}

// The SHA-256 of a (small) file, 64 hex digits: the task definition's content hash.
std::string file_sha256(const std::filesystem::path& p) {
  if (detail::require_regular_file(p, "task file") > (std::uint64_t{1} << 24))
    throw usage_error("audit: task file '" + p.string() + "' is larger than 16 MiB");
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw usage_error("audit: cannot read task file '" + p.string() + "'");
  const std::string text = ss.str();
  const auto d = sha256::of(std::as_bytes(std::span(text)));
  static constexpr char hex[] = "0123456789abcdef";
  std::string h;
  for (const auto b : d) {
    h.push_back(hex[static_cast<unsigned>(b) >> 4]);
    h.push_back(hex[static_cast<unsigned>(b) & 0xF]);
  }
  return h;
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

audit_options report_options(const arguments& args, std::uint64_t seed) {
  audit_options o;
  o.equivalence_margin = args.number("--margin", 0.05);
  o.noninferiority_margin = o.equivalence_margin;
  if (!(o.equivalence_margin > 0 && o.equivalence_margin < 1))
    throw usage_error(args.command() + ": option --margin must lie in (0, 1), got " +
                      detail::number_text(o.equivalence_margin));
  o.alpha = args.alpha();
  o.bootstrap_replicates = static_cast<std::size_t>(args.integer("--bootstrap", 2000, 100, 1000000));
  if (args.get("--latency-slo-ms")) {
    const double ms = args.number("--latency-slo-ms", 0.0);
    if (!(ms > 0)) throw usage_error(args.command() + ": option --latency-slo-ms must be > 0");
    o.latency_slo_s = ms * 1e-3;
  }
  if (args.get("--prefill-tokens-per-s")) {
    const double t = args.number("--prefill-tokens-per-s", 0.0);
    if (!(t > 0)) throw usage_error(args.command() + ": option --prefill-tokens-per-s must be > 0");
    o.prefill_tokens_per_s = t;
  }
  o.seed = seed;
  o.threads = 0;  // the bootstraps use every core; results do not depend on it
  return o;
}

int run_audit(std::span<const std::string> raw) {
  const auto specs = audit_spec();
  const auto words = with_config(raw, specs);
  const auto args = arguments::parse(words, specs, "audit");
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
  const auto threads = static_cast<unsigned>(args.integer("--threads", 1, 0, 1024));
  const auto model = model_dir(args.get("--model"), "organism-a");
  const auto partner_arg = args.get("--partner");
  const bool no_partner = partner_arg && *partner_arg == "none";
  trial_design d;
  if (!no_partner) d.arms = default_arms(/*with_partner=*/true);  // cross_model with the partner engine
  d.seed = static_cast<std::uint64_t>(args.integer("--seed", 1, 0, 1ll << 53));
  d.items = static_cast<std::uint64_t>(args.integer("--items", 450, 1, 10000000));
  d.seeds = static_cast<std::uint64_t>(args.integer("--seeds", 3, 1, 100000));
  if (auto arms = args.get("--arms")) {
    d.arms.clear();
    std::size_t i = 0;
    while (i <= arms->size()) {
      const std::size_t j = std::min(arms->find(',', i), arms->size());
      d.arms.push_back(parse_arm(std::string_view(*arms).substr(i, j - i)));
      i = j + 1;
    }
  }
  if (no_partner) std::erase_if(d.arms, [](const trial_arm& a) { return a.kind == arm_kind::cross_model; });
  d.link = find_link(args.get("--link").value_or("pcie4"));
  d.timing_repeats = static_cast<std::uint32_t>(args.integer("--timing-repeats", 3, 0, 100));
  d.timing_repeat_fraction = args.number("--timing-repeat-fraction", 0.1);
  if (!(d.timing_repeat_fraction >= 0 && d.timing_repeat_fraction <= 1))
    throw usage_error("audit: option --timing-repeat-fraction must lie in [0, 1]");
  d.validate();
  const double no_need = args.number("--no-need-fraction", 0.5);
  if (!(no_need >= 0 && no_need <= 1))
    throw usage_error("audit: option --no-need-fraction must lie in [0, 1]");
  const auto aopt = report_options(args, d.seed);
  const std::filesystem::path out = args.get("--out").value_or("audit-out");
  check_design_size(d, args.has("--trials-only"));
  // One writer per --out: taken before anything else, held until this function returns (the
  // journal and the report), released by the kernel if the process dies.
  directory_lock lock(out, "--out");

  auto engine = reference_cpu_backend::load(model, threads);
  const auto fmt = organism_format::load(model);
  std::optional<reference_cpu_backend> partner;
  const bool wants_partner = std::any_of(d.arms.begin(), d.arms.end(),
                                         [](const trial_arm& a) { return a.kind == arm_kind::cross_model; });
  if (wants_partner)
    partner.emplace(reference_cpu_backend::load(model_dir(partner_arg, "organism-b"), threads));
  const organism_task_options to{.seed = d.seed, .no_need_fraction = no_need};
  d.identity.engine = "reference";
  d.identity.engine_version = latentaudit::version_string;
  d.identity.model = fingerprint_text(engine.info().fingerprint);
  d.identity.partner = partner ? fingerprint_text(partner->info().fingerprint) : std::string();
  d.identity.task_source = "organism";
  d.identity.task_hash = file_sha256(model / "task.json");
  d.identity.task_options = to.to_json();
  record_journal journal(std::move(lock), d, args.has("--resume"), args.has("--durable"));
  const std::uint64_t skipped = journal.done().size();
  progress_meter meter(args.has("--quiet"));
  trial_driver<reference_cpu_backend> driver(engine, partner ? &*partner : nullptr);
  const std::set<trial_key> resumed = journal.done();  // the keys to skip (the journal's set grows)
  const auto stats = driver.run(
      d, [&](std::uint64_t item, std::uint64_t s) { return make_organism_task(fmt, to, item, s); },
      [&](const trial_record& r) { journal.append(r); }, resumed,
      [&](std::uint64_t done, std::uint64_t total) { meter(done, total, skipped); });

  json_value j = json_value::object();
  j.set("out", out.string());
  j.set("model", model.string());
  j.set("design_hash", d.design_hash());
  j.set("trials_total", d.trials());
  j.set("trials_run", stats.trials);
  j.set("trials_skipped", stats.skipped);
  json_value timing = json_value::object();
  timing.set("trials_wall_s", stats.wall_s);
  timing.set("backend_s", stats.backend_s);
  timing.set("relay_s", stats.relay_s);
  timing.set("driver_overhead_s", stats.overhead_s());
  timing.set("journal_s", stats.sink_s);
  timing.set("timing_repeat_runs", stats.repeat_runs);
  timing.set("timing_repeat_mismatches", stats.repeat_mismatches);
  journal.close();  // cuts the file's zero padding
  if (!args.has("--trials-only")) {
    const auto records = read_records(journal.path());
    const auto ta = std::chrono::steady_clock::now();
    const auto result = run_audit_report(records, aopt, out);
    const double analysis_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - ta).count();
    timing.set("analysis_s", analysis_s);
    j.set("findings", findings_summary(result));
    j.set("decision", decision_summary(result));
  }
  timing.set("total_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  j.set("timing", std::move(timing));
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

// Where the records disagree with the design.json beside them (if there is one): keys outside
// the design, another model, partner or link than it names. Each is one line (a warning: records
// from any stack may sit beside any file).
std::vector<std::string> design_warnings(const std::filesystem::path& records_path,
                                         const std::vector<trial_record>& records) {
  const auto dir =
      records_path.parent_path().empty() ? std::filesystem::path(".") : records_path.parent_path();
  const auto path = dir / "design.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::vector<std::string> out;
  json_value d;
  try {
    if (detail::require_regular_file(path, "design file") > (std::uint64_t{1} << 20))
      throw corrupt_data("larger than 1 MiB");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    d = parse_json(ss.str(), {.max_depth = 16, .max_bytes = std::size_t{1} << 20});
    if (!d.is_object()) throw corrupt_data("not a JSON object");
  } catch (const error& e) {
    return {path.string() +
            " beside the records cannot be read, so they are not checked against it: " + e.what()};
  }
  const std::string beside = " (" + path.string() + ")";
  auto number = [&](const char* key) -> std::optional<double> {
    const json_value* v = d.find(key);
    return v != nullptr && v->is_number() ? std::optional<double>(v->as_number()) : std::nullopt;
  };
  auto text = [&](const char* key) -> std::string {
    const json_value* v = d.find(key);
    return v != nullptr && v->is_string() ? v->as_string() : std::string();
  };
  std::set<std::string> arms;
  if (const json_value* a = d.find("arms"); a != nullptr && a->is_array())
    for (const auto& x : a->as_array())
      if (x.is_string()) arms.insert(x.as_string());
  const auto items = number("items"), seeds = number("seeds");
  const std::string model = text("model_fingerprint"), partner = text("partner_fingerprint"),
                    link = text("link");
  std::size_t outside = 0, other_model = 0, other_partner = 0, other_link = 0;
  std::string first_outside;
  for (const auto& r : records) {
    const bool out_of = (items && static_cast<double>(r.item) >= *items) ||
                        (seeds && static_cast<double>(r.seed) >= *seeds) ||
                        (!arms.empty() && !arms.count(r.arm));
    if (out_of && outside++ == 0)
      first_outside =
          "(item " + std::to_string(r.item) + ", seed " + std::to_string(r.seed) + ", arm " + r.arm + ")";
    if (!model.empty() && !r.receiver_fingerprint.empty() && r.receiver_fingerprint != model) ++other_model;
    if (!partner.empty() && r.arm_kind == "cross_model" && !r.sender_fingerprint.empty() &&
        r.sender_fingerprint != partner)
      ++other_partner;
    if (!link.empty() && !r.link.empty() && r.link != link) ++other_link;
  }
  if (outside > 0)
    out.push_back(std::to_string(outside) + " record(s) lie outside the design beside them" + beside +
                  ", first " + first_outside);
  if (other_model > 0)
    out.push_back(std::to_string(other_model) + " record(s) ran another model than the design's " + model +
                  beside);
  if (other_partner > 0)
    out.push_back(std::to_string(other_partner) +
                  " cross_model record(s) ran another partner than the design's " + partner + beside);
  if (other_link > 0)
    out.push_back(std::to_string(other_link) + " record(s) used another link than the design's " + link +
                  beside);
  return out;
}

// Where the records disagree with the design.json beside them (if there is one): keys outside
// the design, another model, partner or link than it names. Each is one line (a warning: records
// from any stack may sit beside any file).
std::vector<std::string> design_warnings(const std::filesystem::path& records_path,
                                         const std::vector<trial_record>& records) {
  const auto dir = records_path.parent_path().empty() ? std::filesystem::path(".") : records_path.parent_path();
  const auto path = dir / "design.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::vector<std::string> out;
  json_value d;
  try {
    if (detail::require_regular_file(path, "design file") > (std::uint64_t{1} << 20))
      throw corrupt_data("larger than 1 MiB");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    d = parse_json(ss.str(), {.max_depth = 16, .max_bytes = std::size_t{1} << 20});
    if (!d.is_object()) throw corrupt_data("not a JSON object");
  } catch (const error& e) {
    return {path.string() + " beside the records cannot be read, so they are not checked against it: " +
            e.what()};
  }
  const std::string beside = " (" + path.string() + ")";
  auto number = [&](const char* key) -> std::optional<double> {
    const json_value* v = d.find(key);
    return v != nullptr && v->is_number() ? std::optional<double>(v->as_number()) : std::nullopt;
  };
  auto text = [&](const char* key) -> std::string {
    const json_value* v = d.find(key);
    return v != nullptr && v->is_string() ? v->as_string() : std::string();
  };
  std::set<std::string> arms;
  if (const json_value* a = d.find("arms"); a != nullptr && a->is_array())
    for (const auto& x : a->as_array())
      if (x.is_string()) arms.insert(x.as_string());
  const auto items = number("items"), seeds = number("seeds");
  const std::string model = text("model_fingerprint"), partner = text("partner_fingerprint"), link = text("link");
  std::size_t outside = 0, other_model = 0, other_partner = 0, other_link = 0;
  std::string first_outside;
  for (const auto& r : records) {
    const bool out_of = (items && static_cast<double>(r.item) >= *items) ||
                        (seeds && static_cast<double>(r.seed) >= *seeds) || (!arms.empty() && !arms.count(r.arm));
    if (out_of && outside++ == 0)
      first_outside = "(item " + std::to_string(r.item) + ", seed " + std::to_string(r.seed) + ", arm " + r.arm + ")";
    if (!model.empty() && !r.receiver_fingerprint.empty() && r.receiver_fingerprint != model) ++other_model;
    if (!partner.empty() && r.arm_kind == "cross_model" && !r.sender_fingerprint.empty() &&
        r.sender_fingerprint != partner)
      ++other_partner;
    if (!link.empty() && !r.link.empty() && r.link != link) ++other_link;
  }
  if (outside > 0)
    out.push_back(std::to_string(outside) + " record(s) lie outside the design beside them" + beside +
                  ", first " + first_outside);
  if (other_model > 0)
    out.push_back(std::to_string(other_model) + " record(s) ran another model than the design's " + model +
                  beside);
  if (other_partner > 0)
    out.push_back(std::to_string(other_partner) + " cross_model record(s) ran another partner than the design's " +
                  partner + beside);
  if (other_link > 0)
    out.push_back(std::to_string(other_link) + " record(s) used another link than the design's " + link + beside);
  return out;
}

int run_report(std::span<const std::string> words) {
  const auto specs = report_spec();
  const auto args = arguments::parse(words, specs, "report");
  if (args.help()) {
    std::fputs(
        help_text(
            "latentaudit report --records FILE.jsonl [--out DIR] [options]",
            "Audits trial records from any stack (one JSON object per line with at least item, seed,\n"
            "arm, correct; docs/records.md) exactly as `audit` does: report.md, report.json (findings)\n"
            "and SVG plots in --out. Analyses whose arms are missing report 'inconclusive'.\n",
            specs)
            .c_str(),
        stdout);
    return exit_ok;
  }
  const std::filesystem::path records_path = args.require("--records");
  const auto out = args.get("--out")                    ? std::filesystem::path(*args.get("--out"))
                   : records_path.parent_path().empty() ? "."
                                                        : records_path.parent_path();
  const auto aopt = report_options(args, static_cast<std::uint64_t>(args.integer("--seed", 1, 0, 1ll << 53)));
  const auto records = read_records(records_path);
  if (records.empty()) throw usage_error("report: '" + records_path.string() + "' holds no records");
  const auto warnings = design_warnings(records_path, records);
  if (!args.has("--quiet"))
    for (const auto& w : warnings) std::fprintf(stderr, "latentaudit: warning: %s\n", w.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = run_audit_report(records, aopt, out);
  json_value j = json_value::object();
  j.set("out", out.string());
  j.set("records", records.size());
  json_value wj = json_value::array_type{};
  for (const auto& w : warnings) wj.push_back(w);
  j.set("design_warnings", std::move(wj));
  j.set("findings", findings_summary(result));
  j.set("decision", decision_summary(result));
  j.set("analysis_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_audit = register_subcommand(
    {"audit", "run the relay audit on the model organisms: trials, journal, report (the main job)",
     run_audit});
[[maybe_unused]] const bool registered_report = register_subcommand(
    {"report", "audit trial records (records.jsonl) from any stack into report.md/json + SVG", run_report});

}  // namespace
}  // namespace latentaudit::cli
