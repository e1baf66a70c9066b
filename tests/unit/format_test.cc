// util/format.h's three forms of a length of time, and util/text.h's join:
// the one copy of each that the report, the journal and `phoenix init` print.
#include <gtest/gtest.h>

#include "util/format.h"
#include "util/text.h"

namespace phoenix::util {
namespace {

TEST(Format, DurationInWords) {
  EXPECT_EQ(duration(-5), "0 ms");
  EXPECT_EQ(duration(840), "840 ms");
  EXPECT_EQ(duration(999), "999 ms");
  EXPECT_EQ(duration(1000), "1.0 s");
  EXPECT_EQ(duration(4200), "4.2 s");
  EXPECT_EQ(duration(9999), "10.0 s");
  EXPECT_EQ(duration(42'400), "42 s");
  EXPECT_EQ(duration(59'500), "60 s");
  EXPECT_EQ(duration(60'000), "1 min");
  EXPECT_EQ(duration(252'000), "4 min 12 s");
  EXPECT_EQ(duration(3'599'499), "59 min 59 s");
  EXPECT_EQ(duration(3'600'000), "1 h");
  EXPECT_EQ(duration((2 * 60 + 13) * 60'000LL), "2 h 13 min");
}

TEST(Format, DurationCompact) {
  EXPECT_EQ(duration_compact(850), "850ms");
  EXPECT_EQ(duration_compact(12'500), "12.5s");
  EXPECT_EQ(duration_compact(250'000), "4m10s");
  EXPECT_EQ(duration_compact(2 * 3'600'000 + 5 * 60'000), "2h05m");
}

TEST(Format, SecondsTenths) {
  EXPECT_EQ(seconds_tenths(840), "0.8 s");
  EXPECT_EQ(seconds_tenths(75'340), "75.3 s");
}

TEST(Text, Join) {
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({"a", "", "c"}, " "), "a  c");
}

}  // namespace
}  // namespace phoenix::util
