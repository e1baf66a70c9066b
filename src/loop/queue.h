// The verified merge queue of phoenix-loop --workers N.
//
// A task whose checks are green in its worker's tree is queued as its
// worker's commit and the loop branch's tip the worker started from (its
// base). The loop takes one entry at a time: the change base..commit is
// merged onto the loop branch's current tip in memory (a three-way merge,
// gitx::Repo::merge_onto), the merged tree is checked out in the loop's own
// worktree with the task ticked, and every check is measured on that
// combined tree. Only a green measurement commits it
// ("phoenix-loop: <task>", parent the tip), after which the loop moves its
// branch and blesses known-good: the branch never holds a red commit. A
// conflict or a red combined tree leaves the tip as it was (the worktree is
// reset to it) and says why; the loop sends the task back to a worker on
// the new tip, and after kMergeTries gives up on it with an incident note
// that shows both sides (merge_incident).
//
// Queued commits are kept alive under refs/phoenix/queue/<task id> until
// merged or given up, and the entries are written to .phoenix/loop-run.json,
// so a loop killed with the queue full carries on with --resume: an entry
// whose task is already ticked on the branch was merged before the crash
// and is dropped, never merged twice.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loop/tree.h"
#include "util/json.h"

namespace phoenix::loop {

// Merge attempts of one task (its first run included) before it is skipped.
inline constexpr int kMergeTries = 3;

struct QueueEntry {
  int index = 0;       // the task's index in the tasks file
  std::string id;      // "t<index+1>"
  std::string title;   // the task's text
  std::string base;    // the loop branch's tip the worker started from
  std::string commit;  // the worker's green commit
  int tries = 1;       // merge attempts so far, this one included
  std::string queued_at;
  // Lines after the subject of the merged commit ("Phoenix-Task: t2",
  // "Phoenix-Attempt: refs/phoenix/attempts/...", "Phoenix-Healed-By: ...").
  // Not kept in the state files: a resumed entry merges without them.
  std::string trailers;
};

util::Json to_json(const QueueEntry& e);
// Throws phoenix::Error naming the field when `j` is not an entry.
QueueEntry queue_entry_from_json(const util::Json& j);
// <layout::kQueuePrefix><id>: keeps a queued commit alive.
std::string queue_ref(const std::string& id);

struct MergeResult {
  enum class Kind { kMerged, kConflict, kRed, kInterrupted, kSetupFailed };
  Kind kind = Kind::kMerged;
  std::string tip;                     // the loop branch's tip it was merged onto
  std::string commit;                  // kMerged: the new tip
  std::vector<std::string> conflicts;  // kConflict: the paths
  Measure measure;                     // kRed, kSetupFailed: what the combined tree measured
  long long duration_ms = 0;
};

// The kind as a word: "merged", "conflict", "red", "interrupted", "setup-failed".
const char* kind_name(MergeResult::Kind k);

// One entry through the queue, in the loop's worktree `tree`, whose HEAD is
// the loop branch's tip. `tick` marks the task done in the work tree (after
// the merged tree is checked out); `measure` measures every check there;
// `undo` puts back what `tick` changed after the reset to the tip (an
// untracked tasks file). Moves no ref but the worktree's HEAD (on success).
MergeResult merge_entry(Tree& tree, const QueueEntry& entry, const std::vector<std::string>& keep,
                        const std::function<void()>& tick, const std::function<Measure()>& measure,
                        const std::function<void()>& undo);

// Writes the note for a task the queue gave up on into `incidents_dir`
// (incidents/YYYY-MM-DD-HH-MM[-N].md): the task, why (the conflicting paths
// or the red checks with their evidence), both sides (the loop branch's
// commits since the task's base and their diff; the task's commit and its
// diff) and where the task's work is kept (`kept_ref`). Returns its path.
std::string merge_incident(const std::string& incidents_dir, const gitx::Repo& repo, const QueueEntry& entry,
                           const MergeResult& result, const std::string& kept_ref);

}  // namespace phoenix::loop
