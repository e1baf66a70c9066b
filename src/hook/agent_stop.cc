// The stop hook of an agent session: see hook/agent_stop.h.
#include "hook/agent_stop.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "checks/check.h"
#include "config/config.h"
#include "engine/guards.h"
#include "engine/incident.h"
#include "engine/measure.h"
#include "engine/signature.h"
#include "gitx/repo.h"
#include "hook/green.h"
#include "layout/paths.h"
#include "trace/events.h"
#include "trace/trace.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/lock.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::hook {

namespace fs = std::filesystem;
using util::Json;

namespace {

using Clock = std::chrono::steady_clock;

// How long a stop waits for another session's stop measuring the same
// work tree.
constexpr int kLockWaitMs = 600 * 1000;
constexpr int kSessionVersion = 1;
// The refusals a session file keeps (the oldest go first).
constexpr size_t kMaxHistory = 200;
// The most of the agent's diff an incident note keeps.
constexpr size_t kDiffBytes = 20000;

// What the CLIs send (claude and codex: session_id, cwd, stop_hook_active,
// transcript_path; gemini: session_id, cwd, stop_hook_active). Anything
// missing or of another type is left empty.
struct Input {
  std::string session;
  std::string cwd;
  bool stop_hook_active = false;
};

Input parse_input(const std::string& text) {
  Input in;
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_object()) return in;
  if (j.contains("session_id") && j["session_id"].is_string()) in.session = j["session_id"].get<std::string>();
  if (j.contains("cwd") && j["cwd"].is_string()) in.cwd = j["cwd"].get<std::string>();
  if (j.contains("stop_hook_active") && j["stop_hook_active"].is_boolean())
    in.stop_hook_active = j["stop_hook_active"].get<bool>();
  return in;
}

// A session id as a file name: its own characters when they are plain,
// else a hash of it.
std::string file_id(const std::string& session) {
  if (session.empty()) return "unknown";
  const bool plain = session.size() <= 80 && session.find_first_not_of(
                                                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                                 "QRSTUVWXYZ0123456789-_.") == std::string::npos;
  return plain && session.front() != '.' ? session : util::sha256_hex(session).substr(0, 32);
}

// One refusal, kept for the incident note.
struct Refusal {
  std::string check;
  std::string signal;
  std::string signature;
  long long at_ms = 0;
};

// What a session's stops left: .phoenix/agent-sessions/<cli>-<id>.json.
struct Session {
  std::string path;
  long long started_ms = 0;
  int stops = 0;
  int refused = 0;                                        // stops refused, all checks
  std::map<std::string, int> refusals;                    // per check, since it was last green
  std::map<std::string, std::vector<std::string>> shown;  // per check, the signatures it was refused with
  std::map<std::string, std::string> given_up;            // signature -> its incident note
  std::vector<Refusal> history;

  static Session load(const std::string& path) {
    Session s;
    s.path = path;
    const std::optional<std::string> text = util::read_file_if_exists(path);
    const Json j = text ? Json::parse(*text, nullptr, false) : Json();
    if (!j.is_object() || j.value("version", 0) != kSessionVersion) return s;  // unreadable: a new session
    s.started_ms = j.value("started_ms", 0LL);
    s.stops = j.value("stops", 0);
    s.refused = j.value("refused", 0);
    if (j.contains("refusals") && j["refusals"].is_object())
      for (auto& [k, v] : j["refusals"].items())
        if (v.is_number_integer()) s.refusals[k] = v.get<int>();
    if (j.contains("shown") && j["shown"].is_object())
      for (auto& [k, v] : j["shown"].items())
        if (std::vector<std::string> sigs = util::strings_of(v); !sigs.empty()) s.shown[k] = std::move(sigs);
    if (j.contains("given_up") && j["given_up"].is_object())
      for (auto& [k, v] : j["given_up"].items())
        if (v.is_string()) s.given_up[k] = v.get<std::string>();
    if (j.contains("history") && j["history"].is_array())
      for (const auto& h : j["history"])
        if (h.is_object())
          s.history.push_back(
              {h.value("check", ""), h.value("signal", ""), h.value("signature", ""), h.value("at_ms", 0LL)});
    return s;
  }

  void save() const {
    Json history = Json::array();
    for (const auto& h : this->history)
      history.push_back({{"check", h.check}, {"signal", h.signal}, {"signature", h.signature}, {"at_ms", h.at_ms}});
    const Json j = {{"version", kSessionVersion}, {"started_ms", started_ms}, {"stops", stops},
                    {"refused", refused},         {"refusals", refusals},     {"shown", shown},
                    {"given_up", given_up},       {"history", history}};
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    util::write_file_atomic(path, j.dump(2) + "\n");
  }
};

struct Red {
  const checks::CheckSpec* spec;
  checks::SenseResult result;
  std::string signature;
  std::vector<std::string> tests;
};

bool env_is(const char* name, const std::string& value) {
  const char* v = std::getenv(name);
  return v && value == v;
}

std::string system_message(const std::string& line) { return Json{{"systemMessage", line}}.dump() + "\n"; }

AgentStopOutcome let_go(const std::string& line) { return {0, system_message(line), ""}; }

std::string join(const std::vector<std::string>& items, size_t most) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > most) out += " and " + std::to_string(items.size() - most) + " more";
  return out;
}

// The end of a check's evidence: at most kEvidenceLines lines and
// kEvidenceBytes bytes, each line cut at a character boundary.
std::vector<std::string> evidence_lines(const std::string& evidence) {
  std::vector<std::string> lines = util::split_lines(util::trim(evidence));
  if (lines.size() > kEvidenceLines) lines.erase(lines.begin(), lines.end() - kEvidenceLines);
  size_t bytes = 0;
  std::vector<std::string> out;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string line = util::clip_utf8(*it, 300);
    if (bytes + line.size() > kEvidenceBytes) break;
    bytes += line.size() + 1;
    out.insert(out.begin(), std::move(line));
  }
  return out;
}

class Stop {
 public:
  explicit Stop(const AgentStopOptions& opt) : opt_(opt), start_(Clock::now()), now_ms_(util::now_ms()) {}

  AgentStopOutcome run() {
    in_ = parse_input(opt_.input);
    cli_ = agent_name(opt_.cli);
    if (env_is("PHOENIX_SKIP", "1")) return let_go("phoenix: PHOENIX_SKIP=1: nothing measured, the agent may stop");
    // What phoenix-loop and the harness fixer set for the agents they run
    // (PHOENIX_SANDBOX is also a person's choice of sandbox kind: only "1"
    // is the harness's mark).
    if (env_is("PHOENIX_LOOP", "1") || env_is("PHOENIX_SANDBOX", "1"))
      return skipped("this agent runs inside a Phoenix run (phoenix-loop or a heal), whose own measurement decides");
    std::error_code ec;
    const std::string cwd = !in_.cwd.empty() && fs::is_directory(in_.cwd, ec) ? in_.cwd : opt_.cwd;
    try {
      repo_.emplace(gitx::Repo::discover(cwd));
    } catch (const Error&) {
      return let_go("phoenix: " + cwd + " is not in a git repository: nothing measured, the agent may stop");
    }
    gitx::Repo* repo = &*repo_;
    root_ = repo->workdir();
    if (root_.empty()) return let_go("phoenix: a bare repository: nothing measured, the agent may stop");
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    try {
      cfg_ = config::load(root_, false);
    } catch (const ConfigError& e) {
      std::string why = e.what();
      std::replace(why.begin(), why.end(), '\n', ' ');
      return skipped("phoenix.json does not load (" + why + "): nothing measured");
    }
    if (cfg_.path.empty())
      return let_go("phoenix: no phoenix.json in " + root_ + ": nothing measured, the agent may stop");
    selected_ = hook_checks(cfg_);
    if (selected_.empty()) return skipped("phoenix.json has no checks: nothing measured");

    layout::ensure_state_dir(root_);
    trace_ = std::make_unique<trace::Trace>(layout::trace_file(root_));
    util::FileLock lock(layout::agent_stop_lock(root_), kLockWaitMs, "the stop hook of this work tree");
    session_ = Session::load(layout::agent_session_file(root_, cli_, file_id(in_.session)));
    if (session_.started_ms == 0) session_.started_ms = now_ms_;
    ++session_.stops;
    tree_ = repo->workdir_tree(layout::keep_prefixes());
    if (auto out = measure(*repo)) return finish(*out);
    return finish(decide());
  }

  // Phoenix's own failure, said in one line; the session goes on untouched.
  AgentStopOutcome failed(const std::string& what) {
    verdict_ = "error";
    why_ = what;
    trace_stop();
    return let_go("phoenix: the stop hook failed (" + what + "): nothing decided, the agent may stop");
  }

 private:
  AgentStopOutcome skipped(const std::string& why) {
    verdict_ = "skipped";
    why_ = why;
    trace_stop();
    return let_go("phoenix: " + why + "; the agent may stop");
  }

  // Every selected check at the tree; an outcome when the run ends early.
  std::optional<AgentStopOutcome> measure(const gitx::Repo& repo) {
    const Deadline deadline(start_, kAgentHookTimeoutS - kAgentHookMarginS);
    engine::StoreUse store(repo, root_, cfg_, std::string("agent-") + cli_, !engine::no_cache(opt_.no_cache),
                           trace_.get(), tree_);
    for (const auto& spec : selected_) {
      const std::optional<checks::CheckSpec> capped = deadline.cap(spec);
      if (!capped) return skipped("out of the stop hook's " + util::secs(deadline.timeout_s()) + " before " + spec.id);
      checks::SenseResult r = store.sense(spec, [&] { return checks::sense(*capped, root_); });
      if (r.interrupted || util::interrupted_signal() != 0) return skipped("interrupted while measuring " + spec.id);
      Json c = {{"id", spec.id}, {"ok", r.ok}, {"signal", r.signal}, {"duration_ms", r.duration_ms}};
      if (!r.cached.empty()) c["cached"] = r.cached;
      if (r.ok) {
        green_.push_back(spec.id + (r.cached.empty() ? "" : " (" + r.cached + ")"));
      } else {
        Red red{&spec, r, engine::issue_signature(spec.id, r.output), engine::extract_failing_tests(r.output)};
        c["signature"] = red.signature;
        c["failing"] = red.tests;
        reds_.push_back(std::move(red));
      }
      measured_.push_back(c);
    }
    return std::nullopt;
  }

  AgentStopOutcome decide() {
    // A check green now starts its count over.
    for (const auto& spec : selected_)
      if (std::none_of(reds_.begin(), reds_.end(), [&](const Red& r) { return r.spec->id == spec.id; })) {
        session_.refusals.erase(spec.id);
        session_.shown.erase(spec.id);
      }
    if (reds_.empty()) {
      verdict_ = "green";
      return let_go("phoenix: green at " + util::short_sha(tree_) + ": " + join(green_, 10) + " — the agent may stop");
    }
    std::vector<const Red*> refuse;
    std::vector<std::string> notes, given_before;
    for (const Red& r : reds_) {
      if (auto it = session_.given_up.find(r.signature); it != session_.given_up.end()) {
        given_before.push_back(r.spec->id + " (" + it->second + ")");
        continue;
      }
      const int budget = cfg_.budgets.count(r.spec->type) ? cfg_.budgets.at(r.spec->type) : 3;
      const int refused = session_.refusals[r.spec->id];
      const auto& shown = session_.shown[r.spec->id];
      std::string why;
      if (refused >= budget)
        why = "budget of " + util::plural(budget, "refusal", "refusals") + " for " + r.spec->type + " spent";
      else if (std::find(shown.begin(), shown.end(), r.signature) != shown.end())
        why = "the same failure twice (signature " + util::sha12(r.signature) + ")";
      if (why.empty()) {
        refuse.push_back(&r);
        continue;
      }
      notes.push_back(r.spec->id + ": " + why + ", see " + give_up(r, why));
    }
    if (!refuse.empty()) return refusal(refuse, notes, given_before);
    verdict_ = "given-up";
    std::string line = "phoenix: red, not refused again: ";
    std::vector<std::string> all = notes;
    for (const auto& g : given_before) all.push_back(g + ", given up earlier");
    line += join(all, 10) + " — the agent may stop; a person takes it from here";
    why_ = join(all, 10);
    return let_go(line);
  }

  // The incident note of a failure given up on; returns its path, relative.
  std::string give_up(const Red& r, const std::string& why) {
    engine::Incident inc;
    inc.failure_type = r.spec->type;
    inc.check_id = r.spec->id;
    inc.check_description = engine::describe_check(*r.spec);
    inc.signal = r.result.signal;
    int n = 0;
    for (const Refusal& h : session_.history)
      if (h.check == r.spec->id)
        inc.attempts.push_back({++n, std::string(cli_) + " session " + in_.session,
                                "stop refused: " + h.signal + " (" + util::sha12(h.signature) + ")", ""});
    inc.issue_signature = r.signature;
    inc.failing_tests = r.tests;
    try {
      // What the agent left, against the commit it started from.
      const std::string head = repo_->head_sha();
      inc.last_diff = util::clip_utf8(repo_->diff_workdir_patch(head), kDiffBytes, "\n... (cut)\n");
    } catch (const std::exception&) {
      // The note stands without it.
    }
    inc.evidence = r.result.evidence;
    inc.why_escalated = std::string("the stop hook of a ") + cli_ + " session: " + why + "; the agent was let stop";
    inc.not_rolled_back_why = "an agent session's work stays in the work tree as the agent left it (tree " +
                              util::sha12(tree_) + "); Phoenix rolls nothing back there";
    const std::string path = engine::write_incident(layout::incidents_dir(root_), inc);
    const std::string rel = fs::path(path).lexically_relative(root_).string();
    session_.given_up[r.signature] = rel;
    incidents_.push_back(rel);
    return rel;
  }

  AgentStopOutcome refusal(const std::vector<const Red*>& refuse, const std::vector<std::string>& notes,
                           const std::vector<std::string>& given_before) {
    verdict_ = "refused";
    ++session_.refused;
    std::vector<std::string> ids;
    for (const Red* r : refuse) ids.push_back(r->spec->id);
    std::string text = "phoenix refused the stop: " + join(ids, 10) + (ids.size() == 1 ? " is" : " are") +
                       " red at the tree you left (" + util::short_sha(tree_) + ").\n";
    for (const Red* r : refuse) {
      const int budget = cfg_.budgets.count(r->spec->type) ? cfg_.budgets.at(r->spec->type) : 3;
      const int n = ++session_.refusals[r->spec->id];
      session_.shown[r->spec->id].push_back(r->signature);
      session_.history.push_back({r->spec->id, r->result.signal, r->signature, now_ms_});
      if (session_.history.size() > kMaxHistory) session_.history.erase(session_.history.begin());
      failures_.insert(failures_.end(), r->tests.begin(), r->tests.end());
      if (r->tests.empty()) failures_.push_back(r->spec->id);
      text += "\n" + r->spec->id + ": " + r->result.signal + "  (" + engine::describe_check(*r->spec) + "; refusal " +
              std::to_string(n) + " of " + std::to_string(budget) + ")\n";
      if (!r->tests.empty()) text += "failing tests: " + join(r->tests, kMaxTestsNamed) + "\n";
      const std::vector<std::string> lines = evidence_lines(r->result.evidence);
      if (!lines.empty()) {
        text += "evidence (the end of its output):\n";
        for (const auto& l : lines) text += "  | " + l + "\n";
      }
      text +=
          "protected (never edit these to make it pass): " + join(engine::protected_globs(*r->spec, cfg_, root_), 30) +
          "\n";
    }
    for (const auto& n : notes) text += "\nnot refused again: " + n + "\n";
    for (const auto& g : given_before) text += "\ngiven up earlier: " + g + "\n";
    text += "\nMend the code until " + join(ids, 10) + (ids.size() == 1 ? " passes" : " pass") +
            "; Phoenix measures again when you stop. The same failure twice, or the check's budget spent, and "
            "Phoenix lets you stop with an incident note for a person.\n";
    return {2, "", text};
  }

  AgentStopOutcome finish(AgentStopOutcome out) {
    session_.save();
    trace_stop();
    return out;
  }

  void trace_stop() {
    if (!trace_) return;
    Json data = {{"agent", cli_},
                 {"session", in_.session},
                 {"stop", session_.stops},
                 {"stop_hook_active", in_.stop_hook_active},
                 {"verdict", verdict_},
                 {"tree", tree_},
                 {"checks", measured_},
                 {"refused", session_.refused},
                 {"failures", failures_},
                 {"incidents", incidents_},
                 {"started_ms", session_.started_ms},
                 {"duration_ms", std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count()}};
    if (!why_.empty()) data["why"] = why_;
    try {
      trace_->append(trace::event::kAgentStop, data);
    } catch (const std::exception&) {
      // The trace is the record, not the verdict: the stop stands without it.
    }
  }

  const AgentStopOptions& opt_;
  const Clock::time_point start_;
  const long long now_ms_;
  Input in_;
  const char* cli_ = "";
  std::optional<gitx::Repo> repo_;
  std::string root_;
  config::Config cfg_;
  std::vector<checks::CheckSpec> selected_;
  std::unique_ptr<trace::Trace> trace_;
  Session session_;
  std::string tree_;
  Json measured_ = Json::array();
  std::vector<std::string> green_;
  std::vector<Red> reds_;
  std::vector<std::string> failures_;
  std::vector<std::string> incidents_;
  std::string verdict_;
  std::string why_;
};

}  // namespace

AgentStopOutcome run_agent_stop(const AgentStopOptions& options) {
  Stop stop(options);
  try {
    return stop.run();
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    try {
      return stop.failed(util::clip_utf8(what, 300));
    } catch (...) {
      return let_go("phoenix: the stop hook failed (" + util::clip_utf8(what, 300) + "); the agent may stop");
    }
  } catch (...) { return let_go("phoenix: the stop hook failed; the agent may stop"); }
}

}  // namespace phoenix::hook
