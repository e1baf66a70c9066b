// The journal: real SQLite files in temp dirs (records, verdicts, forget,
// stats, damaged / locked / newer files), sharing through a bare repository
// on disk, the journal fixer, and the engine healing a repeated bug from the
// journal with no call to the fixer behind it.
#include "journal/journal.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "engine/cycle.h"
#include "engine/journal_sink.h"
#include "engine/signature.h"
#include "fixers/journal_fixer.h"
#include "gitx/repo.h"
#include "journal/share.h"
#include "test_util.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/text.h"

namespace phoenix::journal {
namespace {

namespace fs = std::filesystem;
using test::read;
using test::write;
using Clock = std::chrono::steady_clock;

std::string sig_of(const std::string& name) { return util::sha256_hex("issue " + name); }

std::string set_value_patch(const std::string& from, const std::string& to, const std::string& file = "value.txt") {
  return "diff --git a/" + file + " b/" + file + "\n--- a/" + file + "\n+++ b/" + file + "\n@@ -1 +1 @@\n-" + from +
         "\n+" + to + "\n";
}

Fix fix(const std::string& sig, const std::string& patch, std::optional<long long> calls = 2,
        std::optional<double> cost = 0.25, long long duration_ms = 90'000) {
  Fix f;
  f.signature = sig;
  f.check = "unit";
  f.failure_type = "unit";
  f.patch = patch;
  f.files = {"value.txt"};
  f.fixer = "harness";
  f.duration_ms = duration_ms;
  f.verify_ms = 1200;
  f.model_calls = calls;
  f.cost_usd = cost;
  return f;
}

std::string file_bytes(const std::string& path) { return read(path); }

// Runs SQL on a journal file directly, as another program would.
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

long long raw_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
  long long v = -1;
  if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

std::string raw_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
  std::string v;
  if (sqlite3_step(s) == SQLITE_ROW) v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

std::string error_of(const std::function<void()>& f, int* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.exit_code();
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class JournalStore : public ::testing::Test {
 protected:
  std::string path() const { return tmp / ".phoenix/journal.sqlite"; }
  test::ScopedTempDir tmp;
};

// ---------------------------------------------------------------------------
// Records, verdicts and lookups

TEST_F(JournalStore, CreatesAWalJournalWithItsSchemaVersion) {
  {
    Journal j = Journal::open(path());
    EXPECT_EQ(j.origin().size(), 32u);
  }
  EXPECT_EQ(raw_int(path(), "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(raw_text(path(), "PRAGMA journal_mode"), "wal");
  // Built beside the target and linked into place: nothing left behind.
  for (const auto& e : fs::directory_iterator(tmp / ".phoenix"))
    EXPECT_FALSE(contains(e.path().filename().string(), ".new.")) << e.path();
  // The origin id is made once.
  std::string origin = Journal::open(path()).origin();
  EXPECT_EQ(Journal::open(path()).origin(), origin);
}

TEST_F(JournalStore, MissingFileIsAnErrorWhenNotCreating) {
  OpenOptions o;
  o.create = false;
  EXPECT_TRUE(contains(error_of([&] { Journal::open(path(), o); }), "does not exist"));
  EXPECT_FALSE(fs::exists(path()));
}

TEST_F(JournalStore, RecordsAHealAndLooksItUp) {
  Journal j = Journal::open(path());
  std::string s = sig_of("a");
  EXPECT_TRUE(j.record_healed(fix(s, set_value_patch("bad", "good"))));
  auto hits = j.lookup(s);
  ASSERT_EQ(hits.size(), 1u);
  const Entry& e = hits[0];
  EXPECT_TRUE(e.verified);
  EXPECT_EQ(e.patch, set_value_patch("bad", "good"));
  EXPECT_EQ(e.patch_hash, util::sha256_hex(e.patch));
  EXPECT_EQ(e.check, "unit");
  EXPECT_EQ(e.fixer, "harness");
  EXPECT_EQ(e.files, std::vector<std::string>{"value.txt"});
  EXPECT_EQ(e.attempts, 1);
  EXPECT_EQ(e.successes, 1);
  EXPECT_EQ(e.failures, 0);
  EXPECT_EQ(e.model_calls, 2);
  EXPECT_EQ(e.cost_usd, 0.25);
  EXPECT_GT(e.first_seen, 0);
  EXPECT_TRUE(j.lookup(sig_of("other")).empty());
  EXPECT_FALSE(j.record_healed(fix(s, "")));  // nothing to replay
}

TEST_F(JournalStore, SameSignatureAndPatchIsOneEntryThatKeepsTheOriginalFix) {
  Journal j = Journal::open(path());
  std::string s = sig_of("a");
  j.record_healed(fix(s, set_value_patch("bad", "good"), std::nullopt, std::nullopt, 60'000));
  Fix again = fix(s, set_value_patch("bad", "good"), 5, 1.5, 10);
  again.fixer = "bisect";
  j.record_healed(again);
  auto all = j.list();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].successes, 2);
  EXPECT_EQ(all[0].fixer, "harness");  // the first fix's facts stay
  EXPECT_EQ(all[0].duration_ms, 60'000);
  EXPECT_EQ(all[0].model_calls, 5);  // unknown ones are filled in
  EXPECT_EQ(all[0].cost_usd, 1.5);
}

TEST_F(JournalStore, TwoPatchesForOneSignatureNewestVerifiedFirst) {
  Journal j = Journal::open(path());
  std::string s = sig_of("a");
  std::string p1 = set_value_patch("bad", "good"), p2 = set_value_patch("bad", "fine");
  j.record_healed(fix(s, p1));
  j.record_healed(fix(s, p2));
  auto hits = j.lookup(s);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].patch, p2);
  EXPECT_EQ(hits[1].patch, p1);
  ASSERT_TRUE(j.record_replay(s, patch_hash(p1)));  // p1 measured green again: now the newest
  hits = j.lookup(s);
  EXPECT_EQ(hits[0].patch, p1);
}

TEST_F(JournalStore, AFailureDemotesAndAHealPromotesAgain) {
  Journal j = Journal::open(path());
  std::string s = sig_of("a"), p = set_value_patch("bad", "good");
  j.record_healed(fix(s, p));
  // Same millisecond or not, the newer event decides.
  ASSERT_TRUE(j.record_failed(s, patch_hash(p), "red: exit=1"));
  EXPECT_TRUE(j.lookup(s).empty());
  auto all = j.list();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_FALSE(all[0].verified);
  EXPECT_EQ(all[0].failures, 1);
  EXPECT_EQ(all[0].attempts, 2);
  EXPECT_EQ(all[0].last_failure, "red: exit=1");
  j.record_healed(fix(s, p));
  ASSERT_EQ(j.lookup(s).size(), 1u);
  EXPECT_FALSE(j.record_failed(sig_of("unknown"), patch_hash(p), "x"));
  EXPECT_FALSE(j.record_replay(sig_of("unknown"), patch_hash(p)));
}

TEST_F(JournalStore, ReplaysCountWhatTheySaved) {
  Journal j = Journal::open(path());
  std::string s = sig_of("a"), p = set_value_patch("bad", "good");
  j.record_healed(fix(s, p, 3, 0.5, 120'000));
  j.record_replay(s, patch_hash(p));
  j.record_replay(s, patch_hash(p));
  Entry e = j.lookup(s).at(0);
  EXPECT_EQ(e.replays, 2);
  EXPECT_EQ(e.successes, 3);
  EXPECT_EQ(e.saved_ms(), 240'000);
  EXPECT_EQ(e.saved_model_calls(), 6);
  EXPECT_DOUBLE_EQ(e.saved_cost_usd().value(), 1.0);
}

TEST_F(JournalStore, StatsSumWhatReplaysSavedAndUnknownCostStaysNull) {
  Journal j = Journal::open(path());
  Stats empty = j.stats();
  EXPECT_EQ(empty.entries, 0);
  EXPECT_EQ(empty.saved_model_calls, 0);  // nothing replayed: a known zero
  std::string a = sig_of("a"), b = sig_of("b"), c = sig_of("c");
  std::string pa = set_value_patch("a", "b"), pb = set_value_patch("c", "d"), pc = set_value_patch("e", "f");
  j.record_healed(fix(a, pa, 2, 0.5, 1000));
  j.record_healed(fix(b, pb, std::nullopt, std::nullopt, 3000));  // unknown calls and cost
  j.record_healed(fix(c, pc, 1, 0.1, 500));
  j.record_replay(a, patch_hash(pa));
  j.record_replay(a, patch_hash(pa));
  j.record_replay(b, patch_hash(pb));
  j.record_failed(c, patch_hash(pc), "no longer applies: x");
  Stats s = j.stats();
  EXPECT_EQ(s.entries, 3);
  EXPECT_EQ(s.signatures, 3);
  EXPECT_EQ(s.verified, 2);
  EXPECT_EQ(s.demoted, 1);
  EXPECT_EQ(s.replays, 3);
  EXPECT_EQ(s.successes, 6);
  EXPECT_EQ(s.failures, 1);
  EXPECT_EQ(s.saved_ms, 2 * 1000 + 3000);
  EXPECT_EQ(s.saved_model_calls, 4);
  EXPECT_DOUBLE_EQ(s.saved_cost_usd.value(), 1.0);
  EXPECT_EQ(s.replays_unknown_model_calls, 1);
  EXPECT_EQ(s.replays_unknown_cost, 1);

  // Only replays of fixes with unknown cost: the saving is unknown, not 0.
  test::ScopedTempDir other;
  Journal k = Journal::open(other / "j.sqlite");
  k.record_healed(fix(b, pb, std::nullopt, std::nullopt));
  k.record_replay(b, patch_hash(pb));
  Stats u = k.stats();
  EXPECT_FALSE(u.saved_model_calls.has_value());
  EXPECT_FALSE(u.saved_cost_usd.has_value());
  EXPECT_FALSE(k.lookup(b).at(0).saved_cost_usd().has_value());
}

TEST_F(JournalStore, ForgetRemovesEveryPatchOfOneSignature) {
  Journal j = Journal::open(path());
  std::string a = sig_of("a"), b = sig_of("b");
  j.record_healed(fix(a, set_value_patch("bad", "good")));
  j.record_healed(fix(a, set_value_patch("bad", "fine")));
  j.record_healed(fix(b, set_value_patch("bad", "good")));
  auto removed = j.forget(util::trim(a.substr(0, 12)));
  EXPECT_EQ(removed.size(), 2u);
  EXPECT_TRUE(j.lookup(a).empty());
  EXPECT_EQ(j.lookup(b).size(), 1u);
  EXPECT_EQ(raw_int(path(), "SELECT count(*) FROM tallies"), 1);
  // Upper case is fine too.
  std::string upper = b.substr(0, 8);
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(j.forget(upper).size(), 1u);
  EXPECT_TRUE(j.list().empty());
}

TEST_F(JournalStore, ForgetRefusesAnAmbiguousOrUnknownPrefixNamingTheCandidates) {
  Journal j = Journal::open(path());
  // Two signatures that share their first three digits.
  std::string s1 = "abc1" + std::string(60, '0'), s2 = "abc2" + std::string(60, '0');
  j.record_healed(fix(s1, set_value_patch("bad", "good")));
  Fix f2 = fix(s2, set_value_patch("bad", "good"));
  f2.check = "lint";
  j.record_healed(f2);
  int code = 0;
  std::string amb = error_of([&] { j.forget("abc"); }, &code);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_TRUE(contains(amb, "ambiguous")) << amb;
  EXPECT_TRUE(contains(amb, s1.substr(0, 12) + " (unit)")) << amb;
  EXPECT_TRUE(contains(amb, s2.substr(0, 12) + " (lint)")) << amb;
  std::string unknown = error_of([&] { j.forget("ffff"); }, &code);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_TRUE(contains(unknown, "no journal entry")) << unknown;
  EXPECT_TRUE(contains(unknown, s1.substr(0, 12))) << unknown;
  EXPECT_TRUE(contains(error_of([&] { j.forget("xyz!"); }, &code), "not a signature prefix"));
  EXPECT_EQ(code, kExitUsage);
  EXPECT_TRUE(contains(error_of([&] { j.forget(""); }), "not a signature prefix"));
  EXPECT_EQ(j.list().size(), 2u);  // nothing was removed by a refused forget
  EXPECT_EQ(j.forget("abc2").size(), 1u);
  Journal empty = Journal::open(tmp / "empty.sqlite");
  EXPECT_TRUE(contains(error_of([&] { empty.forget("ab"); }), "the journal is empty"));
}

// ---------------------------------------------------------------------------
// Damaged, newer, foreign and locked files

class JournalFile : public JournalStore {
 protected:
  // A journal of `n` entries with kilobyte patches: many pages.
  void make_journal(int n) {
    Journal j = Journal::open(path());
    for (int i = 0; i < n; ++i)
      j.record_healed(fix(sig_of(std::to_string(i)),
                          set_value_patch(std::string(500, 'a') + std::to_string(i), std::string(500, 'b'))));
  }
  void expect_damaged(const std::string& bytes_before) {
    int code = 0;
    std::string why = error_of([&] { Journal::open(path()); }, &code);
    EXPECT_EQ(code, kExitRed);
    EXPECT_TRUE(contains(why, "journal " + path() + " is damaged: ")) << why;
    EXPECT_TRUE(contains(why, "run with --no-journal, or move it aside")) << why;
    EXPECT_EQ(file_bytes(path()), bytes_before) << "the damaged journal was changed";
    EXPECT_FALSE(fs::exists(path() + "-wal"));
  }
};

TEST_F(JournalFile, GarbageIsRefusedAndNeverOverwritten) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 131 + 7) % 251));
  write(tmp.path(), ".phoenix/journal.sqlite", garbage);
  expect_damaged(garbage);
  expect_damaged(garbage);  // and again: still refused, still the same bytes
}

TEST_F(JournalFile, ShortAndEmptyFilesAreRefused) {
  write(tmp.path(), ".phoenix/journal.sqlite", "SQLite format 3");
  expect_damaged("SQLite format 3");
  write(tmp.path(), ".phoenix/journal.sqlite", "");
  expect_damaged("");
}

TEST_F(JournalFile, TruncatedJournalIsRefusedAndKept) {
  make_journal(200);
  std::string whole = file_bytes(path());
  ASSERT_GT(whole.size(), 100'000u);
  std::string half = whole.substr(0, whole.size() / 2);
  write(tmp.path(), ".phoenix/journal.sqlite", half);
  expect_damaged(half);
  std::string why = error_of([&] { Journal::open(path()); });
  EXPECT_TRUE(contains(why, "truncated")) << why;
}

TEST_F(JournalFile, ACorruptPageFoundLaterIsReportedAsDamaged) {
  make_journal(200);
  std::string bytes = file_bytes(path());
  // Scribble over the middle of the file: the header stays sound, so the
  // damage shows only when a query reaches those pages.
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 8192; ++i) bytes[i] = '\x5a';
  write(tmp.path(), ".phoenix/journal.sqlite", bytes);
  std::string why = error_of([&] {
    Journal j = Journal::open(path());
    j.list();
    j.stats();
  });
  EXPECT_TRUE(contains(why, "is damaged")) << why;
}

TEST_F(JournalFile, ANewerSchemaIsRefusedUntouched) {
  make_journal(1);
  raw_sql(path(), "PRAGMA user_version = 7");
  std::string before = file_bytes(path());
  std::string why = error_of([&] { Journal::open(path()); });
  EXPECT_TRUE(contains(why, "schema version 7, newer than this Phoenix knows (" + std::to_string(kSchemaVersion) + ")"))
      << why;
  EXPECT_TRUE(contains(why, "--no-journal")) << why;
  EXPECT_EQ(file_bytes(path()), before);
  EXPECT_EQ(raw_int(path(), "PRAGMA user_version"), 7);
}

TEST_F(JournalFile, AnUnversionedEmptyDatabaseIsMigratedForward) {
  fs::create_directories(tmp / ".phoenix");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA user_version = 0; VACUUM;", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ASSERT_TRUE(fs::exists(path()));
  Journal j = Journal::open(path());
  j.record_healed(fix(sig_of("a"), set_value_patch("bad", "good")));
  EXPECT_EQ(raw_int(path(), "PRAGMA user_version"), kSchemaVersion);
}

TEST_F(JournalFile, AForeignDatabaseIsRefused) {
  fs::create_directories(tmp / ".phoenix");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE photos (id INTEGER);", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  std::string before = file_bytes(path());
  std::string why = error_of([&] { Journal::open(path()); });
  EXPECT_TRUE(contains(why, "is not a Phoenix journal")) << why;
  EXPECT_EQ(file_bytes(path()), before);
}

// A child process that holds the journal's write lock for `hold_ms`;
// returns once it holds it.
pid_t hold_write_lock(const std::string& path, int hold_ms) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) ::_exit(3);
    if (sqlite3_exec(db, "BEGIN EXCLUSIVE; INSERT INTO meta (key, value) VALUES ('held', 'x');", nullptr, nullptr,
                     nullptr) != SQLITE_OK)
      ::_exit(4);
    char c = 'x';
    if (::write(fds[1], &c, 1) != 1) ::_exit(5);
    ::usleep(static_cast<useconds_t>(hold_ms) * 1000);
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    ::_exit(0);
  }
  ::close(fds[1]);
  char c = 0;
  ssize_t n = ::read(fds[0], &c, 1);
  ::close(fds[0]);
  return n == 1 ? pid : -1;
}

int wait_child(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(JournalFile, LockedByAnotherProcessWaitsThenSaysSo) {
  make_journal(1);
  pid_t child = hold_write_lock(path(), 3000);
  ASSERT_GT(child, 0);
  OpenOptions o;
  o.busy_timeout_ms = 300;
  Journal j = Journal::open(path(), o);  // WAL: reading is not blocked
  EXPECT_EQ(j.list().size(), 1u);
  auto t0 = Clock::now();
  int code = 0;
  std::string why = error_of([&] { j.record_healed(fix(sig_of("new"), set_value_patch("x", "y"))); }, &code);
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_TRUE(contains(why, "journal " + path() + " is locked by another process")) << why;
  EXPECT_TRUE(contains(why, "--no-journal")) << why;
  EXPECT_EQ(code, kExitRed);
  EXPECT_GE(waited, 250);
  EXPECT_LT(waited, 2500);
  ::kill(child, SIGKILL);
  wait_child(child);
  // Once the holder is gone, the same handle writes.
  EXPECT_TRUE(j.record_healed(fix(sig_of("new"), set_value_patch("x", "y"))));
}

TEST_F(JournalFile, AShortLockIsWaitedOut) {
  make_journal(1);
  pid_t child = hold_write_lock(path(), 400);
  ASSERT_GT(child, 0);
  Journal j = Journal::open(path());  // default busy timeout: seconds
  auto t0 = Clock::now();
  EXPECT_TRUE(j.record_healed(fix(sig_of("new"), set_value_patch("x", "y"))));
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_GE(waited, 200);
  EXPECT_EQ(wait_child(child), 0);
  EXPECT_EQ(j.list().size(), 2u);
}

// ---------------------------------------------------------------------------
// The shared file format

TEST(JournalFormat, RoundTripsAndRejectsWhatIsWrong) {
  test::ScopedTempDir tmp;
  Journal j = Journal::open(tmp / "j.sqlite");
  std::string s = sig_of("a"), p = set_value_patch("bad", "good");
  j.record_healed(fix(s, p, std::nullopt, std::nullopt));
  j.record_replay(s, patch_hash(p));
  std::string text = serialize(j.export_entries());
  auto back = parse(text, "test");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].patch, p);
  EXPECT_EQ(back[0].replays, 1);
  EXPECT_TRUE(back[0].verified);
  EXPECT_FALSE(back[0].model_calls.has_value());  // null survives as null
  EXPECT_EQ(serialize(back), text);               // deterministic

  auto lines = util::split_lines(text);
  ASSERT_EQ(lines.size(), 2u);
  auto err = [&](const std::string& t) { return error_of([&] { parse(t, "W"); }); };
  EXPECT_TRUE(contains(err(""), "W: empty file"));
  EXPECT_TRUE(contains(err("hello\n"), "W: line 1: not JSON"));
  EXPECT_TRUE(contains(err("{\"format\":\"other\"}\n"), "not a Phoenix journal header"));
  EXPECT_TRUE(contains(err("{\"entries\":0,\"format\":\"phoenix-journal\",\"version\":9}\n"),
                       "newer Phoenix (format version 9"));
  EXPECT_TRUE(contains(err(lines[0] + "\n"), "announces 1 entries but 0 follow"));
  EXPECT_TRUE(contains(err(lines[0] + "\n" + lines[1] + "\n" + lines[1] + "\n"), "line 3:"));
  util::Json e = util::Json::parse(lines[1]);
  auto with = [&](const std::function<void(util::Json&)>& edit) {
    util::Json x = e;
    edit(x);
    return err(lines[0] + "\n" + x.dump() + "\n");
  };
  EXPECT_TRUE(contains(with([](util::Json& x) { x.erase("patch"); }), "line 2: missing 'patch'"));
  EXPECT_TRUE(contains(with([](util::Json& x) { x["patch"] = "not a diff"; }), "'patch_hash' does not match"));
  EXPECT_TRUE(contains(with([](util::Json& x) { x["signature"] = "zz"; }), "'signature' is not 64"));
  EXPECT_TRUE(contains(with([](util::Json& x) { x["model_calls"] = -1; }), "'model_calls' is not a non-negative"));
  EXPECT_TRUE(contains(with([](util::Json& x) { x["tallies"] = util::Json::object(); }), "'tallies'"));
  EXPECT_TRUE(contains(with([](util::Json& x) { x["files"] = "value.txt"; }), "'files' is not an array"));
  std::string junk_patch = "this is no patch";
  EXPECT_TRUE(contains(with([&](util::Json& x) {
                         x["patch"] = junk_patch;
                         x["patch_hash"] = util::sha256_hex(junk_patch);
                       }),
                       "'patch' is not a git patch"));
}

TEST(JournalFormat, MergingIsIdempotentAndKeepsEveryOriginsCounts) {
  Entry a;
  a.signature = sig_of("a");
  a.tallies["1"] = {3, 3, 0, 2, 10, 30, 30, 0, ""};
  a.tallies["2"] = {1, 0, 1, 0, 20, 40, 0, 40, "red"};
  Entry b = a;
  b.tallies["2"] = {2, 1, 1, 0, 20, 50, 50, 40, "red"};
  b.tallies["3"] = {1, 1, 0, 1, 5, 5, 5, 0, ""};
  b.model_calls = 4;
  Entry m = merge_entries(a, b);
  EXPECT_EQ(m.attempts, 3 + 2 + 1);
  EXPECT_EQ(m.replays, 2 + 0 + 1);
  EXPECT_EQ(m.first_seen, 5);
  EXPECT_TRUE(m.verified);  // origin 2 verified at 50, after its failure at 40
  EXPECT_EQ(m.model_calls, 4);
  Entry again = merge_entries(m, b);
  EXPECT_EQ(again.attempts, m.attempts);
  EXPECT_EQ(merge_entries(b, a).attempts, m.attempts);
}

// ---------------------------------------------------------------------------
// push / pull through a bare repository on disk

class JournalShare : public ::testing::Test {
 protected:
  void SetUp() override {
    bare = tmp / "remote.git";
    fs::create_directories(bare);
    test::git(bare, {"init", "-q", "--bare"});
    a = test::init_repo(tmp / "a");
    write(a, "value.txt", "good\n");
    write(a, ".gitignore", ".phoenix/\n");
    test::commit_all(a, "start");
    test::git(a, {"remote", "add", "origin", bare});
    test::git(a, {"push", "-q", "origin", "main"});
    b = tmp / "b";
    test::git(tmp.path(), {"clone", "-q", bare, b});
  }
  std::string jpath(const std::string& repo) const { return repo + "/.phoenix/journal.sqlite"; }

  test::ScopedTempDir tmp;
  std::string bare, a, b;
};

TEST_F(JournalShare, PushThenPullCarriesVerifiedEntriesAndNeverDoubleCounts) {
  std::string s = sig_of("a"), p = set_value_patch("bad", "good");
  Journal ja = Journal::open(jpath(a));
  Journal jb = Journal::open(jpath(b));
  EXPECT_FALSE(pull(jb, b, "origin").found);  // nothing shared yet
  ja.record_healed(fix(s, p));
  ja.record_replay(s, patch_hash(p));
  ja.record_replay(s, patch_hash(p));
  // An entry only ever demoted here does not travel.
  ja.record_healed(fix(sig_of("stale"), p));
  ja.record_failed(sig_of("stale"), patch_hash(p), "red");

  PushResult pushed = push(ja, a, "origin");
  EXPECT_TRUE(pushed.pushed);
  EXPECT_EQ(pushed.entries, 1);
  EXPECT_EQ(util::trim(test::git(bare, {"rev-parse", "refs/phoenix/journal"})), pushed.commit);
  EXPECT_FALSE(push(ja, a, "origin").pushed);  // up to date: no new commit

  PullResult pulled = pull(jb, b, "origin");
  EXPECT_TRUE(pulled.found);
  EXPECT_EQ(pulled.merged.added, 1);
  Entry e = jb.lookup(s).at(0);
  EXPECT_EQ(e.successes, 3);
  EXPECT_EQ(e.replays, 2);
  EXPECT_EQ(e.model_calls, 2);
  EXPECT_TRUE(jb.lookup(sig_of("stale")).empty());

  // B replays it once and pushes; A pulls: both sides' counts, once each.
  jb.record_replay(s, patch_hash(p));
  PushResult pb = push(jb, b, "origin");
  EXPECT_TRUE(pb.pushed);
  EXPECT_EQ(util::trim(test::git(bare, {"rev-list", "--count", "refs/phoenix/journal"})), "2");  // a fast-forward
  PullResult back = pull(ja, a, "origin");
  EXPECT_EQ(back.merged.updated, 1);
  EXPECT_EQ(ja.lookup(s).at(0).replays, 3);
  EXPECT_EQ(ja.lookup(s).at(0).successes, 4);
  // Pulling again, or pulling back what one pushed, changes nothing.
  EXPECT_EQ(pull(ja, a, "origin").merged.unchanged, 1);
  EXPECT_EQ(pull(jb, b, "origin").merged.unchanged, 1);
  EXPECT_EQ(ja.lookup(s).at(0).replays, 3);
  EXPECT_EQ(jb.lookup(s).at(0).replays, 3);
  EXPECT_EQ(ja.stats().saved_model_calls, 6);
}

TEST_F(JournalShare, ConflictingPatchesForOneSignatureAreBothKeptNewestVerifiedFirst) {
  std::string s = sig_of("a");
  std::string pa = set_value_patch("bad", "good"), pb = set_value_patch("bad", "fine");
  Journal ja = Journal::open(jpath(a));
  Journal jb = Journal::open(jpath(b));
  ja.record_healed(fix(s, pa));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  jb.record_healed(fix(s, pb));
  push(ja, a, "origin");
  PushResult merged = push(jb, b, "origin");  // B's push keeps A's entry
  EXPECT_EQ(merged.entries, 2);
  EXPECT_EQ(merged.from_remote, 1);
  pull(ja, a, "origin");
  pull(jb, b, "origin");
  for (Journal* j : {&ja, &jb}) {
    auto hits = j->lookup(s);
    ASSERT_EQ(hits.size(), 2u);
    EXPECT_EQ(hits[0].patch, pb);  // verified last
    EXPECT_EQ(hits[1].patch, pa);
  }
}

TEST_F(JournalShare, ADemotionTravelsToTheOtherSide) {
  std::string s = sig_of("a"), p = set_value_patch("bad", "good");
  Journal ja = Journal::open(jpath(a));
  Journal jb = Journal::open(jpath(b));
  ja.record_healed(fix(s, p));
  push(ja, a, "origin");
  pull(jb, b, "origin");
  ASSERT_EQ(jb.lookup(s).size(), 1u);
  ja.record_failed(s, patch_hash(p), "no longer applies: value.txt");
  push(ja, a, "origin");
  pull(jb, b, "origin");
  EXPECT_TRUE(jb.lookup(s).empty());
  EXPECT_EQ(jb.list().at(0).last_failure, "no longer applies: value.txt");
}

TEST_F(JournalShare, PullDoesNotBringBackWhatWasForgotten) {
  std::string s = sig_of("a"), p = set_value_patch("bad", "good");
  Journal ja = Journal::open(jpath(a));
  Journal jb = Journal::open(jpath(b));
  ja.record_healed(fix(s, p));
  push(ja, a, "origin");
  pull(jb, b, "origin");
  jb.forget(s.substr(0, 10));
  EXPECT_EQ(pull(jb, b, "origin").merged.skipped, 1);
  EXPECT_TRUE(jb.list().empty());
  // A fix verified after the forget does come.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ja.record_replay(s, patch_hash(p));
  push(ja, a, "origin");
  EXPECT_EQ(pull(jb, b, "origin").merged.added, 1);
}

TEST_F(JournalShare, AGarbageRefIsRefusedAndTheLocalJournalIsUntouched) {
  std::string s = sig_of("a"), p = set_value_patch("bad", "good");
  Journal jb = Journal::open(jpath(b));
  jb.record_healed(fix(s, p));
  const std::string export_before = serialize(jb.export_entries());
  gitx::Repo ra = gitx::Repo::open(a);
  auto plant = [&](const std::string& content) {
    ra.write_blob_commit("refs/phoenix/journal", "journal.jsonl", content, "hand-made");
    test::git(a, {"push", "-q", "-f", "origin", "refs/phoenix/journal:refs/phoenix/journal"});
  };
  auto expect_refused = [&](const std::string& needle) {
    std::string why = error_of([&] { pull(jb, b, "origin"); });
    EXPECT_TRUE(contains(why, needle)) << why;
    EXPECT_TRUE(contains(why, "the local journal is untouched")) << why;
    EXPECT_EQ(serialize(jb.export_entries()), export_before);
    std::string pwhy = error_of([&] { push(jb, b, "origin"); });
    EXPECT_TRUE(contains(pwhy, "nothing was pushed")) << pwhy;
  };
  plant("this is not a journal\n");
  expect_refused("line 1: not JSON");
  plant("{\"entries\":1,\"format\":\"phoenix-journal\",\"version\":1}\n{\"signature\":\"" + s + "\"}\n");
  expect_refused("line 2: missing 'patch_hash'");
  plant("{\"entries\":0,\"format\":\"phoenix-journal\",\"version\":2}\n");
  expect_refused("written by a newer Phoenix");
  ra.write_blob_commit("refs/phoenix/journal", "README", "hello\n", "no journal file");
  test::git(a, {"push", "-q", "-f", "origin", "refs/phoenix/journal:refs/phoenix/journal"});
  expect_refused("has no journal.jsonl");
  // A ref pointing at a blob rather than a commit.
  write(a, "blob.txt", "not a commit\n");
  std::string blob = util::trim(test::git(a, {"hash-object", "-w", "blob.txt"}));
  test::git(a, {"push", "-q", "-f", "origin", blob + ":refs/phoenix/journal"});
  expect_refused("is not a Phoenix journal");
}

TEST_F(JournalShare, AnUnknownRemoteIsAClearError) {
  Journal ja = Journal::open(jpath(a));
  std::string why = error_of([&] { pull(ja, a, "nowhere"); });
  EXPECT_TRUE(contains(why, "cannot reach remote 'nowhere'")) << why;
  int code = 0;
  error_of([&] { push(ja, a, "--upload-pack=evil"); }, &code);
  EXPECT_EQ(code, kExitUsage);
}

// ---------------------------------------------------------------------------
// The journal fixer on its own

class JournalFixerUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    root = test::init_repo(tmp / "repo");
    write(root, "value.txt", "bad\n");
    write(root, ".gitignore", ".phoenix/\n");
    test::commit_all(root, "bad");
    req.repo_root = root;
    req.failure.issue_signature = sig_of("a");
  }
  test::ScopedTempDir tmp;
  std::string root;
  fixers::Request req;
};

TEST_F(JournalFixerUnit, OffersVerifiedPatchesNewestFirstOnePerCallThenNothing) {
  Journal j = Journal::open(root + "/.phoenix/journal.sqlite");
  std::string p1 = set_value_patch("bad", "good"), p2 = set_value_patch("bad", "fine");
  j.record_healed(fix(req.failure.issue_signature, p1, 3));
  j.record_healed(fix(req.failure.issue_signature, p2, 3));
  j.record_replay(req.failure.issue_signature, patch_hash(p2));
  fixers::JournalFixer f(j);
  EXPECT_EQ(f.name(), "journal");
  fixers::Proposal first = f.propose(req);
  ASSERT_EQ(first.status, fixers::Status::kProposed);
  EXPECT_EQ(first.patch, p2);
  EXPECT_EQ(first.model_calls, 0);
  EXPECT_FALSE(first.cost_usd.has_value());
  EXPECT_EQ(first.detail, "replay of " + req.failure.issue_signature.substr(0, 12) +
                              " (healed 2 times, saves ~3 model calls and ~1m30s)");
  req.earlier.push_back({"journal", p2, {"value.txt"}, "red: exit=1", ""});
  fixers::Proposal second = f.propose(req);
  ASSERT_EQ(second.status, fixers::Status::kProposed);
  EXPECT_EQ(second.patch, p1);
  EXPECT_EQ(f.propose(req).status, fixers::Status::kNothing);
  // A fresh fixer skips what `earlier` already holds.
  fixers::JournalFixer g(j);
  req.earlier.push_back({"journal", p1, {"value.txt"}, "red: exit=1", ""});
  EXPECT_EQ(g.propose(req).status, fixers::Status::kNothing);
}

TEST_F(JournalFixerUnit, APatchThatNoLongerAppliesIsDemotedAndSkipped) {
  Journal j = Journal::open(root + "/.phoenix/journal.sqlite");
  std::string stale = set_value_patch("rotten", "good"), fresh = set_value_patch("bad", "good");
  j.record_healed(fix(req.failure.issue_signature, fresh));
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  j.record_healed(fix(req.failure.issue_signature, stale));  // newest, but value.txt holds "bad"
  fixers::JournalFixer f(j);
  fixers::Proposal p = f.propose(req);
  ASSERT_EQ(p.status, fixers::Status::kProposed);
  EXPECT_EQ(p.patch, fresh);
  auto all = j.list();
  auto it = std::find_if(all.begin(), all.end(), [&](const Entry& e) { return e.patch == stale; });
  ASSERT_NE(it, all.end());
  EXPECT_FALSE(it->verified);
  EXPECT_TRUE(contains(it->last_failure, "no longer applies")) << it->last_failure;
  fixers::Proposal none = f.propose(req);
  EXPECT_EQ(none.status, fixers::Status::kNothing);
  EXPECT_EQ(read(root + "/value.txt"), "bad\n");  // a fixer never writes to the repository
}

TEST_F(JournalFixerUnit, ADamagedJournalMakesTheFixerUnavailableNotTheRun) {
  std::string path = root + "/.phoenix/journal.sqlite";
  Journal j = Journal::open(path);
  j.record_healed(fix(req.failure.issue_signature, set_value_patch("bad", "good")));
  raw_sql(path, "DROP TABLE entries");
  fixers::JournalFixer f(j);
  fixers::Proposal p = f.propose(req);
  EXPECT_EQ(p.status, fixers::Status::kUnavailable);
  EXPECT_FALSE(p.detail.empty());
}

// ---------------------------------------------------------------------------
// The engine: a repeated bug heals from the journal with no fixer call

// Green when value.txt's first line is "good" and flag.txt is not "on".
// The failure output never changes, so the same bug has the same signature.
class ValueCheck : public engine::CheckRunner {
 public:
  checks::SenseResult run(const checks::CheckSpec& spec, const std::string& root) override {
    ++runs;
    checks::SenseResult r;
    r.id = spec.id;
    std::string value = util::split_lines(read(root + "/value.txt")).empty()
                            ? ""
                            : util::trim(util::split_lines(read(root + "/value.txt"))[0]);
    bool flag = fs::exists(root + "/flag.txt") && util::trim(read(root + "/flag.txt")) == "on";
    r.ok = value == "good" && !flag;
    r.signal = r.ok ? "exit=0" : "exit=1";
    r.evidence = r.ok ? "" : "value_test failed";
    r.output = r.ok ? "ok\n" : "FAIL: value_test (value is not good)\n";
    return r;
  }
  int runs = 0;
};

// The fixer behind the journal: proposes its patches in order and counts
// every call (each would be a model call).
struct Calls {
  int calls = 0;
};

class CountingFixer : public fixers::Fixer {
 public:
  // `calls` outlives the fixer: the engine owns it and destroys it at the end of a run.
  CountingFixer(std::vector<std::string> patches, std::shared_ptr<Calls> calls)
      : patches_(std::move(patches)), seen_(std::move(calls)) {}
  std::string name() const override { return "counting"; }
  fixers::Proposal propose(const fixers::Request&) override {
    ++seen_->calls;
    fixers::Proposal p;
    if (next_ >= patches_.size()) return p;
    p.status = fixers::Status::kProposed;
    p.patch = patches_[next_++];
    p.model_calls = 1;
    p.cost_usd = 0.04;
    p.duration_ms = 45'000;
    return p;
  }

 private:
  std::vector<std::string> patches_;
  std::shared_ptr<Calls> seen_;
  size_t next_ = 0;
};

class JournalReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    root = test::init_repo(tmp / "repo");
    write(root, "value.txt", "good\n");
    write(root, ".gitignore", ".phoenix/\n");
    test::commit_all(root, "good");
    write(root, "value.txt", "bad\n");
    test::commit_all(root, "break it");
    cfg = config::parse(
        R"({"checks":[{"id":"value","kind":"command_exit","target":["true"],"editable":["value.txt","flag.txt"]}]})",
        "phoenix.json");
    opt.templates_dir = PHOENIX_SOURCE_DIR "/templates";
    journal.emplace(Journal::open(root + "/.phoenix/journal.sqlite"));
  }

  // One `phoenix run`: the real journal fixer first, the counting fixer behind it.
  engine::RunResult run(std::vector<std::string> patches) {
    std::vector<std::unique_ptr<fixers::Fixer>> fx;
    fx.push_back(std::make_unique<fixers::JournalFixer>(*journal));
    fixer = std::make_shared<Calls>();
    auto counting = std::make_unique<CountingFixer>(std::move(patches), fixer);
    fx.push_back(std::move(counting));
    trace::Trace t(root + "/.phoenix/trace.jsonl");
    std::vector<std::string> warnings;
    engine::JournalSink sink(*journal, [&](const std::string& w) { warnings.push_back(w); });
    engine::Engine e(root, cfg, opt, checks, std::move(fx), t, nullptr, &sink);
    engine::RunResult r = e.run();
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    return r;
  }
  void break_again(const std::string& value, const std::string& flag = "") {
    write(root, "value.txt", value + "\n");
    if (!flag.empty()) write(root, "flag.txt", flag + "\n");
    test::commit_all(root, "break it again");
  }
  std::string signature() const { return engine::issue_signature("value", "FAIL: value_test (value is not good)\n"); }

  test::ScopedTempDir tmp;
  std::string root;
  config::Config cfg;
  engine::RunOptions opt;
  ValueCheck checks;
  std::optional<Journal> journal;
  std::shared_ptr<Calls> fixer;
};

TEST_F(JournalReplay, ARepeatedBugHealsFromTheJournalWithZeroFixerCalls) {
  // First time: the fixer behind the journal heals it (one call).
  engine::RunResult first = run({set_value_patch("bad", "good")});
  ASSERT_EQ(first.issues.size(), 1u);
  EXPECT_EQ(first.issues[0].state, engine::State::kHealed);
  EXPECT_EQ(first.issues[0].fixer, "counting");
  EXPECT_EQ(fixer->calls, 1);
  EXPECT_EQ(first.issues[0].issue_signature, signature());
  auto stored = journal->lookup(signature());
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].fixer, "counting");
  EXPECT_EQ(stored[0].model_calls, 1);
  EXPECT_EQ(stored[0].cost_usd, 0.04);
  EXPECT_EQ(stored[0].duration_ms, 45'000);
  EXPECT_TRUE(stored[0].verify_ms.has_value());

  // The same bug again: healed from the journal, the fixer is never asked.
  break_again("bad");
  int runs_before = checks.runs;
  engine::RunResult second = run({set_value_patch("bad", "good")});
  ASSERT_EQ(second.issues.size(), 1u);
  EXPECT_EQ(second.issues[0].state, engine::State::kHealed);
  EXPECT_EQ(second.issues[0].fixer, "journal");
  EXPECT_EQ(second.issues[0].model_calls, 0);
  EXPECT_EQ(fixer->calls, 0);
  EXPECT_EQ(checks.runs - runs_before, 2);  // detection + the fresh re-measurement
  EXPECT_EQ(read(root + "/value.txt"), "good\n");
  Entry e = journal->lookup(signature()).at(0);
  EXPECT_EQ(e.replays, 1);
  EXPECT_EQ(e.successes, 2);
  Stats s = journal->stats();
  EXPECT_EQ(s.saved_model_calls, 1);
  EXPECT_EQ(s.saved_ms, 45'000);
  EXPECT_DOUBLE_EQ(s.saved_cost_usd.value(), 0.04);
}

TEST_F(JournalReplay, AStalePatchThatNoLongerAppliesIsDemotedAndTheFixerRuns) {
  run({set_value_patch("bad", "good")});
  // Same failure, but value.txt no longer holds the line the patch expects.
  break_again("rotten");
  engine::RunResult r = run({set_value_patch("rotten", "good")});
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].state, engine::State::kHealed);
  EXPECT_EQ(r.issues[0].fixer, "counting");
  EXPECT_EQ(fixer->calls, 1);
  auto all = journal->list();
  ASSERT_EQ(all.size(), 2u);
  auto old =
      std::find_if(all.begin(), all.end(), [](const Entry& e) { return e.patch == set_value_patch("bad", "good"); });
  ASSERT_NE(old, all.end());
  EXPECT_FALSE(old->verified);
  EXPECT_EQ(old->failures, 1);
  EXPECT_TRUE(contains(old->last_failure, "no longer applies")) << old->last_failure;
  auto live = journal->lookup(signature());
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].patch, set_value_patch("rotten", "good"));
}

TEST_F(JournalReplay, APatchThatAppliesButNoLongerFixesIsDemotedOnItsFailure) {
  run({set_value_patch("bad", "good")});
  // Same failure output, but now flag.txt matters too: the stored patch
  // applies and leaves the check red.
  break_again("bad", "on");
  std::string both = set_value_patch("bad", "good") + set_value_patch("on", "off", "flag.txt");
  engine::RunResult r = run({both});
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].state, engine::State::kHealed);
  EXPECT_EQ(r.issues[0].fixer, "counting");
  EXPECT_EQ(r.issues[0].attempts, 2);  // the replay was measured red, then the fix green
  EXPECT_EQ(fixer->calls, 1);
  auto all = journal->list();
  auto old =
      std::find_if(all.begin(), all.end(), [](const Entry& e) { return e.patch == set_value_patch("bad", "good"); });
  ASSERT_NE(old, all.end());
  EXPECT_FALSE(old->verified);
  EXPECT_TRUE(contains(old->last_failure, "red")) << old->last_failure;
  auto live = journal->lookup(signature());
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].patch, both);
}

// ---------------------------------------------------------------------------
// The command line

class JournalCli : public JournalShare {};

TEST_F(JournalCli, ListsForgetsAndSumsStats) {
  auto empty = test::run_phoenix(a, {"journal"});
  EXPECT_EQ(empty.code, 0) << empty.out;
  EXPECT_TRUE(contains(empty.out, "the journal is empty")) << empty.out;
  EXPECT_FALSE(fs::exists(jpath(a)));  // reading never creates it
  std::string s1 = "abc1" + std::string(60, '0'), s2 = "abc2" + std::string(60, '0');
  std::string p = set_value_patch("bad", "good");
  {
    Journal j = Journal::open(jpath(a));
    j.record_healed(fix(s1, p, 2, 0.5, 60'000));
    j.record_replay(s1, patch_hash(p));
    j.record_healed(fix(s2, p));
  }
  auto listed = test::run_phoenix(a, {"journal"});
  EXPECT_EQ(listed.code, 0) << listed.out;
  EXPECT_TRUE(contains(listed.out, s1.substr(0, 12))) << listed.out;
  EXPECT_TRUE(contains(listed.out, "verified")) << listed.out;
  EXPECT_TRUE(contains(listed.out, "~1m00s, 2 model calls")) << listed.out;
  auto json = test::run_phoenix(a, {"journal", "--json"});
  ASSERT_EQ(json.code, 0) << json.out;
  util::Json arr = util::Json::parse(json.out);
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_TRUE(arr[0].contains("saved_model_calls"));
  auto amb = test::run_phoenix(a, {"journal", "--forget", "abc"});
  EXPECT_EQ(amb.code, kExitUsage);
  EXPECT_TRUE(contains(amb.out, "ambiguous")) << amb.out;
  auto unknown = test::run_phoenix(a, {"journal", "--forget", "0123"});
  EXPECT_EQ(unknown.code, kExitUsage);
  auto forgot = test::run_phoenix(a, {"journal", "--forget", "abc2"});
  EXPECT_EQ(forgot.code, 0) << forgot.out;
  EXPECT_TRUE(contains(forgot.out, "forgot " + s2.substr(0, 12))) << forgot.out;
  auto stats = test::run_phoenix(a, {"journal", "stats", "--json"});
  ASSERT_EQ(stats.code, 0) << stats.out;
  util::Json st = util::Json::parse(stats.out);
  EXPECT_EQ(st["entries"], 1);
  EXPECT_EQ(st["replays"], 1);
  EXPECT_EQ(st["saved_model_calls"], 2);
  EXPECT_EQ(st["saved_ms"], 60'000);
  EXPECT_EQ(test::run_phoenix(a, {"journal", "stat"}).code, kExitUsage);
}

TEST_F(JournalCli, ColumnsAreAsWideAsTheirWidestCell) {
  // Every row's FILES stands under the header's, whatever the width of the
  // cells before it (a savings text with a cost, a long check id).
  std::string p = set_value_patch("bad", "good");
  {
    Journal j = Journal::open(jpath(a));
    j.record_healed(fix("abc1" + std::string(60, '0'), p));
    Fix wide = fix("abc3" + std::string(60, '0'), p, 1, 0.04, 12);
    wide.check = "a-check-id-longer-than-fourteen";
    j.record_healed(wide);
    j.record_replay(wide.signature, patch_hash(p));
  }
  auto wide = test::run_phoenix(a, {"journal"});
  ASSERT_EQ(wide.code, 0) << wide.out;
  std::vector<std::string> lines = util::split_lines(wide.out);
  ASSERT_EQ(lines.size(), 3u) << wide.out;
  const size_t files_at = lines[0].find("FILES");
  ASSERT_NE(files_at, std::string::npos) << wide.out;
  for (size_t i = 1; i < lines.size(); ++i) {
    ASSERT_GT(lines[i].size(), files_at) << wide.out;
    EXPECT_EQ(lines[i].substr(files_at - 2, 2), "  ") << "a column runs into FILES:\n" << wide.out;
    EXPECT_NE(lines[i][files_at], ' ') << wide.out;
  }
  EXPECT_TRUE(contains(wide.out, "a-check-id-longer-than-fourteen  ")) << wide.out;
  EXPECT_TRUE(contains(wide.out, "$0.04  ")) << wide.out;
}

TEST_F(JournalCli, PushAndPullThroughTheRemote) {
  std::string s = sig_of("a"), p = set_value_patch("bad", "good");
  {
    Journal j = Journal::open(jpath(a));
    j.record_healed(fix(s, p));
  }
  auto none = test::run_phoenix(b, {"journal", "pull"});
  EXPECT_EQ(none.code, 0) << none.out;
  EXPECT_TRUE(contains(none.out, "no journal yet")) << none.out;
  auto pushed = test::run_phoenix(a, {"journal", "push", "origin"});
  EXPECT_EQ(pushed.code, 0) << pushed.out;
  EXPECT_TRUE(contains(pushed.out, "pushed 1 fix to origin")) << pushed.out;
  auto pulled = test::run_phoenix(b, {"journal", "pull", "--json"});
  ASSERT_EQ(pulled.code, 0) << pulled.out;
  EXPECT_EQ(util::Json::parse(pulled.out)["added"], 1);
  auto again = test::run_phoenix(b, {"journal", "pull", "--json"});
  EXPECT_EQ(util::Json::parse(again.out)["unchanged"], 1);
}

TEST_F(JournalCli, ADamagedJournalIsAClearErrorAndStaysAsItIs) {
  write(a, ".phoenix/journal.sqlite", std::string(300, 'x'));
  auto r = test::run_phoenix(a, {"journal"});
  EXPECT_EQ(r.code, kExitRed);
  EXPECT_TRUE(contains(r.out, "phoenix: error: journal ")) << r.out;
  EXPECT_TRUE(contains(r.out, "is damaged: not a SQLite database; run with --no-journal, or move it aside")) << r.out;
  EXPECT_EQ(read(jpath(a)), std::string(300, 'x'));
}

}  // namespace
}  // namespace phoenix::journal
