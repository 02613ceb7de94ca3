// --metrics-json, defined here and read by train and eval: the path their final metrics are
// written to as JSON, and the one writer of that file.
#ifndef PADLESS_CLI_METRICS_JSON_FLAG_H_
#define PADLESS_CLI_METRICS_JSON_FLAG_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "nlohmann/json.hpp"

ABSL_DECLARE_FLAG(std::string, metrics_json);

namespace padless::cli {

// Writes `metrics` (indented by 2, newline-terminated) to --metrics-json through
// base::WriteFileAtomically; OK without writing when the flag is empty.
absl::Status WriteMetricsJson(const nlohmann::json& metrics);

}  // namespace padless::cli

#endif  // PADLESS_CLI_METRICS_JSON_FLAG_H_
