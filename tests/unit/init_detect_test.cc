// phoenix init's detection (cli/init_detect.h) on folders holding each kind
// of project, the phoenix.json it renders (loads, round-trips, formatted as
// prettier formats JSON — checked with the real prettier when it is there),
// and the prettier-style printer itself (util/json_pretty.h).
#include "cli/init_detect.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "config/config.h"
#include "test_util.h"
#include "util/json_pretty.h"

namespace phoenix::cli {
namespace {

namespace fs = std::filesystem;
using test::ScopedTempDir;
using test::write;
using Argv = std::vector<std::string>;

const char* kPrettier = "/opt/phoenix-test-tools/node_modules/.bin/prettier";

std::string cache(const std::string& generator, const std::string& build_type, const std::string& extra = "") {
  return "# This is the CMakeCache file.\n"
         "CMAKE_BUILD_TYPE:STRING=" +
         build_type +
         "\n"
         "CMAKE_COMMAND:INTERNAL=/usr/bin/cmake\n"
         "CMAKE_GENERATOR:INTERNAL=" +
         generator + "\n" + extra;
}

const Argv kCMakeInputs{"**/CMakeLists.txt", "**/*.cmake"};

TEST(InitDetect, CMakeKeepsTheGeneratorAndBuildTypeOfTheConfiguredBuildFolder) {
  ScopedTempDir tmp;
  write(tmp.path(), "CMakeLists.txt", "cmake_minimum_required(VERSION 3.20)\nproject(x C)\nenable_testing()\n");
  write(tmp.path(), "src/main.c", "int main(void) { return 0; }\n");
  write(tmp.path(), "build/CMakeCache.txt", cache("Ninja", "Debug"));
  Detected d = detect_project(tmp.path());
  EXPECT_EQ(d.why, "CMakeLists.txt with enable_testing()");
  ASSERT_EQ(d.setup.size(), 1u);
  EXPECT_EQ(d.setup[0].run, (Argv{"cmake", "-S", ".", "-B", "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Debug"}));
  EXPECT_EQ(d.setup[0].inputs, kCMakeInputs);
  EXPECT_EQ(d.setup_why, "build/CMakeCache.txt (generator Ninja, build type Debug)");
  ASSERT_EQ(d.checks.size(), 1u);
  EXPECT_EQ(d.checks[0].id, "unit");
  EXPECT_EQ(d.checks[0].type, "unit");
  // It builds, then tests: an uncommitted source change is seen.
  EXPECT_EQ(d.checks[0].argv, (Argv{"sh", "-c", "cmake --build build && ctest --test-dir build --output-on-failure"}));
  EXPECT_EQ(d.editable, (Argv{"src/**"}));
}

TEST(InitDetect, CMakeFindsTheBuildFolderThatHoldsTheCache) {
  ScopedTempDir tmp;
  write(tmp.path(), "CMakeLists.txt", "project(x)\ninclude(CTest)\n");
  fs::create_directories(tmp / "build");  // no cache: not configured
  write(tmp.path(), "cmake-build-release/CMakeCache.txt", cache("Unix Makefiles", "Release"));
  write(tmp.path(), "cmake-build-debug/CMakeCache.txt", cache("Unix Makefiles", ""));
  CMakeBuild b = find_cmake_build(tmp.path());
  EXPECT_TRUE(b.found);
  EXPECT_EQ(b.dir, "cmake-build-debug");  // sorted: debug before release
  Detected d = detect_project(tmp.path());
  EXPECT_EQ(d.why, "CMakeLists.txt with include(CTest)");
  ASSERT_EQ(d.setup.size(), 1u);
  EXPECT_EQ(d.setup[0].run, (Argv{"cmake", "-S", ".", "-B", "cmake-build-debug", "-G", "Unix Makefiles"}));
  EXPECT_EQ(
      d.checks[0].argv,
      (Argv{"sh", "-c", "cmake --build cmake-build-debug && ctest --test-dir cmake-build-debug --output-on-failure"}));
}

TEST(InitDetect, CMakeWithoutABuildFolderConfiguresBuild) {
  ScopedTempDir tmp;
  write(tmp.path(), "CMakeLists.txt", "PROJECT(x)\nADD_TEST(NAME t COMMAND t)\n");
  CMakeBuild b = find_cmake_build(tmp.path());
  EXPECT_FALSE(b.found);
  Detected d = detect_project(tmp.path());
  EXPECT_EQ(d.why, "CMakeLists.txt with add_test()");
  ASSERT_EQ(d.setup.size(), 1u);
  EXPECT_EQ(d.setup[0].run, (Argv{"cmake", "-S", ".", "-B", "build"}));
  EXPECT_EQ(d.checks[0].argv, (Argv{"sh", "-c", "cmake --build build && ctest --test-dir build --output-on-failure"}));
}

TEST(InitDetect, CMakeMultiConfigBuildsAndTestsOneConfiguration) {
  ScopedTempDir tmp;
  write(tmp.path(), "CMakeLists.txt", "project(x)\nenable_testing()\n");
  write(tmp.path(), "out/build/x64 debug/CMakeCache.txt",
        cache("Ninja Multi-Config", "", "CMAKE_CONFIGURATION_TYPES:STRING=RelWithDebInfo;Debug\n"));
  Detected d = detect_project(tmp.path());
  ASSERT_EQ(d.setup.size(), 1u);
  EXPECT_EQ(d.setup[0].run, (Argv{"cmake", "-S", ".", "-B", "out/build/x64 debug", "-G", "Ninja Multi-Config"}));
  EXPECT_EQ(
      d.checks[0].argv,
      (Argv{"sh", "-c",
            "cmake --build 'out/build/x64 debug' --config RelWithDebInfo && ctest --test-dir 'out/build/x64 debug' "
            "-C RelWithDebInfo --output-on-failure"}));
}

TEST(InitDetect, CMakeWithoutTestsComesLast) {
  ScopedTempDir tmp;
  write(tmp.path(), "CMakeLists.txt", "project(x)\n");
  write(tmp.path(), "Makefile", "all:\n\ttrue\ntest:\n\ttrue\n");
  EXPECT_EQ(detect_project(tmp.path()).checks[0].argv, (Argv{"make", "test"}));
  fs::remove(tmp / "Makefile");
  Detected d = detect_project(tmp.path());
  EXPECT_EQ(d.why, "CMakeLists.txt");
  EXPECT_EQ(d.setup.size(), 1u);
}

TEST(InitDetect, NpmCiFromTheLockfileAndABuildCheckBeforeTheTests) {
  ScopedTempDir tmp;
  write(tmp.path(), "package.json", R"({"scripts": {"build": "tsc", "test": "vitest run"}})");
  write(tmp.path(), "package-lock.json", "{}");
  Detected d = detect_project(tmp.path());
  EXPECT_EQ(d.why, "package.json test script");
  ASSERT_EQ(d.setup.size(), 1u);
  EXPECT_EQ(d.setup[0].run, (Argv{"npm", "ci"}));
  EXPECT_EQ(d.setup[0].inputs, (Argv{"package-lock.json"}));
  ASSERT_EQ(d.checks.size(), 2u);
  EXPECT_EQ(d.checks[0].id, "build");
  EXPECT_EQ(d.checks[0].type, "build");
  EXPECT_EQ(d.checks[0].argv, (Argv{"npm", "run", "build"}));
  EXPECT_EQ(d.checks[1].id, "unit");
  EXPECT_EQ(d.checks[1].argv, (Argv{"npm", "test"}));
}

TEST(InitDetect, PnpmYarnAndNoLockfile) {
  struct Case {
    std::string lock;
    Argv install, inputs, test;
  } cases[] = {
      {"pnpm-lock.yaml", {"pnpm", "install", "--frozen-lockfile"}, {"pnpm-lock.yaml"}, {"pnpm", "test"}},
      {"yarn.lock", {"yarn", "install", "--frozen-lockfile"}, {"yarn.lock"}, {"yarn", "test"}},
      {"", {"npm", "install"}, {"package.json"}, {"npm", "test"}},
  };
  for (const auto& c : cases) {
    ScopedTempDir tmp;
    write(tmp.path(), "package.json", R"({"scripts": {"test": "node --test"}})");
    if (!c.lock.empty()) write(tmp.path(), c.lock, "");
    Detected d = detect_project(tmp.path());
    ASSERT_EQ(d.setup.size(), 1u) << c.lock;
    EXPECT_EQ(d.setup[0].run, c.install) << c.lock;
    EXPECT_EQ(d.setup[0].inputs, c.inputs) << c.lock;
    ASSERT_EQ(d.checks.size(), 1u) << c.lock;  // no build script: no build check
    EXPECT_EQ(d.checks[0].argv, c.test) << c.lock;
    if (!c.lock.empty()) EXPECT_EQ(d.why, "package.json test script (" + c.lock + ")");
  }
}

TEST(InitDetect, TheNpmInitPlaceholderIsNoTestCommand) {
  ScopedTempDir tmp;
  write(tmp.path(), "package.json", R"({"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}})");
  EXPECT_TRUE(detect_project(tmp.path()).checks.empty());
  write(tmp.path(), "go.mod", "module x\n");
  EXPECT_EQ(detect_project(tmp.path()).why, "go.mod");
}

TEST(InitDetect, CargoNeedsNoSetup) {
  ScopedTempDir tmp;
  write(tmp.path(), "Cargo.toml", "[package]\nname = \"x\"\n");
  Detected d = detect_project(tmp.path());
  EXPECT_TRUE(d.setup.empty());
  ASSERT_EQ(d.checks.size(), 1u);
  EXPECT_EQ(d.checks[0].argv, (Argv{"cargo", "test"}));
  EXPECT_EQ(d.why, "Cargo.toml");
}

TEST(InitDetect, GoDownloadsModulesOnlyWithGoSum) {
  ScopedTempDir tmp;
  write(tmp.path(), "go.mod", "module x\n");
  Detected bare = detect_project(tmp.path());
  EXPECT_TRUE(bare.setup.empty());
  EXPECT_EQ(bare.checks[0].argv, (Argv{"go", "test", "./..."}));
  write(tmp.path(), "go.sum", "");
  Detected d = detect_project(tmp.path());
  ASSERT_EQ(d.setup.size(), 1u);
  EXPECT_EQ(d.setup[0].run, (Argv{"go", "mod", "download"}));
  EXPECT_EQ(d.setup[0].inputs, (Argv{"go.mod", "go.sum"}));
  EXPECT_EQ(d.checks[0].argv, (Argv{"go", "test", "./..."}));
}

TEST(InitDetect, PytestUsesTheVirtualenvOnlyWithARequirementsFile) {
  ScopedTempDir tmp;
  write(tmp.path(), "pyproject.toml", "[tool.pytest.ini_options]\n");
  Detected plain = detect_project(tmp.path());
  EXPECT_EQ(plain.why, "pytest configuration");
  EXPECT_TRUE(plain.setup.empty());
  EXPECT_EQ(plain.checks[0].argv, (Argv{"python3", "-m", "pytest", "-q"}));
  // A requirements file alone: no virtualenv is invented.
  write(tmp.path(), "requirements.txt", "pytest\n");
  EXPECT_TRUE(detect_project(tmp.path()).setup.empty());
  // A virtualenv alone: no recipe to rebuild it.
  ScopedTempDir venv_only;
  write(venv_only.path(), "conftest.py", "");
  write(venv_only.path(), ".venv/pyvenv.cfg", "home = /usr/bin\n");
  EXPECT_TRUE(detect_project(venv_only.path()).setup.empty());
  EXPECT_EQ(detect_project(venv_only.path()).checks[0].argv, (Argv{"python3", "-m", "pytest", "-q"}));
  // Both: setup makes the virtualenv and installs the requirements; the check runs its python.
  write(tmp.path(), ".venv/pyvenv.cfg", "home = /usr/bin\n");
  write(tmp.path(), "requirements-dev.txt", "-r requirements.txt\nhypothesis\n");
  Detected d = detect_project(tmp.path());
  ASSERT_EQ(d.setup.size(), 2u);
  EXPECT_EQ(d.setup[0].run, (Argv{"python3", "-m", "venv", ".venv"}));
  EXPECT_EQ(d.setup[1].run, (Argv{".venv/bin/python", "-m", "pip", "install", "--quiet", "-r", "requirements.txt", "-r",
                                  "requirements-dev.txt"}));
  EXPECT_EQ(d.setup[1].inputs, (Argv{"requirements.txt", "requirements-dev.txt"}));
  EXPECT_EQ(d.checks[0].argv, (Argv{".venv/bin/python", "-m", "pytest", "-q"}));
}

TEST(InitDetect, MakefileWithATestTarget) {
  ScopedTempDir tmp;
  write(tmp.path(), "GNUmakefile", "test:\n\t./run\n");
  Detected d = detect_project(tmp.path());
  EXPECT_EQ(d.why, "GNUmakefile with a test target");
  EXPECT_EQ(d.checks[0].argv, (Argv{"make", "test"}));
  EXPECT_TRUE(d.setup.empty());
}

TEST(InitDetect, DetectionOrderIsKept) {
  ScopedTempDir tmp;
  write(tmp.path(), "Makefile", "test:\n\ttrue\n");
  write(tmp.path(), "pytest.ini", "[pytest]\n");
  EXPECT_EQ(detect_project(tmp.path()).why, "pytest configuration");
  write(tmp.path(), "go.mod", "module x\n");
  EXPECT_EQ(detect_project(tmp.path()).why, "go.mod");
  write(tmp.path(), "Cargo.toml", "[package]\n");
  EXPECT_EQ(detect_project(tmp.path()).why, "Cargo.toml");
  write(tmp.path(), "package.json", R"({"scripts": {"test": "jest"}})");
  EXPECT_EQ(detect_project(tmp.path()).why, "package.json test script");
  write(tmp.path(), "CMakeLists.txt", "enable_testing()\n");
  EXPECT_EQ(detect_project(tmp.path()).why, "CMakeLists.txt with enable_testing()");
}

// Folders holding one project of each kind, for the rendering tests.
std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> kinds() {
  return {
      {"cmake", {{"CMakeLists.txt", "enable_testing()\n"}, {"build/CMakeCache.txt", cache("Ninja", "RelWithDebInfo")}}},
      {"cmake-long",
       {{"CMakeLists.txt", "enable_testing()\n"},
        {"cmake-build-relwithdebinfo-with-a-long-name/CMakeCache.txt", cache("Unix Makefiles", "RelWithDebInfo")}}},
      {"npm", {{"package.json", R"({"scripts": {"build": "tsc", "test": "vitest"}})"}, {"package-lock.json", "{}"}}},
      {"yarn", {{"package.json", R"({"scripts": {"test": "jest"}})"}, {"yarn.lock", ""}}},
      {"cargo", {{"Cargo.toml", "[package]\n"}}},
      {"go", {{"go.mod", "module x\n"}, {"go.sum", ""}}},
      {"pytest-venv",
       {{"pytest.ini", "[pytest]\n"},
        {"requirements.txt", ""},
        {"requirements-test.txt", ""},
        {".venv/bin/python", ""}}},
      {"make", {{"Makefile", "test:\n\ttrue\n"}}},
      {"nothing", {{"README", "hello\n"}}},
  };
}

TEST(InitRender, LoadsAndSaysWhatWasDetected) {
  for (const auto& [kind, files] : kinds()) {
    ScopedTempDir tmp;
    for (const auto& [f, content] : files) write(tmp.path(), f, content);
    write(tmp.path(), "src/a.c", "");
    write(tmp.path(), "include/a.h", "");
    Detected d = detect_project(tmp.path());
    std::string text = render_phoenix_json(d);
    config::Config c = config::parse(text, "phoenix.json");
    ASSERT_EQ(c.setup.size(), d.setup.size()) << kind << "\n" << text;
    for (size_t i = 0; i < d.setup.size(); ++i) {
      EXPECT_EQ(c.setup[i].run, d.setup[i].run) << kind;
      EXPECT_EQ(c.setup[i].inputs, d.setup[i].inputs) << kind;
    }
    ASSERT_EQ(c.checks.size(), d.checks.size()) << kind << "\n" << text;
    for (size_t i = 0; i < d.checks.size(); ++i) {
      EXPECT_EQ(c.checks[i].id, d.checks[i].id) << kind;
      EXPECT_EQ(c.checks[i].argv, d.checks[i].argv) << kind;
      EXPECT_EQ(c.checks[i].type, d.checks[i].type) << kind;
      EXPECT_EQ(c.checks[i].editable, (Argv{"src/**", "include/**"})) << kind;
    }
    EXPECT_EQ(c.hook.mode, config::HookMode::kVerify) << kind;
    EXPECT_NE(text.find("// Written by 'phoenix init'."), std::string::npos) << text;
    if (d.checks.empty()) {
      EXPECT_NE(text.find("// No test command was detected"), std::string::npos) << text;
    } else {
      EXPECT_NE(text.find("// The test command was detected from " + d.why + "."), std::string::npos) << text;
    }
    if (!d.setup.empty())
      EXPECT_NE(text.find("// The setup steps were detected from " + d.setup_why + "."), std::string::npos) << text;
    EXPECT_EQ(text.back(), '\n');
  }
}

TEST(InitRender, TheCMakeFileAsWritten) {
  ScopedTempDir tmp;
  write(tmp.path(), "CMakeLists.txt", "enable_testing()\n");
  write(tmp.path(), "build/CMakeCache.txt", cache("Ninja", "Debug"));
  write(tmp.path(), "src/a.c", "");
  EXPECT_EQ(render_phoenix_json(detect_project(tmp.path())),
            R"({
  // Written by 'phoenix init'. Reference: share/phoenix/templates/phoenix.schema.json
  // "setup" gives every tree Phoenix makes (its worktrees, a fixer's sandbox) what a fresh
  // checkout lacks; a step runs again there only when its "inputs" change.
  // The setup steps were detected from build/CMakeCache.txt (generator Ninja, build type Debug).
  "setup": [
    {
      "run": [
        "cmake",
        "-S",
        ".",
        "-B",
        "build",
        "-G",
        "Ninja",
        "-DCMAKE_BUILD_TYPE=Debug"
      ],
      "inputs": ["**/CMakeLists.txt", "**/*.cmake"]
    }
  ],
  // The test command was detected from CMakeLists.txt with enable_testing().
  "checks": [
    {
      "id": "unit",
      "kind": "command_exit",
      "type": "unit",
      "target": [
        "sh",
        "-c",
        "cmake --build build && ctest --test-dir build --output-on-failure"
      ],
      "timeout_s": 1800,
      "select": {
        "runner": "ctest",
        "command": [
          "sh",
          "-c",
          "cmake --build build && exec ctest --test-dir build --output-on-failure \"$@\"",
          "sh"
        ]
      },
      "editable": ["src/**"]
    }
  ],
  "fixers": ["journal", "bisect", "harness"],
  // "harness": "claude",   // or codex, aider, opencode, gemini, or {"command": ["my-agent", "{prompt_file}"]}
  "budgets": {},
  "session_cap": 10,
  "diff_cap": 200,
  "circuit_breaker": 3,
  "hook": {
    "mode": "verify"
  }
}
)");
}

// Runs the real prettier (scripts/deps.sh installs it) on `text` saved as
// phoenix.json: "" when it is formatted as prettier formats it, else what
// prettier would write (or says). Skips the calling test when prettier is absent.
#define PRETTIER_OR_SKIP()                                                                                \
  do {                                                                                                    \
    if (!fs::exists(kPrettier))                                                                           \
      GTEST_SKIP() << kPrettier << " is not installed (scripts/deps.sh installs prettier 3.6.2)";         \
    if (test::run({"sh", "-c", "command -v node"}).exit_code != 0) GTEST_SKIP() << "node is not on PATH"; \
  } while (0)

std::string prettier_diff(const std::string& text) {
  ScopedTempDir tmp;
  write(tmp.path(), "phoenix.json", text);
  // Prettier's defaults: no configuration or .editorconfig found above the temporary folder counts.
  auto check = test::run({kPrettier, "--check", "--no-config", "--no-editorconfig", "phoenix.json"}, tmp.path());
  if (check.exit_code == 0) return "";
  auto formatted = test::run({kPrettier, "--no-config", "--no-editorconfig", "phoenix.json"}, tmp.path());
  return "prettier --check: exit " + std::to_string(check.exit_code) + "\n" + check.output + "\nprettier writes:\n" +
         formatted.output;
}

TEST(InitRender, PassesPrettierCheckForEveryKindOfProject) {
  PRETTIER_OR_SKIP();
  for (const auto& [kind, files] : kinds()) {
    ScopedTempDir tmp;
    for (const auto& [f, content] : files) write(tmp.path(), f, content);
    write(tmp.path(), "src/a.c", "");
    std::string text = render_phoenix_json(detect_project(tmp.path()));
    EXPECT_EQ(prettier_diff(text), "") << kind << ": init wrote\n" << text;
  }
}

using OJ = nlohmann::ordered_json;

TEST(JsonPretty, FormatsAsPrettierDoes) {
  OJ doc = OJ::parse(R"({
    "empty_object": {}, "empty_array": [],
    "fits": ["a", "b", 1, true, null],
    "pairs": [[1, 2], [3, 4]], "singles": [["a"], ["b"]], "mixed": [[1, 2], ["x"]],
    "objects": [{"a": 1}, {}],
    "numbers": [1000000, 2000000, 3000000, 4000000, 5000000, 6000000, 7000000, 8000000, 9000000, 10000000, 11000000],
    "floats": [1.5, 0.25, 1800.0, 1e21, -2.5e-7],
    "nested": {"deeper": {"list": ["x", "y"]}, "s": "quote \" and \\ and é"},
    "last": 0
  })");
  util::JsonComments comments{{"fits", {"before a key"}},
                              {"nested.deeper.list", {"two levels down"}},
                              {"objects[1]", {"before an element"}},
                              {"/end", {"after the last key"}}};
  std::string text = util::prettier_style(doc, comments);
  EXPECT_EQ(text, R"({
  "empty_object": {},
  "empty_array": [],
  // before a key
  "fits": ["a", "b", 1, true, null],
  "pairs": [
    [1, 2],
    [3, 4]
  ],
  "singles": [["a"], ["b"]],
  "mixed": [[1, 2], ["x"]],
  "objects": [
    {
      "a": 1
    },
    // before an element
    {}
  ],
  "numbers": [
    1000000, 2000000, 3000000, 4000000, 5000000, 6000000, 7000000, 8000000,
    9000000, 10000000, 11000000
  ],
  "floats": [1.5, 0.25, 1800, 1e21, -2.5e-7],
  "nested": {
    "deeper": {
      // two levels down
      "list": ["x", "y"]
    },
    "s": "quote \" and \\ and é"
  },
  "last": 0
  // after the last key
}
)");
  OJ boundary = OJ::object();
  // `  "k": ["` + 68 + `"],` is 80 columns, the comma counted: one line; one more breaks.
  boundary["k"] = OJ::array({std::string(68, 'a')});
  boundary["z"] = 1;
  EXPECT_EQ(util::prettier_style(boundary), "{\n  \"k\": [\"" + std::string(68, 'a') + "\"],\n  \"z\": 1\n}\n");
  boundary["k"] = OJ::array({std::string(69, 'a')});
  EXPECT_EQ(util::prettier_style(boundary),
            "{\n  \"k\": [\n    \"" + std::string(69, 'a') + "\"\n  ],\n  \"z\": 1\n}\n");
}

TEST(JsonPretty, PrettierAgrees) {
  PRETTIER_OR_SKIP();
  OJ doc = OJ::parse(R"({
    "fits": ["a", "b", 1, true, null],
    "long": ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"],
    "pairs": [[1, 2], [3, 4]], "singles": [["a"], ["b"]], "mixed": [[1, 2], ["x"]], "empty": [[], {}],
    "objects": [{"a": [1, 2, {"b": []}]}, {}],
    "numbers": [1000000, 2000000, 3000000, 4000000, 5000000, 6000000, 7000000, 8000000, 9000000, 10000000, 11000000],
    "floats": [1.5, 0.25, 1800.0, 1e21, -2.5e-7, 1e-5],
    "wide": ["日本語の文字は二つの列を占めます", "日本語の文字は二つの列を占めます"],
    "nested": {"deeper": {"list": ["x", "y"]}, "s": "quote \" and \\ and é \u0001"}
  })");
  util::JsonComments comments{{"fits", {"before a key", "", "  indented text"}},
                              {"objects[1]", {"before an element"}},
                              {"objects/end", {"after the last element"}},
                              {"/end", {"after the last key"}}};
  std::string text = util::prettier_style(doc, comments);
  EXPECT_EQ(prettier_diff(text), "") << text;
  // Lines on both sides of the 80-column boundary, with and without the comma after them.
  OJ b = OJ::object();
  for (size_t n = 60; n < 76; ++n) {
    b["k" + std::to_string(n)] = OJ::array({std::string(n - 7, 'a'), "b"});
    b["n" + std::to_string(n)] = OJ::object({{"last", OJ::array({std::string(n - 2, 'c')})}});
  }
  std::string t = util::prettier_style(b);
  EXPECT_EQ(prettier_diff(t), "") << t;
}

}  // namespace
}  // namespace phoenix::cli
