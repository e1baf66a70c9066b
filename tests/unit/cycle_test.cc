// The engine's cycle with fake fixers and a counting check runner on real
// (libgit2) repositories in temp dirs: each invariant the engine owns
// (docs/invariants.md) has a test here that fails if it is removed.
#include "engine/cycle.h"

#include "engine/signature.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>

#include "gitx/repo.h"
#include "journal/journal.h"
#include "layout/layout.h"
#include "test_util.h"
#include "util/atomic_file.h"
#include "util/hash.h"
#include "util/lock.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::engine {
namespace {

namespace fs = std::filesystem;
using test::read;
using test::write;
using util::Json;

// Green when value.txt holds "good".
class ValueCheck : public CheckRunner {
 public:
  checks::SenseResult run(const checks::CheckSpec& spec, const std::string& root) override {
    ++runs;
    if (on_run) on_run(root);
    checks::SenseResult r;
    r.id = spec.id;
    std::string v = util::trim(read(root + "/" + (spec.path.empty() ? "value.txt" : spec.path)));
    r.ok = v == "good";
    r.signal = r.ok ? "exit=0" : "exit=1";
    r.evidence = "value is '" + v + "'";
    r.output = "FAIL: value_test (value is " + v + ")\n";
    return r;
  }
  int runs = 0;
  std::function<void(const std::string&)> on_run;
};

// What a ScriptedFixer was asked; outlives the fixer (the engine owns and
// destroys it at the end of its run).
struct FixerCalls {
  int calls = 0;
  size_t last_earlier = 0;
};

// Proposes the patches it was given, one per call, then nothing.
class ScriptedFixer : public fixers::Fixer {
 public:
  explicit ScriptedFixer(std::vector<std::string> patches, std::string name = "scripted",
                         std::shared_ptr<FixerCalls> seen = std::make_shared<FixerCalls>())
      : patches_(std::move(patches)), name_(std::move(name)), seen_(std::move(seen)) {}
  std::string name() const override { return name_; }
  fixers::Proposal propose(const fixers::Request& req) override {
    ++seen_->calls;
    seen_->last_earlier = req.earlier.size();
    fixers::Proposal p;
    if (next_ >= patches_.size()) return p;
    p.status = fixers::Status::kProposed;
    p.patch = patches_[next_++];
    p.summary = "I fixed it, trust me";  // a claim the engine must ignore
    p.model_calls = 1;
    return p;
  }

 private:
  std::vector<std::string> patches_;
  std::string name_;
  std::shared_ptr<FixerCalls> seen_;
  size_t next_ = 0;
};

std::string set_value_patch(const std::string& from, const std::string& to, const std::string& file = "value.txt") {
  return "diff --git a/" + file + " b/" + file + "\n--- a/" + file + "\n+++ b/" + file + "\n@@ -1 +1 @@\n-" + from +
         "\n+" + to + "\n";
}

std::string new_file_patch(const std::string& file, const std::string& line) {
  return "diff --git a/" + file + " b/" + file + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + file +
         "\n@@ -0,0 +1 @@\n+" + line + "\n";
}

class Cycle : public ::testing::Test {
 protected:
  void SetUp() override {
    root = test::init_repo(tmp / "repo");
    write(root, "value.txt", "good\n");
    write(root, "src/keep.txt", "x\n");
    write(root, ".gitignore", ".phoenix/\n");
    good = test::commit_all(root, "good");
    write(root, "value.txt", "bad\n");
    bad = test::commit_all(root, "break it");
    // No re-runs: the counts of check runs below are the cycle's own (the
    // verdicts' re-runs have their tests at the end of this file).
    cfg = config::parse(
        R"({"checks":[{"id":"value","kind":"command_exit","target":["true"],"editable":["value.txt","src/**"]}],
            "flaky_reruns":0})",
        "phoenix.json");
    opt.templates_dir = PHOENIX_SOURCE_DIR "/templates";
  }

  RunResult run_with(std::vector<std::unique_ptr<fixers::Fixer>> fx) {
    trace::Trace t(root + "/.phoenix/trace.jsonl");
    Engine e(root, cfg, opt, checks, std::move(fx), t, [this](const Json& ev) { events.push_back(ev); });
    return e.run();
  }
  RunResult run_with_patches(std::vector<std::string> patches) {
    std::vector<std::unique_ptr<fixers::Fixer>> fx;
    fixer = std::make_shared<FixerCalls>();
    auto f = std::make_unique<ScriptedFixer>(std::move(patches), "scripted", fixer);
    fx.push_back(std::move(f));
    return run_with(std::move(fx));
  }
  std::vector<std::string> states() const {
    std::vector<std::string> s;
    for (const auto& e : events)
      if (e["event"] == "state") s.push_back(e["state"]);
    return s;
  }
  std::vector<std::string> trace_events() const {
    std::vector<std::string> out;
    for (const auto& l : util::split_lines(read(root + "/.phoenix/trace.jsonl")))
      out.push_back(Json::parse(l)["event"]);
    return out;
  }
  std::string git(std::vector<std::string> args) { return util::trim(test::git(root, args)); }

  test::ScopedTempDir tmp;
  std::string root, good, bad;
  config::Config cfg;
  RunOptions opt;
  ValueCheck checks;
  std::shared_ptr<FixerCalls> fixer;
  std::vector<Json> events;
};

// Fails for a reason of Phoenix's own, every time it is asked.
class OwnFailureFixer : public fixers::Fixer {
 public:
  std::string name() const override { return "bisect"; }
  fixers::Proposal propose(const fixers::Request&) override {
    fixers::Proposal p;
    p.status = fixers::Status::kOwnFailure;
    p.detail = "bisect failed: not a git repository: /trees/worktrees/bisect (and again in fresh trees)";
    return p;
  }
};

// Phoenix's own failure is not the code's: no attempt, no incident, no
// rollback, no escalation; the issue ends RED saying so (exit 1).
TEST_F(Cycle, PhoenixsOwnFailureIsNeitherAnAttemptNorAnEscalation) {
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  fx.push_back(std::make_unique<OwnFailureFixer>());
  RunResult r = run_with(std::move(fx));
  EXPECT_EQ(r.exit_code, kExitRed);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].state, State::kRed);
  EXPECT_EQ(r.issues[0].attempts, 0);
  EXPECT_EQ(states(), (std::vector<std::string>{"DETECTED", "PROPOSING", "RED"}));
  EXPECT_NE(events.back().value("why", "").find("Phoenix's own failure, not the code's"), std::string::npos)
      << events.back().dump();
  EXPECT_EQ(events.back().value("status", ""), "phoenix-failure");
  EXPECT_EQ(git({"rev-parse", "HEAD"}), bad);
  EXPECT_FALSE(fs::exists(root + "/incidents"));
  EXPECT_FALSE(fs::exists(root + "/.phoenix/ESCALATED"));
}

// With another fixer after it, that one is asked and may heal.
TEST_F(Cycle, PhoenixsOwnFailureHandsTheIssueToTheNextFixer) {
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  fx.push_back(std::make_unique<OwnFailureFixer>());
  fx.push_back(std::make_unique<ScriptedFixer>(std::vector<std::string>{set_value_patch("bad", "good")}));
  RunResult r = run_with(std::move(fx));
  EXPECT_EQ(r.exit_code, kExitOk);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].state, State::kHealed);
  EXPECT_EQ(r.issues[0].attempts, 1);  // the healing patch alone
  EXPECT_EQ(states()[2], "NO_PROPOSAL");
}

// A harness whose credit is gone: it says so every time it is asked.
class QuotaFixer : public fixers::Fixer {
 public:
  std::string name() const override { return "harness"; }
  fixers::Proposal propose(const fixers::Request&) override {
    fixers::Proposal p;
    p.status = fixers::Status::kQuota;
    p.summary = "harness claude: quota";
    p.detail = "quota: Your credit balance is too low to access the Anthropic API.";
    p.first_error = "Your credit balance is too low to access the Anthropic API.";
    return p;
  }
};

// A model that cannot be used is not an escalation of the code: the run
// stops with exit 1 and one line naming the CLI and its first error line,
// no attempt spent, no incident, nothing rolled back. After a fixer that
// spent an attempt (a journal replay that went red) the same.
TEST_F(Cycle, QuotaEndsTheRunAsModelUnusableNotAnEscalation) {
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  fx.push_back(std::make_unique<ScriptedFixer>(std::vector<std::string>{set_value_patch("bad", "worse")}, "journal"));
  fx.push_back(std::make_unique<QuotaFixer>());
  RunResult r = run_with(std::move(fx));
  EXPECT_EQ(r.exit_code, kExitRed);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].state, State::kUnusable);
  EXPECT_TRUE(model_unusable(r.issues[0].state));
  EXPECT_EQ(r.model_unusable, "harness quota: claude: Your credit balance is too low to access the Anthropic API.");
  EXPECT_EQ(states().back(), "MODEL_UNUSABLE");
  EXPECT_TRUE(r.incident.empty());
  EXPECT_FALSE(fs::exists(root + "/incidents"));
  EXPECT_FALSE(fs::exists(root + "/.phoenix/ESCALATED"));
  EXPECT_EQ(git({"rev-parse", "HEAD"}), bad);
  EXPECT_EQ(read(root + "/value.txt"), "bad\n");
}

TEST_F(Cycle, GreenRunBlessesKnownGood) {
  write(root, "value.txt", "good\n");
  std::string head = test::commit_all(root, "fix by hand");
  RunResult r = run_with_patches({});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.known_good, head);
  EXPECT_EQ(git({"rev-parse", "refs/phoenix/known-good/main"}), head);
}

TEST_F(Cycle, HealsWithAFixCommitAfterAFreshRerun) {
  RunResult r = run_with_patches({set_value_patch("bad", "good")});
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].state, engine::State::kHealed);
  EXPECT_EQ(checks.runs, 2);  // detection + the fresh verification
  EXPECT_EQ(read(root + "/value.txt"), "good\n");
  EXPECT_EQ(git({"log", "-1", "--format=%an"}), "phoenix");
  EXPECT_NE(git({"log", "-1", "--format=%B"}).find("Issue-Signature: "), std::string::npos);
  EXPECT_EQ(git({"rev-parse", "HEAD^"}), bad);
  EXPECT_EQ(git({"status", "--porcelain"}), "");
  EXPECT_EQ(r.known_good, git({"rev-parse", "HEAD"}));
  auto s = states();
  std::vector<std::string> want{"DETECTED", "PROPOSING", "APPLYING", "VERIFYING", "HEALED"};
  EXPECT_EQ(s, want);
}

// A caller that measured HEAD already (the pre-push hook) hands its result
// in: DETECTED takes it, and only the fix's verification runs the check.
// Measured at another commit, it is not taken.
TEST_F(Cycle, AMeasurementHandedInForHeadIsTakenNotRepeated) {
  checks::SenseResult red;
  red.id = "value";
  red.ok = false;
  red.signal = "exit=1";
  red.evidence = "value is 'bad'";
  red.output = "FAIL: value_test (value is bad)\n";
  opt.measured = {red};
  opt.measured_head = good;  // not HEAD: measured again
  RunResult stale = run_with_patches({});
  EXPECT_EQ(checks.runs, 1);
  EXPECT_EQ(git({"rev-parse", "HEAD"}), bad);

  checks.runs = 0;
  opt.measured_head = bad;
  RunResult r = run_with_patches({set_value_patch("bad", "good")});
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].state, engine::State::kHealed);
  EXPECT_EQ(checks.runs, 1) << "the fresh verification alone";
  EXPECT_EQ(read(root + "/value.txt"), "good\n");
}

// Invariant 2: a proposal that claims success but leaves the check red is not HEALED.
TEST_F(Cycle, Invariant2_AClaimIsNotAHeal) {
  cfg.budgets["unit"] = 1;
  RunResult r = run_with_patches({set_value_patch("bad", "still bad")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.issues[0].state, engine::State::kEscalated);
  EXPECT_EQ(read(root + "/value.txt"), "bad\n");  // restored byte for byte
  EXPECT_EQ(git({"rev-parse", "HEAD"}), bad);
}

// Invariant 1: when the fix is verified, a checkpoint of the tree as it was
// before the patch already exists.
TEST_F(Cycle, Invariant1_CheckpointPrecedesTheWrite) {
  write(root, "untracked-note.txt", "mine\n");
  opt.allow_dirty = true;
  bool seen = false;
  checks.on_run = [&](const std::string&) {
    if (checks.runs < 2) return;
    auto repo = gitx::Repo::open(root);
    EXPECT_EQ(layout::attempt_ref(repo), "refs/phoenix/checkpoints/main/attempt");
    auto cp = repo.read_ref(layout::attempt_ref(repo));
    ASSERT_TRUE(cp.has_value()) << "no checkpoint before the patch was applied";
    // The checkpoint holds the pre-patch content, untracked files included.
    EXPECT_EQ(util::trim(test::git(root, {"show", *cp + ":value.txt"})), "bad");
    EXPECT_EQ(util::trim(test::git(root, {"show", *cp + ":untracked-note.txt"})), "mine");
    seen = true;
  };
  RunResult r = run_with_patches({set_value_patch("bad", "good")});
  EXPECT_TRUE(seen);
  auto ev = trace_events();
  auto cp = std::find(ev.begin(), ev.end(), "checkpoint");
  ASSERT_NE(cp, ev.end());
}

// Invariant 3: the budget per failure type is the number of attempts.
TEST_F(Cycle, Invariant3_BudgetThenEscalate) {
  cfg.budgets["unit"] = 2;
  cfg.circuit_breaker = 10;
  // Different files each time: different attempt signatures.
  RunResult r = run_with_patches(
      {set_value_patch("bad", "nope1"), new_file_patch("src/n2.txt", "x"), set_value_patch("bad", "good")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.issues[0].attempts, 2);
  EXPECT_EQ(fixer->calls, 2);          // the third (good) patch is never asked for
  EXPECT_EQ(fixer->last_earlier, 1u);  // the failure was fed back
  EXPECT_FALSE(r.incident.empty());
  std::string note = read(r.incident);
  EXPECT_NE(note.find("budget of 2 for unit spent"), std::string::npos);
}

TEST_F(Cycle, Invariant3_SameAttemptSignatureStopsThatPath) {
  cfg.circuit_breaker = 10;
  // Two different patches touching the same file for the same issue: same attempt signature.
  RunResult r = run_with_patches({set_value_patch("bad", "nope"), set_value_patch("bad", "other")});
  EXPECT_EQ(r.issues[0].attempts, 1);
  bool repeat = false;
  for (const auto& e : events) repeat = repeat || (e.value("guard", "") == "repeat");
  EXPECT_TRUE(repeat);
  EXPECT_EQ(r.exit_code, 2);
}

// Invariant 4: guards reject before anything is applied.
TEST_F(Cycle, Invariant4_ProtectedAndOutsideEditableAreRejected) {
  cfg.circuit_breaker = 10;
  cfg.budgets["unit"] = 5;
  write(root, "phoenix.json", "{}\n");
  write(root, "tests/value_test.sh", "exit 0\n");
  write(root, "other.txt", "o\n");
  test::commit_all(root, "more files");
  RunResult r = run_with_patches({
      set_value_patch("{}", "{\"checks\":[]}", "phoenix.json"),
      set_value_patch("exit 0", "exit 1", "tests/value_test.sh"),
      set_value_patch("o", "p", "other.txt"),
      new_file_patch(".phoenix/baselines/x.png", "fake"),
  });
  std::vector<std::string> guards;
  for (const auto& e : events)
    if (e.contains("guard")) guards.push_back(e["guard"]);
  EXPECT_EQ(guards, (std::vector<std::string>{"protected", "protected", "editable", "protected"}));
  EXPECT_EQ(read(root + "/phoenix.json"), "{}\n");
  EXPECT_EQ(read(root + "/tests/value_test.sh"), "exit 0\n");
  EXPECT_EQ(read(root + "/other.txt"), "o\n");
  EXPECT_EQ(checks.runs, 1);  // nothing was applied, so nothing was verified
}

TEST_F(Cycle, Invariant9_DestructiveStatementNeedsAPerson) {
  cfg.budgets["unit"] = 1;
  RunResult r = run_with_patches({new_file_patch("src/migrate.sql", "DROP TABLE orders;")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(root + "/src/migrate.sql"));
  EXPECT_NE(read(r.incident).find("destructive"), std::string::npos);
}

TEST_F(Cycle, DiffCapRejects) {
  cfg.diff_cap = 1;
  cfg.budgets["unit"] = 1;
  RunResult r = run_with_patches({set_value_patch("bad", "good")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(read(root + "/value.txt"), "bad\n");
}

// Invariant 5: a dirty tree blocks automatic changes unless --allow-dirty.
TEST_F(Cycle, Invariant5_DirtyTreeBlocks) {
  write(root, "src/keep.txt", "my uncommitted work\n");
  RunResult r = run_with_patches({set_value_patch("bad", "good")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(fixer->calls, 0);
  EXPECT_EQ(read(root + "/value.txt"), "bad\n");
  EXPECT_EQ(read(root + "/src/keep.txt"), "my uncommitted work\n");
}

TEST_F(Cycle, AllowDirtyHealsAroundTheUsersWork) {
  write(root, "src/keep.txt", "my uncommitted work\n");
  opt.allow_dirty = true;
  cfg.budgets["unit"] = 2;
  cfg.circuit_breaker = 10;
  RunResult r = run_with_patches({set_value_patch("bad", "nope"), set_value_patch("bad", "good")});
  EXPECT_EQ(read(root + "/src/keep.txt"), "my uncommitted work\n");
  EXPECT_EQ(r.issues[0].state, engine::State::kEscalated);  // second patch has the same attempt signature
  opt.allow_dirty = true;
}

// Invariant 6: N consecutive failed heals trip the circuit breaker.
TEST_F(Cycle, Invariant6_CircuitBreaker) {
  cfg.budgets["unit"] = 10;
  cfg.circuit_breaker = 2;
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  fx.push_back(std::make_unique<ScriptedFixer>(std::vector<std::string>{set_value_patch("bad", "n1")}, "a"));
  fx.push_back(std::make_unique<ScriptedFixer>(std::vector<std::string>{new_file_patch("src/n2.txt", "x")}, "b"));
  fx.push_back(std::make_unique<ScriptedFixer>(std::vector<std::string>{set_value_patch("bad", "good")}, "c"));
  RunResult r = run_with(std::move(fx));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(read(r.incident).find("circuit breaker"), std::string::npos);
  EXPECT_EQ(read(root + "/value.txt"), "bad\n");
}

TEST_F(Cycle, AStaleJournalReplayDoesNotBlockAFreshFixOfTheSameFile) {
  cfg.circuit_breaker = 10;
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  fx.push_back(std::make_unique<ScriptedFixer>(std::vector<std::string>{set_value_patch("bad", "stale")}, "journal"));
  fx.push_back(std::make_unique<ScriptedFixer>(std::vector<std::string>{set_value_patch("bad", "good")}, "fresh"));
  RunResult r = run_with(std::move(fx));
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].fixer, "fresh");
}

TEST_F(Cycle, Invariant8_SessionCap) {
  cfg.budgets["unit"] = 10;
  cfg.circuit_breaker = 10;
  cfg.session_cap = 1;
  RunResult r = run_with_patches({set_value_patch("bad", "n1"), new_file_patch("src/x.txt", "x")});
  EXPECT_EQ(r.issues[0].attempts, 1);
  EXPECT_NE(read(r.incident).find("session cap"), std::string::npos);
}

// Invariant 7: the dry run is a real path that writes nothing.
TEST_F(Cycle, Invariant7_DryRunWritesNothing) {
  opt.dry_run = true;
  std::string refs_before = git({"for-each-ref"});
  std::string index_before = util::sha256_hex(read(root + "/.git/index"));
  RunResult r = run_with_patches({set_value_patch("bad", "good")});
  EXPECT_EQ(r.issues[0].state, engine::State::kProposed);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(git({"rev-parse", "HEAD"}), bad);
  EXPECT_EQ(git({"for-each-ref"}), refs_before);
  EXPECT_EQ(util::sha256_hex(read(root + "/.git/index")), index_before);
  EXPECT_EQ(read(root + "/value.txt"), "bad\n");
  EXPECT_FALSE(fs::exists(root + "/incidents"));
  EXPECT_EQ(checks.runs, 1);
}

// Invariants 10 and 11: the note is on disk before the rollback, which keeps
// what it abandons under a ref and restores the pre-run state.
TEST_F(Cycle, Invariant10And11_IncidentBeforeRollbackNothingLost) {
  cfg.budgets["unit"] = 1;
  bool note_seen_before_reset = false;
  std::string incident_dir = root + "/incidents";
  RunResult r = run_with_patches({set_value_patch("bad", "worse")});
  auto ev = trace_events();
  auto inc = std::find(ev.begin(), ev.end(), "incident");
  auto rb = std::find(ev.begin(), ev.end(), "rollback");
  ASSERT_NE(inc, ev.end());
  ASSERT_NE(rb, ev.end());
  note_seen_before_reset = inc < rb;
  EXPECT_TRUE(note_seen_before_reset);
  std::string note = read(r.incident);
  for (const char* section :
       {"# Incident — ", "## Failure type", "## Check", "## Retries attempted", "## Failure signatures",
        "## Last attempted diff", "## Evidence", "## State: rolled back to "})
    EXPECT_NE(note.find(section), std::string::npos) << section;
  EXPECT_LT(note.find("## Failure type"), note.find("## Check"));
  EXPECT_LT(note.find("## Evidence"), note.find("## State"));
  EXPECT_NE(note.find("+worse"), std::string::npos);
  EXPECT_EQ(util::trim(read(root + "/.phoenix/ESCALATED")), r.incident);
  EXPECT_EQ(git({"rev-parse", "HEAD"}), bad);  // the user's commits are not rewound
}

TEST_F(Cycle, Invariant11_RollbackToKnownGoodKeepsTheAbandonedHead) {
  test::git(root, {"update-ref", "refs/phoenix/known-good", good});
  opt.rollback = Rollback::kKnownGood;
  cfg.budgets["unit"] = 1;
  RunResult r = run_with_patches({set_value_patch("bad", "worse")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(git({"rev-parse", "HEAD"}), good);
  std::string abandoned = git({"for-each-ref", "--format=%(objectname)", "refs/phoenix/abandoned/"});
  EXPECT_NE(abandoned.find(bad), std::string::npos);
  EXPECT_NE(read(r.incident).find("rolled back to " + good), std::string::npos);
}

TEST_F(Cycle, HealthFailuresRollBackAtOnce) {
  cfg = config::parse(R"({"checks":[{"id":"value","kind":"command_exit","target":["true"],"type":"health"}]})",
                      "phoenix.json");
  RunResult r = run_with_patches({set_value_patch("bad", "good")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(fixer->calls, 0);
}

TEST_F(Cycle, RegressionInAnotherCheckIsNotAHeal) {
  write(root, "other.txt", "good\n");
  test::commit_all(root, "other");
  bad = git({"rev-parse", "HEAD"});
  cfg = config::parse(R"({"checks":[
      {"id":"value","kind":"regex_in_file","target":"value.txt","pattern":"x","editable":["value.txt","other.txt"]},
      {"id":"other","kind":"regex_in_file","target":"other.txt","pattern":"x"}]})",
                      "phoenix.json");
  cfg.budgets["lint"] = 1;
  std::string both = set_value_patch("bad", "good") + set_value_patch("good", "broken", "other.txt");
  RunResult r = run_with_patches({both});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(read(root + "/other.txt"), "good\n");
}

TEST(Rollback, ItsWordsRoundTrip) {
  for (Rollback r : {Rollback::kPreRun, Rollback::kKnownGood}) EXPECT_EQ(parse_rollback(rollback_name(r)), r);
  EXPECT_STREQ(rollback_name(Rollback::kKnownGood), "known-good");
  EXPECT_EQ(parse_rollback("known_good"), std::nullopt);
  EXPECT_EQ(parse_rollback(""), std::nullopt);
}

TEST_F(Cycle, OnlyOneRunPerRepository) {
  util::FileLock held(root + "/.phoenix/lock", 0, "test");
  EXPECT_THROW(run_with_patches({}), phoenix::Error);
}

// --- invariant 14: only the failures a change brings count -----------------

// A runner naming two GoogleTest failures while value.txt says "bad" and
// one ("Net.Fetch", red everywhere) when it says "good"; every `flake_at`
// run (1-based) of it also fails "Timing.Slow".
class NamedTests : public CheckRunner {
 public:
  checks::SenseResult run(const checks::CheckSpec& spec, const std::string& root) override {
    ++runs;
    checks::SenseResult r;
    r.id = spec.id;
    const bool bad = util::trim(read(root + "/value.txt")) != "good";
    std::string out = "[==========] Running 4 tests\n";
    if (bad) out += "[  FAILED  ] Calc.Value (0 ms)\n";
    out += "[  FAILED  ] Net.Fetch (0 ms)\n";
    if (runs == flake_at) out += "[  FAILED  ] Timing.Slow (1 ms)\n";
    r.output = out;
    r.evidence = out;
    r.signal = "exit=1";
    return r;
  }
  int runs = 0;
  int flake_at = -1;
};

std::map<std::string, FailingSet> net_fetch_red() { return {{"value", FailingSet{false, {"Net.Fetch"}, ""}}}; }

TEST_F(Cycle, Invariant14PreExistingFailureIsNeitherHealedNorEscalated) {
  NamedTests named;
  opt.reference = net_fetch_red();
  opt.reference_name = "origin/main";
  write(root, "value.txt", "good\n");
  test::commit_all(root, "good again, the network still down");
  trace::Trace t(root + "/.phoenix/trace.jsonl");
  fixer = std::make_shared<FixerCalls>();
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  fx.push_back(std::make_unique<ScriptedFixer>(std::vector<std::string>{}, "scripted", fixer));
  Engine e(root, cfg, opt, named, std::move(fx), t, [this](const Json& ev) { events.push_back(ev); });
  RunResult r = e.run();
  EXPECT_EQ(r.exit_code, kExitOk);
  EXPECT_TRUE(r.issues.empty());
  EXPECT_EQ(fixer->calls, 0) << "nothing healed on the change's budget";
  EXPECT_EQ(states(), (std::vector<std::string>{"GREEN"}));
  EXPECT_EQ(events[0].value("let_by", ""), "1 pre-existing (Net.Fetch)");
  ASSERT_EQ(r.verdicts.size(), 1u);
  EXPECT_EQ(r.verdicts[0].pre_existing, std::vector<std::string>{"Net.Fetch"});
  EXPECT_FALSE(fs::exists(root + "/incidents"));
  EXPECT_FALSE(fs::exists(root + "/.phoenix/ESCALATED"));
  EXPECT_FALSE(
      test::run({"git", "-C", root, "rev-parse", "--verify", "-q", "refs/phoenix/known-good/main"}).exit_code == 0)
      << "a tree green only because its failures were there before is not known-good";
}

TEST_F(Cycle, Invariant14TheHealIsOfTheNewFailureAndItsVerificationJudgesTheRest) {
  NamedTests named;
  opt.reference = net_fetch_red();
  trace::Trace t(root + "/.phoenix/trace.jsonl");
  fixer = std::make_shared<FixerCalls>();
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  fx.push_back(
      std::make_unique<ScriptedFixer>(std::vector<std::string>{set_value_patch("bad", "good")}, "scripted", fixer));
  Engine e(root, cfg, opt, named, std::move(fx), t, [this](const Json& ev) { events.push_back(ev); });
  RunResult r = e.run();
  // HEALED though Net.Fetch still fails on the fresh re-run: it failed at
  // the reference too.
  EXPECT_EQ(r.exit_code, kExitOk);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].state, State::kHealed);
  EXPECT_EQ(r.issues[0].attempts, 1);
  const std::string out =
      "[==========] Running 4 tests\n[  FAILED  ] Calc.Value (0 ms)\n[  FAILED  ] Net.Fetch (0 ms)\n";
  EXPECT_EQ(r.issues[0].issue_signature, issue_signature_for("value", out, {"Calc.Value"}))
      << "the signature is the new failure's alone";
  EXPECT_EQ(read(root + "/value.txt"), "good\n");
}

TEST_F(Cycle, Invariant14FlakyFailureIsRunAgainAloneAndLetBy) {
  NamedTests named;
  named.flake_at = 1;
  cfg.flaky_reruns = 2;
  opt.reference = net_fetch_red();
  write(root, "value.txt", "good\n");
  test::commit_all(root, "good");
  trace::Trace t(root + "/.phoenix/trace.jsonl");
  fixer = std::make_shared<FixerCalls>();
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  fx.push_back(std::make_unique<ScriptedFixer>(std::vector<std::string>{}, "scripted", fixer));
  Engine e(root, cfg, opt, named, std::move(fx), t, [this](const Json& ev) { events.push_back(ev); });
  RunResult r = e.run();
  EXPECT_EQ(r.exit_code, kExitOk);
  EXPECT_EQ(fixer->calls, 0);
  EXPECT_EQ(named.runs, 2) << "one re-run: it passed";
  ASSERT_EQ(r.verdicts.size(), 1u);
  EXPECT_EQ(r.verdicts[0].flaky, std::vector<std::string>{"Timing.Slow"});
  EXPECT_EQ(r.verdicts[0].pre_existing, std::vector<std::string>{"Net.Fetch"});
  const auto flakes = journal::Journal::open(root + "/.phoenix/journal.sqlite").flakes();
  ASSERT_EQ(flakes.size(), 1u);
  EXPECT_EQ(flakes[0].test, "Timing.Slow");
  EXPECT_EQ(flakes[0].trees, 1) << "the clean tree's id";
}

}  // namespace
}  // namespace phoenix::engine
