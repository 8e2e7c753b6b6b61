// SPDX-License-Identifier: MIT
// The conformance kit on the CPU reference engine (tiny random checkpoints: f32 and bf16
// storage, tied and untied heads, 1 and 4 threads), and an engine that fails on purpose.
#include <latentaudit/engine/conformance.hpp>
#include <latentaudit/engine/reference_cpu.hpp>

#include "support/catch.hpp"
#include "support/tiny_llama.hpp"

using namespace latentaudit;

namespace {
const conformance_options kit{
    .a = {3, 17, 5, 9, 22, 1, 30, 8}, .b = {12, 4, 27, 6}, .delta = 7, .tolerance = 1e-4};
void require_all_pass(const std::vector<conformance_result>& rs) {
  CHECK(rs.size() == 7);
  for (const auto& r : rs) {
    INFO(r.check << ": " << r.detail << " (max |delta| " << r.max_abs_diff << ")");
    CHECK(r.passed);
  }
}
}  // namespace

TEST_CASE("the CPU reference engine passes the conformance kit", "[engine][conformance]") {
  for (bool tied : {false, true})
    for (auto storage : {dtype::f32, dtype::bf16})
      for (unsigned threads : {1u, 4u}) {
        const auto dir =
            test::write_tiny_llama("kit_" + std::to_string(tied) + std::string(dtype_name(storage)),
                                   {.tied = tied, .storage = storage, .seed = 3});
        auto b = reference_cpu_engine::load(dir, threads);
        require_all_pass(run_conformance(b, kit));
      }
}

namespace {
// An engine that forgets to re-rotate keys when shifting: the kit must catch it.
class lazy_shift_engine : public reference_cpu_engine {
 public:
  using reference_cpu_engine::reference_cpu_engine;
  void shift(seq_id s, position_t p0, position_t p1, position_t delta) {
    // export, relabel positions without rotating, and re-import: the LatentMAS-style bug
    auto blk = export_kv(s, {0, n_tokens(s)}, {0, info().fingerprint.n_layers});
    for (auto& p : blk.positions())
      if (p >= p0 && p < p1) p += delta;
    erase(s, 0, 1 << 30);
    import_kv(s, blk, {});
  }
};
static_assert(inference_engine<lazy_shift_engine>);
}  // namespace

TEST_CASE("the conformance kit catches an engine that shifts without re-rotating", "[engine][conformance]") {
  const auto dir = test::write_tiny_llama("lazy");
  const auto st = safetensors_file::open(dir / "model.safetensors");
  std::ifstream in(dir / "config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  lazy_shift_engine b(llama_config::from_json(parse_json(ss.str())), st);
  const auto rs = run_conformance(b, kit);
  bool shift_failed = false;
  for (const auto& r : rs)
    if (r.check == "shift") shift_failed = !r.passed && r.max_abs_diff > 1e-3;
  CHECK(shift_failed);
}
