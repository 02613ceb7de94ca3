// DeviceMemoryCap: holds the CUDA caching allocator of one device to a byte limit for its lifetime,
// so that the memory torch reserves on the device (cached blocks and fragmentation included, the
// CUDA context aside) stays within a budget. The allocator enforces it: an allocation that would
// take the reserved bytes past the limit first frees the cache and then, if it still does not
// fit, fails as an out-of-memory error (which a caller such as the trainer recovers from). The
// previous limit (none) is restored on destruction. A no-op on the CPU and in builds without CUDA.
//
// For its lifetime the allocator also uses expandable segments (PyTorch's
// `expandable_segments:True`): blocks then grow and shrink in place instead of being carved out of
// fixed segments, so batches of varying shapes (packed varlen steps, dev evaluations) do not leave
// the fragmentation that made a step planned to fit the budget run out of memory under the cap.
// The previous setting is restored on destruction.
//
// Not thread-safe; one cap per device at a time.
#ifndef PADLESS_CUDA_MEMORY_DEVICE_MEMORY_CAP_H_
#define PADLESS_CUDA_MEMORY_DEVICE_MEMORY_CAP_H_

#include <c10/core/Device.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace padless::cuda {

class DeviceMemoryCap {
 public:
  // Caps `device` at `limit_bytes` (> 0). Errors: a CUDA device that does not exist, or a limit
  // above the device's memory (InvalidArgument, naming both sizes).
  static absl::StatusOr<DeviceMemoryCap> Create(c10::Device device, int64_t limit_bytes);
  DeviceMemoryCap(DeviceMemoryCap&& other) noexcept;
  DeviceMemoryCap& operator=(DeviceMemoryCap&&) = delete;
  DeviceMemoryCap(const DeviceMemoryCap&) = delete;
  ~DeviceMemoryCap();

 private:
  DeviceMemoryCap(int device_index, bool restore_fixed_segments)
      : device_index_(device_index), restore_fixed_segments_(restore_fixed_segments) {}
  int device_index_ = -1;                // -1: nothing capped (CPU, or moved from)
  bool restore_fixed_segments_ = false;  // expandable segments were off before the cap
};

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_MEMORY_DEVICE_MEMORY_CAP_H_
