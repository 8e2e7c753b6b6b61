// SPDX-License-Identifier: MIT
// latentaudit: process-wide start-up of llama.cpp (ggml backends, then llama_backend_init).
//
// Needs llama.h (and ggml-backend.h): like engine/llama_cpp.hpp, it is compiled only where
// llama.cpp is available, and no other header of the library includes it. The project's CMake
// target latentaudit::llama_cpp (cmake/LatentauditLlamaCpp.cmake) provides the include path, the
// libraries and LATENTAUDIT_GGML_BACKEND_DIR.
//
// Why it exists: llama.cpp releases built with GGML_BACKEND_DL (the prebuilt v0.5.0 libraries
// scripts/install-deps.sh installs among them) do not link ggml's CPU backend: it is one of
// `libggml-cpu-<variant>.so` (x64, sse42, haswell, skylakex, icelake, zen4, ...) chosen at run time
// by the processor's features. Until one is loaded, a model load fails with "no backends are
// loaded". llama_cpp_init() loads them from a directory with ggml_backend_load_all_from_path(dir)
// (ggml keeps the highest-scoring variant this processor supports), checks that a CPU device is
// registered, then calls llama_backend_init(). Installs with statically registered backends need
// no loading; the call then finds nothing to load and still succeeds.
//
// Call it once before the first llama_model_load_from_file (the llama.cpp adapter,
// engine/llama_cpp.hpp, calls it itself; so may any user code). Thread-safe and idempotent: the
// first call does the work (std::call_once), later calls return the same result.
#ifndef LATENTAUDIT_ENGINE_LLAMA_CPP_RUNTIME_HPP
#define LATENTAUDIT_ENGINE_LLAMA_CPP_RUNTIME_HPP

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include <ggml-backend.h>
#include <llama.h>

#include "../config.hpp"
#include "../core/error.hpp"

namespace latentaudit {

/// @brief Options of llama_cpp_init (read by the first call only).
struct llama_cpp_runtime_options {
  /// Directory of ggml's dynamically loaded backends (`libggml-cpu-*.so`). Empty: the environment
  /// variable LATENTAUDIT_GGML_BACKEND_DIR if set, else the build's LATENTAUDIT_GGML_BACKEND_DIR
  /// definition (where CMake found llama.cpp), else ggml's own search (the executable's directory,
  /// then the working directory).
  std::string backend_dir;
  /// Forward every llama.cpp and ggml log line to stderr (the CLI's --verbose). Off by default:
  /// llama.cpp logs every model load at length, and the library reports failures by exception,
  /// whose message names the file and the reason llama.cpp gave (its first error line, kept by
  /// the logger: detail::llama_cpp_last_reason). The environment variable LATENTAUDIT_LLAMA_LOG=1
  /// turns it on as well.
  bool log = false;
};

/// @brief What llama_cpp_init did.
struct llama_cpp_runtime_info {
  std::string backend_dir;  ///< directory backends were loaded from ("" = ggml's default search)
  std::string cpu_device;   ///< the CPU device's name and description, e.g. "CPU (Intel Xeon ...)"
  std::string system_info;  ///< llama_print_system_info(): the CPU features the loaded engine uses
};

namespace detail {
// The reason llama.cpp gave for the last failure on this thread: its first error message since
// llama_cpp_reset_reason() (a model load logs the cause first, then "failed to load model").
inline std::string& llama_cpp_reason() {
  thread_local std::string reason;
  return reason;
}

/// @brief Forgets the reason llama.cpp gave last on this thread (call before a load).
inline void llama_cpp_reset_reason() { llama_cpp_reason().clear(); }

/// @brief The first error message llama.cpp logged on this thread since llama_cpp_reset_reason(),
/// one line without its trailing newline ("" when it logged none).
[[nodiscard]] inline std::string llama_cpp_last_reason() { return llama_cpp_reason(); }

/// @brief Whether this thread is creating a context with one unified cache for several sequences
/// (llama_cpp_engine::load sets it around llama_init_from_model).
inline bool& llama_cpp_creating_unified_context() {
  thread_local bool on = false;
  return on;
}

/// @brief Whether `text` is llama.cpp's comparison of n_ctx_seq with n_ctx_train ("n_ctx_seq (4096)
/// > n_ctx_train (512) -- possible training context overflow", or "<" ... "not be utilized"). With
/// a unified cache llama.cpp sets n_ctx_seq to the cells all sequences share, not one sequence's
/// length: the adapter caps each sequence's positions at n_ctx_train (info().max_context) and sizes
/// the cells for several sequences (llama_cpp_context_cells), so the comparison is a false alarm.
[[nodiscard]] inline bool llama_cpp_is_shared_cells_warning(std::string_view text) noexcept {
  return text.find("n_ctx_seq (") != std::string_view::npos &&
         text.find("n_ctx_train (") != std::string_view::npos;
}

// The logger: llama.cpp's and ggml's lines are dropped (`verbose` null) or written to stderr as
// they come (`verbose` non-null); either way the first error message on each thread since
// llama_cpp_reset_reason is kept as the reason a failure names. The n_ctx_seq / n_ctx_train
// comparison of a context the adapter creates is dropped even when verbose (a false alarm there:
// llama_cpp_is_shared_cells_warning).
inline void llama_cpp_warnings_log(ggml_log_level level, const char* text, void* verbose) {
  thread_local std::string pending;    // the error message being assembled from CONT pieces
  thread_local bool in_error = false;  // whether the message in progress is an error
  if (text != nullptr && llama_cpp_creating_unified_context() && llama_cpp_is_shared_cells_warning(text))
    return;
  if (verbose != nullptr && text != nullptr) std::fputs(text, stderr);
  auto flush = [] {
    while (!pending.empty() && (pending.back() == '\n' || pending.back() == ' ')) pending.pop_back();
    for (auto& c : pending)
      if (c == '\n' || c == '\r') c = ' ';
    if (!pending.empty() && llama_cpp_reason().empty()) llama_cpp_reason() = pending.substr(0, 1000);
    pending.clear();
  };
  if (level != GGML_LOG_LEVEL_CONT) {
    flush();
    in_error = level == GGML_LOG_LEVEL_ERROR;
  }
  if (!in_error || text == nullptr) return;
  if (pending.size() < 4096) pending += text;
  if (!pending.empty() && pending.back() == '\n') flush();
}

/// @brief "'<file>': <llama.cpp's reason>" for a failure on `file`, or "'<file>'" when it gave none.
[[nodiscard]] inline std::string llama_cpp_failure_text(const std::string& file) {
  const std::string why = llama_cpp_last_reason();
  return "'" + file + "'" + (why.empty() ? std::string() : ": " + why);
}
}  // namespace detail

/// @brief Loads ggml's backends and initialises llama.cpp, once per process.
/// @throws engine_error if no ggml CPU backend is registered afterwards (naming the directory searched);
///         the same error is rethrown by every later call.
inline const llama_cpp_runtime_info& llama_cpp_init(const llama_cpp_runtime_options& options = {}) {
  static std::once_flag once;
  static llama_cpp_runtime_info info;
  static std::string failure;
  std::call_once(once, [&] {
    const char* env_log = std::getenv("LATENTAUDIT_LLAMA_LOG");
    const bool log = options.log || (env_log != nullptr && env_log[0] != '\0' && env_log[0] != '0');
    // llama_log_set installs the callback for ggml too; its user data says whether to show the lines
    static int show = 1;
    llama_log_set(&detail::llama_cpp_warnings_log, log ? &show : nullptr);
    std::string dir = options.backend_dir;
    if (dir.empty())
      if (const char* env = std::getenv("LATENTAUDIT_GGML_BACKEND_DIR")) dir = env;
#ifdef LATENTAUDIT_GGML_BACKEND_DIR
    if (dir.empty()) dir = LATENTAUDIT_GGML_BACKEND_DIR;
#endif
    ggml_backend_load_all_from_path(dir.empty() ? nullptr : dir.c_str());
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu == nullptr) {
      failure = "llama_cpp_init: no ggml CPU backend was loaded from " +
                (dir.empty() ? std::string("ggml's default search path") : "'" + dir + "'") +
                " (expected libggml-cpu-<variant>.so there; set LATENTAUDIT_GGML_BACKEND_DIR)";
      return;
    }
    llama_backend_init();
    info.backend_dir = dir;
    info.cpu_device =
        std::string(ggml_backend_dev_name(cpu)) + " (" + ggml_backend_dev_description(cpu) + ")";
    info.system_info = llama_print_system_info();
  });
  if (!failure.empty()) LATENTAUDIT_THROW(engine_error(failure));
  return info;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_LLAMA_CPP_RUNTIME_HPP
