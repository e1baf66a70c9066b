#include "report/events.h"

#include "trace/events.h"
#include "util/text.h"

namespace phoenix::report {

using util::Json;

std::vector<Event> read_events(const std::string& trace_text, long long since_ms) {
  std::vector<Event> out;
  for (const auto& line : util::split_lines(trace_text)) {
    if (line.empty()) continue;
    Json e;
    try {
      e = Json::parse(line);
    } catch (const Json::exception&) {
      continue;  // a torn last line: `phoenix trace verify` reports it
    }
    if (!e.is_object()) continue;
    const Json& ts = e.contains("ts") && e["ts"].is_string() ? e["ts"] : Json("");
    long long t = util::iso8601_ms(ts.get<std::string>());
    if (t < 0 || t < since_ms) continue;
    out.push_back({t, ts.get<std::string>(),
                   e.contains("event") && e["event"].is_string() ? e["event"].get<std::string>() : "",
                   e.contains("data") && e["data"].is_object() ? e["data"] : Json::object()});
  }
  return out;
}

long long last_loop_start(const std::vector<Event>& events) {
  long long last = 0;
  for (const auto& e : events)
    if (e.event == trace::event::kLoopStart) last = e.t;
  return last;
}

long long loop_end_after(const std::vector<Event>& events, long long start_ms) {
  bool in = false;
  for (const auto& e : events) {
    if (e.t < start_ms) continue;
    if (e.event == trace::event::kLoopStart) in = true;
    else if (in && e.event == trace::event::kLoopEnd) return e.t;
  }
  return -1;
}

std::optional<Spend> spend_of(const Event& e) {
  const Json& d = e.data;
  const bool costed = d.contains("cost_usd") && d["cost_usd"].is_number();
  const bool counted = d.contains("model_calls") && d["model_calls"].is_number_integer();
  if (e.event == trace::event::kLoopAgent) {
    if (d.value("status", "") == "unavailable") return std::nullopt;
  } else if (e.event == trace::event::kProposal) {
    // A fixer that asked no model (bisect, the journal) says 0 calls or none.
    const bool ran = costed || (d.contains("model_calls") && d["model_calls"].is_null()) ||
                     (counted && d["model_calls"].get<long long>() > 0);
    if (!ran) return std::nullopt;
  } else {
    return std::nullopt;
  }
  Spend s;
  if (counted) s.calls = d["model_calls"].get<long long>();
  if (costed) s.cost_usd = d["cost_usd"].get<double>();
  return s;
}

util::Json task_of(const util::Json& data) {
  const auto it = data.find("task");
  return it != data.end() && it->is_object() ? *it : util::Json::object();
}

bool replayed_from_journal(std::string_view fixer) {
  // fixers::JournalFixer::name(); the report reads the trace, not fixers/.
  constexpr std::string_view kJournalFixer = "journal";
  return fixer == kJournalFixer;
}

}  // namespace phoenix::report
