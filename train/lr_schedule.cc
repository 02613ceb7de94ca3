#include "padless/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "padless/base/enum_names.h"

namespace padless::train {

namespace {
constexpr base::EnumName<LrDecay> kLrDecays[] = {
    {"linear", LrDecay::kLinear}, {"cosine", LrDecay::kCosine}, {"constant", LrDecay::kConstant}};
}  // namespace

absl::StatusOr<LrDecay> ParseLrDecay(const std::string& name) {
  return base::ParseEnum("lr schedule", name, kLrDecays);
}

double LearningRate(double peak, int64_t step, int64_t warmup_steps, int64_t total_steps,
                    LrDecay decay) {
  if (step < warmup_steps) return peak * static_cast<double>(step + 1) / warmup_steps;
  if (decay == LrDecay::kConstant || total_steps <= warmup_steps) return peak;
  const double progress =
      std::clamp(static_cast<double>(step - warmup_steps) / (total_steps - warmup_steps), 0.0, 1.0);
  if (decay == LrDecay::kLinear) return peak * (1.0 - progress);
  return peak * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace padless::train
