// journal/sqlite.h on a real SQLite file in a temp dir: statements are
// prepared once and reused, a Use resets its statement, a Tx rolls back
// unless committed, and failures go through the connection's OnError.
#include "journal/sqlite.h"

#include <gtest/gtest.h>

#include <string>

#include "test_util.h"
#include "util/error.h"

namespace phoenix::journal::sqlite {
namespace {

struct Failure {
  int rc = 0;
  std::string message, what;
};

class JournalSqlite : public ::testing::Test {
 protected:
  void SetUp() override {
    db.open(tmp / "t.sqlite", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 1000);
    db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, r REAL)", "create it");
  }

  long long count() {
    sqlite3_stmt* s = db.stmt("SELECT count(*) FROM t");
    Use u(db, s);
    u.step("count");
    return sqlite3_column_int64(s, 0);
  }

  test::ScopedTempDir tmp;
  Failure last;
  Connection db{[this](int rc, const std::string& message, const std::string& what) {
    last = {rc, message, what};
    throw Error("failed: " + what);
  }};
};

TEST_F(JournalSqlite, BindsStepsAndReadsColumnsWithNulls) {
  {
    Use u(db, db.stmt("INSERT INTO t (k, n, r) VALUES (?1, ?2, ?3)"));
    u.text(1, std::string("a\0b", 3)).opt_int(2, std::nullopt).opt_real(3, 0.5);
    EXPECT_FALSE(u.step("write"));
  }
  sqlite3_stmt* s = db.stmt("SELECT k, n, r FROM t");
  Use u(db, s);
  ASSERT_TRUE(u.step("read"));
  EXPECT_EQ(col_text(s, 0), std::string("a\0b", 3));
  EXPECT_FALSE(col_opt_int(s, 1).has_value());
  EXPECT_EQ(col_opt_real(s, 2), 0.5);
  EXPECT_FALSE(u.step("read"));
}

TEST_F(JournalSqlite, AStatementIsPreparedOnceAndResetAfterEachUse) {
  sqlite3_stmt* first = db.stmt("SELECT count(*) FROM t");
  EXPECT_EQ(db.stmt("SELECT count(*) FROM t"), first);
  EXPECT_EQ(count(), 0);
  EXPECT_EQ(count(), 0);  // a second use starts from the first row again
}

TEST_F(JournalSqlite, ATransactionRollsBackUnlessCommitted) {
  {
    Tx tx(db, "write");
    Use u(db, db.stmt("INSERT INTO t (k) VALUES ('dropped')"));
    u.step("write");
  }
  EXPECT_EQ(count(), 0);
  {
    Tx tx(db, "write");
    {
      Use u(db, db.stmt("INSERT INTO t (k) VALUES ('kept')"));
      u.step("write");
    }
    tx.commit();
  }
  EXPECT_EQ(count(), 1);
}

TEST_F(JournalSqlite, FailuresGoThroughOnErrorWithWhatWasBeingDone) {
  EXPECT_THROW(db.exec("INSERT INTO nowhere VALUES (1)", "write it"), Error);
  EXPECT_EQ(last.rc, SQLITE_ERROR);
  EXPECT_EQ(last.what, "write it");
  EXPECT_NE(last.message.find("nowhere"), std::string::npos);
  Use u(db, db.stmt("INSERT INTO t (k) VALUES (?1)"));
  u.text(1, "x");
  u.step("write");
  EXPECT_THROW(u.step("write again"), Error);  // the primary key is taken
  EXPECT_EQ(last.rc & 0xff, SQLITE_CONSTRAINT);
}

TEST(JournalSqliteOpen, AMissingFileWithoutCreateFails) {
  test::ScopedTempDir tmp;
  Connection db([](int, const std::string& message, const std::string& what) { throw Error(what + ": " + message); });
  EXPECT_THROW(db.open(tmp / "absent.sqlite", SQLITE_OPEN_READWRITE, 100), Error);
}

}  // namespace
}  // namespace phoenix::journal::sqlite
