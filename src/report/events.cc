#include "report/events.h"

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

}  // namespace phoenix::report
