// The server a contract or visual check measures: booted fresh for every
// measurement (a process started before a fix still serves the old code),
// polled on its ready URL, and stopped with its whole process tree after.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "checks/check_spec.h"
#include "util/subprocess.h"

namespace phoenix::checks {

// A booted server. Destroying it stops the process group (SIGTERM, grace,
// SIGKILL), grandchildren included.
class Server {
 public:
  // Boots `spec` in `cwd` and waits until ready. When it does not become
  // ready, ready() is false, signal() says why in a few words
  // ("server exited early: exit=3", "server not ready after 5s",
  // "port taken: 127.0.0.1:8080") and evidence() holds the log tail.
  Server(const ServerSpec& spec, const std::string& cwd);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  bool ready() const { return ready_; }
  bool interrupted() const { return interrupted_; }
  const std::string& signal() const { return signal_; }
  const std::string& evidence() const { return evidence_; }
  // The last bytes the server printed (stdout+stderr).
  std::string log_tail(size_t n = 4096) const;
  // Stops the tree now; idempotent.
  void stop();

 private:
  ServerSpec spec_;
  std::unique_ptr<util::Subprocess> proc_;
  bool ready_ = false;
  bool interrupted_ = false;
  std::string signal_, evidence_;
};

}  // namespace phoenix::checks
