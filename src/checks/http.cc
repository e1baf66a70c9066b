#include "checks/http.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "util/error.h"
#include "util/format.h"
#include "util/atomic_file.h"
#include "util/text.h"

namespace phoenix::checks {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

std::chrono::milliseconds ms(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

using util::secs;

std::string describe(const beast::error_code& ec) {
  if (ec == beast::error::timeout) return "timed out";
  if (ec == net::error::connection_refused) return "connection refused";
  if (ec == net::error::connection_reset) return "connection reset";
  if (ec == http::error::end_of_stream || ec == net::error::eof || ec == ssl::error::stream_truncated)
    return "connection closed before a complete response";
  if (ec == http::error::body_limit) return "body too large";
  return ec.message();
}

// Runs one asynchronous step to its end, so the stream's deadline applies.
struct Step {
  net::io_context& ioc;
  template <class Start>
  beast::error_code operator()(Start&& start) {
    std::optional<beast::error_code> done;
    start([&](beast::error_code e, auto&&...) { done = e; });
    ioc.restart();
    ioc.run();
    return done.value_or(beast::error_code(net::error::operation_aborted));
  }
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

bool is_ip(const std::string& host) {
  beast::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

// NO_PROXY's entries ("*", "host", ".domain", "domain" for it and its
// subdomains; a ":port" on an entry is ignored) name `host`.
bool no_proxy_for(const std::string& host) {
  std::string list = env("NO_PROXY").empty() ? env("no_proxy") : env("NO_PROXY");
  for (auto& c : list) c = c == ',' ? ' ' : c;
  for (std::string e : util::split_words(list)) {
    if (e == "*") return true;
    if (size_t colon = e.rfind(':'); colon != std::string::npos && e.find(']') == std::string::npos) e.resize(colon);
    if (!e.empty() && e.front() == '.') e.erase(0, 1);
    if (!e.empty() && (host == e || util::ends_with(host, "." + e))) return true;
  }
  return false;
}

}  // namespace

std::optional<Url> https_proxy_for(const std::string& host) {
  std::string p = env("HTTPS_PROXY").empty() ? env("https_proxy") : env("HTTPS_PROXY");
  if (p.empty() || no_proxy_for(host)) return std::nullopt;
  if (p.find("://") == std::string::npos) p = "http://" + p;
  if (util::starts_with(p, "https://"))
    throw HttpError("HTTPS_PROXY: '" + p + "': a proxy reached over TLS is not supported (give http://host:port)");
  try {
    Url u = parse_web_url(p, "HTTPS_PROXY");
    if (u.port == "80" && p.find(':', 7) == std::string::npos) u.port = "3128";
    return u;
  } catch (const ConfigError& e) { throw HttpError(e.what()); }
}

namespace {

// An open connection: TCP, through an HTTPS proxy's CONNECT when one is
// set, then TLS for https:// URLs.
class Connection {
 public:
  Connection(const Url& u, const HttpRequest& rq, const std::string& what)
      : u_(u), rq_(rq), what_(what), tcp_(ioc_), ctx_(ssl::context::tls_client) {
    std::optional<Url> proxy = u.tls ? https_proxy_for(u.host) : std::nullopt;
    connect(proxy ? *proxy : u, proxy.has_value());
    if (proxy) tunnel(*proxy);
    if (u.tls) handshake();
  }

  HttpResponse exchange(http::request<http::string_body>& req) {
    return tls_ ? exchange_on(*tls_, req) : exchange_on(tcp_, req);
  }

 private:
  void connect(const Url& to, bool is_proxy) {
    tcp::resolver resolver(ioc_);
    beast::error_code ec;
    auto endpoints = resolver.resolve(to.host, to.port, ec);
    std::string which = is_proxy ? "the proxy " : "";
    if (ec) throw HttpError(what_ + ": cannot resolve " + which + to.host + ": " + ec.message());
    tcp_.expires_after(ms(rq_.connect_timeout_s));
    ec = step_([&](auto handler) {
      tcp_.async_connect(endpoints, [handler](beast::error_code e, const tcp::endpoint&) mutable { handler(e); });
    });
    if (ec == beast::error::timeout)
      throw HttpError(what_ + ": connect to " + which + "timed out after " + secs(rq_.connect_timeout_s) + "s");
    if (ec) throw HttpError(what_ + ": cannot connect to " + which + to.host + ":" + to.port + ": " + describe(ec));
  }

  // HTTP CONNECT host:port through the proxy; its 2xx opens the tunnel.
  void tunnel(const Url& proxy) {
    const std::string authority = u_.host + ":" + u_.port;
    http::request<http::empty_body> req{http::verb::connect, authority, 11};
    req.set(http::field::host, authority);
    req.set(http::field::user_agent, "phoenix");
    tcp_.expires_after(ms(rq_.connect_timeout_s));
    beast::error_code ec = step_([&](auto handler) {
      http::async_write(tcp_, req, [handler](beast::error_code e, size_t) mutable { handler(e); });
    });
    http::response_parser<http::empty_body> parser;
    parser.skip(true);  // a CONNECT's answer has no body
    beast::flat_buffer buffer;
    if (!ec)
      ec = step_([&](auto handler) {
        http::async_read(tcp_, buffer, parser, [handler](beast::error_code e, size_t) mutable { handler(e); });
      });
    if (ec) throw HttpError(what_ + ": the proxy " + proxy.host + ":" + proxy.port + " failed: " + describe(ec));
    unsigned status = parser.get().result_int();
    if (status < 200 || status >= 300)
      throw HttpError(what_ + ": the proxy " + proxy.host + ":" + proxy.port + " refused CONNECT " + authority +
                      ": HTTP " + std::to_string(status));
  }

  // TLS: the system's certificates (or SSL_CERT_FILE / SSL_CERT_DIR), the
  // host name checked against the certificate, SNI sent for a name.
  void handshake() {
    std::string file = env("SSL_CERT_FILE");
    if (!file.empty() && !util::path_exists(file))
      throw HttpError(what_ + ": SSL_CERT_FILE=" + file + " does not exist");
    ctx_.set_default_verify_paths();  // reads SSL_CERT_FILE and SSL_CERT_DIR when set
    ctx_.set_verify_mode(ssl::verify_peer);
    tls_.emplace(std::move(tcp_), ctx_);
    SSL* s = tls_->native_handle();
    X509_VERIFY_PARAM* param = SSL_get0_param(s);
    bool ip = is_ip(u_.host);
    if (!ip) SSL_set_tlsext_host_name(s, u_.host.c_str());
    if (ip ? X509_VERIFY_PARAM_set1_ip_asc(param, u_.host.c_str()) != 1
           : X509_VERIFY_PARAM_set1_host(param, u_.host.c_str(), 0) != 1)
      throw HttpError(what_ + ": cannot check the certificate against '" + u_.host + "'");
    beast::get_lowest_layer(*tls_).expires_after(ms(rq_.connect_timeout_s));
    beast::error_code ec = step_([&](auto handler) {
      tls_->async_handshake(ssl::stream_base::client, [handler](beast::error_code e) mutable { handler(e); });
    });
    if (!ec) return;
    long verify = SSL_get_verify_result(s);
    if (verify != X509_V_OK)
      throw HttpError(what_ + ": the certificate of " + u_.host +
                      " is not trusted: " + X509_verify_cert_error_string(verify));
    throw HttpError(what_ + ": TLS handshake with " + u_.host + ":" + u_.port + " failed: " + describe(ec));
  }

  template <class Stream>
  HttpResponse exchange_on(Stream& stream, http::request<http::string_body>& req) {
    beast::get_lowest_layer(stream).expires_after(ms(rq_.read_timeout_s));
    beast::error_code ec = step_([&](auto handler) {
      http::async_write(stream, req, [handler](beast::error_code e, size_t) mutable { handler(e); });
    });
    if (ec) throw HttpError(what_ + ": sending the request failed: " + describe(ec));
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(rq_.max_body_bytes);
    parser.header_limit(64 * 1024);
    ec = step_([&](auto handler) {
      http::async_read(stream, buffer, parser, [handler](beast::error_code e, size_t) mutable { handler(e); });
    });
    if (ec == beast::error::timeout)
      throw HttpError(what_ + ": no complete response within " + secs(rq_.read_timeout_s) + "s");
    if (ec) throw HttpError(what_ + ": reading the response failed: " + describe(ec));
    auto& res = parser.get();
    HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    out.reason = std::string(res.reason());
    out.content_type = std::string(res[http::field::content_type]);
    out.body = std::move(res.body());
    beast::error_code ignored;
    beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
    return out;
  }

  const Url& u_;
  const HttpRequest& rq_;
  const std::string& what_;
  net::io_context ioc_;
  Step step_{ioc_};
  beast::tcp_stream tcp_;
  ssl::context ctx_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
};

}  // namespace

HttpResponse http_request(const HttpRequest& rq) {
  Url u = parse_web_url(rq.url, "url");
  const std::string what = rq.method + " " + rq.url;
  Connection conn(u, rq, what);
  http::request<http::string_body> req;
  req.method_string(rq.method);
  req.target(u.target);
  req.version(11);
  bool default_port = u.port == (u.tls ? "443" : "80");
  req.set(http::field::host, default_port ? u.host : u.host + ":" + u.port);
  req.set(http::field::user_agent, "phoenix");
  req.set(http::field::connection, "close");
  for (const auto& [k, v] : rq.headers) req.set(k, v);
  if (!rq.body.empty() || rq.method == "POST" || rq.method == "PUT" || rq.method == "PATCH") {
    req.body() = rq.body;
    req.prepare_payload();
  }
  return conn.exchange(req);
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
