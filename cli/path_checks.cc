#include "path_checks.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flag_spelling.h"
#include "padless/base/file_kind.h"
#include "padless/tokenize/utf8.h"

namespace padless::cli {
namespace {

using base::FileKind;
using base::JoinPath;

constexpr size_t kSniffBytes = 64 * 1024;

// "--data /tmp/x: <what>".
std::string Prefix(const PathFlag& f) { return absl::StrCat(FlagAsWritten(f.flag), " ", f.path); }

absl::Status Error(absl::StatusCode code, const PathFlag& f, absl::string_view what) {
  return absl::Status(code, absl::StrCat(Prefix(f), ": ", what));
}

// The directory that holds `path` ("." for a bare name, "/" for a top-level entry).
std::string ParentOf(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The first `kSniffBytes` of a regular file; PermissionDenied naming the flag when unreadable.
absl::StatusOr<std::string> ReadHead(const PathFlag& f) {
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return Error(absl::StatusCode::kPermissionDenied, f,
                 absl::StrCat("cannot be read: ", std::strerror(errno)));
  }
  std::string head(kSniffBytes, '\0');
  const ssize_t got = ::read(fd, head.data(), head.size());
  const int read_errno = errno;
  ::close(fd);
  if (got < 0) {
    return Error(absl::StatusCode::kPermissionDenied, f,
                 absl::StrCat("cannot be read: ", std::strerror(read_errno)));
  }
  head.resize(static_cast<size_t>(got));
  return head;
}

// Why `head` is not text, or empty when it is.
std::string WhyBinary(std::string head) {
  if (const size_t nul = head.find('\0'); nul != std::string::npos) {
    return absl::StrCat("looks binary (a NUL byte at offset ", nul, "), expected a text file");
  }
  const int64_t invalid = tokenize::SanitizeUtf8(&head);
  if (invalid * 8 > static_cast<int64_t>(head.size())) {
    return absl::StrCat("looks binary (", invalid,
                        " invalid UTF-8 sequences in its first bytes), expected a text file");
  }
  return "";
}

absl::Status CheckInputFile(const PathFlag& f) {
  absl::StatusOr<std::string> head = ReadHead(f);
  if (!head.ok()) return head.status();
  if (head->empty()) {
    return Error(absl::StatusCode::kInvalidArgument, f,
                 f.use == PathUse::kInputTextFile ? "is empty (no examples)" : "is empty");
  }
  if (f.use != PathUse::kInputTextFile) return absl::OkStatus();
  if (std::string why = WhyBinary(*std::move(head)); !why.empty()) {
    return Error(absl::StatusCode::kInvalidArgument, f, why);
  }
  return absl::OkStatus();
}

absl::Status CheckInputDirectory(const PathFlag& f) {
  DIR* dir = ::opendir(f.path.c_str());
  if (dir == nullptr) {
    return Error(absl::StatusCode::kPermissionDenied, f,
                 absl::StrCat("cannot be read: ", std::strerror(errno)));
  }
  ::closedir(dir);
  for (const std::string& member : f.required_members) {
    if (base::KindOfPath(JoinPath(f.path, member)) != FileKind::kRegular) {
      return Error(absl::StatusCode::kNotFound, f, absl::StrCat("has no ", member));
    }
  }
  if (f.any_member.empty()) return absl::OkStatus();
  for (const std::string& member : f.any_member) {
    if (base::KindOfPath(JoinPath(f.path, member)) == FileKind::kRegular) {
      return absl::OkStatus();
    }
  }
  return Error(absl::StatusCode::kNotFound, f,
               absl::StrCat("has none of ", absl::StrJoin(f.any_member, ", ")));
}

absl::Status CheckInput(const PathFlag& f) {
  const FileKind kind = base::KindOfPath(f.path);
  const bool want_dir =
      f.use == PathUse::kInputDirectory || f.use == PathUse::kInputFileOrDirectory;
  const bool want_file = f.use != PathUse::kInputDirectory;
  if (kind == FileKind::kMissing) return Error(absl::StatusCode::kNotFound, f, "does not exist");
  if (kind == FileKind::kDirectory && want_dir) return CheckInputDirectory(f);
  if (kind == FileKind::kRegular && want_file) return CheckInputFile(f);
  if (kind == FileKind::kRegular) {
    return Error(absl::StatusCode::kFailedPrecondition, f, "is a file, expected a directory");
  }
  return Error(absl::StatusCode::kFailedPrecondition, f,
               absl::StrCat("is ", base::FileKindName(kind), ", expected ",
                            want_dir ? "a file or a directory" : "a regular file"));
}

// OK when `dir` is an existing directory this process may create files in.
absl::Status CheckWritableDirectory(const PathFlag& f, const std::string& dir) {
  const FileKind kind = base::KindOfPath(dir);
  if (kind == FileKind::kMissing) {
    return Error(absl::StatusCode::kNotFound, f,
                 absl::StrCat("directory ", dir, " does not exist"));
  }
  if (kind != FileKind::kDirectory) {
    return Error(absl::StatusCode::kFailedPrecondition, f,
                 absl::StrCat(dir, " is ", base::FileKindName(kind), ", not a directory"));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Error(absl::StatusCode::kPermissionDenied, f,
                 absl::StrCat("directory ", dir, " is not writable: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputFile(const PathFlag& f) {
  const FileKind kind = base::KindOfPath(f.path);
  if (kind != FileKind::kMissing && kind != FileKind::kRegular) {
    return Error(absl::StatusCode::kFailedPrecondition, f,
                 absl::StrCat("is ", base::FileKindName(kind), ", expected a file to write"));
  }
  return CheckWritableDirectory(f, ParentOf(f.path));
}

absl::Status CheckOutputDirectory(const PathFlag& f) {
  const FileKind kind = base::KindOfPath(f.path);
  if (kind == FileKind::kDirectory) return CheckWritableDirectory(f, f.path);
  if (kind != FileKind::kMissing) {
    return Error(absl::StatusCode::kFailedPrecondition, f,
                 absl::StrCat("is ", base::FileKindName(kind), ", expected a directory"));
  }
  // It will be created with its missing parents: the nearest existing ancestor must allow that.
  std::string ancestor = ParentOf(f.path);
  while (base::KindOfPath(ancestor) == FileKind::kMissing && ancestor != "." && ancestor != "/") {
    ancestor = ParentOf(ancestor);
  }
  return CheckWritableDirectory(f, ancestor);
}

}  // namespace

absl::Status CheckPathFlag(const PathFlag& flag) {
  if (flag.path.empty()) return absl::OkStatus();
  switch (flag.use) {
    case PathUse::kOutputFile:
      return CheckOutputFile(flag);
    case PathUse::kOutputDirectory:
      return CheckOutputDirectory(flag);
    case PathUse::kInputTextFile:
    case PathUse::kInputFile:
    case PathUse::kInputDirectory:
    case PathUse::kInputFileOrDirectory:
      break;
  }
  return CheckInput(flag);
}

absl::Status CheckPathFlags(const std::vector<PathFlag>& flags) {
  for (const PathFlag& f : flags) {
    if (absl::Status s = CheckPathFlag(f); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace padless::cli
