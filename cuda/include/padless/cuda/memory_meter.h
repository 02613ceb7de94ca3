// MemoryMeter: allocated / reserved / active / peak bytes of the device that runs the model, read
// from the CUDA caching allocator, or from a counting CPU allocator on machines without a GPU so
// memory behaviour is testable in CI. ScopedPeak reports the peak of one region of code.
#ifndef PADLESS_CUDA_MEMORY_METER_H_
#define PADLESS_CUDA_MEMORY_METER_H_

#include <cstdint>
#include <string>

#include <c10/core/Device.h>

namespace padless::cuda {

struct MemorySnapshot {
  int64_t allocated_bytes = 0;       // live tensors
  int64_t reserved_bytes = 0;        // held by the caching allocator (>= allocated)
  int64_t active_bytes = 0;          // blocks in use, including rounding
  int64_t peak_allocated_bytes = 0;  // since the last ResetPeak
  int64_t peak_reserved_bytes = 0;
  int64_t num_ooms = 0;
  int64_t num_alloc_retries = 0;
};

class MemoryMeter {
 public:
  // For a CPU device, installs the counting CPU allocator on first use (process-wide).
  explicit MemoryMeter(c10::Device device);

  MemorySnapshot Snapshot() const;
  void ResetPeak();
  // Returns cached blocks to the driver (CUDA); no-op on the CPU.
  void EmptyCache();
  c10::Device device() const { return device_; }

 private:
  c10::Device device_;
};

// Peak allocated and reserved bytes between construction and Stop()/destruction, relative to the
// allocated bytes at construction (so it measures what the region added).
class ScopedPeak {
 public:
  explicit ScopedPeak(MemoryMeter& meter);
  // Peak bytes above the baseline seen since construction.
  int64_t PeakAllocatedDelta() const;
  int64_t PeakReserved() const;
  int64_t baseline_allocated() const { return baseline_; }

 private:
  MemoryMeter& meter_;
  int64_t baseline_ = 0;
};

// "allocated 1.20 GiB, reserved 1.50 GiB (cache overhead 0.30 GiB, 20%) ..." for logs and reports.
std::string FormatMemoryReport(const MemorySnapshot& s);

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_MEMORY_METER_H_
