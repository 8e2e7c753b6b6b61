// SPDX-License-Identifier: MIT
// latentaudit: the record journal — records.jsonl, one record per line, each in the kernel's page
// cache as its trial completes, so a crash (even kill -9) loses at most the trials in flight.
// Resuming reads the complete lines, drops a torn last line (and the zero padding a crash leaves
// behind, see record_journal), and reports the keys already done so the driver skips them; a key
// is never written twice.
#ifndef LATENTAUDIT_TRIAL_JOURNAL_HPP
#define LATENTAUDIT_TRIAL_JOURNAL_HPP

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/file_check.hpp"
#include "../core/json.hpp"
#include "design.hpp"
#include "record.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#define LATENTAUDIT_JOURNAL_POSIX 1
#endif

namespace latentaudit {

/// @brief The longest line read_records accepts (bytes, without the newline).
inline constexpr std::size_t max_record_line_bytes = std::size_t{1} << 20;

namespace detail {
/// @brief The (item, seed, arm) keys read_records has seen: arms interned to small ids (a records
/// file has few distinct arm labels) and the keys in an open-addressing
/// table of 24-byte slots (linear probing, at most 3/4 full).
class record_key_set {
 public:
  /// @brief Adds the key; false when it was already there.
  bool insert(std::uint64_t item, std::uint64_t seed, const std::string& arm) {
    if (last_ == 0 || arm != last_label_) {  // consecutive records mostly repeat a few arms
      const auto [it, fresh] = arms_.try_emplace(arm, static_cast<std::uint32_t>(arms_.size() + 1));
      (void)fresh;
      last_ = it->second;
      last_label_ = arm;
    }
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    if (!place(slots_, slot{item, seed, last_})) return false;
    ++size_;
    return true;
  }

 private:
  struct slot {
    std::uint64_t item = 0, seed = 0;
    std::uint32_t arm = 0;  // arm id + 1; 0 = empty
  };
  static std::uint64_t hash(const slot& k) noexcept {
    std::uint64_t h =
        (k.item * 0x9E3779B97F4A7C15ull) ^ ((k.seed + 0x632BE59BD9B4E019ull) * 0xD6E8FEB86659FD93ull);
    h ^= std::uint64_t{k.arm} * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 29);
  }
  static bool place(std::vector<slot>& table, const slot& k) noexcept {
    const std::size_t mask = table.size() - 1;
    for (std::size_t i = hash(k) & mask;; i = (i + 1) & mask) {
      slot& s = table[i];
      if (s.arm == 0) {
        s = k;
        return true;
      }
      if (s.arm == k.arm && s.item == k.item && s.seed == k.seed) return false;
    }
  }
  void grow() {
    std::vector<slot> bigger(slots_.empty() ? std::size_t{1024} : slots_.size() * 2);
    for (const auto& s : slots_)
      if (s.arm != 0) (void)place(bigger, s);
    slots_.swap(bigger);
  }
  std::unordered_map<std::string, std::uint32_t> arms_;  // arm label -> id + 1
  std::string last_label_;
  std::uint32_t last_ = 0;
  std::vector<slot> slots_;
  std::size_t size_ = 0;
};
/// @brief Reserves `out` for the lines of `path` that can hold a record (at least 40 bytes, the
/// shortest record line, and a '{'); nothing when the file cannot be read or the memory is refused
/// (the reader then grows the vector as it goes).
inline void reserve_records(std::vector<trial_record>& out, const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(std::size_t{1} << 20);
  std::size_t lines = 0, length = 0;
  bool brace = false;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < got; ++i) {
      if (buf[i] == '\n') {
        lines += brace && length >= 40 ? 1 : 0;
        length = 0;
        brace = false;
      } else {
        ++length;
        brace = brace || buf[i] == '{';
      }
    }
  }
  lines += brace && length >= 40 ? 1 : 0;
  try {
    out.reserve(lines);
  } catch (const std::exception&) {  // bad_alloc or length_error: no hint
  }
}
}  // namespace detail

/// @brief What read_records keeps of each record (every field is checked either way).
struct record_read_options {
  /// keep each record's "policy" object (checked to be an object or null either way). The report
  /// never reads it, and at about half a kilobyte a record it is the largest field in memory:
  /// `latentaudit report` and `audit`'s report read without it (1 000 000 records: ~0.5 GB less).
  bool policy = true;
};

namespace detail {
// Records files read_records has parsed in this process so far: each call counts once. Tests read
// it to check that a resumed audit parses each file once (tests/report/audit_session_test.cpp).
inline std::atomic<std::uint64_t> records_parsed{0};
}  // namespace detail

/// @brief Reads a records.jsonl file: one JSON record per line; blank lines are skipped, and so
/// are zero bytes at the end of the file (the padding an open or crashed record_journal leaves).
///
/// The file is streamed: memory is bounded by the records themselves, never by the file (a line
/// longer than max_record_line_bytes is refused as soon as that many bytes are read, and a zero
/// tail is counted, not stored). A path that is not a regular file (a directory, a FIFO, a device)
/// is refused before it is opened.
/// @param torn_tail when non-null, a final line without its newline (a write cut short by a
///        crash) is tolerated: it is not returned and *torn_tail receives its byte offset
///        (else the offset where the records and the padding end); when null such a line is an
///        error.
/// @param options what to keep of each record (record_read_options)
/// @throws invalid_argument if the path is not a regular file; corrupt_data naming the file and
///         line if it cannot be read, a line is too long or not a valid record, or a key repeats.
[[nodiscard]] inline std::vector<trial_record> read_records(const std::filesystem::path& path,
                                                            std::uint64_t* torn_tail = nullptr,
                                                            const record_read_options& options = {}) {
  (void)require_regular_file(path, "read_records: records file");
  std::ifstream in(path, std::ios::binary);
  if (!in) LATENTAUDIT_THROW(corrupt_data("read_records: cannot open '" + path.string() + "'"));
  detail::records_parsed.fetch_add(1, std::memory_order_relaxed);
  // The result is reserved once from a first pass over the file (its lines that can hold a record):
  // a growing vector would move every record about twice and hold its old and new buffers at once
  // (1.5x the records' memory at the peak). A hint only: the reading below never relies on it.
  std::vector<trial_record> out;
  detail::reserve_records(out, path);
  detail::record_key_set seen;  // (item, seed, arm id): 24 bytes a record, not a tree node and a string
  std::size_t line_no = 0;
  std::uint64_t offset = 0;      // bytes consumed
  std::uint64_t line_start = 0;  // offset of the current line's first byte
  std::uint64_t zeros = 0;       // zero bytes read but not yet stored (padding if nothing follows)
  std::string line;
  auto finish_line = [&] {
    ++line_no;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    if (line.find_first_not_of(" \t\r") == std::string::npos) return;
    json_value j;
    try {
      j = parse_json(line, {.max_depth = 16, .max_bytes = max_record_line_bytes});
    } catch (const error& e) {
      LATENTAUDIT_THROW(corrupt_data("read_records: " + where + ": " + e.what()));
    }
    trial_record r = record_from_json(j, where);
    if (!options.policy) r.policy = json_value();
    if (!seen.insert(r.item, r.seed, r.arm))
      LATENTAUDIT_THROW(corrupt_data("read_records: " + where + ": key (item " + std::to_string(r.item) +
                                     ", seed " + std::to_string(r.seed) + ", arm " + r.arm +
                                     ") appears twice"));
    out.push_back(std::move(r));
  };
  auto too_long = [&] {
    LATENTAUDIT_THROW(corrupt_data("read_records: " + path.string() + ":" + std::to_string(line_no + 1) +
                                   ": line longer than " + std::to_string(max_record_line_bytes) + " bytes"));
  };
  std::vector<char> buf(std::size_t{1} << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    for (std::size_t i = 0; i < got; ++i) {
      const char c = buf[i];
      ++offset;
      if (c == '\0') {
        ++zeros;
        continue;
      }
      if (zeros > 0) {  // zeros inside a line are part of it (and make it invalid JSON)
        if (line.size() + zeros > max_record_line_bytes) too_long();
        line.append(static_cast<std::size_t>(zeros), '\0');
        zeros = 0;
      }
      if (c == '\n') {
        finish_line();
        line.clear();
        line_start = offset;
        continue;
      }
      if (line.size() >= max_record_line_bytes) too_long();
      line.push_back(c);
    }
  }
  if (in.bad()) LATENTAUDIT_THROW(corrupt_data("read_records: cannot read '" + path.string() + "'"));
  const std::uint64_t data_end = offset - zeros;  // records and any torn line, without the padding
  if (torn_tail != nullptr) *torn_tail = data_end;
  if (!line.empty()) {  // a last line without its newline
    if (torn_tail != nullptr)
      *torn_tail = line_start;
    else
      finish_line();
  }
  return out;
}

/// @brief A records file as read once (read_records_file): its complete records and where they end.
/// An audit directory's opening reads each file once and hands its contents on (record_journal,
/// dist::prepare_records_set, the keys done, the records a stopping audit's looks read).
struct records_file_contents {
  std::vector<trial_record> records;  ///< the complete records, in file order (a torn last line dropped)
  std::uint64_t good = 0;             ///< bytes of complete records (read_records' torn_tail)
};

/// @brief Reads a records file once, tolerating a torn last line (read_records with a torn_tail).
/// @throws as read_records.
[[nodiscard]] inline records_file_contents read_records_file(const std::filesystem::path& path) {
  records_file_contents c;
  c.records = read_records(path, &c.good);
  return c;
}

/// @brief An exclusive advisory lock on a directory: flock(2) on `DIR/.latentaudit.lock`, which
/// holds the owner's pid. One process at a time holds it; the kernel releases it when the holder
/// exits or dies (kill -9 included), so a stale lock file never blocks anyone. Elsewhere than on
/// POSIX systems it only creates the directory.
class directory_lock {
 public:
  /// @brief The lock file's name inside the directory.
  static constexpr const char* file_name = ".latentaudit.lock";

  /// @brief Creates `dir` if missing and takes its lock without waiting.
  /// @param what the directory's role in messages (e.g. "--out").
  /// @param lock_name the lock file's name in `dir` (file_name by default; a sharded audit's ranks
  ///        lock their own records files with dist::rank_lock_name, docs/distributed.md).
  /// @throws invalid_argument "another audit holds DIR (pid N)" if another process holds it, or
  ///         naming the path if the directory cannot be created, is not a directory, or the
  ///         lock file cannot be opened.
  explicit directory_lock(const std::filesystem::path& dir, std::string_view what = "journal directory",
                          std::string_view lock_name = file_name)
      : dir_(dir) {
    require_output_directory(dir, what);
#ifdef LATENTAUDIT_JOURNAL_POSIX
    const auto lock_path = dir / std::string(lock_name);
    // O_NOFOLLOW: a planted symbolic link is refused, never written through (the pid would
    // overwrite its target); O_NONBLOCK: a planted FIFO does not block the open.
    fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd_ < 0) {
      const int err = errno;
      if (err == ELOOP)
        LATENTAUDIT_THROW(invalid_argument("the lock file '" + lock_path.string() +
                                           "' is a symbolic link (refused: remove it)"));
      LATENTAUDIT_THROW(
          invalid_argument("cannot open the lock file '" + lock_path.string() + "': " + std::strerror(err)));
    }
    if (struct stat st{}; ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fd_ = -1;
      LATENTAUDIT_THROW(invalid_argument("the lock file '" + lock_path.string() +
                                         "' is not a regular file (refused: remove it)"));
    }
    int rc = 0;
    while ((rc = ::flock(fd_, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      const int err = errno;
      std::string holder = err == EWOULDBLOCK ? read_holder(fd_) : std::string();
      ::close(fd_);
      fd_ = -1;
      if (err != EWOULDBLOCK)
        LATENTAUDIT_THROW(
            invalid_argument("cannot lock '" + lock_path.string() + "': " + std::strerror(err)));
      LATENTAUDIT_THROW(invalid_argument("another audit holds " + dir.string() + " (pid " +
                                         (holder.empty() ? std::string("unknown") : holder) + ")"));
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) != 0 ||
        ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      // the lock holds without the pid; only the message of a contender loses it
    }
#endif
  }
  directory_lock(directory_lock&& o) noexcept : dir_(std::move(o.dir_)) {
#ifdef LATENTAUDIT_JOURNAL_POSIX
    fd_ = std::exchange(o.fd_, -1);
#endif
  }
  directory_lock& operator=(directory_lock&& o) noexcept {
    if (this != &o) {
      release();
      dir_ = std::move(o.dir_);
#ifdef LATENTAUDIT_JOURNAL_POSIX
      fd_ = std::exchange(o.fd_, -1);
#endif
    }
    return *this;
  }
  directory_lock(const directory_lock&) = delete;
  directory_lock& operator=(const directory_lock&) = delete;
  ~directory_lock() { release(); }

  /// @brief The locked directory.
  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  /// @brief Whether the lock is held (false after release() or a move).
  [[nodiscard]] bool held() const noexcept {
#ifdef LATENTAUDIT_JOURNAL_POSIX
    return fd_ >= 0;
#else
    return !dir_.empty();
#endif
  }
  /// @brief Releases the lock (the lock file stays; its pid is stale and harmless). Idempotent.
  void release() noexcept {
#ifdef LATENTAUDIT_JOURNAL_POSIX
    if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
    fd_ = -1;
#endif
  }

 private:
#ifdef LATENTAUDIT_JOURNAL_POSIX
  // The holder's pid from the lock file; it may not be written yet, so retry briefly.
  static std::string read_holder(int fd) {
    for (int attempt = 0; attempt < 50; ++attempt) {
      char b[32] = {};
      const auto n = ::pread(fd, b, sizeof b - 1, 0);
      std::string s(b, n > 0 ? static_cast<std::size_t>(n) : 0);
      while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
      if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) return s;
      ::usleep(2000);
    }
    return {};
  }
  int fd_ = -1;
#endif
  std::filesystem::path dir_;
};

/// @brief An append-only journal of records in a directory: records.jsonl plus design.json (the
/// design identity it belongs to; a resume with another design is refused, naming the field), held
/// by one process at a time (directory_lock: a second journal on the directory, fresh or resumed,
/// is refused at once and never touches the file the first has mapped).
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
  /// @brief Opens the journal in `dir` (created if missing) for `design`, taking the directory's
  /// lock first (see the overload taking a directory_lock).
  record_journal(const std::filesystem::path& dir, const trial_design& design, bool resume,
                 bool durable = false)
      : record_journal(directory_lock(dir), design, resume, durable) {}

  /// @brief Opens the journal in the directory `lock` holds, for `design`; the journal keeps the
  /// lock until it is destroyed (so a caller that goes on to write a report into the directory
  /// still holds it).
  /// @param resume keep the records already there (after dropping a torn last line) and report
  ///        their keys; else existing records are an error (refuse to overwrite). A resume
  ///        checks, before anything is written: that design.json exists, that it equals the
  ///        design's identity (else the first differing field is named), and that every record
  ///        already there belongs to the design (trial_design::contains).
  /// @param durable also flush every record to the disk (msync / fdatasync: survives power loss,
  ///        not just a crash).
  /// @throws invalid_argument if the lock is not held, records exist and !resume, design.json is
  ///         missing or differs, or a record lies outside the design; corrupt_data if the existing
  ///         records or design.json are corrupt or a file cannot be read or written.
  /// @param records_name the records file's name in the directory ("records.jsonl"; a sharded
  ///        audit's rank r journals into "records.<r>.jsonl", dist::rank_records_name).
  /// @param read the records file as the caller read it under this lock (read_records_file; an
  ///        audit's opening reads each file once): the journal checks and resumes these records
  ///        instead of parsing the file again. Null: the journal reads the file itself.
  record_journal(directory_lock lock, const trial_design& design, bool resume, bool durable = false,
                 const std::string& records_name = "records.jsonl",
                 const records_file_contents* read = nullptr)
      : lock_(std::move(lock)), durable_(durable) {
    constexpr std::string_view fn = "record_journal";
    if (!lock_.held()) detail::throw_invalid(fn, "lock", "must hold the directory's lock");
    const auto& dir = lock_.dir();
    path_ = dir / records_name;
    const auto design_path = dir / "design.json";
    std::string design_text;
    const json_value design_json = design.to_json();
    append_json(design_text, design_json, {.indent = 1});
    design_text.push_back('\n');
    std::uint64_t good = 0;  // bytes of complete records already in the file
    std::error_code ec;
    const bool present =
        std::filesystem::symlink_status(path_, ec).type() != std::filesystem::file_type::not_found;
    const std::uint64_t size = present ? require_regular_file(path_, "records file") : 0;
    const bool exists = size > 0;
    if (exists) data_end_ = nonzero_end(path_);  // a file of zero padding only holds no records
    const bool holds = data_end_ > 0;
    if (holds && !resume)
      detail::throw_invalid(
          fn, "dir",
          "already holds records (" + path_.string() + "): pass resume, or choose an empty directory");
    if (holds) {
      if (std::filesystem::symlink_status(design_path, ec).type() == std::filesystem::file_type::not_found)
        LATENTAUDIT_THROW(invalid_argument("record_journal: " + dir.string() +
                                           " holds records but no design.json, so the resume cannot be "
                                           "checked against the design; choose an empty directory"));
      const json_value recorded = read_design_json(design_path);
      if (const auto diff = design_difference(recorded, design_json); !diff.empty())
        detail::throw_invalid(fn, "design",
                              "differs from the design of the records in " + dir.string() + ": " + diff);
      std::vector<trial_record> own;
      if (read == nullptr) own = read_records(path_, &good);
      const std::vector<trial_record>& records = read != nullptr ? read->records : own;
      if (read != nullptr) good = read->good;
      for (const auto& r : records) {
        trial_key k{r.item, r.seed, r.arm};
        if (!design.contains(k))
          LATENTAUDIT_THROW(invalid_argument(
              "record_journal: " + path_.string() + " holds a record outside the design: (item " +
              std::to_string(r.item) + ", seed " + std::to_string(r.seed) + ", arm " + r.arm + ") with " +
              std::to_string(design.items) + " items, " + std::to_string(design.seeds) + " seeds"));
        done_.insert(std::move(k));
      }
      torn_ = good < data_end_;
    } else {
      // Per records file: the ranks of a sharded audit write the same design.json side by side.
      const auto tmp = dir / (records_name + ".design.json.tmp");
      {
        std::ofstream d(tmp, std::ios::binary | std::ios::trunc);
        d << design_text;
        d.flush();
        if (!d) LATENTAUDIT_THROW(corrupt_data("record_journal: cannot write '" + tmp.string() + "'"));
      }
      std::filesystem::rename(tmp, design_path, ec);
      if (ec)
        LATENTAUDIT_THROW(
            corrupt_data("record_journal: cannot write '" + design_path.string() + "': " + ec.message()));
      good = 0;
    }
    if (exists && size != good) {
      // Only the lock's holder gets here, so no other process has this file mapped.
      std::filesystem::resize_file(path_, good, ec);
      if (ec)
        LATENTAUDIT_THROW(
            corrupt_data("record_journal: cannot truncate '" + path_.string() + "': " + ec.message()));
    }
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
  // The offset just past the file's last non-zero byte: read backwards in blocks, so a long zero
  // tail costs a scan, never memory.
  static std::uint64_t nonzero_end(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) LATENTAUDIT_THROW(corrupt_data("record_journal: cannot open '" + p.string() + "'"));
    in.seekg(0, std::ios::end);
    auto end = static_cast<std::uint64_t>(std::max<std::streamoff>(in.tellg(), 0));
    std::vector<char> buf(std::size_t{1} << 16);
    while (end > 0) {
      const std::uint64_t n = std::min<std::uint64_t>(end, buf.size());
      in.seekg(static_cast<std::streamoff>(end - n));
      in.read(buf.data(), static_cast<std::streamsize>(n));
      if (static_cast<std::uint64_t>(in.gcount()) != n)
        LATENTAUDIT_THROW(corrupt_data("record_journal: cannot read '" + p.string() + "'"));
      for (std::uint64_t i = n; i > 0; --i)
        if (buf[static_cast<std::size_t>(i - 1)] != '\0') return end - n + i;
      end -= n;
    }
    return 0;
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
  directory_lock lock_;         // held until destruction
  std::uint64_t used_ = 0;      // bytes of records
  std::uint64_t data_end_ = 0;  // on open: end of the file's non-zero bytes
  std::set<trial_key> done_;
  std::string line_;
  bool durable_ = false;
  bool torn_ = false;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_JOURNAL_HPP
