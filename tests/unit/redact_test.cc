// Secrets: util/redact (values of secret-looking environment variables) and,
// end to end, that they never reach evidence, incident notes or the trace,
// and that the sandbox never receives secret files.
#include "util/redact.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "recording_server.h"
#include "test_util.h"
#include "util/text.h"

namespace phoenix::util {
namespace {

using test::ScopedEnv;

TEST(Redact, SecretNamesAreMatchedByWordAnyCase) {
  for (const char* n : {"GITHUB_TOKEN", "api_key", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                        "MyTokenFile", "client_secret"})
    EXPECT_TRUE(secret_name(n)) << n;
  for (const char* n : {"HOME", "PATH", "PASSWD_FILE", "TOKYO", "SEC", "USER"}) EXPECT_FALSE(secret_name(n)) << n;
}

TEST(Redact, ReplacesEveryOccurrenceWithTheVariablesName) {
  ScopedEnv a("PHX_TEST_API_TOKEN", "tok-1234567890");
  ScopedEnv b("PHX_TEST_PLAIN", "tok-1234567890-not-secret-name");
  EXPECT_EQ(redact_secrets(std::string("auth tok-1234567890 and again tok-1234567890.")),
            "auth [redacted:PHX_TEST_API_TOKEN] and again [redacted:PHX_TEST_API_TOKEN].");
  EXPECT_EQ(redact_secrets(std::string("nothing secret here")), "nothing secret here");
}

TEST(Redact, ShortValuesAreLeftAloneAndLongestWins) {
  ScopedEnv a("PHX_TEST_KEY_SHORT", "abc");  // shorter than kMinSecretLength
  ScopedEnv b("PHX_TEST_SECRET_A", "hunter22");
  ScopedEnv c("PHX_TEST_SECRET_B", "hunter22-and-more");
  EXPECT_EQ(redact_secrets(std::string("abc hunter22-and-more hunter22")),
            "abc [redacted:PHX_TEST_SECRET_B] [redacted:PHX_TEST_SECRET_A]");
}

TEST(Redact, JsonStringsAndKeysAreRedactedNumbersKept) {
  ScopedEnv a("PHX_TEST_PASSWORD", "s3cr3t-pass");
  Json j = {
      {"evidence", "login with s3cr3t-pass failed"}, {"n", 42}, {"list", {"s3cr3t-pass", 1}}, {"s3cr3t-pass", true}};
  Json r = redact_secrets(j);
  std::string dumped = r.dump();
  EXPECT_EQ(dumped.find("s3cr3t-pass"), std::string::npos) << dumped;
  EXPECT_EQ(r["evidence"], "login with [redacted:PHX_TEST_PASSWORD] failed");
  EXPECT_EQ(r["n"], 42);
  EXPECT_EQ(r["list"][0], "[redacted:PHX_TEST_PASSWORD]");
  EXPECT_TRUE(r.contains("[redacted:PHX_TEST_PASSWORD]"));
}

}  // namespace
}  // namespace phoenix::util

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

class Secrets : public ::testing::Test {
 protected:
  void SetUp() override {
    // The copying sandbox (sandbox_test.cc covers the list itself).
    ::setenv("PHOENIX_SANDBOX", "copy", 1);
    repo = init_repo(tmp / "repo");
    write(repo, "src/conf.sh", "LIMIT=11\n");
    write(repo, ".gitignore", ".phoenix/\nincidents/\n");
  }
  void TearDown() override { ::unsetenv("PHOENIX_SANDBOX"); }
  std::string all_written() {
    std::string s;
    for (const auto& dir : {repo + "/.phoenix", repo + "/incidents"}) {
      if (!fs::exists(dir)) continue;
      for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() != ".sqlite") s += read(e.path().string());
    }
    return s;
  }
  ScopedTempDir tmp;
  std::string repo;
};

// A check that prints secrets from its environment: the evidence, the
// incident note and the trace show the variable's name, never its value.
TEST_F(Secrets, EnvironmentSecretsAreRedactedInEvidenceIncidentsAndTrace) {
  write(
      repo, "check.sh",
      "#!/bin/sh\necho \"calling api with $DEPLOY_API_TOKEN as $DEPLOY_USER\"\necho \"db password: $DB_PASSWORD\"\nexit 1\n");
  fs::permissions(repo + "/check.sh", fs::perms::owner_all, fs::perm_options::add);
  Json cfg = {
      {"checks", {{{"id", "api"}, {"kind", "command_exit"}, {"target", {"./check.sh"}}, {"editable", {"src/**"}}}}},
      {"fixers", {"noop"}}};
  write(repo, "phoenix.json", cfg.dump());
  commit_all(repo, "initial");
  std::vector<std::pair<std::string, std::string>> env{{"DEPLOY_API_TOKEN", "ghp_live_0123456789abcdef"},
                                                       {"DB_PASSWORD", "correct-horse-battery"},
                                                       {"DEPLOY_USER", "deploybot"}};

  CliRun sensed = run_phoenix(repo, {"sense", "api", "--json"}, 60, env);
  EXPECT_EQ(sensed.code, 1) << sensed.out;
  EXPECT_EQ(sensed.out.find("ghp_live_0123456789abcdef"), std::string::npos) << sensed.out;
  EXPECT_NE(sensed.out.find("[redacted:DEPLOY_API_TOKEN]"), std::string::npos) << sensed.out;

  CliRun r = run_phoenix(repo, {"run"}, 60, env);
  EXPECT_EQ(r.code, 2) << r.out;
  std::string written = all_written();
  ASSERT_NE(written.find("## Evidence"), std::string::npos) << "no incident note was written";
  EXPECT_EQ(written.find("ghp_live_0123456789abcdef"), std::string::npos);
  EXPECT_EQ(written.find("correct-horse-battery"), std::string::npos);
  EXPECT_EQ(r.out.find("correct-horse-battery"), std::string::npos) << r.out;
  EXPECT_NE(written.find("[redacted:DB_PASSWORD]"), std::string::npos) << written;
  // Not a secret name: kept as it is, so the test would see a leak.
  EXPECT_NE(written.find("deploybot"), std::string::npos);
  EXPECT_EQ(run_phoenix(repo, {"trace", "verify"}).code, 0);
}

// The harness agent tries to read secret files in its sandbox: it never
// finds them, tracked or not. The same agent does find an ordinary file, so
// the test can tell the difference.
TEST_F(Secrets, SandboxNeverReceivesSecretFiles) {
  write(
      repo, "tests/limit_test.sh",
      "#!/bin/sh\n. ./src/conf.sh\n[ \"$LIMIT\" = 10 ] || { echo \"FAIL limit_test: want 10, got $LIMIT\"; exit 1; }\n");
  fs::permissions(repo + "/tests/limit_test.sh", fs::perms::owner_all, fs::perm_options::add);
  write(repo, ".env", "STRIPE_KEY=sk_live_tracked\n");  // tracked (a mistake, but it happens)
  write(repo, "config/server.pem", "-----BEGIN PRIVATE KEY-----\n");
  write(repo, "notes.txt", "ordinary\n");
  auto configure = [&](const std::string& read_first) {
    // The fix is written only when the agent could read `read_first`.
    Json cfg = {
        {"checks",
         {{{"id", "unit"}, {"kind", "command_exit"}, {"target", {"./tests/limit_test.sh"}}, {"editable", {"src/**"}}}}},
        {"fixers", {"harness"}},
        {"budgets", {{"unit", 1}}},
        {"harness",
         {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
          {"timeout_s", 30},
          {"env", {{"PHOENIX_AGENT_SCRIPT", "cat " + read_first + "; replace src/conf.sh 11 10"}}}}}};
    write(repo, "phoenix.json", cfg.dump());
    commit_all(repo, "configure to read " + read_first);
  };
  for (const std::string secret : {".env", "config/server.pem"}) {
    configure(secret);
    CliRun r = run_phoenix(repo, {"run"});
    EXPECT_EQ(r.code, 2) << secret << " reached the sandbox:\n" << r.out;
    EXPECT_EQ(all_written().find("sk_live_tracked"), std::string::npos);
    EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=11\n");
  }
  configure("notes.txt");
  CliRun ok = run_phoenix(repo, {"run"});
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
  // The user's secret files are untouched.
  EXPECT_EQ(read(repo + "/.env"), "STRIPE_KEY=sk_live_tracked\n");
}

}  // namespace
}  // namespace phoenix::test
