// Results of a memory-per-sequence-length sweep (padless profile-memory): one point per
// configuration and shape, written as CSV, drawn as an SVG chart (memory against sequence length,
// log x, one line per configuration and batch size), and fitted per configuration with MemoryModel.
#ifndef PADLESS_CUDA_MEMORY_MEMORY_PROFILE_H_
#define PADLESS_CUDA_MEMORY_MEMORY_PROFILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/cuda/memory/memory_model.h"

namespace padless::cuda {

struct MemoryProfilePoint {
  std::string config;  // e.g. "bf16/ckpt=all/varlen": one line of the chart per config and batch
  int64_t batch = 0;
  int64_t seq_len = 0;
  int64_t baseline_bytes = 0;        // allocated before the step: weights, optimizer state
  int64_t gradient_bytes = 0;        // the gradients the step creates (one per trainable weight)
  int64_t peak_allocated_bytes = 0;  // during the measured step
  int64_t peak_reserved_bytes = 0;
  bool oom = false;  // the step ran out of memory; the peaks are not meaningful
};

// Header plus one line per point; activation_bytes = peak_allocated - baseline - gradients, the
// definition of the HF reference numbers.
std::string MemoryProfileCsv(absl::Span<const MemoryProfilePoint> points);

// A standalone SVG: peak allocated GiB against sequence length (log2 axis), one polyline per
// (config, batch) with a legend; OOM points are left out.
std::string MemoryProfileSvg(absl::Span<const MemoryProfilePoint> points, const std::string& title);

struct ConfigFit {
  std::string config;
  HeldOutReport report;
};

// For each config (in first-seen order): fits peak allocated bytes on the points whose length is
// not held out, and reports the error on those that are. Configs whose points cannot be fitted
// (too few, or no held-out length among them) are skipped, with the reason in `skipped`.
std::vector<ConfigFit> FitPerConfig(absl::Span<const MemoryProfilePoint> points,
                                    absl::Span<const int64_t> held_out_lengths,
                                    std::vector<std::string>* skipped);

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_MEMORY_MEMORY_PROFILE_H_
