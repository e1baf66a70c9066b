// End-to-end: `phoenix hook install|uninstall|run pre-push` with the built
// binary and real `git push` to a local bare repository.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include "test_util.h"
#include "util/json.h"
#include "util/lock.h"
#include "util/text.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/path.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;

const char* kCheck = R"({ "id": "state", "kind": "command_exit", "editable": ["state.txt"],
    "target": ["sh", "-c", "grep -q GOOD state.txt || { echo 'FAIL state_test: want GOOD'; exit 1; }"] })";

std::string config(const std::string& mode, const std::string& extra = "") {
  return std::string("{\n  \"checks\": [") + kCheck + "],\n  \"fixers\": [\"bisect\"],\n  \"hook\": { \"mode\": \"" +
         mode + "\"" + extra + " }\n}\n";
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// A repository whose check `state` passes while state.txt says GOOD, with a
// bare repository as its remote `origin`.
class HookE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    bare = tmp / "remote.git";
    fs::create_directories(bare);
    git(bare, {"init", "-q", "--bare", "-b", "main"});
    repo = init_repo(tmp / "repo");
    write(repo, "state.txt", "GOOD\n");
    write(repo, ".gitignore", ".phoenix/\n");
    write(repo, "phoenix.json", config("verify"));
    commit_all(repo, "initial");
    git(repo, {"remote", "add", "origin", bare});
  }

  util::ProcessResult push(const std::vector<std::string>& args, const std::string& where = "",
                           std::vector<std::pair<std::string, std::string>> env = {}) {
    std::vector<std::string> argv{"git", "-C", where.empty() ? repo : where, "push"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, "", env);
  }
  CliRun phoenix(std::vector<std::string> args, const std::string& where = "") {
    return run_phoenix(where.empty() ? repo : where, std::move(args));
  }
  void install(const std::string& where = "") {
    auto r = phoenix({"hook", "install"}, where);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  std::string g(std::vector<std::string> args, const std::string& where = "") {
    return util::trim(git(where.empty() ? repo : where, args));
  }
  std::string remote_sha(const std::string& ref) {
    auto r = run({"git", "-C", bare, "rev-parse", "--verify", "-q", ref});
    return util::trim(r.output);
  }
  std::string commit_state(const std::string& state, const std::string& msg, const std::string& where = "") {
    write(where.empty() ? repo : where, "state.txt", state + "\n");
    return commit_all(where.empty() ? repo : where, msg);
  }
  // No worktree is left behind but the hook's one persistent worktree
  // (layout::worktree_path, "hook"), registered once, and nothing
  // of Phoenix's trees inside the work tree.
  void expect_no_worktrees_left(const std::string& where = "") {
    std::string w = where.empty() ? repo : where;
    EXPECT_LE(count(g({"worktree", "list", "--porcelain"}, w), "/worktrees/hook"), 1u);
    EXPECT_LE(count(g({"worktree", "list"}, w), "\n"), 1u) << g({"worktree", "list"}, w);
    std::error_code ec;
    EXPECT_FALSE(fs::exists(w + "/.phoenix/worktrees")) << "a tree of Phoenix's inside the work tree";
    const std::string trees = layout::trees_root(gitx::Repo::open(repo)) + "/worktrees";
    if (fs::exists(trees))
      for (const auto& e : fs::directory_iterator(trees, ec))
        if (e.path().filename() != "hook") ADD_FAILURE() << "left behind: " << e.path();
  }

  ScopedTempDir tmp;
  std::string bare, repo;
};

TEST_F(HookE2E, GreenPushPassesWithOneLinePerCheck) {
  install();
  auto r = push({"-u", "origin", "main"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "phoenix: ok   state  exit=0"), 1u) << r.output;
  EXPECT_EQ(r.output.find("(in the hook's worktree)"), std::string::npos)
      << "HEAD on a clean tree is measured in place";
  EXPECT_EQ(remote_sha("main"), g({"rev-parse", "HEAD"}));
  // A green push of HEAD writes nothing in the repository but the lock and
  // its line in hook-runs.jsonl (no trace entry, no fsync).
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/trace.jsonl"));
  EXPECT_EQ(count(read(repo + "/.phoenix/hook-runs.jsonl"), "\"by\":\"phoenix-hook\""), 1u);
}

TEST_F(HookE2E, RedPushIsBlockedWithTheEvidence) {
  install();
  ASSERT_EQ(push({"origin", "main"}).exit_code, 0);
  std::string green = g({"rev-parse", "HEAD"});
  std::string red = commit_state("BAD", "break the state");
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: RED  state  exit=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("| FAIL state_test: want GOOD"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("phoenix: push blocked: state is red in main@" + red.substr(0, 12)), std::string::npos)
      << r.output;
  EXPECT_EQ(remote_sha("main"), green);
  EXPECT_EQ(g({"rev-parse", "HEAD"}), red) << "verify mode changes nothing";
  EXPECT_EQ(g({"status", "--porcelain"}), "");
}

TEST_F(HookE2E, HealModeInAFreshCloneAddsAVerifiedCommitAndBlocks) {
  // The fixture: a green history with heal mode, already on the remote.
  write(repo, "phoenix.json", config("heal"));
  commit_all(repo, "heal on push");
  for (int i = 0; i < 3; ++i) {
    write(repo, "notes/n" + std::to_string(i) + ".txt", "x\n");
    commit_all(repo, "notes " + std::to_string(i));
  }
  ASSERT_EQ(push({"origin", "main"}).exit_code, 0);
  // A newcomer's fresh clone.
  std::string clone = tmp / "clone";
  auto c = run({"git", "clone", "-q", bare, clone});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  git(clone, {"config", "user.name", "New Comer"});
  git(clone, {"config", "user.email", "new@example.com"});
  install(clone);
  auto kg = phoenix({"run"}, clone);  // green: blesses known-good, which bisect starts from
  ASSERT_EQ(kg.code, 0) << kg.out;

  std::string culprit = commit_state("BAD", "tune the state", clone);
  write(clone, "notes/after.txt", "y\n");
  std::string head = commit_all(clone, "more work");
  std::string remote_before = remote_sha("main");
  auto r = push({"origin", "main"}, clone);
  EXPECT_NE(r.exit_code, 0) << r.output;
  std::string fix = g({"rev-parse", "HEAD"}, clone);
  EXPECT_NE(r.output.find("phoenix: healed state in " + fix.substr(0, 12) + " — push again"), std::string::npos)
      << r.output;
  EXPECT_EQ(g({"rev-parse", "HEAD^"}, clone), head) << "the fix commit goes on top of the user's commits";
  EXPECT_EQ(g({"log", "-1", "--format=%s"}, clone), "phoenix: heal state (bisect)");
  EXPECT_EQ(read(clone + "/state.txt"), "GOOD\n");
  EXPECT_EQ(g({"status", "--porcelain"}, clone), "");
  EXPECT_EQ(remote_sha("main"), remote_before) << "a pre-push hook cannot change what is pushed";
  // Push again: the healed branch goes out.
  auto again = push({"origin", "main"}, clone);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(remote_sha("main"), fix);
  EXPECT_EQ(phoenix({"trace", "verify"}, clone).code, 0);
}

TEST_F(HookE2E, BranchNotCheckedOutIsMeasuredInATemporaryWorktree) {
  install();
  ASSERT_EQ(push({"origin", "main"}).exit_code, 0);
  git(repo, {"checkout", "-q", "-b", "topic"});
  std::string red = commit_state("BAD", "topic breaks it");
  git(repo, {"checkout", "-q", "main"});
  write(repo, "wip.txt", "uncommitted work\n");  // untouched by the hook
  auto r = push({"origin", "topic"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("RED  state  exit=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("topic@" + red.substr(0, 12) + " (in the hook's worktree)"), std::string::npos) << r.output;
  EXPECT_EQ(remote_sha("topic"), "");
  expect_no_worktrees_left();
  EXPECT_EQ(read(repo + "/state.txt"), "GOOD\n");
  EXPECT_EQ(read(repo + "/wip.txt"), "uncommitted work\n");
  // Green on the branch: passes, still without touching the checkout.
  git(repo, {"checkout", "-q", "topic"});
  std::string fixed = commit_state("GOOD", "topic fixed");
  git(repo, {"checkout", "-q", "main"});
  auto ok = push({"origin", "topic"});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("phoenix: ok   state"), std::string::npos) << ok.output;
  EXPECT_EQ(remote_sha("topic"), fixed);
  expect_no_worktrees_left();
}

TEST_F(HookE2E, DirtyHeadIsMeasuredAsCommittedNotAsTheWorkTree) {
  install();
  std::string head = g({"rev-parse", "HEAD"});
  write(repo, "state.txt", "BAD (uncommitted)\n");
  auto r = push({"origin", "main"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("main@" + head.substr(0, 12) + " (in the hook's worktree)"), std::string::npos) << r.output;
  EXPECT_EQ(read(repo + "/state.txt"), "BAD (uncommitted)\n");
  expect_no_worktrees_left();
}

TEST_F(HookE2E, HealModeCannotHealABranchThatIsNotCheckedOut) {
  write(repo, "phoenix.json", config("heal"));
  commit_all(repo, "heal on push");
  install();
  git(repo, {"checkout", "-q", "-b", "topic"});
  std::string red = commit_state("BAD", "topic breaks it");
  git(repo, {"checkout", "-q", "main"});
  std::string main_head = g({"rev-parse", "HEAD"});
  auto r = push({"origin", "topic"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cannot be healed in place"), std::string::npos) << r.output;
  EXPECT_EQ(g({"rev-parse", "topic"}), red);
  EXPECT_EQ(g({"rev-parse", "HEAD"}), main_head);
  expect_no_worktrees_left();
}

TEST_F(HookE2E, SeveralRefsInOnePushEachCommitMeasuredOnce) {
  install();
  git(repo, {"branch", "copy"});
  git(repo, {"tag", "-a", "v1", "-m", "v1"});
  auto r = push({"origin", "main", "copy", "v1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "phoenix: ok   state"), 1u)
      << "one commit behind three refs (one an annotated tag): " << r.output;
  EXPECT_NE(r.output.find("main,copy,v1@"), std::string::npos) << r.output;
  // A green and a red ref together: the push is blocked as a whole.
  git(repo, {"checkout", "-q", "-b", "topic"});
  std::string red = commit_state("BAD", "topic breaks it");
  git(repo, {"checkout", "-q", "main"});
  std::string green = commit_state("GOOD", "main moves on");
  auto both = push({"origin", "main", "topic"});
  EXPECT_NE(both.exit_code, 0) << both.output;
  EXPECT_NE(both.output.find("ok   state  exit=0  ("), std::string::npos) << both.output;
  EXPECT_NE(both.output.find("push blocked: state is red in topic@" + red.substr(0, 12)), std::string::npos)
      << both.output;
  EXPECT_NE(remote_sha("main"), green);
  EXPECT_EQ(remote_sha("topic"), "");
  expect_no_worktrees_left();
}

TEST_F(HookE2E, ADeletionIsNotMeasured) {
  install();
  git(repo, {"branch", "old"});
  ASSERT_EQ(push({"origin", "main", "old"}).exit_code, 0);
  commit_state("BAD", "red, not pushed");  // HEAD is red now; the deletion still goes
  auto r = push({"origin", "--delete", "old"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("phoenix: "), std::string::npos) << r.output;
  EXPECT_EQ(remote_sha("old"), "");
}

TEST_F(HookE2E, CoreHooksPathRelativeAndAbsolute) {
  git(repo, {"config", "core.hooksPath", ".githooks"});
  install();
  EXPECT_TRUE(fs::exists(repo + "/.githooks/pre-push"));
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-push"));
  commit_state("BAD", "red");
  EXPECT_NE(push({"origin", "main"}).exit_code, 0);
  std::string abs = tmp / "shared-hooks";
  git(repo, {"config", "core.hooksPath", abs});
  install();
  EXPECT_TRUE(fs::exists(abs + "/pre-push"));
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("push blocked"), std::string::npos) << r.output;
  EXPECT_EQ(phoenix({"hook", "uninstall"}).code, 0);
  EXPECT_FALSE(fs::exists(abs + "/pre-push"));
  EXPECT_TRUE(fs::exists(repo + "/.githooks/pre-push")) << "only the folder git uses now is touched";
}

TEST_F(HookE2E, AnExistingHookIsChainedWithArgvAndStdinAndRestoredOnUninstall) {
  std::string log = tmp / "chained.log";
  std::string original = "#!/bin/sh\n# the team's own hook\necho \"args: $*\" >> '" + log + "'\ncat >> '" + log +
                         "'\n[ -z \"$FAIL_CHAINED\" ] || { echo 'team hook says no' >&2; exit 3; }\n";
  write(repo, ".git/hooks/pre-push", original);
  ::chmod((repo + "/.git/hooks/pre-push").c_str(), 0741);
  auto inst = phoenix({"hook", "install"});
  ASSERT_EQ(inst.code, 0) << inst.out;
  EXPECT_NE(inst.out.find("runs first"), std::string::npos) << inst.out;
  EXPECT_EQ(phoenix({"hook", "install"}).code, 0);  // idempotent: the shim is not chained to itself
  EXPECT_EQ(read(repo + "/.git/hooks/pre-push.phoenix-chained"), original);

  std::string head = g({"rev-parse", "HEAD"});
  auto r = push({"origin", "main"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: ok   state"), std::string::npos) << r.output;
  std::string seen = read(log);
  EXPECT_NE(seen.find("args: origin " + bare), std::string::npos) << seen;
  EXPECT_NE(seen.find("refs/heads/main " + head + " refs/heads/main " + std::string(40, '0')), std::string::npos)
      << seen;

  // Its failure blocks, and Phoenix does not run after it.
  commit_state("GOOD", "another");
  auto no = push({"origin", "main"}, "", {{"FAIL_CHAINED", "1"}});
  EXPECT_NE(no.exit_code, 0) << no.output;
  EXPECT_NE(no.output.find("team hook says no"), std::string::npos) << no.output;
  EXPECT_NE(no.output.find("failed (exit 3); push blocked"), std::string::npos) << no.output;
  EXPECT_EQ(no.output.find("phoenix: ok"), std::string::npos) << no.output;

  auto un = phoenix({"hook", "uninstall"});
  EXPECT_EQ(un.code, 0) << un.out;
  EXPECT_EQ(read(repo + "/.git/hooks/pre-push"), original);
  struct stat st {};
  ::stat((repo + "/.git/hooks/pre-push").c_str(), &st);
  EXPECT_EQ(st.st_mode & 0777, 0741u);
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-push.phoenix-chained"));
  EXPECT_NE(phoenix({"hook", "uninstall"}).out.find("nothing to do"), std::string::npos);
}

TEST_F(HookE2E, DetachedHead) {
  install();
  git(repo, {"checkout", "-q", "--detach"});
  std::string head = commit_state("GOOD", "detached work");
  auto r = push({"origin", "HEAD:refs/heads/main"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("HEAD@" + head.substr(0, 12)), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("(in the hook's worktree)"), std::string::npos) << r.output;
  std::string red = commit_state("BAD", "detached and red");
  auto no = push({"origin", "HEAD:refs/heads/main"});
  EXPECT_NE(no.exit_code, 0) << no.output;
  EXPECT_NE(no.output.find("state is red in HEAD@" + red.substr(0, 12)), std::string::npos) << no.output;
  EXPECT_EQ(remote_sha("main"), head);
}

TEST_F(HookE2E, HealModeOnADetachedHeadPushedAsHead) {
  write(repo, "phoenix.json", config("heal"));
  commit_all(repo, "heal on push");
  install();
  ASSERT_EQ(phoenix({"run"}).code, 0);  // known-good
  git(repo, {"checkout", "-q", "--detach"});
  std::string red = commit_state("BAD", "detached and red");
  auto r = push({"origin", "HEAD:refs/heads/main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: healed state in"), std::string::npos) << r.output;
  EXPECT_EQ(g({"rev-parse", "HEAD^"}), red);
  EXPECT_EQ(push({"origin", "HEAD:refs/heads/main"}).exit_code, 0);
  EXPECT_EQ(remote_sha("main"), g({"rev-parse", "HEAD"}));
}

TEST_F(HookE2E, PushFromALinkedWorktree) {
  std::string wt = tmp / "wt";
  git(repo, {"worktree", "add", "-q", "-b", "feature", wt});
  auto inst = phoenix({"hook", "install"}, wt);  // the hooks folder is the shared one
  ASSERT_EQ(inst.code, 0) << inst.out;
  EXPECT_TRUE(fs::exists(repo + "/.git/hooks/pre-push"));
  std::string green = commit_state("GOOD", "feature work", wt);
  auto ok = push({"origin", "feature"}, wt);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("feature@" + green.substr(0, 12)), std::string::npos) << ok.output;
  EXPECT_EQ(ok.output.find("(in the hook's worktree)"), std::string::npos)
      << "HEAD of the linked worktree, in place: " << ok.output;
  std::string red = commit_state("BAD", "feature breaks it", wt);
  auto no = push({"origin", "feature"}, wt);
  EXPECT_NE(no.exit_code, 0) << no.output;
  EXPECT_NE(no.output.find("state is red in feature@" + red.substr(0, 12)), std::string::npos) << no.output;
  // The main checkout pushes its own branch: measured there, the red
  // feature commit plays no part.
  auto main_push = push({"origin", "main"});
  EXPECT_EQ(main_push.exit_code, 0) << main_push.output;
  EXPECT_EQ(g({"worktree", "list", "--porcelain"}).find("phoenix-hook"), std::string::npos);
}

TEST_F(HookE2E, SkippedWithPhoenixSkipOrNoVerify) {
  install();
  std::string red = commit_state("BAD", "red");
  auto skip = push({"origin", "main"}, "", {{"PHOENIX_SKIP", "1"}});
  EXPECT_EQ(skip.exit_code, 0) << skip.output;
  EXPECT_NE(skip.output.find("PHOENIX_SKIP=1: pre-push checks skipped"), std::string::npos) << skip.output;
  EXPECT_EQ(remote_sha("main"), red);
  std::string red2 = commit_state("BAD again", "still red");
  auto nv = push({"--no-verify", "origin", "main"});
  EXPECT_EQ(nv.exit_code, 0) << nv.output;
  EXPECT_EQ(nv.output.find("phoenix:"), std::string::npos) << nv.output;
  EXPECT_EQ(remote_sha("main"), red2);
}

TEST_F(HookE2E, NoPhoenixJsonWarnsAndPasses) {
  git(repo, {"rm", "-q", "phoenix.json"});
  std::string head = commit_all(repo, "no config");
  install();
  auto r = push({"origin", "main"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: warning: no phoenix.json"), std::string::npos) << r.output;
  EXPECT_EQ(count(r.output, "phoenix:"), 1u) << "one line: " << r.output;
  EXPECT_EQ(remote_sha("main"), head);
}

// Runs `phoenix hook run pre-push origin URL` with `stdin` as git would.
util::ProcessResult hook_run(const std::string& repo, const std::string& stdin_text,
                             std::map<std::string, std::string> env = {}) {
  util::ProcessOptions o;
  o.argv = {phoenix_bin(), "hook", "run", "pre-push", "origin", "/nowhere.git"};
  o.cwd = repo;
  o.stdin_data = stdin_text;
  o.env = std::move(env);
  o.unset_env = {"PHOENIX_SKIP"};
  o.timeout_s = 120;
  return util::run_process(o);
}

// The hook's worktree shares the user's config, hooks and refs. A setup
// step there that rewires git (npm's `prepare` running husky's
// `git config core.hooksPath`) and a check that does the same are put back,
// each change in one line on stderr and in the trace.
TEST_F(HookE2E, SetupAndChecksInTheHooksWorktreeCannotRewireTheRepository) {
  install();
  util::Json cfg = util::Json::parse(config("verify"));
  cfg["setup"] = {{{"run", {"sh", "-c", hostile_git_script("git")}}}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "a setup step");
  git(repo, {"checkout", "-q", "-b", "topic"});
  commit_state("GOOD 1", "topic 1");
  std::string topic = commit_state("GOOD 2", "topic 2");  // HEAD~1 there is not main
  git(repo, {"checkout", "-q", "main"});
  const std::string before = repo_control_state(repo);
  const std::string line = "refs/heads/topic " + topic + " refs/heads/topic " + std::string(40, '0') + "\n";
  auto r = hook_run(repo, line);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(in the hook's worktree)"), std::string::npos) << r.output;
  EXPECT_EQ(repo_control_state(repo), before) << r.output;
  EXPECT_NE(r.output.find("phoenix: setup changed core.hooksPath to /tmp/x; put back\n"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("phoenix: setup changed hook "), std::string::npos) << r.output;  // the shim, overwritten
  EXPECT_NE(r.output.find("phoenix: setup moved refs/heads/main from "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("which does not call Phoenix"), std::string::npos) << "the shim is back: " << r.output;
  const std::string trace = read(repo + "/.phoenix/trace.jsonl");
  EXPECT_NE(trace.find("setup changed core.hooksPath to /tmp/x; put back"), std::string::npos) << trace;

  // A check that does it, measured in the hook's worktree.
  cfg.erase("setup");
  cfg["checks"][0]["target"] = {"sh", "-c", hostile_git_script("git")};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "a hostile check");
  git(repo, {"checkout", "-q", "-b", "topic2"});
  topic = commit_state("GOOD 3", "topic2");
  git(repo, {"checkout", "-q", "main"});
  const std::string before_check = repo_control_state(repo);
  r = hook_run(repo, "refs/heads/topic2 " + topic + " refs/heads/topic2 " + std::string(40, '0') + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(repo_control_state(repo), before_check) << r.output;
  EXPECT_NE(r.output.find("phoenix: the check state changed core.hooksPath to /tmp/x; put back\n"), std::string::npos)
      << r.output;
}

// A pushed commit that is not the clean HEAD is measured by the phoenix.json
// in its own tree; one without a phoenix.json by HEAD's (said); one whose
// phoenix.json does not load is blocked with one line naming it.
TEST_F(HookE2E, APushedCommitIsMeasuredByItsOwnPhoenixJson) {
  const std::string zero(40, '0');
  git(repo, {"checkout", "-q", "-b", "topic"});
  util::Json cfg = util::Json::parse(config("verify"));
  cfg["checks"][0]["id"] = "own";
  cfg["checks"][0]["target"] = {"sh", "-c", "test -f own.txt || { echo 'FAIL own_test: no own.txt'; exit 1; }"};
  write(repo, "phoenix.json", cfg.dump(2));
  std::string topic = commit_all(repo, "topic: its own check");
  git(repo, {"checkout", "-q", "main"});
  auto r = hook_run(repo, "refs/heads/topic " + topic + " refs/heads/topic " + zero + "\n");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("RED  own  exit=1"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(" state "), std::string::npos) << "HEAD's check is not this commit's: " << r.output;

  // Without a phoenix.json: HEAD's, and it says so.
  git(repo, {"checkout", "-q", "topic"});
  git(repo, {"rm", "-q", "phoenix.json"});
  topic = commit_all(repo, "topic: no phoenix.json");
  git(repo, {"checkout", "-q", "main"});
  r = hook_run(repo, "refs/heads/topic " + topic + " refs/heads/topic " + zero + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: topic@" + topic.substr(0, 12) + " has no phoenix.json: measured with HEAD's"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("ok   state"), std::string::npos) << r.output;

  // One that does not load: blocked, one line naming the commit.
  git(repo, {"checkout", "-q", "topic"});
  write(repo, "phoenix.json", "{ \"checks\": [], \"hook\": { \"mode\": \"verfy\" } }\n");
  topic = commit_all(repo, "topic: a broken phoenix.json");
  git(repo, {"checkout", "-q", "main"});
  r = hook_run(repo, "refs/heads/topic " + topic + " refs/heads/topic " + zero + "\n");
  EXPECT_EQ(r.exit_code, 78) << r.output;
  EXPECT_EQ(count(r.output, "does not load"), 1u) << r.output;
  EXPECT_NE(r.output.find("phoenix: push blocked: the phoenix.json of topic@" + topic.substr(0, 12) + " does not load: "),
            std::string::npos)
      << r.output;
}

// Whatever the outcome, a hook run says when the pre-push git will run is
// not Phoenix's: core.hooksPath moved to a folder that does not call it.
TEST_F(HookE2E, AHookRunSaysLoudlyWhenGitRunsAForeignHooksFolder) {
  install();
  const std::string foreign = tmp / "x";
  write(foreign, "pre-push", "#!/bin/sh\nexit 0\n");
  fs::permissions(foreign + "/pre-push", fs::perms::owner_all);
  git(repo, {"config", "core.hooksPath", foreign});
  const std::string head = g({"rev-parse", "HEAD"});
  auto r = hook_run(repo, "refs/heads/main " + head + " refs/heads/main " + std::string(40, '0') + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: warning: git runs hooks from " + foreign +
                          " (core.hooksPath), which does not call Phoenix: pushes are not checked"),
            std::string::npos)
      << r.output;
  // Back to Phoenix's hook: nothing said.
  git(repo, {"config", "--unset", "core.hooksPath"});
  r = hook_run(repo, "refs/heads/main " + head + " refs/heads/main " + std::string(40, '0') + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("does not call Phoenix"), std::string::npos) << r.output;
}

TEST_F(HookE2E, ConfigErrorBlocksWithExit78) {
  write(repo, "phoenix.json", "{\n  \"checks\": [],\n  \"hook\": { \"mode\": \"verfy\" }\n}\n");
  std::string head = commit_all(repo, "broken config");
  install();
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("hook.mode"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("push blocked until phoenix.json loads"), std::string::npos) << r.output;
  EXPECT_EQ(remote_sha("main"), "");
  auto direct = hook_run(repo, "refs/heads/main " + head + " refs/heads/main " + std::string(40, '0') + "\n");
  EXPECT_EQ(direct.exit_code, 78) << direct.output;
}

TEST_F(HookE2E, MalformedStdinIsAUsageError) {
  auto r = hook_run(repo, "refs/heads/main 1234 refs/heads/main\n");
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_NE(r.output.find("stdin line 1"), std::string::npos) << r.output;
}

TEST_F(HookE2E, AnotherRunHoldingTheLockBlocks) {
  install();
  util::FileLock held(repo + "/.phoenix/lock", 0, "this repository");
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("another Phoenix run (pid " + std::to_string(::getpid()) + ") holds this repository; push blocked"),
      std::string::npos)
      << r.output;
  EXPECT_EQ(remote_sha("main"), "");
}

TEST_F(HookE2E, TheHookTimeoutCapsTheChecks) {
  write(
      repo, "phoenix.json",
      R"({ "checks": [{ "id": "slow", "kind": "command_exit", "target": ["sleep", "600"] }], "hook": { "timeout_s": 1 } })");
  commit_all(repo, "slow check");
  install();
  // Only the hook's timeout can end a ten-minute check before the push's
  // own timeout does, and it says so.
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("RED  slow"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("timeout after "), std::string::npos) << r.output;
}

TEST_F(HookE2E, TheShimSaysWhenItsBinaryIsGone) {
  std::string copy = tmp / "bin/phoenix";
  fs::create_directories(tmp / "bin");
  fs::copy_file(phoenix_bin(), copy);
  fs::permissions(copy, fs::perms::owner_all);
  auto inst = run({copy, "hook", "install"}, repo);
  ASSERT_EQ(inst.exit_code, 0) << inst.output;
  EXPECT_NE(read(repo + "/.git/hooks/pre-push").find(copy), std::string::npos);
  fs::remove(copy);
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: the hook's binary " + copy +
                          " is gone; reinstall with 'phoenix hook install' or remove "),
            std::string::npos)
      << r.output;
  EXPECT_EQ(remote_sha("main"), "");
  // Reinstalling from a binary that exists records it instead.
  auto re = phoenix({"hook", "install"});
  EXPECT_EQ(re.code, 0) << re.out;
  EXPECT_NE(re.out.find("updated"), std::string::npos) << re.out;
  EXPECT_EQ(push({"origin", "main"}).exit_code, 0);
}

// Where phoenix-hook lies beside phoenix, the hook git runs is the direct
// shim: a file whose first line makes a copy of phoenix-hook, kept beside
// it, the hook's program, so no shell starts. The copy outlives the files
// it came from: a rebuilt phoenix-hook makes the next push take the full
// hook, which refreshes the copy; phoenix and phoenix-hook both gone block
// the push with the shell shim's words (and git does not hang); a hook
// kept from before Phoenix that appears later blocks until reinstalled.
TEST_F(HookE2E, TheDirectShimRunsWithNoShellAndSurvivesItsBinaries) {
  const std::string bin = tmp / "bin";
  fs::create_directories(bin);
  fs::copy_file(phoenix_bin(), bin + "/phoenix");
  fs::copy_file(fs::path(phoenix_bin()).parent_path() / "phoenix-hook", bin + "/phoenix-hook");
  auto inst = run({bin + "/phoenix", "hook", "install"}, repo);
  ASSERT_EQ(inst.exit_code, 0) << inst.output;
  const std::string hooks = gitx::Repo::open(repo).common_dir() + "/hooks";
  const std::string copy = hooks + "/pre-push.phoenix-hook";
  std::string shim = read(hooks + "/pre-push");
  EXPECT_TRUE(util::starts_with(shim, "#!" + copy + "\n# phoenix-pre-push-shim v3\n# phoenix-hook: " + bin +
                                          "/phoenix-hook\n"))
      << shim;
  EXPECT_NE(inst.output.find("with no shell"), std::string::npos) << inst.output;
  ASSERT_TRUE(fs::exists(copy));
  auto green = push({"origin", "main"});
  EXPECT_EQ(green.exit_code, 0) << green.output;
  EXPECT_NE(green.output.find("phoenix: ok   state  exit=0"), std::string::npos) << green.output;
  commit_state("BAD", "break");
  auto red = push({"origin", "main"});
  EXPECT_NE(red.exit_code, 0) << red.output;
  EXPECT_NE(red.output.find("phoenix: push blocked: state is red"), std::string::npos) << red.output;
  g({"reset", "-q", "--hard", "HEAD~1"});

  // phoenix-hook rebuilt: a new file under its name.
  fs::copy_file(fs::path(phoenix_bin()).parent_path() / "phoenix-hook", bin + "/phoenix-hook.new");
  fs::rename(bin + "/phoenix-hook.new", bin + "/phoenix-hook");
  EXPECT_NE(run({bin + "/phoenix", "doctor"}, repo).output.find("is an older copy of " + bin + "/phoenix-hook"),
            std::string::npos);
  g({"commit", "-q", "--allow-empty", "-m", "after a rebuild"});
  auto refreshed = push({"origin", "main"});
  EXPECT_EQ(refreshed.exit_code, 0) << refreshed.output;
  EXPECT_NE(refreshed.output.find("phoenix: refreshed " + copy + " from " + bin + "/phoenix-hook"), std::string::npos)
      << refreshed.output;
  auto doctor = run({bin + "/phoenix", "doctor"}, repo);
  EXPECT_NE(doctor.output.find("(a copy of " + bin + "/phoenix-hook, no shell)"), std::string::npos) << doctor.output;

  // Both binaries gone: blocked, said, not hung.
  fs::rename(bin, tmp / "bin.away");
  const std::string pushed = remote_sha("main");
  g({"commit", "-q", "--allow-empty", "-m", "binaries gone"});
  auto gone = run({"git", "-C", repo, "push", "origin", "main"}, "", {}, 60);
  EXPECT_FALSE(gone.timed_out) << gone.output;
  EXPECT_NE(gone.exit_code, 0) << gone.output;
  EXPECT_NE(gone.output.find("phoenix: the hook's binary " + bin + "/phoenix is gone; reinstall with 'phoenix hook "
                             "install' or remove "),
            std::string::npos)
      << gone.output;
  EXPECT_EQ(remote_sha("main"), pushed);
  fs::rename(tmp / "bin.away", bin);

  // The copy gone: git could not start the hook; doctor says so.
  fs::remove(copy);
  auto lost = run({bin + "/phoenix", "doctor"}, repo);
  EXPECT_NE(lost.output.find("installed, but the program on its first line, " + copy + ", is gone"),
            std::string::npos)
      << lost.output;
  ASSERT_EQ(run({bin + "/phoenix", "hook", "install"}, repo).exit_code, 0);
  ASSERT_TRUE(fs::exists(copy));

  // A hook kept from before Phoenix, appearing later: never skipped.
  const std::string log = tmp / "chained.log";
  write(hooks, "pre-push.phoenix-chained", "#!/bin/sh\necho chained >> '" + log + "'\n");
  fs::permissions(hooks + "/pre-push.phoenix-chained", fs::perms::owner_all);
  auto unchained = push({"origin", "main"});
  EXPECT_NE(unchained.exit_code, 0) << unchained.output;
  EXPECT_NE(unchained.output.find("pre-push.phoenix-chained (a pre-push hook kept when Phoenix was installed) is "
                                  "not run by "),
            std::string::npos)
      << unchained.output;
  EXPECT_EQ(remote_sha("main"), pushed);
  auto re = run({bin + "/phoenix", "hook", "install"}, repo);
  EXPECT_NE(re.output.find("updated"), std::string::npos) << re.output;
  EXPECT_TRUE(util::starts_with(read(hooks + "/pre-push"), "#!/bin/sh\n"));
  EXPECT_FALSE(fs::exists(copy));
  auto chained = push({"origin", "main"});
  EXPECT_EQ(chained.exit_code, 0) << chained.output;
  EXPECT_EQ(read(log), "chained\n");
}

// A core.hooksPath folder may be in the work tree (committed) or serve
// other repositories: it gets the shell shim, and no copy of a binary.
TEST_F(HookE2E, AHooksPathFolderGetsTheShellShim) {
  git(repo, {"config", "core.hooksPath", ".githooks"});
  install();
  EXPECT_TRUE(util::starts_with(read(repo + "/.githooks/pre-push"), "#!/bin/sh\n# phoenix-pre-push-shim v2\n"));
  EXPECT_FALSE(fs::exists(repo + "/.githooks/pre-push.phoenix-hook"));
  EXPECT_EQ(push({"origin", "main"}).exit_code, 0);
}

TEST_F(HookE2E, InstallIsIdempotent) {
  install();
  std::string first = read(repo + "/.git/hooks/pre-push");
  auto again = phoenix({"hook", "install", "--json"});
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("\"action\":\"unchanged\""), std::string::npos) << again.out;
  EXPECT_EQ(read(repo + "/.git/hooks/pre-push"), first);
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-push.phoenix-chained"));
  EXPECT_NE(first.find(fs::canonical(phoenix_bin()).string()), std::string::npos) << "records the absolute binary path";
}

TEST_F(HookE2E, LefthookOwnsTheHooksInstallExplainsInstead) {
  write(repo, "lefthook.yml", "pre-commit:\n  jobs:\n    - run: true\n");
  auto r = phoenix({"hook", "install"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("lefthook manages this repository's git hooks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hook run pre-push {1} {2}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("use_stdin: true"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Nothing was written"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-push"));
}

TEST_F(HookE2E, HuskyOwnsTheHooksAndItsOneLineWorks) {
  fs::create_directories(repo + "/.husky/_");
  git(repo, {"config", "core.hooksPath", ".husky/_"});
  auto r = phoenix({"hook", "install", "--json"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"manager\":\"husky\""), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(repo + "/.husky/_/pre-push"));
  // What husky does (v9: .husky/_/pre-push runs .husky/pre-push with git's
  // argv and stdin), with the line install printed.
  auto j = nlohmann::json::parse(r.out);
  write(repo, ".husky/_/pre-push", "#!/bin/sh\nexec sh -e .husky/pre-push \"$@\"\n");
  ::chmod((repo + "/.husky/_/pre-push").c_str(), 0755);
  write(repo, ".husky/pre-push", j["snippet"].get<std::string>());
  commit_state("BAD", "red");
  auto no = push({"origin", "main"});
  EXPECT_NE(no.exit_code, 0) << no.output;
  EXPECT_NE(no.output.find("push blocked: state is red"), std::string::npos) << no.output;
}

TEST_F(HookE2E, InstallInASubmoduleUsesItsOwnHooksFolder) {
  std::string sub_src = init_repo(tmp / "sub-src");
  write(sub_src, "a.txt", "a\n");
  commit_all(sub_src, "sub");
  auto add = run({"git", "-C", repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub_src, "sub"});
  ASSERT_EQ(add.exit_code, 0) << add.output;
  auto r = phoenix({"hook", "install", "--json"}, repo + "/sub");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(repo + "/.git/modules/sub/hooks/pre-push")) << r.out;
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-push"));
}


std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// A red push runs each check once: phoenix-hook's measurement is what the
// full hook reports and what a heal starts from. The check runs through a
// wrapper that writes one line per run: the folder it ran in and state.txt.
class HookOnce : public HookE2E {
 protected:
  void SetUp() override {
    HookE2E::SetUp();
    log = tmp / "runs.log";
    wrapper = tmp / "bin/counted";
    write(tmp.path(), "bin/counted",
          "#!/bin/sh\necho \"$(pwd -P):$(cat state.txt 2>/dev/null)\" >>'" + log + "'\nexec \"$@\"\n");
    ::chmod(wrapper.c_str(), 0755);
  }
  std::string counted_config(const std::string& mode) {
    return std::string("{\n  \"checks\": [{ \"id\": \"state\", \"kind\": \"command_exit\", \"editable\": [\"state.txt\"],\n"
                       "    \"target\": [\"") +
           wrapper +
           "\", \"sh\", \"-c\", \"grep -q GOOD state.txt || { echo 'FAIL state_test: want GOOD'; exit 1; }\"] }],\n"
           "  \"fixers\": [\"bisect\"],\n  \"hook\": { \"mode\": \"" +
           mode + "\" }\n}\n";
  }
  // The runs logged since the last call, one "<folder>:<state.txt>" each.
  std::vector<std::string> runs() {
    std::vector<std::string> lines = fs::exists(log) ? util::split_lines(read(log)) : std::vector<std::string>{};
    fs::remove(log);
    return lines;
  }
  size_t runs_in_repo(const std::vector<std::string>& lines, const std::string& state) {
    const std::string want = fs::canonical(repo).string() + ":" + state;
    return static_cast<size_t>(std::count(lines.begin(), lines.end(), want));
  }
  std::string log, wrapper;
};

TEST_F(HookOnce, ARedPushInVerifyModeRunsTheCheckOnce) {
  write(repo, "phoenix.json", counted_config("verify"));
  commit_all(repo, "counted");
  install();
  ASSERT_EQ(push({"origin", "main"}).exit_code, 0);
  EXPECT_EQ(runs().size(), 1u) << "a green push runs the check once";
  std::string red = commit_state("BAD", "break the state");
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  const auto lines = runs();
  EXPECT_EQ(lines.size(), 1u) << joined(lines) << r.output;
  EXPECT_EQ(count(r.output, "phoenix: RED  state  exit=1"), 1u) << r.output;
  EXPECT_NE(r.output.find("| FAIL state_test: want GOOD"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("phoenix: push blocked: state is red in main@" + red.substr(0, 12)), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/hook-measured.json")) << "the hand-over file lives for one exec";
}

TEST_F(HookOnce, AHandedMeasurementIsTrustedOnlyByTheProcessItNames) {
  write(repo, "phoenix.json", counted_config("verify"));
  commit_all(repo, "counted");
  std::string red = commit_state("BAD", "break the state");
  runs();
  // A stale file and variable (another pid) say green: not believed.
  fs::create_directories(repo + "/.phoenix");
  write(repo, ".phoenix/hook-measured.json",
        R"({"pid":1,"commit":")" + red + R"(","clean":true,"results":[{"id":"state","ok":true,"signal":"exit=0",)"
        R"("evidence":"","output":"","duration_ms":1}]})");
  util::ProcessOptions o;
  o.argv = {phoenix_bin(), "hook", "run", "pre-push", "origin", bare};
  o.cwd = repo;
  o.stdin_data = "refs/heads/main " + red + " refs/heads/main " + std::string(40, '0') + "\n";
  o.env = {{"PHOENIX_HOOK_MEASURED", repo + "/.phoenix/hook-measured.json"}};
  o.unset_env = {"PHOENIX_SKIP"};
  o.timeout_s = 120;
  auto r = util::run_process(o);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("phoenix: RED  state  exit=1"), std::string::npos) << r.output;
  EXPECT_EQ(runs().size(), 1u);
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/hook-measured.json"));
}

TEST_F(HookOnce, ARedPushInHealModeRunsTheCheckOnceBeforeTheFixer) {
  write(repo, "phoenix.json", counted_config("heal"));
  commit_all(repo, "counted, heal on push");
  install();
  ASSERT_EQ(push({"origin", "main"}).exit_code, 0);
  ASSERT_EQ(phoenix({"run"}).code, 0);  // known-good, which bisect starts from
  runs();
  std::string red = commit_state("BAD", "break the state");
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: healed state in"), std::string::npos) << r.output;
  EXPECT_EQ(g({"rev-parse", "HEAD^"}), red);
  const auto lines = runs();
  EXPECT_EQ(runs_in_repo(lines, "BAD"), 1u) << "before any fixer, the check runs once\n"
                                            << joined(lines) << r.output;
  EXPECT_EQ(runs_in_repo(lines, "GOOD"), 1u) << "the fix is verified by a fresh run\n" << joined(lines);
  EXPECT_EQ(count(r.output, "phoenix: RED  state  exit=1"), 1u) << r.output;
}


// What the hook says when it stops tells what to do next.
TEST_F(HookE2E, HealRefusalNamesTheUncommittedFilesAndWhatToDo) {
  write(repo, "phoenix.json", config("heal"));
  write(repo, "notes.txt", "x\n");
  commit_all(repo, "heal on push");
  install();
  ASSERT_EQ(phoenix({"run"}).code, 0);  // known-good
  std::string red = commit_state("BAD", "break the state");
  write(repo, "notes.txt", "edited, not committed\n");
  auto r = push({"origin", "main"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("phoenix: push blocked: state is red in main@" + red.substr(0, 12) +
                          "; it cannot be healed in place: the work tree has uncommitted changes (notes.txt): "
                          "commit or stash them, then push again"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(g({"rev-parse", "HEAD"}), red);
  EXPECT_EQ(read(repo + "/notes.txt"), "edited, not committed\n");
}

TEST_F(HookE2E, UntrackedFilesDoNotBlockAHeal) {
  write(repo, "phoenix.json", config("heal"));
  commit_all(repo, "heal on push");
  install();
  ASSERT_EQ(phoenix({"run"}).code, 0);  // known-good
  std::string red = commit_state("BAD", "break the state");
  write(repo, "scratch.txt", "mine, untracked\n");
  auto r = push({"origin", "main"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("phoenix: healed state in"), std::string::npos) << r.output;
  EXPECT_EQ(g({"rev-parse", "HEAD^"}), red);
  EXPECT_EQ(read(repo + "/scratch.txt"), "mine, untracked\n");
  EXPECT_EQ(g({"status", "--porcelain"}), "?? scratch.txt");
}

TEST_F(HookE2E, APushOfARawShaIsLabelledByItsShortSha) {
  install();
  std::string red = commit_state("BAD", "break the state");
  auto r = push({"origin", red + ":refs/heads/main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: push blocked: state is red in " + red.substr(0, 12) + "\n"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(red + "@"), std::string::npos) << r.output;
  // Not checked out: measured in the hook's worktree, labelled the same.
  commit_state("GOOD", "mend it");
  auto w = push({"origin", red + ":refs/heads/main"});
  EXPECT_NE(w.output.find("state is red in " + red.substr(0, 12) + "\n"), std::string::npos) << w.output;
}

TEST_F(HookE2E, AnEscalationWithNoKnownGoodSaysHowToGetOne) {
  write(repo, "phoenix.json", config("heal"));
  commit_all(repo, "heal on push");
  install();
  commit_state("BAD", "break the state");
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: state escalated: see "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("phoenix: no known-good commit yet: run `phoenix run` once while green"), std::string::npos)
      << r.output;
}

TEST_F(HookE2E, ASetupFailureShowsTheToolsErrorAndTheEndAsEvidence) {
  install();
  util::Json cfg = util::Json::parse(config("verify"));
  cfg["setup"] = {{{"run",
                    {"sh", "-c",
                     "echo 'npm ERR! code E404'; i=0; while [ $i -lt 40 ]; do echo \"noise $i\"; i=$((i+1)); done; "
                     "exit 1"}}}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "a setup step that fails");
  git(repo, {"checkout", "-q", "-b", "topic"});
  commit_state("GOOD 1", "topic 1");
  git(repo, {"checkout", "-q", "main"});
  auto r = push({"origin", "topic"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("phoenix: push blocked: setup failed: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("     | npm ERR! code E404\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("     | noise 39\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("     | noise 5\n"), std::string::npos) << "the middle is left out\n" << r.output;
  EXPECT_NE(r.output.find("lines above)"), std::string::npos) << r.output;
}


// A push that skipped Phoenix (--no-verify, PHOENIX_SKIP=1) is noticed at
// the next hook run on that remote ref, named on stderr and in `phoenix
// status`; a teammate's push, fetched, is not.
TEST_F(HookE2E, ASkippedPushIsNoticedAtTheNextHookRunOnThatRef) {
  install();
  ASSERT_EQ(push({"origin", "main"}).exit_code, 0);
  const std::string skipped = commit_state("BAD", "pushed past the hook");
  ASSERT_EQ(push({"--no-verify", "origin", "main"}).exit_code, 0);
  EXPECT_EQ(remote_sha("main"), skipped);

  // The next push of main: still red, blocked, and the skip is named.
  commit_state("BAD still", "more");
  auto r = push({"origin", "main"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  const std::string named = "phoenix: warning: origin/main is at " + skipped.substr(0, 12) +
                            ", pushed from here without Phoenix measuring it (git push --no-verify or PHOENIX_SKIP=1)";
  EXPECT_NE(r.output.find(named), std::string::npos) << r.output;
  auto st = phoenix({"status"});
  EXPECT_NE(st.out.find("unmeasured: origin/main at " + skipped.substr(0, 12) + " was pushed without Phoenix's checks"),
            std::string::npos)
      << st.out;
  const std::string trace = read(repo + "/.phoenix/trace.jsonl");
  EXPECT_NE(trace.find("hook.unmeasured_push"), std::string::npos);

  // Mended and pushed through the hook: said once more, then cleared.
  commit_state("GOOD", "mend it");
  auto ok = push({"origin", "main"});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find(named), std::string::npos) << ok.output;
  EXPECT_EQ(phoenix({"status"}).out.find("unmeasured:"), std::string::npos);
  auto quiet = push({"origin", "main"});
  EXPECT_EQ(quiet.output.find("warning"), std::string::npos) << quiet.output;

  // PHOENIX_SKIP=1 is noticed the same way.
  const std::string skipped2 = commit_state("GOOD 2", "skipped with the variable");
  ASSERT_EQ(push({"origin", "main"}, "", {{"PHOENIX_SKIP", "1"}}).exit_code, 0);
  commit_state("GOOD 3", "next");
  auto next = push({"origin", "main"});
  EXPECT_EQ(next.exit_code, 0) << next.output;
  EXPECT_NE(next.output.find("origin/main is at " + skipped2.substr(0, 12) + ", pushed from here without Phoenix"),
            std::string::npos)
      << next.output;

  // A teammate's push, fetched here, is not a skipped push.
  std::string mate = tmp / "mate";
  ASSERT_EQ(run({"git", "clone", "-q", bare, mate}).exit_code, 0);
  git(mate, {"config", "user.name", "Mate"});
  git(mate, {"config", "user.email", "mate@example.com"});
  commit_state("GOOD mate", "from a teammate", mate);
  ASSERT_EQ(run({"git", "-C", mate, "push", "-q", "--no-verify", "origin", "main"}).exit_code, 0);
  git(repo, {"pull", "-q", "--ff-only", "origin", "main"});
  commit_state("GOOD 4", "after the teammate");
  auto after = push({"origin", "main"});
  EXPECT_EQ(after.exit_code, 0) << after.output;
  EXPECT_EQ(after.output.find("warning"), std::string::npos) << after.output;
}

// hook.verify_skipped: what a --no-verify push left on the remote is
// measured at the next hook run on that ref (in the hook's worktree, with
// its own phoenix.json) and named when red; the push being made, green,
// goes through. A wrong type is one line naming the field, exit 78.
TEST_F(HookE2E, VerifySkippedMeasuresWhatASkippedPushLeftAndNamesTheRed) {
  write(repo, "phoenix.json", config("verify", ", \"verify_skipped\": true"));
  commit_all(repo, "verify skipped pushes");
  install();
  ASSERT_EQ(push({"origin", "main"}).exit_code, 0);
  const std::string skipped = commit_state("BAD", "pushed past the hook");
  ASSERT_EQ(push({"--no-verify", "origin", "main"}).exit_code, 0);
  ASSERT_EQ(remote_sha("main"), skipped);

  const std::string mended = commit_state("GOOD", "mend it");
  auto r = push({"origin", "main"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(remote_sha("main"), mended);
  EXPECT_NE(r.output.find("hook.verify_skipped: measuring " + skipped.substr(0, 12)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("RED  state  exit=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("phoenix: warning: " + skipped.substr(0, 12) + ", pushed without Phoenix, is red: state"),
            std::string::npos)
      << r.output;
  const std::string trace = read(repo + "/.phoenix/trace.jsonl");
  EXPECT_NE(trace.find("hook.skipped_push_measured"), std::string::npos);
  // Said once: the next push finds nothing unmeasured.
  commit_state("GOOD 2", "next");
  auto quiet = push({"origin", "main"});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("verify_skipped"), std::string::npos) << quiet.output;

  write(repo, "phoenix.json", config("verify", ", \"verify_skipped\": \"yes\""));
  auto bad = phoenix({"config", "show"});
  EXPECT_EQ(bad.code, 78) << bad.out;
  EXPECT_EQ(util::trim(bad.out),
            "phoenix: error: phoenix.json:5:31: hook.verify_skipped: must be true or false, not \"yes\"");
}

}  // namespace
}  // namespace phoenix::test
