// Webhook notifications: the body of each format, retries against a real
// HTTP server on 127.0.0.1, and what a dead port does (nothing fatal).
#include <gtest/gtest.h>

#include "config/config.h"
#include "loop/notify.h"
#include "recording_server.h"
#include "test_util.h"
#include "util/error.h"
#include "util/json.h"

namespace phoenix::loop {
namespace {

using util::Json;

NotifyEvent escalation(const std::string& note) {
  NotifyEvent e;
  e.kind = "escalated";
  e.summary = "escalated on export CSV: task:t2";
  e.repository = "/home/me/shop";
  e.branch = "phoenix/loop-20261202";
  e.state_path = "/home/me/shop/.phoenix/loop-state.json";
  e.phase = "escalated";
  IncidentFacts f = read_incident(note);
  e.incident_path = note;
  e.incident_title = f.title;
  e.signature = f.signature;
  e.rollback_sha = f.rollback_sha;
  return e;
}

class Notify : public ::testing::Test {
 protected:
  test::ScopedTempDir tmp;
  std::string note = tmp / "incidents/2026-12-02-03-14.md";
  const std::string sha = std::string(40, 'a');
  void SetUp() override {
    test::write(tmp.path(), "incidents/2026-12-02-03-14.md",
                "# Incident \xE2\x80\x94 2026-12-02 03:14\n\n## Failure type\n\nunit\n\n## Check\n\n`task:t2` "
                "\xE2\x80\x94 \n\nSignal: `exit=1`\n\n## Failure signatures\n\n- issue: `0123abcd`\n\n## State: "
                "rolled back to " +
                    sha + "\n");
  }
  config::Webhook hook(const std::string& url, const std::string& format, int attempts = 3) {
    config::Webhook w;
    w.url = url;
    w.format = format;
    w.attempts = attempts;
    w.timeout_s = 5;
    return w;
  }
};

TEST_F(Notify, ReadsTheIncidentNote) {
  IncidentFacts f = read_incident(note);
  EXPECT_EQ(f.title, "Incident \xE2\x80\x94 2026-12-02 03:14 \xE2\x80\x94 task:t2");
  EXPECT_EQ(f.signature, "0123abcd");
  EXPECT_EQ(f.rollback_sha, sha);
  EXPECT_EQ(read_incident(tmp / "missing.md").title, "");
}

TEST_F(Notify, EachFormatPostsItsBody) {
  test::RecordingServer server;
  const auto noop = [](long long) {};
  for (const char* format : {"json", "ntfy", "slack"})
    ASSERT_TRUE(deliver(hook(server.url("/" + std::string(format)), format), escalation(note), noop).ok) << format;
  auto req = server.requests();
  ASSERT_EQ(req.size(), 3u);
  Json j = Json::parse(req[0].body);
  EXPECT_EQ(req[0].method, "POST");
  EXPECT_EQ(req[0].headers["content-type"], "application/json");
  EXPECT_EQ(j["event"], "escalated");
  EXPECT_EQ(j["branch"], "phoenix/loop-20261202");
  EXPECT_EQ(j["incident"]["signature"], "0123abcd");
  EXPECT_EQ(j["incident"]["rollback_sha"], sha);
  EXPECT_EQ(j["incident"]["path"], note);
  EXPECT_EQ(j["incident"]["title"], "Incident \xE2\x80\x94 2026-12-02 03:14 \xE2\x80\x94 task:t2");
  EXPECT_TRUE(j["exit_code"].is_null());
  // ntfy: plain text with its headers, to the topic's URL.
  EXPECT_EQ(req[1].target, "/ntfy");
  EXPECT_EQ(req[1].headers["title"], "phoenix-loop escalated");
  EXPECT_EQ(req[1].headers["priority"], "high");
  EXPECT_EQ(req[1].body,
            "escalated on export CSV: task:t2\nRepository: shop (branch phoenix/loop-20261202)\n"
            "Incident: Incident \xE2\x80\x94 2026-12-02 03:14 \xE2\x80\x94 task:t2\nSignature: 0123abcd\n"
            "Rolled back to: " +
                sha + "\nReport: " + note + "\n");
  // slack: an incoming webhook's {"text"}.
  std::string text = Json::parse(req[2].body)["text"];
  EXPECT_EQ(text.rfind("*phoenix-loop escalated*\nescalated on export CSV", 0), 0u) << text;
  EXPECT_NE(text.find("Signature: 0123abcd"), std::string::npos);
}

TEST_F(Notify, RetriesAServerErrorThenDelivers) {
  test::RecordingServer server({500, 503});
  std::vector<long long> slept;
  Delivery d = deliver(hook(server.url(), "json", 4), escalation(note), [&](long long ms) { slept.push_back(ms); });
  EXPECT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.attempts, 3);
  EXPECT_EQ(server.requests().size(), 3u);
  ASSERT_EQ(slept.size(), 2u);
  EXPECT_GE(slept[0], 400);  // 0.5 s +-20 %, then doubling
  EXPECT_GE(slept[1], 800);
}

TEST_F(Notify, ClientErrorIsNotRetriedAndDeadPortGivesUp) {
  test::RecordingServer server({404});
  const auto noop = [](long long) {};
  Delivery d = deliver(hook(server.url(), "slack"), escalation(note), noop);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.attempts, 1);
  EXPECT_EQ(d.error, "HTTP 404");
  std::string dead = "http://127.0.0.1:" + std::to_string(test::dead_port()) + "/hook";
  d = deliver(hook(dead, "ntfy", 2), escalation(note), noop);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.attempts, 2);
  EXPECT_NE(d.error.find("connection refused"), std::string::npos) << d.error;
}

TEST_F(Notify, ConfigTakesAWebhookObjectAndRefusesHttps) {
  config::Config c = config::parse(
      R"({"loop": {"notify": {"url": "http://127.0.0.1:8080/phoenix", "format": "ntfy", "command": ["true"]}}})", "p");
  ASSERT_TRUE(c.loop.webhook);
  EXPECT_EQ(c.loop.webhook->format, "ntfy");
  EXPECT_EQ(c.loop.notify, (std::vector<std::string>{"true"}));
  EXPECT_EQ(config::parse(R"({"loop": {"notify": ["notify-send", "x"]}})", "p").loop.notify.size(), 2u);
  try {
    config::parse("{\"loop\": {\n\"notify\": {\"url\": \"https://ntfy.sh/x\"}}}", "phoenix.json");
    ADD_FAILURE() << "https accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("phoenix.json:2:", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("https is not supported (Phoenix links no TLS library)"), std::string::npos);
  }
  EXPECT_THROW(config::parse(R"({"loop": {"notify": {"url": "http://x/", "format": "teams"}}})", "p"), ConfigError);
}

}  // namespace
}  // namespace phoenix::loop
