#include "engine/recover.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "engine/cycle.h"
#include "engine/incident.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "trace/events.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/lock.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::engine {

namespace fs = std::filesystem;
using util::Json;

namespace {

struct Interrupted {
  bool found = false;
  uint64_t seq = 0;
  std::string root, head0, checkpoint, incident;
  bool dirty0 = false;
  bool rolled_back = false;
};

// The last run.start of the trace that has no run.end after it.
Interrupted find_interrupted(const std::string& trace_path) {
  Interrupted in;
  if (!util::path_exists(trace_path)) return in;
  std::ifstream f(trace_path, std::ios::binary);
  std::string line;
  while (std::getline(f, line)) {
    Json e = Json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.is_object() || !e.contains("data") || !e["data"].is_object()) continue;
    // A hand-edited line whose fields have other types is not one of ours.
    try {
      std::string ev = e.value("event", "");
      const Json& d = e["data"];
      if (ev == trace::event::kRunStart) {
        in = Interrupted{};
        in.found = true;
        in.seq = e.value("seq", uint64_t{0});
        in.head0 = d.value("head", "");
        in.dirty0 = d.value("dirty", false);
        in.root = d.value("root", "");
      } else if (!in.found) {
        continue;
      } else if (ev == trace::event::kRunEnd) {
        in = Interrupted{};
      } else if (ev == trace::event::kCheckpoint && in.checkpoint.empty()) {
        in.checkpoint = d.value("commit", "");
      } else if (ev == trace::event::kIncident) {
        in.incident = d.value("path", "");
      } else if (ev == trace::event::kRollback) {
        in.rolled_back = true;
      }
    } catch (const Json::exception&) { continue; }
  }
  return in;
}

bool kept(const std::string& path) {
  for (const auto& k : layout::keep_prefixes())
    if (util::starts_with(path, k)) return true;
  return false;
}

// Work-tree paths that differ from commit `base` (Phoenix's own folders aside).
std::vector<std::string> changed_since(const gitx::Repo& repo, const std::string& base) {
  std::vector<std::string> out;
  for (const auto& p : gitx::Repo::patch_files(repo.diff_workdir_patch(base)))
    if (!kept(p)) out.push_back(p);
  return out;
}

// A verified heal commit (or a chain of them) on top of `head0`.
bool heal_commits_on(const gitx::Repo& repo, const std::string& head0) {
  if (head0.empty()) return false;
  try {
    const std::vector<std::string> commits = repo.rev_list(head0, "HEAD");
    if (commits.empty()) return false;
    for (const auto& c : commits)
      if (!util::starts_with(repo.commit_message(c), "phoenix: heal ")) return false;
    return true;
  } catch (const Error&) { return false; }
}

void remove_stray_temps(const std::string& dir, std::vector<std::string>& actions) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    // write_file_atomic's "<name>.tmp.<random>"; a journal being created, "journal.sqlite.new.<pid>.<random>[-wal|-shm]".
    bool temp = name.find(".tmp.") != std::string::npos || name.find(".sqlite.new.") != std::string::npos;
    if (!temp || !e.is_regular_file(ec)) continue;
    if (fs::remove(e.path(), ec))
      actions.push_back("removed a temporary file left by an interrupted write: " + e.path().string());
  }
}

// Sandboxes of a killed fixer run (never one that is still mounted).
void remove_stale_sandboxes(const std::string& dir, std::vector<std::string>& actions) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  struct stat parent {};
  if (::stat(dir.c_str(), &parent) != 0) return;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!util::starts_with(e.path().filename().string(), "sandbox-") || !e.is_directory(ec)) continue;
    struct stat self {
    }, work{};
    std::string work_dir = e.path().string() + "/work";
    if (::stat(e.path().c_str(), &self) != 0 || self.st_dev != parent.st_dev) continue;
    if (::stat(work_dir.c_str(), &work) == 0 && work.st_dev != parent.st_dev) continue;  // a mount point
    if (fs::remove_all(e.path(), ec) > 0 && !ec)
      actions.push_back("removed the sandbox of an interrupted fixer: " + e.path().string());
  }
}

}  // namespace

namespace {

// Lock files a killed libgit2 call left behind would block every later
// write; no Phoenix run is alive (the caller's lock says so). A lock some
// live process has open (an editor's git) is that process's, and stays.
void remove_stale_locks(const gitx::Repo& repo, std::vector<std::string>& actions) {
  std::error_code ec;
  auto remove_if_stale = [&](const std::string& lock) {
    if (!fs::exists(lock, ec)) return;
    const std::string holder = util::FileLock::open_by(lock);
    if (!holder.empty()) {
      actions.push_back("left " + lock + ": held by " + holder);
      return;
    }
    if (fs::remove(lock, ec)) actions.push_back("removed " + lock + " left by the interrupted run");
  };
  for (const std::string& stale : {repo.git_dir() + "/index.lock", repo.git_dir() + "/HEAD.lock"})
    remove_if_stale(stale);
  for (const std::string& dir : {repo.common_dir() + "/refs/phoenix", repo.common_dir() + "/refs/heads"}) {
    std::vector<std::string> locks;
    if (fs::is_directory(dir, ec))
      for (const auto& e : fs::recursive_directory_iterator(dir, ec))
        if (e.path().extension() == ".lock") locks.push_back(e.path().string());
    for (const auto& l : locks) remove_if_stale(l);
  }
}

// The interrupted run's work tree back to its pre-run state, or its
// verified heal commit kept. Nothing is lost: what the tree and HEAD hold
// now stays reachable. Returns the commit the repository is left at.
std::string restore_interrupted(gitx::Repo& repo, const Interrupted& in, Json& done,
                                std::vector<std::string>& actions) {
  const std::string head = repo.head_sha();
  const std::string stamp = util::compact_utc(true);
  const bool healed_head = head != in.head0 && !in.head0.empty() && repo.is_clean(layout::keep_prefixes()) &&
                           !in.dirty0 && heal_commits_on(repo, in.head0);
  if (healed_head) {
    actions.push_back("kept the verified heal commit " + util::sha12(head) + " of an interrupted run");
    return head;
  }
  if (in.checkpoint.empty()) return in.head0;
  std::vector<std::string> changed = changed_since(repo, in.checkpoint);
  if (head == in.head0 && changed.empty()) return in.head0;
  if (!changed.empty()) {
    std::string wip = repo.snapshot_workdir("phoenix: work tree of an interrupted run", true, layout::state_prefixes());
    repo.write_ref(std::string(layout::kAbandonedPrefix) + stamp + "-recover", wip,
                   "phoenix recover: interrupted run's work tree");
    done["abandoned_worktree"] = wip;
  }
  if (head != in.head0) {
    repo.write_ref(std::string(layout::kAbandonedPrefix) + stamp + "-recover-head", head,
                   "phoenix recover: interrupted run's HEAD");
    done["abandoned_head"] = head;
  }
  if (!in.dirty0) {
    // The user's untracked files (invariant 5) stay: on a clean tree the
    // checkpoint holds exactly those beside HEAD's files.
    std::vector<std::string> keep = layout::keep_prefixes();
    for (std::string& f : repo.commit_files(in.checkpoint)) keep.push_back(std::move(f));
    repo.reset_hard(in.head0, true, keep);
  } else {
    if (head != in.head0) repo.reset_hard(in.head0, false, layout::keep_prefixes());
    repo.restore_paths(in.checkpoint, changed_since(repo, in.checkpoint));
  }
  done["restored_to"] = in.dirty0 ? in.checkpoint : in.head0;
  actions.push_back("restored the work tree of an interrupted run to its pre-run state (" + util::sha12(in.head0) +
                    (in.dirty0 ? " plus the uncommitted changes it had" : "") + "); what was there is kept under " +
                    std::string(layout::kAbandonedPrefix) + stamp + "-recover*");
  return in.head0;
}

// An escalation cut short: its rollback is the restore above; its note is
// completed (or written, when the kill came first).
void complete_escalation(const Interrupted& in, const std::string& where, const std::string& target, Json& done,
                         std::vector<std::string>& actions) {
  if (in.incident.empty() || in.rolled_back || !util::path_exists(in.incident)) return;
  std::string note = util::read_file(in.incident);
  if (note.find("\n## State: ") == std::string::npos) {
    Incident inc;
    inc.check_id = "(unknown)";
    inc.failure_type = "(unknown)";
    inc.why_escalated = "the run was killed while writing this note; the trace (seq " + std::to_string(in.seq) +
                        " onwards) holds what happened";
    inc.rolled_back_to = target;
    util::write_file_atomic(in.incident, render_incident(inc));
  } else {
    set_incident_state(in.incident, "rolled back to " + target + " (by phoenix recover after an interrupted rollback)");
  }
  util::write_file_atomic(layout::escalated_flag(where), in.incident + "\n");
  done["incident"] = in.incident;
  actions.push_back("completed the escalation of an interrupted run: " + in.incident);
}

// An incident note claimed but never written (killed between the two).
void fill_empty_notes(const std::string& root, std::vector<std::string>& actions) {
  std::error_code ec;
  if (!fs::is_directory(layout::incidents_dir(root), ec)) return;
  for (const auto& e : fs::directory_iterator(layout::incidents_dir(root), ec)) {
    if (e.path().extension() != ".md" || !e.is_regular_file(ec) || e.file_size(ec) != 0) continue;
    Incident inc;
    inc.check_id = "(unknown)";
    inc.failure_type = "(unknown)";
    inc.why_escalated = "the run was killed while writing this note; the trace holds what happened";
    inc.not_rolled_back_why = "see the trace";
    util::write_file_atomic(e.path().string(), render_incident(inc));
    actions.push_back("wrote an incident note that a crash had left empty: " + e.path().string());
  }
}

}  // namespace

std::vector<std::string> recover(const std::string& root, trace::Trace& trace) {
  std::vector<std::string> actions;
  // Nothing here runs beside a live run: it owns the repository.
  layout::ensure_state_dir(root);
  util::FileLock run_lock(layout::lock_file(root), 0, "this repository");
  std::optional<util::FileLock> loop_lock;
  try {
    loop_lock.emplace(layout::loop_lock_file(root), 0, "the loop of this repository");
  } catch (const Error&) {
    // A live loop: its temporary files are its own.
  }
  Interrupted in = find_interrupted(trace.path());
  std::string where = in.found && !in.root.empty() ? in.root : root;
  if (in.found && !fs::is_directory(where)) {
    trace.append(trace::event::kRecover,
                 {{"run_seq", in.seq}, {"root", where}, {"why", "the run's work tree is gone"}});
    trace.append(trace::event::kRunEnd,
                 {{"exit_code", kExitInterrupted}, {"why", "interrupted; its work tree is gone"}});
    actions.push_back("an interrupted run in " + where + " (its folder is gone) marked ended");
    in.found = false;
  }
  if (in.found) {
    // Wait for no one: a run that is alive owns the repository.
    fs::create_directories(layout::state_dir(where));
    std::optional<util::FileLock> lock;
    if (where != root) lock.emplace(layout::lock_file(where), 0, "the work tree " + where);
    gitx::Repo repo = gitx::Repo::open(where);
    remove_stale_locks(repo, actions);
    Json done = {{"run_seq", in.seq}, {"root", where}};
    const std::string target = restore_interrupted(repo, in, done, actions);
    complete_escalation(in, where, target, done, actions);
    trace.append(trace::event::kRecover, done);
    trace.append(trace::event::kRunEnd,
                 {{"exit_code", kExitInterrupted}, {"why", "interrupted; recovered by phoenix recover"}});
    if (actions.empty()) actions.push_back("an interrupted run had changed nothing; marked it ended");
  }
  fill_empty_notes(root, actions);
  if (loop_lock) {
    remove_stray_temps(layout::state_dir(root), actions);
    try {
      remove_stale_sandboxes(layout::sandboxes_dir(gitx::Repo::open(root)), actions);
    } catch (const Error&) {
      // Not a repository any more: nothing of ours to clean there.
    }
    remove_stale_sandboxes(layout::legacy_sandboxes_dir(root), actions);  // where earlier versions kept them
  }
  remove_stray_temps(layout::incidents_dir(root), actions);
  if (where != root) {
    remove_stray_temps(layout::state_dir(where), actions);
    remove_stale_sandboxes(layout::legacy_sandboxes_dir(where), actions);
    remove_stray_temps(layout::incidents_dir(where), actions);
  }
  return actions;
}

}  // namespace phoenix::engine
