// util/glob: the globs of phoenix.json's editable, protected and setup
// inputs lists, matched as .gitignore-like lists are.
#include "util/glob.h"

#include <gtest/gtest.h>

namespace phoenix::util {
namespace {

TEST(Glob, StarStaysInsideOneFolder) {
  EXPECT_TRUE(glob_match("src/*.cc", "src/a.cc"));
  EXPECT_FALSE(glob_match("src/*.cc", "src/sub/a.cc"));
  EXPECT_FALSE(glob_match("src/*.cc", "src/a.h"));
  EXPECT_TRUE(glob_match("src/*", "src/"));
}

TEST(Glob, QuestionMarkIsOneCharacterButNotASlash) {
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_FALSE(glob_match("a?c", "a/c"));
}

TEST(Glob, DoubleStarCrossesFolders) {
  EXPECT_TRUE(glob_match("src/**", "src/a.cc"));
  EXPECT_TRUE(glob_match("src/**", "src/deep/er/a.cc"));
  EXPECT_FALSE(glob_match("src/**", "srcx/a.cc"));
  EXPECT_FALSE(glob_match("src/**", "lib/src/a.cc"));
  EXPECT_TRUE(glob_match("**/test_*.cc", "test_a.cc"));
  EXPECT_TRUE(glob_match("**/test_*.cc", "a/b/test_a.cc"));
  EXPECT_FALSE(glob_match("**/test_*.cc", "a/b/atest_a.cc"));
  EXPECT_TRUE(glob_match("a/**/z", "a/z"));
  EXPECT_TRUE(glob_match("a/**/z", "a/b/c/z"));
}

TEST(Glob, NoSlashMatchesTheBasenameAtAnyDepth) {
  EXPECT_TRUE(glob_match("*.pem", "key.pem"));
  EXPECT_TRUE(glob_match("*.pem", "a/b/key.pem"));
  EXPECT_FALSE(glob_match("*.pem", "a/key.pem/x"));
  EXPECT_TRUE(glob_match("phoenix.json", "phoenix.json"));
  // With a slash in it, a pattern is anchored at the repository's top.
  EXPECT_FALSE(glob_match("src/a.cc", "lib/src/a.cc"));
}

TEST(Glob, CharacterClasses) {
  EXPECT_TRUE(glob_match("file[0-9].txt", "file7.txt"));
  EXPECT_FALSE(glob_match("file[0-9].txt", "filex.txt"));
  EXPECT_TRUE(glob_match("[abc].md", "b.md"));
  EXPECT_FALSE(glob_match("[abc].md", "d.md"));
}

TEST(Glob, AnyOfAList) {
  const std::vector<std::string> globs{"src/**", "*.md"};
  EXPECT_TRUE(glob_match_any(globs, "src/x/y.cc"));
  EXPECT_TRUE(glob_match_any(globs, "docs/readme.md"));
  EXPECT_FALSE(glob_match_any(globs, "tests/a_test.cc"));
  EXPECT_FALSE(glob_match_any({}, "anything"));
}

}  // namespace
}  // namespace phoenix::util
