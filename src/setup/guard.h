// setup guard: the user's repository kept as it was around a program
// Phoenix runs in a tree of its own (a setup step, a check, an agent).
//
// A thin layer over gitx::RepoGuard (gitx/guard.h: the fingerprint of the
// shared config, hooks folders, refs and the checkout's index, and how a
// change is put back) with Phoenix's own refs (layout::own_ref_prefixes)
// left to Phoenix, and the one way a change is told: a line on stderr,
// `phoenix: setup changed core.hooksPath to /x; put back`, and, where the
// caller has a trace, a `guard.put_back` event with the same words.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gitx/guard.h"

namespace phoenix::trace {
class Trace;
}

namespace phoenix::setup {

class Guard {
 public:
  // The fingerprint of the repository `tree` belongs to. A tree outside any
  // repository (or one that cannot be read) is not guarded: a line on
  // stderr says why when it is a repository. `also_exempt` names more refs
  // (full names or prefixes) that the program may move besides Phoenix's
  // own: a loop branch outside refs/heads/phoenix/ (--branch).
  //
  // `long_run`: what runs is an agent that may work for many minutes while
  // the user works in their checkout; restore() then leaves what a person
  // does meanwhile (gitx::RepoGuard::restore's user_works). A fingerprint
  // shared with another guard for over kUserWorksAfter is treated the same.
  explicit Guard(const std::string& tree, const std::vector<std::string>& also_exempt = {}, bool long_run = false);

  // Puts back what changed since the constructor (each call compares with
  // that fingerprint), says each change as above, and returns the lines.
  // `who` starts each line ("setup", "the check unit", "the agent").
  std::vector<std::string> restore(const std::string& who, trace::Trace* trace = nullptr) const;

  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  struct Shared;

 private:
  // Guards of this process alive on one repository at once share the
  // fingerprint the first of them took: a guard taken while another
  // thread's program has changed the config (two workers' setups at once)
  // must not hold that change as the state to put back.
  std::shared_ptr<Shared> shared_;
  bool long_run_ = false;
};

// Says `lines` the guard's way (stderr, and the trace when given): for a
// caller that holds lines from elsewhere (setup::Result::put_back).
void tell_put_back(const std::vector<std::string>& lines, trace::Trace* trace);

}  // namespace phoenix::setup
