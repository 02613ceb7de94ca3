// A Kineto (PyTorch profiler) trace of a few training steps, for finding where a step's time goes:
// GPU kernels, the gaps between them, and the host calls that launched them. The trace is Chrome
// trace JSON (chrome://tracing, Perfetto); bench/e2e/trace_summary.py sums it per kernel family.
#ifndef PADLESS_BENCH_E2E_STEP_TRACE_H_
#define PADLESS_BENCH_E2E_STEP_TRACE_H_

#include <string>

#include "absl/status/status.h"

namespace padless::bench::e2e {

// Records while alive: Start() begins (CPU ops and, on a CUDA build, CUDA kernels); Save() ends
// the recording and writes the trace. A trace that was started and not saved is discarded.
// Without `record_host` only the GPU's kernels, copies and memsets are recorded: recording every
// host operator slows the host enough to open gaps between kernels that an unprofiled step does
// not have, so the GPU's idle time is measured without it.
class StepTrace {
 public:
  explicit StepTrace(bool record_host = true) : record_host_(record_host) {}
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;
  ~StepTrace();

  absl::Status Start();
  absl::Status Save(const std::string& path);

 private:
  bool record_host_;
  bool recording_ = false;
};

}  // namespace padless::bench::e2e

#endif  // PADLESS_BENCH_E2E_STEP_TRACE_H_
