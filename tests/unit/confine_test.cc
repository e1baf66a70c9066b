// setup/guard.h and gitx/confine.h: what a program Phoenix runs in a tree
// of its own may change, against a person working beside it. Real
// repositories (a main checkout, a second worktree of the user's, a bare
// remote), real programs (sh, git) started through Phoenix's runner, and
// the person's git commands run while the program waits for them.
#include "gitx/confine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include "setup/guard.h"
#include "test_util.h"
#include "util/overlay.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace fs = std::filesystem;
using namespace phoenix;
using phoenix::test::ScopedTempDir;

namespace {

bool any_line(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

// core.hooksPath of `repo`, "" when unset.
std::string hooks_path(const std::string& repo) {
  return test::run({"git", "-C", repo, "config", "--get-all", "core.hooksPath"}).output;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// Sets (or unsets) an environment variable for the life of the object.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    if (value) ::setenv(name.c_str(), value, 1);
    else ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

struct ConfineTest : ::testing::Test {
  ScopedTempDir tmp;
  std::string remote, repo, second, tree;

  void SetUp() override {
    remote = tmp / "remote.git";
    test::git(tmp.path(), {"init", "-q", "--bare", "-b", "main", remote});
    repo = test::init_repo(tmp / "repo");
    test::write(repo, "README.md", "hello\n");
    test::commit_all(repo, "init");
    test::git(repo, {"remote", "add", "origin", remote});
    test::git(repo, {"push", "-q", "origin", "main"});
    // The user's second worktree, on a branch of its own.
    second = tmp / "second";
    test::git(repo, {"worktree", "add", "-q", "-b", "feature", second});
    // A tree of Phoenix's own, outside the work tree as layout/ puts them.
    tree = tmp / "trees/t";
    test::git(repo, {"worktree", "add", "-q", "--detach", tree, "HEAD"});
  }

  bool can_confine() { return util::overlay_unavailable_reason().empty(); }

  // Runs `body` (sh) in the tree under a Guard; `meanwhile` runs once the
  // program has started and before it goes on. Returns restore()'s lines.
  std::vector<std::string> run_beside(const std::string& body, const std::function<void()>& meanwhile,
                                      std::vector<std::string>* elsewhere = nullptr) {
    const std::string started = tmp / "started", go = tmp / "go";
    fs::remove(started);
    fs::remove(go);
    const setup::Guard guard(tree);
    util::ProcessOptions o;
    o.argv = {"sh", "-c", "touch '" + started + "'; while [ ! -e '" + go + "' ]; do sleep 0.01; done; " + body};
    o.cwd = tree;
    o.timeout_s = 60;
    util::Subprocess child(o);
    while (!fs::exists(started) && child.running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    meanwhile();
    test::write(tmp.path(), "go", "");
    util::ProcessResult r = child.wait();
    EXPECT_EQ(r.exit_code, 0) << r.output;
    ::testing::internal::CaptureStderr();
    std::vector<std::string> lines = guard.restore("setup", nullptr, elsewhere);
    ::testing::internal::GetCapturedStderr();
    return lines;
  }
};

}  // namespace

// What a person does in their checkout and in their other worktree while a
// setup step runs in Phoenix's tree: every bit of it stays, and the step's
// own change to the user's branch and config is put back.
struct PersonAction {
  const char* name;
  bool in_second;  // in the second worktree (branch feature), else the main checkout (main)
  std::function<void(ConfineTest&, const std::string& dir)> act;
};

class BesideAPerson : public ConfineTest, public ::testing::WithParamInterface<PersonAction> {};

TEST_P(BesideAPerson, NothingOfTheirsIsUndoneAndTheProgramsChangesArePutBack) {
  if (!can_confine()) GTEST_SKIP() << "no confinement here: " << util::overlay_unavailable_reason();
  const PersonAction& a = GetParam();
  const std::string dir = a.in_second ? second : repo;
  const std::string branch = a.in_second ? "feature" : "main";
  const std::string old_tip = test::rev_parse(repo, branch);
  // What the person's repository looks like once they are done.
  auto state = [&] {
    return test::git(repo, {"for-each-ref", "--format=%(refname) %(objectname)"}) +
           test::git(repo, {"rev-parse", "--symbolic-full-name", "HEAD"}) +
           test::git(second, {"rev-parse", "--symbolic-full-name", "HEAD"}) + test::git(repo, {"config", "--list"});
  };
  std::string theirs;
  // The program rewinds the user's branch and rewires the config, as a
  // hostile setup script would.
  std::vector<std::string> lines =
      run_beside("git config core.hooksPath /tmp/x && git update-ref refs/heads/" + branch + " " + old_tip, [&] {
        a.act(*this, dir);
        theirs = state();
      });
  EXPECT_EQ(state(), theirs) << a.name << "\n" << joined(lines);
  EXPECT_EQ(test::porcelain(repo), "") << a.name;
  EXPECT_EQ(test::porcelain(second), "") << a.name;
  EXPECT_TRUE(any_line(lines, "setup changed core.hooksPath to /tmp/x; put back")) << joined(lines);
  for (const std::string& l : lines)
    EXPECT_TRUE(util::starts_with(l, "setup ") || l.find("not by setup: left as it is") != std::string::npos) << l;
}

namespace {

void commit_file(ConfineTest&, const std::string& dir) {
  test::write(dir, "mine.txt", "mine\n");
  test::git(dir, {"add", "mine.txt"});
  test::git(dir, {"commit", "-q", "-m", "mine"});
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Actions, BesideAPerson,
                         ::testing::Values(PersonAction{"commit", false, commit_file},
                                           PersonAction{"commit", true, commit_file},
                                           PersonAction{"amend", false,
                                                        [](ConfineTest&, const std::string& d) {
                                                          test::git(d, {"commit", "-q", "--amend", "-m", "amended"});
                                                        }},
                                           PersonAction{"amend", true,
                                                        [](ConfineTest& t, const std::string& d) {
                                                          commit_file(t, d);
                                                          test::git(d, {"commit", "-q", "--amend", "-m", "amended"});
                                                        }},
                                           PersonAction{"switch", false,
                                                        [](ConfineTest&, const std::string& d) {
                                                          test::git(d, {"switch", "-q", "-c", "other"});
                                                        }},
                                           PersonAction{"switch", true,
                                                        [](ConfineTest&, const std::string& d) {
                                                          test::git(d, {"switch", "-q", "-c", "other2"});
                                                        }},
                                           PersonAction{"fetch", false,
                                                        [](ConfineTest& t, const std::string& d) {
                                                          // Someone else pushed to the remote; the person fetches it.
                                                          const std::string other = t.tmp / "other";
                                                          test::git(t.tmp.path(), {"clone", "-q", t.remote, other});
                                                          test::git(other, {"config", "user.email", "o@example.com"});
                                                          test::git(other, {"config", "user.name", "O"});
                                                          test::write(other, "theirs.txt", "x\n");
                                                          test::commit_all(other, "theirs");
                                                          test::git(other, {"push", "-q", "origin", "main"});
                                                          test::git(d, {"fetch", "-q", "origin"});
                                                        }},
                                           PersonAction{"tag", false,
                                                        [](ConfineTest&, const std::string& d) {
                                                          test::git(d, {"tag", "v1"});
                                                        }},
                                           PersonAction{"tag", true,
                                                        [](ConfineTest&, const std::string& d) {
                                                          test::git(d, {"tag", "-a", "-m", "x", "v2"});
                                                        }},
                                           PersonAction{"gc", false,
                                                        [](ConfineTest& t, const std::string& d) {
                                                          commit_file(t, d);
                                                          test::git(d, {"gc", "-q"});
                                                        }},
                                           PersonAction{"gc", true,
                                                        [](ConfineTest& t, const std::string& d) {
                                                          commit_file(t, d);
                                                          test::git(d, {"gc", "-q"});
                                                        }}),
                         [](const ::testing::TestParamInfo<PersonAction>& i) {
                           return std::string(i.param.name) +
                                  (i.param.in_second ? "InSecondWorktree" : "InMainCheckout");
                         });

// The person's commit is theirs: main stays where they put it, the file
// they committed is tracked, and the line says it moved without the step.
TEST_F(ConfineTest, ACommitMadeWhileSetupRunsIsLeftAndSaid) {
  if (!can_confine()) GTEST_SKIP() << "no confinement here: " << util::overlay_unavailable_reason();
  const std::string before = test::rev_parse(repo, "main");
  std::vector<std::string> lines = run_beside("true", [&] { commit_file(*this, repo); });
  const std::string after = test::rev_parse(repo, "main");
  EXPECT_NE(after, before);
  EXPECT_EQ(test::porcelain(repo), "");
  EXPECT_EQ(test::trim(test::git(repo, {"ls-files", "mine.txt"})), "mine.txt");
  ASSERT_EQ(lines.size(), 1u) << joined(lines);
  EXPECT_EQ(lines[0], "refs/heads/main moved from " + before.substr(0, 7) + " to " + after.substr(0, 7) +
                          " while setup ran, not by setup: left as it is");
}

// A program that writes into the user's checkout and another worktree by
// absolute path, and into the repository's hooks: nothing of it lands,
// each told; its own tree keeps what it wrote there.
TEST_F(ConfineTest, WritesOutsideItsTreeAreKeptOutAndTold) {
  if (!can_confine()) GTEST_SKIP() << "no confinement here: " << util::overlay_unavailable_reason();
  const std::string readme = test::read(repo + "/README.md");
  std::vector<std::string> elsewhere;
  std::vector<std::string> lines = run_beside(
      "echo more >> '" + repo + "/README.md' && echo new > '" + second + "/new.txt' && rm '" + second +
          "/README.md' && echo '#!/bin/sh' > \"$(git rev-parse --path-format=absolute --git-common-dir)/hooks/pre-push\" "
          "&& echo mine > own.txt",
      [] {}, &elsewhere);
  EXPECT_EQ(test::read(repo + "/README.md"), readme);
  EXPECT_FALSE(fs::exists(second + "/new.txt"));
  EXPECT_TRUE(fs::exists(second + "/README.md"));
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-push"));
  EXPECT_EQ(test::read(tree + "/own.txt"), "mine\n");
  EXPECT_EQ(test::porcelain(repo), "");
  EXPECT_EQ(test::porcelain(second), "");
  ASSERT_EQ(elsewhere.size(), 2u) << joined(lines);
  EXPECT_TRUE(any_line(elsewhere, "setup wrote README.md in the checkout " + repo + ", not its own tree; kept out"))
      << joined(elsewhere);
  EXPECT_TRUE(any_line(elsewhere, "setup wrote README.md (deleted), new.txt in the checkout " + second))
      << joined(elsewhere);
  EXPECT_TRUE(any_line(lines, "setup wrote hook " + repo + "/.git/hooks/pre-push; removed")) << joined(lines);
}

// Refs the program rewrites the way git gc and branch -D do (packed-refs
// and whiteouts): told ref by ref, none of it real.
TEST_F(ConfineTest, PackedRefsTheProgramRewritesAreReadRefByRef) {
  if (!can_confine()) GTEST_SKIP() << "no confinement here: " << util::overlay_unavailable_reason();
  test::git(repo, {"branch", "packed-one"});
  test::git(repo, {"pack-refs", "--all"});
  test::git(repo, {"branch", "loose-one"});
  const std::string state = test::repo_control_state(repo);
  std::vector<std::string> lines = run_beside(
      "git branch -q -D packed-one && git branch -q -D loose-one && git pack-refs --all && git tag t1", [] {});
  EXPECT_EQ(test::repo_control_state(repo), state);
  EXPECT_TRUE(any_line(lines, "setup deleted refs/heads/packed-one (was ")) << joined(lines);
  EXPECT_TRUE(any_line(lines, "setup deleted refs/heads/loose-one (was ")) << joined(lines);
  EXPECT_TRUE(any_line(lines, "setup created refs/tags/t1 at ")) << joined(lines);
  EXPECT_EQ(lines.size(), 3u) << joined(lines);
}

// Without confinement (PHOENIX_CONFINE=0, or a kernel without user
// namespaces): the config is still put back, and a ref that moved is only
// said, since nothing tells the person's commit from the program's.
TEST_F(ConfineTest, WithoutConfinementRefsAreSaidAndTheConfigPutBack) {
  ScopedEnv off("PHOENIX_CONFINE", "0");
  const std::string before = test::rev_parse(repo, "main");
  std::vector<std::string> lines = run_beside("git config core.hooksPath /tmp/x", [&] { commit_file(*this, repo); });
  const std::string after = test::rev_parse(repo, "main");
  EXPECT_NE(after, before);
  EXPECT_EQ(test::porcelain(repo), "");
  EXPECT_EQ(hooks_path(repo), "");
  EXPECT_TRUE(any_line(lines, "setup changed core.hooksPath to /tmp/x; put back")) << joined(lines);
  EXPECT_TRUE(any_line(lines, "refs/heads/main moved from " + before.substr(0, 7) + " to " + after.substr(0, 7) +
                                  " while setup ran: left as it is"))
      << joined(lines);
}

// 200 rounds: a program that rewinds the user's branch and rewires the
// config after a random pause, a person committing, amending or tagging
// after another; whatever the order, every commit of the person's is
// where they left it and the program's changes never land.
TEST_F(ConfineTest, TwoHundredRoundsAtRandomOffsetsUndoNothingOfThePersons) {
  if (!can_confine()) GTEST_SKIP() << "no confinement here: " << util::overlay_unavailable_reason();
  std::mt19937 rng(20261207);  // the same offsets every run
  std::uniform_int_distribution<int> pause_ms(0, 25), kind(0, 3);
  const std::string first = test::rev_parse(repo, "main");
  const std::string config = test::read(repo + "/.git/config");
  auto heads = [&] {
    return test::git(repo, {"for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"});
  };
  for (int round = 0; round < 200; ++round) {
    const int child_pause = pause_ms(rng), person_pause = pause_ms(rng), what = kind(rng);
    const setup::Guard guard(tree);
    util::ProcessOptions o;
    o.argv = {"sh", "-c",
              "sleep 0.0" + std::to_string(child_pause / 10) + std::to_string(child_pause % 10) +
                  "; git config core.hooksPath /tmp/x; git update-ref refs/heads/main " + first +
                  "; git update-ref refs/heads/feature " + first};
    o.cwd = tree;
    o.timeout_s = 30;
    util::Subprocess child(o);
    std::this_thread::sleep_for(std::chrono::milliseconds(person_pause));
    const std::string dir = what % 2 ? second : repo;
    const std::string n = std::to_string(round);
    if (what < 2) test::git(dir, {"commit", "-q", "--allow-empty", "-m", "round " + n});
    else if (what == 2) test::git(dir, {"commit", "-q", "--amend", "--allow-empty", "-m", "amended " + n});
    else test::git(dir, {"tag", "r" + n});
    const std::string theirs = heads();
    child.wait();
    ::testing::internal::CaptureStderr();
    std::vector<std::string> lines = guard.restore("setup");
    ::testing::internal::GetCapturedStderr();
    ASSERT_EQ(heads(), theirs) << "round " << round << "\n" << joined(lines);
    ASSERT_EQ(test::read(repo + "/.git/config"), config) << "round " << round;
    ASSERT_TRUE(any_line(lines, "setup changed core.hooksPath to /tmp/x; put back")) << joined(lines);
    for (const std::string& l : lines) ASSERT_EQ(l.find("could not"), std::string::npos) << l;
  }
  EXPECT_EQ(test::porcelain(repo), "");
  EXPECT_EQ(test::porcelain(second), "");
}
