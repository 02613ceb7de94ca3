// --device and --amp, defined here and read by train, eval, predict and serve through these two
// functions, so that the device rule (auto: CUDA when available; a CUDA device without one is an
// error) is written once.
#ifndef PADLESS_CLI_DEVICE_FLAG_H_
#define PADLESS_CLI_DEVICE_FLAG_H_

#include <c10/core/Device.h>

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "padless/models/autocast.h"

ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(std::string, amp);

namespace padless::cli {

// --device: auto, cpu, cuda or cuda:N. InvalidArgument (a usage error) for a bad name or a CUDA
// device on a machine without one.
absl::StatusOr<c10::Device> DeviceFlag();

// --amp: off, bf16, fp16 or fp8; InvalidArgument for another name.
absl::StatusOr<models::AmpMode> AmpFlag();

// --amp as predict and serve read it: the modes above (fp8: FP8 inference weights), and int8:
// fp32 with int8 weights on the CPU (serve::EngineOptions::int8_weights).
struct InferencePrecision {
  models::AmpMode amp = models::AmpMode::kOff;
  bool int8_weights = false;
};
absl::StatusOr<InferencePrecision> InferencePrecisionFlag();

}  // namespace padless::cli

#endif  // PADLESS_CLI_DEVICE_FLAG_H_
