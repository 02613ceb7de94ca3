// The appending writer of train_log.csv (padless/base/append_file_writer.h): rows in order, each
// in the file when Append returns (so a killed process loses none), reopening appends, and clear
// errors for a missing directory, a directory, a full disk and a write after Close.
#include "padless/base/append_file_writer.h"

#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"
#include "scratch_dir.h"

namespace padless::base {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::unique_ptr<AppendFileWriter> OpenForAppend(
    const std::string& path,
    AppendFileWriter::IfExists if_exists = AppendFileWriter::IfExists::kAppend) {
  absl::StatusOr<std::unique_ptr<AppendFileWriter>> w = AppendFileWriter::Open(path, if_exists);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *std::move(w) : nullptr;
}

TEST(AppendFileWriterTest, CreatesTheFileAndEachRowIsInItWhenAppendReturns) {
  ScratchDir dir("append_rows");
  const std::string path = dir.file("log.csv");
  std::unique_ptr<AppendFileWriter> w = OpenForAppend(path);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->path(), path);
  EXPECT_TRUE(IsRegularFile(path));
  EXPECT_EQ(ReadAll(path), "");
  // A reader sees every row while the writer is still open: nothing waits in a buffer.
  ASSERT_TRUE(w->Append("step,loss\n").ok());
  EXPECT_EQ(ReadAll(path), "step,loss\n");
  ASSERT_TRUE(w->AppendLine("1,0.5").ok());
  EXPECT_EQ(ReadAll(path), "step,loss\n1,0.5\n");
  ASSERT_TRUE(w->AppendLine("").ok());
  ASSERT_TRUE(w->Append("2,").ok());
  EXPECT_EQ(ReadAll(path), "step,loss\n1,0.5\n\n2,");
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(ReadAll(path), "step,loss\n1,0.5\n\n2,");
  EXPECT_THAT(dir.List(), ElementsAre("log.csv"));
}

TEST(AppendFileWriterTest, ReopeningAppendsAndTruncateStartsOver) {
  ScratchDir dir("append_reopen");
  const std::string path = dir.file("log.csv");
  {
    std::unique_ptr<AppendFileWriter> w = OpenForAppend(path);
    ASSERT_NE(w, nullptr);
    ASSERT_TRUE(w->AppendLine("1").ok());
    ASSERT_TRUE(w->Close().ok());
  }
  {
    std::unique_ptr<AppendFileWriter> w = OpenForAppend(path);
    ASSERT_NE(w, nullptr);
    ASSERT_TRUE(w->AppendLine("2").ok());
    // Dropped without Close: the rows are kept all the same.
  }
  EXPECT_EQ(ReadAll(path), "1\n2\n");
  std::unique_ptr<AppendFileWriter> w = OpenForAppend(path, AppendFileWriter::IfExists::kTruncate);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(ReadAll(path), "");
  ASSERT_TRUE(w->AppendLine("header").ok());
  EXPECT_EQ(ReadAll(path), "header\n");
}

// What the header promises on a crash: a process killed right after its appends loses no row.
TEST(AppendFileWriterDeathTest, AKilledProcessLosesNoRowItAppended) {
  ScratchDir dir("append_kill");
  const std::string path = dir.file("train_log.csv");
  EXPECT_EXIT(
      {
        std::unique_ptr<AppendFileWriter> w = OpenForAppend(path);
        for (int step = 1; step <= 100; ++step) {
          if (!w->AppendLine(absl::StrCat(step, ",0.25")).ok()) std::_Exit(1);
        }
        std::raise(SIGKILL);  // no Close, no destructor, no exit handlers
        std::_Exit(0);        // not reached
      },
      ::testing::KilledBySignal(SIGKILL), "");
  std::string expected;
  for (int step = 1; step <= 100; ++step) absl::StrAppend(&expected, step, ",0.25\n");
  EXPECT_EQ(ReadAll(path), expected);
}

TEST(AppendFileWriterTest, MissingDirectoryIsUnavailableAndCreatesNothing) {
  ScratchDir dir("append_no_dir");
  const std::string path = dir.file("missing/log.csv");
  absl::StatusOr<std::unique_ptr<AppendFileWriter>> w = AppendFileWriter::Open(path);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(w.status().message(),
            absl::StrCat(path, ": cannot open for appending: ", std::strerror(ENOENT)));
  EXPECT_THAT(dir.List(), IsEmpty());
}

TEST(AppendFileWriterTest, DirectoryPathIsUnavailable) {
  ScratchDir dir("append_dir_target");
  ASSERT_EQ(::mkdir(dir.file("sub").c_str(), 0755), 0);
  for (AppendFileWriter::IfExists if_exists :
       {AppendFileWriter::IfExists::kAppend, AppendFileWriter::IfExists::kTruncate}) {
    absl::StatusOr<std::unique_ptr<AppendFileWriter>> w =
        AppendFileWriter::Open(dir.file("sub"), if_exists);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(
        std::string(w.status().message()),
        HasSubstr(dir.file("sub") + ": cannot open for appending: " + std::strerror(EISDIR)));
  }
  EXPECT_TRUE(IsDirectory(dir.file("sub")));
  EXPECT_THAT(dir.List(), ElementsAre("sub"));
}

// /dev/full fails every write with ENOSPC, for root too.
TEST(AppendFileWriterTest, FullDiskIsDataLossAndTheErrorSticks) {
  if (KindOfPath("/dev/full") != FileKind::kDevice) GTEST_SKIP() << "no /dev/full";
  std::unique_ptr<AppendFileWriter> w = OpenForAppend("/dev/full");
  ASSERT_NE(w, nullptr);
  const absl::Status first = w->AppendLine("1,0.5");
  EXPECT_EQ(first.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(first.message(), absl::StrCat("/dev/full: write failed: ", std::strerror(ENOSPC)));
  // No row follows one that may be cut short.
  EXPECT_EQ(w->AppendLine("2,0.4"), first);
  EXPECT_EQ(w->status(), first);
  EXPECT_EQ(w->Close(), first);
}

TEST(AppendFileWriterTest, AppendAfterCloseIsAnError) {
  ScratchDir dir("append_closed");
  std::unique_ptr<AppendFileWriter> w = OpenForAppend(dir.file("log.csv"));
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->AppendLine("row").ok());
  ASSERT_TRUE(w->Close().ok());
  const absl::Status after = w->AppendLine("late");
  EXPECT_EQ(after.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(after.message()), HasSubstr(dir.file("log.csv") + ": write after close"));
  EXPECT_EQ(w->Close(), after);
  EXPECT_EQ(ReadAll(dir.file("log.csv")), "row\n");
}

// A log sent to a device or a pipe cannot be fsync'ed (EINVAL): Close() closes it all the same.
TEST(AppendFileWriterTest, CloseOfAFileThatCannotBeSyncedSucceeds) {
  if (KindOfPath("/dev/null") != FileKind::kDevice) GTEST_SKIP() << "no /dev/null";
  std::unique_ptr<AppendFileWriter> w = OpenForAppend("/dev/null");
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->AppendLine("row").ok());
  EXPECT_TRUE(w->Close().ok());
}

}  // namespace
}  // namespace padless::base
