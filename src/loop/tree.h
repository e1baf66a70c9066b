// What the loop's parts share about a tree they work in: the loop's own
// worktree (the one that moves the loop branch) or a worker's.
#pragma once

#include <string>
#include <vector>

#include "checks/check.h"
#include "config/config.h"
#include "engine/verdict.h"
#include "gitx/repo.h"

namespace phoenix::loop {

// A worktree of Phoenix's own outside the user's work tree
// (layout::worktree_path), named for its setup stamp.
struct Tree {
  std::string path;
  std::string name;
  gitx::Repo* repo = nullptr;
  // The checks measured and healed there: phoenix.json's plus the task's
  // acceptance check (loop/acceptance.h); nullptr: the loop's current ones.
  const config::Config* cfg = nullptr;
};

// One measurement of every check in a tree, after its setup steps.
struct Measure {
  std::vector<checks::SenseResult> results;
  bool green = true;             // every check that counts is green
  std::vector<std::string> red;  // ids of red checks that count
  // The verdict of each red check, and of each green one that fixed a
  // known red test (engine/verdict.h): what the change brought, what was
  // let by (known red, flaky), what it also fixed.
  std::vector<engine::Verdict> verdicts;
  bool interrupted = false;
  std::string setup_failed;  // the setup steps failed: nothing was measured
};

}  // namespace phoenix::loop
