#include "padless/base/text_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace padless::base {

std::string XmlEscape(absl::string_view s) {
  return absl::StrReplaceAll(s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

std::string CsvField(absl::string_view s) {
  if (s.find_first_of(",\"\n") == absl::string_view::npos) return std::string(s);
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\"\""}}), "\"");
}

}  // namespace padless::base
