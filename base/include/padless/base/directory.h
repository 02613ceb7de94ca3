// The few directory operations the model files and training need (model directories, checkpoint
// rotation), on POSIX calls. libtorch.so exports its own copy of std::filesystem, and calls that
// bind to it can crash (remove_all jumps to null), so this library does not use std::filesystem at
// all. Files are written through padless/base/atomic_file_writer.h (whole) and
// append_file_writer.h (a row at a time).
#ifndef PADLESS_BASE_DIRECTORY_H_
#define PADLESS_BASE_DIRECTORY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace padless::base {

bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);
// mkdir -p. Each directory it creates is made durable: the parent it was created in is fsync'ed
// (SyncDirectory), so that a power loss cannot undo the mkdir under files written into it later.
// Internal when a directory cannot be created; SyncDirectory's errors when a parent cannot be
// synced.
absl::Status MakeDirectories(const std::string& path);
void RemoveFile(const std::string& path);
// Names (not paths) of the entries of `dir`, without "." and "..".
std::vector<std::string> ListDirectory(const std::string& dir);

// The directory that holds `path`: "a/b/c" -> "a/b", "c" -> ".", "/c" -> "/" (trailing and
// repeated slashes ignored: "a//b/" -> "a").
std::string ParentDirectory(const std::string& path);

// fsync(2) of the directory `dir`. A rename, a new file or a mkdir changes the directory that holds
// the name, not the file, and survives a power loss only once that directory is synced. Unavailable
// when `dir` cannot be opened as a directory, DataLoss when the fsync fails; both name the
// directory and the errno text. A file system that cannot sync directories at all (fsync's EINVAL)
// is OK: it offers nothing more to wait for.
absl::Status SyncDirectory(const std::string& dir);

namespace internal {

// Test seam for the fault tests of durability (tests/base/directory_sync_test.cc): while set,
// SyncDirectory calls `sync` instead of fsync(2), with the open directory and its path; it returns
// 0, or -1 with errno set, as fsync does. nullptr restores fsync. Process-wide: set it only while
// no other thread writes files.
using DirectorySyncFunction = int (*)(int fd, const char* dir);
void SetDirectorySyncForTesting(DirectorySyncFunction sync);

}  // namespace internal
}  // namespace padless::base

#endif  // PADLESS_BASE_DIRECTORY_H_
