// Contract shapes: inference, the recorded format, drift, and the check
// objects of contract and visual checks (errors name the field).
#include <gtest/gtest.h>

#include "checks/check.h"
#include "checks/contract.h"
#include "util/error.h"
#include "util/json.h"

namespace phoenix::checks {
namespace {

using util::Json;
namespace k = contract;

k::Shape shape_of(const char* json) { return k::infer(Json::parse(json)); }

std::map<std::string, std::string> rendered(const k::Shape& s) {
  std::map<std::string, std::string> out;
  for (const auto& [p, t] : s) out[p] = k::render(t);
  return out;
}

TEST(ContractCheckShape, InfersPathsFoldsArraysAndFindsOptionalAndNullable) {
  auto s = shape_of(R"({"orders":[{"id":1,"total":9.5,"note":"x"},{"id":2,"total":3,"note":null,"gift":true}],
                         "count":2,"weird key":{"a":[]}})");
  std::map<std::string, std::string> want{
      {"$", "object"},
      {"$.orders", "array"},
      {"$.orders[]", "object"},
      {"$.orders[].id", "number"},
      {"$.orders[].total", "number"},
      {"$.orders[].note", "null|string"},
      {"$.orders[].gift", "boolean (optional)"},
      {"$.count", "number"},
      {"$[\"weird key\"]", "object"},
      {"$[\"weird key\"].a", "array"},
  };
  EXPECT_EQ(rendered(s), want);
}

TEST(ContractCheckShape, NestedArraysFoldToo) {
  auto s = shape_of(R"({"m":[[1,2],[3]], "e":[]})");
  EXPECT_EQ(k::render(s.at("$.m[]")), "array");
  EXPECT_EQ(k::render(s.at("$.m[][]")), "number");
  EXPECT_EQ(s.count("$.e[]"), 0u);
}

TEST(ContractCheckShape, TypesRoundTripAndUnknownTypesAreNamed) {
  k::PathType t = k::parse_type("null|string (optional)", "f");
  EXPECT_TRUE(t.optional);
  EXPECT_EQ(t.types, (std::set<std::string>{"null", "string"}));
  EXPECT_EQ(k::render(t), "null|string (optional)");
  try {
    k::parse_type("number|integer", "c.json.shape[\"$.x\"]");
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("c.json.shape[\"$.x\"]: unknown type 'integer'"), std::string::npos)
        << e.what();
  }
}

TEST(ContractCheckShape, FileFormatIsStableAndValidated) {
  k::Contract c;
  c.url = "http://127.0.0.1:1/a";
  c.shape = shape_of(R"({"b":1,"a":"x"})");
  std::string text = k::to_json(c).dump(2);
  // Sorted keys: "$", "$.a", "$.b" in that order, whatever order the body had.
  EXPECT_LT(text.find("\"$.a\""), text.find("\"$.b\""));
  EXPECT_EQ(k::to_json(k::from_json(Json::parse(text), "c.json")).dump(2), text);
  Json bad = Json::parse(text);
  bad["version"] = 7;
  EXPECT_THROW(k::from_json(bad, "c.json"), ConfigError);
  bad = Json::parse(text);
  bad["shape"]["$.a"] = 3;
  try {
    k::from_json(bad, ".phoenix/contracts/c.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(".phoenix/contracts/c.json.shape[\"$.a\"]"), std::string::npos) << e.what();
  }
}

const char* kOrders = R"({"orders":[{"id":1,"total":9.5,"note":null},{"id":2,"total":3,"note":"x"}],"count":2})";

TEST(ContractCheckShape, DroppedFieldIsFieldMissing) {
  auto d = k::diff(shape_of(kOrders), shape_of(R"({"orders":[{"id":1,"note":null}],"count":1})"), false);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], (k::Drift{"field-missing", "$.orders[].total", "number", "(absent)"}));
  EXPECT_EQ(k::signal(d), "drift: $.orders[].total removed");
}

TEST(ContractCheckShape, ChangedTypeIsTypeChanged) {
  auto d = k::diff(shape_of(kOrders), shape_of(R"({"orders":[{"id":1,"total":"9.50","note":null}],"count":1})"), false);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, "type-changed");
  EXPECT_EQ(k::signal(d), "drift: $.orders[].total number → string");
}

TEST(ContractCheckShape, AddedFieldOnlyWhenStrict) {
  auto actual = shape_of(R"({"orders":[{"id":1,"total":1,"note":null,"coupon":{"code":"x"}}],"count":1})");
  EXPECT_TRUE(k::diff(shape_of(kOrders), actual, false).empty());
  auto d = k::diff(shape_of(kOrders), actual, true);
  ASSERT_EQ(d.size(), 1u);  // the top of the added subtree only
  EXPECT_EQ(d[0], (k::Drift{"field-added", "$.orders[].coupon", "(absent)", "object"}));
  EXPECT_EQ(k::signal(d), "drift: $.orders[].coupon added");
}

TEST(ContractCheckShape, NullableMayBeNullOptionalMayBeAbsentEmptyArrayHidesNothing) {
  auto expected = shape_of(R"({"a":[{"x":1},{"x":2,"y":"opt"}],"n":null,"m":"s"})");
  EXPECT_EQ(k::render(expected.at("$.a[].y")), "string (optional)");
  // y absent: optional. a empty: nothing under it can be seen, so nothing is missing.
  EXPECT_TRUE(k::diff(expected, shape_of(R"({"a":[{"x":5}],"n":null,"m":"t"})"), true).empty());
  EXPECT_TRUE(k::diff(expected, shape_of(R"({"a":[],"n":null,"m":"t"})"), true).empty());
  // m was never null: null is a type change; n was only ever null: a string is too.
  auto d = k::diff(expected, shape_of(R"({"a":[],"n":"now","m":null})"), false);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].path, "$.m");
  EXPECT_EQ(d[1].path, "$.n");
}

TEST(ContractCheckShape, AMissingSubtreeIsReportedOnceAndDriftsAreSorted) {
  auto expected = shape_of(R"({"z":1,"user":{"name":"a","address":{"city":"b"}},"b":true})");
  auto d = k::diff(expected, shape_of(R"({"z":"1","b":1})"), false);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].path, "$.b");
  EXPECT_EQ(d[1], (k::Drift{"field-missing", "$.user", "object", "(absent)"}));
  EXPECT_EQ(d[2].path, "$.z");
  EXPECT_EQ(k::signal(d), "drift: $.b boolean → number (+2 more)");
  std::string ev = k::explain(d, expected, shape_of(R"({"z":"1","b":1})"));
  EXPECT_NE(ev.find("field-missing  $.user\n    expected: object\n    actual:   (absent)"), std::string::npos) << ev;
  EXPECT_NE(ev.find("expected shape:\n"), std::string::npos) << ev;
  EXPECT_NE(ev.find("actual shape:\n"), std::string::npos) << ev;
}

TEST(ContractCheckShape, DiffOfATypeChangedParentDoesNotAlsoReportItsChildren) {
  auto d = k::diff(shape_of(R"({"u":{"a":1,"b":2}})"), shape_of(R"({"u":[1]})"), true);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, "type-changed");
  EXPECT_EQ(d[0].path, "$.u");
}

// ---- check objects ----

std::string config_error(const std::string& text) {
  try {
    parse_check_text(text);
  } catch (const ConfigError& e) { return e.what(); }
  return "(accepted)";
}

TEST(ContractCheckConfig, ParsesAContractCheckWithDefaults) {
  CheckSpec c = parse_check_text(R"({"id":"orders","kind":"contract","target":"http://127.0.0.1:3000/api/orders",
      "method":"POST","headers":{"X-Token":"t"},"body":{"q":1},"strict":true,
      "server":{"run":["npm","run","dev"],"ready_url":"http://127.0.0.1:3000/health"}})");
  EXPECT_EQ(c.type, "contract");
  EXPECT_EQ(c.method, "POST");
  EXPECT_EQ(c.body, R"({"q":1})");
  EXPECT_TRUE(c.strict);
  EXPECT_TRUE(c.record);
  EXPECT_TRUE(c.has_server);
  EXPECT_EQ(c.server.ready_timeout_s, 30);
  EXPECT_EQ(c.timeout_s, 30);
  EXPECT_EQ(contract_path(c), ".phoenix/contracts/orders.json");
}

TEST(ContractCheckConfig, BadContractObjectsNameTheField) {
  EXPECT_NE(config_error(R"({"kind":"contract","target":"https://example.com/x"})")
                .find("--check.target: 'https://example.com/x': https is not supported"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"contract","target":"ftp://x/"})")
                .find("--check.target: 'ftp://x/' is not an http:// URL"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"contract","target":"http://127.0.0.1:99999/"})").find("invalid port '99999'"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"contract","target":"http://127.0.0.1:1/","stritc":true})")
                .find("unknown key 'stritc' (did you mean 'strict'?)"),
            std::string::npos);
  EXPECT_NE(
      config_error(R"({"kind":"contract","target":"http://127.0.0.1:1/","expect":200})").find("unknown key 'expect'"),
      std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"contract","target":"http://127.0.0.1:1/","record":"always"})")
                .find("--check.record: must be \"auto\" or \"never\""),
            std::string::npos);
  EXPECT_NE(
      config_error(R"({"kind":"contract","target":"http://127.0.0.1:1/","method":"FETCH"})").find("--check.method"),
      std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"contract","target":"http://127.0.0.1:1/","server":{"run":["x"]}})")
                .find("--check.server.ready_url: missing"),
            std::string::npos);
  EXPECT_NE(
      config_error(
          R"({"kind":"contract","target":"http://127.0.0.1:1/","server":{"run":[],"ready_url":"http://127.0.0.1:1/"}})")
          .find("--check.server.run: the command is empty"),
      std::string::npos);
  EXPECT_NE(
      config_error(
          R"({"kind":"contract","target":"http://127.0.0.1:1/","server":{"run":"x","ready_url":"http://127.0.0.1:1/","ready_timeout_s":0}})")
          .find("--check.server.ready_timeout_s: must be a positive number"),
      std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"contract"})").find("missing 'target'"), std::string::npos);
}

TEST(VisualCheckConfig, ParsesAVisualCheckWithDefaults) {
  CheckSpec c = parse_check_text(R"({"id":"chart","kind":"visual","target":"http://127.0.0.1:3000/chart.png"})");
  EXPECT_EQ(c.type, "visual");
  EXPECT_DOUBLE_EQ(c.tolerance, 0.1);
  EXPECT_DOUBLE_EQ(c.max_ratio, 0.001);
  EXPECT_TRUE(c.ignore_anti_aliasing);
  EXPECT_EQ(c.timeout_s, 60);
  CheckSpec s = parse_check_text(R"({"id":"page","kind":"visual","target":"file:///srv/page.html",
      "screenshot":["chromium","--headless","--screenshot={out}","{url}"],"record":"never"})");
  EXPECT_EQ(s.screenshot.size(), 4u);
  EXPECT_FALSE(s.record);
}

TEST(VisualCheckConfig, BadVisualObjectsNameTheField) {
  EXPECT_NE(config_error(R"({"kind":"visual","target":"http://127.0.0.1:1/c.png","tolerance":1.5})")
                .find("--check.tolerance: must be a number from 0 to 1, not 1.5"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"visual","target":"http://127.0.0.1:1/c.png","max_ratio":"low"})")
                .find("--check.max_ratio: must be a number from 0 to 1"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"visual","screenshot":["chromium","--screenshot"]})")
                .find("--check.screenshot: no {out} placeholder"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"visual"})").find("missing 'target' (a PNG URL, or give 'screenshot')"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"visual","target":"http://127.0.0.1:1/c.png","ignore_anti_aliasing":"yes"})")
                .find("--check.ignore_anti_aliasing: must be true or false"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"kind":"visual","target":"http://127.0.0.1:1/c.png","strict":true})")
                .find("unknown key 'strict'"),
            std::string::npos);
}

}  // namespace
}  // namespace phoenix::checks
