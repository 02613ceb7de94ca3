#include "padless/models/autocast.h"

#include <ATen/autocast_mode.h>

#include "padless/base/enum_names.h"

namespace padless::models {

namespace {
// "fp32" is accepted for "off": no autocast, full precision.
constexpr base::EnumName<AmpMode> kAmpModes[] = {{"off", AmpMode::kOff},
                                                 {"fp32", AmpMode::kOff},
                                                 {"bf16", AmpMode::kBf16},
                                                 {"fp16", AmpMode::kFp16},
                                                 {"fp8", AmpMode::kFp8}};
}  // namespace

absl::StatusOr<AmpMode> ParseAmpMode(const std::string& name) {
  return base::ParseEnum("amp mode", name, kAmpModes);
}

std::string AmpModeName(AmpMode mode) { return std::string(base::EnumToName(mode, kAmpModes)); }

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
