// The journal's SQLite layer: one owner per handle, prepared statements kept
// for reuse, one scoped use of a statement, and transactions that roll back
// unless committed.
//
// Every failed call goes through Connection::fail, which hands SQLite's
// result code and message to the connection's OnError: the caller decides
// what a busy, corrupt or other failure means to its users (journal.cc turns
// them into its "locked" / "damaged" Errors).
#pragma once

#include <sqlite3.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace phoenix::journal::sqlite {

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

// A database connection and its prepared statements.
class Connection {
 public:
  // Called with a failed call's (extended) result code, SQLite's message
  // and what was being done ("read it"); it throws. Should it return,
  // fail() throws Error("cannot WHAT: MESSAGE").
  using OnError = std::function<void(int rc, const std::string& message, const std::string& what)>;

  explicit Connection(OnError on_error) : on_error_(std::move(on_error)) {}

  // sqlite3_open_v2 with `flags`, then extended result codes and the busy
  // timeout. The handle is owned even when the open fails.
  void open(const std::string& file, int flags, int busy_timeout_ms);

  [[noreturn]] void fail(int rc, const std::string& what) const;
  // fail() unless rc is SQLITE_OK, SQLITE_ROW or SQLITE_DONE.
  void check(int rc, const std::string& what) const;
  // Runs SQL that returns no rows (one or more statements).
  void exec(const char* sql, const std::string& what);
  // The prepared statement for `sql`, prepared on first use and kept: a
  // statement run often costs the same with ten rows or a hundred thousand.
  sqlite3_stmt* stmt(const std::string& sql);
  // Finalizes every kept statement (before a close that should checkpoint).
  void finalize_all() { prepared_.clear(); }

  sqlite3* get() const { return db_.get(); }

 private:
  OnError on_error_;
  Db db_;
  std::map<std::string, Stmt> prepared_;
};

// One use of a prepared statement: binds, steps, and resets on scope exit.
class Use {
 public:
  Use(const Connection& conn, sqlite3_stmt* s) : conn_(conn), s_(s) {}
  ~Use() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;
  Use& text(int i, const std::string& v);
  Use& integer(int i, long long v);
  Use& opt_int(int i, const std::optional<long long>& v);
  Use& opt_real(int i, const std::optional<double>& v);
  // True while there is a row.
  bool step(const std::string& what);
  sqlite3_stmt* get() const { return s_; }

 private:
  const Connection& conn_;
  sqlite3_stmt* s_;
};

// BEGIN IMMEDIATE: the write lock is taken (waiting on the busy timeout)
// before anything is read, so a transaction never fails half-way because
// another writer came first. Rolled back unless committed.
class Tx {
 public:
  Tx(Connection& conn, const std::string& what) : conn_(conn), what_(what) { conn_.exec("BEGIN IMMEDIATE", what_); }
  ~Tx() {
    if (!done_) sqlite3_exec(conn_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;
  // Has the crash point "mid-journal-write" (util/fault.h) before COMMIT.
  void commit();

 private:
  Connection& conn_;
  std::string what_;
  bool done_ = false;
};

// Column readers: NULL reads as nullopt (or "" for text).
std::optional<long long> col_opt_int(sqlite3_stmt* s, int i);
std::optional<double> col_opt_real(sqlite3_stmt* s, int i);
std::string col_text(sqlite3_stmt* s, int i);

}  // namespace phoenix::journal::sqlite
