// A real HTTP server on 127.0.0.1 for tests that post to one (the loop's
// webhooks). Apart from test_util.h so that the many tests that do not use
// it keep compiling from the same header as before.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace phoenix::test {

// A small HTTP/1.1 server on 127.0.0.1, on a thread of the test: records
// every request and answers each with the next of `statuses` (200 once
// they run out), an empty body and "Connection: close".
class RecordingServer {
 public:
  struct Request {
    std::string method, target, body;
    std::map<std::string, std::string> headers;  // lower-case names
  };
  explicit RecordingServer(std::vector<int> statuses = {});
  ~RecordingServer();
  int port() const { return port_; }
  std::string url(const std::string& path = "/hook") const;
  std::vector<Request> requests() const;

 private:
  void serve();
  void answer(int fd);
  int listen_fd_ = -1, port_ = 0;
  std::vector<int> statuses_;
  mutable std::mutex mu_;
  std::vector<Request> requests_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A port on 127.0.0.1 that nothing listens on right now.
int dead_port();

}  // namespace phoenix::test
