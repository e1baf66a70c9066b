// Phoenix's entry in an agent CLI's settings (hook/agent_config.h) and the
// byte-preserving JSON edits under it (util/json_edit.h): what a person had
// in the file is there byte for byte after install, and install then
// uninstall gives the file back as it was.
#include <gtest/gtest.h>

#include <filesystem>

#include "hook/agent_config.h"
#include "test_util.h"
#include "util/error.h"
#include "util/json.h"
#include "util/json_edit.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using OJson = nlohmann::ordered_json;

const OJson kGroup = OJson{{"hooks", OJson::array({OJson{{"type", "command"}, {"command", "x"}}})}};

TEST(JsonEdit, AppendIntoAnExistingArrayKeepsEveryOtherByte) {
  const std::string before =
      "{\n"
      "    // the team's hooks\n"
      "    \"permissions\": {\"allow\": [\"Bash(npm test)\"]},\n"
      "    \"hooks\": {\n"
      "        \"Stop\": [\n"
      "            {\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}\n"
      "        ]\n"
      "    }\n"
      "}\n";
  const std::string after = util::json_append(before, {"hooks", "Stop"}, kGroup);
  // Everything up to the end of the existing element is untouched, and so is the rest.
  const size_t end_of_theirs = before.find("}]}") + 3;
  EXPECT_EQ(after.substr(0, end_of_theirs), before.substr(0, end_of_theirs));
  EXPECT_EQ(after.substr(after.size() - 20), before.substr(before.size() - 20));
  // Indented like its neighbour, with the file's four-space unit.
  EXPECT_NE(after.find(",\n            {\n                \"hooks\": [\n"), std::string::npos) << after;
  const util::Json j = util::parse_json(after, "after");
  ASSERT_EQ(j["hooks"]["Stop"].size(), 2u);
  EXPECT_EQ(j["hooks"]["Stop"][1]["hooks"][0]["command"], "x");
  EXPECT_EQ(util::json_remove(after, {"hooks", "Stop"}, 1), before);
}

TEST(JsonEdit, MissingKeysAreAddedLastAndRemovedWithTheEntry) {
  for (const std::string before : {std::string("{\n  \"model\": \"opus\"\n}\n"), std::string("{}"),
                                   std::string("{\"model\": \"opus\", \"env\": {\"A\": \"1\"}}"),
                                   std::string("{\n  \"hooks\": {\n    \"PreToolUse\": []\n  }\n}\n")}) {
    const std::string after = util::json_append(before, {"hooks", "Stop"}, kGroup);
    const util::Json j = util::parse_json(after, "after");
    EXPECT_EQ(j["hooks"]["Stop"][0]["hooks"][0]["command"], "x") << after;
    EXPECT_EQ(util::json_remove(after, {"hooks", "Stop"}, 0), before) << after;
  }
}

TEST(JsonEdit, ReplaceAndFind) {
  const std::string text = "{\"a\": {\"b\": [1, {\"c\": true}]}, \"d\": \"x\"}";
  const auto span = util::json_find(text, {"a", "b"});
  ASSERT_TRUE(span);
  EXPECT_EQ(text.substr(span->begin, span->end - span->begin), "[1, {\"c\": true}]");
  EXPECT_FALSE(util::json_find(text, {"a", "z"}));
  EXPECT_EQ(util::json_elements(text, {"a", "b"}).size(), 2u);
  EXPECT_EQ(util::json_replace(text, *util::json_find(text, {"d"}), OJson("y")),
            "{\"a\": {\"b\": [1, {\"c\": true}]}, \"d\": \"y\"}");
  EXPECT_THROW(util::json_append(text, {"d", "e"}, kGroup), Error);
}

class AgentConfig : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string work() const { return tmp.path(); }
  std::string exclude() const { return tmp / "git-info-exclude"; }
};

TEST_F(AgentConfig, ClaudePersonalInstallMergesAndUninstallGivesTheFileBack) {
  const std::string theirs =
      "{\n"
      "  \"permissions\": {\n"
      "    \"allow\": [\"Bash(npm test:*)\", \"Read\"],\n"
      "    \"deny\": [\"WebFetch\"]\n"
      "  },\n"
      "  \"hooks\": {\n"
      "    \"PostToolUse\": [{\"matcher\": \"Edit\", \"hooks\": [{\"type\": \"command\", \"command\": \"prettier -w\"}]}]\n"
      "  },\n"
      "  \"env\": {\"FOO\": \"bar\"}\n"
      "}\n";
  write(work(), ".claude/settings.local.json", theirs);
  const std::string cmd = hook::agent_hook_command("/opt/my phoenix/bin/phoenix", hook::AgentCli::kClaude);
  EXPECT_EQ(cmd, "'/opt/my phoenix/bin/phoenix' hook run stop --agent claude");
  const hook::AgentInstall r = hook::install_agent_hook(work(), hook::AgentCli::kClaude, false, cmd, exclude(), false);
  EXPECT_EQ(r.action, "installed");
  const std::string after = read(work() + "/.claude/settings.local.json");
  const util::Json j = util::parse_json(after, "after");
  EXPECT_EQ(j["permissions"]["deny"][0], "WebFetch");
  EXPECT_EQ(j["hooks"]["PostToolUse"][0]["hooks"][0]["command"], "prettier -w");
  EXPECT_EQ(j["hooks"]["Stop"][0]["hooks"][0]["command"], cmd);
  EXPECT_EQ(j["hooks"]["Stop"][0]["hooks"][0]["timeout"], hook::kAgentHookTimeoutS);
  // Their bytes before the hooks object's last member are all still there.
  EXPECT_EQ(after.substr(0, theirs.find("]}]") + 3), theirs.substr(0, theirs.find("]}]") + 3));
  EXPECT_TRUE(r.excluded);
  EXPECT_NE(read(exclude()).find("/.claude/settings.local.json\n"), std::string::npos);

  // Idempotent; another binary updates the entry in place.
  EXPECT_EQ(hook::install_agent_hook(work(), hook::AgentCli::kClaude, false, cmd, exclude(), false).action,
            "unchanged");
  EXPECT_FALSE(hook::install_agent_hook(work(), hook::AgentCli::kClaude, false, cmd, exclude(), false).excluded);
  const std::string other = hook::agent_hook_command("/usr/bin/phoenix", hook::AgentCli::kClaude);
  EXPECT_EQ(hook::install_agent_hook(work(), hook::AgentCli::kClaude, false, other, exclude(), false).action,
            "updated");
  EXPECT_EQ(util::parse_json(read(work() + "/.claude/settings.local.json"), "x")["hooks"]["Stop"].size(), 1u);

  const auto states = hook::installed_agent_hooks(work());
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].program, "/usr/bin/phoenix");
  EXPECT_FALSE(states[0].shared);

  const hook::AgentUninstall u = hook::uninstall_agent_hook(work(), hook::AgentCli::kClaude);
  ASSERT_EQ(u.files.size(), 1u);
  EXPECT_TRUE(u.deleted.empty());
  EXPECT_EQ(read(work() + "/.claude/settings.local.json"), theirs);
  EXPECT_TRUE(hook::installed_agent_hooks(work()).empty());
}

TEST_F(AgentConfig, EachCliGetsItsOwnFileEventAndTimeoutUnit) {
  hook::install_agent_hook(work(), hook::AgentCli::kClaude, true, "phoenix hook run stop --agent claude", exclude(),
                           false);
  hook::install_agent_hook(work(), hook::AgentCli::kCodex, false, "phoenix hook run stop --agent codex", exclude(),
                           false);
  hook::install_agent_hook(work(), hook::AgentCli::kGemini, false, "phoenix hook run stop --agent gemini", exclude(),
                           false);
  const util::Json claude = util::parse_json(read(work() + "/.claude/settings.json"), "c");
  EXPECT_EQ(claude["hooks"]["Stop"][0]["hooks"][0]["timeout"], hook::kAgentHookTimeoutS);
  const util::Json codex = util::parse_json(read(work() + "/.codex/hooks.json"), "x");
  EXPECT_EQ(codex["hooks"]["Stop"][0]["hooks"][0]["command"], "phoenix hook run stop --agent codex");
  const util::Json gemini = util::parse_json(read(work() + "/.gemini/settings.json"), "g");
  EXPECT_EQ(gemini["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"], hook::kAgentHookTimeoutS * 1000);
  EXPECT_EQ(gemini["hooks"]["AfterAgent"][0]["hooks"][0]["name"], "phoenix");
  // A shared install is committed on purpose: nothing excluded for it.
  const std::string ex = read(exclude());
  EXPECT_EQ(ex.find("/.claude/settings.json"), std::string::npos);
  EXPECT_NE(ex.find("/.codex/hooks.json"), std::string::npos);
  EXPECT_NE(ex.find("/.gemini/settings.json"), std::string::npos);
  EXPECT_EQ(hook::installed_agent_hooks(work()).size(), 3u);
  // Files Phoenix made hold nothing else: uninstall removes them.
  for (hook::AgentCli cli : hook::agent_clis()) EXPECT_EQ(hook::uninstall_agent_hook(work(), cli).deleted.size(), 1u);
  EXPECT_FALSE(fs::exists(work() + "/.codex"));
}

TEST_F(AgentConfig, ASettingsFileThatDoesNotParseIsNamedAndNothingIsWritten) {
  const std::string broken = "{\n  \"permissions\": {\n    \"allow\": [\"Read\",]\n  }\n}\n";
  write(work(), ".claude/settings.local.json", broken);
  try {
    hook::install_agent_hook(work(), hook::AgentCli::kClaude, false, "p hook run stop --agent claude", exclude(),
                             false);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(work() + "/.claude/settings.local.json:3:"), std::string::npos) << what;
    EXPECT_EQ(e.exit_code(), kExitConfig);
  }
  EXPECT_EQ(read(work() + "/.claude/settings.local.json"), broken);
  EXPECT_FALSE(fs::exists(exclude()));
  EXPECT_THROW(hook::uninstall_agent_hook(work(), hook::AgentCli::kClaude), ConfigError);
}

TEST_F(AgentConfig, HooksOfAnotherTypeAreNamedWithTheirPlace) {
  const std::string odd = "{\n  \"hooks\": {\n    \"Stop\": {\"command\": \"x\"}\n  }\n}\n";
  write(work(), ".claude/settings.json", odd);
  try {
    hook::install_agent_hook(work(), hook::AgentCli::kClaude, true, "p hook run stop --agent claude", exclude(), false);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(work() + "/.claude/settings.json:3:5: hooks.Stop: must be an array"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read(work() + "/.claude/settings.json"), odd);
}

TEST(AgentCommand, GeminiNeverReadsAFailureToStartAsARefusal) {
  const std::string claude = hook::agent_hook_command("/p/phoenix", hook::AgentCli::kClaude);
  EXPECT_EQ(claude, "/p/phoenix hook run stop --agent claude");
  const std::string gemini = hook::agent_hook_command("/gone/phoenix", hook::AgentCli::kGemini);
  EXPECT_EQ(gemini.rfind("/gone/phoenix hook run stop --agent gemini", 0), 0u) << gemini;
  // As gemini runs it: a program that is not there is a warning (1), not a refusal (127).
  EXPECT_EQ(run({"sh", "-c", gemini}).exit_code, 1);
  ScopedTempDir tmp;
  for (const int code : {0, 2, 78}) {
    write(tmp.path(), "p", "#!/bin/sh\nexit " + std::to_string(code) + "\n");
    fs::permissions(tmp / "p", fs::perms::owner_all);
    const std::string cmd = hook::agent_hook_command(tmp / "p", hook::AgentCli::kGemini);
    EXPECT_EQ(run({"sh", "-c", cmd}).exit_code, code == 78 ? 1 : code) << cmd;
  }
}

TEST(AgentNames, ParseAndList) {
  EXPECT_EQ(hook::parse_agent("codex"), hook::AgentCli::kCodex);
  EXPECT_FALSE(hook::parse_agent("aider"));
  EXPECT_EQ(hook::agent_names(), "claude, codex, gemini");
  EXPECT_STREQ(hook::stop_event(hook::AgentCli::kGemini), "AfterAgent");
}

}  // namespace
}  // namespace phoenix::test
