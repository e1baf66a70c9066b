// Opening a journal: its schema and migrations, and the checks that keep a
// damaged, foreign or newer file from being written (journal.h).
#include "journal/journal.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <utility>

#include "journal/internal.h"
#include "journal/sqlite.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace phoenix::journal {

using internal::damaged_message;
using sqlite::col_text;
using sqlite::Tx;
using sqlite::Use;

namespace {

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
    // 1 -> 2: the flake ledger (journal.h, record_flake).
    R"sql(
-- One test Phoenix judged flaky at least once: a failure that passed when
-- run again at the same tree. runs and failures count that test's runs in
-- those judgements (the first measurement and its re-runs).
CREATE TABLE flakes (
  check_id   TEXT NOT NULL,
  test       TEXT NOT NULL,
  runs       INTEGER NOT NULL DEFAULT 0,
  failures   INTEGER NOT NULL DEFAULT 0,
  flaky      INTEGER NOT NULL DEFAULT 0,  -- judgements that found it flaky
  first_seen INTEGER NOT NULL DEFAULT 0,  -- ms since epoch
  last_seen  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (check_id, test)
) WITHOUT ROWID;
-- The trees (git tree ids) it was flaky at.
CREATE TABLE flake_trees (
  check_id TEXT NOT NULL,
  test     TEXT NOT NULL,
  tree     TEXT NOT NULL,
  PRIMARY KEY (check_id, test, tree)
) WITHOUT ROWID;
)sql",
};
constexpr int kMigrationCount = static_cast<int>(sizeof kMigrations / sizeof kMigrations[0]);
static_assert(kMigrationCount == kSchemaVersion, "one migration per schema version");

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

std::string internal::damaged_message(const std::string& path, const std::string& why) {
  return "journal " + path + " is damaged: " + why + "; run with --no-journal, or move it aside";
}

// ---------------------------------------------------------------------------
// Journal::Impl: opening, schema, integrity.

// Turns a failed SQLite call into the Error the header promises.
void Journal::Impl::fail(const std::string& path, int busy_timeout_ms, int rc, const std::string& msg,
                         const std::string& what) {
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    throw Error("journal " + path + " is locked by another process (waited " + std::to_string(busy_timeout_ms) +
                " ms to " + what + "); let it finish, or run with --no-journal");
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || rc == SQLITE_IOERR_SHORT_READ)
    throw Error(damaged_message(path, msg));
  throw Error("journal " + path + ": cannot " + what + ": " + msg);
}

void Journal::Impl::open_file(const std::string& file, int flags) { db.open(file, flags, options.busy_timeout_ms); }

long long Journal::Impl::user_version() {
  sqlite3_stmt* s = db.stmt("PRAGMA user_version");
  Use u(db, s);
  u.step("read its schema version");
  return sqlite3_column_int64(s, 0);
}

// Refuses a newer or a foreign database; returns its version. Reads only.
long long Journal::Impl::check_version() {
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

// The whole upgrade is one transaction: a journal is at one version or the
// next, never between two migrations.
void Journal::Impl::migrate() {
  if (check_version() >= kSchemaVersion) return;
  Tx tx(db, "upgrade its schema");
  // Read again under the write lock: another process may have upgraded it meanwhile.
  for (long long v = user_version(); v < kSchemaVersion; ++v) {
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
}

void Journal::Impl::read_origin() {
  sqlite3_stmt* s = db.stmt("SELECT value FROM meta WHERE key = 'origin'");
  Use u(db, s);
  if (!u.step("read it")) throw Error(damaged_message(path, "it has no origin id"));
  origin = col_text(s, 0);
  if (origin.size() != 32 || !is_lower_hex(origin)) throw Error(damaged_message(path, "its origin id is invalid"));
}

// ---------------------------------------------------------------------------
// Journal::open

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

}  // namespace phoenix::journal
