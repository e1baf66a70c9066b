// End-to-end with the real agent CLIs (claude, codex, gemini, opencode as
// scripts/deps.sh installs them, pinned, into /opt/phoenix-test-tools/agents)
// talking to a fake model provider of ours on 127.0.0.1
// (tests/tools/model_server.cc). Each CLI's shipped preset heals a real bug
// through `phoenix run` and does a two-task night of phoenix-loop (one task
// green at once, one healed when the failure is fed back); each failure of
// the provider (refused, a 5xx, 429, a usage window or per-day quota,
// exhausted credit or billing), in the provider's own error format, is
// classified against each CLI as docs/agents.md says, spends no budget, and
// ends the run with exit 1, one line and no incident; phoenix-loop waiting out a usage window
// shows in loop-state.json and `phoenix status`. A CLI that is not
// installed skips its tests, saying so. (opencode's failure modes cost 30 s
// each: scripts/test.sh runs the failure table in the plain pass only.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <future>
#include <regex>
#include <thread>

#include "model_server_client.h"
#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// A port nothing listens on: bound, then closed.
std::string closed_port() { return "9"; }

class Agents : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo, home;
  std::unique_ptr<ModelServer> server;

  void SetUp() override {
    server = std::make_unique<ModelServer>(tmp / "model");
    home = tmp / "home";
    fs::create_directories(home);
    repo = init_repo(tmp / "repo");
    write(repo, "src/calc.cc", "int add(int a, int b) { return a - b; }\n");
    write(repo, ".gitignore", ".phoenix/\nincidents/\n");
    // Whole lines, so that codex's apply_patch needs no look at the tree.
    write(
        tmp / "model", "edit.json",
        R"({"file":"src/calc.cc","old":"int add(int a, int b) { return a - b; }","new":"int add(int a, int b) { return a + b; }"})");
  }

  void require(const std::string& cli) {
    if (!fs::exists(agents_bin() + "/" + cli))
      GTEST_SKIP() << cli << " is not installed in " << agents_bin() << " (scripts/deps.sh installs it from npm)";
  }

  // What each CLI needs to talk to the fake provider (docs/agents.md).
  Json env_for(const std::string& cli, const std::string& url) {
    Json env = {{"PATH", agents_bin() + ":/usr/local/bin:/usr/bin:/bin"}, {"HOME", home}};
    if (cli == "claude") {
      env["ANTHROPIC_BASE_URL"] = url;
      env["ANTHROPIC_API_KEY"] = "sk-test";
      env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1";
      env["CLAUDE_CODE_MAX_RETRIES"] = "0";
    } else if (cli == "codex") {
      const std::string ch = tmp / "codex-home";
      write(
          ch, "config.toml",
          "model = \"test-model\"\nmodel_provider = \"fake\"\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"" +
              url +
              "/v1\"\nenv_key = \"FAKE_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n");
      env["CODEX_HOME"] = ch;
      env["FAKE_API_KEY"] = "x";
    } else if (cli == "gemini") {
      write(home, ".gemini/settings.json",
            R"({"security":{"auth":{"selectedType":"gemini-api-key"}},"model":{"name":"gemini-2.5-flash"}})");
      env["GOOGLE_GEMINI_BASE_URL"] = url;
      env["GEMINI_API_KEY"] = "x";
    } else if (cli == "opencode") {
      Json oc = {{"provider",
                  {{"fake",
                    {{"npm", "@ai-sdk/openai-compatible"},
                     {"name", "fake"},
                     {"options", {{"baseURL", url + "/v1"}, {"apiKey", "x"}}},
                     {"models", {{"test-model", {{"name", "test-model"}}}}}}}}},
                 {"model", "fake/test-model"},
                 {"small_model", "fake/test-model"},
                 {"autoupdate", false},
                 {"share", "disabled"}};
      write(tmp.path(), "opencode.json", oc.dump(2));
      env["OPENCODE_CONFIG"] = tmp / "opencode.json";
      // No fetch of the model catalogue from models.dev (seconds lost
      // where the network is out of reach, as in the suite).
      env["OPENCODE_DISABLE_MODELS_FETCH"] = "1";
      env["XDG_CONFIG_HOME"] = home + "/.config";
      env["XDG_DATA_HOME"] = home + "/.local/share";
      env["XDG_CACHE_HOME"] = home + "/.cache";
      env["XDG_STATE_HOME"] = home + "/.local/state";
    }
    return env;
  }

  void configure(const std::string& cli, const std::string& url, Json harness_extra = Json::object(),
                 Json loop = nullptr) {
    Json harness = {{"preset", cli}, {"timeout_s", 120}, {"env", env_for(cli, url)}};
    for (auto& [k, v] : harness_extra.items()) harness[k] = v;
    Json cfg = {{"checks",
                 {{{"id", "calc"},
                   {"kind", "regex_in_file"},
                   {"target", "src/calc.cc"},
                   {"pattern", "a - b"},
                   {"expect", "absent"},
                   {"type", "unit"},
                   {"editable", {"src/**"}}}}},
                {"fixers", {"harness"}},
                {"harness", harness}};
    if (!loop.is_null()) cfg["loop"] = loop;
    write(repo, "phoenix.json", cfg.dump(2));
    commit_all(repo, "calc with a bug");
  }

  std::vector<Json> trace_events(const std::string& event) {
    std::vector<Json> out;
    for (const auto& l : util::split_lines(read(repo + "/.phoenix/trace.jsonl"))) {
      if (l.empty()) continue;
      Json j = Json::parse(l);
      if (j.value("event", "") == event) out.push_back(j);
    }
    return out;
  }

  // One task for a claude night against the server's `mode`, the check
  // green at the baseline (it guards against a marker the agent never writes).
  void one_task_night(const std::string& mode) {
    write(repo, "TASKS.md", "# Tasks\n\n- [ ] make add() add\n");
    server->set_mode(mode);
    configure("claude", server->url(), Json::object(), Json{{"tasks", "TASKS.md"}, {"heartbeat_s", 0.2}});
    Json cfg = Json::parse(read(repo + "/phoenix.json"));
    cfg["checks"][0]["pattern"] = "BROKEN";
    write(repo, "phoenix.json", cfg.dump(2));
    commit_all(repo, "the check is green");
  }

  void heals_with_preset(const std::string& cli) {
    configure(cli, server->url());
    CliRun r = run_phoenix(repo, {"run"}, 300);
    EXPECT_EQ(r.code, 0) << r.out << "\n" << server->log();
    EXPECT_EQ(read(repo + "/src/calc.cc"), "int add(int a, int b) { return a + b; }\n") << r.out;
    EXPECT_TRUE(contains(r.out, "calc: HEALED by harness")) << r.out;
    // Journaled like any verified outcome, though the journal was not in the chain.
    CliRun j = run_phoenix(repo, {"journal", "--json"});
    EXPECT_TRUE(contains(j.out, "\"fixer\":\"harness\"") || contains(j.out, "\"fixer\": \"harness\"")) << j.out;
  }
};

// --- each preset heals ------------------------------------------------------------

TEST_F(Agents, ClaudePresetHeals) {
  require("claude");
  heals_with_preset("claude");
  // claude reports its turns: they are the model calls.
  for (const Json& p : trace_events("proposal")) EXPECT_EQ(p["data"].value("model_calls", -1), 3) << p.dump();
}

TEST_F(Agents, CodexPresetHeals) {
  require("codex");
  heals_with_preset("codex");
}

TEST_F(Agents, GeminiPresetHeals) {
  require("gemini");
  heals_with_preset("gemini");
}

TEST_F(Agents, OpencodePresetHeals) {
  require("opencode");
  heals_with_preset("opencode");
}

// Every flag of every preset is one the installed CLI knows.
TEST_F(Agents, PresetFlagsAreInEachCliHelp) {
  struct Cli {
    std::string name;
    std::vector<std::string> help;
    std::vector<std::string> flags;
  };
  const std::vector<Cli> clis{
      {"claude", {"--help"}, {"-p", "--output-format", "--permission-mode", "acceptEdits"}},
      {"codex", {"exec", "--help"}, {"--sandbox", "workspace-write", "--json"}},
      {"gemini", {"--help"}, {"--approval-mode", "yolo", "--skip-trust", "--output-format", "stream-json", "--prompt"}},
      {"opencode", {"run", "--help"}, {"--format", "json"}},
  };
  int ran = 0;
  for (const Cli& c : clis) {
    const std::string bin = agents_bin() + "/" + c.name;
    if (!fs::exists(bin)) continue;
    std::vector<std::string> argv{bin};
    argv.insert(argv.end(), c.help.begin(), c.help.end());
    auto r = run(argv, tmp.path(), {{"HOME", home}, {"PATH", agents_bin() + ":/usr/bin:/bin"}}, 60);
    for (const std::string& f : c.flags)
      EXPECT_TRUE(contains(r.output, f)) << c.name << " lacks " << f << ":\n" << r.output;
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "no agent CLI is installed in " << agents_bin();
}

// --- the provider fails ----------------------------------------------------------------

// One mode of the fake provider against one CLI, and what Phoenix must make
// of it. What each CLI does (docs/agents.md, "What each CLI does when the
// model fails"): claude and codex give up at once with the provider's words
// (codex keeps reconnecting on a refused connection); gemini retries every
// mode but exhausted credit inside itself (5 s, 10 s, ... 10 attempts) and
// opencode every mode, silently but for its log on stderr: Phoenix's
// timeout_s stops them, and the class comes from what they said until then.
struct FailCase {
  std::string cli, mode;
  std::string status;        // the class every proposal records
  std::string says;          // the CLI's own words in the one-line message (quota: in the detail)
  double timeout_s;          // where Phoenix stops a CLI that retries inside itself
  double max_wait_s;         // below timeout_s: one run, then the run stops
  bool reads_reset = false;  // the usage window's reset (hours away) was read from what the CLI said
  // The wait the CLI asked for, in s, as the proposal says it ("retry in N
  // s"): 0 where it names none; -1 for a per-day quota: until the next
  // midnight in America/Los_Angeles.
  long long retry_s = 0;
};

// Seconds from now to the next midnight in Los Angeles, by the TZ database.
long long secs_to_pacific_midnight() {
  const char* old = std::getenv("TZ");
  const std::string saved = old ? old : "";
  ::setenv("TZ", "America/Los_Angeles", 1);
  ::tzset();
  const time_t now = std::time(nullptr);
  struct tm t {};
  ::localtime_r(&now, &t);
  t.tm_mday += 1;
  t.tm_hour = t.tm_min = t.tm_sec = 0;
  t.tm_isdst = -1;
  const time_t midnight = ::mktime(&t);
  if (old) ::setenv("TZ", saved.c_str(), 1);
  else ::unsetenv("TZ");
  ::tzset();
  return static_cast<long long>(midnight - now);
}

std::ostream& operator<<(std::ostream& os, const FailCase& c) { return os << c.cli << "/" << c.mode; }

// How long a CLI that retries inside itself needs to have said why: gemini
// prints its first failed attempt 2–6 s after it starts on a busy machine;
// opencode logs its first "stream error" 4–9 s after it starts, 10–20 s
// on a machine with a load of 6–8 (a bun binary of 185 MB).
constexpr double kGeminiTimeout = 8, kOpencodeTimeout = 30;

// The provider's modes speak its own error format (tests/tools/model_server.cc):
// Anthropic's error body and rate-limit headers, OpenAI's error codes
// (rate_limit_exceeded, insufficient_quota), Google's google.rpc error
// with QuotaFailure, RetryInfo and ErrorInfo details. Each CLI meets 429,
// quota (credit or billing), a 5xx and a refused connection; claude and
// codex, which give up at once, also 529 and a usage window; gemini also
// a per-day quota, which waits until midnight Pacific time.
const std::vector<FailCase> kFailCases = {
    {"claude", "refused", "unreachable", "API Error: Unable to connect", 30, 3},
    {"claude", "500", "unreachable", "API Error: 500", 30, 3},
    {"claude", "529", "unreachable", "529", 30, 3},
    {"claude", "429", "rate-limited", "429", 30, 3},
    {"claude", "usage-limit", "rate-limited", "resets 3am (Europe/Berlin)", 30, 3, true},
    {"claude", "credit", "quota", "redit balance", 30, 3},
    // codex never gives up on a refused connection ("Reconnecting...
    // waiting for network"): stopped at its timeout, it is unreachable.
    {"codex", "refused", "unreachable", "Reconnecting", 4, 3},
    {"codex", "500", "unreachable", "high demand", 30, 3},
    {"codex", "529", "unreachable", "529", 30, 3},
    {"codex", "429", "rate-limited", "429 Too Many Requests", 30, 3},
    {"codex", "usage-limit", "rate-limited", "usage limit", 30, 3, true},
    {"codex", "credit", "quota", "billing", 30, 3},
    {"gemini", "refused", "unreachable", "fetch failed", kGeminiTimeout, 2},
    {"gemini", "500", "unreachable", "status 500", kGeminiTimeout, 2},
    {"gemini", "429", "rate-limited", "Resource has been exhausted", kGeminiTimeout, 2, false, 2},
    {"gemini", "usage-limit", "rate-limited", "daily quota", kGeminiTimeout, 2, true, -1},
    {"gemini", "credit", "quota", "billing", kGeminiTimeout, 2},
    {"opencode", "refused", "unreachable", "Unable to connect", kOpencodeTimeout, 2},
    {"opencode", "500", "unreachable", "Internal server error", kOpencodeTimeout, 2},
    {"opencode", "429", "rate-limited", "Rate limit", kOpencodeTimeout, 2},
    {"opencode", "credit", "quota", "billing", kOpencodeTimeout, 2},
};

class AgentsFail : public Agents, public ::testing::WithParamInterface<FailCase> {
 protected:
  bool has_state(const std::string& state) {
    for (const Json& s : trace_events("state"))
      if (s["data"].value("state", "") == state) return true;
    return false;
  }
};

// One run of `phoenix run` per case asserts everything the case promises.
TEST_P(AgentsFail, IsClassifiedAndSpendsNothingItMustNot) {
  const FailCase& c = GetParam();
  require(c.cli);
  std::string url = server->url();
  if (c.mode == "refused") url = "http://127.0.0.1:" + closed_port();
  else server->set_mode(c.mode);
  configure(c.cli, url, {{"timeout_s", c.timeout_s}, {"max_wait_s", c.max_wait_s}});
  CliRun r = run_phoenix(repo, {"run"}, 300);
  const std::string trace = read(repo + "/.phoenix/trace.jsonl");
  // Nothing was healed, nothing rolled back, the bug is where it was.
  EXPECT_EQ(read(repo + "/src/calc.cc"), "int add(int a, int b) { return a - b; }\n");
  EXPECT_NE(r.code, 0) << r.out;

  // The class, as the trace's proposals record it.
  auto proposals = trace_events("proposal");
  ASSERT_FALSE(proposals.empty()) << r.out;
  for (const Json& p : proposals) {
    EXPECT_EQ(p["data"].value("status", ""), c.status) << p.dump() << "\n" << r.out;
    if (c.status == "unreachable")
      EXPECT_EQ(p["data"]["model_calls"], Json(0)) << "a model that was never reached answered nothing: " << p.dump();
  }
  // No attempt was spent: nothing rejected.
  EXPECT_FALSE(has_state("REJECTED")) << trace;
  // A model that cannot be used is not an escalation of the code: exit 1,
  // no incident, and one line naming the CLI and what it said.
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_FALSE(fs::exists(repo + "/incidents")) << r.out;
  EXPECT_FALSE(has_state("ESCALATED")) << trace;
  std::string line;
  for (const std::string& l : util::split_lines(r.out))
    if (util::starts_with(l, "phoenix: harness ")) line = l;

  if (c.status == "quota") {
    // Credit is gone: the fixer is asked once and the run stops.
    EXPECT_EQ(proposals.size(), 1u) << trace;
    EXPECT_TRUE(contains(proposals[0]["data"].value("detail", ""), c.says)) << proposals[0].dump();
    EXPECT_FALSE(has_state("WAITING")) << "waiting does not bring credit back: " << trace;
    EXPECT_TRUE(has_state("MODEL_UNUSABLE")) << trace;
    EXPECT_TRUE(std::regex_match(line, std::regex("phoenix: harness quota: " + c.cli + ": .+")))
        << "'" << line << "' in:\n" << r.out;
    EXPECT_TRUE(contains(line, c.says)) << line;
    return;
  }

  // Waited, never failed: the waits traced, and one line.
  EXPECT_TRUE(has_state("WAITED_OUT")) << trace;
  // Where the first run left time within max_wait_s, Phoenix waited and
  // asked again (read from the trace: a busy machine makes runs longer).
  if (proposals[0]["data"].value("duration_ms", 0LL) < static_cast<long long>(c.max_wait_s * 1000) - 100)
    EXPECT_TRUE(has_state("WAITING")) << trace;
  const std::regex one_line("phoenix: harness " + c.status + " for [0-9]+ s: " + c.cli + ": .+");
  EXPECT_TRUE(std::regex_match(line, one_line)) << "'" << line << "' in:\n" << r.out;
  EXPECT_TRUE(contains(line, c.says)) << line;
  // Within max_wait_s: what Phoenix itself chose to wait, as the trace
  // records it, never passes the bound (no wall-clock assertion).
  long long waited = 0;
  for (const Json& s : trace_events("state"))
    if (s["data"].value("state", "") == "WAITING") waited += s["data"].value("wait_ms", 0LL);
  EXPECT_LE(waited, static_cast<long long>(c.max_wait_s * 1000)) << trace;

  if (c.retry_s != 0) {
    // The wait the provider asked for, as the CLI printed it.
    const long long want = c.retry_s > 0 ? c.retry_s : secs_to_pacific_midnight();
    std::string summary = proposals[0]["data"].value("summary", "");
    size_t at = summary.find("retry in ");
    ASSERT_NE(at, std::string::npos) << summary;
    EXPECT_NEAR(static_cast<double>(std::stoll(summary.substr(at + 9))), static_cast<double>(want), c.retry_s > 0 ? 1 : 600)
        << summary;
  }
  if (c.reads_reset) {
    // The reset time was read (hours away, as the proposal says); the wait
    // is what max_wait_s left of it.
    bool read_reset = false;
    for (const Json& p : proposals) {
      std::string summary = p["data"].value("summary", "");
      size_t at = summary.find("retry in ");
      if (at != std::string::npos) read_reset = std::stoll(summary.substr(at + 9)) > 60;
    }
    EXPECT_TRUE(read_reset) << trace;
  }
}

INSTANTIATE_TEST_SUITE_P(Agents, AgentsFail, ::testing::ValuesIn(kFailCases),
                         [](const ::testing::TestParamInfo<FailCase>& i) {
                           std::string n = i.param.cli + "_" + i.param.mode;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// --- aider ---------------------------------------------------------------------------------

// aider comes from PyPI, which scripts/deps.sh uses only where it answers:
// where aider is installed, its preset's flags are in its --help.
TEST_F(Agents, AiderPresetFlagsAreInItsHelp) {
  const char* path = std::getenv("PATH");
  std::string found;
  std::string dirs = agents_bin() + ":" + (path ? path : "");
  for (size_t at = 0; at <= dirs.size() && found.empty();) {
    size_t colon = std::min(dirs.find(':', at), dirs.size());
    std::string d = dirs.substr(at, colon - at);
    if (!d.empty() && fs::exists(d + "/aider")) found = d + "/aider";
    at = colon + 1;
  }
  if (found.empty())
    GTEST_SKIP() << "aider is not installed: it comes from PyPI (aider-chat), and PyPI is not reachable from this "
                    "machine (scripts/deps.sh installs the npm CLIs only)";
  auto r = run({found, "--help"}, tmp.path(), {{"HOME", home}}, 60);
  for (const std::string& f : {"--yes-always", "--no-auto-commits", "--message-file"})
    EXPECT_TRUE(contains(r.output, f)) << "aider lacks " << f << ":\n" << r.output;
}

// --- the loop ----------------------------------------------------------------------------

#ifdef PHOENIX_LOOP_BIN
class AgentsLoop : public Agents, public ::testing::WithParamInterface<std::string> {};

// Each CLI's preset does a two-task night of phoenix-loop: the first task
// green at once; the second red as the agent leaves it (a marker the check
// forbids), healed when the failure is fed back to the same CLI (the heal's
// prompt names the task being done), and landed with its heal.
TEST_P(AgentsLoop, DoesATwoTaskNightOneGreenOneHealed) {
  const std::string cli = GetParam();
  require(cli);
  const std::string task = "Do this one task, then stop:\n\n";
  // Whole lines, so that codex's apply_patch needs no look at the tree.
  write(tmp / "model", "edits.json",
        Json::array({{{"when", "The task being done: make sub() subtract"},
                      {"file", "src/sub.cc"},
                      {"old", "int sub(int a, int b) { return a - b; } // BROKEN"},
                      {"new", "int sub(int a, int b) { return a - b; }"}},
                     {{"when", task + "make add() add"}, {"file", "src/calc.cc"}, {"old", "int add(int a, int b) { return a - b; }"}, {"new", "int add(int a, int b) { return a + b; }"}},
                     {{"when", task + "make sub() subtract"},
                      {"file", "src/sub.cc"},
                      {"old", "int sub(int a, int b) { return 0; }"},
                      {"new", "int sub(int a, int b) { return a - b; } // BROKEN"}}})
            .dump(2));
  write(repo, "src/sub.cc", "int sub(int a, int b) { return 0; }\n");
  write(repo, "TASKS.md", "# Tasks\n\n- [ ] make add() add\n- [ ] make sub() subtract\n");
  configure(cli, server->url(), Json::object(), Json{{"tasks", "TASKS.md"}, {"heartbeat_s", 0.2}});
  // Green at the baseline: the check forbids a marker only the second
  // task's first try writes.
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["checks"][0]["target"] = "src/sub.cc";
  cfg["checks"][0]["pattern"] = "BROKEN";
  write(repo, "phoenix.json", cfg.dump(2));
  const std::string base = util::trim(commit_all(repo, "the check is green"));
  const std::string branch = "phoenix/loop-" + cli;
  auto r = run({PHOENIX_LOOP_BIN, "--branch", branch}, repo, {}, 300);
  const std::string diag = r.output + "\n--- model server ---\n" + server->log();
  EXPECT_EQ(r.exit_code, 0) << diag;
  EXPECT_EQ(git(repo, {"show", branch + ":TASKS.md"}), "# Tasks\n\n- [x] make add() add\n- [x] make sub() subtract\n")
      << diag;
  EXPECT_EQ(util::trim(git(repo, {"show", branch + ":src/calc.cc"})), "int add(int a, int b) { return a + b; }");
  EXPECT_EQ(util::trim(git(repo, {"show", branch + ":src/sub.cc"})), "int sub(int a, int b) { return a - b; }");
  // One commit per task; the second healed by the harness after its red attempt.
  const std::string log = git(repo, {"log", "--first-parent", "--reverse", "--format=%s%n%(trailers)", base + ".." + branch});
  EXPECT_TRUE(contains(log, "phoenix-loop: make add() add")) << log;
  EXPECT_TRUE(contains(log, "phoenix-loop: make sub() subtract")) << log;
  EXPECT_TRUE(contains(log, "Phoenix-Healed-By: harness")) << log;
  EXPECT_TRUE(contains(log, "Phoenix-Attempt: refs/phoenix/attempts/")) << log;
  EXPECT_FALSE(fs::exists(repo + "/incidents")) << diag;
  EXPECT_FALSE(contains(server->log(), "no edits.json entry")) << diag;
}

INSTANTIATE_TEST_SUITE_P(Agents, AgentsLoop, ::testing::Values("claude", "codex", "gemini", "opencode"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// Credit gone at the first run of the night: phoenix-loop stops with exit 1
// and one line naming the CLI and what it said, writes no incident and
// spends nothing of the task (its box stays open, no attempt kept).
TEST_F(Agents, LoopStopsOnQuotaWithOneLineAndNoIncident) {
  require("claude");
  one_task_night("credit");
  auto r = run({PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-agents"}, repo, {}, 120);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "harness quota: claude: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "redit balance is too low")) << r.output;
  EXPECT_FALSE(fs::exists(repo + "/incidents")) << r.output;
  EXPECT_EQ(util::trim(git(repo, {"for-each-ref", "refs/phoenix/attempts/"})), "") << r.output;
}

// The same credit gone, in the pre-push hook's heal mode: the push is
// blocked with the one line naming the CLI and what it said, no incident
// is written and nothing is committed (the model could not be used: the
// code was never found unhealable).
TEST_F(Agents, TheHookBlocksOnQuotaWithOneLineAndNoIncident) {
  require("claude");
  server->set_mode("credit");
  configure("claude", server->url());
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["hook"] = {{"mode", "heal"}};
  write(repo, "phoenix.json", cfg.dump(2));
  const std::string head = commit_all(repo, "heal on push");
  const std::string bare = tmp / "remote.git";
  ASSERT_EQ(run({"git", "init", "-q", "--bare", "-b", "main", bare}).exit_code, 0);
  git(repo, {"remote", "add", "origin", bare});
  ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  auto r = run({"git", "push", "origin", "main"}, repo, {}, 180);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "harness quota: claude: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "redit balance is too low")) << r.output;
  EXPECT_TRUE(contains(r.output, "push blocked")) << r.output;
  EXPECT_FALSE(fs::exists(repo + "/incidents")) << r.output;
  EXPECT_EQ(util::trim(git(repo, {"rev-parse", "HEAD"})), util::trim(head)) << "nothing committed";
  EXPECT_EQ(run({"git", "rev-parse", "-q", "--verify", "refs/heads/main"}, bare).exit_code, 1) << "nothing pushed";
}

// While phoenix-loop waits out a usage window a real CLI reported,
// loop-state.json says until when and why, and `phoenix status` says so.
TEST_F(Agents, LoopWaitingOutAUsageWindowShowsInStatus) {
  require("claude");
  one_task_night("usage-limit");
  // The window resets at 3am; --until, a few seconds away, comes first.
  const long long deadline_ms = (util::now_ms() / 1000 + 8) * 1000;
  const time_t deadline = static_cast<time_t>(deadline_ms / 1000);
  struct tm u {};
  gmtime_r(&deadline, &u);
  char until[32];
  std::strftime(until, sizeof until, "%Y-%m-%dT%H:%M:%SZ", &u);
  auto loop = std::async(std::launch::async, [&] {
    return run({PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-agents", "--until", until}, repo, {}, 120);
  });
  const std::string state_path = repo + "/.phoenix/loop-state.json";
  Json waiting;
  std::string status_out;
  while (loop.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    if (!fs::exists(state_path)) continue;
    Json s = Json::parse(read(state_path), nullptr, false);
    if (!s.is_object() || !s.contains("waiting_until") || !s["waiting_until"].is_string()) continue;
    waiting = s;
    status_out = run_phoenix(repo, {"status"}).out;
    break;
  }
  auto r = loop.get();
  ASSERT_TRUE(waiting.is_object()) << "loop-state.json never said it was waiting:\n" << r.output;
  EXPECT_EQ(waiting.value("waiting_for", ""), "rate-limited") << waiting.dump();
  const long long at = util::iso8601_ms(waiting.value("waiting_until", ""));
  ASSERT_GT(at, 0) << waiting.dump();
  // Until --until, not 3am: the window's reset was hours away.
  EXPECT_LE(at, deadline_ms + 1000) << waiting.dump() << " --until " << until;
  time_t t = static_cast<time_t>(at / 1000);
  struct tm l {};
  localtime_r(&t, &l);
  char hhmm[16];
  std::strftime(hhmm, sizeof hhmm, "%H:%M", &l);
  EXPECT_TRUE(contains(status_out, std::string("waiting: rate limit until ") + hhmm)) << status_out;
  // The loop stopped at --until, spent nothing, and says it no longer waits.
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, std::string("--until ") + until + " reached")) << r.output;
  Json end = Json::parse(read(state_path));
  EXPECT_TRUE(end["waiting_until"].is_null()) << end.dump();
  EXPECT_FALSE(fs::exists(repo + "/incidents")) << r.output;
  bool traced = false;
  for (const Json& w : trace_events("loop.wait")) traced = traced || w["data"].value("status", "") == "rate-limited";
  EXPECT_TRUE(traced) << read(repo + "/.phoenix/trace.jsonl");
}
#endif

}  // namespace
}  // namespace phoenix::test
