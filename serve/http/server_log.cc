#include "padless/serve/http/server_log.h"

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "padless/base/enum_names.h"

namespace padless::serve::http {
namespace {

// In the order of --log-level's help and of ParseLogLevel's error ("error, warn, info or debug").
constexpr base::EnumName<LogLevel> kLogLevels[] = {{"error", LogLevel::kError},
                                                   {"warn", LogLevel::kWarn},
                                                   {"info", LogLevel::kInfo},
                                                   {"debug", LogLevel::kDebug}};

}  // namespace

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  return base::ParseEnum("log level", name, kLogLevels);
}

absl::string_view LogLevelName(LogLevel level) { return base::EnumToName(level, kLogLevels); }

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
