// SPDX-License-Identifier: MIT
// latentaudit: agent A in another process, as the trial driver sees it. The driver asks a
// remote_sender for A's half of each relay (A reads the document, exports, applies the arm's policy
// or placebo, encodes) and receives a sender_half: the wire frame and A's report. How the request
// crosses to A and the frame comes back is not the driver's: dist/relay_protocol.hpp implements
// remote_sender over a relay channel (tcp, mpi), and serves A's end (dist::serve_sender).
#ifndef LATENTAUDIT_TRIAL_REMOTE_SENDER_HPP
#define LATENTAUDIT_TRIAL_REMOTE_SENDER_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../core/json.hpp"
#include "../core/types.hpp"
#include "arm.hpp"
#include "design.hpp"
#include "task.hpp"

namespace latentaudit {

/// @brief Agent A's half of one relay: the wire frame B decodes and what A reports of its work.
struct sender_half {
  std::vector<std::byte> frame;    ///< the relay's wire frame (kv/wire.hpp)
  double a_prefill_s = 0;          ///< A's read of the document (s)
  double export_s = 0;             ///< export of A's cache (s)
  double policy_s = 0;             ///< the arm's policy or placebo (s)
  double encode_s = 0;             ///< wire encoding (s)
  std::string sender_fingerprint;  ///< the sending model's fingerprint text
  json_value policy;               ///< the policy's record (the records' `policy`)
  /// the frame's crossing time on a real link (B's clock), nothing in one process
  std::optional<double> measured_s;
  std::vector<token_id> message;  ///< message arms: the message relayed (at most the arm's budget)
  /// kv_mapped: the mapped cache's attention-output cosine (kv/map_screen.hpp)
  std::optional<double> map_cosine;
  /// from another process: why its report or frame failed B's checks ("" when it passed); the
  /// record's relay_error, and the frame is never imported
  std::string relay_error;
};

/// @brief What B accepts of a remote sender's answer to one relay request: anything beyond is
/// refused (a length beyond max_frame_bytes before allocation).
struct remote_relay_limits {
  std::uint64_t max_frame_bytes = 0;  ///< the largest frame the arm can send on this task
  std::int64_t vocab_size = 0;        ///< B's vocabulary: message tokens must lie below it
  std::string map_id;  ///< kv_mapped: the id of this audit's map for the arm's sender ("" otherwise)
};

/// @brief Agent A in another process (trial_driver::set_remote_sender). Implementations:
/// dist::channel_sender (dist/relay_protocol.hpp) over a tcp or MPI relay channel.
class remote_sender {
 public:
  remote_sender() = default;
  remote_sender(const remote_sender&) = delete;
  remote_sender& operator=(const remote_sender&) = delete;
  virtual ~remote_sender() = default;
  /// @brief Before a run's first relay: A must run the same design.
  /// @throws invalid_argument if A refuses the design; link_error if the link fails.
  virtual void begin(const trial_design& design) = 0;
  /// @brief A's half of `arm` on `task`, B's next free position being `receiver_next`. A report
  /// or frame that fails `limits` or the link's authentication comes back as relay_error.
  /// @throws engine_error if A failed on the relay; link_error if the link fails.
  virtual sender_half relay(const trial_task& task, const trial_arm& arm, position_t receiver_next,
                            const remote_relay_limits& limits) = 0;
  /// @brief After a run's last relay: A may stop serving.
  virtual void end() = 0;
  /// @brief Who is at the other end, for errors and relay_error ("the relay peer at 127.0.0.1:7700").
  [[nodiscard]] virtual std::string peer_name() const = 0;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_REMOTE_SENDER_HPP
