// The README's first command ends in scripts/demo-story.sh: run it as the
// demo does (the built binaries on PATH, the scripted agent) and hold it to
// what the README says it shows, so the demo cannot rot.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;
using namespace phoenix::test;

TEST(Demo, TheNarratedDemoHealsARealCMakeProjectEveryWayItSays) {
  if (phoenix::util::find_executable("cmake").empty() || phoenix::util::find_executable("cc").empty())
    GTEST_SKIP() << "the demo builds a C library with CMake: cmake or cc is not installed";
  const std::string bin_dir = fs::path(phoenix_bin()).parent_path().string();
  const char* path = std::getenv("PATH");
  auto r = run({"bash", PHOENIX_SOURCE_DIR "/scripts/demo-story.sh"}, "",
               {{"PATH", bin_dir + ":" + (path ? path : "/usr/bin:/bin")},
                {"PHOENIX_DEMO_AGENT", PHOENIX_TEST_TOOLS_DIR "/scripted_agent"},
                {"NO_COLOR", "1"}},
               300);
  const std::string& out = r.output;
  ASSERT_EQ(r.exit_code, 0) << out;
  for (const char* line : {
           "setup: cmake -S . -B build",
           "check 'unit': sh -c 'cmake --build build && ctest --test-dir build --output-on-failure'",
           "green: every check passes in the work tree and in a fresh tree after the setup steps",
           "FAIL price 10 100: want 900, got 800",
           "tampered:",
           "phoenix: unit: HEALED by bisect in",
           "guard=protected",
           "phoenix: unit: HEALED by harness in",
           "phoenix: unit: HEALED by journal in",
           "Done. HEALED always meant",
       })
    EXPECT_NE(out.find(line), std::string::npos) << "missing: " << line << "\n" << out;
  // Bisect's and init's worktrees live outside the work tree.
  EXPECT_NE(out.find("$ git worktree list"), std::string::npos) << out;
  EXPECT_NE(out.find("/phoenix/trees/shop-"), std::string::npos) << out;
  EXPECT_NE(out.find("/worktrees/bisect "), std::string::npos) << out;
}
