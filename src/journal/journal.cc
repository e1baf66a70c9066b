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

#include "util/atomic_file.h"
#include "util/fault.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::journal {
namespace {

// ---------------------------------------------------------------------------
// One owner per SQLite handle.

class Db {
 public:
  Db() = default;
  explicit Db(sqlite3* db) : db_(db) {}
  Db(Db&& o) noexcept : db_(std::exchange(o.db_, nullptr)) {}
  Db& operator=(Db&& o) noexcept {
    std::swap(db_, o.db_);
    return *this;
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  // close_v2: statements still alive keep the connection until finalized,
  // so the order in which owners die does not matter.
  ~Db() {
    if (db_) sqlite3_close_v2(db_);
  }
  sqlite3* get() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(sqlite3_stmt* s) : s_(s) {}
  Stmt(Stmt&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() {
    if (s_) sqlite3_finalize(s_);
  }
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

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

bool is_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
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
    throw Error(damaged_message(path, "truncated: " + std::to_string(size) + " bytes, its header says " +
                                          std::to_string(pages * page)));
}

Tally merge_tally(const Tally& a, const Tally& b) {
  Tally r;
  r.attempts = std::max(a.attempts, b.attempts);
  r.successes = std::max(a.successes, b.successes);
  r.failures = std::max(a.failures, b.failures);
  r.replays = std::max(a.replays, b.replays);
  r.first_seen = a.first_seen == 0 ? b.first_seen : b.first_seen == 0 ? a.first_seen : std::min(a.first_seen, b.first_seen);
  r.last_seen = std::max(a.last_seen, b.last_seen);
  r.last_verified = std::max(a.last_verified, b.last_verified);
  r.last_failed = std::max(a.last_failed, b.last_failed);
  r.last_failure = b.last_failed > a.last_failed ? b.last_failure : a.last_failure;
  return r;
}

bool same_tally(const Tally& a, const Tally& b) {
  return a.attempts == b.attempts && a.successes == b.successes && a.failures == b.failures && a.replays == b.replays &&
         a.first_seen == b.first_seen && a.last_seen == b.last_seen && a.last_verified == b.last_verified &&
         a.last_failed == b.last_failed && a.last_failure == b.last_failure;
}

}  // namespace

// ---------------------------------------------------------------------------
// Entry

void Entry::recompute() {
  attempts = successes = failures = replays = 0;
  first_seen = last_seen = last_verified = last_failed = 0;
  last_failure.clear();
  for (const auto& [origin, t] : tallies) {
    attempts += t.attempts;
    successes += t.successes;
    failures += t.failures;
    replays += t.replays;
    if (t.first_seen != 0 && (first_seen == 0 || t.first_seen < first_seen)) first_seen = t.first_seen;
    last_seen = std::max(last_seen, t.last_seen);
    last_verified = std::max(last_verified, t.last_verified);
    if (t.last_failed > last_failed) {
      last_failed = t.last_failed;
      last_failure = t.last_failure;
    }
  }
  // A tie cannot come from one journal (its events on an entry get strictly
  // increasing times); between machines, a failure wins: a stale patch
  // costs seconds, a wrongly trusted one costs correctness.
  verified = last_verified > last_failed;
}

std::optional<long long> Entry::saved_model_calls() const {
  if (replays == 0) return 0;
  if (!model_calls) return std::nullopt;
  return replays * *model_calls;
}

std::optional<double> Entry::saved_cost_usd() const {
  if (replays == 0) return 0.0;
  if (!cost_usd) return std::nullopt;
  return static_cast<double>(replays) * *cost_usd;
}

Entry merge_entries(const Entry& mine, const Entry& theirs) {
  Entry r = mine;
  if (!r.duration_ms) r.duration_ms = theirs.duration_ms;
  if (!r.verify_ms) r.verify_ms = theirs.verify_ms;
  if (!r.model_calls) r.model_calls = theirs.model_calls;
  if (!r.cost_usd) r.cost_usd = theirs.cost_usd;
  for (const auto& [origin, t] : theirs.tallies) {
    auto it = r.tallies.find(origin);
    r.tallies[origin] = it == r.tallies.end() ? t : merge_tally(it->second, t);
  }
  r.recompute();
  return r;
}

namespace {

bool same_entry(const Entry& a, const Entry& b) {
  if (a.tallies.size() != b.tallies.size()) return false;
  for (const auto& [origin, t] : a.tallies) {
    auto it = b.tallies.find(origin);
    if (it == b.tallies.end() || !same_tally(t, it->second)) return false;
  }
  return a.duration_ms == b.duration_ms && a.verify_ms == b.verify_ms && a.model_calls == b.model_calls &&
         a.cost_usd == b.cost_usd;
}

}  // namespace

std::string patch_hash(const std::string& patch) { return util::sha256_hex(patch); }

std::string format_ms(long long ms) {
  char buf[64];
  if (ms < 1000) std::snprintf(buf, sizeof buf, "%lldms", ms);
  else if (ms < 60'000) std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000);
  else if (ms < 3'600'000) std::snprintf(buf, sizeof buf, "%lldm%02llds", ms / 60'000, ms / 1000 % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", ms / 3'600'000, ms / 60'000 % 60);
  return buf;
}

// ---------------------------------------------------------------------------
// Journal::Impl

struct Journal::Impl {
  std::string path;
  OpenOptions options;
  std::string origin;
  Db db;
  // Prepared once, reused: a replay's lookup and record cost the same with
  // ten entries or a hundred thousand.
  std::map<std::string, Stmt> prepared;

  Impl(std::string p, OpenOptions o) : path(std::move(p)), options(o) {}

  // Turns a failed SQLite call into the Error the header promises.
  [[noreturn]] void fail(int rc, const std::string& what) const {
    int primary = rc & 0xff;
    std::string msg = db.get() ? sqlite3_errmsg(db.get()) : sqlite3_errstr(rc);
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
      throw Error("journal " + path + " is locked by another process (waited " +
                  std::to_string(options.busy_timeout_ms) + " ms to " + what +
                  "); let it finish, or run with --no-journal");
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || rc == SQLITE_IOERR_SHORT_READ)
      throw Error(damaged_message(path, msg));
    throw Error("journal " + path + ": cannot " + what + ": " + msg);
  }
  void check(int rc, const std::string& what) const {
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) fail(rc, what);
  }

  void open_file(const std::string& file, int flags) {
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(file.c_str(), &raw, flags, nullptr);
    db = Db(raw);  // owns it even when the open failed
    if (rc != SQLITE_OK) fail(rc, "open it");
    sqlite3_extended_result_codes(db.get(), 1);
    sqlite3_busy_timeout(db.get(), options.busy_timeout_ms);
  }

  void exec(const char* sql, const std::string& what) {
    char* err = nullptr;
    int rc = sqlite3_exec(db.get(), sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    check(rc, what);
  }

  sqlite3_stmt* stmt(const std::string& sql) {
    auto it = prepared.find(sql);
    if (it == prepared.end()) {
      sqlite3_stmt* raw = nullptr;
      int rc = sqlite3_prepare_v3(db.get(), sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &raw,
                                  nullptr);
      Stmt owned(raw);
      check(rc, "read it");
      it = prepared.emplace(sql, std::move(owned)).first;
    }
    return it->second.get();
  }

  long long user_version() {
    sqlite3_stmt* s = stmt("PRAGMA user_version");
    Use u(*this, s);
    u.step("read its schema version");
    return sqlite3_column_int64(s, 0);
  }

  // One use of a prepared statement: binds, steps, and resets on scope exit.
  class Use {
   public:
    Use(Impl& impl, sqlite3_stmt* s) : impl_(impl), s_(s) {}
    ~Use() {
      sqlite3_reset(s_);
      sqlite3_clear_bindings(s_);
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    Use& text(int i, const std::string& v) {
      impl_.check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT), "bind");
      return *this;
    }
    Use& integer(int i, long long v) {
      impl_.check(sqlite3_bind_int64(s_, i, v), "bind");
      return *this;
    }
    Use& opt_int(int i, const std::optional<long long>& v) {
      impl_.check(v ? sqlite3_bind_int64(s_, i, *v) : sqlite3_bind_null(s_, i), "bind");
      return *this;
    }
    Use& opt_real(int i, const std::optional<double>& v) {
      impl_.check(v ? sqlite3_bind_double(s_, i, *v) : sqlite3_bind_null(s_, i), "bind");
      return *this;
    }
    // True while there is a row.
    bool step(const std::string& what) {
      int rc = sqlite3_step(s_);
      impl_.check(rc, what);
      return rc == SQLITE_ROW;
    }
    sqlite3_stmt* get() const { return s_; }

   private:
    Impl& impl_;
    sqlite3_stmt* s_;
  };

  // BEGIN IMMEDIATE: the write lock is taken (waiting on the busy timeout)
  // before anything is read, so a transaction never fails half-way because
  // another writer came first. Rolled back unless committed.
  class Tx {
   public:
    explicit Tx(Impl& impl, const std::string& what) : impl_(impl), what_(what) { impl_.exec("BEGIN IMMEDIATE", what_); }
    ~Tx() {
      if (!done_) sqlite3_exec(impl_.db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
    Tx(const Tx&) = delete;
    Tx& operator=(const Tx&) = delete;
    void commit() {
      PHOENIX_FAULT("mid-journal-write");
      impl_.exec("COMMIT", what_);
      done_ = true;
    }

   private:
    Impl& impl_;
    std::string what_;
    bool done_ = false;
  };

  static std::optional<long long> col_opt_int(sqlite3_stmt* s, int i) {
    if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(s, i);
  }
  static std::optional<double> col_opt_real(sqlite3_stmt* s, int i) {
    if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(s, i);
  }
  static std::string col_text(sqlite3_stmt* s, int i) {
    const unsigned char* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s, i))) : "";
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
      throw Error(damaged_message(path, "entry " + e.signature.substr(0, 12) + " has unreadable files: " + ex.what()));
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
    sqlite3_stmt* s = stmt(
        "SELECT origin, attempts, successes, failures, replays, first_seen, last_seen, last_verified, last_failed, "
        "last_failure FROM tallies WHERE entry_id = ?1");
    Use u(*this, s);
    u.integer(1, id);
    std::map<std::string, Tally> out;
    while (u.step("read it")) {
      Tally t;
      t.attempts = sqlite3_column_int64(s, 1);
      t.successes = sqlite3_column_int64(s, 2);
      t.failures = sqlite3_column_int64(s, 3);
      t.replays = sqlite3_column_int64(s, 4);
      t.first_seen = sqlite3_column_int64(s, 5);
      t.last_seen = sqlite3_column_int64(s, 6);
      t.last_verified = sqlite3_column_int64(s, 7);
      t.last_failed = sqlite3_column_int64(s, 8);
      t.last_failure = col_text(s, 9);
      out[col_text(s, 0)] = t;
    }
    return out;
  }

  // The entry with its tallies, or nullopt.
  std::optional<Entry> find(const std::string& signature, const std::string& hash, long long* id) {
    sqlite3_stmt* s = stmt(std::string("SELECT ") + kEntryColumns + " FROM entries WHERE signature = ?1 AND patch_hash = ?2");
    std::optional<Entry> e;
    {
      Use u(*this, s);
      u.text(1, signature).text(2, hash);
      if (u.step("read it")) e = read_entry(s, id);
    }
    if (e) e->tallies = read_tallies(*id);
    return e;
  }

  long long insert_entry(const Entry& e) {
    sqlite3_stmt* s = stmt(
        "INSERT INTO entries (signature, patch_hash, check_id, failure_type, patch, files, fixer, duration_ms, "
        "verify_ms, model_calls, cost_usd) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    Use u(*this, s);
    u.text(1, e.signature).text(2, e.patch_hash).text(3, e.check).text(4, e.failure_type).text(5, e.patch);
    u.text(6, util::canonical(util::Json(e.files))).text(7, e.fixer);
    u.opt_int(8, e.duration_ms).opt_int(9, e.verify_ms).opt_int(10, e.model_calls).opt_real(11, e.cost_usd);
    u.step("write it");
    return sqlite3_last_insert_rowid(db.get());
  }

  void write_fix_facts(long long id, const Entry& e) {
    sqlite3_stmt* s =
        stmt("UPDATE entries SET duration_ms = ?2, verify_ms = ?3, model_calls = ?4, cost_usd = ?5 WHERE id = ?1");
    Use u(*this, s);
    u.integer(1, id).opt_int(2, e.duration_ms).opt_int(3, e.verify_ms).opt_int(4, e.model_calls).opt_real(5, e.cost_usd);
    u.step("write it");
  }

  void write_tally(long long id, const std::string& origin, const Tally& t) {
    sqlite3_stmt* s = stmt(
        "INSERT OR REPLACE INTO tallies (entry_id, origin, attempts, successes, failures, replays, first_seen, "
        "last_seen, last_verified, last_failed, last_failure) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    Use u(*this, s);
    u.integer(1, id).text(2, origin).integer(3, t.attempts).integer(4, t.successes).integer(5, t.failures);
    u.integer(6, t.replays).integer(7, t.first_seen).integer(8, t.last_seen).integer(9, t.last_verified);
    u.integer(10, t.last_failed).text(11, t.last_failure);
    u.step("write it");
  }

  void write_totals(long long id, const Entry& e) {
    sqlite3_stmt* s = stmt(
        "UPDATE entries SET verified = ?2, attempts = ?3, successes = ?4, failures = ?5, replays = ?6, "
        "first_seen = ?7, last_seen = ?8, last_verified = ?9, last_failed = ?10, last_failure = ?11 WHERE id = ?1");
    Use u(*this, s);
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
    sqlite3_stmt* s = stmt("SELECT max(max(last_seen, last_verified, last_failed)) FROM entries WHERE signature = ?1");
    Use u(*this, s);
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

  // Refuses a newer or a foreign database; returns its version. Reads only.
  long long check_version() {
    long long v = user_version();
    if (v > kSchemaVersion)
      throw Error("journal " + path + " has schema version " + std::to_string(v) + ", newer than this Phoenix knows (" +
                  std::to_string(kSchemaVersion) + "): upgrade Phoenix, or run with --no-journal (the file is left as it is)");
    if (v == 0) {
      sqlite3_stmt* s = stmt("SELECT count(*) FROM sqlite_master");
      Use u(*this, s);
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
      Tx tx(*this, "upgrade its schema");
      long long now = user_version();  // another process may have upgraded it meanwhile
      if (now == v) {
        exec(kMigrations[v], "upgrade its schema to version " + std::to_string(v + 1));
        if (v == 0) {
          sqlite3_stmt* s = stmt("INSERT INTO meta (key, value) VALUES ('origin', ?1)");
          Use u(*this, s);
          u.text(1, random_hex(16));
          u.step("write it");
        }
        exec(("PRAGMA user_version = " + std::to_string(v + 1)).c_str(), "upgrade its schema");
      }
      tx.commit();
      v = user_version();
    }
  }

  void read_origin() {
    sqlite3_stmt* s = stmt("SELECT value FROM meta WHERE key = 'origin'");
    Use u(*this, s);
    if (!u.step("read it")) throw Error(damaged_message(path, "it has no origin id"));
    origin = col_text(s, 0);
    if (origin.size() != 32 || !is_hex(origin)) throw Error(damaged_message(path, "its origin id is invalid"));
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
      fresh.exec("PRAGMA journal_mode = WAL", "create it");
      fresh.migrate();
      fresh.prepared.clear();
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
    sqlite3_stmt* s = impl->stmt("PRAGMA journal_mode = WAL");
    Impl::Use u(*impl, s);
    while (u.step("switch it to write-ahead logging")) {
    }
  }
  impl->migrate();
  impl->read_origin();
  return Journal(std::move(impl));
}

const std::string& Journal::path() const { return impl_->path; }
const std::string& Journal::origin() const { return impl_->origin; }

bool Journal::record_healed(const HealedFix& fix) {
  if (fix.patch.empty()) return false;
  Impl::Tx tx(*impl_, "record a heal");
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
  Impl::Tx tx(*impl_, "record a replay");
  long long id = 0;
  std::optional<Entry> e = impl_->find(signature, hash, &id);
  if (!e) return false;
  impl_->apply_event(id, *e, Impl::Event::kReplay, "");
  tx.commit();
  return true;
}

bool Journal::record_failed(const std::string& signature, const std::string& hash, const std::string& why) {
  Impl::Tx tx(*impl_, "record a failure");
  long long id = 0;
  std::optional<Entry> e = impl_->find(signature, hash, &id);
  if (!e) return false;
  impl_->apply_event(id, *e, Impl::Event::kFailed, why);
  tx.commit();
  return true;
}

std::vector<Entry> Journal::lookup(const std::string& signature) const {
  sqlite3_stmt* s = impl_->stmt(std::string("SELECT ") + kEntryColumns +
                                " FROM entries WHERE signature = ?1 AND verified = 1 ORDER BY last_verified DESC, id DESC");
  Impl::Use u(*impl_, s);
  u.text(1, signature);
  std::vector<Entry> out;
  while (u.step("read it")) out.push_back(impl_->read_entry(s, nullptr));
  return out;
}

std::vector<Entry> Journal::list() const {
  sqlite3_stmt* s = impl_->stmt(std::string("SELECT ") + kEntryColumns + " FROM entries ORDER BY last_seen DESC, id DESC");
  Impl::Use u(*impl_, s);
  std::vector<Entry> out;
  while (u.step("read it")) out.push_back(impl_->read_entry(s, nullptr));
  return out;
}

std::vector<Entry> Journal::forget(const std::string& raw_prefix) {
  std::string prefix = util::trim(raw_prefix);
  std::transform(prefix.begin(), prefix.end(), prefix.begin(), [](unsigned char c) { return std::tolower(c); });
  if (prefix.empty() || prefix.size() > 64 || !is_hex(prefix))
    throw UsageError("--forget: '" + raw_prefix + "' is not a signature prefix (hex digits, as 'phoenix journal' shows)");
  Impl::Tx tx(*impl_, "forget an entry");
  // Hex digits sort below 'g', so [prefix, prefix + "g") is exactly the
  // signatures starting with prefix, read through the index.
  auto signatures = [&](const std::string& lo, const std::string& hi, int limit) {
    sqlite3_stmt* s = impl_->stmt(
        "SELECT signature, min(check_id) FROM entries WHERE signature >= ?1 AND signature < ?2 "
        "GROUP BY signature ORDER BY max(last_seen) DESC LIMIT ?3");
    Impl::Use u(*impl_, s);
    u.text(1, lo).text(2, hi).integer(3, limit);
    std::vector<std::pair<std::string, std::string>> out;
    while (u.step("read it")) out.emplace_back(Impl::col_text(s, 0), Impl::col_text(s, 1));
    return out;
  };
  auto describe = [](const std::vector<std::pair<std::string, std::string>>& sigs, size_t shown) {
    std::string s;
    for (size_t i = 0; i < sigs.size() && i < shown; ++i)
      s += (i ? ", " : "") + sigs[i].first.substr(0, 12) + " (" + sigs[i].second + ")";
    if (sigs.size() > shown) s += ", ...";
    return s;
  };
  auto matches = signatures(prefix, prefix + "g", 11);
  if (matches.empty()) {
    auto all = signatures("", "g", 11);
    throw UsageError("--forget: no journal entry's signature starts with '" + prefix + "' " +
                     (all.empty() ? std::string("(the journal is empty)") : "(the journal has: " + describe(all, 10) + ")"));
  }
  if (matches.size() > 1)
    throw UsageError("--forget: '" + prefix + "' is ambiguous: it matches " + describe(matches, 10) +
                     "; give more digits");
  const std::string sig = matches[0].first;
  std::vector<Entry> removed;
  {
    sqlite3_stmt* s = impl_->stmt(std::string("SELECT ") + kEntryColumns + " FROM entries WHERE signature = ?1");
    Impl::Use u(*impl_, s);
    u.text(1, sig);
    while (u.step("read it")) removed.push_back(impl_->read_entry(s, nullptr));
  }
  long long at = util::now_ms();
  for (const auto& e : removed) at = std::max(at, e.last_verified);
  for (const char* sql : {"DELETE FROM tallies WHERE entry_id IN (SELECT id FROM entries WHERE signature = ?1)",
                          "DELETE FROM entries WHERE signature = ?1"}) {
    Impl::Use u(*impl_, impl_->stmt(sql));
    u.text(1, sig);
    u.step("forget an entry");
  }
  {
    Impl::Use u(*impl_, impl_->stmt("INSERT OR REPLACE INTO forgotten (signature, at) VALUES (?1, ?2)"));
    u.text(1, sig).integer(2, at);
    u.step("forget an entry");
  }
  tx.commit();
  return removed;
}

Stats Journal::stats() const {
  sqlite3_stmt* s = impl_->stmt(
      "SELECT count(*), count(DISTINCT signature), total(verified), total(successes), total(failures), total(replays), "
      "total(replays * coalesce(duration_ms, 0)), "
      "sum(CASE WHEN model_calls IS NOT NULL AND replays > 0 THEN replays * model_calls END), "
      "total(CASE WHEN model_calls IS NULL THEN replays ELSE 0 END), "
      "sum(CASE WHEN cost_usd IS NOT NULL AND replays > 0 THEN replays * cost_usd END), "
      "total(CASE WHEN cost_usd IS NULL THEN replays ELSE 0 END) FROM entries");
  Impl::Use u(*impl_, s);
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
  if (auto known = Impl::col_opt_int(s, 7)) st.saved_model_calls = *known;
  else if (st.replays_unknown_model_calls == 0) st.saved_model_calls = 0;
  if (auto known = Impl::col_opt_real(s, 9)) st.saved_cost_usd = *known;
  else if (st.replays_unknown_cost == 0) st.saved_cost_usd = 0.0;
  return st;
}

std::vector<Entry> Journal::export_entries() const {
  std::vector<Entry> out;
  std::map<long long, size_t> index;
  {
    sqlite3_stmt* s = impl_->stmt(std::string("SELECT ") + kEntryColumns + " FROM entries ORDER BY signature, patch_hash");
    Impl::Use u(*impl_, s);
    while (u.step("read it")) {
      long long id = 0;
      out.push_back(impl_->read_entry(s, &id));
      index[id] = out.size() - 1;
    }
  }
  sqlite3_stmt* s = impl_->stmt(
      "SELECT entry_id, origin, attempts, successes, failures, replays, first_seen, last_seen, last_verified, "
      "last_failed, last_failure FROM tallies");
  Impl::Use u(*impl_, s);
  while (u.step("read it")) {
    auto it = index.find(sqlite3_column_int64(s, 0));
    if (it == index.end()) continue;  // an orphan row: not part of any entry
    Tally t;
    t.attempts = sqlite3_column_int64(s, 2);
    t.successes = sqlite3_column_int64(s, 3);
    t.failures = sqlite3_column_int64(s, 4);
    t.replays = sqlite3_column_int64(s, 5);
    t.first_seen = sqlite3_column_int64(s, 6);
    t.last_seen = sqlite3_column_int64(s, 7);
    t.last_verified = sqlite3_column_int64(s, 8);
    t.last_failed = sqlite3_column_int64(s, 9);
    t.last_failure = Impl::col_text(s, 10);
    out[it->second].tallies[Impl::col_text(s, 1)] = t;
  }
  return out;
}

MergeResult Journal::merge(const std::vector<Entry>& incoming) {
  MergeResult r;
  Impl::Tx tx(*impl_, "merge entries");
  for (const Entry& raw : incoming) {
    Entry in = raw;
    in.recompute();
    long long id = 0;
    std::optional<Entry> local = impl_->find(in.signature, in.patch_hash, &id);
    if (!local) {
      bool forgotten = false;
      {
        Impl::Use u(*impl_, impl_->stmt("SELECT at FROM forgotten WHERE signature = ?1"));
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
