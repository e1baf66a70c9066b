// http:// URLs in phoenix.json (contract and visual targets, servers'
// ready_url): parsed when the configuration loads, so a bad one is a
// configuration error naming its field. Apart from the HTTP client
// (checks/http.h), which the thin pre-push hook does not link.
#pragma once

#include <string>

namespace phoenix::checks {

struct Url {
  std::string host;
  std::string port;    // "80" when not given
  std::string target;  // "/path?query"
};

// Parses "http://host[:port]/path". "https://..." and anything that is not
// an http URL throw ConfigError naming `where` and the value.
Url parse_url(const std::string& url, const std::string& where);

}  // namespace phoenix::checks
