// gitx guard: what a program Phoenix runs may not change in the user's
// repository, taken before it runs and put back after.
//
// A tree of Phoenix's own (a linked worktree: init's, bisect's, the hook's,
// the loop's) shares its repository's common dir with the user's checkout:
// its config, its hooks folder, its refs. A setup step (`npm ci`, whose
// `prepare` script runs `git config core.hooksPath ...`), a check or an
// agent run there can change what every later git command in the user's
// checkout does. A RepoGuard is a fingerprint of that shared state:
//   - the common dir's `config` file (bytes, mode, and its entries, so a
//     change is reported by key: core.hooksPath above all);
//   - the hooks folders git could run from: <common dir>/hooks and the
//     folder core.hooksPath names when it is inside the repository (its
//     work tree or its common dir); each entry's bytes and mode, or a
//     symbolic link's target;
//   - every ref outside the caller's `exempt_ref_prefixes` (Phoenix's own),
//     direct or symbolic, and the main checkout's HEAD;
//   - the main checkout's index: its entries (path, stage, mode, blob),
//     not its stat data, which a plain `git status` refreshes.
// restore() compares the state now with the fingerprint, puts back what
// changed (config first, then hooks, HEAD, refs, index) and returns one line
// per change, e.g. "setup changed core.hooksPath to /x; put back".
//
// Known limit: a change made meanwhile by someone else (a person's commit
// in their checkout during a long setup step) is put back too, and reported
// with both values; the reflog keeps the moved ref's value.
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
  // Without `with_index` the checkout's index is not read (a long run
  // never puts it back, and reading it costs a pass over every entry).
  static RepoGuard take(const std::string& path, const std::vector<std::string>& exempt_ref_prefixes,
                        bool with_index = true);

  // A guard of nothing: restore() returns nothing.
  static RepoGuard none();

  RepoGuard(RepoGuard&&) noexcept;
  RepoGuard& operator=(RepoGuard&&) noexcept;
  ~RepoGuard();

  bool active() const { return state_ != nullptr; }
  // The repository's common dir ("" when inert).
  std::string common_dir() const;

  // Puts back what differs from the fingerprint; one line per change, each
  // starting with `who` ("setup", "the agent"), ending "; put back" (or
  // "; removed" for what was not there, or "; could not put back: WHY").
  // Never throws. May be called more than once; each call compares with
  // the fingerprint taken by take().
  //
  // `user_works`: the program ran long (an agent's minutes, a fingerprint
  // shared that long): the user may have worked in their checkout
  // meanwhile. Then only what no person's git command does behind a
  // program is put back: the config and the hooks, a ref deleted or moved
  // to a commit that does not descend from where it was (a rewind, a
  // reset). A branch moved forward or created, the checkout's HEAD (a
  // switch) and its index (a `git add`) are left as they are.
  std::vector<std::string> restore(const std::string& who, bool user_works = false) const;

  struct State;

 private:
  RepoGuard();
  std::unique_ptr<State> state_;
};

}  // namespace phoenix::gitx
