#include "sandbox/sandbox.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "gitx/repo.h"
#include "test_util.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::sandbox {
namespace {

using test::commit_all;
using test::git;
using test::init_repo;
using test::read;
using test::ScopedTempDir;
using test::trim;
using test::write;

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string skip_reason(const Sandbox& sb, const std::string& path) {
  for (const Skipped& s : sb.skipped())
    if (s.path == path) return s.reason;
  return "";
}

bool exists_no_follow(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

std::string numbered(int n, const std::string& tag) {
  std::string s;
  for (int i = 1; i <= n; ++i) s += tag + " line " + std::to_string(i) + "\n";
  return s;
}

// Every test of a sandbox's contract runs against both kinds. What the agent
// sees is reached the way the agent reaches it: by processes started
// through Sandbox::confine() (for an overlay sandbox, nothing is visible at
// path() from the test's own process).
class SandboxBase : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    base = repo + "/.phoenix/sandboxes";
  }
  ScopedTempDir tmp;
  std::string repo;
  std::string base;
};

class SandboxTest : public SandboxBase, public ::testing::WithParamInterface<Kind> {
 protected:
  void SetUp() override {
    // These tests name their kind; PHOENIX_SANDBOX (which .ci/run sets to
    // `copy` for a second pass of the suite) would override it.
    ::unsetenv("PHOENIX_SANDBOX");
    if (GetParam() == Kind::kOverlay && !overlay_unavailable_reason().empty())
      GTEST_SKIP() << "overlay sandbox unavailable here: " << overlay_unavailable_reason();
    SandboxBase::SetUp();
  }

  Sandbox make(const std::vector<std::string>& carry = {}) {
    Sandbox sb = Sandbox::create(repo, base, carry, GetParam());
    EXPECT_EQ(sb.kind(), GetParam());
    return sb;
  }

  // Runs argv in the sandbox, as the agent would.
  util::ProcessResult in_sb(const Sandbox& sb, std::vector<std::string> argv,
                            std::optional<std::string> stdin_data = std::nullopt) {
    util::ProcessOptions o;
    o.argv = std::move(argv);
    o.stdin_data = std::move(stdin_data);
    o.timeout_s = 60;
    o.unset_env = {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"};
    o.env["GIT_CEILING_DIRECTORIES"] = sb.dir();
    sb.confine(o);
    return util::run_process(o);
  }
  // `sh -c script` in the sandbox with "$1" = arg; must succeed.
  std::string sh(const Sandbox& sb, const std::string& script, const std::string& arg = "",
                 std::optional<std::string> stdin_data = std::nullopt) {
    util::ProcessResult r = in_sb(sb, {"sh", "-c", script, "sh", arg}, std::move(stdin_data));
    EXPECT_EQ(r.exit_code, 0) << script << " [" << arg << "]\n" << r.output;
    return r.output;
  }
  bool sh_ok(const Sandbox& sb, const std::string& script, const std::string& arg = "") {
    return in_sb(sb, {"sh", "-c", script, "sh", arg}).exit_code == 0;
  }
  std::string sb_git(const Sandbox& sb, std::vector<std::string> args) {
    args.insert(args.begin(), "git");
    util::ProcessResult r = in_sb(sb, args);
    EXPECT_EQ(r.exit_code, 0) << util::join_argv(args) << "\n" << r.output;
    return r.output;
  }
  std::string sb_read(const Sandbox& sb, const std::string& rel) { return sh(sb, "cat \"$1\"", rel); }
  void sb_write(const Sandbox& sb, const std::string& rel, const std::string& content) {
    sh(sb, "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"", rel, content);
  }
  bool sb_exists(const Sandbox& sb, const std::string& rel) {
    return sh_ok(sb, "test -e \"$1\" || test -L \"$1\"", rel);
  }
  bool sb_is_link(const Sandbox& sb, const std::string& rel) { return sh_ok(sb, "test -L \"$1\"", rel); }
  unsigned sb_mode(const Sandbox& sb, const std::string& rel) {
    return static_cast<unsigned>(std::stoul(trim(sh(sb, "stat -c %a \"$1\"", rel)), nullptr, 8));
  }
};

INSTANTIATE_TEST_SUITE_P(Kinds, SandboxTest, ::testing::Values(Kind::kCopy, Kind::kOverlay),
                         [](const ::testing::TestParamInfo<Kind>& i) { return std::string(kind_name(i.param)); });

TEST_P(SandboxTest, CopiesTrackedFilesAsTheyAreInTheWorkTree) {
  write(repo, "src/a.cc", "committed\n");
  write(repo, "README.md", "readme\n");
  write(repo, "gone.txt", "will be deleted\n");
  commit_all(repo, "init");
  write(repo, "src/a.cc", "edited, not staged\n");
  write(repo, "notes.txt", "untracked\n");
  fs::remove(repo + "/gone.txt");

  Sandbox sb = make();
  EXPECT_EQ(sb_read(sb, "src/a.cc"), "edited, not staged\n");
  EXPECT_EQ(sb_read(sb, "README.md"), "readme\n");
  EXPECT_FALSE(sb_exists(sb, "notes.txt")) << "untracked files are not copied";
  EXPECT_FALSE(sb_exists(sb, "gone.txt"));
  EXPECT_EQ(skip_reason(sb, "gone.txt"), "missing from the work tree");
  EXPECT_EQ(sb.files(), (std::vector<std::string>{"README.md", "src/a.cc"}));
  EXPECT_TRUE(sh_ok(sb, "test -d .git"));
  EXPECT_TRUE(fs::path(sb.path()).string().rfind(fs::canonical(base).string() + "/sandbox-", 0) == 0);
  // Exactly what is listed, and nothing else of the real tree.
  EXPECT_EQ(sh(sb, "ls -A | sort"), ".git\nREADME.md\nsrc\n");

  // The agent sees a clean repository whose one commit is the baseline.
  EXPECT_EQ(sb_git(sb, {"status", "--porcelain", "-uall"}), "");
  EXPECT_EQ(trim(sb_git(sb, {"rev-parse", "HEAD"})), sb.baseline());
  EXPECT_EQ(trim(sb_git(sb, {"rev-list", "--count", "HEAD"})), "1");
  EXPECT_EQ(trim(sb_git(sb, {"show", "HEAD:src/a.cc"})), "edited, not staged");
  EXPECT_EQ(sb.read_patch(), "");
}

TEST_P(SandboxTest, NeverCopiesSecretsEvenWhenTrackedOrCarried) {
  const std::vector<std::string> secrets{".env",
                                         ".env.local",
                                         "config/server.pem",
                                         "tls.key",
                                         "keys/id_rsa",
                                         "id_rsa.pub",
                                         "id_ed25519",
                                         ".npmrc",
                                         "sub/.pypirc",
                                         ".netrc",
                                         "cert.p12",
                                         "credentials.json",
                                         "gcp/credentials-prod.json"};
  for (const auto& s : secrets) write(repo, s, "SECRET\n");
  write(repo, "src/main.cc", "int main() {}\n");
  commit_all(repo, "init");
  write(repo, ".env.example", "untracked, carried by glob, still a secret name\n");

  Sandbox sb = make({".env*", "**/*.pem"});
  EXPECT_TRUE(sb_exists(sb, "src/main.cc"));
  for (const auto& s : secrets) {
    EXPECT_FALSE(sb_exists(sb, s)) << s;
    EXPECT_EQ(skip_reason(sb, s), "secret") << s;
  }
  EXPECT_FALSE(sb_exists(sb, ".env.example"));
  EXPECT_EQ(sh(sb, "grep -rl SECRET . --exclude-dir=.git || true"), "") << "no secret readable anywhere";
  EXPECT_EQ(sb.files(), (std::vector<std::string>{"src/main.cc"}));
  // Not in the baseline either, so the patch does not "delete" them.
  EXPECT_EQ(sb.read_patch(), "");
}

TEST_F(SandboxBase, SecretListIsTheDocumentedOne) {
  EXPECT_EQ(secret_globs(),
            (std::vector<std::string>{".env", ".env.*", "*.pem", "*.key", "*.p12", "id_rsa*", "id_ed25519*", ".npmrc",
                                      ".pypirc", ".netrc", "credentials*.json"}));
  EXPECT_TRUE(is_secret("deep/dir/.env.production"));
  EXPECT_TRUE(is_secret("a/b/key.pem"));
  EXPECT_FALSE(is_secret("src/environment.cc"));
  EXPECT_FALSE(is_secret("docs/keys.md"));
  EXPECT_FALSE(is_secret("credentials.yaml"));
}

TEST_P(SandboxTest, IgnoredAndUntrackedFilesAreInvisibleUnlessCarried) {
  write(repo, ".gitignore", "build/\n*.log\n");
  write(repo, "src/a.cc", "a\n");
  commit_all(repo, "init");
  write(repo, "build/config.h", "#define CONFIGURED 1\n");
  write(repo, "build/big.o", "object\n");
  write(repo, "app.log", "log\n");
  write(repo, "fixtures/data/one.json", "{}\n");
  write(repo, "fixtures/data/two.txt", "two\n");
  write(repo, "scratch.txt", "untracked\n");
  write(repo, "node_modules/pkg/index.js", "ignored? no: untracked, in a folder with nothing tracked\n");

  Sandbox sb = make({"build/config.h", "fixtures/**/*.json"});
  EXPECT_EQ(sb_read(sb, "build/config.h"), "#define CONFIGURED 1\n");
  EXPECT_EQ(sb_read(sb, "fixtures/data/one.json"), "{}\n");
  EXPECT_FALSE(sb_exists(sb, "build/big.o"));
  EXPECT_FALSE(sb_exists(sb, "app.log"));
  EXPECT_FALSE(sb_exists(sb, "fixtures/data/two.txt"));
  EXPECT_FALSE(sb_exists(sb, "scratch.txt"));
  EXPECT_FALSE(sb_exists(sb, "node_modules"));
  EXPECT_FALSE(sb_exists(sb, ".phoenix")) << "the sandboxes folder itself is never carried";
  EXPECT_EQ(sh(sb, "find . -path ./.git -prune -o -type f -print | sort"),
            "./.gitignore\n./build/config.h\n./fixtures/data/one.json\n./src/a.cc\n");
  EXPECT_EQ(sb.read_patch(), "");

  // A carried file is part of the baseline even though the copied
  // .gitignore ignores it: an edit to it shows in the patch.
  sb_write(sb, "build/config.h", "#define CONFIGURED 2\n");
  sb_write(sb, "build/new.o", "ignored output of the agent's build\n");
  const std::string patch = sb.read_patch();
  EXPECT_EQ(gitx::Repo::patch_files(patch), (std::vector<std::string>{"build/config.h"}));
  EXPECT_NE(patch.find("+#define CONFIGURED 2"), std::string::npos);
}

TEST_P(SandboxTest, CarryCanWalkTheWholeTreeButNeverGitOrPhoenixState) {
  write(repo, ".gitignore", "*.local\n.phoenix/\n");
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  write(repo, "deep/er/settings.local", "x\n");
  write(repo, ".phoenix/journal.local", "state\n");
  Sandbox sb = make({"*.local"});
  EXPECT_TRUE(sb_exists(sb, "deep/er/settings.local"));
  EXPECT_FALSE(sb_exists(sb, ".phoenix"));
  EXPECT_EQ(sb.files(), (std::vector<std::string>{".gitignore", "a.txt", "deep/er/settings.local"}));
}

TEST_P(SandboxTest, TrackedPhoenixStateAndSubmodulesAreNotCopied) {
  write(repo, ".phoenix/contracts/orders.json", "{}\n");
  write(repo, "src/a.cc", "a\n");
  commit_all(repo, "init");
  // A gitlink entry, as a submodule leaves in the index.
  git(repo, {"update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,vendor/lib"});
  Sandbox sb = make();
  EXPECT_EQ(sb.files(), (std::vector<std::string>{"src/a.cc"}));
  EXPECT_EQ(skip_reason(sb, "vendor/lib"), "submodule");
  EXPECT_FALSE(sb_exists(sb, ".phoenix/contracts/orders.json"));
}

TEST_P(SandboxTest, KeepsExecutableBitsAndInsideSymlinksSkipsEscapingOnes) {
  write(repo, "run.sh", "#!/bin/sh\necho hi\n");
  fs::permissions(repo + "/run.sh", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  write(repo, "docs/readme.md", "docs\n");
  write(repo, "readonly.txt", "ro\n");
  fs::create_symlink("docs/readme.md", repo + "/link-in");
  fs::create_symlink("../readme.md", repo + "/docs/sub-link");  // docs/../readme.md: missing but inside
  fs::create_symlink("/etc/passwd", repo + "/link-abs");
  fs::create_symlink("../outside.txt", repo + "/link-up");
  fs::create_symlink(".", repo + "/here");
  fs::create_symlink("here/../escape", repo + "/tricky");  // textually inside, physically not
  commit_all(repo, "init");
  fs::permissions(repo + "/readonly.txt", fs::perms::owner_read);

  Sandbox sb = make();
  EXPECT_EQ(sb_mode(sb, "run.sh") & 0100, 0100u);
  if (GetParam() == Kind::kCopy) { EXPECT_EQ(sb_mode(sb, "run.sh"), 0755u); }
  // The copy makes a read-only file editable; the overlay shows the file
  // as it is (the agent may chmod it: that writes only the upper layer).
  EXPECT_EQ(sb_mode(sb, "readonly.txt"), GetParam() == Kind::kCopy ? 0644u : 0400u);
  EXPECT_NE(sb_git(sb, {"ls-tree", "HEAD", "run.sh"}).find("100755"), std::string::npos);

  EXPECT_TRUE(sb_is_link(sb, "link-in"));
  EXPECT_EQ(trim(sh(sb, "readlink \"$1\"", "link-in")), "docs/readme.md");
  EXPECT_EQ(sb_read(sb, "link-in"), "docs\n");
  EXPECT_TRUE(sb_is_link(sb, "docs/sub-link"));
  EXPECT_TRUE(sb_is_link(sb, "here"));
  EXPECT_NE(sb_git(sb, {"ls-tree", "HEAD", "link-in"}).find("120000"), std::string::npos);
  for (const char* escaping : {"link-abs", "link-up", "tricky"}) {
    EXPECT_FALSE(sb_exists(sb, escaping)) << escaping;
    EXPECT_EQ(skip_reason(sb, escaping), "symlink outside the repository") << escaping;
  }
  EXPECT_EQ(sb.read_patch(), "") << "skipped links are not in the baseline either";
}

TEST_P(SandboxTest, NeverReadsThroughAFolderTheUserReplacedWithASymlink) {
  write(repo, "data/file.txt", "tracked\n");
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  write(tmp.path(), "elsewhere/file.txt", "NOT PART OF THE REPOSITORY\n");
  fs::remove_all(repo + "/data");
  fs::create_symlink(tmp / "elsewhere", repo + "/data");  // the index still lists data/file.txt
  Sandbox sb = make({"data/**"});
  EXPECT_FALSE(sb_exists(sb, "data/file.txt"));
  EXPECT_EQ(skip_reason(sb, "data/file.txt"), "inside a symlinked folder");
  EXPECT_EQ(sb.files(), std::vector<std::string>{"a.txt"});
}

class SandboxPatchTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped()) return;
    write(repo, "src/a.cc", numbered(10, "a"));
    write(repo, "src/old_name.cc", numbered(30, "moved"));
    write(repo, "delete_me.txt", "bye\n");
    write(repo, "tool.sh", "#!/bin/sh\n");
    write(repo, "image.bin", std::string("\x89PNG\0\0\x01\x02", 8) + std::string(100, '\x7f'));
    head = commit_all(repo, "init");
  }

  // What an agent might do.
  void edit(const Sandbox& sb) {
    sb_write(sb, "src/a.cc", numbered(10, "a") + "added by the agent\n");
    sh(sb, "mv src/old_name.cc src/new_name.cc && rm delete_me.txt && chmod u+x tool.sh");
    sb_write(sb, "image.bin", std::string("\x89PNG\0\0\x03\x04", 8) + std::string(90, '\x01'));
    sb_write(sb, "new/data.bin", std::string("\0\x01\x02\x03", 4));
    sb_write(sb, "new/file.txt", "fresh\n");
  }

  // Applies `patch` to a fresh clone of the real repository at `head` and
  // checks that it reproduces the sandbox's files.
  void expect_patch_reproduces(const std::string& patch, const Sandbox& sb) {
    const std::string clone = tmp / ("clone-" + std::to_string(clones++));
    test::run({"git", "clone", "-q", repo, clone});
    gitx::Repo target = gitx::Repo::open(clone);
    target.apply_patch(patch);
    for (const char* f : {"src/a.cc", "src/new_name.cc", "tool.sh", "image.bin", "new/data.bin", "new/file.txt"})
      EXPECT_EQ(read(clone + "/" + f), sb_read(sb, f)) << f;
    EXPECT_FALSE(fs::exists(clone + "/src/old_name.cc"));
    EXPECT_FALSE(fs::exists(clone + "/delete_me.txt"));
    struct stat st;
    ASSERT_EQ(::stat((clone + "/tool.sh").c_str(), &st), 0);
    EXPECT_TRUE(st.st_mode & S_IXUSR);
  }

  std::string head;
  int clones = 0;
};

INSTANTIATE_TEST_SUITE_P(Kinds, SandboxPatchTest, ::testing::Values(Kind::kCopy, Kind::kOverlay),
                         [](const ::testing::TestParamInfo<Kind>& i) { return std::string(kind_name(i.param)); });

TEST_P(SandboxPatchTest, ReadsBackNewDeletedRenamedBinaryAndModeChanges) {
  Sandbox sb = make();
  edit(sb);
  const std::string patch = sb.read_patch();
  EXPECT_EQ(gitx::Repo::patch_files(patch),
            (std::vector<std::string>{"delete_me.txt", "image.bin", "new/data.bin", "new/file.txt", "src/a.cc",
                                      "src/new_name.cc", "src/old_name.cc", "tool.sh"}));
  EXPECT_NE(patch.find("rename from src/old_name.cc"), std::string::npos);
  EXPECT_NE(patch.find("deleted file mode"), std::string::npos);
  EXPECT_NE(patch.find("new mode 100755"), std::string::npos);
  EXPECT_NE(patch.find("GIT binary patch"), std::string::npos);
  expect_patch_reproduces(patch, sb);
  // The real repository is as it was.
  EXPECT_EQ(git(repo, {"status", "--porcelain", "--untracked-files=no"}), "");
}

TEST_P(SandboxPatchTest, PatchIsTheSameWhateverTheAgentDidToItsGitRepository) {
  struct Case {
    const char* name;
    std::vector<std::vector<std::string>> git_steps;
    bool remove_git;
  };
  const std::vector<Case> cases{
      {"commit", {{"add", "-A"}, {"commit", "-q", "-m", "agent"}}, false},
      {"commit then reset --hard HEAD~0",
       {{"add", "-A"}, {"commit", "-q", "-m", "agent"}, {"reset", "-q", "--hard", "HEAD~0"}},
       false},
      {"commit, branch switch, gc",
       {{"add", "-A"},
        {"commit", "-q", "-m", "agent"},
        {"checkout", "-q", "-b", "elsewhere"},
        {"reflog", "expire", "--expire=now", "--all"},
        {"gc", "-q", "--prune=now"}},
       false},
      {"index rewritten", {{"rm", "-q", "--cached", "src/a.cc"}, {"add", "new/file.txt"}}, false},
      {"rm -rf .git", {}, true},
  };
  std::string expected;
  {
    Sandbox reference = make();
    edit(reference);
    expected = reference.read_patch();
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Sandbox sb = make();
    edit(sb);
    for (const auto& step : c.git_steps) sb_git(sb, step);
    if (c.remove_git) sh(sb, "rm -rf .git");
    const std::string patch = sb.read_patch();
    EXPECT_EQ(gitx::Repo::patch_files(patch), gitx::Repo::patch_files(expected));
    expect_patch_reproduces(patch, sb);
  }
}

TEST_P(SandboxPatchTest, ResettingToTheBaselineUndoesEverything) {
  Sandbox sb = make();
  edit(sb);
  sb_git(sb, {"add", "-A"});
  sb_git(sb, {"commit", "-q", "-m", "agent"});
  sb_git(sb, {"reset", "-q", "--hard", sb.baseline()});
  sb_git(sb, {"clean", "-qfd"});
  EXPECT_EQ(sb.read_patch(), "");
}

TEST_P(SandboxTest, ScratchFilesNeverShowInThePatch) {
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  write(repo, ".phoenix-prompt.md", "a tracked file with the scratch name\n");
  commit_all(repo, "clash");
  Sandbox sb = make();
  const std::string p = sb.write_scratch_file("prompt.md", "the prompt\n");
  EXPECT_EQ(fs::path(p).parent_path().string(), sb.path());
  EXPECT_EQ(fs::path(p).filename().string(), ".phoenix-2-prompt.md") << "the tracked file keeps its name";
  EXPECT_EQ(sb_read(sb, p), "the prompt\n") << "by its absolute path, as the agent is told";
  EXPECT_EQ(sb_read(sb, ".phoenix-prompt.md"), "a tracked file with the scratch name\n");
  EXPECT_EQ(sb.read_patch(), "");
  sb_write(sb, ".phoenix-2-prompt.md", "edited by the agent\n");
  EXPECT_EQ(sb.read_patch(), "");
}

TEST_P(SandboxTest, DestructorRemovesEverythingAndNeverFollowsLinksOut) {
  write(repo, "dir/a.txt", "a\n");
  commit_all(repo, "init");
  write(tmp.path(), "outside.txt", "not ours\n");
  fs::permissions(tmp / "outside.txt", fs::perms::owner_read);
  std::string dir;
  {
    Sandbox sb = make();
    dir = sb.dir();
    sh(sb, "ln -s \"$1\" out-link && chmod 000 dir/a.txt && chmod 000 dir", tmp / "outside.txt");
    ASSERT_TRUE(fs::exists(dir));
  }
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(fs::exists(tmp / "outside.txt"));
  struct stat st;
  ASSERT_EQ(::stat((tmp / "outside.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0400u);
  ASSERT_EQ(::stat((repo + "/dir/a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "the user's file keeps its mode";
}

TEST_P(SandboxTest, MovedSandboxIsRemovedOnce) {
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  Sandbox a = make();
  const std::string dir = a.dir();
  Sandbox b = std::move(a);
  EXPECT_EQ(b.dir(), dir);
  EXPECT_TRUE(fs::exists(dir));
  EXPECT_EQ(b.kind(), GetParam());
  Sandbox c = make();
  const std::string dir_c = c.dir();
  c = std::move(b);
  EXPECT_FALSE(fs::exists(dir_c)) << "the overwritten sandbox is removed";
  EXPECT_TRUE(fs::exists(dir));
  sb_write(c, "b.txt", "b\n");
  EXPECT_EQ(gitx::Repo::patch_files(c.read_patch()), (std::vector<std::string>{"b.txt"}));
}

TEST_P(SandboxTest, EmptyRepositoryGivesAnEmptyBaseline) {
  Sandbox sb = make();
  EXPECT_TRUE(sb.files().empty());
  EXPECT_EQ(sb.baseline().size(), 40u);
  sb_write(sb, "first.txt", "hello\n");
  EXPECT_EQ(gitx::Repo::patch_files(sb.read_patch()), (std::vector<std::string>{"first.txt"}));
}

TEST_P(SandboxTest, CreatingASandboxLeavesTheRealRepositoryAlone) {
  write(repo, ".gitignore", ".phoenix/\n");
  write(repo, "a.txt", "a\n");
  const std::string head = commit_all(repo, "init");
  write(repo, "a.txt", "dirty\n");
  const RepoFingerprint before = fingerprint_repo(repo);
  const std::string status = test::porcelain(repo);
  {
    Sandbox sb = make();
    sb_write(sb, "a.txt", "agent\n");
    sb_git(sb, {"commit", "-qam", "agent"});
    EXPECT_EQ(gitx::Repo::patch_files(sb.read_patch()), (std::vector<std::string>{"a.txt"}));
  }
  EXPECT_EQ(read(repo + "/a.txt"), "dirty\n");
  EXPECT_EQ(test::porcelain(repo), status);
  EXPECT_EQ(test::rev_parse(repo, "HEAD"), head);
  EXPECT_EQ(fingerprint_changes(before, fingerprint_repo(repo)), std::vector<std::string>{});
}

TEST_P(SandboxTest, CreateOnSomethingThatIsNotARepositoryThrows) {
  EXPECT_THROW(Sandbox::create(tmp / "nowhere", base, {}, GetParam()), Error);
}

// --- the overlay sandbox in particular --------------------------------------------

TEST_P(SandboxTest, TheRealRepositoryCannotBeWrittenFromInside) {
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  Sandbox sb = make();
  util::ProcessResult r = in_sb(sb, {"sh", "-c", "echo planted > \"$1/planted.txt\"", "sh", repo});
  if (GetParam() == Kind::kOverlay) {
    EXPECT_NE(r.exit_code, 0) << "the real work tree is read-only inside the overlay's namespace";
    EXPECT_FALSE(fs::exists(repo + "/planted.txt"));
  } else {
    // The copying sandbox cannot stop it; the fingerprint watch catches it
    // (tests/e2e/hostile_test.cc).
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
}

TEST_P(SandboxTest, DeletedFoldersAndFilesReplacedByFoldersReadBack) {
  write(repo, "lib/one.c", "1\n");
  write(repo, "lib/two.c", "2\n");
  write(repo, "flat", "a file that becomes a folder\n");
  write(repo, "keep.txt", "k\n");
  commit_all(repo, "init");
  Sandbox sb = make();
  sh(sb, "rm -rf lib && mkdir lib && echo new > lib/three.c && rm flat && mkdir flat && echo in > flat/inside");
  const std::string patch = sb.read_patch();
  EXPECT_EQ(gitx::Repo::patch_files(patch),
            (std::vector<std::string>{"flat", "flat/inside", "lib/one.c", "lib/three.c", "lib/two.c"}));
  const std::string clone = tmp / "clone";
  test::run({"git", "clone", "-q", repo, clone});
  gitx::Repo::open(clone).apply_patch(patch);
  EXPECT_EQ(read(clone + "/lib/three.c"), "new\n");
  EXPECT_EQ(read(clone + "/flat/inside"), "in\n");
  EXPECT_FALSE(fs::exists(clone + "/lib/one.c"));
}

TEST_F(SandboxBase, KindComesFromTheEnvironmentFirst) {
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  ::setenv("PHOENIX_SANDBOX", "copy", 1);
  EXPECT_EQ(effective_kind(Kind::kOverlay), Kind::kCopy);
  EXPECT_EQ(Sandbox::create(repo, base, {}, Kind::kOverlay).kind(), Kind::kCopy);
  ::setenv("PHOENIX_SANDBOX", "1", 1);  // what Phoenix sets for an agent: not a kind
  EXPECT_EQ(effective_kind(Kind::kCopy), Kind::kCopy);
  ::setenv("PHOENIX_SANDBOX", "overlayfs", 1);
  try {
    effective_kind(Kind::kAuto);
    ADD_FAILURE() << "a bad kind was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "PHOENIX_SANDBOX: 'overlayfs' is not one of auto, copy, overlay");
    EXPECT_EQ(e.exit_code(), kExitConfig);
  }
  ::unsetenv("PHOENIX_SANDBOX");
  EXPECT_EQ(parse_kind("auto", "sandbox.kind"), Kind::kAuto);
  EXPECT_THROW(parse_kind("", "sandbox.kind"), ConfigError);
  // auto: the overlay exactly where it is available.
  EXPECT_EQ(Sandbox::create(repo, base, {}, Kind::kAuto).kind(),
            overlay_unavailable_reason().empty() ? Kind::kOverlay : Kind::kCopy);
}

// --- fingerprints ---------------------------------------------------------------

class SandboxFingerprintTest : public SandboxBase {
 protected:
  void SetUp() override {
    SandboxBase::SetUp();
    write(repo, "src/a.cc", "a\n");
    write(repo, "src/b.cc", "b\n");
    head = commit_all(repo, "init");
    write(repo, "src/b.cc", "b, dirty before the run\n");
    before = fingerprint_repo(repo);
  }
  std::vector<std::string> changes() { return fingerprint_changes(before, fingerprint_repo(repo)); }
  std::string head;
  RepoFingerprint before;
};

TEST_F(SandboxFingerprintTest, NothingChangedNothingReported) {
  EXPECT_EQ(changes(), std::vector<std::string>{});
  // Phoenix's own untracked state is not the agent's doing.
  write(repo, ".phoenix/sandboxes/sandbox-x/work/f.txt", "x\n");
  write(repo, ".phoenix/trace.jsonl", "{}\n");
  EXPECT_EQ(changes(), std::vector<std::string>{});
}

TEST_F(SandboxFingerprintTest, NamesEveryKindOfChange) {
  write(repo, "src/a.cc", "hacked\n");
  EXPECT_EQ(changes(), std::vector<std::string>{"src/a.cc modified in the work tree"});

  write(repo, "src/a.cc", "a\n");
  write(repo, "src/b.cc", "b, changed again\n");
  EXPECT_EQ(changes(), std::vector<std::string>{"src/b.cc changed again in the work tree"});

  write(repo, "src/b.cc", "b, dirty before the run\n");
  write(repo, "new.txt", "n\n");
  EXPECT_EQ(changes(), std::vector<std::string>{"new.txt created in the work tree"});
  fs::remove(repo + "/new.txt");

  git(repo, {"add", "src/b.cc"});
  EXPECT_EQ(changes(), std::vector<std::string>{"index entry of src/b.cc changed"});
  git(repo, {"reset", "-q"});

  git(repo, {"branch", "side"});
  EXPECT_EQ(changes(), std::vector<std::string>{"ref refs/heads/side created at " + head.substr(0, 7)});
  git(repo, {"branch", "-D", "-q", "side"});

  write(repo, ".git/hooks/pre-commit", "#!/bin/sh\n");
  EXPECT_EQ(changes(), std::vector<std::string>{"hook pre-commit added"});
  fs::remove(repo + "/.git/hooks/pre-commit");

  git(repo, {"config", "core.hooksPath", "/tmp/evil"});
  std::vector<std::string> c = changes();
  EXPECT_TRUE(has(c, "the repository's config file changed"));
  git(repo, {"config", "--unset", "core.hooksPath"});

  git(repo, {"commit", "-q", "--allow-empty", "-m", "agent"});
  c = changes();
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front().rfind("HEAD moved from " + head.substr(0, 7) + " (main) to ", 0), 0u) << c.front();
  EXPECT_TRUE(has(c, "ref refs/heads/main moved from " + head.substr(0, 7) + " to " +
                         trim(git(repo, {"rev-parse", "--short=7", "HEAD"}))));
}

TEST_F(SandboxFingerprintTest, RestoringAUsersDirtyFileCountsAsAChange) {
  write(repo, "src/b.cc", "b\n");
  EXPECT_EQ(changes(), std::vector<std::string>{"src/b.cc changed back to its committed content"});
}

TEST_F(SandboxFingerprintTest, ExtraIgnoredPrefixesOnlyHideUntrackedFiles) {
  write(repo, "work/sandboxes/x.txt", "phoenix's\n");
  EXPECT_EQ(fingerprint_changes(before, fingerprint_repo(repo, {"work/sandboxes/"})), std::vector<std::string>{});
  write(repo, "src/a.cc", "tracked files always count\n");
  EXPECT_EQ(fingerprint_changes(before, fingerprint_repo(repo, {"src/", "work/sandboxes/"})),
            std::vector<std::string>{"src/a.cc modified in the work tree"});
}

}  // namespace
}  // namespace phoenix::sandbox
