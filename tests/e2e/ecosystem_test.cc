// End-to-end: Phoenix among the tools people already use. Man pages and
// shell completion against --help, `phoenix doctor`, the hook managers
// (lefthook and husky run for real when scripts/deps.sh installed them,
// pre-commit's entry run as pre-commit would), the GitHub Action and the
// CI templates, and the output conventions (colour, TTY progress, --quiet,
// "did you mean").
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>

#include "test_util.h"
#include "layout/layout.h"
#include "gitx/repo.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

const std::string kSource = PHOENIX_SOURCE_DIR;
const std::string kTestTools = "/opt/phoenix-test-tools";

std::string build_dir() { return fs::path(phoenix_bin()).parent_path().string(); }
std::string path_with_phoenix(const std::string& extra = "") {
  return (extra.empty() ? "" : extra + ":") + build_dir() + ":" +
         std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
}
std::string loop_bin() {
#ifdef PHOENIX_LOOP_BIN
  return PHOENIX_LOOP_BIN;
#else
  return "";
#endif
}

// Every "--flag" a --help text names.
std::set<std::string> flags_in(const std::string& help) {
  std::set<std::string> out;
  std::regex re(R"((^|[\s,\[])(--[a-z][a-z0-9-]*))");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), re); it != std::sregex_iterator(); ++it)
    out.insert((*it)[2].str());
  return out;
}

// The command names `phoenix --help` lists.
std::vector<std::string> help_commands() {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& l : util::split_lines(run_phoenix("", {"--help"}).out)) {
    if (l == "commands:") {
      in = true;
      continue;
    }
    if (in && l.empty()) break;
    if (in) out.push_back(util::split_words(l)[0]);
  }
  return out;
}

std::string roff_flag(const std::string& f) { return std::regex_replace(f, std::regex("-"), "\\-"); }

// ---------------------------------------------------------------------------
// Man pages.

TEST(EcosystemMan, BuiltPagesAreWhatTheBinariesPrintNow) {
  EXPECT_EQ(read(build_dir() + "/man/phoenix.1"), run_phoenix("", {"--help-man"}).out);
  EXPECT_EQ(read(build_dir() + "/man/phoenix.json.5"), run_phoenix("", {"--help-man", "phoenix.json"}).out);
  if (!loop_bin().empty()) EXPECT_EQ(read(build_dir() + "/man/phoenix-loop.1"), run({loop_bin(), "--help-man"}).output);
  auto bad = run_phoenix("", {"--help-man", "nosuch"});
  EXPECT_EQ(bad.code, 64) << bad.out;
}

TEST(EcosystemMan, PhoenixPageHasEveryCommandAndEveryFlagOfItsHelp) {
  std::string page = read(build_dir() + "/man/phoenix.1");
  std::vector<std::string> cmds = help_commands();
  ASSERT_GE(cmds.size(), 10u);
  for (const auto& c : cmds) {
    EXPECT_NE(page.find(".SS " + roff_flag(c) + "\n"), std::string::npos) << c;
    auto h = run_phoenix("", {c, "--help"});
    ASSERT_EQ(h.code, 0) << c << h.out;
    // The synopsis line of --help is in the page.
    std::string synopsis = util::split_lines(h.out)[0].substr(std::string("usage: phoenix ").size());
    EXPECT_NE(page.find(std::regex_replace(synopsis, std::regex("-"), "\\-")), std::string::npos) << synopsis;
    for (const auto& f : flags_in(h.out))
      EXPECT_NE(page.find("\\fB" + roff_flag(f) + "\\fR"), std::string::npos) << c << " " << f;
  }
  for (const char* section :
       {".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS", ".SH EXIT STATUS", ".SH ENVIRONMENT", "NO_COLOR"})
    EXPECT_NE(page.find(section), std::string::npos) << section;
}

TEST(EcosystemMan, LoopPageHasEveryFlagOfItsHelpAndItsExitCodes) {
  if (loop_bin().empty()) GTEST_SKIP() << "phoenix-loop is not built";
  std::string page = read(build_dir() + "/man/phoenix-loop.1");
  auto h = run({loop_bin(), "--help"});
  ASSERT_EQ(h.exit_code, 0) << h.output;
  auto flags = flags_in(h.output);
  EXPECT_TRUE(flags.count("--tasks") && flags.count("--until"));
  for (const auto& f : flags) EXPECT_NE(page.find("\\fB" + roff_flag(f) + "\\fR"), std::string::npos) << f;
  size_t exit = page.find(".SH EXIT STATUS");
  ASSERT_NE(exit, std::string::npos);
  EXPECT_NE(page.find("escalated", exit), std::string::npos);
}

void schema_paths(const Json& props, const std::string& prefix, std::vector<std::string>& out) {
  for (auto it = props.begin(); it != props.end(); ++it) {
    if (it.value().is_boolean()) continue;
    out.push_back(prefix + it.key());
    if (it.value().contains("properties")) schema_paths(it.value()["properties"], prefix + it.key() + ".", out);
    if (it.value().contains("oneOf"))
      for (const auto& o : it.value()["oneOf"])
        if (o.contains("properties")) schema_paths(o["properties"], prefix + it.key() + ".", out);
  }
}

TEST(EcosystemMan, ConfigPageHasEveryKeyOfTheSchema) {
  std::string page = read(build_dir() + "/man/phoenix.json.5");
  Json schema = Json::parse(read(kSource + "/templates/phoenix.schema.json"));
  std::vector<std::string> paths;
  schema_paths(schema["properties"], "", paths);
  schema_paths(schema["$defs"]["check"]["properties"], "", paths);
  for (const auto& branch : schema["$defs"]["check"]["allOf"]) schema_paths(branch["then"]["properties"], "", paths);
  ASSERT_GT(paths.size(), 30u);
  for (const auto& p : paths) EXPECT_NE(page.find("\\fB" + roff_flag(p) + "\\fR"), std::string::npos) << p;
  EXPECT_NE(page.find(".TH PHOENIX.JSON 5"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Completion.

class EcosystemCompletion : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    write(repo, "phoenix.json", R"({ "checks": [
      { "id": "unit", "kind": "command_exit", "target": ["true"] },
      { "id": "lint", "kind": "command_exit", "target": ["true"] },
      { "id": "units-slow", "kind": "command_exit", "target": ["true"] } ] })");
  }
  // Runs the real bash completion function on `line` (the cursor at its end).
  std::vector<std::string> complete(const std::string& line) {
    std::vector<std::string> words = util::split_words(line);
    if (line.empty() || line.back() == ' ') words.push_back("");
    std::string array;
    for (const auto& w : words) array += " '" + w + "'";
    std::string fn = words[0] == "phoenix-loop" ? "_phoenix_loop" : "_phoenix";
    auto r = run({"bash", "--norc", "--noprofile", "-c",
                  "source \"$1\"; COMP_WORDS=(" + array + "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); " + fn +
                      "; printf '%s\\n' \"${COMPREPLY[@]}\"",
                  "bash", kSource + "/completions/phoenix.bash"},
                 repo, {{"PATH", path_with_phoenix()}});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> out;
    for (const auto& l : util::split_lines(r.output))
      if (!l.empty()) out.push_back(l);
    std::sort(out.begin(), out.end());
    return out;
  }
  using V = std::vector<std::string>;
  ScopedTempDir tmp;
  std::string repo;
};

TEST_F(EcosystemCompletion, CommandsAndSubcommands) {
  EXPECT_EQ(complete("phoenix se"), V({"sense"}));
  EXPECT_EQ(complete("phoenix re"), V({"recover", "report"}));
  EXPECT_EQ(complete("phoenix do"), V({"doctor"}));
  EXPECT_EQ(complete("phoenix hook "), V({"install", "run", "uninstall"}));
  EXPECT_EQ(complete("phoenix hook run "), V({"pre-push", "stop"}));
  EXPECT_EQ(complete("phoenix hook install --agent "), V({"claude", "codex", "gemini"}));
  EXPECT_EQ(complete("phoenix journal "), V({"flaky", "pull", "push", "stats"}));
  auto all = complete("phoenix ");
  for (const auto& c : help_commands()) EXPECT_TRUE(std::count(all.begin(), all.end(), c)) << c;
  EXPECT_FALSE(std::count(all.begin(), all.end(), "__complete"));
}

TEST_F(EcosystemCompletion, FlagsComeFromEachCommandsHelp) {
  EXPECT_EQ(complete("phoenix run --dr"), V({"--dry-run"}));
  EXPECT_EQ(complete("phoenix doctor --j"), V({"--json"}));
  for (const auto& c : help_commands()) {
    auto got = complete("phoenix " + c + " --");
    for (const auto& f : flags_in(run_phoenix("", {c, "--help"}).out))
      EXPECT_TRUE(std::count(got.begin(), got.end(), f)) << c << " " << f;
  }
  if (!loop_bin().empty()) {
    EXPECT_EQ(complete("phoenix-loop --max-i"), V({"--max-iterations"}));
    EXPECT_EQ(complete("phoenix-loop --max-"), V({"--max-cost", "--max-hours", "--max-iterations"}));
  }
}

TEST_F(EcosystemCompletion, CheckIdsAreReadFromPhoenixJsonAtCompletionTime) {
  EXPECT_EQ(complete("phoenix sense u"), V({"unit", "units-slow"}));
  EXPECT_EQ(complete("phoenix run --only "), V({"lint", "unit", "units-slow"}));
  EXPECT_EQ(complete("phoenix run --only unit,l"), V({"unit,lint"}));
  EXPECT_EQ(complete("phoenix snapshot out.txt --check l"), V({"lint"}));
  // A check added to phoenix.json is offered at once.
  write(repo, "phoenix.json", R"({ "checks": [{ "id": "e2e-login", "kind": "command_exit", "target": ["true"] }] })");
  EXPECT_EQ(complete("phoenix sense e"), V({"e2e-login"}));
  // A broken phoenix.json completes nothing and prints no error.
  write(repo, "phoenix.json", "{ nope");
  auto r = run({phoenix_bin(), "__complete", "sense", ""}, repo);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "");
}

TEST(EcosystemZsh, CompletionUsesTheSameSource) {
  std::string z = read(kSource + "/completions/_phoenix");
  EXPECT_TRUE(util::starts_with(z, "#compdef phoenix phoenix-loop\n"));
  EXPECT_NE(z.find("__complete"), std::string::npos);
  if (util::find_executable("zsh").empty()) GTEST_SKIP() << "zsh is not installed: only the file's shape was checked";
  auto n = run({"zsh", "-n", kSource + "/completions/_phoenix"});
  EXPECT_EQ(n.exit_code, 0) << n.output;
}

// ---------------------------------------------------------------------------
// phoenix doctor.

class EcosystemDoctor : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    write(repo, ".gitignore", ".phoenix/\n");
    write(repo, "phoenix.json", R"({ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["true"] }],
                                     "fixers": ["bisect"], "hook": { "mode": "verify" } })");
    commit_all(repo, "initial");
    fs::create_directories(tmp / "bin");
  }
  Json doctor(int want_code, const std::string& dir = "") {
    auto r =
        run({phoenix_bin(), "doctor", "--json"}, dir.empty() ? repo : dir, {{"PATH", path_with_phoenix(tmp / "bin")}});
    EXPECT_EQ(r.exit_code, want_code) << r.output;
    size_t brace = r.output.find('{');
    if (brace == std::string::npos) {
      ADD_FAILURE() << r.output;
      return Json::object();
    }
    return Json::parse(r.output.substr(brace));
  }
  static Json item(const Json& j, const std::string& name) {
    for (const auto& i : j["items"])
      if (i["name"] == name) return i;
    return Json();
  }
  void fake_cli(const std::string& name) {
    write(tmp / "bin", name, "#!/bin/sh\necho fake\n");
    fs::permissions(tmp / ("bin/" + name), fs::perms::owner_all);
  }
  ScopedTempDir tmp;
  std::string repo;
};

TEST_F(EcosystemDoctor, AllGreenWhenTheHookIsInstalledAndEveryProgramIsThere) {
  ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  Json j = doctor(0);
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(item(j, "hook")["status"], "ok");
  EXPECT_EQ(item(j, "hook")["data"]["binary"], fs::canonical(phoenix_bin()).string());
  EXPECT_EQ(item(j, "repository")["data"]["hooks_dir"], fs::canonical(repo).string() + "/.git/hooks");
  EXPECT_TRUE(util::starts_with(item(j, "git")["detail"].get<std::string>(), "git version "));
  EXPECT_FALSE(item(j, "libgit2")["data"]["version"].get<std::string>().empty());
  EXPECT_EQ(item(j, "check unit")["status"], "ok");
  EXPECT_EQ(item(j, "journal")["status"], "ok");
  EXPECT_TRUE(item(j, "sandbox")["data"]["overlay"].is_boolean());
  // The text form says the same on one screen.
  auto t = run({phoenix_bin(), "doctor"}, repo, {{"PATH", path_with_phoenix()}, {"NO_COLOR", "1"}});
  EXPECT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("ok    hook"), std::string::npos) << t.output;
  EXPECT_EQ(t.output.find("\033["), std::string::npos);
}

TEST_F(EcosystemDoctor, TheHookTheConfigAsksForMustBeInstalledAndItsBinaryMustExist) {
  Json j = doctor(1);
  EXPECT_EQ(item(j, "hook")["status"], "fail");
  EXPECT_EQ(item(j, "hook")["data"]["installed"], false);
  ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  std::string hook = repo + "/.git/hooks/pre-push";
  std::string shim = read(hook);
  std::string self = fs::canonical(phoenix_bin()).string();
  write(repo, ".git/hooks/pre-push", shim.replace(shim.find(self), self.size(), tmp / "gone/phoenix"));
  j = doctor(1);
  EXPECT_EQ(item(j, "hook")["status"], "fail");
  EXPECT_NE(item(j, "hook")["detail"].get<std::string>().find("gone"), std::string::npos);
  // Without a "hook" section, a missing hook is only a warning.
  write(repo, "phoenix.json",
        R"({ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["true"] }], "fixers": ["bisect"] })");
  fs::remove(hook);
  j = doctor(0);
  EXPECT_EQ(item(j, "hook")["status"], "warn");
}

// core.hooksPath moved to a folder whose pre-push does not call Phoenix
// (what a project's `prepare` script did in a tree sharing the config):
// git no longer runs Phoenix's hook, and doctor says so loudly.
TEST_F(EcosystemDoctor, AForeignCoreHooksPathFailsLoudly) {
  ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  const std::string foreign = tmp / "foreign-hooks";
  write(foreign, "pre-push", "#!/bin/sh\nexit 0\n");
  fs::permissions(foreign + "/pre-push", fs::perms::owner_all);
  git(repo, {"config", "core.hooksPath", foreign});
  Json j = doctor(1);
  const Json h = item(j, "hook");
  EXPECT_EQ(h["status"], "fail") << j.dump();
  EXPECT_EQ(h["data"]["calls_phoenix"], false);
  const std::string detail = h["detail"].get<std::string>();
  EXPECT_NE(detail.find("git runs hooks from " + foreign + " (core.hooksPath), which does not call Phoenix: pushes "
                        "are not checked"),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("is no longer run"), std::string::npos) << detail;
  auto t = run({phoenix_bin(), "doctor"}, repo, {{"PATH", path_with_phoenix()}, {"NO_COLOR", "1"}});
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_NE(t.output.find("which does not call Phoenix: pushes are not checked"), std::string::npos) << t.output;

  // A foreign folder whose hook calls Phoenix is fine.
  write(foreign, "pre-push", "#!/bin/sh\nexec phoenix hook run pre-push \"$@\"\n");
  j = doctor(0);
  EXPECT_EQ(item(j, "hook")["data"]["calls_phoenix"], true) << j.dump();
  EXPECT_NE(item(j, "hook")["status"], "fail") << j.dump();
  // And so is Phoenix's hook installed into that folder.
  write(foreign, "pre-push", "#!/bin/sh\nexit 0\n");
  ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  j = doctor(0);
  EXPECT_EQ(item(j, "hook")["status"], "ok") << j.dump();
}

// Repositories hit before the guard existed: core.hooksPath still points
// into one of Phoenix's trees (init's fresh tree's node_modules/husky).
TEST_F(EcosystemDoctor, ACoreHooksPathIntoPhoenixsOwnTreesIsNamed) {
  const std::string trees = layout::trees_root(gitx::Repo::open(repo));
  const std::string husky = trees + "/worktrees/init/node_modules/husky";
  write(husky, "pre-push", "#!/bin/sh\nexit 0\n");
  fs::permissions(husky + "/pre-push", fs::perms::owner_all);
  git(repo, {"config", "core.hooksPath", husky});
  Json j = doctor(1);
  const Json h = item(j, "hook");
  EXPECT_EQ(h["status"], "fail") << j.dump();
  EXPECT_EQ(h["data"]["into_phoenix_trees"], true);
  EXPECT_NE(h["detail"].get<std::string>().find("is inside a tree of Phoenix's"), std::string::npos) << j.dump();
  fs::remove_all(trees);
}

TEST_F(EcosystemDoctor, AgentCLIsOnPathAndTheConfiguredHarness) {
  ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  write(repo, "phoenix.json", R"({ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["true"] }],
                                   "harness": "aider", "fixers": ["harness"] })");
  fake_cli("codex");
  Json j = doctor(1);  // aider is configured but not installed
  EXPECT_EQ(item(j, "harness")["status"], "fail");
  bool codex = false;
  Json agents = item(j, "agents");
  for (const auto& a : agents["data"]["found"])
    if (a["name"] == "codex") codex = a["preset"] == "codex" && a["path"] == tmp / "bin/codex";
  EXPECT_TRUE(codex) << j.dump();
  fake_cli("aider");
  j = doctor(0);
  EXPECT_EQ(item(j, "harness")["status"], "ok");
  EXPECT_EQ(item(j, "harness")["data"]["path"], tmp / "bin/aider");
}

TEST_F(EcosystemDoctor, MissingProgramsConfigErrorsBrokenJournalAndNoRepository) {
  ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  write(repo, "phoenix.json",
        R"({ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["no-such-test-runner", "-v"] }],
                                   "fixers": ["bisect"] })");
  Json j = doctor(1);
  EXPECT_EQ(item(j, "check unit")["status"], "fail");
  EXPECT_NE(item(j, "check unit")["detail"].get<std::string>().find("no-such-test-runner"), std::string::npos);

  write(repo, "phoenix.json", R"({ "checkz": [] })");
  j = doctor(1);
  EXPECT_EQ(item(j, "config")["status"], "fail");
  EXPECT_NE(item(j, "config")["detail"].get<std::string>().find("checkz"), std::string::npos) << j.dump();

  write(repo, "phoenix.json",
        R"({ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["true"] }], "fixers": ["bisect"] })");
  write(repo, ".phoenix/journal.sqlite", std::string(4096, 'x'));
  j = doctor(1);
  EXPECT_EQ(item(j, "journal")["status"], "fail");

  fs::remove(repo + "/phoenix.json");
  fs::remove(repo + "/.phoenix/journal.sqlite");
  j = doctor(1);
  EXPECT_NE(item(j, "config")["detail"].get<std::string>().find("phoenix init"), std::string::npos);

  fs::create_directories(tmp / "plain");
  j = doctor(1, tmp / "plain");
  EXPECT_EQ(item(j, "repository")["status"], "fail");
}

// ---------------------------------------------------------------------------
// Hook managers: the snippets of docs/hook.md, run by the real tools.

// The fenced block of `lang` that follows `marker` in docs/hook.md.
std::string doc_snippet(const std::string& marker, const std::string& lang) {
  std::string doc = read(kSource + "/docs/hook.md");
  size_t at = doc.find(marker);
  EXPECT_NE(at, std::string::npos) << marker;
  size_t open = doc.find("```" + lang + "\n", at);
  size_t body = open + lang.size() + 4;
  return doc.substr(body, doc.find("```", body) - body);
}

class EcosystemHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    remote = tmp / "remote.git";
    run({"git", "init", "-q", "--bare", remote});
    repo = init_repo(tmp / "repo");
    write(repo, "check.sh", "#!/bin/sh\ngrep -q green state || { echo \"FAIL state: $(cat state)\"; exit 1; }\n");
    fs::permissions(repo + "/check.sh", fs::perms::owner_all);
    write(repo, "state", "green\n");
    write(repo, ".gitignore", ".phoenix/\nnode_modules/\n");
    write(repo, "phoenix.json",
          R"({ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["./check.sh"] }] })");
    git(repo, {"remote", "add", "origin", remote});
  }
  util::ProcessResult push(const std::string& extra_path = "") {
    std::string branch = util::trim(git(repo, {"symbolic-ref", "--short", "HEAD"}));
    return run({"git", "push", "origin", branch}, repo, {{"PATH", path_with_phoenix(extra_path)}});
  }
  // Red is blocked with Phoenix's words; green goes through.
  void expect_red_blocked_then_green_pushed(const std::string& extra_path = "") {
    write(repo, "state", "red\n");
    std::string red = commit_all(repo, "red");
    auto r = push(extra_path);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("push blocked"), std::string::npos) << r.output;
    EXPECT_NE(run({"git", "-C", remote, "cat-file", "-e", red + "^{commit}"}).exit_code, 0)
        << "the red commit reached the remote";
    write(repo, "state", "green\n");
    std::string green = commit_all(repo, "green");
    auto g = push(extra_path);
    EXPECT_EQ(g.exit_code, 0) << g.output;
    EXPECT_NE(run({"git", "-C", remote, "branch", "--contains", green})
                  .output.find(util::trim(git(repo, {"symbolic-ref", "--short", "HEAD"}))),
              std::string::npos);
  }
  // husky 9, as `npx husky` sets it up in a package (core.hooksPath .husky/_).
  void install_husky() {
    std::string husky = kTestTools + "/node_modules/husky/bin.js";
    if (!fs::exists(husky)) GTEST_SKIP() << husky << " is not installed (scripts/deps.sh installs husky 9 from npm)";
    if (util::find_executable("node").empty()) GTEST_SKIP() << "node is not installed";
    write(repo, "package.json", R"({ "name": "demo", "private": true })");
    auto inst = run({"node", husky}, repo, {{"PATH", path_with_phoenix()}});
    ASSERT_EQ(inst.exit_code, 0) << inst.output;
  }
  ScopedTempDir tmp;
  std::string repo, remote;
};

TEST_F(EcosystemHooks, LefthookRunsTheDocumentedSnippet) {
  std::string lefthook = kTestTools + "/node_modules/.bin/lefthook";
  if (!fs::exists(lefthook))
    GTEST_SKIP() << lefthook << " is not installed (scripts/deps.sh installs lefthook 2.2.1 from npm)";
  auto v = run({lefthook, "version"});
  ASSERT_EQ(util::trim(v.output), "2.2.1") << v.output;
  write(repo, "lefthook.yml", doc_snippet("**lefthook**", "yaml"));
  commit_all(repo, "initial");
  std::string bin = kTestTools + "/node_modules/.bin";
  auto inst = run({lefthook, "install"}, repo, {{"PATH", path_with_phoenix(bin)}});
  ASSERT_EQ(inst.exit_code, 0) << inst.output;
  // `phoenix hook install` sees lefthook, and that its file calls Phoenix.
  auto ph = run({phoenix_bin(), "hook", "install", "--json"}, repo, {{"PATH", path_with_phoenix(bin)}});
  EXPECT_NE(ph.output.find("\"already delegated\""), std::string::npos) << ph.output;
  expect_red_blocked_then_green_pushed(bin);
}

TEST_F(EcosystemHooks, HuskyRunsTheDocumentedSnippet) {
  install_husky();
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_EQ(util::trim(git(repo, {"config", "core.hooksPath"})), ".husky/_");
  write(repo, ".husky/pre-push", doc_snippet("**husky**", "sh"));
  commit_all(repo, "initial");
  expect_red_blocked_then_green_pushed();
}

// What `phoenix hook install` prints to paste: the lines between the
// sentence that says where ("...:" and a blank line) and "then run".
std::string printed_snippet(const std::string& out) {
  const size_t from = out.find(":\n\n");
  const size_t to = out.find("\nthen run", from);
  const size_t end = to == std::string::npos ? out.find("\nNothing was written", from) : to;
  EXPECT_NE(from, std::string::npos) << out;
  EXPECT_NE(end, std::string::npos) << out;
  if (from == std::string::npos || end == std::string::npos) return "";
  return out.substr(from + 3, end - from - 3);
}

// A lefthook.yml with its own pre-push job: install prints the one entry
// for that job list, pasted as printed it works in real lefthook (a red
// push blocked, a green one through, the user's job still run), and
// uninstall names the line that still calls Phoenix.
TEST_F(EcosystemHooks, LefthookWithItsOwnPrePushJobTakesThePrintedEntry) {
  std::string lefthook = kTestTools + "/node_modules/.bin/lefthook";
  if (!fs::exists(lefthook))
    GTEST_SKIP() << lefthook << " is not installed (scripts/deps.sh installs lefthook 2.2.1 from npm)";
  const std::string mine = tmp / "mine.log";
  write(repo, "lefthook.yml",
        "pre-commit:\n  jobs:\n    - run: 'true'\npre-push:\n  jobs:\n    - name: mine\n      run: echo mine >> '" +
            mine + "'\n");
  std::string bin = kTestTools + "/node_modules/.bin";
  auto ph = run({phoenix_bin(), "hook", "install"}, repo, {{"PATH", path_with_phoenix(bin)}});
  ASSERT_EQ(ph.exit_code, 0) << ph.output;
  EXPECT_NE(ph.output.find("It has a pre-push: jobs: list already: add this entry to it"), std::string::npos)
      << ph.output;
  const std::string entry = printed_snippet(ph.output);
  EXPECT_EQ(entry.find("pre-push:"), std::string::npos) << "no second pre-push: key\n" << entry;
  write(repo, "lefthook.yml", read(repo + "/lefthook.yml") + entry);
  commit_all(repo, "initial");
  auto inst = run({lefthook, "install"}, repo, {{"PATH", path_with_phoenix(bin)}});
  ASSERT_EQ(inst.exit_code, 0) << inst.output;
  expect_red_blocked_then_green_pushed(bin);
  EXPECT_EQ(util::split_lines(read(mine)).size(), 2u) << "the user's own job ran on both pushes";
  auto again = run({phoenix_bin(), "hook", "install"}, repo, {{"PATH", path_with_phoenix(bin)}});
  EXPECT_NE(again.output.find("lefthook.yml calls Phoenix already: nothing to add"), std::string::npos)
      << again.output;
  auto un = run({phoenix_bin(), "hook", "uninstall"}, repo, {{"PATH", path_with_phoenix(bin)}});
  EXPECT_EQ(un.exit_code, 0) << un.output;
  EXPECT_EQ(un.output.find("nothing to do"), std::string::npos) << un.output;
  EXPECT_NE(un.output.find("lefthook.yml:9: run: phoenix hook run pre-push {1} {2}"), std::string::npos)
      << un.output;
}

// An existing .husky/pre-push gets the line to append; pasted as printed it
// works in real husky 9 after the user's own line; uninstall names it.
TEST_F(EcosystemHooks, HuskyWithItsOwnPrePushTakesThePrintedLine) {
  install_husky();
  if (IsSkipped() || HasFatalFailure()) return;
  const std::string mine = tmp / "mine.log";
  write(repo, ".husky/pre-push", "echo mine >> '" + mine + "'\n");
  auto ph = run({phoenix_bin(), "hook", "install"}, repo, {{"PATH", path_with_phoenix()}});
  ASSERT_EQ(ph.exit_code, 0) << ph.output;
  EXPECT_NE(ph.output.find("Append this line to .husky/pre-push"), std::string::npos) << ph.output;
  write(repo, ".husky/pre-push", read(repo + "/.husky/pre-push") + printed_snippet(ph.output));
  commit_all(repo, "initial");
  expect_red_blocked_then_green_pushed();
  EXPECT_EQ(util::split_lines(read(mine)).size(), 2u) << "the user's own line ran on both pushes";
  auto un = run({phoenix_bin(), "hook", "uninstall"}, repo, {{"PATH", path_with_phoenix()}});
  EXPECT_NE(un.output.find(".husky/pre-push:2: phoenix hook run pre-push \"$@\""), std::string::npos) << un.output;
}

// pre-commit runs a hook's entry with PRE_COMMIT_* variables instead of
// git's stdin lines; this runs .pre-commit-hooks.yaml's entry exactly so.
std::optional<Json> yaml_as_json(const std::string& file) {
  auto r = run({"python3", "-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))", file});
  if (r.exit_code != 0) return std::nullopt;
  return Json::parse(r.output);
}
bool have_python_yaml() { return run({"python3", "-c", "import yaml"}).exit_code == 0; }

TEST_F(EcosystemHooks, PreCommitHookEntryMeasuresThePushedCommit) {
  if (!have_python_yaml()) GTEST_SKIP() << "python3 with yaml is not installed (scripts/deps.sh installs python3-yaml)";
  auto hooks = yaml_as_json(kSource + "/.pre-commit-hooks.yaml");
  ASSERT_TRUE(hooks && hooks->is_array());
  const Json* pre_push = nullptr;
  for (const auto& h : *hooks) {
    for (const char* k : {"id", "name", "entry", "language"}) EXPECT_TRUE(h.contains(k) && h[k].is_string()) << k;
    EXPECT_EQ(h["language"], "system");
    EXPECT_EQ(h["pass_filenames"], false);
    if (h["id"] == "phoenix-pre-push") pre_push = &h;
  }
  ASSERT_NE(pre_push, nullptr);
  EXPECT_EQ((*pre_push)["stages"], Json::array({"pre-push"}));
  // pre-commit splits the entry with shlex, like this.
  auto argv_r = run({"python3", "-c", "import json, shlex, sys; print(json.dumps(shlex.split(sys.argv[1])))",
                     (*pre_push)["entry"].get<std::string>()});
  std::vector<std::string> argv = Json::parse(argv_r.output);
  commit_all(repo, "initial");
  auto run_entry = [&]() {
    std::string sha = util::trim(git(repo, {"rev-parse", "HEAD"}));
    std::string branch = "refs/heads/" + util::trim(git(repo, {"symbolic-ref", "--short", "HEAD"}));
    return run(argv, repo,
               {{"PATH", path_with_phoenix()},
                {"PRE_COMMIT_TO_REF", sha},
                {"PRE_COMMIT_FROM_REF", std::string(40, '0')},
                {"PRE_COMMIT_LOCAL_BRANCH", branch},
                {"PRE_COMMIT_REMOTE_BRANCH", branch},
                {"PRE_COMMIT_REMOTE_NAME", "origin"},
                {"PRE_COMMIT_REMOTE_URL", remote}});
  };
  auto g = run_entry();
  EXPECT_EQ(g.exit_code, 0) << g.output;
  EXPECT_NE(g.output.find("ok "), std::string::npos) << g.output;
  write(repo, "state", "red\n");
  commit_all(repo, "red");
  auto r = run_entry();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("push blocked"), std::string::npos) << r.output;
}

TEST(EcosystemPreCommit, RealToolWhenInstalled) {
  if (util::find_executable("pre-commit").empty())
    GTEST_SKIP() << "pre-commit is not installed: it comes from PyPI, which this machine cannot reach; "
                    "its hook entry is tested by EcosystemHooks.PreCommitHookEntryMeasuresThePushedCommit";
  auto v = run({"pre-commit", "validate-manifest", kSource + "/.pre-commit-hooks.yaml"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

// ---------------------------------------------------------------------------
// CI: action.yml and the templates.

// The command lines (as words) that start with phoenix / phoenix-loop in a
// shell text.
std::vector<std::vector<std::string>> phoenix_commands(const std::string& shell) {
  std::vector<std::vector<std::string>> out;
  std::string text = std::regex_replace(shell, std::regex(R"(\\\n)"), " ");
  for (const auto& raw : util::split_lines(text)) {
    std::string line = util::trim(raw);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> words;
    std::string w;
    std::istringstream in(line);
    while (in >> w) words.push_back(w);
    for (size_t i = 0; i < words.size(); ++i) {
      std::string base = words[i].substr(words[i].rfind('/') == std::string::npos ? 0 : words[i].rfind('/') + 1);
      if (base != "phoenix" && base != "phoenix-loop") continue;
      std::vector<std::string> cmd{base};
      for (size_t k = i + 1; k < words.size(); ++k) {
        const std::string& t = words[k];
        if (t == "&&" || t == "||" || t == "|" || t == ";" || t[0] == '>' || t == "2>&1" || t[0] == '#') break;
        cmd.push_back(t);
        if (t.back() == ';') break;
      }
      out.push_back(cmd);
    }
  }
  return out;
}

// Every string under a key that holds shell: run, args, command, entry.
void shell_strings(const Json& j, std::vector<std::string>& out, bool shell = false) {
  if (j.is_string() && shell) out.push_back(j.get<std::string>());
  if (j.is_array())
    for (const auto& e : j) shell_strings(e, out, shell);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it)
      shell_strings(it.value(), out,
                    it.key() == "run" || it.key() == "args" || it.key() == "command" || it.key() == "entry");
}

// Without python3's yaml module: no tabs, indentation in steps of two.
void structural_yaml_check(const std::string& file) {
  int n = 0;
  for (const auto& l : util::split_lines(read(file))) {
    ++n;
    EXPECT_EQ(l.find('\t'), std::string::npos) << file << ":" << n << ": tab";
  }
}

TEST(EcosystemTemplates, ParseAndEveryPhoenixCommandLineExistsInHelp) {
  std::vector<std::string> files{kSource + "/action.yml", kSource + "/.pre-commit-hooks.yaml"};
  for (const char* dir : {"templates/github", "templates/k8s"})
    for (const auto& e : fs::directory_iterator(kSource + "/" + dir))
      if (e.path().extension() == ".yml" || e.path().extension() == ".yaml") files.push_back(e.path().string());
  ASSERT_GE(files.size(), 4u);
  if (!have_python_yaml()) {
    for (const auto& f : files) structural_yaml_check(f);
    GTEST_SKIP()
        << "python3 with yaml is not installed (scripts/deps.sh installs python3-yaml): structure checked only";
  }
  std::set<std::string> commands;
  for (const auto& c : help_commands()) commands.insert(c);
  auto loop_flags = loop_bin().empty() ? std::set<std::string>() : flags_in(run({loop_bin(), "--help"}).output);
  for (const auto& f : files) {
    auto doc = yaml_as_json(f);
    ASSERT_TRUE(doc.has_value()) << f << " does not parse as YAML";
    std::vector<std::string> shells;
    shell_strings(*doc, shells);
    int verified = 0;
    for (const auto& s : shells)
      for (const auto& cmd : phoenix_commands(s)) {
        std::set<std::string> known;
        size_t k = 1;
        if (cmd[0] == "phoenix") {
          while (k < cmd.size() && util::starts_with(cmd[k], "-")) k += cmd[k] == "-C" ? 2 : 1;
          if (k >= cmd.size()) {
            ++verified;  // phoenix --version
            continue;
          }
          if (cmd[k][0] == '"' || cmd[k][0] == '$') continue;  // a command held in a variable
          EXPECT_TRUE(commands.count(cmd[k])) << f << ": phoenix " << cmd[k] << " is not in phoenix --help";
          known = flags_in(run_phoenix("", {cmd[k], "--help"}).out);
        } else {
          if (loop_bin().empty()) continue;
          known = loop_flags;
        }
        known.insert("--version");
        known.insert("--help");
        for (; k < cmd.size(); ++k) {
          std::smatch m;
          if (std::regex_search(cmd[k], m, std::regex(R"(^(--[a-z][a-z0-9-]*))")))
            EXPECT_TRUE(known.count(m[1].str()))
                << f << ": " << util::join_argv(cmd) << ": " << m[1] << " is not in its --help";
        }
        ++verified;
      }
    EXPECT_GT(verified, 0) << f << " runs no phoenix command";
  }
}

TEST(EcosystemAction, HealsOnANewBranchAndNeverPushesTheUsersBranch) {
  if (!have_python_yaml()) GTEST_SKIP() << "python3 with yaml is not installed (scripts/deps.sh installs python3-yaml)";
  auto action = yaml_as_json(kSource + "/action.yml");
  ASSERT_TRUE(action.has_value());
  EXPECT_EQ((*action)["runs"]["using"], "composite");
  std::string script;
  for (const auto& s : (*action)["runs"]["steps"])
    if (s.value("id", "") == "run") script = s["run"];
  ASSERT_FALSE(script.empty());

  ScopedTempDir tmp;
  std::string remote = tmp / "remote.git";
  run({"git", "init", "-q", "--bare", remote});
  std::string repo = init_repo(tmp / "repo");
  write(repo, "src/conf.sh", "LIMIT=10\n");
  write(repo, "check.sh",
        "#!/bin/sh\n. ./src/conf.sh\n[ \"$LIMIT\" = 10 ] || { echo \"FAIL want 10, got $LIMIT\"; exit 1; }\n");
  fs::permissions(repo + "/check.sh", fs::perms::owner_all);
  write(repo, ".gitignore", ".phoenix/\n");
  write(repo, "phoenix.json",
        R"({ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["./check.sh"], "editable": ["src/**"] }],
                                   "fixers": ["bisect"] })");
  commit_all(repo, "initial");
  ASSERT_EQ(run_phoenix(repo, {"run"}).code, 0);  // known-good
  write(repo, "src/conf.sh", "LIMIT=11\n");
  std::string red = commit_all(repo, "tune the limit");
  std::string branch = util::trim(git(repo, {"symbolic-ref", "--short", "HEAD"}));
  git(repo, {"remote", "add", "origin", remote});
  git(repo, {"push", "-q", "origin", branch});
  write(tmp.path(), "step.sh", script);
  auto step = [&](const std::string& want_branch) {
    write(tmp.path(), "out", "");
    return run({"bash", tmp / "step.sh"}, repo,
               {{"PATH", path_with_phoenix()},
                {"GITHUB_OUTPUT", tmp / "out"},
                {"GITHUB_STEP_SUMMARY", tmp / "summary"},
                {"GITHUB_RUN_ID", "42"},
                {"ONLY", "unit"},
                {"FIXER", "bisect"},
                {"BRANCH", want_branch},
                {"PUSH", "true"},
                {"USER_BRANCH", branch}});
  };
  // Asked to commit to the branch under test: refused before anything runs.
  auto refused = step(branch);
  EXPECT_EQ(refused.exit_code, 64) << refused.output;
  EXPECT_EQ(util::trim(git(repo, {"rev-parse", "HEAD"})), red);

  auto r = step("");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::string out = read(tmp / "out");
  EXPECT_NE(out.find("exit_code=0"), std::string::npos) << out;
  EXPECT_NE(out.find("branch=phoenix/fix-42"), std::string::npos) << out;
  // The fix is on the new branch, on top of the red commit; the user's
  // branch on the remote is exactly as it was.
  std::string fix = util::trim(run({"git", "-C", remote, "rev-parse", "phoenix/fix-42"}).output);
  EXPECT_EQ(util::trim(run({"git", "-C", remote, "rev-parse", fix + "^"}).output), red);
  EXPECT_EQ(util::trim(run({"git", "-C", remote, "rev-parse", branch}).output), red);
  EXPECT_EQ(util::trim(run({"git", "-C", remote, "show", fix + ":src/conf.sh"}).output), "LIMIT=10");
}

// ---------------------------------------------------------------------------
// Output conventions.

class EcosystemOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    write(repo, "phoenix.json", R"({ "checks": [
      { "id": "unit", "kind": "command_exit", "target": ["true"] },
      { "id": "slow", "kind": "command_exit", "target": ["sleep", "1.6"] } ] })");
  }
  // Runs phoenix under a pseudo-terminal (util-linux `script`).
  util::ProcessResult tty(const std::string& args, std::vector<std::pair<std::string, std::string>> env = {}) {
    env.push_back({"TERM", "xterm"});
    return run({"script", "-qec", phoenix_bin() + " " + args, "/dev/null"}, repo, env);
  }
  ScopedTempDir tmp;
  std::string repo;
};

TEST_F(EcosystemOutput, ColourOnlyOnATtyNoColorWinsClicolorForceForces) {
  auto env_clean = std::vector<std::pair<std::string, std::string>>{{"NO_COLOR", ""}, {"CLICOLOR_FORCE", ""}};
  EXPECT_EQ(run_phoenix(repo, {"sense", "unit"}, 60, env_clean).out.find("\033["), std::string::npos);
  EXPECT_NE(run_phoenix(repo, {"sense", "unit"}, 60, {{"NO_COLOR", ""}, {"CLICOLOR_FORCE", "1"}}).out.find("\033[32m"),
            std::string::npos);
  EXPECT_EQ(run_phoenix(repo, {"sense", "unit"}, 60, {{"NO_COLOR", "1"}, {"CLICOLOR_FORCE", "1"}}).out.find("\033["),
            std::string::npos);
  if (util::find_executable("script").empty())
    GTEST_SKIP() << "script (util-linux) is not installed: no TTY to test with";
  auto t = tty("sense unit", env_clean);
  EXPECT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("\033[32m"), std::string::npos) << t.output;
  auto n = tty("sense unit", {{"NO_COLOR", "1"}});
  EXPECT_EQ(n.output.find("\033["), std::string::npos) << n.output;
}

TEST_F(EcosystemOutput, ProgressOfALongCheckOnlyOnATty) {
  auto piped = run_phoenix(repo, {"sense", "slow"});
  EXPECT_EQ(piped.code, 0) << piped.out;
  EXPECT_EQ(piped.out.find("sensing slow"), std::string::npos) << piped.out;
  if (util::find_executable("script").empty())
    GTEST_SKIP() << "script (util-linux) is not installed: no TTY to test with";
  auto t = tty("sense slow");
  EXPECT_EQ(t.exit_code, 0) << t.output;
  EXPECT_TRUE(std::regex_search(t.output, std::regex(R"(phoenix: sensing slow \d+\.\ds)"))) << t.output;
  // A short check draws nothing.
  EXPECT_EQ(tty("sense unit").output.find("sensing"), std::string::npos);
}

TEST_F(EcosystemOutput, QuietPrintsNothingAndTheExitCodeSpeaks) {
  auto q = run_phoenix(repo, {"sense", "unit", "--quiet"});
  EXPECT_EQ(q.code, 0);
  EXPECT_EQ(q.out, "");
  write(repo, "phoenix.json", R"({ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["false"] }] })");
  auto red = run_phoenix(repo, {"sense", "-q"});
  EXPECT_EQ(red.code, 1);
  EXPECT_EQ(red.out, "");
  // Errors still say what is wrong.
  auto bad = run_phoenix(repo, {"sense", "nope", "-q"});
  EXPECT_EQ(bad.code, 64);
  EXPECT_NE(bad.out.find("phoenix: error: "), std::string::npos);
  auto both = run_phoenix(repo, {"sense", "--quiet", "--json"});
  EXPECT_EQ(both.code, 64) << both.out;
}

TEST_F(EcosystemOutput, DidYouMeanForCommandsFlagsAndCheckIds) {
  auto c = run_phoenix(repo, {"snese"});
  EXPECT_EQ(c.code, 64);
  EXPECT_NE(c.out.find("did you mean 'sense'"), std::string::npos) << c.out;
  auto f = run_phoenix(repo, {"run", "--dry-rn"});
  EXPECT_EQ(f.code, 64);
  EXPECT_NE(f.out.find("did you mean --dry-run"), std::string::npos) << f.out;
  auto i = run_phoenix(repo, {"sense", "unti"});
  EXPECT_EQ(i.code, 64);
  EXPECT_NE(i.out.find("did you mean 'unit'"), std::string::npos) << i.out;
  auto o = run_phoenix(repo, {"run", "--only", "slwo", "--dry-run"});
  EXPECT_EQ(o.code, 64);
  EXPECT_NE(o.out.find("did you mean 'slow'"), std::string::npos) << o.out;
  auto d = run_phoenix(repo, {"doctr"});
  EXPECT_NE(d.out.find("did you mean 'doctor'"), std::string::npos) << d.out;
}

}  // namespace
}  // namespace phoenix::test
