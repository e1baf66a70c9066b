// Who answers when git runs pre-push in a repository: Phoenix's shim, a
// hook that calls Phoenix, or nothing that does (hook/hook.h installs the
// shim). Lite: the thin binary phoenix-hook says it too, so it uses
// neither libgit2 nor anything else phoenix_lite lacks.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace phoenix::hook {

// Every shim carries this on its second line; nothing else is ours.
inline constexpr std::string_view kShimMarker = "# phoenix-pre-push-shim";

// Whether a hook file's content is a Phoenix shim (any version).
bool is_shim(std::string_view content);
// A direct shim (hook/hook.h render_direct_shim): the program on its first
// line, a copy of phoenix-hook, and the phoenix-hook it was copied from
// (its "# phoenix-hook: " line). Both "" for any other content, a shell
// shim included.
std::string shim_interpreter(std::string_view content);
std::string shim_program_source(std::string_view content);
// Whether `program`, a copy of `source`, is the file `source` is now: same
// size and modification time (the copy is given the source's). false when
// either is missing.
bool program_is_current(const std::string& program, const std::string& source);

// The git directory and the common one of the work tree at `root`, read
// from its .git without git: the .git folder, or the folder a .git file
// names (a linked worktree) and that folder's `commondir`. nullopt when
// they cannot be read.
std::optional<std::pair<std::filesystem::path, std::filesystem::path>> git_dirs(const std::filesystem::path& root);

// husky or lefthook owns the repository's hooks: Phoenix adds itself to
// their configuration instead of replacing their pre-push hook.
struct Manager {
  std::string name;     // "husky" | "lefthook"
  std::string config;   // the file to edit, relative to the work tree
  std::string snippet;  // what to add to it
  std::string then;     // what to run afterwards ("" when nothing)
  // Where the snippet goes, as a sentence's start: "Add this to
  // lefthook.yml", "Add this at the end of the jobs: list under pre-push:
  // in lefthook.yml", "Append this line to .husky/pre-push", ...
  std::string where;
  bool calls_phoenix = false;  // the file already calls Phoenix: nothing to add
};
// husky: a .husky/ folder and core.hooksPath (`hooks_path`, as configured,
// nullopt when unset) naming .husky or .husky/_. lefthook: one of its
// configuration files at the top of the work tree (.yml/.yaml/.toml/.json,
// dotted or not, or under .config/). `phoenix_cmd` is how the snippet calls
// Phoenix ("phoenix" when it is on PATH). The snippet merges into what the
// file has: a lefthook.yml with a top-level pre-push: gets the one job
// entry for its own jobs: list (or commands: map, or a jobs: key when it
// has neither), indented as its entries are; one without gets the whole
// block; a .lefthook.json with "pre-push" gets the job object. An existing
// .husky/pre-push gets the line to append; none, the whole file.
std::optional<Manager> detect_manager(const std::string& workdir, const std::optional<std::string>& hooks_path,
                                      const std::string& phoenix_cmd);

// A line of a hook manager's file that calls Phoenix: what `phoenix hook
// uninstall` names for the user to remove (Phoenix does not edit files
// that are theirs).
struct ManagerCall {
  std::string file;  // relative to the work tree
  int line = 0;      // 1-based
  std::string text;  // the line, trimmed
};
// Every such line in .husky/pre-push, lefthook's configuration files and
// .pre-commit-config.yaml under `workdir`.
std::vector<ManagerCall> manager_calls(const std::string& workdir);

// Who answers when git runs pre-push: the hook git will run is Phoenix's
// shim, or a hook that calls Phoenix (a hand-written one naming
// `hook run pre-push`; husky's or lefthook's hook whose configuration does;
// pre-commit's whose .pre-commit-config.yaml has phoenix-pre-push), or
// nothing that does — then pushes are not checked, and the hook run and
// `phoenix doctor` say so loudly.
struct HookOwner {
  std::string hooks_dir;     // where git takes hooks from (absolute)
  bool from_config = false;  // core.hooksPath names it
  bool calls_phoenix = false;
  std::string how;  // what calls Phoenix, or why nothing there does
  // "git runs hooks from /x (core.hooksPath), which does not call Phoenix:
  // pushes are not checked (...)"; "" when calls_phoenix.
  std::string warning;
};
// `hooks_dir` is where git takes hooks from (gitx::Repo::hooks_dir);
// `hooks_path` core.hooksPath as configured (nullopt
// when unset); `workdir` the top of the work tree.
HookOwner hook_owner(const std::string& workdir, const std::string& hooks_dir,
                     const std::optional<std::string>& hooks_path);
// The same, asking git (`git rev-parse --git-path hooks`, no libgit2) from
// `root`; nullopt when git cannot say.
std::optional<HookOwner> hook_owner_from_git(const std::string& root);
// The same without starting git, when git's configuration cannot have
// moved the hooks: none of the files git reads its configuration from (the
// system's, the user's, the repository's and its worktree's, and every file
// they include) mentions hooksPath, and none is given in the environment
// (`git -c`); the hooks are then `<git common dir>/hooks`. nullopt when
// that cannot be said from the files: ask git.
std::optional<HookOwner> hook_owner_from_files(const std::string& root);
// From the files when they can say, else from git.
std::optional<HookOwner> hook_owner_of(const std::string& root);

}  // namespace phoenix::hook
