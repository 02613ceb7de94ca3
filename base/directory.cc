#include "padless/base/directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "padless/base/file_kind.h"

namespace padless::base {
namespace {

std::atomic<internal::DirectorySyncFunction> directory_sync_for_testing{nullptr};

}  // namespace

bool IsDirectory(const std::string& path) { return KindOfPath(path) == FileKind::kDirectory; }

bool IsRegularFile(const std::string& path) { return KindOfPath(path) == FileKind::kRegular; }

absl::Status MakeDirectories(const std::string& path) {
  if (path.empty() || IsDirectory(path)) return absl::OkStatus();
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    absl::Status parent = MakeDirectories(path.substr(0, slash));
    if (!parent.ok()) return parent;
  }
  if (::mkdir(path.c_str(), 0755) != 0) {
    // Made meanwhile by another thread or process: syncing it is its creator's part.
    if (errno == EEXIST) return absl::OkStatus();
    return absl::InternalError(
        absl::StrCat(path, ": cannot create directory: ", std::strerror(errno)));
  }
  // The new entry is a change of the parent, durable once the parent is synced.
  return SyncDirectory(ParentDirectory(path));
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

std::string ParentDirectory(const std::string& path) {
  const size_t name_end = path.find_last_not_of('/');
  if (name_end == std::string::npos) return path.empty() ? "." : "/";
  const size_t slash = path.find_last_of('/', name_end);
  if (slash == std::string::npos) return ".";
  const size_t parent_end = path.find_last_not_of('/', slash);
  if (parent_end == std::string::npos) return "/";
  return path.substr(0, parent_end + 1);
}

absl::Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat(dir, ": cannot open the directory to fsync it: ", std::strerror(errno)));
  }
  const internal::DirectorySyncFunction sync = directory_sync_for_testing.load();
  const int synced = sync != nullptr ? sync(fd, dir.c_str()) : ::fsync(fd);
  const int error = errno;
  ::close(fd);  // opened read-only: closing it cannot lose anything
  if (synced != 0 && error != EINVAL) {
    return absl::DataLossError(
        absl::StrCat(dir, ": cannot fsync the directory: ", std::strerror(error)));
  }
  return absl::OkStatus();
}

namespace internal {

void SetDirectorySyncForTesting(DirectorySyncFunction sync) {
  directory_sync_for_testing.store(sync);
}

}  // namespace internal
}  // namespace padless::base
