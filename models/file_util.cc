#include "file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace padless::models::internal {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
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

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

const FaultInjection& Faults() {
  static const FaultInjection faults = [] {
    FaultInjection f;
    const char* spec = std::getenv("PADLESS_FAULT_INJECT");
    if (spec == nullptr) return f;
    for (absl::string_view entry : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits(':', 1));
      int64_t n = 0;
      const bool number = absl::SimpleAtoi(kv.second, &n) && n > 0;
      if (number && kv.first == "kill_during_checkpoint") {
        f.kill_during_checkpoint = n;
      } else if (number && kv.first == "enospc_during_checkpoint") {
        f.enospc_during_checkpoint = n;
      } else {
        std::fprintf(stderr, "PADLESS_FAULT_INJECT: ignoring unknown entry '%s'\n",
                     std::string(entry).c_str());
      }
    }
    return f;
  }();
  return faults;
}

namespace {

// Injected faults fire once this much of the file is written: a partial file, not an empty one.
constexpr int64_t kFaultAfterBytes = 4096;

std::atomic<int64_t> checkpoints_opened{0};

}  // namespace

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(const std::string& path,
                                                                         bool is_checkpoint) {
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot create the temporary file ", tmp, ": ", std::strerror(errno)));
  }
  const int64_t index = is_checkpoint ? ++checkpoints_opened : 0;
  return std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(path, std::move(tmp), fd, index));
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string tmp, int fd,
                                   int64_t checkpoint_index)
    : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd), checkpoint_index_(checkpoint_index) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

absl::Status AtomicFileWriter::Fail(const std::string& what, int error) {
  status_ =
      absl::InternalError(absl::StrCat(path_, ": ", what, " (", tmp_, "): ", std::strerror(error)));
  return status_;
}

absl::Status AtomicFileWriter::Append(const void* data, size_t n) {
  if (!status_.ok()) return status_;
  if (fd_ < 0) return Fail("write after commit", EBADF);
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Fail("write failed", errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    written_ += w;
    if (checkpoint_index_ > 0 && !fault_fired_ && written_ >= kFaultAfterBytes) {
      fault_fired_ = true;
      const FaultInjection& f = Faults();
      if (f.kill_during_checkpoint == checkpoint_index_) std::raise(SIGKILL);
      if (f.enospc_during_checkpoint == checkpoint_index_) return Fail("write failed", ENOSPC);
    }
  }
  return absl::OkStatus();
}

std::function<size_t(const void*, size_t)> AtomicFileWriter::Sink() {
  return [this](const void* data, size_t n) {
    Append(data, n).IgnoreError();  // kept in status_ for Commit()
    return n;
  };
}

absl::Status AtomicFileWriter::Commit() {
  if (!status_.ok()) return status_;
  if (fd_ < 0) return Fail("committed twice", EBADF);
  // fsync before the rename: after a power loss the new name must not point at missing data.
  if (::fsync(fd_) != 0) return Fail("fsync failed", errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return Fail("close failed", errno);
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) return Fail("cannot rename into place", errno);
  tmp_.clear();
  return absl::OkStatus();
}

bool IsTemporaryName(const std::string& name) {
  const size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0) return false;
  int64_t pid = 0;
  return absl::SimpleAtoi(name.substr(at + 5), &pid);
}

}  // namespace padless::models::internal
