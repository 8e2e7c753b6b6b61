// SPDX-License-Identifier: MIT
// latentaudit: deterministic fork-join parallelism. Work is split into fixed chunks whose
// boundaries do not depend on the thread count, so per-chunk results (each using its own random
// stream) are bit-identical at 1, 2 or 64 threads; reductions over chunks happen in chunk order.
#ifndef LATENTAUDIT_CORE_PARALLEL_HPP
#define LATENTAUDIT_CORE_PARALLEL_HPP

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "../config.hpp"
#include "detail/check.hpp"

namespace latentaudit {

/// @brief The number of threads to use for a request of `threads` (0 = hardware concurrency).
[[nodiscard]] inline unsigned resolve_threads(unsigned threads) noexcept {
  if (threads != 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : hw;
}

/// @brief Calls fn(chunk_begin, chunk_end) for consecutive chunks of [0, n) of size `chunk`,
/// on up to `threads` threads (0 = all cores). Chunk boundaries depend only on n and chunk.
/// The first exception thrown by any call is rethrown after all threads join.
/// @throws invalid_argument if chunk == 0.
template <class Fn>
void parallel_chunks(std::size_t n, std::size_t chunk, unsigned threads, Fn&& fn) {
  if (chunk == 0) detail::throw_invalid("parallel_chunks", "chunk", "must be at least 1");
  if (n == 0) return;
  const std::size_t n_chunks = (n + chunk - 1) / chunk;
  const unsigned t = static_cast<unsigned>(std::min<std::size_t>(resolve_threads(threads), n_chunks));
  if (t <= 1) {
    for (std::size_t c = 0; c < n_chunks; ++c) fn(c * chunk, std::min(n, (c + 1) * chunk));
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    for (;;) {
      const std::size_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= n_chunks) return;
      try {
        fn(c * chunk, std::min(n, (c + 1) * chunk));
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next.store(n_chunks, std::memory_order_relaxed);
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(t - 1);
  for (unsigned i = 0; i + 1 < t; ++i) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_PARALLEL_HPP
