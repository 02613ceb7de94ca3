// Internal: the few directory operations models/ needs (model directories, checkpoint rotation), on
// POSIX calls. libtorch.so exports its own copy of std::filesystem, and calls that bind to it can
// crash (remove_all jumps to null), so this library does not use std::filesystem at all. Files are
// written through padless/report/atomic_file_writer.h.
#ifndef PADLESS_MODELS_FILE_UTIL_H_
#define PADLESS_MODELS_FILE_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace padless::models::internal {

bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);
// mkdir -p.
absl::Status MakeDirectories(const std::string& path);
void RemoveFile(const std::string& path);
// Names (not paths) of the entries of `dir`, without "." and "..".
std::vector<std::string> ListDirectory(const std::string& dir);
std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_FILE_UTIL_H_
