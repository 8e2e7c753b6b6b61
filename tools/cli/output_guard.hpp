// SPDX-License-Identifier: MIT
// latentaudit CLI: outputs never replace inputs. Every command that writes a file checks, before
// any work, that no output path resolves to one of the files it reads: the same file (device and
// inode: a symbolic or hard link to an input is the input), or a path inside an input model folder
// (whose config.json, weights or task.json a write there would replace). The one owner of that
// check; each command lists its inputs and outputs and calls it.
#ifndef LATENTAUDIT_TOOLS_CLI_OUTPUT_GUARD_HPP
#define LATENTAUDIT_TOOLS_CLI_OUTPUT_GUARD_HPP

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {

/// @brief One input of a command, as the output guard sees it.
struct guarded_input {
  std::string option;          ///< the option that names it, e.g. "--model", "--tasks"
  std::filesystem::path path;  ///< as given (a file, or a model folder); empty: not given
};

/// @brief The inputs of a command: each given option's path, empty ones left out by the guard.
using guarded_inputs = std::vector<guarded_input>;

namespace detail_guard {

// The path made absolute with every existing component's symbolic links resolved (the rest kept
// lexically): what the file system will write to. Empty where it cannot be resolved.
inline std::filesystem::path resolved(const std::filesystem::path& p) {
  std::error_code ec;
  auto r = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
  if (ec) return {};
  return r.lexically_normal();
}

// Whether `inner` is `outer` or lies below it (both resolved).
inline bool within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  if (inner.empty() || outer.empty()) return false;
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

// Whether `a` and `b` both exist and are one file (device and inode).
inline bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (!std::filesystem::exists(a, ec) || !std::filesystem::exists(b, ec)) return false;
  const bool same = std::filesystem::equivalent(a, b, ec);
  return !ec && same;
}

// Why writing `out` would replace the input `in`, in words ("would replace the input --tasks 'f'
// (the same file)", "would write inside the input --model 'm' (its config.json)"), or nothing:
// the same file; inside the input folder (or the folder itself); a hard link elsewhere to one of
// the folder's files.
inline std::optional<std::string> clash(const std::filesystem::path& out, const guarded_input& in) {
  if (in.path.empty()) return std::nullopt;
  const std::string name = in.option + " '" + in.path.string() + "'";
  if (same_file(out, in.path)) return "would replace the input " + name + " (the same file)";
  std::error_code ec;
  if (!std::filesystem::is_directory(in.path, ec)) return std::nullopt;
  const auto r = resolved(out), folder = resolved(in.path);
  if (within(r, folder)) {
    const auto rel = r.lexically_relative(folder).string();
    return "would write inside the input " + name + " (" +
           (std::filesystem::exists(r, ec) && !rel.empty() && rel != "." ? "its " + rel
                                                                         : std::string("a model folder")) +
           ")";
  }
  std::size_t seen = 0;  // a hard link elsewhere to one of the folder's files (a model has a few)
  for (std::filesystem::directory_iterator it(in.path, ec), end; !ec && it != end && seen < 4096;
       it.increment(ec), ++seen)
    if (same_file(out, it->path()))
      return "would replace the input " + name + " (the same file as its " + it->path().filename().string() +
             ")";
  return std::nullopt;
}

}  // namespace detail_guard

/// @brief Refuses an output file that would replace one of the command's inputs.
/// @param command the command's name in messages, e.g. "map fit"
/// @param out_option the output's option, e.g. "--out", "--logits-out"
/// @param out the output path as given
/// @param inputs every file or model folder the command reads (empty paths are skipped)
/// @throws usage_error (exit 2, one line) "<command>: option <out_option> '<out>' would replace the
///         input <option> '<path>' (the same file): an output never replaces an input; ..." (or
///         "would write inside the input --model '<dir>' (its config.json)")
inline void refuse_output_over_inputs(std::string_view command, std::string_view out_option,
                                      const std::filesystem::path& out, const guarded_inputs& inputs) {
  if (out.empty()) return;  // the command's own check names an empty path
  for (const auto& in : inputs)
    if (const auto why = detail_guard::clash(out, in))
      throw usage_error(std::string(command) + ": option " + std::string(out_option) + " '" + out.string() +
                        "' " + *why + ": an output never replaces an input; write it elsewhere");
}

/// @brief Refuses an output directory that would replace one of the command's inputs: the
/// directory is (or lies inside) an input model folder, or one of the files the command writes in
/// it (`names`, e.g. "report.md") is an input.
/// @throws usage_error (exit 2, one line) naming the output option, its path and the input.
inline void refuse_output_dir_over_inputs(std::string_view command, std::string_view out_option,
                                          const std::filesystem::path& dir,
                                          const std::vector<std::string>& names,
                                          const guarded_inputs& inputs) {
  if (dir.empty()) return;
  const auto d = detail_guard::resolved(dir);
  for (const auto& in : inputs) {
    if (in.path.empty()) continue;
    std::error_code ec;
    if (std::filesystem::is_directory(in.path, ec) &&
        detail_guard::within(d, detail_guard::resolved(in.path)))
      throw usage_error(std::string(command) + ": option " + std::string(out_option) + " '" + dir.string() +
                        "' would write inside the input " + in.option + " '" + in.path.string() +
                        "' (a model folder): an output never replaces an input; write it elsewhere");
    for (const auto& name : names)
      if (detail_guard::same_file(dir / name, in.path))
        throw usage_error(std::string(command) + ": option " + std::string(out_option) + " '" + dir.string() +
                          "' would replace the input " + in.option + " '" + in.path.string() + "' with its " +
                          name + ": an output never replaces an input; write it elsewhere");
  }
}

/// @brief The files a report writes into its --out directory (report files and plots).
inline const std::vector<std::string>& report_output_names() {
  static const std::vector<std::string> names = {
      "report.md",    "report.json",          "report.html", "forest.svg",        "dose_response.svg",
      "frontier.svg", "latency_receiver.svg", "latency.svg", "drift_response.svg"};
  return names;
}

/// @brief The files an audit writes into its --out directory: the report's, the journal, the
/// design, the schedule and the until-decided task order.
inline std::vector<std::string> audit_output_names() {
  auto names = report_output_names();
  names.insert(names.end(), {"records.jsonl", "design.json", "schedule.json", "tasks.until-decided.jsonl"});
  return names;
}

/// @brief A comma-separated option's paths as inputs (e.g. --map A,B), each under that option.
inline void add_listed_inputs(guarded_inputs& inputs, const std::string& option, const std::string& list) {
  std::size_t i = 0;
  while (i <= list.size()) {
    const std::size_t j = std::min(list.find(',', i), list.size());
    if (j > i) inputs.push_back({option, list.substr(i, j - i)});
    i = j + 1;
  }
}

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_TOOLS_CLI_OUTPUT_GUARD_HPP
