// The server's log: one line per answered request and a few lifecycle lines, on stderr, each
// written whole (one fwrite under a lock) so that lines from the handler threads never interleave:
//   2026-05-01T12:00:00.123Z info  POST /predict 200 3.1ms in=812B out=96B inputs=1 tokens=9
//   peer=127.0.0.1:5012
// inputs: the texts, pairs or lists of ids the request carried (0 for a request refused before its
// inputs were read, and for GET routes); tokens: the model input tokens they became, special
// tokens included (the engine's count; /tokenize's and /decode's ids), absent where none were.
// A request's level follows its status: 5xx error, 4xx warn, else info; lines below the level
// set with --log-level are not written. debug adds the error message of a failed request.
#ifndef PADLESS_SERVE_HTTP_SERVER_LOG_H_
#define PADLESS_SERVE_HTTP_SERVER_LOG_H_

#include <cstdio>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace padless::serve::http {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// "error", "warn", "info" or "debug"; InvalidArgument otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);
absl::string_view LogLevelName(LogLevel level);
// The level of a request's line (see above).
LogLevel LevelForStatus(int status);

class ServerLog {
 public:
  explicit ServerLog(LogLevel level, FILE* out = stderr) : level_(level), out_(out) {}

  bool enabled(LogLevel level) const { return level <= level_; }
  // Writes `line` with a UTC timestamp and the level, when `level` is enabled.
  void Write(LogLevel level, absl::string_view line);

 private:
  const LogLevel level_;
  FILE* const out_;
  std::mutex mu_;
};

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_SERVER_LOG_H_
