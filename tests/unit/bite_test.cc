// engine/bite: a change's tests measured without its code, in a scratch
// tree of the repository's own (real git repositories, real checks run by
// sh): a test that fails without the code bites, one that passes there
// does not, tests alone are exempt, and nothing of it reaches the
// measurement store or the user's work tree.
#include "engine/bite.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "config/config.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "test_util.h"

namespace phoenix::engine {
namespace {

namespace fs = std::filesystem;

// Runs every tests/t_*.sh; a failing one is named the way pytest names a
// failure ("FAILED tests/t_sub.sh::main"), so the failing-test parser reads it.
const char* kRunner = R"(r=0; for t in tests/t_*.sh; do sh "$t" || { echo "FAILED $t::main"; r=1; }; done; exit $r)";

class Bite : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
    test::init_repo(repo_dir());
    test::write(repo_dir(), ".gitignore", ".phoenix/\n");
    test::write(repo_dir(), "calc.txt", "add=a+b\nsub=0\n");
    test::write(repo_dir(), "tests/t_add.sh", "grep -q 'add=a+b' calc.txt\n");
    base = test::commit_all(repo_dir(), "initial");
  }
  void TearDown() override { ::unsetenv("PHOENIX_TREES_DIR"); }

  std::string repo_dir() const { return tmp / "repo"; }

  config::Config cfg(const std::string& extra = "") const {
    util::Json check = {{"id", "unit"}, {"kind", "command_exit"}, {"target", {"sh", "-c", kRunner}}};
    if (!extra.empty()) check.update(util::Json::parse(extra));
    return config::parse(util::Json{{"checks", {check}}}.dump(), "phoenix.json");
  }

  // The files written, committed on the base: the change's commit.
  std::string change(const std::vector<std::pair<std::string, std::string>>& files) {
    for (const auto& [rel, text] : files) test::write(repo_dir(), rel, text);
    return test::commit_all(repo_dir(), "the change");
  }

  BiteResult measure(const config::Config& c, const std::string& to, bool default_on = true) {
    gitx::Repo repo = gitx::Repo::open(repo_dir());
    BiteRequest req;
    req.base = base;
    req.change = to;
    req.own = {".phoenix/", "incidents/"};
    req.default_on = default_on;
    return tests_bite(repo, c, req);
  }

  test::ScopedTempDir tmp;
  std::string base;
};

const std::string kFix = "add=a+b\nsub=a-b\n";

TEST_F(Bite, ATestThatFailsWithoutTheCodeBites) {
  const std::string to = change({{"calc.txt", kFix}, {"tests/t_sub.sh", "grep -q 'sub=a-b' calc.txt\n"}});
  BiteResult r = measure(cfg(), to);
  EXPECT_EQ(r.verdict, engine::Bite::kBites) << r.why;
  EXPECT_EQ(r.tests, std::vector<std::string>{"tests/t_sub.sh"});
  EXPECT_EQ(r.code, std::vector<std::string>{"calc.txt"});
  EXPECT_EQ(r.checks, std::vector<std::string>{"unit"});
  EXPECT_EQ(r.bit, "unit");
  EXPECT_EQ(r.failing, std::vector<std::string>{"tests/t_sub.sh::main"});
  EXPECT_EQ(r.tree, "bite");
  // The scratch tree holds the change's test and the code as it was.
  const std::string scratch = layout::worktree_path(gitx::Repo::open(repo_dir()), "bite");
  EXPECT_EQ(test::read(scratch + "/calc.txt"), "add=a+b\nsub=0\n");
  EXPECT_EQ(test::read(scratch + "/tests/t_sub.sh"), "grep -q 'sub=a-b' calc.txt\n");
  // The user's work tree and HEAD are the change's still; nothing was stored.
  EXPECT_EQ(test::rev_parse(repo_dir(), "HEAD"), to);
  EXPECT_EQ(test::read(repo_dir() + "/calc.txt"), kFix);
  EXPECT_FALSE(fs::exists(repo_dir() + "/.phoenix/measured")) << "the scratch measurement reached the store";
}

TEST_F(Bite, ATestThatPassesWithoutTheCodeIsToothless) {
  const std::string to = change({{"calc.txt", kFix}, {"tests/t_sub.sh", "true\n"}});
  BiteResult r = measure(cfg(), to);
  EXPECT_EQ(r.verdict, engine::Bite::kToothless) << r.why;
  EXPECT_NE(r.why.find("tests/t_sub.sh pass without the change's code (calc.txt)"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("unit green with the code as it was before the change"), std::string::npos) << r.why;
  EXPECT_TRUE(r.failing.empty());
}

TEST_F(Bite, TestsAloneAreExemptAndCodeAloneHasNothingToMeasure) {
  const std::string tests_only = change({{"tests/t_add2.sh", "grep -q 'add=' calc.txt\n"}});
  BiteResult r = measure(cfg(), tests_only);
  EXPECT_EQ(r.verdict, engine::Bite::kExempt) << r.why;
  EXPECT_NE(r.why.find("tests only (tests/t_add2.sh)"), std::string::npos) << r.why;
  EXPECT_TRUE(r.checks.empty());  // nothing measured

  base = tests_only;
  const std::string code_only = change({{"calc.txt", kFix}});
  EXPECT_EQ(measure(cfg(), code_only).verdict, engine::Bite::kNoTests);
}

TEST_F(Bite, TheCheckDecidesWhetherItsTestsMustBiteAndWhichFilesAreTests) {
  const std::string to = change({{"calc.txt", kFix}, {"tests/t_sub.sh", "true\n"}});
  // Off for the check, or off by default (the hook's) for a check that does not say.
  EXPECT_EQ(measure(cfg(R"({"tests_must_bite": false})"), to).verdict, engine::Bite::kNoTests);
  EXPECT_EQ(measure(cfg(), to, false).verdict, engine::Bite::kNoTests);
  EXPECT_EQ(measure(cfg(R"({"tests_must_bite": true})"), to, false).verdict, engine::Bite::kToothless);
  // The check's own test globs: tests/ is not among them, so the change is code only.
  EXPECT_EQ(measure(cfg(R"({"tests": ["spec/**"]})"), to).verdict, engine::Bite::kNoTests);
}

// A heal's patch on a red tree: the check fails without the patch's code,
// but only on a test that failed before and that the patch did not touch.
TEST_F(Bite, RedOnlyOnATestThatFailedBeforeIsNotABite) {
  test::write(repo_dir(), "tests/t_old.sh", "grep -q 'old=1' calc.txt\n");
  base = test::commit_all(repo_dir(), "a failing test");
  const std::string to = change({{"calc.txt", "add=a+b\nsub=0\nold=1\n"}, {"tests/t_new.sh", "true\n"}});
  gitx::Repo repo = gitx::Repo::open(repo_dir());
  BiteRequest req;
  req.base = base;
  req.change = to;
  req.own = {".phoenix/"};
  req.red_before["unit"] = {"tests/t_old.sh::main"};
  BiteResult r = tests_bite(repo, cfg(), req);
  EXPECT_EQ(r.verdict, engine::Bite::kToothless) << r.why;
  EXPECT_NE(r.why.find("failing there only on tests the change did not touch"), std::string::npos) << r.why;

  // The same red, but the patch touched the failing test: it fails without the code.
  base = to;
  const std::string touched =
      change({{"calc.txt", "add=a+b\nsub=0\nold=2\n"}, {"tests/t_old.sh", "grep -q 'old=2' calc.txt\n"}});
  req.base = base;
  req.change = touched;
  req.red_before["unit"] = {"tests/t_old.sh::main"};
  r = tests_bite(repo, cfg(), req);
  EXPECT_EQ(r.verdict, engine::Bite::kBites) << r.why;
  EXPECT_EQ(r.failing, std::vector<std::string>{"tests/t_old.sh::main"});
}

}  // namespace
}  // namespace phoenix::engine
