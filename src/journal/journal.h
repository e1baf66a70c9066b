// The journal: a SQLite store of measured outcomes per
// issue signature, so the second time Phoenix sees a bug it can try the fix
// that worked before instead of asking a model.
//
// What goes in is measured, never claimed: an entry is created only when
// the engine's fresh re-run of the failing check passed with a patch applied
// (record_healed), and it is demoted the next time that patch is measured
// failing (record_failed). A stored patch is only ever a first guess: the
// engine guards, applies and re-measures it like any other proposal.
//
// The file (.phoenix/journal.sqlite):
// - WAL mode, so `phoenix journal` can read while a run writes; every write
//   is one BEGIN IMMEDIATE transaction, so two writers queue on SQLite's
//   busy timeout instead of failing half-way. When the timeout passes:
//   Error("journal PATH is locked by another process ...").
// - Schema version in `PRAGMA user_version` (kSchemaVersion), migrated
//   forward on open, one transaction per step. A newer version than this
//   build knows is refused with an Error, never touched.
// - A new journal is built beside the target and linked into place, so a
//   crash never leaves a half-initialised file at PATH.
// - An existing file that is not a sound SQLite database (garbage, cut
//   short, or a page SQLite reports corrupt) is never overwritten, migrated
//   or recreated: every operation throws
//   Error("journal PATH is damaged: WHY; run with --no-journal, or move it aside").
//
// What an entry is, its per-origin tallies, and how two journals' views of
// one entry merge: journal/entry.h (no SQLite). Local events on one entry
// get strictly increasing times even within one millisecond, so a failure
// recorded right after a success always wins, and the other way round.
//
// A Journal is move-only and used by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "journal/entry.h"

namespace phoenix::journal {

inline constexpr int kSchemaVersion = 2;

struct OpenOptions {
  // How long a write waits for another process's transaction to end
  // before it throws the "locked by another process" Error.
  int busy_timeout_ms = 10000;
  // false: a missing file throws Error("... does not exist") instead of
  // being created (for commands that only read).
  bool create = true;
};

// A measured heal by a fixer other than the journal.
struct Stats {
  long long entries = 0;
  long long signatures = 0;
  long long verified = 0;
  long long demoted = 0;
  long long successes = 0;
  long long failures = 0;
  long long replays = 0;
  long long saved_ms = 0;
  // Sums over replays whose original value is known; null when replays
  // happened and none of them had a known value.
  std::optional<long long> saved_model_calls;
  std::optional<double> saved_cost_usd;
  long long replays_unknown_model_calls = 0;
  long long replays_unknown_cost = 0;
};

// One judgement that found a test flaky (engine/verdict.h): it failed, then
// passed when run again at the same tree.
struct FlakeSighting {
  std::string check;
  std::string test;
  std::string tree;  // the git tree id, "" when the tree had none (uncommitted work)
  int runs = 0;      // the test's runs in this judgement (first measurement + re-runs)
  int failures = 0;  // of those, failed
};

// The flake ledger's row of one test.
struct Flake {
  std::string check;
  std::string test;
  long long runs = 0;
  long long failures = 0;
  long long flaky = 0;  // judgements that found it flaky
  long long trees = 0;  // distinct trees it was flaky at
  long long first_seen = 0;
  long long last_seen = 0;
};

struct MergeResult {
  long long added = 0;    // entries new to this journal
  long long updated = 0;  // known entries whose counts or verdict changed
  long long unchanged = 0;
  long long skipped = 0;  // not verified anywhere and unknown here, or forgotten here
};

class Journal {
 public:
  // Opens (or, with options.create, creates) the journal at `path`.
  // Throws the damaged / locked / newer-version Errors described above.
  static Journal open(const std::string& path, const OpenOptions& options = {});

  Journal(Journal&&) noexcept;
  Journal& operator=(Journal&&) noexcept;
  ~Journal();

  const std::string& path() const;
  // This journal's origin id (32 hex digits).
  const std::string& origin() const;

  // A heal measured with `fix` applied: inserts the entry, or updates the
  // one with the same (signature, patch hash). Verified; attempts and
  // successes +1. The original fix's fixer, duration, model calls and cost
  // are kept from the first record (unknown ones filled in later).
  // An empty patch is not recorded (there is nothing to replay): false.
  bool record_healed(const Fix& fix);
  // The journal's own replay of an entry healed (measured): verified,
  // attempts, successes and replays +1. False when there is no such entry.
  bool record_replay(const std::string& signature, const std::string& patch_hash);
  // The entry's patch was measured failing, rejected, or no longer applies:
  // demoted (verified = false), attempts and failures +1, `why` kept.
  // False when there is no such entry.
  bool record_failed(const std::string& signature, const std::string& patch_hash, const std::string& why);

  // Verified entries for a signature, newest verified first. Uses an index:
  // the cost does not grow with the journal.
  std::vector<Entry> lookup(const std::string& signature) const;
  // Every entry, most recently seen first.
  std::vector<Entry> list() const;
  // The entries whose signature starts with `prefix` (hex, any case), all
  // patches of that one signature, deleted; they are returned. A prefix
  // matching no signature, or more than one, throws UsageError naming the
  // candidates. A later pull does not bring back what was verified before
  // the forget (a tombstone remembers the signature and the time).
  std::vector<Entry> forget(const std::string& prefix);
  Stats stats() const;

  // The flake ledger (schema version 2). Adds one judgement that found a
  // test flaky, in one transaction.
  void record_flake(const FlakeSighting& f);
  // Every test of the ledger, most recently seen first.
  std::vector<Flake> flakes() const;

  // Sharing (see share.h). Every entry with its tallies, by signature.
  std::vector<Entry> export_entries() const;
  // Merges entries from another journal in one transaction: per origin
  // the larger counts and newer times win (so merging twice changes
  // nothing), unknown fields of the original fix are filled in, an entry
  // new here is added only when verified somewhere and not forgotten here
  // since. Different patches for one signature stay separate entries.
  MergeResult merge(const std::vector<Entry>& incoming);

 private:
  struct Impl;
  explicit Journal(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace phoenix::journal
