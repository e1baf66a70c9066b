// A command_exit check's run, and what sense() does to every result. In a
// translation unit of its own that needs nothing but Boost.Process (through
// util/subprocess), so the pre-push hook's thin binary (phoenix-hook) can
// run checks exactly as sense() does without linking libgit2 or OpenSSL.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "checks/check.h"
#include "util/redact.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::checks {

std::string resolve_in(const std::string& root, const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  return root + "/" + p;
}

namespace {

// "npx <bin> args...": the project's node_modules/.bin/<bin> where npx
// would find it (the nearest folder up from `cwd` holding a package.json
// or a node_modules), with that .bin first in PATH as npx puts it; else
// the argv as it is (npx fetches, or runs a global).
void start_npx_directly(util::ProcessOptions& o) {
  const std::vector<std::string>& a = o.argv;
  if (a.size() < 2 || (a[0] != "npx" && !util::ends_with(a[0], "/npx")) || a[1].empty() || a[1][0] == '-' ||
      a[1].find('/') != std::string::npos || a[1].find('@') != std::string::npos)
    return;
  std::string dir = o.cwd;
  while (!dir.empty()) {
    const bool prefix = ::access((dir + "/package.json").c_str(), F_OK) == 0 ||
                        ::access((dir + "/node_modules").c_str(), F_OK) == 0;
    if (prefix) {
      const std::string bin_dir = dir + "/node_modules/.bin";
      const std::string bin = bin_dir + "/" + a[1];
      if (::access(bin.c_str(), X_OK) != 0) return;
      std::vector<std::string> argv{bin};
      argv.insert(argv.end(), a.begin() + 2, a.end());
      o.argv = std::move(argv);
      const char* path = std::getenv("PATH");
      o.env["PATH"] = bin_dir + (path && *path ? ":" + std::string(path) : "");
      return;
    }
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos || slash == 0 ? "" : dir.substr(0, slash);
  }
}

util::ProcessOptions command_options(const CheckSpec& c, const std::string& root, int cancel_fd) {
  util::ProcessOptions o;
  o.argv = c.argv;
  o.cwd = c.cwd.empty() ? root : resolve_in(root, c.cwd);
  if (c.npx_direct) start_npx_directly(o);
  o.timeout_s = c.timeout_s;
  o.head_bytes = 16 * 1024;
  o.tail_bytes = 64 * 1024;
  o.cancel_fd = cancel_fd;
  return o;
}

// The result of the check `c` whose run `p` was (`cwd`: where it ran).
SenseResult command_result(const CheckSpec& c, const std::string& cwd, const util::ProcessResult& p) {
  SenseResult r;
  r.duration_ms = p.duration_ms;
  r.output = util::to_valid_utf8(p.output);
  if (p.not_found) {
    r.signal = "not found: " + c.argv[0];
    r.evidence = "no executable '" + c.argv[0] + "' (looked in " +
                 (c.argv[0].find('/') == std::string::npos ? "PATH" : cwd) + ")";
    return r;
  }
  if (p.not_executable) {
    r.signal = "not executable: " + c.argv[0];
    r.evidence = p.executable + " exists but cannot be executed (permissions?)";
    return r;
  }
  // The evidence is the tail a person reads first.
  util::HeadTail tail(0, 8 * 1024);
  tail.append(p.output);
  std::string ev = util::to_valid_utf8(p.output.size() > 8 * 1024 ? tail.str() : p.output);
  if (p.output_truncated || p.output.size() > 8 * 1024)
    ev = "[output: " + std::to_string(p.output_bytes) + " bytes; last 8 KiB shown]\n" + ev;
  r.evidence = ev;
  if (p.interrupted) {
    r.interrupted = true;
    r.signal = "interrupted";
    return r;
  }
  if (p.cancelled) {
    r.signal = "cancelled";
    return r;
  }
  if (p.timed_out) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "timeout after %gs", c.timeout_s);
    r.signal = buf;
    return r;
  }
  r.ok = p.exit_code == c.expect_exit;
  r.signal = "exit=" + std::to_string(p.exit_code);
  if (!r.ok && c.expect_exit != 0) r.signal += " (expected " + std::to_string(c.expect_exit) + ")";
  return r;
}

}  // namespace

SenseResult finish_sense(SenseResult r, const CheckSpec& spec, std::chrono::steady_clock::time_point start) {
  r.id = spec.id;
  if (r.duration_ms == 0)
    r.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (r.output.empty()) r.output = r.evidence;
  // Secret values of the environment never reach evidence, signatures or notes.
  r.output = util::redact_secrets(r.output);
  r.evidence = util::redact_secrets(r.evidence);
  return r;
}

SenseResult sense_command_exit(const CheckSpec& spec, const std::string& root, int cancel_fd) {
  auto start = std::chrono::steady_clock::now();
  const util::ProcessOptions o = command_options(spec, root, cancel_fd);
  return finish_sense(command_result(spec, o.cwd, util::run_process(o)), spec, start);
}

StartedCheck::StartedCheck(const CheckSpec& spec, const std::string& root)
    : spec_(spec), start_(std::chrono::steady_clock::now()) {
  util::ProcessOptions o = command_options(spec, root, -1);
  cwd_ = o.cwd;
  run_ = util::Subprocess::start_unread(std::move(o));
}

StartedCheck::~StartedCheck() = default;

SenseResult StartedCheck::wait() { return finish_sense(command_result(spec_, cwd_, run_->wait()), spec_, start_); }

void StartedCheck::stop() { run_->stop(); }

}  // namespace phoenix::checks
