// SPDX-License-Identifier: MIT
// The whole audit in one program: agents A and B share model organism-a (organism-b is the
// heterogeneous partner); the driver runs every arm on every (item, seed), the journal keeps
// each record as it completes, and the report answers "does relay pay?" with its reasons.
// Run from the repository root (or pass the models directory as the first argument).
#include <latentaudit/backend/reference_cpu.hpp>
#include <latentaudit/report.hpp>
#include <latentaudit/trial.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

namespace la = latentaudit;

int main(int argc, char** argv) {
  const std::filesystem::path models = argc > 1 ? argv[1] : "models";
  auto engine = la::reference_cpu_backend::load(models / "organism-a");
  auto partner = la::reference_cpu_backend::load(models / "organism-b");
  const auto format = la::organism_format::load(models / "organism-a");

  // the 21 default arms: the 20 that run on one engine, and cross_model with the partner
  la::trial_design design{
      .seed = 2026, .items = 40, .seeds = 2, .arms = la::default_arms(/*with_partner=*/true)};
  const la::organism_task_options tasks{.seed = design.seed};
  const auto out = std::filesystem::temp_directory_path() / "latentaudit_example_03";
  std::filesystem::remove_all(out);

  la::record_journal journal(out, design, /*resume=*/false);
  la::trial_driver<la::reference_cpu_backend> driver(engine, &partner);
  const auto stats = driver.run(
      design,
      [&](std::uint64_t item, std::uint64_t seed) {
        return la::make_organism_task(format, tasks, item, seed);
      },
      [&](const la::trial_record& r) { journal.append(r); });
  std::printf("%llu trials in %.2f s (backend %.2f s)\n", static_cast<unsigned long long>(stats.trials),
              stats.wall_s, stats.backend_s);

  journal.close();  // cuts the zero padding after the last record
  const auto records = la::read_records(journal.path());
  const auto report = la::run_audit_report(records, {.bootstrap_replicates = 500, .seed = 7}, out);
  for (const auto& f : report.findings)
    std::printf("%-36s %-12s %+.3f [%+.3f, %+.3f]\n", f.id.c_str(), la::verdict_name(f.answer), f.estimate,
                f.ci_low, f.ci_high);
  std::printf("decision: %s\nreport: %s\n", report.decision.verdict.c_str(), (out / "report.md").c_str());
  std::filesystem::remove_all(out);
  return report.findings.empty() ? 1 : 0;
}
