#include "cli_util.h"

#include <cstdio>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "subcommand.h"

namespace padless::cli {
namespace {

constexpr absl::string_view kUsagePayload = "padless.cli/usage";

}  // namespace

absl::Status UsageError(absl::string_view why) {
  absl::Status status = absl::InvalidArgumentError(why);
  status.SetPayload(kUsagePayload, absl::Cord("1"));
  return status;
}

bool IsUsageError(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kUsagePayload).has_value();
}

std::string FormatError(absl::string_view command, const absl::Status& status) {
  std::string line = absl::StrCat("padless ", command, ": error: ", status.message());
  if (IsUsageError(status)) {
    const absl::string_view top = command.substr(0, command.find(' '));
    absl::StrAppend(&line, " (see `padless ", top, " --help`)");
  }
  return line;
}

int ReportError(absl::string_view command, const absl::Status& status) {
  absl::FPrintF(stderr, "%s\n", FormatError(command, status));
  return IsUsageError(status) ? kExitUsage : kExitFailure;
}

int Fail(absl::string_view command, const absl::Status& status) {
  absl::Status failure(status.code(), status.message());  // drops the usage mark
  ReportError(command, failure);
  return kExitFailure;
}

int Usage(absl::string_view command, absl::string_view why) {
  return ReportError(command, UsageError(why));
}

}  // namespace padless::cli
