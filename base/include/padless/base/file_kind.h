// What a path names on disk (a regular file, a directory, a FIFO, ...), and the one check that a
// path is a regular file before it is opened. Opening a directory with std::ifstream succeeds on
// Linux and then fails deep inside a parser (std::length_error, std::ios_failure), and opening a
// FIFO blocks; so every reader of a whole file asks here first and returns a Status instead.
#ifndef PADLESS_BASE_FILE_KIND_H_
#define PADLESS_BASE_FILE_KIND_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace padless::base {

enum class FileKind { kMissing, kRegular, kDirectory, kFifo, kSocket, kDevice, kOther };

// stat(2) of `path`, following symbolic links (a dangling link is kMissing).
FileKind KindOfPath(const std::string& path);

// For messages: "does not exist", "a regular file", "a directory", "a FIFO (named pipe)", ...
absl::string_view FileKindName(FileKind kind);

// OK when `path` names a regular file. Otherwise NotFound "<what> <path> does not exist" or
// FailedPrecondition "<what> <path> is a directory, not a file" (and likewise for FIFOs, sockets
// and devices). `what` says what the file is for, e.g. "data file".
absl::Status CheckRegularFile(const std::string& path, absl::string_view what);

// `dir` + "/" + `name`, without doubling a trailing slash of `dir`.
std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace padless::base

#endif  // PADLESS_BASE_FILE_KIND_H_
