// phoenix-loop end to end, for three of its guards: a task's own
// acceptance check (and `after`), --max-cost with an agent that reports its
// cost, and webhook notifications to a real HTTP server on 127.0.0.1.
#include <gtest/gtest.h>

#include "gitx/repo.h"
#include "recording_server.h"
#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

#ifdef PHOENIX_LOOP_BIN

namespace phoenix::test {
namespace {

using util::Json;

class LoopGuards : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo;

  void SetUp() override {
    repo = init_loop_repo(tmp / "repo", "# Tasks\n\n- [ ] first task\n- [ ] second task\n- [ ] third task\n");
  }

  // A check that is red while src.txt says BROKEN; the agent runs `script`;
  // no fixer, so a red that the agent left escalates at once.
  void configure(const std::string& script, Json loop_extra = Json::object()) {
    Json cfg = {{"checks", Json::array({broken_check("nobreak", "src.txt", /*editable=*/false)})},
                {"fixers", {"noop"}},
                {"harness", scripted_harness(script)},
                {"loop", loop_section(2, loop_extra)}};
    write(repo, "phoenix.json", cfg.dump(2));
    commit_all(repo, "initial");
  }

  CliRun loop(std::vector<std::string> args) {
    args.push_back("--branch");
    args.push_back("phoenix/loop-test");
    return run_loop(repo, args);
  }
  Json state() { return loop_state(repo); }
  std::string branch_file(const std::string& rel) { return git(repo, {"show", "phoenix/loop-test:" + rel}); }
  std::string trace() { return read(repo + "/.phoenix/trace.jsonl"); }
};

TEST_F(LoopGuards, RedAcceptanceCheckIsNeverTickedAndItsFollowersWait) {
  write(repo, "check-export.sh", "#!/bin/sh\ngrep -q id,total out.csv\n");
  test::run({"chmod", "+x", repo + "/check-export.sh"});
  write(repo, "TASKS.md",
        "- [ ] export CSV \xE2\x80\x94 id: csv \xE2\x80\x94 check: ./check-export.sh\n"
        "- [ ] mail the CSV \xE2\x80\x94 after: csv\n- [ ] third task\n");
  // Every run the agent does real work, rewrites the acceptance script into
  // `exit 0` and ticks every box itself: the loop puts both back.
  configure("append work.txt 'x\\n'; write check-export.sh 'exit 0\\n'; replace TASKS.md '[ ]' '[x]'",
            {{"on_escalate", "skip"}});
  CliRun r = loop({});
  ASSERT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(branch_file("TASKS.md"),
            "- [ ] export CSV \xE2\x80\x94 id: csv \xE2\x80\x94 check: ./check-export.sh\n"
            "- [ ] mail the CSV \xE2\x80\x94 after: csv\n- [x] third task\n");
  EXPECT_EQ(branch_file("check-export.sh"), "#!/bin/sh\ngrep -q id,total out.csv\n");
  std::string incident = read(repo + "/.phoenix/ESCALATED");
  EXPECT_NE(read(util::trim(incident)).find("`task:csv`"), std::string::npos);
  EXPECT_NE(r.out.find("skipping t2 (mail the CSV): it comes after a skipped task"), std::string::npos) << r.out;
  EXPECT_NE(trace().find("\"loop.pinned\""), std::string::npos);
  // The csv task twice (the same red acceptance check again ends its path),
  // the third task once; the follower never ran.
  EXPECT_EQ(state()["iteration"], 3) << "the follower never ran";
}

TEST_F(LoopGuards, TasksJsonIsTickedInPlaceWhenItsCheckIsGreen) {
  const std::string tasks =
      "{\n  // tonight\n  \"tasks\": [\n    {\"title\": \"totals\", \"after\": \"csv\",\n"
      "     \"check\": {\"kind\": \"regex_in_file\", \"target\": \"out.csv\", \"pattern\": \"total\", "
      "\"expect\": \"present\"}},\n    {\"id\": \"csv\", \"title\": \"export CSV\", \"done\": false}\n  ]\n}\n";
  write(repo, "tasks.json", tasks);
  configure("append work.txt 'x\\n'; write out.csv 'id,total\\n'", {{"tasks", "tasks.json"}});
  CliRun r = loop({});
  ASSERT_EQ(r.code, 0) << r.out;
  std::string done = branch_file("tasks.json");
  EXPECT_NE(done.find("// tonight"), std::string::npos) << done;
  EXPECT_NE(done.find("{\"done\": true, \"title\": \"totals\""), std::string::npos) << done;
  EXPECT_NE(done.find("\"title\": \"export CSV\", \"done\": true}"), std::string::npos) << done;
  // The order: export CSV first, though it is listed second.
  EXPECT_EQ(util::split_lines(git(repo, {"log", "--format=%s", "-2", "phoenix/loop-test"})),
            (std::vector<std::string>{"phoenix-loop: totals", "phoenix-loop: export CSV"}));
}

TEST_F(LoopGuards, PromiseWithoutChangeIsNeverTicked) {
  configure("replace TASKS.md '[ ]' '[x]'; print '<promise>COMPLETE</promise>'");
  CliRun r = loop({});
  ASSERT_EQ(r.code, 2) << r.out;  // the task is given up on (loop.on_escalate = stop), never ticked
  EXPECT_NE(r.out.find("no progress: 2 agent runs in a row on it changed nothing"), std::string::npos) << r.out;
  EXPECT_EQ(branch_file("TASKS.md"), read(repo + "/TASKS.md"));
}

TEST_F(LoopGuards, MaxCostStopsBeforeTheIterationThatWouldPassIt) {
  configure("append work.txt 'x\\n'; print-json-cost 0.40 2");
  CliRun r = loop({"--max-cost", "1"});
  ASSERT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("stopped: --max-cost 1.00 USD: 0.80 USD spent in 2 iterations; the next could cost 0.40 USD"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(branch_file("TASKS.md"), "# Tasks\n\n- [x] first task\n- [x] second task\n- [ ] third task\n");
  Json s = state();
  EXPECT_EQ(s["iteration"], 2);
  EXPECT_NEAR(s["caps"]["cost_usd"].get<double>(), 0.8, 1e-9);
  EXPECT_EQ(s["caps"]["max_cost_usd"], 1.0);
  EXPECT_NE(trace().find("\"loop.cap\""), std::string::npos);
}

TEST_F(LoopGuards, UnreportedCostIsUnknownNeverZero) {
  configure("append work.txt 'x\\n'", {{"max_cost_usd", 5}});
  CliRun r = loop({});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--max-cost: 1 run reported no cost"), std::string::npos) << r.out;
  Json caps = state()["caps"];
  EXPECT_TRUE(caps["cost_usd"].is_null()) << caps;
  EXPECT_EQ(caps["unknown_cost_runs"], 3);
}

TEST_F(LoopGuards, WebhookHearsTheWaitTheEscalationAndTheEnd) {
  RecordingServer server({500});  // the first delivery fails once, then succeeds
  configure("first 1 " + (tmp / "runs") + " rate-limit 1; write src.txt BROKEN\\n",
            {{"notify", {{"url", server.url("/phoenix")}, {"format", "json"}}}});
  CliRun r = loop({});
  ASSERT_EQ(r.code, 2) << r.out;
  auto req = server.requests();
  ASSERT_EQ(req.size(), 4u) << r.out;
  std::vector<Json> sent;
  for (const auto& q : req) sent.push_back(Json::parse(q.body));
  EXPECT_EQ(sent[0]["event"], "waiting");
  EXPECT_EQ(sent[1], sent[0]) << "the retry after the 500 sends the same body";
  EXPECT_EQ(sent[1]["waiting_for"], "rate-limited");
  EXPECT_TRUE(sent[1]["waiting_until"].is_string());
  EXPECT_EQ(sent[2]["event"], "escalated");
  Json incident = sent[2]["incident"];
  EXPECT_EQ(incident["path"], util::trim(read(repo + "/.phoenix/ESCALATED")));
  EXPECT_EQ(incident["rollback_sha"], util::trim(git(repo, {"rev-parse", "refs/phoenix/known-good/phoenix/loop-test"})));
  EXPECT_FALSE(incident["signature"].get<std::string>().empty());
  EXPECT_NE(incident["title"].get<std::string>().find("nobreak"), std::string::npos) << incident;
  EXPECT_EQ(sent[3]["event"], "finished");
  EXPECT_EQ(sent[3]["exit_code"], 2);
}

TEST_F(LoopGuards, DeadWebhookNeverStopsTheLoop) {
  configure("append work.txt 'x\\n'",
            {{"notify", {{"url", "http://127.0.0.1:" + std::to_string(dead_port()) + "/x"}, {"attempts", 2}}}});
  CliRun r = loop({});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("not delivered after 2 attempt(s)"), std::string::npos) << r.out;
  EXPECT_EQ(branch_file("TASKS.md"), "# Tasks\n\n- [x] first task\n- [x] second task\n- [x] third task\n");
}

}  // namespace
}  // namespace phoenix::test

#endif  // PHOENIX_LOOP_BIN
