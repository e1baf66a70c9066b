// setup guard: what Phoenix runs in a tree of its own (a setup step, a
// check, an agent) changes only that tree; the user's repository and their
// other checkouts are kept as they were, and whatever the user or another
// Phoenix run does meanwhile is never undone (docs/reliability.md, "What a
// program Phoenix runs may change").
//
// While a Guard on a linked worktree is alive, every program started with
// its working directory there is confined to it where the kernel allows
// (gitx/confine.h: the repository's common dir and the other checkouts are
// overlays for it, its writes there read back and told after); everywhere
// else, and where the kernel does not allow (said once on stderr), the
// repository's config and hooks are fingerprinted and put back (gitx/guard.h).
// Changes the program did not make (a commit of the user's, another run's
// heal) are only said, with Phoenix's own refs (layout::own_ref_prefixes)
// left to Phoenix.
//
// A change is told one way: a line on stderr (`phoenix: setup changed
// core.hooksPath to /x; put back`) and, where the caller has a trace, a
// `guard.put_back` event with the same words.
//
// PHOENIX_CONFINE=0 in the environment turns confinement off (the
// fingerprint then answers alone, as where the kernel refuses).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace phoenix::trace {
class Trace;
}

namespace phoenix::setup {

class Guard {
 public:
  // Guards the repository `tree` belongs to while the programs run there.
  // A tree outside any repository (or one that cannot be read) is not
  // guarded: a line on stderr says why when it is a repository.
  // `also_exempt` names more refs (full names or prefixes) that are the
  // run's own besides Phoenix's: a loop branch outside refs/heads/phoenix/
  // (--branch). `tree` is a tree of Phoenix's own, whose programs are
  // confined to it; or, with `runs_in`, the user's checkout, whose
  // programs run in that folder outside the repository (a fixer's copying
  // sandbox) and are confined to it.
  explicit Guard(const std::string& tree, const std::vector<std::string>& also_exempt = {},
                 const std::string& runs_in = "");

  // Tells what changed since the constructor (each call compares with the
  // state then; a confined program's writes are told once, by the first
  // call after it ended) and returns the lines. `who` starts each line
  // ("setup", "the check unit", "the agent"). With `wrote_elsewhere`, the
  // lines about files written in another checkout (kept out) are also put
  // there: an agent's attempt that did so fails.
  std::vector<std::string> restore(const std::string& who, trace::Trace* trace = nullptr,
                                   std::vector<std::string>* wrote_elsewhere = nullptr) const;

  // True when what runs in the tree is confined to it.
  bool confined() const;

  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  struct Shared;
  struct Confined;

 private:
  // Without confinement, guards of this process alive on one repository at
  // once share the fingerprint the first of them took: a guard taken while
  // another thread's program has changed the config (two workers' setups
  // at once) must not hold that change as the state to put back.
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<Confined> confined_;
  // What was left as it is and said: not said again by a later restore().
  mutable std::set<std::string> said_;
};

// True for a line of restore() about a change the guard left as it is:
// made while the program ran, not by it (or, unconfined, by whom it cannot
// tell). Such a change is never the program's to answer for.
bool left_as_it_is(const std::string& line);

// Says `lines` the guard's way (stderr, and the trace when given): for a
// caller that holds lines from elsewhere (setup::Result::put_back).
void tell_put_back(const std::vector<std::string>& lines, trace::Trace* trace);

}  // namespace phoenix::setup
