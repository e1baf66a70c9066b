#include "engine/retry.h"

#include <algorithm>
#include <random>

#include "util/signals.h"
#include "util/sleep.h"

namespace phoenix::engine {

RetryResult retry_check(const checks::CheckSpec& spec, const std::string& root, int max_attempts,
                        long long base_delay_ms, const std::function<bool(long long)>& sleep_ms) {
  RetryResult r;
  int n = std::clamp(max_attempts, 1, kMaxRetryAttempts);
  std::mt19937_64 rng(std::random_device{}());
  for (int k = 1; k <= n; ++k) {
    if (k > 1) {
      long long base = base_delay_ms << (k - 2);
      long long jitter = base > 0 ? static_cast<long long>(rng() % static_cast<unsigned long long>(base / 2 + 1)) : 0;
      long long wait = base + jitter;
      r.delays_ms.push_back(wait);
      bool ok = sleep_ms ? sleep_ms(wait) : util::interruptible_sleep_ms(wait);
      if (!ok) break;
    }
    r.runs.push_back(checks::sense(spec, root));
    r.attempts = k;
    if (r.runs.back().ok) {
      r.healed = true;
      break;
    }
    if (r.runs.back().interrupted) break;
  }
  return r;
}

}  // namespace phoenix::engine
