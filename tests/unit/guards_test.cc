// engine/guards: what a proposed patch may not do, checked on real
// git-format patches (and, for links, a real folder).
#include "engine/guards.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "test_util.h"

namespace phoenix::engine {
namespace {

namespace fs = std::filesystem;

std::string edit(const std::string& path, const std::string& from = "old", const std::string& to = "new") {
  return "diff --git a/" + path + " b/" + path + "\nindex 1111111..2222222 100644\n--- a/" + path + "\n+++ b/" + path +
         "\n@@ -1 +1 @@\n-" + from + "\n+" + to + "\n";
}

checks::CheckSpec check(std::vector<std::string> editable = {}) {
  checks::CheckSpec c;
  c.id = "unit";
  c.kind = checks::Kind::kCommandExit;
  c.argv = {"sh", "-c", "true"};
  c.editable = std::move(editable);
  return c;
}

class Guards : public ::testing::Test {
 protected:
  test::ScopedTempDir tmp;
  config::Config cfg;
  GuardVerdict verdict(const std::string& patch, const checks::CheckSpec& c = check()) {
    return check_patch(patch_facts(patch), c, cfg, tmp.path());
  }
};

TEST(PatchFacts, PathsAndLineCountsOfAGitPatch) {
  PatchFacts f = patch_facts(edit("src/a.cc") + edit("src/b.cc", "x", "y"));
  EXPECT_EQ(f.files, (std::vector<std::string>{"src/a.cc", "src/b.cc"}));
  EXPECT_EQ(f.insertions, 2u);
  EXPECT_EQ(f.deletions, 2u);
  // A rename names both paths; a mode-only change still names its file.
  PatchFacts r = patch_facts(
      "diff --git a/old.cc b/new.cc\nsimilarity index 100%\nrename from old.cc\nrename to new.cc\n"
      "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n");
  EXPECT_EQ(r.files, (std::vector<std::string>{"new.cc", "old.cc", "run.sh"}));
  // git quotes unusual names with C escapes.
  PatchFacts q =
      patch_facts("diff --git \"a/x\\tb\" \"b/x\\tb\"\n--- \"a/x\\tb\"\n+++ \"b/x\\tb\"\n@@ -1 +1 @@\n-a\n+b\n");
  EXPECT_EQ(q.files, (std::vector<std::string>{"x\tb"}));
}

TEST_F(Guards, AnOrdinaryEditPasses) {
  GuardVerdict v = verdict(edit("src/a.cc"), check({"src/**"}));
  EXPECT_TRUE(v.ok) << v.guard << ": " << v.reason;
}

TEST_F(Guards, NothingToApplyIsRejected) { EXPECT_EQ(verdict("").guard, "empty"); }

TEST_F(Guards, PhoenixAndGitFilesAreAlwaysProtected) {
  EXPECT_EQ(verdict(edit("phoenix.json")).guard, "protected");
  EXPECT_EQ(verdict(edit(".phoenix/journal.sqlite")).guard, "protected");
  EXPECT_EQ(verdict(edit("vendor/lib/.git/config")).guard, "protected");
  EXPECT_EQ(verdict(edit(".husky/pre-push")).guard, "protected");
}

TEST_F(Guards, TestsAreProtectedWhenTheCheckSaysSo) {
  checks::CheckSpec c = check();
  c.protect_tests = true;
  GuardVerdict v = verdict(edit("tests/price_test.c"), c);
  EXPECT_EQ(v.guard, "protected");
  EXPECT_NE(v.reason.find("'tests/**'"), std::string::npos) << v.reason;
  EXPECT_EQ(verdict(edit("src/price.test.js"), c).guard, "protected");
  c.protect_tests = false;
  EXPECT_TRUE(verdict(edit("tests/price_test.c"), c).ok);
  // The user's own protected globs.
  cfg.protected_globs = {"db/migrations/**"};
  EXPECT_EQ(verdict(edit("db/migrations/001.sql"), c).guard, "protected");
}

TEST_F(Guards, EditableGlobsBoundWhatAFixMayTouch) {
  GuardVerdict v = verdict(edit("README.md"), check({"src/**"}));
  EXPECT_EQ(v.guard, "editable");
  EXPECT_NE(v.reason.find("outside the editable globs of check unit (src/**)"), std::string::npos) << v.reason;
}

TEST_F(Guards, PathsOutsideTheRepositoryEscape) {
  EXPECT_EQ(verdict(edit("../outside.txt")).guard, "escape");
  EXPECT_EQ(verdict(edit("src/../../x")).guard, "escape");
}

TEST_F(Guards, SymbolicLinksAreNeitherMadeNorWrittenThrough) {
  EXPECT_EQ(
      verdict("diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n").guard,
      "symlink");
  fs::create_directories(tmp / "real");
  ASSERT_EQ(::symlink((tmp / "real").c_str(), (tmp / "link").c_str()), 0);
  GuardVerdict v = verdict(edit("link/a.txt"));
  EXPECT_EQ(v.guard, "symlink");
  EXPECT_NE(v.reason.find("the symbolic link link"), std::string::npos) << v.reason;
}

TEST_F(Guards, SizeCaps) {
  cfg.diff_cap = 1;
  EXPECT_EQ(verdict(edit("src/a.cc")).guard, "diff_cap");  // two changed lines
  cfg.diff_cap = 0;
  cfg.patch_files_cap = 1;
  EXPECT_EQ(verdict(edit("src/a.cc") + edit("src/b.cc")).guard, "patch_cap");
  cfg.patch_files_cap = 0;
  cfg.patch_bytes_cap = 10;
  EXPECT_EQ(verdict(edit("src/a.cc")).guard, "patch_cap");
}

TEST_F(Guards, DestructiveStatementsNeedAPerson) {
  GuardVerdict v = verdict(edit("db/setup.sql", "SELECT 1;", "DROP TABLE orders;"));
  EXPECT_EQ(v.guard, "destructive");
  EXPECT_NE(v.reason.find("DROP TABLE orders;"), std::string::npos) << v.reason;
  EXPECT_EQ(destructive_lines(edit("run.sh", "echo", "rm -rf /")), (std::vector<std::string>{"rm -rf /"}));
  // Removing such a line is not adding one.
  EXPECT_TRUE(destructive_lines(edit("db/setup.sql", "DROP TABLE x;", "SELECT 1;")).empty());
}

}  // namespace
}  // namespace phoenix::engine
