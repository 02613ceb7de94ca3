// MemoryBudget: turns a byte budget and a fitted MemoryModel into batch shapes that fit: the
// largest batch size for each bucket length, or the largest token budget for packed / varlen
// batches whose rows are at most a given length. Used by the planner for --memory-budget.
#ifndef PADLESS_CUDA_MEMORY_MEMORY_BUDGET_H_
#define PADLESS_CUDA_MEMORY_MEMORY_BUDGET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "padless/cuda/memory/memory_model.h"

namespace padless::cuda {

// "40GiB", "512 MiB", "1.5GB", "1000000" (bytes). Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB,
// GB, TB) units; case-insensitive.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

class MemoryBudget {
 public:
  // `budget_bytes` is the peak the plan may reach (e.g. the device memory minus a margin).
  MemoryBudget(MemoryModel model, int64_t budget_bytes)
      : model_(model), budget_bytes_(budget_bytes) {}

  // The largest batch size b with Predict(b, seq_len) <= budget; 0 when even one sequence of
  // that length does not fit.
  int64_t MaxBatch(int64_t seq_len) const;
  // MaxBatch for each bucket length, in order.
  std::vector<int64_t> MaxBatchPerBucket(absl::Span<const int64_t> bucket_lengths) const;
  // The largest token count T such that T tokens in rows of length `row_len` (b = T / row_len,
  // the s^2 term charged as T * row_len, its worst case) fit the budget; 0 when none fits.
  int64_t MaxTokens(int64_t row_len) const;

  int64_t budget_bytes() const { return budget_bytes_; }
  const MemoryModel& model() const { return model_; }

 private:
  MemoryModel model_;
  int64_t budget_bytes_;
};

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_MEMORY_MEMORY_BUDGET_H_
