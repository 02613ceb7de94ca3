// The one way padless writes a whole file: checkpoints, model files, reports (CSV, SVG, Markdown)
// and caches all go through AtomicFileWriter, so that a crash, a kill or a full disk never leaves a
// half-written file where a reader would trust it, and a file that was written survives a power
// loss. (The one file that grows while a run goes on, train_log.csv, is appended to through
// append_file_writer.h instead.) POSIX calls only (no std::filesystem: libtorch.so exports its own
// copy of it, and calls that bind to it can crash).
//
// Durability: Commit() fsyncs the file before the rename and its directory after it (the rename is
// a change of the directory, which a power loss would otherwise undo); base::MakeDirectories syncs
// the parent of each directory it creates.
//
// Error codes: UnavailableError when the temporary file cannot be created or renamed into place
// (a missing directory, no permission), or the directory cannot be opened to sync it;
// DataLossError when a write, an fsync (of the file or of its directory) or close fails (e.g. a
// full disk). Every message names the path, the temporary file (the directory, for its sync) and
// the errno text.
//
// Test hook for fault tests of checkpointing. Off unless the environment variable
// PADLESS_FAULT_INJECT is set; it is read here only, once per process. Comma-separated entries:
//   kill_during_checkpoint:N    SIGKILL this process once the first 4 KiB of its N-th checkpoint
//                               file (1-based, counted per process) are written, as a crash or
//                               an OOM killer would in the middle of a write;
//   enospc_during_checkpoint:N  fail the N-th checkpoint write at the same point with ENOSPC, as
//                               a full disk would (works where chmod cannot, e.g. as root).
// A checkpoint smaller than 4 KiB is written whole (every real one is larger).
// Unknown entries are reported on stderr and ignored.
#ifndef PADLESS_BASE_ATOMIC_FILE_WRITER_H_
#define PADLESS_BASE_ATOMIC_FILE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace padless::base {

// Writes a file atomically: the bytes go to `<path>.tmp.<pid>`, which is fsync'ed and renamed over
// `path` by Commit(), which then fsyncs the directory. On any failure before the rename, or when
// Commit() is never called, the temporary file is removed and `path` keeps its earlier content.
// When only the directory's fsync fails, `path` already holds the whole new content (Commit()
// returns the error: a power loss may still bring back the old one). `path` never holds part of a
// file. Errors name the path and the errno text.
class AtomicFileWriter {
 public:
  // `is_checkpoint` marks trainer checkpoints, which the fault injection above counts.
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Open(const std::string& path,
                                                                bool is_checkpoint = false);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends `n` bytes. The first error sticks: later calls do nothing and return it again.
  absl::Status Append(const void* data, size_t n);
  // Append as the byte sink torch::serialize::OutputArchive::save_to takes. It reports every byte
  // as written, so the archive writer carries on after an error; Commit() then returns the error.
  std::function<size_t(const void*, size_t)> Sink();
  absl::Status Commit();
  const absl::Status& status() const { return status_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  AtomicFileWriter(std::string path, std::string tmp, int fd, int64_t checkpoint_index);
  absl::Status Fail(absl::StatusCode code, const std::string& what, int error);

  std::string path_, tmp_;
  int fd_ = -1;
  int64_t checkpoint_index_ = 0;  // 1-based among this process's checkpoints; 0: not one
  int64_t written_ = 0;
  bool fault_fired_ = false;
  absl::Status status_;
};

// Whether `name` is a temporary file that AtomicFileWriter leaves behind when its process dies
// mid-write ("<name>.tmp.<pid>").
bool IsTemporaryName(const std::string& name);

// Writes a whole file through an AtomicFileWriter: `write` fills a binary stream whose bytes go to
// the writer. A stream that ends in a failed state (a failed write, or `write` setting badbit)
// gives DataLossError, and `path` is left as it was.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<void(std::ostream&)>& write);

// The same for content already in memory.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view content);

}  // namespace padless::base

#endif  // PADLESS_BASE_ATOMIC_FILE_WRITER_H_
