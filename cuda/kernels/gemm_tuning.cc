#include "padless/cuda/kernels/gemm_tuning.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

#include "src/gemm_timing.h"

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDAException.h>

#include <memory>
#include <type_traits>
#endif

namespace padless::cuda {
namespace {

bool TuningFromEnvironment() {
  const absl::StatusOr<bool> on = GemmTuningSetting(std::getenv("PADLESS_GEMM_TUNING"));
  if (on.ok()) return *on;
  std::fprintf(stderr, "padless: %s; tuning stays on\n",
               std::string(on.status().message()).c_str());
  return true;
}

std::atomic<bool>& TuningFlag() {
  static std::atomic<bool> flag(TuningFromEnvironment());
  return flag;
}

}  // namespace

bool GemmTuningEnabled() { return TuningFlag().load(std::memory_order_relaxed); }

void SetGemmTuning(bool on) { TuningFlag().store(on, std::memory_order_relaxed); }

absl::StatusOr<bool> GemmTuningSetting(const char* value) {
  if (value == nullptr) return true;
  const std::string_view v(value);
  if (v.empty() || v == "1" || v == "true" || v == "on") return true;
  if (v == "0" || v == "false" || v == "off") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("PADLESS_GEMM_TUNING=", std::string(v),
                   " is not a setting: use 1, true or on, or 0, false or off"));
}

int PickFastestAlgorithm(absl::Span<const double> times_ms, double margin) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(times_ms.size()); ++i) {
    if (times_ms[i] < 0) continue;
    if (best < 0 || times_ms[i] < times_ms[best] * (1.0 - margin)) best = i;
  }
  return best;
}

#ifdef PADLESS_HAVE_CUDA_KERNELS
namespace internal {
namespace {

struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDeleter>;

Event MakeEvent() {
  cudaEvent_t e = nullptr;
  C10_CUDA_CHECK(cudaEventCreate(&e));
  return Event(e);
}

}  // namespace

bool StreamIsCapturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

std::vector<double> TimeGemmCandidates(int count, const std::function<bool(int)>& launch,
                                       cudaStream_t stream) {
  std::vector<Event> starts, stops;
  std::vector<bool> ran(count, false);
  for (int i = 0; i < count; ++i) {
    starts.push_back(MakeEvent());
    stops.push_back(MakeEvent());
    if (!launch(i)) continue;  // the untimed run: caches, clocks, and whether it runs at all
    ran[i] = true;
    C10_CUDA_CHECK(cudaEventRecord(starts[i].get(), stream));
    for (int r = 0; r < kGemmTuningRuns; ++r) launch(i);
    C10_CUDA_CHECK(cudaEventRecord(stops[i].get(), stream));
  }
  std::vector<double> ms(count, -1.0);
  for (int i = 0; i < count; ++i) {
    if (!ran[i]) continue;
    C10_CUDA_CHECK(cudaEventSynchronize(stops[i].get()));
    float elapsed = 0;
    C10_CUDA_CHECK(cudaEventElapsedTime(&elapsed, starts[i].get(), stops[i].get()));
    ms[i] = static_cast<double>(elapsed) / kGemmTuningRuns;
  }
  return ms;
}

}  // namespace internal
#endif  // PADLESS_HAVE_CUDA_KERNELS

}  // namespace padless::cuda
