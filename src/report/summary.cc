// The report as data (`phoenix report --json`): figures an outer harness
// reads. Its keys are stable; the words people read are in night.h.
#include "report/summary.h"

#include <algorithm>
#include <map>

#include "engine/state.h"
#include "report/events.h"
#include "report/night.h"
#include "trace/events.h"
#include "util/json.h"

namespace phoenix::report {

using util::Json;

// The figures, gathered event by event.
class Figures::Impl {
 public:
  void read(const Event& e) {
    const std::string& ev = e.event;
    if (ev == trace::event::kLoopStart || ev == trace::event::kLoopEnd || ev == trace::event::kRunStart ||
        ev == trace::event::kRunEnd)
      busy(e);
    else if (ev == trace::event::kLoopTaskDone || ev == trace::event::kLoopTaskSkipped ||
             ev == trace::event::kLoopTaskEscalated)
      task(e);
    else if (ev == trace::event::kLoopAgent) ++iterations_;
    else if (ev == trace::event::kState) state(e);
    else if (ev == trace::event::kIncident || ev == trace::event::kLoopIncident) incident(e);
    else if (ev == trace::event::kRollback) rollback(e.data);
    else if (ev == trace::event::kLoopTestsBite) tests_bite(e.data);
    else if (ev == trace::event::kAgentStop) agent_stop(e);
    else if (ev == trace::event::kLoopVerdict || ev == trace::event::kVerdict || ev == trace::event::kHookVerdict)
      verdict(e.data);
    else if (ev == trace::event::kLoopKnownRed) known_red_ = e.data.value("checks", Json::object());
    else if (ev == trace::event::kLoopAlsoFixed)
      also_fixed_.push_back({{"task", e.data.value("task", Json())},
                             {"check", e.data.value("check", "")},
                             {"tests", e.data.value("tests", Json::array())}});
  }

  Json json() const {
    return {{"tasks_done", done_},
            {"tasks_skipped", skipped_},
            {"heals", heals_},
            {"heal_list", heal_list_},
            {"heals_by_check", heals_by_check_},
            {"tasks_escalated", escalated_},
            {"escalations", escalations_},
            {"incidents", incidents_},
            {"loops", loops_},
            {"runs", runs_},
            {"iterations", iterations_},
            {"time_s", static_cast<double>(busy_ms_) / 1000.0},
            {"agent_sessions", agent_sessions_},
            // Verdicts per test: the night's known red, the flaky tests
            // (check -> test -> times), what tasks also fixed.
            {"known_red", known_red_},
            {"flaky", flaky_},
            {"also_fixed", also_fixed_}};
  }

 private:
  // Busy time: each loop's, and each run's outside a loop.
  void busy(const Event& e) {
    if (e.event == trace::event::kLoopStart) {
      ++loops_;
      loop_start_ = e.t;
    } else if (e.event == trace::event::kLoopEnd && loop_start_ >= 0) {
      busy_ms_ += std::max(0LL, e.t - loop_start_);  // a wall clock stepped back
      loop_start_ = -1;
    } else if (e.event == trace::event::kRunStart) {
      ++runs_;
      run_start_ = e.t;
    } else if (e.event == trace::event::kRunEnd && run_start_ >= 0) {
      if (loop_start_ < 0) busy_ms_ += std::max(0LL, e.t - run_start_);  // a loop's runs are inside its time
      run_start_ = -1;
    }
  }

  // One entry per task (by id): a task is done once, whatever events led there.
  static void put(Json& list, Json entry) {
    const Json id = entry["task"].is_object() ? entry["task"].value("id", Json()) : Json();
    for (auto& x : list)
      if (!id.is_null() && x["task"].is_object() && x["task"].value("id", Json()) == id) {
        x = std::move(entry);
        return;
      }
    list.push_back(std::move(entry));
  }

  // Agent sessions judged by the stop hook (hook/agent_stop.h): one entry
  // per CLI and session id, brought up to date by each of its stops.
  void agent_stop(const Event& e) {
    const Json& d = e.data;
    const std::string agent = d.value("agent", ""), session = d.value("session", "");
    Json* s = nullptr;
    for (auto& x : agent_sessions_)
      if (x["agent"] == agent && x["session"] == session) s = &x;
    if (!s) {
      agent_sessions_.push_back({{"agent", agent},
                                 {"session", session},
                                 {"stops", 0},
                                 {"refused", 0},
                                 {"failures", Json::array()},
                                 {"incidents", Json::array()},
                                 {"started_ms", d.value("started_ms", e.t)}});
      s = &agent_sessions_.back();
    }
    (*s)["stops"] = (*s)["stops"].get<int>() + 1;
    (*s)["refused"] = std::max((*s)["refused"].get<int>(), d.value("refused", 0));
    (*s)["verdict"] = d.value("verdict", "");
    (*s)["time_s"] = static_cast<double>(e.t - (*s)["started_ms"].get<long long>()) / 1000.0;
    for (const char* key : {"failures", "incidents"})
      if (d.contains(key) && d[key].is_array())
        for (const auto& f : d[key])
          if (std::find((*s)[key].begin(), (*s)[key].end(), f) == (*s)[key].end()) (*s)[key].push_back(f);
  }

  // The flaky tests of a verdict: check -> test -> times found flaky.
  void verdict(const Json& d) {
    for (const std::string& t : util::strings_in(d, "flaky")) {
      Json& c = flaky_[d.contains("check") && d["check"].is_string() ? d["check"].get<std::string>() : ""];
      if (!c.is_object()) c = Json::object();
      c[t] = c.value(t, 0) + 1;
    }
  }

  // Tests that bite, per task id: its last change's verdict, and how many
  // of its attempts were refused because their tests passed without it.
  void tests_bite(const Json& d) {
    const std::string id = id_of(d);
    const std::string v = d.value("verdict", "");
    if (v == "toothless") ++toothless_[id];
    else bite_[id] = v;
  }

  void task(const Event& e) {
    const Json& d = e.data;
    if (e.event == trace::event::kLoopTaskDone && d.value("healed", false) && d.contains("attempts") &&
        !heal_list_.empty())
      heal_list_.back()["commit"] = d.value("head", "");  // the heal lands inside the task's one commit
    if (e.event == trace::event::kLoopTaskDone)
      put(done_, {{"task", d.value("task", Json())},
                  {"head", d.value("head", "")},
                  {"healed", d.value("healed", false)},
                  {"fixer", d.value("fixer", Json())},
                  {"attempts", d.value("attempts", Json())},
                  {"tests_bite", task_bite(d)},
                  {"refused_tests", toothless_of(d)},
                  {"at", e.ts}});
    else if (e.event == trace::event::kLoopTaskEscalated)
      put(escalated_, {{"task", d.value("task", Json())},
                       {"incident", d.value("incident", "")},
                       {"why", d.value("why", "")},
                       {"attempts", d.value("attempts", Json())},
                       {"at", e.ts}});
    else put(skipped_, {{"task", d.value("task", Json())}, {"incident", d.value("incident", "")}, {"at", e.ts}});
  }

  void state(const Event& e) {
    const Json& d = e.data;
    const std::optional<engine::State> st = engine::parse_state(d.value("state", ""));
    const std::string check = d.value("check", "");
    if (st == engine::State::kDetected) detected_[check] = d;
    if (st == engine::State::kHealed) healed(e, check);
  }

  void healed(const Event& e, const std::string& check) {
    const Json& d = e.data;
    ++heals_;
    ++heals_by_check_[check];
    const Json det = detected_.count(check) ? detected_[check] : Json::object();
    long long dur = d.value("elapsed_ms", 0LL) - det.value("elapsed_ms", 0LL);
    std::string fixer = d.value("fixer", "");
    heal_list_.push_back({{"check", check},
                          {"fixer", fixer},
                          {"attempts", d.value("attempts", 0)},
                          {"duration_ms", dur < 0 ? 0 : dur},
                          {"replayed", replayed_from_journal(fixer)},
                          {"signature", det.value("signature", "")},
                          {"commit", d.value("commit", "")},
                          {"at", e.ts}});
  }

  void incident(const Event& e) {
    const Json& d = e.data;
    // The loop copies the engine's note to the user's incidents/: list the copy.
    if (e.event == trace::event::kLoopIncident) {
      if (!incidents_.empty() && incidents_.back()["path"] == d.value("from", ""))
        incidents_.back()["path"] = d.value("path", "");
      return;
    }
    ++escalations_;  // every escalation writes its note first (the engine's and the loop's)
    std::string check = d.value("check", "");
    std::string sig = d.contains("signature") && d["signature"].is_string() ? d.value("signature", "")
                      : detected_.count(check)                              ? detected_[check].value("signature", "")
                                                                            : "";
    incidents_.push_back({{"path", d.value("path", "")},
                          {"check", check},
                          {"why", d.value("why", "")},
                          {"signature", sig},
                          {"rolled_back_to", nullptr},
                          {"at", e.ts}});
  }

  void rollback(const Json& d) {
    if (!incidents_.empty() && incidents_.back()["rolled_back_to"].is_null())
      incidents_.back()["rolled_back_to"] = d.value("to", "");
  }

  Json escalated_ = Json::array();
  Json known_red_ = Json::object(), flaky_ = Json::object(), also_fixed_ = Json::array();
  Json done_ = Json::array(), skipped_ = Json::array(), incidents_ = Json::array(), heal_list_ = Json::array();
  std::map<std::string, std::string> bite_;  // task id -> "bites", "exempt", "unmeasured"
  std::map<std::string, int> toothless_;     // task id -> attempts refused: tests passed without the change
  static std::string id_of(const Json& d) { return task_of(d).value("id", ""); }
  Json task_bite(const Json& d) const {
    auto it = bite_.find(id_of(d));
    return it == bite_.end() ? Json(nullptr) : Json(it->second);
  }
  int toothless_of(const Json& d) const {
    auto it = toothless_.find(id_of(d));
    return it == toothless_.end() ? 0 : it->second;
  }
  std::map<std::string, Json> detected_;  // check -> its last DETECTED event (elapsed_ms, signature)
  std::map<std::string, int> heals_by_check_;
  int heals_ = 0, escalations_ = 0, loops_ = 0, runs_ = 0, iterations_ = 0;
  Json agent_sessions_ = Json::array();
  long long busy_ms_ = 0, loop_start_ = -1, run_start_ = -1;
};

Figures::Figures() : impl_(std::make_unique<Impl>()) {}
Figures::~Figures() = default;
void Figures::read(const Event& e) { impl_->read(e); }
Json Figures::json() const { return impl_->json(); }

Json summary_json(const Night& n) {
  Json j = n.figures.is_object() ? n.figures : Json::object();
  j["agent_runs"] = n.agent_runs;
  // Unknown when any run reported no count (or no cost): never a guess.
  j["model_calls"] = n.model_calls ? Json(*n.model_calls) : Json(nullptr);
  j["cost_usd"] = n.cost_usd ? Json(*n.cost_usd) : Json(nullptr);
  j["calls_without_cost"] = n.runs_without_cost;
  return j;
}

}  // namespace phoenix::report
