// Notifications over HTTPS end to end: a TLS server of the test's own on
// 127.0.0.1 with a certificate from a CA the test makes (`openssl` CLI),
// trusted through SSL_CERT_FILE; a certificate for another host and an
// expired one refused; an HTTP CONNECT proxy through HTTPS_PROXY (and
// NO_PROXY); `phoenix notify --test` and phoenix-loop against them, with
// the Telegram token kept out of the trace, the state file and stderr.
#include <gtest/gtest.h>

#include "checks/http.h"
#include "config/config.h"
#include "loop/notify.h"
#include "recording_server.h"
#include "test_util.h"
#include "util/json.h"

namespace phoenix::test {
namespace {

using util::Json;

class NotifyHttps : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  TestCa ca{tmp.path()};
  CertFiles good = ca.issue("good", "DNS:localhost,IP:127.0.0.1");
  ScopedEnv trust{"SSL_CERT_FILE", ca.ca().c_str()};
  ScopedEnv no_proxy{"HTTPS_PROXY", nullptr};
  ScopedEnv no_proxy_lower{"https_proxy", nullptr};
  ScopedEnv no_exceptions{"NO_PROXY", nullptr};
  ScopedEnv no_exceptions_lower{"no_proxy", nullptr};

  static config::Webhook hook(const std::string& url, const std::string& format = "ntfy") {
    config::Webhook w;
    w.url = url;
    w.format = config::parse_webhook_format(format, "format");
    w.attempts = 1;
    w.timeout_s = 10;
    return w;
  }
  static loop::Delivery send(const config::Webhook& w) {
    loop::NotifyEvent e;
    e.kind = "escalated";
    e.summary = "escalated on task:t1";
    e.repository = "/home/me/shop";
    return loop::deliver(w, e, [](long long) {});
  }
};

TEST_F(NotifyHttps, DeliversOverTlsWithTheHostChecked) {
  RecordingServer server({}, good);
  server.reply("{\"id\":\"abc\",\"event\":\"message\"}");
  loop::Delivery d = send(hook(server.url("/phoenix", "localhost")));
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.status, 200);
  EXPECT_EQ(d.reply, "{\"id\":\"abc\",\"event\":\"message\"}");
  d = send(hook(server.url("/phoenix", "127.0.0.1")));
  ASSERT_TRUE(d.ok) << d.error;
  auto req = server.requests();
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[0].sni, "localhost");  // SNI for a name
  EXPECT_EQ(req[1].sni, "");           // none for an address (RFC 6066)
  EXPECT_EQ(req[0].target, "/phoenix");
  EXPECT_EQ(req[0].headers["title"], "phoenix-loop escalated");
  EXPECT_EQ(req[0].headers["priority"], "high");
  EXPECT_EQ(req[0].headers["tags"], "rotating_light");
  EXPECT_EQ(req[0].headers["host"], "localhost:" + std::to_string(server.port()));
}

TEST_F(NotifyHttps, UntrustedWrongHostAndExpiredCertificatesAreRefused) {
  {
    ScopedEnv system_store("SSL_CERT_FILE", nullptr);  // the system's store does not know the test's CA
    RecordingServer server({}, good);
    loop::Delivery d = send(hook(server.url("/x", "localhost")));
    EXPECT_FALSE(d.ok);
    EXPECT_NE(d.error.find("is not trusted: unable to get local issuer certificate"), std::string::npos) << d.error;
    EXPECT_TRUE(server.requests().empty());
  }
  RecordingServer other({}, ca.issue("other", "DNS:example.com"));
  loop::Delivery d = send(hook(other.url("/x", "localhost")));
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.error.find("the certificate of localhost is not trusted: hostname mismatch"), std::string::npos)
      << d.error;
  d = send(hook(other.url("/x", "127.0.0.1")));
  EXPECT_NE(d.error.find("IP address mismatch"), std::string::npos) << d.error;
  EXPECT_TRUE(other.requests().empty());

  RecordingServer expired({}, ca.issue("expired", "DNS:localhost,IP:127.0.0.1", /*expired=*/true));
  d = send(hook(expired.url("/x", "localhost")));
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.error.find("certificate has expired"), std::string::npos) << d.error;
  EXPECT_TRUE(expired.requests().empty());
}

TEST_F(NotifyHttps, GoesThroughTheHttpsProxyUnlessNoProxyNamesTheHost) {
  RecordingServer server({}, good);
  ConnectProxy proxy;
  const std::string authority = "localhost:" + std::to_string(server.port());
  {
    ScopedEnv via("HTTPS_PROXY", proxy.url().c_str());
    ScopedEnv none("NO_PROXY", "example.com,.internal");
    loop::Delivery d = send(hook(server.url("/t", "localhost"), "slack"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(proxy.targets(), std::vector<std::string>{authority});
    ScopedEnv direct("NO_PROXY", "example.com, localhost");
    d = send(hook(server.url("/t", "localhost"), "slack"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(proxy.targets().size(), 1u) << "NO_PROXY's host went through the proxy";
  }
  ASSERT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(server.requests()[0].sni, "localhost");  // TLS end to end through the tunnel
  EXPECT_EQ(Json::parse(server.requests()[0].body)["text"].get<std::string>().rfind("*phoenix-loop escalated*", 0), 0u);
  // A proxy that refuses the tunnel is a failed delivery naming the proxy.
  ScopedEnv via("https_proxy", proxy.url().c_str());
  loop::Delivery d = send(hook("https://example.com:" + std::to_string(server.port()) + "/t"));
  EXPECT_NE(d.error.find("refused CONNECT example.com:"), std::string::npos) << d.error;
}

// A repository whose phoenix.json sends loop.notify to `notify`.
std::string repo_with_notify(const ScopedTempDir& tmp, const Json& notify) {
  std::string repo = init_loop_repo(tmp / "repo", "# Tasks\n\n- [ ] first task\n");
  Json cfg = {{"checks", Json::array({broken_check("nobreak", "src.txt", /*editable=*/false)})},
              {"fixers", {"noop"}},
              {"harness", scripted_harness("append work.txt 'x\\n'")},
              {"loop", loop_section(2, {{"notify", notify}})}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "initial");
  return repo;
}

TEST_F(NotifyHttps, NotifyTestSendsOneMessageAndPrintsTheAnswer) {
  RecordingServer server({}, good);
  server.reply("{\"ok\":true,\"result\":{\"message_id\":7}}");
  std::string repo = repo_with_notify(tmp, {{"format", "telegram"},
                                            {"url", server.url("", "localhost")},
                                            {"token_env", "PHX_TEST_BOT"},
                                            {"chat_env", "PHX_TEST_CHAT"}});
  CliRun r = run_phoenix(repo, {"notify", "--test"});
  EXPECT_EQ(r.code, 78) << r.out;
  EXPECT_NE(r.out.find("loop.notify.token_env: PHX_TEST_BOT is not set"), std::string::npos) << r.out;
  EXPECT_TRUE(server.requests().empty());

  ScopedEnv token("PHX_TEST_BOT", "98765:secret-bot-token");
  ScopedEnv chat("PHX_TEST_CHAT", "4242");
  r = run_phoenix(repo, {"notify", "--test"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HTTP 200 X\n{\"ok\":true,\"result\":{\"message_id\":7}}"), std::string::npos) << r.out;
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].target, "/bot98765:secret-bot-token/sendMessage");
  EXPECT_EQ(Json::parse(server.requests()[0].body)["chat_id"], "4242");
  EXPECT_EQ(r.out.find("secret-bot-token"), std::string::npos) << r.out;

  RecordingServer refusing({401}, good);
  write(repo, "phoenix.json", [&] {
    Json cfg = Json::parse(read(repo + "/phoenix.json"));
    cfg["loop"]["notify"]["url"] = refusing.url("", "localhost");
    return cfg.dump(2);
  }());
  r = run_phoenix(repo, {"notify", "--test", "--json"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("\"status\":401"), std::string::npos) << r.out;
}

TEST_F(NotifyHttps, TheLoopNeverSaysTheTokenAndNeedsItsVariables) {
  const int dead = dead_port();
  Json notify = {{"format", "telegram"},
                 {"url", "https://127.0.0.1:" + std::to_string(dead)},
                 {"token_env", "PHX_TEST_BOT"},
                 {"chat_env", "PHX_TEST_CHAT"},
                 {"attempts", 1}};
  std::string repo = repo_with_notify(tmp, notify);
  CliRun r = run_loop(repo, {"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 78) << r.out;
  EXPECT_NE(r.out.find("loop.notify.token_env: PHX_TEST_BOT is not set"), std::string::npos) << r.out;

  ScopedEnv token("PHX_TEST_BOT", "98765:secret-bot-token");  // a name that does not look secret
  ScopedEnv chat("PHX_TEST_CHAT", "4242");
  r = run_loop(repo, {"--branch", "phoenix/loop-test"});
  ASSERT_EQ(r.code, 0) << r.out;  // an undelivered notification never stops the loop
  EXPECT_NE(r.out.find("not delivered after 1 attempt(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bot[redacted:PHX_TEST_BOT]/sendMessage"), std::string::npos) << r.out;
  std::string trace = read(repo + "/.phoenix/trace.jsonl");
  EXPECT_NE(trace.find("loop.webhook"), std::string::npos);
  for (const std::string& said : {r.out, trace, read(repo + "/.phoenix/loop-state.json")})
    EXPECT_EQ(said.find("secret-bot-token"), std::string::npos) << said;
}

}  // namespace
}  // namespace phoenix::test
