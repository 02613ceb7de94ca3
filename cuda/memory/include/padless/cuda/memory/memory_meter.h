// MemoryMeter: allocated / reserved / active / peak bytes of the device that runs the model, read
// from the CUDA caching allocator, or from a counting CPU allocator on machines without a GPU so
// memory behaviour is testable in CI. ScopedPeak reports the peak of one region of code.
#ifndef PADLESS_CUDA_MEMORY_MEMORY_METER_H_
#define PADLESS_CUDA_MEMORY_MEMORY_METER_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

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

// Reads one device's memory statistics. Peaks are process-wide per device (they live in the
// allocator), so ResetPeak affects every meter of that device, nested ScopedPeaks included.
// On the CPU there is no cache: reserved == active == allocated, and the OOM counters stay 0.
class MemoryMeter {
 public:
  // Checks that the device can be metered: a CUDA device must exist and torch must have been
  // built with CUDA. Use this where the device comes from user input.
  static absl::StatusOr<MemoryMeter> Create(c10::Device device);

  // For a CPU device, installs the counting CPU allocator on first use (process-wide); only
  // allocations made after that are counted. A CUDA device that does not exist reads as zeros.
  explicit MemoryMeter(c10::Device device);

  MemorySnapshot Snapshot() const;
  // Sets the peaks to the current values.
  void ResetPeak();
  // Returns cached blocks to the driver (CUDA); no-op on the CPU.
  void EmptyCache();
  c10::Device device() const { return device_; }

 private:
  bool cuda_ready_ = false;
  c10::Device device_;
};

// Peak allocated and reserved bytes between construction and Stop() (or now, if not stopped).
// Construction resets the device's peaks, so the peak seen is this region's.
class ScopedPeak {
 public:
  explicit ScopedPeak(MemoryMeter& meter);
  // Freezes the peaks; later calls to the accessors return the frozen values.
  void Stop();
  // Peak allocated bytes above the allocated bytes at construction (what the region added).
  int64_t PeakAllocatedDelta() const;
  // Absolute peak of allocated bytes in the region.
  int64_t PeakAllocated() const;
  // Absolute peak of reserved bytes in the region.
  int64_t PeakReserved() const;
  int64_t baseline_allocated() const { return baseline_; }

 private:
  MemorySnapshot Current() const;

  MemoryMeter& meter_;
  int64_t baseline_ = 0;
  bool stopped_ = false;
  MemorySnapshot frozen_;
};

// "1.50 GiB", "12.0 MiB", "512 B": binary units, three significant digits.
std::string FormatBytes(int64_t bytes);

// "allocated 1.20 GiB, reserved 1.50 GiB (cache overhead 307 MiB, 20.0%), active ..., peak
// allocated ..., peak reserved ..., ooms 0, alloc retries 0" for logs and reports.
std::string FormatMemoryReport(const MemorySnapshot& s);

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_MEMORY_MEMORY_METER_H_
