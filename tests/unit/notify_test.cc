// Webhook notifications: the body and headers of each format (as ntfy,
// Slack, Discord and Telegram's Bot API document them), retries against a
// real HTTP server on 127.0.0.1, what a dead port does (nothing fatal), the
// token kept out of what is said, and loop.notify's bad input.
#include <gtest/gtest.h>

#include "checks/url.h"
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
  // Telegram's Bot API at `base`, its token and chat from PHX_TEST_TG_BOT and PHX_TEST_TG_CHAT.
  config::Webhook telegram(const std::string& base) {
    config::Webhook w = hook(base, "telegram");
    w.token_env = "PHX_TEST_TG_BOT";
    w.chat_env = "PHX_TEST_TG_CHAT";
    return w;
  }
  config::Webhook hook(const std::string& url, const std::string& format, int attempts = 3) {
    config::Webhook w;
    w.url = url;
    w.format = config::parse_webhook_format(format, "format");
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
  test::ScopedEnv token("PHX_TEST_TG_BOT", "123456:ABC-def_token");
  test::ScopedEnv chat("PHX_TEST_TG_CHAT", "-100200300");
  for (const char* format : {"json", "ntfy", "slack", "discord", "telegram"}) {
    config::Webhook w = hook(server.url("/" + std::string(format)), format);
    if (w.format == config::WebhookFormat::kTelegram) w = telegram(server.url(""));
    ASSERT_TRUE(deliver(w, escalation(note), noop).ok) << format;
  }
  auto req = server.requests();
  ASSERT_EQ(req.size(), 5u);
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
  // discord: a webhook's execute form, {"content"} of at most 2000 characters.
  EXPECT_EQ(req[3].headers["content-type"], "application/json");
  Json discord = Json::parse(req[3].body);
  EXPECT_EQ(discord.size(), 1u) << discord;
  EXPECT_EQ(discord["content"].get<std::string>().rfind("**phoenix-loop escalated**\nescalated on export CSV", 0), 0u);
  // telegram: sendMessage with the bot's token in the path, chat_id and text in JSON.
  EXPECT_EQ(req[4].method, "POST");
  EXPECT_EQ(req[4].target, "/bot123456:ABC-def_token/sendMessage");
  EXPECT_EQ(req[4].headers["content-type"], "application/json");
  Json tg = Json::parse(req[4].body);
  EXPECT_EQ(tg["chat_id"], "-100200300");
  EXPECT_EQ(tg["text"].get<std::string>().rfind("phoenix-loop escalated\nescalated on export CSV", 0), 0u) << tg;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(req[i].headers.count("authorization"), 0u) << i;
}

TEST_F(Notify, LongMessagesAreCutToWhatTheServiceTakes) {
  NotifyEvent e = escalation(note);
  e.summary = std::string(5000, 'x');
  WebhookSecrets s{"t0k", "42"};
  config::Webhook d = hook("http://127.0.0.1:1/x", "discord");
  EXPECT_LE(Json::parse(render_webhook(d, s, e).body)["content"].get<std::string>().size(), 2000u);
  std::string text = Json::parse(render_webhook(telegram("http://127.0.0.1:1"), s, e).body)["text"];
  EXPECT_LE(text.size(), 4096u);
  EXPECT_GT(text.size(), 4000u);
}

TEST_F(Notify, ABearerTokenFromTheEnvironmentIsSentAsAHeaderAndNeverSaid) {
  test::RecordingServer server({401});
  config::Webhook w = hook(server.url("/private-topic"), "ntfy");
  w.token_env = "PHX_TEST_NTFY_AUTH";  // a name that does not look secret: redacted all the same
  EXPECT_THROW(webhook_secrets(w), ConfigError);
  test::ScopedEnv token("PHX_TEST_NTFY_AUTH", "tk_abcdefghijklmnop");
  Delivery d = deliver(w, escalation(note), [](long long) {});
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].headers["authorization"], "Bearer tk_abcdefghijklmnop");
  EXPECT_EQ(d.error, "HTTP 401");
  // A failure's message names the URL without its path and the token by its variable.
  w.url = "http://127.0.0.1:" + std::to_string(test::dead_port()) + "/private-topic";
  d = deliver(w, escalation(note), [](long long) {});
  EXPECT_EQ(d.error.find("private-topic"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("/\xE2\x80\xA6"), std::string::npos) << d.error;
  EXPECT_EQ(redact_webhook(w, "Bearer tk_abcdefghijklmnop at " + w.url),
            "Bearer [redacted:PHX_TEST_NTFY_AUTH] at " + checks::shown_url(w.url));
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

// The one line a bad loop.notify gives (phoenix.json:LINE: field: ...).
std::string config_error(const std::string& notify) {
  try {
    config::parse("{\"loop\": {\"notify\": " + notify + "}}", "phoenix.json");
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exit_code(), kExitConfig);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << notify << " accepted";
  return "";
}

TEST_F(Notify, ConfigTakesAWebhookObjectOverHttpOrHttps) {
  config::Config c = config::parse(
      R"({"loop": {"notify": {"url": "http://127.0.0.1:8080/phoenix", "format": "ntfy", "command": ["true"]}}})", "p");
  ASSERT_TRUE(c.loop.webhook);
  EXPECT_EQ(c.loop.webhook->format, config::WebhookFormat::kNtfy);
  EXPECT_EQ(c.loop.notify, (std::vector<std::string>{"true"}));
  EXPECT_EQ(config::parse(R"({"loop": {"notify": ["notify-send", "x"]}})", "p").loop.notify.size(), 2u);
  c = config::parse(R"({"loop": {"notify": {"url": "https://ntfy.sh/x", "verify": true}}})", "p");
  EXPECT_EQ(c.loop.webhook->url, "https://ntfy.sh/x");
  c = config::parse(R"({"loop": {"notify": {"format": "telegram"}}})", "p");
  EXPECT_EQ(c.loop.webhook->url, "https://api.telegram.org");
  EXPECT_EQ(c.loop.webhook->token_env, "PHOENIX_TELEGRAM_TOKEN");
  EXPECT_EQ(c.loop.webhook->chat_env, "PHOENIX_TELEGRAM_CHAT");
  c = config::parse(R"({"loop": {"notify": {"format": "telegram", "token_env": "TG", "chat_env": "CHAT"}}})", "p");
  EXPECT_EQ(c.loop.webhook->token_env, "TG");
}

TEST_F(Notify, BadNotifyIsOneLineNamingTheField) {
  EXPECT_NE(config_error(R"({"url": "http://x/", "format": "teams"})")
                .find("loop.notify.format: 'teams' is not one of json|ntfy|slack|discord|telegram"),
            std::string::npos);
  EXPECT_NE(
      config_error(R"({"url": "https://ntfy.sh/x", "verify": false})").find("loop.notify.verify: false is not offered"),
      std::string::npos);
  EXPECT_NE(config_error(R"({"url": "ftp://x/"})").find("loop.notify.url: 'ftp://x/"), std::string::npos);
  EXPECT_NE(config_error(R"({"format": "telegram", "token_env": "a b"})").find("loop.notify.token_env: must name"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"url": "https://x/y", "chat_env": "C"})").find("loop.notify.chat_env"), std::string::npos);
  // A secret in the URL stays out of the message.
  std::string e = config_error(R"({"url": "https://hooks.slack.com:99999/services/T0/B0/SECRETPART"})");
  EXPECT_NE(e.find("https://hooks.slack.com:99999/\xE2\x80\xA6' has an invalid port"), std::string::npos) << e;
  EXPECT_EQ(e.find("SECRETPART"), std::string::npos) << e;
  // Telegram's variables are looked at when the loop starts (or notify --test), not when the file loads.
  config::Webhook w = config::parse(R"({"loop": {"notify": {"format": "telegram", "token_env": "PHX_TEST_UNSET_TG",
                                       "chat_env": "PHX_TEST_UNSET_CHAT"}}})",
                                    "p")
                          .loop.webhook.value();
  try {
    webhook_secrets(w);
    ADD_FAILURE() << "no token accepted";
  } catch (const ConfigError& err) {
    EXPECT_STREQ(err.what(), "loop.notify.token_env: PHX_TEST_UNSET_TG is not set (the Telegram bot token)");
  }
  test::ScopedEnv token("PHX_TEST_UNSET_TG", "123:abcdefgh");
  EXPECT_THROW(webhook_secrets(w), ConfigError);  // the chat is still missing
}

}  // namespace
}  // namespace phoenix::loop
