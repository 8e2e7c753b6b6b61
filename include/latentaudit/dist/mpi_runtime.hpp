// SPDX-License-Identifier: MIT
// latentaudit: a thin layer over MPI's C API for sharded audits and the mpi relay transport —
// RAII initialisation and finalisation, a communicator whose calls report errors as exceptions
// (MPI_ERRORS_RETURN, never MPI's default abort), broadcasts of strings and bytes, polite waits
// that do not spin a core, and the agreement that turns "one rank failed" into "every rank stops
// with that rank's message" (docs/distributed.md).
//
// Needs <mpi.h> and libmpi (the CMake target latentaudit::mpi, which defines
// LATENTAUDIT_HAVE_MPI=1); it is included by no other header of the library, like the llama.cpp
// engine's headers.
#ifndef LATENTAUDIT_DIST_MPI_RUNTIME_HPP
#define LATENTAUDIT_DIST_MPI_RUNTIME_HPP

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"

namespace latentaudit::dist {

/// @brief An MPI call failed (its error string is in the message), or MPI is used outside its
/// initialised lifetime.
class mpi_error : public error {
 public:
  using error::error;
};

namespace detail {

// The text of an MPI error code.
inline std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(len > 0 ? len : 0));
}

}  // namespace detail

/// @brief Checks an MPI call's return code, for code that calls MPI itself beside this runtime (e.g.
/// the CLI's sharded audit): `check_mpi(MPI_Irecv(...), "MPI_Irecv")`.
/// @param rc the call's return code
/// @param what the call's name, which starts the message
/// @throws mpi_error "<what> failed: <MPI's text of rc>" unless rc is MPI_SUCCESS.
inline void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS)
    LATENTAUDIT_THROW(mpi_error(std::string(what) + " failed: " + detail::mpi_error_text(rc)));
}

namespace detail {

// A count as MPI's int. @throws mpi_error above INT_MAX.
inline int mpi_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    LATENTAUDIT_THROW(mpi_error(std::string(what) + ": " + std::to_string(n) +
                                " bytes exceed one MPI message (2^31 - 1 bytes)"));
  return static_cast<int>(n);
}

}  // namespace detail

/// @brief Whether MPI is initialised and not yet finalised in this process.
[[nodiscard]] inline bool mpi_active() noexcept {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init != 0 && fin == 0;
}

/// @brief How long a polite wait sleeps between polls (MPI_Test / MPI_Iprobe): short enough to add
/// no visible latency to a unit of trials, long enough that a waiting rank leaves its core to the
/// ranks still working (MPI's blocking calls spin, which on an oversubscribed node slows them).
inline constexpr std::chrono::microseconds polite_poll_interval{200};

/// @brief A communicator (not owned: MPI_COMM_WORLD or one the caller frees). Every call checks
/// MPI's return code and throws mpi_error naming the call; the constructor sets the
/// communicator's error handler to MPI_ERRORS_RETURN so that errors come back as codes instead of
/// aborting the job.
class communicator {
 public:
  /// @brief Wraps `comm`. @throws mpi_error if MPI is not active or the calls fail.
  explicit communicator(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    if (!mpi_active())
      LATENTAUDIT_THROW(mpi_error("communicator: MPI is not initialised (dist::mpi_runtime)"));
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }

  /// @brief This process's rank in [0, size()).
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// @brief The number of ranks.
  [[nodiscard]] int size() const noexcept { return size_; }
  /// @brief The MPI handle, for calls this wrapper does not cover.
  [[nodiscard]] MPI_Comm native() const noexcept { return comm_; }

  /// @brief A barrier that polls (MPI_Ibarrier + MPI_Test, sleeping polite_poll_interval between
  /// tests) instead of spinning: ranks that finish early leave the cores to the others.
  void polite_barrier() const {
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
    wait(req, "MPI_Ibarrier");
  }

  /// @brief Waits for `req` politely (MPI_Test + sleep). @throws mpi_error naming `what`.
  static void wait(MPI_Request& req, const char* what, MPI_Status* status = MPI_STATUS_IGNORE) {
    for (;;) {
      int done = 0;
      check_mpi(MPI_Test(&req, &done, status), what);
      if (done != 0) return;
      std::this_thread::sleep_for(polite_poll_interval);
    }
  }

  /// @brief Broadcasts bytes from `root`: on the other ranks `bytes` is replaced by root's.
  void broadcast(std::vector<std::byte>& bytes, int root) const {
    std::uint64_t n = bytes.size();
    check_mpi(MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm_), "MPI_Bcast (length)");
    if (rank_ != root) bytes.assign(static_cast<std::size_t>(n), std::byte{0});
    if (n > 0)
      check_mpi(MPI_Bcast(bytes.data(), detail::mpi_count(bytes.size(), "broadcast"), MPI_BYTE, root, comm_),
                "MPI_Bcast");
  }

  /// @brief Broadcasts a string from `root`: on the other ranks `s` is replaced by root's.
  void broadcast(std::string& s, int root) const {
    std::uint64_t n = s.size();
    check_mpi(MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm_), "MPI_Bcast (length)");
    if (rank_ != root) s.assign(static_cast<std::size_t>(n), '\0');
    if (n > 0)
      check_mpi(MPI_Bcast(s.data(), detail::mpi_count(s.size(), "broadcast"), MPI_CHAR, root, comm_),
                "MPI_Bcast");
  }

  /// @brief Broadcasts one integer from `root`; returns root's value on every rank.
  [[nodiscard]] std::int64_t broadcast(std::int64_t v, int root) const {
    check_mpi(MPI_Bcast(&v, 1, MPI_INT64_T, root, comm_), "MPI_Bcast");
    return v;
  }

  /// @brief Every rank's string, in rank order, on every rank (MPI_Allgather of the lengths, then
  /// MPI_Allgatherv of the bytes).
  [[nodiscard]] std::vector<std::string> allgather(const std::string& s) const {
    const int n = detail::mpi_count(s.size(), "allgather");
    std::vector<int> lens(static_cast<std::size_t>(size_)), offs(static_cast<std::size_t>(size_));
    check_mpi(MPI_Allgather(&n, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_), "MPI_Allgather");
    std::size_t total = 0;
    for (std::size_t i = 0; i < lens.size(); ++i) {
      offs[i] = detail::mpi_count(total, "allgather");
      total += static_cast<std::size_t>(lens[i]);
    }
    std::string all(total, '\0');
    (void)detail::mpi_count(total, "allgather");
    check_mpi(MPI_Allgatherv(s.data(), n, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, comm_),
              "MPI_Allgatherv");
    std::vector<std::string> out;
    out.reserve(lens.size());
    for (std::size_t i = 0; i < lens.size(); ++i)
      out.emplace_back(all, static_cast<std::size_t>(offs[i]), static_cast<std::size_t>(lens[i]));
    return out;
  }

  /// @brief Every rank's value, in rank order, on every rank.
  [[nodiscard]] std::vector<double> allgather(double v) const {
    std::vector<double> out(static_cast<std::size_t>(size_));
    check_mpi(MPI_Allgather(&v, 1, MPI_DOUBLE, out.data(), 1, MPI_DOUBLE, comm_), "MPI_Allgather");
    return out;
  }

  /// @brief The minimum of `v` over the ranks, on every rank.
  [[nodiscard]] std::int64_t allreduce_min(std::int64_t v) const {
    std::int64_t out = 0;
    check_mpi(MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_MIN, comm_), "MPI_Allreduce");
    return out;
  }

  /// @brief The sum of `v` over the ranks, on every rank.
  [[nodiscard]] std::int64_t allreduce_sum(std::int64_t v) const {
    std::int64_t out = 0;
    check_mpi(MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_SUM, comm_), "MPI_Allreduce");
    return out;
  }

  /// @brief Sends bytes to `dest` with `tag` (blocking, standard mode).
  void send(std::span<const std::byte> bytes, int dest, int tag) const {
    check_mpi(MPI_Send(bytes.data(), detail::mpi_count(bytes.size(), "send"), MPI_BYTE, dest, tag, comm_),
              "MPI_Send");
  }

  /// @brief A received message: its bytes and the source and tag it came with.
  struct message {
    std::vector<std::byte> bytes;  ///< the payload
    int source = 0;                ///< the sender's rank
    int tag = 0;                   ///< the message's tag
  };

  /// @brief Receives one message from `source` (or MPI_ANY_SOURCE) with `tag` (or MPI_ANY_TAG) of
  /// any length, waiting politely (MPI_Iprobe + sleep) for it to arrive.
  [[nodiscard]] message receive(int source, int tag) const {
    MPI_Status st{};
    for (;;) {
      int flag = 0;
      check_mpi(MPI_Iprobe(source, tag, comm_, &flag, &st), "MPI_Iprobe");
      if (flag != 0) break;
      std::this_thread::sleep_for(polite_poll_interval);
    }
    return receive_probed(st);
  }

  /// @brief Receives a message if one from `source` with `tag` has arrived, else std::nullopt.
  [[nodiscard]] std::optional<message> try_receive(int source, int tag) const {
    MPI_Status st{};
    int flag = 0;
    check_mpi(MPI_Iprobe(source, tag, comm_, &flag, &st), "MPI_Iprobe");
    if (flag == 0) return std::nullopt;
    return receive_probed(st);
  }

 private:
  message receive_probed(const MPI_Status& st) const {
    int n = 0;
    check_mpi(MPI_Get_count(&st, MPI_BYTE, &n), "MPI_Get_count");
    message m;
    m.bytes.resize(static_cast<std::size_t>(n));
    m.source = st.MPI_SOURCE;
    m.tag = st.MPI_TAG;
    check_mpi(MPI_Recv(m.bytes.data(), n, MPI_BYTE, m.source, m.tag, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
    return m;
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

/// @brief MPI's lifetime: MPI_Init_thread in the constructor (unless MPI is already initialised,
/// in which case this object leaves finalisation to whoever initialised it), MPI_Finalize in the
/// destructor. MPI_COMM_WORLD gets the MPI_ERRORS_RETURN handler. One per process.
class mpi_runtime {
 public:
  /// @brief Initialises MPI asking for `thread_level` (MPI_THREAD_FUNNELED by default: only the
  /// thread that initialised MPI calls it), and accepting no less than `required` (-1: thread_level).
  /// @throws mpi_error if MPI was already finalised, initialisation fails, or MPI provides less
  ///         than the thread level required.
  explicit mpi_runtime(int thread_level = MPI_THREAD_FUNNELED, int required = -1) {
    if (required < 0) required = thread_level;
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin != 0) LATENTAUDIT_THROW(mpi_error("mpi_runtime: MPI was already finalised in this process"));
    if (init == 0) {
      check_mpi(MPI_Init_thread(nullptr, nullptr, thread_level, &provided_), "MPI_Init_thread");
      owner_ = true;
    } else {
      check_mpi(MPI_Query_thread(&provided_), "MPI_Query_thread");
    }
    if (provided_ < required)
      LATENTAUDIT_THROW(mpi_error("mpi_runtime: MPI provides thread level " + std::to_string(provided_) +
                                  ", less than the " + std::to_string(required) + " required"));
    check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  }
  mpi_runtime(const mpi_runtime&) = delete;
  mpi_runtime& operator=(const mpi_runtime&) = delete;
  /// @brief MPI_Finalize, when this object initialised MPI (errors are ignored: a destructor).
  ~mpi_runtime() {
    if (owner_ && mpi_active()) MPI_Finalize();
  }

  /// @brief MPI_COMM_WORLD.
  [[nodiscard]] communicator world() const { return communicator(MPI_COMM_WORLD); }
  /// @brief The thread level MPI provides.
  [[nodiscard]] int thread_level() const noexcept { return provided_; }
  /// @brief The MPI library's version string (e.g. "Open MPI v4.1.4, ...").
  [[nodiscard]] static std::string library_version() {
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) return "unknown MPI";
    std::string s(v, static_cast<std::size_t>(len > 0 ? len : 0));
    if (const auto nl = s.find_first_of("\r\n,"); nl != std::string::npos) s.resize(nl);
    return s;
  }

 private:
  int provided_ = MPI_THREAD_SINGLE;
  bool owner_ = false;
};

/// @brief The outcome of an agreement among ranks: every rank ok, or the failure of the lowest
/// failing rank.
struct rank_outcome {
  bool ok = true;       ///< every rank succeeded
  int rank = -1;        ///< the lowest failing rank (-1 when ok)
  int code = 0;         ///< its exit code (0 when ok)
  std::string message;  ///< its message ("" when ok)
};

/// @brief One agreement among all ranks of `comm` (a collective: every rank must call it, with its
/// own failure or none): an MPI_Allreduce (MIN) of the failing ranks finds the lowest one, which
/// then broadcasts its exit code and message. Every rank returns the same outcome, so every rank
/// can stop with the same message. A rank that fails between two agreements calls agree() once
/// with its failure; it meets the others at their next agreement (every agreement is the same pair
/// of collectives), where they all learn of it.
/// @param failure this rank's message, or std::nullopt if it succeeded.
/// @param code this rank's exit code when it failed.
[[nodiscard]] inline rank_outcome agree(const communicator& comm, const std::optional<std::string>& failure,
                                        int code = 2) {
  const std::int64_t mine = failure ? comm.rank() : comm.size();
  const std::int64_t first = comm.allreduce_min(mine);
  rank_outcome o;
  if (first >= comm.size()) return o;
  o.ok = false;
  o.rank = static_cast<int>(first);
  o.code = static_cast<int>(comm.broadcast(std::int64_t{code}, o.rank));
  std::string msg = failure ? *failure : std::string();
  comm.broadcast(msg, o.rank);
  o.message = std::move(msg);
  return o;
}

/// @brief A failure every rank agreed on: thrown on every rank (after agree()) with the failing
/// rank's message, its rank and its exit code.
class rank_failure : public error {
 public:
  /// @brief `outcome` must be a failure.
  explicit rank_failure(const rank_outcome& outcome)
      : error(outcome.message), rank_(outcome.rank), code_(outcome.code) {}
  /// @brief The failing rank.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// @brief Its exit code.
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int rank_;
  int code_;
};

/// @brief Last resort when the ranks can no longer agree (an MPI call itself failed): MPI_Abort
/// with `code`, which tears the whole job down.
[[noreturn]] inline void abort_job(const communicator& comm, int code) {
  MPI_Abort(comm.native(), code);
  std::_Exit(code);
}

}  // namespace latentaudit::dist

#endif  // LATENTAUDIT_DIST_MPI_RUNTIME_HPP
