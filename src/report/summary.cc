// The report as data (`phoenix report --json`): figures an outer harness
// reads. Its keys are stable; the words people read are in night.h.
#include <algorithm>
#include <map>

#include "report/summary.h"
#include "util/text.h"

namespace phoenix::report {

using util::Json;

Json summary_json(const std::string& trace_text, long long since) {
  Json done = Json::array(), skipped = Json::array(), incidents = Json::array(), heal_list = Json::array();
  std::map<std::string, Json> detected;  // check -> its last DETECTED event (elapsed_ms, signature)
  int model_calls = 0;
  std::map<std::string, int> heals_by_check;
  int heals = 0, escalations = 0, loops = 0, runs = 0, iterations = 0;
  double cost = 0;
  int costed = 0, uncosted = 0;
  long long busy_ms = 0, loop_start = -1, run_start = -1;
  for (const auto& line : util::split_lines(trace_text)) {
    if (line.empty()) continue;
    Json e;
    try {
      e = Json::parse(line);
    } catch (const Json::exception&) {
      continue;  // a torn last line: `phoenix trace verify` reports it
    }
    long long t = util::iso8601_ms(e.value("ts", ""));
    if (t < since) continue;
    std::string ev = e.value("event", "");
    const Json& d = e.contains("data") ? e["data"] : Json::object();
    if (ev == "loop.start") {
      ++loops;
      loop_start = t;
    } else if (ev == "loop.end" && loop_start >= 0) {
      busy_ms += std::max(0LL, t - loop_start);  // a wall clock stepped back
      loop_start = -1;
    } else if (ev == "run.start") {
      ++runs;
      run_start = t;
    } else if (ev == "run.end" && run_start >= 0) {
      if (loop_start < 0) busy_ms += std::max(0LL, t - run_start);  // a loop's runs are inside its time
      run_start = -1;
    } else if (ev == "loop.task_done") {
      done.push_back({{"task", d.value("task", Json())},
                      {"head", d.value("head", "")},
                      {"healed", d.value("healed", false)},
                      {"at", e.value("ts", "")}});
    } else if (ev == "loop.task_skipped") {
      skipped.push_back(
          {{"task", d.value("task", Json())}, {"incident", d.value("incident", "")}, {"at", e.value("ts", "")}});
    } else if (ev == "loop.agent") {
      ++iterations;
      if (d.value("status", "") != "unavailable") ++model_calls;
      if (d.contains("cost_usd") && d["cost_usd"].is_number()) {
        cost += d["cost_usd"].get<double>();
        ++costed;
      } else {
        ++uncosted;
      }
    } else if (ev == "proposal" && d.contains("model_calls") && d["model_calls"].is_number_integer()) {
      model_calls += d["model_calls"].get<int>();
    } else if (ev == "proposal" && d.contains("model_calls") && d["model_calls"].is_null()) {
      // The CLI reported no count: one run of it, as a loop iteration counts.
      ++model_calls;
      if (d.contains("cost_usd") && d["cost_usd"].is_number()) {
        cost += d["cost_usd"].get<double>();
        ++costed;
      } else {
        ++uncosted;
      }
    } else if (ev == "state") {
      std::string st = d.value("state", "");
      std::string check = d.value("check", "");
      if (st == "DETECTED") detected[check] = d;
      if (st == "HEALED") {
        ++heals;
        ++heals_by_check[check];
        const Json det = detected.count(check) ? detected[check] : Json::object();
        long long dur = d.value("elapsed_ms", 0LL) - det.value("elapsed_ms", 0LL);
        std::string fixer = d.value("fixer", "");
        heal_list.push_back({{"check", check},
                             {"fixer", fixer},
                             {"attempts", d.value("attempts", 0)},
                             {"duration_ms", dur < 0 ? 0 : dur},
                             {"replayed", fixer == "journal"},
                             {"signature", det.value("signature", "")},
                             {"commit", d.value("commit", "")},
                             {"at", e.value("ts", "")}});
      } else if (st == "ESCALATED") {
        ++escalations;
      }
    } else if (ev == "incident" || ev == "loop.incident") {
      // The loop copies the engine's note to the user's incidents/: list the copy.
      if (ev == "loop.incident" && !incidents.empty() && incidents.back()["path"] == d.value("from", ""))
        incidents.back()["path"] = d.value("path", "");
      else if (ev == "incident") {
        std::string check = d.value("check", "");
        std::string sig = detected.count(check) ? detected[check].value("signature", "") : "";
        incidents.push_back({{"path", d.value("path", "")},
                             {"check", check},
                             {"why", d.value("why", "")},
                             {"signature", sig},
                             {"rolled_back_to", nullptr},
                             {"at", e.value("ts", "")}});
      }
    } else if (ev == "rollback" && !incidents.empty() && incidents.back()["rolled_back_to"].is_null()) {
      incidents.back()["rolled_back_to"] = d.value("to", "");
    }
  }
  Json j = {{"tasks_done", done},
            {"tasks_skipped", skipped},
            {"heals", heals},
            {"heal_list", heal_list},
            {"heals_by_check", heals_by_check},
            {"model_calls", model_calls},
            {"escalations", escalations},
            {"incidents", incidents},
            {"loops", loops},
            {"runs", runs},
            {"iterations", iterations},
            {"time_s", static_cast<double>(busy_ms) / 1000.0},
            {"cost_usd", costed ? Json(cost) : Json(nullptr)},
            {"calls_without_cost", uncosted}};
  return j;
}

}  // namespace phoenix::report
