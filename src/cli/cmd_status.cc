// `phoenix status [--json] [--watch]`: what the loop is doing, from
// .phoenix/loop-state.json (written atomically by phoenix-loop, so a read
// never sees half a state). A state whose loop has not finished
// (exit_code null) is reported as stale only when both its heartbeat
// stopped (updated_at older than three heartbeats, loop.heartbeat_s) and
// its pid is gone: the loop died without writing its end (kill -9, power
// cut); `phoenix-loop --resume` carries on. Either alone is not enough: a
// loop in another pid namespace (a container sharing the folder) has a pid
// we cannot see, and a busy machine can delay a heartbeat.
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <thread>

#include "cli/app.h"
#include "config/config.h"
#include "hook/runs.h"
#include "journal/journal.h"
#include "layout/paths.h"
#include "loop/caps.h"
#include "loop/loop.h"
#include "util/clock.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/signals.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::cli {

namespace {

using nlohmann::json;

bool pid_alive(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Milliseconds since the state's updated_at; -1 when it cannot be read.
long long age_ms(const json& s) {
  if (!s.contains("updated_at") || !s["updated_at"].is_string()) return -1;
  long long t = util::iso8601_ms(s["updated_at"].get<std::string>());
  return t < 0 ? -1 : util::now_ms() - t;
}

std::string str(const json& s, const char* key) {
  if (!s.contains(key) || s[key].is_null()) return "-";
  if (s[key].is_string()) return s[key].get<std::string>();
  return s[key].dump();
}

// The flake ledger's tests ("unit: tests/test_x.py::test_t"), most recently
// seen first; none when there is no journal or it cannot be read.
std::vector<std::string> flaky_tests(const std::string& root) {
  std::vector<std::string> out;
  if (!util::path_exists(layout::journal_file(root))) return out;
  try {
    journal::OpenOptions o;
    o.create = false;
    o.busy_timeout_ms = 500;  // a loop writing it costs this line, never the status
    for (const auto& f : journal::Journal::open(layout::journal_file(root), o).flakes())
      out.push_back(f.check + ": " + f.test);
  } catch (const Error&) {}
  return out;
}

void print_human(const Context& ctx, const json& s, bool stale, const std::vector<std::string>& flakes) {
  std::string phase = str(s, "phase");
  std::cout << "phase:      "
            << (stale ? red(ctx, phase + " (stale: heartbeat stopped and pid " + str(s, "pid") +
                                     " is gone; phoenix-loop --resume carries on)")
                      : bold(ctx, phase))
            << "\n";
  if (s.contains("task") && s["task"].is_object()) {
    const json& t = s["task"];
    std::cout << "task:       " << t.value("index", 0) + 1 << "/" << t.value("total", 0) << " " << t.value("title", "")
              << "\n";
  }
  // --workers N: what each busy worker is on, and the merge queue in order.
  if (s.contains("workers") && s["workers"].is_array())
    for (const json& w : s["workers"])
      if (w.is_object() && w.contains("task") && w["task"].is_object())
        std::cout << "worker:     " << w["task"].value("id", "") << " " << w["task"].value("title", "") << " ("
                  << w.value("phase", "") << ")\n";
  if (s.contains("queue") && s["queue"].is_array() && !s["queue"].empty()) {
    std::cout << "queue:     ";
    for (const json& e : s["queue"])
      if (e.is_object() && e.contains("task") && e["task"].is_object()) std::cout << " " << e["task"].value("id", "");
    std::cout << "\n";
  }
  std::cout << "iteration:  " << str(s, "iteration") << " of " << str(s, "max_iterations") << "\n";
  std::cout << "attempts:   " << str(s, "retry_count") << " on this task, " << str(s, "session_retries")
            << " in the loop (session_cap counts these)\n";
  if (!s["last_failure_type"].is_null())
    std::cout << "last red:   " << str(s, "last_failure_type") << " " << str(s, "last_signature") << "\n";
  if (!s["last_incident"].is_null()) std::cout << "incident:   " << str(s, "last_incident") << "\n";
  // The night's known red: what failed before its first task, no task's fault.
  if (s.contains("known_red") && s["known_red"].is_object())
    for (auto it = s["known_red"].begin(); it != s["known_red"].end(); ++it) {
      std::string tests;
      for (const auto& t : it.value().value("tests", std::vector<std::string>{}))
        tests += (tests.empty() ? "" : ", ") + t;
      std::cout << "known red:  " << it.key() << ": " << (tests.empty() ? "the whole check" : tests) << "\n";
    }
  std::cout << "known-good: " << util::sha12(str(s, "known_good")) << "   head: " << util::sha12(str(s, "head"))
            << "\n";
  std::cout << "started:    " << str(s, "started_at") << "   updated: " << str(s, "updated_at") << "\n";
  if (!s["deadline"].is_null()) std::cout << "until:      " << str(s, "deadline") << "\n";
  if (s.contains("waiting_until") && s["waiting_until"].is_string()) {
    // "waiting: rate limit until 03:00" (local time, as the user reads a clock).
    long long at = util::iso8601_ms(s["waiting_until"].get<std::string>());
    std::string hhmm = str(s, "waiting_until");
    if (at >= 0) hhmm = util::local_hhmm(at);
    const std::string why = str(s, "waiting_for") == "unreachable" ? "model unreachable" : "rate limit";
    std::cout << "waiting: " << why << " until " << hhmm << "\n";
  }
  if (s.contains("caps") && s["caps"].is_object()) std::cout << "spent:      " << loop::figures_text(s["caps"]) << "\n";
  std::cout << "exit code:  " << (s["exit_code"].is_null() ? "(running)" : str(s, "exit_code")) << "\n";
  if (!flakes.empty())
    std::cout << "flaky:      " << util::plural(static_cast<long long>(flakes.size()), "test", "tests")
              << " in the flake ledger, last " << flakes.front() << " ('phoenix journal flaky')\n";
}

}  // namespace

int cmd_status(const std::vector<std::string>& args) {
  po::options_description desc("status options");
  desc.add_options()("watch", "print again every 2 seconds until the loop ends");
  Parsed p;
  if (!parse_command("status", desc, args, p, false)) return kExitOk;
  std::string path = layout::loop_state_file(p.ctx.root);
  bool watch = p.vm.count("watch") > 0;
  double heartbeat_s = 5;
  try {
    heartbeat_s = config::load(p.ctx.root, false).loop.heartbeat_s;
  } catch (const Error&) {
    // A broken phoenix.json must not hide the state: keep the default.
  }
  // Three missed heartbeats, and never less than two seconds.
  long long silent_ms = std::max<long long>(2000, static_cast<long long>(heartbeat_s * 3000));
  // Pushes the pre-push hook noticed went out unmeasured (--no-verify,
  // PHOENIX_SKIP=1): said before anything of the loop.
  const json unmeasured = hook::unmeasured_pushes(p.ctx.root);
  if (!p.ctx.json)
    for (const json& u : unmeasured) {
      std::string ref = u.value("remote_ref", "");
      if (util::starts_with(ref, "refs/heads/")) ref = ref.substr(11);
      std::cout << "unmeasured: "
                << red(p.ctx, u.value("remote", "") + "/" + ref + " at " + util::sha12(u.value("commit", "")))
                << " was pushed without Phoenix's checks (noticed " << u.value("noticed_at", "") << ")\n";
    }
  std::optional<std::vector<std::string>> flakes;  // read once, not at every --watch refresh
  for (;;) {
    if (!util::path_exists(path)) {
      if (!unmeasured.empty()) {
        if (p.ctx.json) print_json(p.ctx, {{"unmeasured_pushes", unmeasured}});
        return kExitOk;
      }
      std::cerr << "phoenix: no loop has run here (" << path << " is missing)\n";
      return kExitRed;
    }
    json s = util::parse_json(util::read_file(path), path);
    if (!flakes) flakes = flaky_tests(p.ctx.root);
    bool finished = s.contains("exit_code") && !s["exit_code"].is_null();
    long long age = age_ms(s);
    bool heartbeat_stopped = age < 0 || age > silent_ms;
    bool stale = !finished && heartbeat_stopped && !pid_alive(s.value("pid", 0L));
    if (p.ctx.json) {
      json out = s;
      out["stale"] = stale;
      if (!unmeasured.empty()) out["unmeasured_pushes"] = unmeasured;
      out["flaky_tests"] = *flakes;
      print_json(p.ctx, out);
    } else {
      print_human(p.ctx, s, stale, *flakes);
    }
    if (!watch || finished || stale) return kExitOk;
    for (int i = 0; i < 20; ++i) {
      if (util::interrupted_signal() != 0) return kExitInterrupted;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!p.ctx.json) std::cout << "\n";
  }
}

}  // namespace phoenix::cli
