// SPDX-License-Identifier: MIT
// `--engine reference|llama.cpp` for the CLI's forward, organism eval and audit: which inference
// engine runs the model. The llama.cpp engine (engine/llama_cpp.hpp) is compiled in only where
// CMake found llama.cpp (LATENTAUDIT_HAS_LLAMA_CPP); a CLI built without it says so and exits 2.
#ifndef LATENTAUDIT_CLI_ENGINE_SELECT_HPP
#define LATENTAUDIT_CLI_ENGINE_SELECT_HPP

#include <filesystem>
#include <string>
#include <string_view>

#include "cli.hpp"
#include "gguf_check.hpp"

#if defined(LATENTAUDIT_HAS_LLAMA_CPP) && LATENTAUDIT_HAS_LLAMA_CPP
#include <latentaudit/engine/llama_cpp.hpp>
#include <latentaudit/engine/llama_cpp_batch.hpp>
#define LATENTAUDIT_CLI_LLAMA_CPP 1
#else
#define LATENTAUDIT_CLI_LLAMA_CPP 0
#endif

namespace latentaudit::cli {

/// @brief The engine a command runs on.
enum class engine_kind { reference, llama_cpp };

/// @brief The --engine option's spec (shared help text).
inline option_spec engine_option() {
  return {"--engine", "NAME",
          "reference (default: the CPU reference engine on an HF directory, or on a Llama GGUF file of f32, "
          "f16 or bf16 tensors) or llama.cpp (a GGUF file; exported by 'latentaudit gguf export')"};
}

/// @brief The --verbose option's spec: llama.cpp's own log lines on stderr.
inline option_spec verbose_option() {
  return {"--verbose", "",
          "show llama.cpp's own log lines on stderr (default: hidden; a load failure's one error line "
          "still names the file and llama.cpp's reason)"};
}

/// @brief Whether this CLI was built with the llama.cpp engine.
constexpr bool have_llama_cpp() noexcept { return LATENTAUDIT_CLI_LLAMA_CPP != 0; }

/// @brief Reads --engine (and --verbose, which llama.cpp's logger reads before its first load).
/// @throws usage_error on another name, or llama.cpp in a CLI built without it.
inline engine_kind parse_engine(const arguments& args, std::string_view command) {
#if LATENTAUDIT_CLI_LLAMA_CPP
  if (args.has("--verbose")) (void)llama_cpp_init({.log = true});
#endif
  const std::string e = args.get("--engine").value_or("reference");
  if (e == "reference") return engine_kind::reference;
  if (e == "llama.cpp" || e == "llama_cpp") {
    if (!have_llama_cpp())
      throw usage_error(std::string(command) +
                        ": option --engine llama.cpp: this latentaudit was built without llama.cpp (run "
                        "scripts/install-deps.sh, then configure with -DLATENTAUDIT_LLAMA_CPP=ON)");
    return engine_kind::llama_cpp;
  }
  throw usage_error(std::string(command) + ": option --engine must be reference or llama.cpp, got '" + e +
                    "'");
}

/// @brief Checks that a llama.cpp --model names a GGUF file that llama.cpp can load without
/// aborting (gguf_check.hpp: the bounded reader, then the keys llama.cpp trusts).
/// @throws usage_error otherwise, naming the option, the file and the key.
inline void require_gguf(const std::filesystem::path& p, std::string_view command, std::string_view option) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec))
    throw usage_error(std::string(command) + ": option " + std::string(option) +
                      " must name a GGUF file for --engine llama.cpp, got '" + p.string() + "'");
  check_gguf_for_llama(p, command, option, false);
}

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_CLI_ENGINE_SELECT_HPP
