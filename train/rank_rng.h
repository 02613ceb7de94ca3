// Internal to the trainer: every rank's random streams (dropout masks draw from them), gathered so
// that rank 0's checkpoint holds them all and each rank resumes its own.
#ifndef PADLESS_TRAIN_RANK_RNG_H_
#define PADLESS_TRAIN_RANK_RNG_H_

#include <c10/core/Device.h>

#include <vector>

#include "absl/status/statusor.h"
#include "padless/distributed/data_parallel.h"
#include "padless/models/rng_state.h"

namespace padless::train::internal {

// A collective: every rank calls it at the same point, and every rank gets all ranks' streams
// (CPU, and `device`'s when it is CUDA), by rank. One host all-reduce of about 5 KB a rank.
absl::StatusOr<std::vector<models::internal::RngState>> GatherRankRng(const distributed::DataParallel& dp,
                                                    const c10::Device& device);

}  // namespace padless::train::internal

#endif  // PADLESS_TRAIN_RANK_RNG_H_
