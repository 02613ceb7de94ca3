#include "cli_util.h"

#include <cstdio>

#include "absl/strings/str_format.h"
#include "subcommand.h"

namespace padless::cli {

int Fail(absl::string_view command, const absl::Status& status) {
  absl::FPrintF(stderr, "padless %s: %s\n", command, status.ToString());
  return kExitFailure;
}

int Usage(absl::string_view command, absl::string_view why) {
  absl::FPrintF(stderr, "padless %s: %s (see `padless %s --help`)\n", command, why, command);
  return kExitUsage;
}

}  // namespace padless::cli
