#include "engine/timeline.h"

#include <algorithm>
#include <iomanip>
#include <optional>
#include <sstream>

#include "engine/state.h"
#include "trace/events.h"
#include "util/format.h"
#include "util/term.h"
#include "util/text.h"

namespace phoenix::engine {
namespace {

using util::term::paint;

// The state word padded to a column, coloured by what it means.
std::string painted_state(const std::string& word, bool colour) {
  std::string padded = word;
  padded.resize(std::max<size_t>(word.size(), 11), ' ');
  const std::optional<State> s = parse_state(word);
  if (s == State::kHealed || s == State::kGreen) return paint(colour, "32", padded);
  if (s == State::kEscalated || s == State::kRejected || s == State::kDetected) return paint(colour, "31;1", padded);
  return paint(colour, "1", padded);
}

// What follows the state: the hook's short form leaves out the signature,
// the guard, the agent's status and the incident note.
std::string details(const util::Json& ev, bool full) {
  auto text = [&](const char* key) { return ev[key].get<std::string>(); };
  std::string rest;
  if (ev.contains("fixer")) rest += " fixer=" + text("fixer");
  if (ev.contains("signal")) rest += " " + text("signal");
  if (ev.contains("cached")) rest += "  (cached: " + text("cached") + ")";
  if (ev.contains("let_by")) rest += " — let by: " + text("let_by");
  if (full && ev.contains("signature")) rest += " signature " + text("signature");
  if (ev.contains("summary") && !text("summary").empty()) rest += " — " + text("summary");
  if (full && ev.contains("guard")) rest += " guard=" + text("guard");
  if (ev.contains("why")) rest += " — " + text("why");
  if (full && ev.contains("status")) {
    std::string detail = ev.value("detail", "");
    detail = util::clip_utf8(detail, 160);
    rest += " (" + text("status") + (detail.empty() ? "" : ": " + detail) + ")";
  }
  if (ev.contains("commit") && !text("commit").empty()) rest += " commit " + util::sha12(text("commit"));
  if (full && ev.contains("incident")) rest += "\n            incident: " + text("incident");
  return rest;
}

}  // namespace

std::string timeline_line(const util::Json& ev, TimelineForm form, bool colour) {
  const std::string kind = ev.value("event", "");
  const bool run = form == TimelineForm::kRun;
  if (kind == trace::event::kExplain && run) return paint(colour, "2", "phoenix: explain: " + ev.value("text", ""));
  if (kind == trace::event::kBlocked) return "phoenix: " + ev.value("text", "");
  if (kind != trace::event::kState) return "";
  const std::string check = ev.value("check", "");
  const std::string state = ev.value("state", "");
  if (!run)
    return "phoenix: heal: " + check + " " + state + details(ev, false) + " (" +
           std::to_string(ev.value("elapsed_ms", 0LL)) + " ms)";
  std::ostringstream line;
  line << "phoenix: [" << std::setw(7) << ev.value("elapsed_ms", 0LL) << " ms] " << check << "  "
       << painted_state(state, colour) << details(ev, true);
  return line.str();
}

}  // namespace phoenix::engine
