// phoenix-hook: the green pre-push hook in a binary that starts in about a
// millisecond (docs/performance.md "The green path"). git runs it two ways:
// - as the interpreter of the direct shim (hooks/pre-push-direct.in, whose
//   first line is `#!<this binary>`): `phoenix-hook <hooks dir>/pre-push
//   [REMOTE URL]`, with no shell before it;
// - from the shell shim (hooks/pre-push.in) as `phoenix-hook pre-push
//   [REMOTE URL]`, when it lies beside the phoenix binary the shim records.
//
// It handles one case itself (hook::run_green, hook/green.h): every pushed
// commit is the checked-out HEAD, the tree is clean, phoenix.json loads, the
// hook's checks are all command_exit and all pass. It then prints what
// `phoenix hook run pre-push` prints and exits 0. In every other case — no
// phoenix.json, a config error, deletions only, another commit, a dirty
// tree, a red check, PHOENIX_SKIP, a held lock, anything it does not expect
// — it replaces itself (exec, no child) with `phoenix hook run pre-push`
// with the same arguments, the same environment and the same stdin, having
// printed nothing, so the verdict, output and exit code are the full hook's.
// At a red check of a clean HEAD it stops, and hands what it measured to
// the full hook (hook::hand_measured), which does not run those checks
// again. A push whose remote end a push from here put there past the hook
// (hook/runs.h) is handed over too, for the full hook to name.
//
// It links only phoenix_lite: no libgit2, OpenSSL, SQLite or Boost library.
#include "cli/hook_main.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hook/green.h"
#include "hook/owner.h"
#include "hook/pushed_refs.h"
#include "layout/paths.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/signals.h"

namespace phoenix::cli {

namespace {

namespace fs = std::filesystem;

// The environment git gave the hook, as it was: forget_git_location_env()
// changes it for the checks, and the full hook must get it unchanged.
struct SavedEnv {
  std::vector<std::pair<std::string, std::optional<std::string>>> vars;
  void save(const std::vector<const char*>& names) {
    for (const char* n : names) {
      const char* v = std::getenv(n);
      vars.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  void restore() const {
    for (const auto& [n, v] : vars) {
      if (v) ::setenv(n.c_str(), v->c_str(), 1);
      else ::unsetenv(n.c_str());
    }
  }
};

// What the hook says goes straight to stderr: phoenix-hook starts no C++
// stream (hook/green.h, run_green).
void say(const std::string& text) { util::write_all(2, text); }

// git's lines, all of stdin.
std::string read_stdin() {
  std::string in;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return in;
    in.append(buf, static_cast<size_t>(n));
  }
}

[[noreturn]] void fail(const std::string& what) {
  say("phoenix: error: " + what + "\n");
  std::_Exit(kExitRed);
}

// The phoenix the hook hands over to: beside this binary, or for a direct
// shim's copy, beside the phoenix-hook it was copied from (set once, by
// phoenix_hook_main). `hook_file` is the direct shim, "" otherwise.
std::string g_full;
std::string g_hook_file;

std::string full_phoenix() {
  if (!g_full.empty()) return g_full;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) fail("phoenix-hook: cannot find its own path (/proc/self/exe): " + ec.message());
  return (self.parent_path() / "phoenix").string();
}

// Replaces this process with `<full_phoenix()> hook run pre-push
// ARGS...`; `input` (git's lines, already read) becomes its stdin through a
// memory file, or stdin is left as it is when nothing was read.
[[noreturn]] void hand_over(int argc, char* const* argv, const std::optional<std::string>& input) {
  const std::string full = full_phoenix();
  if (input) {
    int fd = ::memfd_create("phoenix-pre-push-stdin", 0);
    if (fd < 0) fail(std::string("phoenix-hook: memfd_create: ") + std::strerror(errno));
    if (!util::write_all(fd, *input))
      fail(std::string("phoenix-hook: writing git's stdin to a memory file: ") + std::strerror(errno));
    if (::lseek(fd, 0, SEEK_SET) != 0 || ::dup2(fd, 0) < 0)
      fail(std::string("phoenix-hook: passing git's stdin on: ") + std::strerror(errno));
    ::close(fd);
  }
  std::vector<char*> args{const_cast<char*>(full.c_str()), const_cast<char*>("hook"), const_cast<char*>("run")};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(full.c_str(), args.data());
  // What the shell shim says of a binary that is gone.
  if (!g_hook_file.empty() && (errno == ENOENT || errno == EACCES)) {
    say("phoenix: the hook's binary " + full + " is gone; reinstall with 'phoenix hook install' or remove " +
        g_hook_file + "\n");
    std::_Exit(kExitRed);
  }
  fail("phoenix-hook: cannot run " + full + ": " + std::strerror(errno) +
       " (reinstall Phoenix, or run 'phoenix hook install')");
}

// Run by the kernel for the direct shim: argv[1] is the hook file git ran,
// and its content names the phoenix-hook this binary was copied from. The
// file must be a shim (nothing else makes this binary an interpreter on
// purpose); "" when it is not.
std::string direct_shim_source(const char* arg) {
  const std::string path(arg);
  if (path == "pre-push" || fs::path(path).filename() != "pre-push") return "";
  std::optional<std::string> content = util::read_file_if_exists(path);
  return content ? hook::shim_program_source(*content) : "";
}

[[noreturn]] void refuse_unchained(const std::string& hook_file) {
  const std::string chained = hook_file + layout::kChainedHookSuffix;
  say("phoenix: " + chained + " (a pre-push hook kept when Phoenix was installed) is not run by " + hook_file +
      "; run 'phoenix hook install' again so that it runs first; push blocked\n");
  std::_Exit(kExitRed);
}

}  // namespace

int phoenix_hook_main(int argc, char** argv) {
  // The direct shim: `<copy> <hooks dir>/pre-push [REMOTE [URL]]` becomes
  // `phoenix-hook pre-push [REMOTE [URL]]`, handing over to the phoenix
  // beside the copy's source. A copy that is not that source as it is now
  // (Phoenix upgraded, rebuilt or removed since the install) decides
  // nothing: the full hook runs, and refreshes the copy.
  std::vector<char*> args(argv, argv + argc);
  static char kPrePush[] = "pre-push";
  bool stale = false;
  if (argc >= 2 && argc <= 4)
    if (const std::string source = direct_shim_source(argv[1]); !source.empty()) {
      g_hook_file = argv[1];
      std::error_code ec;
      if (fs::exists(fs::symlink_status(g_hook_file + layout::kChainedHookSuffix, ec))) refuse_unchained(g_hook_file);
      g_full = (fs::path(source).parent_path() / "phoenix").string();
      stale = !hook::program_is_current("/proc/self/exe", source);
      args[1] = kPrePush;
    }
  argv = args.data();
  if (stale) hand_over(argc, argv, std::nullopt);
  // `phoenix-hook pre-push [REMOTE [URL]]`; anything else is the full
  // hook's to judge (and to explain).
  if (argc < 2 || argc > 4 || std::string(argv[1]) != "pre-push") hand_over(argc, argv, std::nullopt);
  if (const char* skip = std::getenv("PHOENIX_SKIP"); skip && std::string(skip) == "1")
    hand_over(argc, argv, std::nullopt);
  if (::isatty(0) == 1) hand_over(argc, argv, std::nullopt);
  SavedEnv env;
  env.save(hook::git_location_env());
  std::optional<std::string> input;
  std::optional<int> code;
  std::string said;  // what run_green says, written once it has decided
  try {
    util::install_signal_handlers();
    std::error_code ec;
    const std::string cwd = fs::canonical(fs::current_path(), ec).string();
    const std::optional<std::string> root = ec ? std::nullopt : hook::find_work_tree(cwd);
    if (root) {
      input.emplace(read_stdin());
      code = hook::run_green(hook::parse_pre_push(*input), *root, argc > 2 ? argv[2] : "", said);
    }
  } catch (const std::exception&) {
    code.reset();  // a malformed line, an unexpected error: the full hook's to say
  }
  if (code) {
    // Everything of this run is closed and written; what exit() would add
    // is time the push waits for.
    say(said);
    std::_Exit(*code);
  }
  env.restore();
  hand_over(argc, argv, input);
}

}  // namespace phoenix::cli
