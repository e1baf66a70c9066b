// End-to-end: contract and visual checks against fixture servers of ours on
// 127.0.0.1 (tests/tools/fixture_server.cc), booted fresh for every
// measurement; and `phoenix run` healing a dropped field and a colour
// regression through the scripted agent and through bisect.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "checks/check.h"
#include "checks/http.h"
#include "image/image.h"
#include "test_util.h"
#include "util/error.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

// A port nothing listens on right now.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Holds a port open (listening) for the lifetime of the object.
struct PortHolder {
  int fd = -1, port = 0;
  PortHolder() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, 4);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~PortHolder() { ::close(fd); }
};

const char* kOrders = R"({"orders":[{"id":1,"total":9.5,"note":null},{"id":2,"total":3,"note":"gift"}],"count":2})";
const char* kOrdersNoTotal = R"({"orders":[{"id":1,"note":null},{"id":2,"note":"gift"}],"count":2})";

std::uint32_t crc32(const std::string& s) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string chunk(const std::string& type, const std::string& data) {
  return be32(static_cast<std::uint32_t>(data.size())) + type + data + be32(crc32(type + data));
}

// A PNG whose header declares w x h (and carries no real pixel data).
std::string png_declaring(std::uint32_t w, std::uint32_t h) {
  std::string ihdr = be32(w) + be32(h) + std::string("\x08\x06\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) +
         chunk("IDAT", std::string("\x78\x9c\x03\x00\x00\x00\x00\x01", 8)) + chunk("IEND", "");
}

std::string solid_png(int w, int h, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  image::Image img;
  img.width = w;
  img.height = h;
  for (int i = 0; i < w * h; ++i) img.rgba.insert(img.rgba.end(), {r, g, b, 255});
  return image::encode_png(img);
}

class HttpChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    port = free_port();
    base = "http://127.0.0.1:" + std::to_string(port);
    write(repo, "www/api/orders.json", kOrders);
    write(repo, "chart/color", "40 90 200\n");
  }
  Json server(const std::string& mode = "normal", double ready_timeout_s = 10) {
    return {{"run", {test_tool("fixture_server"), "--port", std::to_string(port), "--mode", mode}},
            {"ready_url", base + "/health"},
            {"ready_timeout_s", ready_timeout_s}};
  }
  Json contract(Json extra = Json::object()) {
    Json c = {{"id", "orders"}, {"kind", "contract"}, {"target", base + "/api/orders.json"}, {"server", server()}};
    c.update(extra);
    return c;
  }
  Json visual(Json extra = Json::object()) {
    Json c = {{"id", "chart"}, {"kind", "visual"}, {"target", base + "/chart.png"}, {"server", server()}};
    c.update(extra);
    return c;
  }
  checks::SenseResult sense(const Json& check) {
    return checks::sense(checks::parse_check(check, "test", false), repo);
  }
  bool port_free() { return !checks::port_accepts("127.0.0.1", std::to_string(port)); }

  ScopedTempDir tmp;
  std::string repo, base;
  int port = 0;
};

// Suites by what they test; the fixture is the same.
class CheckServer : public HttpChecks {};
class ContractCheck : public HttpChecks {};
class VisualCheck : public HttpChecks {};

// ---- servers ----

TEST_F(CheckServer, BootedFreshForEachSenseAndStoppedAfter) {
  auto first = sense(contract());
  EXPECT_TRUE(first.ok) << first.signal << "\n" << first.evidence;
  EXPECT_TRUE(port_free()) << "the server outlived the measurement";
  write(repo, "www/api/orders.json", kOrdersNoTotal);
  auto second = sense(contract());  // a fresh server serves the new file
  EXPECT_FALSE(second.ok);
  EXPECT_EQ(second.signal, "drift: $.orders[].total removed");
  EXPECT_TRUE(port_free());
}

TEST_F(CheckServer, ThatExitsEarlyGivesItsLogTail) {
  Json c = contract();
  c["server"] = server("exit-early");
  auto r = sense(c);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.signal, "server exited early: exit=3");
  EXPECT_NE(r.evidence.find("fatal: cannot load config/app.yml"), std::string::npos) << r.evidence;
}

TEST_F(CheckServer, NeverReadyTimesOutWithItsLogTail) {
  Json c = contract();
  c["server"] = server("never-ready", 3);
  auto r = sense(c);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.signal, "server not ready after 3s");
  EXPECT_NE(r.evidence.find("last answered 503"), std::string::npos) << r.evidence;
  EXPECT_NE(r.evidence.find("still warming up"), std::string::npos) << r.evidence;
  EXPECT_TRUE(port_free());
}

TEST_F(CheckServer, RefusesATakenPort) {
  PortHolder held;
  port = held.port;
  base = "http://127.0.0.1:" + std::to_string(port);
  auto r = sense(contract());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.signal, "port taken: 127.0.0.1:" + std::to_string(port));
  EXPECT_NE(r.evidence.find("something already accepts connections"), std::string::npos) << r.evidence;
}

TEST_F(CheckServer, MissingProgramIsNamed) {
  Json c = contract();
  c["server"]["run"] = {"/nonexistent/phoenix-server"};
  auto r = sense(c);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.signal, "server not found: /nonexistent/phoenix-server");
}

// ---- contract ----

TEST_F(ContractCheck, RecordsOnFirstSightPrettyAndSortedThenHolds) {
  auto r = sense(contract());
  ASSERT_TRUE(r.ok) << r.signal << "\n" << r.evidence;
  EXPECT_EQ(r.signal, "recorded .phoenix/contracts/orders.json (7 paths)");
  std::string text = read(repo + "/.phoenix/contracts/orders.json");
  EXPECT_NE(text.find("\"$.orders[].total\": \"number\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"$.orders[].note\": \"null|string\""), std::string::npos) << text;
  EXPECT_EQ(text.find("9.5"), std::string::npos) << "values are discarded";
  EXPECT_LT(text.find("\"$.count\""), text.find("\"$.orders\""));
  auto again = sense(contract());
  EXPECT_TRUE(again.ok);
  EXPECT_EQ(again.signal, "contract holds (7 paths)");
  EXPECT_EQ(read(repo + "/.phoenix/contracts/orders.json"), text);  // not rewritten
}

TEST_F(ContractCheck, DetectsDropChangeAndAdd) {
  ASSERT_TRUE(sense(contract()).ok);
  write(repo, "www/api/orders.json", kOrdersNoTotal);
  auto dropped = sense(contract());
  EXPECT_FALSE(dropped.ok);
  EXPECT_EQ(dropped.signal, "drift: $.orders[].total removed");
  EXPECT_NE(dropped.evidence.find("field-missing  $.orders[].total\n    expected: number\n    actual:   (absent)"),
            std::string::npos)
      << dropped.evidence;

  write(repo, "www/api/orders.json", R"({"orders":[{"id":"1","total":9.5,"note":null}],"count":1})");
  auto changed = sense(contract());
  EXPECT_EQ(changed.signal, "drift: $.orders[].id number → string");

  write(repo, "www/api/orders.json", R"({"orders":[{"id":1,"total":9.5,"note":null,"coupon":"X"}],"count":1})");
  EXPECT_TRUE(sense(contract()).ok) << "an added field is fine unless strict";
  auto added = sense(contract({{"strict", true}}));
  EXPECT_FALSE(added.ok);
  EXPECT_EQ(added.signal, "drift: $.orders[].coupon added");
}

TEST_F(ContractCheck, StatusChangedAndBodyNotJson) {
  ASSERT_TRUE(sense(contract()).ok);
  write(repo, "www/api/orders.json.status", "500");
  auto status = sense(contract());
  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.signal, "drift: status 200 → 500");
  fs::remove(repo + "/www/api/orders.json.status");
  write(repo, "www/api/orders.json", "<html>oops</html>");
  auto html = sense(contract());
  EXPECT_FALSE(html.ok);
  EXPECT_EQ(html.signal, "drift: body is not JSON");
  EXPECT_NE(html.evidence.find("<html>oops</html>"), std::string::npos) << html.evidence;
}

TEST_F(ContractCheck, NonJsonOrErrorIsNeverRecorded) {
  write(repo, "www/api/orders.json", "not json");
  auto r = sense(contract());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.signal, "drift: body is not JSON");
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/contracts/orders.json"));
}

TEST_F(ContractCheck, UnreachableWithoutAServer) {
  Json c = contract();
  c.erase("server");
  auto r = sense(c);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.signal, "unreachable: GET " + base + "/api/orders.json");
  EXPECT_NE(r.evidence.find("connection refused"), std::string::npos) << r.evidence;
}

TEST_F(ContractCheck, RecordNeverAndDeletedContract) {
  auto never = sense(contract({{"record", "never"}}));
  EXPECT_FALSE(never.ok);
  EXPECT_EQ(never.signal, "no contract: .phoenix/contracts/orders.json");
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/contracts/orders.json"));

  ASSERT_TRUE(sense(contract()).ok);
  commit_all(repo, "approve the contract");
  fs::remove(repo + "/.phoenix/contracts/orders.json");
  auto deleted = sense(contract());
  EXPECT_FALSE(deleted.ok) << "a deleted contract must not be re-recorded";
  EXPECT_EQ(deleted.signal, "contract deleted: .phoenix/contracts/orders.json");
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/contracts/orders.json"));
}

TEST_F(ContractCheck, SendsMethodHeadersAndBody) {
  Json c = contract(
      {{"target", base + "/echo"}, {"method", "POST"}, {"headers", {{"X-Probe", "p1"}}}, {"body", {{"q", 1}}}});
  ASSERT_TRUE(sense(c).ok);
  std::string text = read(repo + "/.phoenix/contracts/orders.json");
  EXPECT_NE(text.find("\"$.headers[\\\"x-probe\\\"]\": \"string\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"method\": \"POST\""), std::string::npos) << text;
}

TEST_F(ContractCheck, CorruptContractFileIsAConfigError) {
  write(repo, ".phoenix/contracts/orders.json", R"({"version":1,"status":200,"shape":{"$":"thing"}})");
  try {
    sense(contract());
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(".phoenix/contracts/orders.json.shape[\"$\"]: unknown type 'thing'"),
              std::string::npos)
        << e.what();
  }
}

// ---- visual ----

TEST_F(VisualCheck, RecordsABaselineThenMatches) {
  auto r = sense(visual());
  ASSERT_TRUE(r.ok) << r.signal << "\n" << r.evidence;
  EXPECT_EQ(r.signal, "recorded .phoenix/baselines/chart.png (64x48)");
  image::Image b = image::read_png(repo + "/.phoenix/baselines/chart.png");
  EXPECT_EQ(b.width, 64);
  auto again = sense(visual());
  EXPECT_TRUE(again.ok) << again.signal;
  EXPECT_EQ(again.signal, "pixels match: 0.00% (0 of 3072)");
}

TEST_F(VisualCheck, ColourRegressionFailsWithExpectedActualAndDiff) {
  ASSERT_TRUE(sense(visual()).ok);
  write(repo, "chart/color", "220 40 40\n");
  auto r = sense(visual());
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(util::starts_with(r.signal, "pixels differ: ")) << r.signal;
  ASSERT_EQ(r.artifacts.size(), 3u);
  EXPECT_EQ(r.artifacts[0].name, "expected.png");
  EXPECT_EQ(r.artifacts[1].name, "actual.png");
  EXPECT_EQ(r.artifacts[2].name, "diff.png");
  image::Image diff = image::decode_png(r.artifacts[2].bytes, "diff");
  EXPECT_EQ(diff.width, 64);
  EXPECT_EQ(image::decode_png(r.artifacts[0].bytes, "e").rgba,
            image::read_png(repo + "/.phoenix/baselines/chart.png").rgba);
  EXPECT_NE(r.evidence.find("tolerance 0.1, max_ratio 0.001"), std::string::npos) << r.evidence;
}

TEST_F(VisualCheck, ToleranceAbsorbsNoise) {
  ASSERT_TRUE(sense(visual()).ok);
  write(repo, "chart/noise", "3\n");  // every pixel off by up to 3 per channel
  auto absorbed = sense(visual());
  EXPECT_TRUE(absorbed.ok) << absorbed.signal;
  auto strict = sense(visual({{"tolerance", 0}}));
  EXPECT_FALSE(strict.ok) << "with tolerance 0 the same noise counts: " << strict.signal;
}

TEST_F(VisualCheck, AntiAliasedEdgesIgnoredUnlessCounted) {
  ASSERT_TRUE(sense(visual()).ok);
  write(repo, "chart/aa-shift", "");  // bar edges half a pixel over: only blended edge pixels change
  auto ignored = sense(visual());
  auto counted = sense(visual({{"ignore_anti_aliasing", false}}));
  EXPECT_FALSE(counted.ok) << counted.signal;
  EXPECT_TRUE(ignored.ok) << ignored.signal << "\n" << ignored.evidence;
}

TEST_F(VisualCheck, SizeChangeIsAMismatch) {
  ASSERT_TRUE(sense(visual()).ok);
  write(repo, "chart/size", "80x48\n");
  auto r = sense(visual());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.signal, "size changed: 64x48 → 80x48");
}

TEST_F(VisualCheck, BadPicturesAreRefusedWithTheirName) {
  std::string good = solid_png(8, 8, 1, 2, 3);
  std::string corrupt = good;
  corrupt.replace(12, 4, "IHDX");
  struct Case {
    std::string name, bytes;
  } cases[] = {
      {"truncated", good.substr(0, good.size() / 2)},    {"corrupt", corrupt},
      {"not-png", "<html>this is not a picture</html>"}, {"zero", png_declaring(0, 0)},
      {"huge", png_declaring(100000, 100000)},
  };
  for (const auto& c : cases) {
    write(repo, "www/" + c.name + ".png", c.bytes);
    auto r = sense(visual({{"id", c.name}, {"target", base + "/" + c.name + ".png"}}));
    EXPECT_FALSE(r.ok) << c.name;
    EXPECT_EQ(r.signal, "bad image: actual") << c.name << ": " << r.evidence;
    EXPECT_NE(r.evidence.find("actual image from GET " + base + "/" + c.name + ".png"), std::string::npos)
        << r.evidence;
    EXPECT_FALSE(fs::exists(repo + "/.phoenix/baselines/" + c.name + ".png"))
        << c.name << " must not become a baseline";
  }
}

TEST_F(VisualCheck, BadBaselineAndBaselineOfAnotherSize) {
  write(repo, ".phoenix/baselines/chart.png", "garbage");
  auto r = sense(visual());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.signal, "bad image: baseline");
  EXPECT_NE(r.evidence.find("baseline .phoenix/baselines/chart.png"), std::string::npos) << r.evidence;
  write(repo, ".phoenix/baselines/chart.png", solid_png(10, 10, 255, 255, 255));
  auto sized = sense(visual());
  EXPECT_FALSE(sized.ok);
  EXPECT_EQ(sized.signal, "size changed: 10x10 → 64x48");
}

TEST_F(VisualCheck, NonPngStatusAndUnreachable) {
  auto missing = sense(visual({{"target", base + "/nothing.png"}}));
  EXPECT_EQ(missing.signal, "status 404");
  Json c = visual();
  c.erase("server");
  auto r = sense(c);
  EXPECT_EQ(r.signal, "unreachable: " + base + "/chart.png");
}

TEST_F(VisualCheck, DeletedBaselineFailsAndRecordNever) {
  auto never = sense(visual({{"record", "never"}}));
  EXPECT_EQ(never.signal, "no baseline: .phoenix/baselines/chart.png");
  ASSERT_TRUE(sense(visual()).ok);
  commit_all(repo, "approve the chart");
  fs::remove(repo + "/.phoenix/baselines/chart.png");
  auto r = sense(visual());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.signal, "baseline deleted: .phoenix/baselines/chart.png");
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/baselines/chart.png"));
}

TEST_F(VisualCheck, ScreenshotCommandFailures) {
  auto r = sense({{"id", "shot"},
                  {"kind", "visual"},
                  {"target", "x"},
                  {"screenshot", {"sh", "-c", "echo boom; exit 4", "{out}"}}});
  EXPECT_EQ(r.signal, "screenshot failed: exit=4");
  EXPECT_NE(r.evidence.find("boom"), std::string::npos);
  auto none = sense({{"id", "shot"}, {"kind", "visual"}, {"target", "x"}, {"screenshot", {"true", "{out}"}}});
  EXPECT_EQ(none.signal, "screenshot wrote no file");
}

TEST_F(VisualCheck, RealChromiumScreenshot) {
  if (!fs::exists("/usr/bin/chromium"))
    GTEST_SKIP() << "/usr/bin/chromium is not installed (Debian package 'chromium')";
  write(
      repo, "page/index.html",
      "<html><body style='margin:0;background:#fff'><div style='width:120px;height:60px;background:#2a5ac8'></div></body></html>");
  Json c = {{"id", "page"},
            {"kind", "visual"},
            {"target", "file://" + repo + "/page/index.html"},
            {"timeout_s", 90},
            {"screenshot",
             {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--window-size=200,120", "--user-data-dir={out}.profile", "--screenshot={out}", "{url}"}}};
  auto first = sense(c);
  ASSERT_TRUE(first.ok) << first.signal << "\n" << first.evidence;
  EXPECT_EQ(first.signal, "recorded .phoenix/baselines/page.png (200x120)");
  auto same = sense(c);
  EXPECT_TRUE(same.ok) << same.signal;
  write(
      repo, "page/index.html",
      "<html><body style='margin:0;background:#fff'><div style='width:120px;height:60px;background:#c83a2a'></div></body></html>");
  auto red = sense(c);
  EXPECT_FALSE(red.ok);
  EXPECT_TRUE(util::starts_with(red.signal, "pixels differ: ")) << red.signal;
}

// ---- the engine: healing through the real binary ----

class HttpHeal : public HttpChecks {
 protected:
  void setup_repo(const Json& check, const Json& fixers, const std::string& agent_script, int budget = 2) {
    write(repo, ".gitignore", ".phoenix/*\n!.phoenix/contracts/\n!.phoenix/baselines/\nincidents/\n");
    Json c = check;
    c["editable"] = {"www/**", "chart/**"};
    Json cfg = {{"checks", {c}}, {"fixers", fixers}, {"budgets", {{"contract", budget}, {"visual", budget}}}};
    if (!agent_script.empty())
      cfg["harness"] = {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
                        {"timeout_s", 30},
                        {"env", {{"PHOENIX_AGENT_SCRIPT", agent_script}}}};
    write(repo, "phoenix.json", cfg.dump(2));
    commit_all(repo, "initial");
    auto recorded = run_phoenix(repo, {"sense"});
    ASSERT_EQ(recorded.code, 0) << recorded.out;
    commit_all(repo, "approve contract and baseline");
    auto green = run_phoenix(repo, {"run"});
    ASSERT_EQ(green.code, 0) << green.out;  // blesses known-good
  }
  std::string head() { return util::trim(git(repo, {"rev-parse", "HEAD"})); }
};

class ContractCheckHeal : public HttpHeal {};
class VisualCheckHeal : public HttpHeal {};

TEST_F(ContractCheckHeal, DroppedFieldHealedByTheScriptedAgent) {
  setup_repo(contract(), {"harness"}, std::string("write www/api/orders.json '") + kOrders + "'");
  std::string approved = read(repo + "/.phoenix/contracts/orders.json");
  write(repo, "www/api/orders.json", kOrdersNoTotal);
  commit_all(repo, "slim the orders payload");
  auto r = run_phoenix(repo, {"run", "--explain"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("drift: $.orders[].total removed"), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/www/api/orders.json"), kOrders);
  EXPECT_EQ(read(repo + "/.phoenix/contracts/orders.json"), approved);
  EXPECT_TRUE(port_free());
}

TEST_F(VisualCheckHeal, ColourRegressionHealedByBisect) {
  setup_repo(visual(), {"bisect"}, "");
  write(repo, "chart/color", "220 40 40\n");
  std::string culprit = commit_all(repo, "new brand colour");
  write(repo, "www/other.txt", "more work\n");
  std::string after = commit_all(repo, "more work");
  auto r = run_phoenix(repo, {"run", "--explain"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("new brand colour"), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/chart/color"), "40 90 200\n");
  EXPECT_EQ(util::trim(git(repo, {"rev-parse", "HEAD^"})), after);
  EXPECT_TRUE(port_free());
}

TEST_F(VisualCheckHeal, ColourRegressionHealedByTheScriptedAgent) {
  setup_repo(visual(), {"harness"}, "write chart/color '40 90 200\\n'");
  write(repo, "chart/color", "220 40 40\n");
  commit_all(repo, "new brand colour");
  auto r = run_phoenix(repo, {"run"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/chart/color"), "40 90 200\n");
}

TEST_F(ContractCheckHeal, DroppedFieldHealedByBisect) {
  setup_repo(contract(), {"bisect"}, "");
  write(repo, "www/api/orders.json", kOrdersNoTotal);
  commit_all(repo, "slim the orders payload");
  auto r = run_phoenix(repo, {"run"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/www/api/orders.json"), kOrders);
}

// A fixer that "heals" by approving the new picture or shape is refused;
// the escalation leaves the evidence pictures beside the incident note.
TEST_F(VisualCheckHeal, BaselineAndContractProtectedFromEveryFixer) {
  setup_repo(visual(), {"bisect", "harness"},
             "write chart/color '220 40 40\\n'; write-binary .phoenix/baselines/chart.png 64; "
             "write .phoenix/contracts/orders.json '{}'",
             2);
  std::string baseline = read(repo + "/.phoenix/baselines/chart.png");
  // The culprit also touches a contract, so bisect's revert touches one too.
  write(repo, "chart/color", "220 40 40\n");
  write(repo, ".phoenix/contracts/other.json", "{\"version\":1}\n");
  commit_all(repo, "recolour and add a contract");
  auto r = run_phoenix(repo, {"run", "--explain"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("ESCALATED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("protected"), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/.phoenix/baselines/chart.png"), baseline);
  EXPECT_TRUE(fs::exists(repo + "/.phoenix/contracts/other.json"));
  // Evidence pictures beside the note, referenced from it.
  std::string note;
  for (const auto& e : fs::directory_iterator(repo + "/incidents"))
    if (e.path().extension() == ".md") note = e.path().string();
  ASSERT_FALSE(note.empty());
  std::string stem = fs::path(note).stem().string();
  std::string text = read(note);
  // Bisect's revert and the agent's patch were both refused by the guard.
  std::string all = r.out + text;
  EXPECT_NE(all.find("the patch edits .phoenix/contracts/other.json, protected by '.phoenix/**'"), std::string::npos)
      << all;
  EXPECT_NE(all.find("the patch edits .phoenix/baselines/chart.png, protected by '.phoenix/**'"), std::string::npos)
      << all;
  for (const char* name : {"expected.png", "actual.png", "diff.png"}) {
    std::string file = stem + "-" + name;
    EXPECT_TRUE(fs::exists(repo + "/incidents/" + file)) << file;
    EXPECT_NE(text.find("](" + file + ")"), std::string::npos) << text;
    EXPECT_NO_THROW(image::read_png(repo + "/incidents/" + file)) << file;
  }
}

}  // namespace
}  // namespace phoenix::test
