// The night read back from the trace (report/night.h): NightReader, one
// step per kind of event, in one pass with the JSON report's figures
// (report/summary.h) over the events of the window.
#include <algorithm>
#include <set>

#include "engine/phase.h"
#include "engine/state.h"
#include "report/events.h"
#include "report/night.h"
#include "report/summary.h"
#include "trace/events.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::report {

namespace {

using util::Json;

std::string str(const Json& d, const char* key) {
  return d.contains(key) && d[key].is_string() ? d[key].get<std::string>() : std::string();
}

std::string relative(const std::string& path, const std::string& root) {
  if (root.empty() || path.empty()) return path;
  std::string r = root.back() == '/' ? root : root + "/";
  return path.compare(0, r.size(), r) == 0 ? path.substr(r.size()) : path;
}

// Agent runs not yet given to a task.
struct Pending {
  long long start_ms = 0;
  int turns = 0;
  int uncosted = 0;
  std::optional<long long> calls;
  std::optional<double> cost;
  std::vector<std::string> commits;
  void clear() { *this = Pending(); }
};

// The first open task of a tasks file ("- [ ] title") that is not in done.
std::string first_open(const std::string& text, const std::set<std::string>& finished, int* total) {
  std::string found;
  int n = 0;
  for (const auto& raw : util::split_lines(text)) {
    std::string l = util::trim(raw);
    bool open = l.rfind("- [ ]", 0) == 0, ticked = l.rfind("- [x]", 0) == 0 || l.rfind("- [X]", 0) == 0;
    if (!open && !ticked) continue;
    ++n;
    std::string title = util::trim(l.substr(5));
    if (open && found.empty() && !finished.count(title)) found = title;
  }
  if (total) *total = n;
  return found;
}

// Reads the events in order; each kind of event has its own step.
struct NightReader {
  explicit NightReader(const Facts& f) : facts(f) {}
  const Facts& facts;
  Night n;
  Pending pend;                          // the task in progress
  std::map<std::string, Json> detected;  // check -> DETECTED data
  std::map<std::string, long long> detected_at;
  double cost = 0;
  bool costed = false;
  long long calls = 0;
  bool calls_unknown = false;
  std::set<std::string> finished_titles;
  long long run_start = -1;
  std::map<std::string, int> attempts;            // task id -> attempts so far (loop.attempt)
  std::map<std::string, std::string> bite;        // task id -> its last change's tests measured without its code
  std::map<std::string, int> toothless;           // task id -> attempts whose tests passed without the change
  std::map<std::string, Json> attempted;          // task id -> its task object, for the tasks left open
  std::map<std::string, std::string> failed_why;  // task id -> why its last attempt failed

  void verdict_event(const Json& d) {
    const std::string check = str(d, "check");
    for (const std::string& t : util::strings_in(d, "flaky")) {
      auto it =
          std::find_if(n.flaky.begin(), n.flaky.end(), [&](const Flaky& f) { return f.check == check && f.test == t; });
      if (it == n.flaky.end()) n.flaky.push_back({check, t, 1});
      else ++it->times;
    }
  }

  // The events of verdicts per test (loop.attempt_failed, the verdicts, the
  // known red, what a task also fixed); false for any other event.
  bool verdicts(const Event& e) {
    const Json& d = e.data;
    const Json tj = task_of(d);
    if (e.event == trace::event::kLoopAttemptFailed) {
      failed_why[tj.value("id", std::string())] = str(d, "why");
    } else if (e.event == trace::event::kLoopVerdict || e.event == trace::event::kVerdict ||
               e.event == trace::event::kHookVerdict) {
      verdict_event(d);
    } else if (e.event == trace::event::kLoopKnownRed) {
      known_red_event(d);
    } else if (e.event == trace::event::kLoopAlsoFixed) {
      std::string tests;
      for (const std::string& t : util::strings_in(d, "tests")) tests += (tests.empty() ? "" : ", ") + t;
      n.also_fixed.push_back(tj.value("title", tj.value("id", std::string("a task"))) + " also fixed " +
                             str(d, "check") + ": " + tests);
    } else {
      return false;
    }
    return true;
  }

  void known_red_event(const Json& d) {
    n.known_red.clear();
    if (!d.contains("checks") || !d["checks"].is_object()) return;
    for (auto it = d["checks"].begin(); it != d["checks"].end(); ++it)
      n.known_red.push_back({it.key(), util::strings_in(it.value(), "tests")});
  }

  // One agent CLI run's spend (report/events.h: every report reads it so),
  // for the night and for the task in progress.
  void spend(const Spend& sp) {
    ++n.agent_runs;
    if (sp.calls) {
      pend.calls = pend.calls.value_or(0) + *sp.calls;
      calls += *sp.calls;
    } else {
      calls_unknown = true;
    }
    if (sp.cost_usd) {
      cost += *sp.cost_usd;
      costed = true;
      pend.cost = pend.cost.value_or(0) + *sp.cost_usd;
    } else {
      ++n.runs_without_cost;
      ++pend.uncosted;
    }
  }

  void read(const Event& e) {
    const Json& d = e.data;
    if (const std::optional<Spend> sp = spend_of(e)) spend(*sp);
    if (n.start_ms == 0) n.start_ms = e.t;
    n.end_ms = std::max(n.end_ms, e.t);
    if (e.event == trace::event::kLoopStart) {
      n.loop = true;
      n.running = true;
      n.branch = str(d, "branch");
      n.tasks_file = str(d, "source");
    } else if (e.event == trace::event::kLoopEnd) {
      n.running = false;
      n.end_phase = engine::parse_phase(str(d, "phase"));
      n.end_why = str(d, "why");
      if (d.contains("exit_code") && d["exit_code"].is_number_integer()) n.exit_code = d["exit_code"].get<int>();
    } else if (e.event == trace::event::kLoopBaseline) {
      for (std::string& r : util::strings_in(d, "red")) n.baseline_red.push_back(std::move(r));
    } else if (e.event == trace::event::kRunStart || e.event == trace::event::kRunEnd) {
      run(e);
    } else if (e.event == trace::event::kLoopAgent) {
      agent(e);
    } else if (e.event == trace::event::kLoopWait) {
      wait(e);
    } else if (e.event == trace::event::kLoopMeasure) {
      measure(e);
    } else if (e.event == trace::event::kProposal) {
      // its spend is read above
    } else if (e.event == trace::event::kState) {
      state(e);
    } else if (e.event == trace::event::kIncident || e.event == trace::event::kLoopIncident ||
               e.event == trace::event::kRollback) {
      escalation(e);
    } else if (e.event == trace::event::kKnownGood) {
      if (n.known_good.empty()) n.known_good = str(d, "commit");
    } else if (e.event == trace::event::kLoopTaskDone || e.event == trace::event::kLoopTaskSkipped ||
               e.event == trace::event::kLoopTaskEscalated) {
      task(e);
    } else if (e.event == trace::event::kAgentStop) {
      agent_stop(e);
    } else if (e.event == trace::event::kLoopAttempt) {
      const Json tj = task_of(d);
      attempts[tj.value("id", std::string())] = d.value("attempts", 0);
      attempted[tj.value("id", std::string())] = tj;
    } else if (e.event == trace::event::kLoopTestsBite) {
      const Json tj = task_of(d);
      const std::string id = tj.value("id", std::string());
      const std::string v = str(d, "verdict");
      if (v == "toothless") ++toothless[id];
      else bite[id] = v;
    } else {
      verdicts(e);
    }
  }

  // A stop of an agent session: the session's line, made or brought up to date.
  void agent_stop(const Event& e) {
    const Json& d = e.data;
    const std::string agent = str(d, "agent"), session = str(d, "session");
    auto it = std::find_if(n.agent_sessions.begin(), n.agent_sessions.end(),
                           [&](const AgentSession& s) { return s.agent == agent && s.session == session; });
    if (it == n.agent_sessions.end()) {
      n.agent_sessions.push_back({agent, session, d.value("started_ms", e.t), e.t, 0, 0, {}, "", {}});
      it = n.agent_sessions.end() - 1;
    }
    it->end_ms = e.t;
    it->stops = std::max(it->stops + 1, d.value("stop", 0));
    it->refused = std::max(it->refused, d.value("refused", 0));
    it->verdict = str(d, "verdict");
    for (const char* key : {"failures", "incidents"}) {
      auto& into = std::string(key) == "failures" ? it->failures : it->incidents;
      for (std::string& f : util::strings_in(d, key))
        if (std::find(into.begin(), into.end(), f) == into.end()) into.push_back(std::move(f));
    }
    n.marks.push_back({"agent", e.t - d.value("duration_ms", 0LL), e.t,
                       it->verdict != "refused" && it->verdict != "given-up",
                       agent + " stop " + std::to_string(it->stops) + ": " + it->verdict});
  }

  // Outside a loop each run is a mark of its own (inside, the iterations are).
  void run(const Event& e) {
    if (e.event == trace::event::kRunStart) {
      if (!n.loop) {
        ++n.runs;
        run_start = e.t;
      }
      return;
    }
    if (!n.loop && run_start >= 0) {
      int code = e.data.value("exit_code", 0);
      n.marks.push_back({"run", run_start, e.t, code == 0, "phoenix run: exit " + std::to_string(code)});
    }
    run_start = -1;
  }

  void agent(const Event& e) {
    const Json& d = e.data;
    long long dur = d.value("duration_ms", 0LL);
    std::string status = str(d, "status");
    // Its spend is read with every other run's (spend).
    if (status == "rate-limited" || status == "unreachable")
      return;  // a wait follows; not one of the agent's iterations  // a wait follows; not one of the agent's iterations
    ++n.iterations;
    if (pend.turns == 0) pend.start_ms = e.t - dur;
    ++pend.turns;
    n.marks.push_back({"iteration", e.t - dur, e.t, status == "ok" || status.empty() || d.value("changed", false),
                       "iteration " + std::to_string(d.value("iteration", 0))});
  }

  void wait(const Event& e) {
    const Json& d = e.data;
    // The first words of what the CLI said ("rate limit"), not its whole JSON.
    std::string detail = str(d, "detail");
    detail = detail.substr(0, std::min(detail.find(": "), detail.find('\n')));
    detail = util::clip_utf8(detail, 60);
    Wait w{e.t, d.value("wait_ms", 0LL), str(d, "status"), detail};
    n.waits.push_back(w);
    n.marks.push_back({"wait", w.at_ms, w.at_ms + w.wait_ms, false, w.status + ": waited " + duration(w.wait_ms)});
  }

  void measure(const Event& e) {
    const Json& d = e.data;
    bool ok = true;
    std::string red;
    if (d.contains("checks") && d["checks"].is_array())
      for (const auto& c : d["checks"])
        if (!c.value("ok", true)) {
          ok = false;
          red += (red.empty() ? "" : ", ") + c.value("id", std::string());
        }
    n.marks.push_back({"check", e.t, e.t, ok, ok ? "checks green" : "red: " + red});
  }

  void state(const Event& e) {
    const Json& d = e.data;
    const std::optional<engine::State> st = engine::parse_state(str(d, "state"));
    const std::string check = str(d, "check");
    if (st == engine::State::kDetected) {
      detected[check] = d;
      detected_at[check] = e.t;
    } else if (st == engine::State::kHealed) {
      Heal h;
      h.check = check;
      h.fixer = str(d, "fixer");
      h.attempts = d.value("attempts", 0);
      h.replayed = replayed_from_journal(h.fixer);
      h.start_ms = detected_at.count(check) ? detected_at[check] : e.t;
      h.end_ms = e.t;
      h.commit = str(d, "commit");
      h.signature = detected.count(check) ? str(detected[check], "signature") : "";
      n.heals.push_back(h);
      if (!h.commit.empty()) pend.commits.push_back(h.commit);
      n.marks.push_back(
          {"heal", h.start_ms, h.end_ms, true, check + " healed by " + h.fixer + (h.replayed ? " (replayed)" : "")});
    }
  }

  void escalation(const Event& e) {
    const Json& d = e.data;
    if (e.event == trace::event::kIncident) {
      Escalation x;
      x.at_ms = e.t;
      x.check = str(d, "check");
      x.why = str(d, "why");
      x.incident_abs = str(d, "path");
      x.incident = relative(x.incident_abs, facts.root);
      n.escalations.push_back(x);
      n.marks.push_back({"escalation", e.t, e.t, false, "escalated: " + x.check});
    } else if (e.event == trace::event::kLoopIncident) {
      // The loop copies the engine's note to the user's incidents/.
      for (auto& x : n.escalations)
        if (x.incident_abs == str(d, "from")) {
          x.incident_abs = str(d, "path");
          x.incident = relative(x.incident_abs, facts.root);
        }
    } else if (!n.escalations.empty() && n.escalations.back().rolled_back_to.empty()) {  // rollback
      Escalation& x = n.escalations.back();
      x.rolled_back_to = str(d, "to");
      x.abandoned = str(d, "abandoned");
      auto it = facts.abandoned_refs.find(x.abandoned);
      if (it != facts.abandoned_refs.end()) x.abandoned_ref = it->second;
      if (x.abandoned_ref.empty()) x.abandoned_ref = str(d, "abandoned_ref");  // the loop's red attempt
    }
  }

  // What the runs since the last task cost, and why not when unknown.
  void costs_into(Task& t) const {
    t.turns = pend.turns;
    t.model_calls = pend.calls;
    t.cost_usd = pend.cost;
    if (pend.uncosted && pend.cost) t.cost_why = std::to_string(pend.uncosted) + " run(s) reported no cost";
    else if (!pend.cost) t.cost_why = pend.turns ? "the agent CLI reported no cost" : "no agent run";
  }

  void task(const Event& e) {
    const Json& d = e.data;
    const Json tj = task_of(d);
    Task t;
    t.id = tj.value("id", std::string());
    t.title = tj.value("title", std::string());
    t.index = tj.value("index", 0);
    if (tj.contains("total") && tj["total"].is_number_integer()) n.tasks_total = tj["total"].get<int>();
    t.start_ms = pend.turns ? pend.start_ms : e.t;
    t.end_ms = e.t;
    costs_into(t);
    t.attempts =
        d.contains("attempts") && d["attempts"].is_number_integer() ? d["attempts"].get<int>() : attempts[t.id];
    t.toothless = toothless[t.id];
    if (e.event == trace::event::kLoopTaskDone) t.tests_bite = bite[t.id];
    if (e.event == trace::event::kLoopTaskDone) {
      t.outcome = d.value("healed", false) ? TaskOutcome::kHealed : TaskOutcome::kDone;
      t.healed_by = str(d, "fixer");
      // This version's loop folds a task's heals into the task's one commit
      // (its event counts the task's attempts); an earlier one left them.
      if (!d.contains("attempts")) t.commits = pend.commits;
      // The heal of a task's red attempt lands inside the task's commit:
      // that is where its fix is to be read.
      else if (t.outcome == TaskOutcome::kHealed && !n.heals.empty() && !str(d, "head").empty())
        n.heals.back().commit = str(d, "head");
      std::string head = str(d, "head");
      if (!head.empty() && std::find(t.commits.begin(), t.commits.end(), head) == t.commits.end())
        t.commits.push_back(head);
    } else {
      t.outcome = e.event == trace::event::kLoopTaskEscalated || !str(d, "incident").empty() ? TaskOutcome::kEscalated
                                                                                             : TaskOutcome::kSkipped;
      t.incident = relative(str(d, "incident"), facts.root);
      for (auto& x : n.escalations)
        if (x.incident == t.incident || x.incident_abs == str(d, "incident")) x.task = t.title;
    }
    finished_titles.insert(t.title);
    // One row per task: a later event of the same task says how it ended
    // (escalated, then skipped), and keeps what the first one counted.
    auto same =
        std::find_if(n.tasks.begin(), n.tasks.end(), [&](const Task& o) { return !t.id.empty() && o.id == t.id; });
    if (same != n.tasks.end()) {
      if (e.event == trace::event::kLoopTaskSkipped && same->outcome == TaskOutcome::kEscalated) return;
      t.start_ms = std::min(t.start_ms, same->start_ms);
      t.turns += same->turns;
      *same = t;
    } else {
      n.tasks.push_back(t);
    }
    pend.clear();
  }

  // After the last event: the task an escalation stopped the loop on has
  // no event of its own; the tasks file on the loop branch names it.
  Night finish() {
    if (costed) n.cost_usd = cost;
    if (!calls_unknown) n.model_calls = calls;
    for (auto& x : n.escalations)
      if (x.incident_abs.empty()) x.incident_abs = x.incident;
    const bool has_row = !n.escalations.empty() && std::any_of(n.tasks.begin(), n.tasks.end(), [&](const Task& t) {
      return !t.incident.empty() && t.incident == n.escalations.back().incident;
    });
    if (n.loop && n.end_phase == engine::Phase::kEscalated && !n.escalations.empty() && has_row) {
      n.escalations.back().stopped_loop = true;
    } else if (n.loop && n.end_phase == engine::Phase::kEscalated && !n.escalations.empty()) {
      Escalation& x = n.escalations.back();
      x.stopped_loop = true;
      std::string title;
      int total = 0;
      if (facts.tasks_at && !n.branch.empty() && !n.tasks_file.empty())
        title = first_open(facts.tasks_at(n.branch, n.tasks_file), finished_titles, &total);
      if (n.tasks_total == 0) n.tasks_total = total;
      if (x.task.empty()) x.task = title;
      Task t;
      t.title = title.empty() ? "(the task in progress)" : title;
      t.outcome = TaskOutcome::kEscalated;
      t.start_ms = pend.turns ? pend.start_ms : x.at_ms;
      t.end_ms = x.at_ms;
      t.turns = pend.turns;
      t.model_calls = pend.calls;
      t.cost_usd = pend.cost;
      if (!pend.cost) t.cost_why = pend.turns ? "the agent CLI reported no cost" : "no agent run";
      t.incident = x.incident;
      n.tasks.push_back(t);
    }
    // Every task with attempts that neither landed nor was given up on is
    // open: its next attempt never came (the night ended first).
    for (const auto& [id, tj] : attempted) {
      if (id.empty() || std::any_of(n.tasks.begin(), n.tasks.end(), [&id = id](const Task& t) { return t.id == id; }))
        continue;
      Task t;
      t.id = id;
      t.title = tj.value("title", id);
      t.index = tj.value("index", 0);
      t.outcome = TaskOutcome::kOpen;
      t.attempts = attempts[id];
      t.last_failure = failed_why[id];
      t.start_ms = t.end_ms = n.end_ms;
      t.cost_why = "counted with the night";
      n.tasks.push_back(t);
    }
    // The tasks file on the loop branch says how many tasks there are.
    if (n.loop && facts.tasks_at && !n.branch.empty() && !n.tasks_file.empty()) {
      int total = 0;
      first_open(facts.tasks_at(n.branch, n.tasks_file), finished_titles, &total);
      if (total > 0) n.tasks_total = total;
    }
    if (n.tasks_total < static_cast<int>(n.tasks.size())) n.tasks_total = static_cast<int>(n.tasks.size());
    std::stable_sort(n.marks.begin(), n.marks.end(), [](const Mark& a, const Mark& b) { return a.at_ms < b.at_ms; });
    return std::move(n);
  }
};

}  // namespace

Night read_night(const std::vector<Event>& events, const Window& window, const Facts& facts) {
  NightReader r(facts);
  Figures figures;
  r.n.since_ms = window.since_ms;
  for (const auto& e : events)
    if (window.holds(e)) {
      r.read(e);
      figures.read(e);
    }
  Night n = r.finish();
  n.figures = figures.json();
  // The repository's word on known-good beats the trace's (a later run may
  // have moved it): the loop's branch, or HEAD's outside a loop.
  if (facts.known_good_of)
    if (std::string kg = facts.known_good_of(n.branch); !kg.empty()) n.known_good = kg;
  return n;
}

Night read_night(const std::string& trace_text, long long since_ms, const Facts& facts, long long until_ms) {
  return read_night(read_events(trace_text, since_ms), Window{since_ms, until_ms}, facts);
}

}  // namespace phoenix::report
