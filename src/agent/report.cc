#include "agent/report.h"

#include "agent/internal.h"
#include "util/text.h"

namespace phoenix::agent {
namespace {

using namespace detail;  // NOLINT: agent/'s own helpers

// ---------------------------------------------------------------------------
// Claude's result object.

std::optional<ClaudeResult> claude_from(const Json& j) {
  if (!j.is_object() || str_field(j, "type") != "result") return std::nullopt;
  // Gemini's stream-json also ends with a "result" event; Claude's is the
  // one that carries is_error or its cost.
  if (!j.contains("is_error") && !j.contains("total_cost_usd")) return std::nullopt;
  ClaudeResult r;
  auto e = j.find("is_error");
  r.is_error = e != j.end() && e->is_boolean() && e->get<bool>();
  r.subtype = str_field(j, "subtype");
  r.result = str_field(j, "result");
  auto t = j.find("num_turns");
  if (t != j.end() && t->is_number_integer()) r.num_turns = t->get<int>();
  auto c = j.find("total_cost_usd");
  if (c != j.end() && c->is_number()) r.total_cost_usd = c->get<double>();
  return r;
}

}  // namespace

using namespace detail;  // NOLINT: agent/'s own helpers

// ---------------------------------------------------------------------------
// Output.

std::optional<ClaudeResult> parse_claude_result(std::string_view output) {
  // The whole output: one object (json), or an array of messages whose last
  // "result" counts (json with --verbose).
  if (std::optional<Json> whole = parse_object(output)) {
    if (whole->is_object()) {
      if (auto r = claude_from(*whole)) return r;
    } else if (whole->is_array()) {
      for (auto it = whole->rbegin(); it != whole->rend(); ++it)
        if (auto r = claude_from(*it)) return r;
    }
  }
  // Otherwise stderr shares the pipe, or it is stream-json: the last line
  // that is a result object.
  std::vector<std::string> lines = util::split_lines(output);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (std::optional<Json> j = parse_object(*it))
      if (auto r = claude_from(*j)) return r;
  }
  return std::nullopt;
}

namespace {

// What the JSON lines of codex, opencode and gemini said, line by line.
struct StreamSeen {
  explicit StreamSeen(AgentReport& r) : rep(r) {}
  AgentReport& rep;
  bool codex = false, opencode = false, gemini = false;
  int codex_turns = 0, opencode_steps = 0;
  std::optional<bool> codex_last_failed;
  bool opencode_error = false, opencode_has_cost = false;
  double opencode_cost = 0;
  std::optional<bool> gemini_error;

  void add_error(const std::string& text) {
    if (text.empty()) return;
    rep.error_texts.push_back(head_bounded(text, kErrorTextBytes));
    rep.message = one_line(text, 500);
  }

  void read(const Json& j) {
    const std::string type = str_field(j, "type");
    if (util::starts_with(type, "thread.") || util::starts_with(type, "turn.") || util::starts_with(type, "item."))
      read_codex(j, type);
    else if (j.contains("part") &&
             (type == "step_start" || type == "step_finish" || type == "text" || type == "tool_use"))
      read_opencode(j, type);
    else if (type == "result" && j.contains("status") && !j.contains("is_error")) {
      gemini = true;
      gemini_error = str_field(j, "status") != "success";
      if (*gemini_error && j.contains("error")) add_error(json_text(j["error"]));
    } else if (type == "init" && j.contains("model") && !j.contains("part")) {
      gemini = true;
    }
    read_error(j, type);
  }

  void read_codex(const Json& j, const std::string& type) {
    codex = true;
    if (type == "turn.completed") {
      ++codex_turns;
      codex_last_failed = false;
    } else if (type == "turn.failed") {
      ++codex_turns;
      codex_last_failed = true;
      auto e = j.find("error");
      if (e != j.end())
        add_error(e->is_object() && e->contains("message") ? json_text((*e)["message"]) : json_text(*e));
    }
  }

  void read_opencode(const Json& j, const std::string& type) {
    opencode = true;
    if (type != "step_finish") return;
    ++opencode_steps;
    const Json& part = j["part"];
    if (part.is_object() && part.contains("cost") && part["cost"].is_number()) {
      opencode_has_cost = true;
      opencode_cost += part["cost"].get<double>();
    }
  }

  void read_error(const Json& j, const std::string& type) {
    if (type == "error") {
      // codex {"type":"error","message":...}; opencode {"type":"error","error":{...}};
      // gemini {"type":"error",...}.
      if (j.contains("part")) opencode = true;
      if (j.contains("message")) add_error(json_text(j["message"]));
      else if (j.contains("error")) add_error(json_text(j["error"]));
      else add_error(json_text(j));
      opencode_error = opencode_error || opencode;
    } else if (type != "result" && type != "turn.failed" && j.contains("error") && !j["error"].is_null() &&
               !j["error"].is_boolean()) {
      // A bare API error object ({"error":{"type":"rate_limit_error",...}}).
      add_error(json_text(j["error"]));
    }
  }

  // The report of the CLI whose lines were seen (claude's result object
  // read apart).
  void fill() const {
    if (codex) {
      rep.format = "codex-jsonl";
      rep.is_error = codex_last_failed;
      if (codex_turns > 0) rep.turns = codex_turns;
      if (codex_turns > 0) rep.model_calls = codex_turns;
      // codex reports tokens, not money: cost stays unknown.
    } else if (opencode) {
      rep.format = "opencode-jsonl";
      if (opencode_error) rep.is_error = true;
      else if (opencode_steps > 0) rep.is_error = false;
      if (opencode_has_cost) rep.cost_usd = opencode_cost;
      if (opencode_steps > 0) rep.turns = opencode_steps;
      if (opencode_steps > 0) rep.model_calls = opencode_steps;
    } else if (gemini) {
      rep.format = "gemini-stream-json";
      rep.is_error = gemini_error;
    }
  }
};

}  // namespace

AgentReport parse_agent_report(std::string_view output) {
  AgentReport rep;
  StreamSeen seen{rep};
  for (const std::string& line : util::split_lines(output)) {
    std::optional<Json> parsed = parse_object(line);
    if (parsed && parsed->is_object()) seen.read(*parsed);
  }
  if (std::optional<ClaudeResult> c = parse_claude_result(output)) {
    rep.format = "claude-json";
    rep.is_error = c->is_error;
    rep.cost_usd = c->total_cost_usd;
    rep.turns = c->num_turns;
    // A limit message arrives as is_error with subtype "success": the
    // subtype is worth naming only when it says something.
    const bool say_subtype = !c->subtype.empty() && c->subtype != "success";
    if (c->is_error)
      seen.add_error(c->result.empty() ? c->subtype : c->result + (say_subtype ? " (" + c->subtype + ")" : ""));
    rep.model_calls = c->num_turns;
    rep.message = one_line(c->result, 500);
  } else {
    seen.fill();
  }
  return rep;
}

}  // namespace phoenix::agent
