// SPDX-License-Identifier: MIT
// latentaudit: the record journal — records.jsonl, one record per line, each in the kernel's page
// cache as its trial completes, so a crash (even kill -9) loses at most the trials in flight.
// Resuming reads the complete lines, drops a torn last line (and the zero padding a crash leaves
// behind, see record_journal), and reports the keys already done so the driver skips them; a key
// is never written twice.
#ifndef LATENTAUDIT_TRIAL_JOURNAL_HPP
#define LATENTAUDIT_TRIAL_JOURNAL_HPP

#include <algorithm>
#include <cstdio>
#include <cstring>
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
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#define LATENTAUDIT_JOURNAL_POSIX 1
#endif

namespace latentaudit {

/// @brief Reads a records.jsonl file: one JSON record per line; blank lines are skipped, and so
/// are zero bytes at the end of the file (the padding an open or crashed record_journal leaves).
/// @param torn_tail when non-null, a final line without its newline (a write cut short by a
///        crash) is tolerated: it is not returned and *torn_tail receives its byte offset
///        (else the offset where the records and the padding end); when null such a line is an
///        error.
/// @throws corrupt_data naming the file and line if a line is not a valid record or a key repeats.
[[nodiscard]] inline std::vector<trial_record> read_records(const std::filesystem::path& path,
                                                            std::uint64_t* torn_tail = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) LATENTAUDIT_THROW(corrupt_data("read_records: cannot open '" + path.string() + "'"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.resize(static_cast<std::size_t>(
      std::find_if(text.rbegin(), text.rend(), [](char c) { return c != '\0'; }).base() - text.begin()));
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
///
/// On POSIX systems records are copied into a shared memory mapping of the file: each line is in
/// the kernel's page cache (and survives kill -9) as soon as append() returns, without a system
/// call per record. The file grows ahead of the data in blocks reserved with posix_fallocate (so
/// a full disk is an error from append(), never a SIGBUS later), and the bytes past the last
/// record are zero until close() cuts them off; read_records skips that padding, and a resume
/// removes it. Where the file system cannot reserve blocks the journal falls back to one
/// pwrite(2) per record. Elsewhere it appends with fwrite + fflush.
class record_journal {
 public:
  /// @brief Opens the journal in `dir` (created if missing) for `design`.
  /// @param resume keep the records already there (after dropping a torn last line) and report
  ///        their keys; else existing records are an error (refuse to overwrite).
  /// @param durable also flush every record to the disk (msync / fdatasync: survives power loss,
  ///        not just a crash).
  /// @throws invalid_argument if records exist and !resume, or design.json differs;
  ///         corrupt_data if the existing records are corrupt or the file cannot be opened.
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
    std::uint64_t good = 0;  // bytes of complete records already in the file
    const bool exists = std::filesystem::exists(path_) && std::filesystem::file_size(path_) > 0;
    if (exists) data_end_ = nonzero_end(path_);  // a file of zero padding only holds no records
    const bool holds = data_end_ > 0;
    if (holds && !resume)
      detail::throw_invalid(
          fn, "dir",
          "already holds records (" + path_.string() + "): pass resume, or choose an empty directory");
    if (holds) {
      std::ifstream d(design_path, std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(d)), std::istreambuf_iterator<char>());
      if (text != design_text)
        detail::throw_invalid(fn, "design",
                              "differs from the design of the records in " + dir.string() + " (design.json)");
      for (auto& r : read_records(path_, &good)) done_.insert(trial_key{r.item, r.seed, r.arm});
      torn_ = good < data_end_;
    } else {
      const auto tmp = dir / "design.json.tmp";
      {
        std::ofstream d(tmp, std::ios::binary | std::ios::trunc);
        d << design_text;
        if (!d) LATENTAUDIT_THROW(corrupt_data("record_journal: cannot write '" + tmp.string() + "'"));
      }
      std::filesystem::rename(tmp, design_path);
      good = 0;
    }
    if (exists && std::filesystem::file_size(path_) != good) std::filesystem::resize_file(path_, good);
    used_ = good;
#ifdef LATENTAUDIT_JOURNAL_POSIX
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
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
    // A destructor must not throw: if close() fails the records are still in the file, at worst
    // followed by zero padding that read_records skips.
    try {
      close();
    } catch (...) {
    }
  }

  /// @brief Keys journaled so far (those found on open, then every appended record).
  [[nodiscard]] const std::set<trial_key>& done() const noexcept { return done_; }
  /// @brief Whether a torn last line was dropped on open.
  [[nodiscard]] bool dropped_torn_line() const noexcept { return torn_; }
  /// @brief The records file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// @brief Bytes of records in the file (without padding).
  [[nodiscard]] std::uint64_t size_bytes() const noexcept { return used_; }

  /// @brief Appends one record as one line; it is in the kernel (and on disk if durable) when
  /// this returns.
  /// @throws invalid_argument if its key is already journaled or the journal is closed;
  ///         corrupt_data if the write fails (e.g. the disk is full).
  void append(const trial_record& r) {
    trial_key k{r.item, r.seed, r.arm};
    if (done_.count(k) != 0)
      detail::throw_invalid("record_journal::append", "record",
                            "key (item " + std::to_string(r.item) + ", seed " + std::to_string(r.seed) +
                                ", arm " + r.arm + ") is already journaled");
    line_ = record_to_line(r);
    line_.push_back('\n');
    write_line();
    done_.insert(std::move(k));
  }

  /// @brief Finishes the file: cuts the zero padding after the last record (and flushes it to the
  /// disk if durable) and closes it; append() is an error afterwards. Idempotent; the destructor
  /// calls it.
  /// @throws corrupt_data if the file cannot be truncated or flushed.
  void close() {
#ifdef LATENTAUDIT_JOURNAL_POSIX
    if (fd_ < 0) return;
    if (map_ != nullptr) ::munmap(map_, mapped_);
    map_ = nullptr;
    mapped_ = 0;
    const int fd = fd_;
    fd_ = -1;
    const bool ok = ::ftruncate(fd, static_cast<off_t>(used_)) == 0 && (!durable_ || ::fsync(fd) == 0);
    ::close(fd);
    if (!ok) LATENTAUDIT_THROW(corrupt_data("record_journal::close: cannot finish '" + path_.string() + "'"));
#else
    if (file_ == nullptr) return;
    std::fclose(file_);
    file_ = nullptr;
#endif
  }

 private:
  // The offset just past the file's last non-zero byte.
  static std::uint64_t nonzero_end(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto it = std::find_if(text.rbegin(), text.rend(), [](char c) { return c != '\0'; });
    return static_cast<std::uint64_t>(it.base() - text.begin());
  }

  [[noreturn]] void write_failed(const char* what, int err) const {
    LATENTAUDIT_THROW(corrupt_data("record_journal::append: " + std::string(what) + " '" + path_.string() +
                                   "' failed: " + std::strerror(err)));
  }

  void write_line() {
    const std::size_t n = line_.size();
#ifdef LATENTAUDIT_JOURNAL_POSIX
    if (fd_ < 0) detail::throw_invalid("record_journal::append", "journal", "is closed");
    if (mapping_ && used_ + n > mapped_) grow(used_ + n);
    if (mapping_) {
      std::memcpy(map_ + used_, line_.data(), n);
      if (durable_) {
        const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
        const std::uint64_t first = used_ / page * page;
        if (::msync(map_ + first, used_ + n - first, MS_SYNC) != 0) write_failed("msync of", errno);
      }
    } else {
      const char* p = line_.data();
      std::size_t left = n;
      std::uint64_t at = used_;
      while (left > 0) {
        const auto w = ::pwrite(fd_, p, left, static_cast<off_t>(at));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) write_failed("write to", w < 0 ? errno : EIO);
        p += w;
        at += static_cast<std::uint64_t>(w);
        left -= static_cast<std::size_t>(w);
      }
      if (durable_ && ::fdatasync(fd_) != 0) write_failed("fdatasync of", errno);
    }
#else
    if (file_ == nullptr) detail::throw_invalid("record_journal::append", "journal", "is closed");
    if (std::fwrite(line_.data(), 1, n, file_) != n || std::fflush(file_) != 0)
      LATENTAUDIT_THROW(corrupt_data("record_journal::append: write to '" + path_.string() + "' failed"));
#endif
    used_ += n;
  }

#ifdef LATENTAUDIT_JOURNAL_POSIX
  // Extends the file (reserving its blocks) and the mapping to at least `need` bytes: doubling,
  // from 1 MiB. Where the file system cannot reserve blocks, switches to pwrite appends.
  void grow(std::uint64_t need) {
    std::uint64_t len = std::max<std::uint64_t>(mapped_ * 2, std::uint64_t{1} << 20);
    while (len < need) len *= 2;
    const std::uint64_t have = std::max<std::uint64_t>(mapped_, used_);
    const int e = ::posix_fallocate(fd_, static_cast<off_t>(have), static_cast<off_t>(len - have));
    if (e == EOPNOTSUPP || e == EINVAL || e == ENODEV) {  // no block reservation here: pwrite appends
      if (map_ != nullptr) ::munmap(map_, mapped_);
      map_ = nullptr;
      mapped_ = 0;
      mapping_ = false;
      if (::ftruncate(fd_, static_cast<off_t>(used_)) != 0) write_failed("truncating", errno);
      return;
    }
    if (e != 0) write_failed("extending", e);
    if (durable_ && ::fdatasync(fd_) != 0) write_failed("fdatasync of", errno);
    if (map_ != nullptr) ::munmap(map_, mapped_);
    map_ = nullptr;
    mapped_ = 0;
    void* p = ::mmap(nullptr, static_cast<std::size_t>(len), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) write_failed("mapping", errno);
    map_ = static_cast<char*>(p);
    mapped_ = static_cast<std::size_t>(len);
  }
#endif

  std::filesystem::path path_;
#ifdef LATENTAUDIT_JOURNAL_POSIX
  int fd_ = -1;
  char* map_ = nullptr;     // shared mapping of [0, mapped_) of the file
  std::size_t mapped_ = 0;  // bytes mapped (the file's size while mapped)
  bool mapping_ = true;     // false after falling back to pwrite
#else
  std::FILE* file_ = nullptr;
#endif
  std::uint64_t used_ = 0;      // bytes of records
  std::uint64_t data_end_ = 0;  // on open: end of the file's non-zero bytes
  std::set<trial_key> done_;
  std::string line_;
  bool durable_ = false;
  bool torn_ = false;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_JOURNAL_HPP
