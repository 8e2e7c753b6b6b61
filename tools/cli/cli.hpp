// SPDX-License-Identifier: MIT
// latentaudit CLI: shared infrastructure — option parsing, the subcommand and `estimate` method
// registries, help text, JSON output. See tools/cli/README-dev.md for how to add a command.
#ifndef LATENTAUDIT_TOOLS_CLI_CLI_HPP
#define LATENTAUDIT_TOOLS_CLI_CLI_HPP

#include <latentaudit/core/edit_distance.hpp>
#include <latentaudit/core/json.hpp>
#include <latentaudit/estimators/effect_estimate.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace latentaudit::cli {

/// @brief Exit codes of the tool (documented in docs/cli.md).
enum exit_code : int {
  exit_ok = 0,         ///< success (including --help and --version)
  exit_bad_input = 2,  ///< bad usage, bad data, statistically undefined data
  exit_internal = 3,   ///< a bug: an unexpected exception
};

/// @brief A usage problem (unknown option, missing value, bad option value); exits 2.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief One command-line option: "--name METAVAR  help". An empty metavar makes it a flag.
struct option_spec {
  std::string name;     ///< with the leading dashes, e.g. "--data"
  std::string metavar;  ///< e.g. "FILE"; empty for a flag
  std::string help;     ///< one sentence; mention the default
};

/// @brief The catalogue of options shared by several commands, so they read the same everywhere.
/// @throws std::logic_error for a name not in the catalogue (a bug in the caller).
inline option_spec common_option(std::string_view name) {
  static const std::vector<option_spec> catalogue = {
      {"--data", "FILE",
       "data table: .csv with a header row (RFC 4180 quoting) or .jsonl with one JSON object per line"},
      {"--outcome", "COL", "outcome column (numeric, finite)"},
      {"--treatment", "COL", "treatment column coded 0 (control) or 1 (treated); other codes are rejected"},
      {"--pair", "COL",
       "pair identifier column (long paired layout): each id has exactly one treated and one control row"},
      {"--outcome-treated", "COL",
       "wide paired layout: column with the treated outcome of each pair (one row per pair)"},
      {"--outcome-control", "COL",
       "wide paired layout: column with the control outcome of each pair (one row per pair)"},
      {"--cluster", "COL",
       "cluster identifier column (e.g. item): resample whole clusters, each with its rows of both arms"},
      {"--level", "L", "confidence level in (0, 1); default 0.95"},
      {"--margin", "M", "equivalence margin > 0: equivalence means the effect lies in (-M, M)"},
      {"--replicates", "B", "number of bootstrap replicates, >= 1; default 9999"},
      {"--ci", "METHOD", "bootstrap interval: percentile, basic, normal, bca or studentized; default bca"},
      {"--seed", "S", "random seed, an integer in [0, 2^64); default 0"},
      {"--convention", "NAME",
       "quantile, bias and acceleration rules: boot (R boot.ci, default) or scipy (scipy.stats.bootstrap)"},
      {"--threads", "N", "worker threads, 0 = all cores; results do not depend on it; default 0"},
      {"--pretty", "", "indent the JSON output over several lines"},
      {"--help", "", "print this help and exit"},
  };
  for (const auto& o : catalogue) {
    if (o.name == name) return o;
  }
  throw std::logic_error("common_option: no option " + std::string(name));
}

/// @brief Whether `name` is an option somewhere in the common catalogue.
inline bool is_common_option(std::string_view name) {
  try {
    (void)common_option(name);
    return true;
  } catch (const std::logic_error&) {
    return false;
  }
}

using latentaudit::edit_distance;  // core/edit_distance.hpp: one implementation

/// @brief The option of `specs` (or --help) nearest to `word` within edit distance 2, for a
/// "did you mean" hint; the first in `specs` order on a tie; empty when none is that close.
inline std::string closest_option(std::string_view word, const std::vector<option_spec>& specs) {
  std::string best;
  std::size_t best_distance = 3;
  const auto consider = [&](const std::string& name) {
    if (const auto d = edit_distance(word, name); d < best_distance) {
      best_distance = d;
      best = name;
    }
  };
  for (const auto& s : specs) consider(s.name);
  consider("--help");
  return best;
}

/// @brief Parsed options of one command. Values are kept as text; typed getters check them.
class arguments {
 public:
  /// @brief Parses `args` ("--name value", "--name=value", flags) against `specs`.
  /// @param args the words after the command name
  /// @param specs the options the command accepts (--help is always accepted)
  /// @param command the command's name for messages, e.g. "estimate welch"
  /// @throws usage_error for an unknown or repeated option, a missing value, a stray word
  static arguments parse(std::span<const std::string> args, const std::vector<option_spec>& specs,
                         std::string_view command) {
    arguments a;
    a.command_ = std::string(command);
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string word = args[i];
      if (word.rfind("--", 0) != 0 || word.size() == 2) {
        throw usage_error(a.command_ + ": unexpected argument '" + word + "' (options start with --)");
      }
      std::optional<std::string> inline_value;
      if (const auto eq = word.find('='); eq != std::string::npos) {
        inline_value = word.substr(eq + 1);
        word.resize(eq);
      }
      if (word == "--help") {
        a.help_ = true;
        continue;
      }
      const auto it =
          std::find_if(specs.begin(), specs.end(), [&](const option_spec& s) { return s.name == word; });
      if (it == specs.end()) {
        if (is_common_option(word))
          throw usage_error(a.command_ + ": option " + word +
                            " is not accepted by this command (see 'latentaudit " + a.command_ + " --help')");
        const std::string near = closest_option(word, specs);
        throw usage_error(a.command_ + ": unknown option '" + word + "'" +
                          (near.empty() ? std::string() : " (did you mean " + near + "?)"));
      }
      if (a.values_.count(word) != 0) throw usage_error(a.command_ + ": option " + word + " given twice");
      if (it->metavar.empty()) {
        if (inline_value) throw usage_error(a.command_ + ": option " + word + " takes no value");
        a.values_[word] = "";
        continue;
      }
      if (inline_value) {
        a.values_[word] = *inline_value;
        continue;
      }
      if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) {
        throw usage_error(a.command_ + ": option " + word + " needs a value " + it->metavar);
      }
      a.values_[word] = args[++i];
    }
    return a;
  }

  /// @brief Whether --help was given.
  [[nodiscard]] bool help() const noexcept { return help_; }
  /// @brief The command name used in messages.
  [[nodiscard]] const std::string& command() const noexcept { return command_; }
  /// @brief Whether an option was given.
  [[nodiscard]] bool has(std::string_view name) const { return values_.count(std::string(name)) != 0; }
  /// @brief The text of an option, if given.
  [[nodiscard]] std::optional<std::string> get(std::string_view name) const {
    auto it = values_.find(std::string(name));
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  /// @brief The text of a required option. @throws usage_error if it is absent or empty.
  [[nodiscard]] std::string require(std::string_view name) const {
    auto v = get(name);
    if (!v) throw usage_error(command_ + ": missing required option " + std::string(name));
    if (v->empty())
      throw usage_error(command_ + ": option " + std::string(name) + " needs a non-empty value");
    return *v;
  }
  /// @brief Values that `shadow` holds are checked by the typed getters too, with the same bounds,
  /// though this object's values win (the --config entries the command line overrides: a broken
  /// config is refused whichever of its keys is in force; the messages name `shadow`'s command).
  void set_shadow(arguments shadow) { shadow_ = std::make_shared<const arguments>(std::move(shadow)); }
  /// @brief A text option read through `parse(args, text)` (std::nullopt if absent). When this
  /// object overrides a value the shadow holds (a --config entry), that value is parsed too, so a
  /// parser's refusal of it is an error even though the command line's value is the one in force
  /// (`parse` builds its message from `args.command()`, which for the shadow names the --config
  /// file). The typed getters below do the same for numbers and choices.
  template <class Parse>
  [[nodiscard]] auto parsed(std::string_view name, Parse&& parse) const
      -> std::optional<std::decay_t<decltype(parse(*this, std::string()))>> {
    if (shadow_ && shadow_->has(name) && has(name)) (void)parse(*shadow_, *shadow_->get(name));
    const auto v = get(name);
    if (!v) return std::nullopt;
    return parse(*this, *v);
  }
  /// @brief A finite number (default if absent). @throws usage_error if it does not parse.
  [[nodiscard]] double number(std::string_view name, double fallback) const {
    if (shadow_ && shadow_->has(name)) (void)shadow_->number(name, fallback);
    auto v = get(name);
    return v ? parse_number(name, *v) : fallback;
  }
  /// @brief A required finite number. @throws usage_error if absent or not a number.
  [[nodiscard]] double required_number(std::string_view name) const {
    return parse_number(name, require(name));
  }
  /// @brief A confidence level in (0, 1) (default if absent). @throws usage_error otherwise.
  [[nodiscard]] double level(std::string_view name = "--level", double fallback = 0.95) const {
    if (shadow_ && shadow_->has(name)) (void)shadow_->level(name, fallback);
    const double x = number(name, fallback);
    if (!(x > 0.0 && x < 1.0))
      throw usage_error(command_ + ": option " + std::string(name) + " must lie in (0, 1), got " +
                        *get(name));
    return x;
  }
  /// @brief A significance level in (0, 0.5) (default if absent): the one range every command's
  /// --alpha accepts (a level of 0.5 or more rejects more often than it could protect).
  /// @throws usage_error otherwise.
  [[nodiscard]] double alpha(std::string_view name = "--alpha", double fallback = 0.05) const {
    if (shadow_ && shadow_->has(name)) (void)shadow_->alpha(name, fallback);
    const double x = number(name, fallback);
    if (!(x > 0.0 && x < 0.5))
      throw usage_error(command_ + ": option " + std::string(name) + " must lie in (0, 0.5), got " +
                        *get(name));
    return x;
  }
  /// @brief An integer in [lo, hi] (default if absent). @throws usage_error otherwise.
  [[nodiscard]] std::uint64_t integer(std::string_view name, std::uint64_t fallback, std::uint64_t lo,
                                      std::uint64_t hi) const {
    if (shadow_ && shadow_->has(name)) (void)shadow_->integer(name, fallback, lo, hi);
    auto v = get(name);
    if (!v) return fallback;
    std::uint64_t x = 0;
    const char* first = v->data();
    const char* last = first + v->size();
    const auto r = std::from_chars(first, last, x);
    if (v->empty() || r.ec != std::errc() || r.ptr != last) {
      throw usage_error(command_ + ": option " + std::string(name) +
                        " expects a non-negative integer, got '" + *v + "'");
    }
    if (x < lo || x > hi) {
      throw usage_error(command_ + ": option " + std::string(name) + " must lie in [" + std::to_string(lo) +
                        ", " + std::to_string(hi) + "], got " + *v);
    }
    return x;
  }
  /// @brief One of `allowed` (default if absent). @throws usage_error otherwise.
  [[nodiscard]] std::string choice(std::string_view name, std::string fallback,
                                   const std::vector<std::string>& allowed) const {
    if (shadow_ && shadow_->has(name)) (void)shadow_->choice(name, fallback, allowed);
    auto v = get(name);
    if (!v) return fallback;
    if (std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
      std::string list;
      for (const auto& s : allowed) list += (list.empty() ? "" : "|") + s;
      throw usage_error(command_ + ": option " + std::string(name) + " must be one of " + list + ", got '" +
                        *v + "'");
    }
    return *v;
  }

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  bool help_ = false;
  std::shared_ptr<const arguments> shadow_;

  [[nodiscard]] double parse_number(std::string_view name, const std::string& v) const {
    double x = 0;
    std::string_view s(v);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    const auto r = std::from_chars(s.data(), s.data() + s.size(), x);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(x)) {
      throw usage_error(command_ + ": option " + std::string(name) + " expects a finite number, got '" + v +
                        "'");
    }
    return x;
  }
};

/// @brief A help page: usage line, description paragraphs, options table.
inline std::string help_text(std::string_view usage, std::string_view description,
                             const std::vector<option_spec>& options) {
  std::string out = "usage: ";
  out.append(usage).append("\n\n").append(description);
  if (!description.empty() && description.back() != '\n') out.push_back('\n');
  out.append("\noptions:\n");
  std::vector<option_spec> all = options;
  if (std::none_of(all.begin(), all.end(), [](const option_spec& o) { return o.name == "--help"; })) {
    all.push_back(common_option("--help"));
  }
  std::size_t width = 0;
  for (const auto& o : all)
    width = std::max(width, o.name.size() + (o.metavar.empty() ? 0 : o.metavar.size() + 1));
  for (const auto& o : all) {
    std::string head = o.name + (o.metavar.empty() ? "" : " " + o.metavar);
    out.append("  ").append(head).append(width + 2 - head.size(), ' ').append(o.help).append("\n");
  }
  return out;
}

/// @brief A top-level subcommand (`estimate`, `interval`, `power`, ...).
struct subcommand {
  std::string name;     ///< the word after `latentaudit`
  std::string summary;  ///< one line for `latentaudit --help`
  /// Runs the command on the words after its name; prints its output; returns the exit code.
  /// Throws usage_error / latentaudit::error for bad input (main turns them into exit 2).
  std::function<int(std::span<const std::string>)> run;
};

/// @brief The registry of subcommands (filled by static registrations in each cmd_*.cpp).
inline std::vector<subcommand>& subcommands() {
  static std::vector<subcommand> registry;
  return registry;
}

/// @brief Registers a subcommand; returns true so it can initialise a static.
inline bool register_subcommand(subcommand c) {
  subcommands().push_back(std::move(c));
  return true;
}

/// @brief One method of `latentaudit estimate <method>`.
struct estimate_method {
  std::string name;                  ///< e.g. "welch"
  std::string summary;               ///< one line for `latentaudit estimate --help`
  std::string description;           ///< paragraphs for `latentaudit estimate <method> --help`
  std::vector<option_spec> options;  ///< the options it accepts (besides --help and --pretty)
  /// Computes the result object from parsed options. Throws usage_error / latentaudit::error.
  std::function<json_value(const arguments&)> run;
};

/// @brief The registry of estimate methods (filled by static registrations in estimate_*.cpp).
inline std::vector<estimate_method>& estimate_methods() {
  static std::vector<estimate_method> registry;
  return registry;
}

/// @brief Registers an estimate method; returns true so it can initialise a static.
inline bool register_estimate_method(estimate_method m) {
  estimate_methods().push_back(std::move(m));
  return true;
}

/// @brief The result fields every estimate prints, in this order (NaN fields are written null).
inline json_value effect_to_json(const effect_estimate& e) {
  json_value o = json_value::object();
  o.set("method", e.method);
  o.set("estimand", e.estimand);
  o.set("estimate", e.estimate);
  o.set("std_error", e.std_error);
  o.set("ci_low", e.ci_low);
  o.set("ci_high", e.ci_high);
  o.set("level", e.level);
  o.set("df", e.df);
  o.set("statistic", e.statistic);
  o.set("p_value", e.p_value);
  o.set("n_treated", e.n_treated);
  o.set("n_control", e.n_control);
  o.set("n_pairs", nullptr);
  o.set("status", std::string(status_name(e.status)));
  return o;
}

/// @brief Marks a result as paired: n_pairs = pairs, n_treated = n_control = pairs.
inline void set_pairs(json_value& o, std::size_t pairs) {
  o.set("n_treated", pairs);
  o.set("n_control", pairs);
  o.set("n_pairs", pairs);
}

/// @brief Writes one JSON document and a newline to stdout.
void print_json(const json_value& v, bool pretty);

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_TOOLS_CLI_CLI_HPP
