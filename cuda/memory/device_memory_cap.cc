// The CUDA caching allocator's per-process memory fraction, set from a byte limit (see
// device_memory_cap.h).
#include "padless/cuda/memory/device_memory_cap.h"

#include "absl/strings/str_cat.h"
#include "padless/cuda/memory/memory_meter.h"

#ifdef PADLESS_TORCH_HAS_CUDA
#include <ATen/Context.h>
#include <c10/core/AllocatorConfig.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace padless::cuda {

absl::StatusOr<DeviceMemoryCap> DeviceMemoryCap::Create(c10::Device device, int64_t limit_bytes) {
  if (limit_bytes <= 0) return absl::InvalidArgumentError("memory cap: limit must be > 0");
  if (!device.is_cuda()) return DeviceMemoryCap(-1, false);
#ifdef PADLESS_TORCH_HAS_CUDA
  if (c10::cuda::device_count() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("memory cap: no device ", device.str()));
  }
  const int index = device.has_index() ? device.index() : c10::cuda::current_device();
  if (index >= c10::cuda::device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("memory cap: no device ", device.str()));
  }
  cudaDeviceProp props;
  if (cudaGetDeviceProperties(&props, index) != cudaSuccess) {
    return absl::InternalError(absl::StrCat("memory cap: cannot read ", device.str()));
  }
  const auto total = static_cast<int64_t>(props.totalGlobalMem);
  if (limit_bytes > total) {
    return absl::InvalidArgumentError(absl::StrCat("memory budget ", FormatBytes(limit_bytes),
                                                   " is more than ", device.str(), " has (",
                                                   FormatBytes(total), ")"));
  }
  // The allocator's per-device state only exists after CUDA's lazy init.
  at::globalContext().lazyInitDevice(c10::kCUDA);
  // Cached blocks were carved from fixed segments; free them so the run starts expandable.
  c10::cuda::CUDACachingAllocator::emptyCache();
  const bool was_fixed =
      !c10::CachingAllocator::AcceleratorAllocatorConfig::use_expandable_segments();
  if (was_fixed) c10::CachingAllocator::setAllocatorSettings("expandable_segments:True");
  c10::cuda::CUDACachingAllocator::setMemoryFraction(static_cast<double>(limit_bytes) / total,
                                                     index);
  return DeviceMemoryCap(index, was_fixed);
#else
  return absl::FailedPreconditionError(
      absl::StrCat("memory cap on ", device.str(), ": LibTorch was built without CUDA"));
#endif
}

DeviceMemoryCap::DeviceMemoryCap(DeviceMemoryCap&& other) noexcept
    : device_index_(other.device_index_), restore_fixed_segments_(other.restore_fixed_segments_) {
  other.device_index_ = -1;
  other.restore_fixed_segments_ = false;
}

DeviceMemoryCap::~DeviceMemoryCap() {
#ifdef PADLESS_TORCH_HAS_CUDA
  if (device_index_ < 0) return;
  c10::cuda::CUDACachingAllocator::setMemoryFraction(1.0, device_index_);
  if (restore_fixed_segments_) {
    c10::CachingAllocator::setAllocatorSettings("expandable_segments:False");
  }
#endif
}

}  // namespace padless::cuda
