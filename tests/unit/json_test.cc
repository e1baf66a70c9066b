// util/json.h: the strict array of strings a configuration must be, and the
// lenient one read back from Phoenix's own records.
#include "util/json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error.h"

namespace phoenix::util {
namespace {

using Strings = std::vector<std::string>;

TEST(JsonStrings, ConfigurationArraysAreStrictRecordsAreLenient) {
  const Json j = Json::parse(R"({"tests": ["a", 1, null, "b c", {"x": "y"}], "one": "a", "none": []})");
  EXPECT_EQ(strings_in(j, "tests"), (Strings{"a", "b c"}));
  EXPECT_EQ(strings_of(j["tests"]), (Strings{"a", "b c"}));
  EXPECT_TRUE(strings_in(j, "one").empty());
  EXPECT_TRUE(strings_in(j, "none").empty());
  EXPECT_TRUE(strings_in(j, "missing").empty());
  EXPECT_TRUE(strings_in(Json::array({"a"}), "tests").empty()) << "not an object";
  EXPECT_TRUE(strings_of(Json("a")).empty());
  EXPECT_EQ(string_array(Json::array({"a", "b"}), "x"), (Strings{"a", "b"}));
  EXPECT_THROW(string_array(j["tests"], "checks[0].tests"), ConfigError);
}

}  // namespace
}  // namespace phoenix::util
