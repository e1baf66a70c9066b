// Helpers for Phoenix's tests: throwaway directories, real git repositories
// and real child processes (through Phoenix's own runner).
#pragma once

#include <string>
#include <vector>

#include "util/json.h"
#include "util/subprocess.h"

namespace phoenix::test {

// True in a build under AddressSanitizer (scripts/test.sh --sanitize), whose
// shadow memory and quarantine make a bound on peak memory meaningless; the
// plain suite checks those bounds.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// A fresh directory under $TMPDIR, removed (recursively) on destruction.
class ScopedTempDir {
 public:
  ScopedTempDir();
  ~ScopedTempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Runs argv in `cwd` and returns the result (output is stdout+stderr).
util::ProcessResult run(const std::vector<std::string>& argv, const std::string& cwd = "",
                        const std::vector<std::pair<std::string, std::string>>& env = {}, double timeout_s = 120);

// Runs git in `repo`; fails the current test (ADD_FAILURE) when it exits non-zero.
std::string git(const std::string& repo, const std::vector<std::string>& args);

// `git init` + a user identity in `dir`; returns dir.
// What the scripted agent's if-prompt guards look for: the loop's prompt
// puts the task right after this line (templates/prompt-task.md); only the
// heal harness's prompt says the second (templates/prompt.md).
inline const std::string kTaskIs = "then stop:\\n\\n";
inline const std::string kHealPrompt = "Fix a failing check";

std::string init_repo(const std::string& dir);

// Writes `content` to dir/rel, creating folders.
void write(const std::string& dir, const std::string& rel, const std::string& content);
std::string read(const std::string& path);

// `git add -A && git commit -m msg` in repo; returns the new HEAD sha.
std::string commit_all(const std::string& repo, const std::string& msg);

// `s` without trailing newlines, carriage returns and spaces: a command's
// one line of output.
std::string trim(std::string s);
// `git rev-parse REV` in repo: the full sha.
std::string rev_parse(const std::string& repo, const std::string& rev);
// `git status --porcelain -uall` in repo: one line per file, untracked
// folders expanded.
std::string porcelain(const std::string& repo);

// What a program Phoenix runs may not change in a user's repository
// (gitx/guard.h), as text to compare before and after: the common dir's
// config file, the files of its hooks folder, every ref outside
// refs/phoenix/ and refs/heads/phoenix/, HEAD, and the index's entries.
std::string repo_control_state(const std::string& repo);
// A `sh -c` script that changes all of that through `git_cmd` ("git" in a
// tree sharing the repository, "git -C '<repo>'" from elsewhere):
// core.hooksPath to /tmp/x, user.email to x, a pre-push hook in the common
// dir's hooks folder, refs/heads/main to HEAD~1 — and refs/phoenix/mine,
// which is Phoenix's to keep.
std::string hostile_git_script(const std::string& git_cmd);
// The lines a guard prints for that script's changes.
std::vector<std::string> hostile_git_put_back_lines(const std::string& who);

// Runs the built phoenix binary in `cwd`: exit code and stdout+stderr.
struct CliRun {
  int code;
  std::string out;
};
CliRun run_phoenix(const std::string& cwd, std::vector<std::string> args, double timeout_s = 120,
                   const std::vector<std::pair<std::string, std::string>>& env = {});

// Paths of built programs.
std::string phoenix_bin();
std::string phoenix_loop_bin();
std::string test_tool(const std::string& name);  // tests/tools/<name>.cc, built
std::string fixtures_dir();

// --- phoenix-loop end to end (loop_*_test.cc) ----------------------------
// A fresh repository at `dir`: src.txt says "fine", .phoenix/ and incidents/
// are ignored, TASKS.md holds `tasks_md`; nothing committed. Returns `dir`.
std::string init_loop_repo(const std::string& dir, const std::string& tasks_md);
// A check of phoenix.json that is red while `target` says BROKEN; the agent
// may edit `target` when `editable`.
util::Json broken_check(const std::string& id, const std::string& target, bool editable = true);
// phoenix.json's "harness": the scripted agent (tests/tools) running `script`.
util::Json scripted_harness(const std::string& script);
// phoenix.json's "loop": TASKS.md, a 50 ms heartbeat, `no_progress_limit`,
// then the keys of `extra` over those.
util::Json loop_section(int no_progress_limit, const util::Json& extra);
// Runs the built phoenix-loop in `repo`: exit code and stdout+stderr.
CliRun run_loop(const std::string& repo, std::vector<std::string> args, double timeout_s = 120);
// .phoenix/loop-state.json of `repo`, parsed.
util::Json loop_state(const std::string& repo);

}  // namespace phoenix::test
