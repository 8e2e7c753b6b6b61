// SPDX-License-Identifier: MIT
// The CPU reference engine against an independent PyTorch forward pass
// (tools/organism/reference.py, via tests/golden/reference_cpu/generate.py): two small random
// HF-format checkpoints (f32 with GQA and an untied head; bf16 with tied embeddings and θ = 5e5),
// every position's logits of three sequences, max |Δ| <= 1e-4.
#include <latentaudit/engine/reference_cpu.hpp>

#include <fstream>
#include <sstream>

#include "support/catch.hpp"
#include "support/golden.hpp"

using namespace latentaudit;

TEST_CASE("logits match the PyTorch reference to 1e-4", "[engine][reference_cpu][golden]") {
  for (const std::string model : {"tiny_f32", "tiny_bf16_tied"}) {
    const auto dir = test::golden_path("reference_cpu/" + model);
    auto b = reference_cpu_engine::load(dir);
    std::ifstream tok(dir + "/tokens.txt"), golden(dir + "/logits.csv");
    std::vector<std::vector<token_id>> seqs;
    for (std::string line; std::getline(tok, line);) {
      std::vector<token_id> t;
      std::stringstream ss(line);
      for (std::string x; std::getline(ss, x, ',');) t.push_back(std::stoi(x));
      seqs.push_back(t);
    }
    std::vector<std::vector<float>> logits(seqs.size());
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      const auto s = b.open_seq();
      logits[i] = b.prefill(s, seqs[i], 0, {.all_logits = true}).logits;
      b.close_seq(s);
    }
    const std::size_t V = static_cast<std::size_t>(b.info().vocab_size);
    double worst = 0;
    std::size_t rows = 0;
    for (std::string line; std::getline(golden, line); ++rows) {
      const auto cells = test::split_csv_line(line);
      REQUIRE(cells.size() == V + 2);
      const auto s = static_cast<std::size_t>(std::stoi(cells[0])),
                 p = static_cast<std::size_t>(std::stoi(cells[1]));
      for (std::size_t v = 0; v < V; ++v)
        worst = std::max(
            worst, std::fabs(static_cast<double>(logits[s][p * V + v]) - test::parse_number(cells[v + 2])));
    }
    INFO(model << ": max |delta logit| = " << worst << " over " << rows << " positions");
    CHECK(rows == 16);
    CHECK(worst <= 1e-4);
  }
}
