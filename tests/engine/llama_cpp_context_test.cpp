// SPDX-License-Identifier: MIT
// The llama.cpp context sized from the model (issue 50 item 4, engine/llama_cpp.hpp
// llama_cpp_context_cells): positions capped at the model's n_ctx_train, cells for several
// sequences of that length, and no "n_ctx_seq > n_ctx_train" warning from a context the adapter
// creates (with a unified cache llama.cpp compares the shared cells with n_ctx_train). The load is
// checked on stories260K (its GGUF's llama.context_length, n_ctx_train, is 2048); [real_models]
// skips by name without the models folder.
#include <latentaudit/engine/llama_cpp.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "support/captured_stderr.hpp"
#include "support/catch.hpp"
#include "support/real_models.hpp"

using namespace latentaudit;

namespace {

using test::captured_stderr;

}  // namespace

TEST_CASE("llama.cpp context: cells sized from the model's n_ctx_train", "[engine][llama_cpp][context]") {
  // Every sequence at the trained length, at most max(n_ctx_train, 4096) per 4 usable sequences.
  CHECK(llama_cpp_context_cells(512, 8) == 4096);     // TinyStories-656K's export, 8 sequences: as before
  CHECK(llama_cpp_context_cells(512, 2) == 1024);     // one sequence and the scratch
  CHECK(llama_cpp_context_cells(64, 8) == 512);       // a small organism: less memory than 4096
  CHECK(llama_cpp_context_cells(4096, 8) == 4096);    // a 4096-position model: as before
  CHECK(llama_cpp_context_cells(4096, 9) == 8192);    // the batched audit, 2 workers: 4096 each
  CHECK(llama_cpp_context_cells(32768, 8) == 32768);  // never less than one trained-length sequence
  CHECK(llama_cpp_context_cells(0, 8) == 4096);       // no n_ctx_train in the file: 4096
}

TEST_CASE("llama.cpp context: the n_ctx_seq comparison is dropped only for the adapter's own contexts",
          "[engine][llama_cpp][context]") {
  int verbose = 1;
  const std::string line =
      "llama_context: n_ctx_seq (4096) > n_ctx_train (512) -- possible training context overflow\n";
  const auto shown = captured_stderr([&] {
    detail::llama_cpp_warnings_log(GGML_LOG_LEVEL_WARN, line.c_str(), &verbose);  // another context's
    detail::llama_cpp_creating_unified_context() = true;
    detail::llama_cpp_warnings_log(GGML_LOG_LEVEL_WARN, line.c_str(), &verbose);
    detail::llama_cpp_warnings_log(GGML_LOG_LEVEL_INFO, "llama_context: n_ctx = 4096\n", &verbose);
    detail::llama_cpp_creating_unified_context() = false;
  });
  CHECK(shown == line + "llama_context: n_ctx = 4096\n");
}

TEST_CASE("llama.cpp context: stories260K loads without the n_ctx_train warning, positions capped at 2048",
          "[engine][llama_cpp][real_models][context]") {
  LATENTAUDIT_REAL_MODELS_OR_SKIP(m);
  (void)llama_cpp_init();
  static int verbose = 1;  // every llama.cpp line of the load to stderr (as --verbose), captured
  llama_log_set(&detail::llama_cpp_warnings_log, &verbose);
  std::int64_t max_context = 0;
  std::uint32_t cells = 0;
  const auto log = captured_stderr([&] {
    auto e = llama_cpp_engine::load(m.stories260k());
    max_context = e.info().max_context;
    cells = llama_n_ctx(e.context());
  });
  llama_log_set(&detail::llama_cpp_warnings_log, nullptr);  // back to the default: lines dropped
  INFO(log);
  CHECK(log.find("n_ctx_train") != std::string::npos);  // the load's lines (print_info: n_ctx_train = 2048)
  CHECK(log.find("n_ctx_seq (") == std::string::npos);  // no comparison of the shared cells with it
  CHECK(max_context == 2048);                           // llama.context_length of the GGUF
  CHECK(cells == 4096);
}
