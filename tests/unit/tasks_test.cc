// The tasks file's fields (id, after, check), tasks.json, the order of
// tasks and one line per bad input.
#include <gtest/gtest.h>

#include <set>

#include "loop/acceptance.h"
#include "loop/tasks.h"
#include "test_util.h"
#include "util/error.h"
#include "util/json.h"

namespace phoenix::loop {
namespace {

using util::Json;

// The one line a bad tasks file gives, and that it is a configuration error.
std::string error_of(const std::string& text, const std::string& file = "TASKS.md") {
  try {
    parse_tasks(text, file);
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exit_code(), kExitConfig);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << text;
  return "";
}

TEST(Tasks, MarkdownFieldsAfterTheTitle) {
  auto t = parse_tasks(
      "# T\n- [ ] add the table — id: schema\n"
      "- [ ] export CSV \xE2\x80\x94 after: schema, t3 \xE2\x80\x94 check: ./scripts/check-export.sh --strict\n"
      "- [x] fix it -- see notes\n- [ ] run npm test -- --grep csv -- check: npm test -- --grep csv\n",
      "TASKS.md");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].title, "add the table");
  EXPECT_EQ(t[0].id(), "schema");
  EXPECT_FALSE(t[0].check);
  EXPECT_EQ(t[1].title, "export CSV");
  EXPECT_EQ(t[1].id(), "t2");
  EXPECT_EQ(t[1].after, (std::vector<std::string>{"schema", "t3"}));
  ASSERT_TRUE(t[1].check);
  EXPECT_EQ(t[1].check->id, "task:t2");
  EXPECT_EQ(t[1].check->argv, (std::vector<std::string>{"./scripts/check-export.sh", "--strict"}));
  // A separator counts only before a field name: prose and "--" in commands stay.
  EXPECT_EQ(t[2].title, "fix it -- see notes");
  EXPECT_TRUE(t[2].done);
  EXPECT_EQ(t[3].title, "run npm test -- --grep csv");
  EXPECT_EQ(t[3].check->argv, (std::vector<std::string>{"npm", "test", "--", "--grep", "csv"}));
}

TEST(Tasks, BadMarkdownNamesFileLineAndField) {
  EXPECT_EQ(error_of("- [ ] a — chek: true\n"), "TASKS.md:1: unknown field 'chek' (did you mean 'check'?)");
  EXPECT_EQ(error_of("x\n- [ ] a — id: s\n- [ ] b — after: shema\n"), "TASKS.md:3: after: no task with id 'shema'");
  EXPECT_EQ(error_of("- [ ] a — id: s\n- [ ] b — id: s\n"), "TASKS.md:2: id: 's' is also the id of the task on line 1");
  EXPECT_EQ(error_of("- [ ] a — id: a b\n"),
            "TASKS.md:1: id: 'a b' may contain only letters, digits, '.', '_' and '-'");
  EXPECT_EQ(error_of("- [ ] a — check: 'open\n"), "TASKS.md:1: check: unterminated ' in command: 'open");
  EXPECT_EQ(error_of("- [ ] a — after: t2\n- [ ] b — after: t1\n"), "TASKS.md:1: after: a cycle: t1 -> t2 -> t1");
  EXPECT_EQ(error_of("- [ ] a — id: x — id: y\n"), "TASKS.md:1: id: given twice");
}

TEST(Tasks, JsonFormTicksInPlace) {
  const std::string text =
      "{\n  // the night's work\n  \"tasks\": [\n    {\"id\": \"schema\", \"title\": \"add the table\"},\n"
      "    {\"title\": \"export CSV\", \"after\": [\"schema\"], \"done\": false,\n"
      "     \"check\": {\"kind\": \"regex_in_file\", \"target\": \"out.csv\", \"pattern\": \"id,total\", \"expect\": "
      "\"present\"}}\n  ]\n}\n";
  auto t = parse_tasks(text, "tasks.json");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].id(), "t2");
  EXPECT_EQ(t[1].line, 4u);
  EXPECT_EQ(t[1].check->kind, checks::Kind::kRegexInFile);
  EXPECT_EQ(t[1].check->id, "task:t2");
  std::string once = tick_task(text, t[0], "tasks.json");
  std::string twice = tick_task(once, parse_tasks(once, "tasks.json")[1], "tasks.json");
  auto after = parse_tasks(twice, "tasks.json");
  EXPECT_TRUE(after[0].done);
  EXPECT_TRUE(after[1].done);
  EXPECT_NE(twice.find("// the night's work"), std::string::npos) << "comments and layout stay: " << twice;
  EXPECT_EQ(tick_task(twice, after[1], "tasks.json"), twice);
}

TEST(Tasks, BadJsonNamesFileLineAndField) {
  EXPECT_EQ(error_of("{\"tasks\": [\n {\"title\": \"a\",\n  \"chek\": \"true\"}]}", "tasks.json"),
            "tasks.json:3: tasks[0].chek: unknown key (did you mean 'check'?)");
  EXPECT_EQ(error_of("{\"tasks\": [{\"title\": \"a\"},\n {\"title\": \"b\", \"after\": [\"t9\"]}]}", "tasks.json"),
            "tasks.json:2: tasks[1].after: no task with id 't9' (did you mean 't1'?)");
  EXPECT_EQ(error_of("{\"tasks\": [{\"title\": \"\"}]}", "tasks.json"),
            "tasks.json:1: tasks[0].title: must be a non-empty string");
  EXPECT_EQ(error_of("{\"tasks\": [{\"title\": \"a\", \"check\": 3}]}", "tasks.json"),
            "tasks.json:1: tasks[0].check: must be a command, an argv array or a check object");
}

TEST(Tasks, SchemaListsExactlyTheKeysTheParserTakes) {
  Json schema = Json::parse(test::read(PHOENIX_SOURCE_DIR "/templates/tasks.schema.json"));
  Json task = {{"id", "a"}, {"title", "t"}, {"done", false}, {"after", Json::array()}, {"check", "true"}};
  std::set<std::string> in_schema, taken;
  for (auto& [k, v] : schema["properties"]["tasks"]["items"]["properties"].items()) in_schema.insert(k);
  for (auto& [k, v] : task.items()) taken.insert(k);
  EXPECT_EQ(in_schema, taken);
  EXPECT_EQ(parse_tasks(Json{{"$schema", "x"}, {"tasks", {task}}}.dump(), "tasks.json").size(), 1u);
  task["priority"] = 1;
  EXPECT_THROW(parse_tasks(Json{{"tasks", {task}}}.dump(), "tasks.json"), ConfigError);
}

TEST(Tasks, OrderFollowsAfterAndSkipsBlockTheirFollowers) {
  auto t = parse_tasks("- [ ] b — after: a\n- [ ] a — id: a\n- [ ] c — after: t1\n- [ ] d\n", "TASKS.md");
  EXPECT_EQ(next_ready(t, {})->id(), "a");
  t[1].done = true;
  EXPECT_EQ(next_ready(t, {})->id(), "t1");
  t[1].done = false;
  // a skipped: b comes after it, c after b; d is free.
  EXPECT_EQ(next_ready(t, {1})->id(), "t4");
  EXPECT_EQ(blocked_by_skipped(t, {1}), (std::vector<int>{0, 2}));
}

TEST(Tasks, AcceptanceCheckJoinsTheConfigAndScriptsArePinned) {
  test::ScopedTempDir tmp;
  test::write(tmp.path(), "scripts/ok.sh", "exit 0\n");
  test::write(tmp.path(), "TASKS.md", "- [ ] a — check: ./scripts/ok.sh --fast\n");
  auto t = parse_tasks(test::read(tmp / "TASKS.md"), "TASKS.md");
  config::Config cfg = config::parse(R"({"checks": [{"id": "unit", "kind": "command_exit", "target": "true"}]})", "p");
  EXPECT_EQ(with_acceptance(cfg, &t[0]).check_ids(), (std::vector<std::string>{"unit", "task:t1"}));
  EXPECT_EQ(with_acceptance(cfg, nullptr).check_ids(), (std::vector<std::string>{"unit"}));
  std::vector<std::string> pinned = acceptance_scripts(t[0], tmp.path());
  EXPECT_EQ(pinned, (std::vector<std::string>{"scripts/ok.sh"}));
  pinned.push_back("TASKS.md");
  PinnedFiles pins(tmp.path(), pinned);
  test::write(tmp.path(), "scripts/ok.sh", "exit 0 # rewritten\n");
  test::write(tmp.path(), "TASKS.md", "- [x] a\n");
  EXPECT_EQ(pins.restore(), pinned);
  EXPECT_EQ(test::read(tmp / "scripts/ok.sh"), "exit 0\n");
  EXPECT_TRUE(pins.restore().empty());
}

}  // namespace
}  // namespace phoenix::loop
