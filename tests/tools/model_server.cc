// model_server: a fake model provider on 127.0.0.1 for the real agent CLIs
// (tests/e2e/agents_test.cc). It speaks enough of four APIs to drive each
// CLI's own file tools through one real edit:
//
//   POST /v1/messages[?beta=true]        Anthropic Messages (SSE or JSON): claude
//   POST /v1/responses                   OpenAI Responses (SSE): codex
//   POST /v1/chat/completions            OpenAI chat completions (SSE or JSON): opencode
//   POST /v1beta/models/M:streamGenerateContent / :generateContent   Gemini
//   anything else                        200 {} (count_tokens, model lists, telemetry)
//
// The edit comes from <dir>/edit.json: {"file": "src/calc.cc", "old": "a - b",
// "new": "a + b"}, or, where <dir>/edits.json exists, from the first of its
// entries whose "when" is a substring of the run's prompt:
//   [{"when": "Do this one task, then stop:\n\nadd square", "file": ..., "old": ..., "new": ...},
//    {"when": "# Fix a failing check", ...}]
// (an entry without a match: edit.json's edit). The prompt is the text the
// CLI sent as the user's first message of the conversation (Anthropic:
// messages[].content, its text blocks; the other APIs: the text of every
// user message, tool output aside): a fresh CLI run has one prompt, and
// the phoenix-loop task prompt and Phoenix's heal prompt ("# Fix a failing
// check") are told apart by it. requests.log names the entry chosen
// ("edit=N", -1 for edit.json's). A request that offers tools and carries no tool result
// yet is answered with a call of the CLI's read tool, one with one tool
// result with its edit tool (codex: exec_command with an apply_patch
// heredoc), one with more with a closing text. Requests without tools (titles,
// summaries) get a short text.
//
// <dir>/mode, read on every request, switches the answers:
//   normal | 429 | 529 | 500 | usage-limit | credit, each in the provider's
//   own error format (send_error):
//     429          Anthropic rate_limit_error with retry-after; OpenAI
//                  rate_limit_exceeded; Google 429 RESOURCE_EXHAUSTED with a
//                  per-minute QuotaFailure and RetryInfo retryDelay "2s"
//     usage-limit  Anthropic 429 "usage limit ... resets 3am (Europe/Berlin)"
//                  with anthropic-ratelimit-unified-reset; to codex what the
//                  ChatGPT backend sends (usage_limit_reached, resets_at);
//                  Google a per-day quota (PerDay quota id)
//     credit       Anthropic 400 "credit balance is too low"; OpenAI 429
//                  insufficient_quota; Google 403 BILLING_DISABLED
// (to refuse connections, a test stops the server or uses a closed port).
// Every request is appended to <dir>/requests.log (method, path, body head);
// where <dir>/dump exists, each request's whole body is written to
// <dir>/request-<n>.json too.
//
// <dir>/stop.json scripts a session judged by a stop hook:
//   {"marker": "phoenix refused", "mend_after": 1}
// The model says it is done (a closing text, no tool call) until the text
// of the conversation's user messages holds `marker` `mend_after` times (a
// stop hook's refusal, fed back to the model by the CLI), then reads and
// edits as above. requests.log says "refusals=N".
//
//   model_server --dir DIR --port-file FILE     listens on a free port, writes it
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

namespace {

using Json = nlohmann::json;

std::string g_dir;
std::mutex g_log_mu;
std::atomic<int> g_ids{0};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string mode() {
  std::string m = trim(read_file(g_dir + "/mode"));
  return m.empty() ? "normal" : m;
}

struct Edit {
  std::string file, old_text, new_text;
};

Edit edit() {
  Edit e{"src/calc.cc", "a - b", "a + b"};
  Json j = Json::parse(read_file(g_dir + "/edit.json"), nullptr, false);
  if (j.is_object()) {
    e.file = j.value("file", e.file);
    e.old_text = j.value("old", e.old_text);
    e.new_text = j.value("new", e.new_text);
  }
  return e;
}

// The edit for a run whose prompt is `prompt`: the first entry of
// edits.json whose "when" is in it, else edit.json's. `which` is the
// entry's index (-1: edit.json's).
Edit edit_for(const std::string& prompt, int* which) {
  *which = -1;
  Json list = Json::parse(read_file(g_dir + "/edits.json"), nullptr, false);
  if (list.is_array())
    for (size_t i = 0; i < list.size(); ++i) {
      const Json& j = list[i];
      if (!j.is_object()) continue;
      const std::string when = j.value("when", "");
      if (when.empty() || prompt.find(when) == std::string::npos) continue;
      *which = static_cast<int>(i);
      return Edit{j.value("file", std::string()), j.value("old", std::string()), j.value("new", std::string())};
    }
  if (list.is_array()) {
    // No entry matched: what the prompt began with, for the test's message.
    std::string head = prompt.substr(0, 400);
    for (char& c : head)
      if (c == '\n') c = '|';
    std::lock_guard<std::mutex> lock(g_log_mu);
    std::ofstream(g_dir + "/requests.log", std::ios::app) << "  no edits.json entry for the prompt: " << head << "\n";
    std::ofstream(g_dir + "/unmatched-prompt.txt") << prompt;
  }
  return edit();
}

// <dir>/stop.json (see the top of this file); `on` false without one.
struct StopScript {
  bool on = false;
  std::string marker;
  int mend_after = 0;
};

StopScript stop_script() {
  StopScript s;
  Json j = Json::parse(read_file(g_dir + "/stop.json"), nullptr, false);
  if (!j.is_object()) return s;
  s.on = true;
  s.marker = j.value("marker", std::string("phoenix"));
  s.mend_after = j.value("mend_after", 0);
  return s;
}

int occurrences(const std::string& hay, const std::string& needle) {
  if (needle.empty()) return 0;
  int n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

// Whether the model, under stop.json, still says it is done at once, given
// the text of every user message so far; `refusals` is how many refusals
// it holds.
bool says_done(const std::string& user_words, int* refusals) {
  const StopScript s = stop_script();
  *refusals = occurrences(user_words, s.marker);
  return s.on && *refusals < s.mend_after;
}

void dump_request(const std::string& body) {
  static std::atomic<int> n{0};
  if (!std::ifstream(g_dir + "/dump")) return;
  std::ofstream(g_dir + "/request-" + std::to_string(++n) + ".json") << body;
}

// The text parts of one message's content (a string, or an array of
// blocks: {"type": "text" | "input_text", "text": ...}; tool results and
// tool calls are not the user's words).
std::string content_text(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array())
    for (const auto& c : content) {
      if (!c.is_object()) continue;
      const std::string type = c.value("type", "");
      if ((type == "text" || type == "input_text" || type.empty()) && c.contains("text") && c["text"].is_string())
        out += c["text"].get<std::string>() + "\n";
    }
  return out;
}

// The run's prompt in an Anthropic Messages request: the first user message.
std::string anthropic_prompt(const Json& req) {
  if (req.contains("messages") && req["messages"].is_array())
    for (const auto& m : req["messages"])
      if (m.is_object() && m.value("role", "") == "user" && m.contains("content")) return content_text(m["content"]);
  return "";
}

// The other APIs: the text of every user message (`list` of messages,
// Gemini's `parts` too), tool output aside.
std::string user_text(const Json& req, const char* list) {
  std::string out;
  if (!req.contains(list) || !req[list].is_array()) return out;
  for (const auto& m : req[list]) {
    if (!m.is_object() || m.value("role", "") != "user") continue;
    if (m.contains("content")) out += content_text(m["content"]);
    if (m.contains("parts")) out += content_text(m["parts"]);
  }
  return out;
}

void log_request(const std::string& method, const std::string& path, const std::string& body, const std::string& note) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  std::ofstream out(g_dir + "/requests.log", std::ios::app);
  out << method << " " << path << " [" << mode() << "] " << note << " " << body.substr(0, 300) << "\n";
}

bool send_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

void respond(int fd, int status, const std::string& type, const std::string& body, const std::string& extra = "") {
  const char* reason = status == 200   ? "OK"
                       : status == 429 ? "Too Many Requests"
                       : status == 500 ? "Internal Server Error"
                       : status == 529 ? "Overloaded"
                       : status == 400 ? "Bad Request"
                       : status == 403 ? "Forbidden"
                       : status == 503 ? "Service Unavailable"
                                       : "Error";
  send_all(fd, "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " + type +
                   "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra + "Connection: close\r\n\r\n" +
                   body);
}

// The project's directory as the CLI told its model ("Working directory:
// /x", "<cwd>/x</cwd>", "I'm currently working in the directory: /x").
std::string workdir(const std::string& body) {
  static const std::regex kPatterns[] = {
      std::regex(R"(Working directory: (/[^\s"\\<]+))"),
      std::regex(R"(<cwd>(/[^\s"\\<]+)</cwd>)"),
      std::regex(R"(working in the directory: (/[^\s"\\<]+))"),
      std::regex(R"(Current working directory: (/[^\s"\\<]+))"),
  };
  std::smatch m;
  for (const auto& re : kPatterns)
    if (std::regex_search(body, m, re)) return m[1].str();
  return "";
}

std::string abs_path(const std::string& body, const std::string& file) {
  std::string wd = workdir(body);
  return wd.empty() ? file : wd + "/" + file;
}

// --- errors ----------------------------------------------------------------------

// Each provider's error, as its API sends it: Anthropic's {"type":"error",
// "error":{"type","message"}} with its rate-limit headers; OpenAI's
// {"error":{"message","type","param","code"}} (insufficient_quota vs
// rate_limit_exceeded); Google's google.rpc error {"error":{"code",
// "message","status","details":[QuotaFailure, RetryInfo, ErrorInfo]}}.
struct ErrorReply {
  int status = 500;
  Json body;
  std::string headers;  // extra header lines, each ending in \r\n
};

ErrorReply anthropic_error(const std::string& m) {
  ErrorReply r;
  std::string type = "api_error", message = "Internal server error";
  const long long reset = static_cast<long long>(std::time(nullptr)) + 3 * 3600;
  if (m == "429") {
    r.status = 429, type = "rate_limit_error", message = "Rate limit exceeded: too many requests";
    r.headers = "retry-after: 1\r\nanthropic-ratelimit-requests-remaining: 0\r\n";
  } else if (m == "529") {
    r.status = 529, type = "overloaded_error", message = "Overloaded";
  } else if (m == "usage-limit") {
    r.status = 429, type = "rate_limit_error",
    message = "You've hit your usage limit. Your limit resets 3am (Europe/Berlin)";
    r.headers =
        "anthropic-ratelimit-unified-status: rejected\r\nanthropic-ratelimit-unified-reset: " + std::to_string(reset) +
        "\r\n";
  } else if (m == "credit") {
    r.status = 400, type = "invalid_request_error",
    message =
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or "
        "purchase credits.";
  }
  r.body = {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}, {"request_id", "req_test"}};
  return r;
}

ErrorReply openai_error(const std::string& m, const std::string& api) {
  ErrorReply r;
  if (api == "responses" && m == "usage-limit") {
    // What the ChatGPT backend sends codex for a usage window: codex 0.171
    // turns it into "You've hit your usage limit. ... Try again at 3:00 AM."
    // (a plain 429 it retries and reports as "last status: 429").
    const long long reset = static_cast<long long>(std::time(nullptr)) + 3 * 3600;
    r.status = 429;
    r.body = {{"error",
               {{"type", "usage_limit_reached"},
                {"message", "The usage limit has been reached"},
                {"plan_type", "plus"},
                {"resets_at", reset},
                {"resets_in_seconds", 3 * 3600}}}};
    return r;
  }
  std::string type = "server_error", code = "server_error", message = "Internal server error";
  if (m == "429" || m == "usage-limit") {
    r.status = 429, type = "requests", code = "rate_limit_exceeded",
    message =
        "Rate limit reached for test-model on requests per min (RPM): Limit 3, Used 3, Requested 1. Please "
        "try again in 1s.";
    r.headers = "retry-after: 1\r\nx-ratelimit-remaining-requests: 0\r\nx-ratelimit-reset-requests: 1s\r\n";
  } else if (m == "credit") {
    r.status = 429, type = "insufficient_quota", code = "insufficient_quota",
    message = "You exceeded your current quota, please check your plan and billing details.";
  } else if (m == "529") {
    r.status = 529, message = "Overloaded";
  }
  r.body = {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}};
  return r;
}

Json google_detail(const std::string& type, Json fields) {
  fields["@type"] = "type.googleapis.com/google.rpc." + type;
  return fields;
}

ErrorReply gemini_error(const std::string& m) {
  ErrorReply r;
  std::string status = "INTERNAL", message = "Internal error encountered.";
  Json details = Json::array();
  auto quota_failure = [](const std::string& quota_id) {
    return google_detail(
        "QuotaFailure",
        {{"violations",
          Json::array({{{"quotaMetric", "generativelanguage.googleapis.com/generate_content_free_tier_requests"},
                        {"quotaId", quota_id},
                        {"quotaDimensions", {{"location", "global"}, {"model", "gemini-2.5-flash"}}},
                        {"quotaValue", "10"}}})}});
  };
  if (m == "429") {
    r.status = 429, status = "RESOURCE_EXHAUSTED", message = "Resource has been exhausted (e.g. check quota).";
    details.push_back(quota_failure("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"));
    details.push_back(google_detail("RetryInfo", {{"retryDelay", "2s"}}));
  } else if (m == "usage-limit") {
    // A per-day quota: gemini 0.61.0 stops ("exhausted your daily quota").
    r.status = 429, status = "RESOURCE_EXHAUSTED",
    message = "You exceeded your current quota, please check your plan and billing details.";
    details.push_back(quota_failure("GenerateRequestsPerDayPerProjectPerModel-FreeTier"));
    details.push_back(google_detail("RetryInfo", {{"retryDelay", "41s"}}));
  } else if (m == "credit") {
    r.status = 403, status = "PERMISSION_DENIED",
    message =
        "This API method requires billing to be enabled. Please enable billing on project #4711 by visiting "
        "https://console.developers.google.com/billing/enable?project=4711 then retry.";
    details.push_back(google_detail(
        "ErrorInfo", {{"reason", "BILLING_DISABLED"}, {"domain", "googleapis.com"}, {"metadata", Json::object()}}));
  } else if (m == "529") {
    r.status = 503, status = "UNAVAILABLE", message = "The model is overloaded. Please try again later.";
  }
  r.body = {{"error", {{"code", r.status}, {"message", message}, {"status", status}, {"details", details}}}};
  return r;
}

// True when the mode answers with an error (sent).
bool send_error(int fd, const std::string& api) {
  const std::string m = mode();
  if (m == "normal") return false;
  ErrorReply r = api == "anthropic" ? anthropic_error(m) : api == "gemini" ? gemini_error(m) : openai_error(m, api);
  respond(fd, r.status, "application/json", r.body.dump(), r.headers);
  return true;
}

// --- Anthropic --------------------------------------------------------------------

std::string sse(const std::string& event, const Json& data) {
  return (event.empty() ? "" : "event: " + event + "\n") + "data: " + data.dump() + "\n\n";
}

void anthropic(int fd, const Json& req, const std::string& body) {
  const bool tools = req.contains("tools") && req["tools"].is_array() && !req["tools"].empty();
  int results = 0;
  if (req.contains("messages"))
    for (const auto& m : req["messages"])
      if (m.contains("content") && m["content"].is_array())
        for (const auto& c : m["content"])
          if (c.value("type", "") == "tool_result") ++results;
  int which = -1;
  const Edit e = edit_for(anthropic_prompt(req), &which);
  int refusals = 0;
  const bool done = says_done(user_text(req, "messages"), &refusals);
  Json block;
  std::string stop = "end_turn";
  if (done) {
    block = {{"type", "text"}, {"text", "Done: the task is complete."}};
  } else if (tools && results == 0) {
    block = {{"type", "tool_use"},
             {"id", "toolu_" + std::to_string(++g_ids)},
             {"name", "Read"},
             {"input", {{"file_path", abs_path(body, e.file)}}}};
    stop = "tool_use";
  } else if (tools && results == 1) {
    block = {
        {"type", "tool_use"},
        {"id", "toolu_" + std::to_string(++g_ids)},
        {"name", "Edit"},
        {"input", {{"file_path", abs_path(body, e.file)}, {"old_string", e.old_text}, {"new_string", e.new_text}}}};
    stop = "tool_use";
  } else {
    block = {{"type", "text"}, {"text", tools ? "Fixed: the edit is made." : "Fix"}};
  }
  log_request("POST", "/v1/messages", body.substr(0, 0),
              "tools=" + std::to_string(tools) + " results=" + std::to_string(results) +
                  " edit=" + std::to_string(which) + " refusals=" + std::to_string(refusals));
  Json usage = {
      {"input_tokens", 10}, {"output_tokens", 5}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", 0}};
  Json msg = {{"id", "msg_" + std::to_string(++g_ids)},
              {"type", "message"},
              {"role", "assistant"},
              {"model", req.value("model", "claude-test")},
              {"content", Json::array({block})},
              {"stop_reason", stop},
              {"stop_sequence", nullptr},
              {"usage", usage}};
  if (!req.value("stream", false)) {
    respond(fd, 200, "application/json", msg.dump());
    return;
  }
  std::string out;
  Json start = msg;
  start["content"] = Json::array();
  start["stop_reason"] = nullptr;
  out += sse("message_start", {{"type", "message_start"}, {"message", start}});
  if (block["type"] == "tool_use") {
    Json b = block;
    b["input"] = Json::object();
    out += sse("content_block_start", {{"type", "content_block_start"}, {"index", 0}, {"content_block", b}});
    out += sse("content_block_delta",
               {{"type", "content_block_delta"},
                {"index", 0},
                {"delta", {{"type", "input_json_delta"}, {"partial_json", block["input"].dump()}}}});
  } else {
    out += sse("content_block_start",
               {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}});
    out += sse(
        "content_block_delta",
        {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", block["text"]}}}});
  }
  out += sse("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
  out += sse("message_delta", {{"type", "message_delta"},
                               {"delta", {{"stop_reason", stop}, {"stop_sequence", nullptr}}},
                               {"usage", {{"output_tokens", 5}}}});
  out += sse("message_stop", {{"type", "message_stop"}});
  send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nContent-Length: " +
                   std::to_string(out.size()) + "\r\nConnection: close\r\n\r\n" + out);
}

// --- OpenAI Responses (codex) -------------------------------------------------

void responses(int fd, const Json& req, const std::string& body) {
  int results = 0;
  bool tools = req.contains("tools") && req["tools"].is_array() && !req["tools"].empty();
  if (req.contains("input") && req["input"].is_array())
    for (const auto& i : req["input"])
      if (i.value("type", "").find("_call_output") != std::string::npos) ++results;
  int which = -1;
  const Edit e = edit_for(user_text(req, "input"), &which);
  int refusals = 0;
  const bool done = says_done(user_text(req, "input"), &refusals);
  log_request("POST", "/v1/responses", "",
              "tools=" + std::to_string(tools) + " results=" + std::to_string(results) +
                  " edit=" + std::to_string(which) + " refusals=" + std::to_string(refusals));
  const std::string rid = "resp_" + std::to_string(++g_ids);
  Json item;
  if (tools && results == 0 && !done) {
    std::string patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: " + e.file + "\n@@\n-" +
                        // the whole line is replaced: read it from the tree the CLI works in
                        std::string() + "";
    std::string wd = workdir(body);
    std::string text = read_file((wd.empty() ? std::string(".") : wd) + "/" + e.file);
    std::string old_line, new_line;
    size_t at = text.find(e.old_text);
    if (at != std::string::npos) {
      size_t b = text.rfind('\n', at);
      b = b == std::string::npos ? 0 : b + 1;
      size_t end = text.find('\n', at);
      old_line = text.substr(b, end - b);
      new_line = old_line;
      new_line.replace(at - b, e.old_text.size(), e.new_text);
    } else {
      // The tree is not readable from here: edit.json holds whole lines.
      old_line = e.old_text;
      new_line = e.new_text;
    }
    patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: " + e.file + "\n@@\n-" + old_line + "\n+" +
            new_line + "\n*** End Patch\nEOF\n";
    Json args = {{"cmd", patch}};
    if (!wd.empty()) args["workdir"] = wd;
    item = {{"type", "function_call"},
            {"id", "fc_" + std::to_string(++g_ids)},
            {"call_id", "call_" + std::to_string(g_ids)},
            {"name", "exec_command"},
            {"arguments", args.dump()},
            {"status", "completed"}};
  } else {
    item = {{"type", "message"},
            {"id", "msg_" + std::to_string(++g_ids)},
            {"role", "assistant"},
            {"status", "completed"},
            {"content", Json::array({{{"type", "output_text"},
                                      {"text", done ? "Done: the task is complete." : "Fixed: the edit is made."},
                                      {"annotations", Json::array()}}})}};
  }
  Json usage = {{"input_tokens", 10},
                {"input_tokens_details", {{"cached_tokens", 0}}},
                {"output_tokens", 5},
                {"output_tokens_details", {{"reasoning_tokens", 0}}},
                {"total_tokens", 15}};
  std::string out;
  out +=
      sse("response.created", {{"type", "response.created"}, {"response", {{"id", rid}, {"status", "in_progress"}}}});
  out +=
      sse("response.output_item.added", {{"type", "response.output_item.added"}, {"output_index", 0}, {"item", item}});
  out += sse("response.output_item.done", {{"type", "response.output_item.done"}, {"output_index", 0}, {"item", item}});
  out += sse("response.completed",
             {{"type", "response.completed"},
              {"response", {{"id", rid}, {"status", "completed"}, {"output", Json::array({item})}, {"usage", usage}}}});
  send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + std::to_string(out.size()) +
                   "\r\nConnection: close\r\n\r\n" + out);
}

// --- OpenAI chat completions (opencode) -----------------------------------------

void chat(int fd, const Json& req, const std::string& body) {
  int results = 0;
  bool tools = req.contains("tools") && req["tools"].is_array() && !req["tools"].empty();
  std::string read_name = "read", edit_name = "edit";
  if (tools)
    for (const auto& t : req["tools"]) {
      std::string n = t.contains("function") ? t["function"].value("name", "") : t.value("name", "");
      if (n == "Read" || n == "read_file") read_name = n;
      if (n == "Edit" || n == "replace") edit_name = n;
    }
  if (req.contains("messages"))
    for (const auto& m : req["messages"])
      if (m.value("role", "") == "tool") ++results;
  int which = -1;
  const Edit e = edit_for(user_text(req, "messages"), &which);
  log_request(
      "POST", "/v1/chat/completions", "",
      "tools=" + std::to_string(tools) + " results=" + std::to_string(results) + " edit=" + std::to_string(which));
  Json delta;
  std::string finish = "stop";
  const std::string path = abs_path(body, e.file);
  if (tools && results < 2) {
    Json args = results == 0 ? Json{{"filePath", path}}
                             : Json{{"filePath", path}, {"oldString", e.old_text}, {"newString", e.new_text}};
    delta = {
        {"role", "assistant"},
        {"content", nullptr},
        {"tool_calls",
         Json::array({{{"index", 0},
                       {"id", "call_" + std::to_string(++g_ids)},
                       {"type", "function"},
                       {"function", {{"name", results == 0 ? read_name : edit_name}, {"arguments", args.dump()}}}}})}};
    finish = "tool_calls";
  } else {
    delta = {{"role", "assistant"}, {"content", tools ? "Fixed: the edit is made." : "Fix calc"}};
  }
  const std::string id = "chatcmpl-" + std::to_string(++g_ids);
  Json usage = {{"prompt_tokens", 10}, {"completion_tokens", 5}, {"total_tokens", 15}};
  if (!req.value("stream", false)) {
    Json msg = delta;
    respond(fd, 200, "application/json",
            Json{{"id", id},
                 {"object", "chat.completion"},
                 {"created", 1700000000},
                 {"model", req.value("model", "m")},
                 {"choices", Json::array({{{"index", 0}, {"message", msg}, {"finish_reason", finish}}})},
                 {"usage", usage}}
                .dump());
    return;
  }
  std::string out;
  out += sse("", {{"id", id},
                  {"object", "chat.completion.chunk"},
                  {"created", 1700000000},
                  {"model", req.value("model", "m")},
                  {"choices", Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", nullptr}}})}});
  out += sse("", {{"id", id},
                  {"object", "chat.completion.chunk"},
                  {"created", 1700000000},
                  {"model", req.value("model", "m")},
                  {"choices", Json::array({{{"index", 0}, {"delta", Json::object()}, {"finish_reason", finish}}})},
                  {"usage", usage}});
  out += "data: [DONE]\n\n";
  send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + std::to_string(out.size()) +
                   "\r\nConnection: close\r\n\r\n" + out);
}

// --- Gemini -------------------------------------------------------------------------

void gemini(int fd, const std::string& path, const Json& req, const std::string& body) {
  int results = 0;
  bool tools = req.contains("tools") && req["tools"].is_array() && !req["tools"].empty();
  std::string read_name = "read_file", edit_name = "replace";
  if (req.contains("contents"))
    for (const auto& c : req["contents"])
      if (c.contains("parts"))
        for (const auto& p : c["parts"])
          if (p.contains("functionResponse")) ++results;
  int which = -1;
  const Edit e = edit_for(user_text(req, "contents"), &which);
  int refusals = 0;
  const bool done = tools && says_done(user_text(req, "contents"), &refusals);
  log_request("POST", path, "",
              "tools=" + std::to_string(tools) + " results=" + std::to_string(results) +
                  " edit=" + std::to_string(which) + " refusals=" + std::to_string(refusals));
  Json parts;
  const std::string file = abs_path(body, e.file);
  if (done) {
    parts = Json::array({{{"text", "Done: the task is complete."}}});
  } else if (tools && results == 0) {
    parts = Json::array(
        {{{"functionCall", {{"name", read_name}, {"args", {{"absolute_path", file}, {"file_path", file}}}}}}});
  } else if (tools && results == 1) {
    parts = Json::array({{{"functionCall",
                           {{"name", edit_name},
                            {"args",
                             {{"file_path", file},
                              {"old_string", e.old_text},
                              {"new_string", e.new_text},
                              {"instruction", "fix the bug"}}}}}}});
  } else if (path.find("generateContent") != std::string::npos && !tools &&
             body.find("next_speaker") != std::string::npos) {
    parts = Json::array({{{"text", R"({"reasoning":"done","next_speaker":"user"})"}}});
  } else {
    parts = Json::array({{{"text", tools ? "Fixed: the edit is made." : "ok"}}});
  }
  Json chunk = {
      {"candidates",
       Json::array({{{"content", {{"role", "model"}, {"parts", parts}}}, {"finishReason", "STOP"}, {"index", 0}}})},
      {"usageMetadata", {{"promptTokenCount", 10}, {"candidatesTokenCount", 5}, {"totalTokenCount", 15}}},
      {"modelVersion", "gemini-test"}};
  if (path.find("streamGenerateContent") == std::string::npos) {
    respond(fd, 200, "application/json", chunk.dump());
    return;
  }
  std::string out = "data: " + chunk.dump() + "\r\n\r\n";
  send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + std::to_string(out.size()) +
                   "\r\nConnection: close\r\n\r\n" + out);
}

// --- HTTP ---------------------------------------------------------------------------

void serve(int fd) {
  std::string data;
  char buf[65536];
  size_t header_end = std::string::npos;
  while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      ::close(fd);
      return;
    }
    data.append(buf, static_cast<size_t>(n));
  }
  std::string head = data.substr(0, header_end);
  std::string lower = head;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t length = 0;
  if (size_t at = lower.find("content-length:"); at != std::string::npos) length = std::stoul(lower.substr(at + 15));
  bool chunked = lower.find("transfer-encoding: chunked") != std::string::npos;
  std::string body = data.substr(header_end + 4);
  if (chunked) {
    // Read until the terminating chunk, then decode.
    while (body.find("\r\n0\r\n\r\n") == std::string::npos && body.rfind("0\r\n\r\n", 0) != 0) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      body.append(buf, static_cast<size_t>(n));
    }
    std::string decoded;
    size_t i = 0;
    while (i < body.size()) {
      size_t eol = body.find("\r\n", i);
      if (eol == std::string::npos) break;
      size_t sz = std::stoul(body.substr(i, eol - i), nullptr, 16);
      if (sz == 0) break;
      decoded += body.substr(eol + 2, sz);
      i = eol + 2 + sz + 2;
    }
    body = decoded;
  } else {
    while (body.size() < length) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      body.append(buf, static_cast<size_t>(n));
    }
  }
  std::string method = head.substr(0, head.find(' '));
  size_t p0 = head.find(' ') + 1;
  std::string path = head.substr(p0, head.find(' ', p0) - p0);
  Json req = Json::parse(body, nullptr, false);
  if (!req.is_object()) req = Json::object();
  dump_request(body);

  std::string api;
  if (path.rfind("/v1/messages", 0) == 0 && path.find("count_tokens") == std::string::npos) api = "anthropic";
  else if (path.rfind("/v1/responses", 0) == 0) api = "responses";
  else if (path.find("/chat/completions") != std::string::npos) api = "chat";
  else if (path.find("enerateContent") != std::string::npos) api = "gemini";

  if (api.empty()) {
    log_request(method, path, body, "other");
    if (path.find("count_tokens") != std::string::npos || path.find("countTokens") != std::string::npos)
      respond(fd, 200, "application/json", R"({"input_tokens":10,"totalTokens":10})");
    else if (path.find("/models") != std::string::npos)
      respond(fd, 200, "application/json",
              R"({"object":"list","data":[{"id":"test-model","object":"model"}],"models":[]})");
    else respond(fd, 200, "application/json", "{}");
  } else if (send_error(fd, api)) {
    log_request(method, path, "", "error");
  } else if (api == "anthropic") {
    anthropic(fd, req, body);
  } else if (api == "responses") {
    responses(fd, req, body);
  } else if (api == "chat") {
    chat(fd, req, body);
  } else {
    gemini(fd, path, req, body);
  }
  ::shutdown(fd, SHUT_WR);
  // Let the client read everything before the socket goes.
  while (::recv(fd, buf, sizeof buf, 0) > 0) {}
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  std::string port_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--dir") g_dir = argv[i + 1];
    else if (a == "--port-file") port_file = argv[i + 1];
  }
  if (g_dir.empty() || port_file.empty()) {
    std::cerr << "usage: model_server --dir DIR --port-file FILE\n";
    return 64;
  }
  int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(ls, 64) != 0) {
    std::cerr << "model_server: cannot listen: " << std::strerror(errno) << "\n";
    return 1;
  }
  socklen_t len = sizeof addr;
  ::getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len);
  {
    std::ofstream out(port_file + ".tmp");
    out << ntohs(addr.sin_port) << "\n";
  }
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  for (;;) {
    int fd = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    std::thread(serve, fd).detach();
  }
}
