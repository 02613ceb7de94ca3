#include "padless/base/path_names.h"

#include <unistd.h>

// The reference the functions must agree with. Safe here: padless_base_tests does not load
// libtorch.so, whose copy of std::filesystem is why base/ re-implements these.
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace padless::base {
namespace {

TEST(PathStemTest, DropsTheDirectoryAndTheLastExtension) {
  EXPECT_EQ(PathStem("data/imdb_train.tsv"), "imdb_train");
  EXPECT_EQ(PathStem("/abs/dir/a.tar.gz"), "a.tar");
  EXPECT_EQ(PathStem("plain"), "plain");
  EXPECT_EQ(PathStem("a."), "a");
  EXPECT_EQ(PathStem("dir.d/name"), "name");
}

TEST(PathStemTest, KeepsHiddenNamesAndDotsWhole) {
  EXPECT_EQ(PathStem(".bashrc"), ".bashrc");
  EXPECT_EQ(PathStem("dir/.hidden.txt"), ".hidden");
  EXPECT_EQ(PathStem("."), ".");
  EXPECT_EQ(PathStem("a/.."), "..");
}

TEST(PathStemTest, IsEmptyWithoutAFileName) {
  EXPECT_EQ(PathStem(""), "");
  EXPECT_EQ(PathStem("/"), "");
  EXPECT_EQ(PathStem("dir/"), "");
}

std::string CurrentDirectory() {
  char buf[4096];
  return ::getcwd(buf, sizeof(buf)) != nullptr ? std::string(buf) : std::string();
}

TEST(AbsolutePathTest, JoinsRelativePathsToTheCurrentDirectory) {
  const std::string cwd = CurrentDirectory();
  ASSERT_FALSE(cwd.empty());
  const std::string prefix = cwd == "/" ? "/" : cwd + "/";
  EXPECT_EQ(AbsolutePath("a/b.md"), prefix + "a/b.md");
  EXPECT_EQ(AbsolutePath("a/../b"), prefix + "a/../b");  // not normalized
  EXPECT_EQ(AbsolutePath("."), prefix + ".");
  EXPECT_EQ(AbsolutePath("/already/absolute"), "/already/absolute");
  EXPECT_EQ(AbsolutePath(""), "");
}

TEST(RelativePathTest, ClimbsAndDescendsByName) {
  EXPECT_EQ(RelativePath("/src/bench/report/e2e.csv", "/src/bench"), "report/e2e.csv");
  EXPECT_EQ(RelativePath("/src/report/e2e.csv", "/src/bench"), "../report/e2e.csv");
  EXPECT_EQ(RelativePath("/x/y", "/a/b"), "../../x/y");
  EXPECT_EQ(RelativePath("a/b", "a"), "b");
  EXPECT_EQ(RelativePath("/a", "/a/b/c"), "../..");
}

TEST(RelativePathTest, SamePlaceIsDot) {
  EXPECT_EQ(RelativePath("/a/b", "/a/b"), ".");
  EXPECT_EQ(RelativePath("/a/b/", "/a/b"), ".");
  EXPECT_EQ(RelativePath("/a//b", "/a/b"), ".");  // a run of slashes is one separator
  EXPECT_EQ(RelativePath("a", "a/."), ".");
}

TEST(RelativePathTest, IsEmptyWhenNoRelativePathExists) {
  EXPECT_EQ(RelativePath("/a/b", "a"), "");
  EXPECT_EQ(RelativePath("a/b", "/a"), "");
  EXPECT_EQ(RelativePath("a", "b/../.."), "");  // base climbs above where it started
}

TEST(RelativePathTest, DotsAreNamesNotResolved) {
  EXPECT_EQ(RelativePath("/a/c", "/a/b/.."), "c");  // ".." cancels "b" in the count only
  EXPECT_EQ(RelativePath("/a/./c", "/a"), "./c");
}

// Every function against std::filesystem on every pair of a set of awkward paths: the callers
// replaced std::filesystem with these and must see the same answers.
TEST(PathNamesTest, AgreeWithStdFilesystem) {
  const std::vector<std::string> paths = {
      "",          "/",        "//",      "a",          "a/",      "a//",     "/a",
      "//a",       "/a/b",     "/a/b/",   "a/b/c",      ".",       "..",      "./a",
      "../a",      "a/./b",    "a/../b",  "/a/b/c.csv", "/a/c",    "/a/b/..", "/a/b/../c",
      "/a/./b",    "x.tar.gz", ".bashrc", "..x",        "a.",      "dir/.",   "dir/..",
      "/a//b///c", "a/b/./",   "b",       "../..",      "/a/b/c/d"};
  for (const std::string& p : paths) {
    EXPECT_EQ(PathStem(p), std::filesystem::path(p).stem().string()) << "stem of '" << p << "'";
    std::error_code ec;
    EXPECT_EQ(AbsolutePath(p), std::filesystem::absolute(p, ec).string())
        << "absolute of '" << p << "'";
    for (const std::string& base : paths) {
      EXPECT_EQ(RelativePath(p, base), std::filesystem::path(p).lexically_relative(base).string())
          << "'" << p << "' relative to '" << base << "'";
    }
  }
}

}  // namespace
}  // namespace padless::base
