// The part of the pre-push hook that the green path needs — git's stdin,
// `git status`, the result lines — in a translation unit that links no
// libgit2, OpenSSL or SQLite: the thin binary phoenix-hook
// (src/cli/main_phoenix_hook.cc) is built from it, config and the
// command_exit check alone, and `phoenix hook run pre-push` uses the same
// code, so both say the same.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "hook/hook.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::hook {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// stdin

namespace {

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool is_sha(std::string_view s) {
  return (s.size() == 40 || s.size() == 64) && std::all_of(s.begin(), s.end(), is_hex_digit);
}

bool all_zeros(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; }); }

bool has_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// A line as it can be shown in one line of an error: control bytes and
// non-ASCII escaped, cut to 80 bytes of input.
std::string shown(std::string_view line) {
  std::string out;
  size_t n = std::min<size_t>(line.size(), 80);
  for (size_t i = 0; i < n; ++i) {
    auto u = static_cast<unsigned char>(line[i]);
    if (u == '"' || u == '\\') {
      out += '\\';
      out += static_cast<char>(u);
    } else if (u < 0x20 || u >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += static_cast<char>(u);
    }
  }
  return "\"" + out + "\"" + (line.size() > n ? " (cut; " + std::to_string(line.size()) + " bytes)" : "");
}

}  // namespace

bool PushedRef::deletion() const { return all_zeros(local_sha); }
bool PushedRef::creation() const { return all_zeros(remote_sha); }

std::vector<PushedRef> parse_pre_push(std::string_view input) {
  std::vector<PushedRef> out;
  size_t pos = 0;
  size_t number = 0;
  while (pos < input.size()) {
    size_t nl = input.find('\n', pos);
    std::string_view line = input.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? input.size() : nl + 1;
    ++number;
    auto fail = [&](const std::string& why) -> UsageError {
      return UsageError("pre-push: stdin line " + std::to_string(number) + ": " + why + ": " + shown(line) +
                        " (git writes \"<local ref> <local sha> <remote ref> <remote sha>\")");
    };
    std::vector<std::string_view> fields;
    size_t start = 0;
    for (;;) {
      size_t sp = line.find(' ', start);
      fields.push_back(line.substr(start, sp == std::string_view::npos ? std::string_view::npos : sp - start));
      if (sp == std::string_view::npos) break;
      start = sp + 1;
    }
    if (fields.size() != 4) throw fail(std::to_string(fields.size()) + (fields.size() == 1 ? " field" : " fields") + ", not 4");
    if (fields[0].empty() || fields[2].empty()) throw fail("an empty ref");
    if (has_control(fields[0]) || has_control(fields[2])) throw fail("a control character in a ref");
    if (!is_sha(fields[1])) throw fail("the local sha is not 40 or 64 hex digits");
    if (!is_sha(fields[3])) throw fail("the remote sha is not 40 or 64 hex digits");
    if (fields[1].size() != fields[3].size()) throw fail("the two shas differ in length");
    out.push_back({std::string(fields[0]), lower(fields[1]), std::string(fields[2]), lower(fields[3])});
  }
  return out;
}

std::vector<std::string> commits_to_measure(const std::vector<PushedRef>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs)
    if (!r.deletion() && std::find(out.begin(), out.end(), r.local_sha) == out.end()) out.push_back(r.local_sha);
  return out;
}

// ---------------------------------------------------------------------------
// The green path

const std::vector<std::string> kKeep{".phoenix/", "incidents/"};

namespace {

std::string sha12(const std::string& s) { return s.substr(0, 12); }

std::string paint(bool on, const char* code, const std::string& s) {
  return on ? std::string("\033[") + code + "m" + s + "\033[0m" : s;
}

// "refs/heads/main" -> "main", "refs/tags/v1" -> "v1"; others as they are.
std::string short_ref(const std::string& ref) {
  for (const char* p : {"refs/heads/", "refs/tags/"})
    if (util::starts_with(ref, p)) return ref.substr(std::string(p).size());
  return ref;
}

}  // namespace

std::string push_label(const std::vector<const PushedRef*>& refs, const std::string& commit) {
  std::string names;
  for (const auto* r : refs) names += (names.empty() ? "" : ",") + short_ref(r->local_ref);
  return names + "@" + sha12(commit);
}

std::optional<std::string> find_work_tree(const std::string& cwd) {
  std::error_code ec;
  if (const char* wt = std::getenv("GIT_WORK_TREE"); wt && *wt && fs::is_directory(wt, ec)) return fs::canonical(wt).string();
  for (fs::path p = cwd;; p = p.parent_path()) {
    if (fs::exists(fs::symlink_status(p / ".git", ec))) return p.string();
    if (p == p.root_path() || p.empty()) return std::nullopt;
  }
}

// From one `git status --porcelain=v2 --branch -z -unormal` in `root`;
// nullopt when git cannot say (not installed, fails, output not understood).
std::optional<HeadState> head_state_from_git(const std::string& root) {
  util::ProcessOptions o;
  o.argv = {"git", "--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal"};
  o.cwd = root;
  o.timeout_s = 600;
  o.head_bytes = 1 << 20;
  o.tail_bytes = 0;
  util::ProcessResult r = util::run_process(o);
  if (r.exit_code != 0 || r.output_truncated) return std::nullopt;
  HeadState st;
  st.clean = true;
  bool saw_oid = false;
  const std::string& out = r.output;
  for (size_t pos = 0; pos < out.size();) {
    size_t end = out.find('\0', pos);
    if (end == std::string::npos) end = out.size();
    const std::string_view rec(out.data() + pos, end - pos);
    pos = end + 1;
    if (rec.empty()) continue;
    if (util::starts_with(rec, "# branch.oid ")) {
      std::string oid(rec.substr(13));
      st.head = oid == "(initial)" ? "" : oid;
      saw_oid = true;
    } else if (util::starts_with(rec, "# branch.head ")) {
      std::string name(rec.substr(14));
      st.branch = name == "(detached)" ? "" : name;
    } else if (rec[0] == '#') {
      continue;
    } else {
      // A change. Untracked files under kKeep do not count (Phoenix's own
      // state); anything else, or anything not understood, is for libgit2
      // to judge.
      const bool kept = rec.size() > 2 && rec[0] == '?' &&
                        std::any_of(kKeep.begin(), kKeep.end(), [&](const std::string& k) { return util::starts_with(rec.substr(2), k); });
      if (!kept) st.clean = false;
      if (rec[0] == '2') pos = out.find('\0', pos) == std::string::npos ? out.size() : out.find('\0', pos) + 1;  // the old path
    }
  }
  if (!saw_oid || (!st.head.empty() && st.head.size() != 40 && st.head.size() != 64)) return std::nullopt;
  return st;
}

// git exports these to hooks in some set-ups (a push from a linked
// worktree, `git --git-dir`); a check's own git commands must find the
// repository of the folder they run in — the hook's worktree included —
// so Phoenix's children do not inherit them.
void forget_git_location_env() {
  for (const char* v : {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_IMPLICIT_WORK_TREE"})
    ::unsetenv(v);
}

void print_result(std::ostream& err, bool color, const checks::SenseResult& r, const std::string& where) {
  err << "phoenix: " << (r.ok ? paint(color, "32", "ok ") : paint(color, "31;1", "RED")) << "  " << r.id << "  "
      << r.signal << paint(color, "2", "  (" + std::to_string(r.duration_ms) + " ms)  " + where) << "\n";
  if (r.ok || r.evidence.empty()) return;
  auto lines = util::split_lines(r.evidence);
  size_t from = lines.size() > 30 ? lines.size() - 30 : 0;
  if (from > 0) err << paint(color, "2", "     | ... (" + std::to_string(from) + " lines above)") << "\n";
  for (size_t i = from; i < lines.size(); ++i) err << paint(color, "2", "     | ") << lines[i] << "\n";
}

}  // namespace phoenix::hook
