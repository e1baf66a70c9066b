#include "journal/sqlite.h"

#include <errno.h>
#include <sys/types.h>

#include "util/error.h"
#include "util/fault.h"

namespace phoenix::journal::sqlite {

void Connection::open(const std::string& file, int flags, int busy_timeout_ms) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(file.c_str(), &raw, flags, nullptr);
  db_ = Db(raw);  // owns it even when the open failed
  if (rc != SQLITE_OK) fail(rc, "open it");
  sqlite3_extended_result_codes(db_.get(), 1);
  sqlite3_busy_timeout(db_.get(), busy_timeout_ms);
}

void Connection::fail(int rc, const std::string& what) const {
  std::string msg = db_.get() ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
  if (on_error_) on_error_(rc, msg, what);
  throw Error("cannot " + what + ": " + msg);
}

void Connection::check(int rc, const std::string& what) const {
  if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) fail(rc, what);
}

void Connection::exec(const char* sql, const std::string& what) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  check(rc, what);
}

sqlite3_stmt* Connection::stmt(const std::string& sql) {
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v3(db_.get(), sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &raw,
                                nullptr);
    Stmt owned(raw);
    check(rc, "read it");
    it = prepared_.emplace(sql, std::move(owned)).first;
  }
  return it->second.get();
}

Use& Use::text(int i, const std::string& v) {
  conn_.check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT), "bind");
  return *this;
}

Use& Use::integer(int i, long long v) {
  conn_.check(sqlite3_bind_int64(s_, i, v), "bind");
  return *this;
}

Use& Use::opt_int(int i, const std::optional<long long>& v) {
  conn_.check(v ? sqlite3_bind_int64(s_, i, *v) : sqlite3_bind_null(s_, i), "bind");
  return *this;
}

Use& Use::opt_real(int i, const std::optional<double>& v) {
  conn_.check(v ? sqlite3_bind_double(s_, i, *v) : sqlite3_bind_null(s_, i), "bind");
  return *this;
}

bool Use::step(const std::string& what) {
  int rc = sqlite3_step(s_);
  conn_.check(rc, what);
  return rc == SQLITE_ROW;
}

#if defined(PHOENIX_FAULT_POINTS) && PHOENIX_FAULT_POINTS
namespace {

// The fault point "journal-write" uses SQLite's own hook for failing I/O
// (the one its test suite uses): the unix VFS's write system calls are
// replaced for one COMMIT by ones that fail with the armed errno, so SQLite
// itself sees a full disk (SQLITE_FULL) or an I/O error (SQLITE_IOERR_WRITE)
// in the middle of writing its WAL, and rolls the transaction back.
int g_write_errno = 0;
ssize_t failing_write(int, const void*, size_t) {
  errno = g_write_errno;
  return -1;
}
ssize_t failing_pwrite(int, const void*, size_t, off_t) {
  errno = g_write_errno;
  return -1;
}

class FailingWrites {
 public:
  explicit FailingWrites(int err) : vfs_(err ? sqlite3_vfs_find(nullptr) : nullptr) {
    if (!vfs_ || !vfs_->xSetSystemCall) return;
    g_write_errno = err;
    vfs_->xSetSystemCall(vfs_, "write", reinterpret_cast<sqlite3_syscall_ptr>(&failing_write));
    vfs_->xSetSystemCall(vfs_, "pwrite", reinterpret_cast<sqlite3_syscall_ptr>(&failing_pwrite));
    vfs_->xSetSystemCall(vfs_, "pwrite64", reinterpret_cast<sqlite3_syscall_ptr>(&failing_pwrite));
  }
  ~FailingWrites() {
    if (!vfs_ || !vfs_->xSetSystemCall) return;
    for (const char* name : {"write", "pwrite", "pwrite64"}) vfs_->xSetSystemCall(vfs_, name, nullptr);
  }
  FailingWrites(const FailingWrites&) = delete;
  FailingWrites& operator=(const FailingWrites&) = delete;

 private:
  sqlite3_vfs* vfs_;
};

}  // namespace
#endif

void Tx::commit() {
  PHOENIX_FAULT("mid-journal-write");
#if defined(PHOENIX_FAULT_POINTS) && PHOENIX_FAULT_POINTS
  static std::atomic<int> hits{0};
  FailingWrites failing(util::fault_errno("journal-write", hits));
#endif
  conn_.exec("COMMIT", what_);
  done_ = true;
}

std::optional<long long> col_opt_int(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(s, i);
}

std::optional<double> col_opt_real(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(s, i);
}

std::string col_text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s, i))) : "";
}

}  // namespace phoenix::journal::sqlite
