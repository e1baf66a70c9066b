#include "fixers/harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/config.h"
#include "gitx/repo.h"
#include "sandbox/sandbox.h"
#include "test_util.h"
#include "util/overlay.h"
#include "util/error.h"
#include "util/json.h"
#include "layout/layout.h"
#include "util/path.h"

namespace fs = std::filesystem;

namespace phoenix::fixers {
namespace {

using namespace ::phoenix::agent;  // presets, invocations, reports, classes of run

using test::commit_all;
using test::git;
using test::read;
using test::ScopedTempDir;
using test::write;
using util::Json;

constexpr long long kNow = 1'700'000'000'000;  // a fixed "now" for pure classification tests

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// --- presets and argv (pure) -----------------------------------------------------

TEST(HarnessPresets, TableIsTheOneFromHarnessesMd) {
  ASSERT_EQ(presets().size(), 5u);
  const HarnessPreset* claude = find_preset("claude");
  ASSERT_NE(claude, nullptr);
  EXPECT_EQ(claude->argv,
            (std::vector<std::string>{"claude", "-p", "--output-format", "json", "--permission-mode", "acceptEdits"}));
  EXPECT_EQ(claude->via, PromptVia::kStdin);
  const HarnessPreset* codex = find_preset("codex");
  ASSERT_NE(codex, nullptr);
  EXPECT_EQ(codex->argv, (std::vector<std::string>{"codex", "exec", "--sandbox", "workspace-write", "--json", "-"}));
  EXPECT_EQ(codex->via, PromptVia::kStdin);
  const HarnessPreset* aider = find_preset("aider");
  ASSERT_NE(aider, nullptr);
  EXPECT_EQ(aider->argv, (std::vector<std::string>{"aider", "--yes-always", "--no-auto-commits", "--message-file",
                                                   "{prompt_file}"}));
  EXPECT_EQ(aider->via, PromptVia::kFile);
  const HarnessPreset* opencode = find_preset("opencode");
  ASSERT_NE(opencode, nullptr);
  EXPECT_EQ(opencode->argv, (std::vector<std::string>{"opencode", "run", "--print-logs", "--log-level", "WARN",
                                                      "--format", "json", "{prompt}"}));
  EXPECT_EQ(opencode->via, PromptVia::kArgument);
  EXPECT_EQ(opencode->env.at("OPENCODE_PERMISSION"), R"({"*":"allow"})");
  const HarnessPreset* gemini = find_preset("gemini");
  ASSERT_NE(gemini, nullptr);
  EXPECT_EQ(gemini->argv, (std::vector<std::string>{"gemini", "--approval-mode", "yolo", "--skip-trust", "-o",
                                                    "stream-json", "-p", "{prompt}"}));
  EXPECT_EQ(gemini->via, PromptVia::kArgument);
  EXPECT_EQ(find_preset("cursor"), nullptr);
}

TEST(HarnessPresets, EveryPresetTheConfigAcceptsHasAnEntry) {
  for (const std::string& name : config::harness_presets()) EXPECT_NE(find_preset(name), nullptr) << name;
}

TEST(HarnessArgv, SubstitutesWholeElementsAndInsideThemWithoutRescanning) {
  EXPECT_EQ(substitute_placeholders({"agent", "{prompt}", "--file={prompt_file}", "[{prompt}|{prompt}]", "{other}"},
                                    "fix {prompt_file} it", "/p.md"),
            (std::vector<std::string>{"agent", "fix {prompt_file} it", "--file=/p.md",
                                      "[fix {prompt_file} it|fix {prompt_file} it]", "{other}"}));
  // A prompt with spaces, quotes and ';' stays one element: no shell.
  EXPECT_EQ(substitute_placeholders({"{prompt}"}, "a 'b' \"c\"; rm -rf /", ""),
            (std::vector<std::string>{"a 'b' \"c\"; rm -rf /"}));
}

struct FileSink {
  int calls = 0;
  std::string content;
  std::function<std::string(const std::string&)> fn() {
    return [this](const std::string& c) {
      ++calls;
      content = c;
      return std::string("/sandbox/.phoenix-prompt.md");
    };
  }
};

TEST(HarnessArgv, PresetsPassThePromptTheirWay) {
  config::Harness h;
  FileSink sink;
  h.preset = "claude";
  Invocation inv = plan_invocation(h, "PROMPT", sink.fn());
  EXPECT_EQ(inv.argv, find_preset("claude")->argv);
  EXPECT_EQ(inv.stdin_data, std::optional<std::string>("PROMPT"));
  EXPECT_EQ(sink.calls, 0);

  h.preset = "aider";
  inv = plan_invocation(h, "PROMPT", sink.fn());
  EXPECT_EQ(inv.argv.back(), "/sandbox/.phoenix-prompt.md");
  EXPECT_EQ(inv.prompt_file, "/sandbox/.phoenix-prompt.md");
  EXPECT_FALSE(inv.stdin_data);
  EXPECT_EQ(sink.calls, 1);
  EXPECT_EQ(sink.content, "PROMPT");

  h.preset = "gemini";
  inv = plan_invocation(h, "PROMPT", sink.fn());
  EXPECT_EQ(inv.argv, (std::vector<std::string>{"gemini", "--approval-mode", "yolo", "--skip-trust", "-o",
                                                "stream-json", "-p", "PROMPT"}));
  EXPECT_FALSE(inv.stdin_data);
  EXPECT_EQ(sink.calls, 1);
}

TEST(HarnessArgv, LongArgumentPromptsGoThroughAFile) {
  config::Harness h;
  h.preset = "opencode";
  FileSink sink;
  const std::string fits(kMaxPromptArgBytes, 'p');
  Invocation inv = plan_invocation(h, fits, sink.fn());
  EXPECT_EQ(inv.argv.back(), fits);
  EXPECT_FALSE(inv.long_prompt_in_file);
  EXPECT_EQ(sink.calls, 0);

  const std::string big(kMaxPromptArgBytes + 1, 'p');
  inv = plan_invocation(h, big, sink.fn());
  EXPECT_TRUE(inv.long_prompt_in_file);
  EXPECT_EQ(inv.argv.back(), long_prompt_instruction("/sandbox/.phoenix-prompt.md"));
  EXPECT_TRUE(contains(inv.argv.back(), "/sandbox/.phoenix-prompt.md"));
  EXPECT_LT(inv.argv.back().size(), 1000u);
  EXPECT_EQ(sink.content, big);
}

TEST(HarnessArgv, CustomCommandsChooseByPlaceholderAndEnvLayers) {
  config::Harness h;
  FileSink sink;
  h.command = {"my-agent", "--go"};
  Invocation inv = plan_invocation(h, "PROMPT", sink.fn());
  EXPECT_EQ(inv.via, PromptVia::kStdin);
  EXPECT_EQ(inv.stdin_data, std::optional<std::string>("PROMPT"));
  EXPECT_EQ(inv.argv, h.command);

  h.command = {"my-agent", "--task={prompt}"};
  inv = plan_invocation(h, "PROMPT", sink.fn());
  EXPECT_EQ(inv.via, PromptVia::kArgument);
  EXPECT_EQ(inv.argv, (std::vector<std::string>{"my-agent", "--task=PROMPT"}));
  EXPECT_FALSE(inv.stdin_data);

  h.command = {"my-agent", "{prompt_file}"};
  h.preset = "opencode";  // a command overrides the preset's argv; its env stays, harness.env wins
  h.env = {{"OPENCODE_PERMISSION", "{}"}, {"EXTRA", "1"}};
  inv = plan_invocation(h, "PROMPT", sink.fn());
  EXPECT_EQ(inv.via, PromptVia::kFile);
  EXPECT_EQ(inv.argv, (std::vector<std::string>{"my-agent", "/sandbox/.phoenix-prompt.md"}));
  EXPECT_EQ(inv.env, (std::map<std::string, std::string>{{"EXTRA", "1"}, {"OPENCODE_PERMISSION", "{}"}}));

  config::Harness none;
  EXPECT_THROW(plan_invocation(none, "PROMPT", sink.fn()), ConfigError);
}

// --- output parsing and classification (pure) --------------------------------------

TEST(HarnessClaudeJson, ParsesTheResultObjectProperly) {
  auto r = parse_claude_result(
      R"({"type":"result","subtype":"success","is_error":false,"duration_ms":4086,"num_turns":7,"result":"Fixed the error in add().","total_cost_usd":0.1234})");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->is_error);
  EXPECT_EQ(r->num_turns, 7);
  EXPECT_DOUBLE_EQ(*r->total_cost_usd, 0.1234);
  EXPECT_EQ(r->result, "Fixed the error in add().");

  // Without cost and turns: unknown, not zero.
  r = parse_claude_result(R"({"type":"result","is_error":false,"result":"ok"})");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->num_turns);
  EXPECT_FALSE(r->total_cost_usd);

  // After stderr noise, as the last line of stream-json, or in a --verbose array.
  r = parse_claude_result(
      "warning: something\n{\"type\":\"system\"}\n{\"type\":\"result\",\"is_error\":true,\"result\":\"boom\"}\n");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->is_error);
  r = parse_claude_result(
      R"([{"type":"system"},{"type":"result","is_error":false,"num_turns":2,"total_cost_usd":0.5}])");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->num_turns, 2);

  EXPECT_FALSE(parse_claude_result("plain text, \"is_error\": true"));
  EXPECT_FALSE(parse_claude_result(R"({"type":"result","status":"success","stats":{}})")) << "that is gemini's";
}

TEST(HarnessClaudeJson, IsErrorFalseIsNeverAnErrorWhateverTheWords) {
  RunFacts f;
  f.program = "claude";
  f.output =
      R"({"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"The error was a rate limit (429 Too Many Requests) in the test's mock; nothing to change.","total_cost_usd":0.02})";
  Classification c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kNothing);
  EXPECT_EQ(c.detail, "the agent changed nothing");
  EXPECT_DOUBLE_EQ(*c.cost_usd, 0.02);
  EXPECT_EQ(c.turns, 3);
}

TEST(HarnessReport, CodexOpencodeAndGeminiEvents) {
  AgentReport codex = parse_agent_report(
      "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n"
      "{\"type\":\"turn.started\"}\n"
      "{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"rate limit handling fixed\"}}\n"
      "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":100,\"cached_input_tokens\":0,\"output_tokens\":20}}\n");
  EXPECT_EQ(codex.format, "codex-jsonl");
  EXPECT_EQ(codex.is_error, std::optional<bool>(false));
  EXPECT_EQ(codex.turns, 1);
  EXPECT_FALSE(codex.cost_usd) << "codex reports tokens, not cost";

  AgentReport failed = parse_agent_report(
      "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n"
      "{\"type\":\"turn.failed\",\"error\":{\"message\":\"exceeded retry limit, last status: 429 Too Many Requests\"}}\n");
  EXPECT_EQ(failed.is_error, std::optional<bool>(true));
  ASSERT_EQ(failed.error_texts.size(), 1u);
  RunFacts f;
  f.program = "codex";
  f.exit_code = 1;
  f.output =
      "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n"
      "{\"type\":\"turn.failed\",\"error\":{\"message\":\"exceeded retry limit, last status: 429 Too Many "
      "Requests\"}}\n";
  EXPECT_EQ(classify_run(f, kNow).status, Status::kRateLimited);

  AgentReport opencode = parse_agent_report(
      "{\"type\":\"step_start\",\"part\":{\"type\":\"step-start\"}}\n"
      "{\"type\":\"step_finish\",\"part\":{\"type\":\"step-finish\",\"reason\":\"tool-calls\",\"cost\":0.01}}\n"
      "{\"type\":\"step_finish\",\"part\":{\"type\":\"step-finish\",\"reason\":\"stop\",\"cost\":0.02}}\n");
  EXPECT_EQ(opencode.format, "opencode-jsonl");
  EXPECT_NEAR(*opencode.cost_usd, 0.03, 1e-12);
  EXPECT_EQ(opencode.turns, 2);

  AgentReport gemini = parse_agent_report(
      "{\"type\":\"init\",\"session_id\":\"s\",\"model\":\"gemini-2.5-pro\"}\n"
      "{\"type\":\"result\",\"status\":\"error\",\"error\":{\"message\":\"Quota exceeded for quota metric "
      "'Generate Content API requests per minute'\"},\"stats\":{}}\n");
  EXPECT_EQ(gemini.format, "gemini-stream-json");
  EXPECT_EQ(gemini.is_error, std::optional<bool>(true));
  EXPECT_FALSE(gemini.cost_usd);
  f.program = "gemini";
  f.output =
      "{\"type\":\"result\",\"status\":\"error\",\"error\":{\"message\":\"Quota exceeded for quota metric "
      "'Generate Content API requests per minute'\"},\"stats\":{}}\n";
  EXPECT_EQ(classify_run(f, kNow).status, Status::kRateLimited) << "a per-minute quota is a rate limit";

  AgentReport text = parse_agent_report("just words\n");
  EXPECT_EQ(text.format, "");
  EXPECT_FALSE(text.is_error);
  EXPECT_FALSE(text.cost_usd);
}

TEST(HarnessRetryAfter, ReadsTheUsualWaysOfSayingWhen) {
  EXPECT_EQ(parse_retry_after_ms("Retry after 30 seconds", kNow), 30'000);
  EXPECT_EQ(parse_retry_after_ms("retry-after: 12", kNow), 12'000);
  EXPECT_EQ(parse_retry_after_ms("{\"retry_after_ms\": 1500}", kNow), 1'500);
  EXPECT_EQ(parse_retry_after_ms("Please try again in 1m30s.", kNow), 90'000);
  EXPECT_EQ(parse_retry_after_ms("Please try again in 20.5s", kNow), 20'500);
  EXPECT_EQ(parse_retry_after_ms("\"retryDelay\": \"45s\"", kNow), 45'000);
  EXPECT_EQ(parse_retry_after_ms("API Error (429 ...) · Retrying in 2892 seconds… (attempt 1/10)", kNow), 2'892'000);
  EXPECT_EQ(parse_retry_after_ms("Claude AI usage limit reached|1700003600", kNow), 3'600'000);
  EXPECT_EQ(parse_retry_after_ms("try again in 250ms", kNow), 250);
  EXPECT_FALSE(parse_retry_after_ms("Please try again later.", kNow));
  EXPECT_FALSE(parse_retry_after_ms("usage limit reached|1600000000", kNow)) << "a reset in the past says nothing";
  EXPECT_FALSE(parse_retry_after_ms("retry after " + std::string(400, '9') + " seconds", kNow));
}

TEST(HarnessClassify, RateLimitsAndQuotas) {
  RunFacts f;
  f.program = "claude";
  f.exit_code = 1;
  f.output = "API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}\nRetry after 30 seconds\n";
  Classification c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kRateLimited);
  EXPECT_EQ(c.retry_after_ms, 30'000);
  EXPECT_TRUE(contains(c.detail, "rate limit: API Error: 429 {")) << c.detail;

  for (const char* said :
       {"HTTP 429", "Error: Too Many Requests", "rate limited, backing off", "Claude AI usage limit reached|1700003600",
        "5-hour limit reached ∙ resets 3pm", "You've hit your usage limit."}) {
    f.output = said;
    c = classify_run(f, kNow);
    EXPECT_EQ(c.status, Status::kRateLimited) << said;
  }
  f.output = "HTTP 429";
  EXPECT_EQ(classify_run(f, kNow).retry_after_ms, 0) << "no time given: the waiter backs off";
  for (const char* said : {"Error 429: insufficient_quota", "You exceeded your current quota, please check your plan",
                           "Your credit balance is too low to access the Anthropic API."}) {
    f.output = said;
    EXPECT_EQ(classify_run(f, kNow).status, Status::kQuota) << said;
  }
  for (const char* said :
       {"Overloaded", "API Error: 529 {\"type\":\"overloaded_error\"}", "API Error: 500 Internal server error",
        "API Error: Unable to connect to API (ConnectionRefused)", "connect ECONNREFUSED 127.0.0.1:9",
        "Reconnecting... 2/5 (stream disconnected before completion)", "getaddrinfo ENOTFOUND api.example",
        "HTTP 503 Service Unavailable"}) {
    f.output = said;
    EXPECT_EQ(classify_run(f, kNow).status, Status::kUnreachable) << said;
  }
  f.output = "Claude AI usage limit reached|1700003600";
  EXPECT_EQ(classify_run(f, kNow).retry_after_ms, 3'600'000);

  // Exit 0 and no change: the words still count...
  f.exit_code = 0;
  f.output = "Error: 429 Too Many Requests";
  EXPECT_EQ(classify_run(f, kNow).status, Status::kRateLimited);
  // ...but a run that changed files and exited 0 is a proposal.
  f.changed_files = 2;
  c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kProposed);
  EXPECT_EQ(c.detail, "2 files changed");
  // A failed run's partial changes are not proposed when it hit a limit.
  f.exit_code = 1;
  c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kRateLimited);
  EXPECT_TRUE(contains(c.detail, "2 changed files discarded")) << c.detail;
}

TEST(HarnessClassify, EchoedPromptLinesAreNotTheCliSpeaking) {
  RunFacts f;
  f.program = "aider";
  f.prompt = "Fix the client.\n\n```text\nclient_test: expected 200, got HTTP 429 Too Many Requests\n```\n";
  f.output =
      "Fix the client.\nclient_test: expected 200, got HTTP 429 Too Many Requests\nI could not find the cause.\n";
  EXPECT_EQ(classify_run(f, kNow).status, Status::kNothing);
  f.exit_code = 2;
  Classification c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kCrashed);
  EXPECT_EQ(c.detail, "aider exited 2 without changing anything: I could not find the cause.");
  // The same words said by the CLI itself (not a prompt line) count.
  f.output += "litellm.RateLimitError: rate limit exceeded\n";
  EXPECT_EQ(classify_run(f, kNow).status, Status::kRateLimited);
  // Numbers that merely contain 429 are not HTTP statuses.
  f.output = "processed 14290 files; error count 0; line 429 of parser.cc\n";
  f.exit_code = 1;
  EXPECT_EQ(classify_run(f, kNow).status, Status::kCrashed) << "'429' is only a status next to status words";
}

// opencode 1.18.33 with --print-logs: the cause is the error value of its
// "stream error" log line; its failed fetch of the model catalogue (offline
// machines) is no word about the model. gemini 0.61.0 prints a long line
// whose cause comes last: it is cut around the cause.
TEST(HarnessClassify, LogLinesAndLongLinesNameTheCause) {
  RunFacts f;
  f.program = "opencode";
  f.timed_out = true;
  f.timeout_s = 14;
  f.exit_code = 128 + SIGKILL;
  const std::string catalogue =
      R"x(timestamp=2026-12-02T07:31:58.835Z level=ERROR run=00b96e96 message="Failed to fetch models.dev" )x"
      R"x(cause="Cause([Fail(HttpClientError: Transport error (cause: Error: Unable to connect. Is the computer able to access the url?))])")x";
  f.output = catalogue + "\n";
  EXPECT_EQ(classify_run(f, kNow).status, Status::kTimeout) << "the catalogue is not the model";
  f.output =
      catalogue + "\n" +
      R"(timestamp=2026-12-02T07:32:02.655Z level=ERROR run=00b96e96 message="stream error" providerID=fake )"
      R"(modelID=test-model session.id=ses_1 small=false agent=build mode=primary error.error="AI_APICallError: Overloaded")"
      "\n";
  Classification c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kUnreachable) << c.detail;
  EXPECT_EQ(c.first_error, "AI_APICallError: Overloaded");

  f = {};
  f.program = "gemini";
  f.exit_code = 1;
  f.output =
      "Error when talking to Gemini API Full report available at: /tmp/gemini-client-error-Turn.run-sendMessageStream-"
      "2026-12-02T07-29-11-709Z.json _ApiError: {\"error\":{\"code\":400,\"message\":\"Your credit balance is too low "
      "to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.\",\"status\":"
      "\"INVALID_ARGUMENT\"}}\n";
  c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kQuota) << c.detail;
  EXPECT_TRUE(contains(c.first_error, "Your credit balance is too low")) << c.first_error;
}

TEST(HarnessClassify, UnavailableTimeoutCrashedNothingProposed) {
  RunFacts f;
  f.program = "claude";
  f.not_found = true;
  EXPECT_EQ(classify_run(f, kNow).status, Status::kUnavailable);
  f = {};
  f.program = "x";
  f.not_executable = true;
  EXPECT_EQ(classify_run(f, kNow).status, Status::kUnavailable);
  f = {};
  f.program = "codex";
  f.timed_out = true;
  f.timeout_s = 1.5;
  f.exit_code = 143;
  f.changed_files = 1;
  Classification c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kTimeout);
  EXPECT_EQ(c.detail,
            "codex was stopped at its timeout of 1.5 s (its whole process group killed); 1 changed file discarded");
  f = {};
  f.program = "codex";
  f.exit_code = 128 + SIGSEGV;
  f.term_signal = SIGSEGV;
  c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kCrashed);
  EXPECT_EQ(c.detail, "codex was killed by SIGSEGV without changing anything");
  f.changed_files = 1;
  EXPECT_EQ(classify_run(f, kNow).status, Status::kProposed) << "the exit decides nothing once files changed";
  f = {};
  f.program = "claude";
  f.output = R"({"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":30,"result":""})";
  c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kCrashed);
  EXPECT_EQ(c.turns, 30);
  EXPECT_FALSE(c.cost_usd);
  f = {};
  f.program = "claude";
  EXPECT_EQ(classify_run(f, kNow).status, Status::kNothing);
}

// --- prompt (pure) -------------------------------------------------------------------

Request sample_request(const config::Config* cfg) {
  Request r;
  r.config = cfg;
  r.templates_dir = std::string(PHOENIX_SOURCE_DIR) + "/templates";
  r.failure.check.id = "unit";
  r.failure.check.kind = checks::Kind::kCommandExit;
  r.failure.check.type = "unit";
  r.failure.check.argv = {"ctest", "--test-dir", "build"};
  r.failure.check.editable = {"src/**"};
  r.failure.check.tests = {"tests/calc_test.cc"};
  r.failure.failure_type = "unit";
  r.failure.result.signal = "exit=1";
  r.failure.result.evidence = "calc_test: expected 3, got -1\n```\nnested fence\n```\n";
  r.failure.failing_tests = {"CalcTest.Adds"};
  r.failure.issue_signature = "sig123";
  r.head = "0123456789abcdef0123456789abcdef01234567";
  r.timeout_s = 60;
  return r;
}

TEST(HarnessPrompt, RenderReplacesKnownNamesOnceAndKeepsTheRest) {
  EXPECT_EQ(render_prompt("a {{x}} b {{ y }} c {{unknown}} d {{x", {{"x", "X {{y}}"}, {"y", "Y"}}),
            "a X {{y}} b Y c {{unknown}} d {{x");
  EXPECT_EQ(render_prompt("", {}), "");
  EXPECT_EQ(render_prompt("no placeholders", {{"x", "1"}}), "no placeholders");
}

TEST(HarnessPrompt, ShippedTemplateCarriesTheCheckSignalEvidenceGlobsAndAttempts) {
  config::Config cfg;
  cfg.protected_globs = {"migrations/**"};
  Request r = sample_request(&cfg);
  EarlierAttempt a;
  a.fixer = "harness";
  a.outcome = "red: exit=1";
  a.files = {"src/calc.cc"};
  a.patch = "--- a/src/calc.cc\n+++ b/src/calc.cc\n@@ -1 +1 @@\n-a - b\n+a * b\n";
  a.evidence = "calc_test: expected 3, got 2";
  r.earlier.push_back(a);

  const std::string tmpl = load_prompt_template(r);
  EXPECT_EQ(tmpl, read(std::string(PHOENIX_SOURCE_DIR) + "/templates/prompt.md"));
  const std::string p = render_prompt(tmpl, prompt_values(r));
  EXPECT_FALSE(contains(p, "{{")) << p;
  for (const char* needle :
       {"`unit`", "ctest --test-dir build (expects exit 0)", "exit=1", "calc_test: expected 3, got -1",
        "`CalcTest.Adds`", "- `src/**`", "- `migrations/**`", "- `tests/calc_test.cc`", "- `phoenix.json`",
        "### Attempt 1 (harness): red: exit=1", "Files: `src/calc.cc`", "+a * b", "calc_test: expected 3, got 2"})
    EXPECT_TRUE(contains(p, needle)) << needle << "\n---\n" << p;
  // The evidence holds ``` itself: its fence is longer.
  EXPECT_TRUE(contains(p, "````text\ncalc_test: expected 3, got -1\n```\nnested fence\n```\n````")) << p;

  r.earlier.clear();
  EXPECT_TRUE(contains(render_prompt(tmpl, prompt_values(r)), "(none: this is the first attempt)"));
}

TEST(HarnessPrompt, RepositoryTemplateOverridesAndAMissingOneIsAConfigError) {
  ScopedTempDir tmp;
  write(tmp.path(), "ci/prompt.md", "Fix {{check_id}} ({{signal}}) within {{editable}}\n");
  config::Config cfg;
  cfg.prompt_template = "ci/prompt.md";
  Request r = sample_request(&cfg);
  r.repo_root = tmp.path();
  EXPECT_EQ(render_prompt(load_prompt_template(r), prompt_values(r)), "Fix unit (exit=1) within - `src/**`\n");
  cfg.prompt_template = "ci/missing.md";
  EXPECT_THROW(load_prompt_template(r), ConfigError);
}

// --- the fixer, with the scripted agent under the presets' names ----------------------

class HarnessRun : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = test::init_repo(tmp / "repo");
    write(repo, ".gitignore", ".phoenix/\nbuild/\n");
    write(repo, "src/calc.cc", "int add(int a, int b) { return a - b; }\n");
    write(repo, "tests/calc_test.cc", "// expects add(1, 2) == 3\n");
    write(repo, "README.md", "calc\n");
    head = commit_all(repo, "init");
    bin = tmp / "bin";
    fs::create_directories(bin);
    for (const char* name : {"claude", "codex", "aider", "opencode", "gemini"})
      fs::create_symlink(test::test_tool("scripted_agent"), bin + "/" + name);
    log = tmp / "agent.log";
    const char* path = std::getenv("PATH");
    path_env = bin + ":" + (path ? path : "/usr/bin:/bin");
  }

  Request request(const std::string& script, const std::string& preset = "claude") {
    cfg.harness.preset = preset;
    cfg.harness.env["PATH"] = path_env;
    cfg.harness.env["PHOENIX_AGENT_SCRIPT"] = script;
    cfg.harness.env["PHOENIX_AGENT_LOG"] = log;
    Request r = sample_request(&cfg);
    r.repo_root = repo;
    r.phoenix_dir = repo + "/.phoenix";
    r.head = head;
    return r;
  }

  Proposal run(const std::string& script, const std::string& preset = "claude") {
    return HarnessFixer().propose(request(script, preset));
  }

  std::vector<Json> records() {
    std::vector<Json> out;
    std::istringstream in(read(log));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(Json::parse(line));
    return out;
  }

  Json only_record() {
    std::vector<Json> r = records();
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? Json::object() : r.back();
  }

  std::vector<std::string> args(const Json& rec) { return rec["args"].get<std::vector<std::string>>(); }

  std::string rendered_prompt() {
    Request r = request("");
    return render_prompt(load_prompt_template(r), prompt_values(r));
  }

  void expect_real_repo_untouched() {
    EXPECT_EQ(read(repo + "/src/calc.cc"), "int add(int a, int b) { return a - b; }\n");
    EXPECT_EQ(trim(git(repo, {"rev-parse", "HEAD"})), head);
    EXPECT_EQ(git(repo, {"status", "--porcelain"}), "");
  }

  void expect_sandboxes_removed() {
    std::error_code ec;
    const std::string dir = layout::sandboxes_dir(gitx::Repo::open(repo));
    EXPECT_TRUE(!fs::exists(dir) || fs::is_empty(dir, ec)) << "sandboxes left behind in " << dir;
  }

  static constexpr const char* kFix = "replace src/calc.cc 'a - b' 'a + b'";

  ScopedTempDir tmp;
  config::Config cfg;
  std::string repo, head, bin, log, path_env;
};

TEST_F(HarnessRun, ClaudePresetGetsItsFlagsAndThePromptOnStdin) {
  Proposal p = run(std::string(kFix) + "; print-json-cost 0.12 4");
  EXPECT_EQ(p.status, Status::kProposed) << p.detail << "\n" << p.log;
  EXPECT_EQ(p.fixer, "harness");
  EXPECT_EQ(p.files, std::vector<std::string>{"src/calc.cc"});
  EXPECT_TRUE(contains(p.patch, "-int add(int a, int b) { return a - b; }")) << p.patch;
  EXPECT_TRUE(contains(p.patch, "+int add(int a, int b) { return a + b; }")) << p.patch;
  ASSERT_TRUE(p.cost_usd);
  EXPECT_DOUBLE_EQ(*p.cost_usd, 0.12);
  EXPECT_EQ(p.turns, 4);
  EXPECT_EQ(p.model_calls, 4);  // claude's own count (num_turns)
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_EQ(p.summary, "harness claude: changed src/calc.cc");
  EXPECT_TRUE(contains(p.log, "\"total_cost_usd\":0.12"));

  Json rec = only_record();
  EXPECT_EQ(rec["name"], "claude");
  EXPECT_EQ(args(rec), (std::vector<std::string>{"-p", "--output-format", "json", "--permission-mode", "acceptEdits"}));
  EXPECT_EQ(rec["stdin"].get<std::string>(), rendered_prompt());
  EXPECT_TRUE(contains(rec["stdin"].get<std::string>(), "calc_test: expected 3, got -1"));
  EXPECT_EQ(rec["env"]["PHOENIX_SANDBOX"], "1");
  EXPECT_FALSE(rec["env"].contains("GIT_DIR"));
  const std::string cwd = rec["cwd"];
  EXPECT_EQ(cwd.rfind(layout::sandboxes_dir(gitx::Repo::open(repo)) + "/sandbox-", 0), 0u) << cwd;
  EXPECT_FALSE(util::same_or_inside(cwd, fs::canonical(repo).string())) << "a sandbox inside the work tree: " << cwd;
  EXPECT_EQ(rec["env"]["GIT_CEILING_DIRECTORIES"], fs::path(cwd).parent_path().string());

  // The patch applies to the real repository as it is.
  EXPECT_TRUE(gitx::Repo::open(repo).check_patch_applies(p.patch));
  expect_real_repo_untouched();
  expect_sandboxes_removed();
}

TEST_F(HarnessRun, CodexPresetReadsThePromptFromStdin) {
  Proposal p = run(kFix, "codex");
  EXPECT_EQ(p.status, Status::kProposed) << p.detail;
  Json rec = only_record();
  EXPECT_EQ(rec["name"], "codex");
  EXPECT_EQ(args(rec), (std::vector<std::string>{"exec", "--sandbox", "workspace-write", "--json", "-"}));
  EXPECT_EQ(rec["stdin"].get<std::string>(), rendered_prompt());
  EXPECT_FALSE(p.cost_usd);
  EXPECT_FALSE(p.turns);
}

TEST_F(HarnessRun, AiderPresetGetsAPromptFileThatIsNotPartOfThePatch) {
  Proposal p = run(std::string(kFix) + "; append .phoenix-prompt.md 'scribbled on by the agent'", "aider");
  EXPECT_EQ(p.status, Status::kProposed) << p.detail;
  EXPECT_EQ(p.files, std::vector<std::string>{"src/calc.cc"});
  Json rec = only_record();
  const std::vector<std::string> a = args(rec);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(a.begin(), a.begin() + 3),
            (std::vector<std::string>{"--yes-always", "--no-auto-commits", "--message-file"}));
  EXPECT_EQ(a[3], rec["cwd"].get<std::string>() + "/.phoenix-prompt.md") << "inside the agent's working directory";
  EXPECT_EQ(rec["prompt"].get<std::string>(), rendered_prompt());
  EXPECT_EQ(rec["stdin"], "");
  expect_sandboxes_removed();
}

TEST_F(HarnessRun, OpencodePresetGetsThePromptAsArgumentAndItsPermissionEnv) {
  Proposal p = run(kFix, "opencode");
  EXPECT_EQ(p.status, Status::kProposed) << p.detail;
  Json rec = only_record();
  EXPECT_EQ(args(rec), (std::vector<std::string>{"run", "--print-logs", "--log-level", "WARN", "--format", "json",
                                                 rendered_prompt()}));
  EXPECT_EQ(rec["env"]["OPENCODE_PERMISSION"], R"({"*":"allow"})");
  EXPECT_EQ(rec["stdin"], "");
}

TEST_F(HarnessRun, GeminiPresetGetsThePromptAfterDashP) {
  Proposal p = run("nothing", "gemini");
  EXPECT_EQ(p.status, Status::kNothing) << p.detail;
  Json rec = only_record();
  EXPECT_EQ(args(rec), (std::vector<std::string>{"--approval-mode", "yolo", "--skip-trust", "-o", "stream-json", "-p",
                                                 rendered_prompt()}));
}

TEST_F(HarnessRun, LongPromptsForArgumentPresetsGoThroughAFile) {
  Request r = request("cat .phoenix-prompt.md", "opencode");
  r.failure.result.evidence = std::string(150 * 1024, 'E') + "\nEND OF EVIDENCE\n";
  Proposal p = HarnessFixer().propose(r);
  EXPECT_EQ(p.status, Status::kNothing) << p.detail;
  Json rec = only_record();
  const std::vector<std::string> a = args(rec);
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a[6], long_prompt_instruction(rec["cwd"].get<std::string>() + "/.phoenix-prompt.md"));
  EXPECT_TRUE(contains(p.log, "END OF EVIDENCE")) << "the agent could read the whole prompt from the file";
  EXPECT_TRUE(contains(p.log, "too long for an argument"));
}

TEST_F(HarnessRun, CustomCommandWithPlaceholdersAndNoShell) {
  cfg.harness.command = {test::test_tool("scripted_agent"), "--prompt-file", "{prompt_file}", "--tag=<{prompt_file}>",
                         "$HOME;|*"};
  Request r = request(kFix, "");
  r.timeout_s = 0;  // falls back to harness.timeout_s
  Proposal p = HarnessFixer().propose(r);
  EXPECT_EQ(p.status, Status::kProposed) << p.detail;
  Json rec = only_record();
  const std::vector<std::string> a = args(rec);
  ASSERT_EQ(a.size(), 4u);
  const std::string file = rec["cwd"].get<std::string>() + "/.phoenix-prompt.md";
  EXPECT_EQ(a, (std::vector<std::string>{"--prompt-file", file, "--tag=<" + file + ">", "$HOME;|*"}));
  EXPECT_EQ(rec["prompt"].get<std::string>(), rendered_prompt());
  EXPECT_EQ(p.summary, "harness scripted_agent: changed src/calc.cc");
}

TEST_F(HarnessRun, HarnessEnvReachesTheAgent) {
  cfg.harness.env["HARNESS_TEST_VAR"] = "from phoenix.json";
  Proposal p = run("nothing");
  EXPECT_EQ(only_record()["env"]["HARNESS_TEST_VAR"], "from phoenix.json");
  EXPECT_EQ(p.status, Status::kNothing);
}

TEST_F(HarnessRun, NotOnPathIsUnavailableAndCopiesNothing) {
  Request r = request("nothing");
  cfg.harness.env["PATH"] = tmp / "empty-bin";
  Proposal p = HarnessFixer().propose(r);
  EXPECT_EQ(p.status, Status::kUnavailable);
  EXPECT_EQ(p.detail, "claude is not installed (not found on PATH)");
  EXPECT_EQ(p.model_calls, 0);
  EXPECT_FALSE(fs::exists(layout::sandboxes_dir(gitx::Repo::open(repo))));

  cfg.harness = {};
  EXPECT_EQ(HarnessFixer().propose(r).status, Status::kUnavailable);
  r.config = nullptr;
  EXPECT_EQ(HarnessFixer().propose(r).status, Status::kUnavailable);
}

TEST_F(HarnessRun, RateLimitedWithAndWithoutRetryAfter) {
  Proposal p = run("rate-limit 30");
  EXPECT_EQ(p.status, Status::kRateLimited) << p.detail << "\n" << p.log;
  EXPECT_EQ(p.retry_after_ms, 30'000);
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_FALSE(p.model_calls) << "no count reported: unknown, not 1";
  EXPECT_EQ(p.summary, "harness claude: rate-limited, retry in 30 s");
  p = run("rate-limit");
  EXPECT_EQ(p.status, Status::kRateLimited);
  EXPECT_EQ(p.retry_after_ms, 0);
  EXPECT_EQ(p.summary, "harness claude: rate-limited");
  expect_sandboxes_removed();
}

TEST_F(HarnessRun, UsageWindowIsRateLimitedUntilItsReset) {
  Proposal p = run("quota");
  EXPECT_EQ(p.status, Status::kRateLimited) << p.detail;
  EXPECT_GT(p.retry_after_ms, 3'500'000);
  p = run("print-json-error 'Claude AI usage limit reached|1999999999'");
  EXPECT_EQ(p.status, Status::kRateLimited) << p.detail;
  EXPECT_FALSE(contains(p.detail, "(success)")) << p.detail;
  p = run("print-json-error 'Credit balance is too low'");
  EXPECT_EQ(p.status, Status::kQuota) << p.detail;
}

TEST_F(HarnessRun, IsErrorFalseWithAlarmingWordsIsNothingAndCostNullWhenAbsent) {
  Proposal p = run("eprint 'debug: checking rate limit headers'; print-json-nocost");
  EXPECT_EQ(p.status, Status::kNothing) << p.detail;
  EXPECT_FALSE(p.cost_usd);
  EXPECT_FALSE(p.turns);
  EXPECT_FALSE(p.model_calls);
}

TEST_F(HarnessRun, AnAgentEchoingThePromptIsNotRateLimited) {
  Request r = request("echo-prompt");
  r.failure.result.evidence = "client_test: GET /api -> HTTP 429 Too Many Requests (rate limit)\n";
  Proposal p = HarnessFixer().propose(r);
  EXPECT_EQ(p.status, Status::kNothing) << p.detail;
  EXPECT_TRUE(contains(p.log, "HTTP 429 Too Many Requests"));
}

TEST_F(HarnessRun, TimeoutKillsTheWholeProcessTree) {
  const std::string pidfile = tmp / "sleeper.pid";
  // Both would sleep for 10 minutes: a runner that waited for either (or for
  // the sleeper's copy of the output pipe) would not return before the
  // test's own timeout, and the sleeper would still be alive.
  Request r = request("spawn-sleeper 600 " + pidfile + "; sleep 600");
  r.timeout_s = 1;
  Proposal p = HarnessFixer().propose(r);
  EXPECT_EQ(p.status, Status::kTimeout) << p.detail;
  EXPECT_FALSE(p.model_calls);
  const pid_t sleeper = std::stoi(read(pidfile));
  // Killed with its group; once reparented it may linger as a zombie until
  // reaped, which is dead too.
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::string stat = read("/proc/" + std::to_string(sleeper) + "/stat");
    gone = stat.empty() || contains(stat, ") Z ");
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "the agent's child survived the timeout";
  if (!gone) ::kill(sleeper, SIGKILL);
  expect_sandboxes_removed();
}

TEST_F(HarnessRun, CrashesNothingAndExitCodesThatDecideNothing) {
  Proposal p = run("kill-self 9");
  EXPECT_EQ(p.status, Status::kCrashed) << p.detail;
  EXPECT_EQ(p.exit_code, 137);
  EXPECT_EQ(p.detail, "claude was killed by SIGKILL without changing anything");

  p = run("eprint 'TypeError: cannot read properties of undefined'; exit 3");
  EXPECT_EQ(p.status, Status::kCrashed);
  EXPECT_EQ(p.exit_code, 3);
  EXPECT_EQ(p.detail, "claude exited 3 without changing anything: TypeError: cannot read properties of undefined");

  p = run(std::string(kFix) + "; exit 3");
  EXPECT_EQ(p.status, Status::kProposed) << "files changed: the exit code is only recorded";
  EXPECT_EQ(p.exit_code, 3);

  p = run("nothing");
  EXPECT_EQ(p.status, Status::kNothing);
  EXPECT_EQ(p.detail, "the agent changed nothing");
  EXPECT_TRUE(p.patch.empty());
  EXPECT_TRUE(p.files.empty());
}

TEST_F(HarnessRun, PatchIsRightWhateverTheAgentDoesWithGit) {
  for (const char* git_steps : {"git-commit", "git-commit; git-reset", "rm-git", "git-commit; rm-git",
                                "git checkout -q -b agent-branch; git-commit"}) {
    SCOPED_TRACE(git_steps);
    Proposal p = run(std::string(kFix) + "; write src/new.cc 'int sub(int a, int b)\\n'; " + git_steps);
    EXPECT_EQ(p.status, Status::kProposed) << p.detail << "\n" << p.log;
    EXPECT_EQ(p.files, (std::vector<std::string>{"src/calc.cc", "src/new.cc"}));
    EXPECT_TRUE(contains(p.patch, "+int add(int a, int b) { return a + b; }"));
    EXPECT_TRUE(gitx::Repo::open(repo).check_patch_applies(p.patch));
    expect_real_repo_untouched();
  }
  // The patch is the work tree as the agent leaves it: a reset --hard that
  // throws away its own uncommitted edit leaves only the untracked file.
  Proposal p = run(std::string(kFix) + "; write src/new.cc 'int sub(int a, int b)\\n'; git-reset");
  EXPECT_EQ(p.status, Status::kProposed) << p.detail;
  EXPECT_EQ(p.files, std::vector<std::string>{"src/new.cc"});
}

TEST_F(HarnessRun, WithoutItsGitTheAgentCannotReachTheRealRepository) {
  // After rm -rf .git, git searches upwards; the sandboxes live inside the
  // user's repository, and GIT_CEILING_DIRECTORIES stops that search.
  // With .phoenix/ not ignored, a `git add -A` that reached the real
  // repository would stage the sandbox and commit it.
  write(repo, ".gitignore", "build/\n");
  head = commit_all(repo, "do not ignore .phoenix");
  Proposal p = run(std::string(kFix) + "; rm-git; git-commit");
  EXPECT_EQ(p.status, Status::kProposed) << p.detail << "\n" << p.log;
  EXPECT_EQ(p.exit_code, 4) << "git found no repository";
  expect_real_repo_untouched();
}

// The copying sandbox cannot stop a write by absolute path into the real
// repository; it notices it afterwards and aborts. The overlay sandbox makes
// the real work tree read-only, so the same write fails inside the agent.
struct ScopedSandboxKind {
  explicit ScopedSandboxKind(const char* kind) { ::setenv("PHOENIX_SANDBOX", kind, 1); }
  ~ScopedSandboxKind() { ::unsetenv("PHOENIX_SANDBOX"); }
};

TEST_F(HarnessRun, WritingIntoTheRealRepositoryAborts) {
  ScopedSandboxKind copy("copy");
  Proposal p = run(std::string(kFix) + "; write-outside " + repo + "/src/calc.cc 'hacked'");
  EXPECT_EQ(p.status, Status::kAborted) << p.detail;
  // Where the kernel allows it the copying sandbox's agent is confined too
  // (setup/guard.h): its write never lands and is told; elsewhere it
  // lands, is noticed afterwards and put back.
  if (util::overlay_unavailable_reason().empty())
    EXPECT_EQ(p.detail, "claude wrote outside its sandbox: the agent wrote src/calc.cc in the checkout " + repo +
                            ", not its own tree; kept out");
  else EXPECT_EQ(p.detail, "the real repository changed while claude ran: src/calc.cc modified in the work tree");
  EXPECT_EQ(read(repo + "/src/calc.cc").find("hacked"), std::string::npos);
  EXPECT_TRUE(p.patch.empty());
  expect_sandboxes_removed();
}

TEST_F(HarnessRun, CommittingInTheRealRepositoryAborts) {
  ScopedSandboxKind copy("copy");
  Proposal p = run("git -C " + repo + " commit -q --allow-empty -m sneaky");
  EXPECT_EQ(p.status, Status::kAborted) << p.detail;
  // The guard puts the branch back and says so (gitx/guard.h).
  EXPECT_TRUE(contains(p.detail, "the agent moved refs/heads/main from " + head.substr(0, 7))) << p.detail;
  EXPECT_TRUE(contains(p.detail, "; put back")) << p.detail;
  EXPECT_EQ(trim(git(repo, {"rev-parse", "HEAD"})), head);
}

TEST_F(HarnessRun, TheOverlaySandboxRefusesWritesIntoTheRealRepository) {
  if (std::string why = sandbox::overlay_unavailable_reason(); !why.empty())
    GTEST_SKIP() << "no unprivileged overlay here: " << why;
  ScopedSandboxKind overlay("overlay");
  std::string before = read(repo + "/src/calc.cc");
  Proposal w = run("write-outside " + repo + "/src/calc.cc 'hacked'");
  EXPECT_NE(w.status, Status::kProposed) << w.detail;
  EXPECT_EQ(read(repo + "/src/calc.cc"), before);
  Proposal c = run("git -C " + repo + " commit -q --allow-empty -m sneaky");
  EXPECT_NE(c.status, Status::kProposed) << c.detail;
  EXPECT_EQ(trim(git(repo, {"rev-parse", "HEAD"})), head);
  expect_sandboxes_removed();
}

TEST_F(HarnessRun, HugeOutputIsBounded) {
  Proposal p = run("huge-output 5000000; print 'the last line'");
  EXPECT_EQ(p.status, Status::kNothing);
  EXPECT_LT(p.log.size(), 300u * 1024);
  EXPECT_TRUE(contains(p.log, "bytes omitted"));
  EXPECT_TRUE(contains(p.log, "the last line"));
}

TEST_F(HarnessRun, SymlinkOutOfTheSandboxIsProposedAsALinkNotItsTarget) {
  write(tmp.path(), "secret-outside.txt", "TOP SECRET CONTENT\n");
  Proposal p = run("symlink-out escape " + (tmp / "secret-outside.txt"));
  EXPECT_EQ(p.status, Status::kProposed) << p.detail;
  EXPECT_EQ(p.files, std::vector<std::string>{"escape"});
  EXPECT_TRUE(contains(p.patch, "new file mode 120000"));
  EXPECT_FALSE(contains(p.patch, "TOP SECRET CONTENT"));
}

TEST_F(HarnessRun, AgentSeesNeitherSecretsNorIgnoredFiles) {
  write(repo, ".env", "API_KEY=sk-live\n");
  commit_all(repo, "oops, a tracked .env");
  head = trim(git(repo, {"rev-parse", "HEAD"}));
  write(repo, "build/cache.txt", "ignored\n");
  Proposal p = run("cat .env");
  EXPECT_EQ(p.status, Status::kCrashed) << p.detail;
  EXPECT_EQ(p.exit_code, 6);
  p = run("cat build/cache.txt");
  EXPECT_EQ(p.exit_code, 6);
  cfg.sandbox_carry = {"build/cache.txt"};
  p = run("cat build/cache.txt");
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_TRUE(contains(p.log, "ignored"));
  EXPECT_FALSE(contains(p.log, "# sandbox:"));
  // --explain says what the agent could not see.
  Request r = request("nothing");
  r.explain = true;
  p = HarnessFixer().propose(r);
  EXPECT_TRUE(contains(p.log, "# sandbox: 5 files copied; not .env (secret)\n")) << p.log;
}

TEST_F(HarnessRun, EarlierAttemptsAndTheRepositoryTemplateReachTheAgent) {
  write(repo, "ci/prompt.md", "Check {{check_id}}; before: {{earlier_attempts}}\n");
  head = commit_all(repo, "template");
  cfg.prompt_template = "ci/prompt.md";
  Request r = request("nothing");
  EarlierAttempt a;
  a.fixer = "journal";
  a.outcome = "red: exit=1";
  a.patch = "--- a/src/calc.cc\n+++ b/src/calc.cc\n";
  r.earlier.push_back(a);
  HarnessFixer().propose(r);
  const std::string prompt = only_record()["stdin"];
  EXPECT_EQ(prompt.rfind("Check unit; before: ### Attempt 1 (journal): red: exit=1", 0), 0u) << prompt;
  EXPECT_TRUE(contains(prompt, "--- a/src/calc.cc"));
}

// --- agent/: classes of run, reset times, waits ------------------------------

TEST(AgentClassify, ALimitSeenOnlyAtTheTimeoutIsThatLimit) {
  RunFacts f;
  f.program = "gemini";
  f.timed_out = true;
  f.timeout_s = 30;
  f.output = "Attempt 3 failed with status 429. Retrying with backoff...\n";
  Classification c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kRateLimited) << c.detail;
  f.output = "Reconnecting... 1/5 (stream disconnected before completion: error sending request)\n";
  EXPECT_EQ(classify_run(f, kNow).status, Status::kUnreachable);
  f.output = "thinking...\n";
  EXPECT_EQ(classify_run(f, kNow).status, Status::kTimeout);
}

TEST(AgentClassify, ACrashKeepsTheFirstErrorLineAndTheLastLines) {
  RunFacts f;
  f.program = "codex";
  f.exit_code = 2;
  f.output =
      "error: unexpected argument '--full-auto' found\n\nUsage: codex exec [OPTIONS] [PROMPT]\n\n"
      "For more information, try '--help'.\n";
  Classification c = classify_run(f, kNow);
  EXPECT_EQ(c.status, Status::kCrashed);
  EXPECT_TRUE(contains(c.detail, "error: unexpected argument '--full-auto' found")) << c.detail;
  EXPECT_TRUE(contains(c.detail, "For more information, try '--help'.")) << c.detail;
  std::string big(100'000, 'x');
  f.output = "fatal: boom\n" + big + "\n" + big + "\nlast words\n";
  c = classify_run(f, kNow);
  EXPECT_LT(c.detail.size(), 2'000u);
  EXPECT_TRUE(contains(c.detail, "fatal: boom")) << c.detail.substr(0, 300);
  EXPECT_TRUE(contains(c.detail, "last words"));
}

TEST(AgentClassify, ModelCallsAreTheCliOwnCountElseNull) {
  RunFacts f;
  f.program = "claude";
  f.changed_files = 1;
  f.output =
      R"({"type":"result","subtype":"success","is_error":false,"num_turns":3,"total_cost_usd":0.01,"result":"ok"})";
  EXPECT_EQ(classify_run(f, kNow).model_calls, 3);
  f.output = "done\n";
  EXPECT_FALSE(classify_run(f, kNow).model_calls);
}

TEST(AgentResetTimes, WallClockAndDurations) {
  // 2023-11-14T22:13:20Z.
  EXPECT_EQ(parse_retry_after_ms("try again in 2h 13m", kNow), (2 * 3600 + 13 * 60) * 1000LL);
  EXPECT_EQ(parse_retry_after_ms("Retry-After: 120", kNow), 120'000);
  // 23:00 UTC is 46 min 40 s after now.
  EXPECT_EQ(parse_retry_after_ms("You've hit your limit · resets 11pm (UTC)", kNow), 2'800'000);
  // 03:00 in Berlin (UTC+1 in November) is 02:00 UTC the next day.
  EXPECT_EQ(parse_retry_after_ms("5-hour limit reached ∙ resets 3am (Europe/Berlin)", kNow),
            (3 * 3600 + 46 * 60 + 40) * 1000LL);
  // "at 14:05" in the local zone: somewhere in the next 24 hours.
  auto at = parse_retry_after_ms("Rate limited: try again at 14:05", kNow);
  ASSERT_TRUE(at);
  EXPECT_GT(*at, 0);
  EXPECT_LE(*at, 24 * 3600 * 1000LL);
  EXPECT_FALSE(parse_retry_after_ms("resets 3 times a day", kNow));
  // codex names the day when the reset is past midnight (its own words, as
  // it printed them against our model server at 22:08 UTC).
  EXPECT_EQ(
      parse_retry_after_ms("You've hit your usage limit. Upgrade to Pro, visit https://chatgpt.com/settings/usage "
                           "to purchase more credits or try again at Nov 15th, 2023 1:08 AM. (UTC)",
                           kNow),
      (2 * 3600 + 54 * 60 + 40) * 1000LL);
  EXPECT_EQ(parse_retry_after_ms("try again at nov 16, 2023 at 10:13 pm (UTC)", kNow), (48 * 3600 - 20) * 1000LL);
  // Without the year: the next such day.
  EXPECT_EQ(parse_retry_after_ms("resets Nov 15th 1:08 AM (UTC)", kNow), (2 * 3600 + 54 * 60 + 40) * 1000LL);
  // A day that is past says nothing usable; a day 32 is no day.
  EXPECT_FALSE(parse_retry_after_ms("try again at Nov 13th, 2023 1:08 AM (UTC)", kNow));
  EXPECT_FALSE(parse_retry_after_ms("try again at Nov 32nd, 2023 1:08 AM (UTC)", kNow));
}

TEST(AgentWaits, BackoffWithJitterOrTheResetTime) {
  Classification c;
  for (int i = 0; i < 20; ++i) {
    long long w0 = wait_ms(c, 0), w3 = wait_ms(c, 3);
    EXPECT_GE(w0, 800);
    EXPECT_LE(w0, 1200);
    EXPECT_GE(w3, 6'400);
    EXPECT_LE(w3, 9'600);
  }
  EXPECT_LE(wait_ms(c, 30), 375'000);
  c.retry_after_ms = 3'600'000;
  long long w = wait_ms(c, 0);
  EXPECT_GE(w, 3'600'000);
  EXPECT_LE(w, 3'960'000);
  EXPECT_EQ(wait_ms(c, 0, 5'000), 5'000) << "never past what is left";
}

TEST(AgentProgram, EnvIsNotTheAgent) {
  EXPECT_EQ(program_name({"env", "-u", "HOME", "FOO=1", "/opt/bin/claude", "-p"}), "claude");
  EXPECT_EQ(program_name({"/usr/bin/codex", "exec"}), "codex");
  EXPECT_EQ(program_name({"env", "A=1"}), "env");
}

}  // namespace
}  // namespace phoenix::fixers
