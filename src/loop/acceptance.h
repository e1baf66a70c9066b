// A task's own acceptance check, and the files an agent may not change
// while it works on a task (docs/loop.md "Tasks").
//
// While a task is worked on, the loop measures phoenix.json's checks plus
// the task's acceptance check (id "task:<task id>"): the task is ticked
// only when that measurement is green, or when the heal cycle made it green
// (HEALED: a fresh re-run of the acceptance check passed). A red
// acceptance check is red like any other, whatever else is green.
//
// The agent's words and edits to the loop's own files decide nothing: after
// each agent run the tasks file (ticked only by the loop) and the scripts
// the open tasks' acceptance checks run are put back as they were, so an agent cannot
// tick its own box or rewrite its own test into `exit 0`. A fix proposed by
// the heal cycle may not touch them either (engine/guards: a check's
// scripts are its tests, protected).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "loop/tasks.h"

namespace phoenix::loop {

// `cfg` with the task's acceptance check added (a copy of `cfg` when the
// task has none or there is no task). ConfigError when its id is already
// the id of a check in phoenix.json.
config::Config with_acceptance(const config::Config& cfg, const Task* task);

// Paths (relative to `root`) of the files the acceptance check runs that
// exist in `root`: argv words that name a regular file in the tree.
std::vector<std::string> acceptance_scripts(const Task& task, const std::string& root);

// Files read now and put back by restore() when changed (content and mode;
// a file that did not exist is removed again).
class PinnedFiles {
 public:
  PinnedFiles(std::string root, const std::vector<std::string>& rel_paths);
  // Restores every pinned file the agent changed; returns their paths.
  std::vector<std::string> restore() const;

 private:
  struct Pin {
    std::string rel;
    std::optional<std::string> content;  // nullopt: absent
    std::filesystem::perms mode = std::filesystem::perms::none;
  };
  std::string root_;
  std::vector<Pin> pins_;
};

}  // namespace phoenix::loop
