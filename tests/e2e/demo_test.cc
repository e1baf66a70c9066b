// The README's first command ends in scripts/demo-story.sh: run it as the
// demo does (the built binaries on PATH, the scripted agent) and hold it to
// what the README says it shows, so the demo cannot rot.
#include <gtest/gtest.h>

#include <filesystem>

#include "image/image.h"
#include "test_util.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;
using namespace phoenix::test;

TEST(Demo, TheNarratedDemoHealsARealCMakeProjectEveryWayItSays) {
  if (phoenix::util::find_executable("cmake").empty() || phoenix::util::find_executable("cc").empty())
    GTEST_SKIP() << "the demo builds a C library with CMake: cmake or cc is not installed";
  const std::string bin_dir = fs::path(phoenix_bin()).parent_path().string();
  const char* path = std::getenv("PATH");
  ScopedTempDir tmp;
  const std::string morning = tmp / "morning.html";
  auto r = run({"bash", PHOENIX_SOURCE_DIR "/scripts/demo-story.sh"}, "",
               {{"PATH", bin_dir + ":" + (path ? path : "/usr/bin:/bin")},
                {"PHOENIX_DEMO_AGENT", PHOENIX_TEST_TOOLS_DIR "/scripted_agent"},
                {"PHOENIX_DEMO_REPORT", morning},
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
           "$ phoenix-loop --branch phoenix/loop-demo\n",
           "phoenix-loop: receipts: print the total on the receipt",
           "$ phoenix report\nPhoenix: the night on phoenix/loop-demo\n",
           "Phoenix-Healed-By: harness",
           "1 of 2 tasks done, 1 escalated, 0 open",
           "  1. Read incidents/",
           "  escalated pricing: round every price down to whole dollars",
           "The morning page of this run: ",
           "Done. HEALED always meant",
       })
    EXPECT_NE(out.find(line), std::string::npos) << "missing: " << line << "\n" << out;
  // Bisect's and init's worktrees live outside the work tree.
  EXPECT_NE(out.find("$ git worktree list"), std::string::npos) << out;
  EXPECT_NE(out.find("/phoenix/trees/shop-"), std::string::npos) << out;
  EXPECT_NE(out.find("/worktrees/bisect "), std::string::npos) << out;

  // It ends with the morning page of its own night, where it says.
  EXPECT_NE(out.find("The morning page of this run: " + morning + " "), std::string::npos) << out;
  ASSERT_TRUE(fs::exists(morning)) << out;
  const std::string page = read(morning);
  EXPECT_NE(page.find("<svg id=\"timeline-svg\""), std::string::npos);
  EXPECT_NE(page.find("<h3>Incident"), std::string::npos) << "the note rendered, not pasted";

  // The README's picture of the morning page is this page, as the suite's
  // headless chromium draws it: PHOENIX_MORNING_PNG=docs/morning.png keeps
  // it (scripts/morning-png.sh).
  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium)) GTEST_SKIP() << "no " << chromium << " (Debian package chromium): the page was not drawn";
  const char* keep = std::getenv("PHOENIX_MORNING_PNG");
  const std::string png = keep && *keep ? std::string(keep) : tmp / "morning.png";
  phoenix::util::ProcessOptions po;
  po.argv = {chromium,
             "--headless",
             "--no-sandbox",
             "--disable-gpu",
             "--hide-scrollbars",
             "--window-size=900,1500",
             "--user-data-dir=" + (tmp / "profile"),
             "--screenshot=" + png,
             "file://" + morning};
  po.cwd = tmp.path();
  po.timeout_s = 90;
  po.env = {{"HOME", tmp.path()}};
  phoenix::util::run_process(po);
  ASSERT_TRUE(fs::exists(png)) << "chromium drew nothing";
  phoenix::image::Image shot = phoenix::image::read_png(png);
  EXPECT_EQ(shot.width, 900);
  EXPECT_EQ(shot.height, 1500);
  // Not blank: the verdict's red bar (an escalation) is on it.
  bool red = false;
  for (size_t i = 0; i + 3 < shot.rgba.size() && !red; i += 4)
    red = shot.rgba[i] > 180 && shot.rgba[i + 1] < 60 && shot.rgba[i + 2] < 60;
  EXPECT_TRUE(red) << "the picture shows no escalation mark: " << png;
}
