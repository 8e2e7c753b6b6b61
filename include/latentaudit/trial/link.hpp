// SPDX-License-Identifier: MIT
// latentaudit: link presets — how long moving a relay between two engines takes, modeled as
// bytes / bandwidth + a fixed cost alpha per relay (setup, synchronisation, kernel launch).
#ifndef LATENTAUDIT_TRIAL_LINK_HPP
#define LATENTAUDIT_TRIAL_LINK_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"

namespace latentaudit {

/// @brief A link between sender and receiver: effective bandwidth and fixed cost per relay.
struct link_preset {
  std::string name;                ///< e.g. "pcie4"
  double bandwidth_bytes_s = 0.0;  ///< effective bytes per second (> 0)
  double alpha_s = 0.0;            ///< fixed seconds per relay (>= 0)

  /// @brief Modeled transfer time of `bytes`: 0 for no relay, else bytes / bandwidth + alpha.
  [[nodiscard]] double transfer_seconds(std::uint64_t bytes) const noexcept {
    return bytes == 0 ? 0.0 : static_cast<double>(bytes) / bandwidth_bytes_s + alpha_s;
  }
};

/// @brief The built-in presets (effective, not raw, rates; see docs/audit-report.md):
/// pcie4 (x16, 25 GB/s, 10 µs), pcie5 (x16, 50 GB/s, 10 µs), nvlink4 (H100 NVLink 4, 400 GB/s
/// one direction, 5 µs), rdma100 (100 Gb/s RDMA, 11.5 GB/s, 20 µs), rdma400 (400 Gb/s RDMA,
/// 46 GB/s, 20 µs).
[[nodiscard]] inline std::vector<link_preset> link_presets() {
  return {{"pcie4", 25e9, 10e-6},
          {"pcie5", 50e9, 10e-6},
          {"nvlink4", 400e9, 5e-6},
          {"rdma100", 11.5e9, 20e-6},
          {"rdma400", 46e9, 20e-6}};
}

/// @brief A preset by name, or a custom link written "custom:<GB/s>:<alpha µs>".
/// @throws invalid_argument naming the accepted names if `name` is neither.
[[nodiscard]] inline link_preset find_link(std::string_view name) {
  constexpr std::string_view fn = "find_link";
  for (auto& l : link_presets())
    if (l.name == name) return l;
  if (name.rfind("custom:", 0) == 0) {
    const std::string rest(name.substr(7));
    const auto colon = rest.find(':');
    if (colon != std::string::npos) {
      try {
        std::size_t p1 = 0, p2 = 0;
        const double gbs = std::stod(rest.substr(0, colon), &p1);
        const double us = std::stod(rest.substr(colon + 1), &p2);
        if (p1 == colon && p2 == rest.size() - colon - 1 && std::isfinite(gbs) && gbs > 0 &&
            std::isfinite(us) && us >= 0)
          return {std::string(name), gbs * 1e9, us * 1e-6};
      } catch (const std::exception&) {  // fall through to the error below
      }
    }
    detail::throw_invalid(
        fn, "name",
        "a custom link must read custom:<GB/s > 0>:<alpha µs >= 0>, got '" + std::string(name) + "'");
  }
  detail::throw_invalid(fn, "name",
                        "must be pcie4, pcie5, nvlink4, rdma100, rdma400 or custom:<GB/s>:<alpha µs>, got '" +
                            std::string(name) + "'");
}

/// @brief A real link failed: the peer closed it, a deadline passed, or a message's length
/// prefix exceeds the receiver's limit (refused before anything is allocated).
class link_error : public error {
 public:
  using error::error;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_LINK_HPP
