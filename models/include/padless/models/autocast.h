// AutocastGuard: scoped mixed precision for CUDA or the CPU (LibTorch has only the thread-local
// switches). Also the AMP mode names the CLI and the trainer share.
//
// kFp8 autocasts to bf16 like kBf16, and training steps' fused encoder layers also run their GEMMs
// in FP8 with delayed scaling (TrainStep, fp8_scaling.h). Evaluation and prediction run in bf16.
#ifndef PADLESS_MODELS_AUTOCAST_H_
#define PADLESS_MODELS_AUTOCAST_H_

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <string>

#include "absl/status/statusor.h"

namespace padless::models {

enum class AmpMode { kOff, kBf16, kFp16, kFp8 };

absl::StatusOr<AmpMode> ParseAmpMode(const std::string& name);
std::string AmpModeName(AmpMode mode);

// While alive, ops on `device_type` run under autocast to `dtype` (when `enabled`), exactly as
// torch.autocast does; the previous state is restored on destruction. Not copyable.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device_type, c10::ScalarType dtype, bool enabled = true);
  AutocastGuard(c10::DeviceType device_type, AmpMode mode);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_type_;
  bool prev_enabled_;
  c10::ScalarType prev_dtype_;
  bool prev_cache_;
};

}  // namespace padless::models

#endif  // PADLESS_MODELS_AUTOCAST_H_
