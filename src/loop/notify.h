// Webhook notifications of phoenix-loop (loop.notify as an object,
// docs/loop.md "Notify"): a POST on an escalation, at the end of the run and
// when the loop starts waiting on a rate-limited or unreachable model.
//
// Formats:
//   json   application/json: {"event", "summary", "repository", "branch",
//          "phase", "exit_code", "incident": {"title", "signature",
//          "rollback_sha", "path"} or null, "waiting_until", "waiting_for",
//          "state", "time"}
//   ntfy   text/plain, the lines of the message, with ntfy's Title, Tags
//          and Priority headers (POST to https://ntfy.sh/<topic>)
//   slack  application/json {"text": "..."} (an incoming webhook's form)
//   discord application/json {"content": "..."} (a webhook's execute form,
//          at most 2000 characters)
//   telegram application/json {"chat_id", "text"} POSTed to
//          <url>/bot<token>/sendMessage (the Bot API; url defaults to
//          https://api.telegram.org); text at most 4096 characters
//
// Secrets come from the environment, never from phoenix.json: telegram's
// bot token and chat id (loop.notify.token_env / chat_env, by default
// PHOENIX_TELEGRAM_TOKEN and PHOENIX_TELEGRAM_CHAT); for the other formats
// token_env, when set, names a token sent as "Authorization: Bearer".
// Whatever is said of a delivery (its error, the trace, stderr) has the
// token redacted and the URL's path cut ("https://hooks.slack.com/…").
//
// Delivery is HTTP or HTTPS through checks/http.h (Boost.Beast, OpenSSL;
// certificates verified, HTTPS_PROXY honoured). A refused or dropped
// connection, a timeout, a 5xx or a 429 is retried with backoff (0.5 s
// doubling, +-20 %), up to `attempts` tries in all; another 4xx is not (the
// request itself is wrong). A failed delivery is reported and traced, and
// never stops the loop.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "util/json.h"
#include "util/subprocess.h"

namespace phoenix::trace {
class Trace;
}

namespace phoenix::loop {

struct NotifyEvent {
  std::string kind;     // "escalated", "finished", "waiting" or "test" (phoenix notify --test)
  std::string summary;  // one line: what happened
  std::string repository, branch, state_path;
  std::string phase;
  std::optional<int> exit_code;
  // The incident, when there is one.
  std::string incident_path, incident_title, signature, rollback_sha;
  // While waiting: ISO-8601 UTC, and "rate-limited" or "unreachable".
  std::string waiting_until, waiting_for;
};

// What a notification says of an incident note (engine/incident.cc's form):
// its heading and check ("Incident — 2026-12-02 03:14 — unit"), the issue
// signature and the sha it rolled back to ("" when the note has none).
struct IncidentFacts {
  std::string title, signature, rollback_sha;
};
IncidentFacts read_incident(const std::string& path);

// The secrets a webhook's request carries, read from the variables its
// token_env and chat_env name.
struct WebhookSecrets {
  std::string token, chat;
};
// Throws ConfigError naming loop.notify.token_env or chat_env (and the
// variable) when one is not set: checked when the loop starts and by
// `phoenix notify --test`.
WebhookSecrets webhook_secrets(const config::Webhook& hook);

struct WebhookRequest {
  std::string url;                                           // where it is POSTed (telegram: with the token in it)
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type included
  std::string body;
};
WebhookRequest render_webhook(const config::Webhook& hook, const WebhookSecrets& secrets, const NotifyEvent& event);

struct Delivery {
  bool ok = false;
  int attempts = 0;
  int status = 0;      // the last HTTP status, 0 when none arrived
  std::string reason;  // its reason phrase
  std::string reply;   // the head of the last response's body (at most 500 bytes), redacted
  std::string error;   // the last failure, one line, redacted
};

// POSTs `event` to the webhook, retrying as above. `sleep_ms` waits between
// attempts (the loop's nap returns early on a signal); `log` hears about
// each failed attempt. A variable of webhook_secrets that is not set is a
// failed delivery (error says which), not an exception.
Delivery deliver(const config::Webhook& hook, const NotifyEvent& event, const std::function<void(long long)>& sleep_ms,
                 const std::function<void(const std::string&)>& log = {});

// `text` with the webhook's secrets redacted: the token's value (and any
// secret-looking variable's, util/redact.h) and the URL's path.
std::string redact_webhook(const config::Webhook& hook, const std::string& text);

// What phoenix-loop lends a notification.
struct LoopNotice {
  std::string root, branch, state_path;
  util::Json state;  // the state file's snapshot
  trace::Trace& trace;
  std::function<void(const std::string&)> say;
  std::function<void(long long)> nap;
};

// Runs loop.notify's command for `event` in `root` (PHOENIX_EVENT,
// PHOENIX_INCIDENT and PHOENIX_STATE set; 60 s at most).
util::ProcessResult run_notify_command(const std::vector<std::string>& argv, const std::string& root,
                                       const std::string& event, const std::string& incident,
                                       const std::string& state_path);

// Tells loop.notify of a loop event ("escalated", "waiting", "end",
// "escalated-end"): POSTs the webhook (retried; a failure is said and
// traced, never thrown) and runs the command (its exit status is said).
void notify_loop_event(const config::Loop& loop, const LoopNotice& n, const std::string& event,
                       const std::string& incident, const std::string& summary);

}  // namespace phoenix::loop
