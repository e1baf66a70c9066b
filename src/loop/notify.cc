#include "loop/notify.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "checks/http.h"
#include "util/atomic_file.h"
#include "util/text.h"

namespace phoenix::loop {

using util::Json;

namespace {

// The first line after `heading` that is not empty.
std::string line_after(const std::vector<std::string>& lines, const std::string& heading) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (util::trim(lines[i]) != heading) continue;
    for (size_t k = i + 1; k < lines.size(); ++k)
      if (!util::trim(lines[k]).empty()) return util::trim(lines[k]);
  }
  return "";
}

// The text between the first pair of backticks of `s`.
std::string in_backticks(const std::string& s) {
  size_t a = s.find('`');
  size_t b = a == std::string::npos ? a : s.find('`', a + 1);
  return b == std::string::npos ? "" : s.substr(a + 1, b - a - 1);
}

std::string headline(const NotifyEvent& e) {
  if (e.kind == "escalated") return "phoenix-loop escalated";
  if (e.kind == "waiting") return "phoenix-loop waiting";
  if (e.exit_code && *e.exit_code == 0) return "phoenix-loop finished";
  return "phoenix-loop stopped";
}

// The message as lines of text (ntfy's body, slack's text).
std::vector<std::string> message_lines(const NotifyEvent& e) {
  std::vector<std::string> out{e.summary};
  std::string where = std::filesystem::path(e.repository).filename().string();
  if (!e.branch.empty()) where += " (branch " + e.branch + ")";
  if (!where.empty()) out.push_back("Repository: " + where);
  if (!e.waiting_until.empty()) out.push_back("Waiting until: " + e.waiting_until + " (" + e.waiting_for + ")");
  if (!e.incident_title.empty()) out.push_back("Incident: " + e.incident_title);
  if (!e.signature.empty()) out.push_back("Signature: " + e.signature);
  if (!e.rollback_sha.empty()) out.push_back("Rolled back to: " + e.rollback_sha);
  if (!e.incident_path.empty()) out.push_back("Report: " + e.incident_path);
  return out;
}

Json json_body(const NotifyEvent& e) {
  auto or_null = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  Json incident = nullptr;
  if (!e.incident_path.empty())
    incident = {{"title", or_null(e.incident_title)},
                {"signature", or_null(e.signature)},
                {"rollback_sha", or_null(e.rollback_sha)},
                {"path", e.incident_path}};
  return Json{{"event", e.kind},
              {"summary", e.summary},
              {"repository", e.repository},
              {"branch", or_null(e.branch)},
              {"phase", or_null(e.phase)},
              {"exit_code", e.exit_code ? Json(*e.exit_code) : Json(nullptr)},
              {"incident", incident},
              {"waiting_until", or_null(e.waiting_until)},
              {"waiting_for", or_null(e.waiting_for)},
              {"state", or_null(e.state_path)},
              {"time", util::now_iso8601()}};
}

// Worth another try: no answer at all, a server error, or "slow down".
bool retryable(const Delivery& d) { return d.status == 0 || d.status >= 500 || d.status == 429; }

long long backoff_ms(int attempt) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return static_cast<long long>(500.0 * (1 << std::min(attempt - 1, 6)) * jitter(rng));
}

}  // namespace

IncidentFacts read_incident(const std::string& path) {
  IncidentFacts f;
  std::string text;
  try {
    text = util::read_file(path);
  } catch (const std::exception&) {
    return f;  // a missing note still leaves its path in the message
  }
  std::vector<std::string> lines = util::split_lines(text);
  if (!lines.empty() && util::starts_with(lines[0], "# ")) f.title = util::trim(lines[0].substr(2));
  std::string check = in_backticks(line_after(lines, "## Check"));
  if (!check.empty()) f.title += (f.title.empty() ? "" : " \xE2\x80\x94 ") + check;
  f.signature = in_backticks(line_after(lines, "## Failure signatures"));
  const std::string state = "## State: rolled back to ";
  for (const auto& l : lines)
    if (util::starts_with(l, state)) f.rollback_sha = util::trim(l.substr(state.size())).substr(0, 40);
  return f;
}

WebhookRequest render_webhook(const std::string& format, const NotifyEvent& e) {
  WebhookRequest r;
  std::vector<std::string> lines = message_lines(e);
  std::string text;
  for (const auto& l : lines) text += (text.empty() ? "" : "\n") + l;
  if (format == "ntfy") {
    // Header values stay ASCII; the body carries the rest.
    std::string tags = e.kind == "escalated" ? "rotating_light" : e.kind == "waiting" ? "hourglass" : "checkered_flag";
    r.headers = {{"Content-Type", "text/plain; charset=utf-8"},
                 {"Title", headline(e)},
                 {"Tags", tags},
                 {"Priority", e.kind == "escalated" ? "high" : "default"}};
    r.body = text + "\n";
  } else if (format == "slack") {
    r.headers = {{"Content-Type", "application/json"}};
    r.body = Json{{"text", "*" + headline(e) + "*\n" + text}}.dump() + "\n";
  } else {
    r.headers = {{"Content-Type", "application/json"}};
    r.body = json_body(e).dump() + "\n";
  }
  return r;
}

Delivery deliver(const config::Webhook& hook, const NotifyEvent& event, const std::function<void(long long)>& sleep_ms,
                 const std::function<void(const std::string&)>& log) {
  WebhookRequest w = render_webhook(hook.format, event);
  Delivery d;
  for (d.attempts = 1;; ++d.attempts) {
    checks::HttpRequest rq;
    rq.url = hook.url;
    rq.method = "POST";
    rq.headers = w.headers;
    rq.body = w.body;
    rq.connect_timeout_s = std::min(5.0, hook.timeout_s);
    rq.read_timeout_s = hook.timeout_s;
    rq.max_body_bytes = 64 * 1024;
    try {
      checks::HttpResponse res = checks::http_request(rq);
      d.status = res.status;
      d.ok = res.status >= 200 && res.status < 300;
      d.error = d.ok ? "" : "HTTP " + std::to_string(res.status);
    } catch (const std::exception& e) {  // refused, reset, timed out
      d.status = 0;
      d.error = e.what();
    }
    if (d.ok || !retryable(d) || d.attempts >= hook.attempts) return d;
    long long wait = backoff_ms(d.attempts);
    if (log)
      log("webhook attempt " + std::to_string(d.attempts) + " failed (" + d.error + "); again in " +
          std::to_string(wait) + " ms");
    if (sleep_ms) sleep_ms(wait);
  }
}

}  // namespace phoenix::loop
