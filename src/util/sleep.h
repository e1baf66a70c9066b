// The one interruptible sleep: the engine's and the loop's waits (on a
// rate-limited or unreachable model, a flaky check's backoff, the loop's
// webhook retries) sleep here, so a signal ends them within a slice.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "util/subprocess.h"

namespace phoenix::util {

// Sleeps up to `ms` in slices of at most 20 ms. Returns false, early, when
// Phoenix is interrupted (interrupted_signal()) or `stop` (asked before
// each slice) says to; true when the whole time was slept.
inline bool interruptible_sleep_ms(long long ms, const std::function<bool()>& stop = {}) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < end) {
    if (interrupted_signal() != 0 || (stop && stop())) return false;
    std::this_thread::sleep_for(std::min(
        std::chrono::milliseconds(20),
        std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()) + std::chrono::milliseconds(1)));
  }
  return true;
}

}  // namespace phoenix::util
