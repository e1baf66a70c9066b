// agent/limits: what each provider means by its limits, as its CLI prints
// them (docs/agents.md "Limits, per provider"). Pure: a fixed "now".
#include <gtest/gtest.h>

#include <string>

#include "agent/agent.h"

namespace phoenix::agent {
namespace {

// 2023-11-14T22:13:20Z: 14:13:20 in Los Angeles (PST, UTC-8).
constexpr long long kNow = 1'700'000'000'000;
// 2024-07-01T12:00:00Z: 05:00 in Los Angeles (PDT, UTC-7).
constexpr long long kSummer = 1'719'835'200'000;

Classification classify(const std::string& program, const std::string& output, long long now = kNow) {
  RunFacts f;
  f.program = program;
  f.exit_code = 1;
  f.output = output;
  return classify_run(f, now);
}

// --- Gemini --------------------------------------------------------------------------

TEST(AgentLimitsGemini, ResourceExhaustedIsARateLimitNotQuota) {
  // Gemini's per-minute limit: 429 RESOURCE_EXHAUSTED, "check quota" in its words.
  Classification c = classify("gemini",
                              "Attempt 1 failed with status 429. Retrying with backoff... ApiError: "
                              "{\"error\":{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check "
                              "quota).\",\"status\":\"RESOURCE_EXHAUSTED\"}}\n");
  EXPECT_EQ(c.status, Status::kRateLimited) << c.detail;
  EXPECT_EQ(c.retry_after_ms, 0) << "no time given: the waiter backs off";
  // The free tier's words name billing, its status and RetryInfo say wait.
  c = classify("gemini",
               "You exceeded your current quota, please check your plan and billing details.\n"
               "\"status\": \"RESOURCE_EXHAUSTED\",\n"
               "\"@type\": \"type.googleapis.com/google.rpc.RetryInfo\", \"retryDelay\": \"41s\"\n");
  EXPECT_EQ(c.status, Status::kRateLimited) << c.detail;
  EXPECT_EQ(c.retry_after_ms, 41'000);
  EXPECT_TRUE(c.retry_after_from_cli);
  // gemini 0.61.0's own words for a RetryableQuotaError.
  c = classify("gemini",
               "You exceeded your current quota, please check your plan and billing details.\n"
               "Suggested retry after 41s.\n");
  EXPECT_EQ(c.status, Status::kRateLimited) << c.detail;
  EXPECT_EQ(c.retry_after_ms, 41'000);
}

TEST(AgentLimitsGemini, APerDayQuotaWaitsUntilMidnightPacific) {
  const std::string said =
      "{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\"}}\n"
      "quotaId: GenerateRequestsPerDayPerProjectPerModel-FreeTier, retryDelay: \"41s\"\n";
  // 14:13:20 PST to midnight: 9 h 46 min 40 s, whatever shorter delay came with it.
  Classification c = classify("gemini", said);
  EXPECT_EQ(c.status, Status::kRateLimited) << c.detail;
  EXPECT_EQ(c.retry_after_ms, 35'200'000LL);
  // In summer Los Angeles is UTC-7: 05:00 PDT to midnight is 19 h (a fixed
  // -8 would say 20 h).
  EXPECT_EQ(classify("gemini", said, kSummer).retry_after_ms, 19 * 3'600'000LL);
  // gemini 0.61.0's TerminalQuotaError for a PerDay quota id.
  c = classify("gemini", "You have exhausted your daily quota on this model.\n");
  EXPECT_EQ(c.status, Status::kRateLimited) << c.detail;
  EXPECT_EQ(c.retry_after_ms, 35'200'000LL);
}

TEST(AgentLimitsGemini, BillingDisabledIsQuota) {
  for (const char* said :
       {"This API method requires billing to be enabled. Please enable billing on project #4711 then retry.",
        "_ApiError: {\"reason\": \"BILLING_DISABLED\", \"domain\": \"googleapis.com\"}"}) {
    Classification c = classify("gemini", said + std::string("\n\"status\": \"PERMISSION_DENIED\"\n"));
    EXPECT_EQ(c.status, Status::kQuota) << said;
  }
}

// --- claude ----------------------------------------------------------------------------

TEST(AgentLimitsClaude, UsageWindowsWaitUntilTheirReset) {
  Classification c = classify("claude", "API Error: 429 rate_limit_error\nanthropic-ratelimit-unified-reset: 1700007200\n");
  EXPECT_EQ(c.status, Status::kRateLimited);
  EXPECT_EQ(c.retry_after_ms, 7'200'000);
  c = classify("claude", "Claude AI usage limit reached|1700003600\n");
  EXPECT_EQ(c.retry_after_ms, 3'600'000);
  // "resets 3am (UTC)": 22:13:20 UTC to 03:00 the next day.
  c = classify("claude", "You've hit your usage limit · resets 3am (UTC)\n");
  EXPECT_EQ(c.status, Status::kRateLimited);
  EXPECT_EQ(c.retry_after_ms, (4 * 3600 + 46 * 60 + 40) * 1000LL);
  EXPECT_EQ(classify("claude", "Credit balance is too low\n").status, Status::kQuota);
}

// --- codex -----------------------------------------------------------------------------

TEST(AgentLimitsCodex, InsufficientQuotaStopsRateLimitExceededWaits) {
  EXPECT_EQ(classify("codex", "Quota exceeded. Check your plan and billing details.\n").status, Status::kQuota);
  EXPECT_EQ(classify("codex", "stream error: {\"code\": \"insufficient_quota\", \"message\": \"You exceeded your current quota\"}\n")
                .status,
            Status::kQuota);
  Classification c = classify("codex",
                              "error: {\"message\":\"Rate limit reached for requests. Please try again in 20s.\","
                              "\"code\":\"rate_limit_exceeded\"}\n");
  EXPECT_EQ(c.status, Status::kRateLimited);
  EXPECT_EQ(c.retry_after_ms, 20'000);
  // A usage window past midnight, as codex says it.
  c = classify("codex", "You've hit your usage limit. Upgrade to Pro or try again at 3:00 AM (UTC).\n");
  EXPECT_EQ(c.status, Status::kRateLimited);
  EXPECT_EQ(c.retry_after_ms, (4 * 3600 + 46 * 60 + 40) * 1000LL);
}

// --- opencode --------------------------------------------------------------------------

TEST(AgentLimitsOpencode, ItsLogSaysWhich) {
  const std::string log = "timestamp=2026-12-03T10:00:00Z level=ERROR service=session message=\"stream error\" ";
  EXPECT_EQ(classify("opencode", log + "error.error=\"AI_APICallError: Rate limit exceeded\"\n").status,
            Status::kRateLimited);
  EXPECT_EQ(classify("opencode", log +
                                     "error.error=\"AI_APICallError: You exceeded your current quota, please check "
                                     "your plan and billing details.\"\n")
                .status,
            Status::kQuota);
}

// --- the one line ------------------------------------------------------------------------

TEST(AgentLimits, TheUnusableLineNamesTheCliAndItsCauseOnOneLine) {
  EXPECT_EQ(unusable_line("quota", "claude", "Credit balance is too low\n(billing)"),
            "harness quota: claude: Credit balance is too low (billing)");
}

}  // namespace
}  // namespace phoenix::agent
