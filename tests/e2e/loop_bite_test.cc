// phoenix-loop end to end: tests that bite. A real pytest project and a
// real CTest project, where the scripted agent does three tasks: one with a
// test that fails without its fix (accepted), one whose first test asserts
// nothing (refused, the failure fed back, then accepted with a real test),
// and one that adds only tests (exempt). The verdicts are read off the
// loop branch, the attempt refs, the agent's prompts, the trace and
// `phoenix report`.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

const char* kTasks =
    "- [ ] implement sub -- id: sub\n- [ ] implement mul -- id: mul\n- [ ] more tests for add -- id: addtests\n";
const char* kRefused = "your tests pass without your change";

// A Python interpreter that has pytest ("" when none does).
std::string python_with_pytest() {
  for (const std::string& py : {trim(run({"sh", "-c", "command -v python3"}).output), std::string("/usr/bin/python3")})
    if (!py.empty() && run({py, "-m", "pytest", "--version"}).exit_code == 0) return py;
  return "";
}

// if-prompt guards on the task the prompt gives (not the progress list).
std::string on_task(const std::string& title, const std::string& action) {
  return "if-prompt \"" + kTaskIs + title + "\" " + action;
}

class LoopTaskBite : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo;

  void SetUp() override {
    ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
    repo = init_loop_repo(tmp / "repo", kTasks);
  }
  void TearDown() override { ::unsetenv("PHOENIX_TREES_DIR"); }

  void configure(const Json& check, const std::string& script) {
    Json cfg = {{"checks", Json::array({check})},
                {"harness", scripted_harness(script)},
                {"loop", loop_section(3, Json::object())}};
    cfg["harness"]["env"]["PHOENIX_AGENT_LOG"] = tmp / "agent.jsonl";
    write(repo, "phoenix.json", cfg.dump(2));
    commit_all(repo, "initial");
  }

  std::vector<Json> events(const std::string& name) {
    std::vector<Json> out;
    for (const auto& l : util::split_lines(read(repo + "/.phoenix/trace.jsonl")))
      if (!l.empty()) {
        Json e = Json::parse(l);
        if (e.value("event", "") == name) out.push_back(e["data"]);
      }
    return out;
  }

  std::vector<std::string> prompts() {
    std::vector<std::string> out;
    for (const auto& l : util::split_lines(read(tmp / "agent.jsonl")))
      if (!l.empty()) out.push_back(Json::parse(l).value("prompt", ""));
    return out;
  }

  // What every night here must show, whatever the runner: the verdicts in
  // order, the refused attempt kept and fed back, the real test landed,
  // the report's words.
  void expect_the_night(const CliRun& r, const std::string& mul_test, const std::string& toothless_text,
                        const std::string& real_text) {
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(
        git(repo, {"show", "phoenix/loop-bite:TASKS.md"}),
        "- [x] implement sub -- id: sub\n- [x] implement mul -- id: mul\n- [x] more tests for add -- id: addtests\n");
    std::vector<std::string> verdicts;
    for (const Json& d : events("loop.tests_bite"))
      verdicts.push_back(d["task"].value("id", "") + ":" + d.value("verdict", ""));
    EXPECT_EQ(verdicts, (std::vector<std::string>{"sub:bites", "mul:toothless", "mul:bites", "addtests:exempt"}))
        << r.out;
    // The refused attempt is kept, never on the branch; the real test is.
    EXPECT_EQ(git(repo, {"show", "refs/phoenix/attempts/loop-bite/mul/1:" + mul_test}), toothless_text);
    EXPECT_EQ(git(repo, {"show", "phoenix/loop-bite:" + mul_test}), real_text);
    auto subjects = util::split_lines(git(repo, {"log", "--format=%s", "main..phoenix/loop-bite"}));
    EXPECT_EQ(subjects.size(), 3u) << "one commit per task, none for the refused attempt";
    // The agent was told why, in the next iteration's prompt.
    std::vector<std::string> p = prompts();
    ASSERT_EQ(p.size(), 4u) << r.out;
    EXPECT_EQ(p[1].find(kRefused), std::string::npos);
    // "your tests pass without your change: tests/test_mul.py pass without the change's code (calc.py): ..."
    const std::string told = p[2].substr(std::min(p[2].size(), p[2].find(kRefused)));
    const std::string told_line = told.substr(0, told.find('\n'));
    EXPECT_NE(told_line.find(mul_test), std::string::npos) << p[2];
    EXPECT_NE(told_line.find("pass without the change's code"), std::string::npos) << p[2];
    const std::string said = r.out.substr(std::min(r.out.size(), r.out.find("tests bite: refused: ")));
    EXPECT_NE(said.substr(0, said.find('\n')).find(mul_test), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tests bite: exempt: the change is tests only"), std::string::npos) << r.out;
    // The report says it.
    CliRun rep = run_phoenix(repo, {"report", "--json"});
    ASSERT_EQ(rep.code, 0) << rep.out;
    Json j = Json::parse(rep.out);
    ASSERT_EQ(j["tasks_done"].size(), 3u) << rep.out;
    EXPECT_EQ(j["tasks_done"][0]["tests_bite"], "bites");
    EXPECT_EQ(j["tasks_done"][0]["refused_tests"], 0);
    EXPECT_EQ(j["tasks_done"][1]["tests_bite"], "bites");
    EXPECT_EQ(j["tasks_done"][1]["refused_tests"], 1);
    EXPECT_EQ(j["tasks_done"][2]["tests_bite"], "exempt");
    CliRun text = run_phoenix(repo, {"report"});
    ASSERT_EQ(text.code, 0) << text.out;
    std::string flat;  // the report wraps its lines: compare words
    for (char c : text.out)
      if (!std::isspace(static_cast<unsigned char>(c))) flat += c;
      else if (!flat.empty() && flat.back() != ' ') flat += ' ';
    EXPECT_NE(flat.find("1 attempt refused: its tests passed without its change"), std::string::npos) << text.out;
    EXPECT_NE(flat.find("tests only: exempt from tests that bite"), std::string::npos) << text.out;
  }
};

TEST_F(LoopTaskBite, PytestProjectTestsMustFailWithoutTheirFix) {
  const std::string py = python_with_pytest();
  if (py.empty()) GTEST_SKIP() << "no python3 with pytest (scripts/deps.sh installs Debian's python3-pytest)";
  write(repo, ".gitignore", ".phoenix/\nincidents/\n__pycache__/\n.pytest_cache/\n");
  write(
      repo, "calc.py",
      "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return 0  # sub\n\n\ndef mul(a, b):\n    return 0  # mul\n");
  write(repo, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n");
  const std::string toothless = "from calc import mul\n\n\ndef test_mul():\n    assert mul is not None\n";
  const std::string real = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n";
  const std::string refused = std::string("\"") + kRefused + "\"";
  configure({{"id", "unit"},
             {"kind", "command_exit"},
             {"target", {py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"}},
             {"timeout_s", 120}},
            on_task("implement sub", "replace calc.py '0  # sub' 'a - b'") + ";" +
                on_task("implement sub",
                        "write tests/test_sub.py 'from calc import sub\\n\\n\\ndef test_sub():\\n    "
                        "assert sub(5, 3) == 2\\n'") +
                ";" + on_task("implement mul", "replace calc.py '0  # mul' 'a * b'") + ";" +
                on_task("implement mul", "unless-prompt " + refused +
                                             " write tests/test_mul.py 'from calc import "
                                             "mul\\n\\n\\ndef test_mul():\\n    assert mul is not None\\n'") +
                ";" +
                on_task("implement mul", "if-prompt " + refused +
                                             " write tests/test_mul.py 'from calc import "
                                             "mul\\n\\n\\ndef test_mul():\\n    assert mul(2, 3) == 6\\n'") +
                ";" +
                on_task("more tests for add",
                        "write tests/test_add_zero.py 'from calc import add\\n\\n\\ndef "
                        "test_add_zero():\\n    assert add(0, 7) == 7\\n'"));
  CliRun r = run_loop(repo, {"--branch", "phoenix/loop-bite"}, 600);
  expect_the_night(r, "tests/test_mul.py", toothless, real);
  // pytest named the failing test of the change in the scratch tree.
  std::vector<Json> bite = events("loop.tests_bite");
  ASSERT_EQ(bite.size(), 4u);
  EXPECT_EQ(bite[0]["failing"], Json::array({"tests/test_sub.py::test_sub"})) << bite[0].dump();
  EXPECT_EQ(bite[0]["code"], Json::array({"calc.py"}));
  EXPECT_EQ(bite[0]["tree"], "loop-bite");
  EXPECT_EQ(bite[0]["scratch"], "bite");
}

TEST_F(LoopTaskBite, CTestProjectTestsMustFailWithoutTheirFix) {
  for (const char* tool : {"cmake", "ctest", "cc"})
    if (util::find_executable(tool).empty()) GTEST_SKIP() << tool << " is not installed";
  write(repo, ".gitignore", ".phoenix/\nincidents/\nbuild/\n");
  write(repo, "CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.13)\nproject(calc C)\nenable_testing()\nadd_library(calc calc.c)\n"
        "target_include_directories(calc PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\nadd_subdirectory(tests)\n");
  write(repo, "calc.h", "int add(int a, int b);\nint sub(int a, int b);\nint mul(int a, int b);\n");
  write(repo, "calc.c",
        "#include \"calc.h\"\nint add(int a, int b) { return a + b; }\n"
        "int sub(int a, int b) { return 0 * a * b /* sub */; }\n"
        "int mul(int a, int b) { return 0 * a * b /* mul */; }\n");
  write(
      repo, "tests/CMakeLists.txt",
      "add_executable(test_add test_add.c)\ntarget_link_libraries(test_add calc)\nadd_test(NAME add COMMAND test_add)\n");
  write(repo, "tests/test_add.c", "#include \"calc.h\"\nint main(void) { return add(2, 3) == 5 ? 0 : 1; }\n");
  // The agent's actions are separated by ';': a ';' in a text is written \x3b.
  auto cmake_test = [](const std::string& name) {
    return "append tests/CMakeLists.txt 'add_executable(test_" + name + " test_" + name +
           ".c)\\ntarget_link_libraries(test_" + name + " calc)\\nadd_test(NAME " + name + " COMMAND test_" + name +
           ")\\n'";
  };
  const std::string toothless = "int main(void) { return 0; }\n";
  const std::string real = "#include \"calc.h\"\nint main(void) { return mul(2, 3) == 6 ? 0 : 1; }\n";
  const std::string refused = std::string("\"") + kRefused + "\"";
  configure(
      {{"id", "unit"},
       {"kind", "command_exit"},
       {"target",
        {"sh", "-c",
         "cmake -S . -B build >/dev/null && cmake --build build >/dev/null && "
         "ctest --test-dir build --output-on-failure"}},
       {"timeout_s", 300}},
      on_task("implement sub", "replace calc.c '0 * a * b /* sub */' 'a - b /* sub */'") + ";" +
          on_task("implement sub", cmake_test("sub")) + ";" +
          on_task("implement sub",
                  "write tests/test_sub.c '#include \"calc.h\"\\nint main(void) { return sub(5, 3) == 2 ? 0 : 1\\x3b "
                  "}\\n'") +
          ";" + on_task("implement mul", "replace calc.c '0 * a * b /* mul */' 'a * b /* mul */'") + ";" +
          on_task("implement mul", cmake_test("mul")) + ";" +
          on_task("implement mul",
                  "unless-prompt " + refused + " write tests/test_mul.c 'int main(void) { return 0\\x3b }\\n'") +
          ";" +
          on_task("implement mul", "if-prompt " + refused +
                                       " write tests/test_mul.c '#include \"calc.h\"\\nint main(void) { return "
                                       "mul(2, 3) == 6 ? 0 : 1\\x3b }\\n'") +
          ";" + on_task("more tests for add", cmake_test("add2")) + ";" +
          on_task("more tests for add",
                  "write tests/test_add2.c '#include \"calc.h\"\\nint main(void) { return add(0, 7) == 7 ? 0 : 1\\x3b "
                  "}\\n'"));
  CliRun r = run_loop(repo, {"--branch", "phoenix/loop-bite"}, 900);
  expect_the_night(r, "tests/test_mul.c", toothless, real);
  // CTest named the failing test of the change; its add_test is in a file the change touched.
  std::vector<Json> bite = events("loop.tests_bite");
  ASSERT_EQ(bite.size(), 4u);
  EXPECT_EQ(bite[0]["failing"], Json::array({"sub"})) << bite[0].dump();
  EXPECT_EQ(bite[0]["tests"], Json::array({"tests/CMakeLists.txt", "tests/test_sub.c"}));
}

// `phoenix run`: a heal's patch that makes the red test pass by rewriting it
// into one that asserts nothing (and fixing the code too) is verified green,
// then measured with its code taken away: still green, so the guard
// tests-bite rejects it; the next proposal, the code alone, heals.
TEST(GuardTestsBite, RunRejectsAPatchWhoseTestsPassWithoutItsCode) {
  ScopedTempDir tmp;
  ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
  const std::string repo = init_repo(tmp / "repo");
  write(repo, ".gitignore", ".phoenix/\nincidents/\n");
  write(repo, "calc.txt", "add=a+b\nsub=0\n");
  const std::string real_test = "grep -q 'sub=a-b' calc.txt\n";
  write(repo, "tests/t_sub.sh", real_test);
  const Json check = {
      {"id", "unit"},
      {"kind", "command_exit"},
      {"target",
       {"sh", "-c", R"(r=0; for t in tests/t_*.sh; do sh "$t" || { echo "FAILED $t::main"; r=1; }; done; exit $r)"}},
      {"protect_tests", false}};
  const Json cfg = {{"checks", Json::array({check})},
                    {"fixers", {"harness"}},
                    {"harness", scripted_harness("write calc.txt 'add=a+b\\nsub=a-b\\n';"
                                                 "unless-prompt tests-bite write tests/t_sub.sh 'true\\n'")}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "initial");
  CliRun r = run_phoenix(repo, {"run"}, 300);
  ::unsetenv("PHOENIX_TREES_DIR");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(repo + "/calc.txt"), "add=a+b\nsub=a-b\n");
  EXPECT_EQ(read(repo + "/tests/t_sub.sh"), real_test) << "the toothless test never landed";
  std::vector<std::string> guards;
  Json bite;
  for (const auto& l : util::split_lines(read(repo + "/.phoenix/trace.jsonl"))) {
    if (l.empty()) continue;
    Json e = Json::parse(l);
    if (e.value("event", "") == "state" && e["data"].value("state", "") == "REJECTED")
      guards.push_back(e["data"].value("guard", ""));
    if (e.value("event", "") == "tests_bite") bite = e["data"];
  }
  EXPECT_EQ(guards, std::vector<std::string>{"tests-bite"}) << r.out;
  EXPECT_EQ(bite.value("verdict", ""), "toothless") << bite.dump();
  EXPECT_EQ(bite["tests"], Json::array({"tests/t_sub.sh"}));
  EXPECT_EQ(bite["code"], Json::array({"calc.txt"}));
}

}  // namespace
}  // namespace phoenix::test
