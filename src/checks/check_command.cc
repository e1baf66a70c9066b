// A command_exit check's run, and what sense() does to every result. In a
// translation unit of its own that needs nothing but Boost.Process (through
// util/subprocess), so the pre-push hook's thin binary (phoenix-hook) can
// run checks exactly as sense() does without linking libgit2 or OpenSSL.
#include <cstdio>

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

SenseResult run_command(const CheckSpec& c, const std::string& root, int cancel_fd) {
  SenseResult r;
  util::ProcessOptions o;
  o.argv = c.argv;
  o.cwd = c.cwd.empty() ? root : resolve_in(root, c.cwd);
  o.timeout_s = c.timeout_s;
  o.head_bytes = 16 * 1024;
  o.tail_bytes = 64 * 1024;
  o.cancel_fd = cancel_fd;
  util::ProcessResult p = util::run_process(o);
  r.duration_ms = p.duration_ms;
  r.output = util::to_valid_utf8(p.output);
  if (p.not_found) {
    r.signal = "not found: " + c.argv[0];
    r.evidence = "no executable '" + c.argv[0] + "' (looked in " +
                 (c.argv[0].find('/') == std::string::npos ? "PATH" : o.cwd) + ")";
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
  return finish_sense(run_command(spec, root, cancel_fd), spec, start);
}

}  // namespace phoenix::checks
