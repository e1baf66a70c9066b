// End-to-end: the measurement store (checks/measured.h, engine/measure.h,
// docs/measured.md) with the built binaries in throwaway repositories. The
// check counts its runs: a wrapper appends a line to a file outside the
// repository each time it really runs.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

class Measured : public ::testing::Test {
 protected:
  void SetUp() override {
    runs = tmp / "runs.log";
    repo = init_repo(tmp / "repo");
    write(repo, "state.txt", "GOOD\n");
    write_config(Json::object());
    commit_all(repo, "initial");
  }
  // phoenix.json with one check, `unit`, green while state.txt says GOOD;
  // `extra`'s keys go into the check.
  void write_config(const Json& extra) {
    Json check{{"id", "unit"},
               {"kind", "command_exit"},
               {"target", {"sh", "-c", "echo run >> '" + runs + "'; grep -q GOOD state.txt"}}};
    for (const auto& [k, v] : extra.items()) check[k] = v;
    write(repo, "phoenix.json", Json{{"checks", Json::array({check})}}.dump(2));
  }
  CliRun phoenix(std::vector<std::string> args, const std::vector<std::pair<std::string, std::string>>& env = {},
                 const std::string& where = "") {
    return run_phoenix(where.empty() ? repo : where, std::move(args), 120, env);
  }
  size_t count() const {
    return fs::exists(runs) ? util::split_lines(read(runs)).size() : 0;
  }
  ScopedTempDir tmp;
  std::string runs;
  std::string repo;
};

TEST_F(Measured, TheSecondMeasurementOfATreeIsServedAndSaysSo) {
  auto first = phoenix({"sense", "unit"});
  ASSERT_EQ(first.code, 0) << first.out;
  EXPECT_EQ(first.out.find("cached"), std::string::npos) << first.out;
  EXPECT_EQ(count(), 1u);

  auto second = phoenix({"sense", "unit"});
  EXPECT_EQ(second.code, 0) << second.out;
  EXPECT_EQ(count(), 1u) << "served from the store: the check did not run";
  EXPECT_NE(second.out.find("exit=0  (cached: measured "), std::string::npos) << second.out;
  EXPECT_NE(second.out.find(" in sense, trace #"), std::string::npos) << second.out;
  auto json = phoenix({"sense", "unit", "--json"});
  EXPECT_NE(Json::parse(json.out).value("cached", ""), "") << json.out;

  // --no-cache and PHOENIX_NO_CACHE=1 run it again.
  EXPECT_EQ(phoenix({"sense", "unit", "--no-cache"}).code, 0);
  EXPECT_EQ(count(), 2u);
  EXPECT_EQ(phoenix({"sense", "unit"}, {{"PHOENIX_NO_CACHE", "1"}}).code, 0);
  EXPECT_EQ(count(), 3u);
  // `phoenix run` answers from the same store.
  auto r = phoenix({"run"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(count(), 3u) << r.out;
  EXPECT_NE(r.out.find("(cached: measured "), std::string::npos) << r.out;
  EXPECT_EQ(phoenix({"run", "--no-cache"}).code, 0);
  EXPECT_EQ(count(), 4u);
}

TEST_F(Measured, AChangedTreeADirtyTreeAndAChangedEnvVariableAreMeasuredAgain) {
  write_config(Json{{"cache", {{"env", {"MODE"}}}}});
  commit_all(repo, "cache keyed by MODE");
  const std::vector<std::pair<std::string, std::string>> a{{"MODE", "a"}}, b{{"MODE", "b"}};
  EXPECT_EQ(phoenix({"sense", "unit"}, a).code, 0);
  EXPECT_EQ(phoenix({"sense", "unit"}, a).code, 0);
  EXPECT_EQ(count(), 1u);
  EXPECT_EQ(phoenix({"sense", "unit"}, b).code, 0);
  EXPECT_EQ(count(), 2u) << "MODE is part of the key";

  // A committed change: another tree.
  write(repo, "other.txt", "x\n");
  commit_all(repo, "another tree");
  EXPECT_EQ(phoenix({"sense", "unit"}, a).code, 0);
  EXPECT_EQ(count(), 3u);
  // Uncommitted changes, or an untracked file that is not ignored: not keyed.
  write(repo, "other.txt", "y\n");
  EXPECT_EQ(phoenix({"sense", "unit"}, a).code, 0);
  EXPECT_EQ(phoenix({"sense", "unit"}, a).code, 0);
  EXPECT_EQ(count(), 5u);
  git(repo, {"checkout", "--", "other.txt"});
  write(repo, "new.txt", "untracked\n");
  EXPECT_EQ(phoenix({"sense", "unit"}, a).code, 0);
  EXPECT_EQ(count(), 6u);
  fs::remove(repo + "/new.txt");
  EXPECT_EQ(phoenix({"sense", "unit"}, a).code, 0);
  EXPECT_EQ(count(), 6u) << "clean again: the committed tree's record serves";
}

TEST_F(Measured, ARedResultIsNeverServedAndACheckMayOptOut) {
  write(repo, "state.txt", "BAD\n");
  commit_all(repo, "red");
  EXPECT_EQ(phoenix({"sense", "unit"}).code, 1);
  EXPECT_EQ(phoenix({"sense", "unit"}).code, 1);
  EXPECT_EQ(count(), 2u);

  write(repo, "state.txt", "GOOD\n");
  write_config(Json{{"cache", false}});
  commit_all(repo, "green, not cached");
  EXPECT_EQ(phoenix({"sense", "unit"}).code, 0);
  EXPECT_EQ(phoenix({"sense", "unit"}).code, 0);
  EXPECT_EQ(count(), 4u);
}

TEST_F(Measured, ACacheFieldOfTheWrongShapeIsAConfigurationError) {
  write_config(Json{{"cache", "yes"}});
  auto wrong = phoenix({"sense", "unit"});
  EXPECT_EQ(wrong.code, 78) << wrong.out;
  EXPECT_NE(wrong.out.find("checks[0].cache: must be true, false or an object"), std::string::npos) << wrong.out;
  write_config(Json{{"cache", {{"ttl", 3}}}});
  auto unknown = phoenix({"sense", "unit"});
  EXPECT_EQ(unknown.code, 78) << unknown.out;
  EXPECT_NE(unknown.out.find("checks[0].cache"), std::string::npos) << unknown.out;
  EXPECT_NE(unknown.out.find("ttl"), std::string::npos) << unknown.out;
  EXPECT_EQ(count(), 0u);
}

TEST_F(Measured, ARecordThatDoesNotParseIsIgnoredWithOneWarningAndRebuilt) {
  ASSERT_EQ(phoenix({"sense", "unit"}).code, 0);
  const std::string tree = trim(git(repo, {"rev-parse", "HEAD^{tree}"}));
  const std::string file = repo + "/.phoenix/measured/" + tree + ".json";
  ASSERT_TRUE(fs::exists(file));
  write(repo, ".phoenix/measured/" + tree + ".json", "{\"version\":1,\"records\":[{\"key\":");
  auto r = phoenix({"sense", "unit"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(count(), 2u) << "never trusted: measured again";
  EXPECT_NE(r.out.find("does not parse; ignored and rebuilt"), std::string::npos) << r.out;
  EXPECT_TRUE(Json::accept(read(file))) << "rebuilt by the fresh measurement";
  EXPECT_EQ(phoenix({"sense", "unit"}).code, 0);
  EXPECT_EQ(count(), 2u);
}

TEST_F(Measured, AHealIsVerifiedByAFreshRunNeverFromTheStore) {
  // Tree T is green in the store. A commit breaks it; the harness's patch
  // brings the content of T back, and the verification still runs.
  ASSERT_EQ(phoenix({"sense", "unit"}).code, 0);
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["harness"] = {{"command", {"sh", "-c", "printf 'GOOD\\n' > state.txt"}}};
  cfg["fixers"] = {"harness"};
  cfg["checks"][0]["editable"] = {"state.txt"};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "harness");
  ASSERT_EQ(phoenix({"sense", "unit"}).code, 0);
  EXPECT_EQ(count(), 2u);
  write(repo, "state.txt", "BAD\n");
  commit_all(repo, "break it");
  auto r = phoenix({"run"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_EQ(count(), 4u) << "DETECTED and VERIFYING both ran the check\n" << r.out;
  EXPECT_EQ(r.out.find("cached"), std::string::npos) << r.out;
}

TEST_F(Measured, RecordsTravelWithJournalPushAndPullAndDoctorSaysWhereFrom) {
  const std::string bare = tmp / "remote.git";
  fs::create_directories(bare);
  git(bare, {"init", "-q", "--bare"});
  git(repo, {"remote", "add", "origin", bare});
  git(repo, {"push", "-q", "origin", "HEAD:refs/heads/main"});
  ASSERT_EQ(phoenix({"sense", "unit"}).code, 0);
  auto push = phoenix({"journal", "push", "origin"});
  ASSERT_EQ(push.code, 0) << push.out;
  EXPECT_NE(push.out.find("measurements: pushed 1 record"), std::string::npos) << push.out;

  const std::string other = tmp / "clone";
  git(tmp.path(), {"clone", "-q", bare, other});
  git(other, {"checkout", "-q", "main"});
  auto pull = phoenix({"journal", "pull", "origin"}, {}, other);
  ASSERT_EQ(pull.code, 0) << pull.out;
  EXPECT_NE(pull.out.find("measurements: pulled 1 record from origin: 1 new"), std::string::npos) << pull.out;
  auto served = phoenix({"sense", "unit"}, {}, other);
  EXPECT_EQ(served.code, 0) << served.out;
  EXPECT_EQ(count(), 1u) << "the clone's check was answered by the record measured in the first one";
  EXPECT_NE(served.out.find("pulled from origin"), std::string::npos) << served.out;
  auto doctor = phoenix({"doctor"}, {}, other);
  EXPECT_NE(doctor.out.find("1 pulled from origin"), std::string::npos) << doctor.out;

  // Trusted only for its exact key: the clone's own definition differs.
  Json cfg = Json::parse(read(other + "/phoenix.json"));
  cfg["checks"][0]["timeout_s"] = 60;
  write(other, "phoenix.json", cfg.dump(2));
  commit_all(other, "another definition");
  EXPECT_EQ(phoenix({"sense", "unit"}, {}, other).code, 0);
  EXPECT_EQ(count(), 2u);
}

TEST_F(Measured, APushOfATreePhoenixRunMeasuredIsAnsweredByTheStore) {
  const std::string bare = tmp / "remote.git";
  fs::create_directories(bare);
  git(bare, {"init", "-q", "--bare"});
  git(repo, {"remote", "add", "origin", bare});
  auto inst = phoenix({"hook", "install"});
  ASSERT_EQ(inst.code, 0) << inst.out;
  auto r = phoenix({"run"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(count(), 1u);
  auto push = run({"git", "push", "-q", "origin", "HEAD:refs/heads/main"}, repo);
  EXPECT_EQ(push.exit_code, 0) << push.output;
  EXPECT_EQ(count(), 1u) << push.output;
  EXPECT_NE(push.output.find("(cached: measured "), std::string::npos) << push.output;
  EXPECT_NE(push.output.find(" in run, trace #"), std::string::npos) << push.output;
}

// The thin pre-push binary keys a push by the pushed commit's tree, read
// from git's objects (a new commit's loose object, or a pack), and asks git
// nothing but `git status`: who runs on push is read from git's
// configuration files too. git runs through a wrapper on PATH that logs
// each call (the shim is run the way git runs it, not under `git push`,
// which puts git's own folder first on PATH).
TEST_F(Measured, ARePushOfAMeasuredCommitAsksGitOnlyWhetherTheTreeIsClean) {
  const std::string bare = tmp / "remote.git";
  fs::create_directories(bare);
  git(bare, {"init", "-q", "--bare"});
  git(repo, {"remote", "add", "origin", bare});
  ASSERT_EQ(phoenix({"hook", "install"}).code, 0);
  auto r = phoenix({"run"});
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_EQ(count(), 1u);
  const std::string calls = tmp / "git-calls.log";
  write(tmp.path(), "bin/git", "#!/bin/sh\necho \"$*\" >>'" + calls + "'\nexec /usr/bin/git \"$@\"\n");
  fs::permissions(tmp / "bin/git", fs::perms::owner_all);
  auto push = [&](const std::string& sha) {
    util::ProcessOptions o;
    o.argv = {repo + "/.git/hooks/pre-push", "origin", bare};
    o.cwd = repo;
    o.stdin_data = "refs/heads/main " + sha + " refs/heads/main " + std::string(40, '0') + "\n";
    o.env = {{"PATH", (tmp / "bin") + ":" + std::getenv("PATH")}};
    o.unset_env = {"PHOENIX_SKIP", "PHOENIX_NO_CACHE"};
    o.timeout_s = 60;
    util::ProcessResult res = util::run_process(o);
    std::vector<std::string> asked = fs::exists(calls) ? util::split_lines(read(calls)) : std::vector<std::string>{};
    fs::remove(calls);
    return std::make_pair(res, asked);
  };
  const std::string head = util::trim(git(repo, {"rev-parse", "HEAD"}));
  auto [res, asked] = push(head);
  EXPECT_EQ(res.exit_code, 0) << res.output;
  EXPECT_NE(res.output.find("(cached: measured "), std::string::npos) << res.output;
  ASSERT_EQ(asked.size(), 1u) << util::join_argv(asked);
  EXPECT_TRUE(util::starts_with(asked[0], "--no-optional-locks status")) << asked[0];
  EXPECT_EQ(count(), 1u);

  // Another commit of the same tree, which no measurement of Phoenix's
  // named: its tree is read from its loose object; the record serves.
  git(repo, {"commit", "-q", "--allow-empty", "-m", "same tree"});
  const std::string again = util::trim(git(repo, {"rev-parse", "HEAD"}));
  std::tie(res, asked) = push(again);
  EXPECT_EQ(res.exit_code, 0) << res.output;
  EXPECT_NE(res.output.find("(cached: measured "), std::string::npos) << res.output;
  EXPECT_EQ(asked.size(), 1u) << util::join_argv(asked);
  EXPECT_EQ(count(), 1u);
  // Packed, the same.
  git(repo, {"repack", "-q", "-a", "-d"});
  git(repo, {"prune-packed"});
  std::tie(res, asked) = push(again);
  EXPECT_NE(res.output.find("(cached: measured "), std::string::npos) << res.output;
  EXPECT_EQ(asked.size(), 1u) << util::join_argv(asked);
  // A tree never measured: the check runs, and git is asked only `git status`.
  write(repo, "new.txt", "new\n");
  git(repo, {"add", "new.txt"});
  git(repo, {"commit", "-q", "-m", "a new tree"});
  const std::string fresh = util::trim(git(repo, {"rev-parse", "HEAD"}));
  std::tie(res, asked) = push(fresh);
  EXPECT_EQ(res.exit_code, 0) << res.output;
  EXPECT_EQ(res.output.find("(cached: "), std::string::npos) << res.output;
  EXPECT_EQ(asked.size(), 1u) << util::join_argv(asked);
  EXPECT_EQ(count(), 2u);

  // core.hooksPath set in a file the repository's config includes: the
  // files cannot say where the hooks are, so git is asked, and the run
  // warns that git's hook is no longer Phoenix's.
  write(tmp.path(), "x/pre-push", "#!/bin/sh\nexit 0\n");
  fs::permissions(tmp / "x/pre-push", fs::perms::owner_all);
  write(tmp.path(), "included.cfg", "[core]\n\thooksPath = " + (tmp / "x") + "\n");
  git(repo, {"config", "include.path", tmp / "included.cfg"});
  std::tie(res, asked) = push(fresh);
  EXPECT_EQ(res.exit_code, 0) << res.output;
  EXPECT_NE(res.output.find("phoenix: warning: git runs hooks from " + (tmp / "x") + " (core.hooksPath)"),
            std::string::npos)
      << res.output;
  EXPECT_EQ(asked.size(), 2u) << util::join_argv(asked);
}

}  // namespace
}  // namespace phoenix::test
