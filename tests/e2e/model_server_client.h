// The suite's fake model provider (tests/tools/model_server.cc) as a test
// fixture member: a child process on a free port of 127.0.0.1, stopped
// with the fixture; and where the real agent CLIs are installed. Shared by
// agents_test.cc and loop_claude_night_test.cc. Header-only, like
// real_projects.h.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "test_util.h"
#include "util/text.h"

namespace phoenix::test {

// The folder of the agent CLIs' executables (scripts/deps.sh installs them).
inline std::string agents_bin() {
  const char* d = std::getenv("PHOENIX_TEST_TOOLS_DIR");
  return std::string(d && *d ? d : "/opt/phoenix-test-tools") + "/agents/node_modules/.bin";
}

class ModelServer {
 public:
  explicit ModelServer(const std::string& dir) : dir_(dir) {
    std::filesystem::create_directories(dir);
    const std::string port_file = dir + "/port";
    const std::string bin = test_tool("model_server");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl(bin.c_str(), bin.c_str(), "--dir", dir.c_str(), "--port-file", port_file.c_str(), nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !std::filesystem::exists(port_file); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    port_ = util::trim(read(port_file));
  }
  ~ModelServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  const std::string& port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + port_; }
  // <dir>/mode: normal | 429 | 529 | 500 | usage-limit | credit (model_server.cc).
  void set_mode(const std::string& m) const { write(dir_, "mode", m + "\n"); }
  std::string log() const { return read(dir_ + "/requests.log"); }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  std::string port_;
};

}  // namespace phoenix::test
