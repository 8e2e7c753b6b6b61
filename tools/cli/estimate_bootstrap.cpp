// SPDX-License-Identifier: MIT
// latentaudit CLI: `estimate bootstrap` (estimators/bootstrap.hpp) — two-sample stratified by
// default, paired with --pair / the wide layout, cluster with --cluster.
#include <latentaudit/estimators/bootstrap.hpp>

#include <unordered_map>

#include "bootstrap_common.hpp"
#include "cli.hpp"
#include "data_input.hpp"

namespace latentaudit::cli {
namespace {

// Cluster labels 0..G-1 from text ids (first appearance over treated then control).
struct cluster_labels {
  std::vector<std::size_t> treated, control;
  std::size_t count = 0;
};

cluster_labels label_clusters(const two_arms& a) {
  cluster_labels c;
  std::unordered_map<std::string, std::size_t> ids;
  auto label = [&](const std::string& id) { return ids.emplace(id, ids.size()).first->second; };
  for (const auto& id : a.treated_clusters) c.treated.push_back(label(id));
  for (const auto& id : a.control_clusters) c.control.push_back(label(id));
  c.count = ids.size();
  return c;
}

json_value run_bootstrap(const arguments& args) {
  const std::string ci = args.choice("--ci", "bca", {"percentile", "basic", "normal", "bca", "studentized"});
  const std::string convention = args.choice("--convention", "boot", {"boot", "scipy"});
  bootstrap_options o;
  o.level = args.level();
  o.replicates = args.integer("--replicates", 9999, 2, 100000000);
  o.method = ci_method_of(ci);
  o.convention = convention_of(args);
  o.seed = args.integer("--seed", 0, 0, ~std::uint64_t{0});
  o.threads = static_cast<unsigned>(args.integer("--threads", 0, 0, 1024));
  json_value j;
  if (args.has("--cluster")) {
    if (wants_pairs(args))
      throw usage_error(args.command() +
                        ": --cluster cannot be combined with a paired design (--pair, "
                        "--outcome-treated/--outcome-control)");
    if (o.method == bootstrap_ci_method::studentized) {
      throw usage_error(args.command() +
                        ": --ci studentized is not available with --cluster (no per-resample cluster "
                        "variance); use bca, percentile, basic or normal");
    }
    const auto a = load_two_arms(args, false, true);
    const auto labels = label_clusters(a);
    o.estimand = "difference_in_means";
    const auto r = bootstrap_clustered(
        a.treated, labels.treated, a.control, labels.control,
        [](const resample_view& t, const resample_view& c) { return t.mean() - c.mean(); }, o);
    j = bootstrap_to_json(r, convention);
    j.set("design", "cluster");
    j.set("n_clusters", labels.count);
  } else if (wants_pairs(args)) {
    const auto p = load_pairs(args, false);
    const auto r = bootstrap_paired_mean(p.treated, p.control, o);
    j = bootstrap_to_json(r, convention);
    set_pairs(j, p.treated.size());
    j.set("design", "paired");
  } else {
    const auto a = load_two_arms(args, false, false);
    const auto r = bootstrap_mean_difference(a.treated, a.control, o);
    j = bootstrap_to_json(r, convention);
    j.set("design", "two_sample");
  }
  j.set("replicates", o.replicates);
  j.set("seed", json_value(std::to_string(o.seed)));
  return j;
}

[[maybe_unused]] const bool reg_bootstrap = register_estimate_method({
    "bootstrap",
    "bootstrap CI of the mean difference (stratified two-sample, paired, or cluster)",
    "Nonparametric bootstrap of the difference in means treated - control. Resampling: by arm\n"
    "(stratified two-sample, the default); pairs with --pair or the wide layout; whole clusters\n"
    "with --cluster COL (each cluster keeps its rows of both arms). Intervals (--ci): percentile,\n"
    "basic, normal, bca (default), studentized (not with --cluster), under R boot.ci's or\n"
    "scipy.stats.bootstrap's rules (--convention). std_error = sd of the replicates; statistic,\n"
    "p_value and df are null. Replicate r uses the random stream (seed, r), so results are\n"
    "identical for any --threads. Extra fields: convention, replicates, replicates_used,\n"
    "bias_correction (BCa z0), acceleration (BCa a), alpha_low/alpha_high (quantile levels),\n"
    "seed (as a string: it may exceed 2^53), n_clusters (cluster design).\n",
    {common_option("--data"), common_option("--outcome"), common_option("--treatment"),
     common_option("--pair"), common_option("--outcome-treated"), common_option("--outcome-control"),
     common_option("--cluster"), common_option("--level"), common_option("--replicates"),
     common_option("--ci"), common_option("--convention"), common_option("--seed"),
     common_option("--threads")},
    run_bootstrap,
});

}  // namespace
}  // namespace latentaudit::cli
