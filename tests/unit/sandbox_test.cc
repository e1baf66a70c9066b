#include "sandbox/sandbox.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "gitx/repo.h"
#include "test_util.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace phoenix::sandbox {
namespace {

using test::commit_all;
using test::git;
using test::init_repo;
using test::read;
using test::ScopedTempDir;
using test::write;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

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

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    base = repo + "/.phoenix/sandboxes";
  }
  ScopedTempDir tmp;
  std::string repo;
  std::string base;
};

TEST_F(SandboxTest, CopiesTrackedFilesAsTheyAreInTheWorkTree) {
  write(repo, "src/a.cc", "committed\n");
  write(repo, "README.md", "readme\n");
  write(repo, "gone.txt", "will be deleted\n");
  commit_all(repo, "init");
  write(repo, "src/a.cc", "edited, not staged\n");
  write(repo, "notes.txt", "untracked\n");
  fs::remove(repo + "/gone.txt");

  Sandbox sb = Sandbox::create(repo, base, {});
  EXPECT_EQ(read(sb.path() + "/src/a.cc"), "edited, not staged\n");
  EXPECT_EQ(read(sb.path() + "/README.md"), "readme\n");
  EXPECT_FALSE(fs::exists(sb.path() + "/notes.txt")) << "untracked files are not copied";
  EXPECT_FALSE(fs::exists(sb.path() + "/gone.txt"));
  EXPECT_EQ(skip_reason(sb, "gone.txt"), "missing from the work tree");
  EXPECT_EQ(sb.files(), (std::vector<std::string>{"README.md", "src/a.cc"}));
  EXPECT_TRUE(fs::is_directory(sb.path() + "/.git"));
  EXPECT_TRUE(fs::path(sb.path()).string().rfind(fs::canonical(base).string() + "/sandbox-", 0) == 0);

  // The agent sees a clean repository whose one commit is the baseline.
  EXPECT_EQ(git(sb.path(), {"status", "--porcelain", "-uall"}), "");
  EXPECT_EQ(trim(git(sb.path(), {"rev-parse", "HEAD"})), sb.baseline());
  EXPECT_EQ(trim(git(sb.path(), {"rev-list", "--count", "HEAD"})), "1");
  EXPECT_EQ(trim(git(sb.path(), {"show", "HEAD:src/a.cc"})), "edited, not staged");
  EXPECT_EQ(sb.read_patch(), "");
}

TEST_F(SandboxTest, NeverCopiesSecretsEvenWhenTrackedOrCarried) {
  const std::vector<std::string> secrets{".env",          ".env.local",       "config/server.pem", "tls.key",
                                         "keys/id_rsa",   "id_rsa.pub",       "id_ed25519",        ".npmrc",
                                         "sub/.pypirc",   ".netrc",           "cert.p12",          "credentials.json",
                                         "gcp/credentials-prod.json"};
  for (const auto& s : secrets) write(repo, s, "SECRET\n");
  write(repo, "src/main.cc", "int main() {}\n");
  commit_all(repo, "init");
  write(repo, ".env.example", "untracked, carried by glob, still a secret name\n");

  Sandbox sb = Sandbox::create(repo, base, {".env*", "**/*.pem"});
  EXPECT_TRUE(fs::exists(sb.path() + "/src/main.cc"));
  for (const auto& s : secrets) {
    EXPECT_FALSE(exists_no_follow(sb.path() + "/" + s)) << s;
    EXPECT_EQ(skip_reason(sb, s), "secret") << s;
  }
  EXPECT_FALSE(fs::exists(sb.path() + "/.env.example"));
  EXPECT_EQ(sb.files(), (std::vector<std::string>{"src/main.cc"}));
  // Not in the baseline either, so the patch does not "delete" them.
  EXPECT_EQ(sb.read_patch(), "");
}

TEST_F(SandboxTest, SecretListIsTheDocumentedOne) {
  EXPECT_EQ(secret_globs(), (std::vector<std::string>{".env", ".env.*", "*.pem", "*.key", "*.p12", "id_rsa*",
                                                      "id_ed25519*", ".npmrc", ".pypirc", ".netrc",
                                                      "credentials*.json"}));
  EXPECT_TRUE(is_secret("deep/dir/.env.production"));
  EXPECT_TRUE(is_secret("a/b/key.pem"));
  EXPECT_FALSE(is_secret("src/environment.cc"));
  EXPECT_FALSE(is_secret("docs/keys.md"));
  EXPECT_FALSE(is_secret("credentials.yaml"));
}

TEST_F(SandboxTest, IgnoredAndUntrackedFilesAreInvisibleUnlessCarried) {
  write(repo, ".gitignore", "build/\n*.log\n");
  write(repo, "src/a.cc", "a\n");
  commit_all(repo, "init");
  write(repo, "build/config.h", "#define CONFIGURED 1\n");
  write(repo, "build/big.o", "object\n");
  write(repo, "app.log", "log\n");
  write(repo, "fixtures/data/one.json", "{}\n");
  write(repo, "fixtures/data/two.txt", "two\n");
  write(repo, "scratch.txt", "untracked\n");

  Sandbox sb = Sandbox::create(repo, base, {"build/config.h", "fixtures/**/*.json"});
  EXPECT_EQ(read(sb.path() + "/build/config.h"), "#define CONFIGURED 1\n");
  EXPECT_EQ(read(sb.path() + "/fixtures/data/one.json"), "{}\n");
  EXPECT_FALSE(fs::exists(sb.path() + "/build/big.o"));
  EXPECT_FALSE(fs::exists(sb.path() + "/app.log"));
  EXPECT_FALSE(fs::exists(sb.path() + "/fixtures/data/two.txt"));
  EXPECT_FALSE(fs::exists(sb.path() + "/scratch.txt"));
  EXPECT_FALSE(fs::exists(sb.path() + "/.phoenix")) << "the sandboxes folder itself is never carried";
  EXPECT_EQ(sb.read_patch(), "");

  // A carried file is part of the baseline even though the copied
  // .gitignore ignores it: an edit to it shows in the patch.
  write(sb.path(), "build/config.h", "#define CONFIGURED 2\n");
  write(sb.path(), "build/new.o", "ignored output of the agent's build\n");
  const std::string patch = sb.read_patch();
  EXPECT_EQ(gitx::Repo::patch_files(patch), (std::vector<std::string>{"build/config.h"}));
  EXPECT_NE(patch.find("+#define CONFIGURED 2"), std::string::npos);
}

TEST_F(SandboxTest, CarryCanWalkTheWholeTreeButNeverGitOrPhoenixState) {
  write(repo, ".gitignore", "*.local\n.phoenix/\n");
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  write(repo, "deep/er/settings.local", "x\n");
  write(repo, ".phoenix/journal.local", "state\n");
  Sandbox sb = Sandbox::create(repo, base, {"*.local"});
  EXPECT_TRUE(fs::exists(sb.path() + "/deep/er/settings.local"));
  EXPECT_FALSE(fs::exists(sb.path() + "/.phoenix"));
  EXPECT_EQ(sb.files(), (std::vector<std::string>{".gitignore", "a.txt", "deep/er/settings.local"}));
}

TEST_F(SandboxTest, TrackedPhoenixStateAndSubmodulesAreNotCopied) {
  write(repo, ".phoenix/contracts/orders.json", "{}\n");
  write(repo, "src/a.cc", "a\n");
  commit_all(repo, "init");
  // A gitlink entry, as a submodule leaves in the index.
  git(repo, {"update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,vendor/lib"});
  Sandbox sb = Sandbox::create(repo, base, {});
  EXPECT_EQ(sb.files(), (std::vector<std::string>{"src/a.cc"}));
  EXPECT_EQ(skip_reason(sb, "vendor/lib"), "submodule");
}

TEST_F(SandboxTest, KeepsExecutableBitsAndInsideSymlinksSkipsEscapingOnes) {
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

  Sandbox sb = Sandbox::create(repo, base, {});
  struct stat st;
  ASSERT_EQ(::stat((sb.path() + "/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  ASSERT_EQ(::stat((sb.path() + "/readonly.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "a read-only file stays editable for the agent";
  EXPECT_NE(git(sb.path(), {"ls-tree", "HEAD", "run.sh"}).find("100755"), std::string::npos);

  EXPECT_TRUE(fs::is_symlink(sb.path() + "/link-in"));
  EXPECT_EQ(fs::read_symlink(sb.path() + "/link-in").string(), "docs/readme.md");
  EXPECT_EQ(read(sb.path() + "/link-in"), "docs\n");
  EXPECT_TRUE(fs::is_symlink(sb.path() + "/docs/sub-link"));
  EXPECT_TRUE(fs::is_symlink(sb.path() + "/here"));
  EXPECT_NE(git(sb.path(), {"ls-tree", "HEAD", "link-in"}).find("120000"), std::string::npos);
  for (const char* escaping : {"link-abs", "link-up", "tricky"}) {
    EXPECT_FALSE(exists_no_follow(sb.path() + "/" + escaping)) << escaping;
    EXPECT_EQ(skip_reason(sb, escaping), "symlink outside the repository") << escaping;
  }
  EXPECT_EQ(sb.read_patch(), "") << "skipped links are not in the baseline either";
}

TEST_F(SandboxTest, NeverReadsThroughAFolderTheUserReplacedWithASymlink) {
  write(repo, "data/file.txt", "tracked\n");
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  write(tmp.path(), "elsewhere/file.txt", "NOT PART OF THE REPOSITORY\n");
  fs::remove_all(repo + "/data");
  fs::create_symlink(tmp / "elsewhere", repo + "/data");  // the index still lists data/file.txt
  Sandbox sb = Sandbox::create(repo, base, {"data/**"});
  EXPECT_FALSE(exists_no_follow(sb.path() + "/data/file.txt"));
  EXPECT_EQ(skip_reason(sb, "data/file.txt"), "inside a symlinked folder");
  EXPECT_EQ(sb.files(), std::vector<std::string>{"a.txt"});
}

class SandboxPatchTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    write(repo, "src/a.cc", numbered(10, "a"));
    write(repo, "src/old_name.cc", numbered(30, "moved"));
    write(repo, "delete_me.txt", "bye\n");
    write(repo, "tool.sh", "#!/bin/sh\n");
    write(repo, "image.bin", std::string("\x89PNG\0\0\x01\x02", 8) + std::string(100, '\x7f'));
    head = commit_all(repo, "init");
  }

  // What an agent might do.
  void edit(const std::string& dir) {
    write(dir, "src/a.cc", numbered(10, "a") + "added by the agent\n");
    fs::rename(dir + "/src/old_name.cc", dir + "/src/new_name.cc");
    fs::remove(dir + "/delete_me.txt");
    fs::permissions(dir + "/tool.sh", fs::perms::owner_exec, fs::perm_options::add);
    write(dir, "image.bin", std::string("\x89PNG\0\0\x03\x04", 8) + std::string(90, '\x01'));
    write(dir, "new/data.bin", std::string("\0\x01\x02\x03", 4));
    write(dir, "new/file.txt", "fresh\n");
  }

  // Applies `patch` to a fresh clone of the real repository at `head` and
  // checks that it reproduces the sandbox's files.
  void expect_patch_reproduces(const std::string& patch, const Sandbox& sb) {
    const std::string clone = tmp / ("clone-" + std::to_string(clones++));
    test::run({"git", "clone", "-q", repo, clone});
    gitx::Repo target = gitx::Repo::open(clone);
    target.apply_patch(patch);
    for (const char* f : {"src/a.cc", "src/new_name.cc", "tool.sh", "image.bin", "new/data.bin", "new/file.txt"})
      EXPECT_EQ(read(clone + "/" + f), read(sb.path() + "/" + f)) << f;
    EXPECT_FALSE(fs::exists(clone + "/src/old_name.cc"));
    EXPECT_FALSE(fs::exists(clone + "/delete_me.txt"));
    struct stat st;
    ASSERT_EQ(::stat((clone + "/tool.sh").c_str(), &st), 0);
    EXPECT_TRUE(st.st_mode & S_IXUSR);
  }

  std::string head;
  int clones = 0;
};

TEST_F(SandboxPatchTest, ReadsBackNewDeletedRenamedBinaryAndModeChanges) {
  Sandbox sb = Sandbox::create(repo, base, {});
  edit(sb.path());
  const std::string patch = sb.read_patch();
  EXPECT_EQ(gitx::Repo::patch_files(patch),
            (std::vector<std::string>{"delete_me.txt", "image.bin", "new/data.bin", "new/file.txt", "src/a.cc",
                                      "src/new_name.cc", "src/old_name.cc", "tool.sh"}));
  EXPECT_NE(patch.find("rename from src/old_name.cc"), std::string::npos);
  EXPECT_NE(patch.find("deleted file mode"), std::string::npos);
  EXPECT_NE(patch.find("new mode 100755"), std::string::npos);
  EXPECT_NE(patch.find("GIT binary patch"), std::string::npos);
  expect_patch_reproduces(patch, sb);
}

TEST_F(SandboxPatchTest, PatchIsTheSameWhateverTheAgentDidToItsGitRepository) {
  struct Case {
    const char* name;
    std::vector<std::vector<std::string>> git_steps;
    bool remove_git;
  };
  const std::vector<Case> cases{
      {"commit", {{"add", "-A"}, {"commit", "-q", "-m", "agent"}}, false},
      {"commit then reset --hard HEAD~0", {{"add", "-A"}, {"commit", "-q", "-m", "agent"}, {"reset", "-q", "--hard", "HEAD~0"}}, false},
      {"commit, branch switch, gc",
       {{"add", "-A"}, {"commit", "-q", "-m", "agent"}, {"checkout", "-q", "-b", "elsewhere"},
        {"reflog", "expire", "--expire=now", "--all"}, {"gc", "-q", "--prune=now"}},
       false},
      {"index rewritten", {{"rm", "-q", "--cached", "src/a.cc"}, {"add", "new/file.txt"}}, false},
      {"rm -rf .git", {}, true},
  };
  std::string expected;
  {
    Sandbox reference = Sandbox::create(repo, base, {});
    edit(reference.path());
    expected = reference.read_patch();
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Sandbox sb = Sandbox::create(repo, base, {});
    edit(sb.path());
    for (const auto& step : c.git_steps) git(sb.path(), step);
    if (c.remove_git) fs::remove_all(sb.path() + "/.git");
    const std::string patch = sb.read_patch();
    EXPECT_EQ(gitx::Repo::patch_files(patch), gitx::Repo::patch_files(expected));
    expect_patch_reproduces(patch, sb);
  }
}

TEST_F(SandboxPatchTest, ResettingToTheBaselineUndoesEverything) {
  Sandbox sb = Sandbox::create(repo, base, {});
  edit(sb.path());
  git(sb.path(), {"add", "-A"});
  git(sb.path(), {"commit", "-q", "-m", "agent"});
  git(sb.path(), {"reset", "-q", "--hard", sb.baseline()});
  git(sb.path(), {"clean", "-qfd"});
  EXPECT_EQ(sb.read_patch(), "");
}

TEST_F(SandboxTest, ScratchFilesNeverShowInThePatch) {
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  write(repo, ".phoenix-prompt.md", "a tracked file with the scratch name\n");
  commit_all(repo, "clash");
  Sandbox sb = Sandbox::create(repo, base, {});
  const std::string p = sb.write_scratch_file("prompt.md", "the prompt\n");
  EXPECT_EQ(fs::path(p).parent_path().string(), sb.path());
  EXPECT_EQ(fs::path(p).filename().string(), ".phoenix-2-prompt.md") << "the tracked file keeps its name";
  EXPECT_EQ(read(p), "the prompt\n");
  EXPECT_EQ(sb.read_patch(), "");
  write(sb.path(), ".phoenix-2-prompt.md", "edited by the agent\n");
  EXPECT_EQ(sb.read_patch(), "");
}

TEST_F(SandboxTest, DestructorRemovesEverythingAndNeverFollowsLinksOut) {
  write(repo, "dir/a.txt", "a\n");
  commit_all(repo, "init");
  write(tmp.path(), "outside.txt", "not ours\n");
  fs::permissions(tmp / "outside.txt", fs::perms::owner_read);
  std::string dir;
  {
    Sandbox sb = Sandbox::create(repo, base, {});
    dir = sb.dir();
    fs::create_symlink(tmp / "outside.txt", sb.path() + "/out-link");
    fs::permissions(sb.path() + "/dir/a.txt", fs::perms::none);
    fs::permissions(sb.path() + "/dir", fs::perms::none);
    ASSERT_TRUE(fs::exists(dir));
  }
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(fs::exists(tmp / "outside.txt"));
  struct stat st;
  ASSERT_EQ(::stat((tmp / "outside.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0400u);
}

TEST_F(SandboxTest, MovedSandboxIsRemovedOnce) {
  write(repo, "a.txt", "a\n");
  commit_all(repo, "init");
  Sandbox a = Sandbox::create(repo, base, {});
  const std::string dir = a.dir();
  Sandbox b = std::move(a);
  EXPECT_EQ(b.dir(), dir);
  EXPECT_TRUE(fs::exists(dir));
  Sandbox c = Sandbox::create(repo, base, {});
  const std::string dir_c = c.dir();
  c = std::move(b);
  EXPECT_FALSE(fs::exists(dir_c)) << "the overwritten sandbox is removed";
  EXPECT_TRUE(fs::exists(dir));
}

TEST_F(SandboxTest, EmptyRepositoryGivesAnEmptyBaseline) {
  Sandbox sb = Sandbox::create(repo, base, {});
  EXPECT_TRUE(sb.files().empty());
  EXPECT_EQ(sb.baseline().size(), 40u);
  write(sb.path(), "first.txt", "hello\n");
  EXPECT_EQ(gitx::Repo::patch_files(sb.read_patch()), (std::vector<std::string>{"first.txt"}));
}

TEST_F(SandboxTest, CreatingASandboxLeavesTheRealRepositoryAlone) {
  write(repo, ".gitignore", ".phoenix/\n");
  write(repo, "a.txt", "a\n");
  const std::string head = commit_all(repo, "init");
  write(repo, "a.txt", "dirty\n");
  const RepoFingerprint before = fingerprint_repo(repo);
  const std::string status = git(repo, {"status", "--porcelain", "-uall"});
  {
    Sandbox sb = Sandbox::create(repo, base, {});
    write(sb.path(), "a.txt", "agent\n");
    git(sb.path(), {"commit", "-qam", "agent"});
  }
  EXPECT_EQ(git(repo, {"status", "--porcelain", "-uall"}), status);
  EXPECT_EQ(trim(git(repo, {"rev-parse", "HEAD"})), head);
  EXPECT_EQ(fingerprint_changes(before, fingerprint_repo(repo)), std::vector<std::string>{});
}

TEST_F(SandboxTest, CreateOnSomethingThatIsNotARepositoryThrows) {
  EXPECT_THROW(Sandbox::create(tmp / "nowhere", base, {}), Error);
}

// --- fingerprints ---------------------------------------------------------------

class SandboxFingerprintTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
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
