// Helpers shared by the subcommands: how a failure or a usage error is reported (message on stderr
// plus the documented exit code). Output files go through report::WriteFileAtomically.
#ifndef PADLESS_CLI_CLI_UTIL_H_
#define PADLESS_CLI_CLI_UTIL_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace padless::cli {

// Prints "padless <command>: <status>" to stderr and returns kExitFailure.
int Fail(absl::string_view command, const absl::Status& status);

// Prints "padless <command>: <why> (see `padless <command> --help`)" to stderr and returns
// kExitUsage.
int Usage(absl::string_view command, absl::string_view why);

}  // namespace padless::cli

#endif  // PADLESS_CLI_CLI_UTIL_H_
