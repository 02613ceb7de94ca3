// The end-to-end benchmark's outputs: RESULTS.md (generated: command, GPU, versions, date, the
// table, ratios against the anchors measured in the same run and against the reference figures),
// a CSV with one row per configuration and anchor, and two hand-written SVG plots (real tokens/s
// per configuration; activation memory against throughput for the checkpointing policies).
#ifndef PADLESS_BENCH_E2E_REPORT_H_
#define PADLESS_BENCH_E2E_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "anchors.h"
#include "config_runner.h"

namespace padless::bench::e2e {

// Reference figures measured earlier on the H200 with these lengths (shared/LIBTORCH.md).
inline constexpr double kRefHfTokensPerSecond = 207e3;
inline constexpr double kRefTorchPackedTokensPerSecond = 488e3;
inline constexpr double kRefTorchPackedMfu = 0.34;

struct ReportInput {
  std::string command;  // the exact command line
  std::string date_utc;
  std::string device;  // "cuda:0" / "cpu"
  std::string gpu_name;
  std::string torch_version;         // LibTorch of this binary
  std::string python_torch_version;  // reported by the anchors ("" when they did not run)
  double matmul_tflops = 0;          // 0: not measured (CPU) -> no MFU
  std::string matmul_note;           // why it was not measured, if so
  std::string data_summary;          // data file, rows, tokenizer, length statistics
  RunOptions run_options;
  std::vector<RunResult> runs;
  std::vector<std::string> run_failures;  // configurations that failed, with the reason
  bool anchors_requested = false;
  std::vector<AnchorRun> anchors;
  bool smoke = false;
  // Paths of the other outputs, as RESULTS.md should link them (relative to its folder).
  std::string csv_link;
  std::string throughput_svg_link;
  std::string memory_svg_link;
};

double Mfu(const RunResult& r, double matmul_tflops);

absl::Status WriteCsv(const std::string& path, const ReportInput& in);
absl::Status WriteThroughputSvg(const std::string& path, const ReportInput& in);
absl::Status WriteMemorySvg(const std::string& path, const ReportInput& in);
absl::Status WriteMarkdown(const std::string& path, const ReportInput& in);

// Renders the same documents as strings (the writers above call these).
std::string RenderCsv(const ReportInput& in);
std::string RenderThroughputSvg(const ReportInput& in);
std::string RenderMemorySvg(const ReportInput& in);
std::string RenderMarkdown(const ReportInput& in);

}  // namespace padless::bench::e2e

#endif  // PADLESS_BENCH_E2E_REPORT_H_
