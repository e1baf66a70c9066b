#include "config/config.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "util/error.h"

namespace phoenix::config {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse(text, "phoenix.json");
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exit_code(), 78);
    return e.what();
  }
  return "";
}

TEST(Config, ParsesTheDesignExampleWithComments) {
  Config c = parse(R"({
    // a comment
    "checks": [
      { "id": "unit", "kind": "command_exit", "target": ["ctest", "--test-dir", "build"], "expect": 0,
        "type": "unit", "timeout_s": 600, "editable": ["src/**"] },
      { "id": "lockfile", "kind": "file_sha256", "target": "deps.lock", "expect": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
      { "id": "no-debug", "kind": "regex_in_file", "target": "src/main.cpp", "pattern": "DEBUG_HACK", "expect": "absent" }
    ],
    "harness": "claude",
    "budgets": { "unit": 4 }, /* block comment */
    "session_cap": 10, "diff_cap": 200, "circuit_breaker": 3,
    "protected": ["tests/**"],
    "hook": { "mode": "heal", "checks": ["unit"] },
    "loop": { "tasks": "TASKS.md", "on_escalate": "stop", "max_iterations": 50, "iteration_timeout_s": 1800 }
  })",
                   "phoenix.json");
  ASSERT_EQ(c.checks.size(), 3u);
  EXPECT_EQ(c.checks[0].argv, (std::vector<std::string>{"ctest", "--test-dir", "build"}));
  EXPECT_EQ(c.budgets.at("unit"), 4);
  EXPECT_EQ(c.budgets.at("e2e"), 5);  // defaults kept
  EXPECT_EQ(c.harness.preset, "claude");
  EXPECT_EQ(c.hook.mode, config::HookMode::kHeal);
  EXPECT_EQ(c.origin.at("budgets"), "phoenix.json");
  EXPECT_EQ(c.origin.at("fixers"), "default");
}

TEST(Config, CommandStringIsSplitLikeAShellWithoutOne) {
  Config c = parse(R"({"checks":[{"id":"t","kind":"command_exit","target":"sh -c 'echo \"a b\"; exit 3' x"}]})", "p");
  EXPECT_EQ(c.checks[0].argv, (std::vector<std::string>{"sh", "-c", "echo \"a b\"; exit 3", "x"}));
}

TEST(Config, UnknownKeyNamesLineColAndSuggests) {
  std::string e = error_of(
      "{\n  \"checks\": [\n    {\"id\": \"u\", \"kind\": \"command_exit\",\n     \"tagret\": [\"true\"]}\n  ]\n}");
  EXPECT_NE(e.find("phoenix.json:4:6"), std::string::npos) << e;
  EXPECT_NE(e.find("checks[0].tagret"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'target'"), std::string::npos) << e;
}

TEST(Config, MalformedJsonNamesLineCol) {
  std::string e = error_of("{\n  \"checks\": [,]\n}");
  EXPECT_NE(e.find("phoenix.json:2:14"), std::string::npos) << e;
}

TEST(Config, BadInputsNameTheField) {
  EXPECT_NE(error_of(R"({"checks":[{"id":"u","kind":"shell","target":"x"}]})").find("unknown kind 'shell'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"checks":[{"id":"u","kind":"command_exit"}]})").find("missing 'target'"), std::string::npos);
  EXPECT_NE(error_of(R"({"checks":[{"id":"u","kind":"command_exit","target":"true","expect":"0"}]})")
                .find("checks[0].expect"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"checks":[{"id":"u","kind":"file_sha256","target":"f","expect":"abc"}]})").find("not 64 hex"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"checks":[{"id":"u","kind":"regex_in_file","target":"f","pattern":"(","expect":"absent"}]})")
                .find("invalid regular expression"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          R"({"checks":[{"id":"u","kind":"command_exit","target":"true"},{"id":"u","kind":"command_exit","target":"true"}]})")
          .find("duplicate check id"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"budgets":{"unti":3}})").find("did you mean 'unit'"), std::string::npos);
  EXPECT_NE(error_of(R"({"hook":{"mode":"heel"}})").find("did you mean 'heal'"), std::string::npos);
  EXPECT_NE(error_of(R"({"hook":{"checks":["nope"]}})").find("no check with id 'nope'"), std::string::npos);
  EXPECT_NE(error_of(R"({"checkz":[]})").find("did you mean 'checks'"), std::string::npos);
  EXPECT_NE(error_of(R"({"bisect":{"parallel":0}})").find("bisect.parallel: '0' must be a whole number from 1 to 64"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"bisect":{"paralel":2}})").find("did you mean 'parallel'"), std::string::npos);
  EXPECT_EQ(parse(R"({"bisect":{"parallel":3}})", "phoenix.json").bisect_parallel, 3);
  EXPECT_EQ(parse("{}", "phoenix.json").bisect_parallel, 0);  // 0: the cores, at most 4
  EXPECT_NE(error_of(R"([1,2])").find("JSON object"), std::string::npos);
}

// The fields of tests that bite (engine/bite.h): `tests` globs and
// `tests_must_bite`, each refused in one line naming the field when of the
// wrong type (exit 78, checked by error_of).
TEST(Config, TestsAndTestsMustBiteAreCheckedByType) {
  const std::string tests_string =
      error_of(R"({"checks":[{"id":"u","kind":"command_exit","target":"true","tests":"tests/**"}]})");
  EXPECT_NE(tests_string.find("checks[0].tests: must be an array of strings"), std::string::npos) << tests_string;
  EXPECT_EQ(tests_string.find('\n'), std::string::npos) << tests_string;
  const std::string tests_number =
      error_of(R"({"checks":[{"id":"u","kind":"command_exit","target":"true","tests":["tests/**",3]}]})");
  EXPECT_NE(tests_number.find("checks[0].tests[1]: must be a string"), std::string::npos) << tests_number;
  const std::string bite =
      error_of(R"({"checks":[{"id":"u","kind":"command_exit","target":"true","tests_must_bite":"yes"}]})");
  EXPECT_NE(bite.find("checks[0].tests_must_bite: must be true or false"), std::string::npos) << bite;

  Config c = parse(
      R"({"checks":[{"id":"u","kind":"command_exit","target":"true","tests":["spec/**"],"tests_must_bite":false},
                    {"id":"v","kind":"command_exit","target":"true"}]})",
      "phoenix.json");
  ASSERT_EQ(c.checks.size(), 2u);
  EXPECT_EQ(c.checks[0].tests, std::vector<std::string>{"spec/**"});
  ASSERT_TRUE(c.checks[0].tests_must_bite.has_value());
  EXPECT_FALSE(*c.checks[0].tests_must_bite);
  EXPECT_FALSE(c.checks[1].tests_must_bite.has_value());  // the caller's default: the loop's true, the hook's false
}

// loop.baseline and loop.on_escalate are read once, here, into their enums;
// each word reads back as itself, and a bad word is the one-line error
// naming the field (exit 78, checked by error_of).
TEST(Config, LoopWordsAreReadOnceIntoEnums) {
  const Config d = parse("{}", "phoenix.json");
  EXPECT_EQ(d.loop.baseline, Baseline::kHeal);
  EXPECT_EQ(d.loop.on_escalate, OnEscalate::kStop);
  const std::pair<Baseline, std::string> baselines[] = {
      {Baseline::kHeal, "heal"}, {Baseline::kIgnore, "ignore"}, {Baseline::kStop, "stop"}};
  for (const auto& [b, word] : baselines) {
    EXPECT_EQ(baseline_name(b), word);
    EXPECT_EQ(parse(R"({"loop":{"baseline":")" + word + "\"}}", "phoenix.json").loop.baseline, b) << word;
    EXPECT_EQ(util::Json(b), util::Json(word));
  }
  const std::pair<OnEscalate, std::string> escalates[] = {{OnEscalate::kStop, "stop"}, {OnEscalate::kSkip, "skip"}};
  for (const auto& [e, word] : escalates) {
    EXPECT_EQ(on_escalate_name(e), word);
    EXPECT_EQ(parse(R"({"loop":{"on_escalate":")" + word + "\"}}", "phoenix.json").loop.on_escalate, e) << word;
    EXPECT_EQ(util::Json(e), util::Json(word));
  }
}

TEST(Config, BadLoopWordsNameTheFieldAndTheWords) {
  std::string e = error_of(R"({"loop":{"baseline":"heel"}})");
  EXPECT_NE(e.find("loop.baseline: 'heel' is not one of heal|ignore|stop (did you mean 'heal'?)"), std::string::npos)
      << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  e = error_of(R"({"loop":{"on_escalate":"skp"}})");
  EXPECT_NE(e.find("loop.on_escalate: 'skp' is not one of stop|skip (did you mean 'skip'?)"), std::string::npos) << e;
  e = error_of(R"({"loop":{"on_escalate":"continue"}})");
  EXPECT_NE(e.find("loop.on_escalate: 'continue' is not one of stop|skip"), std::string::npos) << e;
  e = error_of(R"({"loop":{"baseline":true}})");
  EXPECT_NE(e.find("loop.baseline: must be one of heal|ignore|stop"), std::string::npos) << e;
  e = error_of(R"({"loop":{"on_escalate":1}})");
  EXPECT_NE(e.find("loop.on_escalate: must be one of stop|skip"), std::string::npos) << e;
}

}  // namespace
}  // namespace phoenix::config
