// End-to-end tests of the primitives: the built `phoenix` binary driven in
// throwaway git repositories.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "util/atomic_file.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

class Primitives : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    write(repo, "src/config.h", "#define LIMIT 10\n");
    write(repo, "check.sh", "#!/bin/sh\ngrep -q 'LIMIT 10' src/config.h\n");
    fs::permissions(repo + "/check.sh", fs::perms::owner_all, fs::perm_options::add);
    commit_all(repo, "initial");
  }
  CliRun phoenix(std::vector<std::string> args, double timeout = 120) { return run_phoenix(repo, args, timeout); }
  ScopedTempDir tmp;
  std::string repo;
  const std::string good = R"({"id":"limit","kind":"command_exit","target":["./check.sh"]})";
};

TEST_F(Primitives, SenseGreenAndRedWithJson) {
  auto g = phoenix({"sense", "--check", good, "--json"});
  EXPECT_EQ(g.code, 0) << g.out;
  Json j = Json::parse(g.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["signal"], "exit=0");
  write(repo, "src/config.h", "#define LIMIT 11\n");
  auto r = phoenix({"sense", "--check", good, "--json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(Json::parse(r.out)["signal"], "exit=1");
}

TEST_F(Primitives, SenseByIdFromConfigAndArray) {
  write(repo, "phoenix.json", R"({"checks":[)" + good + R"(,
    {"id":"no-hack","kind":"regex_in_file","target":"src/config.h","pattern":"HACK","expect":"absent"}]})");
  auto r = phoenix({"sense", "--json"});
  EXPECT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), 2u);
  auto one = phoenix({"sense", "no-hack"});
  EXPECT_EQ(one.code, 0) << one.out;
  auto typo = phoenix({"sense", "no-hak"});
  EXPECT_EQ(typo.code, 64);
  EXPECT_NE(typo.out.find("did you mean 'no-hack'"), std::string::npos) << typo.out;
}

TEST_F(Primitives, FileSha256AndRegex) {
  std::string sha = util::sha256_hex("#define LIMIT 10\n");
  auto ok = phoenix({"sense", "--check", R"({"kind":"file_sha256","target":"src/config.h","expect":")" + sha + "\"}"});
  EXPECT_EQ(ok.code, 0) << ok.out;
  write(repo, "src/config.h", "#define LIMIT 10 // HACK\n");
  auto bad = phoenix(
      {"sense", "--json", "--check", R"({"kind":"file_sha256","target":"src/config.h","expect":")" + sha + "\"}"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(Json::parse(bad.out)["signal"], "sha256 mismatch");
  auto re =
      phoenix({"sense", "--json", "--check", R"({"kind":"regex_in_file","target":"src/config.h","pattern":"HACK"})"});
  EXPECT_EQ(re.code, 1);
  Json rj = Json::parse(re.out);
  EXPECT_EQ(rj["signal"], "present: 1 match");
  EXPECT_NE(rj["evidence"].get<std::string>().find("src/config.h:1:"), std::string::npos);
  auto missing =
      phoenix({"sense", "--json", "--check", R"({"kind":"regex_in_file","target":"nope.txt","pattern":"x"})"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(Json::parse(missing.out)["signal"], "missing: nope.txt");
}

TEST_F(Primitives, BadCheckDefinitionsAreConfigErrors) {
  struct Case {
    std::string check, needle;
  } cases[] = {
      {R"({"kind":"shell","target":"true"})", "unknown kind 'shell'"},
      {R"({"kind":"command_exit"})", "missing 'target'"},
      {R"({"kind":"command_exit","target":"true","expect":"zero"})", "--check.expect: must be an exit code"},
      {R"({"kind":"command_exit","target":["true"],,})", "--check:1:42: malformed JSON"},
      {R"({"kind":"command_exit","target":"true","timout_s":3})", "did you mean 'timeout_s'"},
  };
  for (const auto& c : cases) {
    auto r = phoenix({"sense", "--check", c.check});
    EXPECT_EQ(r.code, 78) << c.check << "\n" << r.out;
    EXPECT_NE(r.out.find("phoenix: error: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.needle), std::string::npos) << c.check << "\n" << r.out;
    EXPECT_EQ(util::split_lines(r.out).size(), 1u) << "one line: " << r.out;
  }
}

TEST_F(Primitives, MissingCommandIsRedNotACrash) {
  auto r = phoenix({"sense", "--json", "--check", R"({"kind":"command_exit","target":["no-such-tool-phx"]})"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(Json::parse(r.out)["signal"], "not found: no-such-tool-phx");
}

TEST_F(Primitives, HangingCommandIsKilledWithItsChildren) {
  std::string pidfile = tmp / "child.pid";
  std::string check = Json{{"kind", "command_exit"},
                           {"timeout_s", 1},
                           {"target", {"sh", "-c", "sleep 300 & echo $! > " + pidfile + "; wait"}}}
                          .dump();
  auto r = phoenix({"sense", "--json", "--check", check}, 60);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(Json::parse(r.out)["signal"], "timeout after 1s");
  long child = std::stol(read(pidfile));
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    // gone, or a zombie waiting for init to reap it
    std::string stat = read("/proc/" + std::to_string(child) + "/stat");
    gone = stat.empty() || stat.find(") Z") != std::string::npos;
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "the sleeping grandchild survived";
}

TEST_F(Primitives, GigabyteOfOutputStaysUnder64MiB) {
  std::string check = Json{{"kind", "command_exit"},
                           {"target", {"sh", "-c", "head -c 1073741824 /dev/zero | tr '\\0' x; echo; echo LAST-LINE"}}}
                          .dump();
  auto r = run({test_tool("maxrss"), phoenix_bin(), "sense", "--json", "--check", check}, repo, {}, 300);
  EXPECT_EQ(r.exit_code, 0);
  size_t at = r.output.find("maxrss_kb=");
  ASSERT_NE(at, std::string::npos) << r.output.substr(0, 500);
  long kb = std::stol(r.output.substr(at + 10));
  EXPECT_LT(kb, 64 * 1024) << "peak RSS " << kb << " KiB";
  Json j = Json::parse(r.output.substr(0, r.output.find('\n')));
  std::string ev = j["evidence"];
  EXPECT_LT(ev.size(), 16u * 1024);
  EXPECT_NE(ev.find("LAST-LINE"), std::string::npos);
  EXPECT_NE(ev.find("1073741835 bytes"), std::string::npos) << ev.substr(0, 200);
}

TEST_F(Primitives, BinaryOutputGivesValidJson) {
  auto r = phoenix({"sense", "--json", "--check",
                    R"({"kind":"command_exit","target":["sh","-c","printf 'ok\\377\\376\\000bin\\n'; exit 2"]})"});
  EXPECT_EQ(r.code, 1);
  Json j = Json::parse(r.out);  // throws on invalid UTF-8 or broken JSON
  std::string ev = j["evidence"];
  EXPECT_NE(ev.find("\\xFF\\xFE"), std::string::npos) << ev;
}

TEST_F(Primitives, SnapshotBreakHealRollbackVerify) {
  auto snap = phoenix({"snapshot", "src", "--check", good, "--json"});
  ASSERT_EQ(snap.code, 0) << snap.out;
  Json sj = Json::parse(snap.out);
  EXPECT_EQ(sj["blessed"], true);
  std::string id = sj["snap_id"];
  // A deliberate break: an edited file and a new one.
  write(repo, "src/config.h", "#define LIMIT 99\n");
  write(repo, "src/extra.h", "junk\n");
  EXPECT_EQ(phoenix({"sense", "--check", good}).code, 1);
  auto heal = phoenix({"heal", "--strategy", "rollback", "--snap", id, "--json"});
  EXPECT_EQ(heal.code, 0) << heal.out;
  Json hj = Json::parse(heal.out);
  EXPECT_EQ(hj["healed"], true);
  EXPECT_EQ(hj["recheck"]["ok"], true);
  EXPECT_EQ(read(repo + "/src/config.h"), "#define LIMIT 10\n");
  EXPECT_FALSE(fs::exists(repo + "/src/extra.h"));
  auto v = phoenix({"trace", "verify"});
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find("trace ok"), std::string::npos);
}

TEST_F(Primitives, RedCheckBlessesNothing) {
  write(repo, "src/config.h", "#define LIMIT 1\n");
  auto r = phoenix({"snapshot", "src/config.h", "--check", good, "--json"});
  EXPECT_EQ(r.code, 1);
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["blessed"], false);
  EXPECT_TRUE(j["snap_id"].is_null());
  EXPECT_TRUE(!fs::exists(repo + "/.phoenix/snapshots") || fs::is_empty(repo + "/.phoenix/snapshots"));
}

TEST_F(Primitives, SnapshotOutsideTheRepositoryIsRefused) {
  write(tmp.path(), "outside.txt", "x");
  auto r = phoenix({"snapshot", tmp / "outside.txt", "--check", good});
  EXPECT_EQ(r.code, 64) << r.out;
  EXPECT_NE(r.out.find("outside the repository"), std::string::npos) << r.out;
  auto r2 = phoenix({"snapshot", "../outside.txt", "--check", good});
  EXPECT_EQ(r2.code, 64) << r2.out;
  auto r3 = phoenix({"snapshot", ".git/config", "--check", good});
  EXPECT_EQ(r3.code, 64) << r3.out;
}

TEST_F(Primitives, HealWithUnknownSnapIdIsAUsageError) {
  ASSERT_EQ(phoenix({"snapshot", "src/config.h", "--check", good}).code, 0);
  auto r = phoenix({"heal", "--strategy", "rollback", "--snap", "20990101-000000-deadbeef", "--recheck", good});
  EXPECT_EQ(r.code, 64) << r.out;
  EXPECT_NE(r.out.find("unknown snapshot id '20990101-000000-deadbeef'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("known: "), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/src/config.h"), "#define LIMIT 10\n");
}

TEST_F(Primitives, RetryHealsAFlakyCommandWithinThreeRuns) {
  // Fails twice, then passes: a counter file outside the check.
  std::string counter = tmp / "count";
  std::string flaky =
      "n=$(cat " + counter + " 2>/dev/null || echo 0); n=$((n+1)); echo $n > " + counter + "; [ $n -ge 3 ]";
  auto r = phoenix({"heal", "--strategy", "retry", "--backoff-ms", "10", "--json", "--target",
                    Json::array({"sh", "-c", flaky}).dump()});
  EXPECT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["healed"], true);
  EXPECT_EQ(j["attempts"], 3);
  EXPECT_EQ(j["delays_ms"].size(), 2u);
  EXPECT_GE(j["delays_ms"][1].get<long>(), 20);  // doubled
}

TEST_F(Primitives, RetryNeverRunsAFourthTime) {
  std::string counter = tmp / "count";
  std::string always = "n=$(cat " + counter + " 2>/dev/null || echo 0); echo $((n+1)) > " + counter + "; exit 1";
  auto r = phoenix({"heal", "--strategy", "retry", "--backoff-ms", "1", "--json", "--target",
                    Json::array({"sh", "-c", always}).dump()});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(Json::parse(r.out)["healed"], false);
  EXPECT_EQ(util::trim(read(counter)), "3");
  auto r4 = phoenix({"heal", "--strategy", "retry", "--attempts", "4", "--target", "true"});
  EXPECT_EQ(r4.code, 64) << r4.out;
}

class TraceTamper : public Primitives {
 protected:
  void SetUp() override {
    Primitives::SetUp();
    // --no-cache: six fresh measurements, six "sense" lines (a served one
    // traces "measured.cached" instead).
    for (int i = 0; i < 6; ++i) ASSERT_EQ(phoenix({"sense", "--no-cache", "--check", good}).code, 0);
    lines = util::split_lines(read(repo + "/.phoenix/trace.jsonl"));
    ASSERT_EQ(lines.size(), 6u);
  }
  CliRun verify_with(const std::vector<std::string>& ls) {
    std::string s;
    for (const auto& l : ls) s += l + "\n";
    std::ofstream(repo + "/.phoenix/trace.jsonl", std::ios::trunc) << s;
    return phoenix({"trace", "verify", "--json"});
  }
  std::vector<std::string> lines;
};

TEST_F(TraceTamper, EachKindIsNamedWithItsSeq) {
  auto edited = lines;
  edited[2].replace(edited[2].find("exit=0"), 6, "exit=9");
  auto e = verify_with(edited);
  EXPECT_EQ(e.code, 1);
  EXPECT_EQ(Json::parse(e.out)["kind"], "edited");
  EXPECT_EQ(Json::parse(e.out)["seq"], 3);

  auto deleted = lines;
  deleted.erase(deleted.begin() + 3);
  auto d = verify_with(deleted);
  EXPECT_EQ(Json::parse(d.out)["kind"], "deleted");
  EXPECT_EQ(Json::parse(d.out)["seq"], 4);

  auto reordered = lines;
  std::swap(reordered[1], reordered[4]);
  auto o = verify_with(reordered);
  EXPECT_EQ(Json::parse(o.out)["kind"], "reordered");

  auto inserted = lines;
  inserted.insert(inserted.begin() + 4, lines[0]);
  auto i = verify_with(inserted);
  EXPECT_EQ(Json::parse(i.out)["kind"], "inserted");

  auto ok = verify_with(lines);
  EXPECT_EQ(ok.code, 0);
  EXPECT_EQ(Json::parse(ok.out)["entries"], 6);
}

TEST_F(Primitives, UsageErrors) {
  EXPECT_EQ(phoenix({"sens"}).code, 64);
  EXPECT_EQ(phoenix({"sense", "--chek", "x"}).code, 64);
  EXPECT_EQ(phoenix({"heal", "--strategy", "pray"}).code, 64);
  EXPECT_EQ(phoenix({"trace", "audit"}).code, 64);
  auto v = phoenix({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("phoenix "), std::string::npos);
  auto h = phoenix({"sense", "--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("usage: phoenix sense"), std::string::npos);
}

TEST_F(Primitives, NoColorWhenNotATtyOrNoColorSet) {
  write(repo, "src/config.h", "#define LIMIT 3\n");
  auto r = run({phoenix_bin(), "sense", "--check", good}, repo, {{"CLICOLOR_FORCE", "1"}});
  EXPECT_NE(r.output.find("\033["), std::string::npos);
  auto n = run({phoenix_bin(), "sense", "--check", good}, repo, {{"CLICOLOR_FORCE", "1"}, {"NO_COLOR", "1"}});
  EXPECT_EQ(n.output.find("\033["), std::string::npos);
  auto plain = phoenix({"sense", "--check", good});
  EXPECT_EQ(plain.out.find("\033["), std::string::npos);
}

}  // namespace
}  // namespace phoenix::test
