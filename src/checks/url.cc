#include "checks/url.h"

#include <string>

#include "util/error.h"
#include "util/text.h"

namespace phoenix::checks {

Url parse_url(const std::string& url, const std::string& where) {
  if (util::starts_with(url, "https://"))
    throw ConfigError(where + ": '" + url + "': https is not supported; use a plain http:// URL (a local server)");
  if (!util::starts_with(url, "http://")) throw ConfigError(where + ": '" + url + "' is not an http:// URL");
  return parse_web_url(url, where);
}

Url parse_web_url(const std::string& url, const std::string& where) {
  bool tls = util::starts_with(url, "https://");
  if (!tls && !util::starts_with(url, "http://"))
    throw ConfigError(where + ": '" + shown_url(url) + "' is not an http:// or https:// URL");
  const std::string default_port = tls ? "443" : "80";
  std::string rest = url.substr(tls ? 8 : 7);
  size_t slash = rest.find('/');
  std::string authority = slash == std::string::npos ? rest : rest.substr(0, slash);
  Url u;
  u.tls = tls;
  u.target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (authority.empty()) throw ConfigError(where + ": '" + shown_url(url) + "' has no host");
  if (authority.find('@') != std::string::npos)
    throw ConfigError(where + ": '" + shown_url(url) + "': credentials in the URL are not supported (use headers)");
  if (authority.front() == '[') {  // [::1]:8080
    size_t close = authority.find(']');
    if (close == std::string::npos)
      throw ConfigError(where + ": '" + shown_url(url) + "' has an unterminated IPv6 address");
    u.host = authority.substr(1, close - 1);
    std::string after = authority.substr(close + 1);
    u.port = util::starts_with(after, ":") ? after.substr(1) : default_port;
  } else {
    size_t colon = authority.rfind(':');
    u.host = colon == std::string::npos ? authority : authority.substr(0, colon);
    u.port = colon == std::string::npos ? default_port : authority.substr(colon + 1);
  }
  if (u.host.empty()) throw ConfigError(where + ": '" + shown_url(url) + "' has no host");
  bool digits = !u.port.empty() && u.port.size() <= 5;
  for (char c : u.port) digits = digits && c >= '0' && c <= '9';
  if (!digits || std::stoi(u.port) < 1 || std::stoi(u.port) > 65535)
    throw ConfigError(where + ": '" + shown_url(url) + "' has an invalid port '" + u.port + "'");
  return u;
}

std::string shown_url(const std::string& url) {
  size_t scheme = url.find("://");
  size_t path = url.find_first_of("/?#", scheme == std::string::npos ? 0 : scheme + 3);
  if (path == std::string::npos || url.substr(path) == "/") return url;
  return url.substr(0, path) + "/\xE2\x80\xA6";
}

}  // namespace phoenix::checks
