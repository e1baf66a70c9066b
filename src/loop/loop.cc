#include "loop/loop.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include "checks/check.h"
#include "engine/cycle.h"
#include "engine/measure.h"
#include "engine/incident.h"
#include "engine/session.h"
#include "engine/signature.h"
#include "agent/agent.h"
#include "gitx/repo.h"
#include "gitx/worktree.h"
#include "layout/layout.h"
#include "loop/queue.h"
#include "loop/acceptance.h"
#include "loop/attempts.h"
#include "loop/caps.h"
#include "loop/notify.h"
#include "loop/state.h"
#include "loop/tasks.h"
#include "loop/tree.h"
#include "loop/workers.h"
#include "setup/guard.h"
#include "setup/setup.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format.h"
#include "util/lock.h"
#include "util/path.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::loop {

namespace fs = std::filesystem;
using util::iso8601;
using util::Json;

std::string state_path(const std::string& root) { return root + "/.phoenix/loop-state.json"; }
std::string stop_path(const std::string& root) { return root + "/.phoenix/STOP"; }
std::string run_path(const std::string& root) { return root + "/.phoenix/loop-run.json"; }

std::string default_branch(long long now_ms) {
  std::time_t t = static_cast<std::time_t>(now_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "phoenix/loop-%Y%m%d", &tm);
  return buf;
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

namespace {

// Untracked run-time state never counts as a change of the agent's.
const std::vector<std::string>& kKeep = layout::keep_prefixes();

constexpr const char* kPromise = "<promise>COMPLETE</promise>";

struct Loop {
  const Options& opt;
  const config::Config& cfg;
  trace::Trace& trace;
  std::function<void(const std::string&)> say;

  std::string root, wt, branch, wt_name, tasks_rel, prompt_rel;
  std::string kg_ref;  // the loop branch's known-good (layout::known_good_ref_of)
  TaskBook book{cfg};  // every task's attempts over the night (loop/attempts.h)
  std::optional<gitx::Repo> repo;       // the worktree's
  std::optional<gitx::Repo> main_repo;  // the user's repository
  StateFile state{state_path(opt.root)};
  int max_iterations = 0;
  std::atomic<int> iteration{0};        // workers count theirs here too
  std::atomic<int> session_retries{0};  // heal attempts over the whole run, every worker's
  int workers = 1;
  std::deque<QueueEntry> queue;  // the merge queue (--workers N)
  int escalations_in_row = 0;
  int no_progress = 0;
  int rate_waits = 0;            // rate-limited or unreachable harness runs in a row
  long long rate_waited_ms = 0;  // waited on them in a row (harness.max_wait_s bounds it when set)
  std::set<int> skipped;
  std::set<std::string> ignored;  // checks red at the baseline, loop.baseline = ignore
  std::string last_failure, last_incident;
  // Caps, acceptance checks, webhooks (loop/caps.h, loop/acceptance.h, loop/notify.h).
  Caps caps{CapLimits{opt.max_cost_usd ? opt.max_cost_usd : cfg.loop.max_cost_usd,
                      opt.max_hours ? opt.max_hours : cfg.loop.max_hours}};
  mutable std::mutex caps_mu;  // workers' agent runs and heals add to the caps from their threads
  Json caps_figures() const {
    std::lock_guard<std::mutex> g(caps_mu);
    return caps.figures();
  }
  double caps_seconds_left() const {
    std::lock_guard<std::mutex> g(caps_mu);
    return caps.seconds_left();
  }
  std::optional<config::Config> task_cfg;  // phoenix.json's checks + the current task's acceptance check
  // --shard: the tasks of this shard, the tip before the current task, the
  // task branches that could not be pushed. --merge: why the branch is not
  // on the remote yet ("" when it is).
  std::set<int> mine;
  std::string task_before;
  std::set<std::string> unpushed;
  std::string merge_unpushed;
  bool sharded() const { return opt.shard.has_value(); }
  bool merging() const { return !opt.merge_remote.empty(); }

  Loop(const Options& o, const config::Config& c, trace::Trace& t, std::function<void(const std::string&)> s)
      : opt(o), cfg(c), trace(t), say(std::move(s)), root(o.root) {
    if (opt.deadline_ms) deadline_from_start_ms = *opt.deadline_ms - util::now_ms();
  }

  // Milliseconds left until --until: the nearer of the wall clock's answer
  // and the monotonic clock's since the start, so a wall clock stepped
  // forward past the deadline stops the loop at once and one stepped back
  // does not stretch the night. Empty without --until.
  std::optional<long long> ms_to_deadline() const {
    if (!opt.deadline_ms) return std::nullopt;
    const long long since_start =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    return std::min(*opt.deadline_ms - util::now_ms(), deadline_from_start_ms - since_start);
  }
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  long long deadline_from_start_ms = 0;

  // What the loop measures and heals with now.
  const config::Config& checks_now() const { return task_cfg ? *task_cfg : cfg; }

  bool prompt_mode() const { return !prompt_rel.empty(); }

  // `sync`: util::Sync::kAtomic for a transient phase inside an iteration,
  // which the iteration's last (durable) write follows (loop/state.h).
  void phase(const std::string& p, const std::function<void(Json&)>& more = {},
             util::Sync sync = util::Sync::kDurable) {
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
  void sync_branch(const std::string& why) {
    repo->write_ref("refs/heads/" + branch, repo->head_sha(), "phoenix-loop: " + why);
  }

  void write_run_file() {
    Json j{{"schema_version", 1},
           {"branch", branch},
           {"worktree", wt},
           {"worktree_name", wt_name},
           {"tasks", tasks_rel},
           {"prompt", prompt_rel},
           {"skipped", std::vector<int>(skipped.begin(), skipped.end())},
           {"ignored", std::vector<std::string>(ignored.begin(), ignored.end())},
           {"workers", workers},
           {"queue", queue_json()}};
    util::write_file_atomic(run_path(root), j.dump(2) + "\n");
  }

  Json queue_json() const {
    Json a = Json::array();
    for (const auto& e : queue) a.push_back(to_json(e));
    return a;
  }

  Tree main_tree() { return Tree{wt, wt_name, &*repo}; }

  void notify(const std::string& event, const std::string& incident, const std::string& summary = "") {
    send_webhook(event, incident, summary);
    if (cfg.loop.notify.empty()) return;
    util::ProcessOptions po;
    po.argv = cfg.loop.notify;
    po.cwd = root;
    po.timeout_s = 60;
    po.env = {{"PHOENIX_EVENT", event}, {"PHOENIX_INCIDENT", incident}, {"PHOENIX_STATE", state_path(root)}};
    util::ProcessResult r = util::run_process(po);
    trace.append("loop.notify", {{"event", event}, {"exit_code", r.exit_code}});
    if (r.exit_code != 0) say("notify command exited " + std::to_string(r.exit_code) + " (ignored)");
  }

  // loop.notify's webhook: delivered with retries; a failure is said and traced, never fatal.
  void send_webhook(const std::string& event, const std::string& incident, const std::string& summary) {
    if (!cfg.loop.webhook) return;
    Json s = state.snapshot();
    NotifyEvent e;
    e.kind = event == "escalated" || event == "waiting" ? event : "finished";
    e.summary = summary.empty() ? "phoenix-loop: " + event : summary;
    e.repository = root;
    e.branch = branch;
    e.state_path = state_path(root);
    e.phase = s.value("phase", "");
    if (s["exit_code"].is_number_integer()) e.exit_code = s["exit_code"].get<int>();
    if (s["waiting_until"].is_string()) e.waiting_until = s["waiting_until"].get<std::string>();
    if (s["waiting_for"].is_string()) e.waiting_for = s["waiting_for"].get<std::string>();
    if (!incident.empty() && event != "waiting") {
      IncidentFacts f = read_incident(incident);
      e.incident_path = incident;
      e.incident_title = f.title;
      e.signature = !f.signature.empty()              ? f.signature
                    : s["last_signature"].is_string() ? s.value("last_signature", "")
                                                      : "";
      e.rollback_sha = f.rollback_sha;
    }
    Delivery d = deliver(*cfg.loop.webhook, e, [&](long long ms) { nap(ms); });
    trace.append("loop.webhook",
                 {{"event", e.kind}, {"ok", d.ok}, {"attempts", d.attempts}, {"status", d.status}, {"error", d.error}});
    if (!d.ok)
      say("webhook " + cfg.loop.webhook->url + ": not delivered after " + std::to_string(d.attempts) +
          " attempt(s): " + d.error + " (ignored)");
  }

  // How long the loop waits on a rate-limited or unreachable model in a
  // row: harness.max_wait_s when set, else until --until (no --until: as
  // long as it takes; every wait is at most the reset time or 5 min).
  double max_wait_s() const {
    if (cfg.harness.max_wait_s) return std::min(*cfg.harness.max_wait_s, caps_seconds_left());
    if (auto left = ms_to_deadline())
      return std::min(caps_seconds_left(), std::max(0.0, static_cast<double>(*left) / 1000.0));
    return caps_seconds_left();
  }

  static std::string local_hhmm(long long ms) {
    time_t t = static_cast<time_t>(ms / 1000);
    struct tm l {};
    localtime_r(&t, &l);
    char buf[16];
    std::strftime(buf, sizeof buf, "%H:%M", &l);
    return buf;
  }

  // Sleeps up to ms, in slices, returning early on a signal or a STOP file.
  void nap(long long ms) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      if (util::interrupted_signal() != 0 || util::path_exists(stop_path(root))) return;
      if (auto left = ms_to_deadline(); left && *left <= 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // --- setup -----------------------------------------------------------------

  // --resume: what the run file and the state file of the earlier run say.
  // Returns the earlier state (null when unreadable: it costs the counters,
  // not the work; the branch holds that).
  Json read_earlier_run(gitx::Repo& main) {
    if (!util::path_exists(run_path(root)))
      throw UsageError("phoenix-loop: --resume: no earlier loop here (" + run_path(root) + " is missing)");
    Json run = util::parse_json(util::read_file(run_path(root)), run_path(root));
    branch = run.value("branch", "");
    wt_name = run.value("worktree_name", "");
    // Where this version keeps it; a loop started by an earlier version
    // had it inside the work tree, and its worktree is remade here.
    wt = wt_name.empty() ? run.value("worktree", "") : layout::worktree_path(main, wt_name);
    if (opt.tasks.empty() && opt.prompt.empty()) {
      tasks_rel = run.value("tasks", "");
      prompt_rel = run.value("prompt", "");
    }
    for (int i : run.value("skipped", std::vector<int>{})) skipped.insert(i);
    for (const auto& c : run.value("ignored", std::vector<std::string>{})) ignored.insert(c);
    if (opt.workers == 0) workers = run.value("workers", workers);
    for (const auto& e : run.value("queue", Json::array())) queue.push_back(queue_entry_from_json(e));
    Json prev;
    if (util::path_exists(state_path(root))) {
      try {
        prev = util::parse_json(util::read_file(state_path(root)), state_path(root));
      } catch (const Error&) {
        // An unreadable state file costs the counters, not the work: the branch holds that.
      }
    }
    return prev;
  }

  // --shard and --merge need a tasks file and a reachable remote; a shard
  // works one task at a time (more machines are more shards).
  void refuse_bad_shard_or_merge(gitx::Repo& main) {
    if (!sharded() && !merging()) return;
    const std::string flag = sharded() ? "--shard " + opt.shard->text() : "--merge " + opt.merge_remote;
    if (sharded() && merging()) throw UsageError("phoenix-loop: --shard and --merge exclude each other");
    if (prompt_mode()) throw UsageError("phoenix-loop: " + flag + " needs a tasks file, not a prompt file");
    if (sharded() && workers > 1)
      throw UsageError("phoenix-loop: " + flag + " works on one task at a time: run more shards instead of --workers " +
                       std::to_string(workers));
    check_remote(main.workdir(), sharded() ? opt.remote : opt.merge_remote);
  }

  // A bad task source is refused before any branch or worktree is made:
  // one outside the repository (the loop ticks it in a commit), one that is
  // not there, a tasks file that does not parse. An absolute path inside
  // the repository is taken as the path relative to its top.
  void refuse_bad_tasks_file() {
    std::string& src = prompt_mode() ? prompt_rel : tasks_rel;
    const std::string flag = prompt_mode() ? "--prompt" : "--tasks";
    const std::string top = util::normalize_path(root);
    const std::string abs = util::normalize_path(fs::path(src).is_absolute() ? src : root + "/" + src);
    if (!util::starts_with(abs, top + "/"))
      throw UsageError("phoenix-loop: " + flag + " " + src + ": outside the repository " + root +
                       " (the loop ticks it in its commits): copy it into the repository");
    src = abs.substr(top.size() + 1);
    if (!opt.resume && !util::path_exists(abs))
      throw UsageError("phoenix-loop: " + flag + " " + src + ": not found in " + root);
    if (!tasks_rel.empty() && util::path_exists(abs)) parse_tasks(util::read_file(abs), tasks_rel);
  }

  // --resume: the counters (and what was spent against the caps) carry on.
  void restore_counters(const Json& prev) {
    iteration = prev.value("iteration", 0);
    session_retries = prev.value("session_retries", 0);
    if (prev.contains("caps")) caps.restore(prev["caps"]);
    if (prev.contains("last_incident") && prev["last_incident"].is_string()) last_incident = prev["last_incident"];
  }

  void setup() {
    tasks_rel = opt.tasks.empty() && opt.prompt.empty() ? cfg.loop.tasks : opt.tasks;
    prompt_rel = opt.tasks.empty() && opt.prompt.empty() ? cfg.loop.prompt : opt.prompt;
    if (!tasks_rel.empty() && !prompt_rel.empty())
      throw UsageError("phoenix-loop: give a tasks file or a prompt file, not both");
    if (tasks_rel.empty() && prompt_rel.empty())
      throw UsageError("phoenix-loop: no tasks: pass --tasks FILE or --prompt FILE (or set loop.tasks / loop.prompt)");
    if (cfg.checks.empty())
      throw ConfigError("phoenix-loop: phoenix.json has no checks: nothing could tell a task done");
    if (cfg.harness.command.empty() && cfg.harness.preset.empty())
      throw ConfigError("phoenix-loop: no harness configured in phoenix.json");
    max_iterations = opt.max_iterations.value_or(cfg.loop.max_iterations);
    refuse_bad_tasks_file();

    main_repo.emplace(gitx::Repo::discover(root));
    gitx::Repo& main = *main_repo;
    workers = opt.workers > 0 ? opt.workers : cfg.loop.workers;
    if (main.head_sha().empty()) throw UsageError("phoenix-loop: the repository has no commits yet");

    Json prev;
    if (opt.resume) {
      prev = read_earlier_run(main);
    } else {
      branch = !opt.branch.empty() ? opt.branch
               : sharded()
                   ? "phoenix/shard-" + std::to_string(opt.shard->index) + "-of-" + std::to_string(opt.shard->count)
               : !cfg.loop.branch.empty() ? cfg.loop.branch
                                          : default_branch(util::now_ms());
      std::string tail = branch.substr(branch.rfind('/') + 1);
      wt_name = "loop-" + (util::starts_with(tail, "loop-") ? tail.substr(5) : tail);
      wt = layout::worktree_path(main, wt_name);
    }
    if (workers > 1 && prompt_mode())
      throw UsageError("phoenix-loop: --workers " + std::to_string(workers) +
                       " needs a tasks file: a prompt file is one task, run again and again");
    refuse_bad_shard_or_merge(main);
    for (const std::string& line : layout::migrate_legacy_trees(main)) say(line);
    std::string ref = "refs/heads/" + branch;
    kg_ref = layout::known_good_ref_of(branch);
    std::optional<std::string> tip = main.read_ref(ref);
    if (!opt.resume && tip)
      throw UsageError("phoenix-loop: branch " + branch +
                       " exists already: pass --resume to carry on, or --branch NAME");
    if (opt.resume && !tip) throw UsageError("phoenix-loop: --resume: branch " + branch + " is gone");
    std::string start = tip ? *tip : main.head_sha();

    bool have_wt = false;
    for (const auto& w : main.worktree_list())
      if (w.name == wt_name) have_wt = w.valid && util::normalize_path(w.path) == util::normalize_path(wt);
    // Not there, or not trustworthy: made (or remade) by gitx's persistent
    // worktrees, which reuse a healthy one with an incremental checkout.
    if (opt.resume) resume_workers(main, prev);
    if (!have_wt) gitx::prepare_worktree(main, wt_name, wt, start, layout::state_prefixes());
    repo.emplace(gitx::Repo::open(wt));
    // The worktree lives as long as the loop: its status asks the kernel
    // what was written instead of scanning every file (gitx/watch.h).
    // PHOENIX_WATCH=0 scans every time, as git's core.fsmonitor=false does.
    if (const char* w = std::getenv("PHOENIX_WATCH"); !w || std::string_view(w) != "0") repo->watch_work_tree();
    if (have_wt) {
      // Resume after a crash: whatever the dead iteration left is kept, then dropped.
      if (!repo->is_clean(kKeep)) {
        std::string wip = repo->snapshot_workdir("phoenix-loop: left by an interrupted iteration", "phoenix",
                                                 "phoenix@localhost", true, layout::state_prefixes());
        repo->write_ref(std::string(engine::kAbandonedPrefix) + "loop-" + std::to_string(util::now_ms()), wip,
                        "phoenix-loop: resume");
      }
      repo->reset_hard(start, true, kKeep);
    }
    repo->write_ref(ref, repo->head_sha(), "phoenix-loop: start");

    // The task source lives in the worktree, committed with the ticks.
    std::string src = prompt_mode() ? prompt_rel : tasks_rel;
    if (!util::path_exists(wt + "/" + src)) {
      if (!util::path_exists(root + "/" + src)) throw UsageError("phoenix-loop: " + src + " not found in " + root);
      fs::create_directories(fs::path(wt + "/" + src).parent_path());
      util::write_file_atomic(wt + "/" + src, util::read_file(root + "/" + src));
    }

    if (opt.resume && prev.is_object()) restore_counters(prev);
    state.update([&](Json& s) {
      s["max_iterations"] = max_iterations;
      s["deadline"] = opt.deadline_text.empty() ? Json(nullptr) : Json(opt.deadline_text);
      if (!last_incident.empty()) s["last_incident"] = last_incident;
    });
    write_run_file();
    trace.append("loop.start", {{"branch", branch},
                                {"worktree", wt},
                                {"resume", opt.resume},
                                {"mode", prompt_mode() ? "prompt" : "tasks"},
                                {"source", src},
                                {"max_iterations", max_iterations},
                                {"shard", sharded() ? Json(opt.shard->text()) : Json(nullptr)},
                                {"merge", merging() ? Json(opt.merge_remote) : Json(nullptr)}});
    say("working on branch " + branch + " in " + wt);
  }

  // --- checks ----------------------------------------------------------------

  // The worktree holds tracked files only: phoenix.json's setup steps give
  // it the project's environment, again only when their inputs changed.
  // A failed setup is its own signal, never a red check of the agent's.
  setup::Result prepare_environment(const Tree& t) {
    setup::Result su =
        setup::ensure(cfg.setup, t.path, layout::setup_stamp(*t.repo, t.name), {},
                      [&](const config::SetupStep& step) { say("setup: " + util::join_argv(step.run)); });
    if (su.ran)
      trace.append(
          "loop.setup",
          {{"iteration", iteration.load()}, {"ok", su.ok}, {"signal", su.signal}, {"duration_ms", su.duration_ms}});
    return su;
  }

  Measure measure() { return measure(main_tree()); }

  Measure measure(const Tree& t) {
    Measure m;
    setup::Result su = prepare_environment(t);
    if (su.interrupted) {
      m.interrupted = true;
      m.green = false;
      return m;
    }
    if (!su.ok) {
      m.green = false;
      m.setup_failed = su.signal + (su.evidence.empty() ? "" : "\n" + util::trim(su.evidence));
      return m;
    }
    const config::Config& tc = t.cfg ? *t.cfg : checks_now();
    engine::StoreUse store(*t.repo, t.path, tc, branch.substr(branch.rfind('/') + 1), !engine::no_cache(opt.no_cache),
                           &trace);
    for (const auto& c : tc.checks) {
      checks::SenseResult r = store.sense(c, [&] { return checks::sense(c, t.path); });
      if (r.interrupted) m.interrupted = true;
      if (!r.ok && !ignored.count(c.id)) {
        m.green = false;
        m.red.push_back(c.id);
      }
      m.results.push_back(r);
    }
    Json a = Json::array();
    for (const auto& r : m.results) a.push_back({{"id", r.id}, {"ok", r.ok}, {"signal", r.signal}});
    trace.append("loop.measure",
                 {{"iteration", iteration.load()}, {"head", t.repo->head_sha()}, {"tree", t.name}, {"checks", a}});
    return m;
  }

  void bless() { repo->write_ref(kg_ref, repo->head_sha(), "phoenix-loop: every check green"); }

  // --- the inner cycle -------------------------------------------------------

  struct Heal {
    int exit_code = 0;
    std::string incident;  // in <root>/incidents, when the engine escalated (the baseline's heal)
    // A task's heal: its failed attempts, who healed it, and whether a
    // proposal only undid the task's change.
    std::vector<TaskAttempt> tried;
    std::string healed_by;
    std::string why_stopped;
    bool undid_change = false;
  };

  // A heal of a task's red attempt: the inner cycle mends the agent's
  // change, never history. Bisect does not run (its culprit would be the
  // attempt itself); the journal replays only fixes that kept a change; a
  // proposal that brings the tree back to `start` is a failed attempt; at
  // most `max_attempts` are spent; the tasks file is protected; the loop,
  // not the engine, writes the note and rolls back.
  struct TaskHeal {
    int max_attempts = 0;
    std::string start;   // the commit the task started from
    std::string change;  // the task and the attempt's diff, shown to the harness
  };

  // The baseline's heal: red before any task, so bisect may find its culprit.
  Heal heal(const std::vector<std::string>& red) { return heal(main_tree(), red, false, nullptr); }

  // In a worker's tree (`worker`), the loop's state keeps its phase and
  // known-good stays where the merge queue put it.
  Heal heal(const Tree& t, const std::vector<std::string>& red, bool worker, const TaskHeal* task) {
    engine::SessionOptions so;
    so.run.rollback = "known-good";
    so.run.known_good_ref = kg_ref;
    so.run.bless_known_good = !worker && !task;
    so.run.only = red;
    so.run.templates_dir = opt.templates_dir;
    so.run.max_wait_s = max_wait_s();
    so.journal_root = root;  // one journal per repository
    const config::Config& base_cfg = t.cfg ? *t.cfg : checks_now();
    std::optional<config::Config> task_cfg_copy;
    if (task) {
      so.run.escalate = false;
      so.run.max_attempts = task->max_attempts;
      so.run.task_start = task->start;
      so.run.change = task->change;
      for (const std::string& f : base_cfg.fixers)
        if (f != "bisect") so.fixers.push_back(f);
      if (so.fixers.empty()) so.fixers.push_back("noop");
      task_cfg_copy.emplace(base_cfg);
      // Only the loop ticks: no heal may touch the tasks file.
      if (!tasks_rel.empty()) task_cfg_copy->protected_globs.push_back(tasks_rel);
      // The session cap counts over the whole night.
      task_cfg_copy->session_cap = std::max(1, cfg.session_cap - session_retries.load());
    }
    const config::Config& tc = task_cfg_copy ? *task_cfg_copy : base_cfg;
    if (!worker) phase("healing");
    // A proposal the engine turns away as a repeat of an earlier one is
    // not in its attempt count, yet the fixer's run was spent on the task:
    // the book counts it (a harness run of the task's budget, the path ended).
    std::vector<TaskAttempt> repeats;
    engine::RunResult r = engine::run_session(t.path, tc, so, trace, [&](const Json& ev) {
      if (ev.value("event", "") != "state") return;
      std::string st = ev.value("state", "");
      if (task && st == "REJECTED" && ev.value("guard", "") == "repeat")
        repeats.push_back({0, ev.value("fixer", ""), "rejected (repeat): " + ev.value("why", ""), "", ""});
      if (worker) return;
      state.update([&](Json& s) {
        if (st == "DETECTED") {
          if (const auto* spec = tc.find(ev.value("check", ""))) s["last_failure_type"] = spec->type;
          if (ev.contains("signature")) s["last_signature"] = ev["signature"];
        }
        if (st == "PROPOSING") s["retry_count"] = s.value("retry_count", 0) + 1;
        if (st == "WAITING") {
          s["waiting_until"] = iso8601(util::now_ms() + ev.value("wait_ms", 0LL));
          s["waiting_for"] = ev.value("status", "rate-limited");
        } else {
          s["waiting_until"] = nullptr;
          s["waiting_for"] = nullptr;
        }
      });
    });
    Heal h;
    h.exit_code = r.exit_code;
    for (const auto& i : r.issues) {
      session_retries += i.attempts;
      for (const auto& a : i.tried) h.tried.push_back({0, a.fixer, a.outcome, util::sha12(a.attempt_signature), ""});
      if (i.state == engine::State::kHealed) h.healed_by = i.fixer;
      if (!i.why_stopped.empty()) h.why_stopped = i.why_stopped;
      h.undid_change = h.undid_change || i.undid_change;
      std::lock_guard<std::mutex> g(caps_mu);
      caps.add(i.cost_usd, i.unknown_cost_runs);
    }
    session_retries += static_cast<int>(repeats.size());
    h.tried.insert(h.tried.end(), repeats.begin(), repeats.end());
    if (!r.incident.empty()) {
      // The engine wrote the note in the worktree (fsynced before its
      // rollback); the user reads incidents/ of their own checkout.
      fs::create_directories(root + "/incidents");
      std::string dest = root + "/incidents/" + fs::path(r.incident).filename().string();
      for (int n = 2; util::path_exists(dest); ++n)
        dest = root + "/incidents/" + fs::path(r.incident).stem().string() + "-loop" + std::to_string(n) + ".md";
      std::string note = util::read_file(r.incident);
      // The images the note links (visual diffs beside it) travel with it.
      for (size_t at = note.find("!["); at != std::string::npos; at = note.find("![", at + 2)) {
        size_t close = note.find("](", at);
        size_t end = close == std::string::npos ? close : note.find(')', close);
        if (end == std::string::npos) break;
        std::string rel = note.substr(close + 2, end - close - 2);
        fs::path from = fs::path(r.incident).parent_path() / rel;
        if (rel.empty() || fs::path(rel).is_absolute() || rel.find("..") != std::string::npos ||
            !fs::is_regular_file(from))
          continue;
        fs::path to = fs::path(root) / "incidents" / rel;
        fs::create_directories(to.parent_path());
        util::write_file_atomic(to.string(), util::read_file(from.string()));
      }
      util::write_file_atomic(dest, note);
      std::error_code ec;
      fs::remove(r.incident, ec);
      fs::remove(t.path + "/.phoenix/ESCALATED", ec);
      h.incident = dest;
      trace.append("loop.incident", {{"path", dest}, {"from", r.incident}});
    }
    return h;
  }

  // --- prompt ----------------------------------------------------------------

  std::string prompt_for(const Task* task, const std::vector<Task>& tasks) {
    return prompt_for(task, tasks, last_failure);
  }

  std::string prompt_for(const Task* task, const std::vector<Task>& tasks, const std::string& failure) {
    std::string tmpl;
    std::string mine = wt + "/.phoenix/prompt-task.md";
    if (util::path_exists(mine)) tmpl = util::read_file(mine);
    else if (util::path_exists(opt.templates_dir + "/prompt-task.md"))
      tmpl = util::read_file(opt.templates_dir + "/prompt-task.md");
    else throw Error("phoenix-loop: cannot find prompt-task.md in " + opt.templates_dir);
    std::string progress;
    for (const auto& t : tasks)
      if (t.done) progress += "- done: " + t.title + "\n";
      else if (skipped.count(t.index)) progress += "- skipped (escalated): " + t.title + "\n";
    if (progress.empty()) progress = "(nothing yet)\n";
    std::string task_text;
    if (task) task_text = task->title;
    else task_text = util::read_file(wt + "/" + prompt_rel);
    std::map<std::string, std::string> v{
        {"task", task_text},
        {"tasks_file", prompt_mode() ? prompt_rel : tasks_rel},
        {"progress", progress},
        {"iteration", std::to_string(iteration)},
        {"last_failure", failure.empty() ? "(none)" : failure},
        {"last_incident", last_incident.empty() ? "(none)" : last_incident},
    };
    return agent::render_prompt(tmpl, v);
  }

  // --- one harness run -------------------------------------------------------

  // The files only the loop may change while a task runs: the tasks file and
  // the scripts the open tasks' acceptance checks run (loop/acceptance.h).
  std::vector<std::string> pinned_files(const Task* task, const std::vector<Task>& tasks) const {
    if (!task) return {};
    std::vector<std::string> out{tasks_rel};
    for (const auto& t : tasks)
      for (const auto& p : t.done ? std::vector<std::string>{} : acceptance_scripts(t, wt))
        if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    return out;
  }

  // Puts back what the agent changed of them; true when it changed any.
  bool unpin(const PinnedFiles& pins) {
    std::vector<std::string> changed = pins.restore();
    if (changed.empty()) return false;
    trace.append("loop.pinned", {{"iteration", iteration.load()}, {"files", changed}});
    say("the agent changed " + util::join_argv(changed) + ", which only the loop may change: put back");
    return true;
  }

  // Untracked run-time state and the task source never count as the agent's progress.
  std::vector<std::string> own_files() const {
    std::vector<std::string> own = kKeep;
    own.push_back(prompt_mode() ? prompt_rel : tasks_rel);
    return own;
  }

  struct AgentRun {
    agent::Classification cls;
    std::string output;
    std::string program;
    long long duration_ms = 0;
    bool changed = false;
  };

  AgentRun run_agent(const std::string& prompt) { return run_agent(prompt, main_tree(), {}); }

  // With `on_pid` (a worker), the agent's pid is told as it starts.
  AgentRun run_agent(const std::string& prompt, const Tree& t, const std::function<void(long)>& on_pid) {
    std::string pfile = t.path + "/.phoenix/loop-prompt.md";
    if (on_pid) fs::create_directories(t.path + "/.phoenix");
    agent::Invocation inv = agent::plan_invocation(cfg.harness, prompt, [&](const std::string& content) {
      util::write_file_atomic(pfile, content, 0644, util::Sync::kAtomic);  // read by the agent only
      return pfile;
    });
    util::ProcessOptions po;
    po.argv = inv.argv;
    po.cwd = t.path;
    po.env = inv.env;
    po.env["PHOENIX_LOOP"] = "1";
    po.unset_env = agent::git_location_env();
    po.stdin_data = inv.stdin_data;
    po.timeout_s = cfg.loop.iteration_timeout_s;
    if (auto left_ms = ms_to_deadline()) {
      double left = static_cast<double>(*left_ms) / 1000.0;
      po.timeout_s = std::max(1.0, std::min(po.timeout_s, left));
    }
    po.timeout_s = std::max(1.0, std::min(po.timeout_s, caps_seconds_left()));  // --max-hours
    util::ProcessResult r;
    {
      // Nothing the agent runs may change the user's repository: its
      // config and hooks, or rewind their branches (setup/guard.h). The
      // loop's branch and Phoenix's refs are the loop's own.
      const setup::Guard guard(t.path, {"refs/heads/" + branch}, /*long_run=*/true);
      if (on_pid) {
        util::Subprocess proc(po);
        on_pid(proc.pid());
        r = proc.wait();
      } else {
        r = util::run_process(po);
      }
      guard.restore("the agent", &trace);
    }
    AgentRun a;
    a.output = r.output;
    a.duration_ms = r.duration_ms;
    // Progress is what the agent changed, never the loop's own files: the
    // tasks or prompt file (ticked by the loop, maybe not even committed).
    a.changed = !t.repo->is_clean(own_files());
    a.program = agent::program_name(inv.argv);
    const agent::RunFacts f = agent::run_facts(a.program, r, po.timeout_s, prompt, a.changed ? 1 : 0);
    a.cls = agent::classify_run(f, util::now_ms());
    {
      std::lock_guard<std::mutex> g(caps_mu);
      caps.add_run(a.cls.cost_usd, a.cls.status != agent::Status::kUnavailable && a.cls.model_calls.value_or(1) != 0);
    }
    Json ev{{"iteration", iteration.load()},
            {"exit_code", r.exit_code},
            {"status", agent::status_name(a.cls.status)},
            {"detail", a.cls.detail},
            {"changed", a.changed},
            {"duration_ms", r.duration_ms},
            {"cost_usd", a.cls.cost_usd ? Json(*a.cls.cost_usd) : Json(nullptr)},
            {"model_calls", a.cls.model_calls ? Json(*a.cls.model_calls) : Json(nullptr)}};
    trace.append("loop.agent", ev);
    return a;
  }

  // True when the agent itself said it is complete: the tag on a line of its
  // output that is not a line of the prompt (agents echo their prompt).
  static bool promised(const std::string& output, const std::string& prompt) {
    std::set<std::string> prompt_lines;
    for (const auto& l : util::split_lines(prompt)) prompt_lines.insert(util::trim(l));
    for (const auto& l : util::split_lines(output)) {
      std::string t = util::trim(l);
      if (t.find(kPromise) != std::string::npos && !prompt_lines.count(t)) return true;
    }
    return false;
  }

  // --- the end ---------------------------------------------------------------

  int finish(int code, const std::string& phase_in, const std::string& why_in) {
    std::string phase_name = phase_in, why = why_in;
    if (merging() && !merge_unpushed.empty() && code != kExitInterrupted) {
      push_merged();  // once more: the last word on whether the remote has it
      if (!merge_unpushed.empty()) {
        why += "; " + branch + " is not on " + opt.merge_remote + ": " + merge_unpushed;
        if (code == kExitOk) {
          code = kExitRed;
          phase_name = "stopped";
        }
      }
    }
    trace.append("loop.end", {{"exit_code", code},
                              {"phase", phase_name},
                              {"why", why},
                              {"iteration", iteration.load()},
                              {"caps", caps_figures()}});
    say(why);
    phase(phase_name, [&](Json& s) {
      s["exit_code"] = code;
      s["task"] = nullptr;
    });
    state.stop_heartbeat();
    notify(phase_name == "escalated" ? "escalated-end" : "end", last_incident, why);
    return code;
  }

  int setup_stopped(const Measure& m) {
    const std::string first = m.setup_failed.substr(0, m.setup_failed.find('\n'));
    if (m.setup_failed.size() > first.size()) say(m.setup_failed.substr(first.size() + 1));
    return finish(
        kExitRed, "stopped",
        "stopped: " + first + " (in the loop's worktree " + wt + "); fix phoenix.json's setup, then --resume");
  }

  int interrupted() {
    int sig = util::interrupted_signal();
    return finish(kExitInterrupted, "interrupted", "interrupted by signal " + std::to_string(sig) + "; state written");
  }

  // --- main loop -------------------------------------------------------------

  // What a step decided: an exit code ends the loop; nothing goes on.
  using Ending = std::optional<int>;

  int run() {
    layout::ensure_state_dir(root);
    util::FileLock lock(layout::loop_lock_file(root), 0, "the loop of this repository");
    setup();
    state.start_heartbeat(cfg.loop.heartbeat_s);
    if (!opt.resume)
      if (Ending e = baseline()) return *e;
    if (workers > 1 || merging()) return run_workers();
    while (true) {
      if (Ending e = stop_requested()) return *e;
      std::vector<Task> tasks;
      const Task* task = nullptr;
      if (!prompt_mode()) {
        tasks = parse_tasks(util::read_file(wt + "/" + tasks_rel), tasks_rel);
        task = next_ready(tasks, not_to_start(tasks));  // in file order, `after` respected
        if (!task) {
          skip_blocked(tasks);
          return all_ticked();
        }
      }
      if (iteration >= max_iterations)
        return finish(kExitRed, "stopped", "stopped: --max-iterations " + std::to_string(max_iterations) + " reached");
      if (Ending e = over_cap()) return *e;
      if (Ending e = iterate(task, tasks)) return *e;
    }
  }

  // The tasks not to start: skipped ones and, in a shard, other shards'.
  std::set<int> not_to_start(const std::vector<Task>& tasks) {
    if (!sharded()) return skipped;
    if (mine.empty()) mine = shard_tasks(tasks, *opt.shard);
    std::set<int> out = skipped;
    for (const auto& t : tasks)
      if (!mine.count(t.index)) out.insert(t.index);
    return out;
  }

  // --max-cost / --max-hours: no iteration starts that would pass them.
  Ending over_cap() {
    Caps::Verdict v = caps.before_iteration(iteration);
    if (!v.warning.empty()) {
      say(v.warning);
      trace.append("loop.cap_warning", {{"warning", v.warning}, {"caps", caps_figures()}});
    }
    if (!v.stop) return std::nullopt;
    trace.append("loop.cap", {{"cap", v.cap}, {"why", v.why}, {"caps", caps_figures()}});
    return finish(kExitRed, "stopped", "stopped: " + v.why);
  }

  // Open tasks that come after a skipped one can never start: skipped too.
  void skip_blocked(const std::vector<Task>& tasks) {
    std::vector<int> blocked = blocked_by_skipped(tasks, skipped);
    if (blocked.empty()) return;
    for (int i : blocked) {
      skipped.insert(i);
      const Task& t = tasks[static_cast<size_t>(i)];
      trace.append("loop.task_skipped", {{"iteration", iteration.load()},
                                         {"task", {{"id", t.id()}, {"title", t.title}, {"index", t.index}}},
                                         {"blocked_by", t.after}});
      say("skipping " + t.id() + " (" + t.title + "): it comes after a skipped task");
    }
    write_run_file();
  }

  // Baseline: red before the agent started is not the agent's doing.
  Ending baseline() {
    phase("baseline");
    Measure m = measure();
    if (!m.setup_failed.empty()) return setup_stopped(m);
    if (m.interrupted || util::interrupted_signal()) return interrupted();
    if (!m.green) {
      std::string ids = util::join_argv(m.red);
      trace.append("loop.baseline", {{"red", m.red}, {"mode", cfg.loop.baseline}});
      say("baseline: red before any task: " + ids + " (loop.baseline = " + cfg.loop.baseline + ")");
      if (cfg.loop.baseline == "stop")
        return finish(kExitRed, "stopped", "baseline red: " + ids + "; loop.baseline = stop");
      if (cfg.loop.baseline == "ignore") {
        for (const auto& id : m.red) ignored.insert(id);
        write_run_file();
      } else {
        Heal h = heal(m.red);
        sync_branch("baseline heal");
        if (h.exit_code == kExitInterrupted || util::interrupted_signal()) return interrupted();
        if (h.exit_code != kExitOk) return escalated_baseline(h);
        Measure hm = measure();
        if (!hm.setup_failed.empty()) return setup_stopped(hm);
        if (hm.interrupted || util::interrupted_signal()) return interrupted();
        if (hm.green) bless();
      }
    } else {
      bless();
    }
    phase("baseline");
    return std::nullopt;
  }

  Ending stop_requested() {
    if (util::interrupted_signal()) return interrupted();
    if (util::path_exists(stop_path(root))) return finish(kExitRed, "stopped", "stopped: .phoenix/STOP exists");
    if (auto left = ms_to_deadline(); left && *left <= 0)
      return finish(kExitRed, "stopped", "stopped: --until " + opt.deadline_text + " reached");
    return std::nullopt;
  }

  // No task left to do.
  int all_ticked() {
    task_cfg.reset();  // the final verdict is phoenix.json's checks
    if (merging()) {
      std::vector<std::string> open = open_ids();
      if (!open.empty())
        return finish(kExitRed, "stopped",
                      "merged what the shards pushed; " + std::to_string(open.size()) +
                          " task(s) not merged (no branch on " + opt.merge_remote +
                          ", or after one that has none): " + util::join_argv(open));
    }
    if (!unpushed.empty())
      return finish(kExitRed, "stopped",
                    std::to_string(unpushed.size()) + " task branch(es) not pushed to " + opt.remote + ": " +
                        util::join_argv(std::vector<std::string>(unpushed.begin(), unpushed.end())));
    if (!skipped.empty())
      return finish(kExitRed, "stopped",
                    std::to_string(skipped.size()) + " task(s) skipped after escalation; the rest done");
    Measure m = measure();
    if (!m.setup_failed.empty()) return setup_stopped(m);
    if (m.interrupted) return interrupted();
    if (!m.green) return finish(kExitRed, "stopped", "every task ticked but red: " + util::join_argv(m.red));
    bless();
    if (sharded())
      return finish(kExitOk, "complete",
                    "complete: every task of shard " + opt.shard->text() + " ticked and pushed to " + opt.remote +
                        ", every check green");
    return finish(kExitOk, "complete", "complete: every task ticked, every check green");
  }

  // One iteration: the agent's fresh run, then the checks decide.
  Ending iterate(const Task* task, const std::vector<Task>& tasks) {
    ++iteration;
    Json tj = task ? Json{{"id", task->id()}, {"title", task->title}, {"index", task->index}, {"total", tasks.size()}}
                   : Json{{"id", "prompt"}, {"title", prompt_rel}, {"index", 0}, {"total", 1}};
    // The phases inside an iteration are written without fsync, and its
    // trace events are fsynced together: the iteration's last state write
    // (or whatever ends it early) is the durable one. A power cut in
    // between brings back the previous iteration's state, which --resume
    // handles like a crash there (the worktree is reset to the branch).
    phase(
        "agent",
        [&](Json& s) {
          s["task"] = tj;
          Json b = book.state_of(task_id(task));
          s["retry_count"] = b["retry_count"];
          s["task_signatures"] = b["signatures"];
        },
        util::Sync::kAtomic);
    std::string title = task ? task->title : "iteration " + std::to_string(iteration);
    say("iteration " + std::to_string(iteration) + ": " + title);
    std::string prompt = prompt_for(task, tasks);
    if (task && task->check) task_cfg = with_acceptance(cfg, task);
    else task_cfg.reset();
    PinnedFiles pins(wt, pinned_files(task, tasks));
    task_before = repo->head_sha();
    trace::Trace::Batch batch(trace);
    AgentRun a = run_agent(prompt);
    if (util::interrupted_signal()) {
      batch.end();
      return interrupted();
    }
    if (unpin(pins)) a.changed = !repo->is_clean(own_files());

    using agent::Status;
    const bool measured_next = a.changed && a.cls.status != Status::kQuota && !agent::waits(a.cls.status) &&
                               a.cls.status != Status::kUnavailable && a.cls.status != Status::kTimeout;
    if (!measured_next) batch.end();  // a wait, no change or an ending follows
    if (a.cls.status == Status::kQuota)
      return finish(kExitRed, "stopped",
                    "stopped: harness " + a.cls.detail + " (credit or billing: waiting will not help)");
    if (agent::waits(a.cls.status)) return wait_for_model(a);
    rate_waits = 0;
    rate_waited_ms = 0;
    if (a.cls.status == Status::kUnavailable) return finish(kExitRed, "failed", "harness unavailable: " + a.cls.detail);
    if (a.cls.status == Status::kTimeout) {
      // The runner killed the whole process group; its half-work goes.
      last_failure = "the agent was stopped at the iteration timeout (" + a.cls.detail + ")";
      repo->reset_hard(repo->head_sha(), true, kKeep);
      a.changed = false;
    }
    if (!a.changed) return no_change(a, prompt);

    phase("checking", {}, util::Sync::kAtomic);
    Measure m = measure();
    if (!m.green || m.interrupted || util::interrupted_signal()) batch.end();
    if (!m.setup_failed.empty()) return setup_stopped(m);
    if (m.interrupted || util::interrupted_signal()) return interrupted();
    if (m.green) {
      phase("committing", {}, util::Sync::kAtomic);
      land(task, title, {}, "");
      trace.append("loop.task_done", {{"iteration", iteration.load()},
                                      {"task", tj},
                                      {"head", repo->head_sha()},
                                      {"attempts", book.state_of(task_id(task))["retry_count"]}});
      batch.end();
      if (task) publish(*task);
      phase("committing");
      if (prompt_mode() && promised(a.output, prompt))
        return finish(kExitOk, "complete", "complete: the agent promised and every check is green");
      return std::nullopt;
    }
    return on_red(m, task, tj, title);
  }

  // The task's pseudo-task in prompt mode (one task, run again and again).
  Task prompt_task() const {
    Task t;
    t.name = "prompt";
    t.title = prompt_rel;
    return t;
  }
  std::string task_id(const Task* task) const { return task ? task->id() : std::string("prompt"); }

  // The task's work, measured green in the worktree, becomes one commit on
  // the task's start ("phoenix-loop: <task>", with trailers naming its red
  // attempts and the fixer that healed it), ticked; the branch and
  // known-good move to it. Only a commit that holds the task's own work is
  // landed (the done rule, loop/attempts.h): the caller checked the tree.
  void land(const Task* task, const std::string& title, const std::vector<std::string>& attempts,
            const std::string& healed_by) {
    if (task) {
      // Committed with the work below (git's objects are not fsynced either).
      std::string path = wt + "/" + tasks_rel;
      util::write_file_atomic(path, tick_task(util::read_file(path), *task, tasks_rel), 0644, util::Sync::kAtomic);
    }
    std::string msg = "phoenix-loop: " + title + "\n\nPhoenix-Task: " + task_id(task) + "\n";
    for (const std::string& ref : attempts) msg += "Phoenix-Attempt: " + ref + "\n";
    if (!healed_by.empty()) msg += "Phoenix-Healed-By: " + healed_by + "\n";
    std::string tip = repo->commit_all(msg, "phoenix", "phoenix@localhost", true, layout::state_prefixes());
    if (!attempts.empty() && repo->rev_list(task_before, tip).size() > 1) {
      // The attempt and its heal, as one commit on the task's start: the
      // branch's first-parent history stays one green commit per task.
      std::string one = repo->squash(task_before, tip, {}, msg, "phoenix", "phoenix@localhost");
      repo->reset_hard(one, false, kKeep);
    }
    sync_branch("task done");
    bless();
    escalations_in_row = 0;
    no_progress = 0;
    last_failure.clear();
  }

  // What a red measurement says, for the task's book and its note.
  RedFacts red_facts(const Measure& m) const { return red_facts(m, checks_now()); }

  static RedFacts red_facts(const Measure& m, const config::Config& tc) {
    RedFacts f;
    f.red = m.red;
    for (const auto& r : m.results) {
      if (r.ok || std::find(m.red.begin(), m.red.end(), r.id) == m.red.end()) continue;
      const checks::CheckSpec* spec = tc.find(r.id);
      f.check = r.id;
      f.failure_type = spec ? spec->type : "unit";
      f.description = spec ? engine::describe_check(*spec) : r.id;
      f.signal = r.signal;
      f.evidence = r.evidence.empty() ? r.output : r.evidence;
      f.signature = engine::issue_signature(r.id, r.output);
      for (const auto& a : r.artifacts) f.artifacts.emplace_back(a.name, a.bytes);
      break;
    }
    return f;
  }

  // What the harness is shown of the change it mends.
  static std::string change_text(const std::string& title, const std::string& diff) {
    constexpr size_t kMax = 24 * 1024;
    std::string d(util::utf8_head(diff, kMax));
    if (d.size() < diff.size()) d += "\n... (cut at " + std::to_string(d.size()) + " bytes)";
    return "The task being done: " + title +
           "\n\nThe change made for it, which turned the check red (a diff against the last green commit):\n\n```diff\n" +
           d + "\n```\n\nMend this change so that every check passes with it: keep what it does for the task. "
               "Taking the change back out is not a fix: it is rejected.";
  }

  // Red after the agent's run. The attempt is kept under
  // refs/phoenix/attempts/ (never on the branch); the inner cycle mends the
  // agent's change within what is left of the task's budget; healed and
  // measured green with the task's work kept, it lands as one commit.
  // Otherwise the worktree goes back to the task's start: the agent tries
  // again with the failure fed back, until the same failure comes twice or
  // the budget or the session cap is spent (then: note, rollback, on_escalate).
  Ending on_red(const Measure& m, const Task* task, const Json& tj, const std::string& title) {
    last_failure = "red after iteration " + std::to_string(iteration) + ": " + util::join_argv(m.red);
    for (const auto& r : m.results)
      if (!r.ok) last_failure += "\n  " + r.id + ": " + r.signal;
    const Task self = task ? *task : prompt_task();
    TaskRecord& rec = book.of(self);
    const std::string attempt =
        repo->commit_all("phoenix-loop: attempt: " + title, "phoenix", "phoenix@localhost", true, layout::state_prefixes());
    const std::string ref = attempt_ref(wt_name, self.id(), ++rec.runs);
    repo->write_ref(ref, attempt, "phoenix-loop: a red attempt");
    const RedFacts facts = red_facts(m);
    const std::string diff = repo->diff_patch(task_before, attempt);
    Verdict v = book.red_iteration(self, facts, ref, diff);
    ++session_retries;
    trace.append("loop.attempt", {{"iteration", iteration.load()},
                                  {"task", tj},
                                  {"ref", ref},
                                  {"commit", attempt},
                                  {"signature", util::sha12(facts.signature)},
                                  {"red", m.red},
                                  {"attempts", rec.attempts},
                                  {"budget", rec.budget},
                                  {"verdict", verdict_name(v)}});
    task_state(self.id(), facts);
    if (v != Verdict::kGoOn) return give_up_task(self, tj, title, verdict_why(v, rec), false);
    if (session_retries >= cfg.session_cap) return give_up_task(self, tj, title, session_cap_why(), true);

    TaskHeal th{book.left(self), task_before, change_text(title, diff)};
    Heal h = heal(main_tree(), m.red, false, &th);
    book.heal_spent(self, h.tried, h.healed_by);
    task_state(self.id(), facts);
    if (h.exit_code == kExitInterrupted || util::interrupted_signal()) return interrupted();
    // no_progress_limit counts iterations whose net change is empty: here,
    // when the only "fix" was taking the work back out.
    if (h.undid_change) ++no_progress;
    else no_progress = 0;
    if (h.exit_code == kExitOk && !h.healed_by.empty()) {
      // Healed: bless only a green measurement of every check, with the
      // task's own work still there.
      Measure hm = measure();
      if (!hm.setup_failed.empty()) return setup_stopped(hm);
      if (hm.interrupted || util::interrupted_signal()) return interrupted();
      std::string not_done = hm.green ? not_done_why(*repo, task_before, repo->head_sha(), own_files(), "", nullptr)
                                      : "red after the heal: " + util::join_argv(hm.red);
      if (not_done.empty()) {
        std::vector<std::string> refs;
        for (const auto& a : rec.history)
          if (!a.ref.empty()) refs.push_back(a.ref);
        land(task, title, refs, h.healed_by);
        trace.append("loop.task_done", {{"iteration", iteration.load()},
                                        {"task", tj},
                                        {"head", repo->head_sha()},
                                        {"healed", true},
                                        {"fixer", h.healed_by},
                                        {"attempts", rec.attempts}});
        if (task) publish(*task);
        phase("committing");
        return std::nullopt;
      }
      last_failure += "\nhealed, but " + not_done;
    } else if (!h.why_stopped.empty()) {
      last_failure += "\nthe heal stopped: " + h.why_stopped;
    }
    // Not healed: the attempt failed. Back to the task's start (the branch's
    // tip, known-good); the next iteration gives the agent the failure.
    repo->reset_hard(task_before, true, kKeep);
    trace.append("loop.attempt_failed",
                 {{"iteration", iteration.load()}, {"task", tj}, {"attempts", rec.attempts}, {"why", last_failure}});
    if (session_retries >= cfg.session_cap) return give_up_task(self, tj, title, session_cap_why(), true);
    if (book.after_heal(self) != Verdict::kGoOn)
      return give_up_task(self, tj, title, verdict_why(Verdict::kBudgetSpent, rec), false);
    if (no_progress >= cfg.loop.no_progress_limit)
      return finish(kExitRed, "stopped",
                    "stopped: " + std::to_string(no_progress) + " iterations in a row changed nothing (net)");
    return std::nullopt;
  }

  std::string session_cap_why() const {
    return "loop-wide retry cap: " + std::to_string(session_retries.load()) + " attempts (session_cap " +
           std::to_string(cfg.session_cap) + ")";
  }

  // loop-state.json: the current task's attempts and signatures.
  void task_state(const std::string& id, const RedFacts& facts) {
    Json b = book.state_of(id);
    state.update([&](Json& s) {
      s["retry_count"] = b["retry_count"];
      s["task_signatures"] = b["signatures"];
      s["session_retries"] = session_retries.load();
      s["last_failure_type"] = facts.failure_type;
      s["last_signature"] = util::sha12(facts.signature);
    });
  }

  // The task's path ends: its note (every attempt on it, the agent's own
  // diff), fsynced, then the worktree back at known-good, then
  // loop.on_escalate (or exit 2 when the session cap was reached).
  Ending give_up_task(const Task& task, const Json& tj, const std::string& title, const std::string& why,
                      bool session_cap) {
    const TaskRecord& rec = *book.find(task.id());
    std::string kg = repo->read_ref(kg_ref).value_or(task_before);
    std::string note = task_incident(rec, why, kg);
    if (repo->head_sha() != kg || !repo->is_clean(kKeep)) repo->reset_hard(kg, true, kKeep);
    std::string last_ref;
    for (const auto& a : rec.history)
      if (!a.ref.empty()) last_ref = a.ref;
    trace.append("rollback", {{"to", kg}, {"abandoned_ref", last_ref}});
    engine::set_incident_state(note, "rolled back to " + kg +
                                         " (the loop branch never held the attempts: they are kept under " +
                                         std::string(layout::kAttemptsPrefix) + wt_name + "/" + task.id() + "/)");
    trace.append("loop.task_escalated",
                 {{"iteration", iteration.load()}, {"task", tj}, {"why", why}, {"incident", note}, {"attempts", rec.attempts}});
    return escalated_task(note, task, tj, title, why, session_cap);
  }

  // The note of a task given up on, written in <root>/incidents before any
  // rollback (the engine's format: engine/incident.h).
  std::string task_incident(const TaskRecord& rec, const std::string& why, const std::string& to) {
    engine::Incident inc;
    inc.failure_type = rec.last_red.failure_type;
    inc.check_id = rec.last_red.check;
    inc.check_description = rec.last_red.description + " (task " + rec.id + ": " + rec.title + ")";
    inc.signal = rec.last_red.signal;
    for (const TaskAttempt& a : rec.history)
      inc.attempts.push_back({a.number, a.who + (a.ref.empty() ? "" : " (" + a.ref + ")"), a.outcome, a.signature});
    inc.issue_signature = rec.last_red.signature;
    inc.last_diff = rec.last_diff;
    inc.evidence = rec.last_red.evidence;
    inc.artifacts = rec.last_red.artifacts;
    inc.why_escalated = why;
    inc.not_rolled_back_why = "rollback to " + to + " in progress";
    std::string path = engine::write_incident(layout::incidents_dir(root), inc);
    trace.append("incident", {{"path", path}, {"check", inc.check_id}, {"why", why}, {"task", rec.id}});
    return path;
  }

  Ending escalated_task(const std::string& incident, const Task& task, const Json& tj, const std::string& title,
                        const std::string& why, bool session_cap) {
    // The state says "escalated" before the notification reads it.
    phase("escalated", [&](Json& s) { s["last_incident"] = incident; });
    escalated_note(incident, "escalated on " + title + ": " + why);
    if (session_cap) return finish(kExitEscalated, "escalated", session_cap_why() + "; see " + incident);
    if (cfg.loop.on_escalate == "stop") return finish(kExitEscalated, "escalated", "escalated: see " + incident);
    if (!prompt_mode()) {
      skipped.insert(task.index);
      write_run_file();
      trace.append("loop.task_skipped", {{"iteration", iteration.load()}, {"task", tj}, {"incident", incident}});
    }
    say("escalated: " + incident + "; skipping the task (loop.on_escalate = skip)");
    if (prompt_mode()) return finish(kExitEscalated, "escalated", "escalated: see " + incident);
    if (escalations_in_row >= cfg.circuit_breaker)
      return finish(kExitEscalated, "escalated",
                    "circuit breaker: " + std::to_string(escalations_in_row) + " escalations in a row");
    return std::nullopt;
  }

  // Not the agent's failure and not "no progress": wait and try again,
  // until the reset time the CLI printed (plus jitter) or with backoff,
  // as long as --until (or harness.max_wait_s, when set) allows.
  Ending wait_for_model(const AgentRun& a) {
    --iteration;  // a run the provider refused is not one of the agent's iterations
    rate_waited_ms += a.duration_ms;
    // harness.max_wait_s counts every wait in a row; --until is a time.
    const long long left = cfg.harness.max_wait_s
                               ? static_cast<long long>(*cfg.harness.max_wait_s * 1000) - rate_waited_ms
                               : static_cast<long long>(max_wait_s() * 1000);
    const std::string kind = a.cls.status == agent::Status::kRateLimited ? "rate-limited" : "unreachable";
    if (left <= 0) {
      std::string cause = a.cls.first_error.empty() ? a.cls.detail : a.cls.first_error;
      return finish(kExitRed, "stopped",
                    "harness " + kind + " for " + std::to_string((rate_waited_ms + 500) / 1000) + " s: " + a.program +
                        ": " + cause);
    }
    long long wait = agent::wait_ms(a.cls, rate_waits, left);
    ++rate_waits;
    rate_waited_ms += wait;
    const long long until = util::now_ms() + wait;
    say("harness " + a.cls.detail + ": waiting " + std::to_string(std::max<long long>(1, (wait + 500) / 1000)) +
        " s (until " + local_hhmm(until) + ")");
    trace.append("loop.wait", {{"status", agent::status_name(a.cls.status)},
                               {"wait_ms", wait},
                               {"waited_ms", rate_waited_ms},
                               {"until", iso8601(until)},
                               {"detail", a.cls.detail}});
    phase("waiting", [&](Json& s) {
      s["waiting_until"] = iso8601(until);
      s["waiting_for"] = kind;
    });
    if (rate_waits == 1) notify("waiting", "", "waiting on a " + kind + " model until " + iso8601(until));
    if (!repo->is_clean(kKeep)) repo->reset_hard(repo->head_sha(), true, kKeep);
    nap(wait);
    state.update([&](Json& s) {
      s["waiting_until"] = nullptr;
      s["waiting_for"] = nullptr;
    });
    return std::nullopt;
  }

  // The agent changed nothing.
  Ending no_change(const AgentRun& a, const std::string& prompt) {
    ++no_progress;
    trace.append("loop.no_change", {{"iteration", iteration.load()}, {"in_a_row", no_progress}});
    if (prompt_mode() && promised(a.output, prompt)) {
      // The agent says it is done: only the checks can agree.
      Measure m = measure();
      if (!m.setup_failed.empty()) return setup_stopped(m);
      if (m.interrupted) return interrupted();
      if (m.green) {
        bless();
        return finish(kExitOk, "complete", "complete: the agent promised and every check is green");
      }
      last_failure = "you said COMPLETE but these checks are red: " + util::join_argv(m.red);
    }
    if (no_progress >= cfg.loop.no_progress_limit)
      return finish(kExitRed, "stopped",
                    "stopped: " + std::to_string(no_progress) + " iterations in a row changed nothing");
    return std::nullopt;
  }

  // --- shards and the merge (loop/shard.h) -------------------------------------

  // A shard's finished task, as one commit on phoenix/task-<id>, pushed.
  void publish(const Task& task) {
    if (!sharded()) return;
    Pushed p = publish_task(*main_repo, root, opt.remote, task, task_before, repo->head_sha(), tasks_rel, *opt.shard);
    trace.append("loop.task_pushed", {{"task", task.id()},
                                      {"branch", task_branch(task.id())},
                                      {"commit", p.commit},
                                      {"remote", opt.remote},
                                      {"ok", p.ok},
                                      {"error", p.error}});
    if (p.ok) {
      unpushed.erase(task.id());
      say("pushed " + task_branch(task.id()) + " to " + opt.remote);
    } else {
      unpushed.insert(task.id());
      say("cannot push " + task_branch(task.id()) + " to " + opt.remote + ": " + p.error);
    }
  }

  // --merge: the loop branch onto the remote after every merge; a failure
  // is said and retried at the next one, and the last one decides the exit.
  void push_merged() {
    if (!merging()) return;
    Pushed p = push_branch(root, opt.merge_remote, branch);
    trace.append("loop.branch_pushed",
                 {{"branch", branch}, {"remote", opt.merge_remote}, {"ok", p.ok}, {"error", p.error}});
    merge_unpushed = p.ok ? "" : p.error;
    if (!p.ok) say("cannot push " + branch + " to " + opt.merge_remote + ": " + p.error);
  }

  // --merge: the task branches of the remote, queued behind what a resumed
  // run had queued already.
  void queue_fetched() {
    std::set<int> have;
    for (const auto& e : queue) have.insert(e.index);
    Fetched f = fetch_task_branches(*main_repo, root, opt.merge_remote, read_tasks(), have);
    for (const auto& n : f.notes) say(n);
    for (const auto& e : f.entries) {
      repo->write_ref(queue_ref(e.id), e.commit, "phoenix-loop: fetched from " + opt.merge_remote);
      queue.push_back(e);
      trace.append("loop.queued", to_json(e));
    }
    say("queued " + std::to_string(f.entries.size()) + " task branch(es) from " + opt.merge_remote);
    write_run_file();
    publish_queue();
  }

  // The ids of the tasks neither ticked nor skipped.
  std::vector<std::string> open_ids() {
    std::vector<std::string> ids;
    for (const auto& t : read_tasks())
      if (!t.done && !skipped.count(t.index)) ids.push_back(t.id());
    return ids;
  }

  // --- workers (--workers N) ---------------------------------------------------
  //
  // The loop's thread hands open tasks to the worker pool (loop/workers.h),
  // takes what the workers return, and alone moves the loop branch: one
  // queued task at a time through the verified merge queue (loop/queue.h).

  struct Drain {  // why the run winds down: no new task starts, the queue empties
    int code = kExitRed;
    std::string phase = "stopped";
    std::string why;
  };
  std::optional<Drain> drain;
  std::map<int, int> tries;             // failed merges (and unhealed runs) per task index
  std::map<int, std::string> failures;  // per task: why its last run did not reach the branch
  std::unique_ptr<WorkerPool> pool;     // last: destroyed (threads joined) first

  void wind_down(int code, const std::string& phase_name, const std::string& why) {
    if (!drain || (code == kExitEscalated && drain->code != kExitEscalated)) drain = Drain{code, phase_name, why};
  }

  void publish_queue() {
    Json q = queue_json();
    state.update([&](Json& s) { s["queue"] = q; });
  }

  bool queued(int index) const {
    return std::any_of(queue.begin(), queue.end(), [&](const QueueEntry& e) { return e.index == index; });
  }

  std::vector<Task> read_tasks() { return parse_tasks(util::read_file(wt + "/" + tasks_rel), tasks_rel); }

  // --resume: agents a killed loop left running are stopped, and whatever
  // they left in the workers' trees is kept under refs/phoenix/abandoned/.
  void resume_workers(gitx::Repo& main, const Json& prev) {
    if (!prev.is_object() || !prev.contains("workers") || !prev["workers"].is_array()) return;
    for (const auto& w : prev["workers"]) {
      long pid = w.value("pid", Json(nullptr)).is_number() ? w["pid"].get<long>() : 0;
      if (pid > 1 && ::getpgid(static_cast<pid_t>(pid)) == pid) ::kill(-static_cast<pid_t>(pid), SIGKILL);
      std::string path = w.value("worktree", "");
      if (path.empty() || !util::path_exists(path + "/.git")) continue;
      try {
        gitx::Repo t = gitx::Repo::open(path);
        if (t.is_clean(kKeep)) continue;
        std::string wip = t.snapshot_workdir("phoenix-loop: left by an interrupted worker", "phoenix",
                                             "phoenix@localhost", true, layout::state_prefixes());
        main.write_ref(std::string(engine::kAbandonedPrefix) + "loop-worker-" + std::to_string(util::now_ms()), wip,
                       "phoenix-loop: resume");
      } catch (const Error& e) { say("resume: cannot keep what a worker left in " + path + ": " + e.what()); }
    }
  }

  int run_workers() {
    pool = std::make_unique<WorkerPool>(
        workers, *main_repo, wt_name, [this](WorkerPool::Worker& w, const Job& j) { return work(w, j); },
        // Read under the state file's lock: two workers' changes can never
        // be written in the opposite order from the one they were read in.
        [this] { state.update([&](Json& s) { s["workers"] = pool->to_json(); }); });
    drop_merged();
    if (merging()) queue_fetched();
    say(std::to_string(workers) + " worker(s), through the merge queue");
    phase("agent", [&](Json& s) { s["task"] = nullptr; });
    while (true) {
      if (util::interrupted_signal()) return after_workers([&] { return interrupted(); });
      if (!drain) stop_reason();
      for (const JobResult& r : pool->take_finished(ready_entry() ? 0 : 50)) on_job(r);
      if (std::optional<size_t> next = ready_entry()) {
        if (Ending e = merge_next(*next)) return *e;
        continue;
      }
      if (!drain) assign();
      if (pool->busy() > 0) continue;
      if (drain) return finish(drain->code, drain->phase, drain->why);
      if (!queue.empty()) {
        drop_blocked();  // nothing ready, nobody working: what they wait for never comes
        continue;
      }
      std::vector<Task> tasks = read_tasks();
      bool open = std::any_of(tasks.begin(), tasks.end(), [&](const Task& t) {
        // --merge starts no task that no shard pushed: only those sent back.
        return !t.done && !skipped.count(t.index) && (!merging() || (failures.count(t.index) && after_done(t, tasks)));
      });
      if (!open) return all_ticked();
    }
  }

  // The first queued entry whose `after` tasks are merged.
  std::optional<size_t> ready_entry() {
    if (queue.empty()) return std::nullopt;
    std::vector<Task> tasks = read_tasks();
    for (size_t i = 0; i < queue.size(); ++i) {
      size_t index = static_cast<size_t>(queue[i].index);
      if (index >= tasks.size() || after_done(tasks[index], tasks)) return i;
    }
    return std::nullopt;
  }

  // Entries that can never be merged: a task they come after will not be.
  void drop_blocked() {
    std::vector<Task> tasks = read_tasks();
    for (const auto& e : queue) {
      repo->delete_ref(queue_ref(e.id));
      std::vector<std::string> waits;
      if (static_cast<size_t>(e.index) < tasks.size())
        for (const auto& a : tasks[static_cast<size_t>(e.index)].after) waits.push_back(a);
      skip(e.index, task_json(e.index, e.id, e.title), "",
           "comes after " + util::join_argv(waits) + ", which will not be merged");
    }
    queue.clear();
    write_run_file();
    publish_queue();
  }

  // Waits for every worker to end (on a signal the runner has stopped their
  // agents), then ends the run with `end`.
  int after_workers(const std::function<int()>& end) {
    while (pool->busy() > 0) pool->take_finished(50);
    pool->take_finished(0);
    return end();
  }

  void stop_reason() {
    if (util::path_exists(stop_path(root))) wind_down(kExitRed, "stopped", "stopped: .phoenix/STOP exists");
    if (auto left = ms_to_deadline(); left && *left <= 0)
      wind_down(kExitRed, "stopped", "stopped: --until " + opt.deadline_text + " reached");
  }

  // A resumed run's entries whose task is ticked on the branch were merged
  // before the crash: dropped, never merged twice.
  void drop_merged() {
    std::vector<Task> tasks = read_tasks();
    for (auto it = queue.begin(); it != queue.end();) {
      bool done = it->index < static_cast<int>(tasks.size()) && tasks[it->index].done;
      if (!done) {
        tries[it->index] = it->tries - 1;
        ++it;
        continue;
      }
      repo->delete_ref(queue_ref(it->id));
      trace.append("loop.queue_dropped", {{"task", it->id}, {"why", "ticked on the branch already"}});
      it = queue.erase(it);
    }
    write_run_file();
    publish_queue();
  }

  // Hands open tasks, in order, to free workers.
  void assign() {
    std::vector<Task> tasks = read_tasks();
    skip_blocked(tasks);
    for (const auto& t : tasks) {
      if (!pool->has_free()) return;
      if (t.done || skipped.count(t.index) || pool->on_task(t.index) || queued(t.index)) continue;
      if (merging() && !failures.count(t.index)) continue;  // no shard pushed it: not the merge's to do
      if (!after_done(t, tasks)) continue;                  // its `after` tasks are not merged yet
      if (cap_reached()) return;
      if (iteration >= max_iterations) {
        wind_down(kExitRed, "stopped", "stopped: --max-iterations " + std::to_string(max_iterations) + " reached");
        return;
      }
      ++iteration;
      TaskRecord& rec = book.of(t);
      Job job{t, tries[t.index] + 1, prompt_for(&t, tasks, failures[t.index]), ++rec.runs, rec.attempts, rec.signatures};
      say("iteration " + std::to_string(iteration) + ": " + t.title);
      trace.append("loop.worker_start", {{"iteration", iteration.load()}, {"task", t.id()}, {"tries", job.tries}});
      pool->start(job, repo->head_sha());
      phase("agent");
    }
  }

  static bool after_done(const Task& t, const std::vector<Task>& tasks) {
    for (const auto& id : t.after)
      for (const auto& o : tasks)
        if (o.id() == id && !o.done) return false;
    return true;
  }

  // --max-cost / --max-hours with workers: no new task starts past them.
  bool cap_reached() {
    Caps::Verdict v;
    {
      std::lock_guard<std::mutex> g(caps_mu);
      v = caps.before_iteration(iteration);
    }
    if (!v.stop) return false;
    trace.append("loop.cap", {{"cap", v.cap}, {"why", v.why}, {"caps", caps_figures()}});
    wind_down(kExitRed, "stopped", "stopped: " + v.why);
    return true;
  }

  // One task in a worker's own tree: the agent, the checks, the heal cycle.
  // The task's acceptance check is measured with phoenix.json's, and the
  // tasks file and acceptance scripts are put back after the agent's run.
  JobResult work(WorkerPool::Worker& w, const Job& job) {
    JobResult r;
    r.job = job;  // the heal below shows the harness the task's title
    Tree t = w.tree;
    const config::Config task_checks = with_acceptance(cfg, &job.task);
    t.cfg = &task_checks;
    r.base = t.repo->head_sha();
    std::vector<std::string> pinned{tasks_rel};
    for (const auto& p : acceptance_scripts(job.task, t.path)) pinned.push_back(p);
    PinnedFiles pins(t.path, pinned);
    AgentRun a = run_agent(job.prompt, t, [&](long pid) { pool->set_phase(w, "agent", pid); });
    if (!pins.restore().empty()) a.changed = !t.repo->is_clean(own_files());
    pool->set_phase(w, "checking");
    using agent::Status;
    if (util::interrupted_signal()) return ended(r, JobResult::End::kInterrupted);
    if (a.cls.status == Status::kQuota)
      return stop(r, "stopped", "stopped: harness " + a.cls.detail + " (credit or billing: waiting will not help)");
    if (a.cls.status == Status::kUnavailable) return stop(r, "failed", "harness unavailable: " + a.cls.detail);
    if (agent::waits(a.cls.status)) {
      --iteration;  // a run the provider refused is not one of the agent's iterations
      pool->set_phase(w, "waiting");
      long long wait = agent::wait_ms(a.cls, 0, static_cast<long long>(max_wait_s() * 1000));
      trace.append("loop.wait",
                   {{"status", agent::status_name(a.cls.status)}, {"wait_ms", wait}, {"task", job.task.id()}});
      nap(wait);
      return ended(r, JobResult::End::kWait);
    }
    if (a.cls.status == Status::kTimeout) a.changed = false;
    if (!a.changed) return ended(r, JobResult::End::kNoChange);
    Measure m = measure(t);
    if (!m.setup_failed.empty())
      return stop(r, "stopped",
                  "stopped: " + m.setup_failed.substr(0, m.setup_failed.find('\n')) + " (in the worker's worktree " +
                      t.path + "); fix phoenix.json's setup, then --resume");
    if (m.interrupted) return ended(r, JobResult::End::kInterrupted);
    pool->set_phase(w, "committing");
    if (m.green) {
      r.commit = t.repo->commit_all("phoenix-loop: " + job.task.title, "phoenix", "phoenix@localhost", true,
                                    layout::state_prefixes());
      return ended(r, JobResult::End::kQueued);
    }
    // Red: the attempt is kept under its ref and healed in the worker's
    // own tree, within what is left of the task's budget.
    const std::string attempt = t.repo->commit_all("phoenix-loop: attempt: " + job.task.title, "phoenix",
                                                   "phoenix@localhost", true, layout::state_prefixes());
    r.attempt_ref = attempt_ref(wt_name, job.task.id(), job.run);
    t.repo->write_ref(r.attempt_ref, attempt, "phoenix-loop: a red attempt");
    r.red = red_facts(m, task_checks);
    r.diff = t.repo->diff_patch(r.base, attempt);
    const int left = budget_for(cfg, r.red.failure_type) - job.attempts - 1;
    const bool again = std::find(job.signatures.begin(), job.signatures.end(), util::sha12(r.red.signature)) !=
                       job.signatures.end();
    if (left <= 0 || again || session_retries.load() + 1 >= cfg.session_cap)
      return ended(r, JobResult::End::kRed);  // the loop's thread gives the task up
    pool->set_phase(w, "healing");
    return healed_in_worker(r, t, m, left);
  }

  JobResult healed_in_worker(JobResult& r, const Tree& t, const Measure& m, int left) {
    TaskHeal th{left, r.base, change_text(r.job.task.title, r.diff)};
    Heal h = heal(t, m.red, true, &th);
    r.tried = h.tried;
    if (h.exit_code == kExitInterrupted || util::interrupted_signal()) return ended(r, JobResult::End::kInterrupted);
    r.why = "red in its own tree: " + util::join_argv(m.red);
    for (const auto& x : m.results)
      if (!x.ok) r.why += "\n  " + x.id + ": " + x.signal;
    if (h.exit_code == kExitOk && !h.healed_by.empty()) {
      Measure hm = measure(t);
      std::string not_done = hm.green ? not_done_why(*t.repo, r.base, t.repo->head_sha(), own_files(), "", nullptr)
                                      : "red after the heal: " + util::join_argv(hm.red);
      if (not_done.empty()) {
        r.commit = t.repo->head_sha();
        r.healed_by = h.healed_by;
        return ended(r, JobResult::End::kQueued);
      }
      r.why += "\nhealed, but " + not_done;
    } else if (!h.why_stopped.empty()) {
      r.why += "\nthe heal stopped: " + h.why_stopped;
    }
    return ended(r, JobResult::End::kRed);
  }

  static JobResult ended(JobResult& r, JobResult::End end) {
    r.end = end;
    return r;
  }

  static JobResult stop(JobResult& r, const std::string& phase_name, const std::string& why) {
    r.end = JobResult::End::kStop;
    r.code = kExitRed;
    r.phase = phase_name;
    r.why = why;
    return r;
  }

  void on_job(const JobResult& r) {
    const Task& t = r.job.task;
    using End = JobResult::End;
    if (r.end == End::kQueued) {
      no_progress = 0;
      if (!r.attempt_ref.empty()) {
        // Red first, then healed with the work kept: in the task's book.
        book.red_iteration(t, r.red, r.attempt_ref, r.diff);
        ++session_retries;
        book.heal_spent(t, r.tried, r.healed_by);
      }
      enqueue(r);
    } else if (r.end == End::kNoChange) {
      trace.append("loop.no_change", {{"task", t.id()}, {"in_a_row", ++no_progress}});
      if (no_progress >= cfg.loop.no_progress_limit)
        wind_down(kExitRed, "stopped",
                  "stopped: " + std::to_string(no_progress) + " iterations in a row changed nothing");
    } else if (r.end == End::kRed) {
      worker_red(r);
    } else if (r.end == End::kStop) {
      wind_down(r.code, r.phase, r.why);
    } else if (r.end == End::kError) {
      wind_down(kExitRed, "failed", "a worker on " + t.id() + " failed: " + r.why);
    }
    if (session_retries >= cfg.session_cap)
      wind_down(kExitEscalated, "escalated",
                "loop-wide retry cap: " + std::to_string(session_retries) + " heal attempts");
  }

  void enqueue(const JobResult& r) {
    const Task& t = r.job.task;
    QueueEntry e{t.index, t.id(), t.title, r.base, r.commit, r.job.tries, util::now_iso8601(), ""};
    e.trailers = "Phoenix-Task: " + t.id() + "\n";
    if (const TaskRecord* rec = book.find(t.id()))
      for (const auto& a : rec->history)
        if (!a.ref.empty()) e.trailers += "Phoenix-Attempt: " + a.ref + "\n";
    if (!r.healed_by.empty()) e.trailers += "Phoenix-Healed-By: " + r.healed_by + "\n";
    repo->write_ref(queue_ref(e.id), e.commit, "phoenix-loop: queued");
    queue.push_back(e);
    write_run_file();
    publish_queue();
    trace.append("loop.queued", to_json(e));
  }

  // A worker's red attempt, not healed: in the task's book; the task goes
  // back to a worker with the failure, or its path ends (the same failure
  // twice, the budget spent: note and skip or stop; the session cap: exit 2).
  void worker_red(const JobResult& r) {
    const Task& t = r.job.task;
    Verdict v = book.red_iteration(t, r.red, r.attempt_ref, r.diff);
    ++session_retries;
    book.heal_spent(t, r.tried, "");
    if (v == Verdict::kGoOn) v = book.after_heal(t);
    const TaskRecord& rec = *book.find(t.id());
    const Json tj = task_json(t.index, t.id(), t.title);
    trace.append("loop.attempt", {{"iteration", iteration.load()},
                                  {"task", tj},
                                  {"ref", r.attempt_ref},
                                  {"signature", util::sha12(r.red.signature)},
                                  {"red", r.red.red},
                                  {"attempts", rec.attempts},
                                  {"budget", rec.budget},
                                  {"verdict", verdict_name(v)}});
    failures[t.index] = r.why;
    const bool cap = session_retries >= cfg.session_cap;
    if (v == Verdict::kGoOn && !cap) return;  // another run, the failure fed back
    const std::string why = cap ? session_cap_why() : verdict_why(v, rec);
    const std::string tip = repo->head_sha();
    std::string incident = task_incident(rec, why, tip);
    engine::set_incident_state(incident, "rolled back to " + tip +
                                             " (the loop branch never held the attempts: they are kept under " +
                                             std::string(layout::kAttemptsPrefix) + wt_name + "/" + t.id() + "/)");
    trace.append("loop.task_escalated",
                 {{"iteration", iteration.load()}, {"task", tj}, {"why", why}, {"incident", incident}, {"attempts", rec.attempts}});
    escalated_note(incident);
    if (cap) return wind_down(kExitEscalated, "escalated", session_cap_why() + "; see " + incident);
    if (cfg.loop.on_escalate == "stop") return wind_down(kExitEscalated, "escalated", "escalated: see " + incident);
    skip(t.index, tj, incident, why);
  }

  void escalated_note(const std::string& incident, const std::string& summary = "") {
    last_incident = incident;
    util::write_file_atomic(layout::escalated_flag(root), incident + "\n");
    state.update([&](Json& s) { s["last_incident"] = incident; });
    notify("escalated", incident, summary);
    ++escalations_in_row;
  }

  static Json task_json(int index, const std::string& id, const std::string& title) {
    return Json{{"id", id}, {"title", title}, {"index", index}};
  }

  void skip(int index, const Json& tj, const std::string& incident, const std::string& why) {
    skipped.insert(index);
    write_run_file();
    trace.append("loop.task_skipped",
                 {{"iteration", iteration.load()}, {"task", tj}, {"incident", incident}, {"why", why}});
    say("skipping " + tj.value("id", "") + ": " + why + (incident.empty() ? "" : "; see " + incident));
    if (escalations_in_row >= cfg.circuit_breaker)
      wind_down(kExitEscalated, "escalated",
                "circuit breaker: " + std::to_string(escalations_in_row) + " escalations in a row");
  }

  static const char* kind_name(MergeResult::Kind k) {
    switch (k) {
      case MergeResult::Kind::kMerged: return "merged";
      case MergeResult::Kind::kConflict: return "conflict";
      case MergeResult::Kind::kRed: return "red";
      case MergeResult::Kind::kInterrupted: return "interrupted";
      case MergeResult::Kind::kSetupFailed: return "setup-failed";
    }
    return "";
  }

  // Entry `at` of the queue onto the loop branch's tip, verified.
  Ending merge_next(size_t at) {
    QueueEntry e = queue[at];
    std::string saved = util::read_file(wt + "/" + tasks_rel);
    std::vector<Task> tasks = parse_tasks(saved, tasks_rel);
    phase("merging", [&](Json& s) {
      s["task"] = Json{{"id", e.id}, {"title", e.title}, {"index", e.index}, {"total", tasks.size()}};
    });
    std::vector<std::string> keep = kKeep;
    keep.push_back(tasks_rel);
    const Task* task = e.index < static_cast<int>(tasks.size()) ? &tasks[e.index] : nullptr;
    Tree t = main_tree();
    // The combined tree is measured with the task's acceptance check too.
    config::Config merge_cfg = with_acceptance(cfg, task);
    t.cfg = &merge_cfg;
    MergeResult m = merge_entry(
        t, e, keep,
        [&] {
          if (task) util::write_file_atomic(wt + "/" + tasks_rel, tick_task(saved, *task, tasks_rel));
        },
        [&] { return measure(t); }, [&] { util::write_file_atomic(wt + "/" + tasks_rel, saved); });
    trace.append("loop.merge", {{"task", e.id},
                                {"result", kind_name(m.kind)},
                                {"duration_ms", m.duration_ms},
                                {"tip", m.tip},
                                {"commit", m.commit},
                                {"tries", e.tries},
                                {"conflicts", m.conflicts},
                                {"red", m.measure.red}});
    if (m.kind == MergeResult::Kind::kInterrupted || util::interrupted_signal())
      return after_workers([&] { return interrupted(); });
    if (m.kind == MergeResult::Kind::kSetupFailed) return after_workers([&] { return setup_stopped(m.measure); });
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(at));
    if (m.kind == MergeResult::Kind::kMerged) merged(e);
    else not_merged(e, m);
    write_run_file();
    publish_queue();
    phase(drain ? "stopped" : "agent", [&](Json& s) { s["task"] = nullptr; });
    return std::nullopt;
  }

  void merged(const QueueEntry& e) {
    sync_branch("merged " + e.id);
    bless();
    repo->delete_ref(queue_ref(e.id));
    escalations_in_row = 0;
    failures.erase(e.index);
    Json done{{"iteration", iteration.load()},
              {"task", {{"id", e.id}, {"title", e.title}, {"index", e.index}}},
              {"head", repo->head_sha()},
              {"merged", true},
              {"attempts", 0}};
    // As the loop without workers says it: a task healed in its worker's
    // tree is done healed, by its fixer, after its attempts.
    if (const TaskRecord* rec = book.find(e.id)) {
      done["attempts"] = rec->attempts;
      for (const auto& a : rec->history)
        if (a.outcome == "healed") {
          done["healed"] = true;
          done["fixer"] = a.who;
        }
    }
    trace.append("loop.task_done", done);
    say("merged " + e.id + ": " + e.title);
    push_merged();
  }

  // A conflict or a red combined tree: the task's work is kept, and the
  // task goes back to a worker on the new tip, or is given up on.
  void not_merged(const QueueEntry& e, const MergeResult& m) {
    std::string kept = std::string(engine::kAbandonedPrefix) + "task-" + e.id + "-" + std::to_string(util::now_ms());
    repo->write_ref(kept, e.commit, "phoenix-loop: not merged");
    repo->delete_ref(queue_ref(e.id));
    std::string why =
        m.kind == MergeResult::Kind::kConflict
            ? "your last attempt conflicted with work merged meanwhile, in " + util::join_argv(m.conflicts)
            : "your last attempt was green alone but red combined with work merged meanwhile: " +
                  util::join_argv(m.measure.red);
    for (const auto& r : m.measure.results)
      if (!r.ok) why += "\n  " + r.id + ": " + r.signal;
    tries[e.index] = e.tries;
    if (e.tries < kMergeTries) {
      failures[e.index] = why + "\nStart again from the files as they are now.";
      say(e.id + " not merged (" + kind_name(m.kind) + "): back to a worker on the new tip");
      return;
    }
    std::string incident = merge_incident(root + "/incidents", *repo, e, m, kept);
    escalated_note(incident);
    skip(e.index, task_json(e.index, e.id, e.title), incident,
         std::string(kind_name(m.kind)) + " after " + std::to_string(e.tries) + " tries");
  }

  int escalated_baseline(const Heal& h) {
    if (!h.incident.empty()) {
      last_incident = h.incident;
      util::write_file_atomic(root + "/.phoenix/ESCALATED", h.incident + "\n");
      phase("escalated", [&](Json& s) { s["last_incident"] = h.incident; });
      notify("escalated", h.incident, "escalated: the baseline could not be healed");
      return finish(kExitEscalated, "escalated", "baseline could not be healed: see " + h.incident);
    }
    return finish(kExitRed, "stopped", "baseline red and not healed");
  }
};

}  // namespace

int run_loop(const Options& options, const config::Config& cfg, trace::Trace& trace,
             const std::function<void(const std::string&)>& say) {
  gitx::set_lock_wait_s(cfg.git_lock_wait_s);
  Loop l(options, cfg, trace, say);
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
        l.phase("failed", [&](Json& s) {
          s["exit_code"] = e.exit_code();
          s["error"] = e.what();
        });
      } catch (const Error&) {}
      try {
        l.trace.append("loop.end", {{"exit_code", e.exit_code()}, {"phase", "failed"}, {"why", e.what()}});
      } catch (const Error&) {}
    }
    throw;
  }
}

}  // namespace phoenix::loop
