#include "atomic_file.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace padless::tokenize::internal {

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<void(std::ostream&)>& write) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
    write(out);
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      return absl::DataLossError(absl::StrCat("short write to ", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace padless::tokenize::internal
