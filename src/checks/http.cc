#include "checks/http.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <optional>

#include "util/error.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::checks {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

std::chrono::milliseconds ms(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

using util::secs;

std::string describe(const beast::error_code& ec) {
  if (ec == beast::error::timeout) return "timed out";
  if (ec == net::error::connection_refused) return "connection refused";
  if (ec == net::error::connection_reset) return "connection reset";
  if (ec == http::error::end_of_stream || ec == net::error::eof) return "connection closed before a complete response";
  if (ec == http::error::body_limit) return "body too large";
  return ec.message();
}

}  // namespace

HttpResponse http_request(const HttpRequest& rq) {
  Url u = parse_url(rq.url, "url");
  const std::string what = rq.method + " " + rq.url;
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(u.host, u.port, ec);
  if (ec) throw HttpError(what + ": cannot resolve " + u.host + ": " + ec.message());

  beast::tcp_stream stream(ioc);
  // Every step is asynchronous so the stream's deadline applies to it.
  auto run = [&](auto&& start) {
    std::optional<beast::error_code> done;
    start([&](beast::error_code e, auto&&...) { done = e; });
    ioc.restart();
    ioc.run();
    return done.value_or(beast::error_code(net::error::operation_aborted));
  };

  stream.expires_after(ms(rq.connect_timeout_s));
  ec = run([&](auto handler) {
    stream.async_connect(endpoints, [handler](beast::error_code e, const tcp::endpoint&) mutable { handler(e); });
  });
  if (ec) {
    if (ec == beast::error::timeout)
      throw HttpError(what + ": connect timed out after " + secs(rq.connect_timeout_s) + "s");
    throw HttpError(what + ": cannot connect to " + u.host + ":" + u.port + ": " + describe(ec));
  }

  http::request<http::string_body> req;
  req.method_string(rq.method);
  req.target(u.target);
  req.version(11);
  req.set(http::field::host, u.port == "80" ? u.host : u.host + ":" + u.port);
  req.set(http::field::user_agent, "phoenix");
  req.set(http::field::connection, "close");
  for (const auto& [k, v] : rq.headers) req.set(k, v);
  if (!rq.body.empty() || rq.method == "POST" || rq.method == "PUT" || rq.method == "PATCH") {
    req.body() = rq.body;
    req.prepare_payload();
  }

  stream.expires_after(ms(rq.read_timeout_s));
  ec = run([&](auto handler) {
    http::async_write(stream, req, [handler](beast::error_code e, size_t) mutable { handler(e); });
  });
  if (ec) throw HttpError(what + ": sending the request failed: " + describe(ec));

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(rq.max_body_bytes);
  parser.header_limit(64 * 1024);
  ec = run([&](auto handler) {
    http::async_read(stream, buffer, parser, [handler](beast::error_code e, size_t) mutable { handler(e); });
  });
  if (ec) {
    if (ec == beast::error::timeout)
      throw HttpError(what + ": no complete response within " + secs(rq.read_timeout_s) + "s");
    throw HttpError(what + ": reading the response failed: " + describe(ec));
  }
  auto& res = parser.get();
  HttpResponse out;
  out.status = static_cast<int>(res.result_int());
  out.content_type = std::string(res[http::field::content_type]);
  out.body = std::move(res.body());
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return out;
}

bool port_accepts(const std::string& host, const std::string& port, double timeout_s) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return false;
  beast::tcp_stream stream(ioc);
  stream.expires_after(ms(timeout_s));
  std::optional<beast::error_code> done;
  stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { done = e; });
  ioc.run();
  return done && !*done;
}

}  // namespace phoenix::checks
