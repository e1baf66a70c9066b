// What the journal's own files share: Journal::Impl (the connection and
// the rows it reads and writes) and the helpers of more than one file.
// journal.cc has the rows and the local events (record_*), journal_schema.cc
// opening, the schema and the file's integrity, journal_query.cc the
// queries and forget, journal_sync.cc export and merge. Not for use outside
// journal/; include only from .cc files.
#pragma once

#include <sqlite3.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "journal/entry.h"
#include "journal/journal.h"
#include "journal/sqlite.h"

namespace phoenix::journal {

namespace internal {

// An entry's columns, in the order Journal::Impl::read_entry reads them.
inline constexpr const char* kEntryColumns =
    "id, signature, patch_hash, check_id, failure_type, patch, files, fixer, duration_ms, verify_ms, model_calls, "
    "cost_usd, verified, attempts, successes, failures, replays, first_seen, last_seen, last_verified, last_failed, "
    "last_failure";

// "journal PATH is damaged: WHY; run with --no-journal, or move it aside".
std::string damaged_message(const std::string& path, const std::string& why);

// A tally from the row `s` stands on, its columns from `first` on: attempts,
// successes, failures, replays, first_seen, last_seen, last_verified,
// last_failed, last_failure.
Tally read_tally(sqlite3_stmt* s, int first);

}  // namespace internal

struct Journal::Impl {
  std::string path;
  OpenOptions options;
  std::string origin;
  sqlite::Connection db;

  Impl(std::string p, OpenOptions o);
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // --- opening, schema, integrity (journal_schema.cc) ---------------------
  // Turns a failed SQLite call into the Error journal.h promises.
  [[noreturn]] static void fail(const std::string& path, int busy_timeout_ms, int rc, const std::string& msg,
                                const std::string& what);
  void open_file(const std::string& file, int flags);
  long long user_version();
  // Refuses a newer or a foreign database; returns its version. Reads only.
  long long check_version();
  // Takes the schema forward to kSchemaVersion, one transaction per step.
  void migrate();
  void read_origin();

  // --- rows (journal.cc) ---------------------------------------------------
  // Reads a row selected with kEntryColumns; *id gets the row id.
  Entry read_entry(sqlite3_stmt* s, long long* id) const;
  std::map<std::string, Tally> read_tallies(long long id);
  // The entry with its tallies, or nullopt.
  std::optional<Entry> find(const std::string& signature, const std::string& hash, long long* id);
  long long insert_entry(const Entry& e);
  void write_fix_facts(long long id, const Entry& e);
  void write_tally(long long id, const std::string& origin, const Tally& t);
  void write_totals(long long id, const Entry& e);

  // --- local events (journal.cc) -------------------------------------------
  // The time of a new local event on `e`, after every event of its signature.
  long long event_time(const Entry& e);
  enum class Event { kHealed, kReplay, kFailed };
  // Applies one local event to an existing entry.
  void apply_event(long long id, Entry& e, Event ev, const std::string& why);

  // --- forget (journal_query.cc) --------------------------------------------
  // Up to `limit` signatures in [lo, hi), each with its first check id.
  std::vector<std::pair<std::string, std::string>> signatures_between(const std::string& lo, const std::string& hi,
                                                                      int limit);
  // The one signature starting with `prefix`, or the UsageError naming the candidates.
  std::string the_signature_starting_with(const std::string& prefix);
  // Every patch stored for `signature` (without tallies).
  std::vector<Entry> entries_of(const std::string& signature);
  // Deletes the signature's entries and tallies; remembers it was forgotten `at`.
  void delete_signature(const std::string& signature, long long at);
};

}  // namespace phoenix::journal
