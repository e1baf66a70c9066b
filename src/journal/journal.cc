#include "journal/journal.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <utility>

#include "journal/sqlite.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/json.h"
#include "util/text.h"
#include "util/format.h"

namespace fs = std::filesystem;

namespace phoenix::journal {
namespace {

using sqlite::col_opt_int;
using sqlite::col_opt_real;
using sqlite::col_text;
using sqlite::Tx;
using sqlite::Use;

// A tally from the row `s` stands on, its columns from `first` on: attempts,
// successes, failures, replays, first_seen, last_seen, last_verified,
// last_failed, last_failure.
Tally read_tally(sqlite3_stmt* s, int first) {
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

// Schema migrations: kMigrations[v] takes user_version v to v + 1.
// Append only: a released step is never edited.
const char* const kMigrations[] = {
    // 0 -> 1
    R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

-- One remembered fix: one patch for one issue signature. The totals are
-- derived from `tallies` (sum / newest over origins) and kept here so a
-- lookup reads one indexed row per patch.
CREATE TABLE entries (
  id            INTEGER PRIMARY KEY,
  signature     TEXT NOT NULL,
  patch_hash    TEXT NOT NULL,
  check_id      TEXT NOT NULL,
  failure_type  TEXT NOT NULL,
  patch         TEXT NOT NULL,
  files         TEXT NOT NULL,            -- JSON array of paths
  fixer         TEXT NOT NULL,            -- who first proposed it
  duration_ms   INTEGER,                  -- that fixer's time; what a replay saves
  verify_ms     INTEGER,
  model_calls   INTEGER,                  -- NULL: unknown
  cost_usd      REAL,                     -- NULL: unknown
  verified      INTEGER NOT NULL DEFAULT 0,
  attempts      INTEGER NOT NULL DEFAULT 0,
  successes     INTEGER NOT NULL DEFAULT 0,
  failures      INTEGER NOT NULL DEFAULT 0,
  replays       INTEGER NOT NULL DEFAULT 0,
  first_seen    INTEGER NOT NULL DEFAULT 0, -- ms since epoch, 0 = never
  last_seen     INTEGER NOT NULL DEFAULT 0,
  last_verified INTEGER NOT NULL DEFAULT 0,
  last_failed   INTEGER NOT NULL DEFAULT 0,
  last_failure  TEXT NOT NULL DEFAULT '',
  UNIQUE (signature, patch_hash)
);
CREATE INDEX entries_lookup ON entries (signature, verified, last_verified);

-- The counts each journal (origin) contributed: they only grow, so merging
-- two journals takes the larger of each and never double counts.
CREATE TABLE tallies (
  entry_id      INTEGER NOT NULL,
  origin        TEXT NOT NULL,
  attempts      INTEGER NOT NULL DEFAULT 0,
  successes     INTEGER NOT NULL DEFAULT 0,
  failures      INTEGER NOT NULL DEFAULT 0,
  replays       INTEGER NOT NULL DEFAULT 0,
  first_seen    INTEGER NOT NULL DEFAULT 0,
  last_seen     INTEGER NOT NULL DEFAULT 0,
  last_verified INTEGER NOT NULL DEFAULT 0,
  last_failed   INTEGER NOT NULL DEFAULT 0,
  last_failure  TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (entry_id, origin)
) WITHOUT ROWID;

-- Signatures the user forgot, and when: a pull does not bring back what
-- was verified before that.
CREATE TABLE forgotten (
  signature TEXT PRIMARY KEY,
  at        INTEGER NOT NULL
) WITHOUT ROWID;
)sql",
};
constexpr int kMigrationCount = static_cast<int>(sizeof kMigrations / sizeof kMigrations[0]);
static_assert(kMigrationCount == kSchemaVersion, "one migration per schema version");

constexpr const char* kEntryColumns =
    "id, signature, patch_hash, check_id, failure_type, patch, files, fixer, duration_ms, verify_ms, model_calls, "
    "cost_usd, verified, attempts, successes, failures, replays, first_seen, last_seen, last_verified, last_failed, "
    "last_failure";

std::string random_hex(size_t bytes) {
  std::random_device rd;
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned b = rd() & 0xffu;
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

std::string damaged_message(const std::string& path, const std::string& why) {
  return "journal " + path + " is damaged: " + why + "; run with --no-journal, or move it aside";
}

// A cheap structural check before SQLite sees the file, so a file that is
// not ours (or was cut short) is refused before anything could write to it.
// SQLite alone would treat an empty file as a new database and only notice a
// truncated one when a query reaches a missing page.
void check_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("journal " + path + ": cannot read it");
  unsigned char h[100] = {};
  in.read(reinterpret_cast<char*>(h), sizeof h);
  std::error_code ec;
  auto size = static_cast<unsigned long long>(fs::file_size(path, ec));
  if (ec) throw Error("journal " + path + ": cannot read it: " + ec.message());
  if (size < sizeof h)
    throw Error(damaged_message(path, "only " + std::to_string(size) + " bytes, shorter than a SQLite header"));
  static const char kMagic[] = "SQLite format 3";  // 16 bytes with the NUL
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) throw Error(damaged_message(path, "not a SQLite database"));
  unsigned long page = (static_cast<unsigned long>(h[16]) << 8) | h[17];
  if (page == 1) page = 65536;
  if (page < 512 || page > 65536 || (page & (page - 1)) != 0)
    throw Error(damaged_message(path, "the SQLite header is invalid (page size " + std::to_string(page) + ")"));
  unsigned long long pages = (static_cast<unsigned long long>(h[28]) << 24) | (h[29] << 16) | (h[30] << 8) | h[31];
  // With a live (or crashed) write-ahead log the main file may lag behind
  // its header until the next checkpoint; SQLite itself judges that case.
  std::error_code wal_ec;
  bool wal = fs::exists(path + "-wal", wal_ec) && fs::file_size(path + "-wal", wal_ec) > 0;
  if (!wal && (size % page != 0 || pages * page > size))
    throw Error(damaged_message(
        path, "truncated: " + std::to_string(size) + " bytes, its header says " + std::to_string(pages * page)));
}

}  // namespace

// ---------------------------------------------------------------------------
// Journal::Impl

struct Journal::Impl {
  std::string path;
  OpenOptions options;
  std::string origin;
  sqlite::Connection db;

  Impl(std::string p, OpenOptions o)
      : path(std::move(p)),
        options(o),
        db([path = path, timeout_ms = o.busy_timeout_ms](int rc, const std::string& msg, const std::string& what) {
          fail(path, timeout_ms, rc, msg, what);
        }) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Turns a failed SQLite call into the Error the header promises.
  [[noreturn]] static void fail(const std::string& path, int busy_timeout_ms, int rc, const std::string& msg,
                                const std::string& what) {
    int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
      throw Error("journal " + path + " is locked by another process (waited " + std::to_string(busy_timeout_ms) +
                  " ms to " + what + "); let it finish, or run with --no-journal");
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || rc == SQLITE_IOERR_SHORT_READ)
      throw Error(damaged_message(path, msg));
    throw Error("journal " + path + ": cannot " + what + ": " + msg);
  }

  void open_file(const std::string& file, int flags) { db.open(file, flags, options.busy_timeout_ms); }

  long long user_version() {
    sqlite3_stmt* s = db.stmt("PRAGMA user_version");
    Use u(db, s);
    u.step("read its schema version");
    return sqlite3_column_int64(s, 0);
  }

  // Reads a row selected with kEntryColumns; *id gets the row id.
  Entry read_entry(sqlite3_stmt* s, long long* id) const {
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

  std::map<std::string, Tally> read_tallies(long long id) {
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
  std::optional<Entry> find(const std::string& signature, const std::string& hash, long long* id) {
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

  long long insert_entry(const Entry& e) {
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

  void write_fix_facts(long long id, const Entry& e) {
    sqlite3_stmt* s =
        db.stmt("UPDATE entries SET duration_ms = ?2, verify_ms = ?3, model_calls = ?4, cost_usd = ?5 WHERE id = ?1");
    Use u(db, s);
    u.integer(1, id)
        .opt_int(2, e.duration_ms)
        .opt_int(3, e.verify_ms)
        .opt_int(4, e.model_calls)
        .opt_real(5, e.cost_usd);
    u.step("write it");
  }

  void write_tally(long long id, const std::string& origin, const Tally& t) {
    sqlite3_stmt* s = db.stmt(
        "INSERT OR REPLACE INTO tallies (entry_id, origin, attempts, successes, failures, replays, first_seen, "
        "last_seen, last_verified, last_failed, last_failure) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    Use u(db, s);
    u.integer(1, id).text(2, origin).integer(3, t.attempts).integer(4, t.successes).integer(5, t.failures);
    u.integer(6, t.replays).integer(7, t.first_seen).integer(8, t.last_seen).integer(9, t.last_verified);
    u.integer(10, t.last_failed).text(11, t.last_failure);
    u.step("write it");
  }

  void write_totals(long long id, const Entry& e) {
    sqlite3_stmt* s = db.stmt(
        "UPDATE entries SET verified = ?2, attempts = ?3, successes = ?4, failures = ?5, replays = ?6, "
        "first_seen = ?7, last_seen = ?8, last_verified = ?9, last_failed = ?10, last_failure = ?11 WHERE id = ?1");
    Use u(db, s);
    u.integer(1, id).integer(2, e.verified ? 1 : 0).integer(3, e.attempts).integer(4, e.successes);
    u.integer(5, e.failures).integer(6, e.replays).integer(7, e.first_seen).integer(8, e.last_seen);
    u.integer(9, e.last_verified).integer(10, e.last_failed).text(11, e.last_failure);
    u.step("write it");
  }

  // The time of a new local event on `e`: now, but strictly after every
  // event of every entry of its signature, so the newest event decides the
  // verdict and which fix a lookup offers first, even within one millisecond
  // (or after another machine's clock ran ahead).
  long long event_time(const Entry& e) {
    long long latest = std::max({e.last_seen, e.last_verified, e.last_failed});
    sqlite3_stmt* s =
        db.stmt("SELECT max(max(last_seen, last_verified, last_failed)) FROM entries WHERE signature = ?1");
    Use u(db, s);
    u.text(1, e.signature);
    if (u.step("read it") && sqlite3_column_type(s, 0) != SQLITE_NULL)
      latest = std::max(latest, static_cast<long long>(sqlite3_column_int64(s, 0)));
    return std::max(util::now_ms(), latest + 1);
  }

  // Applies one local event to an existing entry.
  enum class Event { kHealed, kReplay, kFailed };
  void apply_event(long long id, Entry& e, Event ev, const std::string& why) {
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

  // Up to `limit` signatures in [lo, hi), each with its first check id,
  // most recently seen first. Hex digits sort below 'g', so [prefix,
  // prefix + "g") is exactly the signatures starting with prefix, read
  // through the index.
  std::vector<std::pair<std::string, std::string>> signatures_between(const std::string& lo, const std::string& hi,
                                                                      int limit) {
    sqlite3_stmt* s = db.stmt(
        "SELECT signature, min(check_id) FROM entries WHERE signature >= ?1 AND signature < ?2 "
        "GROUP BY signature ORDER BY max(last_seen) DESC LIMIT ?3");
    Use u(db, s);
    u.text(1, lo).text(2, hi).integer(3, limit);
    std::vector<std::pair<std::string, std::string>> out;
    while (u.step("read it")) out.emplace_back(col_text(s, 0), col_text(s, 1));
    return out;
  }

  // The one signature starting with `prefix` (lowercase hex); none or more
  // than one throws the UsageError naming the candidates.
  std::string the_signature_starting_with(const std::string& prefix) {
    auto describe = [](const std::vector<std::pair<std::string, std::string>>& sigs, size_t shown) {
      std::string s;
      for (size_t i = 0; i < sigs.size() && i < shown; ++i)
        s += (i ? ", " : "") + util::sha12(sigs[i].first) + " (" + sigs[i].second + ")";
      if (sigs.size() > shown) s += ", ...";
      return s;
    };
    auto matches = signatures_between(prefix, prefix + "g", 11);
    if (matches.empty()) {
      auto all = signatures_between("", "g", 11);
      throw UsageError(
          "--forget: no journal entry's signature starts with '" + prefix + "' " +
          (all.empty() ? std::string("(the journal is empty)") : "(the journal has: " + describe(all, 10) + ")"));
    }
    if (matches.size() > 1)
      throw UsageError("--forget: '" + prefix + "' is ambiguous: it matches " + describe(matches, 10) +
                       "; give more digits");
    return matches[0].first;
  }

  // Every patch stored for `signature` (without tallies).
  std::vector<Entry> entries_of(const std::string& signature) {
    sqlite3_stmt* s = db.stmt(std::string("SELECT ") + kEntryColumns + " FROM entries WHERE signature = ?1");
    Use u(db, s);
    u.text(1, signature);
    std::vector<Entry> out;
    while (u.step("read it")) out.push_back(read_entry(s, nullptr));
    return out;
  }

  // Deletes the signature's entries and tallies, and remembers it was
  // forgotten `at` (so a later pull does not bring back older verdicts).
  void delete_signature(const std::string& signature, long long at) {
    for (const char* sql : {"DELETE FROM tallies WHERE entry_id IN (SELECT id FROM entries WHERE signature = ?1)",
                            "DELETE FROM entries WHERE signature = ?1"}) {
      Use u(db, db.stmt(sql));
      u.text(1, signature);
      u.step("forget an entry");
    }
    Use u(db, db.stmt("INSERT OR REPLACE INTO forgotten (signature, at) VALUES (?1, ?2)"));
    u.text(1, signature).integer(2, at);
    u.step("forget an entry");
  }

  // Refuses a newer or a foreign database; returns its version. Reads only.
  long long check_version() {
    long long v = user_version();
    if (v > kSchemaVersion)
      throw Error("journal " + path + " has schema version " + std::to_string(v) + ", newer than this Phoenix knows (" +
                  std::to_string(kSchemaVersion) +
                  "): upgrade Phoenix, or run with --no-journal (the file is left as it is)");
    if (v == 0) {
      sqlite3_stmt* s = db.stmt("SELECT count(*) FROM sqlite_master");
      Use u(db, s);
      u.step("read it");
      if (sqlite3_column_int64(s, 0) > 0)
        throw Error("journal " + path +
                    " is not a Phoenix journal (a SQLite database with tables but no schema version); "
                    "move it aside, or run with --no-journal");
    }
    return v;
  }

  void migrate() {
    long long v = check_version();
    while (v < kSchemaVersion) {
      Tx tx(db, "upgrade its schema");
      long long now = user_version();  // another process may have upgraded it meanwhile
      if (now == v) {
        db.exec(kMigrations[v], "upgrade its schema to version " + std::to_string(v + 1));
        if (v == 0) {
          sqlite3_stmt* s = db.stmt("INSERT INTO meta (key, value) VALUES ('origin', ?1)");
          Use u(db, s);
          u.text(1, random_hex(16));
          u.step("write it");
        }
        db.exec(("PRAGMA user_version = " + std::to_string(v + 1)).c_str(), "upgrade its schema");
      }
      tx.commit();
      v = user_version();
    }
  }

  void read_origin() {
    sqlite3_stmt* s = db.stmt("SELECT value FROM meta WHERE key = 'origin'");
    Use u(db, s);
    if (!u.step("read it")) throw Error(damaged_message(path, "it has no origin id"));
    origin = col_text(s, 0);
    if (origin.size() != 32 || !is_lower_hex(origin)) throw Error(damaged_message(path, "its origin id is invalid"));
  }
};

// ---------------------------------------------------------------------------
// Journal

Journal::Journal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Journal::Journal(Journal&&) noexcept = default;
Journal& Journal::operator=(Journal&&) noexcept = default;
Journal::~Journal() = default;

Journal Journal::open(const std::string& path, const OpenOptions& options) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    if (!options.create) throw Error("journal " + path + " does not exist");
    // A new journal is built under a temporary name and hard-linked into
    // place: no one ever sees a half-initialised file at `path`, and when
    // two processes race, link() lets exactly one of them win without
    // overwriting the other's.
    fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    std::string tmp = path + ".new." + std::to_string(::getpid()) + "." + random_hex(4);
    {
      Impl fresh(path, options);
      fresh.open_file(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW);
      fresh.db.exec("PRAGMA journal_mode = WAL", "create it");
      fresh.migrate();
      fresh.db.finalize_all();
    }  // closing checkpoints the log into the file and deletes the log
    int rc = ::link(tmp.c_str(), path.c_str());
    int err = errno;
    fs::remove(tmp, ec);
    fs::remove(tmp + "-wal", ec);
    fs::remove(tmp + "-shm", ec);
    if (rc != 0 && err != EEXIST) {
      errno = err;
      throw_errno("journal " + path + ": cannot create it");
    }
    if (!parent.empty()) util::fsync_dir(parent.string());
  }
  check_header(path);
  auto impl = std::make_unique<Impl>(path, options);
  // No SQLITE_OPEN_CREATE: an existing file is opened, never replaced.
  impl->open_file(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW);
  // The version is checked before anything else so a newer (or foreign)
  // database is refused before this build writes a byte of it.
  impl->check_version();
  {
    sqlite3_stmt* s = impl->db.stmt("PRAGMA journal_mode = WAL");
    Use u(impl->db, s);
    while (u.step("switch it to write-ahead logging")) {}
  }
  impl->migrate();
  impl->read_origin();
  return Journal(std::move(impl));
}

const std::string& Journal::path() const { return impl_->path; }
const std::string& Journal::origin() const { return impl_->origin; }

bool Journal::record_healed(const HealedFix& fix) {
  if (fix.patch.empty()) return false;
  Tx tx(impl_->db, "record a heal");
  std::string hash = patch_hash(fix.patch);
  long long id = 0;
  std::optional<Entry> e = impl_->find(fix.signature, hash, &id);
  if (!e) {
    Entry n;
    n.signature = fix.signature;
    n.patch_hash = hash;
    n.check = fix.check;
    n.failure_type = fix.failure_type;
    n.patch = fix.patch;
    n.files = fix.files;
    n.fixer = fix.fixer;
    n.duration_ms = fix.duration_ms;
    n.verify_ms = fix.verify_ms;
    n.model_calls = fix.model_calls;
    n.cost_usd = fix.cost_usd;
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

std::vector<Entry> Journal::lookup(const std::string& signature) const {
  sqlite3_stmt* s =
      impl_->db.stmt(std::string("SELECT ") + kEntryColumns +
                     " FROM entries WHERE signature = ?1 AND verified = 1 ORDER BY last_verified DESC, id DESC");
  Use u(impl_->db, s);
  u.text(1, signature);
  std::vector<Entry> out;
  while (u.step("read it")) out.push_back(impl_->read_entry(s, nullptr));
  return out;
}

std::vector<Entry> Journal::list() const {
  sqlite3_stmt* s =
      impl_->db.stmt(std::string("SELECT ") + kEntryColumns + " FROM entries ORDER BY last_seen DESC, id DESC");
  Use u(impl_->db, s);
  std::vector<Entry> out;
  while (u.step("read it")) out.push_back(impl_->read_entry(s, nullptr));
  return out;
}

std::vector<Entry> Journal::forget(const std::string& raw_prefix) {
  std::string prefix = util::trim(raw_prefix);
  std::transform(prefix.begin(), prefix.end(), prefix.begin(), [](unsigned char c) { return std::tolower(c); });
  if (prefix.empty() || prefix.size() > 64 || !is_lower_hex(prefix))
    throw UsageError("--forget: '" + raw_prefix +
                     "' is not a signature prefix (hex digits, as 'phoenix journal' shows)");
  Tx tx(impl_->db, "forget an entry");
  const std::string sig = impl_->the_signature_starting_with(prefix);
  std::vector<Entry> removed = impl_->entries_of(sig);
  long long at = util::now_ms();
  for (const auto& e : removed) at = std::max(at, e.last_verified);
  impl_->delete_signature(sig, at);
  tx.commit();
  return removed;
}

Stats Journal::stats() const {
  sqlite3_stmt* s = impl_->db.stmt(
      "SELECT count(*), count(DISTINCT signature), total(verified), total(successes), total(failures), total(replays), "
      "total(replays * coalesce(duration_ms, 0)), "
      "sum(CASE WHEN model_calls IS NOT NULL AND replays > 0 THEN replays * model_calls END), "
      "total(CASE WHEN model_calls IS NULL THEN replays ELSE 0 END), "
      "sum(CASE WHEN cost_usd IS NOT NULL AND replays > 0 THEN replays * cost_usd END), "
      "total(CASE WHEN cost_usd IS NULL THEN replays ELSE 0 END) FROM entries");
  Use u(impl_->db, s);
  u.step("read it");
  Stats st;
  auto ll = [&](int i) { return static_cast<long long>(sqlite3_column_double(s, i)); };
  st.entries = sqlite3_column_int64(s, 0);
  st.signatures = sqlite3_column_int64(s, 1);
  st.verified = ll(2);
  st.demoted = st.entries - st.verified;
  st.successes = ll(3);
  st.failures = ll(4);
  st.replays = ll(5);
  st.saved_ms = ll(6);
  st.replays_unknown_model_calls = ll(8);
  st.replays_unknown_cost = ll(10);
  if (auto known = col_opt_int(s, 7)) st.saved_model_calls = *known;
  else if (st.replays_unknown_model_calls == 0) st.saved_model_calls = 0;
  if (auto known = col_opt_real(s, 9)) st.saved_cost_usd = *known;
  else if (st.replays_unknown_cost == 0) st.saved_cost_usd = 0.0;
  return st;
}

std::vector<Entry> Journal::export_entries() const {
  std::vector<Entry> out;
  std::map<long long, size_t> index;
  {
    sqlite3_stmt* s =
        impl_->db.stmt(std::string("SELECT ") + kEntryColumns + " FROM entries ORDER BY signature, patch_hash");
    Use u(impl_->db, s);
    while (u.step("read it")) {
      long long id = 0;
      out.push_back(impl_->read_entry(s, &id));
      index[id] = out.size() - 1;
    }
  }
  sqlite3_stmt* s = impl_->db.stmt(
      "SELECT entry_id, origin, attempts, successes, failures, replays, first_seen, last_seen, last_verified, "
      "last_failed, last_failure FROM tallies");
  Use u(impl_->db, s);
  while (u.step("read it")) {
    auto it = index.find(sqlite3_column_int64(s, 0));
    if (it == index.end()) continue;  // an orphan row: not part of any entry
    out[it->second].tallies[col_text(s, 1)] = read_tally(s, 2);
  }
  return out;
}

MergeResult Journal::merge(const std::vector<Entry>& incoming) {
  MergeResult r;
  Tx tx(impl_->db, "merge entries");
  for (const Entry& raw : incoming) {
    Entry in = raw;
    in.recompute();
    long long id = 0;
    std::optional<Entry> local = impl_->find(in.signature, in.patch_hash, &id);
    if (!local) {
      bool forgotten = false;
      {
        Use u(impl_->db, impl_->db.stmt("SELECT at FROM forgotten WHERE signature = ?1"));
        u.text(1, in.signature);
        if (u.step("read it")) forgotten = in.last_verified <= sqlite3_column_int64(u.get(), 0);
      }
      if (!in.verified || forgotten) {
        ++r.skipped;
        continue;
      }
      id = impl_->insert_entry(in);
      for (const auto& [origin, t] : in.tallies) impl_->write_tally(id, origin, t);
      impl_->write_totals(id, in);
      ++r.added;
      continue;
    }
    Entry merged = merge_entries(*local, in);
    if (same_entry(merged, *local)) {
      ++r.unchanged;
      continue;
    }
    impl_->write_fix_facts(id, merged);
    for (const auto& [origin, t] : merged.tallies) {
      auto old = local->tallies.find(origin);
      if (old == local->tallies.end() || !same_tally(old->second, t)) impl_->write_tally(id, origin, t);
    }
    impl_->write_totals(id, merged);
    ++r.updated;
  }
  tx.commit();
  return r;
}

}  // namespace phoenix::journal
