// How the subcommands report errors: one format and one exit-code rule for all of them.
//   usage error (exit 2): padless <command>: error: <why> (see `padless <command> --help`)
//   failure     (exit 1): padless <command>: error: <message>
// A usage error is something wrong with the command line itself, found without looking at the
// file system: an unknown flag, a bad or out-of-range value, a missing required flag. Everything
// about what a path names on disk (missing, wrong kind, unreadable, empty, binary, not writable)
// and about the data, the model and I/O is a failure (exit 1). Messages are the status's message
// only: the status code's name (NOT_FOUND, INVALID_ARGUMENT) is not shown to the user.
// Output files go through base::WriteFileAtomically.
#ifndef PADLESS_CLI_CLI_UTIL_H_
#define PADLESS_CLI_CLI_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace padless::cli {

// An InvalidArgument status marked as a usage error (ReportError exits 2 for it).
absl::Status UsageError(absl::string_view why);
bool IsUsageError(const absl::Status& status);

// The line printed for `status` (without the newline). `command` is e.g. "eval" or
// "tokenize encode"; the help hint names its first word.
std::string FormatError(absl::string_view command, const absl::Status& status);

// Prints FormatError to stderr; returns kExitUsage for a usage error, else kExitFailure.
int ReportError(absl::string_view command, const absl::Status& status);

// Prints `status` as a failure and returns kExitFailure (even for a status marked as usage).
int Fail(absl::string_view command, const absl::Status& status);

// Prints `why` as a usage error and returns kExitUsage.
int Usage(absl::string_view command, absl::string_view why);

}  // namespace padless::cli

#endif  // PADLESS_CLI_CLI_UTIL_H_
