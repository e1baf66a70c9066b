// The JSON Schema shipped in templates/ and the parser must agree on the
// keys and defaults, so the schema cannot drift from what Phoenix accepts.
#include <gtest/gtest.h>

#include "config/config.h"
#include "test_util.h"
#include "util/error.h"
#include "util/json.h"

namespace phoenix::config {
namespace {

using util::Json;

Json schema() { return Json::parse(test::read(PHOENIX_SOURCE_DIR "/templates/phoenix.schema.json")); }

TEST(Schema, EveryTopLevelKeyTheParserAcceptsIsInTheSchemaAndBack) {
  Json s = schema();
  for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
    // A config with just this key must not be rejected as unknown.
    Json probe = Json::object();
    probe[it.key()] = nullptr;
    try {
      parse(probe.dump(), "probe");
    } catch (const phoenix::ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).find("unknown key"), std::string::npos) << it.key() << ": " << e.what();
    }
  }
  // And a key the schema does not list is rejected by the parser.
  EXPECT_THROW(parse(R"({"not_in_schema": 1})", "probe"), phoenix::ConfigError);
}

TEST(Schema, DefaultsMatchTheParser) {
  Json s = schema();
  Config c = parse("{}", "probe");
  for (auto it = s["properties"]["budgets"]["properties"].begin(); it != s["properties"]["budgets"]["properties"].end();
       ++it)
    EXPECT_EQ(it.value()["default"].get<int>(), c.budgets.at(it.key())) << it.key();
  EXPECT_EQ(s["properties"]["session_cap"]["default"].get<int>(), c.session_cap);
  EXPECT_EQ(s["properties"]["diff_cap"]["default"].get<int>(), c.diff_cap);
  EXPECT_EQ(s["properties"]["patch_files_cap"]["default"].get<int>(), c.patch_files_cap);
  EXPECT_EQ(s["properties"]["patch_bytes_cap"]["default"].get<int>(), c.patch_bytes_cap);
  EXPECT_EQ(s["properties"]["circuit_breaker"]["default"].get<int>(), c.circuit_breaker);
  EXPECT_EQ(s["properties"]["flaky_reruns"]["default"].get<int>(), c.flaky_reruns);
  EXPECT_EQ(s["properties"]["fixers"]["default"].get<std::vector<std::string>>(), c.fixers);
  EXPECT_EQ(s["properties"]["hook"]["properties"]["mode"]["default"], config::hook_mode_name(c.hook.mode));
}

TEST(Schema, CheckKindsMatch) {
  Json kinds = schema()["$defs"]["check"]["properties"]["kind"]["enum"];
  for (const auto& k : kinds) {
    Json check = {{"id", "x"}, {"kind", k}, {"target", k == "command_exit" ? Json("true") : Json("f")}};
    if (k == "file_sha256") check["expect"] = std::string(64, 'a');
    if (k == "regex_in_file") check["pattern"] = "x";
    if (k == "contract" || k == "visual") check["target"] = "http://127.0.0.1:9/x";
    EXPECT_NO_THROW(parse(Json{{"checks", {check}}}.dump(), "probe")) << k;
  }
}

}  // namespace
}  // namespace phoenix::config
