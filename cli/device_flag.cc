#include "device_flag.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "padless/train/train_job.h"

ABSL_FLAG(std::string, amp, "off", "Mixed precision: off, bf16, fp16 or fp8 (fp16 needs CUDA; fp8 trains the "
          "encoder's GEMMs in FP8 on GPUs of compute capability 8.9+ and evaluates in bf16, while "
          "predict and serve run them with FP8 weights, one scale per channel and per token; "
          "elsewhere FP8 is emulated, slowly). predict and serve also take int8: fp32 with int8 "
          "weights on the CPU");
ABSL_FLAG(std::string, device, "auto", "Device: auto (CUDA when available), cpu, cuda or cuda:N");

namespace padless::cli {

absl::StatusOr<c10::Device> DeviceFlag() {
  const std::string d = absl::GetFlag(FLAGS_device);
  if (d == "auto") return train::DefaultTrainingDevice();
  try {
    c10::Device device(d);
    if (device.is_cuda() && !train::DefaultTrainingDevice().is_cuda()) {
      return absl::InvalidArgumentError(absl::StrCat("--device ", d, ": no CUDA device available"));
    }
    return device;
  } catch (const c10::Error&) {
    return absl::InvalidArgumentError(absl::StrCat("--device: bad device '", d, "'"));
  }
}

absl::StatusOr<models::AmpMode> AmpFlag() { return models::ParseAmpMode(absl::GetFlag(FLAGS_amp)); }

absl::StatusOr<InferencePrecision> InferencePrecisionFlag() {
  InferencePrecision p;
  if (absl::GetFlag(FLAGS_amp) == "int8") {
    p.int8_weights = true;
    return p;
  }
  absl::StatusOr<models::AmpMode> amp = AmpFlag();
  if (!amp.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(amp.status().message(), "; predict and serve also take int8"));
  }
  p.amp = *amp;
  return p;
}

}  // namespace padless::cli
