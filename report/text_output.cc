#include "padless/report/text_output.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace padless::report {

std::string XmlEscape(absl::string_view s) {
  return absl::StrReplaceAll(s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

std::string CsvField(absl::string_view s) {
  if (s.find_first_of(",\"\n") == absl::string_view::npos) return std::string(s);
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\"\""}}), "\"");
}

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

absl::Status WriteFileAtomically(const std::string& path, absl::string_view content) {
  return WriteFileAtomically(path, [content](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

}  // namespace padless::report
