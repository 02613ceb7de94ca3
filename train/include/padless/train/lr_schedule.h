// Learning-rate schedules: linear warmup from 0, then linear or cosine decay to 0 (or constant).
#ifndef PADLESS_TRAIN_LR_SCHEDULE_H_
#define PADLESS_TRAIN_LR_SCHEDULE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace padless::train {

enum class LrDecay { kLinear, kCosine, kConstant };

absl::StatusOr<LrDecay> ParseLrDecay(const std::string& name);

// The learning rate for optimizer step `step` (0-based) of `total_steps`.
double LearningRate(double peak, int64_t step, int64_t warmup_steps, int64_t total_steps,
                    LrDecay decay);

}  // namespace padless::train

#endif  // PADLESS_TRAIN_LR_SCHEDULE_H_
