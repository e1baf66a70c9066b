// Measuring a tree through the measurement store (checks/measured.h,
// docs/measured.md): every place Phoenix measures a check — `phoenix
// sense`, DETECTED in `phoenix run` and the hook, the loop's measurements —
// goes through a StoreUse of the tree it measures. A heal's verification
// never does: HEALED is decided by a fresh run (engine/cycle_verify.cc).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "checks/measured.h"
#include "config/config.h"

namespace phoenix::gitx {
class Repo;
}
namespace phoenix::trace {
class Trace;
}

namespace phoenix::engine {

struct FailingSet;
struct Verdict;

// --no-cache given, or PHOENIX_NO_CACHE=1.
bool no_cache(bool flag);

// The store shared by every worktree of `repo`: .phoenix/measured of its
// main work tree (the folder holding the common git directory), or of
// `root` when the repository has no such work tree.
std::string store_dir(const gitx::Repo& repo, const std::string& root);

class StoreUse {
 public:
  // The tree at `root` (HEAD of `repo`), measured by `where` ("run",
  // "sense", "hook", "loop-20261204"). Keyed only when `enabled` and the
  // tree is clean: HEAD exists, no tracked file modified or staged, no
  // untracked file that is not ignored (Phoenix's own folders aside).
  // `trace` (may be null) gets a line per measurement recorded or served.
  StoreUse(const gitx::Repo& repo, const std::string& root, const config::Config& cfg, std::string where, bool enabled,
           trace::Trace* trace);

  // The tree `tree` (a work tree's content as gitx::Repo::workdir_tree
  // gives it, clean or not) at `root`, keyed by that id when `enabled`:
  // the stop hook of an agent session measures the tree the agent left.
  StoreUse(const gitx::Repo& repo, const std::string& root, const config::Config& cfg, std::string where, bool enabled,
           trace::Trace* trace, std::string tree);

  bool keyed() const { return !tree_.empty(); }
  const std::string& tree() const { return tree_; }

  // The store's record of `spec` on this tree when there is one (and the
  // check may be cached); else `fresh()`, recorded when green.
  // A red result is recorded too, with its failing set: never served, it
  // is what a later change on this tree is judged against (engine/verdict.h).
  checks::SenseResult sense(const checks::CheckSpec& spec, const std::function<checks::SenseResult()>& fresh);

  // Records `r`, a fresh measurement of `spec` on this tree (what sense()
  // does with one it ran), when the tree is keyed and the check cached.
  void record(const checks::CheckSpec& spec, const checks::SenseResult& r);

  // `v` judged this tree's red measurement of `spec`: the tests it found
  // flaky leave the record's failing set (what the tree fails is what fails
  // there again), so no later change sees a flake as pre-existing.
  void judged(const checks::CheckSpec& spec, const Verdict& v);

  // What the store says `spec` found on `tree` (any tree of the
  // repository, not only this one), whatever the setup or environment
  // then: a reference's failing set; nullopt when it was never measured.
  std::optional<FailingSet> reference(const checks::CheckSpec& spec, const std::string& tree) const;
  const std::string& dir() const { return dir_; }

 private:
  const std::string& setup_fingerprint();
  long long traced(const std::string& event, const util::Json& data);  // its seq, or -1 when not traced
  std::string root_;
  std::string dir_;
  const config::Config& cfg_;
  std::string where_;
  trace::Trace* trace_;
  std::string tree_;  // "" when not keyed
  std::optional<std::string> setup_;
};

}  // namespace phoenix::engine
