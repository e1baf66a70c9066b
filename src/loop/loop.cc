#include "loop/loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "gitx/worktree.h"
#include "layout/layout.h"
#include "loop/internal.h"
#include "loop/notify.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/format.h"
#include "util/path.h"
#include "util/signals.h"
#include "util/sleep.h"
#include "util/text.h"

namespace phoenix::loop {

using util::Json;

std::string default_branch(long long now_ms) {
  std::time_t t = static_cast<std::time_t>(now_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y%m%d", &tm);
  return layout::loop_branch(buf);
}

long long parse_until(const std::string& text, long long now_ms) {
  int h = 0, m = 0, s = 0, Y = 0, M = 0, D = 0;
  char tail[16] = {0};
  std::time_t now = static_cast<std::time_t>(now_ms / 1000);
  if (text.size() == 5 && std::sscanf(text.c_str(), "%2d:%2d", &h, &m) == 2 && text[2] == ':') {
    if (h > 23 || m > 59) throw UsageError("--until " + text + ": not a time of day");
    std::tm tm{};
    localtime_r(&now, &tm);
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = 0;
    tm.tm_isdst = -1;
    std::time_t at = std::mktime(&tm);
    if (at <= now) {  // already past today: tomorrow at that time
      tm.tm_mday += 1;
      tm.tm_isdst = -1;
      at = std::mktime(&tm);
    }
    return static_cast<long long>(at) * 1000;
  }
  int n = std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%15s", &Y, &M, &D, &h, &m, &s, tail);
  if (n < 6) {
    // Without seconds: "2026-12-01T06:00Z".
    s = 0;
    n = std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d%15s", &Y, &M, &D, &h, &m, tail);
    if (n < 5) throw UsageError("--until " + text + ": expected HH:MM or ISO-8601 (2026-12-01T06:00:00Z)");
  }
  std::tm tm = util::civil_tm(Y, M, D, h, m, s);
  std::string z = tail;
  if (z.empty()) {  // no zone: local time, as a person means it
    tm.tm_isdst = -1;
    return static_cast<long long>(std::mktime(&tm)) * 1000;
  }
  long long at = static_cast<long long>(timegm(&tm));
  if (z == "Z") return at * 1000;
  int zh = 0, zm = 0;
  if ((z[0] == '+' || z[0] == '-') && std::sscanf(z.c_str() + 1, "%2d:%2d", &zh, &zm) == 2) {
    long long off = (zh * 3600LL + zm * 60LL) * (z[0] == '+' ? 1 : -1);
    return (at - off) * 1000;
  }
  throw UsageError("--until " + text + ": unknown time zone '" + z + "'");
}

namespace internal {

// Milliseconds left until --until: the nearer of the wall clock's answer
// and the monotonic clock's since the start, so a wall clock stepped
// forward past the deadline stops the loop at once and one stepped back
// does not stretch the night. Empty without --until.
std::optional<long long> Loop::ms_to_deadline() const {
  if (!opt.deadline_ms) return std::nullopt;
  const long long since_start =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  return std::min(*opt.deadline_ms - util::now_ms(), deadline_from_start_ms - since_start);
}

// `sync`: util::Sync::kAtomic for a transient phase inside an iteration,
// which the iteration's last (durable) write follows (loop/state.h).
void Loop::phase(Phase p, const std::function<void(Json&)>& more, util::Sync sync) {
  state.update(
      [&](Json& s) {
        s["phase"] = p;
        s["iteration"] = iteration.load();
        s["session_retries"] = session_retries.load();
        if (repo) s["head"] = repo->head_sha();
        if (repo) {
          if (auto kg = repo->read_ref(kg_ref)) s["known_good"] = *kg;
        }
        s["caps"] = caps_figures();
        if (more) more(s);
      },
      sync);
}

// Moves the loop's branch to the worktree's HEAD.
void Loop::sync_branch(const std::string& why) {
  repo->write_ref("refs/heads/" + branch, repo->head_sha(), "phoenix-loop: " + why);
}

void Loop::write_run_file() {
  Json j{{"schema_version", 1},
         {"branch", branch},
         {"worktree", wt},
         {"worktree_name", wt_name},
         {"tasks", tasks_rel},
         {"prompt", prompt_rel},
         {"skipped", std::vector<int>(skipped.begin(), skipped.end())},
         {"ignored", std::vector<std::string>(ignored.begin(), ignored.end())},
         {"known_red", known_red_json()},
         {"workers", workers},
         {"queue", queue_json()}};
  util::write_file_atomic(layout::loop_run_file(root), j.dump(2) + "\n");
}

Json Loop::queue_json() const {
  Json a = Json::array();
  for (const auto& e : queue) a.push_back(to_json(e));
  return a;
}

// loop.notify's webhook and command (loop/notify.h); a failure is said, never fatal.
void Loop::notify(const std::string& event, const std::string& incident, const std::string& summary) {
  LoopNotice n{root,  branch, layout::loop_state_file(root), state.snapshot(),
               trace, say,    [&](long long ms) { nap(ms); }};
  notify_loop_event(cfg.loop, n, event, incident, summary);
}

// How long the loop waits on a rate-limited or unreachable model in a
// row: harness.max_wait_s when set, else until --until (no --until: as
// long as it takes; every wait is at most the reset time or 5 min).
double Loop::max_wait_s() const {
  if (cfg.harness.max_wait_s) return std::min(*cfg.harness.max_wait_s, caps_seconds_left());
  if (auto left = ms_to_deadline())
    return std::min(caps_seconds_left(), std::max(0.0, static_cast<double>(*left) / 1000.0));
  return caps_seconds_left();
}

// Sleeps up to ms, returning early on a signal, a STOP file or --until.
void Loop::nap(long long ms) {
  util::interruptible_sleep_ms(ms, [&] {
    if (util::path_exists(layout::stop_flag(root))) return true;
    auto left = ms_to_deadline();
    return left && *left <= 0;
  });
}

}  // namespace internal

int run_loop(const Options& options, const config::Config& cfg, trace::Trace& trace,
             const std::function<void(const std::string&)>& say) {
  gitx::set_lock_wait_s(cfg.git_lock_wait_s);
  internal::Loop l(options, cfg, trace, say);
  try {
    return l.run();
  } catch (const Error& e) {
    if (util::interrupted_signal() != 0 || e.exit_code() == kExitInterrupted) {
      if (l.repo) return l.interrupted();
    }
    if (l.repo) {
      // Setup went through: the state file must say the loop is over, and
      // why. Best effort: on a full disk these writes fail too, and then the
      // last state written stays (whole: it is replaced atomically) and the
      // error that stopped the loop is the one reported.
      try {
        l.phase(engine::Phase::kFailed, [&](Json& s) {
          s["exit_code"] = e.exit_code();
          s["error"] = e.what();
        });
      } catch (const Error&) {}
      try {
        l.trace.append(trace::event::kLoopEnd,
                       {{"exit_code", e.exit_code()}, {"phase", engine::Phase::kFailed}, {"why", e.what()}});
      } catch (const Error&) {}
    }
    throw;
  }
}

}  // namespace phoenix::loop
