// Internal: the few file-system operations models/ needs, on POSIX calls, and the atomic file
// writer behind checkpoints and model files (with its fault-injection test hook). libtorch.so
// exports its own copy of std::filesystem, and calls that bind to it can crash (remove_all jumps to
// null), so this library does not use std::filesystem at all.
#ifndef PADLESS_MODELS_FILE_UTIL_H_
#define PADLESS_MODELS_FILE_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace padless::models::internal {

bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);
// mkdir -p.
absl::Status MakeDirectories(const std::string& path);
void RemoveFile(const std::string& path);
// Names (not paths) of the entries of `dir`, without "." and "..".
std::vector<std::string> ListDirectory(const std::string& dir);
std::string JoinPath(const std::string& dir, const std::string& name);

// Test hook for fault tests of checkpointing. Off unless the environment variable
// PADLESS_FAULT_INJECT is set; it is read here only, once per process. Comma-separated entries:
//   kill_during_checkpoint:N    SIGKILL this process once the first 4 KiB of its N-th checkpoint
//                               file (1-based, counted per process) are written, as a crash or
//                               an OOM killer would in the middle of a write;
//   enospc_during_checkpoint:N  fail the N-th checkpoint write at the same point with ENOSPC, as
//                               a full disk would (works where chmod cannot, e.g. as root).
// A checkpoint smaller than 4 KiB is written whole (every real one is larger).
// Unknown entries are reported on stderr and ignored.
struct FaultInjection {
  int64_t kill_during_checkpoint = 0;
  int64_t enospc_during_checkpoint = 0;
};
const FaultInjection& Faults();

// Writes a file atomically: the bytes go to `<path>.tmp.<pid>`, which is fsync'ed and renamed over
// `path` by Commit(). On any failure, or when Commit() is never called, the temporary file is
// removed and `path` keeps its earlier content. Errors name the path and the errno text.
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
  absl::Status Fail(const std::string& what, int error);

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

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_FILE_UTIL_H_
