// TrainingLog (internal to the trainer): the per-step CSV log and the progress line on stderr.
// Steps are added with their loss still on the device; Flush reads a window of them with one host
// sync, appends their CSV rows, and redraws the progress line ("\r", with throughput and ETA). The
// progress line stays open until something else is printed: EndLine() ends it, and so does the
// destructor, so that an error message printed after training starts on a line of its own.
#ifndef PADLESS_TRAIN_TRAINING_LOG_H_
#define PADLESS_TRAIN_TRAINING_LOG_H_

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/base/append_file_writer.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/train/step_outcome.h"

namespace padless::train::internal {

// One optimizer step, as logged.
struct StepLogRow {
  int64_t step = 0;  // 1-based: steps taken after this one
  int64_t epoch = 0;
  at::Tensor loss;  // 0-dim, any device
  double lr = 0;
  int64_t real_tokens = 0;
  int64_t token_slots = 0;
  cuda::MemorySnapshot memory;
  int64_t oom_splits = 0;
  StepOutcome outcome;  // read when the row is written
};

class TrainingLog {
 public:
  // `csv_path` empty: no CSV. With `resume` and an existing file the rows are appended, else the
  // file is rewritten with a header. `progress`: draw the progress line. `first_step` is the step
  // this process starts at, `total_steps` the run's length (for the ETA).
  static absl::StatusOr<std::unique_ptr<TrainingLog>> Open(const std::string& csv_path, bool resume,
                                                           bool progress, int64_t first_step,
                                                           int64_t total_steps);
  ~TrainingLog();
  TrainingLog(const TrainingLog&) = delete;
  TrainingLog& operator=(const TrainingLog&) = delete;

  void Add(StepLogRow row);
  int64_t pending() const { return static_cast<int64_t>(pending_.size()); }
  // Writes the pending rows and redraws the progress line at `global_step`, showing
  // `skipped_steps` when there are any. Errors: the CSV cannot be written (Internal).
  absl::Status Flush(int64_t global_step, int64_t skipped_steps);
  // Ends the progress line, if one is open, so that the next output starts a line.
  void EndLine();

  // Mean loss of the last flushed window's steps that were not skipped (0 before any).
  double final_loss() const { return final_loss_; }
  // Seconds since Open.
  double elapsed_seconds() const;

 private:
  using Clock = std::chrono::steady_clock;
  TrainingLog(std::unique_ptr<base::AppendFileWriter> csv, bool progress, int64_t first_step,
              int64_t total_steps);
  void DrawProgress(int64_t global_step, int64_t skipped_steps, double tokens_per_s);

  // Each row reaches the kernel as it is written: a crash of the process loses at most the row
  // being written. Never Close()d, so never fsync'ed: a power loss can lose the rows the kernel
  // had not yet written back (a log, not a checkpoint).
  std::unique_ptr<base::AppendFileWriter> csv_;
  bool progress_;
  int64_t first_step_;
  int64_t total_steps_;
  std::vector<StepLogRow> pending_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point window_start_ = start_;
  int64_t window_tokens_ = 0;
  double final_loss_ = 0;
  bool line_open_ = false;
};

}  // namespace padless::train::internal

#endif  // PADLESS_TRAIN_TRAINING_LOG_H_
