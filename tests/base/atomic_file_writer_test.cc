#include "padless/base/atomic_file_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "padless/base/read_file.h"
#include "scratch_dir.h"

namespace padless::base {
namespace {

std::unique_ptr<AtomicFileWriter> OpenOrDie(const std::string& path, bool is_checkpoint = false) {
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> w = AtomicFileWriter::Open(path, is_checkpoint);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *std::move(w) : nullptr;
}

// ---------------------------------------------------------------------------------------------
// WriteFileAtomically (moved here from text_output_test.cc)

TEST(WriteFileAtomicallyTest, WritesContentAndLeavesNoTemporary) {
  const std::string path = TempPath("write.csv");
  std::remove(path.c_str());
  const std::string content = std::string("x,y\n1,2\n") + std::string(1, '\0') + "tail";
  ASSERT_TRUE(WriteFileAtomically(path, content).ok());
  EXPECT_EQ(ReadAll(path), content);
  EXPECT_FALSE(Exists(path + ".tmp"));
  EXPECT_FALSE(Exists(absl::StrCat(path, ".tmp.", getpid())));
  // Overwrites an existing file completely (shorter content: no stale tail).
  ASSERT_TRUE(WriteFileAtomically(path, [](std::ostream& out) { out << "new"; }).ok());
  EXPECT_EQ(ReadAll(path), "new");
  std::remove(path.c_str());
}

TEST(WriteFileAtomicallyTest, MissingDirectoryIsUnavailableAndTouchesNothing) {
  const std::string path = TempPath("no_such_dir/out.svg");
  const absl::Status s = WriteFileAtomically(path, "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("no_such_dir/out.svg.tmp"), std::string::npos) << s;
  EXPECT_FALSE(Exists(path));
}

TEST(WriteFileAtomicallyTest, FailedWriteIsDataLossAndKeepsTheOldFile) {
  const std::string path = TempPath("keep.txt");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  const absl::Status s = WriteFileAtomically(path, [](std::ostream& out) {
    out << "partial";
    out.setstate(std::ios::badbit);  // As a full disk would.
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadAll(path), "old");
  EXPECT_FALSE(Exists(path + ".tmp"));
  EXPECT_FALSE(Exists(absl::StrCat(path, ".tmp.", getpid())));
  std::remove(path.c_str());
}

TEST(WriteFileAtomicallyTest, StreamOfSmallAndLargeWritesArrivesInOrder) {
  ScratchDir dir("stream");
  std::string expected;
  for (int i = 0; i < 3000; ++i) expected += absl::StrCat(i, ",");  // many small pieces
  const std::string large(300 << 10, 'z');                          // past the 64 KiB buffer
  ASSERT_TRUE(WriteFileAtomically(dir.file("cache.bin"), [&](std::ostream& out) {
                for (int i = 0; i < 3000; ++i) out << i << ',';
                out.write(large.data(), static_cast<std::streamsize>(large.size()));
                out.put('!');
              }).ok());
  EXPECT_EQ(ReadAll(dir.file("cache.bin")), expected + large + "!");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"cache.bin"});
}

TEST(WriteFileAtomicallyTest, DirectoryPathIsAClearErrorNamingThePath) {
  ScratchDir dir("dir_target");
  ASSERT_EQ(::mkdir(dir.file("sub").c_str(), 0755), 0);
  const absl::Status s = WriteFileAtomically(dir.file("sub"), "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find(dir.file("sub") + ": cannot rename into place"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find(std::strerror(EISDIR)), std::string::npos) << s;
  EXPECT_EQ(dir.List(), std::vector<std::string>{"sub"});  // no temporary left behind
  ::rmdir(dir.file("sub").c_str());
}

// ---------------------------------------------------------------------------------------------
// AtomicFileWriter

TEST(AtomicFileWriterTest, CommitReplacesTheContentAndRemovesTheTemporary) {
  ScratchDir dir("commit");
  const std::string path = dir.file("model.pt");
  ASSERT_TRUE(WriteFileAtomically(path, "old content").ok());
  std::unique_ptr<AtomicFileWriter> w = OpenOrDie(path);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->temp_path(), absl::StrCat(path, ".tmp.", getpid()));
  ASSERT_TRUE(w->Append("new", 3).ok());
  ASSERT_TRUE(w->Append(" bytes", 6).ok());
  // Until Commit the reader sees the old file; the bytes are in the temporary.
  EXPECT_EQ(ReadAll(path), "old content");
  EXPECT_TRUE(Exists(w->temp_path()));
  ASSERT_TRUE(w->Commit().ok());
  EXPECT_EQ(ReadAll(path), "new bytes");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"model.pt"});
}

TEST(AtomicFileWriterTest, SinkAppendsAndReportsEveryByte) {
  ScratchDir dir("sink");
  std::unique_ptr<AtomicFileWriter> w = OpenOrDie(dir.file("a.pt"));
  ASSERT_NE(w, nullptr);
  const std::function<size_t(const void*, size_t)> sink = w->Sink();
  EXPECT_EQ(sink("abc", 3), 3u);
  EXPECT_EQ(sink("de", 2), 2u);
  ASSERT_TRUE(w->Commit().ok());
  EXPECT_EQ(ReadAll(dir.file("a.pt")), "abcde");
}

TEST(AtomicFileWriterTest, WithoutCommitTheOldFileStaysAndNoTemporaryRemains) {
  ScratchDir dir("abandon");
  const std::string path = dir.file("labels.json");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  {
    std::unique_ptr<AtomicFileWriter> w = OpenOrDie(path);
    ASSERT_NE(w, nullptr);
    ASSERT_TRUE(w->Append("half a file", 11).ok());
  }
  EXPECT_EQ(ReadAll(path), "old");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"labels.json"});
}

TEST(AtomicFileWriterTest, TheFirstErrorSticks) {
  ScratchDir dir("sticks");
  std::unique_ptr<AtomicFileWriter> w = OpenOrDie(dir.file("f"));
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->Commit().ok());
  const absl::Status first = w->Append("x", 1);
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.message().find(dir.file("f") + ": write after commit"), std::string::npos)
      << first;
  // A second Commit reports the first error, not "committed twice"; Sink carries on silently.
  EXPECT_EQ(w->Commit(), first);
  EXPECT_EQ(w->Sink()("y", 1), 1u);
  EXPECT_EQ(w->Append("z", 1), first);
  EXPECT_EQ(w->status(), first);
  EXPECT_EQ(ReadAll(dir.file("f")), "");
}

TEST(AtomicFileWriterTest, MissingParentDirectoryIsAClearError) {
  ScratchDir dir("no_parent");
  const std::string path = dir.file("missing/step-00000002.pt");
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> w = AtomicFileWriter::Open(path);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(
      w.status().message().find(path + ": cannot create the temporary file " + path + ".tmp."),
      std::string::npos)
      << w.status();
  EXPECT_NE(w.status().message().find(std::strerror(ENOENT)), std::string::npos) << w.status();
  EXPECT_TRUE(dir.List().empty());
}

TEST(AtomicFileWriterTest, IsTemporaryNameMatchesOnlyAWritersLeftovers) {
  EXPECT_TRUE(IsTemporaryName("step-00000004.pt.tmp.12345"));
  EXPECT_TRUE(IsTemporaryName("a.tmp.1"));
  EXPECT_FALSE(IsTemporaryName("step-00000004.pt"));
  EXPECT_FALSE(IsTemporaryName("out.svg.tmp"));  // the old report writer's fixed name
  EXPECT_FALSE(IsTemporaryName("a.tmp.pid"));    // not a pid
  EXPECT_FALSE(IsTemporaryName(".tmp.123"));     // no file name before it
}

// ---------------------------------------------------------------------------------------------
// The PADLESS_FAULT_INJECT hook. It reads the environment once per process and counts the
// checkpoints a process opens, so each case runs in a forked child (a death test) that sets the
// variable first. This relies on no test opening a checkpoint writer in the parent process.

// Returns "" when every check holds, else what went wrong (the child prints it).
std::string WriteCheckpointsWithTheSecondHittingAFullDisk(const ScratchDir& dir) {
  ::setenv("PADLESS_FAULT_INJECT", "enospc_during_checkpoint:2", 1);
  const std::string block(8192, 'c');
  std::unique_ptr<AtomicFileWriter> first = OpenOrDie(dir.file("step-1.pt"), true);
  if (!first->Append(block.data(), block.size()).ok() || !first->Commit().ok()) {
    return "the first checkpoint failed";
  }
  // Files that are not checkpoints are neither counted nor failed.
  if (!WriteFileAtomically(dir.file("log.csv"), block).ok()) return "a plain file failed";
  std::unique_ptr<AtomicFileWriter> second = OpenOrDie(dir.file("step-1.pt"), true);
  const absl::Status s = second->Append(block.data(), block.size());
  if (s.code() != absl::StatusCode::kDataLoss) return absl::StrCat("no DataLoss: ", s.ToString());
  if (s.message().find(dir.file("step-1.pt") + ": write failed") == std::string::npos ||
      s.message().find(std::strerror(ENOSPC)) == std::string::npos) {
    return absl::StrCat("unclear message: ", s.ToString());
  }
  if (second->Append("x", 1) != s || second->Commit() != s) return "the error did not stick";
  second.reset();
  if (ReadAll(dir.file("step-1.pt")) != block) return "the earlier file changed";
  if (dir.List().size() != 2) return "a temporary file stayed behind";
  return "";
}

TEST(FaultInjectionDeathTest, EnospcFailsTheNthCheckpointAndKeepsTheEarlierFile) {
  ScratchDir dir("enospc");
  EXPECT_EXIT(
      {
        const std::string error = WriteCheckpointsWithTheSecondHittingAFullDisk(dir);
        std::fprintf(stderr, "%s", error.c_str());
        std::_Exit(error.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(FaultInjectionDeathTest, KillLeavesAPartialTemporaryAndTheOldFile) {
  ScratchDir dir("kill");
  const std::string path = dir.file("step-2.pt");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  EXPECT_EXIT(
      {
        ::setenv("PADLESS_FAULT_INJECT", "kill_during_checkpoint:1", 1);
        std::unique_ptr<AtomicFileWriter> w = OpenOrDie(path, /*is_checkpoint=*/true);
        const std::string block(8192, 'k');
        w->Append(block.data(), block.size()).IgnoreError();
        std::_Exit(0);  // not reached
      },
      ::testing::KilledBySignal(SIGKILL), "");
  EXPECT_EQ(ReadAll(path), "old");
  std::vector<std::string> temporaries;
  for (const std::string& name : dir.List()) {
    if (IsTemporaryName(name)) temporaries.push_back(name);
  }
  ASSERT_EQ(temporaries.size(), 1u);
  EXPECT_EQ(temporaries[0].rfind("step-2.pt.tmp.", 0), 0u) << temporaries[0];
  EXPECT_GE(ReadAll(dir.file(temporaries[0])).size(), 4096u);
}

// ---------------------------------------------------------------------------------------------
// ReadFile

TEST(ReadFileTest, ReadsEveryByte) {
  ScratchDir dir("read");
  const std::string content = std::string("a\0b\n", 4) + std::string(100000, 'r');
  ASSERT_TRUE(WriteFileAtomically(dir.file("f"), content).ok());
  absl::StatusOr<std::string> read = ReadFile(dir.file("f"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, content);
}

TEST(ReadFileTest, MissingFileIsNotFoundNamingThePath) {
  const std::string path = TempPath("no_such_file.json");
  absl::StatusOr<std::string> read = ReadFile(path);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(read.status().message(), path + ": cannot open");
}

}  // namespace
}  // namespace padless::base
