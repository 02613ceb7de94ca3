#include "padless/serve/http/server_log.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace padless::serve::http {

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  for (LogLevel level : {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug}) {
    if (name == LogLevelName(level)) return level;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log level '", name, "' (expected error, warn, info or debug)"));
}

absl::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "info";
}

LogLevel LevelForStatus(int status) {
  if (status >= 500) return LogLevel::kError;
  if (status >= 400) return LogLevel::kWarn;
  return LogLevel::kInfo;
}

void ServerLog::Write(LogLevel level, absl::string_view line) {
  if (!enabled(level)) return;
  const std::string text = absl::StrFormat(
      "%s %-5s %s\n", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
      LogLevelName(level), line);
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

}  // namespace padless::serve::http
