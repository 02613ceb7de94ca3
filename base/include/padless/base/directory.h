// The few directory operations the model files and training need (model directories, checkpoint
// rotation), on POSIX calls. libtorch.so exports its own copy of std::filesystem, and calls that bind to it can
// crash (remove_all jumps to null), so this library does not use std::filesystem at all. Files are
// written through padless/base/atomic_file_writer.h.
#ifndef PADLESS_BASE_DIRECTORY_H_
#define PADLESS_BASE_DIRECTORY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace padless::base {

bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);
// mkdir -p.
absl::Status MakeDirectories(const std::string& path);
void RemoveFile(const std::string& path);
// Names (not paths) of the entries of `dir`, without "." and "..".
std::vector<std::string> ListDirectory(const std::string& dir);

}  // namespace padless::base

#endif  // PADLESS_BASE_DIRECTORY_H_
