#include "hook/runs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <optional>
#include <string_view>

#include "hook/owner.h"
#include "layout/paths.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::hook {

namespace {

constexpr off_t kTailBytes = 256 * 1024;
constexpr off_t kTrimAtBytes = 1024 * 1024;

bool all_zeros(const std::string& s) { return s.find_first_not_of('0') == std::string::npos; }

// The log's last `bytes` (at most kTailBytes), from the start of a whole
// line; *whole is set when that is the whole of what is read at all.
std::string read_tail(const std::string& root, off_t bytes = kTailBytes, bool* whole = nullptr) {
  const int fd = ::open(layout::hook_runs_file(root).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (whole) *whole = true;
    return "";
  }
  const off_t size = ::lseek(fd, 0, SEEK_END);
  bytes = std::min(bytes, kTailBytes);
  const off_t from = size > bytes ? size - bytes : 0;
  if (whole) *whole = from == 0 || bytes == kTailBytes;
  std::string text(static_cast<size_t>(size > 0 ? size - from : 0), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + got, text.size() - got, from + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  if (from > 0) {  // cut by the tail
    const size_t nl = text.find('\n');
    text.erase(0, nl == std::string::npos ? text.size() : nl + 1);
  }
  return text;
}

}  // namespace

RunOutcome run_outcome(int exit_code) {
  return exit_code == kExitOk            ? RunOutcome::kAllowed
         : exit_code == kExitInterrupted ? RunOutcome::kInterrupted
                                         : RunOutcome::kBlocked;
}

const char* run_outcome_name(RunOutcome o) {
  switch (o) {
    case RunOutcome::kAllowed: return "allowed";
    case RunOutcome::kBlocked: return "blocked";
    case RunOutcome::kInterrupted: return "interrupted";
  }
  return "?";
}

void log_run(const std::string& root, const std::string& by, const std::string& remote,
             const std::vector<PushedRef>& refs, RunOutcome outcome, const std::vector<std::string>& green) {
  util::Json pushed = util::Json::array();
  for (const auto& r : refs)
    pushed.push_back({{"local_ref", r.local_ref},
                      {"local_sha", r.local_sha},
                      {"remote_ref", r.remote_ref},
                      {"remote_sha", r.remote_sha}});
  const util::Json line{{"ts", util::now_iso8601()},
                        {"by", by},
                        {"remote", remote},
                        {"refs", pushed},
                        {"outcome", run_outcome_name(outcome)},
                        {"green", green}};
  const std::string text = line.dump(-1, ' ', false, util::Json::error_handler_t::replace) + "\n";
  const int fd = ::open(layout::hook_runs_file(root).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // One write of a short line with O_APPEND: lines from two hooks never
  // interleave.
  util::write_all(fd, text);
  struct stat st {};
  const bool trim = ::fstat(fd, &st) == 0 && st.st_size > kTrimAtBytes;
  ::close(fd);
  // Only the tail is ever read: past kTrimAtBytes (some 3,000 pushes) the
  // log is cut to its tail, once.
  if (trim) {
    try {
      util::write_file_atomic(layout::hook_runs_file(root), read_tail(root), 0644, util::Sync::kAtomic);
    } catch (const std::exception&) {}
  }
}

namespace {

// One line of the log, parsed; nullopt when it is torn or not ours.
std::optional<util::Json> parse_line(std::string_view line) {
  if (line.empty() || line[0] != '{') return std::nullopt;
  try {
    util::Json j = util::Json::parse(line);
    if (j.is_object() && j.contains("green") && j["green"].is_array() && j.contains("refs") && j["refs"].is_array())
      return j;
  } catch (const std::exception&) {}
  return std::nullopt;
}

void add_line(RunLog& log, const util::Json& j) {
  const std::string remote = j.value("remote", "");
  for (const auto& g : j["green"])
    if (g.is_string()) log.green.insert(g.get<std::string>());
  for (const auto& r : j["refs"])
    if (r.is_object()) log.seen.insert(remote + "\t" + r.value("remote_ref", ""));
}

// Whether some line holding `needle` says `holds` of itself; the lines are
// searched from the end, and only those holding the needle are parsed (the
// green path reads the log on every push).
template <typename Pred>
bool some_line(const std::string& text, const std::string& needle, Pred holds) {
  for (size_t at = text.rfind(needle); at != std::string::npos;
       at = at == 0 ? std::string::npos : text.rfind(needle, at - 1)) {
    const size_t b = text.rfind('\n', at);
    const size_t start = b == std::string::npos ? 0 : b + 1;
    const size_t end = std::min(text.find('\n', at), text.size());
    if (auto j = parse_line(std::string_view(text).substr(start, end - start)); j && holds(*j)) return true;
    if (start == 0) break;
    at = start;  // on to the lines before this one
  }
  return false;
}

// The same over the log's tail: its last 8 KiB first, where the answer
// usually is (the ref's last push), then more, up to kTailBytes; the green
// path reads the log on every push.
template <typename Pred>
bool some_line_in_log(const std::string& root, const std::string& needle, Pred holds) {
  for (off_t bytes : {off_t(8 * 1024), off_t(64 * 1024), kTailBytes}) {
    bool whole = false;
    if (some_line(read_tail(root, bytes, &whole), needle, holds)) return true;
    if (whole) return false;
  }
  return false;
}

}  // namespace

RunLog read_runs(const std::string& root) {
  RunLog log;
  for (const std::string& l : util::split_lines(read_tail(root)))
    if (auto j = parse_line(l)) add_line(log, *j);
  return log;
}

namespace {

// When a push from this repository last put `commit` at `remote_ref` of
// `remote`: the newest line of the remote-tracking ref's reflog,
// "<old> <new> <name> <<email>> <unix time> <tz>\t<message>", whose new
// value is `commit` and whose message is git's "update by push"; nullopt
// when there is none (the commit came by a fetch, or git keeps no such
// reflog).
std::optional<long long> pushed_here_at(const std::string& root, const std::string& remote,
                                        const std::string& remote_ref, const std::string& commit) {
  if (remote.empty() || !util::starts_with(remote_ref, "refs/heads/")) return std::nullopt;
  const auto dirs = git_dirs(root);
  if (!dirs) return std::nullopt;
  const std::string tracking = "refs/remotes/" + remote + "/" + remote_ref.substr(11);
  std::optional<std::string> text;
  try {
    text = util::read_file_if_exists((dirs->second / "logs" / tracking).string());
  } catch (const std::exception&) { return std::nullopt; }
  if (!text) return std::nullopt;
  std::optional<long long> at;
  for (const std::string& line : util::split_lines(*text)) {
    const size_t tab = line.find('\t');
    const size_t sp = line.find(' ');
    if (tab == std::string::npos || sp == std::string::npos || line.compare(sp + 1, commit.size(), commit) != 0 ||
        !util::starts_with(std::string_view(line).substr(tab + 1), "update by push"))
      continue;
    const size_t email_end = line.rfind('>', tab);
    if (email_end == std::string::npos) continue;
    try {
      at = std::stoll(line.substr(email_end + 1, tab - email_end - 1));
    } catch (const std::exception&) {}
  }
  return at;
}

}  // namespace

std::vector<const PushedRef*> unexplained_remote_ends(const std::string& root, const std::string& remote,
                                                      const std::vector<PushedRef>& refs) {
  std::vector<const PushedRef*> out;
  std::optional<std::optional<long long>> installed;  // read once, when needed
  for (const auto& r : refs) {
    if (r.deletion() || all_zeros(r.remote_sha) || !util::starts_with(r.remote_ref, "refs/heads/")) continue;
    const bool covered = some_line_in_log(root, "\"" + r.remote_sha + "\"", [&](const util::Json& j) {
      RunLog one;
      add_line(one, j);
      return one.covers(r.remote_sha);
    });
    if (covered) continue;
    const std::optional<long long> pushed_at = pushed_here_at(root, remote, r.remote_ref, r.remote_sha);
    if (!pushed_at) continue;
    if (!installed) installed = installed_at_s(root);
    // The reflog counts whole seconds: a push in the second of the install
    // counts as after it.
    const bool after_install = *installed && *pushed_at >= **installed;
    const bool hook_was_there =
        after_install || some_line_in_log(root, "\"" + r.remote_ref + "\"", [&](const util::Json& j) {
          RunLog one;
          add_line(one, j);
          return one.saw(remote, r.remote_ref);
        });
    if (hook_was_there) out.push_back(&r);
  }
  return out;
}

void note_install(const std::string& root, bool fresh) {
  const std::string path = layout::hook_installed_file(root);
  if (!fresh && installed_at_s(root)) return;
  layout::ensure_state_dir(root);
  const long long now = static_cast<long long>(std::time(nullptr));
  util::write_file_atomic(path, util::Json{{"installed_at", util::now_iso8601()}, {"at_s", now}}.dump() + "\n");
}

std::optional<long long> installed_at_s(const std::string& root) {
  try {
    const std::optional<std::string> text = util::read_file_if_exists(layout::hook_installed_file(root));
    if (!text) return std::nullopt;
    const util::Json j = util::Json::parse(*text);
    if (j.is_object() && j.contains("at_s") && j["at_s"].is_number_integer()) return j["at_s"].get<long long>();
  } catch (const std::exception&) {}
  return std::nullopt;
}

util::Json unmeasured_pushes(const std::string& root) {
  try {
    util::Json j = util::Json::parse(util::read_file(layout::unmeasured_pushes_file(root)));
    if (j.contains("pushes") && j["pushes"].is_array()) return j["pushes"];
  } catch (const std::exception&) {}
  return util::Json::array();
}

namespace {

void write_unmeasured(const std::string& root, const util::Json& pushes) {
  try {
    if (pushes.empty()) {
      if (util::path_exists(layout::unmeasured_pushes_file(root)))
        ::unlink(layout::unmeasured_pushes_file(root).c_str());
      return;
    }
    util::write_file_atomic(layout::unmeasured_pushes_file(root), util::Json{{"pushes", pushes}}.dump(2) + "\n");
  } catch (const std::exception&) {}
}

}  // namespace

void note_unmeasured_push(const std::string& root, const std::string& remote, const std::string& remote_ref,
                          const std::string& commit) {
  util::Json pushes = unmeasured_pushes(root);
  for (const auto& p : pushes)
    if (p.value("remote", "") == remote && p.value("remote_ref", "") == remote_ref && p.value("commit", "") == commit)
      return;
  pushes.push_back(
      {{"remote", remote}, {"remote_ref", remote_ref}, {"commit", commit}, {"noticed_at", util::now_iso8601()}});
  write_unmeasured(root, pushes);
}

void clear_unmeasured_pushes(const std::string& root, const std::string& remote, const std::string& remote_ref) {
  util::Json pushes = unmeasured_pushes(root);
  util::Json kept = util::Json::array();
  for (const auto& p : pushes)
    if (!(p.value("remote", "") == remote && p.value("remote_ref", "") == remote_ref)) kept.push_back(p);
  if (kept.size() != pushes.size()) write_unmeasured(root, kept);
}

}  // namespace phoenix::hook
