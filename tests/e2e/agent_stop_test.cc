// Phoenix as the stop hook of an agent session (hook/agent_stop.h,
// docs/agents.md "Phoenix inside an agent session").
//
// AgentStopHook.*: `phoenix hook install|uninstall --agent` on a real
// repository, the user's settings kept byte for byte; bad input (a settings
// file that does not parse, an unknown --agent); and `phoenix hook run stop`
// fed the JSON a CLI sends: a red tree refused with the failing test, the
// same failure again let stop with the incident note, a tree measured green
// before served from the store, Phoenix's own failure never holding the
// session, the trace and `phoenix report`.
//
// AgentSessions/*: the real CLIs (claude, codex, gemini, installed by
// scripts/deps.sh) run headless against the suite's model server
// (tests/tools/model_server.cc, its stop.json script) with Phoenix's stop
// hook installed by `phoenix hook install --agent`: a model that says
// "done" with test_add failing is refused with the failing test, mends it
// and is let go green; a model that never mends it is let go after the
// budget with the note written; a session on a green tree is let go at once
// from the store. A CLI that is not installed skips its tests, saying so.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "model_server_client.h"
#include "test_util.h"
#include "util/format.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// A Python project whose check runs pytest: tests/test_calc.py::test_add
// fails while calc.py subtracts.
const std::string kBug = "def add(a, b):\n    return a - b\n";
const std::string kFix = "def add(a, b):\n    return a + b\n";
const std::string kFailing = "tests/test_calc.py::test_add";

// A Python interpreter that has pytest: the python3 on PATH, else the
// system's; "" when none has.
std::string python_with_pytest() {
  for (const std::string& py : {trim(run({"sh", "-c", "command -v python3"}).output), std::string("/usr/bin/python3")})
    if (!py.empty() && run({py, "-m", "pytest", "--version"}).exit_code == 0) return py;
  return "";
}

std::string python_repo(const std::string& dir) {
  init_repo(dir);
  write(dir, "calc.py", kBug);
  write(dir, "tests/test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n");
  write(dir, ".gitignore", ".phoenix/\nincidents/\n__pycache__/\n.pytest_cache/\n");
  Json cfg = {{"checks",
               {{{"id", "unit"},
                 {"kind", "command_exit"},
                 {"target", {python_with_pytest(), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"}},
                 {"type", "unit"},
                 {"timeout_s", 120},
                 {"protect_tests", true}}}}};
  write(dir, "phoenix.json", cfg.dump(2));
  commit_all(dir, "calc with a bug");
  return dir;
}

std::vector<Json> trace_events(const std::string& repo, const std::string& event) {
  std::vector<Json> out;
  const std::string path = repo + "/.phoenix/trace.jsonl";
  if (!fs::exists(path)) return out;
  for (const auto& l : util::split_lines(read(path))) {
    if (l.empty()) continue;
    Json j = Json::parse(l, nullptr, false);
    if (j.is_object() && j.value("event", "") == event) out.push_back(j);
  }
  return out;
}

std::vector<std::string> incident_notes(const std::string& repo) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(repo + "/incidents", ec))
    if (e.path().extension() == ".md") out.push_back(e.path().string());
  return out;
}

struct Streams {
  int code = -1;
  std::string out, err;
};

// `phoenix hook run stop --agent CLI` fed `input`, stdout and stderr apart.
Streams stop_hook(const std::string& cwd, const std::string& cli, const std::string& input,
                  const std::vector<std::pair<std::string, std::string>>& env = {}) {
  ScopedTempDir io;
  write(io.path(), "in.json", input);
  const std::string sh = "exec \"$1\" hook run stop --agent \"$2\" <\"$3/in.json\" >\"$3/out\" 2>\"$3/err\"";
  auto r = run({"sh", "-c", sh, "sh", phoenix_bin(), cli, io.path()}, cwd, env, 300);
  return {r.exit_code, read(io / "out"), read(io / "err")};
}

std::string stop_input(const std::string& session, const std::string& cwd, bool active = false) {
  return Json{{"session_id", session},
              {"transcript_path", "/dev/null"},
              {"cwd", cwd},
              {"hook_event_name", "Stop"},
              {"stop_hook_active", active}}
      .dump();
}

// --- install, uninstall, bad input --------------------------------------------------

class AgentStopHook : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo;
  void SetUp() override {
    if (python_with_pytest().empty()) GTEST_SKIP() << "no python3 with pytest";
    repo = python_repo(tmp / "repo");
  }
};

TEST_F(AgentStopHook, InstallAndUninstallKeepTheUsersSettingsByteForByte) {
  struct Case {
    std::string cli, file, theirs, event;
  };
  const std::vector<Case> cases = {
      {"claude", ".claude/settings.local.json",
       "{\n  \"permissions\": {\n    \"allow\": [\"Bash(python3 -m pytest:*)\"],\n    \"deny\": [\"WebFetch\"]\n  },\n"
       "  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [{\"type\": \"command\", \"command\": \"notify-send "
       "done\"}]\n      }\n    ]\n  }\n}\n",
       "Stop"},
      {"codex", ".codex/hooks.json",
       "{\n  \"hooks\": {\n    \"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", "
       "\"command\": \"./audit.sh\"}]}]\n  }\n}\n",
       "Stop"},
      {"gemini", ".gemini/settings.json",
       "{\n  // mine\n  \"general\": {\"vimMode\": true},\n  \"model\": {\"name\": \"gemini-2.5-pro\"}\n}\n",
       "AfterAgent"},
  };
  for (const Case& c : cases) {
    write(repo, c.file, c.theirs);
    CliRun in = run_phoenix(repo, {"hook", "install", "--agent", c.cli});
    ASSERT_EQ(in.code, 0) << in.out;
    EXPECT_TRUE(contains(in.out, "installed: " + repo + "/" + c.file)) << in.out;
    const std::string after = read(repo + "/" + c.file);
    const Json j = util::parse_json(after, c.file);
    const Json& ours = j["hooks"][c.event].back()["hooks"][0];
    EXPECT_TRUE(contains(ours["command"].get<std::string>(), " hook run stop --agent " + c.cli)) << after;
    // Their lines are all there, in their order, as they wrote them.
    size_t at = 0;
    for (const std::string& line : util::split_lines(c.theirs)) {
      if (util::trim(line) == "}" || util::trim(line) == "]") continue;  // a closing line may now follow the entry
      const size_t found = after.find(line, at);
      EXPECT_NE(found, std::string::npos) << c.cli << ": lost '" << line << "' in\n" << after;
      if (found != std::string::npos) at = found + line.size();
    }
    // Idempotent.
    CliRun again = run_phoenix(repo, {"hook", "install", "--agent", c.cli});
    EXPECT_TRUE(contains(again.out, "already installed")) << again.out;
    EXPECT_EQ(read(repo + "/" + c.file), after);
  }
  // Personal files stay out of commits: the tree is still clean.
  EXPECT_EQ(porcelain(repo), "") << read(repo + "/.git/info/exclude");
  // doctor names each, and what codex still needs before it runs its hook.
  const std::string codex_home = tmp / "codex-home";
  auto doctor = [&]() {
    CliRun out = run_phoenix(repo, {"doctor", "--json"}, 120, {{"CODEX_HOME", codex_home}});
    std::map<std::string, std::string> status;
    const Json doc = Json::parse(out.out.substr(out.out.find('{')));
    for (const auto& item : doc["items"])
      if (util::starts_with(item.value("name", ""), "stop hook "))
        status[item.value("name", "")] = item.value("status", "") + ": " + item.value("detail", "");
    return status;
  };
  auto before = doctor();
  ASSERT_EQ(before.size(), 3u);
  EXPECT_TRUE(util::starts_with(before["stop hook claude"], "ok: Stop hook in " + repo)) << before["stop hook claude"];
  EXPECT_TRUE(util::starts_with(before["stop hook gemini"], "ok: AfterAgent hook")) << before["stop hook gemini"];
  EXPECT_TRUE(contains(before["stop hook codex"], "warn: ")) << before["stop hook codex"];
  EXPECT_TRUE(contains(before["stop hook codex"], "the project is not trusted")) << before["stop hook codex"];
  // What codex 0.171 writes when a person trusts the folder and the hook.
  write(codex_home, "config.toml",
        "[projects.\"" + repo + "\"]\ntrust_level = \"trusted\"\n\n[hooks.state.\"" + repo +
            "/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:0\"\n");
  EXPECT_TRUE(util::starts_with(doctor()["stop hook codex"], "ok: Stop hook")) << doctor()["stop hook codex"];

  for (const Case& c : cases) {
    CliRun out = run_phoenix(repo, {"hook", "uninstall", "--agent", c.cli});
    ASSERT_EQ(out.code, 0) << out.out;
    EXPECT_EQ(read(repo + "/" + c.file), c.theirs) << c.cli;
  }
  CliRun none = run_phoenix(repo, {"hook", "uninstall", "--agent", "claude"});
  EXPECT_TRUE(contains(none.out, "nothing to do")) << none.out;
}

TEST_F(AgentStopHook, ASettingsFileThatDoesNotParseIsNamedNothingWrittenExit78) {
  const std::string broken = "{\n  \"permissions\": {\n    \"allow\": [\"Read\",,]\n  }\n}\n";
  write(repo, ".claude/settings.local.json", broken);
  CliRun r = run_phoenix(repo, {"hook", "install", "--agent", "claude"});
  EXPECT_EQ(r.code, 78) << r.out;
  const auto lines = util::split_lines(util::trim(r.out));
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_TRUE(contains(lines[0], repo + "/.claude/settings.local.json:3:")) << r.out;
  EXPECT_EQ(read(repo + "/.claude/settings.local.json"), broken);
  EXPECT_FALSE(fs::exists(repo + "/.git/info/exclude") &&
               contains(read(repo + "/.git/info/exclude"), "settings.local.json"));
  EXPECT_EQ(run_phoenix(repo, {"hook", "uninstall", "--agent", "claude"}).code, 78);
}

TEST_F(AgentStopHook, AnUnknownAgentIsAUsageErrorWithTheList) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"hook", "install", "--agent", "aider"},
                                               std::vector<std::string>{"hook", "uninstall", "--agent", "aider"}}) {
    CliRun r = run_phoenix(repo, args);
    EXPECT_EQ(r.code, 64) << r.out;
    EXPECT_TRUE(contains(r.out, "unknown agent 'aider'")) << r.out;
    EXPECT_TRUE(contains(r.out, "claude, codex, gemini")) << r.out;
  }
  Streams s = stop_hook(repo, "aider", stop_input("s", repo));
  EXPECT_EQ(s.code, 64) << s.err;
  EXPECT_FALSE(fs::exists(repo + "/.claude"));
}

// --- the stop hook, fed what a CLI sends ---------------------------------------------------

TEST_F(AgentStopHook, RedIsRefusedWithTheFailingTestThenTheSameFailureIsLetStopWithANote) {
  Streams first = stop_hook(repo, "claude", stop_input("s-1", repo));
  EXPECT_EQ(first.code, 2) << first.out << first.err;
  EXPECT_EQ(first.out, "");
  EXPECT_TRUE(contains(first.err, "phoenix refused the stop: unit is red")) << first.err;
  EXPECT_TRUE(contains(first.err, "failing tests: " + kFailing)) << first.err;
  EXPECT_TRUE(contains(first.err, "  | ")) << first.err;                         // evidence lines
  EXPECT_TRUE(contains(first.err, "protected (never edit these")) << first.err;  // the tests it protects
  EXPECT_TRUE(contains(first.err, "tests/**")) << first.err;
  EXPECT_LE(util::split_lines(first.err).size(), 60u) << first.err;
  EXPECT_TRUE(incident_notes(repo).empty());

  // The agent did nothing: the same failure, let stop with the note.
  Streams second = stop_hook(repo, "claude", stop_input("s-1", repo, true));
  EXPECT_EQ(second.code, 0) << second.err;
  const Json msg = Json::parse(second.out);
  EXPECT_TRUE(contains(msg.value("systemMessage", ""), "the same failure twice")) << second.out;
  const auto notes = incident_notes(repo);
  ASSERT_EQ(notes.size(), 1u);
  const std::string note = read(notes[0]);
  EXPECT_TRUE(contains(note, "## Failure signatures")) << note;
  EXPECT_TRUE(contains(note, kFailing)) << note;
  EXPECT_TRUE(contains(note, "claude session s-1")) << note;

  // A third stop does not write another note for the same failure.
  Streams third = stop_hook(repo, "claude", stop_input("s-1", repo, true));
  EXPECT_EQ(third.code, 0);
  EXPECT_EQ(incident_notes(repo).size(), 1u);

  // Another session starts its own count.
  EXPECT_EQ(stop_hook(repo, "claude", stop_input("s-2", repo)).code, 2);

  const auto stops = trace_events(repo, "agent.stop");
  ASSERT_EQ(stops.size(), 4u);
  EXPECT_EQ(stops[0]["data"]["verdict"], "refused");
  EXPECT_EQ(stops[0]["data"]["failures"][0], kFailing);
  EXPECT_EQ(stops[1]["data"]["verdict"], "given-up");
  CliRun rep = run_phoenix(repo, {"report", "--json", "--since", "1970-01-01"});
  ASSERT_EQ(rep.code, 0) << rep.out;
  const Json sum = Json::parse(rep.out.substr(rep.out.find('{')));
  ASSERT_EQ(sum["agent_sessions"].size(), 2u) << rep.out;
  EXPECT_EQ(sum["agent_sessions"][0]["refused"], 1);
  EXPECT_EQ(sum["agent_sessions"][0]["verdict"], "given-up");
  CliRun text = run_phoenix(repo, {"report", "--since", "1970-01-01"});
  EXPECT_TRUE(contains(text.out, "Agent sessions")) << text.out;
  EXPECT_TRUE(contains(text.out, "1 refused (" + kFailing + ")")) << text.out;
  // The note comes first among what needs a person, and is the next thing to read.
  EXPECT_TRUE(contains(text.out, "1. Read incidents/")) << text.out;
  EXPECT_TRUE(contains(text.out, "Next: less incidents/")) << text.out;
}

TEST_F(AgentStopHook, AMendedTreeIsLetStopGreenAndAMeasuredTreeIsServedFromTheStore) {
  EXPECT_EQ(stop_hook(repo, "codex", stop_input("s", repo)).code, 2);
  write(repo, "calc.py", kFix);  // the agent's change, not committed
  Streams green = stop_hook(repo, "codex", stop_input("s", repo, true));
  EXPECT_EQ(green.code, 0) << green.err;
  EXPECT_TRUE(contains(Json::parse(green.out).value("systemMessage", ""), "phoenix: green")) << green.out;
  // The same tree again (the agent stops once more without a change):
  // answered from the store, not run again.
  Streams again = stop_hook(repo, "codex", stop_input("s", repo, true));
  EXPECT_EQ(again.code, 0);
  EXPECT_TRUE(contains(again.out, "unit (measured ") && contains(again.out, " in agent-codex")) << again.out;
  const auto stops = trace_events(repo, "agent.stop");
  ASSERT_EQ(stops.size(), 3u);
  EXPECT_FALSE(stops[1]["data"]["checks"][0].contains("cached"));
  EXPECT_TRUE(stops[2]["data"]["checks"][0].contains("cached"));

  // Committed, it is the same tree: `phoenix sense` and a new session's
  // first stop are answered by that measurement too.
  commit_all(repo, "fixed");
  CliRun sense = run_phoenix(repo, {"sense", "unit"});
  EXPECT_EQ(sense.code, 0) << sense.out;
  EXPECT_TRUE(contains(sense.out, "in agent-codex")) << sense.out;
  Streams fresh = stop_hook(repo, "gemini", stop_input("g", repo));
  EXPECT_EQ(fresh.code, 0) << fresh.err;
  EXPECT_TRUE(contains(fresh.out, "in agent-codex")) << fresh.out;
}

TEST_F(AgentStopHook, PhoenixsOwnFailureNeverHoldsTheSession) {
  // .phoenix is a file: nothing of Phoenix's state can be written.
  write(repo, ".phoenix", "not a folder\n");
  Streams s = stop_hook(repo, "claude", stop_input("s", repo));
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(s.err, "");
  const std::string line = Json::parse(s.out).value("systemMessage", "");
  EXPECT_TRUE(contains(line, "the stop hook failed")) << s.out;
  EXPECT_EQ(util::split_lines(util::trim(line)).size(), 1u);
  fs::remove(repo + "/.phoenix");

  // Input that is not JSON, and no repository: let stop, one line.
  Streams junk = stop_hook(tmp.path(), "gemini", "not json");
  EXPECT_EQ(junk.code, 0) << junk.err;
  EXPECT_TRUE(contains(junk.out, "not in a git repository")) << junk.out;

  // PHOENIX_SKIP=1, as for the pre-push hook.
  Streams skip = stop_hook(repo, "claude", stop_input("s", repo), {{"PHOENIX_SKIP", "1"}});
  EXPECT_EQ(skip.code, 0);
  EXPECT_TRUE(contains(skip.out, "PHOENIX_SKIP=1")) << skip.out;

  // An agent that Phoenix itself runs (the loop, a heal) is judged by that run.
  Streams inner = stop_hook(repo, "claude", stop_input("s", repo), {{"PHOENIX_LOOP", "1"}});
  EXPECT_EQ(inner.code, 0);
  EXPECT_TRUE(contains(inner.out, "inside a Phoenix run")) << inner.out;
  // A person's choice of sandbox kind is not the harness's mark.
  EXPECT_EQ(stop_hook(repo, "claude", stop_input("s", repo), {{"PHOENIX_SANDBOX", "copy"}}).code, 2);
}

TEST_F(AgentStopHook, AFailureThatChangesEachTimeIsLetStopWhenTheBudgetIsSpent) {
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["budgets"] = {{"unit", 2}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "a budget of 2");
  // Each stop leaves another wrong add(): another failure, never the same twice.
  const std::vector<std::string> wrong = {"a - b", "a * b", "a - b - 1"};
  std::vector<int> codes;
  for (const std::string& w : wrong) {
    write(repo, "calc.py", "def add(a, b):\n    return " + w + "\n");
    codes.push_back(stop_hook(repo, "gemini", stop_input("g", repo)).code);
  }
  EXPECT_EQ(codes, (std::vector<int>{2, 2, 0}));
  const auto stops = trace_events(repo, "agent.stop");
  ASSERT_EQ(stops.size(), 3u);
  EXPECT_EQ(stops[2]["data"]["verdict"], "given-up");
  EXPECT_TRUE(contains(stops[2]["data"].value("why", ""), "budget of 2 refusals for unit spent")) << stops[2].dump();
  ASSERT_EQ(incident_notes(repo).size(), 1u);
  const std::string note = read(incident_notes(repo)[0]);
  EXPECT_TRUE(contains(note, "budget of 2 refusals for unit spent")) << note;
  EXPECT_TRUE(contains(note, "## Retries attempted")) << note;
}

// --- the real CLIs -------------------------------------------------------------------------

// How each CLI is run headless against the model server, with Phoenix's stop
// hook installed (docs/agents.md says what each needs).
struct Cli {
  std::string name;
  std::string file;    // where `phoenix hook install --agent` writes
  std::string theirs;  // what the user had there before
};

std::ostream& operator<<(std::ostream& os, const Cli& c) { return os << c.name; }

const std::vector<Cli> kClis = {
    {"claude", ".claude/settings.local.json",
     "{\n  \"permissions\": {\n    \"allow\": [\"Read\", \"Edit\"]\n  },\n  \"env\": {\"PHOENIX_TEST_MINE\": \"1\"}\n}\n"},
    {"codex", ".codex/hooks.json",
     "{\n  \"hooks\": {\n    \"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"true\"}]}]\n  }\n}\n"},
    {"gemini", ".gemini/settings.json", "{\n  \"ui\": {\"hideBanner\": true}\n}\n"},
};

class AgentSessions : public ::testing::TestWithParam<Cli> {
 protected:
  ScopedTempDir tmp;
  std::string repo, home;
  std::unique_ptr<ModelServer> server;

  void SetUp() override {
    if (!fs::exists(agents_bin() + "/" + GetParam().name))
      GTEST_SKIP() << GetParam().name << " is not installed in " << agents_bin()
                   << " (scripts/deps.sh installs it from npm)";
    if (python_with_pytest().empty()) GTEST_SKIP() << "no python3 with pytest";
    server = std::make_unique<ModelServer>(tmp / "model");
    home = tmp / "home";
    fs::create_directories(home);
    repo = python_repo(tmp / "repo");
    write(tmp / "model", "edit.json", R"({"file":"calc.py","old":"    return a - b","new":"    return a + b"})");
  }

  // stop.json: the model says it is done until it was refused `mend_after` times.
  void script(int mend_after) {
    write(tmp / "model", "stop.json", Json{{"marker", "phoenix refused"}, {"mend_after", mend_after}}.dump());
  }

  void install() {
    CliRun r = run_phoenix(repo, {"hook", "install", "--agent", GetParam().name});
    ASSERT_EQ(r.code, 0) << r.out;
  }

  // One headless session of the CLI in the repository: its exit code and output.
  util::ProcessResult session(const std::string& prompt,
                              const std::vector<std::pair<std::string, std::string>>& extra_env = {}) {
    const std::string& cli = GetParam().name;
    const std::string bin = agents_bin() + "/" + cli;
    std::vector<std::pair<std::string, std::string>> env = {{"PATH", agents_bin() + ":/usr/local/bin:/usr/bin:/bin"},
                                                            {"HOME", home}};
    util::ProcessOptions o;
    o.cwd = repo;
    o.timeout_s = 300;
    o.tail_bytes = 1 << 20;
    if (cli == "claude") {
      o.argv = {bin, "-p", "--output-format", "json", "--permission-mode", "acceptEdits"};
      o.stdin_data = prompt;
      env.insert(env.end(), {{"ANTHROPIC_BASE_URL", server->url()},
                             {"ANTHROPIC_API_KEY", "sk-test"},
                             {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
                             {"CLAUDE_CODE_MAX_RETRIES", "0"}});
    } else if (cli == "codex") {
      // A project's hooks run in a trusted project (--trust saves that in
      // CODEX_HOME) once the hook is trusted; headless, without the review
      // the interactive codex asks for, --dangerously-bypass-hook-trust.
      const std::string ch = tmp / "codex-home";
      write(
          ch, "config.toml",
          "model = \"test-model\"\nmodel_provider = \"fake\"\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"" +
              server->url() +
              "/v1\"\nenv_key = \"FAKE_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\n"
              "stream_max_retries = 0\n");
      o.argv = {bin,      "exec", "--trust", "--dangerously-bypass-hook-trust", "--sandbox", "workspace-write",
                "--json", "-"};
      o.stdin_data = prompt;
      env.insert(env.end(), {{"CODEX_HOME", ch}, {"FAKE_API_KEY", "x"}});
    } else {
      write(home, ".gemini/settings.json",
            R"({"security":{"auth":{"selectedType":"gemini-api-key"}},"model":{"name":"gemini-2.5-flash"}})");
      o.argv = {bin, "--approval-mode", "yolo", "--skip-trust", "-o", "stream-json", "-p", prompt};
      env.insert(
          env.end(),
          {{"GOOGLE_GEMINI_BASE_URL", server->url()}, {"GEMINI_API_KEY", "x"}, {"GEMINI_CLI_TRUST_WORKSPACE", "true"}});
    }
    for (const auto& [k, v] : env) o.env[k] = v;
    for (const auto& [k, v] : extra_env) o.env[k] = v;
    return util::run_process(o);
  }

  std::vector<std::string> verdicts() {
    std::vector<std::string> out;
    for (const Json& e : trace_events(repo, "agent.stop")) out.push_back(e["data"].value("verdict", ""));
    return out;
  }
};

TEST_P(AgentSessions, RefusedWithTheFailingTestThenMendedAndLetGoGreen) {
  write(repo, GetParam().file, GetParam().theirs);  // the user's own settings, not committed
  install();
  script(1);
  const util::ProcessResult r = session("Make test_add pass.");
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << server->log();
  EXPECT_EQ(read(repo + "/calc.py"), kFix) << r.output << "\n" << server->log();
  EXPECT_EQ(verdicts(), (std::vector<std::string>{"refused", "green"})) << r.output << "\n" << server->log();
  const auto stops = trace_events(repo, "agent.stop");
  ASSERT_FALSE(stops.empty());
  EXPECT_EQ(stops[0]["data"]["failures"], Json::array({kFailing}));
  EXPECT_EQ(stops[0]["data"]["agent"], GetParam().name);
  // The model read the refusal: the failing test's name reached it.
  EXPECT_TRUE(contains(server->log(), "refusals=1")) << server->log();
  EXPECT_TRUE(incident_notes(repo).empty());
  CliRun out = run_phoenix(repo, {"hook", "uninstall", "--agent", GetParam().name});
  ASSERT_EQ(out.code, 0) << out.out;
  EXPECT_EQ(read(repo + "/" + GetParam().file), GetParam().theirs);
}

TEST_P(AgentSessions, NeverMendedIsLetGoWithTheNoteWritten) {
  install();
  script(1000);
  const util::ProcessResult r = session("Make test_add pass.");
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << server->log();
  EXPECT_EQ(read(repo + "/calc.py"), kBug);
  EXPECT_EQ(verdicts(), (std::vector<std::string>{"refused", "given-up"})) << r.output << "\n" << server->log();
  const auto notes = incident_notes(repo);
  ASSERT_EQ(notes.size(), 1u) << r.output;
  const std::string note = read(notes[0]);
  EXPECT_TRUE(contains(note, "the same failure twice")) << note;
  EXPECT_TRUE(contains(note, kFailing)) << note;
  EXPECT_TRUE(contains(note, GetParam().name + " session")) << note;
}

TEST_P(AgentSessions, AGreenTreeIsLetGoAtOnceFromTheStore) {
  write(repo, "calc.py", kFix);
  commit_all(repo, "fixed");
  install();
  ASSERT_EQ(run_phoenix(repo, {"sense", "unit"}).code, 0);
  script(1000);
  const util::ProcessResult r = session("Make test_add pass.");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(verdicts(), (std::vector<std::string>{"green"})) << r.output << "\n" << server->log();
  const auto stops = trace_events(repo, "agent.stop");
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_TRUE(contains(stops[0]["data"]["checks"][0].value("cached", ""), "in sense")) << stops[0].dump();
  EXPECT_FALSE(contains(server->log(), "refusals=1")) << server->log();
}

// A phoenix that cannot start (moved, uninstalled) is Phoenix's failure:
// the CLI lets the agent stop at its first "done" (gemini through the
// command's guard: it takes any other exit as a refusal).
TEST_P(AgentSessions, APhoenixThatCannotStartNeverHoldsTheSession) {
  install();
  const std::string file = repo + "/" + GetParam().file;
  write(repo, GetParam().file, util::replace_all(read(file), phoenix_bin(), tmp / "gone/phoenix"));
  ASSERT_TRUE(contains(read(file), tmp / "gone/phoenix"));
  script(1000);
  const util::ProcessResult r = session("Make test_add pass.");
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << server->log();
  EXPECT_FALSE(contains(server->log(), "refusals=1")) << server->log();
  EXPECT_TRUE(trace_events(repo, "agent.stop").empty());
}

// An agent that phoenix-loop runs (PHOENIX_LOOP=1 in its environment, as
// the loop sets it) with the stop hook in its settings (a --shared install
// is committed, so it is in the loop's tree too) is judged by the loop, not
// held by the hook: the CLI hands the variable on to its hook.
TEST_P(AgentSessions, AnAgentThatPhoenixRunsIsJudgedByThatRun) {
  install();
  script(1000);
  const util::ProcessResult r = session("Make test_add pass.", {{"PHOENIX_LOOP", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << server->log();
  EXPECT_FALSE(contains(server->log(), "refusals=1")) << server->log();
  EXPECT_TRUE(incident_notes(repo).empty());
}

INSTANTIATE_TEST_SUITE_P(Cli, AgentSessions, ::testing::ValuesIn(kClis),
                         [](const ::testing::TestParamInfo<Cli>& i) { return i.param.name; });

}  // namespace
}  // namespace phoenix::test
