#include "padless/cuda/memory/memory_meter.h"

#include <algorithm>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "src/counting_cpu_allocator.h"

#ifdef PADLESS_TORCH_HAS_CUDA
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace padless::cuda {
namespace {

using internal::CountingCpuAllocator;

#ifdef PADLESS_TORCH_HAS_CUDA
constexpr size_t kAggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);

bool CudaDeviceExists(c10::Device device) {
  const int count = c10::cuda::device_count();
  return count > 0 && device.index() < count;
}
#endif

}  // namespace

absl::StatusOr<MemoryMeter> MemoryMeter::Create(c10::Device device) {
  if (device.is_cpu()) return MemoryMeter(device);
  if (!device.is_cuda()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%d: MemoryMeter supports cpu and cuda devices, not %s", __FILE__,
                        __LINE__, device.str()));
  }
#ifdef PADLESS_TORCH_HAS_CUDA
  if (!CudaDeviceExists(device)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s:%d: device %s does not exist (%d CUDA devices visible)", __FILE__,
                        __LINE__, device.str(), static_cast<int>(c10::cuda::device_count())));
  }
  return MemoryMeter(device);
#else
  return absl::FailedPreconditionError(
      absl::StrFormat("%s:%d: device %s requested but LibTorch was built without CUDA", __FILE__,
                      __LINE__, device.str()));
#endif
}

MemoryMeter::MemoryMeter(c10::Device device) : device_(device) {
  if (device_.is_cpu()) {
    CountingCpuAllocator::Install();
    return;
  }
#ifdef PADLESS_TORCH_HAS_CUDA
  if (device_.is_cuda() && CudaDeviceExists(device_)) {
    if (!device_.has_index()) device_ = c10::Device(c10::kCUDA, c10::cuda::current_device());
    // The caching allocator's per-device state only exists after CUDA's lazy init; reading its
    // stats before that would trip an internal assert.
    at::globalContext().lazyInitDevice(c10::kCUDA);
    cuda_ready_ = true;
  }
#endif
}

MemorySnapshot MemoryMeter::Snapshot() const {
  MemorySnapshot s;
  if (device_.is_cpu()) {
    const auto& cpu = CountingCpuAllocator::Install();
    s.allocated_bytes = s.reserved_bytes = s.active_bytes = cpu.current_bytes();
    s.peak_allocated_bytes = s.peak_reserved_bytes = cpu.peak_bytes();
    return s;
  }
#ifdef PADLESS_TORCH_HAS_CUDA
  if (cuda_ready_) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
    s.allocated_bytes = stats.allocated_bytes[kAggregate].current;
    s.peak_allocated_bytes = stats.allocated_bytes[kAggregate].peak;
    s.reserved_bytes = stats.reserved_bytes[kAggregate].current;
    s.peak_reserved_bytes = stats.reserved_bytes[kAggregate].peak;
    s.active_bytes = stats.active_bytes[kAggregate].current;
    s.num_ooms = stats.num_ooms;
    s.num_alloc_retries = stats.num_alloc_retries;
  }
#endif
  return s;
}

void MemoryMeter::ResetPeak() {
  if (device_.is_cpu()) {
    CountingCpuAllocator::Install().ResetPeak();
    return;
  }
#ifdef PADLESS_TORCH_HAS_CUDA
  if (cuda_ready_) c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index());
#endif
}

void MemoryMeter::EmptyCache() {
#ifdef PADLESS_TORCH_HAS_CUDA
  if (cuda_ready_) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

ScopedPeak::ScopedPeak(MemoryMeter& meter) : meter_(meter) {
  meter_.ResetPeak();
  baseline_ = meter_.Snapshot().allocated_bytes;
}

MemorySnapshot ScopedPeak::Current() const { return stopped_ ? frozen_ : meter_.Snapshot(); }

void ScopedPeak::Stop() {
  if (stopped_) return;
  frozen_ = meter_.Snapshot();
  stopped_ = true;
}

int64_t ScopedPeak::PeakAllocatedDelta() const {
  return std::max<int64_t>(0, Current().peak_allocated_bytes - baseline_);
}

int64_t ScopedPeak::PeakAllocated() const { return Current().peak_allocated_bytes; }

int64_t ScopedPeak::PeakReserved() const { return Current().peak_reserved_bytes; }

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  const bool negative = bytes < 0;
  double v = static_cast<double>(negative ? -bytes : bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  const char* sign = negative ? "-" : "";
  if (unit == 0) return absl::StrFormat("%s%d B", sign, static_cast<int64_t>(v));
  const int precision = v >= 100 ? 0 : (v >= 10 ? 1 : 2);
  return absl::StrFormat("%s%.*f %s", sign, precision, v, kUnits[unit]);
}

std::string FormatMemoryReport(const MemorySnapshot& s) {
  const int64_t overhead = s.reserved_bytes - s.allocated_bytes;
  const double pct =
      s.reserved_bytes > 0 ? 100.0 * static_cast<double>(overhead) / s.reserved_bytes : 0.0;
  return absl::StrFormat(
      "allocated %s, reserved %s (cache overhead %s, %.1f%%), active %s, peak allocated %s, "
      "peak reserved %s, ooms %d, alloc retries %d",
      FormatBytes(s.allocated_bytes), FormatBytes(s.reserved_bytes), FormatBytes(overhead), pct,
      FormatBytes(s.active_bytes), FormatBytes(s.peak_allocated_bytes),
      FormatBytes(s.peak_reserved_bytes), s.num_ooms, s.num_alloc_retries);
}

}  // namespace padless::cuda
