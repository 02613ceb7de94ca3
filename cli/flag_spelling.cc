#include "flag_spelling.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"

namespace padless::cli {
namespace {

// One command line per process, parsed before any subcommand runs: no locking needed.
std::map<std::string, std::string, std::less<>>& Spellings() {
  static auto* spellings = new std::map<std::string, std::string, std::less<>>();
  return *spellings;
}

}  // namespace

void RecordFlagSpelling(const std::string& name, const std::string& written) {
  Spellings()[name] = written;
}

std::string FlagAsWritten(absl::string_view name) {
  if (auto it = Spellings().find(name); it != Spellings().end()) return it->second;
  std::string dashed = absl::StrCat("--", name);
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  return dashed;
}

std::string RequiredFlagMessage(absl::string_view name, absl::string_view what) {
  return absl::StrCat(FlagAsWritten(name), " ", what, " is required");
}

}  // namespace padless::cli
