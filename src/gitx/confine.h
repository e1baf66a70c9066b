// gitx confine: a program Phoenix runs in one tree of its own (a linked
// worktree of the user's repository: the loop's, bisect's, the hook's,
// init's) writes only there.
//
// Such a tree shares the repository's common dir with the user's checkout
// and sits beside it: a setup step, a check or an agent run there can reach
// the config, the hooks, the refs, another checkout's HEAD and index, and
// the files of every other checkout, by absolute path or through git. A
// confined program starts in a user + mount namespace of its own
// (util::ChildNamespace) where
//   - its tree, the tree's own git dir (<common>/worktrees/<name>: its HEAD
//     and index) and the repository's objects (and git-lfs's, when there)
//     are the real ones: what it builds, commits or stages there is real;
//   - the common dir and every other checkout (the user's work tree, their
//     other worktrees, Phoenix's other trees) are overlays over the real
//     folders: it reads them as they are, and what it writes there lands
//     in an upper layer of its own, in a folder under $TMPDIR, which
//     read_back() reads and removes after it ended. So a `git config
//     core.hooksPath` (husky's `prepare`) works for the program and never
//     reaches the repository; a commit the user makes meanwhile is
//     theirs, never compared, never put back.
// read_back() turns the upper layers into lines: what the program changed
// of the repository ("setup changed core.hooksPath to .husky/_; put back",
// "the agent moved refs/heads/main from A to B; put back"), and which files
// of another checkout it wrote ("the agent wrote README.md in the checkout
// /x, not its own tree; kept out").
//
// Needs unprivileged user namespaces with overlay (Linux >= 5.11;
// util::overlay_unavailable_reason()); plan() says why not otherwise, and
// the caller falls back to a fingerprint (gitx/guard.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "util/subprocess.h"

namespace phoenix::gitx {

class TreeConfinement {
 public:
  // The plan for programs run in `tree`, a linked worktree of a repository;
  // or, with `runs_in`, for programs run in that folder beside the
  // repository `tree` belongs to (a fixer's copying sandbox), which alone
  // is theirs. Throws Error saying why it cannot be confined: not a linked
  // worktree, a path overlay cannot name, $TMPDIR inside a checkout, a
  // kernel that refuses.
  static TreeConfinement plan(const std::string& tree, const std::string& runs_in = "");

  TreeConfinement(TreeConfinement&&) noexcept;
  TreeConfinement& operator=(TreeConfinement&&) noexcept;
  ~TreeConfinement();

  // One program's namespace, with its layers in a new folder under $TMPDIR
  // (`layers` is set to it; read_back() removes it). Throws Error when the
  // folder cannot be made.
  util::ChildNamespace child(std::string& layers) const;

  // What the program whose layers these are changed outside its tree, then
  // the layers removed. Refs under `exempt_ref_prefixes` (the run's own)
  // are not told. Never throws.
  struct Found {
    std::vector<std::string> repository;  // config, hooks, refs, HEADs, indexes
    std::vector<std::string> checkouts;   // files written in another checkout
  };
  Found read_back(const std::string& layers, const std::string& who,
                  const std::vector<std::string>& exempt_ref_prefixes) const;

  // The tree and the folders a program there sees through an overlay.
  const std::string& tree() const;
  std::vector<std::string> overlaid() const;

  struct Plan;

 private:
  explicit TreeConfinement(std::unique_ptr<Plan> p);
  std::unique_ptr<Plan> plan_;
};

}  // namespace phoenix::gitx
