#include "checks/server.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "checks/http.h"
#include "util/signals.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::checks {

namespace {

using util::secs;

std::string with_log(const std::string& head, const std::string& log) {
  std::string tail = util::to_valid_utf8(log);
  return head + "\n--- server log (last " + std::to_string(tail.size()) + " bytes) ---\n" +
         (tail.empty() ? "(nothing printed)\n" : tail + (tail.back() == '\n' ? "" : "\n"));
}

}  // namespace

Server::Server(const ServerSpec& spec, const std::string& cwd) : spec_(spec) {
  Url ready = parse_url(spec.ready_url, "server.ready_url");
  const std::string cmd = util::join_argv(spec.run);
  // Something already answering on the port would be measured instead of a
  // fresh server: the old code, still running.
  if (port_accepts(ready.host, ready.port)) {
    signal_ = "port taken: " + ready.host + ":" + ready.port;
    evidence_ = "before starting `" + cmd + "`, something already accepts connections on " + ready.host + ":" +
                ready.port +
                ".\nPhoenix boots the server fresh for every measurement; stop the process that holds the port.";
    return;
  }
  util::ProcessOptions o;
  o.argv = spec.run;
  o.cwd = cwd;
  o.head_bytes = 4 * 1024;
  o.tail_bytes = 32 * 1024;
  o.kill_grace_s = 2;
  proc_ = std::make_unique<util::Subprocess>(o);
  if (!proc_->started()) {
    util::ProcessResult r = proc_->wait();
    signal_ = r.not_found ? "server not found: " + spec.run[0] : "server did not start: " + spec.run[0];
    evidence_ = "`" + cmd + "` could not be started (" + (r.not_found ? "no such executable" : "not executable") + ")";
    proc_.reset();
    return;
  }
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::milliseconds(static_cast<long long>(spec.ready_timeout_s * 1000));
  std::string last_try;
  while (true) {
    if (util::interrupted_signal() != 0) {
      interrupted_ = true;
      signal_ = "interrupted";
      evidence_ = with_log("interrupted while waiting for `" + cmd + "`", log_tail());
      stop();
      return;
    }
    if (!proc_->running()) {
      util::ProcessResult r = proc_->wait();
      signal_ = "server exited early: exit=" + std::to_string(r.exit_code);
      evidence_ = with_log(
          "`" + cmd + "` exited with " + std::to_string(r.exit_code) + " before " + spec.ready_url + " answered",
          r.output.substr(r.output.size() > 4096 ? r.output.size() - 4096 : 0));
      return;
    }
    try {
      HttpRequest rq;
      rq.url = spec.ready_url;
      rq.connect_timeout_s = 0.5;
      rq.read_timeout_s = 2;
      rq.max_body_bytes = 1 << 20;
      HttpResponse res = http_request(rq);
      if (res.status >= 200 && res.status < 300) {
        ready_ = true;
        return;
      }
      last_try = "answered " + std::to_string(res.status);
    } catch (const HttpError& e) { last_try = e.what(); }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  signal_ = "server not ready after " + secs(spec.ready_timeout_s) + "s";
  std::string tail = log_tail();
  evidence_ = with_log("`" + cmd + "` did not become ready: " + spec.ready_url + " last " +
                           (last_try.empty() ? std::string("was not tried") : last_try),
                       tail);
  stop();
}

Server::~Server() { stop(); }

std::string Server::log_tail(size_t n) const { return proc_ ? proc_->output_tail(n) : ""; }

void Server::stop() {
  if (!proc_) return;
  proc_->stop();
  proc_.reset();
}

}  // namespace phoenix::checks
