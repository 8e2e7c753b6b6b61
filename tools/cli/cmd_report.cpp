// SPDX-License-Identifier: MIT
// `latentaudit report`: audits trial records from any stack — a records file, or an audit directory
// read through the library's read_report_input (its design, stopping rule, task file, the design as
// the denominator) — into report.md / report.json / report.html and the SVG plots, exactly as
// `audit` reports its own records.
#include <latentaudit/report.hpp>
#include <latentaudit/runner/report_input.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "output_guard.hpp"
#include "report_options.hpp"

namespace latentaudit::cli {
namespace {

std::vector<option_spec> report_spec() {
  std::vector<option_spec> specs = {
      {"--records", "PATH",
       "records.jsonl from any stack (required): one JSON record per line, docs/records.md; or an audit "
       "directory, whose records.jsonl and records.<rank>.jsonl (a sharded run's) are read as one set"},
      {"--out", "DIR", "output directory (default: the records' directory)"},
  };
  const auto shared = report_option_specs();
  specs.insert(specs.end(), shared.begin(), shared.end());
  specs.insert(
      specs.end(),
      {
          {"--seed", "S", "bootstrap seed (default 1)"},
          {"--link", "measured",
           "the cost verdicts use the link fitted from the records' transfer_measured_s (relays over a real "
           "link) instead of the records' modeled link"},
          {"--quiet", "", "no warnings on stderr (records that disagree with the design.json beside them)"},
          common_option("--pretty"),
      });
  return specs;
}

// --records names a file or a directory that exists: anything else is refused in the CLI's words
// before --out is locked (or created).
void check_records_arg(const std::filesystem::path& records) {
  std::error_code ec;
  const auto st = std::filesystem::status(records, ec);
  if (st.type() == std::filesystem::file_type::not_found)
    throw usage_error("report: cannot open --records '" + records.string() + "': no such file or directory");
  if (ec) throw usage_error("report: cannot open --records '" + records.string() + "': " + ec.message());
  if (st.type() != std::filesystem::file_type::regular && st.type() != std::filesystem::file_type::directory)
    throw usage_error("report: --records '" + records.string() + "' is " + file_kind_text(st) +
                      ", not a records file or an audit directory");
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
  // A file, or an audit directory: its records.jsonl and records.<rank>.jsonl (a sharded run's).
  const std::filesystem::path records_arg = args.require("--records");
  check_records_arg(records_arg);
  std::error_code dir_ec;
  const std::filesystem::path records_path =
      std::filesystem::is_directory(records_arg, dir_ec) ? records_arg / "records.jsonl" : records_arg;
  const auto out = args.get("--out")                    ? std::filesystem::path(*args.get("--out"))
                   : records_path.parent_path().empty() ? "."
                                                        : records_path.parent_path();
  auto aopt = report_options(args, static_cast<std::uint64_t>(args.integer("--seed", 1, 0, 1ll << 53)));
  refuse_output_dir_over_inputs("report", "--out", out, report_output_names(), {{"--records", records_path}});
  // One writer per directory: a report into a directory that a running audit holds is refused
  // (it would replace the report files the audit is about to write, and read a growing journal).
  directory_lock lock(out, "--out");
  // The records and what the directory's design.json / schedule.json say (the library's one path,
  // Python's report(path) too): the design's arms, a stopped audit's rule, its task file, the design
  // as the denominator, and where the records disagree with it.
  auto input = read_report_input(records_arg, aopt);
  const auto& records = input.records;
  if (records.empty()) throw usage_error("report: '" + records_arg.string() + "' holds no records");
  const auto& warnings = input.design_warnings;
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
  input_warnings(result, j, args.has("--quiet"));
  j.set("findings", findings_summary(result));
  j.set("decision", decision_summary(result));
  j.set("analysis_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_report = register_subcommand(
    {"report", "audit trial records (records.jsonl) from any stack into report.md/json + SVG", run_report});

}  // namespace
}  // namespace latentaudit::cli
