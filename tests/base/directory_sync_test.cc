// Fault tests of what makes base/'s writes survive a power loss (issue 43): AtomicFileWriter's
// Commit fsyncs the directory after the rename, AppendFileWriter's Close the directory of its file,
// MakeDirectories the parent of each directory it creates, and a failing directory fsync is an
// error. The fsync is replaced through the seam base::internal::SetDirectorySyncForTesting, which
// records each directory synced and what it held at that moment, and can fail the sync as a
// failing disk would.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/base/append_file_writer.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/directory.h"
#include "scratch_dir.h"

namespace padless::base {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// One directory fsync, as the seam saw it.
struct SyncedDirectory {
  std::string dir;
  std::vector<std::string> entries;  // the names in `dir` at that moment, sorted
  std::string watched_content;       // what the recorder's watched file held then
};

// While alive, every directory fsync goes through Sync: it is recorded, then failed with
// `fail_errno`, or done (fsync) when that is 0.
class DirectorySyncRecorder {
 public:
  explicit DirectorySyncRecorder(int fail_errno = 0, std::string watched_file = "")
      : fail_errno_(fail_errno), watched_file_(std::move(watched_file)) {
    current_ = this;
    internal::SetDirectorySyncForTesting(&Sync);
  }
  ~DirectorySyncRecorder() {
    internal::SetDirectorySyncForTesting(nullptr);
    current_ = nullptr;
  }
  DirectorySyncRecorder(const DirectorySyncRecorder&) = delete;
  DirectorySyncRecorder& operator=(const DirectorySyncRecorder&) = delete;

  const std::vector<SyncedDirectory>& synced() const { return synced_; }

 private:
  static int Sync(int fd, const char* dir) {
    DirectorySyncRecorder& self = *current_;
    SyncedDirectory seen{dir, ListDirectory(dir), ""};
    std::sort(seen.entries.begin(), seen.entries.end());
    if (!self.watched_file_.empty()) seen.watched_content = ReadAll(self.watched_file_);
    self.synced_.push_back(std::move(seen));
    if (self.fail_errno_ != 0) {
      errno = self.fail_errno_;
      return -1;
    }
    return ::fsync(fd);
  }

  static inline DirectorySyncRecorder* current_ = nullptr;
  const int fail_errno_;
  const std::string watched_file_;
  std::vector<SyncedDirectory> synced_;
};

std::unique_ptr<AtomicFileWriter> OpenWriter(const std::string& path) {
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> w = AtomicFileWriter::Open(path);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *std::move(w) : nullptr;
}

// ---------------------------------------------------------------------------------------------
// AtomicFileWriter::Commit

TEST(CommitDirectorySyncTest, TheDirectoryIsSyncedOnceTheRenameIsDone) {
  ScratchDir dir("commit_sync");
  const std::string path = dir.file("model.pt");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  DirectorySyncRecorder recorder(/*fail_errno=*/0, path);
  std::unique_ptr<AtomicFileWriter> w = OpenWriter(path);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->Append("new", 3).ok());
  EXPECT_THAT(recorder.synced(), IsEmpty());  // opening and writing change no name yet
  ASSERT_TRUE(w->Commit().ok());
  ASSERT_EQ(recorder.synced().size(), 1u);
  const SyncedDirectory& synced = recorder.synced()[0];
  EXPECT_EQ(synced.dir, dir.path());
  // At the sync the rename had happened: the name held the new bytes and the temporary was gone.
  EXPECT_EQ(synced.watched_content, "new");
  EXPECT_THAT(synced.entries, ElementsAre("model.pt"));
}

TEST(CommitDirectorySyncTest, AFailingSyncIsDataLossAndTheNameHoldsTheWholeNewFile) {
  ScratchDir dir("commit_sync_fails");
  const std::string path = dir.file("labels.json");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  const std::string content(1 << 20, 'n');  // many pages: a part of it would show
  DirectorySyncRecorder recorder(EIO);
  std::unique_ptr<AtomicFileWriter> w = OpenWriter(path);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->Append(content.data(), content.size()).ok());
  const absl::Status s = w->Commit();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(path + ": renamed into place, but " + dir.path() +
                        ": cannot fsync the directory: " + std::strerror(EIO)));
  EXPECT_EQ(recorder.synced().size(), 1u);
  // The error sticks, as every other error of the writer does.
  EXPECT_EQ(w->status(), s);
  EXPECT_EQ(w->Commit(), s);
  w.reset();
  // The name holds the old file or the new one, never a part: here the new one, as the rename
  // came before the sync. No temporary is left.
  EXPECT_EQ(ReadAll(path), content);
  EXPECT_THAT(dir.List(), ElementsAre("labels.json"));
  // WriteFileAtomically reports it too.
  const absl::Status again = WriteFileAtomically(path, "newer");
  EXPECT_EQ(again.code(), absl::StatusCode::kDataLoss) << again;
  EXPECT_EQ(ReadAll(path), "newer");
}

TEST(CommitDirectorySyncTest, AFileSystemThatCannotSyncDirectoriesIsNoError) {
  ScratchDir dir("commit_sync_einval");
  DirectorySyncRecorder recorder(EINVAL);
  EXPECT_TRUE(WriteFileAtomically(dir.file("report.csv"), "a,b\n").ok());
  EXPECT_EQ(recorder.synced().size(), 1u);
  EXPECT_EQ(ReadAll(dir.file("report.csv")), "a,b\n");
}

// ---------------------------------------------------------------------------------------------
// AppendFileWriter::Close

TEST(AppendCloseDirectorySyncTest, CloseSyncsTheDirectoryThatHoldsTheNewFile) {
  ScratchDir dir("append_close_sync");
  const std::string path = dir.file("train_log.csv");
  DirectorySyncRecorder recorder(/*fail_errno=*/0, path);
  absl::StatusOr<std::unique_ptr<AppendFileWriter>> w = AppendFileWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->AppendLine("step,loss").ok());
  EXPECT_THAT(recorder.synced(), IsEmpty());  // appending alone syncs nothing
  ASSERT_TRUE((*w)->Close().ok());
  ASSERT_EQ(recorder.synced().size(), 1u);
  EXPECT_EQ(recorder.synced()[0].dir, dir.path());
  EXPECT_THAT(recorder.synced()[0].entries, ElementsAre("train_log.csv"));
  EXPECT_EQ(recorder.synced()[0].watched_content, "step,loss\n");
}

TEST(AppendCloseDirectorySyncTest, AFailingSyncIsDataLossAndKeepsTheRows) {
  ScratchDir dir("append_close_sync_fails");
  const std::string path = dir.file("train_log.csv");
  DirectorySyncRecorder recorder(EIO);
  absl::StatusOr<std::unique_ptr<AppendFileWriter>> w = AppendFileWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->AppendLine("1,0.5").ok());
  const absl::Status s = (*w)->Close();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(path + ": closed, but " + dir.path() +
                        ": cannot fsync the directory: " + std::strerror(EIO)));
  EXPECT_EQ((*w)->AppendLine("2,0.4"), s);
  EXPECT_EQ(ReadAll(path), "1,0.5\n");
}

// ---------------------------------------------------------------------------------------------
// MakeDirectories

TEST(MakeDirectoriesSyncTest, TheParentOfEachNewDirectoryIsSyncedAfterItsMkdir) {
  ScratchDir dir("mkdirs");
  ASSERT_EQ(::mkdir(dir.file("a").c_str(), 0755), 0);  // there already: its parent is not synced
  DirectorySyncRecorder recorder;
  ASSERT_TRUE(MakeDirectories(dir.file("a/b/c")).ok());
  EXPECT_TRUE(IsDirectory(dir.file("a/b/c")));
  ASSERT_EQ(recorder.synced().size(), 2u);
  // Outermost first, each once the new directory is in it.
  EXPECT_EQ(recorder.synced()[0].dir, dir.file("a"));
  EXPECT_THAT(recorder.synced()[0].entries, ElementsAre("b"));
  EXPECT_EQ(recorder.synced()[1].dir, dir.file("a/b"));
  EXPECT_THAT(recorder.synced()[1].entries, ElementsAre("c"));
  // Nothing created, nothing synced.
  ASSERT_TRUE(MakeDirectories(dir.file("a/b/c")).ok());
  EXPECT_EQ(recorder.synced().size(), 2u);
}

TEST(MakeDirectoriesSyncTest, AFailingSyncIsReportedAndStopsThere) {
  ScratchDir dir("mkdirs_sync_fails");
  DirectorySyncRecorder recorder(EIO);
  const absl::Status s = MakeDirectories(dir.file("x/y"));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(dir.path() + ": cannot fsync the directory: " + std::strerror(EIO)));
  EXPECT_TRUE(IsDirectory(dir.file("x")));
  EXPECT_FALSE(IsDirectory(dir.file("x/y")));
  EXPECT_EQ(recorder.synced().size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// SyncDirectory and ParentDirectory

TEST(SyncDirectoryTest, SyncsADirectoryAndNamesWhatItCannotOpen) {
  ScratchDir dir("sync_real");
  EXPECT_TRUE(SyncDirectory(dir.path()).ok());  // the real fsync(2)
  const absl::Status missing = SyncDirectory(dir.file("missing"));
  EXPECT_EQ(missing.code(), absl::StatusCode::kUnavailable) << missing;
  EXPECT_THAT(std::string(missing.message()),
              HasSubstr(dir.file("missing") +
                        ": cannot open the directory to fsync it: " + std::strerror(ENOENT)));
  ASSERT_TRUE(WriteFileAtomically(dir.file("f"), "x").ok());
  const absl::Status file = SyncDirectory(dir.file("f"));
  EXPECT_EQ(file.code(), absl::StatusCode::kUnavailable) << file;
  EXPECT_THAT(std::string(file.message()), HasSubstr(std::strerror(ENOTDIR)));
}

TEST(ParentDirectoryTest, TheDirectoryPartOfAPath) {
  EXPECT_EQ(ParentDirectory("a/b/c"), "a/b");
  EXPECT_EQ(ParentDirectory("/srv//run/log.csv"), "/srv//run");
  EXPECT_EQ(ParentDirectory("model.pt"), ".");
  EXPECT_EQ(ParentDirectory("./model.pt"), ".");
  EXPECT_EQ(ParentDirectory("/model.pt"), "/");
  EXPECT_EQ(ParentDirectory("a//b/"), "a");
  EXPECT_EQ(ParentDirectory("/"), "/");
  EXPECT_EQ(ParentDirectory(""), ".");
}

}  // namespace
}  // namespace padless::base
