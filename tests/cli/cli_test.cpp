// SPDX-License-Identifier: MIT
// Tests of the `latentaudit` command-line tool: runs the built binary on small CSV/JSONL files in
// a temporary directory and checks (1) its JSON equals the library's direct results, (2) every
// bad input exits with code 2 and ONE line on stderr naming the problem, (3) --help of every
// command exits 0 and documents every option (and docs/cli.md mentions them too).
#include <latentaudit/core/json.hpp>
#include <latentaudit/estimators/bootstrap.hpp>
#include <latentaudit/estimators/difference_in_means.hpp>
#include <latentaudit/estimators/equivalence.hpp>
#include <latentaudit/estimators/paired_binary.hpp>
#include <latentaudit/estimators/power.hpp>
#include <latentaudit/version.hpp>

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "support/catch.hpp"

#ifdef LATENTAUDIT_CLI_PATH
#include "support/cli_runner.hpp"
#include "support/common.hpp"

namespace fs = std::filesystem;
using latentaudit::json_value;
using latentaudit::parse_json;
using latentaudit::test::run_cli;

namespace {

/// Writes `content` to the scratch directory under `name` and returns the path.
std::string write_file(const std::string& name, const std::string& content) {
  const fs::path p = latentaudit::test::cli_work_dir() / name;
  std::ofstream(p, std::ios::binary) << content;
  return p.string();
}

/// Concatenates pieces (avoids GCC 12's false -Wrestrict on chains of operator+).
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  (s.append(parts), ...);
  return s;
}

/// Runs and parses stdout as one JSON object; fails the test on a non-zero exit.
json_value run_json(const std::vector<std::string>& args) {
  const auto r = run_cli(args);
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  REQUIRE(r.err.empty());
  const json_value j = parse_json(r.out);
  REQUIRE(j.is_object());
  return j;
}

/// A number field, NaN for null.
using latentaudit::test::num;

/// Checks that a JSON result carries exactly the fields of an effect_estimate (NaN <-> null).
void check_same(const json_value& j, const latentaudit::effect_estimate& e) {
  CHECK(j.at("method").as_string() == e.method);
  CHECK(j.at("estimand").as_string() == e.estimand);
  const std::pair<const char*, double> fields[] = {
      {"estimate", e.estimate},   {"std_error", e.std_error}, {"ci_low", e.ci_low},
      {"ci_high", e.ci_high},     {"level", e.level},         {"df", e.df},
      {"statistic", e.statistic}, {"p_value", e.p_value},
  };
  for (const auto& [key, value] : fields) {
    INFO(key);
    if (std::isnan(value)) {
      CHECK(j.at(key).is_null());
    } else {
      CHECK(num(j, key) == value);  // shortest round-trip output: bit-identical
    }
  }
  CHECK(j.at("status").as_string() == std::string(latentaudit::status_name(e.status)));
}

// ---- small data sets -----------------------------------------------------------------------
const std::vector<double> y_treated = {3.1, 4.5, 2.2, 5.0, 3.9, 4.4, 2.8};
const std::vector<double> y_control = {2.0, 4.1, 1.0, 3.3, 2.9, 2.5, 3.0};

/// Long two-arm CSV: id, z, y (treated and control rows interleaved; id pairs them).
std::string two_arm_csv() {
  std::string s = "id,z,y\n";
  for (std::size_t i = 0; i < y_treated.size(); ++i) {
    s += cat("p", std::to_string(i), ",1,", latentaudit::number_text(y_treated[i]), "\n");
    s += cat("p", std::to_string(i), ",0,", latentaudit::number_text(y_control[i]), "\n");
  }
  return s;
}

/// The same as JSONL, with the treatment as a JSON boolean.
std::string two_arm_jsonl() {
  std::string s;
  for (std::size_t i = 0; i < y_treated.size(); ++i) {
    s += cat("{\"id\": \"p", std::to_string(i),
             "\", \"z\": true, \"y\": ", latentaudit::number_text(y_treated[i]), "}\n");
    s += cat("{\"id\": \"p", std::to_string(i),
             "\", \"z\": false, \"y\": ", latentaudit::number_text(y_control[i]), "}\n");
  }
  return s;
}

/// Wide paired CSV: one row per pair.
std::string wide_csv() {
  std::string s = "pair,after,before\n";
  for (std::size_t i = 0; i < y_treated.size(); ++i) {
    s += cat(std::to_string(i), ",", latentaudit::number_text(y_treated[i]), ",",
             latentaudit::number_text(y_control[i]), "\n");
  }
  return s;
}

/// Binary outcomes for McNemar / Newcombe (pairs: treated, control).
const std::vector<double> b_treated = {1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1};
const std::vector<double> b_control = {1, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1};

std::string long_csv(const std::vector<double>& t, const std::vector<double>& c) {
  std::string s = "item,arm,ok\n";
  for (std::size_t i = 0; i < t.size(); ++i) {
    s += cat("i", std::to_string(i), ",0,", latentaudit::number_text(c[i]), "\n");
    s += cat("i", std::to_string(i), ",1,", latentaudit::number_text(t[i]), "\n");
  }
  return s;
}

}  // namespace

TEST_CASE("cli: --version, --help, and the top-level errors", "[cli]") {
  auto v = run_cli({"--version"});
  CHECK(v.code == 0);
  CHECK(v.out == std::string(latentaudit::version_string) + "\n");
  auto h = run_cli({"--help"});
  CHECK(h.code == 0);
  for (const char* word : {"estimate", "interval", "power", "forward", "kv", "gguf", "organism", "audit",
                           "report", "--version", "--help", "Exit codes"}) {
    INFO(word);
    CHECK(h.out.find(word) != std::string::npos);
  }
}

TEST_CASE("cli: estimate welch|student equal the library on CSV and JSONL", "[cli]") {
  const auto csv = write_file("arms.csv", two_arm_csv());
  const auto jsonl = write_file("arms.jsonl", two_arm_jsonl());
  for (const auto& file : {csv, jsonl}) {
    INFO(file);
    const auto w = run_json({"estimate", "welch", "--data", file, "--outcome", "y", "--treatment", "z"});
    check_same(w, latentaudit::welch_t_test(y_treated, y_control));
    CHECK(num(w, "n_treated") == 7);
    CHECK(num(w, "n_control") == 7);
    CHECK(w.at("n_pairs").is_null());
    const auto s = run_json(
        {"estimate", "student", "--data", file, "--outcome", "y", "--treatment", "z", "--level", "0.9"});
    check_same(s, latentaudit::student_t_test(y_treated, y_control, {.level = 0.9}));
  }
}

TEST_CASE("cli: estimate paired, long and wide layouts, equal the library", "[cli]") {
  const auto expected = latentaudit::paired_t_test(y_treated, y_control, {.level = 0.8});
  const auto csv = write_file("pairs.csv", two_arm_csv());
  const auto jsonl = write_file("pairs.jsonl", two_arm_jsonl());
  const auto wide = write_file("wide.csv", wide_csv());
  for (const auto& file : {csv, jsonl}) {
    const auto j = run_json({"estimate", "paired", "--data", file, "--outcome", "y", "--treatment", "z",
                             "--pair", "id", "--level", "0.8"});
    check_same(j, expected);
    CHECK(num(j, "n_pairs") == 7);
  }
  const auto j = run_json({"estimate", "paired", "--data", wide, "--outcome-treated", "after",
                           "--outcome-control", "before", "--level=0.8", "--pretty"});
  check_same(j, expected);
  // Row order of a long file does not matter: pairs are matched by id.
  std::string shuffled = "id,z,y\n";
  for (std::size_t i = y_treated.size(); i-- > 0;) {
    shuffled += cat("p", std::to_string(i), ",0,", latentaudit::number_text(y_control[i]), "\n");
  }
  for (std::size_t i = 0; i < y_treated.size(); ++i) {
    shuffled += cat("p", std::to_string(i), ",1,", latentaudit::number_text(y_treated[i]), "\n");
  }
  check_same(run_json({"estimate", "paired", "--data", write_file("shuffled.csv", shuffled), "--outcome", "y",
                       "--treatment", "z", "--pair", "id", "--level", "0.8"}),
             expected);
}

TEST_CASE("cli: estimate mcnemar and newcombe equal the library", "[cli]") {
  const auto file = write_file("binary.csv", long_csv(b_treated, b_control));
  const std::vector<std::string> pair = {"--data",      file,  "--outcome", "ok",
                                         "--treatment", "arm", "--pair",    "item"};
  auto args = [&](std::vector<std::string> head, const std::vector<std::string>& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  const auto m = latentaudit::mcnemar_test(b_treated, b_control, {.level = 0.9});
  for (const char* method : {"mcnemar", "newcombe"}) {
    INFO(method);
    const auto j = run_json(args({"estimate", method, "--level", "0.9"}, pair));
    check_same(j, m.effect);
    CHECK(num(j, "n_pairs") == 14);
    CHECK(num(j, "exact_p_value") == m.exact_p_value);
    CHECK(num(j, "chi2_statistic") == m.chi2_statistic);
    CHECK(num(j, "chi2_p_value") == m.chi2_p_value);
    CHECK(num(j, "chi2_cc_statistic") == m.chi2_cc_statistic);
    CHECK(num(j, "chi2_cc_p_value") == m.chi2_cc_p_value);
    CHECK(num(j, "discordant") == 6);
    CHECK(j.at("table").at("treated_only").as_number() == 5);
    CHECK(j.at("table").at("control_only").as_number() == 1);
  }
  const auto u =
      run_json(args({"estimate", "newcombe"}, {"--data", file, "--outcome", "ok", "--treatment", "arm"}));
  check_same(u, latentaudit::two_proportion_test(b_treated, b_control));
  CHECK(num(u, "proportion_treated") == 10.0 / 14.0);
  const auto cc = run_json(args({"estimate", "newcombe", "--continuity-correction", "--level", "0.99"},
                                {"--data", file, "--outcome", "ok", "--treatment", "arm"}));
  check_same(cc, latentaudit::two_proportion_test(b_treated, b_control,
                                                  {.level = 0.99, .continuity_correction = true}));
}

TEST_CASE("cli: estimate tost and noninferiority equal the library", "[cli]") {
  using latentaudit::t_test_design;
  const auto file = write_file("tost.csv", two_arm_csv());
  const std::vector<std::string> data = {"--data", file, "--outcome", "y", "--treatment", "z"};
  auto args = [&](std::vector<std::string> head, std::vector<std::string> tail = {}) {
    head.insert(head.end(), data.begin(), data.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  const auto check_tost = [](const json_value& j, const latentaudit::equivalence_result& r) {
    auto e = r.effect;
    e.p_value = r.p_value;
    e.statistic = r.p_lower >= r.p_upper ? r.statistic_lower : r.statistic_upper;
    e.method = "tost_" + e.method;
    check_same(j, e);
    CHECK(num(j, "p_lower") == r.p_lower);
    CHECK(num(j, "p_upper") == r.p_upper);
    CHECK(num(j, "difference_p_value") == r.effect.p_value);
    CHECK(j.at("equivalent").as_bool() == r.equivalent);
  };
  check_tost(
      run_json(args({"estimate", "tost"}, {"--margin", "2"})),
      latentaudit::equivalence_test(y_treated, y_control, latentaudit::equivalence_bounds::symmetric(2.0)));
  check_tost(
      run_json(args({"estimate", "tost"}, {"--margin", "2", "--variance", "pooled", "--alpha", "0.1"})),
      latentaudit::equivalence_test(y_treated, y_control, latentaudit::equivalence_bounds::symmetric(2.0),
                                    {.design = t_test_design::student, .alpha = 0.1}));
  const auto paired = latentaudit::equivalence_test(y_treated, y_control, {.low = -0.5, .high = 1.5},
                                                    {.design = t_test_design::paired, .alpha = 0.025});
  const auto jp = run_json(
      args({"estimate", "tost"}, {"--lower", "-0.5", "--upper", "1.5", "--pair", "id", "--level", "0.95"}));
  check_tost(jp, paired);
  CHECK(num(jp, "n_pairs") == 7);
  CHECK(num(jp, "level") == 0.95);
  const auto ni = latentaudit::non_inferiority_test(
      y_treated, y_control, 0.4,
      {.design = t_test_design::paired, .better = latentaudit::better_direction::lower});
  const auto jn = run_json(
      args({"estimate", "noninferiority"}, {"--margin", "0.4", "--better", "lower", "--pair", "id"}));
  auto e = ni.effect;
  e.method = "noninferiority_" + e.method;
  e.statistic = ni.statistic;
  e.p_value = ni.p_value;
  check_same(jn, e);
  CHECK(jn.at("non_inferior").as_bool() == ni.non_inferior);
  CHECK(num(jn, "bound") == 0.4);
}

namespace {

/// Checks the bootstrap diagnostics fields against a library result.
void check_bootstrap(const json_value& j, const latentaudit::bootstrap_result& r) {
  check_same(j, r.effect);
  const std::pair<const char*, double> fields[] = {{"bias_correction", r.bias_correction},
                                                   {"acceleration", r.acceleration},
                                                   {"alpha_low", r.alpha_low},
                                                   {"alpha_high", r.alpha_high}};
  for (const auto& [key, value] : fields) {
    INFO(key);
    if (std::isnan(value)) {
      CHECK(j.at(key).is_null());
    } else {
      CHECK(num(j, key) == value);
    }
  }
  CHECK(num(j, "replicates_used") == static_cast<double>(r.replicates_used));
}

/// Writes numbers one per line, with a header line.
std::string number_file(const std::string& name, const std::vector<double>& xs) {
  std::string s = "value\n";
  for (double x : xs) s += cat(latentaudit::number_text(x), "\n");
  return write_file(name, s);
}

}  // namespace

TEST_CASE("cli: estimate bootstrap (two-sample, paired, cluster) equals the library at any thread count",
          "[cli]") {
  using latentaudit::bootstrap_ci_method;
  using latentaudit::bootstrap_convention;
  const auto file = write_file("boot.csv", two_arm_csv());
  const std::vector<std::string> data = {"--data", file,           "--outcome", "y",      "--treatment",
                                         "z",      "--replicates", "999",       "--seed", "7"};
  auto args = [&](std::vector<std::string> tail) {
    std::vector<std::string> a = {"estimate", "bootstrap"};
    a.insert(a.end(), data.begin(), data.end());
    a.insert(a.end(), tail.begin(), tail.end());
    return a;
  };
  // two-sample, BCa (default), boot convention
  const auto two =
      latentaudit::bootstrap_mean_difference(y_treated, y_control, {.replicates = 999, .seed = 7});
  const auto j1 = run_json(args({"--threads", "1"}));
  check_bootstrap(j1, two);
  CHECK(j1.at("design").as_string() == "two_sample");
  CHECK(latentaudit::write_json(run_json(args({"--threads", "3"}))) == latentaudit::write_json(j1));
  // paired, percentile, scipy convention, level 0.9
  const auto paired = latentaudit::bootstrap_paired_mean(y_treated, y_control,
                                                         {.replicates = 999,
                                                          .level = 0.9,
                                                          .method = bootstrap_ci_method::percentile,
                                                          .convention = bootstrap_convention::scipy,
                                                          .seed = 7});
  const auto j2 =
      run_json(args({"--pair", "id", "--ci", "percentile", "--convention", "scipy", "--level", "0.9"}));
  check_bootstrap(j2, paired);
  CHECK(num(j2, "n_pairs") == 7);
  // studentized two-sample
  check_bootstrap(
      run_json(args({"--ci", "studentized"})),
      latentaudit::bootstrap_mean_difference(
          y_treated, y_control, {.replicates = 999, .method = bootstrap_ci_method::studentized, .seed = 7}));
  // cluster on the pair id: cluster k holds treated row k and control row k
  std::vector<std::size_t> labels(y_treated.size());
  for (std::size_t k = 0; k < labels.size(); ++k) labels[k] = k;
  const auto cl = latentaudit::bootstrap_clustered(
      y_treated, labels, y_control, labels,
      [](const latentaudit::resample_view& t, const latentaudit::resample_view& c) {
        return t.mean() - c.mean();
      },
      {.replicates = 999,
       .method = bootstrap_ci_method::basic,
       .seed = 7,
       .estimand = "difference_in_means"});
  const auto j3 = run_json(args({"--cluster", "id", "--ci", "basic"}));
  check_bootstrap(j3, cl);
  CHECK(num(j3, "n_clusters") == 7);
  CHECK(j3.at("seed").as_string() == "7");
}

TEST_CASE("cli: interval from saved replicates equals bootstrap_interval", "[cli]") {
  using latentaudit::bootstrap_ci_method;
  using latentaudit::bootstrap_convention;
  auto full = latentaudit::bootstrap_mean_difference(y_treated, y_control,
                                                     {.replicates = 499, .seed = 3, .keep_replicates = true});
  const double t0 = full.effect.estimate;
  const auto reps = number_file("reps.txt", full.replicates);
  std::vector<double> influence;
  const double m1 = latentaudit::detail::moments(y_treated).mean,
               m0 = latentaudit::detail::moments(y_control).mean;
  for (double y : y_treated) influence.push_back(y - m1);
  for (double y : y_control) influence.push_back(-(y - m0));
  const auto inf = number_file("inf.txt", influence);
  const latentaudit::bootstrap_replicates in{.t0 = t0, .replicates = full.replicates, .influence = influence};
  const std::string t0_text = latentaudit::number_text(t0);
  for (const char* method : {"percentile", "basic", "normal", "bca"}) {
    for (const char* conv : {"boot", "scipy"}) {
      INFO(method << " " << conv);
      const auto m = std::string(method) == "percentile" ? bootstrap_ci_method::percentile
                     : std::string(method) == "basic"    ? bootstrap_ci_method::basic
                     : std::string(method) == "normal"   ? bootstrap_ci_method::normal
                                                         : bootstrap_ci_method::bca;
      const auto c = std::string(conv) == "boot" ? bootstrap_convention::boot : bootstrap_convention::scipy;
      std::vector<std::string> a = {"interval", "--estimate",   t0_text, "--replicates", reps, "--method",
                                    method,     "--convention", conv,    "--level",      "0.9"};
      if (m == bootstrap_ci_method::bca) {
        a.insert(a.end(), {"--influence", inf});
        if (c == bootstrap_convention::scipy) a.insert(a.end(), {"--strata", "7,7"});
      }
      auto input = in;
      const std::vector<std::size_t> strata = {7, 7};
      if (m == bootstrap_ci_method::bca && c == bootstrap_convention::scipy) input.strata = strata;
      const auto expect =
          latentaudit::bootstrap_interval(input, {.level = 0.9, .method = m, .convention = c});
      const auto j = run_json(a);
      check_bootstrap(j, expect);
      CHECK(num(j, "replicates") == 499);
    }
  }
  // studentized: v0 and per-replicate variances
  std::vector<double> vars;
  for (std::size_t r = 0; r < full.replicates.size(); ++r)
    vars.push_back(0.1 + 0.001 * static_cast<double>(r % 17));
  const auto vfile = number_file("vars.txt", vars);
  const auto st = latentaudit::bootstrap_interval(
      {.t0 = t0, .replicates = full.replicates, .t0_variance = 0.12, .replicate_variances = vars},
      {.method = bootstrap_ci_method::studentized});
  check_bootstrap(run_json({"interval", "--estimate", t0_text, "--replicates", reps, "--method",
                            "studentized", "--estimate-variance", "0.12", "--replicate-variances", vfile}),
                  st);
}

TEST_CASE("cli: power paired-t|two-sample-t|mcnemar equal the library", "[cli]") {
  using latentaudit::power_design;
  using latentaudit::power_sides;
  const auto n = run_json({"power", "paired-t", "--delta", "0.5", "--power", "0.8", "--sd", "1.5"});
  const auto rn = latentaudit::t_test_sample_size(0.5, 0.8, {.design = power_design::paired, .sd = 1.5});
  CHECK(n.at("solve_for").as_string() == "n");
  CHECK(num(n, "n") == rn.n);
  CHECK(num(n, "n_required") == static_cast<double>(rn.n_required));
  CHECK(num(n, "power_at_required") == rn.power_at_required);
  CHECK(n.at("n_required_control").is_null());
  const auto p =
      run_json({"power", "two-sample-t", "--n", "20", "--delta", "0.7", "--alpha", "0.01", "--strict"});
  CHECK(p.at("solve_for").as_string() == "power");
  CHECK(num(p, "power") == latentaudit::t_test_power(20, 0.7, {.alpha = 0.01, .strict = true}));
  const auto m =
      run_json({"power", "two-sample-t", "--n", "30", "--power", "0.9", "--ratio", "2", "--one-sided"});
  CHECK(m.at("solve_for").as_string() == "delta");
  CHECK(num(m, "delta") ==
        latentaudit::t_test_mde(30, 0.9, {.sides = power_sides::one_sided, .allocation_ratio = 2.0}));
  const auto r2 = latentaudit::t_test_sample_size(0.4, 0.8, {.allocation_ratio = 0.5});
  const auto j2 = run_json({"power", "two-sample-t", "--delta", "0.4", "--power", "0.8", "--ratio", "0.5"});
  CHECK(num(j2, "n_required_control") == static_cast<double>(r2.n_required_control));
  CHECK(num(j2, "n_total") == static_cast<double>(r2.n_total));
  const auto mp = run_json({"power", "mcnemar", "--p10", "0.1", "--p01", "0.05", "--n", "300"});
  CHECK(num(mp, "power") == latentaudit::mcnemar_power(300, 0.1, 0.05));
  const auto me =
      run_json({"power", "mcnemar", "--p10", "0.1", "--p01", "0.05", "--power", "0.8", "--exact"});
  const auto re =
      latentaudit::mcnemar_sample_size(0.1, 0.05, 0.8, {.method = latentaudit::mcnemar_power_method::exact});
  CHECK(num(me, "n_required") == static_cast<double>(re.n_required));
  CHECK(num(me, "power_at_required") == re.power_at_required);
  CHECK(me.at("method").as_string() == "exact");
}

namespace {

/// One bad invocation: arguments and the words its one-line message must contain.
struct bad_case {
  std::vector<std::string> args;
  std::vector<std::string> words;
};

void check_bad(const bad_case& c) {
  std::string joined;
  for (const auto& a : c.args) joined += a + " ";
  INFO("latentaudit " << joined);
  const auto r = run_cli(c.args);
  INFO("stderr: " << r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  REQUIRE(!r.err.empty());
  CHECK(r.err.back() == '\n');
  CHECK(r.err.find('\n') == r.err.size() - 1);  // exactly one line
  CHECK(r.err.rfind("latentaudit: error: ", 0) == 0);
  for (const auto& w : c.words) {
    INFO("expected word: " << w);
    CHECK(r.err.find(w) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("cli: bad input exits 2 with one line naming the problem", "[cli]") {
  const auto good = write_file("good.csv", two_arm_csv());
  const auto wide = write_file("good_wide.csv", wide_csv());
  const auto ragged = write_file("ragged.csv", "id,z,y\na,1,2\nb,0\n");
  const auto text_cell = write_file("text.csv", "id,z,y\na,1,2\nb,0,abc\nc,1,3\nd,0,1\n");
  const auto nan_cell = write_file("nan.csv", "id,z,y\na,1,2\nb,0,NaN\nc,1,3\nd,0,1\n");
  const auto inf_cell = write_file("inf.csv", "id,z,y\na,1,2\nb,0,1\nc,1,inf\nd,0,1\n");
  const auto empty = write_file("empty.csv", "");
  const auto header_only = write_file("header.csv", "id,z,y\n");
  const auto bad_code = write_file("code.csv", "id,z,y\na,1,2\nb,2,1\nc,1,3\nd,0,1\n");
  const auto text_code = write_file("code_text.csv", "id,z,y\na,1,2\nb,yes,1\nc,1,3\nd,0,1\n");
  const auto no_control = write_file("no_control.csv", "id,z,y\na,1,2\nb,1,1\nc,1,3\n");
  const auto no_treated = write_file("no_treated.csv", "id,z,y\na,0,2\nb,0,1\n");
  const auto one_obs = write_file("one.csv", "id,z,y\na,1,2\nb,0,1\nc,0,3\n");
  const auto constant = write_file("constant.csv", "id,z,y\na,1,2\nb,0,2\nc,1,2\nd,0,2\n");
  const auto bad_records = write_file("records.jsonl",
                                      "{\"item\": 0, \"seed\": 0, \"arm\": \"kv_full\", \"correct\": "
                                      "1}\n{\"item\": 1, \"seed\": 0, \"arm\": \"kv_full\"}\n");
  const auto unpaired = write_file("unpaired.csv", "id,z,y\na,1,2\na,0,1\nb,1,3\nc,0,1\n");
  const auto twice = write_file("twice.csv", "id,z,y\na,1,2\na,0,1\nb,1,3\nb,1,4\nb,0,1\n");
  const auto missing_id = write_file("missing_id.csv", "id,z,y\na,1,2\na,0,1\n,1,3\nb,0,1\n");
  const auto bad_quote = write_file("quote.csv", "id,z,y\na,1,\"2\nb,0,1\n");
  const auto bad_jsonl = write_file("bad.jsonl", "{\"z\":1,\"y\":2}\n{\"z\":0,\"y\":}\n");
  const auto not_object = write_file("array.jsonl", "{\"z\":1,\"y\":2}\n[0, 1]\n");
  const auto missing_key =
      write_file("missing_key.jsonl", "{\"z\":1,\"y\":2}\n{\"z\":0}\n{\"z\":1,\"y\":2}\n{\"z\":0,\"y\":5}\n");
  const auto wide_nan = write_file("wide_nan.csv", "pair,after,before\n1,2,3\n2,nan,1\n3,1,1\n");
  const auto txt = write_file("data.txt", "id,z,y\n");
  const std::vector<std::string> base = {"--outcome", "y", "--treatment", "z"};
  auto with = [&](std::vector<std::string> head, const std::string& file,
                  std::vector<std::string> tail = {}) {
    head.push_back("--data");
    head.push_back(file);
    head.insert(head.end(), base.begin(), base.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  const std::vector<bad_case> cases = {
      // files and cells
      {with({"estimate", "welch"}, "/nonexistent/x.csv"), {"cannot open", "/nonexistent/x.csv"}},
      {with({"estimate", "welch"}, txt), {"must end in .csv"}},
      {with({"estimate", "welch"}, empty), {"empty file"}},
      {with({"estimate", "welch"}, header_only), {"no data rows"}},
      {with({"estimate", "welch"}, ragged), {"line 3", "ragged row"}},
      {with({"estimate", "welch"}, text_cell), {"line 3", "column 'y'", "abc"}},
      {with({"estimate", "welch"}, nan_cell), {"line 3", "column 'y'", "non-finite", "NaN"}},
      {with({"estimate", "student"}, inf_cell), {"line 4", "column 'y'", "non-finite"}},
      {with({"estimate", "welch"}, bad_quote), {"line 2", "unterminated quoted field"}},
      {with({"estimate", "welch"}, bad_jsonl), {"line 2", "invalid JSON"}},
      {with({"estimate", "welch"}, not_object), {"line 2", "expected a JSON object"}},
      {with({"estimate", "welch"}, missing_key), {"line 2", "column 'y'", "missing value"}},
      {{"estimate", "welch", "--data", good, "--outcome", "nope", "--treatment", "z"},
       {"no column 'nope'", "columns: id, z, y"}},
      {{"estimate", "welch", "--data", good, "--outcome", "y", "--treatment", "nope"}, {"no column 'nope'"}},
      // treatment coding and arms
      {with({"estimate", "welch"}, bad_code), {"line 3", "column 'z'", "coded 0", "got 2"}},
      {with({"estimate", "welch"}, text_code), {"line 3", "column 'z'", "yes"}},
      {with({"estimate", "welch"}, no_control), {"column 'z'", "no control rows"}},
      {with({"estimate", "student"}, no_treated), {"column 'z'", "no treated rows"}},
      {with({"estimate", "welch"}, one_obs), {"treated", "1 observation"}},
      {with({"estimate", "welch"}, constant), {"constant"}},
      {with({"estimate", "paired"}, constant, {"--pair", "id"}), {"unpaired", "'a'"}},
      // paired designs
      {with({"estimate", "paired"}, unpaired, {"--pair", "id"}),
       {"pair id 'b'", "unpaired", "line 4", "column 'id'"}},
      {with({"estimate", "paired"}, twice, {"--pair", "id"}), {"pair id 'b'", "second treated", "line 5"}},
      {with({"estimate", "paired"}, missing_id, {"--pair", "id"}), {"line 4", "column 'id'", "missing"}},
      {with({"estimate", "paired"}, good), {"paired data needed", "--pair"}},
      {with({"estimate", "paired"}, good, {"--outcome-treated", "y"}), {"--outcome", "cannot be combined"}},
      {{"estimate", "paired", "--data", wide, "--outcome-treated", "after"},
       {"missing required option --outcome-control"}},
      {{"estimate", "paired", "--data", write_file("wn.csv", "pair,after,before\n1,2,3\n2,nan,1\n3,1,1\n"),
        "--outcome-treated", "after", "--outcome-control", "before"},
       {"line 3", "column 'after'", "non-finite"}},
      {{"estimate", "paired", "--data", wide, "--outcome-treated", "after", "--outcome-control", "nope"},
       {"no column 'nope'"}},
      // binary outcomes, equivalence
      {{"estimate", "mcnemar", "--data", write_file("nb.csv", "item,arm,ok\na,1,1\na,0,0.5\n"), "--outcome",
        "ok", "--treatment", "arm", "--pair", "item"},
       {"line 3", "column 'ok'", "binary outcome", "0.5"}},
      {{"estimate", "newcombe", "--data", write_file("nb2.csv", "item,arm,ok\na,1,1\nb,0,2\n"), "--outcome",
        "ok", "--treatment", "arm"},
       {"line 3", "column 'ok'", "binary outcome", "got 2"}},
      {{"estimate", "mcnemar", "--data", write_file("nd.csv", "item,arm,ok\na,1,1\na,0,1\nb,1,0\nb,0,0\n"),
        "--outcome", "ok", "--treatment", "arm", "--pair", "item"},
       {"no discordant pairs"}},
      {with({"estimate", "mcnemar"}, good), {"needs paired data"}},
      {with({"estimate", "newcombe"}, good, {"--pair", "id", "--continuity-correction"}),
       {"--continuity-correction", "unpaired"}},
      {with({"estimate", "tost"}, good), {"missing required option --margin"}},
      {with({"estimate", "tost"}, good, {"--margin", "-1"}), {"--margin", "positive"}},
      {with({"estimate", "tost"}, good, {"--margin", "1", "--alpha", "0.6"}), {"--alpha", "(0, 0.5)"}},
      {with({"estimate", "tost"}, good, {"--margin", "1", "--alpha", "0.1", "--level", "0.9"}),
       {"--alpha", "--level", "not both"}},
      {with({"estimate", "tost"}, good, {"--margin", "1", "--lower", "0"}),
       {"--margin", "--lower", "not both"}},
      {with({"estimate", "tost"}, good, {"--lower", "1", "--upper", "0"}), {"--lower", "less than --upper"}},
      {with({"estimate", "tost"}, good, {"--lower", "1"}), {"missing required option --upper"}},
      {with({"estimate", "tost"}, good, {"--margin", "1", "--variance", "weird"}),
       {"--variance", "unequal|pooled", "weird"}},
      {with({"estimate", "tost"}, good, {"--margin", "1", "--variance", "pooled", "--pair", "id"}),
       {"--variance", "unpaired"}},
      {with({"estimate", "noninferiority"}, good, {"--margin", "1", "--better", "up"}),
       {"--better", "higher|lower"}},
      // bootstrap and interval
      {with({"estimate", "bootstrap"}, good, {"--ci", "weird"}),
       {"--ci", "percentile|basic|normal|bca|studentized", "weird"}},
      {with({"estimate", "bootstrap"}, good, {"--replicates", "1"}), {"--replicates", "[2, "}},
      {with({"estimate", "bootstrap"}, good, {"--replicates", "1e3"}), {"--replicates", "integer", "1e3"}},
      {with({"estimate", "bootstrap"}, good, {"--seed", "-1"}), {"--seed", "integer", "-1"}},
      {with({"estimate", "bootstrap"}, good, {"--threads", "x"}), {"--threads", "integer"}},
      {with({"estimate", "bootstrap"}, good, {"--convention", "stata"}), {"--convention", "boot|scipy"}},
      {with({"estimate", "bootstrap"}, good, {"--cluster", "id", "--pair", "id"}), {"--cluster", "paired"}},
      {with({"estimate", "bootstrap"}, good, {"--cluster", "id", "--ci", "studentized"}),
       {"studentized", "--cluster"}},
      {with({"estimate", "bootstrap"}, constant, {"--replicates", "99"}), {"replicates are equal"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r1.txt", "x\n1\n2\n")},
       {"missing required option --method"}},
      {{"interval", "--replicates", write_file("r2.txt", "1\n2\n"), "--method", "percentile"},
       {"missing required option --estimate"}},
      {{"interval", "--estimate", "1", "--method", "percentile"}, {"missing required option --replicates"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r3.txt", "1\n2\n3\n"), "--method", "bca"},
       {"bca", "--influence"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r4.txt", "1\n2\n3\n"), "--method",
        "percentile", "--influence", write_file("i4.txt", "1\n-1\n")},
       {"--influence", "bca only"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r5.txt", "t\n1\n2\nabc\n"), "--method",
        "normal"},
       {"r5.txt", "line 4", "one number per line", "abc"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r6.txt", "1\n2\ninf\n"), "--method",
        "normal"},
       {"r6.txt", "line 3", "non-finite"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r7.txt", "header\n\n"), "--method",
        "normal"},
       {"r7.txt", "no numbers"}},
      {{"interval", "--estimate", "1", "--replicates", "/nonexistent/r.txt", "--method", "normal"},
       {"cannot open", "/nonexistent/r.txt"}},
      {{"interval", "--estimate", "nan", "--replicates", write_file("r8.txt", "1\n2\n"), "--method",
        "normal"},
       {"--estimate", "finite"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r9.txt", "1\n2\n3\n"), "--method",
        "percentile"},
       {"too small for level"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r10.txt", "1\n2\n3\n"), "--method", "bca",
        "--influence", write_file("i10.txt", "1\n-1\n"), "--strata", "1,x"},
       {"--strata", "positive integers"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r11.txt", "1\n2\n3\n"), "--method",
        "studentized"},
       {"missing required option --estimate-variance"}},
      {{"interval", "--estimate", "1", "--replicates", write_file("r12.txt", "1\n2\n3\n"), "--method",
        "normal", "--data", good},
       {"--data", "not accepted"}},
      // power
      {{"power"}, {"missing test"}},
      {{"power", "z-test"}, {"unknown test 'z-test'"}},
      {{"power", "paired-t", "--n", "10"}, {"exactly two of --n, --delta, --power"}},
      {{"power", "paired-t", "--n", "10", "--delta", "1", "--power", "0.8"}, {"exactly two", "got 3"}},
      {{"power", "paired-t", "--n", "10", "--delta", "1", "--alpha", "2"}, {"--alpha", "(0, 0.5)"}},
      {{"power", "paired-t", "--n", "10", "--delta", "1", "--alpha", "0.5"}, {"--alpha", "(0, 0.5)"}},
      {{"power", "paired-t", "--n", "10", "--delta", "1", "--sd", "0"}, {"sd", "positive"}},
      {{"power", "paired-t", "--n", "10", "--delta", "1", "--ratio", "2"}, {"unknown option '--ratio'"}},
      {{"power", "two-sample-t", "--n", "10", "--delta", "1", "--one-sided", "--strict"},
       {"--strict", "two-sided"}},
      {{"power", "two-sample-t", "--delta", "0", "--power", "0.8"}, {"delta", "non-zero"}},
      {{"power", "mcnemar", "--p10", "0.1", "--p01", "0.05"}, {"exactly one of --n", "--power"}},
      {{"power", "mcnemar", "--p10", "0.1", "--p01", "0.05", "--n", "10", "--power", "0.8"},
       {"exactly one of --n"}},
      {{"power", "mcnemar", "--p10", "0.1", "--p01", "0.1", "--power", "0.8"}, {"p01"}},
      {{"power", "mcnemar", "--p01", "0.1", "--n", "10"}, {"missing required option --p10"}},
      // the shared option parser and data loader in the newer commands (their own checks are in
      // regression_, matching_, weighting_, forward_ and kv_cli_test.cpp)
      {{"estimate", "ols", "--data", good, "--outcome", "y", "--treatment", "z"},
       {"--treatment", "not accepted"}},
      {{"estimate", "ols", "--data", good, "--outcome", "y", "--covariates", "nope"}, {"no column 'nope'"}},
      {with({"estimate", "did"}, good, {"--unit", "id", "--post", "z", "--time", "z"}),
       {"--post", "--time", "not both"}},
      {with({"estimate", "event-study"}, good, {"--unit", "id"}), {"missing required option --time"}},
      {with({"estimate", "iv"}, good, {"--instrument", "y", "--level", "2"}), {"--level", "(0, 1)"}},
      {with({"estimate", "matching"}, good, {"--covariates", "y", "--neighbors", "x"}),
       {"--neighbors", "integer"}},
      {with({"estimate", "ipw"}, good, {"--covariates", "y", "--pair", "id"}), {"--pair", "not accepted"}},
      {with({"estimate", "aipw"}, good, {"--covariates", "y", "--normalization", "ht"}),
       {"unknown option '--normalization'"}},
      {with({"estimate", "cate"}, bad_code, {"--by", "id"}), {"line 3", "column 'z'", "coded 0"}},
      {with({"estimate", "rosenbaum"}, good, {"--gamma", "0.5", "--pair", "id"}), {"--gamma", ">= 1"}},
      {{"forward", "--model", "/nonexistent", "--tokens", "1", "--bogus"}, {"unknown option '--bogus'"}},
      {{"forward", "--model", "/nonexistent", "--tokens", "1", "--threads", "x"}, {"--threads", "integer"}},
      {{"kv", "inspect", good, "--out", "x.lakv"}, {"unknown option '--out'"}},
      {{"kv", "make-example", "--out", write_file("seed.lakv", ""), "--seed", "-1"}, {"--seed", "integer"}},
      {{"kv", "make-example", "--out"}, {"--out", "needs a value"}},
      {{"organism", "eval", "--model", "/nonexistent", "--items", "x"}, {"--items", "integer"}},
      {{"organism"}, {"missing command"}},
      {{"audit", "--items", "0"}, {"--items", "[1, "}},
      {{"audit", "--arms", "kv_full,bogus", "--out", "x"}, {"--arms", "must be no_comm", "bogus"}},
      {{"audit", "--link", "pcie9"}, {"--link", "pcie9"}},
      {{"audit", "--model", "/nonexistent", "--out", "x"},
       {"option --model", "/nonexistent", "neither a model folder"}},
      {{"audit", "--margin", "2"}, {"--margin", "(0, 1)"}},
      {{"audit", "--config", "/nonexistent.json"}, {"--config", "/nonexistent.json"}},
      {{"report"}, {"missing required option --records"}},
      {{"report", "--records", "/nonexistent.jsonl"}, {"cannot open --records", "/nonexistent.jsonl"}},
      {{"report", "--records", bad_records}, {"records.jsonl:2", "correct"}},
      // options
      {with({"estimate", "welch"}, good, {"--level", "1.5"}), {"--level", "(0, 1)", "1.5"}},
      {with({"estimate", "welch"}, good, {"--level", "0"}), {"--level", "(0, 1)"}},
      {with({"estimate", "welch"}, good, {"--level", "abc"}), {"--level", "expects a finite number", "abc"}},
      {with({"estimate", "welch"}, good, {"--level", "nan"}), {"--level", "finite number"}},
      {with({"estimate", "welch"}, good, {"--level"}), {"--level", "needs a value"}},
      {{"estimate", "welch", "--data", "--outcome", "y", "--treatment", "z"}, {"--data", "needs a value"}},
      {with({"estimate", "welch"}, good, {"--bogus", "1"}), {"unknown option '--bogus'"}},
      {with({"estimate", "welch"}, good, {"--pair", "id"}), {"--pair", "not accepted"}},
      {with({"estimate", "welch"}, good, {"--level", "0.9", "--level", "0.8"}), {"--level", "given twice"}},
      {with({"estimate", "welch"}, good, {"stray"}), {"unexpected argument 'stray'"}},
      {with({"estimate", "welch"}, good, {"--pretty=yes"}), {"--pretty", "takes no value"}},
      {{"estimate", "welch", "--data", good, "--outcome", "y"}, {"missing required option --treatment"}},
      {{"estimate", "welch", "--outcome", "y", "--treatment", "z"}, {"missing required option --data"}},
      {{"estimate", "welch", "--data", "", "--outcome", "y", "--treatment", "z"}, {"--data", "non-empty"}},
      {{"estimate"}, {"missing method"}},
      {{"estimate", "nosuch"}, {"unknown method 'nosuch'"}},
      {{"nosuch"}, {"unknown command 'nosuch'"}},
      {{"--nosuch"}, {"unknown option '--nosuch'"}},
      {{}, {"missing command"}},
  };
  CHECK(cases.size() >= 30);
  for (const auto& c : cases) check_bad(c);
}

TEST_CASE("cli: audit refuses a model or partner that is not a model folder before it creates --out",
          "[cli]") {
  const fs::path work = latentaudit::test::cli_work_dir();
  const fs::path out = work / "never_created_out";
  fs::remove_all(out);
  const fs::path empty = work / "not_a_model";
  fs::create_directories(empty);
  const std::string a = (fs::path(LATENTAUDIT_SOURCE_DIR) / "models" / "organism-a").string();
  const std::vector<bad_case> cases = {
      {{"audit", "--model", "/nonexistent", "--out", out.string()},
       {"option --model", "neither a model folder"}},
      {{"audit", "--model", empty.string(), "--out", out.string()},
       {"option --model", "holds no config.json"}},
      {{"audit", "--model", a, "--partner", empty.string(), "--out", out.string()},
       {"option --partner", "holds no config.json"}},
      {{"audit", "--model", a, "--task", (empty / "task.json").string(), "--out", out.string()},
       {"option --task", "is not a file"}},
  };
  for (const auto& c : cases) {
    check_bad(c);
    CHECK_FALSE(fs::exists(out));  // nothing created, no lock file left behind
  }
}

namespace {

/// A copy of organism-a's model directory with one change applied by `edit` (the directory).
std::string organism_copy(const std::string& name, const std::function<void(const fs::path&)>& edit) {
  const fs::path dir = latentaudit::test::cli_work_dir() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path src = fs::path(LATENTAUDIT_SOURCE_DIR) / "models" / "organism-a";
  for (const char* f : {"config.json", "task.json", "model.safetensors"}) fs::copy_file(src / f, dir / f);
  edit(dir);
  return dir.string();
}

/// Overwrites the first f32 value of the first tensor of a safetensors file with `x`.
void poke_first_weight(const fs::path& file, float x) {
  std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
  std::uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  f.seekp(static_cast<std::streamoff>(8 + n));
  f.write(reinterpret_cast<const char*>(&x), 4);
}

/// Replaces the first occurrence of `from` in a file by `to`.
void replace_in_file(const fs::path& file, const std::string& from, const std::string& to) {
  std::string text = latentaudit::test::slurp_file(file);
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace

TEST_CASE("cli: hostile inputs exit 2 with one line naming the file, field or option", "[cli]") {
  const auto good = write_file("h_good.csv", two_arm_csv());
  const fs::path work = latentaudit::test::cli_work_dir();
  const fs::path dir_csv = work / "dir.csv";
  fs::create_directories(dir_csv);
  const fs::path fifo_csv = work / "fifo.csv";
  fs::remove(fifo_csv);
  REQUIRE(::mkfifo(fifo_csv.c_str(), 0600) == 0);  // no writer: opening it for reading would block
  const auto a_file = write_file("h_plain_file", "x");
  const auto relay = (work / "h_relay.lakv").string();
  REQUIRE(run_cli({"kv", "make-example", "--out", relay}).code == 0);
  const auto cfg_json = [&](const std::string& name, const std::string& text) {
    return write_file(name, text);
  };
  const auto nan_model = organism_copy(
      "h_nan_model", [](const fs::path& d) { poke_first_weight(d / "model.safetensors", NAN); });
  const auto huge_model = organism_copy(
      "h_huge_model", [](const fs::path& d) { poke_first_weight(d / "model.safetensors", 3e38f); });
  const auto gpt2 = organism_copy("h_gpt2", [](const fs::path& d) {
    replace_in_file(d / "config.json", "LlamaForCausalLM", "GPT2LMHeadModel");
  });
  const auto no_arch = organism_copy(
      "h_no_arch", [](const fs::path& d) { replace_in_file(d / "config.json", "\"LlamaForCausalLM\"", ""); });
  const auto tied = organism_copy("h_tied", [](const fs::path& d) {
    replace_in_file(d / "config.json", "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
  });
  const auto bad_task = organism_copy("h_bad_task", [](const fs::path& d) {
    std::ofstream(d / "task.json", std::ios::binary | std::ios::trunc) << "{\"vocab_size\": ";
  });
  const auto bad_config = organism_copy("h_bad_config", [](const fs::path& d) {
    std::ofstream(d / "config.json", std::ios::binary | std::ios::trunc) << "{\"vocab_size\" 1}";
  });
  const auto st_dir = organism_copy("h_st_dir", [](const fs::path& d) {
    fs::remove(d / "model.safetensors");
    fs::create_directories(d / "model.safetensors");
  });
  auto records_with = [&](const std::string& name, const std::string& extra) {
    return write_file(name, "{\"item\":0,\"seed\":0,\"arm\":\"kv_noise_1\",\"correct\":1" + extra + "}\n");
  };
  const auto out = [&](const std::string& name) { return (work / name).string(); };
  std::string ipw_text = "x,z,y\n0,1,1\n0,0,2\n";  // x = 0: propensity 0.5; x = 1: 0.9 (dropped)
  for (int i = 0; i < 20; ++i) ipw_text += cat("1,", i < 18 ? "1," : "0,", std::to_string(i % 3), "\n");
  const auto ipw_one_control = write_file("h_ipw.csv", ipw_text);
  std::string dup_text = "x,x2,z,y\n";
  for (int i = 0; i < 12; ++i)
    dup_text += cat(std::to_string(i % 5), ",", std::to_string(2 * (i % 5)), ",", std::to_string(i % 2), ",",
                    std::to_string(i), "\n");
  const auto dup_covariate = write_file("h_dup.csv", dup_text);
  const auto huge = write_file("h_huge.csv", "x,z,y\n1e300,1,1\n2,0,2\n3,1,2\n4,0,5\n");
  const auto quoted = write_file(
      "h_quoted.jsonl", "{\"z\":1,\"y\":\"0\"}\n{\"z\":0,\"y\":1}\n{\"z\":1,\"y\":2}\n{\"z\":0,\"y\":3}\n");
  const std::vector<bad_case> cases = {
      // one writer, bounded designs, output directories
      {{"audit", "--items", "10000000", "--seeds", "100000", "--out", out("h_big")},
       {"design is too large", "trials", "GB", "--items"}},
      {{"audit", "--items", "2", "--seeds", "1", "--out", a_file}, {"--out", a_file, "not a directory"}},
      {{"audit", "--items", "2", "--seeds", "1", "--out", "/dev/null"},
       {"--out", "/dev/null", "character device"}},
      {{"audit", "--items", "2", "--seeds", "1", "--out", ""}, {"--out", "empty path"}},
      {{"audit", "--items", "2", "--seeds", "1", "--out", "/proc/latentaudit_out"},
       {"--out", "/proc/latentaudit_out", "cannot create"}},
      // readers refuse non-files by type, before opening
      {{"report", "--records", dir_csv.string()}, {"dir.csv", "holds no records.jsonl"}},
      {{"report", "--records", fifo_csv.string()}, {"fifo.csv", "is a FIFO"}},
      {{"report", "--records", "/dev/zero"}, {"/dev/zero", "character device"}},
      {{"kv", "inspect", relay, "--key-file", dir_csv.string()}, {"--key-file", "dir.csv", "is a directory"}},
      {{"kv", "inspect", relay, "--key-file", "/dev/zero"}, {"--key-file", "/dev/zero", "character device"}},
      {{"kv", "inspect", dir_csv.string()}, {"relay file", "is a directory"}},
      {{"audit", "--config", "/dev/zero"}, {"--config", "/dev/zero", "character device"}},
      {{"audit", "--config", dir_csv.string()}, {"--config", "is a directory"}},
      {{"estimate", "welch", "--data", dir_csv.string(), "--outcome", "y", "--treatment", "z"},
       {"--data", "dir.csv", "is a directory"}},
      {{"estimate", "welch", "--data", fifo_csv.string(), "--outcome", "y", "--treatment", "z"},
       {"--data", "fifo.csv", "is a FIFO"}},
      {{"estimate", "welch", "--data", "/dev/zero", "--outcome", "y", "--treatment", "z"},
       {"--data", "/dev/zero", "character device"}},
      {{"interval", "--estimate", "1", "--replicates", dir_csv.string(), "--method", "normal"},
       {"--replicates", "is a directory"}},
      // --config: parse errors name the file; flags take booleans; help is not a config key
      {{"audit", "--config", cfg_json("h_cfg_bad.json", "{\"items\": }")}, {"--config", "h_cfg_bad.json"}},
      {{"audit", "--config", cfg_json("h_cfg_help.json", "{\"help\": true}")}, {"h_cfg_help.json", "'help'"}},
      {{"audit", "--config", cfg_json("h_cfg_flag.json", "{\"resume\": 1}")},
       {"h_cfg_flag.json", "'resume'", "true or false"}},
      {{"audit", "--config", cfg_json("h_cfg_unknown.json", "{\"itemz\": 3}")}, {"unknown key 'itemz'"}},
      {{"audit", "--config", cfg_json("h_cfg_bool.json", "{\"items\": true}")},
       {"'items'", "string or a number"}},
      // models: what cannot be a trained Llama is refused at load
      {{"forward", "--model", nan_model, "--tokens", "1"},
       {"h_nan_model", "tensor '", "holds nan", "finite"}},
      {{"forward", "--model", huge_model, "--tokens", "1"}, {"h_huge_model", "tensor '", "1e6"}},
      {{"forward", "--model", gpt2, "--tokens", "1"}, {"architectures", "GPT2LMHeadModel"}},
      {{"forward", "--model", no_arch, "--tokens", "1"}, {"architectures", "[]"}},
      {{"forward", "--model", tied, "--tokens", "1"}, {"lm_head.weight", "tie_word_embeddings"}},
      {{"forward", "--model", bad_config, "--tokens", "1"}, {"config.json"}},
      {{"forward", "--model", st_dir, "--tokens", "1"}, {"model.safetensors", "is a directory"}},
      {{"audit", "--model", bad_task, "--partner", "none", "--items", "2", "--out", out("h_task")},
       {"task.json"}},
      // records: what cannot be true
      {{"report", "--records", records_with("h_sigma.jsonl", ",\"noise_sigma\":-0.5")},
       {"noise_sigma", ">= 0"}},
      {{"report", "--records", records_with("h_policy.jsonl", ",\"policy\":\"abc\"")},
       {"policy", "object or null"}},
      // estimators: CLI words, degenerate samples
      {{"estimate", "ols", "--data", good, "--outcome", "y", "--covariates", "z", "--cov", "cr1"},
       {"--cov cr1", "--cluster"}},
      {{"estimate", "iv", "--data", good, "--outcome", "y", "--treatment", "z", "--instrument", "z"},
       {"--treatment", "'z'", "its own --instrument"}},
      {{"estimate", "did", "--data", write_file("h_did.csv", "u,d,p,y\na,1,2,1\nb,0,0,2\nc,1,1,3\nd,0,1,1\n"),
        "--outcome", "y", "--treatment", "d", "--unit", "u", "--post", "p"},
       {"column 'p'", "0/1 indicator", "got 2"}},
      {{"estimate", "tost", "--data", good, "--outcome", "y", "--treatment", "z", "--margin", "1", "--alpha",
        "0.5"},
       {"--alpha", "(0, 0.5)"}},
      {{"audit", "--alpha", "0.7"}, {"--alpha", "(0, 0.5)"}},
      {{"estimate", "ipw", "--data", ipw_one_control, "--outcome", "y", "--treatment", "z", "--covariates",
        "x", "--trim", "0.49", "--trim-mode", "drop"},
       {"1 control units remain", "at least 2"}},
      {{"estimate", "matching", "--data", dup_covariate, "--outcome", "y", "--treatment", "z", "--covariates",
        "x,x2", "--distance", "mahalanobis"},
       {"collinear", "Mahalanobis"}},
      {{"estimate", "ols", "--data", huge, "--outcome", "y", "--covariates", "x"},
       {"line 2", "column 'x'", "1e+300", "too large"}},
      {{"estimate", "welch", "--data", huge, "--outcome", "x", "--treatment", "z"},
       {"column 'x'", "too large"}},
      {{"estimate", "welch", "--data", quoted, "--outcome", "y", "--treatment", "z"},
       {"line 1", "column 'y'", "string \"0\"", "without quotes"}},
  };
  for (const auto& c : cases) check_bad(c);
  fs::remove(fifo_csv);
}

namespace {

/// A command's help page and the options it must document.
struct help_case {
  std::vector<std::string> command;
  std::vector<std::string> options;
};

const std::vector<help_case>& help_cases() {
  static const std::vector<help_case> cases = {
      {{"estimate"},
       {"--data",
        "--outcome",
        "--treatment",
        "--pair",
        "--outcome-treated",
        "--outcome-control",
        "--cluster",
        "--level",
        "--margin",
        "--lower",
        "--upper",
        "--variance",
        "--alpha",
        "--better",
        "--continuity-correction",
        "--replicates",
        "--ci",
        "--convention",
        "--seed",
        "--threads",
        "--covariates",
        "--cov",
        "--dist",
        "--unit",
        "--time",
        "--post",
        "--instrument",
        "--fe-k",
        "--first",
        "--last",
        "--bin",
        "--estimand",
        "--neighbors",
        "--distance",
        "--ties",
        "--no-ties",
        "--caliper",
        "--exact",
        "--bias-adjust",
        "--var-calc",
        "--sample-variance",
        "--normalization",
        "--trim",
        "--trim-mode",
        "--by",
        "--bins",
        "--covariance",
        "--gamma",
        "--pretty"}},
      {{"estimate", "welch"}, {"--data", "--outcome", "--treatment", "--level", "--pretty"}},
      {{"estimate", "student"}, {"--data", "--outcome", "--treatment", "--level", "--pretty"}},
      {{"estimate", "paired"},
       {"--data", "--outcome", "--treatment", "--pair", "--outcome-treated", "--outcome-control", "--level",
        "--pretty"}},
      {{"estimate", "mcnemar"},
       {"--data", "--outcome", "--treatment", "--pair", "--outcome-treated", "--outcome-control", "--level",
        "--pretty"}},
      {{"estimate", "newcombe"},
       {"--data", "--outcome", "--treatment", "--pair", "--outcome-treated", "--outcome-control", "--level",
        "--continuity-correction", "--pretty"}},
      {{"estimate", "tost"},
       {"--data", "--outcome", "--treatment", "--pair", "--outcome-treated", "--outcome-control", "--margin",
        "--lower", "--upper", "--variance", "--alpha", "--level", "--pretty"}},
      {{"estimate", "noninferiority"},
       {"--data", "--outcome", "--treatment", "--pair", "--outcome-treated", "--outcome-control", "--margin",
        "--better", "--variance", "--alpha", "--level", "--pretty"}},
      {{"estimate", "bootstrap"},
       {"--data", "--outcome", "--treatment", "--pair", "--outcome-treated", "--outcome-control", "--cluster",
        "--level", "--replicates", "--ci", "--convention", "--seed", "--threads", "--pretty"}},
      {{"estimate", "ols"},
       {"--data", "--outcome", "--covariates", "--cov", "--dist", "--cluster", "--level", "--pretty"}},
      {{"estimate", "did"},
       {"--data", "--outcome", "--treatment", "--unit", "--time", "--post", "--cov", "--dist", "--fe-k",
        "--level", "--pretty"}},
      {{"estimate", "event-study"},
       {"--data", "--outcome", "--treatment", "--unit", "--time", "--first", "--last", "--bin", "--cov",
        "--dist", "--fe-k", "--level", "--pretty"}},
      {{"estimate", "iv"},
       {"--data", "--outcome", "--treatment", "--instrument", "--covariates", "--cov", "--dist", "--cluster",
        "--level", "--pretty"}},
      {{"estimate", "matching"},
       {"--data", "--outcome", "--treatment", "--covariates", "--estimand", "--neighbors", "--distance",
        "--ties", "--no-ties", "--caliper", "--exact", "--bias-adjust", "--var-calc", "--sample-variance",
        "--level", "--threads", "--pretty"}},
      {{"estimate", "ipw"},
       {"--data", "--outcome", "--treatment", "--covariates", "--estimand", "--normalization", "--variance",
        "--trim", "--trim-mode", "--level", "--pretty"}},
      {{"estimate", "aipw"},
       {"--data", "--outcome", "--treatment", "--covariates", "--estimand", "--trim", "--trim-mode",
        "--level", "--pretty"}},
      {{"estimate", "cate"},
       {"--data", "--outcome", "--treatment", "--outcome-treated", "--outcome-control", "--by", "--bins",
        "--covariance", "--level", "--pretty"}},
      {{"estimate", "rosenbaum"},
       {"--data", "--outcome", "--treatment", "--pair", "--outcome-treated", "--outcome-control", "--gamma",
        "--alpha", "--exact", "--pretty"}},
      {{"power"},
       {"--n", "--delta", "--power", "--sd", "--alpha", "--one-sided", "--strict", "--ratio", "--p10",
        "--p01", "--exact", "--max-n", "--pretty"}},
      {{"power", "paired-t"},
       {"--n", "--delta", "--power", "--sd", "--alpha", "--one-sided", "--strict", "--pretty"}},
      {{"power", "two-sample-t"},
       {"--n", "--delta", "--power", "--sd", "--alpha", "--one-sided", "--strict", "--ratio", "--pretty"}},
      {{"power", "mcnemar"},
       {"--p10", "--p01", "--n", "--power", "--alpha", "--one-sided", "--exact", "--max-n", "--pretty"}},
      {{"interval"},
       {"--estimate", "--replicates", "--method", "--influence", "--strata", "--estimate-variance",
        "--replicate-variances", "--level", "--convention", "--pretty"}},
      {{"forward"}, {"--model", "--tokens", "--all", "--logits-out", "--threads", "--pretty"}},
      {{"kv"}, {}},
      {{"kv", "inspect"}, {"--key-file", "--require-auth", "--pretty"}},
      {{"kv", "make-example"},
       {"--out", "--key-file", "--tokens", "--dtype", "--seed", "--quantize", "--pretty"}},
      {{"gguf"}, {}},
      {{"gguf", "export"}, {"--model", "--out", "--dtype", "--name", "--pretty"}},
      {{"gguf", "inspect"}, {"--tensors", "--pretty"}},
      {{"organism"}, {}},
      {{"organism", "eval"}, {"--model", "--pairs", "--items", "--seed", "--threads", "--pretty"}},
      {{"organism", "tasks"},
       {"--out", "--model", "--task", "--items", "--seed", "--no-need-fraction", "--stale-fraction",
        "--conflict-fraction", "--pretty"}},
      {{"audit"},
       {"--model",
        "--partner",
        "--tasks",
        "--scoring",
        "--items",
        "--seeds",
        "--arms",
        "--link",
        "--out",
        "--resume",
        "--threads",
        "--seed",
        "--no-need-fraction",
        "--config",
        "--margin",
        "--alpha",
        "--bootstrap",
        "--trials-only",
        "--durable",
        "--quiet",
        "--pretty"}},
      {{"report"},
       {"--records", "--out", "--margin", "--alpha", "--bootstrap", "--seed", "--quiet", "--pretty"}},
  };
  return cases;
}

}  // namespace

TEST_CASE("cli: --help of every command exits 0 and documents every option", "[cli]") {
  for (const auto& c : help_cases()) {
    auto args = c.command;
    args.push_back("--help");
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    INFO("latentaudit " << joined);
    const auto r = run_cli(args);
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.rfind("usage: latentaudit", 0) == 0);
    for (const auto& o : c.options) {
      INFO(o);
      CHECK(r.out.find("  " + o + " ") != std::string::npos);  // listed in the options table
    }
    CHECK(r.out.find("--help") != std::string::npos);
  }
}

TEST_CASE("cli: docs/cli.md documents every command and option", "[cli]") {
  const std::string doc = latentaudit::test::slurp_file(fs::path(LATENTAUDIT_SOURCE_DIR) / "docs" / "cli.md");
  REQUIRE(!doc.empty());
  for (const auto& c : help_cases()) {
    std::string name = "latentaudit";
    for (const auto& w : c.command) name += " " + w;
    INFO(name);
    CHECK(doc.find(name) != std::string::npos);
    for (const auto& o : c.options) {
      INFO(o);
      CHECK(doc.find("`" + o) != std::string::npos);
    }
  }
}

#endif  // LATENTAUDIT_CLI_PATH (without the CLI the file holds no case: none passes unrun)
