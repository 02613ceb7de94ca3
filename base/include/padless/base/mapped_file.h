// A read-only memory mapping of a whole file. The tokenized corpus cache is read through one so
// that the pages a process never touches are never read or resident: a rank of a data-parallel job
// maps the whole cache and pays only for the sequences of its shard, and the kernel can drop clean
// mapped pages under memory pressure, so a corpus larger than memory can still be read.
//
// The mapping stays valid while the file is replaced (rename) or unlinked. A file truncated by
// another process while mapped makes reads past its new end fault (SIGBUS): padless writes its
// caches atomically (AtomicFileWriter), so it never truncates a file that someone may have mapped.
#ifndef PADLESS_BASE_MAPPED_FILE_H_
#define PADLESS_BASE_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace padless::base {

class MappedFile {
 public:
  // How the pages will be read: a hint for the kernel's read-ahead (madvise).
  enum class Access { kRandom, kSequential };

  // Maps `path` read-only. Errors as CheckRegularFile (naming `what` and the path) for a missing
  // file or a directory, PermissionDenied when it cannot be opened, Internal when mmap fails. An
  // empty file gives an empty mapping.
  static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path,
                                                                absl::string_view what,
                                                                Access access);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  absl::string_view bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Drops this process's pages of bytes [0, end) (rounded down to whole pages): they stop counting
  // in its resident set and are read again from the page cache or the disk if touched later. For
  // a reader that streams through a file once.
  void ReleasePrefix(size_t end) const;

 private:
  MappedFile(std::string path, const char* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace padless::base

#endif  // PADLESS_BASE_MAPPED_FILE_H_
