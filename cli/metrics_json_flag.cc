#include "metrics_json_flag.h"

#include "absl/flags/flag.h"
#include "padless/base/atomic_file_writer.h"

ABSL_FLAG(std::string, metrics_json, "", "Write the final metrics as JSON to this path");

namespace padless::cli {

absl::Status WriteMetricsJson(const nlohmann::json& metrics) {
  const std::string path = absl::GetFlag(FLAGS_metrics_json);
  if (path.empty()) return absl::OkStatus();
  return base::WriteFileAtomically(path, metrics.dump(2) + "\n");
}

}  // namespace padless::cli
