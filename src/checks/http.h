// A small HTTP/1.1 client (Boost.Beast) for checks and the loop's webhooks:
// http:// and https:// to loopback or any host, with a connect timeout and
// a read timeout, and a cap on the body it keeps. Failures are HttpError
// with one line that names the URL and what went wrong (refused, timed out,
// reset, body too large, certificate not trusted).
//
// https:// is TLS on OpenSSL (Boost.Beast's SSL stream): the certificate is
// verified against the system's store (SSL_CERT_FILE / SSL_CERT_DIR when
// set, as OpenSSL reads them), its name checked against the URL's host
// (a DNS name or an IP address in its subjectAltName), SNI sent for a host
// name. HTTPS_PROXY (or https_proxy; "http://host:port", port 3128 when not
// given) is reached with HTTP CONNECT, then TLS goes through the tunnel;
// NO_PROXY (or no_proxy: "*", hosts, and domains with or without a leading
// dot, comma-separated) names hosts reached directly. Plain http:// is
// always direct.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "checks/url.h"

namespace phoenix::checks {

struct HttpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct HttpRequest {
  std::string url;
  std::string method = "GET";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  double connect_timeout_s = 5;
  double read_timeout_s = 30;          // for sending the request and reading the whole response
  size_t max_body_bytes = 256u << 20;  // larger bodies are an error, not a truncation
};

struct HttpResponse {
  int status = 0;
  std::string reason;  // the status line's phrase ("OK")
  std::string content_type;
  std::string body;
};

// Throws HttpError when no complete response arrives.
HttpResponse http_request(const HttpRequest& request);

// The proxy an https:// request to `host` goes through (HTTPS_PROXY,
// NO_PROXY), nullopt for none. Throws HttpError for a proxy it cannot use.
std::optional<Url> https_proxy_for(const std::string& host);

// True when something accepts TCP connections on host:port right now.
bool port_accepts(const std::string& host, const std::string& port, double timeout_s = 0.5);

}  // namespace phoenix::checks
