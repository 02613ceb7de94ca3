#include "padless/base/file_kind.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"

namespace padless::base {

FileKind KindOfPath(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return FileKind::kMissing;
  if (S_ISREG(st.st_mode)) return FileKind::kRegular;
  if (S_ISDIR(st.st_mode)) return FileKind::kDirectory;
  if (S_ISFIFO(st.st_mode)) return FileKind::kFifo;
  if (S_ISSOCK(st.st_mode)) return FileKind::kSocket;
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return FileKind::kDevice;
  return FileKind::kOther;
}

absl::string_view FileKindName(FileKind kind) {
  switch (kind) {
    case FileKind::kMissing:
      return "does not exist";
    case FileKind::kRegular:
      return "a regular file";
    case FileKind::kDirectory:
      return "a directory";
    case FileKind::kFifo:
      return "a FIFO (named pipe)";
    case FileKind::kSocket:
      return "a socket";
    case FileKind::kDevice:
      return "a device";
    case FileKind::kOther:
      break;
  }
  return "not a regular file";
}

absl::Status CheckRegularFile(const std::string& path, absl::string_view what) {
  const FileKind kind = KindOfPath(path);
  if (kind == FileKind::kRegular) return absl::OkStatus();
  if (kind == FileKind::kMissing) {
    return absl::NotFoundError(absl::StrCat(what, " ", path, " does not exist"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat(what, " ", path, " is ", FileKindName(kind), ", not a file"));
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return absl::StrCat(dir, "/", name);
}

}  // namespace padless::base
