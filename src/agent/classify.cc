#include "agent/classify.h"

#include <signal.h>
#include <string.h>

#include <cstdio>
#include <set>

#include "agent/internal.h"
#include "agent/limits.h"
#include "agent/report.h"
#include "util/format.h"
#include "util/text.h"

namespace phoenix::agent {
namespace {

using namespace detail;  // NOLINT: agent/'s own helpers
using util::lower;
using util::plural;

// A crash's detail: its first error line and at most this many last lines.
constexpr size_t kCrashTailLines = 5;
constexpr size_t kCrashTailBytes = 1024;

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::kProposed: return "proposed";
    case Status::kNothing: return "nothing";
    case Status::kUnavailable: return "unavailable";
    case Status::kRateLimited: return "rate-limited";
    case Status::kUnreachable: return "unreachable";
    case Status::kQuota: return "quota";
    case Status::kTimeout: return "timeout";
    case Status::kCrashed: return "crashed";
    case Status::kAborted: return "aborted";
    case Status::kOwnFailure: return "phoenix-failure";
  }
  return "?";
}

namespace {

// The first line of `output` that reads like an error (not JSON, not an
// echo of the prompt), else the first non-empty line; bounded.
std::string first_error_line(std::string_view output, std::string_view prompt) {
  std::set<std::string> echoed;
  for (const std::string& l : util::split_lines(prompt)) echoed.insert(util::trim(l));
  std::string first;
  for (const std::string& raw : util::split_lines(output)) {
    std::string t = util::trim(raw);
    if (t.empty() || echoed.count(t) || parse_object(t)) continue;
    if (first.empty()) first = one_line(t, 300);
    std::string low = lower(t);
    if (contains(low, "error") || contains(low, "unexpected") || contains(low, "fatal") || contains(low, "failed") ||
        contains(low, "unable") || contains(low, "cannot") || contains(low, "not ") || contains(low, "panic"))
      return one_line(t, 300);
  }
  return first;
}

}  // namespace

namespace {

// The last lines of the output that are not an echo of the prompt,
// bounded, joined by " | ".
std::string last_lines(std::string_view output, std::string_view prompt, size_t n, size_t max_bytes) {
  std::set<std::string> echoed;
  for (const std::string& l : util::split_lines(prompt)) echoed.insert(util::trim(l));
  std::vector<std::string> lines;
  for (const std::string& raw : util::split_lines(output)) {
    std::string t = util::trim(raw);
    if (!t.empty() && !echoed.count(t)) lines.push_back(one_line(t, 300));
  }
  std::string out;
  size_t from = lines.size() > n ? lines.size() - n : 0;
  for (size_t i = from; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  if (out.size() > max_bytes) out = "…" + out.substr(out.size() - max_bytes);
  return out;
}

// Quota, rate limit, unreachable: read when the run failed, changed
// nothing or was stopped at its timeout (a CLI that retries a 429 or a
// refused connection inside itself until then was never working), and
// never when its JSON says all went well. True when `c` is decided.
bool hit_a_limit(Classification& c, const RunFacts& f, const AgentReport& rep, const std::string& discarded,
                 long long now_ms) {
  const bool said_ok = rep.is_error.has_value() && !*rep.is_error;
  const bool failed = f.exit_code != 0 || rep.is_error.value_or(false) || f.timed_out;
  if (said_ok || !(failed || f.changed_files == 0)) return false;
  LimitHit hit = find_limit(f.output, rep, f.prompt, now_ms);
  if (hit.kind != LimitKind::kNone) c.first_error = hit.line;
  if (hit.kind == LimitKind::kQuota) {
    c.status = Status::kQuota;
    c.retry_after_ms = hit.retry_after_ms.value_or(0);
    c.detail = "quota: " + hit.line + discarded;
    return true;
  }
  if (hit.kind != LimitKind::kRateLimit && hit.kind != LimitKind::kUnreachable) return false;
  c.status = hit.kind == LimitKind::kRateLimit ? Status::kRateLimited : Status::kUnreachable;
  c.retry_after_ms = hit.retry_after_ms.value_or(0);
  c.retry_after_from_cli = hit.retry_after_ms.has_value();
  // A model that could not be reached answered nothing, whatever turn
  // count the CLI gives its failed run.
  if (hit.kind == LimitKind::kUnreachable) c.model_calls = 0;
  c.detail = std::string(hit.kind == LimitKind::kRateLimit ? "rate limit: " : "unreachable: ") + hit.line +
             (f.timed_out ? " (until its timeout)" : "") + discarded;
  return true;
}

// A run that ended by itself without changing anything: crashed, said an
// error, or simply did nothing.
void ended_with_nothing(Classification& c, const RunFacts& f, const AgentReport& rep) {
  const std::string& prog = f.program;
  // A crash keeps the first error line and the last lines: the cause is
  // often printed first ("unexpected argument"), a hint last ("--help").
  auto what_it_said = [&]() {
    std::string first = c.first_error;
    if (first.empty() && !rep.message.empty()) first = rep.message;
    std::string tail = last_lines(f.output, f.prompt, kCrashTailLines, kCrashTailBytes);
    std::string out = first;
    if (!tail.empty() && tail != first) out += (out.empty() ? "" : "; last lines: ") + tail;
    return out.empty() ? std::string() : ": " + out;
  };
  if (f.term_signal) {
    c.status = Status::kCrashed;
    c.detail = prog + " was killed by " + signal_name(f.term_signal) + " without changing anything" + what_it_said();
  } else if (f.exit_code != 0) {
    c.status = Status::kCrashed;
    c.detail = prog + " exited " + std::to_string(f.exit_code) + " without changing anything" + what_it_said();
  } else if (rep.is_error.value_or(false)) {
    c.status = Status::kCrashed;
    c.detail = prog + " reported an error and changed nothing" + (rep.message.empty() ? "" : ": " + rep.message);
  } else {
    c.status = Status::kNothing;
    c.detail = "the agent changed nothing";
  }
}

}  // namespace

Classification classify_run(const RunFacts& f, long long now_ms) {
  Classification c;
  const AgentReport rep = parse_agent_report(f.output);
  c.cost_usd = rep.cost_usd;
  c.turns = rep.turns;
  c.model_calls = rep.model_calls;
  const std::string& prog = f.program;
  const bool changed = f.changed_files > 0;
  const std::string discarded =
      changed ? "; " + plural(f.changed_files, "changed file", "changed files") + " discarded" : "";

  if (f.not_found) {
    c.status = Status::kUnavailable;
    c.detail = prog + " is not installed (not found on PATH)";
    return c;
  }
  if (f.not_executable) {
    c.status = Status::kUnavailable;
    c.detail = prog + " cannot be executed";
    return c;
  }
  if (f.interrupted) {
    c.status = Status::kCrashed;
    c.detail = prog + " was stopped: Phoenix was interrupted" + discarded;
    return c;
  }
  c.first_error =
      rep.error_texts.empty() ? first_error_line(f.output, f.prompt) : one_line(rep.error_texts.front(), 300);
  if (hit_a_limit(c, f, rep, discarded, now_ms)) return c;
  if (f.timed_out) {
    c.status = Status::kTimeout;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", f.timeout_s);
    c.detail = prog + " was stopped at its timeout of " + secs + " s (its whole process group killed)" + discarded;
    return c;
  }
  if (changed) {
    c.status = Status::kProposed;
    c.detail = plural(f.changed_files, "file", "files") + " changed";
    if (f.term_signal) c.detail += "; " + prog + " ended by " + signal_name(f.term_signal);
    else if (f.exit_code != 0) c.detail += "; " + prog + " exited " + std::to_string(f.exit_code);
    return c;
  }
  ended_with_nothing(c, f, rep);
  return c;
}

RunFacts run_facts(const std::string& program, const util::ProcessResult& r, double timeout_s,
                   const std::string& prompt, size_t changed_files) {
  RunFacts f;
  f.program = program;
  f.not_found = r.not_found;
  f.not_executable = r.not_executable;
  f.timed_out = r.timed_out;
  f.interrupted = r.interrupted;
  f.exit_code = r.exit_code;
  f.term_signal = r.term_signal;
  f.timeout_s = timeout_s;
  f.output = r.output;
  f.prompt = prompt;
  f.changed_files = changed_files;
  return f;
}

std::string unusable_line(const std::string& what, const std::string& program, const std::string& cause) {
  std::string line = "harness " + what + ": " + program + ": " + cause;
  for (char& ch : line)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return line;
}

}  // namespace phoenix::agent
