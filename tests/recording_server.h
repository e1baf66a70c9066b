// Real servers on 127.0.0.1 for tests that post to one (the loop's
// webhooks): an HTTP or HTTPS server that records what it is sent, a CA of
// the test's own made with the `openssl` CLI, and an HTTP CONNECT proxy.
// Apart from test_util.h so that the many tests that do not use them keep
// compiling from the same header as before.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace phoenix::test {

// A socket listening on 127.0.0.1 on a port the kernel picks; each
// connection is handed to `handle`, one at a time, on a thread of its own
// (reads time out after 5 s; the socket is closed after).
class LoopbackListener {
 public:
  explicit LoopbackListener(std::function<void(int fd)> handle);
  ~LoopbackListener();
  int port() const { return port_; }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A certificate and its key, PEM files.
struct CertFiles {
  std::string cert, key;
};

// A small HTTP/1.1 server on 127.0.0.1, on a thread of the test: records
// every request and answers each with the next of `statuses` (200 once
// they run out), the body given to reply() (empty by default) and
// "Connection: close". Given a certificate, it speaks TLS (OpenSSL) and
// records the SNI name each client sent; a client that gives up during the
// handshake (it did not trust the certificate) is not recorded.
class RecordingServer {
 public:
  struct Request {
    std::string method, target, body;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string sni;                             // TLS: the server name the client sent ("" none)
  };
  explicit RecordingServer(std::vector<int> statuses = {}, CertFiles tls = {});
  int port() const { return listener_.port(); }
  // http://127.0.0.1:PORT/hook, or https:// with `host` for a TLS server.
  std::string url(const std::string& path = "/hook", const std::string& host = "127.0.0.1") const;
  std::vector<Request> requests() const;
  void reply(const std::string& body);

 private:
  void answer(int fd);
  std::vector<int> statuses_;
  std::shared_ptr<void> tls_;  // the SSL_CTX, when serving TLS
  std::string reply_;
  mutable std::mutex mu_;
  std::vector<Request> requests_;
  LoopbackListener listener_{[this](int fd) { answer(fd); }};  // last: stopped first
};

// A certificate authority of the test's own, made with the `openssl` CLI
// in `dir`: ca() is its certificate (what SSL_CERT_FILE names to trust it),
// issue() signs a server certificate for the subjectAltNames given
// ("DNS:localhost,IP:127.0.0.1"), valid from now for a year, or, with
// `expired`, one whose validity ended in the past.
class TestCa {
 public:
  explicit TestCa(const std::string& dir);
  std::string ca() const { return dir_ + "/ca.pem"; }
  CertFiles issue(const std::string& name, const std::string& san, bool expired = false) const;

 private:
  std::string dir_;
};

// An HTTP CONNECT proxy on 127.0.0.1 (what HTTPS_PROXY names): opens a
// tunnel to a loopback host:port and pipes bytes both ways; records each
// CONNECT's authority. One connection at a time, on a thread of the test.
class ConnectProxy {
 public:
  std::string url() const { return "http://127.0.0.1:" + std::to_string(listener_.port()); }
  std::vector<std::string> targets() const;

 private:
  void tunnel(int fd);
  mutable std::mutex mu_;
  std::vector<std::string> targets_;
  LoopbackListener listener_{[this](int fd) { tunnel(fd); }};  // last: stopped first
};

// Sets an environment variable for one test and puts the old value back
// (nullptr: unsets it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();

 private:
  std::string name_, old_;
  bool had_ = false;
};

// A port on 127.0.0.1 that nothing listens on right now.
int dead_port();

}  // namespace phoenix::test
