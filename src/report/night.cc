// The words every rendering of the night shares (report/night.h): the
// verdict, what needs a person first, the next command, a task's outcome.
#include <algorithm>
#include <cctype>
#include <map>

#include "engine/phase.h"
#include "report/night.h"
#include "util/text.h"

namespace phoenix::report {

namespace {

int count_done(const Night& n) {
  return static_cast<int>(
      std::count_if(n.tasks.begin(), n.tasks.end(), [](const Task& t) { return landed(t.outcome); }));
}

}  // namespace

const char* outcome_name(TaskOutcome o) {
  switch (o) {
    case TaskOutcome::kDone: return "done";
    case TaskOutcome::kHealed: return "healed";
    case TaskOutcome::kSkipped: return "skipped";
    case TaskOutcome::kEscalated: return "escalated";
    case TaskOutcome::kOpen: return "open";
  }
  return "?";
}

std::string outcome_text(const Task& t) {
  std::string s = outcome_name(t.outcome);
  if (!t.healed_by.empty()) s += " by " + t.healed_by;
  if (t.attempts > 0) s += ", " + plural(t.attempts, "attempt", "attempts");
  if (t.toothless > 0)
    s += ", " + plural(t.toothless, "attempt", "attempts") + " refused: its tests passed without its change";
  if (t.tests_bite == "bites") s += "; its tests fail without its change";
  else if (t.tests_bite == "exempt") s += "; tests only: exempt from tests that bite";
  else if (t.tests_bite == "unmeasured") s += "; its tests could not be measured without its change";
  return s;
}

std::string verdict(const Night& n) {
  if (n.start_ms == 0) return "Nothing happened in this period: the trace holds no events since then.";
  std::vector<std::string> parts;
  if (n.loop) {
    const int done = count_done(n);
    const int escalated = static_cast<int>(std::count_if(
        n.tasks.begin(), n.tasks.end(), [](const Task& t) { return t.outcome == TaskOutcome::kEscalated; }));
    const int open = std::max(0, n.tasks_total - done - escalated);
    parts.push_back(std::to_string(done) + " of " + plural(n.tasks_total, "task", "tasks") + " done, " +
                    std::to_string(escalated) + " escalated, " + std::to_string(open) + " open");
  } else {
    parts.push_back(plural(n.runs, "run", "runs"));
  }
  if (!n.agent_sessions.empty()) {
    const auto green = std::count_if(n.agent_sessions.begin(), n.agent_sessions.end(),
                                     [](const AgentSession& a) { return a.verdict == "green"; });
    parts.push_back(plural(static_cast<long long>(n.agent_sessions.size()), "agent session", "agent sessions") + " (" +
                    std::to_string(green) + " ended green)");
  }
  std::map<std::string, int> by;
  for (const auto& h : n.heals) ++by[h.replayed ? "replayed from the journal" : "healed by " + h.fixer];
  for (const auto& [how, k] : by) parts.push_back(std::to_string(k) + " " + how);
  std::string s = util::join(parts, ", ");
  if (!n.escalations.empty()) {
    const Escalation& x = n.escalations.back();
    // A loop's escalated tasks are counted above; a run's are said here.
    s += n.loop ? std::string(", the last escalation at ") + clock(x.at_ms)
                : ", " + std::to_string(n.escalations.size()) + " escalated at " + clock(x.at_ms);
    if (x.stopped_loop) s += ": the loop stopped";
    else if (n.loop) s += n.escalations.size() == 1 ? ": the task was skipped" : ": the tasks were skipped";
  } else if (n.loop && n.running) {
    s += "; the loop is still running";
  } else if (n.loop && n.end_phase != engine::Phase::kComplete && !n.end_why.empty()) {
    s += "; the loop " +
         n.end_why.substr(0, n.end_why.rfind(':') == std::string::npos ? n.end_why.size() : n.end_why.find(':'));
  }
  s += n.known_good.empty() ? "; no known-good commit yet" : "; known-good is " + short_sha(n.known_good);
  s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s + ".";
}

std::vector<std::string> known_red_lines(const Night& n) {
  std::vector<std::string> v;
  for (const auto& k : n.known_red)
    v.push_back("Known red (failing before the first task, not healed, no task blamed for it): " + k.check +
                (k.tests.empty() ? " (the whole check)" : ": " + util::join(k.tests, ", ")) + ".");
  return v;
}

std::vector<std::string> needs_person(const Night& n) {
  std::vector<std::string> v;
  for (auto it = n.escalations.rbegin(); it != n.escalations.rend(); ++it) {
    std::string s =
        "Read " + (it->incident.empty() ? std::string("the incident note") : it->incident) + ": `" + it->check + "`";
    if (!it->task.empty()) s += " on \"" + it->task + "\"";
    s += " escalated";
    if (!it->why.empty()) s += " (" + it->why + ")";
    if (!it->abandoned_ref.empty()) s += "; the abandoned work is " + it->abandoned_ref;
    else if (!it->abandoned.empty() && it->abandoned != it->rolled_back_to)
      s += "; the abandoned head is " + short_sha(it->abandoned);
    v.push_back(s + ".");
  }
  for (const AgentSession& a : n.agent_sessions)
    for (const std::string& note : a.incidents)
      v.push_back("Read " + note + ": a " + a.agent + " session was let stop red after " +
                  plural(a.refused, "refused stop", "refused stops") +
                  (a.failures.empty() ? std::string() : " (" + util::join(a.failures, ", ") + ")") + ".");
  // Red before the first iteration (not the agent's doing), and not healed
  // since: a baseline the loop healed is one of the heals, nothing to do.
  std::vector<std::string> still_red;
  for (const auto& c : n.baseline_red) {
    bool healed = false;
    for (const auto& h : n.heals) healed = healed || h.check == c;
    if (!healed) still_red.push_back(c);
  }
  if (!still_red.empty() && n.known_red.empty())
    v.push_back("Red before the first iteration (not the agent's doing): " + util::join(still_red, ", ") + ".");
  for (const Task& t : n.tasks)
    if (t.outcome == TaskOutcome::kOpen)
      v.push_back("Open: \"" + t.title + "\" after " + plural(t.attempts, "attempt", "attempts") +
                  "; its next attempt never came (the night ended first)" +
                  (t.last_failure.empty() ? "" : ": " + t.last_failure.substr(0, t.last_failure.find('\n'))) + ".");
  if (n.loop && !n.running && n.end_phase != engine::Phase::kComplete && n.end_phase != engine::Phase::kEscalated &&
      !n.end_why.empty())
    v.push_back("The loop stopped: " + n.end_why + ".");
  if (v.empty()) {
    if (n.loop && n.running) v.push_back("Nothing yet: the loop is still running.");
    else if (n.start_ms == 0) v.push_back("Nothing.");
    else if (n.loop) v.push_back("Nothing: review the loop's commits and merge them.");
    else v.push_back("Nothing: every run ended green or healed; the fixes are commits on your branch.");
  }
  return v;
}

std::string next_command(const Night& n) {
  if (n.loop && n.running) return "phoenix status --watch";
  if (!n.escalations.empty()) return "phoenix report --html night.html";
  for (auto it = n.agent_sessions.rbegin(); it != n.agent_sessions.rend(); ++it)
    if (!it->incidents.empty()) return "less " + it->incidents.back();  // a session let stop red
  if (n.loop && !n.branch.empty()) return "git log --oneline " + n.branch;
  if (n.loop) return "phoenix status";
  for (auto it = n.heals.rbegin(); it != n.heals.rend(); ++it)
    if (!it->commit.empty()) return "git show --stat " + short_sha(it->commit);
  return "phoenix journal";
}

std::string period(const Night& n) {
  if (n.start_ms == 0) return "no events";
  std::string end = local_time(n.end_ms);
  if (end.substr(0, 10) == local_time(n.start_ms).substr(0, 10)) end = clock(n.end_ms);
  return local_time(n.start_ms) + " to " + end + " (" + duration(n.end_ms - n.start_ms) + ")";
}

std::string title(const Night& n) { return n.loop ? "Phoenix: the night on " + n.branch : "Phoenix: the runs"; }

std::string totals(const Night& n) {
  std::string cost = money(n.cost_usd);
  if (!n.cost_usd) cost = n.agent_runs ? "cost unknown (no agent run reported one)" : "no cost (no agent run)";
  else if (n.runs_without_cost) cost += " (+ " + std::to_string(n.runs_without_cost) + " run(s) that reported no cost)";
  const std::string what = n.loop ? plural(n.iterations, "iteration", "iterations") : plural(n.runs, "run", "runs");
  return what + ", " + duration(n.end_ms - n.start_ms) + ", " + cost;
}

std::string agent_session_text(const AgentSession& s) {
  std::string t = plural(s.stops, "stop", "stops") + ", " + std::to_string(s.refused) + " refused";
  if (!s.failures.empty()) t += " (" + util::join(s.failures, ", ") + ")";
  const std::string& v = s.verdict;
  t += v == "green"      ? ", ended green"
       : v == "refused"  ? ", last stop refused"
       : v == "given-up" ? ", let stop red"
       : v.empty()       ? ""
                         : ", last stop: " + v;
  if (!s.incidents.empty()) t += " (" + util::join(s.incidents, ", ") + ")";
  return t + ", " + duration(s.end_ms - s.start_ms);
}

}  // namespace phoenix::report
