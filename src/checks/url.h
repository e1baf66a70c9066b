// URLs in phoenix.json: http:// for contract and visual targets and servers'
// ready_url, http:// or https:// for loop.notify's webhook. Parsed when the
// configuration loads, so a bad one is a configuration error naming its
// field. Apart from the HTTP client (checks/http.h), which the thin
// pre-push hook does not link.
#pragma once

#include <string>

namespace phoenix::checks {

struct Url {
  bool tls = false;  // https://
  std::string host;
  std::string port;    // "80" (http) or "443" (https) when not given
  std::string target;  // "/path?query"
};

// Parses "http://host[:port]/path". "https://..." and anything that is not
// an http URL throw ConfigError naming `where` and the value.
Url parse_url(const std::string& url, const std::string& where);

// Parses "http://..." or "https://host[:port]/path" (what the HTTP client
// reaches); anything else throws ConfigError naming `where` and the value.
Url parse_web_url(const std::string& url, const std::string& where);

// `url` with its path and query replaced by "/…" (a webhook's path, a bot's
// token or a topic are secrets): "https://hooks.slack.com/…". For messages.
std::string shown_url(const std::string& url);

}  // namespace phoenix::checks
