#include "padless/base/append_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "padless/base/directory.h"

namespace padless::base {

absl::StatusOr<std::unique_ptr<AppendFileWriter>> AppendFileWriter::Open(const std::string& path,
                                                                         IfExists if_exists) {
  const int truncate = if_exists == IfExists::kTruncate ? O_TRUNC : 0;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | truncate, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat(path, ": cannot open for appending: ", std::strerror(errno)));
  }
  return std::unique_ptr<AppendFileWriter>(new AppendFileWriter(path, fd));
}

AppendFileWriter::~AppendFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status AppendFileWriter::Fail(absl::StatusCode code, absl::string_view what, int error) {
  status_ = absl::Status(code, absl::StrCat(path_, ": ", what, ": ", std::strerror(error)));
  return status_;
}

absl::Status AppendFileWriter::Append(absl::string_view bytes) {
  if (!status_.ok()) return status_;
  if (fd_ < 0) return Fail(absl::StatusCode::kInternal, "write after close", EBADF);
  const char* p = bytes.data();
  size_t n = bytes.size();
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Fail(absl::StatusCode::kDataLoss, "write failed", errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status AppendFileWriter::AppendLine(absl::string_view line) {
  return Append(absl::StrCat(line, "\n"));
}

absl::Status AppendFileWriter::Close() {
  if (!status_.ok()) return status_;
  if (fd_ < 0) return Fail(absl::StatusCode::kInternal, "closed twice", EBADF);
  const int fd = std::exchange(fd_, -1);
  if (::fsync(fd) != 0 && errno != EINVAL) {
    const int error = errno;
    ::close(fd);
    return Fail(absl::StatusCode::kDataLoss, "fsync failed", error);
  }
  if (::close(fd) != 0) return Fail(absl::StatusCode::kDataLoss, "close failed", errno);
  // A file Open created is an entry of its directory, durable once the directory is synced.
  if (absl::Status synced = SyncDirectory(ParentDirectory(path_)); !synced.ok()) {
    status_ = absl::Status(synced.code(), absl::StrCat(path_, ": closed, but ", synced.message()));
    return status_;
  }
  return absl::OkStatus();
}

}  // namespace padless::base
