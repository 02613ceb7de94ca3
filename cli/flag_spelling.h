// How the user wrote each flag on the command line (`--max-len`, `--max_len` or `-max-len`), so
// that every message names a flag the way the user typed it. main.cc records the spelling while
// it parses; flags the user did not give are named in the documented dashed form (`--max-len`).
#ifndef PADLESS_CLI_FLAG_SPELLING_H_
#define PADLESS_CLI_FLAG_SPELLING_H_

#include <string>

#include "absl/strings/string_view.h"

namespace padless::cli {

// `name` is the flag's definition name (underscores, e.g. "max_len"); `written` the argument up to
// any '=' (e.g. "--max-len").
void RecordFlagSpelling(const std::string& name, const std::string& written);

// The flag as the user wrote it, or "--" + name with dashes for a flag not on the command line.
std::string FlagAsWritten(absl::string_view name);

// "--model DIR is required": the flag as the user wrote it, then what it takes (`what`, e.g.
// "DIR" or "FILE").
std::string RequiredFlagMessage(absl::string_view name, absl::string_view what);

}  // namespace padless::cli

#endif  // PADLESS_CLI_FLAG_SPELLING_H_
