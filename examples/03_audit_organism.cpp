// SPDX-License-Identifier: MIT
// The whole audit in one program, as one library call: agents A and B share model organism-a
// (organism-b is the heterogeneous partner); an audit_session (runner/audit_session.hpp) on an
// audit_spec (runner/audit_spec.hpp) builds the design and its identity, leaves out the arms the
// engine cannot run, journals every record as it completes (a resume continues it),
// runs the trials on two workers and writes the report, which answers "does relay pay?" with its
// reasons. Run from the repository root (or pass the models directory as the first argument).
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/report.hpp>
#include <latentaudit/runner.hpp>
#include <latentaudit/trial.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace la = latentaudit;

int main(int argc, char** argv) {
  const std::filesystem::path models = argc > 1 ? argv[1] : "models";
  using engines = la::audit_engines<la::reference_cpu_engine>;
  engines first{la::reference_cpu_engine::load(models / "organism-a"),
                la::reference_cpu_engine::load(models / "organism-b"),
                {}};
  const auto format = la::organism_format::load(models / "organism-a");

  // The audit, declared (runner/audit_spec.hpp): the organism's tasks, 40 documents x 2 queries,
  // the 21 default arms (the 20 that run on one engine, and cross_model with the partner). The
  // session builds the design and its whole identity from it (build_audit_design: the task.json's
  // hash and options, the engine, the models — what a resume must find again).
  la::audit_spec spec;
  spec.organism_dir = models / "organism-a";
  spec.organism_tasks = {};  // the generator's defaults: need and no_need items
  spec.seed = 2026;
  spec.items = 40;
  spec.seeds = 2;
  spec.arms = la::default_arms(/*with_partner=*/true);
  spec.timing_repeats = 0;
  const la::task_file_source tasks(
      la::organism_task_file(format, spec.organism_task_options_of(), spec.items), {},
      {.vocab_size = first.engine.info().vocab_size});

  spec.topology.jobs = 2;  // each worker on its own copy of the engines
  spec.report = {.bootstrap_replicates = 500, .seed = 7};
  la::audit_session_options options;
  options.out = std::filesystem::temp_directory_path() / "latentaudit_example_03";
  std::filesystem::remove_all(options.out);
  const auto out = options.out;
  la::audit_session session(spec, std::move(options));
  const auto result = session.run(tasks, first, [&] { return std::make_unique<engines>(first); });
  std::printf("%llu trials in %.2f s (engine %.2f s)\n", static_cast<unsigned long long>(result.stats.trials),
              result.stats.wall_s, result.stats.engine_s);

  const auto& report = *result.report;
  for (const auto& f : report.findings)
    std::printf("%-36s %-12s %+.3f [%+.3f, %+.3f]\n", f.id.c_str(), la::verdict_name(f.answer), f.estimate,
                f.ci_low, f.ci_high);
  std::printf("decision: %s\nreport: %s\n", la::decision_verdict_name(report.decision.verdict),
              (out / "report.md").c_str());
  std::filesystem::remove_all(out);
  return report.findings.empty() ? 1 : 0;
}
