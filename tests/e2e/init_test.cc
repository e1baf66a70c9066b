// End-to-end: `phoenix init` on real projects in throwaway git repositories:
// what it detects and writes, and its proof — every check measured in the
// work tree and in a fresh tree of HEAD after the setup steps.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>

#include "config/config.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "test_util.h"
#include "util/lock.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;
using Argv = std::vector<std::string>;

const char* kPrettier = "/opt/phoenix-test-tools/node_modules/.bin/prettier";

bool on_path(const std::string& program) { return run({"sh", "-c", "command -v " + program}).exit_code == 0; }

TEST(InitE2E, DetectsTheTestCommand) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> files;
    Argv argv;
  } cases[] = {
      {{{"CMakeLists.txt", "project(x)\nenable_testing()\n"}},
       {"sh", "-c", "cmake --build build && ctest --test-dir build --output-on-failure"}},
      {{{"package.json", "{\"scripts\":{\"test\":\"node --test\"}}"}}, {"npm", "test"}},
      {{{"package.json", "{\"scripts\":{\"test\":\"vitest\"}}"}, {"pnpm-lock.yaml", ""}}, {"pnpm", "test"}},
      {{{"Cargo.toml", "[package]\nname='x'\n"}}, {"cargo", "test"}},
      {{{"go.mod", "module x\n"}}, {"go", "test", "./..."}},
      {{{"Makefile", "all:\n\ttrue\ntest:\n\ttrue\n"}}, {"make", "test"}},
  };
  for (const auto& c : cases) {
    ScopedTempDir tmp;
    std::string repo = init_repo(tmp / "r");
    for (const auto& [f, content] : c.files) write(repo, f, content);
    write(repo, "src/main.c", "int main(){}\n");
    auto r = run_phoenix(repo, {"init", "--json", "--no-measure"});
    ASSERT_EQ(r.code, 0) << r.out;
    Json j = Json::parse(r.out);
    EXPECT_EQ(j["test_command"].get<Argv>(), c.argv) << c.files[0].first;
    EXPECT_EQ(j["measured"], false);
    EXPECT_EQ(j["editable"][0], "src/**");
    std::string gi = read(repo + "/.gitignore");
    EXPECT_NE(gi.find(".phoenix/*"), std::string::npos);
    EXPECT_NE(gi.find("!.phoenix/baselines/"), std::string::npos);
    // What init wrote loads.
    EXPECT_EQ(run_phoenix(repo, {"config", "show"}).code, 0);
    auto again = run_phoenix(repo, {"init", "--no-measure"});
    EXPECT_EQ(again.code, 64) << again.out;
    EXPECT_NE(again.out.find("--force"), std::string::npos);
    EXPECT_EQ(run_phoenix(repo, {"init", "--force", "--no-measure"}).code, 0);
    // .gitignore gets the entries once.
    std::string gi2 = read(repo + "/.gitignore");
    EXPECT_EQ(gi2, gi);
  }
}

// A tiny C project with CTest, its build folder configured by the user.
class InitCMake : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"cmake", "ctest", "cc", "make"})
      if (!on_path(tool)) GTEST_SKIP() << tool << " is not on PATH";
    repo = init_repo(tmp / "tiny");
    write(repo, "CMakeLists.txt",
          "cmake_minimum_required(VERSION 3.20)\nproject(tiny C)\nenable_testing()\n"
          "add_executable(answer src/answer.c)\nadd_test(NAME answer COMMAND answer)\n");
    write(repo, "src/answer.c", source(42));
    write(repo, ".gitignore", "build/\n");
    commit_all(repo, "tiny");
    auto configure = run({"cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Debug"}, repo, {}, 300);
    ASSERT_EQ(configure.exit_code, 0) << configure.output;
  }
  static std::string source(int answer) {
    return "int answer(void) { return " + std::to_string(answer) +
           "; }\nint main(void) { return answer() == 42 ? 0 : 1; }\n";
  }
  ScopedTempDir tmp;
  std::string repo;
};

TEST_F(InitCMake, ProvesTheChecksInBothTreesAndTheCheckSeesAnUncommittedBreak) {
  auto r = run_phoenix(repo, {"init"}, 600);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + repo + "/phoenix.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("work tree: green"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fresh tree: green"), std::string::npos) << r.out;

  // phoenix.json: setup configures the build folder as the user did, and the check builds before it tests.
  config::Config cfg = config::load(repo, true);
  ASSERT_EQ(cfg.setup.size(), 1u);
  std::string cache = read(repo + "/build/CMakeCache.txt");
  size_t g = cache.find("CMAKE_GENERATOR:INTERNAL=");
  ASSERT_NE(g, std::string::npos);
  std::string generator = cache.substr(g + 25, cache.find('\n', g) - g - 25);
  EXPECT_EQ(cfg.setup[0].run, (Argv{"cmake", "-S", ".", "-B", "build", "-G", generator, "-DCMAKE_BUILD_TYPE=Debug"}));
  EXPECT_EQ(cfg.setup[0].inputs, (Argv{"**/CMakeLists.txt", "**/*.cmake"}));
  const checks::CheckSpec* unit = cfg.find("unit");
  ASSERT_NE(unit, nullptr);
  ASSERT_EQ(unit->argv.size(), 3u);
  EXPECT_EQ(unit->argv[0], "sh");
  EXPECT_NE(unit->argv[2].find("cmake --build build"), std::string::npos) << unit->argv[2];
  EXPECT_NE(unit->argv[2].find("ctest --test-dir build"), std::string::npos) << unit->argv[2];

  // The same proof as data; the fresh tree is Phoenix's own, outside the work tree.
  auto j_run = run_phoenix(repo, {"init", "--force", "--json"}, 600);
  ASSERT_EQ(j_run.code, 0) << j_run.out;
  Json j = Json::parse(j_run.out);
  EXPECT_EQ(j["measured"], true);
  EXPECT_EQ(j["ok"], true);
  ASSERT_EQ(j["setup"].size(), 1u);
  EXPECT_EQ(j["setup"][0]["run"][0], "cmake");
  ASSERT_EQ(j["measurements"].size(), 1u);
  EXPECT_EQ(j["measurements"][0]["check"], "unit");
  EXPECT_EQ(j["measurements"][0]["work_tree"]["ok"], true) << j.dump(2);
  EXPECT_EQ(j["measurements"][0]["fresh_tree"]["ok"], true) << j.dump(2);
  std::string fresh = j["fresh_tree"]["path"];
  EXPECT_EQ(j["fresh_tree"]["kept"], false) << "green in both trees: the fresh tree is removed";
  EXPECT_FALSE(fs::exists(fresh)) << fresh;
  bool in_work_tree = fresh.rfind(repo + "/", 0) == 0 && fresh.rfind(repo + "/.git/", 0) != 0;
  EXPECT_FALSE(in_work_tree) << fresh;

  if (fs::exists(kPrettier) && on_path("node")) {
    auto pretty = run({kPrettier, "--check", "--no-config", "--no-editorconfig", "phoenix.json"}, repo);
    EXPECT_EQ(pretty.exit_code, 0) << pretty.output << "\n" << read(repo + "/phoenix.json");
  }

  // An uncommitted change that breaks the program: a check that ran a stale
  // build would stay green.
  write(repo, "src/answer.c", source(41));
  auto red = run_phoenix(repo, {"sense", "unit"}, 600);
  EXPECT_EQ(red.code, 1) << red.out;
  // init's proof tells that apart from a missing setup: HEAD is green in the fresh tree.
  auto dirty = run_phoenix(repo, {"init", "--force"}, 600);
  EXPECT_EQ(dirty.code, 1) << dirty.out;
  EXPECT_NE(dirty.out.find("fresh tree: green"), std::string::npos) << dirty.out;
  EXPECT_NE(dirty.out.find("an uncommitted change breaks it"), std::string::npos) << dirty.out;
  write(repo, "src/answer.c", source(42));
  auto green = run_phoenix(repo, {"sense", "unit"}, 600);
  EXPECT_EQ(green.code, 0) << green.out;
}

TEST_F(InitCMake, AWorkTreeWithoutTheSetupIsToldToRunIt) {
  fs::remove_all(repo + "/build");
  auto r = run_phoenix(repo, {"init"}, 600);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("fresh tree: green"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run the setup steps in your work tree (cmake -S . -B build)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("phoenix.json is written and stays"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(repo + "/phoenix.json"));
}

// What users met: `npm ci` in init's fresh tree (a linked worktree sharing
// the repository's config) runs the project's `prepare` script, which points
// core.hooksPath into that tree (husky does). The guard puts it back and
// says so; the user's config, hooks and refs are as they were.
TEST(InitE2E, ASetupStepPointingCoreHooksPathIntoTheFreshTreeIsPutBack) {
  if (!on_path("npm")) GTEST_SKIP() << "npm is not on PATH";
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "package.json",
        R"({ "name": "app", "version": "1.0.0", "scripts": { "test": "node -e 0",
             "prepare": "git config core.hooksPath \"$PWD/node_modules/husky\"" } })");
  write(repo, "package-lock.json",
        R"({ "name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
             "packages": { "": { "name": "app", "version": "1.0.0" } } })");
  write(repo, ".gitignore", "node_modules/\n");
  commit_all(repo, "initial");
  const std::string before = repo_control_state(repo);
  auto r = run_phoenix(repo, {"init"}, 300, {{"npm_config_offline", "true"}, {"npm_config_update_notifier", "false"}});
  EXPECT_NE(r.out.find("setup  $ npm ci"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("phoenix: setup changed core.hooksPath to "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/node_modules/husky; put back"), std::string::npos) << r.out;
  EXPECT_EQ(repo_control_state(repo), before) << r.out;
  EXPECT_EQ(run({"git", "-C", repo, "config", "--get", "core.hooksPath"}).exit_code, 1) << "core.hooksPath is unset";
}

// A project whose test needs a file that is neither committed nor made by a
// setup step: green in the work tree, red in a fresh tree.
TEST(InitE2E, RedInTheFreshTreeOnlyAsksForSetup) {
  if (!on_path("make")) GTEST_SKIP() << "make is not on PATH";
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "Makefile", "test:\n\ttest -f generated.txt || { echo 'generated.txt is missing'; exit 1; }\n");
  write(repo, ".gitignore", "generated.txt\n");
  commit_all(repo, "initial");
  write(repo, "generated.txt", "made by hand\n");
  auto r = run_phoenix(repo, {"init"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("work tree: green"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fresh tree: red (exit="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("generated.txt is missing"), std::string::npos) << r.out;  // the evidence
  EXPECT_NE(r.out.find("add them to \"setup\""), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(repo + "/phoenix.json"));
  auto j = run_phoenix(repo, {"init", "--force", "--json"});
  EXPECT_EQ(j.code, 1) << j.out;
  Json out = Json::parse(j.out);
  EXPECT_EQ(out["ok"], false);
  EXPECT_EQ(out["measurements"][0]["work_tree"]["ok"], true);
  EXPECT_EQ(out["measurements"][0]["fresh_tree"]["ok"], false);
  EXPECT_NE(out["measurements"][0]["advice"].get<std::string>().find("setup"), std::string::npos);
  // --no-measure writes and says nothing of measurements.
  auto quiet = run_phoenix(repo, {"init", "--force", "--no-measure"});
  EXPECT_EQ(quiet.code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("measuring"), std::string::npos) << quiet.out;
}

// A Python interpreter that has pytest ("" when none does): the python3
// on PATH, else the system's.
std::string python_with_pytest() {
  for (const std::string& py : {trim(run({"sh", "-c", "command -v python3"}).output), std::string("/usr/bin/python3")})
    if (!py.empty() && run({py, "-m", "pytest", "--version"}).exit_code == 0) return py;
  return "";
}

// `git worktree list`'s lines: the work tree alone when init left none.
size_t worktrees(const std::string& repo) { return util::split_lines(trim(git(repo, {"worktree", "list"}))).size(); }

// A real pytest project with its code in a package folder. init proposes
// the package as editable, runs the tests with the interpreter that has
// pytest (python3 when it does; the pytest on PATH when python3 has none,
// as with pyenv's python3 first on PATH), proves the check green in both
// trees, and leaves no fresh tree registered. A second init at the same
// moment (its tree held here, as a running init holds it) takes another
// tree and says who holds the first.
TEST(InitE2E, APythonPackageProjectIsRightTheFirstTime) {
  const std::string python = python_with_pytest();
  if (python.empty()) GTEST_SKIP() << "no python3 with pytest";
  if (run({"sh", "-c", "pytest --version"}).exit_code != 0) GTEST_SKIP() << "no working pytest on PATH";
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "calc");
  write(repo, "pyproject.toml", "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n");
  write(repo, "calc/__init__.py", "def add(a, b):\n    return a + b\n");
  write(repo, "tests/test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n");
  write(repo, ".gitignore", "__pycache__/\n.pytest_cache/\n");
  commit_all(repo, "calc");
  // python3 on PATH: one that has pytest, then one that has not (-S: no
  // site-packages, where pytest lives).
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  write(tmp / "with", "python3", "#!/bin/sh\nexec '" + python + "' \"$@\"\n");
  write(tmp / "without", "python3", "#!/bin/sh\nexec '" + python + "' -S \"$@\"\n");
  fs::permissions(tmp / "with/python3", fs::perms::owner_all);
  fs::permissions(tmp / "without/python3", fs::perms::owner_all);

  auto first = run_phoenix(repo, {"init", "--json"}, 300, {{"PATH", tmp / "with:" + path}});
  ASSERT_EQ(first.code, 0) << first.out;
  Json j = Json::parse(first.out);
  EXPECT_EQ(j["test_command"].get<Argv>(), (Argv{"python3", "-m", "pytest", "-q"}));
  EXPECT_NE(j["test_runner"].get<std::string>().find("python3 has pytest"), std::string::npos) << first.out;
  EXPECT_EQ(j["editable"].get<Argv>(), (Argv{"calc/**"})) << "tests/ is no fix's to edit";
  EXPECT_EQ(j["measurements"][0]["fresh_tree"]["ok"], true) << first.out;
  EXPECT_EQ(j["fresh_tree"]["kept"], false);
  EXPECT_EQ(worktrees(repo), 1u) << git(repo, {"worktree", "list"});

  gitx::Repo r = gitx::Repo::open(repo);
  std::unique_ptr<util::FileLock> held = util::FileLock::try_take(layout::tree_lock(r, "init"));
  ASSERT_TRUE(held);
  auto second = run_phoenix(repo, {"init", "--force"}, 300, {{"PATH", tmp / "without:" + path}});
  EXPECT_EQ(second.code, 0) << second.out;
  EXPECT_NE(second.out.find("python3 has no pytest ("), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("No module named pytest): the check runs the pytest on PATH"), std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find("init is held by pid " + std::to_string(::getpid()) + " ("), std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find("this init takes init-2"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("green: every check passes in the work tree and in a fresh tree"), std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find("fresh tree removed"), std::string::npos) << second.out;
  config::Config cfg = config::parse(read(repo + "/phoenix.json"), "phoenix.json");
  ASSERT_EQ(cfg.checks.size(), 1u);
  EXPECT_EQ(cfg.checks[0].argv, (Argv{"pytest", "-q", "-o", "pythonpath=."}));
  EXPECT_EQ(worktrees(repo), 1u) << git(repo, {"worktree", "list"});
}

TEST(InitE2E, BeforeTheFirstCommitOnlyTheWorkTreeIsMeasured) {
  if (!on_path("make")) GTEST_SKIP() << "make is not on PATH";
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "Makefile", "test:\n\ttrue\n");
  auto r = run_phoenix(repo, {"init"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("work tree: green"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no commit yet"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace phoenix::test
