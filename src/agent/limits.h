// Limits in what a CLI said: a quota, a rate limit or an unreachable
// model, the time the CLI said to retry at, and how long to wait.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/report.h"

namespace phoenix::agent {

enum class LimitKind { kNone, kRateLimit, kQuota, kUnreachable };

struct LimitHit {
  LimitKind kind = LimitKind::kNone;
  std::string line;                         // the line that said so (trimmed, bounded)
  std::optional<long long> retry_after_ms;  // when the output says when to retry
};

// When the text says to retry: "retry after 30 seconds", "Retry-After: 30",
// "retry_after_ms": 1500, "try again in 1m30s", "in 2h 13m",
// "retryDelay": "20s", "Retrying in 2892 seconds", "limit reached|1753077600"
// (epoch seconds), "try again at 14:05", "resets 3am (Europe/Berlin)",
// "resets at 7pm" (the next such wall-clock time, in the named zone or the
// local one). Relative to now_ms.
std::optional<long long> parse_retry_after_ms(std::string_view text, long long now_ms);

inline constexpr long long kDefaultRetryAfterMs = 60'000;

// Looks for a quota, a rate limit or an unreachable model in what the CLI
// said: its non-JSON output lines plus report.error_texts, minus every line
// that also appears in `prompt`. Quota wins over a rate limit (OpenAI's
// insufficient_quota arrives as HTTP 429), a rate limit over an unreachable
// model; a "quota … per minute" is a rate limit. `now_ms` turns reset times
// into a delay.
LimitHit find_limit(std::string_view output, const AgentReport& report, std::string_view prompt, long long now_ms);

struct Classification;

// --- waits -------------------------------------------------------------------

// How long to wait before the next try after `waits_so_far` waiting runs in
// a row: exponential backoff from 1 s (doubling, capped at 5 min) with
// ±20 % jitter, or the CLI's own retry time (plus up to 10 % jitter) when
// it gave a longer one. Never more than `left_ms` when that is positive.
long long wait_ms(const Classification& c, int waits_so_far, long long left_ms = 0);

}  // namespace phoenix::agent
