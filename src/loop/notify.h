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
//          and Priority headers (POST to http://host/<topic>)
//   slack  application/json {"text": "..."} (an incoming webhook's form)
//
// Delivery is plain HTTP (Boost.Beast through checks/http.h). A refused or
// dropped connection, a timeout, a 5xx or a 429 is retried with backoff
// (0.5 s doubling, +-20 %), up to `attempts` tries in all; another 4xx is
// not (the request itself is wrong). A failed delivery is reported and
// traced, and never stops the loop.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace phoenix::loop {

struct NotifyEvent {
  std::string kind;     // "escalated", "finished" or "waiting"
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

struct WebhookRequest {
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type included
  std::string body;
};
WebhookRequest render_webhook(const std::string& format, const NotifyEvent& event);

struct Delivery {
  bool ok = false;
  int attempts = 0;
  int status = 0;     // the last HTTP status, 0 when none arrived
  std::string error;  // the last failure, one line
};

// POSTs `event` to the webhook, retrying as above. `sleep_ms` waits between
// attempts (the loop's nap returns early on a signal); `log` hears about
// each failed attempt.
Delivery deliver(const config::Webhook& hook, const NotifyEvent& event, const std::function<void(long long)>& sleep_ms,
                 const std::function<void(const std::string&)>& log = {});

}  // namespace phoenix::loop
