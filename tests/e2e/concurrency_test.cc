// Phoenix processes at the same time in one repository: two runs, a hook
// firing while a loop runs, two processes writing one journal, a poller
// hammering loop-state.json. No corruption, and clear messages.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "journal/journal.h"
#include "test_util.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/lock.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;
using namespace std::chrono_literals;

class Concurrency : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    write(repo, "src.txt", "fine\n");
    write(repo, ".gitignore", ".phoenix/\nincidents/\n");
  }

  // Waits (bounded) until `pred` holds; false when it never did.
  template <class F>
  bool eventually(F pred, std::chrono::seconds limit = 30s) {
    auto t0 = std::chrono::steady_clock::now();
    while (!pred()) {
      if (std::chrono::steady_clock::now() - t0 > limit) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  void expect_trace_verifies() {
    CliRun v = run_phoenix(repo, {"trace", "verify"});
    EXPECT_EQ(v.code, 0) << v.out;
  }

  ScopedTempDir tmp;
  std::string repo;
};

// A green check that takes a while: the first run holds the repository.
TEST_F(Concurrency, SecondRunRefusesNamingTheHolderPid) {
  write(repo, "slow.sh", "#!/bin/sh\nsleep 2\nexit 0\n");
  fs::permissions(repo + "/slow.sh", fs::perms::owner_all, fs::perm_options::add);
  write(repo, "phoenix.json",
        Json{{"checks", {{{"id", "slow"}, {"kind", "command_exit"}, {"target", {"./slow.sh"}}}}}, {"fixers", {"noop"}}}
            .dump());
  commit_all(repo, "initial");
  util::ProcessOptions po;
  po.argv = {phoenix_bin(), "run"};
  po.cwd = repo;
  po.timeout_s = 60;
  util::Subprocess first(po);
  std::string lock = repo + "/.phoenix/lock";
  ASSERT_TRUE(eventually([&] { return util::FileLock::holder_pid(lock) == first.pid(); }))
      << "the first run never took the lock";
  CliRun second = run_phoenix(repo, {"run"});
  EXPECT_NE(second.code, 0) << second.out;
  EXPECT_NE(second.out.find("pid " + std::to_string(first.pid())), std::string::npos) << second.out;
  EXPECT_EQ(util::split_lines(util::trim(second.out)).size(), 1u) << "one clear line:\n" << second.out;
  util::ProcessResult r = first.wait();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(util::FileLock::holder_pid(lock), 0) << "a released lock still names a holder";
  // Once it ended, the next run goes ahead.
  EXPECT_EQ(run_phoenix(repo, {"run"}).code, 0);
  expect_trace_verifies();
}

#ifdef PHOENIX_LOOP_BIN
// The loop works in its own worktree and branch; a push from the user's
// checkout meanwhile is measured there, and both share the trace safely.
TEST_F(Concurrency, HookFiresWhileALoopRuns) {
  write(repo, "TASKS.md", "- [ ] first task\n- [ ] second task\n");
  Json cfg = {{"checks",
               {{{"id", "nobreak"},
                 {"kind", "regex_in_file"},
                 {"target", "src.txt"},
                 {"pattern", "BROKEN"},
                 {"expect", "absent"},
                 {"editable", {"src.txt", "work.txt"}}}}},
              {"fixers", {"noop"}},
              {"harness",
               {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
                {"timeout_s", 60},
                {"env", {{"PHOENIX_AGENT_SCRIPT", "sleep 2; append work.txt 'x\\n'"}}}}},
              {"hook", {{"mode", "verify"}}},
              {"loop", {{"tasks", "TASKS.md"}, {"heartbeat_s", 0.01}}}};
  write(repo, "phoenix.json", cfg.dump());
  std::string head = commit_all(repo, "initial");
  util::ProcessOptions lo;
  lo.argv = {PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-conc"};
  lo.cwd = repo;
  lo.timeout_s = 120;
  util::Subprocess loop(lo);
  ASSERT_TRUE(eventually([&] { return fs::exists(repo + "/.phoenix/loop-state.json"); }));
  // Three pushes while the loop works.
  for (int i = 0; i < 3; ++i) {
    util::ProcessOptions ho;
    ho.argv = {phoenix_bin(), "hook", "run", "pre-push", "origin", "/nowhere.git"};
    ho.cwd = repo;
    ho.stdin_data = "refs/heads/main " + head + " refs/heads/main " + std::string(40, '0') + "\n";
    ho.unset_env = {"PHOENIX_SKIP"};
    ho.timeout_s = 60;
    util::ProcessResult h = util::run_process(ho);
    EXPECT_EQ(h.exit_code, 0) << h.output;
  }
  EXPECT_TRUE(loop.running()) << "the pushes were not measured while the loop ran";
  util::ProcessResult r = loop.wait();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-conc:TASKS.md"}), "- [x] first task\n- [x] second task\n");
  EXPECT_EQ(util::trim(git(repo, {"rev-parse", "HEAD"})), head);
  EXPECT_EQ(git(repo, {"status", "--porcelain"}), "");
  expect_trace_verifies();
}

// Pollers hammer loop-state.json (and `phoenix status`) while the loop
// replaces it on every transition and heartbeat: every read is a whole state.
TEST_F(Concurrency, PollersHammeringLoopStateAlwaysReadAWholeState) {
  write(repo, "TASKS.md", "- [ ] one\n- [ ] two\n- [ ] three\n");
  Json cfg = {{"checks",
               {{{"id", "nobreak"},
                 {"kind", "regex_in_file"},
                 {"target", "src.txt"},
                 {"pattern", "BROKEN"},
                 {"expect", "absent"},
                 {"editable", {"src.txt", "work.txt"}}}}},
              {"fixers", {"noop"}},
              {"harness",
               {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
                {"timeout_s", 60},
                {"env", {{"PHOENIX_AGENT_SCRIPT", "sleep 0.3; append work.txt 'x\\n'"}}}}},
              {"loop", {{"tasks", "TASKS.md"}, {"heartbeat_s", 0.002}}}};
  write(repo, "phoenix.json", cfg.dump());
  commit_all(repo, "initial");
  util::ProcessOptions lo;
  lo.argv = {PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-poll"};
  lo.cwd = repo;
  lo.timeout_s = 120;
  util::Subprocess loop(lo);
  std::atomic<bool> done{false};
  std::atomic<long> reads{0}, bad{0}, status_runs{0}, status_bad{0};
  std::string path = repo + "/.phoenix/loop-state.json";
  auto poll = [&] {
    while (!done) {
      if (!fs::exists(path)) continue;
      try {
        Json j = Json::parse(read(path));
        if (!j.contains("schema_version") || !j.contains("phase")) ++bad;
      } catch (const std::exception&) { ++bad; }
      ++reads;
    }
  };
  std::thread p1(poll), p2(poll);
  std::thread st([&] {
    while (!done) {
      if (!fs::exists(path)) continue;
      CliRun s = run_phoenix(repo, {"status", "--json"});
      ++status_runs;
      if (s.code != 0) ++status_bad;
      else if (Json::parse(s.out, nullptr, false).is_discarded()) ++status_bad;
    }
  });
  util::ProcessResult r = loop.wait();
  done = true;
  p1.join();
  p2.join();
  st.join();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(reads.load(), 1000);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(status_runs.load(), 0);
  EXPECT_EQ(status_bad.load(), 0);
  EXPECT_EQ(Json::parse(read(path))["phase"], "complete");
}
#endif

// Two processes write one journal at once (and a third reads): every
// record lands, the shared entry counts both, and SQLite finds no damage.
TEST_F(Concurrency, JournalSharedByTwoWritingProcesses) {
  std::string journal = repo + "/.phoenix/journal.sqlite";
  fs::create_directories(repo + "/.phoenix");
  const int n = 60;
  auto start = [&](const std::string& name) {
    util::ProcessOptions o;
    o.argv = {test_tool("journal_writer"), journal, name, std::to_string(n)};
    o.timeout_s = 120;
    return std::make_unique<util::Subprocess>(o);
  };
  auto a = start("alpha");
  auto b = start("beta");
  // A reader meanwhile: `phoenix journal --json` never sees a broken file.
  int reads = 0;
  while (a->running() || b->running()) {
    if (fs::exists(journal)) {
      CliRun l = run_phoenix(repo, {"journal", "--json"});
      EXPECT_EQ(l.code, 0) << l.out;
      ++reads;
    }
    std::this_thread::sleep_for(5ms);
  }
  util::ProcessResult ra = a->wait(), rb = b->wait();
  EXPECT_EQ(ra.exit_code, 0) << ra.output;
  EXPECT_EQ(rb.exit_code, 0) << rb.output;
  auto ic = run({"sqlite3", journal, "PRAGMA integrity_check;"});
  EXPECT_EQ(util::trim(ic.output), "ok") << ic.output;
  CliRun list = run_phoenix(repo, {"journal", "--json"});
  ASSERT_EQ(list.code, 0) << list.out;
  Json j = Json::parse(list.out);
  Json entries = j.is_array() ? j : j.value("entries", Json::array());
  EXPECT_EQ(entries.size(), static_cast<size_t>(2 * n + 1));
  long long shared_successes = -1;
  for (const auto& e : entries)
    if (e.value("signature", "") == util::sha256_hex("shared")) shared_successes = e.value("successes", -1LL);
  EXPECT_EQ(shared_successes, 2LL * n) << "a write was lost";
  (void)reads;
}

// How long the four writers below append: 30 s, as long as a loop's
// iteration and a hook run overlap on a real night; every pair of them
// contends many times over.
constexpr double kFourWritersSeconds = 30;

// Four processes append to one trace and one journal at once for
// kFourWritersSeconds: the chain verifies, every entry is there exactly
// once, and the shared journal entry counts every write.
TEST_F(Concurrency, FourProcessesAppendingToOneTraceAndOneJournalLoseNothing) {
  const std::string journal = repo + "/.phoenix/journal.sqlite";
  const std::string trace_path = repo + "/.phoenix/trace.jsonl";
  fs::create_directories(repo + "/.phoenix");
  const std::vector<std::string> names = {"w1", "w2", "w3", "w4"};
  std::vector<std::unique_ptr<util::Subprocess>> writers;
  for (const std::string& name : names) {
    util::ProcessOptions o;
    o.argv = {test_tool("journal_writer"), "--for", std::to_string(kFourWritersSeconds), journal, trace_path, name};
    o.timeout_s = kFourWritersSeconds + 120;
    writers.push_back(std::make_unique<util::Subprocess>(o));
  }
  std::map<std::string, int> wrote;
  for (size_t k = 0; k < writers.size(); ++k) {
    util::ProcessResult r = writers[k]->wait();
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_EQ(r.output.rfind("wrote ", 0), 0u) << r.output;
    wrote[names[k]] = std::stoi(r.output.substr(6));
    EXPECT_GT(wrote[names[k]], 0) << names[k] << " wrote nothing";
  }
  expect_trace_verifies();
  // Every (writer, i) exactly once in the trace, and in order per writer.
  std::map<std::string, std::vector<int>> seen;
  for (const std::string& line : util::split_lines(read(trace_path))) {
    if (line.empty()) continue;
    Json j = Json::parse(line);
    if (j.value("event", "") == "writer") seen[j["data"]["writer"]].push_back(j["data"]["i"].get<int>());
  }
  int total = 0;
  for (const std::string& name : names) {
    std::vector<int> want(static_cast<size_t>(wrote[name]));
    for (int i = 0; i < wrote[name]; ++i) want[static_cast<size_t>(i)] = i;
    EXPECT_EQ(seen[name], want) << name << ": a trace entry lost, repeated or out of order";
    total += wrote[name];
  }
  // The journal: each writer's own signatures once, the shared one counting
  // all. Read through the journal itself: `phoenix journal --json` of this
  // many entries is more than a test's captured output holds.
  auto ic = run({"sqlite3", journal, "PRAGMA integrity_check;"});
  EXPECT_EQ(util::trim(ic.output), "ok") << ic.output;
  const std::vector<journal::Entry> entries = journal::Journal::open(journal).list();
  std::map<std::string, int> count;
  long long shared = -1;
  for (const journal::Entry& e : entries) {
    ++count[e.signature];
    if (e.signature == util::sha256_hex("shared")) shared = e.successes;
  }
  EXPECT_EQ(entries.size(), static_cast<size_t>(total + 1));
  for (const std::string& name : names)
    for (int i = 0; i < wrote[name]; ++i)
      ASSERT_EQ(count[util::sha256_hex(name + "-" + std::to_string(i))], 1) << name << "-" << i;
  EXPECT_EQ(shared, total) << "a journal write was lost";
  std::cout << "[ measured ] " << total << " trace and journal entries from 4 processes in " << kFourWritersSeconds
            << " s\n";
}

}  // namespace
}  // namespace phoenix::test
