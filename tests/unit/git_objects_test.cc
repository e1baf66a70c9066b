// hook/git_objects: a commit's tree read from git's object database says
// what `git rev-parse <commit>^{tree}` says, for a loose commit, a packed
// one and one found through objects/info/alternates, in SHA-1 and SHA-256
// repositories; anything else is nullopt (git is asked then).
#include "hook/git_objects.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;

std::string tree_of(const std::string& repo, const std::string& commit) { return rev_parse(repo, commit + "^{tree}"); }

TEST(GitObjects, ALooseAndAPackedCommitNameTheTreeGitNames) {
  ScopedTempDir tmp;
  const std::string repo = init_repo(tmp / "repo");
  write(repo, "a.txt", "one\n");
  const std::string first = commit_all(repo, "first");
  write(repo, "a.txt", "two\n");
  const std::string second = commit_all(repo, "second");
  const std::string objects = repo + "/.git/objects";
  ASSERT_TRUE(fs::exists(objects + "/" + second.substr(0, 2) + "/" + second.substr(2))) << "loose";
  EXPECT_EQ(hook::commit_tree(objects, second), tree_of(repo, second));
  EXPECT_EQ(hook::commit_tree(objects, first), tree_of(repo, first));

  git(repo, {"repack", "-q", "-a", "-d"});
  git(repo, {"prune-packed"});
  ASSERT_FALSE(fs::exists(objects + "/" + second.substr(0, 2) + "/" + second.substr(2))) << "packed";
  EXPECT_EQ(hook::commit_tree(objects, second), tree_of(repo, second));
  EXPECT_EQ(hook::commit_tree(objects, first), tree_of(repo, first));

  // A tree is not a commit; an object that is not there, an id that is
  // not one, a folder that is not an object database: git's to answer.
  EXPECT_FALSE(hook::commit_tree(objects, tree_of(repo, second)));
  EXPECT_FALSE(hook::commit_tree(objects, std::string(40, 'e')));
  EXPECT_FALSE(hook::commit_tree(objects, "HEAD"));
  EXPECT_FALSE(hook::commit_tree(tmp / "nowhere", second));
}

// Files that are not what git writes are nobody's answer: git is asked.
TEST(GitObjects, DamagedObjectsAndIndexesSayNothing) {
  ScopedTempDir tmp;
  const std::string objects = tmp / "objects";
  const std::string id = "ab" + std::string(38, 'c');
  write(objects, "ab/" + std::string(38, 'c'), "not zlib at all");
  EXPECT_FALSE(hook::commit_tree(objects, id));
  write(objects, "pack/pack-1.idx", std::string("\377tOc\0\0\0\2", 8) + std::string(100, '\xff'));
  write(objects, "pack/pack-1.pack", "PACK");
  EXPECT_FALSE(hook::commit_tree(objects, id));
  // A whole header whose fan-out counts more objects than the file holds
  // (read as it says, the ids of `id`'s bucket alone would be 40 GB).
  std::string fanout;
  for (int i = 0; i < 256; ++i) fanout += i < 0xab ? std::string(4, '\0') : std::string("\x7f\xff\xff\xff", 4);
  write(objects, "pack/pack-1.idx", std::string("\377tOc\0\0\0\2", 8) + fanout);
  EXPECT_FALSE(hook::commit_tree(objects, id));
  write(objects, "info/alternates", "../nowhere\n\"quoted\"\n");
  EXPECT_FALSE(hook::commit_tree(objects, id));
}

TEST(GitObjects, ACommitIsFoundThroughAlternates) {
  ScopedTempDir tmp;
  const std::string repo = init_repo(tmp / "repo");
  write(repo, "a.txt", "one\n");
  const std::string first = commit_all(repo, "first");
  ASSERT_EQ(run({"git", "clone", "-q", "--shared", repo, tmp / "shared"}).exit_code, 0);
  const std::string objects = tmp / "shared/.git/objects";
  ASSERT_TRUE(fs::exists(objects + "/info/alternates"));
  EXPECT_EQ(hook::commit_tree(objects, first), tree_of(repo, first));
}

TEST(GitObjects, ASha256RepositoryIsReadToo) {
  ScopedTempDir tmp;
  const std::string repo = tmp / "repo";
  if (run({"git", "init", "-q", "--object-format=sha256", repo}).exit_code != 0)
    GTEST_SKIP() << "this git makes no SHA-256 repositories";
  git(repo, {"config", "user.name", "Test"});
  git(repo, {"config", "user.email", "test@localhost"});
  write(repo, "a.txt", "one\n");
  const std::string commit = commit_all(repo, "first");
  ASSERT_EQ(commit.size(), 64u);
  EXPECT_EQ(hook::commit_tree(repo + "/.git/objects", commit), tree_of(repo, commit));
  git(repo, {"repack", "-q", "-a", "-d"});
  git(repo, {"prune-packed"});
  EXPECT_EQ(hook::commit_tree(repo + "/.git/objects", commit), tree_of(repo, commit));
}

}  // namespace
}  // namespace phoenix::test
