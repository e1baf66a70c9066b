#include "trace/trace.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "test_util.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::trace {
namespace {

std::vector<std::string> lines_of(const std::string& path) { return util::split_lines(util::read_file(path)); }

void write_lines(const std::string& path, const std::vector<std::string>& lines, bool final_newline = true) {
  std::string s;
  for (size_t i = 0; i < lines.size(); ++i) s += lines[i] + (i + 1 < lines.size() || final_newline ? "\n" : "");
  std::ofstream(path, std::ios::trunc | std::ios::binary) << s;
}

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path = tmp / "trace.jsonl";
    Trace t(path);
    for (int i = 0; i < 10; ++i) t.append("event", {{"i", i}});
  }
  test::ScopedTempDir tmp;
  std::string path;
};

TEST_F(TraceTest, IntactTraceVerifies) {
  auto v = verify(path);
  EXPECT_TRUE(v.ok) << v.why;
  EXPECT_EQ(v.entries, 10u);
}

TEST_F(TraceTest, EditedLineIsNamed) {
  auto l = lines_of(path);
  size_t p = l[4].find("\"i\":4");
  ASSERT_NE(p, std::string::npos);
  l[4].replace(p, 5, "\"i\":9");
  write_lines(path, l);
  auto v = verify(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.kind, "edited");
  EXPECT_EQ(v.bad_seq, 5u);
  EXPECT_EQ(v.entries, 4u);
}

TEST_F(TraceTest, DeletedLineIsNamed) {
  auto l = lines_of(path);
  l.erase(l.begin() + 6);
  write_lines(path, l);
  auto v = verify(path);
  EXPECT_EQ(v.kind, "deleted");
  EXPECT_EQ(v.bad_seq, 7u);
}

TEST_F(TraceTest, ReorderedLinesAreNamed) {
  auto l = lines_of(path);
  std::swap(l[2], l[3]);
  write_lines(path, l);
  auto v = verify(path);
  EXPECT_EQ(v.kind, "reordered");
  EXPECT_EQ(v.bad_seq, 3u);
}

TEST_F(TraceTest, InsertedLineIsNamed) {
  auto l = lines_of(path);
  l.insert(l.begin() + 5, l[1]);  // a copy of an earlier entry
  write_lines(path, l);
  auto v = verify(path);
  EXPECT_EQ(v.kind, "inserted");
  EXPECT_EQ(v.bad_line, 6u);
}

TEST_F(TraceTest, ForgedInsertedEntryIsNamed) {
  // A forged entry with the right seq and prev, but it is not the real one.
  auto l = lines_of(path);
  auto real = util::Json::parse(l[5]);
  util::Json forged = real;
  forged["data"] = {{"forged", true}};
  write_lines(path, {l.begin(), l.begin() + 5});
  l.insert(l.begin() + 5, forged.dump());
  write_lines(path, l);
  auto v = verify(path);
  EXPECT_EQ(v.kind, "inserted");
  EXPECT_EQ(v.bad_seq, 6u);
}

TEST_F(TraceTest, AnEditedLineBeforeOneWithOtherTypesIsNamed) {
  // Line 5 edited, line 6 any JSON object whose seq and prev are not a
  // number and a string: verify names the edit and does not throw.
  auto l = lines_of(path);
  auto real = util::Json::parse(l[4]);
  real["data"] = {{"edited", true}};
  l[4] = real.dump();
  for (const char* next : {R"({"seq":"6","prev":7})", R"({"seq":6,"prev":["x"]})", R"({"seq":-1})", "[6]"}) {
    auto copy = l;
    copy[5] = next;
    write_lines(path, copy);
    auto v = verify(path);
    EXPECT_FALSE(v.ok) << next;
    EXPECT_EQ(v.kind, "edited") << next;
    EXPECT_EQ(v.bad_seq, 5u) << next;
  }
}

TEST_F(TraceTest, ALastLineWithOtherTypesIsNeitherRepairedOnNorAppendedTo) {
  // A torn tail after a complete line whose seq is a string: the repair
  // starts a chain of its own, and verify names that line.
  for (const char* last : {R"({"seq":"10","hash":"x"})", R"({"seq":10,"hash":7})"}) {
    auto l = lines_of(path);
    l.push_back(last);
    write_lines(path, l);
    std::ofstream(path, std::ios::app) << "{\"data\":{\"i\":10},\"eve";
    EXPECT_TRUE(repair_torn_tail(path)) << last;
    EXPECT_FALSE(verify(path).ok) << last;
    // An append after a line that is no entry is refused with the one line.
    l.push_back(last);
    write_lines(path, l);
    try {
      Trace(path).append("event", {{"i", 11}});
      ADD_FAILURE() << "appended after " << last;
    } catch (const phoenix::Error& e) {
      EXPECT_NE(std::string(e.what()).find("ends in a line that is not a trace entry"), std::string::npos) << e.what();
    }
  }
}

TEST_F(TraceTest, TornLastLineIsNotTampering) {
  std::string all = util::read_file(path);
  std::ofstream(path, std::ios::app) << "{\"data\":{\"i\":10},\"eve";
  auto v = verify(path);
  EXPECT_EQ(v.kind, "torn");
  EXPECT_EQ(v.entries, 10u);
  EXPECT_TRUE(repair_torn_tail(path));
  auto v2 = verify(path);
  EXPECT_TRUE(v2.ok) << v2.why;
  EXPECT_EQ(v2.entries, 11u);  // the repair is itself an entry
  EXPECT_NE(util::read_file(path).find("trace.torn_repaired"), std::string::npos);
}

TEST_F(TraceTest, AppendAfterTornLineRepairsFirst) {
  std::ofstream(path, std::ios::app) << "{\"half";
  Trace(path).append("after", {});
  auto v = verify(path);
  EXPECT_TRUE(v.ok) << v.why;
  EXPECT_EQ(v.entries, 12u);
}

TEST_F(TraceTest, ConcurrentWritersNeverInterleave) {
  // Four processes append 100 entries each at the same time.
  std::vector<pid_t> kids;
  for (int k = 0; k < 4; ++k) {
    pid_t pid = fork();
    if (pid == 0) {
      Trace t(path);
      for (int i = 0; i < 100; ++i) t.append("w", {{"writer", k}, {"i", i}});
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  auto v = verify(path);
  EXPECT_TRUE(v.ok) << v.why;
  EXPECT_EQ(v.entries, 410u);
}

// A batch only defers the fsync: its lines are in the file, chained, the
// moment each append returns, and a crash of the process (here: a child
// that exits without ending its batch) loses none of them.
TEST_F(TraceTest, BatchedAppendsAreWrittenAtOnceAndChained) {
  Trace t(path);
  {
    Trace::Batch outer(t);
    t.append("batched", {{"i", 10}});
    {
      Trace::Batch inner(t);
      t.append("batched", {{"i", 11}});
    }  // not the outermost: nothing is fsynced yet, nothing changes
    EXPECT_EQ(lines_of(path).size(), 12u);
    auto v = verify(path);
    EXPECT_TRUE(v.ok) << v.why;
    outer.end();
    outer.end();  // once is enough; a second end does nothing
  }
  t.append("after", {});
  pid_t pid = fork();
  if (pid == 0) {
    Trace c(path);
    Trace::Batch b(c);
    c.append("child", {});
    _exit(0);  // no end(), no destructor
  }
  int st = 0;
  waitpid(pid, &st, 0);
  auto v = verify(path);
  EXPECT_TRUE(v.ok) << v.why;
  EXPECT_EQ(v.entries, 14u);
}

TEST(AtomicFile, AtomicOnlyReplacementReplacesWhole) {
  test::ScopedTempDir tmp;
  const std::string p = tmp / "state.json";
  util::write_file_atomic(p, "old\n");
  util::write_file_atomic(p, "new\n", 0644, util::Sync::kAtomic);
  EXPECT_EQ(util::read_file(p), "new\n");
  std::error_code ec;
  int left = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path(), ec)) left += e.path().filename() != "state.json";
  EXPECT_EQ(left, 0) << "a temporary file was left behind";
}

}  // namespace
}  // namespace phoenix::trace
