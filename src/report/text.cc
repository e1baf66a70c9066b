// The terminal and Markdown reports: the same sections in the same order.
#include <cstdio>

#include "report/render.h"
#include "util/term.h"
#include "util/text.h"

namespace phoenix::report {

namespace {

using util::term::paint;

// Display width of UTF-8 text (code points; what this report writes).
size_t width_of(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;
  return w;
}

std::string shas(const std::vector<std::string>& commits) {
  std::vector<std::string> v;
  for (const auto& c : commits) v.push_back(short_sha(c));
  return v.empty() ? std::string(kDash) : util::join(v, ", ");
}

std::string commits_text(const Task& t) {
  if (t.commits.empty()) return "no commit";
  return std::to_string(t.commits.size()) + (t.commits.size() == 1 ? " commit " : " commits ") + shas(t.commits);
}

std::string turns_text(const Task& t) { return std::to_string(t.turns) + (t.turns == 1 ? " turn" : " turns"); }

std::string cost_text(const Task& t) {
  if (t.cost_usd) return money(t.cost_usd) + (t.cost_why.empty() ? "" : " (+ " + t.cost_why + ")");
  return "cost unknown: " + t.cost_why;
}

std::string heal_text(const Heal& h) {
  return (h.replayed ? "replayed from the journal" : "by " + h.fixer) + ", " + std::to_string(h.attempts) +
         (h.attempts == 1 ? " attempt" : " attempts") + ", " + duration(h.end_ms - h.start_ms) +
         (h.commit.empty() ? "" : ", fix " + short_sha(h.commit));
}

std::string times_text(int n) { return n == 1 ? "once" : std::to_string(n) + " times"; }

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
  return o;
}

}  // namespace

std::string wrap(const std::string& text, int width, const std::string& first, int indent) {
  std::string out = first, line = first;
  std::string pad(static_cast<size_t>(indent), ' ');
  size_t at = 0;
  bool fresh = true;
  while (at < text.size()) {
    size_t sp = text.find(' ', at);
    std::string word = text.substr(at, sp == std::string::npos ? std::string::npos : sp - at);
    at = sp == std::string::npos ? text.size() : sp + 1;
    if (word.empty()) continue;
    if (!fresh && static_cast<int>(width_of(line) + 1 + width_of(word)) > width) {
      out += "\n" + pad;
      line = pad;
      fresh = true;
    }
    if (!fresh) {
      out += " ";
      line += " ";
    }
    out += word;
    line += word;
    fresh = false;
  }
  return out + "\n";
}

std::string terminal(const Night& n, bool color, int width) {
  auto head = [&](const std::string& s) { return "\n" + paint(color, "1", s) + "\n"; };
  auto outcome = [&](TaskOutcome o) {
    std::string label = outcome_name(o);
    label.resize(10, ' ');
    const char* code = landed(o) ? "32" : o == TaskOutcome::kOpen ? "33" : "31";
    return paint(color, code, label);
  };
  std::string s = paint(color, "1", title(n)) + "\n" + period(n) + "\n\n";
  s += wrap(verdict(n), width, "", 0);
  for (const auto& line : known_red_lines(n)) s += wrap(line, width, "", 2);
  s += head("Needs a person first");
  int k = 0;
  for (const auto& line : needs_person(n)) s += wrap(line, width, "  " + std::to_string(++k) + ". ", 5);
  s += head("Tasks");
  if (n.tasks.empty()) s += "  " + std::string(kDash) + "\n";
  for (const auto& t : n.tasks) {
    s += wrap(t.title, width, "  " + outcome(t.outcome), 12);
    std::string detail =
        commits_text(t) + " · " + duration(t.end_ms - t.start_ms) + " · " + turns_text(t) + " · " + cost_text(t);
    if (t.attempts > 0) detail += " · " + plural(t.attempts, "attempt", "attempts");
    if (!t.healed_by.empty()) detail += " · healed by " + t.healed_by;
    if (t.toothless > 0)
      detail += " · " + plural(t.toothless, "attempt", "attempts") + " refused: its tests passed without its change";
    if (t.tests_bite == "bites") detail += " · its tests fail without its change";
    else if (t.tests_bite == "exempt") detail += " · tests only: exempt from tests that bite";
    if (!t.incident.empty()) detail += " · " + t.incident;
    s += wrap(detail, width, std::string(12, ' '), 12);
  }
  for (const auto& a : n.also_fixed) s += wrap(a, width, "  also fixed ", 12);
  s += head("Heals");
  if (n.heals.empty()) s += "  " + std::string(kDash) + "\n";
  for (const auto& h : n.heals) s += wrap(heal_text(h), width, "  " + clock(h.end_ms) + "  " + h.check + " ", 9);
  if (!n.flaky.empty()) s += head("Flaky tests (failed, then passed when run again; not counted)");
  for (const auto& f : n.flaky) s += wrap(f.check + ": " + f.test + " (" + times_text(f.times) + ")", width, "  ", 4);
  s += head("Rate-limit waits");
  if (n.waits.empty()) s += "  " + std::string(kDash) + "\n";
  for (const auto& w : n.waits)
    s += wrap(w.status + ", waited " + duration(w.wait_ms) + (w.detail.empty() ? "" : " (" + w.detail + ")"), width,
              "  " + clock(w.at_ms) + "  ", 9);
  if (!n.agent_sessions.empty()) {
    s += head("Agent sessions");
    for (const auto& a : n.agent_sessions)
      s += wrap(agent_session_text(a), width,
                "  " + clock(a.end_ms) + "  " + a.agent + " " + a.session.substr(0, 8) + " ", 9);
  }
  s += head("Escalations");
  if (n.escalations.empty()) s += "  " + std::string(kDash) + "\n";
  for (const auto& x : n.escalations) {
    std::string t = x.check + ": " + (x.why.empty() ? "escalated" : x.why) + "; note " + x.incident;
    if (!x.rolled_back_to.empty()) t += "; rolled back to " + short_sha(x.rolled_back_to);
    if (!x.abandoned_ref.empty()) t += "; abandoned work in " + x.abandoned_ref;
    s += wrap(t, width, "  " + paint(color, "31", clock(x.at_ms)) + "  ", 9);
  }
  s += head("Totals");
  s += wrap(totals(n), width, "  ", 2);
  s += "\nNext: " + paint(color, "1", next_command(n)) + "\n";
  return s;
}

std::string markdown(const Night& n) {
  std::string s = "# " + title(n) + "\n\n" + period(n) + "\n\n**" + verdict(n) + "**\n\n";
  for (const auto& line : known_red_lines(n)) s += line + "\n\n";
  s += "## Needs a person first\n\n";
  int k = 0;
  for (const auto& line : needs_person(n)) s += std::to_string(++k) + ". " + line + "\n";
  s += "\n## Tasks\n\n";
  if (n.tasks.empty()) s += std::string(kDash) + "\n";
  else {
    s += "| task | outcome | commits | duration | turns | cost |\n|---|---|---|---|---|---|\n";
    for (const auto& t : n.tasks)
      s += "| " + md_cell(t.title) + " | " + outcome_text(t) +
           (t.incident.empty() ? "" : " ([note](" + t.incident + "))") + " | " + shas(t.commits) + " | " +
           duration(t.end_ms - t.start_ms) + " | " + std::to_string(t.turns) + " | " +
           md_cell(t.cost_usd ? money(t.cost_usd) + (t.cost_why.empty() ? "" : " (+ " + t.cost_why + ")")
                              : std::string(kDash) + " (" + t.cost_why + ")") +
           " |\n";
  }
  for (const auto& a : n.also_fixed) s += "\n" + md_cell(a) + "\n";
  if (!n.flaky.empty()) s += "\n## Flaky tests\n\n";
  for (const auto& f : n.flaky) s += "- `" + f.check + "`: `" + f.test + "` (" + times_text(f.times) + ")\n";
  s += "\n## Heals\n\n";
  if (n.heals.empty()) s += std::string(kDash) + "\n";
  else {
    s += "| at | check | fixer | attempts | duration | replayed | fix |\n|---|---|---|---|---|---|---|\n";
    for (const auto& h : n.heals)
      s += "| " + clock(h.end_ms) + " | `" + h.check + "` | " + h.fixer + " | " + std::to_string(h.attempts) + " | " +
           duration(h.end_ms - h.start_ms) + " | " + (h.replayed ? "yes" : "no") + " | " +
           (h.commit.empty() ? std::string(kDash) : short_sha(h.commit)) + " |\n";
  }
  s += "\n## Rate-limit waits\n\n";
  if (n.waits.empty()) s += std::string(kDash) + "\n";
  for (const auto& w : n.waits)
    s += "- " + clock(w.at_ms) + ": " + w.status + ", waited " + duration(w.wait_ms) +
         (w.detail.empty() ? "" : " (" + w.detail + ")") + "\n";
  if (!n.agent_sessions.empty()) {
    s += "\n## Agent sessions\n\n";
    for (const auto& a : n.agent_sessions)
      s += "- " + clock(a.end_ms) + ": " + a.agent + " `" + md_cell(a.session) +
           "`: " + md_cell(agent_session_text(a)) + "\n";
  }
  s += "\n## Escalations\n\n";
  if (n.escalations.empty()) s += std::string(kDash) + "\n";
  for (const auto& x : n.escalations) {
    s += "- " + clock(x.at_ms) + ": `" + x.check + "`: " + (x.why.empty() ? "escalated" : x.why) + "; note [" +
         x.incident + "](" + x.incident + ")";
    if (!x.rolled_back_to.empty()) s += "; rolled back to " + short_sha(x.rolled_back_to);
    if (!x.abandoned_ref.empty()) s += "; abandoned work in `" + x.abandoned_ref + "`";
    s += "\n";
  }
  s += "\n## Totals\n\n" + totals(n) + "\n\nNext: `" + next_command(n) + "`\n";
  return s;
}

}  // namespace phoenix::report
