// The retry strategy: re-run a check for flaky failure types, with
// exponential backoff and jitter, never more than kMaxRetryAttempts runs.
#pragma once

#include <functional>
#include <vector>

#include "checks/check.h"

namespace phoenix::engine {

constexpr int kMaxRetryAttempts = 3;

struct RetryResult {
  bool healed = false;
  int attempts = 0;
  std::vector<checks::SenseResult> runs;
  std::vector<long long> delays_ms;  // the waits before attempts 2..n
};

// Runs `spec` up to `max_attempts` (capped at kMaxRetryAttempts) times,
// stopping at the first green run. Before attempt k+1 it waits
// base_delay_ms * 2^(k-1) plus up to 50% jitter. `sleep_ms` is injectable
// for tests (util::interruptible_sleep_ms by default); it returns false
// when the wait was interrupted.
RetryResult retry_check(const checks::CheckSpec& spec, const std::string& root, int max_attempts,
                        long long base_delay_ms, const std::function<bool(long long)>& sleep_ms = {});

}  // namespace phoenix::engine
