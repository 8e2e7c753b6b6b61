// SPDX-License-Identifier: MIT
// latentaudit: the mpi relay transport — a relay_channel between two ranks of a communicator
// (dist/mpi_runtime.hpp): each message is an 8-byte length (tag base) then its bytes (tag base+1),
// point to point; every wait polls (MPI_Test, polite_poll_interval) against a deadline, and a length
// above the receiver's limit is refused before allocation. Within a node Open MPI moves the bytes
// through shared memory (the vader BTL), across nodes through the fabric. Needs <mpi.h>, like
// dist/mpi_runtime.hpp; docs/wire-format.md, "Relay over a real link".
#ifndef LATENTAUDIT_DIST_TRANSPORT_MPI_HPP
#define LATENTAUDIT_DIST_TRANSPORT_MPI_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "mpi_runtime.hpp"
#include "transport.hpp"

namespace latentaudit::dist {

/// @brief A relay_channel to one peer rank of a communicator.
class mpi_transport final : public relay_channel {
 public:
  /// @brief The link from this rank to `peer` in `comm` (which must outlive it), on tags `tag`
  /// and `tag` + 1 (both ends must use the same tag).
  /// @throws invalid_argument if peer is this rank or outside the communicator, or the options are bad.
  mpi_transport(const communicator& comm, int peer, const transport_options& o = {}, int tag = 0x4C41)
      : comm_(comm), peer_(peer), tag_(tag), opt_(o) {
    if (peer < 0 || peer >= comm.size() || peer == comm.rank())
      latentaudit::detail::throw_invalid(
          "mpi_transport", "peer", "must be another rank of the communicator, got " + std::to_string(peer));
    if (!(o.timeout_s > 0) || !(o.timeout_s < 1e9))
      latentaudit::detail::throw_invalid("mpi_transport", "options.timeout_s", "must be in (0, 1e9) seconds");
  }

  void send(std::span<const std::byte> message) override {
    const auto deadline = detail::deadline_after(opt_.timeout_s);
    const std::uint64_t n = message.size();
    if (n > static_cast<std::uint64_t>(INT_MAX))
      detail::throw_link("mpi transport: a message of " + std::to_string(n) +
                         " bytes exceeds one MPI message (2^31 - 1 bytes)");
    MPI_Request req = MPI_REQUEST_NULL;
    check(MPI_Isend(&n, 1, MPI_UINT64_T, peer_, tag_, comm_.native(), &req), "MPI_Isend (length)");
    wait(req, deadline, "sending");
    if (n == 0) return;
    check(MPI_Isend(message.data(), static_cast<int>(n), MPI_BYTE, peer_, tag_ + 1, comm_.native(), &req),
          "MPI_Isend");
    wait(req, deadline, "sending");
  }

  void receive(std::vector<std::byte>& message) override { receive_at_most(message, opt_.max_message_bytes); }

  void receive_at_most(std::vector<std::byte>& message, std::uint64_t max_bytes) override {
    const auto deadline = detail::deadline_after(opt_.timeout_s);
    std::uint64_t n = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    check(MPI_Irecv(&n, 1, MPI_UINT64_T, peer_, tag_, comm_.native(), &req), "MPI_Irecv (length)");
    wait(req, deadline, "receiving");
    const std::uint64_t limit =
        std::min({max_bytes, opt_.max_message_bytes, static_cast<std::uint64_t>(INT_MAX)});
    if (n > limit)
      detail::throw_link("mpi transport: rank " + std::to_string(peer_) + " announces a message of " +
                         std::to_string(n) + " bytes, above the limit of " + std::to_string(limit) +
                         "; refused before allocation");
    message.resize(static_cast<std::size_t>(n));
    if (n == 0) return;
    check(MPI_Irecv(message.data(), static_cast<int>(n), MPI_BYTE, peer_, tag_ + 1, comm_.native(), &req),
          "MPI_Irecv");
    wait(req, deadline, "receiving");
  }

  [[nodiscard]] std::string name() const override { return "mpi"; }

  /// @brief The peer's rank.
  [[nodiscard]] int peer() const noexcept { return peer_; }

 private:
  static void check(int rc, const char* what) {
    if (rc != MPI_SUCCESS)
      detail::throw_link(std::string("mpi transport: ") + what +
                         " failed: " + dist::detail::mpi_error_text(rc));
  }

  // Polls `req` (spinning briefly, then sleeping polite_poll_interval) until it completes or the
  // deadline passes (then it is cancelled: link_error).
  static void wait(MPI_Request& req, detail::transport_clock::time_point deadline, const char* what) {
    for (int spins = 0;; ++spins) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done != 0) return;
      if (detail::transport_clock::now() >= deadline) {
        MPI_Cancel(&req);
        MPI_Request_free(&req);
        detail::throw_link(std::string("mpi transport: timed out while ") + what);
      }
      if (spins > 1000) std::this_thread::sleep_for(polite_poll_interval);
    }
  }

  const communicator& comm_;
  int peer_;
  int tag_;
  transport_options opt_;
};

}  // namespace latentaudit::dist

#endif  // LATENTAUDIT_DIST_TRANSPORT_MPI_HPP
