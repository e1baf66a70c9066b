// phoenix-loop beyond one machine: shards and the merge of what they pushed
// (docs/loop.md "Shards").
//
// `--shard I/N` (I from 1; or JOB_COMPLETION_INDEX + 1 and
// JOB_COMPLETION_COUNT, as a Kubernetes Indexed Job sets them) works only on
// the tasks of shard I, one at a time, on its own branch. Tasks joined by
// `after` (directly or through others) form one group, and a group is never
// split: group k in file order (by its first task) is shard (k mod N) + 1.
// Every task the shard finishes green is published as one commit on
// `phoenix/task-<id>`: parent the shard's tip before the task, tree the
// tip after it with the tasks file as it was (the tick is the merge's to
// make), pushed (forced: the branch is Phoenix's) to the named remote.
//
// `--merge REMOTE` fetches every `phoenix/task-*` branch and takes each,
// in the tasks file's order with `after` respected, through the verified
// merge queue (loop/queue.h) as the change from its parent to it.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gitx/repo.h"
#include "loop/queue.h"
#include "loop/tasks.h"

namespace phoenix::loop {

struct Shard {
  int index = 0;  // 1..count
  int count = 0;
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "I/N" with 1 <= I <= N. Throws UsageError naming `what` and the value.
Shard parse_shard(const std::string& text, const std::string& what = "--shard");

// The shard a Kubernetes Indexed Job's pod is (JOB_COMPLETION_INDEX is
// 0-based), read through `getenv`; nullopt when JOB_COMPLETION_INDEX is
// unset. Throws UsageError naming the variable when one is not a number,
// when JOB_COMPLETION_COUNT is missing, or the index is out of range.
std::optional<Shard> shard_from_env(const std::function<const char*(const char*)>& getenv);

// The indices of the tasks shard `s` works on.
std::set<int> shard_tasks(const std::vector<Task>& tasks, const Shard& s);

// Refuses (Error, exit 1) a remote git cannot reach, before any work:
// "cannot reach remote 'origin': git ls-remote exited 128: ...".
void check_remote(const std::string& root, const std::string& remote);

struct Pushed {
  bool ok = false;
  std::string commit;  // what was (or was to be) pushed
  std::string error;   // git's words, on one line
};

// Publishes a finished task of a shard, done from commit `before` to
// commit `after`: the commit described above on refs/heads/phoenix/task-<id>
// in `repo`, pushed from `root` to `remote`.
Pushed publish_task(gitx::Repo& repo, const std::string& root, const std::string& remote, const Task& task,
                    const std::string& before, const std::string& after, const std::string& tasks_rel,
                    const Shard& shard);

// Pushes local branch `branch` to `remote` (not forced).
Pushed push_branch(const std::string& root, const std::string& remote, const std::string& branch);

struct Fetched {
  std::vector<QueueEntry> entries;  // open tasks with a branch, in file order
  std::vector<std::string> notes;   // branches that were not taken, and why
};

// Fetches `remote`'s phoenix/task-* branches into refs/phoenix/fetched/
// and makes a queue entry (base: the branch's parent) for every open task
// that has one and is not in `queued`. Throws Error when the fetch fails.
Fetched fetch_task_branches(gitx::Repo& repo, const std::string& root, const std::string& remote,
                            const std::vector<Task>& tasks, const std::set<int>& queued);

}  // namespace phoenix::loop
