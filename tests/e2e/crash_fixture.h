// The fixture of the crash and write-fault tests (crash_test.cc,
// faults_test.cc): a repository whose one check is red, a scripted agent
// that heals it (or does not), and the checks that must hold after any
// crash or failed write followed by `phoenix recover`: every commit that
// existed is still reachable, the work tree is the pre-run state (or a
// verified heal commit on top of it), the journal passes PRAGMA
// integrity_check, the trace verifies, no sandbox or temporary file is left.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gitx/repo.h"
#include "layout/layout.h"
#include "test_util.h"
#include "util/json.h"
#include "util/path.h"
#include "util/text.h"

namespace phoenix::test {

#if defined(PHOENIX_FAULT_POINTS) && PHOENIX_FAULT_POINTS
inline constexpr bool kFaultPoints = true;
#else
inline constexpr bool kFaultPoints = false;
#endif

class CrashFixture : public ::testing::Test {
 protected:
  using Json = util::Json;

  void SetUp() override {
    // What is tested is recovery, not the kind of sandbox: the copy works
    // everywhere (inherited by the phoenix processes the cases run).
    ::setenv("PHOENIX_SANDBOX", "copy", 1);
    // One repository per process, copied for each test (a copy costs less
    // than git init and a commit).
    static ScopedTempDir templ;
    static const std::string made = [] {
      std::string r = init_repo(templ / "repo");
      write(r, "src/conf.sh", "LIMIT=11\n");  // the bug: the check wants 10
      write(r, "src/other.sh", "A=1\n");
      write(r, "tests/limit_test.sh",
            "#!/bin/sh\n. ./src/conf.sh\n[ \"$LIMIT\" = 10 ] || { echo \"FAIL limit_test: want 10, got $LIMIT\"; exit "
            "1; }\n");
      std::filesystem::permissions(r + "/tests/limit_test.sh", std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add);
      write(r, ".gitignore", ".phoenix/\nincidents/\n");
      commit_all(r, "initial");
      return r;
    }();
    repo = tmp / "repo";
    std::filesystem::copy(made, repo, std::filesystem::copy_options::recursive);
  }

  // The harness agent runs `script` in the sandbox.
  void configure(const std::string& script, const std::vector<std::string>& fixers = {"harness"}, int budget = 2) {
    Json cfg = {
        {"checks",
         {{{"id", "unit"}, {"kind", "command_exit"}, {"target", {"./tests/limit_test.sh"}}, {"editable", {"src/**"}}}}},
        {"fixers", fixers},
        {"budgets", {{"unit", budget}}},
        {"harness",
         {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
          {"timeout_s", 30},
          {"env", {{"PHOENIX_AGENT_SCRIPT", script}}}}}};
    write(repo, "phoenix.json", cfg.dump(2));
    head = commit_all(repo, "configure phoenix");
    before = tracked_state();
    commits_before = all_commits();
  }
  // A fix that works, touching two files.
  void configure_healing(const std::vector<std::string>& fixers = {"harness"}) {
    configure("replace src/conf.sh 11 10; write src/other.sh 'A=2\\n'", fixers);
  }
  // A fix that does not: budget 1, escalation, incident, rollback.
  void configure_escalating() { configure("replace src/conf.sh 11 12", {"harness"}, 1); }

  std::string tracked_state() {
    std::string s = util::trim(git(repo, {"rev-parse", "HEAD"})) + "\n";
    for (const auto& f : util::split_lines(git(repo, {"ls-files"}))) {
      struct stat st;
      std::string p = repo + "/" + f;
      if (::lstat(p.c_str(), &st) != 0) {
        s += f + " MISSING\n";
        continue;
      }
      s += f + " " + std::to_string(st.st_mode) + " " + read(p) + "\n";
    }
    return s + git(repo, {"status", "--porcelain", "--untracked-files=all"});
  }

  // The user's commits and what Phoenix keeps for them (branches, tags,
  // abandoned heads). Checkpoint refs are Phoenix's scratch: each run moves them.
  std::set<std::string> all_commits() {
    std::set<std::string> out;
    for (const auto& l :
         util::split_lines(git(repo, {"rev-list", "--branches", "--tags", "--glob=refs/phoenix/abandoned/*"})))
      if (!l.empty()) out.insert(l);
    return out;
  }

  CliRun run_with_fault(const std::string& fault, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"run"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_phoenix(repo, args, 120, {{"PHOENIX_FAULT", fault}});
  }

  // The fault fired: the process died of SIGKILL where it was told to.
  void expect_killed_at(const CliRun& r, const std::string& point) {
    EXPECT_EQ(r.code, 128 + SIGKILL) << r.out;
    EXPECT_NE(r.out.find("fault point " + point), std::string::npos) << r.out;
  }

  // What must hold after any crash + recover.
  void expect_consistent(const std::string& when) {
    SCOPED_TRACE(when);
    std::set<std::string> now = all_commits();
    for (const auto& c : commits_before) EXPECT_TRUE(now.count(c)) << "commit " << c << " is no longer reachable";
    std::string state = tracked_state();
    if (state != before) {
      // The one other consistent state: verified heal commits on the pre-run HEAD, clean tree.
      EXPECT_EQ(git(repo, {"status", "--porcelain", "--untracked-files=no"}), "") << state;
      for (const auto& subject : util::split_lines(git(repo, {"log", "--format=%s", head + "..HEAD"})))
        EXPECT_TRUE(util::starts_with(subject, "phoenix: heal ")) << subject << "\n" << state;
      EXPECT_EQ(util::trim(git(repo, {"merge-base", head, "HEAD"})), head);
      EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
    }
    const std::string journal = repo + "/.phoenix/journal.sqlite";
    if (std::filesystem::exists(journal)) {
      auto ic = run({"sqlite3", journal, "PRAGMA integrity_check;"});
      EXPECT_EQ(ic.exit_code, 0) << ic.output;
      EXPECT_EQ(util::trim(ic.output), "ok");
    }
    if (std::filesystem::exists(repo + "/.phoenix/trace.jsonl")) {
      CliRun v = run_phoenix(repo, {"trace", "verify"});
      EXPECT_EQ(v.code, 0) << v.out;
    }
    const std::string sandboxes = layout::sandboxes_dir(gitx::Repo::open(repo));
    if (std::filesystem::exists(sandboxes))
      EXPECT_TRUE(std::filesystem::is_empty(sandboxes)) << "a killed fixer's sandbox was left behind";
    for (const auto& dir : {repo + "/.phoenix", repo + "/incidents"}) {
      if (!std::filesystem::exists(dir)) continue;
      for (const auto& e : std::filesystem::directory_iterator(dir))
        EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "stray " << e.path();
    }
  }

  // The trace right after a crash: intact, or torn only in its last line.
  void expect_trace_intact_or_torn() {
    if (!std::filesystem::exists(repo + "/.phoenix/trace.jsonl")) return;
    CliRun v = run_phoenix(repo, {"trace", "verify", "--json"});
    if (v.code == 0) return;
    Json j = Json::parse(v.out);
    EXPECT_EQ(j["kind"], "torn") << v.out;
  }

  CliRun recover() {
    CliRun r = run_phoenix(repo, {"recover"});
    EXPECT_EQ(r.code, 0) << r.out;
    return r;
  }

  // The next run, without a fault, heals (the healing scenario) or escalates
  // cleanly (the escalating one), and leaves a consistent state too.
  void expect_next_run_works(int want_code) {
    CliRun r = run_phoenix(repo, {"run"});
    EXPECT_EQ(r.code, want_code) << r.out;
    CliRun again = run_phoenix(repo, {"recover"});
    EXPECT_EQ(again.code, 0) << again.out;
    EXPECT_NE(again.out.find("nothing to recover"), std::string::npos) << "a finished run needs no recovery:\n"
                                                                       << again.out;
  }

  // The whole story for one fault point.
  void crash_recover_rerun(const std::string& point, bool healing, const std::vector<std::string>& extra = {},
                           const std::string& fault = "") {
    if (!kFaultPoints)
      GTEST_SKIP() << "fault points not compiled in: configure with -DPHOENIX_FAULT_POINTS=ON (scripts/test.sh does)";
    CliRun r = run_with_fault(fault.empty() ? point : fault, extra);
    expect_killed_at(r, point);
    expect_trace_intact_or_torn();
    CliRun rec = recover();
    expect_consistent("after recover");
    CliRun twice = run_phoenix(repo, {"recover"});
    EXPECT_NE(twice.out.find("nothing to recover"), std::string::npos) << "recover is idempotent:\n" << twice.out;
    expect_next_run_works(healing ? 0 : 2);
    if (healing) EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
    if (!healing) expect_consistent("after the next run");
  }

  void TearDown() override { ::unsetenv("PHOENIX_SANDBOX"); }

  ScopedTempDir tmp;
  std::string repo, head, before;
  std::set<std::string> commits_before;

  // A loop over two tasks whose check stays green: the agent appends a line;
  // `extra` replaces top-level keys of phoenix.json. Committed as `head`.
  void configure_loop(const std::string& script = "append work.txt 'x\\n'", Json extra = Json::object(),
                      double heartbeat_s = 3600) {
    write(repo, "TASKS.md", "- [ ] first task\n- [ ] second task\n");
    Json cfg = {{"checks",
                 {{{"id", "nobreak"},
                   {"kind", "regex_in_file"},
                   {"target", "src/conf.sh"},
                   {"pattern", "BROKEN"},
                   {"expect", "absent"},
                   {"editable", {"src/**", "work.txt"}}}}},
                {"fixers", {"noop"}},
                {"harness",
                 {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
                  {"timeout_s", 30},
                  {"env", {{"PHOENIX_AGENT_SCRIPT", script}}}}},
                {"loop", {{"tasks", "TASKS.md"}, {"heartbeat_s", heartbeat_s}}}};
    for (auto& [k, v] : extra.items()) cfg[k] = v;
    write(repo, "phoenix.json", cfg.dump(2));
    head = commit_all(repo, "configure the loop");
    before = tracked_state();
    commits_before = all_commits();
  }
};

}  // namespace phoenix::test
