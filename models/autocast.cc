#include "padless/models/autocast.h"

#include <ATen/autocast_mode.h>

#include "absl/strings/str_cat.h"

namespace padless::models {

absl::StatusOr<AmpMode> ParseAmpMode(const std::string& name) {
  if (name == "off" || name == "fp32") return AmpMode::kOff;
  if (name == "bf16") return AmpMode::kBf16;
  if (name == "fp16") return AmpMode::kFp16;
  if (name == "fp8") return AmpMode::kFp8;
  return absl::InvalidArgumentError(
      absl::StrCat("amp: unknown mode '", name, "' (expected off, bf16, fp16 or fp8)"));
}

std::string AmpModeName(AmpMode mode) {
  switch (mode) {
    case AmpMode::kOff:
      return "off";
    case AmpMode::kBf16:
      return "bf16";
    case AmpMode::kFp16:
      return "fp16";
    case AmpMode::kFp8:
      return "fp8";
  }
  return "off";
}

AutocastGuard::AutocastGuard(c10::DeviceType device_type, c10::ScalarType dtype, bool enabled)
    : device_type_(device_type),
      prev_enabled_(at::autocast::is_autocast_enabled(device_type)),
      prev_dtype_(at::autocast::get_autocast_dtype(device_type)),
      prev_cache_(at::autocast::is_autocast_cache_enabled()) {
  at::autocast::set_autocast_enabled(device_type, enabled);
  at::autocast::set_autocast_dtype(device_type, dtype);
  at::autocast::set_autocast_cache_enabled(true);
  at::autocast::increment_nesting();
}

AutocastGuard::AutocastGuard(c10::DeviceType device_type, AmpMode mode)
    : AutocastGuard(device_type, mode == AmpMode::kFp16 ? c10::kHalf : c10::kBFloat16,
                    mode != AmpMode::kOff) {}

AutocastGuard::~AutocastGuard() {
  // The weight-cast cache lives as long as the outermost autocast region, as in torch.autocast.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_type_, prev_dtype_);
  at::autocast::set_autocast_cache_enabled(prev_cache_);
}

}  // namespace padless::models
