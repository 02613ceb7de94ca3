#include "padless/base/directory.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "padless/base/file_kind.h"

namespace padless::base {

bool IsDirectory(const std::string& path) {
  return KindOfPath(path) == FileKind::kDirectory;
}

bool IsRegularFile(const std::string& path) {
  return KindOfPath(path) == FileKind::kRegular;
}

absl::Status MakeDirectories(const std::string& path) {
  if (path.empty() || IsDirectory(path)) return absl::OkStatus();
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    absl::Status parent = MakeDirectories(path.substr(0, slash));
    if (!parent.ok()) return parent;
  }
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot create directory: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void RemoveFile(const std::string& path) { ::unlink(path.c_str()); }

std::vector<std::string> ListDirectory(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  return out;
}

}  // namespace padless::base
