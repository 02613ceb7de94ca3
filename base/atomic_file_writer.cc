#include "padless/base/atomic_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <streambuf>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "padless/base/directory.h"

namespace padless::base {
namespace {

// The PADLESS_FAULT_INJECT entries (see the header): the 1-based checkpoint index to act on, 0 for
// none.
struct FaultInjection {
  int64_t kill_during_checkpoint = 0;
  int64_t enospc_during_checkpoint = 0;
};

// Parsed once per process, on the first checkpoint write that reaches kFaultAfterBytes.
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

// Injected faults fire once this much of the file is written: a partial file, not an empty one.
constexpr int64_t kFaultAfterBytes = 4096;

std::atomic<int64_t> checkpoints_opened{0};

}  // namespace

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(const std::string& path,
                                                                         bool is_checkpoint) {
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
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

absl::Status AtomicFileWriter::Fail(absl::StatusCode code, const std::string& what, int error) {
  status_ =
      absl::Status(code, absl::StrCat(path_, ": ", what, " (", tmp_, "): ", std::strerror(error)));
  return status_;
}

absl::Status AtomicFileWriter::Append(const void* data, size_t n) {
  if (!status_.ok()) return status_;
  if (fd_ < 0) return Fail(absl::StatusCode::kInternal, "write after commit", EBADF);
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Fail(absl::StatusCode::kDataLoss, "write failed", errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    written_ += w;
    if (checkpoint_index_ > 0 && !fault_fired_ && written_ >= kFaultAfterBytes) {
      fault_fired_ = true;
      const FaultInjection& f = Faults();
      if (f.kill_during_checkpoint == checkpoint_index_) std::raise(SIGKILL);
      if (f.enospc_during_checkpoint == checkpoint_index_) {
        return Fail(absl::StatusCode::kDataLoss, "write failed", ENOSPC);
      }
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
  if (fd_ < 0) return Fail(absl::StatusCode::kInternal, "committed twice", EBADF);
  // fsync before the rename: after a power loss the new name must not point at missing data.
  if (::fsync(fd_) != 0) return Fail(absl::StatusCode::kDataLoss, "fsync failed", errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return Fail(absl::StatusCode::kDataLoss, "close failed", errno);
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    return Fail(absl::StatusCode::kUnavailable, "cannot rename into place", errno);
  }
  tmp_.clear();
  // The rename changed the directory, not the file: until the directory is synced, a power loss
  // can bring back the old name's content (or no file at all).
  if (absl::Status synced = SyncDirectory(ParentDirectory(path_)); !synced.ok()) {
    status_ = absl::Status(synced.code(),
                           absl::StrCat(path_, ": renamed into place, but ", synced.message()));
    return status_;
  }
  return absl::OkStatus();
}

bool IsTemporaryName(const std::string& name) {
  const size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0) return false;
  int64_t pid = 0;
  return absl::SimpleAtoi(name.substr(at + 5), &pid);
}

namespace {

// A stream buffer that hands its bytes to an AtomicFileWriter, in 64 KiB pieces, or directly for
// writes larger than that (the corpus cache). A failed Append fails the stream.
class WriterStreamBuf : public std::streambuf {
 public:
  explicit WriterStreamBuf(AtomicFileWriter& writer) : writer_(writer), buffer_(64 << 10) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }

 protected:
  int_type overflow(int_type c) override {
    if (!Drain()) return traits_type::eof();
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
    return c;
  }

  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n < epptr() - pptr()) {
      traits_type::copy(pptr(), s, static_cast<size_t>(n));
      pbump(static_cast<int>(n));
      return n;
    }
    if (!Drain() || !writer_.Append(s, static_cast<size_t>(n)).ok()) return 0;
    return n;
  }

  int sync() override { return Drain() ? 0 : -1; }

 private:
  bool Drain() {
    const size_t n = static_cast<size_t>(pptr() - pbase());
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return n == 0 || writer_.Append(buffer_.data(), n).ok();
  }

  AtomicFileWriter& writer_;
  std::vector<char> buffer_;
};

}  // namespace

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<void(std::ostream&)>& write) {
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> writer = AtomicFileWriter::Open(path);
  if (!writer.ok()) return writer.status();
  WriterStreamBuf buffer(**writer);
  std::ostream out(&buffer);
  write(out);
  out.flush();
  if (!(*writer)->status().ok()) return (*writer)->status();
  if (!out) {
    return absl::DataLossError(
        absl::StrCat(path, ": the output stream failed (", (*writer)->temp_path(), ")"));
  }
  return (*writer)->Commit();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view content) {
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> writer = AtomicFileWriter::Open(path);
  if (!writer.ok()) return writer.status();
  absl::Status s = (*writer)->Append(content.data(), content.size());
  return s.ok() ? (*writer)->Commit() : s;
}

}  // namespace padless::base
