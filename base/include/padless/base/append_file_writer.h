// Appending to a file that grows while a run goes on (train_log.csv), a row at a time: the
// counterpart of AtomicFileWriter (atomic_file_writer.h) for a file that is never replaced whole.
// POSIX calls only.
//
// What it promises on a crash: every Append hands its bytes to the kernel with write(2) before it
// returns (nothing waits in a buffer of the process), so a crash, a kill or an abort of the process
// loses at most the row being written, which may then be left cut short; a reader should drop a
// last line that does not end in '\n'. The bytes reach the disk when the kernel writes them back:
// this writer fsyncs only in Close(), so a power loss or an OS crash can lose the rows appended
// since the file was opened, until Close() returns. Files that must survive a power loss whole go
// through AtomicFileWriter.
//
// Error codes: UnavailableError when the file cannot be opened (a missing directory, no
// permission, a directory at the path) or its directory cannot be opened to sync it; DataLossError
// when a write, an fsync (of the file or of its directory) or close fails (e.g. a full disk). Every
// message names the path and the errno text.
#ifndef PADLESS_BASE_APPEND_FILE_WRITER_H_
#define PADLESS_BASE_APPEND_FILE_WRITER_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace padless::base {

class AppendFileWriter {
 public:
  // What Open does with a file that already exists at the path.
  enum class IfExists { kAppend, kTruncate };

  // Opens `path` for appending, creating it (mode 0644) when it does not exist. With kTruncate an
  // existing file is emptied first (O_TRUNC), as a new run starts its log over.
  static absl::StatusOr<std::unique_ptr<AppendFileWriter>> Open(
      const std::string& path, IfExists if_exists = IfExists::kAppend);
  // Closes the file without an fsync (see above) when Close() was not called.
  ~AppendFileWriter();
  AppendFileWriter(const AppendFileWriter&) = delete;
  AppendFileWriter& operator=(const AppendFileWriter&) = delete;

  // Writes `bytes` at the end of the file (O_APPEND) and returns once the kernel has them all. The
  // first error sticks: later calls write nothing and return it again, so that no row is written
  // after one that may be cut short.
  absl::Status Append(absl::string_view bytes);
  // Appends `line` and a '\n', in one write(2) where the kernel takes it whole.
  absl::Status AppendLine(absl::string_view line);
  // fsync(2)s and closes the file, then fsyncs its directory (which holds the file's name if Open
  // created it): the rows appended are on the disk when it returns OK. Appends after it fail
  // (Internal). A file that cannot be synced (a pipe or a terminal, fsync's EINVAL) is closed
  // without.
  absl::Status Close();

  const absl::Status& status() const { return status_; }
  const std::string& path() const { return path_; }

 private:
  AppendFileWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  absl::Status Fail(absl::StatusCode code, absl::string_view what, int error);

  std::string path_;
  int fd_ = -1;
  absl::Status status_;
};

}  // namespace padless::base

#endif  // PADLESS_BASE_APPEND_FILE_WRITER_H_
