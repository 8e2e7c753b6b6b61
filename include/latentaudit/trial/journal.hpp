// SPDX-License-Identifier: MIT
// latentaudit: the record journal — records.jsonl, one record per line, each appended with one
// write and flushed to the kernel as its trial completes, so a crash (even kill -9) loses at most
// the trials in flight. Resuming reads the complete lines, drops a torn last line, and reports the
// keys already done so the driver skips them; a key is never written twice.
#ifndef LATENTAUDIT_TRIAL_JOURNAL_HPP
#define LATENTAUDIT_TRIAL_JOURNAL_HPP

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/json.hpp"
#include "design.hpp"
#include "record.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#define LATENTAUDIT_JOURNAL_POSIX 1
#endif

namespace latentaudit {

/// @brief Reads a records.jsonl file: one JSON record per line; blank lines are skipped.
/// @param torn_tail when non-null, a final line without its newline (a write cut short by a
///        crash) is tolerated: it is not returned and *torn_tail receives its byte offset
///        (else the file size); when null such a line is an error.
/// @throws corrupt_data naming the file and line if a line is not a valid record or a key repeats.
[[nodiscard]] inline std::vector<trial_record> read_records(const std::filesystem::path& path,
                                                            std::uint64_t* torn_tail = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) LATENTAUDIT_THROW(corrupt_data("read_records: cannot open '" + path.string() + "'"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<trial_record> out;
  std::set<trial_key> seen;
  std::size_t pos = 0, line_no = 0;
  if (torn_tail != nullptr) *torn_tail = text.size();
  while (pos < text.size()) {
    ++line_no;
    const auto nl = text.find('\n', pos);
    if (nl == std::string::npos && torn_tail != nullptr) {
      *torn_tail = pos;
      break;
    }
    const std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    json_value j;
    try {
      j = parse_json(line, {.max_depth = 16, .max_bytes = 1 << 20});
    } catch (const error& e) {
      LATENTAUDIT_THROW(corrupt_data("read_records: " + where + ": " + e.what()));
    }
    trial_record r = record_from_json(j, where);
    if (!seen.insert(trial_key{r.item, r.seed, r.arm}).second)
      LATENTAUDIT_THROW(corrupt_data("read_records: " + where + ": key (item " + std::to_string(r.item) +
                                     ", seed " + std::to_string(r.seed) + ", arm " + r.arm +
                                     ") appears twice"));
    out.push_back(std::move(r));
  }
  return out;
}

/// @brief An append-only journal of records in a directory: records.jsonl plus design.json (the
/// design it belongs to; a resume with another design is refused).
class record_journal {
 public:
  /// @brief Opens the journal in `dir` (created if missing) for `design`.
  /// @param resume keep the records already there (after dropping a torn last line) and report
  ///        their keys; else existing records are an error (refuse to overwrite).
  /// @param durable also fsync after every record (survives power loss, not just a crash).
  /// @throws invalid_argument if records exist and !resume, or design.json differs;
  ///         corrupt_data if the existing records are corrupt.
  record_journal(const std::filesystem::path& dir, const trial_design& design, bool resume,
                 bool durable = false)
      : durable_(durable) {
    constexpr std::string_view fn = "record_journal";
    std::filesystem::create_directories(dir);
    path_ = dir / "records.jsonl";
    const auto design_path = dir / "design.json";
    std::string design_text;
    append_json(design_text, design.to_json(), {.indent = 1});
    design_text.push_back('\n');
    const bool exists = std::filesystem::exists(path_) && std::filesystem::file_size(path_) > 0;
    if (exists && !resume)
      detail::throw_invalid(
          fn, "dir",
          "already holds records (" + path_.string() + "): pass resume, or choose an empty directory");
    if (exists) {
      std::ifstream d(design_path, std::ios::binary);
      const std::string old((std::istreambuf_iterator<char>(d)), std::istreambuf_iterator<char>());
      if (old != design_text)
        detail::throw_invalid(fn, "design",
                              "differs from the design of the records in " + dir.string() + " (design.json)");
      std::uint64_t good = 0;
      for (auto& r : read_records(path_, &good)) done_.insert(trial_key{r.item, r.seed, r.arm});
      if (good != std::filesystem::file_size(path_)) {
        torn_ = true;
        std::filesystem::resize_file(path_, good);
      }
    } else {
      const auto tmp = dir / "design.json.tmp";
      {
        std::ofstream d(tmp, std::ios::binary | std::ios::trunc);
        d << design_text;
        if (!d) LATENTAUDIT_THROW(corrupt_data("record_journal: cannot write '" + tmp.string() + "'"));
      }
      std::filesystem::rename(tmp, design_path);
    }
#ifdef LATENTAUDIT_JOURNAL_POSIX
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
#else
    file_ = std::fopen(path_.c_str(), "ab");
    if (file_ == nullptr)
#endif
      LATENTAUDIT_THROW(corrupt_data("record_journal: cannot open '" + path_.string() + "' for appending"));
  }
  record_journal(const record_journal&) = delete;
  record_journal& operator=(const record_journal&) = delete;
  ~record_journal() {
#ifdef LATENTAUDIT_JOURNAL_POSIX
    if (fd_ >= 0) ::close(fd_);
#else
    if (file_ != nullptr) std::fclose(file_);
#endif
  }

  /// @brief Keys journaled so far (those found on open, then every appended record).
  [[nodiscard]] const std::set<trial_key>& done() const noexcept { return done_; }
  /// @brief Whether a torn last line was dropped on open.
  [[nodiscard]] bool dropped_torn_line() const noexcept { return torn_; }
  /// @brief The records file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// @brief Appends one record as one line and flushes it to the kernel (and to disk if durable).
  /// @throws invalid_argument if its key is already journaled; corrupt_data if the write fails.
  void append(const trial_record& r) {
    trial_key k{r.item, r.seed, r.arm};
    if (done_.count(k) != 0)
      detail::throw_invalid("record_journal::append", "record",
                            "key (item " + std::to_string(r.item) + ", seed " + std::to_string(r.seed) +
                                ", arm " + r.arm + ") is already journaled");
    line_ = record_to_line(r);
    line_.push_back('\n');
#ifdef LATENTAUDIT_JOURNAL_POSIX
    // One write(2) per record on an O_APPEND descriptor: the line reaches the kernel (and survives
    // the process) as soon as the call returns, with no user-space buffer in between.
    const char* p = line_.data();
    std::size_t left = line_.size();
    while (left > 0) {
      const auto n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        LATENTAUDIT_THROW(corrupt_data("record_journal::append: write to '" + path_.string() + "' failed"));
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    if (durable_ && ::fsync(fd_) != 0)
      LATENTAUDIT_THROW(corrupt_data("record_journal::append: fsync of '" + path_.string() + "' failed"));
#else
    if (std::fwrite(line_.data(), 1, line_.size(), file_) != line_.size() || std::fflush(file_) != 0)
      LATENTAUDIT_THROW(corrupt_data("record_journal::append: write to '" + path_.string() + "' failed"));
#endif
    done_.insert(std::move(k));
  }

 private:
  std::filesystem::path path_;
#ifdef LATENTAUDIT_JOURNAL_POSIX
  int fd_ = -1;
#else
  std::FILE* file_ = nullptr;
#endif
  std::set<trial_key> done_;
  std::string line_;
  bool durable_ = false;
  bool torn_ = false;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_JOURNAL_HPP
