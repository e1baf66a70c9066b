// .phoenix/loop-state.json (layout::loop_state_file): what an outer harness
// polls (schema in templates/loop-state.schema.json).
//
// The object has exactly the fields of the design: schema_version, pid,
// phase, task {id,title,index,total} (null between tasks), iteration,
// max_iterations, retry_count, session_retries, last_failure_type,
// last_signature, last_incident, known_good, head, started_at, updated_at,
// deadline, waiting_until, waiting_for, caps (loop/caps.h: the caps and
// what was spent against them), exit_code (null until the loop has
// finished); since version 2 also workers (what each worker of
// --workers N is on) and queue (the merge queue), both empty with one worker.
//
// Every write replaces the file atomically (util::write_file_atomic), so a
// reader sees the previous state or the next, never a mix. Writes are
// serialised by a mutex: the loop's thread writes at every transition and
// the heartbeat thread rewrites the same state (with a fresh updated_at)
// every heartbeat_s, so a poller can tell a live loop from a dead one.
// A write is also fsynced (it survives a power cut) unless the caller says
// it is transient (util::Sync::kAtomic): a phase inside an iteration that a
// durable write ends; heartbeats, which only move updated_at, are never
// fsynced. Either way a crash of the process leaves a whole file.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "util/atomic_file.h"
#include "util/json.h"

namespace phoenix::loop {

inline constexpr int kStateSchemaVersion = 2;

// Phases written to "phase" (engine/phase.h has them and their words):
//   starting, baseline, agent, checking, healing, committing, waiting
//   (rate limit), merging (the merge queue, --workers N), complete,
//   stopped, escalated, interrupted, failed
class StateFile {
 public:
  // Starts from every field at its empty value, pid = this process.
  explicit StateFile(std::string path);
  ~StateFile();  // stops the heartbeat
  StateFile(const StateFile&) = delete;
  StateFile& operator=(const StateFile&) = delete;

  // Changes fields under the lock, then writes the file.
  void update(const std::function<void(util::Json&)>& change, util::Sync sync = util::Sync::kDurable);
  util::Json snapshot() const;
  // Rewrites the file every `seconds` on its own thread until stop_heartbeat().
  void start_heartbeat(double seconds);
  void stop_heartbeat();
  const std::string& path() const { return path_; }

 private:
  void write_locked(util::Sync sync);

  std::string path_;
  mutable std::mutex mu_;
  util::Json state_;
  std::thread beat_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

// An empty state object (every field present).
util::Json empty_state();

}  // namespace phoenix::loop
