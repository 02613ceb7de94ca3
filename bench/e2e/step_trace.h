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
class StepTrace {
 public:
  StepTrace() = default;
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;
  ~StepTrace();

  absl::Status Start();
  absl::Status Save(const std::string& path);

 private:
  bool recording_ = false;
};

}  // namespace padless::bench::e2e

#endif  // PADLESS_BENCH_E2E_STEP_TRACE_H_
