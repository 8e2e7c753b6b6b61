// SPDX-License-Identifier: MIT
// latentaudit (public API): file-type checks made before a file is opened, so a FIFO without a writer never
// blocks a reader, a directory is never "a file of 9223372036854775807 bytes" and /dev/zero never
// streams forever; and the output-directory check every writer uses. Every failure names the path.
#ifndef LATENTAUDIT_CORE_FILE_CHECK_HPP
#define LATENTAUDIT_CORE_FILE_CHECK_HPP

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "../config.hpp"
#include "error.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/stat.h>
#include <unistd.h>
#define LATENTAUDIT_FILE_CHECK_POSIX 1
#endif

namespace latentaudit {

/// @brief What a path is, in words ("a directory", "a FIFO", "a character device", ...).
[[nodiscard]] inline std::string file_kind_text(const std::filesystem::file_status& s) {
  using std::filesystem::file_type;
  switch (s.type()) {
    case file_type::regular:
      return "a regular file";
    case file_type::directory:
      return "a directory";
    case file_type::fifo:
      return "a FIFO";
    case file_type::character:
      return "a character device";
    case file_type::block:
      return "a block device";
    case file_type::socket:
      return "a socket";
    case file_type::symlink:
      return "a symbolic link";
    default:
      return "not a regular file";
  }
}

/// @brief Checks, without opening it, that `path` names a regular file (symbolic links followed)
/// and returns its size in bytes; `what` names the file's role in messages (e.g. "--records",
/// "config.json").
/// @throws invalid_argument "<what> '<path>': no such file" if it does not exist (or cannot be
///         examined), and "<what> '<path>' is a directory (a FIFO, a character device, ...), not a
///         regular file" for any other type.
inline std::uint64_t require_regular_file(const std::filesystem::path& path, std::string_view what) {
  const std::string w = std::string(what) + " '" + path.string() + "'";
  if (path.empty()) LATENTAUDIT_THROW(invalid_argument(std::string(what) + ": empty path"));
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found) {
    const std::string why = ec ? ec.message() : "no such file";
    LATENTAUDIT_THROW(invalid_argument("cannot open " + w + ": " + why));
  }
  if (st.type() != std::filesystem::file_type::regular)
    LATENTAUDIT_THROW(invalid_argument(w + " is " + file_kind_text(st) + ", not a regular file"));
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) LATENTAUDIT_THROW(invalid_argument("cannot read " + w + ": " + ec.message()));
  return static_cast<std::uint64_t>(size);
}

/// @brief Makes `dir` a writable directory (created with its parents if missing): refuses an
/// empty path, an existing non-directory (a file, /dev/null), a path that cannot be created (under
/// /proc, a read-only file system) and a directory this process cannot write into. `what` names
/// the option in messages (e.g. "--out").
/// @throws invalid_argument naming `what`, the path and the reason.
inline void require_output_directory(const std::filesystem::path& dir, std::string_view what) {
  const std::string w = std::string(what) + " '" + dir.string() + "'";
  if (dir.empty()) LATENTAUDIT_THROW(invalid_argument(std::string(what) + ": empty path"));
  std::error_code ec;
  const auto st = std::filesystem::status(dir, ec);
  if (st.type() != std::filesystem::file_type::not_found && !ec &&
      st.type() != std::filesystem::file_type::directory)
    LATENTAUDIT_THROW(invalid_argument(w + " is " + file_kind_text(st) + ", not a directory"));
  ec.clear();
  std::filesystem::create_directories(dir, ec);
  if (ec) LATENTAUDIT_THROW(invalid_argument("cannot create " + w + ": " + ec.message()));
  if (!std::filesystem::is_directory(dir, ec)) LATENTAUDIT_THROW(invalid_argument(w + " is not a directory"));
#ifdef LATENTAUDIT_FILE_CHECK_POSIX
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    LATENTAUDIT_THROW(invalid_argument("cannot write into " + w + ": " + std::strerror(errno)));
#endif
}

/// @brief Checks that `path` may be replaced by an output file: absent, or a regular file (or a
/// symbolic link to one). A directory, a device (/dev/null), a FIFO or a socket is refused, never
/// renamed over or truncated. `what` names the option in messages (e.g. "--out").
/// @throws invalid_argument "<what> '<path>' is a character device, not a regular file (...)".
inline void require_output_file(const std::filesystem::path& path, std::string_view what) {
  const std::string w = std::string(what) + " '" + path.string() + "'";
  if (path.empty()) LATENTAUDIT_THROW(invalid_argument(std::string(what) + ": empty path"));
  std::error_code ec;
  auto st = std::filesystem::symlink_status(path, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found) return;
  if (st.type() == std::filesystem::file_type::symlink) {
    st = std::filesystem::status(path, ec);
    if (ec || st.type() == std::filesystem::file_type::not_found) return;
  }
  if (st.type() != std::filesystem::file_type::regular)
    LATENTAUDIT_THROW(invalid_argument(w + " is " + file_kind_text(st) +
                                       ", not a regular file (an output replaces regular files only)"));
}

/// @brief The temporary an output is written to before it is renamed over `path` (same
/// directory, so the rename is atomic; the pid keeps concurrent writers apart).
[[nodiscard]] inline std::filesystem::path output_temp_path(const std::filesystem::path& path) {
  std::filesystem::path tmp = path;
#ifdef LATENTAUDIT_FILE_CHECK_POSIX
  tmp += ".tmp." + std::to_string(::getpid());
#else
  tmp += ".tmp";
#endif
  return tmp;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_FILE_CHECK_HPP
