// The journal's rows and the local events on them (record_healed,
// record_replay, record_failed); the rest of Journal is in journal_schema.cc,
// journal_query.cc and journal_sync.cc (journal/internal.h).
#include "journal/journal.h"

#include <sqlite3.h>

#include <algorithm>
#include <utility>

#include "journal/internal.h"
#include "journal/sqlite.h"
#include "util/error.h"
#include "util/json.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::journal {

using internal::damaged_message;
using internal::kEntryColumns;
using internal::read_tally;
using sqlite::col_opt_int;
using sqlite::col_opt_real;
using sqlite::col_text;
using sqlite::Tx;
using sqlite::Use;

// A tally from the row `s` stands on, its columns from `first` on: attempts,
// successes, failures, replays, first_seen, last_seen, last_verified,
// last_failed, last_failure.
Tally internal::read_tally(sqlite3_stmt* s, int first) {
  Tally t;
  t.attempts = sqlite3_column_int64(s, first);
  t.successes = sqlite3_column_int64(s, first + 1);
  t.failures = sqlite3_column_int64(s, first + 2);
  t.replays = sqlite3_column_int64(s, first + 3);
  t.first_seen = sqlite3_column_int64(s, first + 4);
  t.last_seen = sqlite3_column_int64(s, first + 5);
  t.last_verified = sqlite3_column_int64(s, first + 6);
  t.last_failed = sqlite3_column_int64(s, first + 7);
  t.last_failure = col_text(s, first + 8);
  return t;
}

// ---------------------------------------------------------------------------
// Journal::Impl: rows.

Journal::Impl::Impl(std::string p, OpenOptions o)
    : path(std::move(p)),
      options(o),
      db([path = path, timeout_ms = o.busy_timeout_ms](int rc, const std::string& msg, const std::string& what) {
        fail(path, timeout_ms, rc, msg, what);
      }) {}

// Reads a row selected with kEntryColumns; *id gets the row id.
Entry Journal::Impl::read_entry(sqlite3_stmt* s, long long* id) const {
  Entry e;
  if (id) *id = sqlite3_column_int64(s, 0);
  e.signature = col_text(s, 1);
  e.patch_hash = col_text(s, 2);
  e.check = col_text(s, 3);
  e.failure_type = col_text(s, 4);
  e.patch = col_text(s, 5);
  try {
    for (const auto& f : util::Json::parse(col_text(s, 6))) e.files.push_back(f.get<std::string>());
  } catch (const std::exception& ex) {
    throw Error(damaged_message(path, "entry " + util::sha12(e.signature) + " has unreadable files: " + ex.what()));
  }
  e.fixer = col_text(s, 7);
  e.duration_ms = col_opt_int(s, 8);
  e.verify_ms = col_opt_int(s, 9);
  e.model_calls = col_opt_int(s, 10);
  e.cost_usd = col_opt_real(s, 11);
  e.verified = sqlite3_column_int64(s, 12) != 0;
  e.attempts = sqlite3_column_int64(s, 13);
  e.successes = sqlite3_column_int64(s, 14);
  e.failures = sqlite3_column_int64(s, 15);
  e.replays = sqlite3_column_int64(s, 16);
  e.first_seen = sqlite3_column_int64(s, 17);
  e.last_seen = sqlite3_column_int64(s, 18);
  e.last_verified = sqlite3_column_int64(s, 19);
  e.last_failed = sqlite3_column_int64(s, 20);
  e.last_failure = col_text(s, 21);
  return e;
}

std::map<std::string, Tally> Journal::Impl::read_tallies(long long id) {
  sqlite3_stmt* s = db.stmt(
      "SELECT origin, attempts, successes, failures, replays, first_seen, last_seen, last_verified, last_failed, "
      "last_failure FROM tallies WHERE entry_id = ?1");
  Use u(db, s);
  u.integer(1, id);
  std::map<std::string, Tally> out;
  while (u.step("read it")) out[col_text(s, 0)] = read_tally(s, 1);
  return out;
}

// The entry with its tallies, or nullopt.
std::optional<Entry> Journal::Impl::find(const std::string& signature, const std::string& hash, long long* id) {
  sqlite3_stmt* s =
      db.stmt(std::string("SELECT ") + kEntryColumns + " FROM entries WHERE signature = ?1 AND patch_hash = ?2");
  std::optional<Entry> e;
  {
    Use u(db, s);
    u.text(1, signature).text(2, hash);
    if (u.step("read it")) e = read_entry(s, id);
  }
  if (e) e->tallies = read_tallies(*id);
  return e;
}

long long Journal::Impl::insert_entry(const Entry& e) {
  sqlite3_stmt* s = db.stmt(
      "INSERT INTO entries (signature, patch_hash, check_id, failure_type, patch, files, fixer, duration_ms, "
      "verify_ms, model_calls, cost_usd) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  Use u(db, s);
  u.text(1, e.signature).text(2, e.patch_hash).text(3, e.check).text(4, e.failure_type).text(5, e.patch);
  u.text(6, util::canonical(util::Json(e.files))).text(7, e.fixer);
  u.opt_int(8, e.duration_ms).opt_int(9, e.verify_ms).opt_int(10, e.model_calls).opt_real(11, e.cost_usd);
  u.step("write it");
  return sqlite3_last_insert_rowid(db.get());
}

void Journal::Impl::write_fix_facts(long long id, const Entry& e) {
  sqlite3_stmt* s =
      db.stmt("UPDATE entries SET duration_ms = ?2, verify_ms = ?3, model_calls = ?4, cost_usd = ?5 WHERE id = ?1");
  Use u(db, s);
  u.integer(1, id).opt_int(2, e.duration_ms).opt_int(3, e.verify_ms).opt_int(4, e.model_calls).opt_real(5, e.cost_usd);
  u.step("write it");
}

void Journal::Impl::write_tally(long long id, const std::string& origin, const Tally& t) {
  sqlite3_stmt* s = db.stmt(
      "INSERT OR REPLACE INTO tallies (entry_id, origin, attempts, successes, failures, replays, first_seen, "
      "last_seen, last_verified, last_failed, last_failure) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  Use u(db, s);
  u.integer(1, id).text(2, origin).integer(3, t.attempts).integer(4, t.successes).integer(5, t.failures);
  u.integer(6, t.replays).integer(7, t.first_seen).integer(8, t.last_seen).integer(9, t.last_verified);
  u.integer(10, t.last_failed).text(11, t.last_failure);
  u.step("write it");
}

void Journal::Impl::write_totals(long long id, const Entry& e) {
  sqlite3_stmt* s = db.stmt(
      "UPDATE entries SET verified = ?2, attempts = ?3, successes = ?4, failures = ?5, replays = ?6, "
      "first_seen = ?7, last_seen = ?8, last_verified = ?9, last_failed = ?10, last_failure = ?11 WHERE id = ?1");
  Use u(db, s);
  u.integer(1, id).integer(2, e.verified ? 1 : 0).integer(3, e.attempts).integer(4, e.successes);
  u.integer(5, e.failures).integer(6, e.replays).integer(7, e.first_seen).integer(8, e.last_seen);
  u.integer(9, e.last_verified).integer(10, e.last_failed).text(11, e.last_failure);
  u.step("write it");
}

// ---------------------------------------------------------------------------
// Journal::Impl: local events.

// The time of a new local event on `e`: now, but strictly after every
// event of every entry of its signature, so the newest event decides the
// verdict and which fix a lookup offers first, even within one millisecond
// (or after another machine's clock ran ahead).
long long Journal::Impl::event_time(const Entry& e) {
  long long latest = std::max({e.last_seen, e.last_verified, e.last_failed});
  sqlite3_stmt* s = db.stmt("SELECT max(max(last_seen, last_verified, last_failed)) FROM entries WHERE signature = ?1");
  Use u(db, s);
  u.text(1, e.signature);
  if (u.step("read it") && sqlite3_column_type(s, 0) != SQLITE_NULL)
    latest = std::max(latest, static_cast<long long>(sqlite3_column_int64(s, 0)));
  return std::max(util::now_ms(), latest + 1);
}

// Applies one local event to an existing entry.
void Journal::Impl::apply_event(long long id, Entry& e, Event ev, const std::string& why) {
  long long t = event_time(e);
  Tally& mine = e.tallies[origin];
  mine.attempts += 1;
  if (mine.first_seen == 0) mine.first_seen = t;
  mine.last_seen = t;
  if (ev == Event::kFailed) {
    mine.failures += 1;
    mine.last_failed = t;
    mine.last_failure = why;
  } else {
    mine.successes += 1;
    mine.last_verified = t;
    if (ev == Event::kReplay) mine.replays += 1;
  }
  write_tally(id, origin, mine);
  e.recompute();
  write_totals(id, e);
}

// ---------------------------------------------------------------------------
// Journal

Journal::Journal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Journal::Journal(Journal&&) noexcept = default;
Journal& Journal::operator=(Journal&&) noexcept = default;
Journal::~Journal() = default;

const std::string& Journal::path() const { return impl_->path; }
const std::string& Journal::origin() const { return impl_->origin; }

bool Journal::record_healed(const Fix& fix) {
  if (fix.patch.empty()) return false;
  Tx tx(impl_->db, "record a heal");
  std::string hash = patch_hash(fix.patch);
  long long id = 0;
  std::optional<Entry> e = impl_->find(fix.signature, hash, &id);
  if (!e) {
    Entry n;
    static_cast<Fix&>(n) = fix;
    n.patch_hash = hash;
    id = impl_->insert_entry(n);
    e = std::move(n);
  } else {
    // The first fix's facts stay (they are what a replay saves); a later
    // heal only fills in what was unknown.
    Entry filled = *e;
    if (!filled.duration_ms) filled.duration_ms = fix.duration_ms;
    if (!filled.verify_ms) filled.verify_ms = fix.verify_ms;
    if (!filled.model_calls) filled.model_calls = fix.model_calls;
    if (!filled.cost_usd) filled.cost_usd = fix.cost_usd;
    impl_->write_fix_facts(id, filled);
    e = std::move(filled);
  }
  impl_->apply_event(id, *e, Impl::Event::kHealed, "");
  tx.commit();
  return true;
}

bool Journal::record_replay(const std::string& signature, const std::string& hash) {
  Tx tx(impl_->db, "record a replay");
  long long id = 0;
  std::optional<Entry> e = impl_->find(signature, hash, &id);
  if (!e) return false;
  impl_->apply_event(id, *e, Impl::Event::kReplay, "");
  tx.commit();
  return true;
}

bool Journal::record_failed(const std::string& signature, const std::string& hash, const std::string& why) {
  Tx tx(impl_->db, "record a failure");
  long long id = 0;
  std::optional<Entry> e = impl_->find(signature, hash, &id);
  if (!e) return false;
  impl_->apply_event(id, *e, Impl::Event::kFailed, why);
  tx.commit();
  return true;
}

}  // namespace phoenix::journal
