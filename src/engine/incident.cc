#include "engine/incident.h"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <vector>

#include "util/atomic_file.h"
#include "util/text.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/redact.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::engine {

std::string describe_check(const checks::CheckSpec& c) {
  if (c.kind == checks::Kind::kCommandExit) return "command_exit `" + util::join_argv(c.argv) + "`";
  return std::string(checks::kind_name(c.kind)) + " `" + c.path + "`";
}

namespace fs = std::filesystem;

namespace {

std::string utc_now(const char* fmt) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

std::string fence(const std::string& body, const std::string& lang = "") {
  // A fence longer than any run of backticks inside the body.
  size_t longest = 0, run = 0;
  for (char c : body) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  std::string f(std::max<size_t>(3, longest + 1), '`');
  return f + lang + "\n" + body + (body.empty() || body.back() == '\n' ? "" : "\n") + f + "\n";
}

}  // namespace

std::string render_incident(const Incident& inc) {
  std::string when = inc.when.empty() ? utc_now("%Y-%m-%d %H:%M") : inc.when;
  std::string s = "# Incident — " + when + "\n\n";
  s += "## Failure type\n\n" + inc.failure_type + "\n\n";
  s += "## Check\n\n`" + inc.check_id + "` — " + inc.check_description + "\n\nSignal: `" + inc.signal + "`\n\n";
  s += "## Retries attempted\n\n";
  if (inc.attempts.empty()) s += "None.\n";
  for (const auto& a : inc.attempts)
    s += std::to_string(a.number) + ". " + a.fixer + ": " + a.outcome +
         (a.attempt_signature.empty() ? "" : " (attempt `" + util::sha12(a.attempt_signature) + "`)") + "\n";
  if (!inc.why_escalated.empty()) s += "\nEscalated because: " + inc.why_escalated + "\n";
  s += "\n## Failure signatures\n\n- issue: `" + inc.issue_signature + "`\n";
  for (const auto& t : inc.failing_tests) s += "- failing test: `" + t + "`\n";
  s += "\n## Last attempted diff\n\n" + (inc.last_diff.empty() ? std::string("None.\n") : fence(inc.last_diff, "diff"));
  s += "\n## Evidence\n\n" + fence(inc.evidence);
  for (const auto& img : inc.images) s += "\n![" + img + "](" + img + ")\n";
  s += "\n## State: ";
  if (!inc.rolled_back_to.empty()) s += "rolled back to " + inc.rolled_back_to + "\n";
  else
    s += "not rolled back: " +
         (inc.not_rolled_back_why.empty() ? std::string("rollback pending") : inc.not_rolled_back_why) + "\n";
  return s;
}

std::string write_incident(const std::string& dir, const Incident& inc) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot write incident note in " + dir + ": " + ec.message());
  std::string base = utc_now("%Y-%m-%d-%H-%M");
  std::string text = util::redact_secrets(render_incident(inc));
  for (int n = 0; n < 1000; ++n) {
    std::string path = dir + "/" + base + (n == 0 ? "" : "-" + std::to_string(n + 1)) + ".md";
    // O_EXCL claims the name so two writers never share a note.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      throw_errno("cannot write incident note " + path);
    }
    ::close(fd);
    std::vector<std::string> written;
    try {
      if (!inc.artifacts.empty()) {
        // Evidence pictures go beside the note, named after it.
        Incident with_files = inc;
        std::string stem = fs::path(path).stem().string();
        for (const auto& [name, bytes] : inc.artifacts) {
          std::string file = stem + "-" + name;
          PHOENIX_FAULT_IO("evidence-write", dir + "/" + file);
          util::write_file_atomic(dir + "/" + file, bytes);
          written.push_back(dir + "/" + file);
          with_files.images.push_back(file);
        }
        text = util::redact_secrets(render_incident(with_files));
      }
      PHOENIX_FAULT_TORN("mid-incident", path + ".tmp.fault", text);
      PHOENIX_FAULT_IO("incident-write", path);
      util::write_file_atomic(path, text);
    } catch (const Error&) {
      // No half note: an empty claimed name would read as a crash in the
      // middle of an escalation, which `phoenix recover` completes.
      for (const auto& f : written) ::unlink(f.c_str());
      ::unlink(path.c_str());
      throw;
    }
    return path;
  }
  throw Error("cannot find a free incident note name in " + dir);
}

void set_incident_state(const std::string& path, const std::string& state_line) {
  std::string s = util::read_file(path);
  size_t at = s.rfind("\n## State: ");
  if (at == std::string::npos) return;
  s = s.substr(0, at) + "\n## State: " + state_line + "\n";
  util::write_file_atomic(path, s);
}

}  // namespace phoenix::engine
