// MemoryModel: peak memory of a training step as a function of batch size and sequence length,
// fitted by least squares to measured points (padless profile-memory) and used to predict other
// shapes:  peak = fixed + per_token * b*s + per_token_seq * b*s^2,
// where the last term covers attention paths that store the s x s scores (dense SDPA with a mask).
#ifndef PADLESS_CUDA_MEMORY_MEMORY_MODEL_H_
#define PADLESS_CUDA_MEMORY_MEMORY_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace padless::cuda {

struct MemorySample {
  int64_t batch = 0;
  int64_t seq_len = 0;
  int64_t peak_bytes = 0;
};

class MemoryModel {
 public:
  MemoryModel() = default;
  MemoryModel(double fixed_bytes, double per_token_bytes, double per_token_seq_bytes)
      : fixed_(fixed_bytes), per_token_(per_token_bytes), per_token_seq_(per_token_seq_bytes) {}

  // Minimises the squared *relative* error (rows weighted by 1 / peak), so short sequences, whose
  // peaks are small, are fitted as well as long ones. With `quadratic` false the b*s^2 term is 0;
  // a fitted negative b*s^2 coefficient (noise on a path with no s^2 memory) is dropped the same
  // way. Needs at least as many samples as terms, with distinct shapes.
  static absl::StatusOr<MemoryModel> Fit(absl::Span<const MemorySample> samples, bool quadratic);

  double Predict(int64_t batch, int64_t seq_len) const;
  // |predicted - measured| / measured for one sample.
  double RelativeError(const MemorySample& s) const;

  double fixed_bytes() const { return fixed_; }
  double per_token_bytes() const { return per_token_; }
  double per_token_seq_bytes() const { return per_token_seq_; }

  // {"fixed_bytes":..,"per_token_bytes":..,"per_token_seq_bytes":..}
  std::string ToJson() const;
  static absl::StatusOr<MemoryModel> FromJson(const std::string& json);

 private:
  double fixed_ = 0;
  double per_token_ = 0;
  double per_token_seq_ = 0;
};

struct HeldOutReport {
  MemoryModel model;           // fitted on the samples whose length is not held out
  int64_t fitted_samples = 0;  // how many that was
  std::vector<MemorySample> held_out;
  std::vector<double> relative_errors;  // one per held-out sample
  double max_relative_error = 0;
  double mean_relative_error = 0;
};

// Fits on every sample whose seq_len is not in `held_out_lengths` and reports the prediction error
// on those that are.
absl::StatusOr<HeldOutReport> FitWithHeldOutLengths(absl::Span<const MemorySample> samples,
                                                    absl::Span<const int64_t> held_out_lengths,
                                                    bool quadratic);

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_MEMORY_MEMORY_MODEL_H_
