// A small HTTP/1.1 client for checks (Boost.Beast): plain http only, to
// loopback or any host, with a connect timeout and a read timeout, and a cap
// on the body it keeps. Failures are HttpError with one line that names the
// URL and what went wrong (refused, timed out, reset, body too large).
#pragma once

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
  std::string content_type;
  std::string body;
};

// Throws HttpError when no complete response arrives.
HttpResponse http_request(const HttpRequest& request);

// True when something accepts TCP connections on host:port right now.
bool port_accepts(const std::string& host, const std::string& port, double timeout_s = 0.5);

}  // namespace phoenix::checks
