// The hook's pure parts: pre-push stdin, the shim text, install/uninstall
// on a folder, husky/lefthook detection. The runs with real `git push` are
// in tests/e2e/hook_test.cc.
#include "hook/hook.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctime>
#include <filesystem>

#include "hook/runs.h"
#include "layout/paths.h"
#include "test_util.h"
#include "util/error.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;

const std::string kA(40, 'a');
const std::string kB = "0123456789abcdef0123456789abcdef01234567";
const std::string kZero(40, '0');

std::string usage_error_of(const std::string& input) {
  try {
    hook::parse_pre_push(input);
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << input;
  return "";
}

TEST(HookStdin, ParsesGitsLines) {
  auto refs = hook::parse_pre_push("refs/heads/main " + kA + " refs/heads/main " + kB + "\n" + "refs/heads/topic " +
                                   kB + " refs/heads/topic " + kZero + "\n");
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].local_ref, "refs/heads/main");
  EXPECT_EQ(refs[0].local_sha, kA);
  EXPECT_EQ(refs[0].remote_ref, "refs/heads/main");
  EXPECT_EQ(refs[0].remote_sha, kB);
  EXPECT_FALSE(refs[0].deletion());
  EXPECT_FALSE(refs[0].creation());
  EXPECT_TRUE(refs[1].creation());
}

TEST(HookStdin, EmptyInputIsNoRefsAndTheLastNewlineIsOptional) {
  EXPECT_TRUE(hook::parse_pre_push("").empty());
  auto refs = hook::parse_pre_push("HEAD " + kA + " refs/heads/main " + kB);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].local_ref, "HEAD");
}

TEST(HookStdin, DeletionIsAZeroLocalSha) {
  auto refs = hook::parse_pre_push("(delete) " + kZero + " refs/heads/old " + kA + "\n");
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_TRUE(refs[0].deletion());
  EXPECT_TRUE(hook::commits_to_measure(refs).empty());
}

TEST(HookStdin, ShasAreLowercasedAndSha256Accepted) {
  std::string upper = "ABCDEF" + std::string(34, '1');
  auto refs = hook::parse_pre_push("refs/heads/a " + upper + " refs/heads/a " + kZero + "\n");
  EXPECT_EQ(refs[0].local_sha, "abcdef" + std::string(34, '1'));
  std::string long_sha(64, 'c');
  auto r256 = hook::parse_pre_push("refs/heads/a " + long_sha + " refs/heads/a " + std::string(64, '0') + "\n");
  EXPECT_EQ(r256[0].local_sha, long_sha);
  EXPECT_TRUE(r256[0].creation());
}

TEST(HookStdin, DistinctCommitsInFirstAppearanceOrder) {
  auto refs = hook::parse_pre_push("refs/heads/x " + kB + " refs/heads/x " + kZero + "\n" +  //
                                   "refs/heads/y " + kA + " refs/heads/y " + kZero + "\n" +  //
                                   "(delete) " + kZero + " refs/heads/z " + kA + "\n" +      //
                                   "refs/heads/w " + kB + " refs/heads/w " + kA + "\n");
  EXPECT_EQ(hook::commits_to_measure(refs), (std::vector<std::string>{kB, kA}));
}

TEST(HookStdinMalformed, NamesTheLineAndWhy) {
  std::string good = "refs/heads/main " + kA + " refs/heads/main " + kB + "\n";
  std::string e = usage_error_of(good + "refs/heads/main " + kA + " refs/heads/main\n");
  EXPECT_NE(e.find("stdin line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("3 fields, not 4"), std::string::npos) << e;
  EXPECT_NE(e.find("\"refs/heads/main " + kA + " refs/heads/main\""), std::string::npos) << e;

  e = usage_error_of("refs/heads/main " + kA.substr(0, 39) + " refs/heads/main " + kB + "\n");
  EXPECT_NE(e.find("stdin line 1"), std::string::npos) << e;
  EXPECT_NE(e.find("local sha"), std::string::npos) << e;

  e = usage_error_of("refs/heads/main " + kA + " refs/heads/main " + std::string(40, 'g') + "\n");
  EXPECT_NE(e.find("remote sha"), std::string::npos) << e;

  e = usage_error_of("refs/heads/main " + kA + " refs/heads/main " + std::string(64, '0') + "\n");
  EXPECT_NE(e.find("differ in length"), std::string::npos) << e;
}

TEST(HookStdinMalformed, WhitespaceIsExact) {
  // git separates with single spaces; tabs, doubled spaces, CR and blank
  // lines are not git's output.
  EXPECT_NE(usage_error_of("refs/heads/main  " + kA + " refs/heads/main " + kB + "\n").find("5 fields"),
            std::string::npos);
  EXPECT_NE(usage_error_of("refs/heads/main\t" + kA + " refs/heads/main " + kB + "\n").find("3 fields"),
            std::string::npos);
  EXPECT_NE(usage_error_of("refs/heads/main " + kA + " refs/heads/main " + kB + "\r\n").find("remote sha"),
            std::string::npos);
  EXPECT_NE(usage_error_of("\n").find("stdin line 1: 1 field, not 4"), std::string::npos);
  EXPECT_NE(usage_error_of(" " + kA + " refs/heads/main " + kB).find("empty ref"), std::string::npos);
}

TEST(HookStdinMalformed, ControlBytesAreEscapedAndLongLinesCut) {
  std::string bad = "refs/heads/ma\x01in " + kA + " refs/heads/main " + kB + "\n";
  std::string e = usage_error_of(bad);
  EXPECT_NE(e.find("control character"), std::string::npos) << e;
  EXPECT_NE(e.find("\\x01"), std::string::npos) << e;
  EXPECT_EQ(e.find('\x01'), std::string::npos) << "the raw byte must not reach the terminal";
  std::string huge(100000, 'x');
  e = usage_error_of(huge);
  EXPECT_LT(e.size(), 400u);
  EXPECT_NE(e.find("cut; 100000 bytes"), std::string::npos) << e;
}

TEST(HookStdinMalformed, AnyBytesGiveAResultOrAUsageError) {
  // A small deterministic fuzz: the parser never throws anything else and
  // never crashes.
  unsigned seed = 12345;
  const char raw[] = "refs/heads/main (delete) 0123456789abcdefABCDEFg \n\t\r\x00\xff";
  const std::string alphabet(raw, sizeof raw - 1);
  for (int round = 0; round < 5000; ++round) {
    std::string s;
    int len = static_cast<int>((seed = seed * 1103515245 + 12345) % 200);
    for (int i = 0; i < len; ++i) s += alphabet[(seed = seed * 1103515245 + 12345) % alphabet.size()];
    if (round % 3 == 0) s = "refs/heads/main " + kA + " refs/heads/main " + kB + "\n" + s;
    try {
      hook::parse_pre_push(s);
    } catch (const UsageError&) {}
  }
}

// ---------------------------------------------------------------------------

const char* kTemplate =
    "#!/bin/sh\n# phoenix-pre-push-shim v1\nPHOENIX=@PHOENIX@\nchained=\"$hooks/pre-push@CHAINED_SUFFIX@\"\n";

TEST(HookShim, RendersAndRecordsTheBinary) {
  std::string shim = hook::render_shim(kTemplate, "/opt/my phoenix/it's/phoenix");
  EXPECT_TRUE(hook::is_shim(shim));
  EXPECT_NE(shim.find("pre-push.phoenix-chained"), std::string::npos);
  EXPECT_NE(shim.find("PHOENIX='/opt/my phoenix/it'\\''s/phoenix'"), std::string::npos) << shim;
  EXPECT_EQ(hook::shim_binary(shim), "/opt/my phoenix/it's/phoenix");
  EXPECT_FALSE(hook::is_shim("#!/bin/sh\necho not ours # phoenix-pre-push-shim\n"));
  EXPECT_THROW(hook::render_shim("#!/bin/sh\necho\n", "/x"), Error);
  EXPECT_THROW(hook::render_shim("#!/bin/sh\n# phoenix-pre-push-shim v1\n", "/x"), Error);
}

TEST(HookShim, TheShippedTemplateRenders) {
  std::string tmpl = read(std::string(PHOENIX_SOURCE_DIR) + "/hooks/pre-push.in");
  std::string shim = hook::render_shim(tmpl, "/usr/bin/phoenix");
  EXPECT_EQ(shim.find("@PHOENIX@"), std::string::npos) << shim;
  EXPECT_EQ(shim.find("@CHAINED_SUFFIX@"), std::string::npos) << shim;
  EXPECT_EQ(hook::shim_binary(shim), "/usr/bin/phoenix");
  // It is valid sh.
  ScopedTempDir tmp;
  write(tmp.path(), "pre-push", shim);
  auto r = run({"sh", "-n", tmp / "pre-push"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// The direct shim: its first line names the copy of phoenix-hook git runs
// it with, its third the phoenix-hook that was copied; the phoenix handed
// over to lies beside that one.
TEST(HookShim, TheDirectTemplateNamesItsProgramAndWhereItCameFrom) {
  std::string tmpl = read(std::string(PHOENIX_SOURCE_DIR) + "/hooks/pre-push-direct.in");
  const std::string program = "/home/me/repo/.git/hooks/pre-push.phoenix-hook";
  std::string shim = hook::render_direct_shim(tmpl, program, "/usr/bin/phoenix-hook");
  EXPECT_TRUE(util::starts_with(shim, "#!" + program + "\n# phoenix-pre-push-shim v3\n")) << shim;
  EXPECT_EQ(shim.find('@'), std::string::npos) << shim;
  EXPECT_TRUE(hook::is_shim(shim));
  EXPECT_EQ(hook::shim_interpreter(shim), program);
  EXPECT_EQ(hook::shim_program_source(shim), "/usr/bin/phoenix-hook");
  EXPECT_EQ(hook::shim_binary(shim), "/usr/bin/phoenix");
  EXPECT_EQ(hook::program_copy_path("/home/me/repo/.git/hooks"), program);
  // The shell shim has neither.
  std::string sh = hook::render_shim(read(std::string(PHOENIX_SOURCE_DIR) + "/hooks/pre-push.in"), "/usr/bin/phoenix");
  EXPECT_EQ(hook::shim_interpreter(sh), "");
  EXPECT_EQ(hook::shim_program_source(sh), "");
  EXPECT_EQ(hook::shim_interpreter("#!/usr/bin/phoenix-hook\necho not ours\n"), "");
  // A path the kernel would split or cut is refused, not written.
  EXPECT_THROW(
      hook::render_direct_shim(tmpl, "/home/my repo/.git/hooks/pre-push.phoenix-hook", "/usr/bin/phoenix-hook"), Error);
  EXPECT_THROW(hook::render_direct_shim(kTemplate, program, "/usr/bin/phoenix-hook"), Error);
}

TEST(HookShim, ShebangSafePaths) {
  EXPECT_TRUE(hook::shebang_safe("/usr/bin/phoenix-hook"));
  EXPECT_FALSE(hook::shebang_safe("usr/bin/phoenix-hook"));
  EXPECT_FALSE(hook::shebang_safe(""));
  EXPECT_FALSE(hook::shebang_safe("/a b/phoenix-hook"));
  EXPECT_FALSE(hook::shebang_safe("/a\tb/phoenix-hook"));
  EXPECT_FALSE(hook::shebang_safe("/a\nb"));
  EXPECT_TRUE(hook::shebang_safe("/" + std::string(hook::kMaxShebangPath - 1, 'x')));
  EXPECT_FALSE(hook::shebang_safe("/" + std::string(hook::kMaxShebangPath, 'x')));
}

// install() puts the direct shim's program in place before the shim, keeps
// it current with its source, and uninstall() removes it; a shell shim
// replacing a direct one leaves no copy.
TEST(HookInstall, ADirectShimsProgramIsCopiedKeptCurrentAndRemoved) {
  ScopedTempDir tmp;
  const std::string dir = tmp / "hooks";
  write(tmp.path(), "bin/phoenix-hook", "#!/bin/sh\necho v1\n");
  const std::string source = tmp / "bin/phoenix-hook";
  const std::string program = hook::program_copy_path(dir);
  const std::string tmpl = read(std::string(PHOENIX_SOURCE_DIR) + "/hooks/pre-push-direct.in");
  const std::string shim = hook::render_direct_shim(tmpl, program, source);
  EXPECT_EQ(hook::install(dir, shim).action, "installed");
  EXPECT_EQ(read(program), "#!/bin/sh\necho v1\n");
  EXPECT_TRUE(hook::program_is_current(program, source));
  EXPECT_EQ(hook::install(dir, shim).action, "unchanged");
  // The source replaced under its name (a rebuild, an upgrade): the copy is
  // stale until the next install, which says it updated.
  write(tmp.path(), "bin/phoenix-hook.new", "#!/bin/sh\necho version 2\n");
  fs::rename(tmp / "bin/phoenix-hook.new", source);
  EXPECT_FALSE(hook::program_is_current(program, source));
  EXPECT_EQ(hook::install(dir, shim).action, "updated");
  EXPECT_EQ(read(program), "#!/bin/sh\necho version 2\n");
  EXPECT_TRUE(hook::program_is_current(program, source));
  EXPECT_EQ(hook::uninstall(dir).action, "removed");
  EXPECT_FALSE(fs::exists(dir + "/pre-push"));
  EXPECT_FALSE(fs::exists(program));
  // The shell shim after a direct one: the copy goes.
  hook::install(dir, shim);
  EXPECT_EQ(hook::install(dir, hook::render_shim(kTemplate, "/usr/bin/phoenix")).action, "updated");
  EXPECT_FALSE(fs::exists(program));
  // A hook of someone else's is only ever chained by the shell shim.
  hook::uninstall(dir);
  write(dir, "pre-push", "#!/bin/sh\nexit 0\n");
  EXPECT_TRUE(hook::chains(dir));
  EXPECT_THROW(hook::install(dir, shim), Error);
  EXPECT_EQ(read(dir + "/pre-push"), "#!/bin/sh\nexit 0\n");
}

mode_t mode_of(const std::string& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st.st_mode;
}

TEST(HookInstall, FreshInstallIsIdempotentAndUninstallRemoves) {
  ScopedTempDir tmp;
  std::string dir = tmp / "hooks";  // does not exist yet
  std::string shim = hook::render_shim(kTemplate, "/usr/bin/phoenix");
  auto r = hook::install(dir, shim);
  EXPECT_EQ(r.action, "installed");
  EXPECT_EQ(r.chained, "");
  EXPECT_EQ(read(dir + "/pre-push"), shim);
  EXPECT_EQ(mode_of(dir + "/pre-push") & 0777, 0755u);
  EXPECT_EQ(hook::install(dir, shim).action, "unchanged");
  EXPECT_EQ(read(dir + "/pre-push"), shim);
  EXPECT_FALSE(fs::exists(dir + "/pre-push.phoenix-chained"));
  // Another binary: the shim is rewritten, nothing is chained.
  std::string other = hook::render_shim(kTemplate, "/elsewhere/phoenix");
  EXPECT_EQ(hook::install(dir, other).action, "updated");
  EXPECT_EQ(read(dir + "/pre-push"), other);
  EXPECT_FALSE(fs::exists(dir + "/pre-push.phoenix-chained"));
  EXPECT_EQ(hook::uninstall(dir).action, "removed");
  EXPECT_FALSE(fs::exists(dir + "/pre-push"));
  EXPECT_EQ(hook::uninstall(dir).action, "absent");
}

TEST(HookInstall, ChainsAnExistingHookAndRestoresItByteForByte) {
  ScopedTempDir tmp;
  std::string dir = tmp / "hooks";
  std::string original = "#!/bin/sh\n# the team's hook\nexit 0\n\x01\xff no trailing newline";
  write(dir, "pre-push", original);
  ::chmod((dir + "/pre-push").c_str(), 0750);
  std::string shim = hook::render_shim(kTemplate, "/usr/bin/phoenix");
  auto r = hook::install(dir, shim);
  EXPECT_EQ(r.action, "installed");
  EXPECT_EQ(r.chained, dir + "/pre-push.phoenix-chained");
  EXPECT_EQ(read(r.chained), original);
  EXPECT_EQ(mode_of(r.chained) & 0777, 0750u);
  EXPECT_EQ(hook::install(dir, shim).action, "unchanged");
  EXPECT_EQ(read(r.chained), original) << "a second install must not chain the shim to itself";
  auto u = hook::uninstall(dir);
  EXPECT_EQ(u.action, "restored");
  EXPECT_EQ(read(dir + "/pre-push"), original);
  EXPECT_EQ(mode_of(dir + "/pre-push") & 0777, 0750u);
  EXPECT_FALSE(fs::exists(dir + "/pre-push.phoenix-chained"));
}

TEST(HookInstall, ASymlinkedHookStaysASymlink) {
  ScopedTempDir tmp;
  std::string dir = tmp / "hooks";
  write(tmp.path(), "shared/pre-push", "#!/bin/sh\nexit 0\n");
  fs::create_directories(dir);
  fs::create_symlink("../shared/pre-push", dir + "/pre-push");
  hook::install(dir, hook::render_shim(kTemplate, "/usr/bin/phoenix"));
  EXPECT_TRUE(fs::is_symlink(dir + "/pre-push.phoenix-chained"));
  EXPECT_EQ(fs::read_symlink(dir + "/pre-push.phoenix-chained"), "../shared/pre-push");
  EXPECT_EQ(hook::uninstall(dir).action, "restored");
  EXPECT_TRUE(fs::is_symlink(dir + "/pre-push"));
  EXPECT_EQ(fs::read_symlink(dir + "/pre-push"), "../shared/pre-push");
}

TEST(HookInstall, RefusesToOverwriteAKeptHook) {
  ScopedTempDir tmp;
  std::string dir = tmp / "hooks";
  write(dir, "pre-push", "#!/bin/sh\necho new\n");
  write(dir, "pre-push.phoenix-chained", "#!/bin/sh\necho kept\n");
  EXPECT_THROW(hook::install(dir, hook::render_shim(kTemplate, "/usr/bin/phoenix")), Error);
  EXPECT_EQ(read(dir + "/pre-push"), "#!/bin/sh\necho new\n");
  EXPECT_EQ(read(dir + "/pre-push.phoenix-chained"), "#!/bin/sh\necho kept\n");
  // Uninstall leaves a hook that is not ours alone.
  EXPECT_EQ(hook::uninstall(dir).action, "absent");
  EXPECT_EQ(read(dir + "/pre-push"), "#!/bin/sh\necho new\n");
}

TEST(HookManager, DetectsHuskyOnlyWhenItOwnsTheHooksPath) {
  ScopedTempDir tmp;
  std::string top = tmp.path();
  fs::create_directories(top + "/.husky/_");
  EXPECT_FALSE(hook::detect_manager(top, std::nullopt, "phoenix"));
  EXPECT_FALSE(hook::detect_manager(top, std::string("githooks"), "phoenix"));
  for (const std::string& hp : std::vector<std::string>{".husky/_", ".husky", ".husky/_/", top + "/.husky/_"}) {
    auto m = hook::detect_manager(top, hp, "phoenix");
    ASSERT_TRUE(m) << hp;
    EXPECT_EQ(m->name, "husky");
    EXPECT_EQ(m->config, ".husky/pre-push");
    EXPECT_EQ(m->snippet, "phoenix hook run pre-push \"$@\"\n");
  }
}

TEST(HookManager, DetectsLefthookConfigInEachFormat) {
  ScopedTempDir tmp;
  std::string top = tmp.path();
  EXPECT_FALSE(hook::detect_manager(top, std::nullopt, "phoenix"));
  write(top, "lefthook.yml", "pre-commit:\n");
  auto m = hook::detect_manager(top, std::nullopt, "/opt/phoenix");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "lefthook");
  EXPECT_EQ(m->config, "lefthook.yml");
  EXPECT_NE(m->snippet.find("run: /opt/phoenix hook run pre-push {1} {2}"), std::string::npos) << m->snippet;
  EXPECT_NE(m->snippet.find("use_stdin: true"), std::string::npos) << m->snippet;
  EXPECT_EQ(m->then, "lefthook install");
  fs::remove(top + "/lefthook.yml");
  write(top, ".config/lefthook.toml", "");
  m = hook::detect_manager(top, std::nullopt, "phoenix");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config, ".config/lefthook.toml");
  EXPECT_NE(m->snippet.find("use_stdin = true"), std::string::npos) << m->snippet;
}

// hook-runs.jsonl, the remote-tracking refs' reflogs and the install's
// note: what a later run can tell of the commit at a pushed ref's remote end.
TEST(HookRuns, ARemoteEndIsUnexplainedOnlyWhenPushedFromHereUnmeasuredWhileThePhoenixHookWasThere) {
  ScopedTempDir tmp;
  fs::create_directories(tmp / ".phoenix");
  fs::create_directories(tmp / ".git");
  const std::string a(40, 'a'), b(40, 'b'), c(40, 'c'), d(40, 'd'), zero(40, '0');
  auto ref = [&](const std::string& remote_ref, const std::string& local, const std::string& remote_end) {
    return std::vector<hook::PushedRef>{{"refs/heads/x", local, remote_ref, remote_end}};
  };
  auto entry = [](const std::string& old, const std::string& now, long long at, const std::string& msg) {
    return old + " " + now + " Dev <dev@localhost> " + std::to_string(at) + " +0000\t" + msg + "\n";
  };
  auto odd = [&](const std::string& remote, const std::string& remote_ref, const std::string& remote_end) {
    return hook::unexplained_remote_ends(tmp.path(), remote, ref(remote_ref, d, remote_end)).size();
  };
  // origin/main: a and b pushed from here, c fetched (a teammate's).
  write(tmp.path(), ".git/logs/refs/remotes/origin/main",
        entry(zero, a, 900, "update by push") + entry(a, b, 1000, "update by push") +
            entry(b, c, 1100, "fetch origin: fast-forward"));
  // Nothing logged and no install noted: what went out is not Phoenix's.
  EXPECT_EQ(odd("origin", "refs/heads/main", b), 0u);
  hook::log_run(tmp.path(), "phoenix-hook", "origin", ref("refs/heads/main", a, zero), hook::RunOutcome::kAllowed, {a});
  // The remote end is what was measured green: explained.
  EXPECT_EQ(odd("origin", "refs/heads/main", a), 0u);
  // Pushed from here on a ref the hook pushed before, never measured green.
  const auto pushed = ref("refs/heads/main", d, b);
  auto ends = hook::unexplained_remote_ends(tmp.path(), "origin", pushed);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0]->remote_sha, b);
  // Fetched, not pushed from here; another remote, a new ref, a tag: not named.
  EXPECT_EQ(odd("origin", "refs/heads/main", c), 0u);
  EXPECT_EQ(odd("fork", "refs/heads/main", b), 0u);
  EXPECT_EQ(odd("origin", "refs/heads/main", zero), 0u);
  EXPECT_EQ(odd("origin", "refs/tags/v1", b), 0u);
  // A blocked run measures nothing green; a torn last line is passed over.
  hook::log_run(tmp.path(), "phoenix", "origin", ref("refs/heads/main", b, a), hook::RunOutcome::kBlocked, {});
  write(tmp.path(), ".phoenix/hook-runs.jsonl", read(layout::hook_runs_file(tmp.path())) + "{\"green\":[\"" + b);
  EXPECT_EQ(odd("origin", "refs/heads/main", b), 1u);
  const hook::RunLog log = hook::read_runs(tmp.path());
  EXPECT_TRUE(log.covers(a));
  EXPECT_FALSE(log.covers(b));
  EXPECT_TRUE(log.saw("origin", "refs/heads/main"));

  // A ref the hook never pushed: named when the push came after the
  // install (its second included), not before.
  write(tmp.path(), ".git/logs/refs/remotes/origin/topic", entry(zero, b, 1000, "update by push"));
  EXPECT_EQ(odd("origin", "refs/heads/topic", b), 0u);
  write(tmp.path(), ".phoenix/hook-installed.json", R"({"installed_at":"then","at_s":1001})");
  EXPECT_EQ(odd("origin", "refs/heads/topic", b), 0u);
  write(tmp.path(), ".phoenix/hook-installed.json", R"({"installed_at":"then","at_s":1000})");
  EXPECT_EQ(odd("origin", "refs/heads/topic", b), 1u);
  write(tmp.path(), ".phoenix/hook-installed.json", R"({"installed_at":"then","at_s":"1000"})");
  EXPECT_EQ(odd("origin", "refs/heads/topic", b), 0u) << "a note that does not read is no note";
}

// The install's note: written by a fresh install, kept by a reinstall.
TEST(HookRuns, TheInstallIsNotedOnceAndAgainOnlyWhenFresh) {
  ScopedTempDir tmp;
  EXPECT_FALSE(hook::installed_at_s(tmp.path()));
  hook::note_install(tmp.path(), false);  // none yet: written
  const std::optional<long long> first = hook::installed_at_s(tmp.path());
  ASSERT_TRUE(first);
  EXPECT_NEAR(static_cast<double>(*first), static_cast<double>(std::time(nullptr)), 5);
  EXPECT_TRUE(fs::exists(tmp / ".phoenix/.gitignore")) << "the state folder as Phoenix makes it";
  write(tmp.path(), ".phoenix/hook-installed.json", R"({"installed_at":"then","at_s":5})");
  hook::note_install(tmp.path(), false);
  EXPECT_EQ(hook::installed_at_s(tmp.path()), 5);
  hook::note_install(tmp.path(), true);
  EXPECT_GT(*hook::installed_at_s(tmp.path()), 5);
}

// The log is read only at its tail: past 1 MiB, a run cuts it to its last
// 256 KiB, whole lines, and what those lines tell is kept.
TEST(HookRuns, ALogPastOneMebibyteIsCutToItsTailOfWholeLines) {
  ScopedTempDir tmp;
  fs::create_directories(tmp / ".phoenix");
  const std::string a(40, 'a'), zero(40, '0');
  const std::vector<hook::PushedRef> first{{"refs/heads/old", a, "refs/heads/old", zero}};
  hook::log_run(tmp.path(), "phoenix-hook", "origin", first, hook::RunOutcome::kAllowed, {a});
  const std::string path = layout::hook_runs_file(tmp.path());
  std::string filler;
  for (int i = 0; filler.size() < 1024 * 1024; ++i)
    filler += "{\"ts\":\"x\",\"by\":\"filler\",\"n\":" + std::to_string(i) + ",\"refs\":[],\"green\":[]}\n";
  write(tmp.path(), ".phoenix/hook-runs.jsonl", read(path) + filler);
  const std::string b(40, 'b');
  const std::vector<hook::PushedRef> last{{"refs/heads/main", b, "refs/heads/main", zero}};
  hook::log_run(tmp.path(), "phoenix-hook", "origin", last, hook::RunOutcome::kAllowed, {b});
  const std::string text = read(path);
  EXPECT_LE(text.size(), 256u * 1024) << "cut to its tail";
  EXPECT_GT(text.size(), 200u * 1024);
  const auto lines = util::split_lines(text);
  ASSERT_FALSE(lines.empty());
  for (const auto& l : lines) EXPECT_TRUE(util::Json::accept(l)) << "a whole line: " << l.substr(0, 80);
  const hook::RunLog log = hook::read_runs(tmp.path());
  EXPECT_TRUE(log.covers(b)) << "the newest line is kept";
  EXPECT_FALSE(log.covers(a)) << "the oldest is gone";
  // Below the mark, nothing is cut.
  hook::log_run(tmp.path(), "phoenix-hook", "origin", last, hook::RunOutcome::kAllowed, {b});
  EXPECT_GT(read(path).size(), text.size());
  EXPECT_LT(read(path).size(), text.size() + 1024);
}

TEST(HookRuns, UnmeasuredPushesAreNotedOnceAndClearedPerRef) {
  ScopedTempDir tmp;
  fs::create_directories(tmp / ".phoenix");
  const std::string a(40, 'a');
  EXPECT_TRUE(hook::unmeasured_pushes(tmp.path()).empty());
  hook::note_unmeasured_push(tmp.path(), "origin", "refs/heads/main", a);
  hook::note_unmeasured_push(tmp.path(), "origin", "refs/heads/main", a);
  hook::note_unmeasured_push(tmp.path(), "origin", "refs/heads/topic", a);
  EXPECT_EQ(hook::unmeasured_pushes(tmp.path()).size(), 2u);
  hook::clear_unmeasured_pushes(tmp.path(), "origin", "refs/heads/main");
  ASSERT_EQ(hook::unmeasured_pushes(tmp.path()).size(), 1u);
  EXPECT_EQ(hook::unmeasured_pushes(tmp.path())[0]["remote_ref"], "refs/heads/topic");
  hook::clear_unmeasured_pushes(tmp.path(), "origin", "refs/heads/topic");
  EXPECT_FALSE(fs::exists(layout::unmeasured_pushes_file(tmp.path())));
}

}  // namespace
}  // namespace phoenix::test
