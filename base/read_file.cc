#include "padless/base/read_file.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "padless/base/file_kind.h"

namespace padless::base {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  // A directory opens as a stream that fails on reading, and a FIFO blocks: neither is opened.
  if (KindOfPath(path) != FileKind::kMissing) {
    if (absl::Status s = CheckRegularFile(path, "file"); !s.ok()) return s;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace padless::base
