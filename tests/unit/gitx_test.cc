#include "gitx/repo.h"

#include <git2.h>
#include <gtest/gtest.h>

#include "gitx/stat_sweep.h"
#include "gitx/worktree.h"
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "test_util.h"
#include "util/error.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;

namespace phoenix::gitx {
namespace {

using test::commit_all;
using test::git;
using test::init_repo;
using test::porcelain;
using test::read;
using test::rev_parse;
using test::ScopedTempDir;
using test::trim;
using test::write;

// The untracked files Phoenix passes to be skipped by commits and kept by
// cleans (layout::state_prefixes()): gitx itself knows no such folder.
const std::vector<std::string> kState{".phoenix/"};

// The same steps every run: a linear congruential generator, rnd(n) in [0, n).
struct Seeded {
  unsigned seed;
  unsigned operator()(unsigned n) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) % n;
  }
};

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

// A clone of `src` whose work tree and HEAD are at `rev` (detached).
std::string clone_at(const std::string& src, const std::string& dst, const std::string& rev) {
  test::run({"git", "clone", "-q", src, dst});
  git(dst, {"checkout", "-q", "--detach", rev});
  return dst;
}

std::string bytes_with_nul(int seed, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>((i * 31 + seed) % 256));
  s[3] = '\0';
  return s;
}

std::string numbered_lines(int n, const std::string& tag = "line") {
  std::string s;
  for (int i = 1; i <= n; ++i) s += tag + " " + std::to_string(i) + "\n";
  return s;
}

template <typename F>
int exit_code_of(F&& f) {
  try {
    f();
  } catch (const Error& e) { return e.exit_code(); }
  return -1;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) { return e.what(); }
  return "";
}

// ---------------------------------------------------------------------------

TEST(GitxOpen, DiscoverFromSubdirectory) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a/b/c.txt", "x\n");
  commit_all(repo, "one");
  Repo r = Repo::discover(repo + "/a/b");
  EXPECT_EQ(r.workdir(), repo);
  EXPECT_EQ(r.workdir(), trim(git(repo + "/a", {"rev-parse", "--show-toplevel"})));
  EXPECT_EQ(r.git_dir(), repo + "/.git");
  EXPECT_EQ(r.common_dir(), repo + "/.git");
  EXPECT_FALSE(r.is_bare());
}

TEST(GitxOpen, NotARepositoryIsAUsageError) {
  ScopedTempDir tmp;
  fs::create_directories(tmp / "plain");
  try {
    Repo::discover(tmp / "plain");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    EXPECT_EQ(std::string(e.what()), "not a git repository: " + (tmp / "plain"));
  }
  EXPECT_EQ(exit_code_of([&] { Repo::open(tmp / "missing"); }), kExitUsage);
}

TEST(GitxOpen, OpenDoesNotSearchUpwards) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  fs::create_directories(repo + "/sub");
  EXPECT_EQ(Repo::open(repo).workdir(), repo);
  EXPECT_EQ(Repo::open(repo + "/.git").workdir(), repo);
  EXPECT_EQ(exit_code_of([&] { Repo::open(repo + "/sub"); }), kExitUsage);
}

TEST(GitxOpen, BareRepository) {
  ScopedTempDir tmp;
  test::run({"git", "init", "-q", "--bare", tmp / "bare.git"});
  Repo r = Repo::open(tmp / "bare.git");
  EXPECT_TRUE(r.is_bare());
  EXPECT_EQ(r.workdir(), "");
  EXPECT_EQ(r.git_dir(), tmp / "bare.git");
  EXPECT_EQ(r.hooks_dir(), tmp / "bare.git/hooks");
}

// ---------------------------------------------------------------------------

TEST(GitxRefs, UnbornHead) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  Repo r = Repo::open(repo);
  EXPECT_EQ(r.head_sha(), "");
  EXPECT_EQ(r.head_branch(), "main");
  EXPECT_EQ(exit_code_of([&] { r.resolve("HEAD"); }), kExitUsage);
  EXPECT_TRUE(r.is_clean());
  EXPECT_EQ(exit_code_of([&] { r.rev_list("", "HEAD"); }), kExitUsage);

  write(repo, "hello.txt", "hi\n");
  write(repo, "bin/blob.bin", bytes_with_nul(1, 64));
  ASSERT_EQ(r.status().size(), 2u);
  EXPECT_EQ(r.status()[0].code, '?');

  // A patch from the empty tree to an unborn work tree.
  std::string patch = r.diff_workdir_patch(r.head_sha());
  EXPECT_EQ(Repo::patch_files(patch), (std::vector<std::string>{"bin/blob.bin", "hello.txt"}));

  std::string sha = r.commit_all("first", true, {});
  EXPECT_EQ(sha, rev_parse(repo, "HEAD"));
  EXPECT_EQ(r.head_sha(), sha);
  EXPECT_EQ(trim(git(repo, {"rev-list", "--count", "HEAD"})), "1");
  EXPECT_EQ(r.read_ref("refs/heads/main"), sha);
  EXPECT_EQ(porcelain(repo), "");
  EXPECT_EQ(r.commit_files(sha), (std::vector<std::string>{"bin/blob.bin", "hello.txt"}));
  EXPECT_EQ(r.rev_list("", sha), std::vector<std::string>{sha});
}

TEST(GitxRefs, DetachedHead) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a.txt", "1\n");
  std::string c1 = commit_all(repo, "c1");
  write(repo, "a.txt", "2\n");
  std::string c2 = commit_all(repo, "c2");
  git(repo, {"checkout", "-q", "--detach", c1});

  Repo r = Repo::open(repo);
  EXPECT_EQ(r.head_branch(), "");
  EXPECT_EQ(r.head_sha(), c1);

  write(repo, "a.txt", "detached\n");
  std::string c3 = r.commit_all("on detached HEAD", false, {});
  EXPECT_EQ(rev_parse(repo, "HEAD"), c3);
  EXPECT_EQ(rev_parse(repo, "HEAD^"), c1);
  EXPECT_EQ(rev_parse(repo, "main"), c2);  // the branch did not move
  EXPECT_EQ(r.head_branch(), "");
}

TEST(GitxRefs, ResolveRevisions) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a.txt", "1\n");
  std::string c1 = commit_all(repo, "c1");
  write(repo, "a.txt", "2\n");
  std::string c2 = commit_all(repo, "c2");
  git(repo, {"tag", "-a", "-m", "annotated", "v1", c1});
  git(repo, {"tag", "light", c2});

  Repo r = Repo::open(repo);
  EXPECT_EQ(r.resolve("HEAD"), c2);
  EXPECT_EQ(r.resolve("HEAD~1"), c1);
  EXPECT_EQ(r.resolve(c1.substr(0, 10)), c1);
  EXPECT_EQ(r.resolve("v1"), c1);  // annotated tag peeled to its commit
  EXPECT_EQ(r.resolve("light"), c2);
  EXPECT_EQ(r.resolve("main"), c2);
  EXPECT_EQ(r.resolve(c2), c2);
  EXPECT_EQ(exit_code_of([&] { r.resolve("no-such-rev"); }), kExitUsage);
  EXPECT_EQ(error_of([&] { r.resolve("no-such-rev"); }), "unknown revision: no-such-rev");
  EXPECT_EQ(exit_code_of([&] { r.resolve("HEAD:a.txt"); }), kExitUsage);  // a blob, not a commit
  EXPECT_EQ(exit_code_of([&] { r.resolve(""); }), kExitUsage);
}

TEST(GitxRefs, WriteReadListDelete) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a.txt", "1\n");
  std::string c1 = commit_all(repo, "c1");
  write(repo, "a.txt", "2\n");
  std::string c2 = commit_all(repo, "c2");

  Repo r = Repo::open(repo);
  EXPECT_EQ(r.read_ref("refs/phoenix/known-good"), std::nullopt);
  r.write_ref("refs/phoenix/known-good", c1, "phoenix: bless");
  r.write_ref("refs/phoenix/abandoned/2026-01-01T00-00-00", "HEAD", "phoenix: abandon");
  EXPECT_EQ(r.read_ref("refs/phoenix/known-good"), c1);
  EXPECT_EQ(rev_parse(repo, "refs/phoenix/known-good"), c1);
  r.write_ref("refs/phoenix/known-good", c2, "phoenix: bless again");  // force-moves
  EXPECT_EQ(rev_parse(repo, "refs/phoenix/known-good"), c2);

  auto refs = r.list_refs("refs/phoenix/");
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].name, "refs/phoenix/abandoned/2026-01-01T00-00-00");
  EXPECT_EQ(refs[0].sha, c2);
  EXPECT_EQ(refs[1].name, "refs/phoenix/known-good");
  // Same view as git's.
  EXPECT_EQ(git(repo, {"for-each-ref", "--format=%(refname) %(objectname)", "refs/phoenix/"}),
            refs[0].name + " " + refs[0].sha + "\n" + refs[1].name + " " + refs[1].sha + "\n");
  EXPECT_EQ(r.list_refs("refs/heads/").size(), 1u);
  EXPECT_GE(r.list_refs("").size(), 3u);

  EXPECT_TRUE(r.delete_ref("refs/phoenix/known-good"));
  EXPECT_FALSE(r.delete_ref("refs/phoenix/known-good"));
  EXPECT_EQ(r.read_ref("refs/phoenix/known-good"), std::nullopt);
  EXPECT_NE(test::run({"git", "-C", repo, "rev-parse", "--verify", "-q", "refs/phoenix/known-good"}).exit_code, 0);
}

TEST(GitxRefs, ErrorsCarryLibgit2Message) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a.txt", "1\n");
  commit_all(repo, "c1");
  Repo r = Repo::open(repo);
  std::string msg = error_of([&] { r.write_ref("refs/phoenix/bad..name", "HEAD", "x"); });
  EXPECT_EQ(msg.rfind("libgit2: write ref refs/phoenix/bad..name: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("not valid"), std::string::npos) << msg;
  EXPECT_EQ(exit_code_of([&] { r.write_ref("refs/phoenix/bad..name", "HEAD", "x"); }), kExitRed);
}

// ---------------------------------------------------------------------------

TEST(GitxStatus, LettersForEveryKindOfChange) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, ".gitignore", "*.log\n");
  for (auto f : {"a.txt", "b.txt", "c.txt"}) write(repo, f, std::string(f) + " content\nmore\n");
  commit_all(repo, "base");

  write(repo, "a.txt", "changed\n");
  fs::remove(repo + "/b.txt");
  git(repo, {"mv", "c.txt", "c2.txt"});
  write(repo, "e.txt", "new\n");
  git(repo, {"add", "e.txt"});
  write(repo, "f/g.txt", "untracked in a new folder\n");
  write(repo, "x.log", "ignored\n");

  Repo r = Repo::open(repo);
  auto st = r.status();
  ASSERT_EQ(st.size(), 5u);
  EXPECT_EQ(st[0].code, 'M');
  EXPECT_EQ(st[0].path, "a.txt");
  EXPECT_EQ(st[1].code, 'D');
  EXPECT_EQ(st[1].path, "b.txt");
  EXPECT_EQ(st[2].code, 'R');
  EXPECT_EQ(st[2].path, "c2.txt");
  EXPECT_EQ(st[2].old_path, "c.txt");
  EXPECT_EQ(st[3].code, 'A');
  EXPECT_EQ(st[3].path, "e.txt");
  EXPECT_EQ(st[4].code, '?');
  EXPECT_EQ(st[4].path, "f/g.txt");
  EXPECT_FALSE(r.is_clean());
}

TEST(GitxStatus, CleanIgnoringPrefixes) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "src/a.txt", "1\n");
  commit_all(repo, "base");
  Repo r = Repo::open(repo);
  EXPECT_TRUE(r.is_clean());

  write(repo, ".phoenix/trace.jsonl", "{}\n");
  write(repo, "incidents/2026-01-01-00-00.md", "# Incident\n");
  EXPECT_FALSE(r.is_clean());
  EXPECT_FALSE(r.is_clean({".phoenix/"}));
  EXPECT_TRUE(r.is_clean({".phoenix/", "incidents/"}));
  EXPECT_TRUE(r.is_clean({".phoenix", "incidents"}));   // folder names without '/' work too
  EXPECT_FALSE(r.is_clean({".phoenix/", "incident"}));  // but are not mere string prefixes

  write(repo, "src/a.txt", "2\n");  // a real change is never hidden by another prefix
  EXPECT_FALSE(r.is_clean({".phoenix/", "incidents/"}));
  EXPECT_TRUE(r.is_clean({".phoenix/", "incidents/", "src/"}));
}

// ---------------------------------------------------------------------------

TEST(GitxCommit, StagesModificationsDeletionsAndOptionallyNewFiles) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, ".gitignore", "*.log\n");
  write(repo, "a.txt", "a\n");
  write(repo, "b.txt", "b\n");
  write(repo, ".phoenix/contracts/orders.json", "{}\n");
  std::string c1 = commit_all(repo, "base");

  write(repo, "a.txt", "a changed\n");
  fs::remove(repo + "/b.txt");
  write(repo, "c.txt", "new\n");
  write(repo, "x.log", "ignored\n");
  write(repo, ".phoenix/trace.jsonl", "{}\n");                   // not ignored by mistake: still never committed
  write(repo, ".phoenix/contracts/orders.json", "{\"v\":2}\n");  // tracked: committed

  Repo r = Repo::open(repo);
  std::string c2 = r.commit_all("tracked only", false, kState);
  EXPECT_EQ(rev_parse(repo, "HEAD"), c2);
  EXPECT_EQ(rev_parse(repo, "HEAD^"), c1);
  EXPECT_EQ(git(repo, {"show", "--name-status", "--format=", c2}),
            "M\t.phoenix/contracts/orders.json\nM\ta.txt\nD\tb.txt\n");
  EXPECT_EQ(porcelain(repo), "?? .phoenix/trace.jsonl\n?? c.txt\n");
  EXPECT_EQ(git(repo, {"log", "-1", "--format=%an|%ae|%cn|%ce|%s"}),
            "phoenix|phoenix@localhost|phoenix|phoenix@localhost|tracked only\n");

  std::string c3 = r.commit_all("with new files", true, kState);
  EXPECT_EQ(git(repo, {"show", "--name-status", "--format=", c3}), "A\tc.txt\n");
  EXPECT_EQ(porcelain(repo), "?? .phoenix/trace.jsonl\n");
  EXPECT_TRUE(r.is_clean({".phoenix/"}));

  // Nothing changed: still a commit (the caller asks is_clean() first).
  std::string c4 = r.commit_all("empty", true, kState);
  EXPECT_NE(c4, c3);
  EXPECT_EQ(rev_parse(repo, c4 + "^{tree}"), rev_parse(repo, c3 + "^{tree}"));
  // What is skipped is the caller's word alone: gitx keeps no folder of its own.
  std::string c5 = r.commit_all("state too", true, {});
  EXPECT_EQ(git(repo, {"show", "--name-status", "--format=", c5}), "A\t.phoenix/trace.jsonl\n");
  EXPECT_EQ(error_of([&] { r.commit_all("  \n\n", true, kState); }), "empty commit message");
}

TEST(GitxCommit, SnapshotLeavesIndexHeadAndBranchAlone) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, ".gitignore", "*.log\n");
  write(repo, "a.txt", "a\n");
  write(repo, "b.txt", "b\n");
  std::string c1 = commit_all(repo, "base");

  write(repo, "a.txt", "staged\n");
  git(repo, {"add", "a.txt"});
  write(repo, "a.txt", "staged then edited\n");
  fs::remove(repo + "/b.txt");
  write(repo, "new/c.txt", "new\n");
  write(repo, "x.log", "ignored\n");
  write(repo, ".phoenix/lock", "123\n");
  const std::string status_before = porcelain(repo);
  const std::string index_before = read(repo + "/.git/index");

  Repo r = Repo::open(repo);
  std::string snap = r.snapshot_workdir("phoenix: checkpoint", true, kState);
  EXPECT_EQ(porcelain(repo), status_before);
  EXPECT_EQ(read(repo + "/.git/index"), index_before);
  EXPECT_EQ(rev_parse(repo, "HEAD"), c1);
  EXPECT_EQ(rev_parse(repo, snap + "^"), c1);
  EXPECT_EQ(git(repo, {"ls-tree", "-r", "--name-only", snap}), ".gitignore\na.txt\nnew/c.txt\n");
  EXPECT_EQ(git(repo, {"show", snap + ":a.txt"}), "staged then edited\n");

  // Tracked-only snapshot leaves the new file out.
  std::string snap2 = r.snapshot_workdir("phoenix: checkpoint", false, kState);
  EXPECT_EQ(git(repo, {"ls-tree", "-r", "--name-only", snap2}), ".gitignore\na.txt\n");
  EXPECT_EQ(porcelain(repo), status_before);
}

// Repo stamps Phoenix's author (gitx/author.h) on every commit it makes,
// whoever the repository's user.name is.
TEST(GitxCommit, EveryCommitIsPhoenixs) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a.txt", "a\n");
  const std::string base = commit_all(repo, "base");
  const auto who = [&](const std::string& rev) {
    return git(repo, {"log", "-1", "--format=%an <%ae>|%cn <%ce>", rev});
  };
  const std::string phoenix = "phoenix <phoenix@localhost>|phoenix <phoenix@localhost>\n";

  Repo r = Repo::open(repo);
  write(repo, "a.txt", "theirs\n");
  const std::string theirs = r.commit_all("theirs", false, kState);
  EXPECT_EQ(who(theirs), phoenix);
  write(repo, "b.txt", "snapshot\n");
  EXPECT_EQ(who(r.snapshot_workdir("snapshot", true, kState)), phoenix);
  const std::string squashed = r.squash(base, theirs, {}, "squashed");
  EXPECT_EQ(who(squashed), phoenix);
  EXPECT_EQ(git(repo, {"show", squashed + ":a.txt"}), "theirs\n");
  std::vector<std::string> conflicts;
  const std::string merged = r.merge_onto(base, base, theirs, "merged", &conflicts);
  EXPECT_EQ(who(merged), phoenix);
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(who(r.commit_tracked_and({"b.txt"}, "tracked and b")), phoenix);
}

// ---------------------------------------------------------------------------

TEST(GitxReset, RestoresFilesRemovesUntrackedKeepsIgnoredAndState) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, ".gitignore", "*.log\nbuild/\n");
  write(repo, "a.txt", "a\n");
  write(repo, "dir/b.txt", "b\n");
  write(repo, ".phoenix/contracts/x.json", "{\"approved\":true}\n");
  std::string c1 = commit_all(repo, "base");

  write(repo, "a.txt", "broken\n");
  fs::remove(repo + "/dir/b.txt");
  write(repo, "u.txt", "untracked\n");
  write(repo, "newdir/deep/y.txt", "untracked deep\n");
  write(repo, "dir/extra.txt", "untracked next to tracked\n");
  write(repo, "s.txt", "staged new\n");
  git(repo, {"add", "s.txt"});
  write(repo, "keep.log", "ignored\n");
  write(repo, "build/out.o", "ignored folder\n");
  write(repo, "newdir2/only.log", "ignored inside an untracked folder\n");
  write(repo, ".phoenix/trace.jsonl", "{}\n");
  write(repo, ".phoenix/contracts/x.json", "{\"approved\":false}\n");
  write(repo, "incidents/2026-01-01-00-00.md", "# Incident\n");
  init_repo(repo + "/nested");  // someone's own repository inside: never ours to delete
  write(repo, "nested/file.txt", "nested\n");

  Repo r = Repo::open(repo);
  r.reset_hard(c1, /*remove_untracked=*/true, {".phoenix/", "incidents/"});

  EXPECT_EQ(read(repo + "/a.txt"), "a\n");
  EXPECT_EQ(read(repo + "/dir/b.txt"), "b\n");
  EXPECT_EQ(read(repo + "/.phoenix/contracts/x.json"), "{\"approved\":true}\n");
  EXPECT_FALSE(fs::exists(repo + "/u.txt"));
  EXPECT_FALSE(fs::exists(repo + "/newdir"));
  EXPECT_FALSE(fs::exists(repo + "/dir/extra.txt"));
  EXPECT_FALSE(fs::exists(repo + "/s.txt"));
  EXPECT_TRUE(fs::exists(repo + "/keep.log"));
  EXPECT_TRUE(fs::exists(repo + "/build/out.o"));
  EXPECT_TRUE(fs::exists(repo + "/newdir2/only.log"));
  EXPECT_TRUE(fs::exists(repo + "/.phoenix/trace.jsonl"));
  EXPECT_TRUE(fs::exists(repo + "/incidents/2026-01-01-00-00.md"));
  EXPECT_TRUE(fs::exists(repo + "/nested/file.txt"));
  EXPECT_EQ(git(repo, {"status", "--porcelain"}), "?? .phoenix/trace.jsonl\n?? incidents/\n?? nested/\n");
  EXPECT_EQ(r.head_sha(), c1);
}

TEST(GitxReset, MovesTheBranchBackAndKeepsUntrackedUnlessAsked) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a.txt", "1\n");
  std::string c1 = commit_all(repo, "c1");
  write(repo, "a.txt", "2\n");
  write(repo, "b.txt", "added in c2\n");
  std::string c2 = commit_all(repo, "c2");
  write(repo, "u.txt", "untracked\n");
  write(repo, "a.txt", "dirty\n");

  Repo r = Repo::open(repo);
  r.reset_hard(c1, /*remove_untracked=*/false);
  EXPECT_EQ(r.head_branch(), "main");
  EXPECT_EQ(rev_parse(repo, "main"), c1);
  EXPECT_EQ(read(repo + "/a.txt"), "1\n");
  EXPECT_FALSE(fs::exists(repo + "/b.txt"));  // tracked in c2, not in c1
  EXPECT_EQ(porcelain(repo), "?? u.txt\n");

  r.reset_hard(c2, false);  // and forward again (the abandoned head, say)
  EXPECT_EQ(rev_parse(repo, "main"), c2);
  EXPECT_EQ(read(repo + "/b.txt"), "added in c2\n");
}

// ---------------------------------------------------------------------------

class GitxCheckout : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "r");
    write(repo, "a.txt", "1\n");
    write(repo, "same.txt", "unchanged\n");
    write(repo, "sub/c.txt", "c\n");
    c1 = commit_all(repo, "c1");
    write(repo, "a.txt", "2\n");
    write(repo, "d.txt", "d\n");
    fs::remove_all(repo + "/sub");
    c2 = commit_all(repo, "c2");
  }
  ScopedTempDir tmp;
  std::string repo, c1, c2;
};

TEST_F(GitxCheckout, DetachedMovesHeadAndFiles) {
  Repo r = Repo::open(repo);
  r.checkout_detached(c1);
  EXPECT_EQ(r.head_branch(), "");
  EXPECT_EQ(r.head_sha(), c1);
  EXPECT_EQ(rev_parse(repo, "main"), c2);
  EXPECT_EQ(read(repo + "/a.txt"), "1\n");
  EXPECT_FALSE(fs::exists(repo + "/d.txt"));
  EXPECT_EQ(read(repo + "/sub/c.txt"), "c\n");
  EXPECT_EQ(porcelain(repo), "");
}

TEST_F(GitxCheckout, TreeIsIncrementalAndLeavesHead) {
  Repo r = Repo::open(repo);
  // Back-date an unchanged file: a checkout that rewrote it would reset its mtime.
  const auto old_time = fs::last_write_time(repo + "/same.txt") - std::chrono::hours(24 * 365);
  fs::last_write_time(repo + "/same.txt", old_time);
  r.checkout_tree(c1);
  EXPECT_EQ(fs::last_write_time(repo + "/same.txt"), old_time);
  EXPECT_EQ(read(repo + "/a.txt"), "1\n");
  EXPECT_EQ(read(repo + "/sub/c.txt"), "c\n");
  EXPECT_FALSE(fs::exists(repo + "/d.txt"));
  EXPECT_EQ(r.head_sha(), c2);  // HEAD did not move
  EXPECT_EQ(r.head_branch(), "main");
  // Index matches the work tree; against HEAD it shows c1's differences.
  EXPECT_EQ(test::run({"git", "-C", repo, "diff", "--quiet"}).exit_code, 0);
  EXPECT_EQ(git(repo, {"diff", "--cached", "--name-status"}), "M\ta.txt\nD\td.txt\nA\tsub/c.txt\n");

  // Without force, a second checkout from there is still clean (the index is the baseline).
  r.checkout_tree(c2);
  EXPECT_EQ(fs::last_write_time(repo + "/same.txt"), old_time);
  EXPECT_EQ(porcelain(repo), "");
}

TEST_F(GitxCheckout, SafeRefusesToOverwriteLocalChangesForceDoesNot) {
  Repo r = Repo::open(repo);
  write(repo, "a.txt", "local edit\n");
  std::string msg = error_of([&] { r.checkout_detached(c1); });
  EXPECT_EQ(msg.rfind("libgit2: checkout: ", 0), 0u) << msg;
  EXPECT_EQ(read(repo + "/a.txt"), "local edit\n");
  EXPECT_FALSE(fs::exists(repo + "/sub/c.txt"));  // all or nothing
  EXPECT_EQ(r.head_branch(), "main");

  // An untracked file where the target has one blocks a safe checkout too.
  r.reset_hard(c1, false);
  write(repo, "d.txt", "untracked, in the way of c2's d.txt\n");
  EXPECT_THROW(r.checkout_tree(c2), Error);
  EXPECT_EQ(read(repo + "/d.txt"), "untracked, in the way of c2's d.txt\n");
  r.checkout_tree(c2, {.force = true});
  EXPECT_EQ(read(repo + "/d.txt"), "d\n");

  write(repo, "a.txt", "local edit\n");
  write(repo, "u.txt", "untracked\n");
  write(repo, ".phoenix/journal.sqlite", "state\n");
  r.checkout_detached(c1, {.force = true, .remove_untracked = true, .keep_prefixes = kState});
  EXPECT_EQ(read(repo + "/a.txt"), "1\n");
  EXPECT_FALSE(fs::exists(repo + "/u.txt"));
  EXPECT_TRUE(fs::exists(repo + "/.phoenix/journal.sqlite"));
  EXPECT_EQ(r.head_sha(), c1);
  EXPECT_EQ(rev_parse(repo, "main"), c1);  // moved by the reset_hard above, not by the checkout
}

// ---------------------------------------------------------------------------

TEST(GitxHistory, RevListOnTwentyCommitsOldestFirst) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  std::vector<std::string> c;
  for (int i = 0; i < 20; ++i) {
    write(repo, "n.txt", std::to_string(i) + "\n");
    c.push_back(commit_all(repo, "commit " + std::to_string(i)));
  }
  Repo r = Repo::open(repo);
  auto list = r.rev_list(c[0], c[19]);
  EXPECT_EQ(list, std::vector<std::string>(c.begin() + 1, c.end()));
  EXPECT_EQ(list, lines(git(repo, {"rev-list", "--first-parent", "--reverse", c[0] + ".." + c[19]})));
  EXPECT_EQ(r.rev_list("", "HEAD"), c);
  EXPECT_EQ(r.rev_list(c[5], c[8]), (std::vector<std::string>{c[6], c[7], c[8]}));
  EXPECT_TRUE(r.rev_list(c[19], c[19]).empty());
  EXPECT_TRUE(r.rev_list(c[19], c[3]).empty());

  EXPECT_TRUE(r.is_ancestor(c[0], c[19]));
  EXPECT_FALSE(r.is_ancestor(c[19], c[0]));
  EXPECT_TRUE(r.is_ancestor(c[7], c[7]));
}

TEST(GitxHistory, RevListFollowsFirstParentsAcrossMerges) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "base.txt", "0\n");
  std::string c0 = commit_all(repo, "c0");
  git(repo, {"checkout", "-q", "-b", "side"});
  write(repo, "side.txt", "s1\n");
  std::string s1 = commit_all(repo, "s1");
  write(repo, "side.txt", "s2\n");
  std::string s2 = commit_all(repo, "s2");
  git(repo, {"checkout", "-q", "main"});
  write(repo, "main.txt", "m1\n");
  std::string m1 = commit_all(repo, "m1");
  git(repo, {"merge", "-q", "--no-ff", "-m", "merge side", "side"});
  std::string merge = rev_parse(repo, "HEAD");

  Repo r = Repo::open(repo);
  auto list = r.rev_list(c0, merge);
  EXPECT_EQ(list, (std::vector<std::string>{m1, merge}));
  EXPECT_EQ(list, lines(git(repo, {"rev-list", "--first-parent", "--reverse", c0 + ".." + merge})));
  EXPECT_TRUE(r.is_ancestor(s1, merge));
  EXPECT_FALSE(r.is_ancestor(s2, m1));
  // A merge's files are those it brought in over its first parent.
  EXPECT_EQ(r.commit_files(merge), std::vector<std::string>{"side.txt"});
}

TEST(GitxHistory, CommitMessageAndFiles) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "keep.txt", "keep\n");
  write(repo, "gone.txt", "gone\n");
  write(repo, "old.txt", numbered_lines(30));
  std::string c1 = commit_all(repo, "first line\n\nbody text");
  write(repo, "keep.txt", "changed\n");
  fs::remove(repo + "/gone.txt");
  fs::rename(repo + "/old.txt", repo + "/renamed.txt");
  write(repo, "added.txt", "new\n");
  std::string c2 = commit_all(repo, "second");

  Repo r = Repo::open(repo);
  EXPECT_EQ(r.commit_message(c1), "first line\n\nbody text\n");
  EXPECT_EQ(r.commit_message(c2), "second\n");
  EXPECT_EQ(r.commit_files(c1), (std::vector<std::string>{"gone.txt", "keep.txt", "old.txt"}));
  EXPECT_EQ(r.commit_files(c2),
            (std::vector<std::string>{"added.txt", "gone.txt", "keep.txt", "old.txt", "renamed.txt"}));
  // git sees the same rename.
  EXPECT_NE(git(repo, {"show", "-M", "--name-status", "--format=", c2}).find("R100\told.txt\trenamed.txt"),
            std::string::npos);
}

// ---------------------------------------------------------------------------

// Every path `git diff --name-status -M` names (both sides of a rename).
std::vector<std::string> git_diff_paths(const std::string& repo, const std::vector<std::string>& range) {
  std::vector<std::string> args{"diff", "-M", "--name-status"};
  args.insert(args.end(), range.begin(), range.end());
  std::set<std::string> paths;
  for (const std::string& l : lines(git(repo, args))) {
    std::istringstream in(l);
    std::string status, p;
    in >> status;
    while (std::getline(in, p, '\t'))
      if (!p.empty()) paths.insert(p);
  }
  return {paths.begin(), paths.end()};
}

PatchStats git_numstat(const std::string& repo, const std::vector<std::string>& range) {
  std::vector<std::string> args{"diff", "-M", "--numstat"};
  args.insert(args.end(), range.begin(), range.end());
  PatchStats s;
  for (const std::string& l : lines(git(repo, args))) {
    std::istringstream in(l);
    std::string add, del;
    in >> add >> del;
    ++s.files;
    if (add != "-") s.insertions += std::stoul(add);
    if (del != "-") s.deletions += std::stoul(del);
  }
  return s;
}

class GitxPatch : public ::testing::Test {
 protected:
  // c1 → c2 changes one file of every kind a patch must carry.
  void SetUp() override {
    repo = init_repo(tmp / "a");
    write(repo, "keep.txt", numbered_lines(10));
    write(repo, "gone.txt", "to be deleted\n");
    write(repo, "old_name.txt", numbered_lines(20, "moved"));
    write(repo, "bin.dat", bytes_with_nul(1, 600));
    write(repo, "script.sh", "#!/bin/sh\necho hi\n");
    write(repo, "no_newline.txt", "last line without newline");
    c1 = commit_all(repo, "c1");

    std::string keep = numbered_lines(10);
    keep.replace(keep.find("line 5"), 6, "LINE FIVE");
    write(repo, "keep.txt", keep);
    fs::remove(repo + "/gone.txt");
    fs::create_directories(repo + "/dir");
    fs::rename(repo + "/old_name.txt", repo + "/dir/new_name.txt");
    std::string moved = numbered_lines(20, "moved");
    moved.replace(moved.find("moved 20"), 8, "moved twenty");
    write(repo, "dir/new_name.txt", moved);
    write(repo, "bin.dat", bytes_with_nul(2, 600));
    write(repo, "new.bin", bytes_with_nul(3, 300));
    write(repo, "added.txt", "brand new\n");
    write(repo, "empty.txt", "");
    fs::permissions(repo + "/script.sh", fs::perms::owner_exec, fs::perm_options::add);
    write(repo, "no_newline.txt", "last line still without newline");
    c2 = commit_all(repo, "c2");
  }
  std::string tree_of(const std::string& dir, const std::string& rev) { return rev_parse(dir, rev + "^{tree}"); }

  ScopedTempDir tmp;
  std::string repo, c1, c2;
};

TEST_F(GitxPatch, DiffPatchCarriesEveryKindOfChange) {
  Repo r = Repo::open(repo);
  std::string patch = r.diff_patch(c1, c2);
  EXPECT_NE(patch.find("rename from old_name.txt\nrename to dir/new_name.txt\n"), std::string::npos) << patch;
  EXPECT_NE(patch.find("deleted file mode 100644"), std::string::npos);
  EXPECT_NE(patch.find("new file mode 100644"), std::string::npos);
  EXPECT_NE(patch.find("old mode 100644\nnew mode 100755"), std::string::npos);
  EXPECT_NE(patch.find("GIT binary patch"), std::string::npos);
  EXPECT_NE(patch.find("\\ No newline at end of file"), std::string::npos);

  EXPECT_EQ(Repo::patch_files(patch), git_diff_paths(repo, {c1, c2}));
  PatchStats ours = Repo::patch_stats(patch), theirs = git_numstat(repo, {c1, c2});
  EXPECT_EQ(ours.files, theirs.files);
  EXPECT_EQ(ours.insertions, theirs.insertions);
  EXPECT_EQ(ours.deletions, theirs.deletions);

  EXPECT_EQ(r.diff_patch(c2, c2), "");
  EXPECT_TRUE(Repo::patch_files("").empty());
  EXPECT_EQ(Repo::patch_stats("").files, 0u);
  // From the empty tree: everything is new.
  EXPECT_EQ(
      Repo::patch_files(r.diff_patch("", c1)),
      (std::vector<std::string>{"bin.dat", "gone.txt", "keep.txt", "no_newline.txt", "old_name.txt", "script.sh"}));
}

TEST_F(GitxPatch, RoundTripsThroughApplyPatchAndGitApply) {
  std::string patch = Repo::open(repo).diff_patch(c1, c2);
  write(tmp.path(), "c1c2.patch", patch);

  // libgit2's apply, index and work tree.
  std::string b = clone_at(repo, tmp / "b", c1);
  Repo rb = Repo::open(b);
  ASSERT_TRUE(rb.check_patch_applies(patch, ApplyLocation::kBoth));
  rb.apply_patch(patch, ApplyLocation::kBoth);
  EXPECT_EQ(trim(git(b, {"write-tree"})), tree_of(repo, c2));
  EXPECT_EQ(test::run({"git", "-C", b, "diff", "--quiet"}).exit_code, 0) << git(b, {"diff", "--stat"});
  EXPECT_EQ(read(b + "/new.bin"), read(repo + "/new.bin"));
  EXPECT_EQ(read(b + "/bin.dat"), read(repo + "/bin.dat"));
  EXPECT_TRUE((fs::status(b + "/script.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  EXPECT_FALSE(fs::exists(b + "/old_name.txt"));

  // The git CLI takes the same text.
  std::string c = clone_at(repo, tmp / "c", c1);
  auto applied = test::run({"git", "-C", c, "apply", "--index", tmp / "c1c2.patch"});
  EXPECT_EQ(applied.exit_code, 0) << applied.output;
  EXPECT_EQ(trim(git(c, {"write-tree"})), tree_of(repo, c2));

  // And libgit2 takes the git CLI's patch.
  std::string cli_patch = git(repo, {"diff", "-M", "--binary", c1, c2});
  std::string d = clone_at(repo, tmp / "d", c1);
  Repo rd = Repo::open(d);
  rd.apply_patch(cli_patch, ApplyLocation::kBoth);
  EXPECT_EQ(trim(git(d, {"write-tree"})), tree_of(repo, c2));
}

TEST_F(GitxPatch, WorkdirPatchIncludesUntrackedMovesAndBinaries) {
  // A sandbox after an agent ran: edits, a deletion, a move, new files (one
  // binary, one in a new folder), one staged — and ignored junk.
  std::string sb = clone_at(repo, tmp / "sandbox", c2);
  write(sb, ".gitignore", "*.log\n");
  git(sb, {"add", ".gitignore"});
  write(sb, "keep.txt", "rewritten\n");
  fs::remove(sb + "/added.txt");
  fs::rename(sb + "/dir/new_name.txt", sb + "/dir/moved_again.txt");
  write(sb, "fresh/new.bin", bytes_with_nul(9, 200));
  write(sb, "fresh/notes.md", "notes\n");
  write(sb, "debug.log", "ignored\n");

  Repo rs = Repo::open(sb);
  std::string patch = rs.diff_workdir_patch(c2);
  EXPECT_NE(patch.find("rename from dir/new_name.txt\nrename to dir/moved_again.txt"), std::string::npos) << patch;
  EXPECT_EQ(Repo::patch_files(patch),
            (std::vector<std::string>{".gitignore", "added.txt", "dir/moved_again.txt", "dir/new_name.txt",
                                      "fresh/new.bin", "fresh/notes.md", "keep.txt"}));
  EXPECT_EQ(porcelain(sb).find("fresh/notes.md") != std::string::npos, true);  // nothing was staged

  // What `git add -A` would commit in the sandbox is what the patch produces elsewhere.
  git(sb, {"add", "-A"});
  const std::string expected_tree = trim(git(sb, {"write-tree"}));

  std::string real = clone_at(repo, tmp / "real", c2);
  Repo rr = Repo::open(real);
  rr.apply_patch(patch, ApplyLocation::kWorkdir);
  EXPECT_EQ(read(real + "/fresh/new.bin"), read(sb + "/fresh/new.bin"));
  git(real, {"add", "-A"});
  EXPECT_EQ(trim(git(real, {"write-tree"})), expected_tree);

  write(tmp.path(), "wd.patch", patch);
  std::string viacli = clone_at(repo, tmp / "viacli", c2);
  auto applied = test::run({"git", "-C", viacli, "apply", "--index", tmp / "wd.patch"});
  EXPECT_EQ(applied.exit_code, 0) << applied.output;
  EXPECT_EQ(trim(git(viacli, {"write-tree"})), expected_tree);

  EXPECT_EQ(Repo::open(viacli).diff_workdir_patch(""), rr.diff_workdir_patch(""));
}

TEST_F(GitxPatch, ApplyToIndexOrWorkdirOnly) {
  std::string patch = Repo::open(repo).diff_patch(c1, c2);
  std::string b = clone_at(repo, tmp / "b", c1);
  Repo rb = Repo::open(b);

  rb.apply_patch(patch, ApplyLocation::kIndex);
  EXPECT_EQ(trim(git(b, {"write-tree"})), tree_of(repo, c2));
  EXPECT_EQ(read(b + "/keep.txt"), numbered_lines(10));  // work tree untouched
  EXPECT_TRUE(fs::exists(b + "/gone.txt"));

  rb.reset_hard(c1, true);
  EXPECT_EQ(porcelain(b), "");
  rb.apply_patch(patch, ApplyLocation::kWorkdir);
  EXPECT_EQ(git(b, {"diff", "--cached", "--name-only"}), "");  // index untouched
  EXPECT_FALSE(fs::exists(b + "/gone.txt"));
  EXPECT_EQ(read(b + "/keep.txt"), read(repo + "/keep.txt"));
  git(b, {"add", "-A"});
  EXPECT_EQ(trim(git(b, {"write-tree"})), tree_of(repo, c2));

  rb.apply_patch("", ApplyLocation::kBoth);  // empty patch: nothing to do
}

TEST_F(GitxPatch, FailedApplyChangesNothingAndSaysWhy) {
  std::string patch = Repo::open(repo).diff_patch(c1, c2);
  std::string b = clone_at(repo, tmp / "b", c1);
  write(b, "keep.txt", "somebody else's rewrite\n");  // the hunk's context is gone
  const std::string status_before = porcelain(b);

  Repo rb = Repo::open(b);
  std::string why;
  EXPECT_FALSE(rb.check_patch_applies(patch, ApplyLocation::kWorkdir, &why));
  EXPECT_FALSE(why.empty());
  std::string msg = error_of([&] { rb.apply_patch(patch); });
  EXPECT_EQ(msg.rfind("libgit2: apply patch: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(why), std::string::npos) << msg << " / " << why;
  EXPECT_EQ(porcelain(b), status_before);  // all or nothing: not even the new files
  EXPECT_FALSE(fs::exists(b + "/added.txt"));
  EXPECT_TRUE(fs::exists(b + "/gone.txt"));

  // Text that is not a patch.
  EXPECT_FALSE(rb.check_patch_applies("diff --git a/x\nthis is not a patch\n", ApplyLocation::kWorkdir, &why));
  EXPECT_THROW(rb.apply_patch("diff --git a/x\nthis is not a patch\n"), Error);
  EXPECT_THROW(Repo::patch_files("diff --git a/x\nthis is not a patch\n"), Error);
}

TEST(GitxPatchText, TakesTheGitCliEmptyFileAndQuotedPathHeaders) {
  // git prints an added or deleted empty file as a header that ends at its
  // "index" line, which libgit2 1.5's parser alone rejects.
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "empty-before.txt", "");
  write(repo, "a.txt", "a\n");
  std::string c1 = commit_all(repo, "c1");
  fs::remove(repo + "/empty-before.txt");
  write(repo, "b-empty.txt", "");
  write(repo, "sp ace/\xc3\xa9t\xc3\xa9.txt", "quoted path\n");
  write(repo, "zz-empty.txt", "");  // last in the patch: its header ends the text
  std::string c2 = commit_all(repo, "c2");

  std::string cli_patch = git(repo, {"diff", "--no-renames", c1, c2});
  ASSERT_NE(cli_patch.find("new file mode 100644\nindex 0000000..e69de29\ndiff --git"), std::string::npos) << cli_patch;
  ASSERT_NE(cli_patch.find("deleted file mode 100644\nindex e69de29..0000000\ndiff --git"), std::string::npos)
      << cli_patch;
  EXPECT_EQ(Repo::patch_files(cli_patch), (std::vector<std::string>{"b-empty.txt", "empty-before.txt",
                                                                    "sp ace/\xc3\xa9t\xc3\xa9.txt", "zz-empty.txt"}));
  EXPECT_EQ(Repo::patch_stats(cli_patch).files, 4u);
  EXPECT_EQ(Repo::patch_stats(cli_patch).insertions, 1u);

  std::string b = clone_at(repo, tmp / "b", c1);
  Repo rb = Repo::open(b);
  ASSERT_TRUE(rb.check_patch_applies(cli_patch, ApplyLocation::kBoth));
  rb.apply_patch(cli_patch, ApplyLocation::kBoth);
  EXPECT_EQ(trim(git(b, {"write-tree"})), rev_parse(repo, c2 + "^{tree}"));

  // Our own text of the same change goes through git apply.
  std::string ours = Repo::open(repo).diff_patch(c1, c2);
  write(tmp.path(), "ours.patch", ours);
  std::string c = clone_at(repo, tmp / "c", c1);
  auto applied = test::run({"git", "-C", c, "apply", "--index", tmp / "ours.patch"});
  EXPECT_EQ(applied.exit_code, 0) << applied.output;
  EXPECT_EQ(trim(git(c, {"write-tree"})), rev_parse(repo, c2 + "^{tree}"));
}

TEST(GitxRevert, PatchUndoesAMiddleCommitWithoutTouchingTheTree) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a.txt", numbered_lines(12));
  std::string c1 = commit_all(repo, "c1");
  std::string a = numbered_lines(12);
  a.replace(a.find("line 2\n"), 7, "line two (the bug)\n");
  write(repo, "a.txt", a);
  write(repo, "b.txt", "added by the bad commit\n");
  std::string c2 = commit_all(repo, "c2: the culprit");
  a.replace(a.find("line 11"), 7, "line eleven");
  write(repo, "a.txt", a);
  write(repo, "c.txt", "later work\n");
  std::string c3 = commit_all(repo, "c3");
  write(repo, "d.txt", "even later\n");
  std::string c4 = commit_all(repo, "c4");

  Repo r = Repo::open(repo);
  std::string patch = r.revert_patch(c2);
  EXPECT_EQ(porcelain(repo), "");  // nothing touched
  EXPECT_EQ(r.head_sha(), c4);
  EXPECT_EQ(Repo::patch_files(patch), (std::vector<std::string>{"a.txt", "b.txt"}));
  EXPECT_EQ(Repo::patch_stats(patch).deletions, 2u);  // the bad line and b.txt's line

  // Same result as `git revert --no-commit`.
  std::string viacli = clone_at(repo, tmp / "cli", c4);
  git(viacli, {"revert", "--no-commit", c2});
  std::string expected = trim(git(viacli, {"write-tree"}));

  ASSERT_TRUE(r.check_patch_applies(patch, ApplyLocation::kBoth));
  r.apply_patch(patch, ApplyLocation::kBoth);
  EXPECT_EQ(trim(git(repo, {"write-tree"})), expected);
  EXPECT_NE(read(repo + "/a.txt").find("line eleven"), std::string::npos);
  EXPECT_NE(read(repo + "/a.txt").find("line 2\n"), std::string::npos);
  EXPECT_FALSE(fs::exists(repo + "/b.txt"));

  // Once reverted, reverting again finds nothing to undo.
  r.commit_all("revert c2", false, {});
  EXPECT_EQ(r.revert_patch(c2), "");
  (void)c1;
  (void)c3;
}

TEST(GitxRevert, ConflictNamesThePaths) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a.txt", "one\ntwo\nthree\n");
  commit_all(repo, "c1");
  write(repo, "a.txt", "one\nTWO\nthree\n");
  std::string c2 = commit_all(repo, "c2");
  write(repo, "a.txt", "one\nTwo, again\nthree\n");
  commit_all(repo, "c3");

  Repo r = Repo::open(repo);
  std::string msg = error_of([&] { r.revert_patch(c2); });
  EXPECT_NE(msg.find("conflicts with HEAD in: a.txt"), std::string::npos) << msg;
  EXPECT_EQ(porcelain(repo), "");
}

// ---------------------------------------------------------------------------

TEST(GitxWorktree, AddListOpenRemove) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "main");
  write(repo, "a.txt", "1\n");
  std::string c1 = commit_all(repo, "c1");
  write(repo, "a.txt", "2\n");
  commit_all(repo, "c2");

  Repo r = Repo::open(repo);
  const std::string wt = tmp / "wt1";
  r.worktree_add("wt1", wt, c1);
  EXPECT_EQ(read(wt + "/a.txt"), "1\n");
  EXPECT_EQ(rev_parse(wt, "HEAD"), c1);
  EXPECT_NE(test::run({"git", "-C", wt, "symbolic-ref", "-q", "HEAD"}).exit_code, 0);      // detached
  EXPECT_EQ(git(repo, {"branch", "--list", "--format=%(refname)"}), "refs/heads/main\n");  // no leftovers
  EXPECT_EQ(porcelain(wt), "");
  std::string cli_list = git(repo, {"worktree", "list", "--porcelain"});
  EXPECT_NE(cli_list.find("worktree " + wt + "\nHEAD " + c1 + "\ndetached"), std::string::npos) << cli_list;

  auto list = r.worktree_list();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, "wt1");
  EXPECT_EQ(list[0].path, wt);
  EXPECT_TRUE(list[0].valid);
  EXPECT_FALSE(list[0].locked);

  Repo w = Repo::open(wt);
  EXPECT_EQ(w.workdir(), wt);
  EXPECT_EQ(w.git_dir(), repo + "/.git/worktrees/wt1");
  EXPECT_EQ(w.common_dir(), repo + "/.git");
  EXPECT_EQ(w.head_sha(), c1);
  EXPECT_EQ(w.head_branch(), "");
  EXPECT_EQ(Repo::discover(wt).common_dir(), repo + "/.git");

  // Refused without side effects: same name, or a path that exists.
  EXPECT_THROW(r.worktree_add("wt1", tmp / "elsewhere", c1), Error);
  EXPECT_FALSE(fs::exists(tmp / "elsewhere"));
  fs::create_directories(tmp / "occupied");
  EXPECT_THROW(r.worktree_add("wt2", tmp / "occupied", c1), Error);
  EXPECT_TRUE(fs::exists(tmp / "occupied"));
  EXPECT_EQ(exit_code_of([&] { r.worktree_add("a/b", tmp / "x", c1); }), kExitUsage);
  EXPECT_EQ(r.worktree_list().size(), 1u);

  EXPECT_TRUE(r.worktree_remove("wt1"));
  EXPECT_FALSE(fs::exists(wt));
  EXPECT_EQ(git(repo, {"worktree", "list", "--porcelain"}).find(wt), std::string::npos);
  EXPECT_TRUE(r.worktree_list().empty());
  EXPECT_FALSE(r.worktree_remove("wt1"));

  // The name is free again.
  r.worktree_add("wt1", wt, "HEAD");
  EXPECT_EQ(read(wt + "/a.txt"), "2\n");
}

TEST(GitxWorktree, RemoveWhenTheFolderIsAlreadyGone) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "main");
  write(repo, "a.txt", "1\n");
  std::string c1 = commit_all(repo, "c1");
  Repo r = Repo::open(repo);
  const std::string wt = tmp / "gone";
  r.worktree_add("gone", wt, c1);
  fs::remove_all(wt);

  auto list = r.worktree_list();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_FALSE(list[0].valid);
  EXPECT_TRUE(r.worktree_remove("gone"));
  EXPECT_TRUE(r.worktree_list().empty());
  EXPECT_FALSE(fs::exists(repo + "/.git/worktrees/gone"));
  EXPECT_EQ(git(repo, {"worktree", "list", "--porcelain"}).find(wt), std::string::npos);
}

// ---------------------------------------------------------------------------

// What git itself says (`rev-parse --git-path hooks` follows core.hooksPath),
// made absolute against the directory git ran in.
std::string git_hooks_dir(const std::string& dir) {
  fs::path p = trim(git(dir, {"rev-parse", "--git-path", "hooks"}));
  if (p.is_relative()) p = fs::path(dir) / p;
  return p.lexically_normal().string();
}

TEST(GitxConfig, HooksDirFollowsCoreHooksPath) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  write(repo, "a.txt", "1\n");
  std::string c1 = commit_all(repo, "c1");
  Repo r = Repo::open(repo);

  EXPECT_EQ(r.hooks_dir(), repo + "/.git/hooks");
  EXPECT_EQ(r.hooks_dir(), git_hooks_dir(repo));

  git(repo, {"config", "core.hooksPath", "tools/githooks"});
  EXPECT_EQ(r.hooks_dir(), repo + "/tools/githooks");
  EXPECT_EQ(r.hooks_dir(), git_hooks_dir(repo));

  git(repo, {"config", "core.hooksPath", tmp / "shared-hooks/"});
  EXPECT_EQ(r.hooks_dir(), tmp / "shared-hooks");

  // A linked worktree: relative to its own top, or the common hooks folder.
  r.worktree_add("wt", tmp / "wt", c1);
  Repo w = Repo::open(tmp / "wt");
  git(repo, {"config", "core.hooksPath", "githooks"});
  EXPECT_EQ(w.hooks_dir(), tmp / "wt/githooks");
  EXPECT_EQ(w.hooks_dir(), git_hooks_dir(tmp / "wt"));
  git(repo, {"config", "--unset", "core.hooksPath"});
  EXPECT_EQ(w.hooks_dir(), repo + "/.git/hooks");
  EXPECT_EQ(w.hooks_dir(), git_hooks_dir(tmp / "wt"));
}

TEST(GitxConfig, ConfigGetSeesLaterEdits) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "r");
  Repo r = Repo::open(repo);
  EXPECT_EQ(r.config_get("user.name"), "Test User");
  EXPECT_EQ(r.config_get("phoenix.mode"), std::nullopt);
  git(repo, {"config", "phoenix.mode", "heal"});
  EXPECT_EQ(r.config_get("phoenix.mode"), "heal");
  git(repo, {"config", "phoenix.mode", "verify"});
  EXPECT_EQ(r.config_get("phoenix.mode"), "verify");
}

// --- persistent worktrees (gitx/worktree.h) -------------------------------------

class GitxPersistentWorktree : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "r");
    write(repo, ".gitignore", ".phoenix/\nbuild/\n");
    write(repo, "stable.txt", "never changes\n");
    write(repo, "moving.txt", "one\n");
    c1 = commit_all(repo, "one");
    write(repo, "moving.txt", "two\n");
    write(repo, "added.txt", "added in two\n");
    c2 = commit_all(repo, "two");
    path = repo + "/.phoenix/worktrees/hook";
  }
  ScopedTempDir tmp;
  std::string repo, c1, c2, path;
};

TEST_F(GitxPersistentWorktree, CreatedOnceThenCleanedAndMovedOnlyWhereFilesDiffer) {
  Repo r = Repo::open(repo);
  PersistentWorktree w = prepare_worktree(r, "phoenix-hook-x", path, c1, kState);
  EXPECT_EQ(w.state, PersistentWorktree::State::kCreated);
  EXPECT_EQ(w.path, fs::canonical(path).string());
  EXPECT_EQ(read(path + "/moving.txt"), "one\n");

  // What a check run may leave: edits, a staged file, an untracked file, and
  // an ignored build output (kept, so builds stay warm).
  write(path, "moving.txt", "edited\n");
  write(path, "staged.txt", "staged\n");
  git(path, {"add", "staged.txt"});
  write(path, "untracked.txt", "junk\n");
  write(path, "build/out.o", "warm\n");
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(24);
  fs::last_write_time(path + "/stable.txt", old_time);

  PersistentWorktree again = prepare_worktree(r, "phoenix-hook-x", path, c2, kState);
  EXPECT_EQ(again.state, PersistentWorktree::State::kReused);
  EXPECT_EQ(rev_parse(path, "HEAD"), c2);
  EXPECT_EQ(read(path + "/moving.txt"), "two\n");
  EXPECT_EQ(read(path + "/added.txt"), "added in two\n");
  EXPECT_FALSE(fs::exists(path + "/staged.txt"));
  EXPECT_FALSE(fs::exists(path + "/untracked.txt"));
  EXPECT_EQ(read(path + "/build/out.o"), "warm\n");
  EXPECT_EQ(porcelain(path), "");
  EXPECT_EQ(fs::last_write_time(path + "/stable.txt"), old_time) << "an unchanged file was rewritten";
  // The user's own checkout never moved.
  EXPECT_EQ(rev_parse(repo, "HEAD"), c2);
  EXPECT_EQ(porcelain(repo), "");
  EXPECT_EQ(r.worktree_list().size(), 1u);
}

// The move looks only at the paths one status scan and the tree diff name;
// every other kind of leftover must still go, and what the next commit adds
// must land even where an untracked file stood.
TEST_F(GitxPersistentWorktree, AMoveFindsEveryLeftoverFromOneScan) {
  Repo r = Repo::open(repo);
  prepare_worktree(r, "phoenix-hook-x", path, c1, kState);
  write(path, "added.txt", "untracked, in the way of c2's file\n");
  fs::remove(path + "/stable.txt");  // deleted tracked file
  write(path, "moving.txt", "staged edit\n");
  git(path, {"add", "moving.txt"});                      // staged modification
  write(path, "junk/deep/one.txt", "x\n");               // untracked folders
  write(path, ".phoenix/state.txt", "Phoenix's own\n");  // kept (state dir)

  PersistentWorktree w = prepare_worktree(r, "phoenix-hook-x", path, c2, kState);
  EXPECT_EQ(w.state, PersistentWorktree::State::kReused);
  EXPECT_EQ(read(path + "/added.txt"), "added in two\n");
  EXPECT_EQ(read(path + "/stable.txt"), "never changes\n");
  EXPECT_EQ(read(path + "/moving.txt"), "two\n");
  EXPECT_FALSE(fs::exists(path + "/junk"));
  EXPECT_EQ(read(path + "/.phoenix/state.txt"), "Phoenix's own\n");
  EXPECT_EQ(porcelain(path), "");

  // Back to c1: what c2 added goes, with nothing else to clean.
  prepare_worktree(r, "phoenix-hook-x", path, c1, kState);
  EXPECT_FALSE(fs::exists(path + "/added.txt"));
  EXPECT_EQ(read(path + "/moving.txt"), "one\n");
  EXPECT_EQ(rev_parse(path, "HEAD"), c1);
  EXPECT_EQ(porcelain(path), "");
}

// A move trusts the index's stat data where the index still holds HEAD's
// tree as the last move left it (a sweep of lstat against the index, no
// status scan): whatever a check run leaves, in the same clock tick as the
// move or later, the next move must still end with the target's files
// exactly, nothing untracked, ignored files kept. 120 seeded random steps
// between moves among four commits; git itself is the judge.
TEST_F(GitxPersistentWorktree, EveryMoveEndsAtTheTargetWhateverTheLastRunLeft) {
  // Four commits whose trees differ in every way a move has to handle.
  write(repo, ".gitignore", ".phoenix/\nbuild/\n*.log\n");
  for (int d = 0; d < 3; ++d)
    for (int f = 0; f < 6; ++f) write(repo, "d" + std::to_string(d) + "/f" + std::to_string(f) + ".txt", "abcd\n");
  write(repo, "swap/inner.txt", "a folder in the first\n");
  const std::string k1 = commit_all(repo, "k1");
  write(repo, "d0/f0.txt", "wxyz\n");  // same size, other bytes
  fs::remove_all(repo + "/swap");
  write(repo, "swap", "a file in the second\n");
  write(repo, "new/deep/x.txt", "x\n");
  const std::string k2 = commit_all(repo, "k2");
  fs::remove_all(repo + "/d2");
  fs::permissions(repo + "/d1/f1.txt", fs::perms::owner_exec, fs::perm_options::add);
  const std::string k3 = commit_all(repo, "k3");
  write(repo, "d0/f0.txt", "abcd\n");
  const std::string k4 = commit_all(repo, "k4");
  const std::vector<std::string> commits{k1, k2, k3, k4};

  Repo r = Repo::open(repo);
  prepare_worktree(r, "phoenix-sweep", path, k1, kState);
  write(path, "build/out.o", "warm\n");

  Seeded rnd{20261203u};
  auto tracked = [&] {
    std::vector<std::string> out;
    std::istringstream in(git(path, {"ls-files"}));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(line);
    return out;
  };
  for (int step = 0; step < 120; ++step) {
    std::vector<std::string> files = tracked();  // .gitignore aside: build/ stays ignored
    files.erase(std::remove(files.begin(), files.end(), ".gitignore"), files.end());
    const std::string f = files[rnd(files.size())];
    const std::string full = path + "/" + f;
    switch (rnd(12)) {
      case 0: {  // same size, other bytes, in place (same inode)
        std::string c = read(full);
        if (!c.empty()) c[0] = c[0] == 'Q' ? 'R' : 'Q';
        std::ofstream(full, std::ios::in | std::ios::out | std::ios::binary) << c;
        break;
      }
      case 1: {  // edited, then its old mtime put back (what cp -p or tar does)
        struct stat st {};
        ::stat(full.c_str(), &st);
        std::string c = read(full);
        if (!c.empty()) c[0] = c[0] == 'P' ? 'S' : 'P';
        std::ofstream(full, std::ios::in | std::ios::out | std::ios::binary) << c;
        const timespec times[2] = {st.st_atim, st.st_mtim};
        ::utimensat(AT_FDCWD, full.c_str(), times, 0);
        break;
      }
      case 2: fs::remove(full); break;
      case 3: write(path, "junk/" + std::to_string(step) + "/u.txt", "untracked\n"); break;
      case 4: write(path, "u" + std::to_string(step) + ".txt", "untracked\n"); break;
      case 5: write(path, "noise" + std::to_string(step) + ".log", "ignored, kept\n"); break;
      case 6:
        fs::remove(full);
        write(path, f + "/now-a-folder.txt", "a folder where a file was\n");
        break;
      case 7: {  // the executable bit flipped
        const bool exec = (fs::status(full).permissions() & fs::perms::owner_exec) != fs::perms::none;
        fs::permissions(full, fs::perms::owner_exec, exec ? fs::perm_options::remove : fs::perm_options::add);
        break;
      }
      case 8:
        write(path, f, "staged\n");
        git(path, {"add", f});
        break;
      case 9:
        write(path, f, "committed by the check\n");
        git(path, {"commit", "-qam", "a check committed"});
        break;
      case 10: write(path, ".gitignore", ".phoenix/\nbuild/\n"); break;  // *.log no longer ignored
      case 11:
        fs::remove(full);  // a link out of the worktree: nothing may be written through it
        fs::create_symlink(tmp / "outside", full);
        break;
    }
    const std::string target = commits[rnd(commits.size())];
    const PersistentWorktree moved = prepare_worktree(r, "phoenix-sweep", path, target, kState);
    SCOPED_TRACE("step " + std::to_string(step) + " to " + target.substr(0, 7));
    ASSERT_EQ(moved.state, PersistentWorktree::State::kReused) << moved.damage;
    ASSERT_EQ(rev_parse(path, "HEAD"), target);
    // The index is the target's tree, and every file hashes to its entry.
    ASSERT_EQ(git(path, {"ls-files", "-s"}),
              git(path, {"ls-tree", "-r", "--format=%(objectmode) %(objectname) 0\t%(path)", target}));
    std::string names;
    for (const std::string& t : tracked()) names += t + "\n";
    util::ProcessOptions hash;
    hash.argv = {"git", "hash-object", "--no-filters", "--stdin-paths"};
    hash.cwd = path;
    hash.stdin_data = names;
    const std::string hashes = util::run_process(hash).output;
    ASSERT_EQ(hashes, git(path, {"ls-tree", "-r", "--format=%(objectname)", target}));
    ASSERT_EQ(git(path, {"status", "--porcelain", "--untracked-files=all"}), "");
    ASSERT_EQ(read(path + "/build/out.o"), "warm\n");
    ASSERT_FALSE(fs::exists(tmp / "outside")) << "written through a link";
  }
}

// The sweep alone: what it names after a move and after a run's leftovers,
// and when the index may be trusted to hold HEAD's tree.
TEST_F(GitxPersistentWorktree, TheSweepNamesWhatARunLeftAndNothingElse) {
  Repo r = Repo::open(repo);
  // Each move writes the index a tick after stable.txt: it is not racily
  // clean. What the last move wrote may be (same tick as the index): the
  // sweep must name those too, whatever else it names.
  prepare_worktree(r, "phoenix-sweep", path, c2, kState);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  prepare_worktree(r, "phoenix-sweep", path, c1, kState);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  prepare_worktree(r, "phoenix-sweep", path, c2, kState);
  auto racy = [&] {
    struct stat index {};
    EXPECT_EQ(::stat((repo + "/.git/worktrees/phoenix-sweep/index").c_str(), &index), 0);
    std::vector<std::string> out;
    for (const char* f : {".gitignore", "added.txt", "moving.txt", "stable.txt"}) {
      struct stat st {};
      if (::lstat((path + "/" + f).c_str(), &st) == 0 &&
          std::make_pair(st.st_mtim.tv_sec, st.st_mtim.tv_nsec) >=
              std::make_pair(index.st_mtim.tv_sec, index.st_mtim.tv_nsec))
        out.push_back(f);
    }
    return out;
  };
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
    return a;
  };
  const std::vector<std::string> racy_now = racy();
  EXPECT_TRUE(std::find(racy_now.begin(), racy_now.end(), "stable.txt") == racy_now.end());
  git_libgit2_init();
  auto sweep = [&] {
    git_repository* raw = nullptr;
    EXPECT_EQ(git_repository_open(&raw, path.c_str()), 0);
    git_index* index = nullptr;
    EXPECT_EQ(git_repository_index(&index, raw), 0);
    std::optional<internal::Sweep> s = internal::stat_sweep(raw, index);
    const bool trusted = internal::index_is_heads_tree(raw);
    git_index_free(index);
    git_repository_free(raw);
    return std::make_pair(s.value_or(internal::Sweep{{"(none)"}, {}, false}), trusted);
  };
  auto [clean, trusted] = sweep();
  EXPECT_EQ(clean.paths, racy_now);
  EXPECT_TRUE(clean.ctime_only.empty());
  EXPECT_TRUE(trusted);

  write(path, "moving.txt", "a longer edit\n");
  write(path, "new/deep/file.txt", "untracked\n");
  write(path, "build/out.o", "ignored: the status decides\n");
  struct stat st {};
  ASSERT_EQ(::stat((path + "/stable.txt").c_str(), &st), 0);
  write(path, "stable.txt", "NEVER CHANGES\n");  // same size, mtime put back
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (path + "/stable.txt").c_str(), times, 0), 0);
  auto [dirty, still] = sweep();
  EXPECT_EQ(dirty.paths, with({"build", "moving.txt", "new"}, racy_now));
  EXPECT_EQ(dirty.ctime_only, std::vector<std::string>{"stable.txt"});
  EXPECT_TRUE(dirty.narrows);
  EXPECT_TRUE(still);

  git(path, {"add", "moving.txt"});  // staged: the index is no longer HEAD's tree
  EXPECT_FALSE(sweep().second);
  prepare_worktree(r, "phoenix-sweep", path, c1, kState);
  EXPECT_EQ(read(path + "/stable.txt"), "never changes\n");
  EXPECT_TRUE(sweep().second);
}

TEST_F(GitxPersistentWorktree, ADamagedOneIsRecreatedNeverTrusted) {
  Repo r = Repo::open(repo);
  struct Damage {
    const char* name;
    std::function<void()> apply;
  };
  const std::string admin = repo + "/.git/worktrees/phoenix-hook-x";
  const std::vector<Damage> damages{
      {"garbage .git file", [&] { write(path, ".git", "this is not a gitdir line\n"); }},
      {".git points nowhere", [&] { write(path, ".git", "gitdir: /nonexistent/place\n"); }},
      {"HEAD of the worktree corrupted", [&] { write(admin, "HEAD", "not a sha at all\n"); }},
      {"admin entry deleted", [&] { fs::remove_all(admin); }},
      {"folder deleted", [&] { fs::remove_all(path); }},
      {"folder replaced by a plain folder",
       [&] {
         fs::remove_all(path);
         write(path, "stray.txt", "x\n");
       }},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.name);
    ASSERT_NE(prepare_worktree(r, "phoenix-hook-x", path, c1, kState).state, PersistentWorktree::State::kRecreated);
    write(path, "build/marker", "from the old worktree\n");
    d.apply();
    PersistentWorktree again = prepare_worktree(r, "phoenix-hook-x", path, c2, kState);
    EXPECT_EQ(again.state, PersistentWorktree::State::kRecreated);
    EXPECT_FALSE(again.damage.empty());
    EXPECT_FALSE(fs::exists(path + "/build/marker")) << "recreated from scratch";
    EXPECT_FALSE(fs::exists(path + "/stray.txt"));
    Repo w = Repo::open(path);
    EXPECT_EQ(w.head_sha(), c2);
    EXPECT_EQ(fs::canonical(w.common_dir()), fs::canonical(r.common_dir()));
    EXPECT_EQ(porcelain(path), "");
    ASSERT_EQ(r.worktree_list().size(), 1u);
    EXPECT_TRUE(r.worktree_list()[0].valid);
    // And the user's checkout is untouched.
    EXPECT_EQ(read(repo + "/moving.txt"), "two\n");
    EXPECT_EQ(porcelain(repo), "");
  }
}

TEST_F(GitxPersistentWorktree, NamesKeepTheirOwnWorktreesAndOverlapsAreRefused) {
  Repo r = Repo::open(repo);
  prepare_worktree(r, "phoenix-a", repo + "/.phoenix/worktrees/a", c1, kState);
  prepare_worktree(r, "phoenix-b", repo + "/.phoenix/worktrees/b", c2, kState);
  EXPECT_EQ(prepare_worktree(r, "phoenix-a", repo + "/.phoenix/worktrees/a", c2, kState).state,
            PersistentWorktree::State::kReused);
  EXPECT_EQ(r.worktree_list().size(), 2u);
  EXPECT_THROW(prepare_worktree(r, "phoenix-c", repo, c1, kState), Error);
  EXPECT_THROW(prepare_worktree(r, "phoenix-c", repo + "/.git/x", c1, kState), Error);
  EXPECT_THROW(prepare_worktree(r, "phoenix-c", tmp.path(), c1, kState), Error);
  // Another name at a path already registered: that one is not trusted.
  PersistentWorktree taken = prepare_worktree(r, "phoenix-c", repo + "/.phoenix/worktrees/b", c1, kState);
  EXPECT_EQ(taken.state, PersistentWorktree::State::kRecreated);
  EXPECT_NE(taken.damage.find("phoenix-b"), std::string::npos) << taken.damage;
}

// A watched work tree (Repo::watch_work_tree, gitx/watch.h) must say what a
// scan says, whatever happens to the tree: 250 steps of writes, deletes,
// renames of files and folders, mode changes, .gitignore edits and git run
// by hand, each followed by a status of the watched Repo and of a fresh,
// unwatched one; every seventh step the watched one commits, after which
// git itself must find nothing left but the state folder.
TEST(GitxWatch, AWatchedTreeSaysWhatAScanSaysWhateverHappens) {
  ScopedTempDir tmp;
  const std::string repo = init_repo(tmp / "repo");
  for (int d = 0; d < 4; ++d)
    for (int f = 0; f < 5; ++f) write(repo, "d" + std::to_string(d) + "/f" + std::to_string(f) + ".txt", "x\n");
  write(repo, ".gitignore", "*.log\n");
  commit_all(repo, "base");
  Repo w = Repo::open(repo);
  ASSERT_TRUE(w.watch_work_tree()) << "inotify refused";
  w.commit_all("clean start", true, kState);

  Seeded rnd{12345u};
  auto files = [&] {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(repo)) {
      std::string rel = fs::relative(e.path(), repo).generic_string();
      if (rel.rfind(".git", 0) == 0 || rel.rfind(".phoenix", 0) == 0 || !e.is_regular_file()) continue;
      out.push_back(rel);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  auto dirs = [&] {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(repo)) {
      std::string rel = fs::relative(e.path(), repo).generic_string();
      if (rel.rfind(".git", 0) == 0 || rel.rfind(".phoenix", 0) == 0 || !e.is_directory()) continue;
      out.push_back(rel);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  auto codes = [](const std::vector<StatusEntry>& s) {
    std::vector<std::string> out;
    for (const auto& e : s)
      out.push_back(std::string(1, e.code) + " " + e.path + (e.old_path.empty() ? "" : " <- " + e.old_path));
    return out;
  };
  int commits = 0;
  for (int step = 0; step < 250; ++step) {
    std::vector<std::string> fl = files(), dl = dirs();
    std::string what;
    switch (rnd(12)) {
      case 0:
        if (fl.empty()) break;
        what = "modify " + fl[rnd(fl.size())];
        write(repo, what.substr(7), "step " + std::to_string(step) + "\n");
        break;
      case 1:
        what = "new file";
        write(repo, (dl.empty() ? std::string("n") : dl[rnd(dl.size())]) + "/s" + std::to_string(step) + ".txt", "n\n");
        break;
      case 2:
        what = "new folders";
        write(repo, "n" + std::to_string(step) + "/a/b/c.txt", "deep\n");
        break;
      case 3:
        if (fl.empty()) break;
        what = "delete " + fl[rnd(fl.size())];
        fs::remove(fs::path(repo) / what.substr(7));
        break;
      case 4: {
        if (fl.empty() || dl.empty()) break;
        std::string from = fl[rnd(fl.size())], to = dl[rnd(dl.size())] + "/m" + std::to_string(step) + ".txt";
        what = "rename " + from + " -> " + to;
        fs::rename(fs::path(repo) / from, fs::path(repo) / to);
        break;
      }
      case 5: {
        if (dl.empty()) break;
        std::string from = dl[rnd(dl.size())];
        what = "move folder " + from;
        fs::rename(fs::path(repo) / from, fs::path(repo) / ("moved" + std::to_string(step)));
        break;
      }
      case 6:
        if (fl.empty()) break;
        what = "chmod " + fl[rnd(fl.size())];
        ::chmod((repo + "/" + what.substr(6)).c_str(), rnd(2) ? 0755 : 0644);
        break;
      case 7:
        what = "a log file";
        write(repo, (dl.empty() ? std::string("l") : dl[rnd(dl.size())]) + "/x" + std::to_string(step) + ".log", "l\n");
        break;
      case 8:
        what = ".gitignore edited";
        write(repo, ".gitignore", rnd(2) ? "*.log\n" : "# nothing ignored\n");
        break;
      case 9:
        what = "git add -A";
        git(repo, {"add", "-A"});
        break;
      case 10:
        what = "git commit";
        git(repo, {"add", "-A"});
        git(repo, {"commit", "-q", "--allow-empty", "-m", "by hand"});
        break;
      case 11:
        what = "state file";
        write(repo, ".phoenix/s" + std::to_string(step), "s\n");
        break;
    }
    Repo plain = Repo::open(repo);
    ASSERT_EQ(codes(w.status()), codes(plain.status())) << "step " << step << ": " << what;
    ASSERT_EQ(w.is_clean(kState), plain.is_clean(kState)) << "step " << step << ": " << what;
    if (step % 7 == 6) {
      w.commit_all("step " + std::to_string(step), true, kState);
      ++commits;
      for (const std::string& l : lines(porcelain(repo)))
        ASSERT_EQ(l.rfind("?? .phoenix/", 0), 0u) << "step " << step << " after " << what << ": git sees " << l;
      ASSERT_TRUE(w.is_clean(kState)) << "step " << step;
    }
  }
  EXPECT_GE(commits, 30);
}

// The cases a watch cannot see by itself, each after the tree was made
// clean by a commit: a file nobody touched changes state (.gitignore), HEAD
// moves under the files (git run by hand), a folder moves (its watch keeps
// the old name), folders appear faster than they can be watched.
TEST(GitxWatch, WhatNoEventSaysIsFoundAllTheSame) {
  ScopedTempDir tmp;
  const std::string repo = init_repo(tmp / "repo");
  write(repo, "a/keep.txt", "a\n");
  write(repo, "b.txt", "b\n");
  write(repo, ".gitignore", "*.log\n");
  commit_all(repo, "base");
  write(repo, "a/old.log", "ignored until now\n");
  Repo w = Repo::open(repo);
  ASSERT_TRUE(w.watch_work_tree());
  auto clean = [&] {
    w.commit_all("clean", true, kState);
    ASSERT_TRUE(w.is_clean(kState));
  };
  auto paths = [](const std::vector<StatusEntry>& s) {
    std::vector<std::string> out;
    for (const auto& e : s) out.push_back(std::string(1, e.code) + " " + e.path);
    return out;
  };
  clean();
  write(repo, ".gitignore", "# nothing ignored\n");
  EXPECT_EQ(paths(w.status()), (std::vector<std::string>{"M .gitignore", "? a/old.log"}));

  clean();
  git(repo, {"reset", "-q", "--soft", "HEAD~1"});
  EXPECT_EQ(paths(w.status()), paths(Repo::open(repo).status()));
  EXPECT_FALSE(w.is_clean(kState));

  clean();
  fs::rename(fs::path(repo) / "a", fs::path(repo) / "c");
  write(repo, "c/new.txt", "written under the new name\n");
  EXPECT_EQ(paths(w.status()), paths(Repo::open(repo).status()));
  EXPECT_FALSE(w.is_clean(kState));

  clean();
  for (int i = 0; i < 50; ++i) write(repo, "deep/" + std::to_string(i) + "/x/y.txt", "y\n");
  EXPECT_EQ(w.status().size(), 50u);
  clean();
  EXPECT_EQ(trim(git(repo, {"ls-files", "deep"})).size() > 0, true);
  EXPECT_EQ(lines(git(repo, {"ls-files", "deep"})).size(), 50u);

  // An install in the tree: 60,000 events overflow the kernel's queue (or,
  // with a raised queue, pass the 20,000 paths the watch keeps): it scans.
  clean();
  for (int i = 0; i < 20005; ++i) write(repo, "many/" + std::to_string(i % 7) + "/" + std::to_string(i), "m\n");
  write(repo, "b.txt", "changed among them\n");
  EXPECT_EQ(paths(w.status()), paths(Repo::open(repo).status()));
  EXPECT_EQ(w.status().size(), 20006u);
  clean();
  EXPECT_EQ(lines(git(repo, {"ls-files", "many"})).size(), 20005u);
  EXPECT_EQ(trim(git(repo, {"status", "--porcelain"})), "");
}

}  // namespace
}  // namespace phoenix::gitx
