// SPDX-License-Identifier: MIT
// Test support: finding the real pretrained models (docs/real-models.md). They live outside the
// repository (never committed): in the folder the environment variable LATENTAUDIT_MODELS names,
// else `../shared/models` from the project's root (where CI has them). Every file's sha256 is
// checked against the sums of the folder's README (below) once per process.
//
// A test that needs them starts with LATENTAUDIT_REAL_MODELS_OR_SKIP(m):
//  - the folder absent (a user's fresh clone): the test prints the fixed line
//    "SKIPPED(real-models): ..." (a Catch2 WARN, always printed, also to stderr) and returns: a
//    named skip that `grep -c 'SKIPPED(real-models)'` counts, and that a ctest
//    SKIP_REGULAR_EXPRESSION on that text would count as skipped;
//  - the folder present but a file missing or of another sha256: the test FAILS, naming the file.
// LATENTAUDIT_MODELS=/nonexistent therefore runs the skip path on a machine that has the models.
#ifndef LATENTAUDIT_TESTS_SUPPORT_REAL_MODELS_HPP
#define LATENTAUDIT_TESTS_SUPPORT_REAL_MODELS_HPP

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latentaudit/core/hash.hpp>
#include <string>
#include <vector>

#include "catch.hpp"

namespace latentaudit::test {

/// The fixed text of a skipped real-model test (counted by grep, or by ctest's SKIP_REGULAR_EXPRESSION).
inline constexpr const char* real_models_skip_tag = "SKIPPED(real-models)";

/// One file of the real models and its sha256 (/work/shared/models/README.md).
struct real_model_file {
  const char* path;    ///< relative to the models folder
  const char* sha256;  ///< lower-case hex
};

/// The files the tests use, with the sums the models folder's README lists.
inline const std::vector<real_model_file>& real_model_files() {
  static const std::vector<real_model_file> files = {
      {"stories260K/stories260K.gguf", "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"},
      {"tinystories-656k/model.safetensors",
       "187d0d5e8360d9625e40e0b35ec57d1ef0eea1a60ddcf09412246bed3484852f"},
      {"tinystories-656k/config.json", "5d34a34a12acbd8b0d4d8b400cb4ad72e6cdd49673d4b27b5b4c4e93030bc7ee"},
      {"tinystories-656k/tokenizer.json", "9a7917d490ac034a4e69eb081096226971887e9e66b0969355421613f62b12e7"},
      {"tinystories-656k/tokenizer_config.json",
       "b41898ab69aa46f6bd13416e9662542e056d0727d565bac0e6552efc08438809"},
      {"tinystories-656k/generation_config.json",
       "e7837bdba54a36255e4328e034076648ed8a8ca617d7a979a29158191cce6318"},
      {"tinystories-656k/special_tokens_map.json",
       "e530a890d28bf0c1e0dfc61b480231d59501cbd3d177ec82bf74547110239175"},
  };
  return files;
}

/// Where the real models are, and whether they are usable.
struct real_models {
  std::filesystem::path root;  ///< the folder looked in
  bool present = false;        ///< the folder exists
  std::string problem;         ///< empty when every file is there with its sha256; else what is wrong

  /// stories260K's GGUF file.
  [[nodiscard]] std::filesystem::path stories260k() const {
    return root / "stories260K" / "stories260K.gguf";
  }
  /// TinyStories-656K's HF folder.
  [[nodiscard]] std::filesystem::path tinystories656k() const { return root / "tinystories-656k"; }
};

/// sha256 of a file as lower-case hex (read 1 MiB at a time); empty if it cannot be read.
inline std::string file_sha256(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  sha256 h;
  std::vector<char> buf(std::size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n > 0) h.update(std::as_bytes(std::span(buf.data(), n)));
  }
  const auto d = h.finish();
  return to_hex(std::as_bytes(std::span(d)));
}

/// Checks the models folder `root`: present or not, and what is missing or altered.
inline real_models inspect_real_models(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  real_models m;
  m.root = root;
  std::error_code ec;
  m.present = fs::is_directory(m.root, ec);
  if (!m.present) return m;
  for (const auto& f : real_model_files()) {
    const auto p = m.root / f.path;
    if (!fs::is_regular_file(p, ec)) {
      m.problem += "missing '" + p.string() + "'; ";
      continue;
    }
    const auto sum = file_sha256(p);
    if (sum != f.sha256)
      m.problem += "'" + p.string() + "' has sha256 " + sum + ", expected " + f.sha256 + "; ";
  }
  return m;
}

/// The models folder: LATENTAUDIT_MODELS when set and non-empty, else
/// LATENTAUDIT_SOURCE_DIR/../shared/models.
inline std::filesystem::path real_models_root() {
  const char* env = std::getenv("LATENTAUDIT_MODELS");
  if (env != nullptr && *env != '\0') return env;
  return std::filesystem::path(LATENTAUDIT_SOURCE_DIR) / ".." / "shared" / "models";
}

/// Finds and checks the real models, once per process.
inline const real_models& find_real_models() {
  static const real_models found = inspect_real_models(real_models_root());
  return found;
}

}  // namespace latentaudit::test

/// Binds `m` to the real models, or skips the test (a named, counted skip) when their folder is
/// absent; fails it when the folder is there but a file is missing or differs.
#define LATENTAUDIT_REAL_MODELS_OR_SKIP(m)                                                         \
  const auto& m = ::latentaudit::test::find_real_models();                                         \
  if (!m.present) {                                                                                \
    WARN(::latentaudit::test::real_models_skip_tag << ": no models folder at '" << m.root.string() \
                                                   << "' (set LATENTAUDIT_MODELS)");               \
    return;                                                                                        \
  }                                                                                                \
  INFO("real models at " << m.root.string() << ": " << m.problem);                                 \
  REQUIRE(m.problem.empty())

#endif
