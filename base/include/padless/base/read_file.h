// Reading a whole file into memory: the counterpart of WriteFileAtomically (atomic_file_writer.h)
// for the small files padless reads whole (model configs, label maps, run metadata).
#ifndef PADLESS_BASE_READ_FILE_H_
#define PADLESS_BASE_READ_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace padless::base {

// The bytes of `path`; NotFoundError "<path>: cannot open" when it cannot be opened, and
// FailedPrecondition when it is a directory, a FIFO or a device (base::CheckRegularFile).
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace padless::base

#endif  // PADLESS_BASE_READ_FILE_H_
