#include "loop/queue.h"

#include <chrono>

#include "engine/incident.h"
#include "layout/layout.h"
#include "layout/paths.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::loop {

using util::Json;

namespace {

constexpr size_t kSideCap = 8000;  // bytes of each side's diff in a note

std::string capped(const std::string& text) {
  if (text.size() <= kSideCap) return text;
  return text.substr(0, kSideCap) + "\n... (" + std::to_string(text.size() - kSideCap) + " more bytes)\n";
}

long long since_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Json to_json(const QueueEntry& e) {
  return Json{{"task", {{"id", e.id}, {"title", e.title}, {"index", e.index}}},
              {"commit", e.commit},
              {"base", e.base},
              {"tries", e.tries},
              {"queued_at", e.queued_at}};
}

QueueEntry queue_entry_from_json(const Json& j) {
  QueueEntry e;
  try {
    const Json& t = j.at("task");
    e.index = t.at("index").get<int>();
    e.id = t.at("id").get<std::string>();
    e.title = t.at("title").get<std::string>();
    e.commit = j.at("commit").get<std::string>();
    e.base = j.at("base").get<std::string>();
    e.tries = j.value("tries", 1);
    e.queued_at = j.value("queued_at", "");
  } catch (const std::exception& ex) { throw Error(std::string("loop-run.json: queue entry: ") + ex.what()); }
  return e;
}

const char* kind_name(MergeResult::Kind k) {
  switch (k) {
    case MergeResult::Kind::kMerged: return "merged";
    case MergeResult::Kind::kConflict: return "conflict";
    case MergeResult::Kind::kRed: return "red";
    case MergeResult::Kind::kInterrupted: return "interrupted";
    case MergeResult::Kind::kSetupFailed: return "setup-failed";
  }
  return "";
}

std::string queue_ref(const std::string& id) { return layout::kQueuePrefix + id; }

MergeResult merge_entry(Tree& tree, const QueueEntry& entry, const std::vector<std::string>& keep,
                        const std::function<void()>& tick, const std::function<Measure()>& measure,
                        const std::function<void()>& undo) {
  auto t0 = std::chrono::steady_clock::now();
  gitx::Repo& repo = *tree.repo;
  MergeResult r;
  r.tip = repo.head_sha();
  const std::string message = "phoenix-loop: " + entry.title + (entry.trailers.empty() ? "" : "\n\n" + entry.trailers);
  std::string merged = repo.merge_onto(entry.base, r.tip, entry.commit, message, &r.conflicts);
  if (merged.empty()) {
    r.kind = MergeResult::Kind::kConflict;
    r.duration_ms = since_ms(t0);
    return r;
  }
  // The combined tree in the work tree, HEAD still at the tip: a green
  // measurement commits exactly what was measured, the tick with it.
  gitx::CheckoutOptions co;
  co.force = true;
  repo.checkout_tree(merged, co);
  tick();
  r.measure = measure();
  if (r.measure.green && !r.measure.interrupted && r.measure.setup_failed.empty()) {
    r.commit = repo.commit_all(message, true, layout::state_prefixes());
    r.kind = MergeResult::Kind::kMerged;
  } else {
    r.kind = r.measure.interrupted             ? MergeResult::Kind::kInterrupted
             : !r.measure.setup_failed.empty() ? MergeResult::Kind::kSetupFailed
                                               : MergeResult::Kind::kRed;
    repo.reset_hard(r.tip, true, keep);
    undo();
  }
  r.duration_ms = since_ms(t0);
  return r;
}

std::string merge_incident(const std::string& incidents_dir, const gitx::Repo& repo, const QueueEntry& entry,
                           const MergeResult& result, const std::string& kept_ref) {
  engine::Incident inc;
  inc.failure_type = "merge";
  inc.check_id = "merge-queue";
  inc.check_description = "task " + entry.id + " (" + entry.title + ") onto the loop branch at " + result.tip;
  std::string why;
  if (result.kind == MergeResult::Kind::kConflict) {
    why = "conflict in " + util::join_argv(result.conflicts);
    inc.signal = "conflict: " + util::join_argv(result.conflicts);
  } else {
    why = "green alone, red combined: " + util::join_argv(result.measure.red);
    inc.signal = "red combined: " + util::join_argv(result.measure.red);
  }
  inc.why_escalated = why + " after " + std::to_string(entry.tries) + " tries (the merge queue's bound is " +
                      std::to_string(kMergeTries) + "); the task is skipped";
  inc.last_diff = capped(repo.diff_patch(entry.base, entry.commit));
  std::string ev = "### The task's side: " + entry.commit + " (from " + entry.base + ")\n\n" +
                   "The last attempted diff above.\n\n### The loop branch's side: " + entry.base + ".." + result.tip +
                   "\n\n";
  for (const auto& c : repo.rev_list(entry.base, result.tip))
    ev += "- " + c.substr(0, 12) + " " + util::trim(repo.commit_message(c)) + "\n";
  ev += "\n```diff\n" + capped(repo.diff_patch(entry.base, result.tip)) + "```\n";
  for (const auto& m : result.measure.results)
    if (!m.ok) ev += "\n### " + m.id + ": " + m.signal + "\n\n```\n" + capped(m.evidence) + "\n```\n";
  inc.evidence = ev;
  inc.not_rolled_back_why =
      "nothing to roll back: the loop branch never held the combined tree; the task's work is "
      "kept under " +
      kept_ref;
  return engine::write_incident(incidents_dir, inc);
}

}  // namespace phoenix::loop
