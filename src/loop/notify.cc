#include "loop/notify.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "checks/http.h"
#include "trace/events.h"
#include "trace/trace.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/redact.h"
#include "util/subprocess.h"
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
  if (e.kind == "test") return "phoenix test message";
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

WebhookSecrets webhook_secrets(const config::Webhook& hook) {
  auto read = [](const std::string& var, const char* field, const char* what) {
    const char* v = var.empty() ? nullptr : std::getenv(var.c_str());
    if (v == nullptr || *v == '\0')
      throw ConfigError(std::string("loop.notify.") + field + ": " + var + " is not set (" + what + ")");
    return std::string(v);
  };
  WebhookSecrets s;
  bool telegram = hook.format == config::WebhookFormat::kTelegram;
  if (!hook.token_env.empty())
    s.token = read(hook.token_env, "token_env", telegram ? "the Telegram bot token" : "the webhook's bearer token");
  if (telegram) s.chat = read(hook.chat_env, "chat_env", "the Telegram chat id");
  return s;
}

WebhookRequest render_webhook(const config::Webhook& hook, const WebhookSecrets& secrets, const NotifyEvent& e) {
  WebhookRequest r;
  r.url = hook.url;
  std::vector<std::string> lines = message_lines(e);
  std::string text;
  for (const auto& l : lines) text += (text.empty() ? "" : "\n") + l;
  const std::string json_type = "application/json";
  if (hook.format == config::WebhookFormat::kNtfy) {
    // Header values stay ASCII; the body carries the rest.
    std::string tags = e.kind == "escalated" ? "rotating_light"
                       : e.kind == "waiting" ? "hourglass"
                       : e.kind == "test"    ? "test_tube"
                                             : "checkered_flag";
    r.headers = {{"Content-Type", "text/plain; charset=utf-8"},
                 {"Title", headline(e)},
                 {"Tags", tags},
                 {"Priority", e.kind == "escalated" ? "high" : "default"}};
    r.body = text + "\n";
  } else if (hook.format == config::WebhookFormat::kSlack) {
    r.headers = {{"Content-Type", json_type}};
    r.body = Json{{"text", "*" + headline(e) + "*\n" + text}}.dump() + "\n";
  } else if (hook.format == config::WebhookFormat::kDiscord) {
    r.headers = {{"Content-Type", json_type}};
    r.body = Json{{"content", util::clip_utf8("**" + headline(e) + "**\n" + text, 2000)}}.dump() + "\n";
  } else if (hook.format == config::WebhookFormat::kTelegram) {
    std::string base = hook.url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    r.url = base + "/bot" + secrets.token + "/sendMessage";
    r.headers = {{"Content-Type", json_type}};
    r.body = Json{{"chat_id", secrets.chat}, {"text", util::clip_utf8(headline(e) + "\n" + text, 4096)}}.dump() + "\n";
  } else {
    r.headers = {{"Content-Type", json_type}};
    r.body = json_body(e).dump() + "\n";
  }
  if (hook.format != config::WebhookFormat::kTelegram && !secrets.token.empty())
    r.headers.emplace_back("Authorization", "Bearer " + secrets.token);
  return r;
}

std::string redact_webhook(const config::Webhook& hook, const std::string& text) {
  std::vector<std::pair<std::string, std::string>> secrets;
  const char* token = hook.token_env.empty() ? nullptr : std::getenv(hook.token_env.c_str());
  if (token != nullptr && *token != '\0') secrets.emplace_back(hook.token_env, token);
  std::string out = util::redact_secrets(util::redact_secrets(text, secrets));
  const std::string shown = checks::shown_url(hook.url);
  if (shown == hook.url) return out;
  for (size_t at = 0; (at = out.find(hook.url, at)) != std::string::npos; at += shown.size())
    out.replace(at, hook.url.size(), shown);
  return out;
}

namespace {

// One POST of `w`; what came back into `d`.
void attempt(const config::Webhook& hook, const WebhookRequest& w, Delivery& d) {
  checks::HttpRequest rq;
  rq.url = w.url;
  rq.method = "POST";
  rq.headers = w.headers;
  rq.body = w.body;
  rq.connect_timeout_s = std::min(5.0, hook.timeout_s);
  rq.read_timeout_s = hook.timeout_s;
  rq.max_body_bytes = 64 * 1024;
  try {
    checks::HttpResponse res = checks::http_request(rq);
    d.status = res.status;
    d.reason = res.reason;
    d.reply = redact_webhook(hook, std::string(util::utf8_head(res.body, 500)));
    d.ok = res.status >= 200 && res.status < 300;
    d.error = d.ok ? "" : "HTTP " + std::to_string(res.status);
  } catch (const std::exception& e) {  // refused, reset, timed out, not trusted
    d.status = 0;
    d.reason = d.reply = "";
    d.error = redact_webhook(hook, e.what());
  }
}

}  // namespace

Delivery deliver(const config::Webhook& hook, const NotifyEvent& event, const std::function<void(long long)>& sleep_ms,
                 const std::function<void(const std::string&)>& log) {
  Delivery d;
  WebhookRequest w;
  try {
    w = render_webhook(hook, webhook_secrets(hook), event);
  } catch (const ConfigError& e) {
    d.error = e.what();
    return d;
  }
  for (d.attempts = 1;; ++d.attempts) {
    attempt(hook, w, d);
    if (d.ok || !retryable(d) || d.attempts >= hook.attempts) return d;
    long long wait = backoff_ms(d.attempts);
    if (log)
      log("webhook attempt " + std::to_string(d.attempts) + " failed (" + d.error + "); again in " +
          std::to_string(wait) + " ms");
    if (sleep_ms) sleep_ms(wait);
  }
}

namespace {

// The event as a notification says it: the state's phase, exit code and
// wait, and the incident note's facts.
NotifyEvent loop_event(const LoopNotice& n, const std::string& event, const std::string& incident,
                       const std::string& summary) {
  const Json& s = n.state;
  NotifyEvent e;
  e.kind = event == "escalated" || event == "waiting" ? event : "finished";
  e.summary = summary.empty() ? "phoenix-loop: " + event : summary;
  e.repository = n.root;
  e.branch = n.branch;
  e.state_path = n.state_path;
  e.phase = s.value("phase", "");
  if (s.contains("exit_code") && s["exit_code"].is_number_integer()) e.exit_code = s["exit_code"].get<int>();
  if (s.contains("waiting_until") && s["waiting_until"].is_string())
    e.waiting_until = s["waiting_until"].get<std::string>();
  if (s.contains("waiting_for") && s["waiting_for"].is_string()) e.waiting_for = s["waiting_for"].get<std::string>();
  if (!incident.empty() && event != "waiting") {
    IncidentFacts f = read_incident(incident);
    e.incident_path = incident;
    e.incident_title = f.title;
    e.signature = !f.signature.empty() ? f.signature
                  : s.contains("last_signature") && s["last_signature"].is_string()
                      ? s["last_signature"].get<std::string>()
                      : "";
    e.rollback_sha = f.rollback_sha;
  }
  return e;
}

void post_webhook(const config::Webhook& hook, const LoopNotice& n, const NotifyEvent& e) {
  Delivery d = deliver(hook, e, n.nap);
  n.trace.append(trace::event::kLoopWebhook,
                 {{"event", e.kind}, {"ok", d.ok}, {"attempts", d.attempts}, {"status", d.status}, {"error", d.error}});
  if (!d.ok)
    n.say("webhook " + checks::shown_url(hook.url) + ": not delivered after " + std::to_string(d.attempts) +
          " attempt(s): " + d.error + " (ignored)");
}

}  // namespace

util::ProcessResult run_notify_command(const std::vector<std::string>& argv, const std::string& root,
                                       const std::string& event, const std::string& incident,
                                       const std::string& state_path) {
  util::ProcessOptions po;
  po.argv = argv;
  po.cwd = root;
  po.timeout_s = 60;
  po.env = {{"PHOENIX_EVENT", event}, {"PHOENIX_INCIDENT", incident}, {"PHOENIX_STATE", state_path}};
  return util::run_process(po);
}

void notify_loop_event(const config::Loop& loop, const LoopNotice& n, const std::string& event,
                       const std::string& incident, const std::string& summary) {
  if (loop.webhook) post_webhook(*loop.webhook, n, loop_event(n, event, incident, summary));
  if (loop.notify.empty()) return;
  util::ProcessResult r = run_notify_command(loop.notify, n.root, event, incident, n.state_path);
  n.trace.append(trace::event::kLoopNotify, {{"event", event}, {"exit_code", r.exit_code}});
  if (r.exit_code != 0) n.say("notify command exited " + std::to_string(r.exit_code) + " (ignored)");
}

}  // namespace phoenix::loop
