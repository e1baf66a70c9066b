// End-to-end: `phoenix run` and `phoenix config show`, the built binary in
// throwaway repositories (`phoenix init`: init_test.cc).
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

// A repository whose unit check passes, then a regression lands among a few commits.
class RunE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    write(repo, "src/conf.sh", "LIMIT=10\n");
    write(
        repo, "tests/limit_test.sh",
        "#!/bin/sh\n. ./src/conf.sh\n[ \"$LIMIT\" = 10 ] || { echo \"FAIL limit_test: want 10, got $LIMIT\"; exit 1; }\necho ok\n");
    fs::permissions(repo + "/tests/limit_test.sh", fs::perms::owner_all, fs::perm_options::add);
    write(repo, ".gitignore", ".phoenix/\n");
    write(repo, "phoenix.json", R"({
      "checks": [{ "id": "unit", "kind": "command_exit", "target": ["./tests/limit_test.sh"], "editable": ["src/**"] }],
      "fixers": ["bisect"]
    })");
    commit_all(repo, "initial");
    EXPECT_EQ(phoenix({"run"}).code, 0);  // blesses known-good
    for (int i = 0; i < 3; ++i) {
      write(repo, "src/f" + std::to_string(i) + ".txt", "x\n");
      commit_all(repo, "feature " + std::to_string(i));
    }
  }
  void regress() {
    write(repo, "src/conf.sh", "LIMIT=11\n");
    culprit = commit_all(repo, "tune the limit");
    write(repo, "src/after.txt", "y\n");
    head = commit_all(repo, "more work");
  }
  CliRun phoenix(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
    return run_phoenix(repo, std::move(args), 120, env);
  }
  std::string g(std::vector<std::string> args) { return util::trim(git(repo, args)); }

  ScopedTempDir tmp;
  std::string repo, culprit, head;
};

TEST_F(RunE2E, BisectFindsTheCulpritAndHealsByRevert) {
  regress();
  auto r = phoenix({"run", "--explain"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("culprit: tune the limit"), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
  EXPECT_EQ(g({"rev-parse", "HEAD^"}), head);  // the user's commits stay; the fix is on top
  EXPECT_EQ(g({"log", "-1", "--format=%an %s"}), "phoenix phoenix: heal unit (bisect)");
  EXPECT_EQ(g({"rev-parse", "refs/phoenix/known-good/main"}), g({"rev-parse", "HEAD"}));
  EXPECT_EQ(g({"status", "--porcelain"}), "");
  auto v = phoenix({"trace", "verify"});
  EXPECT_EQ(v.code, 0) << v.out;
}

TEST_F(RunE2E, JsonEventsAreOneObjectPerLine) {
  regress();
  auto r = run({phoenix_bin(), "run", "--json"}, repo);
  EXPECT_EQ(r.exit_code, 0);
  // stdout and stderr share the pipe here; keep the JSON lines.
  std::vector<std::string> states;
  Json summary;
  for (const auto& l : util::split_lines(r.output)) {
    if (l.empty() || l[0] != '{') continue;
    Json j = Json::parse(l);
    if (j["event"] == "state") states.push_back(j["state"]);
    if (j["event"] == "summary") summary = j;
  }
  EXPECT_EQ(states, (std::vector<std::string>{"DETECTED", "PROPOSING", "APPLYING", "VERIFYING", "HEALED"}));
  EXPECT_EQ(summary["exit_code"], 0);
  EXPECT_EQ(summary["issues"][0]["state"], "HEALED");
}

TEST_F(RunE2E, DryRunWritesNothing) {
  regress();
  std::string refs = g({"for-each-ref"});
  auto r = phoenix({"run", "--dry-run"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("proposed by bisect"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-LIMIT=11"), std::string::npos) << r.out;
  EXPECT_EQ(g({"rev-parse", "HEAD"}), head);
  EXPECT_EQ(g({"for-each-ref"}), refs);
  EXPECT_EQ(g({"status", "--porcelain"}), "");
  EXPECT_FALSE(fs::exists(repo + "/incidents"));
}

TEST_F(RunE2E, UnfixableEscalatesWithIncidentFlagAndNothingLost) {
  regress();
  auto r = phoenix({"run", "--fixer", "noop"});
  EXPECT_EQ(r.code, 2) << r.out;
  ASSERT_TRUE(fs::exists(repo + "/.phoenix/ESCALATED"));
  std::string note = util::trim(read(repo + "/.phoenix/ESCALATED"));
  ASSERT_TRUE(fs::exists(note)) << note;
  std::string text = read(note);
  EXPECT_NE(text.find("## Failure type\n\nunit"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL limit_test: want 10, got 11"), std::string::npos) << text;
  EXPECT_NE(text.find("## State: rolled back to " + head), std::string::npos) << text;
  EXPECT_EQ(g({"rev-parse", "HEAD"}), head);  // phoenix run never rewinds the user's commits by itself
  EXPECT_EQ(phoenix({"trace", "verify"}).code, 0);
}

TEST_F(RunE2E, RollbackToKnownGoodOnlyWhenAsked) {
  std::string kg = g({"rev-parse", "refs/phoenix/known-good/main"});
  regress();
  auto r = phoenix({"run", "--fixer", "noop", "--rollback", "known-good"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(g({"rev-parse", "HEAD"}), kg);
  std::string abandoned = g({"for-each-ref", "--format=%(objectname)", "refs/phoenix/abandoned/"});
  EXPECT_NE(abandoned.find(head), std::string::npos) << "the abandoned head must stay reachable";
}

TEST_F(RunE2E, DirtyTreeBlocksAutomaticChanges) {
  regress();
  // A modified tracked file is someone's work in progress: detection only.
  write(repo, "src/f0.txt", "my work\n");
  auto r = phoenix({"run"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--allow-dirty"), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=11\n");
  EXPECT_EQ(read(repo + "/src/f0.txt"), "my work\n");
  EXPECT_EQ(g({"rev-parse", "HEAD"}), head);
}

TEST_F(RunE2E, UntrackedFilesDoNotBlockAndSurviveTheHealByteForByte) {
  regress();
  // As git's own bisect, rebase and pull carry on around untracked files,
  // so does a heal; they stay out of the fix commit, byte for byte.
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary.push_back(static_cast<char>((i * 7919) % 256));
  write(repo, "notes/scratch.bin", binary);
  write(repo, "src/wip.txt", "my work\n");
  write(repo, "phoenix-output.log", "redirected\n");
  auto r = phoenix({"run"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
  EXPECT_EQ(g({"rev-parse", "HEAD^"}), head);
  EXPECT_EQ(g({"show", "--name-only", "--format=", "HEAD"}), "src/conf.sh");
  EXPECT_EQ(read(repo + "/notes/scratch.bin"), binary);
  EXPECT_EQ(read(repo + "/src/wip.txt"), "my work\n");
  EXPECT_EQ(read(repo + "/phoenix-output.log"), "redirected\n");
  EXPECT_EQ(g({"status", "--porcelain"}), "?? notes/\n?? phoenix-output.log\n?? src/wip.txt");
  EXPECT_EQ(g({"rev-parse", "refs/phoenix/known-good/main"}), g({"rev-parse", "HEAD"}));

  // And through an escalation and its rollback.
  write(repo, "src/conf.sh", "LIMIT=12\n");
  git(repo, {"commit", "-qam", "tune the limit again"});  // tracked files only
  auto esc = phoenix({"run", "--fixer", "noop", "--rollback", "known-good"});
  EXPECT_EQ(esc.code, 2) << esc.out;
  EXPECT_EQ(read(repo + "/notes/scratch.bin"), binary);
  EXPECT_EQ(read(repo + "/src/wip.txt"), "my work\n");
}

TEST_F(RunE2E, UsageAndConfigErrors) {
  auto only = phoenix({"run", "--only", "unti"});
  EXPECT_EQ(only.code, 64) << only.out;
  EXPECT_NE(only.out.find("did you mean 'unit'"), std::string::npos) << only.out;
  auto fixer = phoenix({"run", "--fixer", "bisekt"});
  EXPECT_EQ(fixer.code, 64) << fixer.out;
  // --rollback takes one word; the default's own word ("pre-run") is not one to give.
  for (const char* word : {"pre-run", "known_good"}) {
    auto rb = phoenix({"run", "--rollback", word});
    EXPECT_EQ(rb.code, 64) << word << ": " << rb.out;
    EXPECT_NE(rb.out.find("run: --rollback takes 'known-good'"), std::string::npos) << rb.out;
  }
  write(
      repo, "phoenix.json",
      "{\n  \"checks\": [ {\"id\": \"unit\", \"kind\": \"command_exit\", \"target\": \"true\", \"budget\": 3} ]\n}\n");
  auto cfg = phoenix({"run"});
  EXPECT_EQ(cfg.code, 78) << cfg.out;
  EXPECT_NE(cfg.out.find("phoenix.json:2:"), std::string::npos) << cfg.out;
  fs::remove(repo + "/phoenix.json");
  auto none = phoenix({"run"});
  EXPECT_EQ(none.code, 78) << none.out;
  EXPECT_NE(none.out.find("phoenix init"), std::string::npos) << none.out;
}

TEST(ConfigShowE2E, SaysWhereEachValueCameFrom) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "phoenix.json",
        R"({"checks":[{"id":"u","kind":"command_exit","target":"true"}],"budgets":{"unit":5},"diff_cap":50})");
  auto r = run_phoenix(repo, {"config", "show", "--json"}, 60, {{"PHOENIX_SESSION_CAP", "4"}});
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  std::map<std::string, Json> by;
  for (const auto& row : j["values"]) by[row["key"]] = row;
  EXPECT_EQ(by["budgets.unit"]["value"], 5);
  EXPECT_EQ(by["budgets.unit"]["origin"], "phoenix.json");
  EXPECT_EQ(by["budgets.e2e"]["origin"], "default");
  EXPECT_EQ(by["diff_cap"]["origin"], "phoenix.json");
  EXPECT_EQ(by["session_cap"]["value"], 4);
  EXPECT_EQ(by["session_cap"]["origin"], "env PHOENIX_SESSION_CAP");
  EXPECT_EQ(by["loop.on_escalate"]["value"], "stop");  // the word, not the enum's number
  auto bad = run_phoenix(repo, {"config", "show"}, 60, {{"PHOENIX_DIFF_CAP", "lots"}});
  EXPECT_EQ(bad.code, 78) << bad.out;
}

}  // namespace
}  // namespace phoenix::test
