// gitx guard: a fingerprint of what a program Phoenix runs may not change
// in the user's repository, taken before it runs and compared after.
//
// A tree of Phoenix's own (a linked worktree: init's, bisect's, the hook's,
// the loop's) shares its repository's common dir with the user's checkout:
// its config, its hooks folder, its refs. A setup step (`npm ci`, whose
// `prepare` script runs `git config core.hooksPath ...`), a check or an
// agent run there could change what every later git command in the user's
// checkout does. Where the kernel allows, such a program is confined
// (gitx/confine.h): its writes there never reach the repository. This
// fingerprint is the other half:
//   - the common dir's `config` file (bytes, mode, and its entries, so a
//     change is told by key: core.hooksPath above all);
//   - the hooks folders git could run from: <common dir>/hooks and the
//     folder core.hooksPath names when it is inside the repository (its
//     work tree or its common dir); each entry's bytes and mode, or a
//     symbolic link's target;
//   - every ref outside the caller's `exempt_ref_prefixes` (Phoenix's own,
//     and gitx's temporary refs/heads/phoenix-tmp/), direct or symbolic,
//     and the main checkout's HEAD.
// restore() compares the state now with the fingerprint.
//   - `confined`: the program could not have made any change found, so
//     each is only said: "refs/heads/main moved from A to B while setup
//     ran, not by setup: left as it is" (the user committed meanwhile,
//     another Phoenix run healed).
//   - not confined (the kernel allows no namespaces here): the config and
//     the hooks, which no person changes behind a running program, are put
//     back ("setup changed core.hooksPath to /x; put back"); refs and HEAD
//     are only said ("... while setup ran: left as it is"), since a
//     person's commit, amend or switch cannot be told from the program's.
// Index and work tree files are not fingerprinted: a confined program
// cannot reach them, and an unconfined one's are not told from a person's.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace phoenix::gitx {

class RepoGuard {
 public:
  // The fingerprint of the repository `path` belongs to (a work tree of
  // any of its worktrees, or a git dir). A `path` outside any repository
  // gives an inert guard: restore() returns nothing. Refs under
  // `exempt_ref_prefixes` ("refs/phoenix/") are the caller's own, left out.
  static RepoGuard take(const std::string& path, const std::vector<std::string>& exempt_ref_prefixes);

  // A guard of nothing: restore() returns nothing.
  static RepoGuard none();

  RepoGuard(RepoGuard&&) noexcept;
  RepoGuard& operator=(RepoGuard&&) noexcept;
  ~RepoGuard();

  bool active() const { return state_ != nullptr; }
  // The repository's common dir ("" when inert).
  std::string common_dir() const;

  // One line per change since take() (see above), each naming `who`
  // ("setup", "the agent"). Never throws. May be called more than once;
  // each call compares with the fingerprint taken by take().
  std::vector<std::string> restore(const std::string& who, bool confined) const;

  struct State;

 private:
  RepoGuard();
  std::unique_ptr<State> state_;
};

}  // namespace phoenix::gitx
