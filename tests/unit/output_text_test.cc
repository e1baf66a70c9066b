// engine/output_text.h: colour codes, terminal lines, blank trimming and
// durations, the pieces normalization and the test-runner parsers share.
#include "engine/output_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace phoenix::engine::output {
namespace {

TEST(OutputText, StripAnsiRemovesCsiOscAndTwoByteEscapes) {
  EXPECT_EQ(strip_ansi("\x1b[31mred\x1b[0m"), "red");
  EXPECT_EQ(strip_ansi("\x1b]0;title\x07text"), "text");
  EXPECT_EQ(strip_ansi("\x1b(Bplain"), "plain");
  EXPECT_EQ(strip_ansi("\x1b]8;;unterminated\nnext"), "\nnext");  // an OSC ends at the line
}

TEST(OutputText, TerminalLinesKeepWhatFollowsTheLastCarriageReturn) {
  std::vector<std::string> lines = terminal_lines("10%\r50%\r100% done\r\n\x1b[32mok\x1b[0m\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "100% done");
  EXPECT_EQ(lines[1], "ok");
}

TEST(OutputText, TrimmingIsBlanksOnlyAndCountsIndent) {
  EXPECT_EQ(ltrim(" \tx \r"), "x \r");
  EXPECT_EQ(rtrim(" x \t\r"), " x");
  EXPECT_EQ(rtrim("x\n"), "x\n");  // a newline is not a blank
  EXPECT_EQ(indent_of("    - item"), 4u);
  EXPECT_TRUE(is_blank(" \t \r"));
  EXPECT_FALSE(is_blank(" . "));
  EXPECT_EQ(count_digits("ab123c", 2), 3u);
}

TEST(OutputText, MatchDurationKnowsUnitsAndGoCompounds) {
  EXPECT_EQ(match_duration("12 ms", 0), 5u);
  EXPECT_EQ(match_duration("0.53s)", 0), 5u);
  EXPECT_EQ(match_duration("1m2.5s", 0), 6u);
  EXPECT_EQ(match_duration("3 tests", 0), 0u);
  EXPECT_EQ(match_duration("5sx", 0), 0u);  // not at a word boundary
}

TEST(OutputText, StripTrailingDuration) {
  EXPECT_EQ(strip_trailing_duration("Suite.Name (0 ms)"), "Suite.Name");
  EXPECT_EQ(strip_trailing_duration("adds 25ms"), "adds");
  EXPECT_EQ(strip_trailing_duration("adds (slow path)"), "adds (slow path)");
}

}  // namespace
}  // namespace phoenix::engine::output
