// phoenix-hook: the green pre-push hook in a binary that starts in about a
// millisecond (docs/performance.md "The green path"). The shim
// (hooks/pre-push.in) runs it as `phoenix-hook pre-push [REMOTE URL]` when
// it lies beside the phoenix binary the shim records.
//
// It handles one case itself: every pushed commit is the checked-out HEAD,
// the tree is clean, phoenix.json loads, the hook's checks are all
// command_exit and all pass. It then prints what `phoenix hook run pre-push`
// prints and exits 0. In every other case — no phoenix.json, a config error,
// deletions only, another commit, a dirty tree, a red check, PHOENIX_SKIP,
// a held lock, anything it does not expect — it replaces itself (exec, no
// child) with `phoenix hook run pre-push` with the same arguments, the same
// environment and the same stdin, having printed nothing, so the verdict,
// output and exit code are the full hook's. A red check is thus run again
// by the full hook: checks stop at the first red one here.
//
// It links only phoenix_lite: no libgit2, OpenSSL, SQLite or Boost library.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "checks/check.h"
#include "config/config.h"
#include "hook/hook.h"
#include "util/error.h"
#include "util/lock.h"
#include "util/subprocess.h"
#include "util/term.h"

namespace {

namespace fs = std::filesystem;
using namespace phoenix;

// The environment git gave the hook, as it was: forget_git_location_env()
// changes it for the checks, and the full hook must get it unchanged.
struct SavedEnv {
  std::vector<std::pair<std::string, std::optional<std::string>>> vars;
  void save(std::initializer_list<const char*> names) {
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

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "phoenix: error: " << what << "\n";
  std::exit(kExitRed);
}

// Replaces this process with `<dir of this binary>/phoenix hook run pre-push
// ARGS...`; `input` (git's lines, already read) becomes its stdin through a
// memory file, or stdin is left as it is when nothing was read.
[[noreturn]] void hand_over(int argc, char** argv, const std::optional<std::string>& input) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) fail("phoenix-hook: cannot find its own path (/proc/self/exe): " + ec.message());
  const std::string full = (self.parent_path() / "phoenix").string();
  if (input) {
    int fd = ::memfd_create("phoenix-pre-push-stdin", 0);
    if (fd < 0) fail(std::string("phoenix-hook: memfd_create: ") + std::strerror(errno));
    for (size_t done = 0; done < input->size();) {
      ssize_t n = ::write(fd, input->data() + done, input->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(std::string("phoenix-hook: writing git's stdin to a memory file: ") + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    if (::lseek(fd, 0, SEEK_SET) != 0 || ::dup2(fd, 0) < 0)
      fail(std::string("phoenix-hook: passing git's stdin on: ") + std::strerror(errno));
    ::close(fd);
  }
  std::vector<char*> args{const_cast<char*>(full.c_str()), const_cast<char*>("hook"), const_cast<char*>("run")};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(full.c_str(), args.data());
  fail("phoenix-hook: cannot run " + full + ": " + std::strerror(errno) + " (reinstall Phoenix, or run 'phoenix hook install')");
}

// The green path, or nullopt to hand over to the full hook. Prints nothing
// before it knows the push is green (or interrupted, or out of time: what
// the full hook would print at that point, as it would).
//
// `git status` and the checks run at the same time: Phoenix's one question
// to git then costs nothing beside a check that takes longer than git does.
// The moment git's answer is anything but "the pushed commit is a clean
// HEAD", the check still running is stopped (its process group killed)
// and the full hook takes over; a check's result counts only once git has
// said yes.
std::optional<int> green(const std::vector<hook::PushedRef>& refs, const std::string& root) {
  const auto start = std::chrono::steady_clock::now();
  config::Config cfg;
  try {
    cfg = config::load(root, false);
  } catch (const Error&) {
    return std::nullopt;  // the full hook says why, the same way
  }
  if (cfg.path.empty() || hook::commits_to_measure(refs).empty()) return std::nullopt;
  std::vector<checks::CheckSpec> selected;
  if (cfg.hook.checks.empty()) selected = cfg.checks;
  else
    for (const auto& id : cfg.hook.checks) selected.push_back(*cfg.find(id));  // ids validated by config::load
  if (selected.empty()) return std::nullopt;
  for (const auto& spec : selected)
    if (spec.kind != "command_exit") return std::nullopt;

  std::optional<util::FileLock> lock;
  try {
    lock.emplace(root + "/.phoenix/lock", 0, "this repository");
  } catch (const Error&) {
    return std::nullopt;
  }
  hook::forget_git_location_env();  // before any thread: the environment is shared

  // Readable once git has answered anything but a clean HEAD being pushed.
  const int not_green = ::eventfd(0, EFD_CLOEXEC);
  if (not_green < 0) return std::nullopt;
  std::optional<hook::HeadState> st;
  std::vector<const hook::PushedRef*> pushing;
  bool head_green = false;
  std::thread status([&] {
    try {
      st = hook::head_state_from_git(root);
      head_green = st && st->clean && !st->head.empty();
      for (const auto& r : refs) {
        if (r.deletion()) continue;
        if (!head_green || r.local_sha != st->head) {
          head_green = false;
          break;
        }
        pushing.push_back(&r);
      }
    } catch (const std::exception&) {
      head_green = false;
    }
    if (!head_green) {
      const uint64_t one = 1;
      (void)!::write(not_green, &one, sizeof one);
    }
  });
  struct Joined {
    std::thread& t;
    int fd;
    ~Joined() {
      if (t.joinable()) t.join();
      ::close(fd);
    }
  } joined{status, not_green};

  const auto deadline = start + std::chrono::duration<double>(cfg.hook.timeout_s);
  std::vector<checks::SenseResult> results;
  std::optional<std::string> out_of_time;
  for (const auto& spec : selected) {
    double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      out_of_time = spec.id;
      break;
    }
    checks::CheckSpec capped = spec;
    capped.timeout_s = std::min(spec.timeout_s, left);
    checks::SenseResult r = checks::sense_command_exit(capped, root, not_green);
    const bool red = !r.ok;
    results.push_back(std::move(r));
    if (red) break;
  }
  status.join();
  // Ctrl-C blocks the push whatever git said: handing over would run the
  // checks again.
  const bool interrupted = util::interrupted_signal() != 0 ||
                           std::any_of(results.begin(), results.end(), [](const auto& r) { return r.interrupted; });
  if (!head_green && !interrupted) return std::nullopt;  // another commit, a dirty tree, git could not say

  // The green lines before the first red (or interrupted) check, as the
  // full hook would have printed them before stopping there.
  const std::string where = head_green ? hook::push_label(pushing, st->head) : std::string();
  const bool color = util::term::color_enabled(2);
  std::ostringstream out;
  if (head_green)
    for (const auto& r : results) {
      if (!r.ok) break;
      hook::print_result(out, color, r, where);
    }
  if (interrupted) {
    std::cerr << out.str() << "phoenix: interrupted; push blocked\n";
    return kExitInterrupted;
  }
  if (!results.empty() && !results.back().ok) return std::nullopt;  // red: the full hook blocks or heals
  if (out_of_time) {
    std::cerr << out.str() << "phoenix: hook.timeout_s (" << cfg.hook.timeout_s << " s) ran out before " << *out_of_time
              << " in " << where << "; push blocked\n";
    return kExitRed;
  }
  std::cerr << out.str();
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  // `phoenix-hook pre-push [REMOTE [URL]]`; anything else is the full
  // hook's to judge (and to explain).
  if (argc < 2 || argc > 4 || std::string(argv[1]) != "pre-push") hand_over(argc, argv, std::nullopt);
  if (const char* skip = std::getenv("PHOENIX_SKIP"); skip && std::string(skip) == "1") hand_over(argc, argv, std::nullopt);
  if (::isatty(0) == 1) hand_over(argc, argv, std::nullopt);
  SavedEnv env;
  env.save({"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_IMPLICIT_WORK_TREE"});
  std::optional<std::string> input;
  std::optional<int> code;
  try {
    util::install_signal_handlers();
    std::error_code ec;
    const std::string cwd = fs::canonical(fs::current_path(), ec).string();
    const std::optional<std::string> root = ec ? std::nullopt : hook::find_work_tree(cwd);
    if (root) {
      input.emplace(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
      code = green(hook::parse_pre_push(*input), *root);
    }
  } catch (const std::exception&) {
    code.reset();  // a malformed line, an unexpected error: the full hook's to say
  }
  if (code) {
    std::cerr.flush();
    return *code;
  }
  env.restore();
  hand_over(argc, argv, input);
}
