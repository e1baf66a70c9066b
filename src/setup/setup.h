// setup: gives a tree of Phoenix's own the project's environment.
//
// A tree Phoenix makes (the loop's, bisect's and the hook's persistent
// worktrees, init's fresh tree, a fixer's sandbox) holds tracked files only:
// no build folder, no node_modules, no virtualenv. phoenix.json's `setup`
// steps (config::SetupStep) are run there, in order, with the tree as their
// working directory, before anything is measured in it — and again only
// when the fingerprint changed: the SHA-256 of the steps themselves and of
// every file of the tree (tracked, or untracked and not ignored) that
// matches a step's `inputs`, path and content. The fingerprint is kept in a
// stamp file outside the tree (layout::setup_stamp), written only after every
// step passed and removed before the first step runs, so a failed or
// interrupted setup runs again next time. The stamp also names what the
// steps created that git does not ignore (a build folder missing from
// .gitignore): moving a persistent worktree deletes untracked files, and
// when one of those is gone the steps run again.
//
// Every step runs under a setup::Guard (setup/guard.h): a tree of Phoenix's
// own shares its repository's config, hooks and refs with the user's
// checkout, and what a step changes there (`npm ci` running a `prepare`
// script that sets core.hooksPath) is put back after the step and said on
// stderr (`phoenix: setup changed core.hooksPath to /x; put back`) and in
// Result::put_back.
//
// Output is bounded like a check's; a failed step is its own signal
// ("setup failed: npm ci: exit=1"), never blamed on an agent's patch.
//
// Nothing is reused across trees: each persistent tree is set up once and
// kept warm (its ignored files survive every move), which is what makes a
// later iteration, bisect step or push cost nothing; a build folder records
// absolute source paths (CMake), so one is never copied between trees.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/subprocess.h"

namespace phoenix::setup {

struct Result {
  bool ok = true;
  bool ran = false;          // false: the stamp matched (or no steps), nothing ran
  bool interrupted = false;  // SIGINT/SIGTERM during a step
  std::string step;          // the failing step's argv, joined for display
  std::string signal;        // "setup failed: npm ci: exit=1" (empty when ok)
  std::string evidence;      // the failing step's first error-like lines, then the end of its output
  std::string fingerprint;
  long long duration_ms = 0;
  // What the steps changed in the user's repository and Phoenix put back
  // (setup/guard.h), one line each; already said on stderr.
  std::vector<std::string> put_back;
};

// The fingerprint described above, of `steps` in `tree`.
std::string fingerprint(const std::vector<config::SetupStep>& steps, const std::string& tree);

// Runs `steps` in `tree` unless `stamp_file` holds the tree's current
// fingerprint. `confine` (optional) adjusts each step's ProcessOptions
// before it starts (a sandbox runs them in its own view). `on_step` is told
// of each step as it starts (for progress lines). With no steps: ok, not ran.
Result ensure(const std::vector<config::SetupStep>& steps, const std::string& tree, const std::string& stamp_file,
              const std::function<void(util::ProcessOptions&)>& confine = {},
              const std::function<void(const config::SetupStep&)>& on_step = {});

}  // namespace phoenix::setup
