// Helpers shared by the subcommands: how a failure or a usage error is reported (message on stderr
// plus the documented exit code) and how an output file (CSV, SVG) is written.
#ifndef PADLESS_CLI_CLI_UTIL_H_
#define PADLESS_CLI_CLI_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace padless::cli {

// Prints "padless <command>: <status>" to stderr and returns kExitFailure.
int Fail(absl::string_view command, const absl::Status& status);

// Prints "padless <command>: <why> (see `padless <command> --help`)" to stderr and returns
// kExitUsage.
int Usage(absl::string_view command, absl::string_view why);

// Writes `content` to `path` through padless/report/atomic_file_writer.h, so an interrupted run
// never leaves a truncated report behind.
absl::Status WriteFile(const std::string& path, absl::string_view content);

}  // namespace padless::cli

#endif  // PADLESS_CLI_CLI_UTIL_H_
