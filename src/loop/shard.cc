#include "loop/shard.h"

#include <map>
#include <numeric>

#include "gitx/remote.h"
#include "layout/layout.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::loop {

namespace {

constexpr double kGitTimeoutS = 600;
constexpr const char* kWhoNeedsGit = "phoenix-loop's shards and merge use it to reach the remote";

// A whole decimal number in [lo, hi], or nullopt.
std::optional<int> whole(const std::string& s, int lo, int hi) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  int v = std::stoi(s);
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

// Union-find over task indices.
int root_of(std::vector<int>& parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

// `git push` of one refspec; its outcome (and git's words on failure) into `p`.
void push(const std::string& root, const std::string& remote, const std::string& refspec, Pushed& p) {
  util::ProcessResult r = gitx::run_git(root, {"push", "--quiet", remote, refspec}, kGitTimeoutS, kWhoNeedsGit);
  p.ok = r.exit_code == 0;
  if (!p.ok) p.error = "git push exited " + std::to_string(r.exit_code) + ": " + gitx::git_output_tail(r.output);
}

}  // namespace

Shard parse_shard(const std::string& text, const std::string& what) {
  size_t slash = text.find('/');
  std::optional<int> n = slash == std::string::npos ? std::nullopt : whole(text.substr(slash + 1), 1, 100000);
  std::optional<int> i = slash == std::string::npos ? std::nullopt : whole(text.substr(0, slash), 1, 100000);
  if (!n || !i) throw UsageError("phoenix-loop: " + what + " '" + text + "': expected I/N, e.g. 2/3 (I from 1 to N)");
  if (*i > *n)
    throw UsageError("phoenix-loop: " + what + " '" + text + "': shard " + std::to_string(*i) + " of " +
                     std::to_string(*n) + " does not exist (I from 1 to N)");
  return Shard{*i, *n};
}

std::optional<Shard> shard_from_env(const std::function<const char*(const char*)>& getenv) {
  const char* index = getenv("JOB_COMPLETION_INDEX");
  if (!index) return std::nullopt;
  const char* count = getenv("JOB_COMPLETION_COUNT");
  if (!count)
    throw UsageError(
        "phoenix-loop: JOB_COMPLETION_INDEX is set but JOB_COMPLETION_COUNT is not: set it to the Job's "
        "completions, or pass --shard I/N");
  std::optional<int> n = whole(count, 1, 100000);
  if (!n)
    throw UsageError(std::string("phoenix-loop: JOB_COMPLETION_COUNT '") + count + "' is not a whole number >= 1");
  std::optional<int> i = whole(index, 0, *n - 1);
  if (!i)
    throw UsageError(std::string("phoenix-loop: JOB_COMPLETION_INDEX '") + index + "' is not a number from 0 to " +
                     std::to_string(*n - 1) + " (JOB_COMPLETION_COUNT is " + count + ")");
  return Shard{*i + 1, *n};
}

std::set<int> shard_tasks(const std::vector<Task>& tasks, const Shard& s) {
  std::vector<int> parent(tasks.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::map<std::string, int> by_id;
  for (const auto& t : tasks) by_id[t.id()] = t.index;
  for (const auto& t : tasks)
    for (const auto& a : t.after)
      if (auto it = by_id.find(a); it != by_id.end()) parent[root_of(parent, t.index)] = root_of(parent, it->second);
  // Groups numbered by their first task in file order.
  std::map<int, int> group_of_root;
  std::set<int> mine;
  for (const auto& t : tasks) {
    int r = root_of(parent, t.index);
    auto [it, fresh] = group_of_root.emplace(r, static_cast<int>(group_of_root.size()));
    if (it->second % s.count + 1 == s.index) mine.insert(t.index);
  }
  return mine;
}

void check_remote(const std::string& root, const std::string& remote) {
  if (!gitx::is_remote_name(remote)) throw UsageError("phoenix-loop: '" + remote + "' is not a remote name or URL");
  util::ProcessResult r = gitx::run_git(root, {"ls-remote", "--heads", remote}, kGitTimeoutS, kWhoNeedsGit);
  if (r.exit_code != 0)
    throw Error("cannot reach remote '" + remote + "': git ls-remote exited " + std::to_string(r.exit_code) + ": " +
                gitx::git_output_tail(r.output));
}

Pushed publish_task(gitx::Repo& repo, const std::string& root, const std::string& remote, const Task& task,
                    const std::string& before, const std::string& after, const std::string& tasks_rel,
                    const Shard& shard) {
  Pushed p;
  const std::string branch = layout::task_branch(task.id());
  p.commit = repo.squash(
      before, after, {tasks_rel},
      "phoenix-loop: " + task.title + "\n\nPhoenix-Task: " + task.id() + "\nPhoenix-Shard: " + shard.text() + "\n");
  repo.write_ref("refs/heads/" + branch, p.commit, "phoenix-loop: task done in shard " + shard.text());
  push(root, remote, "+" + p.commit + ":refs/heads/" + branch, p);
  return p;
}

Pushed push_branch(const std::string& root, const std::string& remote, const std::string& branch) {
  Pushed p;
  push(root, remote, "refs/heads/" + branch + ":refs/heads/" + branch, p);
  return p;
}

Fetched fetch_task_branches(gitx::Repo& repo, const std::string& root, const std::string& remote,
                            const std::vector<Task>& tasks, const std::set<int>& queued) {
  if (!gitx::is_remote_name(remote)) throw UsageError("phoenix-loop: '" + remote + "' is not a remote name or URL");
  for (const auto& old : repo.list_refs(layout::kFetchedPrefix)) repo.delete_ref(old.name);
  util::ProcessResult r =
      gitx::run_git(root,
                    {"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
                     "+refs/heads/" + layout::task_branch("*") + ":" + layout::kFetchedPrefix + "task-*"},
                    kGitTimeoutS, kWhoNeedsGit);
  if (r.exit_code != 0)
    throw Error("cannot fetch the task branches of remote '" + remote + "': git fetch exited " +
                std::to_string(r.exit_code) + ": " + gitx::git_output_tail(r.output));
  std::map<std::string, const Task*> by_id;
  for (const auto& t : tasks) by_id[t.id()] = &t;
  std::map<int, QueueEntry> found;
  Fetched f;
  const std::string prefix = std::string(layout::kFetchedPrefix) + "task-";
  for (const auto& ref : repo.list_refs(prefix)) {
    std::string id = ref.name.substr(prefix.size());
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      f.notes.push_back(layout::task_branch(id) + ": the tasks file has no task '" + id + "' (ignored)");
      continue;
    }
    const Task& t = *it->second;
    if (t.done || queued.count(t.index)) continue;
    std::string base;
    try {
      base = repo.resolve(ref.sha + "^");
    } catch (const Error&) {
      f.notes.push_back(layout::task_branch(id) + ": " + ref.sha.substr(0, 12) +
                        " has no parent to take its change from (ignored)");
      continue;
    }
    found[t.index] = QueueEntry{t.index, id, t.title, base, ref.sha, 1, util::now_iso8601(), ""};
  }
  for (auto& [index, e] : found) f.entries.push_back(e);
  return f;
}

}  // namespace phoenix::loop
