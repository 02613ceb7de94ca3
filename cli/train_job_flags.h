// The flags that only `padless train` reads, defined in train_job_flags.cc, and their one mapping
// onto train::TrainJobOptions (train_command.cc runs the job and reports).
#ifndef PADLESS_CLI_TRAIN_JOB_FLAGS_H_
#define PADLESS_CLI_TRAIN_JOB_FLAGS_H_

#include "absl/status/statusor.h"
#include "padless/train/train_job.h"

namespace padless::cli {

// Every train flag onto TrainJobOptions, checked by train::ValidateTrainJobOptions; errors are
// usage errors.
absl::StatusOr<train::TrainJobOptions> TrainJobFromFlags();

}  // namespace padless::cli

#endif  // PADLESS_CLI_TRAIN_JOB_FLAGS_H_
