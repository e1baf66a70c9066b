// Phoenix on real projects with their real toolchains (issue #17): a CMake +
// CTest C library with a configured build folder, an npm package whose
// lockfile `npm ci` installs (prettier 3.6.2, from the npm cache that
// scripts/deps.sh fills: no network at test time) and whose `npm test` runs
// `prettier --check .` then `node --test`, and a Python package tested by
// pytest. The projects live in tests/fixtures/real-projects/.
//
// For each, one walk as a newcomer would take it: `phoenix init` with no
// edits → a green `phoenix run` blesses known-good → an uncommitted break is
// seen red → a regression among ordinary commits is found and healed by
// bisect (an untracked binary file surviving byte for byte) → one loop task
// done by the scripted agent in the loop's worktree → a pushed commit that is
// not HEAD measured green by the pre-push hook. Plus what a newcomer trips
// on: the npm project's own `npm test` after Phoenix's trees exist, `git add
// -A` beside a hand-written phoenix.json, and an idle agent.
//
// What the offline world needs comes from the environment, never from edits
// to what init wrote: npm_config_* variables (npm_offline_env) and a PATH on
// which `python3` is an interpreter with pytest. The agent is the `claude`
// preset (PHOENIX_HARNESS=claude), which is our scripted agent under that
// name in a folder put first on PATH.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "config/config.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "real_projects.h"
#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

// Timeouts for one command. Generous against a loaded 2-core CI machine;
// the projects are small enough that each step takes seconds.
constexpr double kStepTimeout = 240;

// One fixture's walk.
struct Walk {
  std::string project;       // tests/fixtures/real-projects/<project>
  bool needs_setup;          // init must write setup steps (a fresh tree lacks build/ or node_modules/)
  std::string source;        // the file the breaks edit
  std::string good, bad;     // a piece of `source` and its broken form
  std::string red_evidence;  // what the red measurement of the break shows
  std::string agent_script;  // PHOENIX_AGENT_SCRIPT for the loop's one task
  std::string agent_path;    // a file on the loop branch after the task
  std::string agent_text;    // ... containing this
};

bool has_line_with(const std::string& out, const std::vector<std::string>& parts) {
  for (const auto& line : util::split_lines(out)) {
    bool all = true;
    for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at == std::string::npos) ADD_FAILURE() << "'" << from << "' not found in:\n" << text;
  else text.replace(at, from.size(), to);
  return text;
}

// Bytes no text tool would keep as they are: NULs, CR LF, invalid UTF-8.
std::string binary_blob() {
  std::string b;
  for (int round = 0; round < 4; ++round)
    for (int i = 0; i < 256; ++i) b.push_back(static_cast<char>((i * 7 + round) & 0xff));
  b += std::string("\r\n\0\0\xff\xfe", 6);
  return b;
}

class RealProjects : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo;
  EnvVars env;  // for every command the test runs, and so for all Phoenix runs

  // The fixture `project` committed in a fresh repository, with the agent
  // binary and (for Python) the interpreter set up in `env`.
  void make_repo(const std::string& project) {
    repo = init_repo(tmp / "repo");
    copy_real_project(project, repo);
    commit_all(repo, "initial");
    std::string bin = tmp / "bin";
    fs::create_directories(bin);
    fs::create_symlink(test_tool("scripted_agent"), bin + "/claude");
    env = {{"PATH", path_with(bin)}, {"PHOENIX_HARNESS", "claude"}, {"PHOENIX_AGENT_LOG", tmp / "agent.log"}};
  }

  util::ProcessResult sh(const std::vector<std::string>& argv, EnvVars extra = {}, double timeout_s = kStepTimeout) {
    EnvVars e = env;
    e.insert(e.end(), extra.begin(), extra.end());
    return run(argv, repo, e, timeout_s);
  }
  CliRun phoenix(std::vector<std::string> args, EnvVars extra = {}) {
    args.insert(args.begin(), phoenix_bin());
    auto r = sh(args, std::move(extra));
    return {r.exit_code, r.output};
  }
#ifdef PHOENIX_LOOP_BIN
  CliRun loop(std::vector<std::string> args, EnvVars extra = {}) {
    args.insert(args.begin(), PHOENIX_LOOP_BIN);
    auto r = sh(args, std::move(extra));
    return {r.exit_code, r.output};
  }
#endif
  std::string g(const std::vector<std::string>& args) { return util::trim(git(repo, args)); }
  std::vector<std::string> staged() {
    return util::split_lines(util::trim(git(repo, {"diff", "--cached", "--name-only"})));
  }

  // The folder where Phoenix keeps its own worktrees (src/layout/layout.h).
  std::string phoenix_worktrees() { return layout::trees_root(gitx::Repo::open(repo)) + "/worktrees/"; }

  // Each run of the scripted agent, in order.
  std::vector<Json> agent_runs() {
    std::vector<Json> out;
    if (!fs::exists(tmp / "agent.log")) return out;
    for (const auto& l : util::split_lines(read(tmp / "agent.log")))
      if (!l.empty()) out.push_back(Json::parse(l));
    return out;
  }

  void walk(const Walk& w);
  void hand_written_python(const std::string& py, const std::string& fixers);
};

void RealProjects::walk(const Walk& w) {
  const std::string original = read(repo + "/" + w.source);

  // 1. init with no edits: it measures every check in the work tree and in a
  // fresh tree of its own (with setup), green here.
  CliRun init = phoenix({"init"});
  ASSERT_EQ(init.code, 0) << init.out;
  config::Config cfg;
  ASSERT_NO_THROW(cfg = config::load(repo, true)) << read(repo + "/phoenix.json");
  ASSERT_FALSE(cfg.checks.empty()) << read(repo + "/phoenix.json");
  if (w.needs_setup)
    EXPECT_FALSE(cfg.setup.empty()) << "a fresh tree has no build folder or node_modules\n"
                                    << read(repo + "/phoenix.json");
  // The newcomer commits what init wrote the way most people commit: of
  // .phoenix/ at most its own .gitignore goes in.
  git(repo, {"add", "-A"});
  for (const auto& p : staged())
    if (util::starts_with(p, ".phoenix/")) EXPECT_EQ(p, ".phoenix/.gitignore") << "committed Phoenix state";
  git(repo, {"commit", "-q", "-m", "phoenix init"});

  // 2. A green run blesses known-good.
  CliRun green = phoenix({"run"});
  ASSERT_EQ(green.code, 0) << green.out;
  EXPECT_EQ(g({"rev-parse", "refs/phoenix/known-good/main"}), g({"rev-parse", "HEAD"})) << green.out;

  // 3. An uncommitted break is seen red: the check measures the tree as it is now.
  write(repo, w.source, replace_once(original, w.good, w.bad));
  CliRun red = phoenix({"sense"});
  EXPECT_EQ(red.code, 1) << red.out;
  EXPECT_NE(red.out.find(w.red_evidence), std::string::npos) << red.out;
  write(repo, w.source, original);

  // 4. A regression among ordinary commits, found and healed by bisect; an
  // untracked binary file neither blocks the run nor changes.
  write(repo, "docs/usage.txt", "Call add(a, b).\n");
  commit_all(repo, "docs: usage");
  write(repo, w.source, replace_once(original, w.good, w.bad));
  commit_all(repo, "calc: tune add");
  write(repo, "docs/notes.txt", "Notes.\n");
  std::string before_heal = commit_all(repo, "docs: notes");
  const std::string blob = binary_blob();
  write(repo, "scratch/blob.bin", blob);
  CliRun heal = phoenix({"run", "--fixer", "bisect", "--explain"});
  EXPECT_EQ(heal.code, 0) << heal.out;
  EXPECT_NE(heal.out.find("HEALED"), std::string::npos) << heal.out;
  EXPECT_NE(heal.out.find("culprit: calc: tune add"), std::string::npos) << heal.out;
  EXPECT_EQ(read(repo + "/" + w.source), original);
  EXPECT_EQ(g({"rev-parse", "HEAD^"}), before_heal) << "the fix goes on top of the user's commits";
  EXPECT_EQ(g({"rev-parse", "refs/phoenix/known-good/main"}), g({"rev-parse", "HEAD"}));
  EXPECT_EQ(read(repo + "/scratch/blob.bin"), blob) << "the untracked binary file changed through the heal";
  EXPECT_EQ(g({"ls-files", "--", "scratch"}), "") << "the untracked file went into a commit:\n"
                                                  << g({"log", "--stat", "--format=%h %s", before_heal + "^..HEAD"});

  // 5. One loop task, done by the scripted agent in the loop's worktree.
#ifdef PHOENIX_LOOP_BIN
  write(repo, "TASKS.md", "# Tasks\n\n- [ ] add twice\n");
  git(repo, {"add", "TASKS.md"});  // only it: the untracked blob stays untracked
  git(repo, {"commit", "-q", "-m", "tasks"});
  std::string user_head = g({"rev-parse", "HEAD"});
  CliRun lp = loop({"--tasks", "TASKS.md", "--branch", "phoenix/loop-e2e"}, {{"PHOENIX_AGENT_SCRIPT", w.agent_script}});
  EXPECT_EQ(lp.code, 0) << lp.out;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-e2e:TASKS.md"}), "# Tasks\n\n- [x] add twice\n") << lp.out;
  std::string added = run({"git", "-C", repo, "show", "phoenix/loop-e2e:" + w.agent_path}).output;
  EXPECT_NE(added.find(w.agent_text), std::string::npos) << added << "\n" << lp.out;
  auto runs = agent_runs();
  ASSERT_FALSE(runs.empty()) << lp.out;
  for (const auto& r : runs)
    EXPECT_TRUE(util::starts_with(r.value("cwd", ""), phoenix_worktrees() + "loop-"))
        << "the agent ran in " << r.value("cwd", "") << ", not in the loop's worktree under " << phoenix_worktrees();
  EXPECT_EQ(g({"rev-parse", "HEAD"}), user_head) << "the user's branch does not move";
  EXPECT_FALSE(fs::exists(repo + "/" + w.agent_path) && w.agent_path != w.source)
      << "the agent's file reached the user's checkout";
  const std::string pushed = "phoenix/loop-e2e";
#else
  // Without phoenix-loop, a green branch that is not HEAD all the same.
  git(repo, {"branch", "phoenix/side"});
  write(repo, "docs/more.txt", "More.\n");
  git(repo, {"add", "docs/more.txt"});
  git(repo, {"commit", "-q", "-m", "docs: more"});
  const std::string pushed = "phoenix/side";
#endif

  // 6. A pushed commit that is not HEAD, measured green by the hook in its
  // own worktree (with setup).
  std::string bare = tmp / "remote.git";
  fs::create_directories(bare);
  git(bare, {"init", "-q", "--bare", "-b", "main"});
  git(repo, {"remote", "add", "origin", bare});
  CliRun inst = phoenix({"hook", "install"});
  ASSERT_EQ(inst.code, 0) << inst.out;
  std::string tip = g({"rev-parse", pushed});
  ASSERT_NE(tip, g({"rev-parse", "HEAD"}));
  auto push = sh({"git", "push", "origin", pushed});
  EXPECT_EQ(push.exit_code, 0) << push.output;
  // Each check green, measured in a tree of the pushed commit (not in place).
  for (const auto& c : cfg.checks)
    EXPECT_TRUE(has_line_with(push.output, {"phoenix: ok", c.id, pushed + "@" + tip.substr(0, 12), "worktree"}))
        << c.id << "\n"
        << push.output;
  EXPECT_EQ(util::trim(run({"git", "-C", bare, "rev-parse", "--verify", "-q", pushed}).output), tip);

  // Through all of it Phoenix's own writes left the user's tree clean: the
  // untracked blob is the only thing git reports.
  EXPECT_EQ(g({"status", "--porcelain"}), "?? scratch/");
}

TEST_F(RealProjects, CMakeLibraryWithCTest) {
  for (const char* tool : {"cmake", "ctest", "cc"})
    if (util::find_executable(tool).empty())
      GTEST_SKIP() << tool << " is not installed (scripts/deps.sh installs cmake and build-essential)";
  make_repo("cmake");
  // The user's own configured and built build folder, as init finds it.
  auto conf = sh({"cmake", "-S", ".", "-B", "build"});
  ASSERT_EQ(conf.exit_code, 0) << conf.output;
  auto build = sh({"cmake", "--build", "build"});
  ASSERT_EQ(build.exit_code, 0) << build.output;
  walk({.project = "cmake",
        .needs_setup = true,
        .source = "src/calc.c",
        .good = "return a + b;",
        .bad = "return a - b;",
        .red_evidence = "FAIL calc_add",
        // ';' separates the agent's actions: the code's own is \x3b.
        .agent_script = R"(append src/calc.c '\nint calc_twice(int a) {\n  return calc_add(a, a)\x3b\n}\n')",
        .agent_path = "src/calc.c",
        .agent_text = "calc_twice"});
}

#ifdef PHOENIX_LOOP_BIN
// Two workers on the CMake project: each worker's tree is configured by
// phoenix.json's setup steps (it has no build folder of its own), each task
// is built and tested there, and the merge queue builds and tests the
// combined tree in the loop's worktree before the branch moves.
TEST_F(RealProjects, CMakeWorkersBuildInTheirOwnTreesAndMergeVerified) {
  for (const char* tool : {"cmake", "ctest", "cc"})
    if (util::find_executable(tool).empty())
      GTEST_SKIP() << tool << " is not installed (scripts/deps.sh installs cmake and build-essential)";
  make_repo("cmake");
  ASSERT_EQ(sh({"cmake", "-S", ".", "-B", "build"}).exit_code, 0);  // the user's own build folder
  CliRun init = phoenix({"init"});
  ASSERT_EQ(init.code, 0) << init.out;
  ASSERT_FALSE(config::load(repo, true).setup.empty()) << read(repo + "/phoenix.json");
  write(repo, "TASKS.md", "# Tasks\n\n- [ ] add twice\n- [ ] add triple\n");
  git(repo, {"add", "-A"});
  git(repo, {"commit", "-q", "-m", "phoenix init, tasks"});
  // ';' separates the agent's actions: the code's own is \x3b.
  const std::string script =
      "if-prompt '" + kTaskIs +
      "add twice\\n' append src/calc.c '\\nint calc_twice(int a) {\\n  return calc_add(a, a)\\x3b\\n}\\n'; " +
      "if-prompt '" + kTaskIs +
      "add triple\\n' write src/triple.c '#include \"calc.h\"\\nint calc_triple(int a) {\\n  return calc_mul(a, 3)\\x3b\\n}\\n'; " +
      "if-prompt '" + kTaskIs + "add triple\\n' append CMakeLists.txt 'target_sources(calc PRIVATE src/triple.c)\\n'";
  CliRun lp = loop({"--tasks", "TASKS.md", "--workers", "2", "--branch", "phoenix/loop-workers"},
                   {{"PHOENIX_AGENT_SCRIPT", script}});
  ASSERT_EQ(lp.code, 0) << lp.out;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-workers:TASKS.md"}), "# Tasks\n\n- [x] add twice\n- [x] add triple\n");
  EXPECT_NE(git(repo, {"show", "phoenix/loop-workers:src/calc.c"}).find("calc_twice"), std::string::npos);
  EXPECT_NE(git(repo, {"show", "phoenix/loop-workers:CMakeLists.txt"}).find("src/triple.c"), std::string::npos);
  // Each task's agent ran in a worker's tree, and every tree that measured
  // was configured there by the setup steps (a CMakeCache.txt of its own).
  std::set<std::string> trees;
  for (const auto& r : agent_runs()) trees.insert(r.value("cwd", ""));
  ASSERT_FALSE(trees.empty()) << lp.out;
  for (const auto& t : trees) EXPECT_NE(t.find("loop-workers-w"), std::string::npos) << t;
  trees.insert(phoenix_worktrees() + "loop-workers");
  for (const auto& t : trees) {
    bool configured = false;
    for (auto it = fs::recursive_directory_iterator(t); it != fs::recursive_directory_iterator(); ++it)
      configured = configured || it->path().filename() == "CMakeCache.txt";
    EXPECT_TRUE(configured) << t << " has no build folder: its setup steps did not run";
  }
  EXPECT_EQ(util::trim(git(repo, {"status", "--porcelain"})), "");
}
#endif

TEST_F(RealProjects, NpmPackageWithLockfileAndPrettier) {
  if (std::string why = npm_unavailable(); !why.empty()) GTEST_SKIP() << why;
  make_repo("npm");
  for (const auto& kv : npm_offline_env()) env.push_back(kv);
  // The user's own node_modules, installed from the lockfile.
  auto ci = sh({"npm", "ci"});
  ASSERT_EQ(ci.exit_code, 0) << ci.output;
  ASSERT_TRUE(fs::exists(repo + "/node_modules/.bin/prettier")) << ci.output;
  walk(
      {.project = "npm",
       .needs_setup = true,
       .source = "lib/calc.js",
       .good = "return a + b;",
       .bad = "return a - b;",
       .red_evidence = "actual: -1",
       // Formatted as prettier wants: `npm test` checks every file. The
       // agent's script separates actions with ';', so the code's own
       // semicolons are written \x3b.
       .agent_script =
           R"(write lib/twice.js 'const { add } = require("./calc")\x3b\n\nfunction twice(a) {\n  return add(a, a)\x3b\n}\n\nmodule.exports = { twice }\x3b\n'; )"
           R"(write test/twice.test.js 'const test = require("node:test")\x3b\nconst assert = require("node:assert")\x3b\nconst { twice } = require("../lib/twice")\x3b\n\ntest("twice", () => {\n  assert.strictEqual(twice(4), 8)\x3b\n})\x3b\n')",
       .agent_path = "test/twice.test.js",
       .agent_text = "twice(4)"});
  if (HasFatalFailure()) return;
  // After bisect, the loop and the hook have made their trees, the
  // project's own test command, run by hand, finds the project's own two
  // tests and no copy of them from a tree of Phoenix's.
  auto t = sh({"npm", "test"});
  EXPECT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("All matched files use Prettier code style!"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("\n# tests 2\n"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("\n# pass 2\n"), std::string::npos) << t.output;
}

TEST_F(RealProjects, PythonPackageWithPytest) {
  // pytest, not unittest: Debian's python3-pytest (scripts/deps.sh). The
  // tests are unittest.TestCase classes, which pytest collects.
  std::string py = python_with_pytest();
  if (py.empty()) GTEST_SKIP() << "no python3 with pytest (scripts/deps.sh installs Debian's python3-pytest)";
  make_repo("python");
  // `python3`, as init's check `python3 -m pytest -q` calls it, is an
  // interpreter with pytest: a PATH entry, not an edit of phoenix.json.
  fs::create_symlink(py, tmp / "bin/python3");
  walk(
      {.project = "python",
       .needs_setup = false,
       .source = "src/calc.py",
       .good = "return a + b",
       .bad = "return a - b",
       .red_evidence = "test_add",
       .agent_script =
           R"(write src/twice.py 'from calc import add\n\n\ndef twice(a):\n    return add(a, a)\n'; )"
           R"(write tests/test_twice.py 'import unittest\n\nfrom twice import twice\n\n\nclass TwiceTest(unittest.TestCase):\n    def test_twice(self):\n        self.assertEqual(twice(4), 8)\n')",
       .agent_path = "tests/test_twice.py",
       .agent_text = "twice(4)"});
}

// A Python project with a hand-written phoenix.json (no init, no
// .gitignore entry for .phoenix/), its check's interpreter on PATH.
void RealProjects::hand_written_python(const std::string& py, const std::string& fixers) {
  fs::create_symlink(py, tmp / "bin/python3");
  write(repo, "phoenix.json", R"({
  "checks": [
    { "id": "unit", "kind": "command_exit", "target": ["python3", "-m", "pytest", "-q"], "editable": ["src/**"] }
  ],
  "fixers": [)" + fixers + R"(]
}
)");
  commit_all(repo, "phoenix.json by hand");
}

// After Phoenix has run, `git add -A` takes nothing of .phoenix/ but its
// .gitignore, and Phoenix's later writes (a heal, bisect's tree, the
// journal and trace) never make the tree dirty.
TEST_F(RealProjects, GitAddAllBesideAHandWrittenConfigCommitsNoPhoenixState) {
  std::string py = python_with_pytest();
  if (py.empty()) GTEST_SKIP() << "no python3 with pytest (scripts/deps.sh installs Debian's python3-pytest)";
  make_repo("python");
  hand_written_python(py, R"("bisect")");
  CliRun first = phoenix({"run"});
  ASSERT_EQ(first.code, 0) << first.out;
  ASSERT_TRUE(fs::exists(repo + "/.phoenix")) << first.out;
  // Of .phoenix/, at most its own .gitignore (layout/paths.h; one that
  // ignores itself as well keeps all of .phoenix/ out).
  git(repo, {"add", "-A"});
  for (const auto& p : staged())
    if (util::starts_with(p, ".phoenix/"))
      EXPECT_EQ(p, ".phoenix/.gitignore") << "committed Phoenix state\n"
                                          << git(repo, {"status", "--porcelain", "--ignored"});
  git(repo, {"commit", "-q", "--allow-empty", "-m", "everything git add -A takes"});
  // A regression, healed: the journal, the trace and bisect's tree all exist now.
  write(repo, "src/calc.py", replace_once(read(repo + "/src/calc.py"), "return a + b", "return a - b"));
  commit_all(repo, "calc: tune add");
  CliRun heal = phoenix({"run"});
  EXPECT_EQ(heal.code, 0) << heal.out;
  EXPECT_EQ(g({"status", "--porcelain"}), "") << "Phoenix's own writes made the tree dirty";
  git(repo, {"add", "-A"});
  EXPECT_EQ(staged(), std::vector<std::string>{}) << git(repo, {"status", "--porcelain", "--ignored"});
  CliRun again = phoenix({"run"});
  EXPECT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(g({"status", "--porcelain"}), "") << "Phoenix's own writes made the tree dirty";
}

// An agent that prints <promise>COMPLETE</promise> and edits nothing, with
// the tasks file not committed: the loop's own tick is not progress.
TEST_F(RealProjects, IdleAgentWithUncommittedTasksChangesNothing) {
#ifndef PHOENIX_LOOP_BIN
  GTEST_SKIP() << "phoenix-loop is not built";
#else
  std::string py = python_with_pytest();
  if (py.empty()) GTEST_SKIP() << "no python3 with pytest (scripts/deps.sh installs Debian's python3-pytest)";
  make_repo("python");
  hand_written_python(py, R"("noop")");
  std::string head = g({"rev-parse", "HEAD"});
  const std::string tasks = "# Tasks\n\n- [ ] add twice\n";
  write(repo, "TASKS.md", tasks);  // not committed
  CliRun lp = loop({"--tasks", "TASKS.md", "--branch", "phoenix/loop-idle"},
                   {{"PHOENIX_AGENT_SCRIPT", "print '<promise>COMPLETE</promise>'"}});
  EXPECT_EQ(lp.code, 2) << lp.out;  // the idle task is given up on (loop.on_escalate = stop)
  EXPECT_NE(lp.out.find("changed nothing"), std::string::npos) << lp.out;
  EXPECT_FALSE(agent_runs().empty()) << lp.out;
  EXPECT_EQ(read(repo + "/TASKS.md"), tasks);
  EXPECT_EQ(g({"rev-parse", "HEAD"}), head);
  auto branch = run({"git", "-C", repo, "rev-parse", "--verify", "-q", "phoenix/loop-idle"});
  if (branch.exit_code == 0) {
    EXPECT_EQ(g({"log", "--format=%s", head + "..phoenix/loop-idle"}), "") << "the loop committed for an idle agent";
    auto t = run({"git", "-C", repo, "show", "phoenix/loop-idle:TASKS.md"});
    if (t.exit_code == 0) EXPECT_EQ(t.output, tasks) << "the idle agent's task was ticked";
  }
  Json s = Json::parse(read(repo + "/.phoenix/loop-state.json"));
  EXPECT_EQ(s["exit_code"], 2);
#endif
}

}  // namespace
}  // namespace phoenix::test
