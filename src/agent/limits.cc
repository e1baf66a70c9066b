#include "agent/limits.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <utility>

#include "agent/classify.h"
#include "agent/internal.h"
#include "util/format.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::agent {
namespace {

using namespace detail;  // NOLINT: agent/'s own helpers
using util::lower;

// ---------------------------------------------------------------------------
// Quotas, rate limits, unreachable models.

// Words of exhausted credit or billing, whoever says them: waiting will not
// help.
const std::vector<std::string_view> kQuotaPhrases{
    "insufficient_quota",         // OpenAI, sent with HTTP 429
    "credit balance is too low",  // Anthropic "Your credit balance is too low to access the Anthropic API"
    "credit balance too low",
    "payment required",  // HTTP 402
    "out of credits",
    "billing_disabled",           // Google's ErrorInfo reason (403 PERMISSION_DENIED)
    "billing to be enabled",      // Google "This API method requires billing to be enabled"
    "enable billing",             // Google "Please enable billing on project #..."
    "insufficient_g1_credits",    // Google's ErrorInfo reason INSUFFICIENT_G1_CREDITS_BALANCE
};

// Words of quota or billing that a provider also sends with a rate limit:
// Gemini's free tier answers a per-minute limit with 429 RESOURCE_EXHAUSTED
// "You exceeded your current quota, please check your plan and billing
// details ... Please retry in 41.5s". Quota, unless the same output carries
// one of kProviderRateMarkers.
const std::vector<std::string_view> kQuotaWords{
    "billing",  // "check your plan and billing details"
    "quota",    // "exceeded your current quota", codex "Quota exceeded."
};

// What a provider sends with a limit that passes with time, whatever else
// its message says: Google's status and its RetryInfo, OpenAI's error code,
// a per-minute or per-day quota id.
const std::vector<std::string_view> kProviderRateMarkers{
    "resource_exhausted",  "resource has been exhausted",  // Google's 429
    "retrydelay",          "please retry in",               // Google's RetryInfo, and its message's words
    "suggested retry after",                                // gemini 0.61.0's RetryableQuotaError
    "rate_limit_exceeded",                                  // OpenAI's code for a 429 that is a wait
    "perminute",           "per minute", "per_minute",
};

// Words of a per-day quota: Google's quota ids ("GenerateRequestsPerDay
// PerProjectPerModel-FreeTier"), gemini 0.61.0's "You have exhausted your
// daily quota on this model." It resets at midnight Pacific time.
const std::vector<std::string_view> kPerDayPhrases{"perday", "per_day", "per day", "daily quota"};

// Words of a rate limit or a usage window: wait (until the reset) and retry.
const std::vector<std::string_view> kRatePhrases{
    "rate limit",         "rate_limit",      "ratelimit",    "rate-limit",   "too many requests",
    "usage limit",  // Claude "Claude AI usage limit reached|<epoch>", codex "You've hit your usage limit"
    "5-hour limit",       "five-hour limit", "5 hour limit", "weekly limit", "session limit",
    "hit your limit",      // Claude "You've hit your limit · resets 7pm"
    "resource_exhausted",  // Google's 429 status name
};

// Words of a model that cannot be reached (network, DNS, TLS, the server's
// own 5xx): wait and retry.
const std::vector<std::string_view> kUnreachablePhrases{
    "connection refused",
    "econnrefused",
    "connectionrefused",
    "unable to connect",
    "could not connect",
    "failed to connect",
    "cannot connect",
    "connection error",
    "connection reset",
    "econnreset",
    "socket hang up",
    "network error",
    "networkerror",
    "fetch failed",
    "network is unreachable",
    "enetunreach",
    "ehostunreach",
    "no route to host",
    "reconnecting",
    "waiting for network",  // codex "Reconnecting... 1/5 (stream disconnected ...)"
    "stream disconnected",
    "error sending request",
    "could not resolve",
    "enotfound",
    "getaddrinfo",
    "name resolution",
    "dns error",
    "eai_again",
    "certificate",
    "tls handshake",
    "ssl handshake",
    "ssl error",
    "tls error",
    "overloaded",  // Anthropic 529 overloaded_error
    "internal server error",
    "bad gateway",
    "service unavailable",
    "gateway timeout",
    "server error",
    "api_error",  // Anthropic's 500 error type
    "etimedout",
    "connect timeout",
    "timed out connecting",
    "high demand",        // codex 0.171.0 on HTTP 500: "We're currently experiencing high demand, ..."
    "server-side issue",  // claude 2.1.197 on 500/529: "This is a server-side issue, usually temporary"
    "server had an error",
    "temporarily unavailable",
};

// `code` as an HTTP status: a number of its own right after a word that
// introduces a status ("HTTP 429", "API Error: 429", "status": 429), not
// "line 429" or "14290".
bool says_status(std::string_view l, std::string_view code) {
  for (size_t pos = l.find(code); pos != std::string_view::npos; pos = l.find(code, pos + 1)) {
    bool left = pos == 0 || !std::isdigit(static_cast<unsigned char>(l[pos - 1]));
    bool right = pos + code.size() >= l.size() || !std::isdigit(static_cast<unsigned char>(l[pos + code.size()]));
    if (!left || !right) continue;
    std::string_view before = l.substr(pos >= 12 ? pos - 12 : 0, pos >= 12 ? 12 : pos);
    for (std::string_view ctx : {"http", "status", "error", "code"})
      if (contains(before, ctx)) return true;
  }
  return false;
}

bool says_5xx(std::string_view l) {
  static const char* const kCodes[] = {"500", "502", "503", "504", "529"};
  for (const char* c : kCodes)
    if (says_status(l, c)) return true;
  return false;
}

bool says_any(std::string_view l, const std::vector<std::string_view>& phrases) {
  return std::any_of(phrases.begin(), phrases.end(), [&](std::string_view p) { return contains(l, p); });
}

// Which kind one line (lower case) names, if any. `rate_context`: the
// output carries a provider's words for a limit that passes with time
// (kProviderRateMarkers), which make its quota words a rate limit too.
LimitKind limit_kind_of(std::string_view l, bool rate_context) {
  if (says_any(l, kQuotaPhrases)) return LimitKind::kQuota;
  if (says_any(l, kQuotaWords)) {
    const bool passes = rate_context || says_any(l, kProviderRateMarkers) || says_any(l, kPerDayPhrases);
    return passes ? LimitKind::kRateLimit : LimitKind::kQuota;
  }
  for (auto p : kRatePhrases)
    if (contains(l, p)) return LimitKind::kRateLimit;
  if (says_status(l, "429")) return LimitKind::kRateLimit;
  for (auto p : kUnreachablePhrases)
    if (contains(l, p)) return LimitKind::kUnreachable;
  if (says_5xx(l)) return LimitKind::kUnreachable;
  return LimitKind::kNone;
}

// Where in `l` (lower case) the words of `kind` are, npos when nowhere.
size_t limit_words_at(std::string_view l, LimitKind kind) {
  size_t at = std::string_view::npos;
  auto earliest = [&](const std::vector<std::string_view>& phrases) {
    for (auto p : phrases) at = std::min(at, l.find(p));
  };
  if (kind == LimitKind::kQuota) {
    earliest(kQuotaPhrases);
    earliest(kQuotaWords);
  } else if (kind == LimitKind::kRateLimit) {
    earliest(kRatePhrases);
    at = std::min({at, l.find("quota"), l.find("429")});
  } else if (kind == LimitKind::kUnreachable) {
    earliest(kUnreachablePhrases);
    for (const char* c : {"500", "502", "503", "504", "529"}) at = std::min(at, l.find(c));
  }
  return at;
}

// A line of a CLI's own log (logfmt: `timestamp=... level=ERROR ...
// message="stream error" ... error.error="AI_APICallError: Overloaded"`, as
// opencode prints with --print-logs): only its error value speaks of the
// model; other log lines (a failed fetch of a model catalogue) do not.
// nullopt for a line that is not such a log line.
std::optional<std::string> log_line_error(std::string_view line) {
  if (!util::starts_with(line, "timestamp=") || !contains(line, " level=")) return std::nullopt;
  for (std::string_view key : {" error.error=\"", " error=\""}) {
    size_t at = line.find(key);
    if (at == std::string_view::npos) continue;
    std::string value;
    for (size_t i = at + key.size(); i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      value += line[i];
    }
    return value;
  }
  return std::string();
}

double unit_ms(const std::string& unit) {
  if (unit.empty()) return 1000;
  if (unit == "ms" || util::starts_with(unit, "milli")) return 1;
  if (unit[0] == 's') return 1000;
  if (unit[0] == 'm') return 60'000;
  if (unit[0] == 'h') return 3'600'000;
  return 1000;
}

const char* const kUnit = "(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)(?![a-z])";

}  // namespace

namespace {

// A calendar day a CLI named: "Dec 3rd, 2026". year 0: not given.
struct Day {
  int year = 0, month = 0, mday = 0;  // month 0..11
};

// The next time the wall clock in `zone` (an IANA name; "" or an unknown
// one: the local zone) shows hour:minute, after now_ms; in ms from now.
// With `day`, that time on that day (the next such day when the year is
// not given), which may be past: negative.
long long until_wall_clock_ms(int hour, int minute, const std::string& zone, long long now_ms,
                              const Day* day = nullptr) {
  // mktime reads TZ: one at a time, and put back as it was.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const char* old = ::getenv("TZ");
  const std::string saved = old ? old : "";
  const bool known = !zone.empty() && zone.find("..") == std::string::npos &&
                     (zone == "UTC" || fs::exists("/usr/share/zoneinfo/" + zone));
  if (known) {
    ::setenv("TZ", zone.c_str(), 1);
    ::tzset();
  }
  const time_t now = static_cast<time_t>(now_ms / 1000);
  struct tm lt {};
  ::localtime_r(&now, &lt);
  const int this_year = lt.tm_year;
  // hour:minute on `lt`'s day (of `year` when given), by the zone's rules.
  auto at_clock = [&](int year) {
    if (day) {
      lt.tm_year = year;
      lt.tm_mon = day->month;
      lt.tm_mday = day->mday;
    }
    lt.tm_hour = hour;
    lt.tm_min = minute;
    lt.tm_sec = 0;
    lt.tm_isdst = -1;
    return ::mktime(&lt);
  };
  time_t at = at_clock(day && day->year ? day->year - 1900 : this_year);
  if (day && !day->year && at <= now) {  // "Jan 2nd" said on Dec 31st: next year's
    at = at_clock(this_year + 1);
  } else if (!day && at <= now) {
    ::localtime_r(&now, &lt);
    lt.tm_mday += 1;
    at = at_clock(0);
  }
  if (known) {
    if (old) ::setenv("TZ", saved.c_str(), 1);
    else ::unsetenv("TZ");
    ::tzset();
  }
  return static_cast<long long>(at) * 1000 - now_ms;
}

std::optional<long long> retry_after_ms_or_throw(std::string_view text_in, long long now_ms) {
  // Regexes only ever see one bounded line: libstdc++'s matcher recurses
  // per character.
  const std::string text = lower(text_in.substr(0, kErrorTextBytes));
  // Lower-cased above, so no icase (which libstdc++ makes slow).
  const auto kSyntax = std::regex::ECMAScript;
  std::smatch m;
  auto to_ms = [](double v) -> std::optional<long long> {
    // Nothing sensible waits longer than a year (and llround must not overflow).
    if (!(v > 0) || !(v < 366.0 * 24 * 3600 * 1000)) return std::nullopt;
    return static_cast<long long>(std::llround(v));
  };
  auto duration = [&](const std::string& s) -> double {
    static const std::regex part(std::string("(\\d+(?:\\.\\d+)?)\\s*") + kUnit, kSyntax);
    double total = 0;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), part); it != std::sregex_iterator(); ++it)
      total += std::stod((*it)[1].str()) * unit_ms((*it)[2].str());
    return total;
  };

  static const std::regex after_ms(R"(retry[-_ ]?after[-_ ]?ms["']?\s*[:=]?\s*(\d+))", kSyntax);
  if (std::regex_search(text, m, after_ms)) return to_ms(std::stod(m[1].str()));
  static const std::regex after(
      std::string(R"(retry[-_ ]?after["']?\s*[:=]?\s*(\d+(?:\.\d+)?)\s*)") + "(?:" + kUnit + ")?", kSyntax);
  if (std::regex_search(text, m, after)) return to_ms(std::stod(m[1].str()) * unit_ms(m[2].str()));
  static const std::regex delay(R"(retrydelay["']?\s*[:=]\s*["']?(\d+(?:\.\d+)?)s)", kSyntax);
  if (std::regex_search(text, m, delay)) return to_ms(std::stod(m[1].str()) * 1000);
  static const std::regex again(
      std::string(R"((?:try again|retry|retrying|resets?|available again|available) in\s+((?:\d+(?:\.\d+)?\s*)") +
          kUnit + R"(\s*)+))",
      kSyntax);
  if (std::regex_search(text, m, again)) return to_ms(duration(m[1].str()));
  static const std::regex epoch(R"((?:limit reached\||resets?_?at["']?\s*[:=]?\s*|ratelimit-unified-reset["']?\s*[:=]?\s*)(\d{10,13})(?!\d))", kSyntax);
  if (std::regex_search(text, m, epoch)) {
    long long v = std::stoll(m[1].str());
    long long at_ms = m[1].length() > 10 ? v : v * 1000;
    return to_ms(static_cast<double>(at_ms - now_ms));
  }
  // A wall-clock time: "try again at 14:05", "resets 3am (Europe/Berlin)",
  // "resets at 7:30 pm"; on another day with the day before it, as codex
  // says a reset past midnight: "try again at Dec 3rd, 2026 1:08 AM". An
  // hour alone needs am/pm.
  static const std::regex clock(
      R"((?:try again|retry|resets?|reset|available again|available)(?: at| on)?\s+)"
      R"((?:(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(\d{4}),?\s+)?(?:at\s+)?)?)"
      R"((\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?)",
      kSyntax);
  if (std::regex_search(text, m, clock) && (m[5].matched || m[6].matched)) {
    Day day;
    if (m[1].matched) {
      static const std::string kMonths = "janfebmaraprmayjunjulaugsepoctnovdec";
      day.month = static_cast<int>(kMonths.find(m[1].str()) / 3);
      day.mday = std::stoi(m[2].str());
      day.year = m[3].matched ? std::stoi(m[3].str()) : 0;
      if (day.mday < 1 || day.mday > 31 || (day.year && (day.year < 1970 || day.year > 9999))) return std::nullopt;
    }
    int hour = std::stoi(m[4].str());
    int minute = m[5].matched ? std::stoi(m[5].str()) : 0;
    if (m[6].matched) {
      if (hour < 1 || hour > 12) return std::nullopt;
      const bool pm = m[6].str()[0] == 'p';
      hour = hour % 12 + (pm ? 12 : 0);
    }
    if (hour > 23 || minute > 59) return std::nullopt;
    // The zone in its own spelling: "(Europe/Berlin)", "(UTC)".
    static const std::regex zone_re(R"(\(([A-Za-z_]+(?:/[A-Za-z0-9_+-]+)+|UTC)\))", kSyntax);
    const std::string orig(text_in.substr(0, kErrorTextBytes));
    std::smatch z;
    std::string zone = std::regex_search(orig, z, zone_re) ? z[1].str() : "";
    return to_ms(static_cast<double>(until_wall_clock_ms(hour, minute, zone, now_ms, m[1].matched ? &day : nullptr)));
  }
  return std::nullopt;
}

}  // namespace

std::optional<long long> parse_retry_after_ms(std::string_view text, long long now_ms) {
  try {
    return retry_after_ms_or_throw(text, now_ms);
  } catch (const std::exception&) {
    // A number too large for stod/stoll says nothing usable.
    return std::nullopt;
  }
}


namespace {

// One line the CLI said itself.
struct Said {
  std::string text;   // as printed (trimmed, bounded)
  std::string lower;  // for matching
};

// What the CLI said: its non-JSON output lines plus report.error_texts
// (JSON lines are its structured output: only their error texts count, as
// an agent message or a tool result may quote anything), minus every line
// that also appears in `prompt` (agents echo it back).
std::vector<Said> lines_said(std::string_view output, const AgentReport& report, std::string_view prompt) {
  std::set<std::string> echoed;
  for (const std::string& l : util::split_lines(prompt)) {
    std::string t = lower(util::trim(l));
    if (!t.empty()) echoed.insert(std::move(t));
  }
  std::vector<Said> said;
  auto take = [&](std::string_view text) {
    for (const std::string& l : util::split_lines(text)) {
      std::string t = util::trim(l);
      if (std::optional<std::string> e = log_line_error(t)) t = util::trim(*e);
      if (t.size() > kErrorTextBytes) t.resize(kErrorTextBytes);
      std::string low = lower(t);
      if (t.empty() || echoed.count(low)) continue;
      said.push_back({std::move(t), std::move(low)});
    }
  };
  for (const std::string& l : util::split_lines(output))
    if (!parse_object(l)) take(l);
  for (const std::string& e : report.error_texts) take(e);
  return said;
}

// The first line of the strongest kind said (quota, then rate limit, then
// unreachable), cut around the words that said so when it is long (a
// stack, a JSON body): the cause is what the one-line message names.
LimitHit strongest_limit(const std::vector<Said>& said) {
  bool rate_context = false;
  for (const Said& s : said) rate_context = rate_context || says_any(s.lower, kProviderRateMarkers);
  LimitHit hit;
  for (LimitKind want : {LimitKind::kQuota, LimitKind::kRateLimit, LimitKind::kUnreachable}) {
    for (const Said& s : said) {
      if (limit_kind_of(s.lower, rate_context) != want) continue;
      hit.kind = want;
      size_t at = limit_words_at(s.lower, want);
      const size_t kBefore = 60;
      if (s.text.size() > 200 && at != std::string::npos && at > kBefore)
        hit.line = "…" + one_line(std::string_view(s.text).substr(at - kBefore));
      else hit.line = one_line(s.text);
      return hit;
    }
  }
  return hit;
}

// When to retry, as the CLI said it; for a per-day quota, its reset: the
// next midnight in America/Los_Angeles, whatever shorter delay came with it.
std::optional<long long> retry_time(const std::vector<Said>& said, long long now_ms) {
  for (const Said& s : said)
    if (says_any(s.lower, kPerDayPhrases)) return until_wall_clock_ms(0, 0, "America/Los_Angeles", now_ms);
  for (const Said& s : said) {
    const std::string& l = s.lower;
    if (!contains(l, "retry") && !contains(l, "try again") && !contains(l, "reset") && !contains(l, "|") &&
        !contains(l, "available"))
      continue;
    if (auto ms = parse_retry_after_ms(s.text, now_ms)) return ms;
  }
  return std::nullopt;
}

}  // namespace

LimitHit find_limit(std::string_view output, const AgentReport& report, std::string_view prompt, long long now_ms) {
  const std::vector<Said> said = lines_said(output, report, prompt);
  LimitHit hit = strongest_limit(said);
  if (hit.kind != LimitKind::kNone) hit.retry_after_ms = retry_time(said, now_ms);
  return hit;
}

long long wait_ms(const Classification& c, int waits_so_far, long long left_ms) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  // Backoff: 1 s doubling per waiting run in a row, at most 5 min, ±20 %.
  const long long base = std::min<long long>(1000LL << std::min(waits_so_far, 9), 300'000);
  std::uniform_real_distribution<double> spread(0.80, 1.20);
  long long wait = static_cast<long long>(base * spread(rng));
  if (c.retry_after_ms > 0) {
    // What the CLI asked for (a reset time), plus up to 10 % so that many
    // waiting runs do not all come back in the same second; never less
    // than the backoff of a provider that keeps refusing.
    std::uniform_real_distribution<double> jitter(0.0, 0.10);
    wait = std::max(wait, c.retry_after_ms + static_cast<long long>(c.retry_after_ms * jitter(rng)));
  }
  if (left_ms > 0) wait = std::min(wait, left_ms);
  return std::max<long long>(wait, 1);
}

}  // namespace phoenix::agent
