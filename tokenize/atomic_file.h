// Private: writes a file through a temporary and a rename, so a crash or a full disk never leaves
// a half-written model, label map or cache where a reader would trust it.
#ifndef PADLESS_TOKENIZE_ATOMIC_FILE_H_
#define PADLESS_TOKENIZE_ATOMIC_FILE_H_

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"

namespace padless::tokenize::internal {

// Calls `write` on a stream to `path`.tmp, then renames it over `path`.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<void(std::ostream&)>& write);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_ATOMIC_FILE_H_
